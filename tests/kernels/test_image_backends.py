"""ImageDecoder's two decoders on the same streams (issue 37): Pillow's C decoders (the ``image`` extra) and the
numpy decoders (without it, or ``ONNXCORE_IMAGE=numpy``).

The definition's pixels do not depend on the decoder: every lossless stream decodes bit-exactly alike, and so do
the lossy ones (JPEG, lossy WebP, irreversible JPEG 2000), since the numpy decoders reproduce libjpeg-turbo, libwebp
and OpenJPEG exactly (tests/kernels/test_image_decoder.py holds JPEG to libjpeg-turbo's output bit for bit, the
tolerance used here too). The Pillow path is shown to decode on its own (the numpy decoders made to fail), and to
keep the operator's rules: the empty matrix for a corrupt stream, the limits checked from the header, refusals.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from runtime.node_harness import run_single_node_case

from onnxcore.errors import EvaluationError, LimitError
from onnxcore.kernels import image_decoder
from onnxcore.kernels.image_decoder import backend, decode_image
from onnxcore.libs.image import decode as numpy_decoders
from onnxcore.libs.image import pillow
from onnxcore.limits import Limits

Image = pytest.importorskip("PIL.Image")


def _picture(h: int, w: int, seed: int = 0) -> np.ndarray:
    # Smooth gradients with noise: both flat and busy blocks for the lossy coders.
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([x * 255 // max(w - 1, 1), y * 255 // max(h - 1, 1), ((x + y) * 7) % 256], axis=2)
    return np.clip(base + rng.integers(-25, 25, (h, w, 3)), 0, 255).astype(np.uint8)


def _encode(img: Any, fmt: str, **options: Any) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format=fmt, **options)
    return buf.getvalue()


def _streams() -> dict[str, bytes]:
    rgb = _picture(37, 53)
    rgba = np.concatenate([rgb, (rgb[..., :1] // 2 + 60)], axis=2)
    im = Image.fromarray(rgb)
    grey = im.convert("L")
    out: dict[str, bytes] = {}
    # JPEG: sampling 4:4:4, 4:2:2, 4:2:0; grey; progressive; a restart interval.
    for sub in (0, 1, 2):
        out[f"jpeg_q90_sub{sub}"] = _encode(im, "JPEG", quality=90, subsampling=sub)
    out["jpeg_q50_grey"] = _encode(grey, "JPEG", quality=50)
    out["jpeg_progressive"] = _encode(im, "JPEG", quality=75, progressive=True)
    out["jpeg_restart"] = _encode(im, "JPEG", quality=80, restart_marker_blocks=2)
    # PNG: RGB, RGBA (alpha dropped), grey, grey with alpha, palette, 16-bit grey (high octet), 1-bit, interlaced.
    out["png_rgb"] = _encode(im, "PNG")
    out["png_rgba"] = _encode(Image.fromarray(rgba), "PNG")
    out["png_grey"] = _encode(grey, "PNG")
    out["png_grey_alpha"] = _encode(Image.fromarray(rgba).convert("LA"), "PNG")
    out["png_palette"] = _encode(im.quantize(64), "PNG")
    out["png_grey16"] = _encode(Image.fromarray(rgb[..., 0].astype(np.uint16) * 257 + 3), "PNG")
    out["png_1bit"] = _encode(grey.convert("1"), "PNG")
    out["png_interlaced"] = _encode(im, "PNG", interlace=1)
    # TIFF: uncompressed, LZW, Deflate, PackBits; grey; 16-bit grey; RGBA; JPEG-compressed.
    for comp in ("raw", "tiff_lzw", "tiff_adobe_deflate", "packbits"):
        out[f"tiff_{comp}"] = _encode(im, "TIFF", compression=comp)
    out["tiff_grey"] = _encode(grey, "TIFF", compression="tiff_lzw")
    out["tiff_grey16"] = _encode(Image.fromarray(rgb[..., 1].astype(np.uint16) * 200), "TIFF")
    out["tiff_rgba"] = _encode(Image.fromarray(rgba), "TIFF", compression="tiff_lzw")
    out["tiff_jpeg"] = _encode(im, "TIFF", compression="jpeg")
    # WebP: lossy, lossless, lossy with alpha (the extended format).
    out["webp_lossy"] = _encode(im, "WEBP", quality=80)
    out["webp_lossless"] = _encode(im, "WEBP", lossless=True)
    out["webp_alpha"] = _encode(Image.fromarray(rgba), "WEBP", quality=70)
    # JPEG 2000: reversible (lossless), irreversible, grey, a raw codestream.
    out["jp2_lossless"] = _encode(im, "JPEG2000")
    out["jp2_lossy"] = _encode(im, "JPEG2000", irreversible=True, quality_mode="rates", quality_layers=[20])
    out["jp2_grey"] = _encode(grey, "JPEG2000")
    out["j2k_codestream"] = _encode(im, "JPEG2000", no_jp2=True)
    return out


STREAMS = _streams()


@pytest.fixture
def no_numpy_decoders(monkeypatch: pytest.MonkeyPatch) -> None:
    """The numpy decoders fail: whatever decodes now is Pillow."""

    def fail(data: bytes, limits: Limits | None) -> np.ndarray:
        raise AssertionError("the numpy decoders were called")

    monkeypatch.setattr(numpy_decoders, "decode", fail)


def test_pillow_is_the_default_with_the_extra_and_numpy_on_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ONNXCORE_IMAGE", raising=False)
    assert pillow.available() and backend() == "pillow"
    monkeypatch.setenv("ONNXCORE_IMAGE", "numpy")
    assert backend() == "numpy"


@pytest.mark.parametrize("name", sorted(STREAMS))
@pytest.mark.parametrize("fmt", ["RGB", "BGR", "Grayscale"])
def test_both_decoders_give_the_same_pixels(name: str, fmt: str) -> None:
    data = STREAMS[name]
    with_pillow = decode_image(data, fmt, using="pillow")
    with_numpy = decode_image(data, fmt, using="numpy")
    assert with_pillow.shape[:2] == (37, 53) and with_pillow.dtype == np.uint8
    assert with_pillow.shape == with_numpy.shape
    assert np.array_equal(with_pillow, with_numpy), f"{name}: max difference {_max_diff(with_pillow, with_numpy)}"


def _max_diff(a: np.ndarray, b: np.ndarray) -> int:
    return int(np.abs(a.astype(np.int16) - b.astype(np.int16)).max())


@pytest.mark.parametrize("name", sorted(STREAMS))
def test_pillow_decodes_every_stream_itself(name: str, no_numpy_decoders: None) -> None:
    # The numpy decoders cannot have answered: the Pillow path handles every format and mode here on its own.
    out = decode_image(STREAMS[name], using="pillow")
    assert out.shape == (37, 53, 3)


def test_the_onnx_vectors_with_pillow(node_cases: list[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ONNXCORE_IMAGE", raising=False)
    names = [c for c in node_cases if c.name.startswith("test_image_decoder_decode_")]
    assert len(names) >= 9
    for case in names:
        out = run_single_node_case(case)
        assert out is not None, case.name
        actual, expected = out
        assert np.array_equal(actual[0], expected[0]), case.name


def test_pillow_keeps_the_operators_rules() -> None:
    good = STREAMS["png_rgb"]
    # A corrupt stream: the definition's empty matrix (Pillow fails; the numpy decoders find it corrupt).
    assert decode_image(good[:40], using="pillow").shape == (0, 0, 3)
    assert decode_image(b"\xff\xd8\xff\xe0 nothing", "Grayscale", using="pillow").shape == (0, 0, 1)
    # The limits are checked from the header, before the pixels are decoded.
    with pytest.raises(LimitError, match="37x53"):
        decode_image(STREAMS["jpeg_q90_sub2"], limits=Limits(max_tensor_elements=1000), using="pillow")
    # What the numpy decoders refuse stays refused: an animated WebP (Clause 4.4).
    frames = [Image.fromarray(_picture(8, 8, seed)) for seed in range(2)]
    animated = _encode(frames[0], "WEBP", save_all=True, append_images=frames[1:], lossless=True)
    with pytest.raises(EvaluationError, match=r"(?i)anim"):
        decode_image(animated, using="pillow")
    # BMP and PNM stay with the numpy decoders (vectorised already): Pillow is not asked.
    assert pillow.decode(_encode(Image.fromarray(_picture(4, 4)), "BMP"), None) is None


def test_the_kernel_reads_the_switch_at_each_call(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real: Callable[..., Any] = pillow.decode

    def spy(data: bytes, limits: Limits | None) -> Any:
        calls.append("pillow")
        return real(data, limits)

    monkeypatch.setattr(pillow, "decode", spy)
    stream = np.frombuffer(STREAMS["webp_lossless"], np.uint8)
    monkeypatch.setenv("ONNXCORE_IMAGE", "numpy")
    a = image_decoder.image_decoder(None, stream)  # type: ignore[arg-type]
    assert calls == []
    monkeypatch.delenv("ONNXCORE_IMAGE")
    b = image_decoder.image_decoder(None, stream)  # type: ignore[arg-type]
    assert calls == ["pillow"] and np.array_equal(a, b)
