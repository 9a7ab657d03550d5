"""ImageDecoder's streams decoded by Pillow (the ``image`` extra): libjpeg-turbo, libpng/zlib, libtiff, libwebp and
OpenJPEG, 20-100 times faster than the numpy decoders, whose outputs they equal (the numpy decoders reproduce
those libraries).

:func:`decode` gives what :func:`onnxcore.libs.image.decode.decode` gives -- (H, W, 1) grey or (H, W, 3) RGB,
alpha dropped, 16-bit samples reduced to their high octet -- or None for a stream it leaves to the numpy decoders:
a format it is not used for (PNM and BMP, decoded by numpy in vectorised code already), an image mode without a
mapping here (CMYK, YCbCr, 32-bit or float samples), an animated image, and any stream Pillow fails on. The numpy
decoders then decode it, refuse the feature (Clause 4.4), or find the stream corrupt, exactly as without Pillow.

Pillow opens only the one format the stream's first octets name (never its other plugins), and the image's size
is checked against the limits from the header, before any pixel is decoded (Clause 15.4).
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np

from onnxcore.errors import LimitError
from onnxcore.libs.image.common import check_size
from onnxcore.libs.image.decode import sniff
from onnxcore.limits import Limits

__all__ = ["available", "decode"]

# Our format names (decode.sniff) -> Pillow's plugin names.
_PLUGINS = {"png": "PNG", "jpeg": "JPEG", "tiff": "TIFF", "webp": "WEBP", "jpeg2000": "JPEG2000"}

# The modes mapped here ("La" and "RGBa", premultiplied by alpha, are not: their colours are no longer stored ones).
_GREY_MODES = ("1", "L", "LA", "I;16", "I;16B", "I;16L", "I;16N")
_RGB_MODES = ("RGB", "RGBA", "RGBX", "P", "PA")

_available: bool | None = None


def available() -> bool:
    """Whether Pillow can be imported (the ``image`` extra is installed); decided once."""
    global _available
    if _available is None:
        try:
            # Function-local on purpose: Pillow is the optional ``image`` extra, imported on the first image only.
            import PIL.Image  # noqa: F401
        except ImportError:
            _available = False
        else:
            _available = True
    return _available


def decode(data: bytes, limits: Limits | None) -> np.ndarray | None:
    """Decode ``data`` with Pillow to uint8 (H, W, 1) or (H, W, 3), or None to leave it to the numpy decoders.

    Raises:
        LimitError: the image is larger than ``limits`` allow (the active limits when None).
    """
    plugin = _PLUGINS.get(sniff(data) or "")
    if plugin is None:
        return None
    # Function-local on purpose: Pillow is the optional ``image`` extra (the caller checked available()).
    from PIL import Image

    try:
        img: Any = Image.open(io.BytesIO(data), formats=[plugin])
    except Image.DecompressionBombError as e:
        raise LimitError(f"ImageDecoder: {e}") from None
    except Exception:
        return None  # the numpy decoders find out what is wrong, as they would without Pillow
    with img:
        mode = img.mode
        grey = mode in _GREY_MODES
        if not grey and mode not in _RGB_MODES:
            return None
        if getattr(img, "n_frames", 1) > 1:
            return None  # animated: the numpy decoders refuse it (Clause 4.4), so does this path
        width, height = img.size
        check_size(height, width, 1 if grey else 3, limits)
        try:
            return _pixels(img, mode, grey)
        except MemoryError:
            raise
        except Exception:
            return None


def _pixels(img: Any, mode: str, grey: bool) -> np.ndarray:
    if mode in ("P", "PA"):
        img = img.convert("RGB")  # the palette looked up; its transparency dropped, as alpha is
    arr = np.asarray(img)
    if grey:
        if mode == "1":
            arr = arr.astype(np.uint8) * np.uint8(255)
        elif mode.startswith("I;16"):
            arr = (arr.astype(np.uint16) >> 8).astype(np.uint8)  # the high octet, as the numpy decoders keep
        if arr.ndim == 3:
            arr = arr[:, :, 0]  # LA: the grey channel, alpha dropped
        return np.ascontiguousarray(arr[:, :, None], dtype=np.uint8)
    return np.ascontiguousarray(arr[:, :, :3], dtype=np.uint8)
