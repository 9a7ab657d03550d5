"""Convolution paths: the temporaries in scratch buffers (``kernels/_scratch.py``), where a result never
aliases a buffer the next call reuses, and every path computes the naive reference's values.

Each case below reaches one path of ``kernels/conv.py`` (1x1 with a stride, the padded im2col, its banded
form, the flat layout by tap products or by columns, cropped or not, the depthwise paths) or
``kernels/_winograd.py``'s small-image product; the result of a first call is kept, a second call with another
input of the same shape runs, and the first result must still be the convolution of the first input. Then the
measured choice of a path (``kernels/_conv_choice.py``): every candidate against the reference, the choice made
once per shape, bounded, kept unless faster by a margin, and wired into plans; and Conv -> Clip as one step.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest

from kernels.test_conv import naive_conv
from onnxcore.errors import LimitError
from onnxcore.kernels import _conv_choice, accel
from onnxcore.kernels._epilogue import add_channel_bias
from onnxcore.kernels._im2col import channels_last_padded
from onnxcore.kernels._winograd import WinogradConv
from onnxcore.kernels.conv import _conv_paths, conv, conv_for_shape, conv_geometry, work_dtype
from onnxcore.limits import Limits, limits_in_effect

# (x shape, w shape, group, strides, pads): one per path of Conv's kernel.
PATHS = {
    "1x1 strided": ((1, 8, 9, 9), (6, 8, 1, 1), 1, [2, 2], [0, 0, 0, 0]),
    "im2col padded, stride 2": ((2, 5, 12, 11), (7, 5, 3, 3), 1, [2, 2], [1, 1, 1, 1]),
    "im2col banded": ((1, 32, 96, 96), (8, 32, 3, 3), 1, [2, 1], [1, 1, 1, 1]),
    "flat taps, cropped": ((1, 32, 20, 20), (8, 32, 3, 3), 1, [1, 1], [1, 1, 1, 1]),
    "flat columns, cropped": ((2, 6, 20, 20), (5, 6, 3, 3), 1, [1, 1], [1, 1, 1, 1]),
    "flat columns, whole rows": ((1, 12, 40, 40), (9, 12, 3, 1), 1, [1, 1], [1, 0, 1, 0]),
    "grouped": ((1, 12, 14, 14), (12, 3, 3, 3), 4, [1, 1], [1, 1, 1, 1]),
    "depthwise small image": ((1, 96, 7, 7), (96, 1, 3, 3), 96, [1, 1], [1, 1, 1, 1]),
    "depthwise strided": ((1, 64, 15, 15), (64, 1, 5, 5), 64, [2, 2], [2, 2, 2, 2]),
    "depthwise 1x1 output": ((1, 130, 3, 3), (130, 1, 3, 3), 130, [1, 1], [0, 0, 0, 0]),
    "depthwise one channel": ((2, 1, 9, 9), (1, 1, 3, 3), 1, [1, 1], [1, 1, 1, 1]),
}


def _naive(x: np.ndarray, w: np.ndarray, b: np.ndarray, group: int, strides: list[int], pads: list[int]) -> np.ndarray:
    nd = x.ndim - 2
    return naive_conv(x, w, None, strides, [1] * nd, pads[:nd], pads[nd:], group) + b.reshape(1, -1, 1, 1)


@pytest.mark.usefixtures("accel_path")
@pytest.mark.parametrize("path", sorted(PATHS))
def test_result_survives_the_next_call(path: str) -> None:
    """A result is the reference convolution of its own input after another call of the same shape ran."""
    x_shape, w_shape, group, strides, pads = PATHS[path]
    rng = np.random.default_rng(7)
    w = rng.standard_normal(w_shape).astype(np.float32)
    b = rng.standard_normal(w_shape[0]).astype(np.float32)
    x1 = rng.standard_normal(x_shape).astype(np.float32)
    x2 = rng.standard_normal(x_shape).astype(np.float32)
    y1 = conv(x1, w, b, group=group, strides=strides, pads=pads)
    kept = y1.copy()
    y2 = conv(x2, w, b, group=group, strides=strides, pads=pads)
    np.testing.assert_array_equal(y1, kept)
    assert not np.shares_memory(y1, y2)
    np.testing.assert_allclose(y1, _naive(x1, w, b, group, strides, pads), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(y2, _naive(x2, w, b, group, strides, pads), rtol=1e-4, atol=1e-4)


def test_small_image_winograd_result_survives_the_next_call() -> None:
    """The small-image product of WinogradConv (a 7x7 image, too few blocks for the transforms)."""
    rng = np.random.default_rng(8)
    w = rng.standard_normal((32, 64, 3, 3)).astype(np.float32)
    b = rng.standard_normal(32).astype(np.float32)
    x1, x2 = (rng.standard_normal((1, 64, 7, 7)).astype(np.float32) for _ in range(2))
    step = WinogradConv(conv)
    y1 = step(x1, w, b, pads=[1, 1, 1, 1])
    kept = y1.copy()
    step(x2, w, b, pads=[1, 1, 1, 1])
    np.testing.assert_array_equal(y1, kept)
    np.testing.assert_allclose(y1, _naive(x1, w, b, 1, [1, 1], [1, 1, 1, 1]), rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------------------------------------------------------
# The measured choice of a path (kernels/_conv_choice.py)
# ---------------------------------------------------------------------------------------------------------------

# (x shape, w shape, group, attributes): layers of one group, grouped, depthwise, with strides, dilations, uneven
# pads.
LAYERS = {
    "3x3 stride 2, uneven pads": ((1, 3, 17, 16), (8, 3, 3, 3), 1, {"strides": [2, 2], "pads": [1, 0, 0, 1]}),
    "1x1": ((2, 16, 7, 7), (24, 16, 1, 1), 1, {}),
    "1x1 stride 2": ((1, 16, 9, 9), (8, 16, 1, 1), 1, {"strides": [2, 2]}),
    "5x3 dilated": ((1, 6, 14, 12), (5, 6, 5, 3), 1, {"dilations": [2, 1], "pads": [2, 1, 2, 1]}),
    "grouped 3x3": ((1, 64, 5, 5), (64, 16, 3, 3), 4, {"pads": [1, 1, 1, 1]}),
    "grouped stride 2, channel multiplier": (
        (2, 6, 11, 10),
        (12, 2, 3, 3),
        3,
        {"strides": [2, 2], "pads": [1, 1, 0, 0]},
    ),
    "channel multiplier 2": ((1, 8, 9, 9), (16, 1, 3, 3), 8, {"pads": [1, 1, 1, 1]}),
    "depthwise 3x3": ((2, 40, 14, 14), (40, 1, 3, 3), 40, {"pads": [1, 1, 1, 1]}),
    "depthwise 5x5 stride 2": ((1, 72, 15, 15), (72, 1, 5, 5), 72, {"strides": [2, 2], "pads": [2, 2, 2, 2]}),
    "depthwise dilated, no pads": ((1, 16, 12, 12), (16, 1, 3, 3), 16, {"dilations": [2, 2]}),
    "RGB stem 3x3 stride 2": ((2, 3, 33, 30), (16, 3, 3, 3), 1, {"strides": [2, 2], "pads": [1, 1, 1, 1]}),
    "RGB stem 7x7 stride 2": ((1, 3, 40, 37), (8, 3, 7, 7), 1, {"strides": [2, 2], "pads": [3, 3, 3, 3]}),
    "16 per group, stride 2": ((1, 64, 19, 20), (64, 16, 3, 3), 4, {"strides": [2, 2], "pads": [1, 1, 1, 1]}),
    "grouped, dilated, stride 3 by 1": (
        (1, 8, 17, 15),
        (12, 4, 3, 2),
        2,
        {"strides": [3, 1], "dilations": [2, 3], "pads": [2, 1, 0, 3]},
    ),
}


def _layer(name: str, seed: int = 11) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
    x_shape, w_shape, group, attrs = LAYERS[name]
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = rng.standard_normal(w_shape).astype(np.float32)
    b = rng.standard_normal(w_shape[0]).astype(np.float32)
    return x, w, b, {"group": group, **attrs}


def _reference(x: np.ndarray, w: np.ndarray, b: np.ndarray, kw: dict[str, Any]) -> np.ndarray:
    nd = x.ndim - 2
    pads = kw.get("pads", [0] * 2 * nd)
    ref = naive_conv(x, w, None, kw.get("strides", [1] * nd), kw.get("dilations", [1] * nd), pads[:nd], pads[nd:],
                     kw["group"])  # fmt: skip
    return ref + b.reshape(1, -1, 1, 1)


@pytest.mark.usefixtures("accel_path")
@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_every_candidate_is_the_convolution(layer: str) -> None:
    """Each path the choice may take computes the reference convolution (float32 rounding apart), bias or not."""
    x, w, b, kw = _layer(layer)
    wt = _conv_choice.channels_last_weights(w, kw["group"])
    found = _conv_choice.candidates(conv, x, w, lambda: wt, kw)
    depthwise = w.shape[1] == 1 and w.shape[0] == kw["group"] == x.shape[1]
    expected = {"kernel", "numpy"} if depthwise else {"kernel", "channels_last"}
    if depthwise and accel.enabled():
        expected |= {"planar", "channels_last"}
    few_taps = 1 < w.shape[2] * w.shape[3] and w.shape[1] * w.shape[2] * w.shape[3] <= _conv_choice.MAX_PLANAR_TAPS
    if not depthwise and accel.enabled() and few_taps:
        expected.add("planar")
    assert set(found) == expected
    ref = _reference(x, w, b, kw)
    for name, fn in found.items():
        np.testing.assert_allclose(fn(x, w, b), ref, rtol=1e-4, atol=1e-4, err_msg=name)
        np.testing.assert_allclose(fn(x, w, None), ref - b.reshape(1, -1, 1, 1), rtol=1e-4, atol=1e-4, err_msg=name)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layer", sorted(n for n, (_x, w, g, _a) in LAYERS.items() if not (w[1] == 1 and w[0] == g)))
def test_channels_last_copies_compiled_give_numpys_bits(layer: str, dtype: Any) -> None:
    """With the accelerator, the channels-last candidate's padded image, columns and channels-first result are
    compiled copies (``accel.jit_im2col()``): the same columns and product as numpy's copies, so the same bits,
    bias or not, for every non-depthwise layer of the table and an input of two images."""
    if not accel.available():
        pytest.skip("the accelerator is not available (numba not installed, or ONNXCORE_ACCEL=0)")
    x, w, b, kw = _layer(layer)
    x, w, b = np.concatenate([x, -x]).astype(dtype), w.astype(dtype), b.astype(dtype)
    st, dil, pb, pe, out = conv_geometry(x.shape, w.shape, **kw)
    wt = _conv_choice.channels_last_weights(w, kw["group"])
    kernel = w.shape[2:]
    for bias in (b, None):
        with accel.use(False):
            expected = _conv_choice.channels_last_conv(x, wt, bias, kernel, pb, pe, st, dil, out)
        with accel.use(True):
            got = _conv_choice.channels_last_conv(x, wt, bias, kernel, pb, pe, st, dil, out)
        np.testing.assert_array_equal(got, expected)
        ref = _reference(x, w, b, kw) - (0 if bias is not None else b.reshape(1, -1, 1, 1))
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape", [(1, 64, 32, 32), (2, 3, 9, 7), (1, 400, 5, 5), (1, 1, 4, 4)])
@pytest.mark.parametrize("pads", [(0, 0, 0, 0), (1, 1, 1, 1), (2, 0, 1, 3)])
def test_channels_last_padded_copy(shape: tuple[int, ...], pads: tuple[int, ...]) -> None:
    """The padded channels-last copy the channels-last convolutions read (``_im2col.channels_last_padded``): the
    image transposed at its place, zeros around it even where the buffer held other values, compiled (planes of a
    power of two bytes among the shapes) or not."""
    x = np.random.default_rng(5).standard_normal(shape).astype(np.float32)
    n, c, h, w = shape
    t, left, b, r = pads
    expected = np.zeros((n, h + t + b, w + left + r, c), np.float32)
    expected[:, t : t + h, left : left + w] = x.transpose(0, 2, 3, 1)
    for on in (False, True):
        if on and not accel.available():
            continue
        xp = np.full(expected.shape, np.nan, np.float32)  # (a scratch buffer holds an earlier call's values)
        with accel.use(on):
            channels_last_padded(x, xp, t, left)
        np.testing.assert_array_equal(xp, expected)


def test_choice_measured_once_per_shape(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first run of a shape measures; later runs, and other instances (another session's node of the same
    layer), take the stored choice; another input shape measures again."""
    _conv_choice.clear_choices()
    measured: list[tuple[int, ...]] = []
    real = _conv_choice._measure

    def spy(found: Any, x: np.ndarray, w: np.ndarray, b: Any) -> Any:
        measured.append(x.shape)
        name, y = real(found, x, w, b)
        assert name in found
        return name, y

    monkeypatch.setattr(_conv_choice, "_measure", spy)
    x, w, b, kw = _layer("3x3 stride 2, uneven pads")
    ref = _reference(x, w, b, kw)
    first, second = _conv_choice.MeasuredConv(conv), _conv_choice.MeasuredConv(conv)
    for step in (first, first, second):
        np.testing.assert_allclose(step(x, w, b, **kw), ref, rtol=1e-4, atol=1e-4)
    assert measured == [x.shape]
    x2 = np.concatenate([x, x])
    np.testing.assert_allclose(first(x2, w, b, **kw), np.concatenate([ref, ref]), rtol=1e-4, atol=1e-4)
    assert measured == [x.shape, x2.shape]
    # Same shape and choice: the same bits from either instance.
    np.testing.assert_array_equal(first(x, w, b, **kw), second(x, w, b, **kw))


