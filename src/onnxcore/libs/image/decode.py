"""The numpy decoders of ImageDecoder's streams: the format sniffed from the stream's first octets, PNM and BMP here,
the other formats in their own modules (imported only when a stream of theirs arrives).

Pure Python + numpy decoders for PNM (P1-P7), BMP, PNG, TIFF, baseline/extended-sequential and
progressive JPEG (the JPEG path reproduces libjpeg-turbo's integer IDCT, "fancy" chroma upsampling and
YCbCr->RGB tables exactly, as the definition requires for chroma upsampling), JPEG 2000 (T.800: JP2
files and raw codestreams, reversible and irreversible, equal to OpenJPEG's output as Pillow gives it)
and WebP (lossy VP8 per RFC 6386 with libwebp's fancy upsampling and YUV->RGB conversion, lossless VP8L,
the extended format; equal to libwebp's output). Features a decoder does not implement (animated WebP,
JPEG 2000 palettes, arithmetic-coded JPEG, ...) are refused with :class:`onnxcore.EvaluationError`
naming them (nothing is approximated, Clause 4.4).

:func:`decode` gives the image as stored, (H, W, 1) grey or (H, W, 3) RGB, alpha dropped, 16-bit samples reduced
to their high octet; what the operator makes of it (pixel formats, the empty matrix of a stream that cannot be
decoded) is the kernel's (:mod:`onnxcore.kernels.image_decoder`).
"""

from __future__ import annotations

import re
import struct

import numpy as np

from onnxcore.errors import EvaluationError
from onnxcore.libs.image.common import CorruptImage, check_size, scale_to_8bit
from onnxcore.limits import Limits

__all__ = ["decode", "sniff"]


def sniff(data: bytes) -> str | None:
    """The format of a stream from its first octets: ``"pnm"``, ``"bmp"``, ``"png"``, ``"tiff"``, ``"bigtiff"``,
    ``"jpeg"``, ``"jpeg2000"``, ``"webp"``, or None."""
    if data[:2] in (b"P1", b"P2", b"P3", b"P4", b"P5", b"P6", b"P7"):
        return "pnm"
    if data[:2] == b"BM":
        return "bmp"
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return "png"
    if data[:4] in (b"II*\x00", b"MM\x00*"):
        return "tiff"
    if data[:4] in (b"II+\x00", b"MM\x00+"):
        return "bigtiff"
    if data[:2] == b"\xff\xd8":
        return "jpeg"
    if data[:12] == b"\x00\x00\x00\x0cjP  \r\n\x87\n" or data[:4] == b"\xff\x4f\xff\x51":
        return "jpeg2000"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    return None


def decode(data: bytes, limits: Limits | None) -> np.ndarray:
    """Decode ``data`` to uint8 (H, W, 1) or (H, W, 3) with the numpy decoders.

    Raises:
        CorruptImage: the stream cannot be decoded (corrupt, truncated or not an image).
        EvaluationError: a valid stream using a feature that is not implemented.
        LimitError: the image is larger than ``limits`` allow (the active limits when None).
    """
    # Each codec is imported only when an image of its kind is decoded (lazy on purpose: they are large).
    kind = sniff(data)
    if kind == "pnm":
        return _decode_pnm(data, limits)
    if kind == "bmp":
        return _decode_bmp(data, limits)
    if kind == "png":
        from onnxcore.libs.image.png import decode_png

        return decode_png(data, limits)
    if kind == "tiff":
        from onnxcore.libs.image.tiff import decode_tiff

        return decode_tiff(data, limits)
    if kind == "bigtiff":
        raise EvaluationError("BigTIFF decoding is not implemented")
    if kind == "jpeg":
        from onnxcore.libs.image.jpeg import decode_jpeg

        return decode_jpeg(data, limits)
    if kind == "jpeg2000":
        from onnxcore.libs.image.jp2 import decode_jpeg2000

        return decode_jpeg2000(data, limits)
    if kind == "webp":
        from onnxcore.libs.image.webp import decode_webp

        return decode_webp(data, limits)
    raise CorruptImage("unknown image format")


# ---------------------------------------------------------------------------------------------- PNM
_TOKEN = re.compile(rb"(?:\s|#[^\n\r]*)*([^\s#]+)")


def _pnm_tokens(data: bytes, pos: int, n: int) -> tuple[list[int], int]:
    vals: list[int] = []
    for _ in range(n):
        m = _TOKEN.match(data, pos)
        if m is None or not m.group(1).isdigit() or len(m.group(1)) > 12:
            raise CorruptImage("PNM header")
        vals.append(int(m.group(1)))
        pos = m.end()
    return vals, pos


