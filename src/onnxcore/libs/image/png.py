"""PNG decoding for ImageDecoder (private): every bit depth and colour type, the five filters, Adam7.

The Sub and Up filters are vectorised per row (a wrapping cumulative sum and an addition); Average and
Paeth depend on the octet just decoded, so they run octet by octet.
"""

from __future__ import annotations

import struct
import zlib

import numpy as np

from onnxcore.libs.image.common import CorruptImage, check_size, inflate
from onnxcore.limits import Limits

__all__ = ["decode_png", "unpack_samples"]

_CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}
_DEPTHS = {0: (1, 2, 4, 8, 16), 2: (8, 16), 3: (1, 2, 4, 8), 4: (8, 16), 6: (8, 16)}
_ADAM7 = ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2))


def _unfilter_avg(raw: memoryview, prior: bytes, bpp: int) -> bytearray:
    out = bytearray(raw)
    for i in range(len(out)):
        a = out[i - bpp] if i >= bpp else 0
        out[i] = (out[i] + ((a + prior[i]) >> 1)) & 255
    return out


def _unfilter_paeth(raw: memoryview, prior: bytes, bpp: int) -> bytearray:
    out = bytearray(raw)
    for i in range(len(out)):
        b = prior[i]
        if i >= bpp:
            a = out[i - bpp]
            c = prior[i - bpp]
        else:
            a = c = 0
        pa = abs(b - c)
        pb = abs(a - c)
        pc = abs(a + b - c - c)
        pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
        out[i] = (out[i] + pred) & 255
    return out


def _unfilter(buf: bytes, pos: int, rows: int, rowbytes: int, bpp: int) -> np.ndarray:
    """Undo the per-row filters of ``rows`` rows starting at ``buf[pos]``; returns (rows, rowbytes) uint8."""
    out = np.empty((rows, rowbytes), dtype=np.uint8)
    prior = np.zeros(rowbytes, dtype=np.uint8)
    mv = memoryview(buf)
    lanes = rowbytes // bpp
    for r in range(rows):
        ftype = buf[pos]
        raw = mv[pos + 1 : pos + 1 + rowbytes]
        pos += 1 + rowbytes
        if ftype == 0:
            cur = np.frombuffer(raw, dtype=np.uint8)
        elif ftype == 1:
            cur = np.cumsum(np.frombuffer(raw, dtype=np.uint8).reshape(lanes, bpp), axis=0, dtype=np.uint8).ravel()
        elif ftype == 2:
            cur = np.frombuffer(raw, dtype=np.uint8) + prior
        elif ftype == 3:
            cur = np.frombuffer(_unfilter_avg(raw, prior.tobytes(), bpp), dtype=np.uint8)
        elif ftype == 4:
            cur = np.frombuffer(_unfilter_paeth(raw, prior.tobytes(), bpp), dtype=np.uint8)
        else:
            raise CorruptImage(f"PNG filter type {ftype}")
        out[r] = cur
        prior = out[r]
    return out


def unpack_samples(rows: np.ndarray, width: int, channels: int, depth: int, *, big_endian: bool = True) -> np.ndarray:
    """Split packed rows (R, rowbytes) into samples (R, width, channels) of dtype uint8/uint16."""
    r = rows.shape[0]
    if depth == 8:
        return rows[:, : width * channels].reshape(r, width, channels)
    if depth == 16:
        dt = ">u2" if big_endian else "<u2"
        return rows[:, : width * channels * 2].copy().view(dt).astype(np.uint16).reshape(r, width, channels)
    shifts = np.arange(8 - depth, -1, -depth, dtype=np.uint8)
    vals = (rows[:, :, None] >> shifts) & np.uint8((1 << depth) - 1)
    return vals.reshape(r, -1)[:, : width * channels].reshape(r, width, channels)


def _chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    out = []
    pos = 8
    n = len(data)
    while pos + 8 <= n:
        length, ctype = struct.unpack_from(">I4s", data, pos)
        end = pos + 8 + length
        if length > 0x7FFFFFFF or end + 4 > n:
            raise CorruptImage("PNG chunk truncated")
        body = data[pos + 8 : end]
        critical = not ctype[0] & 0x20
        if critical and zlib.crc32(ctype + body) != struct.unpack_from(">I", data, end)[0]:
            raise CorruptImage(f"PNG chunk {ctype!r} CRC mismatch")
        out.append((ctype, body))
        pos = end + 4
        if ctype == b"IEND":
            break
    return out


def decode_png(data: bytes, limits: Limits | None) -> np.ndarray:
    """Decode a PNG stream to uint8 (H, W, 1) or (H, W, 3)."""
    chunks = _chunks(data)
    if not chunks or chunks[0][0] != b"IHDR" or len(chunks[0][1]) != 13:
        raise CorruptImage("PNG without IHDR")
    w, h, depth, ctype, comp, filt, interlace = struct.unpack(">IIBBBBB", chunks[0][1])
    if ctype not in _CHANNELS or depth not in _DEPTHS[ctype] or comp or filt or interlace > 1:
        raise CorruptImage("PNG header fields")
    ch = _CHANNELS[ctype]
    check_size(h, w, ch, limits)
    palette = None
    idat = []
    for t, body in chunks[1:]:
        if t == b"PLTE":
            if len(body) % 3 or len(body) > 768 or not body:
                raise CorruptImage("PNG palette")
            palette = np.zeros((256, 3), dtype=np.uint8)
            palette[: len(body) // 3] = np.frombuffer(body, dtype=np.uint8).reshape(-1, 3)
        elif t == b"IDAT":
            idat.append(body)
    if not idat or (ctype == 3 and palette is None):
        raise CorruptImage("PNG without image data or palette")
    bits_pp = depth * ch
    bpp = max(1, bits_pp // 8)
    if interlace:
        passes = []
        for x0, y0, dx, dy in _ADAM7:
            pw, ph = (w - x0 + dx - 1) // dx, (h - y0 + dy - 1) // dy
            if pw > 0 and ph > 0:
                passes.append((x0, y0, dx, dy, pw, ph))
        total = sum(ph * (1 + (pw * bits_pp + 7) // 8) for *_, pw, ph in passes)
    else:
        total = h * (1 + (w * bits_pp + 7) // 8)
    raw = inflate(b"".join(idat), total)
    if interlace:
        samples = np.zeros((h, w, ch), dtype=np.uint16 if depth == 16 else np.uint8)
        pos = 0
        for x0, y0, dx, dy, pw, ph in passes:
            rb = (pw * bits_pp + 7) // 8
            rows = _unfilter(raw, pos, ph, rb, bpp)
            samples[y0::dy, x0::dx] = unpack_samples(rows, pw, ch, depth)
            pos += ph * (1 + rb)
    else:
        rows = _unfilter(raw, 0, h, (w * bits_pp + 7) // 8, bpp)
        samples = unpack_samples(rows, w, ch, depth)
    if ctype == 3:
        assert palette is not None
        return palette[samples[:, :, 0]]
    if depth == 16:
        samples = (samples >> 8).astype(np.uint8)
    elif depth < 8:
        samples = samples * np.uint8(255 // ((1 << depth) - 1))
    return np.ascontiguousarray(samples[:, :, : 1 if ch <= 2 else 3])
