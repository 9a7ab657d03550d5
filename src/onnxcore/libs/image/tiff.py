"""TIFF decoding for ImageDecoder (private): first image (IFD) of a classic TIFF, in strips or tiles.

Compression: none, LZW, Deflate (Adobe and old), PackBits, JPEG (TIFF 6 technote 2: each strip or tile a
JPEG stream, YCbCr converted by the JPEG decoder); horizontal-differencing predictor;
photometric WhiteIsZero, BlackIsZero, RGB and palette; 1/2/4/8/16-bit samples, chunky or planar.
Old-style JPEG and CCITT compression, CMYK/Lab photometrics, YCbCr outside JPEG and float samples are
refused as not implemented.
"""

from __future__ import annotations

import struct

import numpy as np

from onnxcore.errors import EvaluationError
from onnxcore.libs.image.common import CorruptImage, check_size, inflate
from onnxcore.libs.image.png import unpack_samples
from onnxcore.limits import Limits

__all__ = ["decode_tiff"]

_TYPE_FMT = {1: "B", 2: "B", 3: "H", 4: "I", 6: "b", 7: "B", 8: "h", 9: "i", 16: "Q"}


def _read_ifd(data: bytes, bo: str) -> dict[int, tuple[int, ...]]:
    (off,) = struct.unpack_from(bo + "I", data, 4)
    (n,) = struct.unpack_from(bo + "H", data, off)
    tags: dict[int, tuple[int, ...]] = {}
    for i in range(n):
        tag, typ, count, val = struct.unpack_from(bo + "HHI4s", data, off + 2 + 12 * i)
        fmt = _TYPE_FMT.get(typ)
        if fmt is None:
            continue  # rationals, floats: nothing we read
        size = struct.calcsize(fmt) * count
        if count > len(data):
            raise CorruptImage("TIFF tag count")
        if size <= 4:
            raw = val[:size]
        else:
            (voff,) = struct.unpack(bo + "I", val)
            raw = data[voff : voff + size]
            if len(raw) < size:
                raise CorruptImage("TIFF tag value truncated")
        tags[tag] = struct.unpack(f"{bo}{count}{fmt}", raw)
    return tags


def _packbits(src: bytes, expected: int) -> bytes:
    out = bytearray()
    i, n = 0, len(src)
    while i < n and len(out) < expected:
        c = src[i]
        i += 1
        if c < 128:
            out += src[i : i + c + 1]
            i += c + 1
        elif c > 128:
            if i >= n:
                break
            out += src[i : i + 1] * (257 - c)
            i += 1
    if len(out) < expected:
        raise CorruptImage("PackBits strip truncated")
    return bytes(out[:expected])


def _lzw(src: bytes, expected: int) -> bytes:
    # TIFF LZW: MSB-first codes of 9..12 bits, Clear 256, EOI 257, width grows one code early.
    out = bytearray()
    table: list[bytes] = [bytes((i,)) for i in range(256)] + [b"", b""]
    width = 9
    bitbuf = nbits = 0
    prev: bytes | None = None
    it = iter(src)
    while len(out) < expected:
        while nbits < width:
            b = next(it, None)
            if b is None:
                raise CorruptImage("LZW strip truncated")
            bitbuf = (bitbuf << 8) | b
            nbits += 8
        nbits -= width
        code = (bitbuf >> nbits) & ((1 << width) - 1)
        bitbuf &= (1 << nbits) - 1
        if code == 256:
            del table[258:]
            width = 9
            prev = None
            continue
        if code == 257:
            break
        if prev is None:
            if code > 255:
                raise CorruptImage("LZW code after clear")
            entry = table[code]
        elif code < len(table):
            entry = table[code]
            table.append(prev + entry[:1])
        elif code == len(table):
            entry = prev + prev[:1]
            table.append(entry)
        else:
            raise CorruptImage("LZW code out of range")
        out += entry
        prev = entry
        if len(table) + 1 >= (1 << width) and width < 12:
            width += 1
        if len(table) >= 4096:
            raise CorruptImage("LZW table overflow without clear")
    if len(out) < expected:
        raise CorruptImage("LZW strip truncated")
    return bytes(out[:expected])


def _one(tags: dict[int, tuple[int, ...]], tag: int, default: int | None = None) -> int:
    v = tags.get(tag)
    if not v:
        if default is None:
            raise CorruptImage(f"TIFF tag {tag} missing")
        return default
    return v[0]


def _check_tables(offsets: tuple[int, ...], counts: tuple[int, ...], n: int) -> None:
    # Checked before the segments are listed: a hostile height must not make a list of millions.
    if len(offsets) < n or len(counts) < n:
        raise CorruptImage("TIFF strip/tile tables")


def _jpeg_segment(tags: dict[int, tuple[int, ...]], src: bytes, limits: Limits | None) -> np.ndarray:
    # Lazy on purpose: the JPEG codec is large and only JPEG-compressed TIFFs need it.
    from onnxcore.libs.image.jpeg import decode_jpeg

    tables = bytes(tags.get(347, ()))
    if tables[:2] == b"\xff\xd8" and tables[-2:] == b"\xff\xd9" and src[:2] == b"\xff\xd8":
        src = tables[:-2] + src[2:]  # abbreviated stream: the tables go in front of its frame
    if src[:2] != b"\xff\xd8":
        raise CorruptImage("TIFF JPEG strip without SOI")
    return decode_jpeg(src, limits)


