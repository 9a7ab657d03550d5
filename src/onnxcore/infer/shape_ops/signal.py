"""Shape rules (Clause 9) of the signal operators, the family of :mod:`onnxcore.kernels.signal`: DFT, STFT,
MelWeightMatrix and the window generators (HannWindow, HammingWindow, BlackmanWindow).

The family has the kernels' module name (issue 37): a new operator touches its kernel module and this one.
"""

from __future__ import annotations

from onnxcore.infer.shape_core import (
    Extent,
    ShapeContext,
    ShapeT,
    shape_rule,
    unify,
)
from onnxcore.infer.shape_ops.linalg import _scalar

__all__: list[str] = []


def _complex_last(ctx: ShapeContext, d: Extent, what: str) -> None:
    if isinstance(d, int) and d not in (1, 2):
        ctx.fail(f"{what}: the last axis holds a real (1) or complex (2) value, got extent {d}")


@shape_rule("DFT")
def _dft(ctx: ShapeContext) -> list[ShapeT | None]:
    x = ctx.shape(0)
    if x is None or len(x) < 2:
        return [None]
    r = len(x)
    _complex_last(ctx, x[-1], "DFT input")
    inverse, onesided = bool(ctx.attr("inverse", 0)), bool(ctx.attr("onesided", 0))
    irfft = inverse and onesided
    if onesided and x[-1] == (1 if inverse else 2):
        # A one-sided forward transform takes real input only, a one-sided inverse complex input only.
        ctx.fail(f"DFT with onesided=1, inverse={int(inverse)} cannot take a last axis of extent {x[-1]}")
    # DFT-17: axis attribute (default 1); DFT-20: axis input 2 (default -2).
    axis = ctx.attr("axis", 1) if ctx.since < 20 else (_scalar(ctx, 2) if ctx.present(2) else -2)
    out = [*x[:-1], 1 if irfft else 2]
    length = _scalar(ctx, 1)
    if axis is None:
        # Unknown axis: only a full-length two-sided transform keeps every extent.
        return [tuple(out) if not ctx.present(1) and not onesided else (None,) * (r - 1) + (out[-1],)]
    a = axis + r if axis < 0 else axis
    if not 0 <= a <= r - 2:
        ctx.fail(f"DFT axis {axis} is out of range for rank {r} (the last axis holds the complex parts)")
    d = x[a]
    n: Extent
    if ctx.present(1):
        n = length
    elif irfft:
        n = 2 * (d - 1) if isinstance(d, int) else None  # the IRFFT default dft_length
    else:
        n = d
    out[a] = (n // 2 + 1 if isinstance(n, int) else None) if onesided and not inverse else n
    return [tuple(out)]


@shape_rule("STFT")
def _stft(ctx: ShapeContext) -> list[ShapeT | None]:
    s = ctx.shape(0)
    # signal: [batch, length, 1 or 2]; onnxruntime also reads a rank-2 signal as real.
    if s is None or len(s) not in (2, 3):
        return [None]
    if len(s) == 3:
        _complex_last(ctx, s[2], "STFT signal")
    batch, length = s[0], s[1]
    w = ctx.shape(2) if ctx.present(2) else None
    wlen = w[0] if w is not None and len(w) == 1 else None
    fl: Extent
    if ctx.present(3):
        fl = _scalar(ctx, 3)
        if ctx.present(2):
            fl = unify(ctx, fl, wlen, "STFT frame_length and the window length")
    else:
        fl = wlen if ctx.present(2) else length  # the definition's defaults
    step = _scalar(ctx, 1)
    frames: Extent = None
    if fl == length and fl is not None:
        frames = 1
    elif isinstance(length, int) and isinstance(fl, int) and step is not None and step > 0 and length >= fl:
        frames = (length - fl) // step + 1
    bins = (fl // 2 + 1 if isinstance(fl, int) else None) if ctx.attr("onesided", 1) else fl
    return [(batch, frames, bins, 2)]


@shape_rule("MelWeightMatrix")
def _mel_weight_matrix(ctx: ShapeContext) -> list[ShapeT | None]:
    bins, length = _scalar(ctx, 0), _scalar(ctx, 1)
    return [(None if length is None else length // 2 + 1, bins)]


@shape_rule("BlackmanWindow", "HammingWindow", "HannWindow")
def _window(ctx: ShapeContext) -> list[ShapeT | None]:
    size = _scalar(ctx, 0)
    return [(size if size is not None and size >= 0 else None,)]
