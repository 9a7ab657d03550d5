"""A short constant row against many rows (``kernels._util.RowTiles``): repeated so numpy's loop runs over many rows
at once, the values the broadcast's bit for bit (the same ufunc on the same pairs of elements); taken by the
prepared binary nodes (``ConstantOperand``) and the affine chains (``AffineChain``), refused where the broadcast
would give another shape or the layout does not allow the view."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

import onnxcore
from onnxcore.kernels._util import TILED_ROW_MAX, RowTiles
from onnxcore.kernels.elementwise_binary import ConstantOperand
from onnxcore.kernels.fused import affine
from onnxcore.kernels.fused.affine import AffineChain

RNG = np.random.default_rng(7)
_UFUNCS = [np.add, np.subtract, np.multiply, np.true_divide]


def _values(shape: tuple[int, ...], dtype: type) -> np.ndarray:
    """Normal values with the special ones every ufunc must carry through: NaN, +-inf, -0.0, a subnormal."""
    v = RNG.standard_normal(shape).astype(dtype)
    flat = v.reshape(-1)
    specials = [np.nan, np.inf, -np.inf, -0.0, np.finfo(dtype).smallest_subnormal]
    k = min(len(specials), flat.size)
    flat[:k] = specials[:k]
    flat[flat.size - k :] = specials[:k]
    return v


# (the rows' shape, the row's shape): a divisor of the row count near the repetition's length, an odd one, three
# axes, a row of rank 1 and one of the rows' rank, the longest row repeated.
_SHAPES = [((1000, 10), (10,)), ((1000, 10), (1, 10)), ((999, 10), (10,)), ((512, 3), (1, 3)), ((4, 250, 8), (8,)),
           ((4, 250, 8), (1, 1, 8)), ((256, TILED_ROW_MAX), (TILED_ROW_MAX,)), ((128, 2), (2,))]  # fmt: skip


@pytest.mark.parametrize("uf", _UFUNCS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("x_shape", "row_shape"), _SHAPES)
def test_the_repeated_row_gives_the_broadcasts_bits(
    uf: np.ufunc, dtype: type, x_shape: tuple[int, ...], row_shape: tuple[int, ...]
) -> None:
    x, row = _values(x_shape, dtype), _values(row_shape, dtype)
    tiles = RowTiles(row)
    assert RowTiles.is_row(row)
    for row_first in (False, True):
        want = uf(row, x) if row_first else uf(x, row)
        for _ in range(2):  # the second call takes the tiling found for the shape
            got = tiles.apply(uf, x, row_first)
            assert got is not None and got.shape == want.shape and got.dtype == want.dtype
            assert np.array_equal(got, want, equal_nan=True)
            # the signs of the zeros too (array_equal counts -0.0 == 0.0)
            assert np.array_equal(np.signbit(got), np.signbit(want))
        out = np.full(x_shape, 7, dtype)
        assert tiles.apply(uf, x, row_first, out) is out
        assert np.array_equal(out, want, equal_nan=True)
    # in place: the output is the operand
    y = x.copy()
    assert tiles.apply(uf, y, False, y) is y
    assert np.array_equal(y, uf(x, row), equal_nan=True)


def test_what_the_repetition_does_not_take_is_left_to_the_broadcast() -> None:
    """None (and nothing written) for: too few rows, a row count without a divisor that pays (a prime), another
    element type, a strided operand or output, a row of higher rank than the operand (the broadcast would add an
    axis), a last axis of another length; ``is_row`` refuses a single value, a long row and a matrix."""
    row = _values((10,), np.float32)
    tiles = RowTiles(row)
    assert tiles.apply(np.add, _values((100, 10), np.float32), False) is None
    assert tiles.apply(np.add, _values((997, 10), np.float32), False) is None
    assert tiles.apply(np.add, _values((1000, 10), np.float64), False) is None
    assert tiles.apply(np.add, _values((1000, 20), np.float32)[:, ::2], False) is None
    assert tiles.apply(np.add, _values((1000, 5), np.float32), False) is None
    x = _values((1000, 10), np.float32)
    out = np.zeros((1000, 20), np.float32)[:, ::2]
    assert tiles.apply(np.add, x, False, out) is None and not out.any()
    assert RowTiles(_values((1, 1, 10), np.float32)).apply(np.add, x, False) is None
    assert not RowTiles.is_row(np.ones((1,), np.float32))
    assert not RowTiles.is_row(np.ones((TILED_ROW_MAX + 1,), np.float32))
    assert not RowTiles.is_row(np.ones((2, 10), np.float32))


def _binary_model(op: str, const: np.ndarray, x_rank: int, const_first: bool) -> bytes:
    t = TP.FLOAT if const.dtype == np.float32 else TP.DOUBLE
    g = h.make_graph(
        [h.make_node(op, ["c", "x"] if const_first else ["x", "c"], ["y"])],
        "g",
        [h.make_tensor_value_info("x", t, [None] * x_rank)],
        [h.make_tensor_value_info("y", t, [None] * max(x_rank, const.ndim))],
        [nh.from_array(const, "c")],
    )
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)]).SerializeToString()


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div"])
@pytest.mark.parametrize("const_first", [False, True])
@pytest.mark.parametrize(("x_shape", "c_shape"), [((1000, 10), (10,)), ((512, 3), (1, 3)), ((2, 500, 4), (4,)),
                                                  ((1000, 10), (1, 1, 10))])  # fmt: skip
def test_a_prepared_binary_node_repeats_its_row(
    op: str, const_first: bool, x_shape: tuple[int, ...], c_shape: tuple[int, ...]
) -> None:
    """Clause 8.2: a node with a constant row (a scaler's offsets as an Add/Sub/Mul/Div) against 1,000 rows gives
    the unprepared plan's values; a constant of higher rank than the operand broadcasts it to its rank as before."""
    const = _values(c_shape, np.float32)
    model = _binary_model(op, const, len(x_shape), const_first)
    prepared = onnxcore.Session(model)
    plain = onnxcore.Session(model, disabled_rewrites=["prepare_with_constants"])
    (step,) = [s[0] for s in prepared._plan.steps]
    assert isinstance(step, ConstantOperand)
    for _ in range(2):
        x = _values(x_shape, np.float32)
        (got,) = prepared.run(None, {"x": x})
        (want,) = plain.run(None, {"x": x})
        assert got.shape == want.shape and np.array_equal(got, want, equal_nan=True)
        assert np.array_equal(np.signbit(got), np.signbit(want))
    tiled = step._tiles is not None and step._tiles[1]._by_shape.get(x_shape) is not None
    assert tiled == (len(c_shape) <= len(x_shape))  # the repetition took the rows it can take


_CHAINS = {
    "mul+add": lambda d: [("mul", _values((d,), np.float32)), ("add", _values((d,), np.float32))],
    "add": lambda d: [("add", _values((d,), np.float32))],
    "scalar mul+row add": lambda d: [("mul", np.float32(1.5)), ("add", _values((d,), np.float32))],
    "row mul+scalar add": lambda d: [("mul", _values((d,), np.float32)), ("add", np.float32(-0.25))],
}


@pytest.mark.parametrize("chain", sorted(_CHAINS))
@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("shape", [(1000, 10), (999, 3), (16, 10), (3, 400, 5)])
def test_an_affine_chain_repeats_its_rows_constants(
    chain: str, relu: bool, shape: tuple[int, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A chain of per-feature Mul/Add constants (and a Relu) over many rows gives the chain's broadcast values bit
    for bit, called and applied in place (``into``); at 16 rows it is the broadcast itself."""
    ops = _CHAINS[chain](shape[-1])
    x = _values(shape, np.float32)
    tiled = AffineChain(None, ops, relu, [])
    got = [tiled(x), tiled(x)]
    assert (tiled._last[6] is not None) == (x.size >= affine._TILED_MIN)
    monkeypatch.setattr(affine, "_TILED_MIN", 1 << 62)
    plain = AffineChain(None, ops, relu, [])
    want = plain(x)
    assert plain._last[6] is None
    for g in got:
        assert g.shape == want.shape and np.array_equal(g, want, equal_nan=True)
        assert np.array_equal(np.signbit(g), np.signbit(want))
    y = x.copy()
    assert tiled.into(y)
    assert np.array_equal(y, want, equal_nan=True)
