"""Shared pieces of the image decoders (the numpy ones and the Pillow path) of :mod:`onnxcore.libs.image`.

Every decoder returns a uint8 array of shape (H, W, 1) (grey) or (H, W, 3) (RGB), raises
:class:`CorruptImage` for a stream it cannot decode (the operator then yields an empty matrix, as the
definition of ImageDecoder-20 says), :class:`onnxcore.EvaluationError` for a valid stream using a
feature that is not implemented, and :class:`onnxcore.LimitError` for an image beyond the limits.
"""

from __future__ import annotations

import zlib

import numpy as np

from onnxcore.errors import LimitError
from onnxcore.limits import Limits, active_limits

__all__ = ["CorruptImage", "check_size", "inflate", "scale_to_8bit"]


class CorruptImage(Exception):
    """The stream cannot be decoded (corrupt, truncated or not an image). Never leaves the operator."""


def check_size(height: int, width: int, channels: int, limits: Limits | None) -> None:
    """Refuse impossible or over-limit dimensions before anything of that size is allocated."""
    if height <= 0 or width <= 0:
        raise CorruptImage(f"image dimensions {height}x{width}")
    (limits or active_limits()).check_pixels(height, width, "ImageDecoder: an image")
    lim = (limits or active_limits()).max_tensor_elements
    n = height * width * max(channels, 3)
    if lim is not None and n > lim:
        raise LimitError(f"ImageDecoder: a {height}x{width} image has {n} elements, over the limit {lim}")


def inflate(data: bytes, expected: int, *, raw: bool = False) -> bytes:
    """Decompress a zlib (or raw deflate) stream, never producing more than ``expected`` octets.

    Fewer octets than ``expected`` (truncated stream) is corrupt; extra ones are ignored, as decoders do.
    """
    try:
        d = zlib.decompressobj(-15 if raw else 15)
        out = d.decompress(data, expected)
    except zlib.error as e:
        raise CorruptImage(f"deflate stream: {e}") from None
    if len(out) < expected:
        raise CorruptImage(f"deflate stream gives {len(out)} octets, {expected} needed")
    return out


def scale_to_8bit(values: np.ndarray, maxval: int) -> np.ndarray:
    """Rescale samples in [0, maxval] to [0, 255], rounding to nearest (values above maxval clip)."""
    if maxval == 255:
        return values.astype(np.uint8)
    v = np.minimum(values.astype(np.int64), maxval)
    return ((v * 255 + maxval // 2) // maxval).astype(np.uint8)
