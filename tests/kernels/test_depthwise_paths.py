"""The channels-last compiled depthwise convolution (``accel.jit_cnn().depthwise2d_nchw_cl``): it reads and writes
NCHW itself, copying the input rows it needs channels-last into per-thread scratch; against the direct sum over the
taps for every kernel row width, stride, dilation and padding, for any split of its rows over threads, and the
measured rule that picks it over the planar loops (``kernels/conv.py: _dw_channels_last``)."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

from onnxcore.kernels import accel
from onnxcore.kernels.conv import _dw_channels_last, depthwise_accel

needs_accel = pytest.mark.skipif(
    not accel.available(), reason="the accelerator is not available (numba not installed, or ONNXCORE_ACCEL=0)"
)


def _rand(shape: tuple[int, ...], dtype: Any, lo: float = -4.0, hi: float = 4.0, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(lo, hi, shape).astype(dtype)


def _direct_depthwise(
    x: np.ndarray, w: np.ndarray, b: np.ndarray, pads: tuple[int, ...], st: tuple[int, int], dil: tuple[int, int]
) -> np.ndarray:
    """The depthwise Conv as the direct sum over its taps (pads top, left, bottom, right), in float64."""
    kh, kw = w.shape[2:]
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    oh = (xp.shape[2] - dil[0] * (kh - 1) - 1) // st[0] + 1
    ow = (xp.shape[3] - dil[1] * (kw - 1) - 1) // st[1] + 1
    ref = np.zeros((x.shape[0], x.shape[1], oh, ow)) + b[:, None, None]
    for i in range(kh):
        for j in range(kw):
            win = xp[:, :, i * dil[0] :, j * dil[1] :][
                :, :, : (oh - 1) * st[0] + 1 : st[0], : (ow - 1) * st[1] + 1 : st[1]
            ]
            ref += win * w[None, :, 0, i, j, None, None]
    return ref


@needs_accel
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kw", [1, 2, 3, 4, 5, 7])
@pytest.mark.parametrize(("st", "dil"), [((1, 1), (1, 1)), ((2, 2), (1, 1)), ((1, 3), (2, 1)), ((2, 1), (1, 2))])
def test_channels_last_depthwise_against_direct_sums(
    kw: int, st: tuple[int, int], dil: tuple[int, int], dtype: Any
) -> None:
    """The channels-last loop reading and writing NCHW (``accel.jit_cnn().depthwise2d_nchw_cl``): every kernel row
    width (the one-pass three- and five-tap rows, inside the image or cut by the padding, and the tap-by-tap rest),
    strides, dilations, uneven pads, batches of two, channels not a multiple of a vector, float32 and float64,
    against the direct sum over the taps."""
    c, kh = 21, 3
    x = _rand((2, c, 9, 11), dtype, seed=kw * 10 + st[1])
    w = _rand((c, 1, kh, kw), dtype, -1, 1, seed=dil[0] + 2 * dil[1])
    b = _rand((c,), dtype, seed=3)
    pads = (1, kw // 2, 2, (kw - 1) // 2 + 1)
    ref = _direct_depthwise(x, w, b, pads, st, dil)
    y = depthwise_accel(x, w, pads[:2], st, dil, ref.shape[2:], b, channels_last=True)
    assert y.dtype == dtype and y.shape == ref.shape
    tol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(y, ref, rtol=tol, atol=tol * 10)
    # A strided view of the input (every other channel, a column slice) gives the values of its copy.
    wide = _rand((2, 2 * c, 9, 13), dtype, seed=5)
    view = wide[:, ::2, :, 1:12]
    y2 = depthwise_accel(view, w, pads[:2], st, dil, ref.shape[2:], None, channels_last=True)
    np.testing.assert_allclose(y2, _direct_depthwise(view, w, np.zeros(c), pads, st, dil), rtol=tol, atol=tol * 10)


@needs_accel
def test_channels_last_depthwise_any_split_of_rows() -> None:
    """The loop's units are output rows of ``(N * oh)``: a call for any range of them, crossing from one image to the
    next, writes exactly those rows, each with the bits of one call over all of them (the rows a thread takes)."""
    cnn = accel.jit_cnn()
    x = _rand((3, 40, 7, 8), np.float32, seed=11)
    wl = _rand((5, 5, 40), np.float32, -1, 1, seed=12)
    b = _rand((40,), np.float32, seed=13)
    pads, st, dil = np.array([2, 2]), np.array([2, 1]), np.array([1, 1])
    oh, ow = 4, 8

    def run(splits: list[int]) -> np.ndarray:
        y = np.full((3, 40, oh, ow), np.nan, np.float32)
        for a, z in itertools.pairwise(splits):
            xl = np.full((7, 8, 40), np.nan, np.float32)  # scratch of any contents
            cnn.depthwise2d_nchw_cl(x, wl, b, y, pads, st, dil, xl, np.full((ow, 40), np.nan, np.float32), a, z)
        return y

    whole = run([0, 3 * oh])
    assert not np.isnan(whole).any()
    ref = _direct_depthwise(x, wl.transpose(2, 0, 1)[:, None], b, (2, 2, 2, 2), (2, 1), (1, 1))
    np.testing.assert_allclose(whole, ref, rtol=1e-5, atol=1e-5)
    for splits in ([0, 1, 12], [0, 3, 5, 9, 12], [0, 4, 8, 12], [0, 7, 12]):
        np.testing.assert_array_equal(run(splits), whole)
    part = run([5, 9])
    assert np.isnan(part[0]).all() and np.isnan(part[2, :, 1:]).all()
    np.testing.assert_array_equal(part[1, :, 1:], whole[1, :, 1:])
    np.testing.assert_array_equal(part[2, :, 0], whole[2, :, 0])


def test_depthwise_channels_last__dw_channels_last() -> None:
    """The measured rule's edges: with a stride, 64 channels up to 10 x 10 outputs and 96 up to 14 x 14; without,
    240 channels up to 5 x 5 and 480 up to 7 x 7."""
    assert (
        _dw_channels_last(64, [10, 10], [2, 2])
        and not _dw_channels_last(63, [10, 10], [2, 2])
        and not _dw_channels_last(64, [11, 10], [2, 2])
    )
    assert (
        _dw_channels_last(96, [14, 14], [1, 2])
        and not _dw_channels_last(95, [14, 14], [2, 2])
        and not _dw_channels_last(96, [15, 14], [2, 2])
    )
    assert (
        _dw_channels_last(240, [5, 5], [1, 1])
        and not _dw_channels_last(239, [5, 5], [1, 1])
        and not _dw_channels_last(240, [6, 5], [1, 1])
    )
    assert (
        _dw_channels_last(480, [7, 7], [1, 1])
        and not _dw_channels_last(479, [7, 7], [1, 1])
        and not _dw_channels_last(960, [8, 7], [1, 1])
    )
