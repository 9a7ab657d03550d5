"""Linear-algebra kernels: ONNX 1-3 vectors, and differential tests against onnxruntime."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from kernels import compare, run_ours, single_node_cases
from onnxcore.errors import LimitError, ShapeError
from onnxcore.kernels.fused.linear import LinearStep
from onnxcore.kernels.linalg import dot_2d, gemm, matmul
from onnxcore.limits import DEFAULT_LIMITS, limits_in_effect

LINALG_OPS = {"MatMul", "Gemm", "Einsum", "Det", "Trilu"}

RNG = np.random.default_rng(11)


@pytest.mark.parametrize("case_dir", single_node_cases(LINALG_OPS))
def test_onnx_node_case(case_dir: Path) -> None:
    """Every single-node ONNX 1-3 case of these operators (rtol 1e-3, atol 1e-7; Clause 11.5)."""
    pytest.importorskip("onnx")
    from node_harness import assert_close, run_single_node_case

    result = run_single_node_case(case_dir)
    assert result is not None, "kernel not registered"
    actual, expected = result
    for a, e in zip(actual, expected):
        assert_close(a, e)


def _r(shape: tuple[int, ...], dtype: str = "float32") -> np.ndarray:
    if np.dtype(dtype).kind in "iu":
        return RNG.integers(0, 5, size=shape).astype(dtype)
    return RNG.normal(size=shape).astype(dtype)


MATMUL_SHAPES = [
    ((3, 4), (4, 5)),
    ((4,), (4,)),
    ((4,), (4, 5)),
    ((3, 4), (4,)),
    ((2, 3, 4), (4, 5)),
    ((2, 1, 3, 4), (5, 4, 2)),
    ((0, 4), (4, 3)),
    ((3, 0), (0, 2)),
    ((5,), (2, 5, 3)),
]


@pytest.mark.parametrize(("sa", "sb"), MATMUL_SHAPES, ids=str)
@pytest.mark.parametrize(("opset", "dtype"), [(1, "float32"), (9, "int32"), (13, "float64"), (13, "float16")], ids=str)
def test_matmul_vs_ort(sa: tuple, sb: tuple, opset: int, dtype: str) -> None:
    pytest.importorskip("onnxruntime")
    compare("MatMul", [_r(sa, dtype), _r(sb, dtype)], opset, rtol=2e-3 if dtype == "float16" else 1e-5, atol=1e-4)


def test_matmul_mismatch_raises() -> None:
    from onnxcore.errors import ShapeError

    with pytest.raises(ShapeError):
        run_ours("MatMul", [_r((2, 3)), _r((4, 2))], 13)


GEMM_ATTRS = [
    {},
    {"transA": 1},
    {"transB": 1},
    {"transA": 1, "transB": 1, "alpha": 0.5, "beta": 2.0},
    {"alpha": -1.5},
    {"beta": 0.0},
]
C_SHAPES = [None, (), (1,), (5,), (3, 1), (3, 5), (1, 5)]


@pytest.mark.parametrize("attrs", GEMM_ATTRS, ids=str)
@pytest.mark.parametrize("opset", [11, 13])
def test_gemm_vs_ort(attrs: dict, opset: int) -> None:
    pytest.importorskip("onnxruntime")
    a = _r((4, 3) if attrs.get("transA") else (3, 4))
    b = _r((5, 4) if attrs.get("transB") else (4, 5))
    for cs in C_SHAPES:
        inputs = [a, b] if cs is None else [a, b, _r(cs)]
        compare("Gemm", inputs, opset, attrs, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("opset", [7, 9])
def test_gemm_required_c_vs_ort(opset: int) -> None:
    pytest.importorskip("onnxruntime")
    for cs in [(), (5,), (3, 5)]:
        compare("Gemm", [_r((3, 4)), _r((4, 5)), _r(cs)], opset, {"alpha": 2.0}, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", ["int32", "int64", "float64"])
def test_gemm_types_vs_ort(dtype: str) -> None:
    pytest.importorskip("onnxruntime")
    compare("Gemm", [_r((3, 4), dtype), _r((4, 5), dtype), _r((5,), dtype)], 13)


@pytest.mark.parametrize("opset", [1, 6])
def test_gemm_legacy_broadcast_attribute(opset: int) -> None:
    """onnxruntime has no Gemm before 7; the definition's formula is the oracle."""
    from onnxcore.errors import ShapeError

    a, b = _r((3, 4)), _r((4, 5))
    c = _r((5,))
    (y,) = run_ours("Gemm", [a, b, c], opset, {"broadcast": 1, "alpha": 2.0, "beta": 0.5})
    np.testing.assert_allclose(y, 2.0 * a @ b + 0.5 * c, rtol=1e-5)
    with pytest.raises(ShapeError):
        run_ours("Gemm", [a, b, c], opset, {"broadcast": 0})
    (y,) = run_ours("Gemm", [a, b, _r((3, 5))], opset, {"transA": 0})
    assert y.shape == (3, 5)