def decode_tiff(data: bytes, limits: Limits | None) -> np.ndarray:
    """Decode the first image of a TIFF stream to uint8 (H, W, 1) or (H, W, 3)."""
    bo = "<" if data[:2] == b"II" else ">"
    tags = _read_ifd(data, bo)
    w, h = _one(tags, 256), _one(tags, 257)
    spp = _one(tags, 277, 1)
    bps_all = tags.get(258, (1,))
    bps = bps_all[0]
    comp = _one(tags, 259, 1)
    photo = _one(tags, 262, 1 if spp < 3 else 2)
    planar = _one(tags, 284, 1)
    predictor = _one(tags, 317, 1)
    if comp not in (1, 5, 7, 8, 32946, 32773):
        raise EvaluationError(f"TIFF compression {comp} decoding is not implemented")
    if comp == 7:
        # Each strip/tile is a JPEG stream (sharing the JPEGTables tag's tables), decoded to RGB or
        # grey by libjpeg's rules, as libtiff does in its RGB colour mode.
        if bps != 8 or planar != 1 or photo not in (0, 1, 2, 6):
            raise EvaluationError("TIFF with JPEG compression of this sample layout: decoding is not implemented")
        photo = 2 if photo == 6 else photo
    if photo not in (0, 1, 2, 3):
        raise EvaluationError(f"TIFF photometric interpretation {photo} decoding is not implemented")
    if _one(tags, 339, 1) not in (1, 2) or _one(tags, 266, 1) != 1:
        raise EvaluationError("TIFF floating-point samples / fill order 2 decoding is not implemented")
    if bps not in (1, 2, 4, 8, 16) or any(b != bps for b in bps_all) or not 1 <= spp <= 16 or planar not in (1, 2):
        raise CorruptImage("TIFF sample layout")
    if predictor not in (1, 2):
        raise EvaluationError(f"TIFF predictor {predictor} decoding is not implemented")
    if (photo == 2 and spp < 3) or (photo == 3 and bps > 8):
        raise CorruptImage("TIFF photometric vs samples")
    check_size(h, w, spp, limits)
    planes = spp if planar == 2 else 1
    lane = 1 if planar == 2 else spp
    # Segments (strips or tiles) as (top, left, rows, columns), each plane's in the same order.
    if 322 in tags or 324 in tags:
        tw, tl = _one(tags, 322), _one(tags, 323)
        if not (0 < tw <= 1 << 16 and 0 < tl <= 1 << 16):
            raise CorruptImage("TIFF tile size")
        offsets, counts = tags.get(324, ()), tags.get(325, ())
        _check_tables(offsets, counts, -(-h // tl) * -(-w // tw) * planes)
        segs = [(ty, tx, tl, tw) for ty in range(0, h, tl) for tx in range(0, w, tw)]
    else:
        rps = min(_one(tags, 278, h) or h, h)
        offsets, counts = tags.get(273, ()), tags.get(279, ())
        _check_tables(offsets, counts, -(-h // rps) * planes)
        segs = [(y, 0, min(rps, h - y), w) for y in range(0, h, rps)]
    if predictor == 2 and bps < 8:
        raise EvaluationError("TIFF predictor with sub-octet samples is not implemented")
    decoded = []
    for k in range(len(segs) * planes):
        _, _, rows, cols = segs[k % len(segs)]
        rowbytes = (cols * lane * bps + 7) // 8
        need = rows * rowbytes
        src = data[offsets[k] : offsets[k] + counts[k]]
        if comp == 7:
            decoded.append(_jpeg_segment(tags, src, limits))
            continue
        if comp == 1:
            raw = src[:need]
            if len(raw) < need:
                raise CorruptImage("TIFF strip truncated")
        elif comp == 32773:
            raw = _packbits(src, need)
        elif comp == 5:
            raw = _lzw(src, need)
        else:
            raw = inflate(src, need)
        samples = unpack_samples(
            np.frombuffer(raw, dtype=np.uint8).reshape(rows, rowbytes), cols, lane, bps, big_endian=bo == ">"
        )
        if predictor == 2:
            samples = np.cumsum(samples, axis=1, dtype=samples.dtype)
        decoded.append(samples)
    plane_imgs = []
    for p in range(planes):
        canvas = np.zeros((h, w, decoded[0].shape[2]), dtype=decoded[0].dtype)
        for (top, left, _, _), samples in zip(segs, decoded[p * len(segs) : (p + 1) * len(segs)]):
            part = samples[: h - top, : w - left]  # edge tiles are padded
            canvas[top : top + part.shape[0], left : left + part.shape[1]] = part
        plane_imgs.append(canvas)
    img = np.concatenate(plane_imgs, axis=2) if planes > 1 else plane_imgs[0]
    if photo == 3:
        cmap = tags.get(320, ())
        n = 1 << bps
        if len(cmap) < 3 * n:
            raise CorruptImage("TIFF colour map")
        pal = (np.array(cmap[: 3 * n], dtype=np.uint16).reshape(3, n).T >> 8).astype(np.uint8)
        return pal[img[:, :, 0]]
    if bps == 16:
        img = (img >> 8).astype(np.uint8)
    elif bps < 8:
        img = img * np.uint8(255 // ((1 << bps) - 1))
    img = img[:, :, :3] if photo == 2 else img[:, :, :1]
    if photo == 0:
        img = 255 - img
    return np.ascontiguousarray(img.astype(np.uint8))
