"""Winograd F(4x4, 3x3) convolution (runtime/ops/_winograd.py), the plan's choice for large 3x3 layers (Clause 8.2).

The algorithm is exact in real arithmetic: its matrices are checked in float64 against the correlation they
compute, and its float32 results against a float64 direct convolution (error at most 3e-5 of the largest
output; the direct float32 product is about 5e-7), onnxruntime and the node-by-node run.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as h

import onnxcore
from onnxcore.kernels import _conv_choice, _winograd
from onnxcore.kernels._winograd import (
    WinogradConv,
    small_image_conv,
    toom_cook,
    transformed_weights,
    winograd_conv,
)
from onnxcore.kernels.conv import conv, conv_geometry
from onnxcore.kernels.fused.conv import InPlaceRelu


@pytest.fixture(autouse=True)
def _rule_only(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Winograd's rule alone (its path always kept over the Conv kernel's): these tests hold what the rule takes and
    computes; the measured choice between the two has tests of its own (they ask for ``measured``)."""
    if "measured" not in request.fixturenames:
        monkeypatch.setattr(_winograd, "choose", lambda key, found, x, w, b: ("kernel", None))


@pytest.fixture
def measured() -> Iterator[None]:
    """The process's measured choices forgotten before and after the test."""
    _conv_choice.clear_choices()
    yield
    _conv_choice.clear_choices()


@pytest.mark.parametrize(("m", "r", "points"), [(4, 3, [0, 1, -1, 2, -2]), (2, 3, [0, 1, -1]), (3, 2, [0, 1, -1])])
def test_toom_cook_matrices_compute_the_correlation(m: int, r: int, points: list[int]) -> None:
    """``A^T ((G g) * (B^T d)) = [sum_k d_(i+k) g_k]_i`` for random d and g, and for each unit d and g."""
    at, g, bt = toom_cook(m, r, points)
    n = m + r - 1
    assert at.shape == (m, n) and g.shape == (n, r) and bt.shape == (n, n)
    rng = np.random.default_rng(1)
    for d, k in itertools.chain(
        ((rng.standard_normal(n), rng.standard_normal(r)) for _ in range(20)),
        ((np.eye(n)[p], np.eye(r)[q]) for p in range(n) for q in range(r)),
    ):
        expected = np.array([d[i : i + r] @ k for i in range(m)])
        np.testing.assert_allclose(at @ ((g @ k) * (bt @ d)), expected, rtol=0, atol=1e-12)


def test_toom_cook_rejects_repeated_points() -> None:
    with pytest.raises(ValueError):
        toom_cook(4, 3, [0, 1, 1, 2, -2])


def _direct64(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, **kw: object) -> np.ndarray:
    return conv(x.astype(np.float64), w.astype(np.float64), None if b is None else b.astype(np.float64), **kw)


@pytest.mark.parametrize(
    ("n", "c", "m", "hw", "kw"),
    [
        (1, 16, 16, (24, 24), {"pads": [1, 1, 1, 1]}),
        (2, 17, 19, (23, 30), {"pads": [1, 1, 1, 1]}),  # extents not multiples of 4, two images
        (1, 20, 24, (26, 25), {"pads": [0, 0, 0, 0]}),
        (1, 16, 32, (27, 29), {"pads": [2, 0, 1, 3]}),  # asymmetric pads
        (1, 24, 16, (25, 26), {"auto_pad": "SAME_UPPER"}),
        (1, 24, 16, (25, 26), {"auto_pad": "SAME_LOWER"}),
        (1, 16, 16, (30, 31), {"auto_pad": "VALID"}),
    ],
)
@pytest.mark.parametrize("band_bytes", [1 << 23, 1])  # one band, and one block row per band
@pytest.mark.parametrize("last", [False, True], ids=["channels_first", "channels_last"])
def test_winograd_equals_the_direct_convolution(
    n: int,
    c: int,
    m: int,
    hw: tuple[int, int],
    kw: dict,
    band_bytes: int,
    last: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_winograd, "_BAND_BYTES", band_bytes)
    rng = np.random.default_rng(sum(hw) + c)
    x = rng.standard_normal((n, c, *hw)).astype(np.float32)
    w = rng.standard_normal((m, c, 3, 3)).astype(np.float32)
    b = rng.standard_normal(m).astype(np.float32)
    _, _, pb, _, out = conv_geometry(x.shape, w.shape, **kw)
    u = transformed_weights(w, channels_last=last)
    assert u.shape == ((36, c, m) if last else (36, m, c))
    y = winograd_conv(x, u, b, pb, out, channels_last=last)
    ref = _direct64(x, w, b, **kw)
    assert y.shape == ref.shape and y.dtype == np.float32
    assert np.abs(y - ref).max() <= 3e-5 * np.abs(ref).max()
    y0 = winograd_conv(x, u, None, pb, out, channels_last=last)
    assert np.abs(y0 - (ref - b.reshape(1, m, 1, 1))).max() <= 3e-5 * np.abs(ref).max()


