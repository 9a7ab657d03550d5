"""Reduction kernels: ONNX 1-3 vectors, and differential tests against onnxruntime.

Covers the Reduce* family (axes attribute vs input, negative axes, keepdims, noop_with_empty_axes,
empty reductions), ArgMax/ArgMin, CumSum/CumProd, Softmax/LogSoftmax/Hardmax and TopK.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kernels import compare, run_ours, single_node_cases
from onnxcore import kernels as onnxcore_kernels
from onnxcore.kernels import reduction
from onnxcore.kernels._util import BLAS_SUM_MIN, SHORT_ROWS

REDUCTION_OPS = set(
    "ArgMax ArgMin ReduceL1 ReduceL2 ReduceLogSum ReduceLogSumExp ReduceMax ReduceMean ReduceMin ReduceProd "
    "ReduceSum ReduceSumSquare CumSum CumProd Softmax LogSoftmax Hardmax TopK".split()
)

RNG = np.random.default_rng(7)


@pytest.mark.parametrize("case_dir", single_node_cases(REDUCTION_OPS))
def test_onnx_node_case(case_dir: Path) -> None:
    """Every single-node ONNX 1-3 case of these operators (rtol 1e-3, atol 1e-7; Clause 11.5)."""
    pytest.importorskip("onnx")
    from node_harness import assert_close, run_single_node_case

    with np.errstate(all="ignore"):
        result = run_single_node_case(case_dir)
    assert result is not None, "kernel not registered"
    actual, expected = result
    for a, e in zip(actual, expected):
        assert_close(a, e)


REDUCE_OPS = [
    "ReduceSum",
    "ReduceMean",
    "ReduceMax",
    "ReduceMin",
    "ReduceProd",
    "ReduceL1",
    "ReduceL2",
    "ReduceLogSum",
    "ReduceLogSumExp",
    "ReduceSumSquare",
]


def _input_axes_version(op: str) -> int:
    return 13 if op == "ReduceSum" else 18


def _data(op: str, shape: tuple[int, ...], dtype: str = "float32") -> np.ndarray:
    if np.dtype(dtype).kind in "iu":
        return RNG.integers(1, 4, size=shape).astype(dtype)
    lo = 0.5 if op in ("ReduceLogSum", "ReduceProd") else -2.0
    return RNG.uniform(lo, 2.0, size=shape).astype(dtype)


AXES_CASES = [None, [], [0], [-1], [1, -1], [-3, 2], [2, 0, 1]]


@pytest.mark.parametrize("op", REDUCE_OPS)
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce_axes_attribute_vs_ort(op: str, keepdims: int) -> None:
    """Opset 11 (axes attribute, negative axes admitted)."""
    pytest.importorskip("onnxruntime")
    x = _data(op, (2, 3, 4))
    for axes in AXES_CASES:
        attrs: dict = {"keepdims": keepdims}
        if axes is not None:
            attrs["axes"] = axes
        compare(op, [x], 11, attrs, rtol=1e-5)


@pytest.mark.parametrize("op", REDUCE_OPS)
@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("noop", [0, 1])
def test_reduce_axes_input_vs_ort(op: str, keepdims: int, noop: int) -> None:
    """Opset 13 (ReduceSum) / 18 (others): axes as input; absent or empty axes and noop_with_empty_axes."""
    pytest.importorskip("onnxruntime")
    v = _input_axes_version(op)
    x = _data(op, (3, 2, 4))
    attrs = {"keepdims": keepdims, "noop_with_empty_axes": noop}
    for axes in [[0], [-1, 1], [-3, -2, -1]]:
        compare(op, [x, np.array(axes, dtype=np.int64)], v, attrs, rtol=1e-5)
    compare(op, [x, np.array([], dtype=np.int64)], v, attrs, rtol=1e-5)
    compare(op, [x], v, attrs, rtol=1e-5)


@pytest.mark.parametrize(
    "op", ["ReduceSum", "ReduceMean", "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSumExp"]
)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_large_sums_vs_ort(op: str, dtype: str) -> None:
    """Tensors large enough for the BLAS sums (a product with ones, an einsum for squares): every split
    of consecutive axes (leading, middle, trailing, all), non-consecutive axes, and a non-contiguous input."""
    pytest.importorskip("onnxruntime")
    from onnxcore.kernels._util import BLAS_SUM_MIN

    x = _data(op, (8, 40, 6, 20), dtype)
    assert x.size >= BLAS_SUM_MIN
    for axes in [[0], [1], [-1], [1, 2], [0, 1], [2, 3], [0, 1, 2, 3], [0, 2], [1, 3]]:
        compare(op, [x, np.array(axes, np.int64)], 18, {"keepdims": 1}, rtol=1e-5, atol=1e-5)
        compare(op, [x, np.array(axes, np.int64)], 18, {"keepdims": 0}, rtol=1e-5, atol=1e-5)
    compare(op, [np.ascontiguousarray(x.transpose(3, 1, 2, 0))[::2], np.array([1, 2], np.int64)], 18,
            {"keepdims": 0}, rtol=1e-5, atol=1e-5)  # fmt: skip


def test_large_sums_propagate_nan_and_infinity() -> None:
    from onnxcore.kernels.reduction import reduce_values

    x = np.ones((64, 32, 16), np.float32)
    x[3, 5, 7] = np.nan
    x[10, 2, 1] = np.inf
    x[11, 2, 1] = -np.inf
    y = reduce_values("sum", x, (1,), False)
    assert np.isnan(y[3, 7]) and y[10, 1] == np.inf and y[11, 1] == -np.inf
    assert np.isnan(y).sum() == 1 and np.isinf(y).sum() == 2
    np.testing.assert_array_equal(np.delete(y.ravel(), [3 * 16 + 7, 10 * 16 + 1, 11 * 16 + 1]), 32.0)
    l2 = reduce_values("l2", x, (2,), True)
    assert l2.shape == (64, 32, 1) and np.isnan(l2[3, 5, 0]) and l2[10, 2, 0] == np.inf


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceMean", "ReduceSumSquare"])
@pytest.mark.parametrize("dtype", ["int32", "int64", "float64", "float16"])
def test_reduce_types_vs_ort(op: str, dtype: str) -> None:
    pytest.importorskip("onnxruntime")
    x = _data(op, (3, 5), dtype)
    compare(op, [x, np.array([1], np.int64)], _input_axes_version(op), {"keepdims": 0}, rtol=2e-3)


# Empty reductions: the definitions' identities. onnxruntime is the oracle where it agrees; the
# expectations are also written out from the definitions so the test cannot pass vacuously.
EMPTY_IDENTITY = {
    "ReduceSum": 0.0,
    "ReduceSumSquare": 0.0,
    "ReduceL1": 0.0,
    "ReduceL2": 0.0,
    "ReduceProd": 1.0,
    "ReduceLogSum": -np.inf,
    "ReduceLogSumExp": -np.inf,
    "ReduceMax": -np.inf,
    "ReduceMin": np.inf,
}


@pytest.mark.parametrize("op", sorted(EMPTY_IDENTITY))
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce_empty_set_identity(op: str, keepdims: int) -> None:
    x = np.zeros((2, 0, 4), dtype=np.float32)
    (y,) = run_ours(op, [x, np.array([1], np.int64)], _input_axes_version(op), {"keepdims": keepdims})
    assert y.shape == ((2, 1, 4) if keepdims else (2, 4))
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y, np.full(y.shape, EMPTY_IDENTITY[op], np.float32))
    # Reducing a non-empty axis of an empty tensor gives an empty result.
    (z,) = run_ours(op, [x, np.array([2], np.int64)], _input_axes_version(op), {"keepdims": keepdims})
    assert z.shape == ((2, 0, 1) if keepdims else (2, 0))


@pytest.mark.parametrize("op", sorted(EMPTY_IDENTITY))
def test_reduce_empty_tensors_vs_ort(op: str) -> None:
    pytest.importorskip("onnxruntime")
    x = np.zeros((2, 0, 3), np.float32)
    v = _input_axes_version(op)
    # Not compared: several axes of an empty tensor at once, where onnxruntime 1.31 returns shape
    # (0, 3) for axes [-2, 0] of (2, 0, 3) with keepdims=0 (the reduced shape is (3,));
    # test_reduce_empty_set_identity covers ours.
    for axes in ([1], [0], []):
        for keepdims in (0, 1):
            compare(op, [x, np.array(axes, np.int64)], v, {"keepdims": keepdims})


def test_reduce_empty_int_and_bool_extremes() -> None:
    x = np.zeros((0, 3), dtype=np.int32)
    (y,) = run_ours("ReduceMax", [x, np.array([0], np.int64)], 20, {"keepdims": 0})
    assert y.dtype == np.int32 and y.tolist() == [np.iinfo(np.int32).min] * 3
    (y,) = run_ours("ReduceMin", [x.astype(np.uint8), np.array([0], np.int64)], 20, {"keepdims": 0})
    assert y.tolist() == [255] * 3
    b = np.zeros((0, 2), dtype=bool)
    (y,) = run_ours("ReduceMax", [b, np.array([0], np.int64)], 20, {"keepdims": 0})
    assert y.dtype == np.bool_ and y.tolist() == [False, False]
    (y,) = run_ours("ReduceMean", [np.zeros((0,), np.float32)], 18, {"keepdims": 0})
    assert y.shape == () and np.isnan(y)


def test_reduce_max_bool_and_nan() -> None:
    b = np.array([[True, False], [False, False]])
    (y,) = run_ours("ReduceMax", [b, np.array([1], np.int64)], 20, {"keepdims": 0})
    assert y.tolist() == [True, False]
    x = np.array([[1.0, np.nan], [2.0, 3.0]], np.float32)
    (y,) = run_ours("ReduceMax", [x, np.array([1], np.int64)], 18, {"keepdims": 0})
    assert np.isnan(y[0]) and y[1] == 3.0


def test_reduce_rejects_bad_axes() -> None:
    from onnxcore.errors import EvaluationError

    x = np.zeros((2, 3), np.float32)
    with pytest.raises(EvaluationError):
        run_ours("ReduceSum", [x, np.array([2], np.int64)], 13)
    with pytest.raises(EvaluationError):
        run_ours("ReduceMean", [x], 11, {"axes": [0, -2]})


def test_reduce_rank0_input_and_output() -> None:
    """Rank-0 results are 0-d ndarrays, never numpy scalars."""
    x = np.array(3.5, np.float32)
    full = RNG.uniform(0.5, 2, size=(2, 3)).astype(np.float32)
    for op in REDUCE_OPS:
        v = _input_axes_version(op)
        (y,) = run_ours(op, [x], v, {"keepdims": 1})
        assert type(y) is np.ndarray and y.shape == ()
        (y,) = run_ours(op, [full], v, {"keepdims": 0})
        assert type(y) is np.ndarray and y.shape == () and y.dtype == np.float32
        (y,) = run_ours(op, [full], 11, {"keepdims": 0})
        assert type(y) is np.ndarray and y.shape == ()
    for op in ("Softmax", "LogSoftmax", "Hardmax"):
        (y,) = run_ours(op, [x], 13)
        assert type(y) is np.ndarray and y.shape == ()
    (y,) = run_ours("ArgMax", [full.ravel()], 13, {"keepdims": 0})
    assert type(y) is np.ndarray and y.shape == () and y.dtype == np.int64


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("opset", [11, 13])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_arg_vs_ort(op: str, opset: int, keepdims: int) -> None:
    pytest.importorskip("onnxruntime")
    # Small integers as floats give ties, so first/last index selection is exercised.
    x = RNG.integers(0, 3, size=(3, 4, 5)).astype(np.float32)
    for axis in (0, 1, -1, -3):
        attrs = {"axis": axis, "keepdims": keepdims}
        compare(op, [x], opset, attrs)
        if opset >= 12:
            compare(op, [x], opset, {**attrs, "select_last_index": 1})


def test_arg_select_last_index_ties() -> None:
    x = np.array([[2, 5, 5, 1], [1, 1, 0, 0]], np.int32)
    (y,) = run_ours("ArgMax", [x], 13, {"axis": 1, "select_last_index": 1})
    assert y.dtype == np.int64 and y.tolist() == [[2], [1]]
    (y,) = run_ours("ArgMin", [x], 13, {"axis": 1, "keepdims": 0})
    assert y.tolist() == [3, 2]


@pytest.mark.parametrize("op", ["CumSum", "CumProd"])
@pytest.mark.parametrize("exclusive", [0, 1])
@pytest.mark.parametrize("reverse", [0, 1])
@pytest.mark.parametrize("dtype", ["float32", "int64", "float64", "int32"])
def test_cumulative_vs_ort(op: str, exclusive: int, reverse: int, dtype: str) -> None:
    x = RNG.integers(1, 4, size=(3, 4)).astype(dtype)
    attrs = {"exclusive": exclusive, "reverse": reverse}
    if op == "CumProd":
        # onnxruntime 1.31 has no CumProd-26 kernel; the definition's formula is the oracle.
        for axis in (0, 1, -1):
            (y,) = run_ours(op, [x, np.array(axis, np.int64)], 26, attrs)
            a = axis % 2
            xs = np.flip(x, a) if reverse else x
            ref = np.cumprod(xs, axis=a, dtype=x.dtype)
            if exclusive:
                ref = np.concatenate([np.ones_like(np.take(ref, [0], a)), np.delete(ref, -1, a)], axis=a)
            ref = np.flip(ref, a) if reverse else ref
            assert y.dtype == x.dtype
            np.testing.assert_array_equal(y, ref)
        return
    pytest.importorskip("onnxruntime")
    for axis in (0, 1, -1, -2):
        compare(op, [x, np.array(axis, np.int64)], 14, attrs)
        compare(op, [x, np.array([axis], np.int32)], 11, attrs)


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax", "Hardmax"])
@pytest.mark.parametrize("opset", [11, 13])
def test_softmax_family_vs_ort(op: str, opset: int) -> None:
    """Opset 11: 2-D coercion at ``axis``; opset 13: along one axis (the results differ)."""
    pytest.importorskip("onnxruntime")
    x = RNG.normal(size=(2, 3, 4)).astype(np.float32) * 3
    x[0, 0, :2] = 5.0  # a tie for Hardmax
    for axis in (0, 1, 2, -1, -2):
        compare(op, [x], opset, {"axis": axis}, rtol=1e-5)
    compare(op, [x], opset)


def test_softmax_coercion_differs_from_axis_semantics() -> None:
    x = RNG.normal(size=(2, 3, 4)).astype(np.float32)
    (y11,) = run_ours("Softmax", [x], 11, {"axis": 1})
    (y13,) = run_ours("Softmax", [x], 13, {"axis": 1})
    np.testing.assert_allclose(y11.reshape(2, 12).sum(axis=1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(y13.sum(axis=1), 1.0, rtol=1e-6)
    assert not np.allclose(y11, y13)


def test_softmax_large_and_infinite() -> None:
    x = np.array([[1000.0, 1000.0, -np.inf], [-np.inf, 0.0, 1.0]], np.float32)
    (y,) = run_ours("Softmax", [x], 13)
    np.testing.assert_allclose(y[0], [0.5, 0.5, 0.0])
    (z,) = run_ours("LogSoftmax", [x], 13)
    assert z[0, 2] == -np.inf and np.isfinite(z[1, 1:]).all()


@pytest.mark.parametrize("opset", [10, 11, 24])
@pytest.mark.parametrize("largest", [0, 1])
@pytest.mark.parametrize("dtype", ["float32", "int64", "float64"])
def test_topk_vs_ort(opset: int, largest: int, dtype: str) -> None:
    pytest.importorskip("onnxruntime")
    if opset == 10 and (not largest or dtype == "int64"):
        pytest.skip("largest is an attribute, and integer types admitted, from opset 11")
    x = RNG.integers(0, 4, size=(3, 6)).astype(dtype)  # many ties: index order decides
    for axis, k in ((1, 3), (-1, 6), (0, 2), (1, 0)):
        attrs = {"axis": axis}
        if opset >= 11:
            attrs["largest"] = largest
        compare("TopK", [x, np.array([k], np.int64)], opset, attrs, n_outputs=2)


def test_topk_v1_attribute_and_tie_order() -> None:
    x = np.array([[3.0, 1.0, 3.0, 2.0, 3.0]], np.float32)
    values, idx = run_ours("TopK", [x], 1, {"k": 3})
    assert values.tolist() == [[3.0, 3.0, 3.0]] and idx.tolist() == [[0, 2, 4]]
    values, idx = run_ours("TopK", [x, np.array([2], np.int64)], 11, {"largest": 0})
    assert values.tolist() == [[1.0, 2.0]] and idx.tolist() == [[1, 3]]


def _reduce_build(op: str):  # type: ignore[no-untyped-def]
    x = _data(op, (2, 3, 4))

    def build(v: int) -> tuple:
        if (op == "ReduceSum" and v >= 13) or (op != "ReduceSum" and v >= 18):
            return [x, np.array([-1, 0], np.int64)], {"keepdims": 0}
        return [x], {"axes": [-1, 0] if v >= 11 else [2, 0], "keepdims": 0}

    return build


@pytest.mark.parametrize("op", REDUCE_OPS)
def test_reduce_every_version_vs_ort(op: str) -> None:
    pytest.importorskip("onnxruntime")
    from kernels import sweep_versions

    assert sweep_versions(op, _reduce_build(op), rtol=1e-5) > 0


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin", "CumSum", "Softmax", "LogSoftmax", "Hardmax", "TopK"])
def test_other_every_version_vs_ort(op: str) -> None:
    pytest.importorskip("onnxruntime")
    from kernels import sweep_versions

    x = RNG.integers(0, 5, size=(2, 3, 4)).astype(np.float32)

    def build(v: int) -> tuple:
        if op in ("ArgMax", "ArgMin"):
            return [x], {"axis": -2 if v >= 11 else 1, "keepdims": 0}
        if op == "CumSum":
            return [x, np.array(-1, np.int64)], {"exclusive": 1}
        if op == "TopK":
            if v == 1:
                return [x], {"k": 2, "axis": 1}
            return [x, np.array([2], np.int64)], {"axis": 1}
        return [x], {"axis": 1}

    assert sweep_versions(op, build, rtol=1e-5, n_outputs=2 if op == "TopK" else 1) > 0


def test_topk_matches_definition_brute_force() -> None:
    """Random shapes, axes, k and heavy ties (both the sort and the partition paths): the k best
    values, equal values in ascending index order (TopK definition)."""
    rng = np.random.default_rng(3)

    def reference(x: np.ndarray, k: int, a: int, largest: int) -> np.ndarray:
        xm = np.moveaxis(x, a, -1)
        idx = np.empty(xm.shape[:-1] + (k,), np.int64)
        for r in np.ndindex(xm.shape[:-1]):
            row = [float(v) for v in xm[r]]
            idx[r] = sorted(range(len(row)), key=lambda i: (-row[i] if largest else row[i], i))[:k]
        return np.moveaxis(idx, -1, a)

    for trial in range(150):
        shape = [int(v) for v in rng.integers(1, 5, size=rng.integers(1, 4))]
        a = int(rng.integers(0, len(shape)))
        shape[a] = int(rng.integers(1, 40))
        dt = ["float32", "int64", "uint8", "int8"][trial % 4]
        x = rng.integers(0, 50 if trial % 3 == 0 else 4, size=shape).astype(dt)
        k = int(rng.integers(0, shape[a] + 1)) if trial % 2 else int(rng.integers(0, shape[a] // 4 + 1))
        largest = int(rng.integers(0, 2))
        axis = a - len(shape) if trial % 2 else a
        values, idx = run_ours("TopK", [x, np.array([k], np.int64)], 11, {"axis": axis, "largest": largest})
        ref = reference(x, k, a, largest)
        np.testing.assert_array_equal(idx, ref)
        np.testing.assert_array_equal(values, np.take_along_axis(x, ref, a))
        assert values.dtype == x.dtype and idx.dtype == np.int64


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "uint8", "bool"])
def test_large_max_min_over_trailing_axes(op: str, dtype: str) -> None:
    """Short rows (halving, column passes, reduceat; trailing and inner axes) give numpy's values exactly,
    NaN propagating, in a new array (never a view of the input)."""
    from onnxcore.kernels._util import BLAS_SUM_MIN
    from onnxcore.kernels.reduction import reduce_values

    ref = np.max if op == "max" else np.min
    for shape, axes in [((4096, 5), (1,)), ((64, 32, 16), (2,)), ((64, 32, 16), (1, 2)), ((16, 1024, 3), (-1,)),
                        ((9, 2000, 2), (1, 2)), ((128, 300), (-1,)), ((40, 1100), (1,)), ((64, 16, 64), (2,)),
                        ((512, 48), (1,)), ((200, 100), (-1,)), ((3, 8192, 1), (2,)), ((8192, 2), (1,)),
                        ((64, 4, 96), (1, 2)), ((64, 128, 8), (1,)), ((16, 96, 64), (1,)), ((8, 100, 32), (1,)),
                        ((32, 64, 2, 16), (1, 2)), ((4, 4096, 1), (1,))]:  # fmt: skip
        x = (RNG.standard_normal(shape) * 50).astype(dtype) if dtype != "bool" else RNG.random(shape) > 0.7
        assert x.size >= BLAS_SUM_MIN
        if dtype.startswith("float"):
            x[0, 1] = np.nan
            x.reshape(-1)[-1] = np.nan
        for keepdims in (False, True):
            got = reduce_values(op, x, axes, keepdims)
            want = ref(x, axis=axes, keepdims=keepdims)
            assert got.dtype == x.dtype and got.shape == want.shape
            assert not np.shares_memory(got, x)
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_product_over_a_short_last_axis_is_numpys_reduction(dtype: type, keepdims: int) -> None:
    # ReduceProd folds the columns of a last axis of 2-8 values (kernels/reduction._short_product): numpy multiplies
    # in order, so the fold must give its reduction's bits, NaN, infinities and signed zeros included, contiguous or
    # not, at counts of outputs either side of the threshold.
    rng = np.random.default_rng(11)
    specials = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1e30, -1e-30])
    for m in range(1, 11):
        for rows in (1, 3, 21, 22, 500):
            x = (rng.standard_normal((rows, 3, m)) * 2).astype(dtype)
            spots = rng.choice(x.size, min(x.size, 9), replace=False)
            x.flat[spots] = rng.choice(specials, spots.size).astype(dtype)
            for v in (x, np.ascontiguousarray(x.transpose(1, 0, 2)).transpose(1, 0, 2)):
                for axes in ([-1], [2]):
                    got = onnxcore_kernels.run("ReduceProd", 13, v, axes=axes, keepdims=keepdims)[0]
                    acc = v.astype(np.float32) if dtype == np.float16 else v
                    want = np.multiply.reduce(acc, axis=-1, keepdims=bool(keepdims)).astype(dtype)
                    assert got.dtype == want.dtype and got.shape == want.shape
                    assert got.tobytes() == want.tobytes(), (m, rows)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin", "ReduceLogSumExp"])
def test_many_short_rows_below_the_halving_size_are_numpys_values(
    op: str, dtype: type, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Below _HALVING_MIN elements, rows are halved once there are SHORT_ROWS of them (a classifier's
    # (1,000, 4) scores): the maxima and minima must be the reduction's bits, NaN, infinities and signed zeros
    # included, either side of the size and row-count thresholds; ReduceLogSumExp's shift reads the same maxima.
    rng = np.random.default_rng(12)
    specials = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0], dtype)
    low, outputs = reduction._SHORT_ROWS_MIN, SHORT_ROWS
    for shape, axes in [((1000, 4), [1]), ((outputs, 4), [1]), ((outputs - 1, 5), [-1]), ((low // 4, 4), [1]),
                        ((300, 3), [1]), ((100, 7), [1]), ((70, 3, 4), [2]), ((70, 3, 4), [1, 2]),
                        ((80, 6, 2), [1]), ((2000, 2), [1]), ((4000, 4), [-1])]:  # fmt: skip
        x = (rng.standard_normal(shape) * 5).astype(dtype)
        spots = rng.choice(x.size, x.size // 6, replace=False)
        x.flat[spots] = rng.choice(specials, spots.size)
        for keepdims in (0, 1):
            got = onnxcore_kernels.run(op, 13, x, axes=axes, keepdims=keepdims)[0]
            if op == "ReduceLogSumExp":
                with monkeypatch.context() as m:  # the maxima by numpy's reduction
                    m.setattr(reduction, "_extreme", lambda uf, xc, ax, kd: uf.reduce(xc, axis=ax, keepdims=kd))
                    want = onnxcore_kernels.run(op, 13, x, axes=axes, keepdims=keepdims)[0]
            else:
                uf = np.maximum if op == "ReduceMax" else np.minimum
                want = uf.reduce(x, axis=tuple(axes), keepdims=bool(keepdims))
            assert got.dtype == want.dtype and got.shape == want.shape
            assert got.tobytes() == want.tobytes(), (shape, axes, keepdims)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_sums_over_a_short_last_axis_are_numpys_reduction(dtype: type, keepdims: int) -> None:
    # Small sums (ReduceSumSquare below SQUARE_SUM_MIN elements, ReduceSum below BLAS_SUM_MIN) over a last axis of
    # 2-15 values pass over its columns (kernels/_util.short_sum) in the order numpy's reduction adds a
    # contiguous row: its bits, NaN, infinities and signed zeros included, over values of very different
    # magnitudes (where the order shows), either side of the row-count threshold; another layout keeps the
    # reduction itself.
    rng = np.random.default_rng(13)
    specials = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0], dtype)
    for m in range(1, 18):
        for rows in (1, SHORT_ROWS - 1, SHORT_ROWS, 700):
            x = (rng.standard_normal((rows, m)) * np.exp(rng.uniform(-12, 12, (rows, m)))).astype(dtype)
            spots = rng.choice(x.size, x.size // 50, replace=False)
            x.flat[spots] = rng.choice(specials, spots.size)
            for v in (x, np.asfortranarray(x), x.reshape(rows, 1, m)):
                got = onnxcore_kernels.run("ReduceSumSquare", 13, v, axes=[-1], keepdims=keepdims)[0]
                want = np.add.reduce(np.square(v), axis=-1, keepdims=bool(keepdims))
                assert got.dtype == want.dtype and got.shape == want.shape
                assert got.tobytes() == want.tobytes(), (m, rows, v.shape)
                if v.size < BLAS_SUM_MIN:
                    got = onnxcore_kernels.run("ReduceSum", 13, v, np.array([-1]), keepdims=keepdims)[0]
                    assert got.tobytes() == np.add.reduce(v, axis=-1, keepdims=bool(keepdims)).tobytes()


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "uint8"])
@pytest.mark.parametrize("shape", [(7,), (1, 50), (3, 4, 9)])
def test_cumsum_along_the_last_axis_takes_the_general_paths_bits(dtype: str, shape: tuple[int, ...]) -> None:
    """CumSum-14 along the last axis (a 0-D axis: the direct accumulate) gives the general path's bits (a 1-element
    axis input takes the general path), in the input's type, wrapping as it does for integers (Clause 6.1)."""
    if dtype.startswith("float"):
        x = (RNG.standard_normal(shape) * 1e3).astype(dtype)
    else:
        x = RNG.integers(0, 250, size=shape).astype(dtype)
    for axis in (-1, len(shape) - 1):
        (fast,) = run_ours("CumSum", [x, np.array(axis, np.int64)], 14, {})
        (general,) = run_ours("CumSum", [x, np.array([axis], np.int64)], 14, {})
        assert fast.dtype == general.dtype == x.dtype
        np.testing.assert_array_equal(fast, general)
        np.testing.assert_array_equal(fast, np.add.accumulate(x, axis=-1, dtype=x.dtype))
