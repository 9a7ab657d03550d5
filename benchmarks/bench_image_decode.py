"""ImageDecoder's two decoders timed on a 1024x768 JPEG and WebP (run: ``python benchmarks/bench_image_decode.py``).

The streams are encoded by Pillow from a synthetic photograph-like picture (gradients and noise); each is decoded
by ``onnxcore.kernels.image_decoder.decode_image`` with Pillow's C decoders (the ``image`` extra) and with the
numpy decoders, and the two results are checked equal. Each figure is the best of ``--repeat`` runs (the machine is
shared: the best run is the least disturbed one).
"""

from __future__ import annotations

import argparse
import io
import time

import numpy as np
from PIL import Image

from onnxcore.kernels.image_decoder import Backend, decode_image


def _picture(h: int, w: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([x * 255 // (w - 1), y * 255 // (h - 1), ((x // 7 + y // 5) * 9) % 256], axis=2)
    return np.clip(base + rng.integers(-20, 20, (h, w, 3)), 0, 255).astype(np.uint8)


def _stream(img: np.ndarray, fmt: str) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format=fmt, quality=85)
    return buf.getvalue()


def _best(data: bytes, using: Backend, repeat: int) -> tuple[float, np.ndarray]:
    best, out = float("inf"), np.empty(0)
    for _ in range(repeat):
        t = time.perf_counter()
        out = decode_image(data, "RGB", using=using)
        best = min(best, time.perf_counter() - t)
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    img = _picture(768, 1024)
    print(f"{'stream':<14}{'octets':>9}{'pillow ms':>11}{'numpy ms':>10}{'ratio':>8}  equal")
    for fmt in ("JPEG", "WEBP"):
        data = _stream(img, fmt)
        t_pil, a = _best(data, "pillow", args.repeat)
        t_np, b = _best(data, "numpy", args.repeat)
        assert a.shape == (768, 1024, 3)
        name = f"{fmt.lower()} 1024x768"
        times = f"{t_pil * 1e3:>11.1f}{t_np * 1e3:>10.1f}{t_np / t_pil:>7.0f}x"
        print(f"{name:<14}{len(data):>9}{times}  {np.array_equal(a, b)}")


if __name__ == "__main__":
    main()