def test_a_slow_first_call_alone_does_not_skip_the_measurement(monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel's first call may hold one-time costs (numba loading a compiled loop took 0.2 s, and the layer was
    then never measured: its path kept for the process); a second call decides whether the layer is slow."""
    monkeypatch.setattr(_conv_choice, "MAX_MEASURED_SECONDS", 0.02)
    x, w, b, _ = _layer("1x1")
    result = np.ones(3, np.float32)
    first = [True]

    def kernel(a: np.ndarray, v: np.ndarray, bb: Any) -> np.ndarray:
        if first[0]:
            first[0] = False
            time.sleep(0.05)  # a one-time cost
        time.sleep(0.004)
        return result

    quick = np.zeros(3, np.float32)
    name, y = _conv_choice._measure({"kernel": kernel, "quick": lambda a, v, bb: quick}, x, w, b)
    assert (name, y) == ("quick", quick)
    # A layer slow on every call is still left unmeasured, after its second call.
    calls: list[str] = []

    def slow(a: np.ndarray, v: np.ndarray, bb: Any) -> np.ndarray:
        calls.append("kernel")
        time.sleep(0.03)
        return result

    name, y = _conv_choice._measure({"kernel": slow, "quick": lambda a, v, bb: calls.append("quick") or quick}, x, w, b)
    assert (name, y, calls) == ("kernel", result, ["kernel", "kernel"])


def test_slow_layer_is_not_measured(monkeypatch: pytest.MonkeyPatch) -> None:
    """A layer whose first two runs exceed the bound runs the kernel's own path, measured no further."""
    _conv_choice.clear_choices()
    monkeypatch.setattr(_conv_choice, "MAX_MEASURED_SECONDS", 0.0)
    calls: list[str] = []
    x, w, b, kw = _layer("depthwise 3x3")

    def counting(*args: Any, **kwargs: Any) -> np.ndarray:
        calls.append("kernel")
        return conv(*args, **kwargs)

    step = _conv_choice.MeasuredConv(counting)
    np.testing.assert_allclose(step(x, w, b, **kw), _reference(x, w, b, kw), rtol=1e-4, atol=1e-4)
    assert calls == ["kernel", "kernel"]
    step(x, w, b, **kw)
    assert calls == ["kernel", "kernel", "kernel"]
    assert set(_conv_choice._CHOICES.values()) == {"kernel"}


