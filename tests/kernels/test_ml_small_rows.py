"""The ML operators and the common kernels on their small-batch paths (issue 42, item 2): one row, a few rows, and
batches past the point where a check switches from a Python list to a reduction (16 values).

Each operator runs in a one-node session (its prepared function; the first run interpreted, the next ones through
the compiled plan, which calls a prepared function directly) and is compared with onnxruntime, and, where a path
was changed to do the same arithmetic another way, with the definition's formula computed here (zero divisors,
NaN, keys met as ``str`` or ``bytes``, out-of-range values).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")
from onnx import TensorProto as TP  # noqa: E402

from kernels.ml_oracle import make_model, run_ort  # noqa: E402
from onnxcore import Session  # noqa: E402
from onnxcore.errors import EvaluationError  # noqa: E402
from onnxcore.kernels import accel, ml_linear  # noqa: E402
from onnxcore.kernels._ml_common import row_max, row_sum  # noqa: E402
from onnxcore.kernels.call import run  # noqa: E402
from onnxcore.kernels.ml import Lookup, _Imputer, _Normalizer, _Scaler, softmax_rows, string_array  # noqa: E402
from onnxcore.types.convert import cast_array  # noqa: E402

ML = "ai.onnx.ml"
ROWS = (1, 3, 16, 17, 40)


def _session_runs(model: onnx.ModelProto, feeds: dict[str, Any], runs: int = 3) -> list[list[Any]]:
    """Every run's outputs of one session (the first interpreted, the later ones compiled; the one-node models
    declare no output shapes, which the checks would refuse)."""
    s = Session(model.SerializeToString(), check=False)
    return [s.run(None, feeds) for _ in range(runs)]


def _check_runs(model: onnx.ModelProto, feeds: dict[str, Any], rtol: float = 1e-5, atol: float = 1e-6) -> list[Any]:
    """The session's outputs, each run equal to the first bit for bit and close to onnxruntime's."""
    runs = _session_runs(model, feeds)
    expected = run_ort(model, feeds)
    for outs in runs:
        assert len(outs) == len(expected)
        for got, first in zip(outs, runs[0]):
            np.testing.assert_array_equal(got, first)
        for got, exp in zip(outs, expected):
            got = np.asarray(got)
            assert got.dtype == exp.dtype and got.shape == exp.shape
            if exp.dtype.kind == "f":
                np.testing.assert_allclose(got, exp, rtol=rtol, atol=atol)
            else:
                np.testing.assert_array_equal(got, exp)
    return runs[0]


def _rows(n: int, f: int, seed: int, dtype: Any = np.float32) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, f)).astype(dtype)


# ------------------------------------------------------------------------------------------------ Normalizer


def _normalized(x: np.ndarray, norm: str) -> np.ndarray:
    """The definition row by row: each row divided by its max, L1 or L2 norm in float64; a zero divisor keeps it."""
    out = []
    for row in np.asarray(x, dtype=np.float64).reshape(-1, x.shape[-1]):
        vals = row.tolist()
        if norm == "MAX":
            div = float(np.maximum.reduce(row)) if vals else 0.0
        elif norm == "L1":
            div = float(np.add.reduce(np.abs(row)))
        else:
            div = float(np.sqrt(np.add.reduce(np.square(row))))
        out.append(row if div == 0 else row / div)
    return np.array(out, dtype=np.float64).astype(np.float32).reshape(x.shape)


@pytest.mark.parametrize("norm", ["MAX", "L1", "L2"])
@pytest.mark.parametrize("n", ROWS)
def test_normalizer_rows_with_zero_divisors_and_nan(norm: str, n: int) -> None:
    x = _rows(n, 5, n)
    x[0, :] = 0.0  # a zero divisor: the row comes back unchanged
    if n > 2:
        x[2, 1] = np.nan
        x[n - 1, :] = -np.abs(x[n - 1, :]) if norm == "MAX" else x[n - 1, :]  # MAX of a negative row divides too
    model = make_model("Normalizer", 1, {"X": x}, [("Y", TP.FLOAT)], {"norm": norm})
    got = _session_runs(model, {"X": x})[-1][0]
    np.testing.assert_array_equal(got, _normalized(x, norm))  # the definition, bit for bit (NaN equal to NaN)
    finite = np.isfinite(x).all(axis=1)
    np.testing.assert_allclose(got[finite], run_ort(model, {"X": x})[0][finite], rtol=1e-6, atol=1e-7)


def test_normalizer_one_dimensional_input_and_bad_norm() -> None:
    x = np.array([3.0, -4.0, 0.0], dtype=np.float32)
    np.testing.assert_array_equal(run("Normalizer", 1, x, domain=ML, norm="L2")[0], _normalized(x, "L2"))
    with pytest.raises(EvaluationError, match="norm must be MAX, L1 or L2"):
        run("Normalizer", 1, x, domain=ML, norm="L3")


# ------------------------------------------------------------------------------------------------ Imputer


@pytest.mark.parametrize("n", ROWS)
def test_imputer_replaces_nan_into_a_new_array(n: int) -> None:
    x = _rows(n, 4, 10 + n)
    x[:, 1] = np.nan
    x[0, 3] = np.nan
    fills = [0.5, -1.5, 2.5, 7.0]
    model = make_model(
        "Imputer", 1, {"X": x}, [("Y", TP.FLOAT)], {"imputed_value_floats": fills, "replaced_value_float": np.nan}
    )
    before = x.copy()
    (got,) = _check_runs(model, {"X": x})
    expected = np.where(np.isnan(x), np.array(fills, np.float32), x)
    np.testing.assert_array_equal(got, expected)
    assert not np.shares_memory(got, x)
    np.testing.assert_array_equal(x, before)  # the feed is not written


def test_imputer_integers_one_value_and_a_scalar() -> None:
    x = np.array([[0, 3], [5, 0]], dtype=np.int64)
    attrs = {"imputed_value_int64s": [9], "replaced_value_int64": 0}
    np.testing.assert_array_equal(run("Imputer", 1, x, domain=ML, **attrs)[0], [[9, 3], [5, 9]])
    got = run("Imputer", 1, np.array(0, dtype=np.int64), domain=ML, **attrs)[0]
    assert got.shape == () and int(got) == 9
    with pytest.raises(EvaluationError, match="3 imputed values for 2 features"):
        run("Imputer", 1, x, domain=ML, imputed_value_int64s=[1, 2, 3], replaced_value_int64=0)


# ------------------------------------------------------------------------------------------------ linear models


@pytest.mark.parametrize("post", ["NONE", "SOFTMAX", "LOGISTIC"])
@pytest.mark.parametrize("n", ROWS)
def test_linear_classifier_multiclass(post: str, n: int) -> None:
    rng = np.random.default_rng(n)
    x = _rows(n, 6, 20 + n)
    attrs = {
        "coefficients": [float(v) for v in rng.standard_normal(18)],
        "intercepts": [0.25, -0.5, 0.125],
        "classlabels_ints": [4, 7, 9],
        "post_transform": post,
        "multi_class": 1,
    }
    model = make_model("LinearClassifier", 1, {"X": x}, [("Y", TP.INT64), ("Z", TP.FLOAT)], attrs)
    y, _z = _check_runs(model, {"X": x})
    w = np.array(attrs["coefficients"], np.float32).astype(np.float64).reshape(3, 6)
    scores = x.astype(np.float64) @ w.T + np.array(attrs["intercepts"], np.float32)
    np.testing.assert_array_equal(y, np.array([4, 7, 9])[scores.argmax(axis=1)])


@pytest.mark.parametrize("n", [1, 16, 40])
def test_linear_classifier_binary_with_string_labels(n: int) -> None:
    x = _rows(n, 3, 30 + n)
    attrs = {"coefficients": [0.5, -1.0, 2.0], "intercepts": [0.1], "classlabels_strings": ["no", "yes"]}
    model = make_model("LinearClassifier", 1, {"X": x}, [("Y", TP.STRING), ("Z", TP.FLOAT)], attrs)
    y, _z = _check_runs(model, {"X": x})
    s = x.astype(np.float64) @ np.array([0.5, -1.0, 2.0]) + np.float32(0.1)
    assert list(y) == [b"yes" if v > 0 else b"no" for v in s]


@pytest.mark.parametrize("n", ROWS)
def test_linear_regressor_targets(n: int) -> None:
    rng = np.random.default_rng(40 + n)
    x = _rows(n, 5, n)
    attrs = {"coefficients": [float(v) for v in rng.standard_normal(10)], "intercepts": [1.0, -2.0], "targets": 2}
    model = make_model("LinearRegressor", 1, {"X": x}, [("Y", TP.FLOAT)], attrs)
    _check_runs(model, {"X": x})


def test_linear_models_refuse_coefficients_that_do_not_fit_the_features() -> None:
    x = _rows(2, 4, 0)
    with pytest.raises(EvaluationError, match="6 coefficients do not fit 4 features"):
        run("LinearClassifier", 1, x, domain=ML, coefficients=[1.0] * 6, intercepts=[0.0, 0.0])
    with pytest.raises(EvaluationError, match="3 classes but 2 labels"):
        run("LinearClassifier", 1, x, domain=ML, coefficients=[1.0] * 12, intercepts=[0, 0, 0], classlabels_ints=[1, 2])
    with pytest.raises(EvaluationError, match="6 coefficients for 2 targets x 4 features"):
        run("LinearRegressor", 1, x, domain=ML, coefficients=[1.0] * 6, targets=2)
    # A session whose node does not fit names the node, interpreted and compiled alike.
    model = make_model("LinearRegressor", 1, {"X": x}, [("Y", TP.FLOAT)], {"coefficients": [1.0] * 6, "targets": 2})
    s = Session(model.SerializeToString(), check=False)
    for _ in range(3):
        with pytest.raises(EvaluationError, match="LinearRegressor"):
            s.run(None, {"X": x})


# ------------------------------------------------------------------------------------------------ SVMClassifier


def _svc_attrs(rng: np.random.Generator, k: int, f: int, probabilities: bool) -> dict[str, Any]:
    vpc = [int(v) for v in rng.integers(2, 6, k)]
    n_vec, pairs = sum(vpc), k * (k - 1) // 2
    attrs: dict[str, Any] = {
        "classlabels_ints": list(range(k)),
        "coefficients": [float(v) for v in rng.standard_normal((k - 1) * n_vec)],
        "kernel_params": [0.2, 0.0, 3.0],
        "kernel_type": "RBF",
        "rho": [float(v) for v in rng.standard_normal(pairs) * 0.1],
        "support_vectors": [float(v) for v in rng.standard_normal(n_vec * f)],
        "vectors_per_class": vpc,
    }
    if probabilities:
        attrs["prob_a"] = [float(v) for v in -np.abs(rng.standard_normal(pairs)) - 1]
        attrs["prob_b"] = [float(v) for v in rng.standard_normal(pairs) * 0.1]
    return attrs


@pytest.mark.parametrize("probabilities", [False, True])
@pytest.mark.parametrize("k", [2, 3, 4])
@pytest.mark.parametrize("n", [1, 16])
def test_svm_classifier_against_onnxruntime(probabilities: bool, k: int, n: int) -> None:
    rng = np.random.default_rng(100 * k + n)
    x = _rows(n, 4, k + n)
    attrs = _svc_attrs(rng, k, 4, probabilities)
    model = make_model("SVMClassifier", 1, {"X": x}, [("Y", TP.INT64), ("Z", TP.FLOAT)], attrs)
    _check_runs(model, {"X": x}, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("k", [3, 5])
@pytest.mark.parametrize("n", [1, 7])
def test_svm_decisions_as_one_product_equal_the_pairwise_sums(k: int, n: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pairwise decisions by one product with the [vectors, pairs] matrix, and pair by pair (the path of a model
    whose matrix would be too large): the same labels, the decisions within float64 rounding."""
    rng = np.random.default_rng(7 * k + n)
    x = _rows(n, 4, k)
    attrs = _svc_attrs(rng, k, 4, False)
    fn = ml_linear.svm_classifier
    y1, z1 = fn(x, **attrs)
    monkeypatch.setattr(ml_linear, "_PAIR_MATRIX_MAX", 0)
    y2, z2 = fn(x, **attrs)
    np.testing.assert_array_equal(y1, y2)
    np.testing.assert_allclose(z1, z2, rtol=1e-6, atol=1e-6)


