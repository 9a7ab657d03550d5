"""The dense convolution's copies on the kernel threads (:func:`onnxcore.kernels.threads.copy_split`).

im2col columns, the flat layout's padded image, its cropped output and Winograd's blocks are copied over the
session's kernel threads while BLAS runs the products over its own. A copy moves each element once, so every
result is the same, bit for bit, for any number of threads (checked here for each path), and still agrees with
onnxruntime.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from kernels import compare, run_ours
from onnxcore.kernels import threads
from onnxcore.kernels._winograd import transformed_weights, winograd_conv
from onnxcore.kernels.threads import MIN_PARALLEL_ELEMENTS, copy_split, threads_in_effect

RNG = np.random.default_rng(2715)


def f32(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _splits(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Record the number of items of each ``parallel_for`` call made through ``copy_split``."""
    seen: list[int] = []
    real = threads.parallel_for

    def spy(fn: Any, total: int, *, threads: int, min_block: int = 1, **kw: Any) -> None:
        seen.append(total)
        real(fn, total, threads=threads, min_block=min_block, **kw)

    monkeypatch.setattr(threads, "parallel_for", spy)
    return seen


def test_copy_split_copies_and_adds_like_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _splits(monkeypatch)
    src = f32(1, 3, 7, 7, 64, 120)[..., ::2]  # strided, a leading axis of one entry
    bias = f32(3, 1, 1, 1, 1)
    for n_threads in (1, 2, 3):
        with threads_in_effect(n_threads):
            out = np.empty(src.shape, np.float32)
            copy_split(out, src)
            assert np.array_equal(out, src)
            added = np.empty(src.shape, np.float32)
            copy_split(added, src, add=bias)
            assert np.array_equal(added, src + bias)
            inplace = src.copy()
            copy_split(inplace, inplace, add=bias)
            assert np.array_equal(inplace, added)
    assert seen == [3] * 6  # split along the first axis of two entries or more, only with several threads
    small = np.empty((4, MIN_PARALLEL_ELEMENTS // 8), np.float32)
    with threads_in_effect(4):
        copy_split(small, np.ones(1, np.float32))
    assert seen == [3] * 6 and (small == 1).all()  # below the threshold: one copy on the calling thread


CONV_CASES: list[tuple[str, list[np.ndarray], dict[str, Any]]] = [
    # The stem of a ResNet: a 7x7 stride-2 im2col in bands of output rows.
    ("im2col bands", [f32(1, 3, 224, 224), f32(64, 3, 7, 7), f32(64)], {"strides": [2, 2], "pads": [3, 3, 3, 3]}),
    # Stride 1, the flat layout: padded copy, columns in chunks, cropped output plus bias.
    ("flat", [f32(1, 32, 60, 60), f32(48, 32, 3, 3), f32(48)], {"pads": [1, 1, 1, 1]}),
    # Stride 2 on a small image: one im2col copy.
    ("im2col", [f32(2, 64, 40, 40), f32(128, 64, 3, 3), None], {"strides": [2, 2], "pads": [1, 1, 1, 1]}),
    # A strided 1x1 kernel: the subsampled input copied, then one product.
    ("1x1 strided", [f32(1, 96, 112, 112), f32(128, 96, 1, 1), f32(128)], {"strides": [2, 2]}),
    # Few output channels: one product per kernel offset on the padded copy.
    ("taps", [f32(1, 128, 48, 48), f32(16, 128, 3, 3), f32(16)], {"pads": [1, 1, 1, 1]}),
]


@pytest.mark.parametrize(("inputs", "attrs"), [c[1:] for c in CONV_CASES], ids=[c[0] for c in CONV_CASES])
def test_dense_conv_same_bits_for_any_thread_count(
    inputs: list[np.ndarray], attrs: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _splits(monkeypatch)
    with threads_in_effect(1):
        (one,) = run_ours("Conv", inputs, 11, attrs)
    assert not seen
    for n_threads in (2, 3):
        with threads_in_effect(n_threads):
            (other,) = run_ours("Conv", inputs, 11, attrs)
        assert np.array_equal(one, other), n_threads
    assert seen  # some copy of the path was split


@pytest.mark.parametrize(("inputs", "attrs"), [c[1:] for c in CONV_CASES], ids=[c[0] for c in CONV_CASES])
def test_dense_conv_on_threads_vs_ort(inputs: list[np.ndarray], attrs: dict[str, Any]) -> None:
    pytest.importorskip("onnxruntime")
    with threads_in_effect(2):
        compare("Conv", inputs, 11, attrs, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    ("shape", "channels_last"),
    [((1, 64, 28, 28), True), ((1, 64, 58, 58), False), ((2, 64, 30, 30), True)],
    ids=["channels-last", "channels-first", "partial-blocks"],
)
def test_winograd_same_bits_for_any_thread_count(shape: tuple[int, ...], channels_last: bool) -> None:
    """Winograd's padded copy, block gather and output scatter (plus bias) split over the threads."""
    x, w, b = f32(*shape), f32(96, shape[1], 3, 3), f32(96)
    u = transformed_weights(w, channels_last=channels_last)
    out = [shape[2], shape[3]]
    with threads_in_effect(1):
        one = winograd_conv(x, u, b, [1, 1], out, channels_last=channels_last)
    for n_threads in (2, 3):
        with threads_in_effect(n_threads):
            other = winograd_conv(x, u, b, [1, 1], out, channels_last=channels_last)
        assert np.array_equal(one, other), n_threads
    with threads_in_effect(1):
        (direct,) = run_ours("Conv", [x, w, b], 11, {"pads": [1, 1, 1, 1]})
    assert np.abs(one - direct).max() <= 3e-5 * np.abs(direct).max()


@pytest.mark.parametrize(
    ("shape", "k", "stride"),
    [((2, 480, 20, 20), 3, 2), ((2, 960, 7, 7), 5, 1), ((1, 96, 56, 56), 3, 2)],
    ids=["channels-last-strided", "channels-last", "planar"],
)
def test_depthwise_same_bits_for_any_thread_count(shape: tuple[int, ...], k: int, stride: int) -> None:
    """The depthwise loops (channels-last rows, planar planes) split over the threads give the bits of one thread,
    the channels-last loop's rows of one thread crossing from one image to the next."""
    from onnxcore.kernels import accel

    if not accel.available():
        pytest.skip("the accelerator is not available")
    from onnxcore.kernels.conv import _dw_channels_last, depthwise_for_shape

    c, p = shape[1], k // 2
    out = [(shape[2] + 2 * p - k) // stride + 1, (shape[3] + 2 * p - k) // stride + 1]
    assert shape[0] * c * out[0] * out[1] >= 1 << 16  # large enough to be split
    x, w, b = f32(*shape), f32(c, 1, k, k), f32(c)
    run = depthwise_for_shape(shape, np.float32, [p, p], [stride] * 2, [1, 1], out)
    with threads_in_effect(1):
        one = run(x, w, b)
    for n_threads in (2, 3):
        with threads_in_effect(n_threads):
            other = run(x, w, b)
        assert np.array_equal(one, other), n_threads
    last = _dw_channels_last(c, out, [stride] * 2)
    assert last == (shape[2] < 56)
    with threads_in_effect(1):
        (direct,) = run_ours("Conv", [x, w, b], 11, {"group": c, "pads": [p] * 4, "strides": [stride] * 2})
    assert np.abs(one - direct).max() <= 3e-5 * np.abs(direct).max()