def test_plan_measures_convolutions() -> None:
    """A session's Conv steps run through MeasuredConv (in a Relu's step too) and agree with onnxruntime; the
    rewrite can be left out by name."""
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper, numpy_helper

    import onnxcore

    rng = np.random.default_rng(5)
    w1 = rng.standard_normal((16, 3, 3, 3)).astype(np.float32)
    w2 = rng.standard_normal((16, 1, 3, 3)).astype(np.float32)
    b2 = rng.standard_normal(16).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["a"], ["r"]),
        helper.make_node("Conv", ["r", "w2", "b2"], ["y"], pads=[1, 1, 1, 1], group=16),
    ]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 32, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 16, 16])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2"), numpy_helper.from_array(b2, "b2")],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8).SerializeToString()
    x = rng.standard_normal((1, 3, 32, 32)).astype(np.float32)
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    sess = onnxcore.Session(model)
    np.testing.assert_allclose(sess.run(None, {"x": x})[0], want, rtol=1e-4, atol=1e-4)
    steps = sess.profile({"x": x}, repeat=1)
    assert [s.kernel for s in steps] == ["onnxcore.fused::WithRelu", "onnxcore.fused::MeasuredConv"]
    plain = onnxcore.Session(model, disabled_rewrites=("measure_conv_paths",))
    assert "onnxcore.fused::MeasuredConv" not in {s.kernel for s in plain.profile({"x": x}, repeat=1)}
    np.testing.assert_allclose(plain.run(None, {"x": x})[0], want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(("lo", "hi"), [(0.0, 6.0), (1.0, -1.0)])
def test_conv_then_clip_runs_in_place(lo: float, hi: float) -> None:
    """Conv -> Clip with constant bounds (ReLU6) is one ConvActivation step, the Clip in place: the same bits as
    the graph as written (the Conv's own path, bias or not; NaN stays NaN; max wins when min > max), and
    onnxruntime's values."""
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper, numpy_helper

    import onnxcore

    rng = np.random.default_rng(6)
    w = rng.standard_normal((8, 4, 3, 3)).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32)
    inits = [numpy_helper.from_array(v, n) for v, n in ((w, "w"), (b, "b"))]
    inits += [numpy_helper.from_array(np.array(v, np.float32), n) for v, n in ((lo, "lo"), (hi, "hi"))]
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Clip", ["c", "lo", "hi"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 12, 12])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 12, 12])], inits,
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8).SerializeToString()
    x = (rng.standard_normal((1, 4, 12, 12)) * 3).astype(np.float32)
    x[0, 0, 5, 5] = np.nan
    sess = onnxcore.Session(model, disabled_rewrites=("measure_conv_paths",))
    (step,) = sess.profile({"x": x}, repeat=1)
    assert step.kernel == "onnxcore.fused::ConvActivation" and [f[1] for f in step.fused] == ["Clip"]
    got = sess.run(None, {"x": x})[0]
    np.testing.assert_array_equal(got, sess.run(None, {"x": x}, intermediates=True)[0][0])
    assert np.isnan(got).any() and (lo > hi or float(np.nanmax(got)) <= hi)
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(onnxcore.Session(model).run(None, {"x": x})[0], want, rtol=1e-4, atol=1e-4)