def test_the_kernel_takes_winograd_only_where_it_applies(monkeypatch: pytest.MonkeyPatch) -> None:
    """Large float32 3x3 stride-1 layers take Winograd; strides, dilations, groups, float64, few channels and
    few output blocks run the Conv kernel, with its exact result."""
    taken = []
    monkeypatch.setattr(_winograd, "winograd_conv", lambda *a, **k: taken.append(1) or winograd_conv(*a, **k))
    kernel = WinogradConv(conv)
    rng = np.random.default_rng(5)
    w = rng.standard_normal((16, 64, 3, 3)).astype(np.float32)
    x = rng.standard_normal((1, 64, 24, 24)).astype(np.float32)
    y = kernel(x, w, pads=[1, 1, 1, 1])
    assert taken == [1]
    assert np.abs(y - _direct64(x, w, None, pads=[1, 1, 1, 1])).max() <= 3e-5 * np.abs(y).max()
    cases = [
        (x, w, {"pads": [1, 1, 1, 1], "strides": [2, 2]}),
        (x, w, {"pads": [1, 1, 1, 1], "dilations": [2, 2]}),
        (x, w[:, :32], {"pads": [1, 1, 1, 1], "group": 2}),
        (x.astype(np.float64), w.astype(np.float64), {"pads": [1, 1, 1, 1]}),
        (x[:, :32], w[:, :32], {"pads": [1, 1, 1, 1]}),  # 32 input channels
        (x, w[:8], {"pads": [1, 1, 1, 1]}),  # 8 output channels
    ]
    for xi, wi, kw in cases:
        np.testing.assert_array_equal(kernel(xi, wi, **kw), conv(xi, wi, **kw))
    assert taken == [1]