# ------------------------------------------------------------------------------------------------ encoders


def _as(kind: str, values: list[str]) -> np.ndarray:
    if kind == "bytes":
        return string_array([v.encode() for v in values])
    if kind == "str":
        out = np.empty(len(values), dtype=object)
        out[:] = values
        return out
    return np.array(values, dtype="U" if kind == "U" else "S")


@pytest.mark.parametrize("kind", ["bytes", "str", "U", "S"])
def test_string_look_ups_take_str_and_bytes_elements_alike(kind: str) -> None:
    cats = ["red", "grün", "blue"]
    values = ["blue", "grün", "mauve", "red", "grün"]
    x = _as(kind, values) if kind != "S" else np.array([v.encode() for v in values], dtype="S")
    onehot = run("OneHotEncoder", 1, x.reshape(5, 1), domain=ML, cats_strings=cats, zeros=1)[0]
    expected = np.array([[[v == c for c in cats]] for v in values], np.float32)
    np.testing.assert_array_equal(onehot, expected)
    ints = run("CategoryMapper", 1, x, domain=ML, cats_strings=cats, cats_int64s=[10, 20, 30], default_int64=-1)[0]
    np.testing.assert_array_equal(ints, [30, 20, -1, 10, 20])
    enc = run("LabelEncoder", 2, x, domain=ML, keys_strings=cats, values_int64s=[1, 2, 3], default_int64=0)[0]
    np.testing.assert_array_equal(enc, [3, 2, 0, 1, 2])


