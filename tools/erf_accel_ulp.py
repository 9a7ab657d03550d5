"""The float32 erf of both paths on every float32 value of [0, 4], against the C library's double erf (dev-only;
needs the ``accel`` extra).

Usage: ``python tools/erf_accel_ulp.py [--step K]`` (every K-th value; default 1, all 1,082,130,433 of them; about
two minutes of one core). Prints the largest error in units in the last place of the float32 result and where it
is, and whether the compiled kernel (``onnxcore.kernels.accel``) and the numpy kernel gave the same bits on every
value. Beyond 4 both clamp the argument, and erf rounds to 1 in float32 from 3.92; erf is odd and both paths
evaluate ``x * P(x^2) / Q(x^2)``, exactly odd, so the negative values need no separate run (the tests check a
sample of them, with the special values).
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import numba
import numpy as np

from onnxcore.kernels import accel
from onnxcore.kernels.elementwise import erf

CHUNK = 1 << 24
LAST = int(np.float32(4.0).view(np.uint32))


@numba.njit(cache=False, nogil=True)
def _ulps(x: np.ndarray, y: np.ndarray) -> tuple[float, int]:  # pragma: no cover - compiled
    """The largest |y - erf(x)| in ulps of float32 at erf(x) (the reference in double), and its index."""
    worst, at = 0.0, -1
    for i in range(x.size):
        ref = math.erf(np.float64(x[i]))
        r32 = np.float32(ref)
        # The ulp of the float32 result nearest the reference: the gap to the next float32 away from zero.
        gap = np.float64(np.nextafter(np.abs(r32), np.float32(np.inf))) - np.float64(np.abs(r32))
        if gap == 0.0:
            continue
        e = abs(np.float64(y[i]) - ref) / gap
        if e > worst:
            worst, at = e, i
    return worst, at


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--step", type=int, default=1, help="take every STEP-th float32 value")
    args = ap.parse_args(argv)
    if not accel.available():
        print("the accelerator is not available (numba not installed, or ONNXCORE_ACCEL=0)", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    worst, worst_x, count, differ = 0.0, 0.0, 0, 0
    for start in range(0, LAST + 1, CHUNK * args.step):
        bits = np.arange(start, min(LAST + 1, start + CHUNK * args.step), args.step, dtype=np.uint32)
        x = bits.view(np.float32)
        with accel.use(True):
            y = erf(x)
        with accel.use(False):
            y0 = erf(x)
        differ += int((y.view(np.uint32) != y0.view(np.uint32)).sum())
        e, at = _ulps(x, y)
        if e > worst:
            worst, worst_x = e, float(x[at])
        count += x.size
    print(f"{count:,} float32 values of [0, 4]: largest error {worst:.4f} ulp (at x = {worst_x!r})")
    print(f"compiled and numpy results differ on {differ} of them ({time.perf_counter() - t0:.0f} s)")
    return 0 if differ == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