@pytest.mark.parametrize(
    ("n", "hw", "kw"),
    [
        (1, (7, 7), {"pads": [1, 1, 1, 1]}),  # DenseNet's and ResNet's last stage
        (1, (14, 14), {"pads": [1, 1, 1, 1]}),  # 16 blocks
        (2, (14, 14), {"pads": [1, 1, 1, 1]}),  # 32 blocks over two images
        (1, (20, 20), {}),  # unpadded: 18 x 18 outputs, 25 blocks
        (1, (5, 9), {"pads": [0, 2, 1, 0]}),  # asymmetric pads, not square
        (1, (6, 6), {"auto_pad": "SAME_UPPER"}),
        (3, (1, 1), {"pads": [1, 1, 1, 1]}),  # one pixel: only the kernel's centre meets data
    ],
)
@pytest.mark.parametrize("bias", [False, True])
def test_few_blocks_take_the_channels_last_direct_product(
    n: int, hw: tuple[int, int], kw: dict[str, object], bias: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Layers with too few blocks for Winograd run the direct product on a channels-last im2col
    (small_image_conv): the float32 result of the direct convolution, summed in another order."""
    taken: list[int] = []
    monkeypatch.setattr(_winograd, "small_image_conv", lambda *a: taken.append(1) or small_image_conv(*a))
    monkeypatch.setattr(_winograd, "winograd_conv", lambda *a, **k: pytest.fail("Winograd taken"))
    rng = np.random.default_rng(9)
    w = rng.standard_normal((24, 64, 3, 3)).astype(np.float32)
    x = rng.standard_normal((n, 64, *hw)).astype(np.float32)
    b = rng.standard_normal(24).astype(np.float32) if bias else None
    kernel = WinogradConv(conv)
    for _ in range(2):  # the rearranged weights are kept from the first call
        y = kernel(x, w, b, **kw)
        ref = _direct64(x, w, b, **kw)
        assert y.dtype == np.float32 and y.shape == ref.shape
        assert np.abs(y - ref).max() <= 1e-5 * max(1.0, np.abs(ref).max())
        np.testing.assert_allclose(y, conv(x, w, b, **kw), rtol=1e-4, atol=1e-4)
    assert taken == [1, 1] and list(kernel._u) == ["small"]


def test_the_layout_follows_the_input_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inputs that fit in CHANNELS_LAST_BYTES are gathered channels-last, larger ones channels-first; each layout
    transforms the weights once, and both give the direct product's result within Winograd's error."""
    layouts: list[bool] = []
    monkeypatch.setattr(
        _winograd,
        "winograd_conv",
        lambda *a, channels_last: layouts.append(channels_last) or winograd_conv(*a, channels_last=channels_last),
    )
    kernel = WinogradConv(conv)
    rng = np.random.default_rng(8)
    w = rng.standard_normal((16, 64, 3, 3)).astype(np.float32)
    small = rng.standard_normal((1, 64, 24, 24)).astype(np.float32)  # 147 KB
    side = math.isqrt(_winograd.CHANNELS_LAST_BYTES // (64 * 4)) + 1
    large = rng.standard_normal((1, 64, side, side)).astype(np.float32)
    for x in (small, large, small, large):
        y = kernel(x, w, pads=[1, 1, 1, 1])
        assert np.abs(y - _direct64(x, w, None, pads=[1, 1, 1, 1])).max() <= 3e-5 * np.abs(y).max()
    assert layouts == [True, False, True, False]
    assert sorted(u.shape for u in kernel._u.values()) == [(36, 16, 64), (36, 64, 16)]


def test_special_values_spread_as_in_the_direct_convolution() -> None:
    """An infinity mixes into a whole 6x6 block in Winograd's transform; the kernel then computes directly, so
    the NaN and infinity pattern is the direct product's."""
    rng = np.random.default_rng(6)
    w = rng.standard_normal((16, 64, 3, 3)).astype(np.float32)
    x = rng.standard_normal((1, 64, 24, 24)).astype(np.float32)
    x[0, 3, 10, 10] = np.inf
    x[0, 5, 2, 20] = np.nan
    y = WinogradConv(conv)(x, w, pads=[1, 1, 1, 1])
    np.testing.assert_array_equal(y, conv(x, w, pads=[1, 1, 1, 1]))
    assert np.isnan(y).any() and np.isfinite(y).any()


def test_session_uses_winograd_and_matches_onnxruntime() -> None:
    """Conv -> Relu, 64 to 32 channels on 28 x 28: the plan's Conv step is Winograd with the Relu in place; the
    outputs agree with onnxruntime and with the node-by-node run (the direct product) to 3e-5 of the largest."""
    ort = pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(7)
    w = rng.standard_normal((32, 64, 3, 3)).astype(np.float32)
    b = rng.standard_normal(32).astype(np.float32)
    g = h.make_graph(
        [h.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]), h.make_node("Relu", ["c"], ["y"])],
        "g",
        [h.make_tensor_value_info("x", TP.FLOAT, [1, 64, 28, 28])],
        [h.make_tensor_value_info("y", TP.FLOAT, [1, 32, 28, 28])],
        [h.make_tensor("w", TP.FLOAT, list(w.shape), w.ravel()), h.make_tensor("b", TP.FLOAT, [32], b)],
    )
    data = h.make_model(g, opset_imports=[h.make_opsetid("", 13)], ir_version=8).SerializeToString()
    x = rng.standard_normal((1, 64, 28, 28)).astype(np.float32)
    s = onnxcore.Session(data)
    (step,) = s._plan.info
    assert isinstance(step.call, InPlaceRelu) and isinstance(step.call.call, WinogradConv)
    (ours,) = s.run(None, {"x": x})
    (theirs,) = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    (debug,), _ = s.run(None, {"x": x}, intermediates=True)
    scale = np.abs(theirs).max()
    assert np.abs(ours - theirs).max() <= 3e-5 * scale
    assert np.abs(ours - debug).max() <= 3e-5 * scale
    assert not np.array_equal(ours, debug)  # the Winograd product ran: its rounding is not the direct one's
    assert ours.min() == 0.0


