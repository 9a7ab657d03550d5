"""The passes a kernel runs over its fresh result (kernels/_epilogue.py): a Relu, a Clip and a Conv's channel bias,
each the same bits as numpy's own call (a sum of NaNs: a NaN) on both paths (the ``accel_path`` fixture: pure
numpy, then the compiled loops) over the special values (NaN of either sign, signed zeros, infinities,
subnormals), odd sizes, sizes split over the kernel threads, in place and into a new array; a Conv's bias with its
Relu or Clip in one pass, the same values as the two passes; and a Conv followed by Relu or ReLU6 against
onnxruntime and against the plan without the fusion."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

import onnxcore
from onnxcore.kernels._epilogue import (
    _MIN_COMPILED,
    _MIN_LOADED,
    add_channel_bias,
    add_row_vector,
    bias_clip_into,
    bias_relu_into,
    clip_into,
    relu_into,
    row_vector_relu_into,
)
from onnxcore.kernels.threads import MIN_PARALLEL_ELEMENTS

SPECIAL = [np.nan, -np.nan, 0.0, -0.0, np.inf, -np.inf, 1e-40, -1e-40, 6.0, -6.0, 5.999, 6.001, 1.0, -1.0]
SIZES = [1, 13, _MIN_LOADED + 3, _MIN_COMPILED + 13, MIN_PARALLEL_ELEMENTS + 17]


def _values(n: int, dtype: Any, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).uniform(-8, 8, n).astype(dtype)
    k = min(n, len(SPECIAL))
    x[:k] = np.asarray(SPECIAL[:k], dtype)
    return x


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _same_values(a: np.ndarray, b: np.ndarray) -> bool:
    """The same bits but where both are NaN: which operand's NaN a sum carries is not IEEE 754's to say (numpy's
    loops and the compiled ones take different ones)."""
    nan = np.isnan(a)
    return bool(np.array_equal(nan, np.isnan(b))) and _same_bits(a[~nan], b[~nan])


@pytest.mark.usefixtures("accel_path")
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_is_numpys_maximum(n: int, dtype: Any) -> None:
    x = _values(n, dtype)
    want = np.maximum(x, 0)
    assert _same_bits(relu_into(x), want)
    y = x.copy()
    assert relu_into(y, y) is y and _same_bits(y, want)


@pytest.mark.usefixtures("accel_path")
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("lo", "hi"), [(0.0, 6.0), (-0.0, 6.0), (-1.0, 1.0), (2.0, -2.0), (-np.inf, np.inf)])
def test_clip_is_numpys_clip(n: int, dtype: Any, lo: float, hi: float) -> None:
    x = _values(n, dtype, seed=1)
    low, high = np.asarray(lo, dtype), np.asarray(hi, dtype)
    want = np.clip(x, low, high)
    assert _same_bits(clip_into(x, low, high), want)
    y = x.copy()
    assert clip_into(y, low, high, y) is y and _same_bits(y, want)


@pytest.mark.usefixtures("accel_path")
@pytest.mark.parametrize("shape", [(1, 3, 5, 7), (2, 16, 1, 1), (1, 72, 56, 56), (2, 5, 9)], ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_channel_bias_is_numpys_broadcast(shape: tuple[int, ...], dtype: Any) -> None:
    y = _values(int(np.prod(shape)), dtype, seed=2).reshape(shape)
    b = _values(shape[1], dtype, seed=3)
    want = y + b.reshape((1, -1) + (1,) * (len(shape) - 2))
    add_channel_bias(y, b)
    assert _same_values(y, want)


CHANNEL_SHAPES = [(1, 3, 5, 7), (2, 16, 1, 1), (1, 40, 8, 8), (1, 72, 56, 56), (2, 5, 9), (1, 24, 300, 3)]


@pytest.mark.usefixtures("accel_path")
@pytest.mark.parametrize("shape", CHANNEL_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bias_and_relu_in_one_pass_are_the_two_passes(shape: tuple[int, ...], dtype: Any) -> None:
    """``bias_relu_into`` is ``add_channel_bias`` then ``relu_into``: numpy's broadcast sum, then its maximum."""
    y = _values(int(np.prod(shape)), dtype, seed=4).reshape(shape)
    b = _values(shape[1], dtype, seed=5)
    want = np.maximum(y + b.reshape((1, -1) + (1,) * (len(shape) - 2)), 0)
    got = y.copy()
    assert bias_relu_into(got, b) is got
    assert _same_values(got, want)
    alone = y.copy()
    assert _same_bits(bias_relu_into(alone, None), np.maximum(y, 0))


