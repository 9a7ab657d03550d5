"""The float32 erf and tanh of both paths on every float32 value of their interval, against the C library's double
functions (dev-only; needs the ``accel`` extra).

Usage: ``python tools/rational_ulp.py [erf|tanh] [--step K]`` (both when none is named; every K-th value; default
1: all 1,082,130,433 values of [0, 4] for erf, 1,091,698,689 of [0, 9.125] for tanh; about half a minute each on one
core). Prints the largest error in units in the last place of the float32 result and where it is, and whether the
compiled kernel (``onnxcore.kernels.accel``) and the numpy kernel (:mod:`onnxcore.kernels._rational`) gave the same
bits on every value. Beyond the interval both clamp the argument, where the function rounds to 1 in float32 (erf
from 3.92, tanh from 9.01); both functions are odd and both paths evaluate ``x * P(x^2) / Q(x^2)``, exactly odd,
so the negative values need no separate run (the tests check a sample of them, with the special values).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable

import numba
import numpy as np

from onnxcore.kernels import accel
from onnxcore.kernels._rational import erf32, tanh32
from onnxcore.kernels._rational_coef import ERF_CLAMP, TANH_CLAMP

CHUNK = 1 << 24


@numba.njit(cache=False, nogil=True)
def _ulps(x: np.ndarray, y: np.ndarray, tanh: bool) -> tuple[float, int]:  # pragma: no cover - compiled
    """The largest |y - f(x)| in ulps of float32 at f(x) (the reference in double), and its index."""
    worst, at = 0.0, -1
    for i in range(x.size):
        ref = math.tanh(np.float64(x[i])) if tanh else math.erf(np.float64(x[i]))
        r32 = np.float32(ref)
        # The ulp of the float32 result nearest the reference: the gap to the next float32 away from zero.
        gap = np.float64(np.nextafter(np.abs(r32), np.float32(np.inf))) - np.float64(np.abs(r32))
        if gap == 0.0:
            continue
        e = abs(np.float64(y[i]) - ref) / gap
        if e > worst:
            worst, at = e, i
    return worst, at


def check(name: str, fn: Callable[[np.ndarray], np.ndarray], hi: float, step: int) -> int:
    """Both paths of ``fn`` on every ``step``-th float32 of [0, hi]; the number of values where they differ."""
    last = int(np.float32(hi).view(np.uint32))
    t0 = time.perf_counter()
    worst, worst_x, count, differ = 0.0, 0.0, 0, 0
    for start in range(0, last + 1, CHUNK * step):
        bits = np.arange(start, min(last + 1, start + CHUNK * step), step, dtype=np.uint32)
        x = bits.view(np.float32)
        with accel.use(True):
            y = fn(x)
        with accel.use(False):
            y0 = fn(x)
        differ += int((y.view(np.uint32) != y0.view(np.uint32)).sum())
        e, at = _ulps(x, y, name == "tanh")
        if e > worst:
            worst, worst_x = e, float(x[at])
        count += x.size
    print(f"{name}: {count:,} float32 values of [0, {hi}]: largest error {worst:.4f} ulp (at x = {worst_x!r})")
    print(f"{name}: compiled and numpy results differ on {differ} of them ({time.perf_counter() - t0:.0f} s)")
    return differ


FUNCTIONS: dict[str, tuple[Callable[[np.ndarray], np.ndarray], float]] = {
    "erf": (erf32, ERF_CLAMP),
    "tanh": (tanh32, TANH_CLAMP),
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("functions", nargs="*", help="erf, tanh (default: both)")
    ap.add_argument("--step", type=int, default=1, help="take every STEP-th float32 value")
    args = ap.parse_args(argv)
    unknown = [n for n in args.functions if n not in FUNCTIONS]
    if unknown:
        ap.error(f"unknown function {unknown[0]!r}: one of {', '.join(FUNCTIONS)}")
    if not accel.available():
        print("the accelerator is not available (numba not installed, or ONNXCORE_ACCEL=0)", file=sys.stderr)
        return 2
    differ = sum(check(name, *FUNCTIONS[name], args.step) for name in args.functions or FUNCTIONS)
    return 0 if differ == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
