"""Light model zoo benchmark (issue 8): onnxcore.Session against onnxruntime and onnx.reference.

Every ``light_*.onnx`` in the onnx wheel (resnet50, inception_v1, inception_v2, densenet121,
squeezenet, shufflenet, vgg19, zfnet512, bvlc_alexnet) is run by:

- onnxcore.Session;
- onnxruntime with ``intra_op_num_threads=1`` (the target: median within 1.5x of it) and with its
  default thread count;
- onnx.reference.ReferenceEvaluator (target: every model at least 20x slower than onnxcore). Its time is
  also divided by onnxruntime single-threaded's (``reference / ORT 1 thread``): where that is under 20x,
  the target asks onnxcore to be faster than onnxruntime.

The single graph input is fed seeded random data of its declared shape (the wheel ships only the expected
outputs). The shipped models build every weight as ``ConstantOfShape`` of 0.02, which makes every output the
uniform distribution; the models are therefore run with seeded random weights (``tests/corpus.py``,
``with_random_weights``) so that "matches" means the computations agree, not only the shapes
(``--shipped-weights`` runs them as shipped; the timings are the same). Each engine gets one warm-up run, then
the best of ``--repeat`` timed runs (the engines taking turns) is reported; the reference evaluator is timed
``--reference-repeat`` times (once by default: it is slow). Outputs are checked against onnxruntime (rtol
1e-3, atol 1e-5). A Markdown table goes to stdout.

Usage: ``python benchmarks/bench_models.py [--repeat 5] [--blas-threads 1] [--no-reference]
[--reference-repeat 1] [--models resnet50 vgg19 ...] [--profile] [--floor] [--clock wall|cpu]
[--shipped-weights]``. onnxruntime single-threaded is compared fairly with ``--blas-threads 1``; on a loaded
machine OpenBLAS's spinning threads can make numpy's matmul an order of magnitude slower than with one thread.
``--profile`` prints onnxcore's time per operator type. ``--floor`` times the model's matrix products alone
with ``numpy.matmul`` on ready operands: no engine built on numpy's BLAS can run the model faster than that.
``--reference-repeat N`` keeps the best of N runs of the reference evaluator (default 1: it is slow, and
its single run is the noisiest column on a shared machine).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

# BLAS threads must be fixed before numpy loads OpenBLAS.
if "--blas-threads" in sys.argv:
    _n = sys.argv[sys.argv.index("--blas-threads") + 1]
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[_var] = _n

import numpy as np
import onnx
import onnxruntime as ort
from onnx.reference import ReferenceEvaluator

import onnxcore

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
import corpus
from bench_json import Recorder


def light_models(names: list[str] | None) -> list[Path]:
    paths = [p for p in corpus.shipped_models() if p.name.startswith("light_")]
    if names:
        paths = [p for p in paths if any(n in p.stem for n in names)]
    return paths


CLOCK: Callable[[], float] = time.perf_counter


def best_of(fns: list[Callable[[], Any]], repeat: int) -> tuple[list[float], list[Any]]:
    """Best time and last result of each engine; the engines take turns, so a change in the machine's
    load during the measurement affects all of them alike."""
    outs = [fn() for fn in fns]  # warm-up
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            t0 = CLOCK()
            outs[i] = fn()
            best[i] = min(best[i], CLOCK() - t0)
    return best, outs


def ort_session(model: bytes, threads: int | None) -> Any:
    so = ort.SessionOptions()
    if threads is not None:
        so.intra_op_num_threads = threads
    so.log_severity_level = 3
    return ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])


def profile_ops(sess: Any, feeds: dict[str, np.ndarray], repeat: int) -> Counter[str]:
    """Seconds per run spent in each operator type (a fused step counts for its first node's operator)."""
    acc: Counter[str] = Counter()
    for step in sess.profile(feeds, repeat=repeat):
        acc[step.op_type] += step.seconds
    return acc


def gemm_shapes(sess: Any, feeds: dict[str, np.ndarray]) -> list[tuple[int, int, int, int]]:
    """``(batch, M, K, N)`` of the matrix product each Conv, Gemm and MatMul step of one run amounts to."""
    plan = sess._plan
    shapes: list[tuple[int, int, int, int]] = []
    saved, saved_run = plan.steps, plan._run
    steps = []
    for st, bn in zip(plan.steps, plan.info):

        def spy(
            *a: Any, _fn: Any = st[0], _node: Any = bn.node, _call: Any = bn.call, _kw: Any = st[4], **k: Any
        ) -> Any:
            y = _fn(*a, **k)
            _op = _node.op_type
            if _op == "Conv":
                # A fused step (PreActivatedConv) holds its folded weights and takes the pieces of its input.
                w2 = getattr(_call, "w2", None)
                ws = a[1].shape if w2 is None else w2.shape
                g = int(_kw.get("group", 1))
                shapes.append((y.shape[0] * g, ws[0] // g, int(np.prod(ws[1:])), int(np.prod(y.shape[2:]))))
            elif _op in ("Gemm", "MatMul") and y.ndim == 2:
                shapes.append(
                    (
                        1,
                        y.shape[0],
                        a[0].shape[-1] if _op == "MatMul" or not _kw.get("transA") else a[0].shape[0],
                        y.shape[1],
                    )
                )
            return y

        steps.append((spy, *st[1:]))
    plan.steps, plan._run = steps, None
    try:
        sess.run(None, feeds)
    finally:
        plan.steps, plan._run = saved, saved_run
    return shapes


def gemm_floor(shapes: list[tuple[int, int, int, int]], repeat: int) -> float:
    """Seconds numpy's BLAS needs for those products alone, on contiguous operands (no im2col, no
    epilogue): a lower bound for any engine built on ``numpy.matmul``."""
    rng = np.random.default_rng(0)
    total = 0.0
    for b, m, k, n in shapes:
        w = rng.standard_normal((b, m, k)).astype(np.float32)
        cols = rng.standard_normal((b, k, n)).astype(np.float32)
        t, _ = best_of([lambda w=w, c=cols: np.matmul(w, c)], repeat)
        total += t[0]
    return total


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--blas-threads", type=int, default=None)
    ap.add_argument("--no-reference", action="store_true", help="skip onnx.reference (minutes)")
    ap.add_argument(
        "--reference-repeat",
        type=int,
        default=1,
        help="time onnx.reference this many times and keep the best (default 1: it takes seconds to minutes)",
    )
    ap.add_argument("--models", nargs="*", default=None)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument(
        "--shipped-weights",
        action="store_true",
        help="run the models as shipped (every weight 0.02: the output is uniform, so 'matches' proves shapes only)",
    )
    ap.add_argument(
        "--floor",
        action="store_true",
        help="also time the model's Conv/Gemm/MatMul products alone with numpy.matmul (a lower bound)",
    )
    ap.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="cpu: this process's CPU time, steadier on a loaded machine; only fair when every engine "
        "uses one thread (the ORT default-threads column then sums its threads' time)",
    )
    ap.add_argument("--json", type=Path, help="also write the table here (benchmarks/bench_json.py)")
    args = ap.parse_args()
    rec = Recorder(args.json, "bench_models.py")
    global CLOCK
    CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter

    rows = []
    for path in light_models(args.models):
        name, x = corpus.light_model_input(path)
        feeds = {name: x}
        proto = onnx.load(str(path)) if args.shipped_weights else corpus.with_random_weights(path)
        model = proto.SerializeToString()
        ours = onnxcore.Session(model)
        s1 = ort_session(model, 1)
        (t_ours, t_ort1), (out, ref) = best_of([lambda s=s, f=feeds: s.run(None, f) for s in (ours, s1)], args.repeat)
        # Apart: onnxruntime's pool threads spin after a run and would be charged to whatever runs next.
        sd = ort_session(model, None)
        (t_ortd,), _ = best_of([lambda s=sd, f=feeds: s.run(None, f)], args.repeat)
        del sd
        ok = bool(np.allclose(out[0], ref[0], rtol=1e-3, atol=1e-5))
        t_ref = float("nan")
        if not args.no_reference:
            ev = ReferenceEvaluator(proto)
            times = []
            for _ in range(max(1, args.reference_repeat)):
                t0 = CLOCK()
                ev.run(None, feeds)
                times.append(CLOCK() - t0)
            t_ref = min(times)
        floor = gemm_floor(gemm_shapes(ours, feeds), args.repeat) if args.floor else float("nan")
        rows.append((path.stem.removeprefix("light_"), t_ours, t_ort1, t_ortd, t_ref, floor, ok))
        print(f"# {path.stem}: done", file=sys.stderr, flush=True)
        if args.profile:
            prof = profile_ops(ours, feeds, max(1, args.repeat // 2))
            top = ", ".join(f"{k} {v * 1e3:.1f}" for k, v in prof.most_common(6))
            print(f"#   per op (ms): {top}", file=sys.stderr, flush=True)

    blas = os.environ.get("OPENBLAS_NUM_THREADS", "default")
    print(
        f"Light model zoo, best of {args.repeat} runs (ms, {args.clock} clock); BLAS threads: {blas}; "
        "ratio = onnxcore / other.\n"
    )
    columns = ["model", "onnxcore", "ORT 1 thread", "ratio", "ORT default", "ratio", "reference",
               "reference / onnxcore", "reference / ORT 1 thread", "matches"]  # fmt: skip
    print(rec.table(columns, ["---", *["---:"] * 8, ":---:"]))
    for model, t_o, t_1, t_d, t_r, _floor, ok in rows:
        ref_cells = [f"{t_r * 1e3:.0f}", f"{t_r / t_o:.0f}x", f"{t_r / t_1:.0f}x"] if t_r == t_r else ["-"] * 3
        print(rec.row([model, f"{t_o * 1e3:.1f}", f"{t_1 * 1e3:.1f}", f"{t_o / t_1:.2f}", f"{t_d * 1e3:.1f}",
                       f"{t_o / t_d:.2f}", *ref_cells, "yes" if ok else "NO"]))  # fmt: skip
    if rows:
        r1 = float(np.median([r[1] / r[2] for r in rows]))
        rd = float(np.median([r[1] / r[3] for r in rows]))
        print("\n" + rec.note(f"Median ratio to onnxruntime: {r1:.2f} (1 thread), {rd:.2f} (default threads)."))
        refs = [r[4] / r[1] for r in rows if r[4] == r[4]]
        if refs:
            print(
                rec.note(f"Reference evaluator / onnxcore: min {min(refs):.0f}x, median {float(np.median(refs)):.0f}x.")
            )
            orts = [r[4] / r[2] for r in rows if r[4] == r[4]]
            print(
                rec.note(
                    f"Reference evaluator / onnxruntime 1 thread: min {min(orts):.0f}x, "
                    f"median {float(np.median(orts)):.0f}x."
                )
            )
    if args.floor and rows:
        print(
            "\nBLAS floor: the model's Conv/Gemm/MatMul products alone as numpy.matmul on ready operands "
            "(no im2col, no other operator), against onnxruntime single-threaded running the whole model.\n"
        )
        print("| model | products alone | share of onnxcore's time | floor / ORT 1 thread |")
        print("|---|---:|---:|---:|")
        for model, t_o, t_1, _t_d, _t_r, floor, _ok in rows:
            print(f"| {model} | {floor * 1e3:.1f} | {floor / t_o:.0%} | {floor / t_1:.2f} |")
    rec.write()
    return 0 if all(r[-1] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