@pytest.mark.usefixtures("accel_path")
@pytest.mark.parametrize("shape", CHANNEL_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("lo", "hi"), [(0.0, 6.0), (-0.0, 6.0), (2.0, -2.0)])
def test_bias_and_clip_in_one_pass_are_the_two_passes(shape: tuple[int, ...], dtype: Any, lo: float, hi: float) -> None:
    y = _values(int(np.prod(shape)), dtype, seed=6).reshape(shape)
    b = _values(shape[1], dtype, seed=7)
    low, high = np.asarray(lo, dtype), np.asarray(hi, dtype)
    want = np.clip(y + b.reshape((1, -1) + (1,) * (len(shape) - 2)), low, high)
    got = y.copy()
    assert bias_clip_into(got, b, low, high) is got
    assert _same_values(got, want)


# A linear layer's product (rows, n) or (..., rows, n) and its bias row: below the compiled size, at it, and split
# over the kernel threads.
ROW_SHAPES = [(3, 5), (1000, 3), (40, 64), (2, 24, 128), (MIN_PARALLEL_ELEMENTS // 64 + 7, 64)]


@pytest.mark.usefixtures("accel_path")
@pytest.mark.parametrize("shape", ROW_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("row", [True, False], ids=["bias (1, n)", "bias (n,)"])
def test_row_bias_and_its_relu_are_numpys_broadcast_and_maximum(shape: tuple[int, ...], dtype: Any, row: bool) -> None:
    """``add_row_vector`` is numpy's broadcast sum of a bias along the last axis, ``row_vector_relu_into`` that sum
    then numpy's maximum (one pass on the compiled path), over the special values in both operands."""
    y = _values(int(np.prod(shape)), dtype, seed=8).reshape(shape)
    b = _values(shape[-1], dtype, seed=9)
    b = b.reshape(1, -1) if row else b
    got = y.copy()
    add_row_vector(got, b)
    assert _same_values(got, y + b)
    got = y.copy()
    assert row_vector_relu_into(got, b) is got
    assert _same_values(got, np.maximum(y + b, 0))


@pytest.mark.usefixtures("accel_path")
def test_row_bias_takes_numpys_path_for_what_the_loops_do_not_take() -> None:
    """A non-contiguous product, a bias of another type: numpy's broadcast (the same values); a bias that does not
    broadcast: numpy's error, as before the compiled pass."""
    y = _values(64 * 40, np.float32).reshape(40, 64)[:, ::2]
    b = _values(32, np.float32, seed=1)
    want = np.maximum(y + b, 0)
    row_vector_relu_into(y, b)
    assert _same_values(y, want)
    z = _values(64 * 40, np.float64).reshape(40, 64)
    want64 = z + _values(64, np.float32, seed=2)
    add_row_vector(z, _values(64, np.float32, seed=2))
    assert _same_values(z, want64)
    with pytest.raises(ValueError):
        add_row_vector(_values(64 * 40, np.float32).reshape(40, 64), _values(63, np.float32))


@pytest.mark.usefixtures("accel_path")
def test_bias_passes_take_numpys_path_for_what_the_loops_do_not_take() -> None:
    """A non-contiguous output, a bias of another type, bounds of another type: numpy's two calls, same values."""
    y = _values(2 * 8 * 6 * 6, np.float32).reshape(2, 8, 6, 6)[:, :, :, ::2]
    b = _values(8, np.float32, seed=1)
    want = np.maximum(y + b.reshape(1, -1, 1, 1), 0)
    bias_relu_into(y, b)
    assert _same_values(y, want)
    z = _values(4 * 9, np.float32).reshape(1, 4, 9)
    lo, hi = np.asarray(0.0), np.asarray(6.0)  # float64 bounds of a float32 output
    want = np.clip(z + _values(4, np.float32).reshape(1, -1, 1), lo, hi)
    bias_clip_into(z, _values(4, np.float32), lo, hi)
    np.testing.assert_array_equal(z, want)


@pytest.mark.usefixtures("accel_path")
def test_non_contiguous_and_other_types_take_numpys_path() -> None:
    x = _values(40, np.float32).reshape(5, 8)[:, ::2]
    assert _same_bits(relu_into(x), np.maximum(x, 0))
    ints = np.arange(-5, 5, dtype=np.int64)
    assert _same_bits(relu_into(ints), np.maximum(ints, 0))
    halves = _values(9, np.float16)
    lo, hi = np.asarray(0, np.float16), np.asarray(6, np.float16)
    assert _same_bits(clip_into(halves, lo, hi), np.clip(halves, lo, hi))


def _conv_model(rng: np.random.Generator, activation: str | None, cin: int, cout: int, k: int, group: int) -> bytes:
    """A float32 Conv with a bias, then a Relu, a ReLU6 (Clip 0..6) or nothing (an Identity), serialized."""
    w = rng.standard_normal((cout, cin // group, k, k)).astype(np.float32)
    b = rng.standard_normal(cout).astype(np.float32)
    nodes = [h.make_node("Conv", ["x", "w", "b"], ["c"], group=group, pads=[k // 2] * 4)]
    inits = [nh.from_array(w, "w"), nh.from_array(b, "b")]
    if activation == "Relu":
        nodes.append(h.make_node("Relu", ["c"], ["y"]))
    elif activation == "ReLU6":
        nodes.append(h.make_node("Clip", ["c", "lo", "hi"], ["y"]))
        inits += [nh.from_array(np.float32(0), "lo"), nh.from_array(np.float32(6), "hi")]
    else:
        nodes.append(h.make_node("Identity", ["c"], ["y"]))
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", TP.FLOAT, ["N", cin, "H", "W"])],
                     [h.make_tensor_value_info("y", TP.FLOAT, ["N", cout, "H", "W"])], inits)  # fmt: skip
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    m.ir_version = 8
    return bytes(m.SerializeToString())


@pytest.mark.usefixtures("accel_path")
@pytest.mark.parametrize("activation", ["Relu", "ReLU6", None])
@pytest.mark.parametrize(("cin", "cout", "k", "group"), [(8, 24, 1, 1), (16, 16, 3, 16), (3, 8, 3, 1)])
def test_conv_and_its_activation_against_onnxruntime(
    activation: str | None, cin: int, cout: int, k: int, group: int
) -> None:
    # The plan fuses Relu (WithRelu) and ReLU6 (ConvActivation's Clip) into the Conv; the bias goes through
    # add_channel_bias on every path.
    ort = pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(5)
    octets = _conv_model(rng, activation, cin, cout, k, group)
    ours = onnxcore.Session(octets)
    theirs = ort.InferenceSession(octets, providers=["CPUExecutionProvider"])
    for shape in ((1, cin, 9, 11), (2, cin, 64, 64)):
        x = rng.standard_normal(shape).astype(np.float32)
        (got,) = ours.run(None, {"x": x})
        (want,) = theirs.run(None, {"x": x})
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("activation", ["Relu", "ReLU6"])
@pytest.mark.parametrize(("cin", "cout", "k", "group"), [(8, 24, 1, 1), (16, 16, 3, 16), (4, 8, 3, 2), (3, 8, 3, 1)])
def test_fused_bias_pass_gives_the_unfused_plans_bits(activation: str, cin: int, cout: int, k: int, group: int) -> None:
    """The plan runs a float32 Conv without its bias, then the bias and the Relu (WithRelu's ``conv_bias``) or the
    Clip (ConvActivation) in one pass: the same bits as the Conv adding its bias, then the activation's own step
    (both plans without the measured choice of paths, so that the Conv computes its sums on the same path)."""
    rng = np.random.default_rng(9)
    octets = _conv_model(rng, activation, cin, cout, k, group)
    fused = onnxcore.Session(octets, disabled_rewrites=["measure_conv_paths", "use_winograd"])
    plain = onnxcore.Session(octets, disabled_rewrites=["measure_conv_paths", "use_winograd", "fuse_conv_chains"])
    assert "fuse_conv_chains" in fused.fired_rewrites() and "fuse_conv_chains" not in plain.fired_rewrites()
    for shape in ((1, cin, 9, 11), (2, cin, 40, 40)):
        x = rng.standard_normal(shape).astype(np.float32) * 4
        (got,) = fused.run(None, {"x": x})
        (want,) = plain.run(None, {"x": x})
        assert _same_bits(got, want)
