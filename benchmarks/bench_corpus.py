"""Today's exporters' models (issue 27): onnxcore.Session against onnxruntime, one thread and default threads.

The corpus is made by ``corpus_models.py`` (cached in ``.cache/bench-corpus``; made on first use). Each model is
run by onnxcore and by onnxruntime in one process, the engines taking turns. Two processes, one per thread
setting:

- one thread: BLAS limited to one thread for onnxcore (``OPENBLAS_NUM_THREADS=1`` before numpy loads),
  onnxruntime with ``intra_op_num_threads=1``; one warm-up run each, then the best of at least ``--repeat`` runs,
  the engines taking turns run by run, more turns until each engine's timed runs add up to ``--min-time`` seconds
  (0.05 by default, at most 1,000 runs: five runs of a 10 us model put its best time 1.3-2x its usual one, on
  both engines; a model of 10 ms or more stays at ``--repeat``);
- default threads: both engines as they come (onnxruntime with its default options: a pool over the machine's
  cores; onnxcore with ``Session``'s default threads and numpy's BLAS threads), taking turns by blocks.

With ``--accel both`` a third process times onnxcore's pure-numpy path (``ONNXCORE_ACCEL=0``: no compiled loop,
what a plain install without the ``accel`` extra runs) at one thread the same way, against onnxruntime again; the
table shows it beside the accelerated figures.

Why blocks at default threads: an engine's idle threads keep a core busy for a while after its run ends
(onnxruntime's pool spins waiting for the next parallel section; OpenBLAS's threads busy-wait for work about
2^28 CPU cycles, some 0.1 s, after each call), so an engine run right after the other shares the cores with the
other's spinning threads. Taking turns run by run, resnet18 measured onnxcore 68 ms (33 alone) and onnxruntime
17 ms (10 alone); a pause before each run lets the spinning end but idles the machine, which makes the
millisecond graphs slower (cold caches, the CPU's idle states). So each turn is a block of one engine's runs: it
runs back to back, untimed, for ``--settle`` seconds (at least once: the other engine's threads settle while
this one keeps the cores busy), then ``--block`` timed runs; the blocks alternate ``--repeat`` times and the
best timed run counts. Measured (best of 7 blocks of 3 runs): resnet18 onnxcore 33 ms, onnxruntime 10.2-10.5 ms
with a settle of 0.05-0.3 s, as each engine alone (34, 10.0); without settling onnxruntime 17 ms.

Every output of both engines is compared with the framework's own output (``corpus_models.compare``). The table
gives each model's times and the ratio onnxcore / onnxruntime; then the median ratio overall and per family (a
classical-ML family per row count: "ML linear, 16 rows"), and per model a profile summary: the operator types
that hold onnxcore's time (``Session.profile``, one thread; a fused step is named by its head with ``+`` and what
is fused into it).

Usage: ``python benchmarks/bench_corpus.py [--repeat 5] [--min-time 0.05] [--threads both|1|default]
[--models bert gpt2 ...] [--settle 0.2] [--block 3] [--session-threads N] [--rounds N] [--accel both]
[--cache DIR] [--keep-blas-env] [--no-profile] [--json FILE] [--baseline EARLIER.json] [--table-only RESULTS.json]``.

Where a machine sets ``OPENBLAS_CORETYPE`` or ``OPENBLAS_L2_SIZE`` (forcing numpy's BLAS onto other kernels than
the CPU's own, while onnxruntime picks by the CPU), the timing processes run without them unless
``--keep-blas-env`` is given, and the table's BLAS line says what was unset (``bench_json.unforce_blas``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench_json import UNSET_NOTE_VAR, stamp, unforce_blas

HERE = Path(__file__).resolve().parent
_BLAS_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
ONE_THREAD = ("1", "numpy")
"""The worker modes run at one thread: "numpy" is the one-thread mode with the accelerator off."""


MAX_RUNS = 1000
"""The most timed runs per engine and model at one thread (``--min-time`` stops sooner on all but the smallest)."""


def _best_of(fns: list[Callable[[], Any]], repeat: int, min_time: float = 0.0) -> tuple[list[float], list[Any]]:
    """Best wall time and last result of each engine; the engines take turns (a change in the machine's load
    affects them alike): at least ``repeat`` turns, and more until each engine's timed runs add up to ``min_time``
    seconds (at most :data:`MAX_RUNS`), so that a model of microseconds gets as many chances at its best time as
    one of milliseconds has spread (five runs of a 10 us model leave its best time 1.3-2x its usual one)."""
    outs = [fn() for fn in fns]
    best = [float("inf")] * len(fns)
    spent = [0.0] * len(fns)
    runs = 0
    while runs < repeat or (min(spent) < min_time and runs < MAX_RUNS):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            outs[i] = fn()
            t = time.perf_counter() - t0
            best[i] = min(best[i], t)
            spent[i] += t
        runs += 1
    return best, outs


def _best_by_blocks(
    fns: list[Callable[[], Any]], repeat: int, *, settle: float, block: int
) -> tuple[list[float], list[Any]]:
    """Best wall time and last result of each engine, the engines taking turns by blocks: each block runs its
    engine untimed for ``settle`` seconds (at least once), then times ``block`` runs (see the module's text)."""
    outs = [fn() for fn in fns]
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            start = time.perf_counter()
            outs[i] = fn()
            while time.perf_counter() - start < settle:
                outs[i] = fn()
            for _ in range(block):
                t0 = time.perf_counter()
                outs[i] = fn()
                best[i] = min(best[i], time.perf_counter() - t0)
    return best, outs


def _profile_summary(sess: Any, feeds: dict[str, Any], top: int = 4) -> list[tuple[str, float]]:
    """The operator types holding onnxcore's time, as (label, share of the summed step time). Each step's time is
    its least over a few profiled runs: on a shared machine one run's spike would otherwise name the wrong step."""
    runs = [sess.profile(feeds, repeat=1) for _ in range(5)]
    steps = [min(group, key=lambda s: s.seconds) for group in zip(*runs)]
    by: dict[str, float] = defaultdict(float)
    for s in steps:
        label = s.op_type
        if s.fused:
            label += "+" + "+".join(sorted({f[1] for f in s.fused}))
        by[label] += s.seconds
    total = sum(by.values()) or 1.0
    return [(k, v / total) for k, v in sorted(by.items(), key=lambda kv: -kv[1])[:top]]


def blas_in_use() -> str:
    """numpy's BLAS and the kernels it runs (OpenBLAS: the CPU core it chose, which OPENBLAS_CORETYPE forces)."""
    import threadpoolctl  # a benchmark dependency (scikit-learn's)

    infos = [i for i in threadpoolctl.threadpool_info() if i.get("user_api") == "blas"]
    if not infos:
        return "unknown"
    i = infos[0]
    forced = os.environ.get("OPENBLAS_CORETYPE")
    where = f", forced by OPENBLAS_CORETYPE={forced}" if forced and i["internal_api"] == "openblas" else ""
    if os.environ.get(UNSET_NOTE_VAR):
        where += f" ({os.environ[UNSET_NOTE_VAR]} unset for the benchmark)"
    return f"{i['internal_api']} {i.get('version', '')}, {i.get('architecture', '?')} kernels{where}"


def worker(
    mode: str,
    names: Sequence[str] | None,
    repeat: int,
    cache: Path,
    profile: bool,
    *,
    settle: float = 0.2,
    block: int = 3,
    session_threads: int | None = None,
    min_time: float = 0.0,
) -> list[dict[str, Any]]:
    """Time every entry in this process (whose BLAS threads are already set for ``mode``): run by run at one
    thread (at least ``repeat`` turns, more until ``min_time`` seconds of each engine's runs), by blocks
    (``settle``, ``block``) at default threads; ``session_threads`` replaces ``Session``'s default threads in the
    default mode."""
    import numpy as np
    import onnxruntime as ort

    import onnxcore

    sys.path.insert(0, str(HERE))
    import corpus_ml
    import corpus_models as cm

    rows = []
    blas = blas_in_use()
    for entry in sorted(cm.ensure(cache, names), key=lambda e: (e.family, e.name)):
        feeds, expected = cm.load_entry(cache, entry)
        row: dict[str, Any] = {"name": entry.name, "family": corpus_ml.family_of(entry), "exporter": entry.exporter}
        row["blas"] = blas

        path = str(cache / entry.model)
        try:
            so = ort.SessionOptions()
            if mode in ONE_THREAD:
                so.intra_op_num_threads = 1
                so.inter_op_num_threads = 1
            ref = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
            ours = (
                onnxcore.Session(path) if session_threads is None else onnxcore.Session(path, threads=session_threads)
            )
        except Exception as e:
            row["error"] = f"{type(e).__name__}: {str(e)[:160]}"
            rows.append(row)
            print(f"[{mode}] {entry.name}: {row['error']}", file=sys.stderr)
            continue
        with np.errstate(all="ignore"):
            try:
                fns = [lambda o=ours, f=feeds: o.run(None, f), lambda r=ref, f=feeds: r.run(None, f)]
                if mode in ONE_THREAD:
                    (t_oc, t_ort), (o_oc, o_ort) = _best_of(fns, repeat, min_time)
                else:
                    (t_oc, t_ort), (o_oc, o_ort) = _best_by_blocks(fns, repeat, settle=settle, block=block)
            except Exception as e:
                row["error"] = f"{type(e).__name__}: {str(e)[:160]}"
                rows.append(row)
                print(f"[{mode}] {entry.name}: {row['error']}", file=sys.stderr)
                continue
        row.update(onnxcore=t_oc, onnxruntime=t_ort, ratio=t_oc / t_ort)
        # A ZipMap's maps compared as the matrix of their values (corpus_ml.as_arrays).
        row["onnxcore_check"] = cm.compare(corpus_ml.as_arrays(o_oc), expected, entry.exact_outputs)
        row["onnxruntime_check"] = cm.compare(corpus_ml.as_arrays(o_ort), expected, entry.exact_outputs)
        if profile:
            row["profile"] = _profile_summary(ours, feeds)
        rows.append(row)
        msg = f"{t_oc * 1e3:.2f} ms vs {t_ort * 1e3:.2f} ms ({t_oc / t_ort:.2f}x)"
        print(f"[{mode}] {entry.name}: {msg}", file=sys.stderr)
    return rows


def _ms(t: float | None) -> str:
    if t is None:
        return "-"
    return f"{t * 1e3:.2f} ms" if t < 0.1 else f"{t * 1e3:.0f} ms"


def _median(xs: list[float]) -> str:
    return f"{statistics.median(xs):.2f}x" if xs else "-"


def table(results: dict[str, list[dict[str, Any]]], before: dict[str, list[dict[str, Any]]] | None = None) -> str:
    """The Markdown report of both modes (with ``before``, an earlier run's results: its one-thread ratio too)."""
    one = {r["name"]: r for r in results.get("1", [])}
    dflt = {r["name"]: r for r in results.get("default", [])}
    pure = {r["name"]: r for r in results.get("numpy", [])}
    base = {r["name"]: r for r in (before or {}).get("1", [])}
    names = list(dict.fromkeys([*one, *dflt]))
    lines = [
        "| model | family | exporter | onnxcore, 1 thread | onnxruntime, 1 thread | ratio | onnxcore, default "
        "| onnxruntime, default | ratio | matches the framework |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    if pure:
        lines = [lines[0][:-1] + "| onnxcore, numpy, 1 thread | ratio, numpy |", lines[1] + "---:|---:|"]
    if before is not None:
        lines = [lines[0][:-1] + "| ratio before, 1 thread |", lines[1] + "---:|"]
    fam1: dict[str, list[float]] = defaultdict(list)
    famd: dict[str, list[float]] = defaultdict(list)
    famn: dict[str, list[float]] = defaultdict(list)
    all1: list[float] = []
    alld: list[float] = []
    alln: list[float] = []
    for n in names:
        a, b = one.get(n, {}), dflt.get(n, {})
        r = a or b
        checks = [x for x in (a.get("onnxcore_check"), b.get("onnxcore_check")) if x]
        err = a.get("error") or b.get("error")
        match = f"error: {err}" if err else ("no: " + checks[0] if checks else "yes")
        if a.get("onnxruntime_check"):
            match += f" (onnxruntime: {a['onnxruntime_check']})"
        ra, rb = a.get("ratio"), b.get("ratio")
        if ra is not None:
            fam1[r["family"]].append(ra)
            all1.append(ra)
        if rb is not None:
            famd[r["family"]].append(rb)
            alld.append(rb)
        lines.append(
            f"| {n} | {r['family']} | {r['exporter']} | {_ms(a.get('onnxcore'))} | {_ms(a.get('onnxruntime'))} "
            f"| {'-' if ra is None else f'{ra:.2f}x'} | {_ms(b.get('onnxcore'))} | {_ms(b.get('onnxruntime'))} "
            f"| {'-' if rb is None else f'{rb:.2f}x'} | {match} |"
        )
        if pure:
            c = pure.get(n, {})
            rc = c.get("ratio")
            if rc is not None:
                famn[r["family"]].append(rc)
                alln.append(rc)
            lines[-1] += f" {_ms(c.get('onnxcore'))} | {'-' if rc is None else f'{rc:.2f}x'} |"
        if before is not None:
            old = base.get(n, {}).get("ratio")
            lines[-1] += f" {'-' if old is None else f'{old:.2f}x'} |"
    lines += ["", f"Median ratio: **{_median(all1)}** at one thread ({len(all1)} models), "
              f"**{_median(alld)}** at default threads; worst at one thread: "
              + (f"{max(all1):.2f}x." if all1 else "-"), ""]  # fmt: skip
    if pure:
        lines[-2] += f" Pure-numpy path (`ONNXCORE_ACCEL=0`), one thread: **{_median(alln)}** ({len(alln)} models)."
    blas = next((r["blas"] for r in [*one.values(), *dflt.values()] if "blas" in r), None)
    if blas is not None:
        lines[-1:-1] = [f"numpy's BLAS: {blas}."]
    fam0: dict[str, list[float]] = defaultdict(list)
    for r in base.values():
        if r.get("ratio") is not None:
            fam0[r["family"]].append(r["ratio"])
    if before is not None:
        lines[-2] += f" Before: {_median([x for xs in fam0.values() for x in xs])} at one thread."
    head = "| family | models | median, 1 thread | range, 1 thread | median, default |"
    rule = "|---|---:|---:|---:|---:|"
    if pure:
        head, rule = head + " median, numpy, 1 thread |", rule + "---:|"
    if before is not None:
        head, rule = head + " median before, 1 thread |", rule + "---:|"
    lines += [head, rule]
    for fam in sorted(set(fam1) | set(famd)):
        xs = fam1.get(fam, [])
        rng = f"{min(xs):.2f}-{max(xs):.2f}x" if xs else "-"
        row = f"| {fam} | {len(xs)} | {_median(xs)} | {rng} | {_median(famd.get(fam, []))} |"
        if pure:
            row += f" {_median(famn.get(fam, []))} |"
        lines.append(row + (f" {_median(fam0.get(fam, []))} |" if before is not None else ""))
    profiled = [r for r in one.values() if r.get("profile")]
    if profiled:
        lines += ["", "Where onnxcore's time goes (one thread, share of the summed step time):", ""]
        for r in profiled:
            parts = ", ".join(f"{k} {v:.0%}" for k, v in r["profile"])
            lines.append(f"- {r['name']}: {parts}")
    return "\n".join(lines)


def _best_of_rounds(rounds: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """One row per model from several workers' rows: each engine's best time over the rounds (the ratio of the
    two), the first round's profile, each output check that failed in any round (``''`` when all passed); a
    model that failed to run in any round is reported with that round's error and no times."""
    merged: dict[str, dict[str, Any]] = {}
    for rows in rounds:
        for r in rows:
            m = merged.setdefault(r["name"], dict(r))
            if "error" in r or "error" in m:
                m.setdefault("error", r.get("error"))
                for key in ("onnxcore", "onnxruntime", "ratio"):
                    m.pop(key, None)
                continue
            m["onnxcore"] = min(m["onnxcore"], r["onnxcore"])
            m["onnxruntime"] = min(m["onnxruntime"], r["onnxruntime"])
            m["ratio"] = m["onnxcore"] / m["onnxruntime"]
            for key in ("onnxcore_check", "onnxruntime_check"):
                m[key] = m.get(key) or r.get(key, "")
    return list(merged.values())


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument(
        "--min-time",
        type=float,
        default=0.05,
        help="one thread: keep taking turns until each engine's timed runs add up to this many seconds "
        f"(at most {MAX_RUNS} runs; 0: exactly --repeat)",
    )
    ap.add_argument("--threads", choices=["both", "1", "default"], default="both")
    ap.add_argument("--models", nargs="*", help="substrings of the entry names to run")
    ap.add_argument("--settle", type=float, default=0.2, help="default threads: untimed seconds per block")
    ap.add_argument("--block", type=int, default=3, help="default threads: timed runs per block")
    ap.add_argument("--session-threads", type=int, help="default threads: Session(threads=N), not its default")
    ap.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="run each mode's worker this many times: each engine's best time over the rounds counts, and the "
        "median ratio of each round is printed (at default threads the median moves by about 0.1 between runs)",
    )
    ap.add_argument(
        "--accel",
        choices=["default", "both"],
        default="default",
        help="both: also time onnxcore's pure-numpy path (ONNXCORE_ACCEL=0) at one thread, in a process of its own",
    )
    ap.add_argument("--cache", type=Path, default=HERE.parent / ".cache" / "bench-corpus")
    ap.add_argument(
        "--keep-blas-env",
        action="store_true",
        help="time with OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE as the machine sets them (default: unset for the "
        "timing processes, said in the table; bench_json.unforce_blas)",
    )
    ap.add_argument("--no-profile", action="store_true")
    ap.add_argument("--json", type=Path, help="also write the raw results here, stamped (bench_json.stamp)")
    ap.add_argument("--baseline", type=Path, help="an earlier --json file: its one-thread ratios as columns")
    ap.add_argument("--table-only", type=Path, help="print the table of an earlier --json file, timing nothing")
    ap.add_argument("--worker", choices=["1", "default", "numpy"], help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    before = json.loads(args.baseline.read_text()) if args.baseline else None
    if args.table_only:
        print(table(json.loads(args.table_only.read_text()), before))
        return 0
    if args.worker:
        profile = not args.no_profile and args.worker == "1"
        rows = worker(
            args.worker,
            args.models,
            args.repeat,
            args.cache,
            profile,
            settle=args.settle,
            block=args.block,
            session_threads=args.session_threads if args.worker == "default" else None,
            min_time=args.min_time,
        )
        print(json.dumps(rows))
        return 0
    if not args.keep_blas_env:
        unforce_blas()  # before any numpy: the workers inherit the environment (bench_json.unforce_blas)
    sys.path.insert(0, str(HERE))
    import corpus_models as cm

    cm.ensure(args.cache, args.models)  # made once, before any timing
    results: dict[str, list[dict[str, Any]]] = {}
    modes = ["1", "default"] if args.threads == "both" else [args.threads]
    if args.accel == "both":
        modes.append("numpy")
    for mode in modes:
        env = dict(os.environ)
        for var in _BLAS_VARS:
            if mode in ONE_THREAD:
                env[var] = "1"
        if mode == "numpy":
            env["ONNXCORE_ACCEL"] = "0"
        cmd = [sys.executable, __file__, "--worker", mode, "--repeat", str(args.repeat), "--cache", str(args.cache)]
        cmd += ["--settle", str(args.settle), "--block", str(args.block), "--min-time", str(args.min_time)]
        if args.session_threads is not None:
            cmd += ["--session-threads", str(args.session_threads)]
        if args.models:
            cmd += ["--models", *args.models]
        if args.no_profile:
            cmd.append("--no-profile")
        rounds = []
        for _ in range(max(1, args.rounds)):
            proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, text=True, check=False)
            if proc.returncode != 0:
                print(f"worker {mode} failed with exit code {proc.returncode}", file=sys.stderr)
                return 1
            rounds.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        results[mode] = _best_of_rounds(rounds)
        if len(rounds) > 1:
            medians = ", ".join(_median([r["ratio"] for r in rows if "ratio" in r]) for rows in rounds)
            print(f"[{mode}] median ratio of each round: {medians}", file=sys.stderr)
    if args.json:  # the results by mode, and where they were measured (read by tools/performance_page.py)
        args.json.write_text(json.dumps({"meta": stamp("bench_corpus.py"), **results}, indent=1))
    print(table(results, before))
    return 0


if __name__ == "__main__":
    sys.exit(main())
