"""Checked ``Session`` creation time (run: ``python benchmarks/bench_session.py``).

``onnxcore.Session(model)`` validates the model (Clause 15.5), infers its types and shapes, binds every node
and lays out the plan. The time is measured on the light model zoo (the onnx wheel's ``light_*.onnx``) and on
a 50,000-node chain (alternating Add and Relu), each the best of ``--repeat`` creations from a decoded model,
with ``check=True`` (the default) and ``check=False`` side by side; the difference is what checking costs.
Run it on two commits to compare them.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus
from bench_check import build_chain

import onnxcore


def _best(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--chain", type=int, default=50_000, help="nodes of the chain (default 50,000)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        chain = Path(tmp) / "chain.onnx"
        build_chain(chain, args.chain)
        paths = sorted(p for p in corpus.shipped_models() if p.name.startswith("light_"))
        rows = []
        for path in [*paths, chain]:
            model = onnxcore.load(path)
            checked = _best(lambda m=model: onnxcore.Session(m), args.repeat)
            unchecked = _best(lambda m=model: onnxcore.Session(m, check=False), args.repeat)
            name = path.stem.removeprefix("light_")
            if path == chain:
                name = f"chain of {args.chain:,} nodes"
            rows.append((name, checked, unchecked))
    print("| model | Session(model) | Session(model, check=False) |")
    print("|---|---:|---:|")
    for name, c, u in rows:
        print(f"| {name} | {c * 1e3:,.0f} ms | {u * 1e3:,.0f} ms |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