def test_other_paths_need_the_margin(monkeypatch: pytest.MonkeyPatch) -> None:
    """Another path replaces the kernel's own only when faster by the margin (a margin of 0 keeps the kernel's)."""
    _conv_choice.clear_choices()
    monkeypatch.setattr(_conv_choice, "MARGIN", 0.0)
    x, w, b, kw = _layer("grouped 3x3")
    step = _conv_choice.MeasuredConv(conv)
    np.testing.assert_allclose(step(x, w, b, **kw), _reference(x, w, b, kw), rtol=1e-4, atol=1e-4)
    assert list(_conv_choice._CHOICES.values()) == ["kernel"]
    _conv_choice.clear_choices()


@pytest.mark.usefixtures("accel_path")
@pytest.mark.parametrize("layer", sorted(LAYERS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_conv_bound_to_a_shape_is_the_kernels_paths(layer: str, dtype: Any) -> None:
    """``conv_for_shape`` binds the geometry once and takes the 1x1 and the compiled depthwise layers straight to
    their path: the same bits as the kernel's path chooser (``_conv_paths``, its bias, its cast), call after call."""
    x, w, b, kw = _layer(layer)
    x, w, b = x.astype(dtype), w.astype(dtype), b.astype(dtype)
    st, dil, pb, pe, out = conv_geometry(x.shape, w.shape, **kw)
    wd = work_dtype(x.dtype)
    bound = conv_for_shape(x.shape, x.dtype, w.shape, **kw)
    for k in range(2):
        xk = x * (k + 1)
        y, biased = _conv_paths(xk.astype(wd), w.astype(wd), kw["group"], pb, pe, st, dil, out, b.astype(wd))
        if not biased:
            add_channel_bias(y, b.astype(wd))
        want = y.astype(x.dtype)
        got = bound(xk, w, b)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(bound(xk, w, None), conv(xk, w, None, **kw))


def test_conv_bound_to_a_shape_checks_the_limits_when_bound() -> None:
    """The geometry is checked against the limits in effect when the shape is bound (a plan binds it on the first
    run of the shape, under its session's limits)."""
    x, w, _, kw = _layer("1x1")
    with limits_in_effect(Limits(max_tensor_elements=100)), pytest.raises(LimitError, match="Conv"):
        conv_for_shape(x.shape, x.dtype, w.shape, **kw)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    ("c", "m", "hw", "n_img", "group"),
    [
        (576, 144, 1, 1, 1),
        (144, 576, 1, 1, 1),
        (16, 72, 32, 1, 1),
        (96, 576, 4, 1, 1),
        (24, 96, 7, 2, 1),
        (8, 12, 5, 1, 4),
    ],
)
def test_pointwise_layers_are_the_stacked_products(c: int, m: int, hw: int, n_img: int, group: int, dtype: Any) -> None:
    """A 1x1 Conv of one image in one group is the 2-D product of the weights by the input's channels (the same BLAS
    call as the stacked product of the other cases, so the same values), plus the bias; the stacked ones as before.
    """
    rng = np.random.default_rng(c + m + hw)
    x = rng.standard_normal((n_img, c, hw, hw)).astype(dtype)
    w = rng.standard_normal((m, c // group, 1, 1)).astype(dtype)
    b = rng.standard_normal(m).astype(dtype)
    stacked = np.matmul(w.reshape(group, m // group, c // group), x.reshape(n_img, group, c // group, hw * hw))
    want = stacked.reshape(n_img, m, hw, hw)
    got = conv(x, w, None, group=group)
    assert got.dtype == x.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    add_channel_bias(want, b)
    np.testing.assert_array_equal(conv(x, w, b, group=group), want)
    ref = naive_conv(x, w, b, [1, 1], [1, 1], [0, 0], [0, 0], group)
    np.testing.assert_allclose(want, ref, rtol=1e-4 if dtype == np.float32 else 1e-10, atol=1e-4)


@pytest.mark.skipif(not accel.available(), reason="the accelerator (numba) is not installed or ONNXCORE_ACCEL=0")
def test_channels_last_depthwise_keeps_its_weights_only_for_the_same_constant() -> None:
    """The channels-last depthwise loop keeps the weights it rearranged for a read-only weights array (a plan's
    constant) and makes them again for another array, or for a writeable one whose values may have changed."""
    from onnxcore.kernels.conv import depthwise_for_shape

    rng = np.random.default_rng(4)
    x = rng.standard_normal((1, 48, 6, 6)).astype(np.float32)
    out = conv_geometry(x.shape, (48, 1, 3, 3), pads=[1, 1, 1, 1], group=48)[4]
    run = depthwise_for_shape(x.shape, np.float32, [1, 1], [1, 1], [1, 1], out, True)

    def ref(w: np.ndarray) -> np.ndarray:
        return naive_conv(x, w, None, [1, 1], [1, 1], [1, 1], [1, 1], 48)

    w1, w2 = (rng.standard_normal((48, 1, 3, 3)).astype(np.float32) for _ in range(2))
    w1.flags.writeable = w2.flags.writeable = False
    for w in (w1, w1, w2, w1):
        np.testing.assert_allclose(run(x, w, None), ref(w), rtol=1e-5, atol=1e-5)
    w3 = rng.standard_normal((48, 1, 3, 3)).astype(np.float32)
    np.testing.assert_allclose(run(x, w3, None), ref(w3), rtol=1e-5, atol=1e-5)
    w3 *= -2.0  # the same writeable array, other values
    np.testing.assert_allclose(run(x, w3, None), ref(w3), rtol=1e-5, atol=1e-5)


# (x shape, w shape, group, strides, dilations, pads): the compiled im2col (``kernels/_im2col.py``) of each kind.
COMPILED_IM2COL = {
    "stride 2, pad 1": ((1, 6, 13, 12), (5, 6, 3, 3), 1, [2, 2], [1, 1], [1, 1, 1, 1]),
    "stem 7x7 stride 2, pad 3": ((2, 3, 21, 19), (8, 3, 7, 7), 1, [2, 2], [1, 1], [3, 3, 3, 3]),
    "stride 3, uneven pads, dilation 2": ((1, 4, 17, 15), (6, 4, 3, 2), 1, [3, 2], [2, 2], [2, 0, 1, 3]),
    "grouped stride 2": ((2, 8, 11, 11), (6, 4, 3, 3), 2, [2, 2], [1, 1], [1, 1, 1, 1]),
    "stride 1 on a tiny map": ((1, 16, 4, 4), (8, 16, 3, 3), 1, [1, 1], [1, 1], [1, 1, 1, 1]),
    "padding wider than the image": ((1, 2, 2, 3), (3, 2, 3, 3), 1, [2, 1], [1, 1], [4, 3, 2, 5]),
    "1x1 stride 2": ((2, 8, 9, 8), (6, 8, 1, 1), 1, [2, 2], [1, 1], [0, 0, 0, 0]),
    "1x1 stride 3, even width": ((1, 8, 7, 10), (6, 8, 1, 1), 1, [3, 3], [1, 1], [0, 0, 0, 0]),
    "1x1 stride 2, padded": ((1, 8, 7, 7), (6, 8, 1, 1), 1, [2, 2], [1, 1], [1, 1, 1, 1]),
}


@pytest.mark.skipif(not accel.available(), reason="the accelerator (numba) is not installed or ONNXCORE_ACCEL=0")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layer", sorted(COMPILED_IM2COL))
def test_compiled_im2col_is_the_convolution(layer: str, dtype: Any) -> None:
    """The Conv kernel's compiled columns give the reference convolution, on a non-contiguous input too, and the
    columns themselves are numpy's window view's, band by band."""
    from onnxcore.kernels._im2col import compiled_columns
    from onnxcore.kernels.conv import conv_pads, pad_spatial, window_view

    x_shape, w_shape, group, strides, dil, pads = COMPILED_IM2COL[layer]
    rng = np.random.default_rng(11)
    x = rng.standard_normal(x_shape).astype(dtype)
    w = rng.standard_normal(w_shape).astype(dtype)
    b = rng.standard_normal(w_shape[0]).astype(dtype)
    wide = np.zeros((*x_shape[:3], 2 * x_shape[3]), dtype)
    wide[..., ::2] = x
    tol = 1e-4 if dtype == np.float32 else 1e-11
    with accel.use(True):
        for xin in (x, wide[..., ::2]):
            y = conv(xin, w, b, group=group, strides=strides, dilations=dil, pads=pads)
            ref = naive_conv(x, w, None, strides, dil, pads[:2], pads[2:], group) + b.reshape(1, -1, 1, 1)
            np.testing.assert_allclose(y, ref, rtol=tol, atol=tol)
        pb, pe, out = conv_pads(x_shape[2:], w_shape[2:], strides, dil, pads, "NOTSET")
        view = window_view(pad_spatial(x, pb, pe), w_shape[2:], strides, dil, out)
        np.testing.assert_array_equal(compiled_columns(x, w_shape[2:], pb, strides, dil, out), view)
        for r0 in range(out[0]):
            band = compiled_columns(x, w_shape[2:], pb, strides, dil, out, r0, min(out[0], r0 + 2))
            np.testing.assert_array_equal(band, view[..., r0 : r0 + 2, :])


@pytest.mark.skipif(not accel.available(), reason="the accelerator (numba) is not installed or ONNXCORE_ACCEL=0")
def test_compiled_im2col_bands_large_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    """Above twice ``BAND_BYTES`` the columns are built and multiplied a band of output rows at a time (both sides
    of the rule), the same values as one product."""
    from onnxcore.kernels import _im2col

    rng = np.random.default_rng(12)
    x = rng.standard_normal((2, 6, 23, 21)).astype(np.float32)
    w = rng.standard_normal((10, 6, 3, 3)).astype(np.float32)
    calls: list[int] = []
    real = _im2col.compiled_columns

    def spy(*args: Any, **kw: Any) -> np.ndarray:
        calls.append(1)
        return real(*args, **kw)

    monkeypatch.setattr(_im2col, "compiled_columns", spy)
    with accel.use(True):
        whole = _im2col.im2col_conv(x, w, 1, [1, 1], [2, 2], [1, 1], [12, 11])
        assert len(calls) == 1
        monkeypatch.setattr(_im2col, "BAND_BYTES", 2000)
        banded = _im2col.im2col_conv(x, w, 1, [1, 1], [2, 2], [1, 1], [12, 11])
    assert len(calls) > 3
    ref = naive_conv(x, w, None, [2, 2], [1, 1], [1, 1], [1, 1], 1)
    np.testing.assert_allclose(whole, ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(banded, ref, rtol=1e-4, atol=1e-4)