def test_the_direct_product_replaces_winograd_where_it_measures_faster(measured: None) -> None:
    """Where the Conv kernel it wraps runs faster for a layer (here a stand-in returning the direct product at once),
    the kernel takes it from then on; a slower one (a stand-in sleeping 20 ms) leaves Winograd's path. Each layer
    is measured once per process: another instance of the same layer takes the stored choice."""
    rng = np.random.default_rng(11)
    w = rng.standard_normal((16, 64, 3, 3)).astype(np.float32)
    x = rng.standard_normal((1, 64, 24, 24)).astype(np.float32)
    direct = conv(x, w, pads=[1, 1, 1, 1])
    calls: list[str] = []

    def instant(a: np.ndarray, v: np.ndarray, b: Any = None, **kw: Any) -> np.ndarray:
        calls.append("instant")
        return direct

    fast = WinogradConv(instant)
    for _ in range(3):
        assert fast(x, w, pads=[1, 1, 1, 1]) is direct
    assert fast._route == {(x.shape, True): False}
    assert WinogradConv(instant)(x, w, pads=[1, 1, 1, 1]) is direct  # the stored choice, not measured again
    # A layer of another shape is measured on its own: the stand-in sleeps, Winograd's path stays.
    x2 = rng.standard_normal((1, 64, 28, 28)).astype(np.float32)

    def slow(a: np.ndarray, v: np.ndarray, b: Any = None, **kw: Any) -> np.ndarray:
        time.sleep(0.02)
        return conv(a, v, b, **kw)

    kept = WinogradConv(slow)
    ref = _direct64(x2, w, None, pads=[1, 1, 1, 1])
    for _ in range(2):
        y = kept(x2, w, pads=[1, 1, 1, 1])
        assert np.abs(y - ref).max() <= 3e-5 * np.abs(ref).max()
    assert kept._route == {(x2.shape, True): True} and list(kept._u) == [True]
    assert set(_conv_choice._CHOICES.values()) == {"conv", "kernel"}


def test_a_measured_choice_computes_the_convolution(measured: None) -> None:
    """Whichever path the measurement keeps, the layer's result is the convolution (within Winograd's error), with
    and without a bias, on the first run (the measured result returned) and later ones."""
    rng = np.random.default_rng(12)
    w = rng.standard_normal((32, 64, 3, 3)).astype(np.float32)
    b = rng.standard_normal(32).astype(np.float32)
    for hw in ((7, 7), (16, 16), (28, 28)):
        x = rng.standard_normal((1, 64, *hw)).astype(np.float32)
        kernel = WinogradConv(conv)
        for bias in (None, b):
            ref = _direct64(x, w, bias, pads=[1, 1, 1, 1])
            for _ in range(2):
                y = kernel(x, w, bias, pads=[1, 1, 1, 1])
                assert y.shape == ref.shape and np.abs(y - ref).max() <= 3e-5 * max(1.0, np.abs(ref).max())