def test_lookup_aliases_keep_the_last_key_and_skip_keys_that_are_no_text() -> None:
    keys = string_array([b"a", b"\xff\xfe", b"b", b"a"])
    look = Lookup(keys, np.array([1, 2, 3, 4], dtype=np.int64))
    x = _as("str", ["a", "b", "\udcff", "zz"])
    np.testing.assert_array_equal(look.strings(x, np.int64(-1)), [4, 3, -1, -1])
    np.testing.assert_array_equal(look.strings(string_array([b"\xff\xfe", b"a"]), np.int64(-1)), [2, 4])
    # Keys that are not all bytes: elements converted to bytes first, as the definition reads them.
    mixed = Lookup(np.array(["a", b"b"], dtype=object), np.array([5, 6], dtype=np.int64))
    np.testing.assert_array_equal(mixed.strings(_as("str", ["b", "a"]), np.int64(-1)), [6, -1])


@pytest.mark.parametrize("n", [1, 16, 1000])
def test_one_hot_encoder_strings_against_onnxruntime(n: int) -> None:
    rng = np.random.default_rng(n)
    cats = ["Paris", "Lyon", "Nice", "Metz"]
    x = string_array([c.encode() for c in rng.choice(cats + ["Rome"], n)]).reshape(n, 1)
    model = make_model("OneHotEncoder", 1, {"X": x}, [("Y", TP.FLOAT)], {"cats_strings": cats, "zeros": 1})
    _check_runs(model, {"X": x})


# ------------------------------------------------------------------------------------------------ small kernels