def _decode_pnm(data: bytes, limits: Limits | None) -> np.ndarray:
    kind = data[1] - ord("0")
    if kind == 7:
        return _decode_pam(data, limits)
    pos = 2
    if pos >= len(data) or (not data[pos : pos + 1].isspace() and data[pos : pos + 1] != b"#"):
        raise CorruptImage("PNM magic")
    (w, h), pos = _pnm_tokens(data, pos, 2)
    maxval = 1
    if kind not in (1, 4):
        (maxval,), pos = _pnm_tokens(data, pos, 1)
        if not 0 < maxval < 65536:
            raise CorruptImage("PNM maxval")
    ch = 3 if kind in (3, 6) else 1
    check_size(h, w, ch, limits)
    n = h * w * ch
    if kind in (1, 2, 3):
        body = data[pos:]
        body = re.sub(rb"#[^\n\r]*", b" ", body)
        if kind == 1:
            bits = re.sub(rb"\s+", b"", body)
            if len(bits) < n or bits[:n].strip(b"01"):
                raise CorruptImage("PBM raster")
            v = np.frombuffer(bits[:n], dtype=np.uint8) - ord("0")
            return ((1 - v) * 255).astype(np.uint8).reshape(h, w, 1)
        if len(body) < n:  # each sample takes at least one digit
            raise CorruptImage("PNM raster truncated")
        words = body.split(None, n)[:n]
        if len(words) < n or not all(x.isdigit() and len(x) <= 6 for x in words):
            raise CorruptImage("PNM ASCII raster")
        arr = np.array([int(x) for x in words], dtype=np.int64)
        return scale_to_8bit(arr, maxval).reshape(h, w, ch)
    # Binary rasters: one whitespace octet after the last header token.
    pos += 1
    if kind == 4:
        stride = (w + 7) // 8
        raw = data[pos : pos + stride * h]
        if len(raw) < stride * h:
            raise CorruptImage("PBM raster truncated")
        pbits = np.unpackbits(np.frombuffer(raw, dtype=np.uint8).reshape(h, stride), axis=1)[:, :w]
        return ((1 - pbits) * 255).astype(np.uint8).reshape(h, w, 1)
    return _pnm_binary(data, pos, h, w, ch, maxval)


def _pnm_binary(data: bytes, pos: int, h: int, w: int, ch: int, maxval: int) -> np.ndarray:
    size = 2 if maxval > 255 else 1
    raw = data[pos : pos + h * w * ch * size]
    if len(raw) < h * w * ch * size:
        raise CorruptImage("PNM raster truncated")
    arr = np.frombuffer(raw, dtype=">u2" if size == 2 else np.uint8)
    return scale_to_8bit(arr, maxval).reshape(h, w, ch)


def _decode_pam(data: bytes, limits: Limits | None) -> np.ndarray:
    end = data.find(b"ENDHDR\n")
    if end < 0 or end > 4096:
        raise CorruptImage("PAM header")
    fields: dict[bytes, bytes] = {}
    for line in data[3:end].splitlines():
        parts = line.strip().split(None, 1)
        if parts and not parts[0].startswith(b"#"):
            fields[parts[0]] = parts[1].strip() if len(parts) > 1 else b""
    try:
        w, h, depth, maxval = (int(fields[k]) for k in (b"WIDTH", b"HEIGHT", b"DEPTH", b"MAXVAL"))
    except (KeyError, ValueError):
        raise CorruptImage("PAM header fields") from None
    if depth not in (1, 2, 3, 4) or not 0 < maxval < 65536:
        raise CorruptImage("PAM depth/maxval")
    check_size(h, w, depth, limits)
    img = _pnm_binary(data, end + 7, h, w, depth, maxval)
    return img[:, :, : 1 if depth <= 2 else 3]  # drop alpha


