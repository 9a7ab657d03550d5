"""The passes a kernel runs over its fresh result (kernels/_epilogue.py): a Relu, a Clip and a Conv's channel bias,
each the same bits as numpy's own call (a sum of NaNs: a NaN) on both paths (the ``accel_path`` fixture: pure
numpy, then the compiled loops) over the special values (NaN of either sign, signed zeros, infinities,
subnormals), odd sizes, sizes split over the kernel threads, in place and into a new array; and a Conv followed
by Relu or ReLU6 against onnxruntime."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

import onnxcore
from onnxcore.kernels._epilogue import _MIN_COMPILED, add_channel_bias, clip_into, relu_into
from onnxcore.kernels.threads import MIN_PARALLEL_ELEMENTS

SPECIAL = [np.nan, -np.nan, 0.0, -0.0, np.inf, -np.inf, 1e-40, -1e-40, 6.0, -6.0, 5.999, 6.001, 1.0, -1.0]
SIZES = [1, 13, 4099, _MIN_COMPILED + 13, MIN_PARALLEL_ELEMENTS + 17]


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


@pytest.mark.usefixtures("accel_path")
def test_non_contiguous_and_other_types_take_numpys_path() -> None:
    x = _values(40, np.float32).reshape(5, 8)[:, ::2]
    assert _same_bits(relu_into(x), np.maximum(x, 0))
    ints = np.arange(-5, 5, dtype=np.int64)
    assert _same_bits(relu_into(ints), np.maximum(ints, 0))
    halves = _values(9, np.float16)
    lo, hi = np.asarray(0, np.float16), np.asarray(6, np.float16)
    assert _same_bits(clip_into(halves, lo, hi), np.clip(halves, lo, hi))


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
    octets = m.SerializeToString()
    ours = onnxcore.Session(octets)
    theirs = ort.InferenceSession(octets, providers=["CPUExecutionProvider"])
    for shape in ((1, cin, 9, 11), (2, cin, 64, 64)):
        x = rng.standard_normal(shape).astype(np.float32)
        (got,) = ours.run(None, {"x": x})
        (want,) = theirs.run(None, {"x": x})
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
