"""ImageDecoder (default domain, since_version 20): decode an encoded image stream to uint8 (H, W, C).

The decoding is a library's (:mod:`onnxcore.libs.image`): Pillow's C decoders when the ``image`` extra is
installed (:mod:`onnxcore.libs.image.pillow`), the numpy decoders otherwise and for what Pillow leaves to them
(:mod:`onnxcore.libs.image.decode`, whose module docstring lists the formats and what they refuse). Both give the
same pixels on the streams both decode (tests/kernels/test_image_backends.py). The environment variable
``ONNXCORE_IMAGE=numpy`` (read at each call) chooses the numpy decoders with Pillow installed, for testing.

The operator's own part is here. The definition: a stream that cannot be decoded gives an empty matrix; here that
is shape (0, 0, C) with C the channel count of ``pixel_format`` (3, or 1 for "Grayscale"). Alpha channels are
dropped; 16-bit samples keep their high octet; grey images asked for as RGB/BGR repeat the grey value in every
channel; colour images asked for as "Grayscale" use ITU-R 601 luma in the fixed-point form of the reference
(Pillow's ``convert("L")``, which produced the test vectors): (19595 R + 38470 G + 7471 B + 2**15) >> 16.
"""

from __future__ import annotations

import os
import struct
import zlib
from typing import Any, Literal

import numpy as np

from onnxcore.errors import EvaluationError, LimitError
from onnxcore.kernels.registry import KernelContext, kernel
from onnxcore.libs.image import decode as numpy_decoders
from onnxcore.libs.image import pillow
from onnxcore.libs.image.common import CorruptImage
from onnxcore.limits import Limits

__all__ = ["Backend", "backend", "decode_image"]

Backend = Literal["pillow", "numpy"]

_CHANNELS = {"RGB": 3, "BGR": 3, "Grayscale": 1}


def backend() -> Backend:
    """The decoders a call uses: ``"pillow"`` when Pillow is installed, unless ``ONNXCORE_IMAGE=numpy``."""
    if os.environ.get("ONNXCORE_IMAGE", "") == "numpy" or not pillow.available():
        return "numpy"
    return "pillow"


def _to_gray(img: np.ndarray) -> np.ndarray:
    if img.shape[2] == 1:
        return img
    rgb = img.astype(np.uint32)
    y = (rgb[..., 0] * 19595 + rgb[..., 1] * 38470 + rgb[..., 2] * 7471 + 0x8000) >> 16
    return y.astype(np.uint8)[..., None]


def decode_image(
    data: bytes, pixel_format: str = "RGB", limits: Limits | None = None, *, using: Backend | None = None
) -> np.ndarray:
    """Decode ``data`` to a uint8 array (H, W, C) in ``pixel_format``; (0, 0, C) if it cannot be decoded.

    Args:
        data: The encoded stream.
        pixel_format: ``"RGB"``, ``"BGR"`` or ``"Grayscale"``.
        limits: The limits the image's size is checked against (the active limits when None).
        using: The decoders (:func:`backend`'s choice when None); ``"pillow"`` without Pillow decodes with numpy.

    Raises:
        EvaluationError: unknown ``pixel_format``, or a format/feature that is not implemented.
        LimitError: the image is larger than ``limits`` allow.
    """
    if pixel_format not in _CHANNELS:
        raise EvaluationError(f"ImageDecoder: pixel_format {pixel_format!r} is not RGB, BGR or Grayscale")
    c = _CHANNELS[pixel_format]
    try:
        img = None
        if (using or backend()) == "pillow" and pillow.available():
            img = pillow.decode(data, limits)
        if img is None:
            img = numpy_decoders.decode(data, limits)
    except (EvaluationError, LimitError):
        raise
    except MemoryError:
        raise LimitError("ImageDecoder: not enough memory to decode the image") from None
    except (CorruptImage, ValueError, IndexError, KeyError, struct.error, zlib.error, OverflowError):
        # Hostile or damaged input: the definition's empty matrix. (Decoders validate what they
        # read; the broad net only keeps a missed check from escaping as a non-onnxcore error.)
        return np.zeros((0, 0, c), dtype=np.uint8)
    if pixel_format == "Grayscale":
        return np.ascontiguousarray(_to_gray(img))
    if img.shape[2] == 1:
        img = np.repeat(img, 3, axis=2)
    if pixel_format == "BGR":
        img = img[:, :, ::-1]
    return np.ascontiguousarray(img)


@kernel("ImageDecoder", 20, context=True)
def image_decoder(ctx: KernelContext, encoded_stream: np.ndarray, *, pixel_format: str = "RGB") -> np.ndarray:
    """ImageDecoder-20: ``encoded_stream`` (uint8, 1-D) to uint8 (H, W, C), C = 3 (RGB/BGR) or 1."""
    arr: Any = np.asarray(encoded_stream)
    if arr.dtype != np.uint8 or arr.ndim != 1:
        raise EvaluationError(f"ImageDecoder: encoded_stream must be a 1-D uint8 tensor, not {arr.dtype} {arr.shape}")
    return decode_image(arr.tobytes(), pixel_format, getattr(ctx, "limits", None))