# ---------------------------------------------------------------------------------------------- BMP
def _mask_channel(px: np.ndarray, mask: int) -> np.ndarray:
    if mask == 0:
        return np.zeros(px.shape, dtype=np.uint8)
    shift = (mask & -mask).bit_length() - 1
    top = mask >> shift
    if top & (top + 1):
        raise CorruptImage("BMP bit field mask not contiguous")
    v = (px.astype(np.uint64) & np.uint64(mask)) >> np.uint64(shift)
    if top == 255:
        return v.astype(np.uint8)
    return (v * np.uint64(255) // np.uint64(top)).astype(np.uint8)


def _decode_bmp(data: bytes, limits: Limits | None) -> np.ndarray:
    (offset,) = struct.unpack_from("<I", data, 10)
    (hsize,) = struct.unpack_from("<I", data, 14)
    if hsize == 12:
        w, h, _planes, bpp = struct.unpack_from("<HHHH", data, 18)
        comp, nclr, pal_entry = 0, 0, 3
    elif 40 <= hsize <= 1024:
        w, h, _planes, bpp, comp = struct.unpack_from("<iiHHI", data, 18)
        (nclr,) = struct.unpack_from("<I", data, 46)
        pal_entry = 4
    else:
        raise CorruptImage("BMP header size")
    top_down = h < 0
    h = abs(h)
    check_size(h, w, 3, limits)
    masks: tuple[int, ...] = ()
    pal_off = 14 + hsize
    if comp in (3, 6):
        nm = 3 if comp == 3 else 4
        if hsize == 40:
            masks = struct.unpack_from(f"<{nm}I", data, 54)
            pal_off += 4 * nm
        else:
            masks = struct.unpack_from("<4I", data, 54)
    elif comp in (4, 5):
        # The pixel data is a whole JPEG or PNG stream (only those: no nesting of BMPs).
        payload = bytes(data[offset:])
        # Lazy on purpose, as in decode.
        if comp == 4 and payload[:2] == b"\xff\xd8":
            from onnxcore.libs.image.jpeg import decode_jpeg

            return decode_jpeg(payload, limits)
        if comp == 5 and payload[:8] == b"\x89PNG\r\n\x1a\n":
            from onnxcore.libs.image.png import decode_png

            return decode_png(payload, limits)
        raise CorruptImage("BMP with JPEG/PNG compression but no such stream")
    elif comp not in (0, 1, 2):
        raise EvaluationError(f"BMP compression {comp} decoding is not implemented")
    palette = None
    if bpp <= 8:
        if bpp not in (1, 2, 4, 8):
            raise CorruptImage("BMP bit count")
        n = nclr if 0 < nclr <= 1 << bpp else 1 << bpp
        raw_pal = data[pal_off : pal_off + n * pal_entry]
        if len(raw_pal) < n * pal_entry:
            raise CorruptImage("BMP palette truncated")
        palette = np.zeros((256, 3), dtype=np.uint8)
        palette[:n] = np.frombuffer(raw_pal, dtype=np.uint8).reshape(n, pal_entry)[:, 2::-1]
    if comp in (1, 2):
        if (comp, bpp) not in ((1, 8), (2, 4)) or palette is None:
            raise CorruptImage("BMP RLE with wrong bit count")
        idx = _bmp_rle(data[offset:], w, h, comp == 2)
        img = palette[idx]
        return img if top_down else img[::-1]
    stride = ((w * bpp + 31) // 32) * 4
    raw = data[offset : offset + stride * h]
    if offset < 14 or len(raw) < stride * h:
        raise CorruptImage("BMP pixel data truncated")
    rows = np.frombuffer(raw, dtype=np.uint8).reshape(h, stride)
    if not top_down:
        rows = rows[::-1]
    if palette is not None:
        if bpp == 8:
            idx = rows[:, :w]
        else:
            per = 8 // bpp
            shifts = np.arange(8 - bpp, -1, -bpp, dtype=np.uint8)
            idx = ((rows[:, :, None] >> shifts) & ((1 << bpp) - 1)).reshape(h, stride * per)[:, :w]
        return palette[idx]
    if bpp == 24:
        return rows[:, : 3 * w].reshape(h, w, 3)[:, :, ::-1]
    if bpp == 32 and not masks:
        return rows[:, : 4 * w].reshape(h, w, 4)[:, :, 2::-1]
    if bpp == 16:
        px = rows[:, : 2 * w].copy().view("<u2")
        masks = masks or (0x7C00, 0x03E0, 0x001F)
    elif bpp == 32:
        px = rows[:, : 4 * w].copy().view("<u4")
    else:
        raise CorruptImage("BMP bit count")
    return np.stack([_mask_channel(px, m) for m in masks[:3]], axis=2)


def _bmp_rle(buf: bytes, w: int, h: int, four: bool) -> np.ndarray:
    # RLE8/RLE4 (bottom-up rows): runs, end-of-line, end-of-bitmap, delta and absolute groups.
    # Two octets paint at most 255 pixels; rows may be cut short (end of line, delta) and left 0.
    # Beyond 1 Mpixel, a header claiming over 1024 pixels per octet of stream (8 times what runs
    # can paint) is refused as implausible before its output is allocated (hostile-input guard).
    area = w * h
    if area > 1 << 20 and area > 1024 * len(buf):
        raise CorruptImage("BMP RLE stream far too short for its dimensions")
    out = bytearray(w * h)
    x = y = 0
    i, n = 0, len(buf)
    while i + 1 < n and y < h:
        cnt, val = buf[i], buf[i + 1]
        i += 2
        if cnt:
            if four:
                run = bytes((val >> 4, val & 15)) * ((cnt + 1) // 2)
                run = run[:cnt]
            else:
                run = bytes((val,)) * cnt
            k = min(cnt, w - x)
            if k > 0:
                out[y * w + x : y * w + x + k] = run[:k]
            x += cnt
        elif val == 0:
            x, y = 0, y + 1
        elif val == 1:
            break
        elif val == 2:
            if i + 1 >= n:
                break
            x, y = x + buf[i], y + buf[i + 1]
            i += 2
        else:
            nbytes = (val + 1) // 2 if four else val
            chunk = buf[i : i + nbytes]
            if len(chunk) < nbytes:
                raise CorruptImage("BMP RLE truncated")
            if four:
                run = bytes(b for v in chunk for b in (v >> 4, v & 15))[:val]
            else:
                run = bytes(chunk)
            k = min(val, w - x)
            if k > 0 and y < h:
                out[y * w + x : y * w + x + k] = run[:k]
            x += val
            i += nbytes + (nbytes & 1)
    return np.frombuffer(bytes(out), dtype=np.uint8).reshape(h, w)