EINSUM_CASES = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]),
    ("ij->ji", [(3, 4)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (1, 3, 4, 5)]),
    ("i,i", [(6,), (6,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("Ab,bc->Ac", [(2, 3), (3, 4)]),
    ("ab, bc -> ac", [(2, 3), (3, 4)]),
    ("...i->...", [(2, 3, 4)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    # two operands lowered to one batched matmul (and its edge cases)
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),
    ("bhqk,bhkd->bqhd", [(2, 3, 4, 6), (2, 3, 6, 5)]),
    ("bij,jk->bik", [(2, 3, 4), (4, 5)]),
    ("ij,kj->ik", [(3, 4), (5, 4)]),
    ("ij,k->i", [(3, 4), (5,)]),
    ("ij,ij->ij", [(3, 4), (3, 4)]),
    ("ij,ij->", [(3, 4), (3, 4)]),
    ("i,j", [(3,), (4,)]),
    ("ba,ab", [(3, 4), (4, 3)]),
    ("...d,...d->...", [(2, 3, 4), (2, 3, 4)]),
    ("...ij,...jk", [(2, 3, 4), (2, 4, 5)]),
    ("bij,bjk->bik", [(1, 3, 4), (2, 4, 5)]),
    ("ij,jk->ik", [(0, 4), (4, 3)]),
    ("ij,jk->ik", [(3, 0), (0, 2)]),
    ("bA,Ac", [(2, 3), (3, 4)]),
    ("zA,Az", [(2, 3), (3, 2)]),
]


@pytest.mark.parametrize(("eq", "shapes"), EINSUM_CASES, ids=[c[0] for c in EINSUM_CASES])
def test_einsum_vs_ort(eq: str, shapes: list) -> None:
    pytest.importorskip("onnxruntime")
    compare("Einsum", [_r(s) for s in shapes], 12, {"equation": eq}, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("eq", "shapes"),
    [
        ("Ba,aC", [(2, 3), (3, 4)]),
        ("Ca,aB", [(2, 3), (3, 4)]),
        ("aB,Ba", [(2, 3), (3, 2)]),
        ("bC,Ca", [(2, 3), (3, 4)]),
    ],
)
def test_einsum_implicit_output_ascii_order(eq: str, shapes: list) -> None:
    """Implicit output: letters in increasing ASCII order, upper case first (Einsum definition).
    onnxruntime 1.31 rejects some of these labels, so numpy.einsum in float64 is the oracle."""
    ops = [_r(sh) for sh in shapes]
    (y,) = run_ours("Einsum", ops, 12, {"equation": eq})
    ref = np.einsum(eq, *[o.astype(np.float64) for o in ops])
    assert y.shape == ref.shape
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-6)


def test_einsum_integer_and_bad_equation() -> None:
    from onnxcore.errors import EvaluationError, ShapeError

    a, b = _r((2, 3), "int32"), _r((3, 2), "int32")
    (y,) = run_ours("Einsum", [a, b], 12, {"equation": "ij,jk->ik"})
    assert y.dtype == np.int32
    np.testing.assert_array_equal(y, a @ b)
    with pytest.raises(EvaluationError):
        run_ours("Einsum", [a], 12, {"equation": "ij,jk->ik"})
    with pytest.raises(ShapeError):
        run_ours("Einsum", [_r((2, 3, 4)), _r((4, 5))], 12, {"equation": "...ij,...jk->...ik"})
    # One letter, two extents (neither 1): numpy's einsum does not check it when the operand is empty.
    with pytest.raises(ShapeError, match="letter 'i'"):
        run_ours("Einsum", [_r((2, 0, 5))], 12, {"equation": "...ii->...i"})
    with pytest.raises(ShapeError, match="letter 'j'"):
        run_ours("Einsum", [_r((2, 3)), _r((4, 5))], 12, {"equation": "ij,jk->ik"})


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (2, 2, 1, 1), (0, 2, 2)], ids=str)
def test_det_vs_ort(shape: tuple) -> None:
    pytest.importorskip("onnxruntime")
    compare("Det", [_r(shape)], 11, rtol=1e-4, atol=1e-5)


