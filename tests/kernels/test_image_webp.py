"""WebP decoding (lossy VP8, lossless VP8L, the RIFF container) compared bit-exactly with Pillow's
decoder (libwebp), which produced the ONNX vector: Pillow-encoded images of many sizes, contents and
encoder settings, cwebp-encoded ones for the settings Pillow does not expose (simple loop filter,
sharpness, segment counts) when cwebp is installed, container cases, and mutated streams."""

from __future__ import annotations

import dataclasses
import io
import random
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from onnxcore.errors import EvaluationError, LimitError
from onnxcore.libs.image.common import CorruptImage
from onnxcore.libs.image.webp import decode_webp
from onnxcore.libs.image.webp_tables import COEFF_UPDATE_PROBS
from onnxcore.limits import DEFAULT_LIMITS

PIL = pytest.importorskip("PIL")
from PIL import Image  # noqa: E402


def _content(kind: str, h: int, w: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    if kind == "noise":
        return rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
    if kind == "gradient":
        g = np.stack([x * 255 // max(w - 1, 1), y * 255 // max(h - 1, 1), (x + y) * 255 // max(h + w - 2, 1)], 2)
        return g.astype(np.uint8)
    if kind == "flat":
        return np.full((h, w, 3), (200, 40, 90), np.uint8)
    if kind == "checker":
        return (((x // 4 + y // 4) % 2)[..., None] * np.array([255, 230, 10])).astype(np.uint8)
    # smooth, photo-like: low-frequency structure plus mild noise
    base = 128 + 60 * (np.sin(x / 9.0) * np.cos(y / 13.0))[..., None] + np.stack([x * 0.3, y * 0.4, (x - y) * 0.2], 2)
    return np.clip(base + rng.normal(0, 8, (h, w, 3)), 0, 255).astype(np.uint8)


def _encode(arr: np.ndarray, **kw: object) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, "WEBP", **kw)
    return buf.getvalue()


def _pillow(data: bytes) -> np.ndarray:
    return np.array(Image.open(io.BytesIO(data)).convert("RGB"))


def _check(data: bytes) -> None:
    out = decode_webp(data, None)
    exp = _pillow(data)
    assert out.dtype == np.uint8 and out.shape == exp.shape
    if not np.array_equal(out, exp):
        bad = np.argwhere(out != exp)
        pytest.fail(
            f"{len(bad)} samples differ, first at {bad[0].tolist()}: {out[tuple(bad[0])]} != {exp[tuple(bad[0])]}"
        )


SIZES = [(1, 1), (15, 17), (32, 32), (33, 47), (17, 200), (120, 5), (77, 91)]
KINDS = ["noise", "gradient", "flat", "checker", "photo"]


# ------------------------------------------------------------------------------------------ ONNX vector
def test_onnx_vector(node_cases: list[Path]) -> None:
    import onnx
    from onnx import numpy_helper

    case = [c for c in node_cases if c.name == "test_image_decoder_decode_webp_rgb"]
    if not case:
        pytest.skip("ONNX node vectors not available")

    def load(p: Path) -> np.ndarray:
        t = onnx.TensorProto()
        t.ParseFromString(p.read_bytes())
        return numpy_helper.to_array(t)

    data = load(case[0] / "test_data_set_0" / "input_0.pb").tobytes()
    expected = load(case[0] / "test_data_set_0" / "output_0.pb")
    assert data[12:16] == b"VP8 "
    np.testing.assert_array_equal(decode_webp(data, None), expected)


# ----------------------------------------------------------------------------------------------- lossy
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("kind", KINDS)
def test_lossy_qualities(size: tuple[int, int], kind: str) -> None:
    arr = _content(kind, *size, seed=size[0] * 7 + size[1])
    for q, m in ((0, 4), (10, 0), (30, 6), (50, 2), (75, 4), (90, 6), (100, 3)):
        _check(_encode(arr, quality=q, method=m))


@pytest.mark.parametrize("size", [(64, 64), (100, 150), (48, 200)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_lossy_larger(size: tuple[int, int]) -> None:
    # Several macroblock rows and columns: segmentation maps, skipped macroblocks, B_PRED contexts.
    for q in (5, 40, 80, 97):
        _check(_encode(_content("photo", *size, seed=q), quality=q, method=4))
    _check(_encode(_content("checker", *size), quality=20, method=6))


def test_lossy_features_seen() -> None:
    # The Pillow-encoded streams above do reach segmentation, the skip flag, B_PRED and the normal
    # loop filter; make sure of it on a representative stream.
    from onnxcore.libs.image import webp_vp8 as vp8

    data = _encode(_content("photo", 96, 96), quality=30, method=6)
    payload = data[20:]
    br = vp8._BoolDecoder(payload, 10, 10 + (int.from_bytes(payload[:3], "little") >> 5))
    hd = vp8._parse_header(br)
    assert hd.use_segment and hd.update_map and hd.level > 0 and not hd.simple


CWEBP = shutil.which("cwebp")
CWEBP_OPTIONS = [
    ["-q", "50", "-nostrong", "-f", "60"],
    ["-q", "20", "-nostrong", "-sharpness", "5", "-f", "100"],
    ["-q", "70", "-sharpness", "7", "-f", "40"],
    ["-q", "60", "-segments", "1"],
    ["-q", "40", "-segments", "2", "-sns", "100"],
    ["-q", "10", "-segments", "3", "-f", "100", "-sharpness", "2"],
    ["-q", "80", "-f", "0"],
    ["-q", "5", "-nostrong", "-segments", "4", "-sns", "0"],
]


@pytest.mark.skipif(CWEBP is None, reason="cwebp not installed")
@pytest.mark.parametrize("opts", CWEBP_OPTIONS, ids=lambda o: " ".join(o))
def test_lossy_cwebp(opts: list[str], tmp_path: Path) -> None:
    # The simple loop filter, sharpness and segment counts are not reachable through Pillow.
    for h, w in ((17, 23), (100, 150)):
        src = tmp_path / "in.png"
        dst = tmp_path / "out.webp"
        Image.fromarray(_content("photo", h, w, seed=h)).save(src)
        subprocess.run([str(CWEBP), "-quiet", *opts, str(src), "-o", str(dst)], check=True)
        _check(dst.read_bytes())


# -------------------------------------------------------------------------------------------- lossless
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("kind", KINDS)
def test_lossless(size: tuple[int, int], kind: str) -> None:
    arr = _content(kind, *size, seed=size[0] + 3 * size[1])
    for q, m in ((0, 0), (50, 4), (100, 6)):
        data = _encode(arr, lossless=True, quality=q, method=m)
        _check(data)
        np.testing.assert_array_equal(decode_webp(data, None), arr)


def test_lossless_palettes() -> None:
    # Colour-indexing with 2, 4, 16 and 256 colours exercises each pixel-bundling width.
    rng = np.random.default_rng(4)
    for n in (2, 3, 4, 11, 16, 17, 200):
        pal = rng.integers(0, 256, (n, 3), dtype=np.uint8)
        arr = pal[rng.integers(0, n, (37, 45))]
        data = _encode(arr, lossless=True, quality=80, method=5)
        _check(data)
        np.testing.assert_array_equal(decode_webp(data, None), arr)


def test_lossless_large_photo() -> None:
    arr = _content("photo", 160, 190, seed=9)
    data = _encode(arr, lossless=True, quality=75, method=4)
    np.testing.assert_array_equal(decode_webp(data, None), arr)


# ------------------------------------------------------------------------------ extended format (VP8X)
@pytest.mark.parametrize("size", [(1, 1), (15, 17), (40, 33), (64, 80)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_alpha_and_metadata(size: tuple[int, int]) -> None:
    h, w = size
    rng = np.random.default_rng(h * w)
    x = np.mgrid[0:h, 0:w][1]
    rgba = np.dstack([_content("photo", h, w), (x * 255 // max(w - 1, 1))]).astype(np.uint8)
    rgba[::3, ::2, 3] = 0
    rgba[..., :3] ^= rng.integers(0, 8, (h, w, 3), dtype=np.uint8)
    im = Image.fromarray(rgba, "RGBA")
    for kw in (
        {"quality": 50},
        {"quality": 90, "method": 6, "alpha_quality": 20},
        {"quality": 30, "exact": True},
        {"lossless": True},
        {"lossless": True, "exact": True},
        {"quality": 80, "icc_profile": b"\x00" * 130, "exif": b"Exif\x00\x00MM", "xmp": b"<x/>"},
    ):
        buf = io.BytesIO()
        im.save(buf, "WEBP", **kw)
        data = buf.getvalue()
        # Lossy with alpha needs VP8X + ALPH; lossless keeps alpha inside VP8L unless there is metadata.
        assert data[12:16] == (b"VP8L" if kw.get("lossless") else b"VP8X")
        _check(data)
    buf = io.BytesIO()
    im.save(buf, "WEBP", lossless=True, exact=True)
    np.testing.assert_array_equal(decode_webp(buf.getvalue(), None), rgba[..., :3])


def test_animation_refused() -> None:
    frames = [Image.fromarray(_content(k, 16, 16)) for k in ("flat", "noise")]
    buf = io.BytesIO()
    frames[0].save(buf, "WEBP", save_all=True, append_images=frames[1:], duration=100)
    with pytest.raises(EvaluationError, match="animated WebP"):
        decode_webp(buf.getvalue(), None)


def _riff(*chunks: tuple[bytes, bytes]) -> bytes:
    body = b"WEBP"
    for tag, payload in chunks:
        body += tag + len(payload).to_bytes(4, "little") + payload + b"\x00" * (len(payload) & 1)
    return b"RIFF" + len(body).to_bytes(4, "little") + body


def test_container_errors() -> None:
    data = _encode(_content("photo", 20, 20), quality=50)
    payload = data[20:]
    assert decode_webp(_riff((b"VP8 ", payload)) + b"trailing", None).shape == (20, 20, 3)
    for bad in (
        data[:11],
        b"RIFF" + data[4:8] + b"WEBQ" + data[12:],
        data[:-1],  # shorter than the RIFF size says
        _riff((b"VP8 ", payload[:5])),
        _riff((b"JUNK", b"abc")),
        _riff((b"VP8X", b"\x00" * 4 + (19).to_bytes(3, "little") + (19).to_bytes(3, "little"))),  # no image
        _riff((b"VP8X", b"\x00" * 4 + (20).to_bytes(3, "little") + (19).to_bytes(3, "little")), (b"VP8 ", payload)),
        data[:12] + b"VP8 " + (len(payload) + 9).to_bytes(4, "little") + payload,
    ):
        with pytest.raises(CorruptImage):
            decode_webp(bad, None)
    vp8x = b"\x00" * 4 + (19).to_bytes(3, "little") + (19).to_bytes(3, "little")
    assert decode_webp(_riff((b"VP8X", vp8x), (b"ICCP", b"abc"), (b"VP8 ", payload)), None).shape == (20, 20, 3)
    lossless = _encode(_content("photo", 20, 20), lossless=True)[20:]
    raw_alpha = b"\x00" + b"\xff" * 400
    assert decode_webp(_riff((b"VP8X", b"\x10" + vp8x[1:]), (b"ALPH", raw_alpha), (b"VP8 ", payload)), None).shape
    for bad in (
        _riff((b"VP8X", b"\x01" + vp8x[1:]), (b"VP8 ", payload)),  # reserved flag bit
        _riff((b"VP8X", b"\x10" + vp8x[1:]), (b"ALPH", raw_alpha[:-1]), (b"VP8 ", payload)),  # short alpha
        _riff((b"VP8X", b"\x10" + vp8x[1:]), (b"ALPH", b"\x03" + raw_alpha[1:]), (b"VP8 ", payload)),  # method 3
        _riff((b"VP8X", b"\x10" + vp8x[1:]), (b"ALPH", raw_alpha), (b"VP8L", lossless)),
    ):
        with pytest.raises(CorruptImage):
            decode_webp(bad, None)


def test_limits() -> None:
    small = dataclasses.replace(DEFAULT_LIMITS, max_tensor_elements=100)
    for kw in ({"quality": 50}, {"lossless": True}):
        with pytest.raises(LimitError):
            decode_webp(_encode(_content("flat", 20, 20), **kw), small)


# ------------------------------------------------------------------------------------- hostile streams
def test_mutations() -> None:
    rng = np.random.default_rng(11)
    rand = random.Random(11)
    samples = []
    for kw in ({"quality": 60}, {"quality": 5, "method": 6}, {"lossless": True}, {"lossless": True, "method": 6}):
        for mode in ("RGB", "RGBA"):
            a = rng.integers(0, 256, (21, 27, 4), dtype=np.uint8)
            a[..., :3] //= 3
            buf = io.BytesIO()
            Image.fromarray(a, "RGBA").convert(mode).save(buf, "WEBP", **kw)
            samples.append(buf.getvalue())
    worst = 0.0
    for data in samples:
        muts = [data[:k] for k in range(0, len(data), max(1, len(data) // 40))]
        for _ in range(80):
            m = bytearray(data)
            for _ in range(rand.randint(1, 4)):
                m[rand.randrange(len(m))] = rand.randrange(256)
            muts.append(bytes(m))
        for m in muts:
            t = time.perf_counter()
            try:
                out = decode_webp(m, None)
            except (CorruptImage, EvaluationError):
                pass
            else:
                assert out.dtype == np.uint8 and out.ndim == 3 and out.shape[2] == 3
            worst = max(worst, time.perf_counter() - t)
    assert worst < 5.0


def test_vp8_header_fuzz() -> None:
    # Random bytes after a valid key-frame header: the boolean decoder reads past the end of its
    # partitions deterministically and the frame is rejected (or decodes), never anything else.
    rand = random.Random(5)
    for _ in range(150):
        w, h = rand.randint(1, 70), rand.randint(1, 70)
        body = bytes(rand.randrange(256) for _ in range(rand.randint(0, 200)))
        part0 = rand.randint(0, len(body) + 5)
        tag = (part0 << 5) | (1 << 4)
        payload = tag.to_bytes(3, "little") + b"\x9d\x01\x2a" + w.to_bytes(2, "little") + h.to_bytes(2, "little")
        try:
            out = decode_webp(_riff((b"VP8 ", payload + body)), None)
        except CorruptImage:
            continue
        assert out.shape == (h, w, 3)


# ------------------------------------------------------------------------ synthetic VP8 frames vs libwebp
class _BoolEncoder:
    """RFC 6386 section 7.3 boolean encoder, to write frame headers with chosen fields."""

    def __init__(self) -> None:
        self.out = bytearray()
        self.rng = 255
        self.bottom = 0
        self.count = 24

    def put(self, prob: int, bit: bool | int) -> None:
        split = 1 + (((self.rng - 1) * prob) >> 8)
        if bit:
            self.bottom += split
            self.rng -= split
        else:
            self.rng = split
        while self.rng < 128:
            self.rng <<= 1
            if self.bottom & (1 << 31):  # carry into the octets already written
                i = len(self.out) - 1
                while self.out[i] == 255:
                    self.out[i] = 0
                    i -= 1
                self.out[i] += 1
            self.bottom = (self.bottom << 1) & 0xFFFFFFFF
            self.count -= 1
            if self.count == 0:
                self.out.append((self.bottom >> 24) & 255)
                self.bottom &= (1 << 24) - 1
                self.count = 8

    def literal(self, v: int, n: int) -> None:
        for i in range(n - 1, -1, -1):
            self.put(128, (v >> i) & 1)

    def flag_signed(self, v: int, n: int) -> None:
        self.put(128, v != 0)
        if v:
            self.literal(abs(v), n)
            self.put(128, v < 0)

    def flush(self) -> bytes:
        for _ in range(32):
            self.put(128, 0)
        return bytes(self.out)


def _random_frame(r: random.Random, w: int, h: int, short: bool) -> bytes:
    """A key frame whose header fields are drawn at random (segments, both filters, sharpness, loop
    filter deltas, 1-8 token partitions, quantiser deltas, probability updates, skip flag) and whose
    prediction records and tokens are whatever random octets decode to. Quantisers stay low: with the
    huge coefficients of random tokens at high quantisers, libwebp's SIMD transforms overflow their
    16-bit lanes (no encoder produces such coefficients), so outputs would differ by design."""
    e = _BoolEncoder()
    e.put(128, 0)
    e.put(128, r.random() < 0.5)
    seg = r.random() < 0.6
    e.put(128, seg)
    if seg:
        upd_map, upd_data = r.random() < 0.8, r.random() < 0.8
        e.put(128, upd_map)
        e.put(128, upd_data)
        if upd_data:
            e.put(128, r.random() < 0.5)
            for _ in range(4):
                e.flag_signed(r.choice([0, r.randint(-10, 25)]), 7)
            for _ in range(4):
                e.flag_signed(r.choice([0, r.randint(-63, 63)]), 6)
        if upd_map:
            for _ in range(3):
                p = r.choice([None, r.randint(0, 255)])
                e.put(128, p is not None)
                if p is not None:
                    e.literal(p, 8)
    e.put(128, r.random() < 0.4)  # simple filter
    e.literal(r.choice([0, r.randint(0, 63), 63]), 6)
    e.literal(r.randint(0, 7), 3)
    lf_delta = r.random() < 0.5
    e.put(128, lf_delta)
    if lf_delta:
        e.put(128, 1)
        for _ in range(8):
            v = r.choice([None, r.randint(-63, 63)])
            e.put(128, v is not None)
            if v is not None:
                e.literal(abs(v), 6)
                e.put(128, v < 0)
    log_parts = r.randint(0, 3)
    e.literal(log_parts, 2)
    e.literal(r.randint(0, 20), 7)
    for _ in range(5):
        e.flag_signed(r.choice([0, r.randint(-15, 5)]), 4)
    e.put(128, 0)
    for plane in COEFF_UPDATE_PROBS:
        for band in plane:
            for ctx in band:
                for prob in ctx:
                    update = r.random() < 0.03
                    e.put(prob, update)
                    if update:
                        e.literal(r.randint(1, 255), 8)
    skip = r.random() < 0.7
    e.put(128, skip)
    if skip:
        e.literal(r.randint(0, 255), 8)
    for _ in range(r.choice([0, 50, 300, 3000]) if short else 3000):
        e.put(128, r.random() < 0.5)
    part0 = e.flush()
    # A boolean-coded partition never starts with 0xFF (the first value lies below the initial range
    # of 255); random data that does is outside the format and decoders part ways on it.
    parts = [
        bytes([r.randrange(255)]) + r.randbytes(r.randint(0, 400) if short else r.randint(2000, 4000))
        for _ in range(1 << log_parts)
    ]
    sizes = b"".join(len(p).to_bytes(3, "little") for p in parts[:-1])
    tag = (len(part0) << 5) | (1 << 4)
    dims = w.to_bytes(2, "little") + h.to_bytes(2, "little")
    payload = tag.to_bytes(3, "little") + b"\x9d\x01\x2a" + dims + part0 + sizes + b"".join(parts)
    return _riff((b"VP8 ", payload))


@pytest.mark.parametrize("short", [False, True], ids=["complete", "truncated"])
def test_random_vp8_frames(short: bool) -> None:
    # Complete frames must decode exactly as libwebp does; frames whose partitions run out must be
    # rejected exactly when libwebp rejects them.
    r = random.Random(1 + short)
    agree = 0
    for _ in range(120):
        data = _random_frame(r, r.randint(1, 60), r.randint(1, 60), short)
        try:
            expected: np.ndarray | None = _pillow(data)
        except OSError:
            expected = None
        if expected is None:
            with pytest.raises(CorruptImage):
                decode_webp(data, None)
        else:
            np.testing.assert_array_equal(decode_webp(data, None), expected)
            agree += 1
    assert agree > (20 if short else 100)


def _reference_predictor(res: np.ndarray, bits: int, modes: np.ndarray) -> np.ndarray:
    """The lossless predictor transform inverse (spec section 4.1), pixel by pixel, channels A R G B."""
    h, w, _ = res.shape
    out = np.zeros_like(res)

    def avg(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return (a + b) >> 1

    for y in range(h):
        for x in range(w):
            if y == 0:
                pred = np.array([255, 0, 0, 0]) if x == 0 else out[0, x - 1]
            elif x == 0:
                pred = out[y - 1, 0]
            else:
                m = modes[y >> bits, x >> bits]
                L, T, TL = out[y, x - 1], out[y - 1, x], out[y - 1, x - 1]
                TR = out[y - 1, x + 1] if x + 1 < w else out[y, 0]
                if m == 11:
                    pl = np.abs(T - TL).sum()
                    pt = np.abs(L - TL).sum()
                    pred = L if pl < pt else T
                elif m == 13:
                    a = avg(L, T)
                    pred = np.clip(a + np.trunc((a - TL) / 2).astype(np.int64), 0, 255)
                else:
                    pred = {
                        1: L,
                        2: T,
                        3: TR,
                        4: TL,
                        5: avg(avg(L, TR), T),
                        6: avg(L, TL),
                        7: avg(L, T),
                        8: avg(TL, T),
                        9: avg(T, TR),
                        10: avg(avg(L, TL), avg(T, TR)),
                        12: np.clip(L + T - TL, 0, 255),
                    }.get(int(m), np.array([255, 0, 0, 0]))
            out[y, x] = (res[y, x] + pred) & 255
    return out


@pytest.mark.parametrize("bits", [2, 3])
def test_predictor_modes(bits: int) -> None:
    # Every predictor mode (0-13, and 14/15 which act as 0), against the spec formulas.
    from onnxcore.libs.image.webp_vp8l import _inverse_predictor

    rng = np.random.default_rng(bits)
    h, w = 19, 37
    res = rng.integers(0, 256, (h, w, 4)).astype(np.int64)
    res[5:9] = rng.integers(0, 3, (4, w, 4))  # small residues keep some rows smooth
    bh, bw = -(-h // (1 << bits)), -(-w // (1 << bits))
    data = np.zeros((bh, bw, 4), dtype=np.int64)
    data[:, :, 2] = np.arange(bh * bw).reshape(bh, bw) % 16
    got = _inverse_predictor(res.astype(np.int32), bits, data.astype(np.int32))
    np.testing.assert_array_equal(got, _reference_predictor(res, bits, data[:, :, 2]))


def test_hostile_dimensions() -> None:
    # A small stream claiming a 16383 x 16383 frame is rejected quickly (the lossy one before the
    # frame is allocated), not decoded at length.
    lossy = bytearray(_encode(_content("flat", 40, 40), quality=50))
    lossy[26:30] = b"\xff\x3f\xff\x3f"
    lossless = bytearray(_encode(_content("flat", 40, 40), lossless=True))
    lossless[21:25] = (0x3FFF | (0x3FFF << 14) | ((lossless[24] >> 4) << 28)).to_bytes(4, "little")
    unlimited = dataclasses.replace(DEFAULT_LIMITS, max_image_pixels=None)
    for data in (lossy, lossless):
        # 268 million pixels: over the default max_image_pixels, refused from the header.
        with pytest.raises(LimitError, match=r"1638[34]x1638[34] pixels"):
            decode_webp(bytes(data), None)
        t = time.perf_counter()
        with pytest.raises(CorruptImage):
            decode_webp(bytes(data), unlimited)
        assert time.perf_counter() - t < 5.0
