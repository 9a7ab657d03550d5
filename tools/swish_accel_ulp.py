"""The float32 SiLU ``x * sigmoid(x)`` of both paths on every float32 value of [-104, 104], against the value computed
in double (dev-only; needs the ``accel`` extra).

Usage: ``python tools/swish_accel_ulp.py [--step K] [--alpha A]`` (every K-th value; default 1, all 2,229,088,258 of
them; a few minutes of one core). Prints, for the compiled kernel (``onnxcore.kernels.accel``'s ``swish32``, the
fused SiLU step and Swish-24 with the accelerator) and for the numpy kernel (``x / (1 + exp(-x))`` in float32, the
reference the tests compare with), the largest error in units in the last place of the float32 result nearest the
double value, where it is, and the largest absolute error among subnormal results (there an ulp is a subnormal's,
and the numpy path itself flushes to -0 from x = -88.7). Beyond 104 in magnitude both paths give
``x`` (positive) or -0 (negative).
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import numba
import numpy as np

from onnxcore.kernels import accel
from onnxcore.kernels.fused.passes import swish_accel

CHUNK = 1 << 24
TINY = 2.0**-126  # the least normal float32


@numba.njit(cache=False, nogil=True)
def _errors(x: np.ndarray, y: np.ndarray, alpha: float) -> tuple[float, int, float]:  # pragma: no cover
    """The largest |y - silu(x)| in ulps of float32 at silu(x) (the reference in double) among results of at least
    TINY in magnitude, its index, and the largest absolute error among the smaller ones."""
    worst, at, tiny = 0.0, -1, 0.0
    for i in range(x.size):
        v = np.float64(x[i])
        a = np.float64(np.float32(alpha) * x[i])  # the argument as both kernels make it: a float32 product
        ref = v / (1.0 + math.exp(-a)) if a > -700.0 else 0.0
        err = abs(np.float64(y[i]) - ref)
        if abs(ref) < TINY:
            tiny = max(tiny, err)
            continue
        r32 = np.float32(ref)
        gap = np.float64(np.nextafter(np.abs(r32), np.float32(np.inf))) - np.float64(np.abs(r32))
        e = err / gap
        if e > worst:
            worst, at = e, i
    return worst, at, tiny


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--step", type=int, default=1, help="take every STEP-th float32 value")
    ap.add_argument("--alpha", type=float, default=1.0, help="Swish's alpha (SiLU: 1)")
    args = ap.parse_args(argv)
    if not accel.available():
        print("the accelerator is not available (numba not installed, or ONNXCORE_ACCEL=0)", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    last = int(np.float32(104.0).view(np.uint32))
    stats = {"compiled": [0.0, 0.0, 0.0], "numpy": [0.0, 0.0, 0.0]}  # worst ulp, its x, worst tiny abs
    count = 0
    alpha = np.float32(args.alpha)
    for sign in (0, 1 << 31):
        for start in range(0, last + 1, CHUNK * args.step):
            bits = np.arange(start, min(last + 1, start + CHUNK * args.step), args.step, dtype=np.uint32) | sign
            x = bits.view(np.float32)
            with accel.use(True):
                y = swish_accel(x, args.alpha)
            assert y is not None
            with np.errstate(over="ignore"):
                y0 = x / (np.exp(x * -alpha) + np.float32(1.0))
            for name, got in (("compiled", y), ("numpy", y0)):
                e, at, tiny = _errors(x, got, args.alpha)
                s = stats[name]
                if e > s[0]:
                    s[0], s[1] = e, float(x[at])
                s[2] = max(s[2], tiny)
            count += x.size
    print(f"{count:,} float32 values of [-104, 104], alpha {args.alpha} ({time.perf_counter() - t0:.0f} s):")
    for name, (e, at, tiny) in stats.items():
        print(
            f"  {name}: largest error {e:.3f} ulp (at x = {at!r}); subnormal results: largest absolute error {tiny:.3g}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