def test_det_float16_and_bfloat16() -> None:
    import ml_dtypes

    x = np.array([[2.0, 1.0], [1.0, 3.0]], np.float32)
    for dt in (np.float16, ml_dtypes.bfloat16):
        (y,) = run_ours("Det", [x.astype(dt)], 22)
        assert y.dtype == np.dtype(dt) and y.shape == () and float(y) == 5.0


@pytest.mark.parametrize("upper", [0, 1])
@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_trilu_vs_ort(upper: int, dtype: str) -> None:
    pytest.importorskip("onnxruntime")
    x = _r((2, 4, 5), dtype) if dtype != "bool" else RNG.random((2, 4, 5)) < 0.7
    compare("Trilu", [x], 14, {"upper": upper})
    for k in (-7, -1, 0, 2, 6):
        compare("Trilu", [x, np.array(k, np.int64)], 14, {"upper": upper})


def test_trilu_strings_zero_is_empty() -> None:
    x = np.array([[b"a", b"b"], [b"c", b"d"]], dtype=object)
    (y,) = run_ours("Trilu", [x], 14, {"upper": 1})
    assert y.tolist() == [[b"a", b"b"], [b"", b"d"]]


@pytest.mark.parametrize("op", sorted(LINALG_OPS))
def test_every_version_vs_ort(op: str) -> None:
    pytest.importorskip("onnxruntime")
    from kernels import sweep_versions

    a, b, c = _r((3, 4)), _r((4, 5)), _r((3, 5))

    def build(v: int) -> tuple:
        if op == "MatMul":
            return [_r((2, 3, 4)), b], {}
        if op == "Gemm":
            return [a, b, c], {"alpha": 0.5, "beta": 2.0}
        if op == "Einsum":
            return [a, b], {"equation": "ij,jk->ik"}
        if op == "Det":
            return [_r((2, 3, 3))], {}
        return [_r((2, 3, 4)), np.array(1, np.int64)], {"upper": 0}

    assert sweep_versions(op, build, rtol=1e-5, atol=1e-5) > 0


def test_rank0_results_are_arrays() -> None:
    (y,) = run_ours("MatMul", [_r((4,)), _r((4,))], 13)
    assert type(y) is np.ndarray and y.shape == ()
    (y,) = run_ours("Det", [_r((3, 3))], 11)
    assert type(y) is np.ndarray and y.shape == ()
    for eq in ("i,i", "i,i->", "ij,ij", "ii"):
        ins = [_r((3, 3) if "j" in eq or eq == "ii" else (3,))] * (2 if "," in eq else 1)
        (y,) = run_ours("Einsum", ins, 12, {"equation": eq})
        assert type(y) is np.ndarray and y.shape == ()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(("trans_a", "trans_b"), [(0, 0), (1, 0), (0, 1), (1, 1)])
