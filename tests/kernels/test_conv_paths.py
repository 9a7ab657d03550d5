"""Convolution paths that keep their temporaries in scratch buffers (``kernels/_scratch.py``): a result never
aliases a buffer the next call reuses, and every path computes the naive reference's values.

Each case below reaches one path of ``kernels/conv.py`` (1x1 with a stride, the padded im2col, its banded
form, the flat layout by tap products or by columns, cropped or not, the depthwise paths) or
``kernels/_winograd.py``'s small-image product; the result of a first call is kept, a second call with another
input of the same shape runs, and the first result must still be the convolution of the first input.
"""

from __future__ import annotations

import numpy as np
import pytest

from kernels.test_conv import naive_conv
from onnxcore.kernels._winograd import WinogradConv
from onnxcore.kernels.conv import conv

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