@pytest.mark.parametrize("n", [1, 5, 16, 17, 40])
def test_cast_float_to_int_range_check_few_and_many(n: int) -> None:
    x = (np.random.default_rng(n).standard_normal(n) * 1e3).astype(np.float32)
    got = run("Cast", 13, x, to=int(TP.INT64))[0]
    np.testing.assert_array_equal(got, np.trunc(x.astype(np.float64)).astype(np.int64))
    for bad in (np.nan, np.inf, -np.inf, 3e19):
        y = x.copy()
        y[n // 2] = bad
        np.testing.assert_array_equal(run("Cast", 13, y, to=int(TP.INT64))[0], cast_array(y, TP.INT64))
        np.testing.assert_array_equal(run("Cast", 19, y, to=int(TP.INT32))[0], cast_array(y, TP.INT32))


def _edges(src: Any, dt: Any) -> list[Any]:
    """Values at the ends of ``dt``'s range as ``src`` holds them: each end, the neighbouring floats on both sides,
    one beyond, halves, signed zero, NaN and the infinities."""
    info, f = np.iinfo(dt), src
    ends = [f(info.min), f(info.max)]
    near = [np.nextafter(e, f(d)) for e in ends for d in (0, np.inf, -np.inf)]
    return [*ends, *near, f(float(info.min) - 1), f(float(info.max) + 1), f(-0.0), f(0.5), f(-0.5), f(-2.5),
            f(np.nan), f(np.inf), f(-np.inf)]  # fmt: skip


@pytest.mark.parametrize("src", [np.float32, np.float64])
@pytest.mark.parametrize(("dt", "tag"), [(np.int64, TP.INT64), (np.int32, TP.INT32)])
@pytest.mark.parametrize("n", [5, 40])
def test_cast_float_to_int_at_the_ends_of_the_range(src: Any, dt: Any, tag: int, n: int) -> None:
    """Each value at or beside an end of the integer range, among a few values and among many (the many compared by
    their least and greatest in the float type): the conversion's rule (``cast_array``), bit for bit."""
    for v in _edges(src, dt):
        y = np.ones(n, src)
        y[n // 2] = v
        got = run("Cast", 13, y, to=int(tag))[0]
        want = cast_array(y, tag)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("n", [1, 3, 16, 17, 40])
@pytest.mark.parametrize("itype", [np.int64, np.int32])
def test_array_feature_extractor_indices_few_and_many(n: int, itype: type) -> None:
    """Every index out of [0, 20) is refused, however many (the many read as unsigned: one reduction)."""
    x = np.arange(60, dtype=np.float32).reshape(3, 20)
    idx = np.random.default_rng(n).integers(0, 20, n).astype(itype)
    np.testing.assert_array_equal(run("ArrayFeatureExtractor", 1, x, idx, domain=ML)[0], x[:, idx])
    for bad in (-1, 20, np.iinfo(itype).min, np.iinfo(itype).max):
        idx2 = idx.copy()
        idx2[-1] = bad
        with pytest.raises(EvaluationError, match=r"index out of range \[0, 20\)"):
            run("ArrayFeatureExtractor", 1, x, idx2, domain=ML)
    np.testing.assert_array_equal(run("ArrayFeatureExtractor", 1, x[0], idx[:1], domain=ML)[0], x[:1, idx[:1]])


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("last", [0, 1])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_arg_reductions_with_ties_and_nan(op: str, last: int, keepdims: int) -> None:
    x = np.array([[1.0, 3.0, 3.0, -2.0, -2.0], [np.nan, 0.0, np.nan, 5.0, -7.0]], dtype=np.float32)
    got = run(op, 13, x, axis=1, keepdims=keepdims, select_last_index=last)[0]
    fn = np.argmax if op == "ArgMax" else np.argmin
    expected = fn(x, axis=1) if not last else x.shape[1] - 1 - fn(x[:, ::-1], axis=1)
    np.testing.assert_array_equal(got, expected.reshape(2, 1) if keepdims else expected)
    assert got.dtype == np.int64


def test_concat_of_many_arrays_refuses_mixed_types_and_extents() -> None:
    parts = [np.full((2, k + 1), k, np.float32) for k in range(4)]
    np.testing.assert_array_equal(run("Concat", 13, *parts, axis=1)[0], np.concatenate(parts, axis=1))
    with pytest.raises(EvaluationError, match="element types differ"):
        run("Concat", 13, parts[0], parts[1], parts[2].astype(np.float64), axis=1)
    with pytest.raises(EvaluationError, match="differ off axis"):
        run("Concat", 13, parts[0], parts[1], np.zeros((3, 1), np.float32), axis=1)


@pytest.mark.parametrize("n", [1, 16, 40])
def test_kmeans_distances_compiled_or_not_over_two_batch_sizes(n: int) -> None:
    """The k-means distance graph skl2onnx writes (ReduceSumSquare, Gemm, two Adds fused into one step): the
    session's result over two batch sizes in turn (the fused step keeps a layout per operand shapes), against
    onnxruntime."""
    from onnx import helper, numpy_helper

    rng = np.random.default_rng(n)
    centres = rng.standard_normal((8, 10)).astype(np.float32)
    nodes = [
        helper.make_node("ReduceSumSquare", ["X"], ["sq"], axes=[1], keepdims=1),
        helper.make_node("Gemm", ["X", "C", "zero"], ["g"], alpha=-2.0, transB=1),
        helper.make_node("Add", ["sq", "g"], ["d0"]),
        helper.make_node("Add", ["csq", "d0"], ["d"]),
        helper.make_node("ArgMin", ["d"], ["label"], axis=1, keepdims=0),
    ]
    inits = [
        numpy_helper.from_array(centres, "C"),
        numpy_helper.from_array(np.zeros((1, 1), np.float32), "zero"),
        numpy_helper.from_array(np.square(centres).sum(axis=1).astype(np.float32), "csq"),
    ]
    graph = helper.make_graph(
        nodes,
        "kmeans",
        [helper.make_tensor_value_info("X", TP.FLOAT, ["N", 10])],
        [
            helper.make_tensor_value_info("d", TP.FLOAT, ["N", 8]),
            helper.make_tensor_value_info("label", TP.INT64, ["N"]),
        ],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    s = Session(model.SerializeToString())
    o = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for rows in (n, 3, n):
        x = _rows(rows, 10, rows)
        d, label = s.run(None, {"X": x})
        ed, elabel = o.run(None, {"X": x})
        np.testing.assert_allclose(d, ed, rtol=1e-5, atol=1e-4)
        np.testing.assert_array_equal(label, elabel)


@pytest.mark.parametrize("n", [1, 4, 16, 17, 40])
def test_reduce_log_sum_exp_rows_with_infinite_and_nan_maxima(n: int) -> None:
    """The shift by each row's maximum, skipped where the maximum is not finite: few rows and many agree with the
    row-by-row definition computed here."""
    x = np.random.default_rng(n).standard_normal((n, 3)).astype(np.float32) * 4
    specials = [[-np.inf] * 3, [np.inf, 0.0, 1.0], [np.nan, 0.0, 1.0]]
    for i, row in enumerate(specials[: min(n, 3)]):
        x[(i * 5) % n] = row
    got = run("ReduceLogSumExp", 13, x, axes=[1], keepdims=0)[0]
    expected = []
    for row in x.astype(np.float32):
        m = np.max(row)
        shift = m if np.isfinite(m) else np.float32(0)
        expected.append(np.log(np.add.reduce(np.exp(row - shift))) + shift)
    np.testing.assert_array_equal(got, np.array(expected, dtype=np.float32))


@pytest.mark.parametrize("k", range(10))
@pytest.mark.parametrize("n", [1, 31, 32, 1000])
def test_row_reductions_column_by_column_give_numpys_bits(k: int, n: int) -> None:
    """row_max and row_sum (the softmax and Normalizer reductions; column passes for tall arrays of narrow rows)
    equal numpy's reductions bit for bit, in C and Fortran order and on a reversed view, NaN and -0.0 included."""
    rng = np.random.default_rng(10 * k + n)
    s = rng.standard_normal((n, k)) * 10.0 ** rng.integers(-8, 8, (n, k))
    if s.size > 4:
        s.flat[3], s.flat[1] = np.nan, -0.0
    for v in (s, s[:, ::-1], np.asfortranarray(s)):
        assert np.array_equal(row_sum(v), np.add.reduce(v, axis=1, keepdims=True), equal_nan=True)
        if k:
            assert np.array_equal(row_max(v), np.maximum.reduce(v, axis=1, keepdims=True), equal_nan=True)


@pytest.mark.parametrize("n", [0, 1, 16, 40])
def test_zip_map_prepared_maps_of_distinct_cells(n: int) -> None:
    x = np.random.default_rng(n).random((n, 3)).astype(np.float32)
    model = make_model("ZipMap", 1, {"X": x}, [("Z", onnx.helper.make_sequence_type_proto(
        onnx.helper.make_map_type_proto(TP.STRING, onnx.helper.make_tensor_type_proto(TP.FLOAT, None))))],
        {"classlabels_strings": ["a", "b", "c"]})  # fmt: skip
    for (maps,) in _session_runs(model, {"X": x}):
        assert len(maps) == n
        cells = []
        for row, m in zip(x, maps):
            assert list(m) == [b"a", b"b", b"c"]
            for v, cell in zip(row, m.values()):
                # a float32 0-d value in numpy's scalar form: immutable, so no cell changes through another
                assert type(cell) is np.float32 and cell.shape == () and cell == v
                cells.append(cell)
        assert len({id(c) for c in cells}) == len(cells)
    with pytest.raises(EvaluationError, match="X has 3 columns for 2 labels"):
        run("ZipMap", 1, x, domain=ML, classlabels_int64s=[1, 2])


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
@pytest.mark.parametrize("n", [1, 16, 40])
def test_scaler_in_float32_for_each_input_type(dtype: Any, n: int) -> None:
    x = (_rows(n, 4, n, np.float64) * 10).astype(dtype)
    off, sc = [0.5, -1.25, 3.0, 0.1], [2.0, 0.3, -1.0, 7.5]
    model = make_model("Scaler", 1, {"X": x}, [("Y", TP.FLOAT)], {"offset": off, "scale": sc})
    (got,) = _check_runs(model, {"X": x})
    expected = (x.astype(np.float32) - np.array(off, np.float32)) * np.array(sc, np.float32)
    np.testing.assert_array_equal(got, expected)
    one = run("Scaler", 1, x, domain=ML, offset=[1.5], scale=[2.0])[0]
    np.testing.assert_array_equal(one, (x.astype(np.float32) - np.float32(1.5)) * np.float32(2.0))
    scalar = run("Scaler", 1, np.asarray(x.flat[0]), domain=ML, offset=[1.5], scale=[2.0])[0]
    assert scalar.dtype == np.float32 and scalar.size == 1
    with pytest.raises(EvaluationError, match="offset has 3 values for 4 features"):
        run("Scaler", 1, x, domain=ML, offset=[1.0, 2.0, 3.0], scale=[1.0])


@pytest.mark.parametrize("seed", range(6))
def test_tfidf_few_tokens_counted_as_the_batch_search_counts(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """TfIdfVectorizer's count on Python ints for a few tokens equals its batch search: 1- to 3-grams, skips,
    a repeated pool n-gram, tokens outside the pool, strings and integers, each mode, negative and -0.0 weights
    (written as 0.0), a 1-D input; each n-gram at its own output coordinate, as skl2onnx writes them (the few-token
    path then writes the output itself), or several sharing one (counted, then summed as the batch path does)."""
    from onnxcore.kernels import text

    rng = np.random.default_rng(seed)
    pool = [int(v) for v in rng.integers(0, 6, 6)] + [int(v) for v in rng.integers(0, 6, 8)] + [1, 2, 3, 1, 2, 3]
    attrs: dict[str, Any] = {
        "min_gram_length": int(rng.integers(1, 3)),
        "max_gram_length": 3,
        "max_skip_count": int(rng.integers(0, 3)),
        "mode": ["TF", "IDF", "TFIDF"][seed % 3],
        "ngram_counts": [0, 6, 14],
        "ngram_indexes": [int(v) for v in rng.permutation(6 + 4 + 2)],
        "weights": [float(v) for v in rng.random(12) - 0.3][:11] + [-0.0],
    }
    if seed % 2:
        attrs["ngram_indexes"][1] = attrs["ngram_indexes"][0]  # two n-grams, one coordinate
    x = rng.integers(-1, 7, (3, 9)).astype(np.int64)
    strings = {"pool_strings": [f"w{v}" for v in pool]}
    xs = string_array([f"w{v}".encode() for v in x.ravel()], x.shape)
    few = [
        run("TfIdfVectorizer", 9, x, pool_int64s=pool, **attrs)[0],
        run("TfIdfVectorizer", 9, xs, **strings, **attrs)[0],
        run("TfIdfVectorizer", 9, x[0], pool_int64s=pool, **attrs)[0],
    ]
    monkeypatch.setattr(text, "_FEW_TOKENS", -1)
    batch = [
        run("TfIdfVectorizer", 9, x, pool_int64s=pool, **attrs)[0],
        run("TfIdfVectorizer", 9, xs, **strings, **attrs)[0],
        run("TfIdfVectorizer", 9, x[0], pool_int64s=pool, **attrs)[0],
    ]
    for a, b in zip(few, batch):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
        assert not np.signbit(a[a == 0]).any()
    assert few[0].any()


def test_one_row_softmax_and_normalizer_on_python_floats_give_the_reductions_bits() -> None:
    """One row's maximum and sum taken on Python floats (softmax, Normalizer) against the reductions' formulas:
    NaN, infinities, -0.0, huge and subnormal values, rows of one to nine values."""
    rng = np.random.default_rng(5)
    specials = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1e308, -1e308, 5e-324]
    with np.errstate(all="ignore"):
        for _ in range(3000):
            k = int(rng.integers(1, 10))
            s = rng.standard_normal((1, k)) * 10.0 ** rng.integers(-5, 5, (1, k))
            for j in range(k):
                if rng.random() < 0.15:
                    s[0, j] = specials[rng.integers(len(specials))]
            e = np.exp(s - np.maximum.reduce(s, axis=1, keepdims=True))
            assert np.array_equal(softmax_rows(s), e / np.add.reduce(e, axis=1, keepdims=True), equal_nan=True)
            x = s.astype(np.float32)
            for norm in ("MAX", "L1", "L2"):
                got = run("Normalizer", 1, x, domain=ML, norm=norm)[0]
                want = _normalized(x, norm)
                assert np.array_equal(got, want, equal_nan=True) and np.array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.skipif(not accel.available(), reason="the accelerator (numba) is not installed")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape_axis", [((1, 2000), -1), ((7, 50), 1), ((3, 40, 4), 1), ((60, 3), 0)])
def test_topk_compiled_selection_gives_the_stable_sorts_choice(dtype: Any, shape_axis: Any) -> None:
    """TopK of a few of many chosen by the compiled pass: the indices and values of the numpy path (the stable
    sort's order: equal values by ascending index), ties, infinities and both zeros included, largest and smallest,
    along any axis; and against onnxruntime."""
    shape, axis = shape_axis
    rng = np.random.default_rng(len(shape) * 100 + shape[0])
    x = rng.integers(-5, 5, shape).astype(dtype)
    x.flat[rng.integers(0, x.size, 5)] = [np.inf, -np.inf, -0.0, 0.0, np.inf]
    for k in (1, 3, 5, 16):
        if 4 * k >= x.shape[axis]:
            continue
        kk = np.array([k], dtype=np.int64)
        for largest in (0, 1):
            with accel.use(False):
                v0, i0 = run("TopK", 11, x, kk, axis=axis, largest=largest)
            with accel.use(True):
                v1, i1 = run("TopK", 11, x, kk, axis=axis, largest=largest)
            np.testing.assert_array_equal(i1, i0)
            np.testing.assert_array_equal(v1, v0)
            assert i1.dtype == np.int64 and i1.shape == i0.shape
    ev, ei = _ort_topk(x, 5, axis, 0) if 20 < x.shape[axis] else (None, None)
    if ev is not None:
        with accel.use(True):
            v1, i1 = run("TopK", 11, x, np.array([5], dtype=np.int64), axis=axis, largest=0)
        np.testing.assert_array_equal(v1, ev)
        np.testing.assert_array_equal(np.take_along_axis(x, i1, axis=axis), np.take_along_axis(x, ei, axis=axis))


def _ort_topk(x: np.ndarray, k: int, axis: int, largest: int) -> tuple[np.ndarray, np.ndarray]:
    from onnx import helper

    node = helper.make_node("TopK", ["X", "K"], ["V", "I"], axis=axis, largest=largest)
    elem = TP.FLOAT if x.dtype == np.float32 else TP.DOUBLE
    graph = helper.make_graph(
        [node],
        "topk",
        [helper.make_tensor_value_info("X", elem, list(x.shape)), helper.make_tensor_value_info("K", TP.INT64, [1])],
        [helper.make_tensor_value_info("V", elem, None), helper.make_tensor_value_info("I", TP.INT64, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    v, i = sess.run(None, {"X": x, "K": np.array([k], dtype=np.int64)})
    return v, i


def test_svm_one_row_pairwise_probabilities_equal_the_batch_formula() -> None:
    """One row's Platt-scaled pairwise probabilities (Python floats around numpy's exp) against the batch path's
    formula: decisions of every magnitude, NaN, infinities and both zeros, two to five classes."""
    from onnxcore.kernels.ml import sigmoid

    rng = np.random.default_rng(0)
    specials = [np.nan, np.inf, -np.inf, -0.0, 0.0, 800.0, -800.0]
    with np.errstate(all="ignore"):
        for _ in range(500):
            k = int(rng.integers(2, 6))
            pairs = k * (k - 1) // 2
            svc = ml_linear._SVC(
                classlabels_ints=list(range(k)),
                coefficients=[1.0] * ((k - 1) * k),
                rho=[0.0] * pairs,
                support_vectors=[0.0] * k,
                vectors_per_class=[1] * k,
                prob_a=[float(v) for v in rng.standard_normal(pairs) * 5],
                prob_b=[float(v) for v in rng.standard_normal(pairs)],
            )
            dec = rng.standard_normal((1, pairs)) * 10.0 ** rng.integers(-3, 3, (1, pairs))
            if rng.random() < 0.3:
                dec[0, rng.integers(pairs)] = specials[rng.integers(len(specials))]
            pr = np.minimum(np.maximum(1.0 - sigmoid(dec * svc.pa[:pairs] + svc.pb[:pairs]), 1e-7), 1 - 1e-7)
            r = np.zeros((1, k, k))
            r[:, svc.iu, svc.ju] = pr
            r[:, svc.ju, svc.iu] = 1.0 - pr
            assert np.array_equal(svc._one_row_pairwise(dec, pairs), r, equal_nan=True)


@pytest.mark.skipif(not accel.available(), reason="the accelerator (numba) is not installed or ONNXCORE_ACCEL=0")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("n", "f"), [(1, 5), (3, 12), (16, 40), (64, 300), (2, 1500)])
def test_linear_models_scaler_and_normalizer_compiled_give_the_numpy_paths_bits(dtype: Any, n: int, f: int) -> None:
    """Issue 42, item 2: Imputer, Scaler, Normalizer, LinearClassifier and LinearRegressor at a few rows take the
    accelerator's loops (_jit_ml: one loop, or BLAS's product then one loop for a wide model); the values, labels,
    shapes and types are the numpy path's bit for bit: the Normalizer's sums in numpy's pairwise order (blocks of
    eight, halved past 128 values: 300 and 1,500 features), the transforms (SOFTMAX, LOGISTIC, the binary two
    columns) step for step, NaN and all-zero rows included."""
    rng = np.random.default_rng(n * 1000 + f)
    x = (rng.standard_normal((n, f)) * 10.0 ** rng.uniform(-2, 2, (n, f))).astype(dtype)
    x[-1] = 0.0
    if n > 2:
        x[1, f // 2] = np.nan
    kernels: list[Any] = [_Scaler(offset=list(rng.standard_normal(f)), scale=list(rng.standard_normal(f)))]
    kernels += [_Scaler(offset=[0.5], scale=[2.0])]
    kernels += [_Normalizer(norm=norm) for norm in ("MAX", "L1", "L2")]
    kernels += [_Imputer(imputed_value_floats=list(rng.standard_normal(f)), replaced_value_float=float("nan"))]
    kernels += [_Imputer(imputed_value_floats=[2.5], replaced_value_float=0.0)]
    for post in ("NONE", "SOFTMAX", "LOGISTIC", "PROBIT"):
        for t in (1, 3):
            coef = list(rng.standard_normal(f * t))
            b = list(rng.standard_normal(t))
            labels = [7, 9] if t == 1 else [10, 20, 30]
            kernels.append(ml_linear._LinearClassifier(coefficients=coef, intercepts=b, classlabels_ints=labels,
                                                       post_transform=post))  # fmt: skip
            kernels.append(ml_linear._LinearRegressor(coefficients=coef, intercepts=b, targets=t, post_transform=post))
        kernels.append(ml_linear._LinearClassifier(coefficients=list(rng.standard_normal(f * 2)),
                                                   classlabels_strings=["a", "b"], post_transform=post))  # fmt: skip
    for k in kernels:
        with accel.use(True):
            fast = k(x)
        with accel.use(False):
            slow = k(x)
        pairs = zip(fast, slow) if isinstance(fast, tuple) else [(fast, slow)]
        for got, want in pairs:
            assert got.shape == want.shape and got.dtype == want.dtype, type(k).__name__
            np.testing.assert_array_equal(got, want, err_msg=f"{type(k).__name__} {getattr(k, 'post', '')}")


@pytest.mark.skipif(not accel.available(), reason="the accelerator (numba) is not installed or ONNXCORE_ACCEL=0")
@pytest.mark.parametrize(("n", "f", "v"), [(1, 10, 1111), (3, 200, 40), (16, 7, 300)])
def test_rbf_kernel_matrix_compiled_gives_the_numpy_paths_bits(n: int, f: int, v: int) -> None:
    """The SVM's RBF kernel with the accelerator: BLAS's products, then the six passes to the exponents as one
    compiled loop (the row's squares summed in numpy's pairwise order) and numpy's exp: the numpy path's values bit
    for bit, a NaN feature, a row equal to a support vector (distance 0, and -0.0 below the clip) included."""
    rng = np.random.default_rng(n * 100 + f)
    rows = rng.standard_normal((n, f)) * 10.0 ** rng.uniform(-3, 2, (n, 1))
    sv = rng.standard_normal((v, f))
    sv[0] = rows[0]
    if n > 1:
        rows[1, 0] = np.nan
    params = (float(np.float32(0.37)), 0.0, 3.0)
    for sq in (None, np.square(sv).sum(axis=1)):
        with accel.use(True):
            fast = ml_linear._kernel_matrix(rows, sv, "RBF", params, sq)
        with accel.use(False):
            slow = ml_linear._kernel_matrix(rows, sv, "RBF", params, sq)
        assert fast.dtype == slow.dtype and fast.shape == slow.shape == (n, v)
        np.testing.assert_array_equal(fast, slow)
        # A row equal to a support vector: exp(-gamma * d) of a distance d that is 0 up to the rounding of BLAS's
        # products (|x|^2 + |s|^2 - 2 x.s: exactly 0 with some kernels, 1e-15 with OpenBLAS's Haswell ones).
        assert abs(fast[0, 0] - 1.0) <= 1e-12


@pytest.mark.skipif(not accel.available(), reason="the accelerator (numba) is not installed or ONNXCORE_ACCEL=0")
def test_a_prepared_ml_kernel_called_again_gives_a_fresh_ones_values() -> None:
    """Imputer, Scaler, Normalizer and the linear models: after a first call, rows of the same features go straight
    to the compiled loop (again_rows): every later call, whatever it brings (another element type, a view that is
    not contiguous, more rows than the loop takes, another feature count, one row, the accelerator switched off),
    gives what a fresh kernel gives it, or refuses what a fresh one refuses."""
    rng = np.random.default_rng(11)
    f = 6
    coef = list(rng.standard_normal(3 * f))
    makers = [
        lambda: _Scaler(offset=[0.5, -1, 2, 0, 3, 1], scale=[2.0, 1, 0.5, 3, 1, -1]),
        lambda: _Normalizer(norm="L2"),
        lambda: _Imputer(imputed_value_floats=[9, 8, 7, 6, 5, 4], replaced_value_float=float("nan")),
        lambda: ml_linear._LinearClassifier(coefficients=coef, intercepts=[0.5, -1, 2], classlabels_ints=[4, 5, 6]),
        lambda: ml_linear._LinearClassifier(
            coefficients=coef[:f], classlabels_strings=["no", "yes"], post_transform="LOGISTIC"
        ),
        lambda: ml_linear._LinearRegressor(coefficients=coef, intercepts=[1, 2, 3], targets=3),
    ]
    x32 = rng.standard_normal((4, f)).astype(np.float32)
    x32[1, 2] = np.nan
    calls: list[Any] = [
        x32,
        np.repeat(x32, 20, axis=0),  # 80 rows: past the compiled loop's rows
        x32,
        x32.astype(np.float64),
        np.asfortranarray(x32),
        x32[:, ::-1],
        x32[:1],
        x32[0],
        rng.standard_normal((3, f + 1)).astype(np.float32),
    ]
    for make in makers:
        k = make()
        for x in calls:
            for on in (True, False):
                with accel.use(on):
                    try:
                        want = make()(x)
                    except EvaluationError:
                        with pytest.raises(EvaluationError):
                            k(x)
                        continue
                    got = k(x)
                for g, w in zip(got, want) if isinstance(want, tuple) else [(got, want)]:
                    assert g.dtype == w.dtype and g.shape == w.shape
                    np.testing.assert_array_equal(g, w)
