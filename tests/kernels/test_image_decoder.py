"""ImageDecoder-20 with the numpy decoders (``ONNXCORE_IMAGE=numpy``, set for every test here): the ONNX 1-3
vectors, hand-encoded PNM/BMP/PNG/TIFF images compared bit-exactly, JPEG against libjpeg-turbo (fixed streams with
the sha256 of djpeg's output, and cjpeg/djpeg directly when installed), pixel formats, limits, unsupported formats
and a mutation fuzz test. The Pillow path is held to the same pixels in test_image_backends.py."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import numpy as np
import pytest
from runtime.node_harness import assert_close, run_single_node_case

from onnxcore.errors import EvaluationError, LimitError, OnnxCoreError
from onnxcore.kernels.image_decoder import decode_image
from onnxcore.kernels.image_decoder import decode_image as _decode_image
from onnxcore.limits import DEFAULT_LIMITS


@pytest.fixture(autouse=True)
def _numpy_decoders(monkeypatch: pytest.MonkeyPatch) -> None:
    # These tests are of the numpy decoders: with the image extra installed, the kernel would use Pillow.
    monkeypatch.setenv("ONNXCORE_IMAGE", "numpy")


SUPPORTED = (
    "bmp_rgb",
    "jpeg2k_rgb",
    "jpeg_bgr",
    "jpeg_grayscale",
    "jpeg_rgb",
    "png_rgb",
    "pnm_rgb",
    "tiff_rgb",
    "webp_rgb",
)


def _rgb_image(h: int, w: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([x * 255 // max(w - 1, 1), y * 255 // max(h - 1, 1), ((x + y) * 9) % 256], axis=2)
    return np.clip(base + rng.integers(-30, 30, (h, w, 3)), 0, 255).astype(np.uint8)


def _luma(rgb: np.ndarray) -> np.ndarray:
    # The reference implementation's grey conversion (Pillow convert("L")): ITU-R 601-2 in 16-bit fixed point.
    r, g, b = (rgb[..., i].astype(np.int64) for i in range(3))
    return ((r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16).astype(np.uint8)[..., None]


# ----------------------------------------------------------------------------------- ONNX 1-3 vectors
@pytest.mark.parametrize("name", SUPPORTED)
def test_image_decoder_node_vectors(node_cases: list[Path], name: str) -> None:
    case = next(c for c in node_cases if c.name == f"test_image_decoder_decode_{name}")
    out = run_single_node_case(case)
    assert out is not None
    actual, expected = out
    assert actual[0].dtype == np.uint8 and actual[0].shape == expected[0].shape
    assert_close(actual, expected)
    assert np.array_equal(actual[0], expected[0])


def test_grayscale_vector_is_luma_of_rgb_vector(node_cases: list[Path]) -> None:
    # The Grayscale vector is the 601 luma of the RGB decode (what the definition's reference does).
    rgb = run_single_node_case(next(c for c in node_cases if c.name == "test_image_decoder_decode_jpeg_rgb"))
    gray = run_single_node_case(next(c for c in node_cases if c.name == "test_image_decoder_decode_jpeg_grayscale"))
    assert rgb is not None and gray is not None
    assert np.array_equal(_luma(rgb[1][0]), gray[1][0])


# ------------------------------------------------------------------------------------------------ PNM
def _pnm(kind: int, img: np.ndarray, maxval: int = 255, comment: bool = False) -> bytes:
    h, w = img.shape[:2]
    head = b"P%d\n" % kind + (b"# a comment\n" if comment else b"") + b"%d %d\n" % (w, h)
    if kind in (1, 4):
        bits = (img[..., 0] == 0).astype(np.uint8)  # 1 is black
        if kind == 1:
            return head + b"\n".join(b" ".join(b"%d" % v for v in row) for row in bits) + b"\n"
        return head + np.packbits(bits, axis=1).tobytes()
    head += b"%d\n" % maxval
    if kind in (2, 3):
        return head + b"\n".join(b" ".join(b"%d" % v for v in row.ravel()) for row in img) + b"\n"
    return head + img.astype(">u2" if maxval > 255 else np.uint8).tobytes()


@pytest.mark.parametrize("maxval", [255, 1000, 65535, 7])
@pytest.mark.parametrize("kind", [2, 3, 5, 6])
def test_pnm_gray_and_colour(kind: int, maxval: int) -> None:
    ch = 3 if kind in (3, 6) else 1
    rng = np.random.default_rng(kind * maxval)
    samples = rng.integers(0, maxval + 1, (5, 7, ch))
    data = _pnm(kind, samples, maxval, comment=True)
    # Netpbm rescaling to 8 bits: round(v * 255 / maxval).
    expected = np.floor(samples * 255 / maxval + 0.5).astype(np.uint8)
    out = decode_image(data, "RGB" if ch == 3 else "Grayscale")
    assert np.array_equal(out, expected)


@pytest.mark.parametrize("kind", [1, 4])
def test_pbm(kind: int) -> None:
    bits = np.random.default_rng(kind).integers(0, 2, (6, 11, 1)) * 255  # 11 columns: padded rows in P4
    out = decode_image(_pnm(kind, bits.astype(np.uint8)), "Grayscale")
    assert np.array_equal(out, bits.astype(np.uint8))
    assert np.array_equal(decode_image(_pnm(kind, bits.astype(np.uint8)), "RGB"), np.repeat(out, 3, axis=2))


def test_pam() -> None:
    img = np.random.default_rng(3).integers(0, 256, (4, 5, 4)).astype(np.uint8)
    data = b"P7\nWIDTH 5\nHEIGHT 4\nDEPTH 4\nMAXVAL 255\nTUPLTYPE RGB_ALPHA\nENDHDR\n" + img.tobytes()
    assert np.array_equal(decode_image(data), img[:, :, :3])  # alpha dropped


# ------------------------------------------------------------------------------------------------ BMP
def _bmp(
    img: np.ndarray, bpp: int, *, top_down: bool = False, palette: np.ndarray | None = None, rle: bool = False
) -> bytes:
    h, w = img.shape[:2]
    if bpp <= 8:
        assert palette is not None
        idx = img[..., 0]
        if rle:
            # Odd rows as runs (count, index), even rows in absolute mode (padded to 16 bits).
            rows = []
            for y, row in enumerate(idx[::-1]):
                if y % 2 and w >= 3:
                    line = bytes((0, w)) + bytes(row) + (b"\x00" if w & 1 else b"")
                else:
                    line, i = b"", 0
                    while i < w:
                        j = i
                        while j < w and j - i < 255 and row[j] == row[i]:
                            j += 1
                        line += bytes((j - i, row[i]))
                        i = j
                rows.append(line + b"\x00\x00")
            pix = b"".join(rows) + b"\x00\x01"
        else:
            per = 8 // bpp
            stride = ((w * bpp + 31) // 32) * 4
            packed = np.zeros((h, stride), dtype=np.uint8)
            for x in range(w):
                packed[:, x // per] |= (idx[:, x] << (8 - bpp * (x % per + 1))).astype(np.uint8)
            pix = (packed if top_down else packed[::-1]).tobytes()
        pal = np.concatenate([palette[:, ::-1], np.zeros((len(palette), 1), np.uint8)], axis=1).tobytes()
    else:
        if bpp == 24:
            px = img[..., ::-1]
        elif bpp == 32:
            px = np.concatenate([img[..., ::-1], np.full((h, w, 1), 77, np.uint8)], axis=2)
        else:  # 16-bit 5-5-5
            v = (
                ((img[..., 0].astype(np.uint16) >> 3) << 10)
                | ((img[..., 1] >> 3).astype(np.uint16) << 5)
                | (img[..., 2] >> 3)
            )
            px = v.astype("<u2").view(np.uint8).reshape(h, w, 2)
        rows = px.reshape(h, -1)
        stride = ((rows.shape[1] + 3) // 4) * 4
        rows = np.pad(rows, ((0, 0), (0, stride - rows.shape[1])))
        pix = (rows if top_down else rows[::-1]).tobytes()
        pal = b""
    comp = 1 if rle else 0
    info = struct.pack(
        "<IiiHHIIiiII",
        40,
        w,
        -h if top_down else h,
        1,
        bpp,
        comp,
        len(pix),
        2835,
        2835,
        len(palette) if palette is not None else 0,
        0,
    )
    off = 14 + len(info) + len(pal)
    return b"BM" + struct.pack("<IHHI", off + len(pix), 0, 0, off) + info + pal + pix


@pytest.mark.parametrize("bpp", [24, 32, 16])
@pytest.mark.parametrize("top_down", [False, True])
def test_bmp_direct_colour(bpp: int, top_down: bool) -> None:
    img = _rgb_image(7, 5, bpp)
    out = decode_image(_bmp(img, bpp, top_down=top_down))
    expected = img if bpp != 16 else ((img >> 3).astype(np.uint16) * 255 // 31).astype(np.uint8)
    assert np.array_equal(out, expected)


@pytest.mark.parametrize(("bpp", "rle"), [(8, False), (4, False), (1, False), (8, True)])
def test_bmp_palette(bpp: int, rle: bool) -> None:
    rng = np.random.default_rng(bpp)
    n = 1 << bpp if bpp < 8 else 200
    palette = rng.integers(0, 256, (n, 3)).astype(np.uint8)
    idx = rng.integers(0, n, (6, 19, 1)).astype(np.uint8)
    idx[2, 3:12] = 5 % n  # a run for RLE
    out = decode_image(_bmp(idx, bpp, palette=palette, rle=rle))
    assert np.array_equal(out, palette[idx[..., 0]])
    assert np.array_equal(
        decode_image(_bmp(idx, bpp, palette=palette, rle=rle), "BGR"), palette[idx[..., 0]][..., ::-1]
    )


# ------------------------------------------------------------------------------------------------ PNG
def _chunk(t: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + t + body + struct.pack(">I", zlib.crc32(t + body))


def _pack_rows(samples: np.ndarray, depth: int) -> list[bytes]:
    h = samples.shape[0]
    flat = samples.reshape(h, -1)
    if depth == 16:
        return [r.astype(">u2").tobytes() for r in flat]
    if depth == 8:
        return [r.astype(np.uint8).tobytes() for r in flat]
    per = 8 // depth
    out = []
    for r in flat:
        r = np.concatenate([r, np.zeros((-len(r)) % per, dtype=r.dtype)]).reshape(-1, per).astype(np.uint8)
        shifts = np.arange(8 - depth, -1, -depth)
        out.append((r << shifts).sum(axis=1).astype(np.uint8).tobytes())
    return out


def _filter(rows: list[bytes], bpp: int, rng: np.random.Generator) -> bytes:
    out = b""
    prior = bytes(len(rows[0])) if rows else b""
    for row in rows:
        f = int(rng.integers(0, 5))
        enc = bytearray()
        for i, x in enumerate(row):
            a = row[i - bpp] if i >= bpp else 0
            b = prior[i]
            c = prior[i - bpp] if i >= bpp else 0
            if f == 0:
                pred = 0
            elif f == 1:
                pred = a
            elif f == 2:
                pred = b
            elif f == 3:
                pred = (a + b) // 2
            else:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
            enc.append((x - pred) % 256)
        out += bytes((f,)) + bytes(enc)
        prior = row
    return out


_ADAM7 = ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2))


def _png(
    samples: np.ndarray,
    ctype: int,
    depth: int,
    *,
    interlace: bool = False,
    palette: np.ndarray | None = None,
    seed: int = 0,
) -> bytes:
    h, w, ch = samples.shape
    rng = np.random.default_rng(seed)
    bpp = max(1, ch * depth // 8)
    if interlace:
        raw = b""
        for x0, y0, dx, dy in _ADAM7:
            sub = samples[y0::dy, x0::dx]
            if sub.size:
                raw += _filter(_pack_rows(sub, depth), bpp, rng)
    else:
        raw = _filter(_pack_rows(samples, depth), bpp, rng)
    z = zlib.compress(raw)
    out = b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, ctype, 0, 0, int(interlace)))
    out += _chunk(b"tEXt", b"Comment\x00made by the test")
    if palette is not None:
        out += _chunk(b"PLTE", palette.tobytes())
    half = len(z) // 2  # two IDAT chunks
    return out + _chunk(b"IDAT", z[:half]) + _chunk(b"IDAT", z[half:]) + _chunk(b"IEND", b"")


_PNG_KINDS = [
    (0, 1),
    (0, 2),
    (0, 4),
    (0, 8),
    (0, 16),
    (2, 8),
    (2, 16),
    (3, 1),
    (3, 2),
    (3, 4),
    (3, 8),
    (4, 8),
    (4, 16),
    (6, 8),
    (6, 16),
]


@pytest.mark.parametrize("interlace", [False, True])
@pytest.mark.parametrize(("ctype", "depth"), _PNG_KINDS)
def test_png(ctype: int, depth: int, interlace: bool) -> None:
    ch = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[ctype]
    rng = np.random.default_rng(ctype * 100 + depth)
    h, w = 11, 13
    samples = rng.integers(0, 1 << depth, (h, w, ch))
    palette = None
    if ctype == 3:
        palette = rng.integers(0, 256, (1 << depth, 3)).astype(np.uint8)
        expected = palette[samples[..., 0]]
    elif depth == 16:
        expected = (samples >> 8).astype(np.uint8)  # high octet
    else:
        expected = (samples * (255 // ((1 << depth) - 1))).astype(np.uint8)
    if ctype != 3:
        expected = expected[..., : 1 if ch <= 2 else 3]  # alpha dropped
    data = _png(samples, ctype, depth, interlace=interlace, palette=palette, seed=depth)
    out = decode_image(data, "RGB" if expected.shape[2] == 3 else "Grayscale")
    assert out.shape == expected.shape
    assert np.array_equal(out, expected)


def test_png_bad_crc_and_truncation_give_empty() -> None:
    data = bytearray(_png(_rgb_image(4, 4), 2, 8))
    assert decode_image(bytes(data[:-30])).shape == (0, 0, 3)
    data[18] ^= 1  # the width in IHDR: its CRC no longer matches
    assert decode_image(bytes(data)).shape == (0, 0, 3)


# ----------------------------------------------------------------------------------------------- TIFF
def _packbits(data: bytes) -> bytes:
    out, i = b"", 0
    while i < len(data):
        j = i
        while j < len(data) and j - i < 128 and data[j] == data[i]:
            j += 1
        if j - i >= 2:
            out += bytes((257 - (j - i), data[i]))
            i = j
        else:
            n = min(128, len(data) - i)
            out += bytes((n - 1,)) + data[i : i + n]
            i += n
    return out


def _lzw(data: bytes) -> bytes:
    # TIFF LZW encoder (MSB-first, Clear first, early change, Clear when the table fills).
    bits: list[tuple[int, int]] = []
    width = 9

    def reset() -> dict[bytes, int]:
        return {bytes((i,)): i for i in range(256)}

    table, nxt = reset(), 258
    bits.append((256, width))
    cur = b""
    for byte in data:
        cand = cur + bytes((byte,))
        if cand in table:
            cur = cand
            continue
        bits.append((table[cur], width))
        table[cand] = nxt
        nxt += 1
        if nxt > (1 << width) - 1 and width < 12:
            width += 1
        if nxt >= 4093:
            bits.append((256, width))
            table, nxt, width = reset(), 258, 9
        cur = bytes((byte,))
    if cur:
        bits.append((table[cur], width))
        nxt += 1
        if nxt > (1 << width) - 1 and width < 12:
            width += 1
    bits.append((257, width))
    acc = n = 0
    out = bytearray()
    for code, wd in bits:
        acc = (acc << wd) | code
        n += wd
        while n >= 8:
            n -= 8
            out.append((acc >> n) & 255)
    if n:
        out.append((acc << (8 - n)) & 255)
    return bytes(out)


def _tiff(
    samples: np.ndarray,
    bps: int,
    photometric: int,
    *,
    bo: str = "<",
    compression: int = 1,
    predictor: int = 1,
    planar: int = 1,
    rps: int = 3,
    colormap: np.ndarray | None = None,
    tile: tuple[int, int] | None = None,
) -> bytes:
    h, w, spp = samples.shape
    vals = samples.astype(np.int64)
    planes = [vals[..., i : i + 1] for i in range(spp)] if planar == 2 else [vals]
    if tile:
        tw, tl = tile
        segs = [(y, x, tl, tw) for y in range(0, h, tl) for x in range(0, w, tw)]
    else:
        segs = [(y, 0, rps, w) for y in range(0, h, rps)]
    strips = []
    for plane in planes:
        for y, x, rows, cols in segs:
            part = plane[y : y + rows, x : x + cols]
            if tile:  # tiles are always whole, padded at the right and bottom edges
                part = np.pad(part, ((0, rows - part.shape[0]), (0, cols - part.shape[1]), (0, 0)))
            if predictor == 2:
                part = np.concatenate([part[:, :1], np.diff(part, axis=1)], axis=1) % (1 << bps)
            if bps == 16:
                raw = part.astype(bo + "u2").tobytes()
            else:
                raw = b"".join(_pack_rows(part, bps))
            raw = {1: lambda b: b, 5: _lzw, 8: zlib.compress, 32773: _packbits}[compression](raw)
            strips.append(raw)
    body = b"".join(strips)
    offsets = list(np.cumsum([0] + [len(s) for s in strips[:-1]]) + 8)
    tags = [
        (256, 4, [w]),
        (257, 4, [h]),
        (258, 3, [bps] * spp),
        (259, 3, [compression]),
        (262, 3, [photometric]),
        (277, 3, [spp]),
        (284, 3, [planar]),
        (317, 3, [predictor]),
    ]
    if tile:
        tags += [(322, 3, [tile[0]]), (323, 3, [tile[1]]), (324, 4, offsets), (325, 4, [len(s) for s in strips])]
    else:
        tags += [(273, 4, offsets), (278, 4, [rps]), (279, 4, [len(s) for s in strips])]
    if colormap is not None:
        tags.append((320, 3, list(colormap.T.ravel())))
    if spp == 4:
        tags.append((338, 3, [2]))
    ifd_off = 8 + len(body) + (len(body) & 1)
    extra = b""
    entries = b""
    extra_off = ifd_off + 2 + 12 * len(tags) + 4
    for tag, typ, values in sorted(tags):
        fmt = "H" if typ == 3 else "I"
        packed = struct.pack(f"{bo}{len(values)}{fmt}", *[int(v) for v in values])
        if len(packed) <= 4:
            field = packed.ljust(4, b"\x00")
        else:
            field = struct.pack(bo + "I", extra_off + len(extra))
            extra += packed
        entries += struct.pack(f"{bo}HHI", tag, typ, len(values)) + field
    head = (b"II*\x00" if bo == "<" else b"MM\x00*") + struct.pack(bo + "I", ifd_off)
    ifd = struct.pack(bo + "H", len(tags)) + entries + b"\x00\x00\x00\x00"
    return head + body + b"\x00" * (len(body) & 1) + ifd + extra


@pytest.mark.parametrize("compression", [1, 5, 8, 32773])
@pytest.mark.parametrize(("bo", "predictor", "planar"), [("<", 1, 1), (">", 2, 1), ("<", 1, 2), (">", 2, 2)])
def test_tiff_rgb(compression: int, bo: str, predictor: int, planar: int) -> None:
    img = _rgb_image(10, 7, compression)
    img[4:8] = img[4]  # repeated rows give LZW/PackBits something to compress
    data = _tiff(img, 8, 2, bo=bo, compression=compression, predictor=predictor, planar=planar)
    assert np.array_equal(decode_image(data), img)
    assert np.array_equal(decode_image(data, "BGR"), img[..., ::-1])


@pytest.mark.parametrize(("bps", "photometric"), [(8, 1), (16, 1), (4, 1), (1, 0), (1, 1), (8, 0), (16, 2)])
def test_tiff_gray_and_16bit(bps: int, photometric: int) -> None:
    spp = 3 if photometric == 2 else 1
    rng = np.random.default_rng(bps + photometric)
    samples = rng.integers(0, 1 << bps, (9, 13, spp))
    data = _tiff(samples, bps, photometric, bo=">" if bps == 16 and spp == 1 else "<", compression=8)
    v = (samples >> 8) if bps == 16 else samples * (255 // ((1 << bps) - 1))
    expected = (255 - v if photometric == 0 else v).astype(np.uint8)
    assert np.array_equal(decode_image(data, "RGB" if spp == 3 else "Grayscale"), expected)


@pytest.mark.parametrize(("planar", "predictor", "compression"), [(1, 1, 1), (1, 2, 8), (2, 2, 5), (2, 1, 32773)])
def test_tiff_tiles(planar: int, predictor: int, compression: int) -> None:
    img = _rgb_image(21, 35, planar + predictor)  # 3 x 2 tiles of 16 x 16, padded at the edges
    data = _tiff(img, 8, 2, planar=planar, predictor=predictor, compression=compression, tile=(16, 16))
    assert np.array_equal(decode_image(data), img)


_TIFFCP = shutil.which("tiffcp")


@pytest.mark.skipif(not _TIFFCP, reason="libtiff's tiffcp not installed")
@pytest.mark.parametrize(
    "options",
    [
        ["-c", "lzw"],
        ["-c", "lzw:2"],
        ["-c", "zip:2"],
        ["-c", "packbits", "-p", "separate"],
        ["-t", "-c", "zip"],
        ["-B"],
    ],
)
def test_tiff_written_by_libtiff(tmp_path: Path, options: list[str]) -> None:
    # libtiff re-encodes our uncompressed file (LZW/Deflate with predictor, planar, tiles, big-endian).
    img = _rgb_image(37, 45, 5)
    src, dst = tmp_path / "in.tif", tmp_path / "out.tif"
    src.write_bytes(_tiff(img, 8, 2))
    assert _TIFFCP
    subprocess.run([_TIFFCP, *options, str(src), str(dst)], check=True, capture_output=True)
    assert np.array_equal(decode_image(dst.read_bytes()), img)


@pytest.mark.skipif(not (_TIFFCP and shutil.which("tiff2rgba")), reason="libtiff's tiffcp/tiff2rgba not installed")
@pytest.mark.parametrize(
    ("options", "gray"),
    [
        (["-c", "jpeg", "-r", "16"], False),
        (["-c", "jpeg:r", "-r", "8"], False),
        (["-c", "jpeg", "-t"], False),
        (["-c", "jpeg", "-r", "8"], True),
    ],
)
def test_tiff_jpeg_against_libtiff(tmp_path: Path, options: list[str], gray: bool) -> None:
    # JPEG-in-TIFF (YCbCr 4:2:0 strips, RGB strips, tiles, grey) against libtiff's own RGBA decode.
    img = _rgb_image(37, 45, 5)
    src, dst, ref = tmp_path / "in.tif", tmp_path / "out.tif", tmp_path / "ref.tif"
    src.write_bytes(_tiff(img[..., :1], 8, 1) if gray else _tiff(img, 8, 2))
    assert _TIFFCP
    subprocess.run([_TIFFCP, *options, str(src), str(dst)], check=True, capture_output=True)
    subprocess.run(["tiff2rgba", "-c", "none", str(dst), str(ref)], check=True, capture_output=True)
    expected = decode_image(ref.read_bytes())  # uncompressed RGBA, read by the plain path
    pf = "Grayscale" if gray else "RGB"
    out = decode_image(dst.read_bytes(), pf)
    assert np.array_equal(out, expected[..., :1] if gray else expected)


def test_tiff_palette_and_alpha() -> None:
    rng = np.random.default_rng(9)
    cmap = rng.integers(0, 65536, (256, 3))
    idx = rng.integers(0, 256, (5, 6, 1))
    data = _tiff(idx, 8, 3, colormap=cmap, compression=32773)
    assert np.array_equal(decode_image(data), (cmap[idx[..., 0]] >> 8).astype(np.uint8))
    rgba = rng.integers(0, 256, (4, 4, 4)).astype(np.uint8)
    assert np.array_equal(decode_image(_tiff(rgba, 8, 2, compression=5)), rgba[..., :3])


@pytest.mark.parametrize("compression", [2, 6, 34712])  # CCITT RLE, old-style JPEG, JPEG 2000
def test_tiff_refusals(compression: int) -> None:
    data = bytearray(_tiff(_rgb_image(4, 4), 8, 2))
    i = data.find(struct.pack("<HHI", 259, 3, 1))
    data[i + 8 : i + 10] = struct.pack("<H", compression)
    with pytest.raises(EvaluationError, match=f"TIFF compression {compression} decoding is not implemented"):
        decode_image(bytes(data))
    # A JPEG-compressed strip that is no JPEG stream: empty.
    data[i + 8 : i + 10] = struct.pack("<H", 7)
    assert decode_image(bytes(data)).shape == (0, 0, 3)


# ----------------------------------------------------------------------------------------------- JPEG
# Streams written by libjpeg-turbo 2.1.5's cjpeg (options in the key) and the sha256 of the pixels its
# djpeg decodes them to (default settings: islow IDCT, fancy upsampling), both recorded once.
JPEG_FIXTURES: dict[str, tuple[tuple[int, ...], str, str]] = {
    "q75_422_restart": (
        (19, 21, 3),
        "1294fdf25c155718124603ad43df6b36c2ef6ab5f8a7822961aad4d1d4cc4ce7",
        "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAgGBgcGBQgHBwcJCQgKDBQNDAsLDBkSEw8UHRofHh0aHBwgJC4nICIsIxwcKDcpLDAx"
        "NDQ0Hyc5PTgyPC4zNDL/2wBDAQkJCQwLDBgNDRgyIRwhMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIy"
        "MjIyMjIyMjL/wAARCAATABUDASEAAhEBAxEB/8QAHwAAAQUBAQEBAQEAAAAAAAAAAAECAwQFBgcICQoL/8QAtRAAAgEDAwIEAwUF"
        "BAQAAAF9AQIDAAQRBRIhMUEGE1FhByJxFDKBkaEII0KxwRVS0fAkM2JyggkKFhcYGRolJicoKSo0NTY3ODk6Q0RFRkdISUpTVFVW"
        "V1hZWmNkZWZnaGlqc3R1dnd4eXqDhIWGh4iJipKTlJWWl5iZmqKjpKWmp6ipqrKztLW2t7i5usLDxMXGx8jJytLT1NXW19jZ2uHi"
        "4+Tl5ufo6erx8vP09fb3+Pn6/8QAHwEAAwEBAQEBAQEBAQAAAAAAAAECAwQFBgcICQoL/8QAtREAAgECBAQDBAcFBAQAAQJ3AAEC"
        "AxEEBSExBhJBUQdhcRMiMoEIFEKRobHBCSMzUvAVYnLRChYkNOEl8RcYGRomJygpKjU2Nzg5OkNERUZHSElKU1RVVldYWVpjZGVm"
        "Z2hpanN0dXZ3eHl6goOEhYaHiImKkpOUlZaXmJmaoqOkpaanqKmqsrO0tba3uLm6wsPExcbHyMnK0tPU1dbX2Nna4uPk5ebn6Onq"
        "8vP09fb3+Pn6/90ABAAC/9oADAMBAAIRAxEAPwDy6y0MmVcKw475/wAPWuqsNHbdhIiVAAIxn9fxruwyT3PQyjGrTWx0VtpDRxbS"
        "vTuWA5x07/5NFe3FQtq2j7qnjHKKa1/r1P/QjsNEAYfuyQBx3wOev+e1dJaaJtEblQiKeCMg4x/n/wDXXXRqRpxdSbskr/I8HKcZ"
        "sjThsWcsX3IBgAbwv49R2xRX59i85xtevKrTqSjFvRJ2sun/AAfM/RKVdci92/yP/9Hs7aJE2Mq4JY5/I/4Vpk7ZdqgBcBsY75/+"
        "tXmZ3OSy1pPe1/vPhMgbdZL+tmaXlIoAVQBjtxRXyFKlCUE2j9HhVnyrU//Z",
    ),
    "q100_444": (
        (9, 11, 3),
        "175f198ba88ab5c3b71e19cb765d946b26109a80ee016b6e5039c8342dd6ceb7",
        "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEB"
        "AQEBAQEBAQEBAQEBAQH/2wBDAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEB"
        "AQEBAQEBAQH/wAARCAAJAAsDAREAAhEBAxEB/8QAHwAAAQUBAQEBAQEAAAAAAAAAAAECAwQFBgcICQoL/8QAtRAAAgEDAwIEAwUF"
        "BAQAAAF9AQIDAAQRBRIhMUEGE1FhByJxFDKBkaEII0KxwRVS0fAkM2JyggkKFhcYGRolJicoKSo0NTY3ODk6Q0RFRkdISUpTVFVW"
        "V1hZWmNkZWZnaGlqc3R1dnd4eXqDhIWGh4iJipKTlJWWl5iZmqKjpKWmp6ipqrKztLW2t7i5usLDxMXGx8jJytLT1NXW19jZ2uHi"
        "4+Tl5ufo6erx8vP09fb3+Pn6/8QAHwEAAwEBAQEBAQEBAQAAAAAAAAECAwQFBgcICQoL/8QAtREAAgECBAQDBAcFBAQAAQJ3AAEC"
        "AxEEBSExBhJBUQdhcRMiMoEIFEKRobHBCSMzUvAVYnLRChYkNOEl8RcYGRomJygpKjU2Nzg5OkNERUZHSElKU1RVVldYWVpjZGVm"
        "Z2hpanN0dXZ3eHl6goOEhYaHiImKkpOUlZaXmJmaoqOkpaanqKmqsrO0tba3uLm6wsPExcbHyMnK0tPU1dbX2Nna4uPk5ebn6Onq"
        "8vP09fb3+Pn6/9oADAMBAAIRAxEAPwD4D/ZQ/wCCUV8j+GFn8P7rp7e5XTkM2pXF0uvwHT3i0+8try2uruGwTQ9SW2v2L3OnR2kM"
        "Dag8Z0021r/NWO8YcFgq06uMr0VUcMswVJVMBTxOLxNFQWOwmdZXjMZLC0KOKqZxgm8PhaeHeF9pHG0o4qKjhsPT+M+hR+0Lw880"
        "XLxDhZUcszF0cDVx9SeAp4fEYvA0qEoUMTlOZQpV8LzZHVngamZQwf1bD4yVKeKjRzjH5dH9vNI/4I9yazp8OpWGlWkVrcvc7F1P"
        "X4tCvHkhupre4mbS59Bu7q2guLiKW4s2vp31C5spbe61AR3s9xGnJR8Zs7xFDD18JS4UWGq4bD1MP7fhDAY2rKjKhTdObxWN5sTW"
        "VSNpwlUlUShKMadSpSUKkv8Ao24F/aCf2VwlkeAln2f0ZYfCS5qNPIXmEaLq161Z0ZY3Na1PMMRUouo6VapiaVGXtozUKNGkoUof"
        "fX7GX/Iq6F/2Gr7/ANLdZr+SMB/yWWcf9fcs/wDULNz/AM+X6HH+6ZX/ANjPiX/1nax+y3gL/kU9L/3tR/8ATpe1+Vcbf8lDV/7F"
        "fDn/AKzmUn/Rvwr/AMk7lH/YHT/OR//Z",
    ),
    "progressive_420": (
        (17, 18, 3),
        "725d931baa4b12033b47aeb59a62f3f3c60f1e8730a598bfbaae381305434123",
        "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAgGBgcGBQgHBwcJCQgKDBQNDAsLDBkSEw8UHRofHh0aHBwgJC4nICIsIxwcKDcpLDAx"
        "NDQ0Hyc5PTgyPC4zNDL/2wBDAQkJCQwLDBgNDRgyIRwhMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIy"
        "MjIyMjIyMjL/wgARCAARABIDASIAAhEBAxEB/8QAFwABAQEBAAAAAAAAAAAAAAAAAAUDBv/EABgBAAMBAQAAAAAAAAAAAAAAAAIF"
        "BgME/9oADAMBAAIQAxAAAAHm69GqYyV1m8xonPGaiVe//8QAGxABAQABBQAAAAAAAAAAAAAAAwACERIUMkH/2gAIAQEAAQUCMIwu"
        "PGEYaWzGPr5f/8QAGBEAAgMAAAAAAAAAAAAAAAAAAAQBEBT/2gAIAQMBAT8BSeNMiNf/xAAfEQAAAwkAAAAAAAAAAAAAAAAAAgQB"
        "EBEVITRScaH/2gAIAQIBAT8BIaFRNE2XGhVbG07/xAAYEAACAwAAAAAAAAAAAAAAAAAAEBEgMf/aAAgBAQAGPwIxzX//xAAdEAAC"
        "AgIDAQAAAAAAAAAAAAAAARExECFhweHw/9oACAEBAAE/IWzVjOCVi1NpAmvD6jH2x//aAAwDAQACAAMAAAAQNMiD/8QAGREBAAID"
        "AAAAAAAAAAAAAAAAAQAQESFB/9oACAEDAQE/EDU3Mvb/AP/EABwRAAIBBQEAAAAAAAAAAAAAAAABESExcaHB8P/aAAgBAgEBPxBC"
        "SsQ0fhg3HBn/xAAfEAEBAAEEAgMAAAAAAAAAAAABEQAhMUGxocFhgZH/2gAIAQEAAT8QOBKCAGpymrefFxQgIEczb0vGUCUJtDTx"
        "hlICSBU/J3gaiF301M+rJjRgJ829Z6u8ez3ju5//2Q==",
    ),
    "gray_prog": (
        (10, 13, 1),
        "681c0b4acce91474f364f305821ae75495c2968a6a77286d831d7815a55918c8",
        "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAgGBgcGBQgHBwcJCQgKDBQNDAsLDBkSEw8UHRofHh0aHBwgJC4nICIsIxwcKDcpLDAx"
        "NDQ0Hyc5PTgyPC4zNDL/wgALCAAKAA0BAREA/8QAFAABAAAAAAAAAAAAAAAAAAAABf/aAAgBAQAAAAEttNr/xAAZEAACAwEAAAAA"
        "AAAAAAAAAAACAwAEMSH/2gAIAQEAAQUCXSgUuJwc/8QAFxAAAwEAAAAAAAAAAAAAAAAAABAxQf/aAAgBAQAGPwKGv//EABoQAQAC"
        "AwEAAAAAAAAAAAAAAAEAESExUYH/2gAIAQEAAT8hqpI5/BAVxAGs/9oACAEBAAAAEM//xAAeEAEAAQMFAQAAAAAAAAAAAAABABEh"
        "cTFBYYHh8P/aAAgBAQABPxAqpoO/n2YRe9jD3BKAeDEogBd0J//Z",
    ),
    "h1v2": (
        (15, 9, 3),
        "81b859128c8bb4920918d5d3c9a6b0cf6133fe5705986d1592571e28b47c4900",
        "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAgGBgcGBQgHBwcJCQgKDBQNDAsLDBkSEw8UHRofHh0aHBwgJC4nICIsIxwcKDcpLDAx"
        "NDQ0Hyc5PTgyPC4zNDL/2wBDAQkJCQwLDBgNDRgyIRwhMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIy"
        "MjIyMjIyMjL/wAARCAAPAAkDARIAAhEBAxEB/8QAHwAAAQUBAQEBAQEAAAAAAAAAAAECAwQFBgcICQoL/8QAtRAAAgEDAwIEAwUF"
        "BAQAAAF9AQIDAAQRBRIhMUEGE1FhByJxFDKBkaEII0KxwRVS0fAkM2JyggkKFhcYGRolJicoKSo0NTY3ODk6Q0RFRkdISUpTVFVW"
        "V1hZWmNkZWZnaGlqc3R1dnd4eXqDhIWGh4iJipKTlJWWl5iZmqKjpKWmp6ipqrKztLW2t7i5usLDxMXGx8jJytLT1NXW19jZ2uHi"
        "4+Tl5ufo6erx8vP09fb3+Pn6/8QAHwEAAwEBAQEBAQEBAQAAAAAAAAECAwQFBgcICQoL/8QAtREAAgECBAQDBAcFBAQAAQJ3AAEC"
        "AxEEBSExBhJBUQdhcRMiMoEIFEKRobHBCSMzUvAVYnLRChYkNOEl8RcYGRomJygpKjU2Nzg5OkNERUZHSElKU1RVVldYWVpjZGVm"
        "Z2hpanN0dXZ3eHl6goOEhYaHiImKkpOUlZaXmJmaoqOkpaanqKmqsrO0tba3uLm6wsPExcbHyMnK0tPU1dbX2Nna4uPk5ebn6Onq"
        "8vP09fb3+Pn6/9oADAMBAAIRAxEAPwDkPD/hzIXKMXYD5W7c4NeseH9CiUBSVDEEg45Hr/SuKVdp6mGQ8QNNa7nKf8ItN/zy/wDH"
        "z/hXq39gJ/zy/wDHEqeZ9j7z/WCX8x//2Q==",
    ),
}


def _jpeg_fixture(name: str) -> tuple[tuple[int, ...], str, bytes]:
    shape, digest, b64 = JPEG_FIXTURES[name]
    return shape, digest, base64.b64decode(b64)


@pytest.mark.parametrize("name", sorted(JPEG_FIXTURES))
def test_jpeg_fixtures_match_libjpeg_turbo(name: str) -> None:
    shape, digest, data = _jpeg_fixture(name)
    out = decode_image(data, "Grayscale" if shape[2] == 1 else "RGB")
    assert out.shape == shape
    assert hashlib.sha256(out.tobytes()).hexdigest() == digest


_CJPEG, _DJPEG = shutil.which("cjpeg"), shutil.which("djpeg")


@pytest.mark.skipif(not (_CJPEG and _DJPEG), reason="libjpeg-turbo's cjpeg/djpeg not installed")
@pytest.mark.parametrize("shape", [(1, 1), (2, 3), (7, 13), (17, 33), (40, 23)])
@pytest.mark.parametrize(
    "options",
    [
        ["-sample", "2x2"],
        ["-sample", "2x1", "-restart", "1"],
        ["-sample", "1x2"],
        ["-sample", "1x1", "-quality", "100"],
        ["-sample", "4x1"],
        ["-sample", "4x2", "-optimize"],
        ["-progressive"],
        ["-progressive", "-sample", "2x1", "-restart", "2"],
        ["-grayscale"],
        ["-rgb"],
    ],
)
def test_jpeg_against_djpeg(shape: tuple[int, int], options: list[str]) -> None:
    h, w = shape
    img = _rgb_image(h, w, h * w)
    ppm = b"P6\n%d %d\n255\n" % (w, h) + img.tobytes()
    assert _CJPEG and _DJPEG
    jpg = subprocess.run([_CJPEG, *options], input=ppm, capture_output=True, check=True).stdout
    ref = subprocess.run([_DJPEG, "-pnm"], input=jpg, capture_output=True, check=True).stdout
    expected = decode_image(ref, "RGB" if ref[:2] == b"P6" else "Grayscale")  # PNM path, tested above
    out = decode_image(jpg, "RGB" if expected.shape[2] == 3 else "Grayscale")
    assert np.array_equal(out, expected)


_SCAN_SCRIPTS = {
    "sequential_one_scan_per_component": "0;\n1;\n2;\n",
    "successive_approximation": "0 1 2: 0 0 0 1;\n0: 1 5 0 2;\n0: 6 63 0 2;\n1: 1 63 0 1;\n2: 1 63 0 0;\n"
    "0: 1 63 2 1;\n0: 1 63 1 0;\n1: 1 63 1 0;\n0 1 2: 0 0 1 0;\n",
}


@pytest.mark.skipif(not (_CJPEG and _DJPEG), reason="libjpeg-turbo's cjpeg/djpeg not installed")
@pytest.mark.parametrize("script", sorted(_SCAN_SCRIPTS))
@pytest.mark.parametrize("sampling", ["1x1", "2x2", "2x2,2x1,1x2", "1x1,2x2,1x1", "3x1"])
def test_jpeg_scan_scripts_and_sampling_against_djpeg(tmp_path: Path, script: str, sampling: str) -> None:
    img = _rgb_image(23, 37, 7)
    scans = tmp_path / "scans.txt"
    scans.write_text(_SCAN_SCRIPTS[script])
    ppm = b"P6\n37 23\n255\n" + img.tobytes()
    assert _CJPEG and _DJPEG
    args = [_CJPEG, "-sample", sampling, "-scans", str(scans), "-restart", "1B"]
    jpg = subprocess.run(args, input=ppm, capture_output=True, check=True).stdout
    ref = subprocess.run([_DJPEG, "-pnm"], input=jpg, capture_output=True, check=True).stdout
    assert np.array_equal(decode_image(jpg), decode_image(ref))


def _sof_variant(marker: int) -> bytes:
    _, _, data = _jpeg_fixture("q100_444")
    i = data.find(b"\xff\xc0")
    return data[: i + 1] + bytes((marker,)) + data[i + 2 :]


@pytest.mark.parametrize(
    ("marker", "what"), [(0xC9, "arithmetic-coded JPEG"), (0xC3, "lossless JPEG"), (0xC5, "hierarchical JPEG")]
)
def test_jpeg_unimplemented_processes_are_refused(marker: int, what: str) -> None:
    with pytest.raises(EvaluationError, match=f"{what} decoding is not implemented"):
        decode_image(_sof_variant(marker))


@pytest.mark.parametrize("precision", [0, 9, 16, 190])
def test_jpeg_impossible_precision_is_corrupt_and_12_bit_refused(precision: int) -> None:
    """T.81 B.2.2: DCT-based frames have 8- or 12-bit samples; any other precision is a damaged stream (the
    empty matrix), 12 bits a process not implemented (refused by name)."""
    _, _, data = _jpeg_fixture("q100_444")
    i = data.find(b"\xff\xc0") + 4  # marker, two length octets, then P
    assert decode_image(data[:i] + bytes((precision,)) + data[i + 1 :]).shape == (0, 0, 3)
    with pytest.raises(EvaluationError, match="12-bit JPEG decoding is not implemented"):
        decode_image(data[:i] + bytes((12,)) + data[i + 1 :])


# ------------------------------------------------------------------------------------ pixel formats
@pytest.mark.parametrize("fmt", ["png", "bmp", "tiff", "pnm"])
def test_pixel_formats(fmt: str) -> None:
    img = _rgb_image(6, 9, 11)
    data = {
        "png": lambda: _png(img, 2, 8),
        "bmp": lambda: _bmp(img, 24),
        "tiff": lambda: _tiff(img, 8, 2),
        "pnm": lambda: _pnm(6, img),
    }[fmt]()
    assert np.array_equal(decode_image(data, "RGB"), img)
    assert np.array_equal(decode_image(data, "BGR"), img[..., ::-1])
    gray = decode_image(data, "Grayscale")
    assert gray.shape == (6, 9, 1) and np.array_equal(gray, _luma(img))
    # A grey image asked for in colour repeats its value in each channel.
    g = _png(gray, 0, 8)
    assert np.array_equal(decode_image(g, "RGB"), np.repeat(gray, 3, axis=2))
    assert np.array_equal(decode_image(g, "Grayscale"), gray)
    with pytest.raises(EvaluationError, match="pixel_format"):
        decode_image(data, "RGBA")


# --------------------------------------------------------------------------------- kernel, limits
def test_kernel_registered_and_checks_input() -> None:
    import onnx

    from onnxcore.kernels.registry import KernelContext, kernel_versions, lookup

    assert kernel_versions("", "ImageDecoder") == [20]
    assert onnx.defs.get_schema("ImageDecoder", 20).since_version == 20
    k = lookup("", "ImageDecoder", 20)
    assert k is not None and k.context
    ctx = KernelContext(None, since_version=20, opset_version=21, num_outputs=1)
    img = _rgb_image(3, 4)
    data = np.frombuffer(_png(img, 2, 8), dtype=np.uint8)
    assert np.array_equal(k.fn(ctx, data, pixel_format="BGR"), img[..., ::-1])
    assert k.fn(ctx, np.zeros(0, np.uint8)).shape == (0, 0, 3)
    assert k.fn(ctx, np.frombuffer(b"not an image", np.uint8), pixel_format="Grayscale").shape == (0, 0, 1)
    with pytest.raises(EvaluationError):
        k.fn(ctx, data.astype(np.int32))


@pytest.mark.parametrize("fmt", ["png", "bmp", "tiff", "pnm", "jpeg"])
def test_limits_refuse_before_allocating(fmt: str) -> None:
    small = dataclasses.replace(DEFAULT_LIMITS, max_tensor_elements=100)
    img = _rgb_image(6, 7)
    data = {
        "png": lambda: _png(img, 2, 8),
        "bmp": lambda: _bmp(img, 24),
        "tiff": lambda: _tiff(img, 8, 2),
        "pnm": lambda: _pnm(6, img),
        "jpeg": lambda: _jpeg_fixture("q100_444")[2],
    }[fmt]()
    with pytest.raises(LimitError):
        decode_image(data, "RGB", small)
    assert decode_image(data, "RGB").shape[2] == 3
    # max_image_pixels bounds height x width (42 here), whatever the channels.
    h, w = decode_image(data, "RGB").shape[:2]
    with pytest.raises(LimitError, match="max_image_pixels"):
        decode_image(data, "RGB", dataclasses.replace(DEFAULT_LIMITS, max_image_pixels=h * w - 1))
    assert decode_image(data, "Grayscale", dataclasses.replace(DEFAULT_LIMITS, max_image_pixels=h * w)).shape == (
        h,
        w,
        1,
    )


def test_decompression_bombs_are_refused_from_the_header() -> None:
    """A few dozen octets declaring 60000 x 60000 pixels are refused by max_image_pixels (default 2^27) before
    anything is decoded; the limit names itself and the size."""
    ihdr = struct.pack(">IIBBBBB", 60000, 60000, 8, 2, 0, 0, 0)
    png = b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", zlib.compress(b"\x00" * 100))
    for data in (b"P6\n60000 60000\n255\n" + b"\x00" * 10, png):
        with pytest.raises(LimitError, match=r"60000x60000 pixels.*max_image_pixels \(134217728\)"):
            decode_image(data)


def test_huge_declared_sizes_are_not_allocated() -> None:
    # Without the pixel limit, headers claiming 60000 x 60000 pixels with no data behind them: empty output,
    # no allocation.
    unlimited = dataclasses.replace(DEFAULT_LIMITS, max_image_pixels=None)

    def decode_image(data: bytes) -> np.ndarray:
        return _decode_image(data, "RGB", unlimited)

    assert decode_image(b"P6\n60000 60000\n255\n" + b"\x00" * 10).shape == (0, 0, 3)
    ihdr = struct.pack(">IIBBBBB", 60000, 60000, 8, 2, 0, 0, 0)
    png = (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", ihdr)
        + _chunk(b"IDAT", zlib.compress(b"\x00" * 100))
        + _chunk(b"IEND", b"")
    )
    assert decode_image(png).shape == (0, 0, 3)
    _, _, jpg = _jpeg_fixture("q100_444")
    i = jpg.find(b"\xff\xc0")
    big = jpg[: i + 5] + struct.pack(">HH", 60000, 60000) + jpg[i + 9 :]
    assert decode_image(big).shape == (0, 0, 3)


# ------------------------------------------------------------------------------------------- fuzz
def _fuzz_seeds() -> dict[str, bytes]:
    img = _rgb_image(9, 10, 4)
    pal = np.random.default_rng(1).integers(0, 256, (16, 3)).astype(np.uint8)
    idx = np.random.default_rng(2).integers(0, 16, (9, 10, 1)).astype(np.uint8)
    return {
        "pnm": _pnm(6, img),
        "pgm_ascii": _pnm(2, img[..., :1]),
        "bmp": _bmp(img, 24),
        "bmp_rle": _bmp(idx, 8, palette=pal, rle=True),
        "png": _png(img, 2, 8, seed=3),
        "png_adam7": _png(idx, 3, 4, interlace=True, palette=pal),
        "tiff_lzw": _tiff(img, 8, 2, compression=5, predictor=2),
        "tiff_packbits": _tiff(img, 8, 2, compression=32773, planar=2),
        "jpeg": _jpeg_fixture("q75_422_restart")[2],
        "jpeg_prog": _jpeg_fixture("progressive_420")[2],
    }


@pytest.mark.parametrize("seed_name", sorted(_fuzz_seeds()))
def test_fuzz_mutations_give_image_empty_or_our_error(seed_name: str) -> None:
    seed = _fuzz_seeds()[seed_name]
    rng = np.random.default_rng(zlib.crc32(seed_name.encode()))
    for trial in range(120):
        data = bytearray(seed)
        op = trial % 4
        if op == 0:  # flip a few octets
            for _ in range(int(rng.integers(1, 4))):
                data[int(rng.integers(0, len(data)))] = int(rng.integers(0, 256))
        elif op == 1:  # truncate
            data = data[: int(rng.integers(0, len(data)))]
        elif op == 2:  # flip octets in the header, where sizes and tables live
            for _ in range(2):
                data[int(rng.integers(0, min(len(data), 64)))] ^= 1 << int(rng.integers(0, 8))
        else:  # insert or delete a run
            i = int(rng.integers(0, len(data)))
            if rng.integers(0, 2):
                data[i:i] = bytes(rng.integers(0, 256, int(rng.integers(1, 9))).astype(np.uint8))
            else:
                del data[i : i + int(rng.integers(1, 9))]
        for pf, c in (("RGB", 3), ("Grayscale", 1)):
            try:
                out = decode_image(bytes(data), pf)
            except OnnxCoreError:
                continue
            assert out.dtype == np.uint8 and out.ndim == 3 and out.shape[2] == c
            assert out.size == 0 or (out.shape[0] > 0 and out.shape[1] > 0)


def test_bmp_with_embedded_png_and_no_nesting() -> None:
    img = _rgb_image(5, 6)
    png = _png(img, 2, 8)
    info = struct.pack("<IiiHHIIiiII", 40, 6, 5, 1, 0, 5, len(png), 0, 0, 0, 0)
    bmp = b"BM" + struct.pack("<IHHI", 54 + len(png), 0, 0, 54) + info + png
    assert np.array_equal(decode_image(bmp), img)
    # A BMP "JPEG-compressed" with another BMP as payload is no format: empty output, no recursion.
    info4 = struct.pack("<IiiHHIIiiII", 40, 6, 5, 1, 0, 4, len(bmp), 0, 0, 0, 0)
    nested = b"BM" + struct.pack("<IHHI", 54 + len(bmp), 0, 0, 54) + info4 + bmp
    assert decode_image(nested).shape == (0, 0, 3)
