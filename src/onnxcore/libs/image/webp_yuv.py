"""Y'CbCr 4:2:0 -> RGB for lossy WebP (private), as libwebp's default RGB output computes it.

WebP leaves the output conversion to the decoder; the ONNX vectors come from libwebp through Pillow, so
this follows libwebp's defaults: "fancy" chroma upsampling (each output pixel's chroma interpolated from
the four nearest chroma samples with weights 9/16, 3/16, 3/16, 1/16, computed in two rounded steps, edge
samples replicated) and a BT.601 limited-range conversion in 14-bit fixed point with a final 6-bit
shift. Everything is vectorised over the image.
"""

from __future__ import annotations

import numpy as np

__all__ = ["yuv420_to_rgb"]

# BT.601 "studio swing" matrix (Y in [16, 235], chroma in [16, 240]) scaled to full-range RGB:
# 255/219 for luma, 255/224 for chroma, times the 0.299/0.587/0.114 derived chroma weights.
_FIX = 14


def _k(x: float) -> int:
    return int(x * (1 << _FIX) + 0.5)


_FY = 255 / 219
_FRV = 1.402 * 255 / 224
_FGU = 0.344136 * 255 / 224
_FGV = 0.714136 * 255 / 224
_FBU = 1.772 * 255 / 224
_KY, _KRV, _KGU, _KGV, _KBU = (_k(f) for f in (_FY, _FRV, _FGU, _FGV, _FBU))


def _offset(f_u: float, f_v: float) -> int:
    # The constant term -(16 fy + 128 fu + 128 fv) in units of 2**-6 (the products are taken >> 8),
    # plus half of the final 2**6 step for rounding, truncated towards zero.
    return int((-16 * _FY - 128 * f_u - 128 * f_v) * 64 + 32)


_OFF_R = _offset(0.0, _FRV)
_OFF_G = _offset(-_FGU, -_FGV)
_OFF_B = _offset(_FBU, 0.0)
assert (_KY, _KRV, _KGU, _KGV, _KBU) == (19077, 26149, 6419, 13320, 33050)
assert (_OFF_R, _OFF_G, _OFF_B) == (-14234, 8708, -17685)


def _upsample_pair(top: np.ndarray, cur: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Two output rows from chroma rows ``top`` (nearer to the first) and ``cur``: (..., cw) -> (..., width).

    The first output row lies 1/4 of a chroma row below ``top``, the second 1/4 above ``cur``.
    """
    n = top.shape[:-1]
    out_t = np.empty(n + (width,), dtype=np.int32)
    out_b = np.empty(n + (width,), dtype=np.int32)
    out_t[..., 0] = (3 * top[..., 0] + cur[..., 0] + 2) >> 2
    out_b[..., 0] = (3 * cur[..., 0] + top[..., 0] + 2) >> 2
    pairs = (width - 1) >> 1
    if pairs:
        tl = top[..., :pairs]
        t = top[..., 1 : pairs + 1]
        lf = cur[..., :pairs]
        c = cur[..., 1 : pairs + 1]
        avg = tl + t + lf + c + 8
        d12 = (avg + 2 * (t + lf)) >> 3
        d03 = (avg + 2 * (tl + c)) >> 3
        out_t[..., 1 : 2 * pairs : 2] = (d12 + tl) >> 1
        out_t[..., 2 : 2 * pairs + 1 : 2] = (d03 + t) >> 1
        out_b[..., 1 : 2 * pairs : 2] = (d03 + lf) >> 1
        out_b[..., 2 : 2 * pairs + 1 : 2] = (d12 + c) >> 1
    if width % 2 == 0 and width > 1:
        k = (width - 1) >> 1
        out_t[..., width - 1] = (3 * top[..., k] + cur[..., k] + 2) >> 2
        out_b[..., width - 1] = (3 * cur[..., k] + top[..., k] + 2) >> 2
    return out_t, out_b


def _upsample(c: np.ndarray, height: int, width: int) -> np.ndarray:
    """Chroma plane (ch, cw) -> (height, width)."""
    c = c.astype(np.int32)
    ch = c.shape[0]
    top = np.concatenate([c[:1], c[:-1]], axis=0)  # pair k uses chroma rows (k-1, k), the first (0, 0)
    out_t, out_b = _upsample_pair(top, c, width)
    out = np.empty((height, width), dtype=np.int32)
    out[0] = out_t[0]
    if ch > 1:
        n1 = min(ch - 1, (height - 1) // 2)
        out[1 : 2 * n1 : 2] = out_t[1 : n1 + 1]
        nb = min(ch - 1, (height - 1) // 2)
        out[2 : 2 * nb + 1 : 2] = out_b[1 : nb + 1]
    if height % 2 == 0 and height > 1:
        last_t, _ = _upsample_pair(c[-1:], c[-1:], width)
        out[height - 1] = last_t[0]
    return out


def yuv420_to_rgb(y: np.ndarray, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Cropped planes (H, W), (ceil(H/2), ceil(W/2)) x2 -> uint8 (H, W, 3)."""
    h, w = y.shape
    uu = _upsample(u[: (h + 1) // 2, : (w + 1) // 2], h, w)
    vv = _upsample(v[: (h + 1) // 2, : (w + 1) // 2], h, w)
    yy = (y.astype(np.int32) * _KY) >> 8
    r = yy + ((vv * _KRV) >> 8) + _OFF_R
    g = yy - ((uu * _KGU) >> 8) - ((vv * _KGV) >> 8) + _OFF_G
    b = yy + ((uu * _KBU) >> 8) + _OFF_B
    rgb = np.stack([r, g, b], axis=2) >> 6
    return np.clip(rgb, 0, 255).astype(np.uint8)