@pytest.mark.parametrize("c_shape", [None, (4,), (1, 4), (15, 4), (15, 1), ()])
@pytest.mark.parametrize(("alpha", "beta"), [(1.0, 1.0), (0.5, -2.0)])
def test_gemm_common_case_is_the_general_computation(
    dtype: str, trans_a: int, trans_b: int, c_shape: tuple[int, ...] | None, alpha: float, beta: float
) -> None:
    """Gemm's float fast path (issue 42: a small product at numpy's price) computes bit for bit what the general
    path's operations give: the product, scaled by alpha, plus beta * C broadcast unidirectionally."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((7, 15) if trans_a else (15, 7)).astype(dtype)
    b = rng.standard_normal((4, 7) if trans_b else (7, 4)).astype(dtype)
    c = None if c_shape is None else rng.standard_normal(c_shape).astype(dtype)
    got = gemm(a, b, c, alpha=alpha, beta=beta, transA=trans_a, transB=trans_b)
    want = np.matmul(a.T if trans_a else a, b.T if trans_b else b)
    if alpha != 1.0:
        want *= want.dtype.type(alpha)
    if c is not None:
        want += c if beta == 1.0 else c * want.dtype.type(beta)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, want)


def test_gemm_common_case_refuses_what_the_general_path_refuses() -> None:
    a, b = np.ones((15, 7), np.float32), np.ones((7, 4), np.float32)
    with pytest.raises(ShapeError, match="not unidirectionally broadcastable"):
        gemm(a, b, np.ones((3, 4), np.float32))
    with pytest.raises(ShapeError, match="inner dimensions differ"):
        gemm(a, b.T.copy())
    tight = dataclasses.replace(DEFAULT_LIMITS, max_tensor_elements=59)
    with limits_in_effect(tight), pytest.raises(LimitError, match="Gemm"):
        gemm(a, b)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("m", [1, 3, 16, 200])
@pytest.mark.parametrize(("k", "n"), [(1, 1), (10, 3), (64, 64), (100, 257), (768, 64)])
@pytest.mark.parametrize("layout", ["C", "F", "transposed view"])
def test_small_products_take_the_same_bits_as_matmul(dtype: str, m: int, k: int, n: int, layout: str) -> None:
    """The 2-D float products (MatMul, Gemm, the linear step, the linear classifier) call ``np.dot`` for its lower
    per-call cost (linalg's module docstring); it gives ``np.matmul``'s values bit for bit (three rows by a matrix
    the measurement gave to the rows one by one: each row's own matrix-vector product)."""
    from onnxcore.kernels.linalg import rows_one_by_one

    rng = np.random.default_rng(m * 1000 + k + n)
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    if layout == "F":
        a, b = np.asfortranarray(a), np.asfortranarray(b)
    elif layout == "transposed view":
        a, b = np.ascontiguousarray(a.T).T, np.ascontiguousarray(b.T).T
    got = matmul(a, b)
    if 1 < m <= 3 and rows_one_by_one(a, b):
        rows = np.stack([np.dot(a[i], b) for i in range(m)])
        assert got.dtype == rows.dtype and got.shape == rows.shape
        np.testing.assert_array_equal(got, rows)
        np.testing.assert_array_equal(np.matmul(a[:, None, :], b)[:, 0], rows)  # the stacked single rows' product
        return
    want = np.matmul(a, b)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.dot(a, b), want)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("m", [2, 3, 4])
@pytest.mark.parametrize(("k", "n"), [(512, 512), (768, 3072), (3072, 768)])
def test_a_few_rows_by_a_large_matrix_are_each_rows_own_product(dtype: str, m: int, k: int, n: int) -> None:
    """Two or three rows by a matrix of at least 2**18 elements are multiplied one row at a time (linalg's module
    docstring: OpenBLAS packs the whole matrix for every matrix product): each row's values are that row's own
    product, the stacked MatMul's of single rows, in MatMul, Gemm (weights transposed or not, bias, alpha) and the
    plan's fused linear step alike (per layout of the weights: BLAS sums in the order of its loop for the layout);
    four rows are one matrix product, numpy's."""
    rng = np.random.default_rng(m * 7 + k)
    a = rng.standard_normal((m, k)).astype(dtype)
    w = rng.standard_normal((k, n)).astype(dtype)
    bias = rng.standard_normal(n).astype(dtype)
    rows = np.stack([np.dot(a[i], w) for i in range(m)])
    want = rows if m <= 3 else np.dot(a, w)
    np.testing.assert_array_equal(dot_2d(a, w), want)
    np.testing.assert_array_equal(matmul(a, w), want)
    if m <= 3:
        np.testing.assert_array_equal(np.matmul(a[:, None, :], w)[:, 0], want)  # the stacked product of single rows
    # (weights stored transposed: each row's product over the other layout, BLAS's other matrix-vector loop)
    wt = np.ascontiguousarray(w.T)
    want_t = np.stack([np.dot(a[i], wt.T) for i in range(m)]) if m <= 3 else np.dot(a, wt.T)
    np.testing.assert_array_equal(gemm(a, wt, bias, transB=1), want_t + bias)
    np.testing.assert_array_equal(gemm(a, w, bias, alpha=0.5), want * np.dtype(dtype).type(0.5) + bias)
    step = LinearStep(w, bias, "x", ())
    np.testing.assert_array_equal(step(a), want + bias)
    np.testing.assert_array_equal(step(a[:, None, :]), (want + bias)[:, None, :])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("m", [2, 3])
@pytest.mark.parametrize(("k", "n"), [(128, 512), (512, 128), (64, 64)])
@pytest.mark.parametrize("one_by_one", [True, False])
def test_a_few_rows_by_a_middle_sized_matrix_go_as_measured(
    dtype: str, m: int, k: int, n: int, one_by_one: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between 2**12 and 2**18 elements the way is measured once per shape and layout (linalg's module docstring):
    whichever the measurement picks, every product of that shape is then the rows' own matrix-vector products or
    numpy's matrix product, bit for bit, in MatMul, Gemm and the fused linear step alike."""
    import onnxcore.kernels.linalg as linalg

    linalg.clear_row_choices()
    calls: list[tuple[int, ...]] = []

    def measured(a: np.ndarray, b: np.ndarray) -> bool:
        calls.append((a.shape[0], *b.shape))
        return one_by_one

    monkeypatch.setattr(linalg, "_measure_rows", measured)
    rng = np.random.default_rng(m * 11 + k)
    a = rng.standard_normal((m, k)).astype(dtype)
    w = rng.standard_normal((k, n)).astype(dtype)
    bias = rng.standard_normal(n).astype(dtype)
    want = np.stack([np.dot(a[i], w) for i in range(m)]) if one_by_one else np.dot(a, w)
    np.testing.assert_array_equal(dot_2d(a, w), want)
    np.testing.assert_array_equal(matmul(a, w), want)
    np.testing.assert_array_equal(gemm(a, w, bias), want + bias)
    np.testing.assert_array_equal(LinearStep(w, bias, "x", ())(a), want + bias)
    assert calls == [(m, k, n)]  # measured once for the shape, then remembered
    a4 = rng.standard_normal((4, k)).astype(dtype)
    np.testing.assert_array_equal(dot_2d(a4, w), np.dot(a4, w))  # four rows: never measured, one product
    assert len(calls) == 1
    linalg.clear_row_choices()


def test_the_measurement_keeps_the_product_unless_the_rows_are_clearly_faster() -> None:
    """The real measurement on this machine: it returns a choice, remembers it, and a tiny matrix is never measured
    (below 2**12 elements the product stays one call)."""
    import onnxcore.kernels.linalg as linalg

    linalg.clear_row_choices()
    rng = np.random.default_rng(3)
    a = rng.standard_normal((2, 128)).astype(np.float32)
    w = rng.standard_normal((128, 256)).astype(np.float32)
    first = linalg.rows_one_by_one(a, w)
    assert isinstance(first, bool) and linalg.rows_one_by_one(a, w) is first
    assert linalg.rows_one_by_one(a, rng.standard_normal((128, 8)).astype(np.float32)) is False
    assert linalg.rows_one_by_one(a, rng.standard_normal((128, 4096)).astype(np.float32)) is True
    linalg.clear_row_choices()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("lead", [(1, 1), (1, 24), (2, 3), (3, 5, 7), (4, 0)], ids=str)
@pytest.mark.parametrize(("k", "n"), [(128, 344), (64, 64), (768, 3072)])
def test_stacked_rows_by_one_matrix_are_the_linear_steps_product(dtype: str, lead: tuple, k: int, n: int) -> None:
    """MatMul of an N-D ``A`` by a 2-D ``B`` multiplies ``A``'s rows as one 2-D product, as the fused linear step
    does (so a MatMul fused with its Add or not gives the same values), within rounding of ``np.matmul``'s own."""
    rng = np.random.default_rng(k + n + len(lead))
    a = rng.standard_normal((*lead, k)).astype(dtype)
    w = rng.standard_normal((k, n)).astype(dtype)
    got = matmul(a, w)
    assert got.shape == (*lead, n) and got.dtype == a.dtype
    np.testing.assert_array_equal(got, LinearStep(w, None, "x", ())(a) if a.size else np.zeros((*lead, n), dtype))
    np.testing.assert_array_equal(got, dot_2d(a.reshape(-1, k), w).reshape(*lead, n))
    np.testing.assert_allclose(got, np.matmul(a, w), rtol=1e-5 if dtype == "float32" else 1e-12, atol=1e-4)
    # a view with strides of its own (a transposed stack) is multiplied by the same rule
    t = np.ascontiguousarray(np.swapaxes(a, 0, -2)) if a.ndim > 2 else a
    view = np.swapaxes(t, 0, -2) if a.ndim > 2 else a
    np.testing.assert_array_equal(matmul(view, w), got)


def test_stacked_matmul_is_checked_against_the_limits() -> None:
    tight = dataclasses.replace(DEFAULT_LIMITS, max_tensor_elements=59)
    with limits_in_effect(tight), pytest.raises(LimitError, match="MatMul"):
        matmul(_r((3, 5, 7), "float32"), _r((7, 4), "float32"))
    assert matmul(_r((3, 2, 7), "float32"), _r((7, 4), "float32")).shape == (3, 2, 4)
    with pytest.raises(ShapeError):
        matmul(_r((3, 5, 7), "float32"), _r((6, 4), "float32"))


def test_small_matmul_is_still_checked_against_the_limits() -> None:
    tight = dataclasses.replace(DEFAULT_LIMITS, max_tensor_elements=59)
    with limits_in_effect(tight), pytest.raises(LimitError, match="MatMul"):
        run_ours("MatMul", [_r((15, 7)), _r((7, 4))], 13)
    with pytest.raises(ShapeError):
        run_ours("MatMul", [_r((2, 3)), _r((4, 2))], 13)
