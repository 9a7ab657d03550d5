"""Memory of ``onnxcore optimize`` on the ~2.5 GiB model of ``make_big_model.py``, stage by stage (issue 39 item 4).

The goal: a single model file over 2 GiB optimized with peak memory under 1 GiB, resident and anonymous. Each run is
a fresh process (``--child``) that optimizes the model and writes the result (``save_optimized``) while a thread
reads ``/proc/self/status`` every 10 ms: the peak resident set (``VmRSS``, which counts the pages of the mapped model
file and of the spill file this process has resident), its file-backed part (``RssFile``) and the peak anonymous
memory (``RssAnon``, what the process allocated), per stage (load, check, rewrite, annotate, verify, write; the
stage names are the optimizer's steps, found by name and left out where the optimizer has none). The overall peak
resident set is the kernel's own high-water mark (``VmHWM``, exact: no peak between two samples is missed).

Runs: the single file and the external-data variant, each with verification and with ``verify=False``. The
verification evaluates the original and the result on generated inputs, reading every weight; its sessions drop
each mapped weight's pages after the weight's last reader in a run (lean memory, ``onnxcore.external.spill``), so
that the resident set holds about one weight of the file at a time, not the whole file. The exit status is 1 when a
single-file run misses the goal: peak resident (``VmHWM``) or anonymous memory over 1 GiB, in either mode.

Usage: ``OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_big_memory.py [--big-dir DIR]
[--work DIR] [--cases single external] [--modes verify no-verify]`` (the model is made in ``--big-dir`` if missing;
about 45 s; the runs take 15-60 s each, more when a verification fails and is bisected).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
GOAL = 1 << 30
_STAGES = (("load", "load"), ("check", "check"), ("rewrite", "rewrite_model"), ("annotate", "annotate"),
           ("verify", "_prove"))  # fmt: skip


def _status() -> dict[str, int]:
    out: dict[str, int] = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "RssAnon", "RssFile", "VmHWM"):
            out[key] = int(value.split()[0]) * 1024
    return out


class _Meter:
    """Peaks of VmRSS and RssAnon, overall and since the last :meth:`lap`."""

    def __init__(self) -> None:
        self.total = {"rss": 0, "anon": 0, "file": 0}
        self.lap_peak = {"rss": 0, "anon": 0, "file": 0}
        self._stop = threading.Event()
        threading.Thread(target=self._poll, daemon=True).start()

    def _poll(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(0.01)

    def sample(self) -> None:
        s = _status()
        for key, field in (("rss", "VmRSS"), ("anon", "RssAnon"), ("file", "RssFile")):
            self.total[key] = max(self.total[key], s.get(field, 0))
            self.lap_peak[key] = max(self.lap_peak[key], s.get(field, 0))

    def lap(self) -> dict[str, int]:
        self.sample()
        got = dict(self.lap_peak)
        self.lap_peak = {"rss": 0, "anon": 0, "file": 0}
        return got


def child(src: str, out: str, verify: bool) -> dict[str, Any]:
    meter = _Meter()
    import onnxcore.optimizer.api as api
    from onnxcore.optimizer import optimize, save_optimized

    stages: list[dict[str, Any]] = []

    def timed(label: str, fn: Any) -> Any:
        def run(*a: Any, **k: Any) -> Any:
            meter.lap()
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                stages.append({"stage": label, "seconds": time.perf_counter() - t0, **meter.lap()})

        return run

    for label, name in _STAGES:
        if hasattr(api, name):
            setattr(api, name, timed(label, getattr(api, name)))
    t0 = time.perf_counter()
    answer: dict[str, Any] = {}
    try:
        model, report = optimize(src, verify=verify)
        timed("write", save_optimized)(model, out)
        answer["verified"] = bool(report.verified)
    except Exception as e:  # an outcome of the run, reported with its memory
        answer["error"] = f"{type(e).__name__}: {' '.join(str(e).split())[:300]}"
    answer["seconds"] = time.perf_counter() - t0
    meter.sample()
    hwm = _status().get("VmHWM", 0)
    answer.update(peak_rss=max(hwm, meter.total["rss"]), peak_anon=meter.total["anon"], stages=stages)
    return answer


def _mib(n: int) -> str:
    return f"{n / 2**20:,.0f} MiB"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--big-dir", type=Path, default=ROOT / ".cache" / "big-model")
    ap.add_argument("--work", type=Path, default=None, help="where results are written (default: beside the model)")
    ap.add_argument("--cases", nargs="*", default=["single", "external"], choices=["single", "external"])
    ap.add_argument("--modes", nargs="*", default=["no-verify", "verify"], choices=["verify", "no-verify"])
    ap.add_argument("--child", nargs=3, metavar=("SRC", "OUT", "MODE"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        src, out, mode = args.child
        print(json.dumps(child(src, out, mode == "verify")))
        return 0
    files = {"single": args.big_dir / "big_single.onnx", "external": args.big_dir / "big_external.onnx"}
    if not all(files[c].exists() for c in args.cases):
        subprocess.run([sys.executable, str(HERE / "make_big_model.py"), "--out", str(args.big_dir)], check=True)
    work = args.work or args.big_dir / "memory-out"
    missed = False
    for case in args.cases:
        for mode in args.modes:
            if work.exists():
                shutil.rmtree(work)  # one result on disk at a time: each is 2.5 GiB
            work.mkdir(parents=True)
            cmd = [sys.executable, str(Path(__file__).resolve()), "--child", str(files[case]), str(work / "out.onnx"),
                   mode]  # fmt: skip
            proc = subprocess.run(cmd, capture_output=True, text=True)
            lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
            if not lines:
                print(f"{case}, {mode}: exit {proc.returncode}: {proc.stderr.strip()[-300:]}")
                missed = True
                continue
            r = json.loads(lines[-1])
            outcome = r.get("error") or ("verified" if r.get("verified") else "written, not verified")
            print(f"{case}, {mode}: {r['seconds']:.1f} s, peak {_mib(r['peak_rss'])} resident (VmHWM), "
                  f"{_mib(r['peak_anon'])} anonymous; {outcome}")  # fmt: skip
            for s in r["stages"]:
                print(f"    {s['stage']:9s} {s['seconds']:6.1f} s  peak {_mib(s['rss']):>10s} resident "
                      f"{_mib(s['anon']):>10s} anonymous {_mib(s['file']):>10s} file")  # fmt: skip
            if case == "single" and (r["peak_anon"] >= GOAL or r["peak_rss"] >= GOAL):
                missed = True
    shutil.rmtree(work, ignore_errors=True)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
