"""The kernels' shared helpers on small tensors: what their short paths skip must not change what they give or
refuse (Clause 15.4 limits, one rounding per formula)."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from onnxcore.errors import EvaluationError, LimitError
from onnxcore.kernels import _rowwise, reduction
from onnxcore.kernels._rowwise import within_shift_bound
from onnxcore.kernels._util import ACCUMULATE_ELEMENTS, check_elements, float_unary, left_fold
from onnxcore.kernels.elementwise import _sigmoid
from onnxcore.kernels.indexing import _element_grid
from onnxcore.kernels.ml import binarizer
from onnxcore.kernels.normalization import lp_normalization
from onnxcore.kernels.reduction import argmax, argmax_1, argmin, softmax, topk
from onnxcore.kernels.registry import lookup
from onnxcore.kernels.tensor import concat_4
from onnxcore.kernels.threads import BLOCK_ELEMENTS
from onnxcore.limits import DEFAULT_LIMITS, limits_in_effect


def test_check_elements_follows_the_limits_in_effect_after_a_call_under_others() -> None:
    check_elements((100,), "K", itemsize=16)  # under the defaults: remembered as far below every limit
    tight = dataclasses.replace(DEFAULT_LIMITS, max_tensor_bytes=1600, max_alloc_bytes=None)
    with limits_in_effect(tight):
        check_elements((100,), "K", itemsize=16)  # 1,600 octets: at the limit
        check_elements((10, 10), "K", itemsize=16)  # the same count, remembered now
        with pytest.raises(LimitError, match="max_tensor_bytes"):
            check_elements((101,), "K", itemsize=16)
        check_elements((200,), "K", itemsize=8)  # narrower elements: 1,600 octets again
    few = dataclasses.replace(DEFAULT_LIMITS, max_tensor_elements=59)
    with limits_in_effect(few), pytest.raises(LimitError, match="59 elements"):
        check_elements((3, 5, 4), "K", itemsize=4)
    check_elements((3, 5, 4), "K", itemsize=4)  # the defaults again


@pytest.mark.parametrize("shape", [(-1, 5), (-2, -3), (4, -1, 0)])
def test_check_elements_refuses_a_negative_extent_whatever_the_product(shape: tuple[int, ...]) -> None:
    check_elements((6,), "K")  # remembered: a small positive count passes without the full test
    with pytest.raises(EvaluationError, match="negative extent"):
        check_elements(shape, "K")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_formula_on_a_small_tensor_gives_the_values_of_the_blocked_path(dtype: str) -> None:
    # Below two blocks the formula runs whole; above, by blocks over the kernel threads: element by element alike.
    rng = np.random.default_rng(3)
    big = (rng.standard_normal(2 * BLOCK_ELEMENTS + 17) * 30).astype(dtype)
    big[:4] = [0.0, -0.0, np.inf, -np.inf]
    whole = _sigmoid(big)
    for a, b in ((0, 1), (0, 300), (5000, 9000), (len(big) - 100, len(big))):
        small = _sigmoid(big[a:b].copy())
        assert small.dtype == big.dtype
        np.testing.assert_array_equal(small, whole[a:b])
    np.testing.assert_array_equal(_sigmoid(big[3:4].reshape(())), whole[3])  # rank 0 stays rank 0
    assert _sigmoid(big[3:4].reshape(())).shape == ()


def test_float_unary_rounds_once_for_half_floats_and_converts_integers_back() -> None:
    x16 = np.array([0.1, -3.0, 7.5], np.float16)
    got = float_unary(x16, lambda v: v * np.float32(1.0 / 3.0) + np.float32(0.2))
    want = (x16.astype(np.float32) * np.float32(1.0 / 3.0) + np.float32(0.2)).astype(np.float16)
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, want)
    xi = np.array([1, 2, 3], np.int32)
    got_i = float_unary(xi, lambda v: v * 2.5)
    assert got_i.dtype == np.int32
    np.testing.assert_array_equal(got_i, [2, 5, 7])


@pytest.mark.parametrize("n", [3, 16, 64, 65, 1000])
def test_the_shift_bound_sees_a_nan_or_a_large_value_anywhere(n: int) -> None:
    x = np.linspace(-59.0, 59.0, n).astype(np.float32)
    assert within_shift_bound(x)
    for pos in (0, 1, n // 2, n - 1):
        for bad in (np.nan, np.inf, -np.inf, 60.5, -61.0):
            y = x.copy()
            y[pos] = bad
            assert not within_shift_bound(y), (pos, bad)


def _shifted_softmax(rows: np.ndarray) -> np.ndarray:
    """Softmax of each row shifted by its maximum, by the operations of kernels/_rowwise.py."""
    e = np.exp(rows - rows.max(axis=1, keepdims=True))
    s = (e @ np.ones(rows.shape[1], rows.dtype))[:, None]
    np.reciprocal(s, out=s)
    return e * s


def test_softmax_of_a_few_rows_shifts_them_when_another_row_holds_a_nan() -> None:
    # One block holds both rows: a NaN in the first row (not at its start) means no row may go unshifted.
    x = np.array([[0.5, 1.0, np.nan, 2.0], [3.0, -1.0, 0.25, 7.0]], np.float32)
    got = softmax(x)
    assert np.isnan(got[0]).all()
    np.testing.assert_array_equal(got[1], _shifted_softmax(x[1:])[0])
    # rows within the bound go unshifted (the same operations without the maxima)
    rng = np.random.default_rng(5)
    few = rng.uniform(-50, 50, (3, 40)).astype(np.float32)
    e = np.exp(few)
    s = (e @ np.ones(40, np.float32))[:, None]
    np.reciprocal(s, out=s)
    np.testing.assert_array_equal(softmax(few), e * s)


@pytest.mark.parametrize("shape", [(1, 16), (3, 20), (2, 3, 9), (5, 1)], ids=str)
@pytest.mark.parametrize("largest", [0, 1])
def test_topk_along_the_last_axis_equals_topk_along_another(shape: tuple[int, ...], largest: int) -> None:
    rng = np.random.default_rng(len(shape))
    x = rng.integers(0, 4, shape).astype(np.float32)  # many ties: ascending index among equals
    x.ravel()[1] = np.nan if x.size > 2 else x.ravel()[1]
    for k in range(shape[-1] + 1):
        values, idx = topk(x, np.array([k], np.int64), axis=-1, largest=largest)
        moved = np.ascontiguousarray(np.moveaxis(x, -1, 0))
        v0, i0 = topk(moved, np.array([k], np.int64), axis=0, largest=largest)
        np.testing.assert_array_equal(idx, np.moveaxis(i0, 0, -1))
        np.testing.assert_array_equal(values, np.moveaxis(v0, 0, -1))
        assert idx.dtype == np.int64 and values.dtype == x.dtype and idx.flags.c_contiguous


@pytest.mark.parametrize("shape", [(3,), (2, 5), (2, 3, 4), (1, 4, 1, 2)], ids=str)
def test_element_grids_are_numpys_open_grids(shape: tuple[int, ...]) -> None:
    # GatherElements' and ScatterElements' index grids by arange: np.ogrid's arrays, the axis's replaced.

    idx = np.random.default_rng(len(shape)).integers(0, 3, shape)
    for axis in range(len(shape)):
        want = list(np.ogrid[tuple(slice(0, d) for d in shape)])
        want[axis] = idx
        got = _element_grid(idx, axis)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype
            np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_reductions_of_one_attribute_axis_take_it_as_the_general_rule_does(dtype: Any) -> None:

    x = (np.random.default_rng(2).standard_normal((3, 4, 5)) * 3).astype(dtype)
    prod, total = lookup("", "ReduceProd", 13).fn, lookup("", "ReduceSum", 11).fn
    for axis in (-3, -1, 0, 2):
        for keep in (0, 1):
            got = prod(x, axes=[axis], keepdims=keep)
            want = np.multiply.reduce(x, axis=axis % 3, keepdims=bool(keep))
            assert got.dtype == x.dtype and got.shape == want.shape
            np.testing.assert_array_equal(got, want)
            assert total(x, axes=[axis], keepdims=keep).shape == want.shape
    for bad in ([3], [-4], [1, 1]):
        with pytest.raises(EvaluationError):
            prod(x, axes=bad)


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_lp_normalization_short_path_is_the_formula(p: int, dtype: Any) -> None:
    """LpNormalization without a zero norm skips np.where; with one (a zero row) it gives 0 there (the operator's
    rule): both as ``where(norm == 0, 0, x / norm)`` gives them, bit for bit."""

    rng = np.random.default_rng(5)
    # Many short rows (700 x 3, 300 x 10, magnitudes far apart, a zero row): the norms' sums pass over the columns
    # (kernels/_util.short_sum), numpy's reduction's bits.
    many = [rng.standard_normal((r, m)) * np.exp(rng.uniform(-10, 10, (r, m))) for r, m in ((700, 3), (300, 10))]
    many[0][5] = 0.0
    cases = (rng.standard_normal((1, 3)), rng.standard_normal((16, 7)), np.array([[0.0, 0.0], [3.0, -4.0]]), *many)
    for x in (*cases, np.array([[np.nan, 1.0], [-0.0, -0.0]]), np.array([[np.inf, 1.0]])):
        x = x.astype(dtype)
        for axis in (0, 1, -1):
            wd = np.float32 if dtype == np.float16 else dtype
            xw = x.astype(wd)
            norm = (
                np.abs(xw).sum(axis=axis, keepdims=True) if p == 1 else np.sqrt((xw * xw).sum(axis=axis, keepdims=True))
            )
            with np.errstate(all="ignore"):
                want = np.where(norm == 0, 0, xw / norm).astype(dtype)
            got = lp_normalization(x, axis=axis, p=p)
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
    assert lp_normalization(np.zeros((1, 2), np.float32), axis=1, p=2).tolist() == [[0.0, 0.0]]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_binarizer_keeps_nan_and_the_type(dtype: Any) -> None:

    x = np.array([[0.5, 1.0, 2.0], [-3.0, 2.5, 0.0]]).astype(dtype)
    got = binarizer(x, threshold=1.0)
    assert got.dtype == x.dtype and got.tolist() == [[0, 0, 1], [0, 1, 0]]
    if dtype != np.int64:
        x[0, 1] = np.nan
        got = binarizer(x, threshold=1.0)
        assert np.isnan(got[0, 1]) and got[0, 2] == 1 and got[1, 1] == 1 and got[0, 0] == 0


def _few_values(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> list[np.ndarray]:
    """Inputs of a small-tensor short path: plain values, large ones, NaN, +-inf, rows of -inf, ties, and -0."""
    out = []
    for scale in (1.0, 30.0, 100.0):
        out.append((rng.standard_normal(shape) * scale).astype(dtype))
    if int(np.prod(shape)):
        for special in (np.nan, np.inf, -np.inf, 70.0, -0.0):
            x = rng.standard_normal(shape).astype(dtype)
            x.flat[int(rng.integers(x.size))] = special
            out.append(x)
        out.append(np.full(shape, -np.inf, dtype))
        tie = np.zeros(shape, dtype)
        tie[..., 0] = 2.0
        tie[..., -1] = 2.0
        out.append(tie)
    return out


_FEW_SHAPES = [(1, 3), (1, 1), (3,), (16, 3), (2, 3, 4), (1, 10), (5, 1), (40, 41), (1, 1, 5)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", _FEW_SHAPES, ids=str)
def test_softmax_of_a_few_values_gives_the_bits_of_the_block_path(
    shape: tuple[int, ...], dtype: Any, monkeypatch: pytest.MonkeyPatch
) -> None:

    rng = np.random.default_rng(11)
    for x in _few_values(rng, shape, dtype):
        with np.errstate(all="ignore"):
            got = softmax(x)
            with monkeypatch.context() as m:
                m.setattr(_rowwise, "_SOFTMAX_FEW", 0)  # the blocked path, as before the short one
                want = softmax(x)
        assert got.shape == want.shape == x.shape and got.dtype == want.dtype == x.dtype
        assert got.tobytes() == want.tobytes(), x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", _FEW_SHAPES, ids=str)
def test_logsumexp_of_one_row_gives_the_bits_of_the_general_path(
    shape: tuple[int, ...], dtype: Any, monkeypatch: pytest.MonkeyPatch
) -> None:

    attr, inp = lookup("", "ReduceLogSumExp", 13).fn, lookup("", "ReduceLogSumExp", 18).fn
    rng = np.random.default_rng(12)
    xs = _few_values(rng, shape, dtype) + [np.array([[-0.0, 0.0, -0.0]], dtype), np.array([[0.0, -0.0]], dtype)]
    for x in xs:
        for axis in range(-x.ndim, x.ndim):
            for keep in (0, 1):
                with np.errstate(all="ignore"):
                    got = [attr(x, axes=[axis], keepdims=keep), inp(x, np.array([axis]), keepdims=keep)]
                    with monkeypatch.context() as m:
                        m.setattr(reduction, "_logsumexp_row", lambda *a: None)  # the general path
                        want = attr(x, axes=[axis], keepdims=keep)
                for g in got:
                    assert type(g) is np.ndarray and g.shape == want.shape and g.dtype == want.dtype == x.dtype
                    assert g.tobytes() == want.tobytes(), (x, axis, keep)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int32, np.uint8, np.bool_])
@pytest.mark.parametrize("shape", [(1, 3), (16, 3), (3,), (2, 3, 4), (1, 1)], ids=str)
def test_argmax_and_argmin_are_numpys_first_or_last_index(shape: tuple[int, ...], dtype: Any) -> None:

    rng = np.random.default_rng(13)
    xs = [rng.integers(0, 3, shape).astype(dtype)]  # ties
    if np.dtype(dtype).kind == "f":
        xs += _few_values(rng, shape, dtype)
    for x in xs:
        for axis in range(-x.ndim, x.ndim):
            for keep in (0, 1):
                for last in (0, 1):
                    for fn, ref in ((argmax, np.argmax), (argmin, np.argmin)):
                        got = fn(x, axis=axis, keepdims=keep, select_last_index=last)
                        if last:
                            n = x.shape[axis]
                            want = (n - 1) - ref(np.flip(x, axis=axis), axis=axis, keepdims=bool(keep))
                        else:
                            want = ref(x, axis=axis, keepdims=bool(keep))
                        assert type(got) is np.ndarray and got.dtype == np.int64
                        assert got.shape == np.shape(want)
                        np.testing.assert_array_equal(got, want)
                assert (
                    argmax_1(x, axis=axis, keepdims=keep).tolist() == np.argmax(x, axis, keepdims=bool(keep)).tolist()
                )
    for bad in (2, -3):
        with pytest.raises(EvaluationError):
            argmax(np.zeros((2, 3), np.float32), axis=bad)
    with pytest.raises(EvaluationError):
        argmax(np.zeros((2, 0), np.float32), axis=1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.bool_, object])
def test_concat_is_numpys_for_one_type_and_refuses_mixed_types_and_ranks(dtype: Any) -> None:

    rng = np.random.default_rng(14)
    a, b = rng.standard_normal((2, 3)).astype(dtype), rng.standard_normal((2, 1)).astype(dtype)
    for xs, axis in (((a, b), 1), ((a, b), -1), ((a, a, a), 0), ((a.T, a.T), 1), ((np.asfortranarray(a),) * 2, 0)):
        got, want = concat_4(*xs, axis=axis), np.concatenate(xs, axis=axis)
        assert got.dtype == want.dtype and got.shape == want.shape and got.strides == want.strides
        assert got.tobytes() == want.tobytes()
    other = np.float16 if dtype is not np.float16 else np.float32
    bad: list[tuple[tuple[Any, ...], int]] = [((a, b.astype(other)), 1), ((a, a[0]), 0), ((a, b), 0), ((a, b), 2)]
    if dtype is not object and a.dtype.itemsize > 1:  # the other byte order: another type
        bad.append(((a, a.astype(a.dtype.newbyteorder())), 0))
    for xs, axis in bad:
        with pytest.raises(EvaluationError):
            concat_4(*xs, axis=axis)


@pytest.mark.parametrize("n", [1, 3, 16, 50, 200])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_topk_of_one_row_is_that_row_of_a_batch(n: int, dtype: Any) -> None:
    """One row's values are taken by one take, and NaN is looked for only where a few of many are chosen: the
    indices and values of that row among others (the rows' index), NaN, ties and infinities included."""
    rng = np.random.default_rng(n)
    row = rng.integers(0, 5, n).astype(dtype)
    if np.dtype(dtype).kind == "f" and n > 2:
        row[1], row[-1], row[n // 2] = np.nan, np.inf, -np.inf
    batch = np.stack([rng.integers(0, 5, n).astype(dtype), row])
    for k in sorted(k for k in {0, 1, 2, n // 4, n // 4 + 1, n - 1, n} if k <= n):
        for largest in (0, 1):
            kk = np.array([k], np.int64)
            for x in (row.reshape(1, n), row):
                values, idx = topk(x, kk, largest=largest)
                bv, bi = topk(batch, kk, largest=largest)
                assert values.shape == idx.shape == x.shape[:-1] + (k,) and idx.dtype == np.int64
                assert values.dtype == x.dtype and values.flags.c_contiguous and idx.flags.c_contiguous
                assert idx.reshape(k).tolist() == bi[1].tolist()
                assert values.reshape(k).tobytes() == bv[1].tobytes()


@pytest.mark.parametrize("uf", [np.add, np.maximum, np.minimum])
def test_left_fold_is_the_loop_of_calls_in_order(uf: np.ufunc) -> None:
    # _util.left_fold accumulates operands of up to ACCUMULATE_ELEMENTS and loops over larger ones: either way the
    # bits of uf(uf(s[0], s[1]), s[2])... in the order given, NaN and signed zeros included, in the operands' type.
    rng = np.random.default_rng(5)
    for shape in ((1, 3), (ACCUMULATE_ELEMENTS,), (ACCUMULATE_ELEMENTS + 1,), (40, 3)):
        for dtype in (np.float32, np.float64, np.int8):
            s = (rng.standard_normal((20, *shape)) * 50).astype(dtype)
            if dtype != np.int8:
                s.flat[[3, 25, 50]] = [np.nan, -0.0, np.inf]
            order = list(rng.permutation(20))
            with np.errstate(all="ignore"):
                want = uf(s[order[0]], s[order[1]])
                for i in order[2:]:
                    want = uf(want, s[i])
                for got in (left_fold(uf, s[order]), left_fold(uf, s, order)):
                    assert got.dtype == want.dtype and got.shape == want.shape
                    assert got.tobytes() == want.tobytes(), (shape, dtype)
