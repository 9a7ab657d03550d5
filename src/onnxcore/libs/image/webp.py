"""WebP decoding for ImageDecoder (private): the RIFF container, dispatching to the lossy ('VP8 ',
:mod:`onnxcore.libs.image.webp_vp8`) and lossless ('VP8L', :mod:`onnxcore.libs.image.webp_vp8l`) bitstreams.

Container rules follow the WebP RIFF container specification: a 'RIFF' header whose size covers the
file (trailing octets past it are ignored, a file shorter than it is truncated), then either a single
'VP8 ' or 'VP8L' chunk (simple format) or a 'VP8X' chunk and the chunks it announces (extended format).
Metadata chunks (ICCP, EXIF, XMP) are skipped, an ALPH chunk is skipped because the operator drops
alpha, and animations (ANIM/ANMF, or the animation flag) are refused as not implemented.
"""

from __future__ import annotations

import numpy as np

from onnxcore.errors import EvaluationError
from onnxcore.libs.image.common import CorruptImage
from onnxcore.limits import Limits

__all__ = ["decode_webp"]

_ANIMATION_FLAG = 0x02
_KNOWN_FLAGS = 0x3E  # ICC, alpha, EXIF, XMP, animation; libwebp's demuxer rejects the reserved bits


def _chunks(data: bytes, pos: int, end: int) -> list[tuple[bytes, int, int]]:
    """(fourcc, payload start, padded payload end) of the chunks in data[pos:end]."""
    out = []
    while pos < end:
        if end - pos < 8:
            raise CorruptImage("WebP: truncated chunk header")
        tag = data[pos : pos + 4]
        size = int.from_bytes(data[pos + 4 : pos + 8], "little")
        start = pos + 8
        # The padding octet of an odd-sized chunk must be there too (libwebp's demuxer, which Pillow
        # uses, insists on it).
        if size + (size & 1) > end - start:
            raise CorruptImage(f"WebP: chunk {tag!r} runs past the end of the file")
        # The payload handed on keeps the padding octet: libwebp's decoders see it as part of the
        # bitstream (the last VP8 partition and the VP8L bit reader may run into it).
        out.append((tag, start, start + size + (size & 1)))
        pos = start + size + (size & 1)
    return out


def _decode_bitstream(tag: bytes, payload: bytes, limits: Limits | None) -> np.ndarray:
    # Each codec is imported only when an image of its kind is decoded (lazy on purpose: they are large).
    if tag == b"VP8 ":
        from onnxcore.libs.image.webp_vp8 import decode_vp8

        return decode_vp8(payload, limits)
    from onnxcore.libs.image.webp_vp8l import decode_vp8l

    return decode_vp8l(payload, limits)


def _frame_size(tag: bytes, payload: bytes) -> tuple[int, int]:
    """(width, height) from the first octets of a VP8 / VP8L bitstream (0, 0 if too short to say)."""
    if tag == b"VP8 " and len(payload) >= 10:
        return (payload[6] | (payload[7] << 8)) & 0x3FFF, (payload[8] | (payload[9] << 8)) & 0x3FFF
    if tag == b"VP8L" and len(payload) >= 5:
        bits = int.from_bytes(payload[1:5], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    return 0, 0


def _check_alpha_header(payload: bytes, w: int, h: int) -> None:
    """The ALPH chunk's header octet (container spec, "Alpha"); the alpha plane itself is not needed.

    Reserved bits, an unknown compression method or pre-processing, or raw data shorter than the
    plane make libwebp reject the file, so they are corrupt here too.
    """
    if not payload:
        raise CorruptImage("WebP: empty ALPH chunk")
    b = payload[0]
    method, preprocessing, reserved = b & 3, (b >> 4) & 3, b >> 6
    if method > 1 or preprocessing > 1 or reserved:
        raise CorruptImage("WebP: bad ALPH header")
    if method == 0 and len(payload) - 1 < w * h:
        raise CorruptImage("WebP: truncated raw alpha plane")


def decode_webp(data: bytes, limits: Limits | None) -> np.ndarray:
    """Decode a WebP file to uint8 (H, W, 3) RGB, alpha dropped.

    Args:
        data: The encoded stream, starting with 'RIFF' size 'WEBP'.
        limits: Resource limits (None for the defaults).

    Returns:
        The image as a (height, width, 3) uint8 array.

    Raises:
        CorruptImage: the stream is not a decodable WebP file.
        EvaluationError: the file is an animation.
        LimitError: the image is larger than the limits allow.
    """
    data = bytes(data)
    if len(data) < 12 or data[:4] != b"RIFF" or data[8:12] != b"WEBP":
        raise CorruptImage("WebP: no RIFF/WEBP header")
    riff = int.from_bytes(data[4:8], "little")
    if riff < 12 or riff > len(data) - 8:
        raise CorruptImage("WebP: RIFF size does not match the file")
    end = 8 + riff
    chunks = _chunks(data, 12, end)
    if not chunks:
        raise CorruptImage("WebP: no chunks")
    tag, start, stop = chunks[0]
    if tag in (b"VP8 ", b"VP8L"):
        return _decode_bitstream(tag, data[start:stop], limits)
    if tag != b"VP8X":
        raise CorruptImage(f"WebP: unexpected first chunk {tag!r}")
    if stop - start < 10:
        raise CorruptImage("WebP: VP8X chunk too short")
    flags = data[start]
    cw = int.from_bytes(data[start + 4 : start + 7], "little") + 1
    chh = int.from_bytes(data[start + 7 : start + 10], "little") + 1
    tags = [c[0] for c in chunks[1:]]
    if flags & ~_KNOWN_FLAGS:
        raise CorruptImage("WebP: reserved VP8X flags set")
    if flags & _ANIMATION_FLAG or b"ANIM" in tags or b"ANMF" in tags:
        raise EvaluationError("animated WebP decoding is not implemented")
    alpha: bytes | None = None
    for tag, start, stop in chunks[1:]:
        if tag == b"ALPH" and alpha is None:
            alpha = data[start:stop]
        elif tag in (b"VP8 ", b"VP8L"):
            payload = data[start:stop]
            # A still image fills the canvas exactly; the bitstream decoder checks the size against
            # the limits before allocating.
            if _frame_size(tag, payload) != (cw, chh):
                raise CorruptImage("WebP: the image size differs from the VP8X canvas size")
            if alpha is not None:
                if tag == b"VP8L":  # VP8L carries its own alpha; an ALPH chunk before it is an error
                    raise CorruptImage("WebP: ALPH chunk before a VP8L image")
                _check_alpha_header(alpha, cw, chh)
            return _decode_bitstream(tag, payload, limits)
    raise CorruptImage("WebP: no image data")
