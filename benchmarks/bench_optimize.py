"""``onnxcore.optimize`` against onnxsim, onnxslim and onnxoptimizer (issue 39), judged by onnxruntime.

Per model and per tool (the original, onnxcore, onnxsim, onnxslim, onnxoptimizer; the anchors are pinned in the
``bench`` extra and run with their defaults, as a user runs them):

- **optimize**: each tool runs in a fresh subprocess (``--child``), which loads the model, optimizes it and
  writes the result (external data beside it when the input had external data or is over 1.5 GiB). The parent
  times the subprocess's work (measured inside it, imports excluded) and its peak memory: the peak resident set
  (the child's ``VmHWM`` at its end, which includes pages of memory-mapped files; ``ru_maxrss`` of ``os.wait4``
  where the child died) and the peak of its anonymous memory (``RssAnon`` polled from ``/proc`` every 20 ms:
  the memory the process allocated, not file pages the kernel can drop). A tool that raises, exits or runs out
  of the time limit is a cell ``fails: <reason>``.
- **judged** in another subprocess (``--evaluate``), by onnx and onnxruntime, never by onnxcore: node count (the
  graph's and its subgraphs'; ``onnx.load`` without external data, or onnxcore's lazy loader for a single file
  over 2 GiB, which onnx cannot read), file size (the model file plus the external data files it references),
  ``onnx.checker.check_model(path, full_check=True)`` (not on a single file over 2 GiB), and **whether the
  result computes the same**: onnxruntime with its graph optimizations off (``ORT_DISABLE_ALL``: the graph as
  written) runs the original and the result on seeded random inputs with every dimension variable set to the
  base size (the corpus feeds' size, else 2), to 1, and to base + 1 (a setting the original itself refuses is
  skipped; a model without dimension variables: two draws at its shapes), outputs compared by position: floats
  within rtol 1e-3 and atol 1e-4 x max(1, largest magnitude of the original's output), labels
  (integer outputs) differing on at most 1 % (the corpus's own rule), shapes and types equal;
- **onnxruntime time** of the result: one thread (``intra_op_num_threads=1``, ``inter_op_num_threads=1``),
  default graph optimizations, the base-size inputs, in two fresh sessions per variant and variant compared (ten
  for the original and four tools), made in an order rotated every second session; in each, the variants take
  turns run by run in an order rotated each round, until each has run ``ORT_BUDGET`` seconds over its sessions
  (at least ``--repeat`` rounds each); a session's time is its best run, a variant's the median of its sessions
  (a model over 1 GiB: each variant alone, one after the other).

Models: the light zoo (``light_*`` of the onnx wheel, with the seeded random weights of ``tests/corpus.py``, and
two as shipped, whose weights are ``ConstantOfShape`` nodes: folding them grows the file), the corpus of issue 27
(``corpus_models.py``; ``--cache DIR``, made there if missing) and the ~2.5 GiB model of ``make_big_model.py``
(``--big-dir DIR``, made there if missing; ``--no-big`` skips it), as one file over 2 GiB (judged against its
external-data twin, which onnxruntime can load) and with external data.

Usage: ``python benchmarks/bench_optimize.py [--quick] [--groups zoo corpus big] [--models NAME ...]
[--tools onnxcore onnxsim ...] [--cache DIR] [--big-dir DIR] [--work DIR] [--repeat 5] [--timeout 900]
[--json benchmarks/results/optimize.json] [--reuse EARLIER.json ...] [--table-only RESULTS.json]``.
``--reuse`` keeps an earlier run's rows for the models this run does not measure (each row names the onnxcore it
measured). ``--quick``: 13 models (three of the zoo, two of them also as shipped, and the corpus entries whose
names contain one of ``QUICK_CORPUS``), no big model: 2-5 minutes. The whole set took 37 minutes on two cores
shared with other work (zoo and corpus 29, the big model 8). Run it with ``OMP_NUM_THREADS=1
OPENBLAS_NUM_THREADS=1``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
ANCHORS = ("onnxsim", "onnxslim", "onnxoptimizer")
TOOLS = ("onnxcore", *ANCHORS)
COLUMNS = ("original", *TOOLS)
EXTERNAL_ABOVE = int(1.5 * 2**30)  # results of inputs at least this large are written with external data
PROTOBUF_LIMIT = 2**31 - 1
BIG_TOTAL = 2**30  # a model over this is evaluated a variant at a time
QUICK_ZOO = ("squeezenet", "resnet50", "inception_v1")
QUICK_CORPUS = ("resnet18-dynamo", "resnet18-torchscript", "bert-dynamo", "gpt2-torchscript", "llama-dynamo")
QUICK_CORPUS += ("random_forest-1",)
SHIPPED_ZOO = ("squeezenet", "inception_v1")  # also benchmarked as shipped (weights are ConstantOfShape nodes)
RTOL = 1e-3
ATOL_SCALE = 1e-4


@dataclass
class Case:
    """One model to optimize: where it is, what onnxruntime evaluates as the original, where its feeds are."""

    name: str
    group: str
    path: str
    reference: str = ""  # the original as onnxruntime loads it (a single file over 2 GiB: its external twin)
    feeds: str = ""  # an npz with in:<name> arrays (the corpus's), whose shapes and values set the inputs
    exact_outputs: list[int] = field(default_factory=list)


# ------------------------------------------------------------------------------------------------ the models


def zoo_cases(work: Path, names: list[str] | None, quick: bool) -> list[Case]:
    """The light zoo with seeded random weights (written under ``work``), and two as shipped."""
    sys.path.insert(0, str(ROOT / "tests"))
    import corpus  # tests/corpus.py: the wheel's models and with_random_weights
    import onnx

    out = []
    (work / "zoo").mkdir(parents=True, exist_ok=True)
    for p in corpus.shipped_models():
        if not p.name.startswith("light_"):
            continue
        short = p.stem.removeprefix("light_")
        if quick and short not in QUICK_ZOO:
            continue
        if short in SHIPPED_ZOO:
            out.append(Case(f"{short} (shipped)", "zoo", str(p)))
        target = work / "zoo" / f"{short}.onnx"
        if not target.exists():
            onnx.save(corpus.with_random_weights(p), str(target))
        out.append(Case(short, "zoo", str(target)))
    return [c for c in out if not names or any(n in c.name for n in names)]


def corpus_cases(cache: Path, names: list[str] | None, quick: bool) -> list[Case]:
    """The corpus of issue 27 (made in ``cache`` if missing)."""
    sys.path.insert(0, str(HERE))
    import corpus_models as cm

    wanted = list(QUICK_CORPUS) if quick and not names else names
    entries = cm.ensure(cache, wanted)
    return [
        Case(e.name, "corpus", str(cache / e.model), feeds=str(cache / e.data), exact_outputs=list(e.exact_outputs))
        for e in sorted(entries, key=lambda e: (e.family, e.name))
        if (cache / e.model).exists()
    ]


def big_cases(big_dir: Path) -> list[Case]:
    """The ~2.5 GiB model of make_big_model.py, one file and external data (made in ``big_dir`` if missing)."""
    single, external = big_dir / "big_single.onnx", big_dir / "big_external.onnx"
    if not single.exists() or not external.exists():
        subprocess.run([sys.executable, str(HERE / "make_big_model.py"), "--out", str(big_dir)], check=True)
    return [
        Case("big, one file", "big", str(single), reference=str(external)),
        Case("big, external data", "big", str(external)),
    ]


# ------------------------------------------------------------------------------------- the optimizing child


def _uses_external_data(path: Path) -> bool:
    if path.stat().st_size >= EXTERNAL_ABOVE:
        return True
    import onnx

    m = onnx.load(str(path), load_external_data=False)
    return any(t.data_location == onnx.TensorProto.EXTERNAL for t in m.graph.initializer)


def _save_onnx(model: Any, out: Path, external: bool) -> None:
    import onnx

    if external:
        onnx.save(model, str(out), save_as_external_data=True, location=out.name + ".data")
    else:
        onnx.save(model, str(out))


def _stored_feeds(feeds: str) -> list[dict[str, Any]] | None:
    """The corpus entry's stored feeds (``in:<name>`` arrays, as ``corpus_models.load_entry`` reads them): real data
    for onnxcore's proof, where generated inputs cannot satisfy a model whose inputs are related."""
    if not feeds:
        return None
    import numpy as np

    with np.load(feeds) as z:
        return [{k[3:]: z[k] for k in z.files if k.startswith("in:")}]


def child(tool: str, src: Path, out: Path, feeds: str = "") -> dict[str, Any]:
    """Optimize ``src`` into ``out`` with ``tool``; what happened (seconds of the work, imports excluded). onnxcore
    is given ``feeds`` (the corpus entry's npz) to verify on, besides its generated inputs."""
    external = _uses_external_data(src)
    info: dict[str, Any] = {}
    if tool == "onnxcore":
        import onnxcore

        t0 = time.perf_counter()
        if not hasattr(onnxcore, "optimize"):
            raise RuntimeError("onnxcore.optimize does not exist in this onnxcore")
        stored = _stored_feeds(feeds)
        # A path: external data stays in its file until written.
        model, report = onnxcore.optimize(str(src), inputs=stored) if stored else onnxcore.optimize(str(src))
        try:
            from onnxcore.optimizer import save_optimized  # the optimizer's own writer (streams untouched data)
        except ImportError:
            onnxcore.save(model, str(out), external_data=external, location=out.name + ".data" if external else None)
        else:
            save_optimized(model, str(out), external=external or None)
        seconds = time.perf_counter() - t0
        got = report.to_json() if hasattr(report, "to_json") else repr(report)
        info["report"] = json.loads(got) if isinstance(got, str) and got.startswith("{") else got
    elif tool == "onnxsim":
        import onnxsim

        t0 = time.perf_counter()
        _model, ok = onnxsim.simplify(str(src), output_path=str(out))
        seconds = time.perf_counter() - t0
        if not ok:
            raise RuntimeError("onnxsim's own check says the simplified model differs")
    elif tool == "onnxslim":
        import onnxslim

        t0 = time.perf_counter()
        onnxslim.slim(str(src), str(out))
        seconds = time.perf_counter() - t0
    elif tool == "onnxoptimizer":
        import onnx
        import onnxoptimizer

        t0 = time.perf_counter()
        model = onnx.load(str(src))
        _save_onnx(onnxoptimizer.optimize(model), out, external)
        seconds = time.perf_counter() - t0
    else:
        raise ValueError(f"unknown tool {tool!r}")
    if not out.exists():
        raise RuntimeError("wrote no model")
    return {"seconds": seconds, **info}


def _status(pid: int | str, field_name: str) -> int:
    """A memory field of ``/proc/<pid>/status`` in bytes (0 where there is none)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field_name + ":"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def run_child(args: list[str], timeout: float, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run this script in a fresh process; its JSON answer plus ``peak_rss`` and ``peak_anon`` (bytes), or
    ``error``."""
    cmd = [sys.executable, str(Path(__file__).resolve()), *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    peak = [0]
    done = threading.Event()

    def poll() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _status(proc.pid, "RssAnon"))
            done.wait(0.02)

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    timer = threading.Timer(timeout, proc.kill)
    timer.start()
    # Read the pipes on threads: a chatty child must not block on a full pipe while we wait for it.
    streams: dict[str, str] = {}
    readers = [
        threading.Thread(target=lambda n=n, s=s: streams.__setitem__(n, s.read()), daemon=True)
        for n, s in (("out", proc.stdout), ("err", proc.stderr))
    ]
    for r in readers:
        r.start()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    timed_out = not timer.is_alive() and proc.returncode != 0
    timer.cancel()
    done.set()
    poller.join()
    for r in readers:
        r.join()
    # The child's own VmHWM (its answer's peak_rss) is the peak of its program: ru_maxrss also counts the parent's
    # pages at the fork (Linux carries the pre-exec high-water mark over), so it is only the fallback.
    result: dict[str, Any] = {"peak_rss": usage.ru_maxrss * 1024, "peak_anon": peak[0]}
    lines = [ln for ln in streams.get("out", "").splitlines() if ln.startswith("{")]
    if timed_out:
        result["error"] = f"time limit ({timeout:.0f} s)"
    elif lines:
        result.update(json.loads(lines[-1]))
    else:
        tail = [ln for ln in streams.get("err", "").strip().splitlines() if ln.strip()]
        result["error"] = f"exit {proc.returncode}: {tail[-1][:200] if tail else 'no message'}"
    return result


def _child_main(tool: str, src: str, out: str, feeds: str = "") -> int:
    try:
        answer = child(tool, Path(src), Path(out), feeds)
    except BaseException as e:  # every failure is a cell of the table, MemoryError and SystemExit included
        msg = " ".join(str(e).split())
        answer = {"error": f"{type(e).__name__}: {msg[:300]}"}
    answer["peak_rss"] = _status("self", "VmHWM")
    print(json.dumps(answer, default=str))
    return 0


# -------------------------------------------------------------------------------------- the judging child


def _count_nodes(graph: Any) -> int:
    n = 0
    for node in graph.node:
        n += 1
        for a in node.attribute:
            if getattr(a, "type", 0) == 5 and getattr(a, "g", None) is not None:  # AttributeProto.GRAPH
                n += _count_nodes(a.g)
            for g in getattr(a, "graphs", None) or ():
                n += _count_nodes(g)
    return n


def model_facts(path: Path) -> dict[str, Any]:
    """Node count and size on disk (model file plus the external data files it references)."""
    if path.stat().st_size > PROTOBUF_LIMIT:
        import onnxcore  # onnx cannot read a single file over 2 GiB; onnxcore's loader is lazy

        model = onnxcore.load(str(path))
        locations: set[str] = set()
    else:
        import onnx

        model = onnx.load(str(path), load_external_data=False)
        locations = {
            e.value
            for t in model.graph.initializer
            if t.data_location == onnx.TensorProto.EXTERNAL
            for e in t.external_data
            if e.key == "location"
        }
    size = path.stat().st_size + sum((path.parent / loc).stat().st_size for loc in locations)
    return {"nodes": _count_nodes(model.graph), "size": size}


def _checker(path: Path) -> str:
    """'' when onnx's checker accepts the model, else its message (a single file over 2 GiB is not checked:
    onnx cannot read one)."""
    import onnx

    if path.stat().st_size > PROTOBUF_LIMIT:
        return ""
    try:
        onnx.checker.check_model(str(path), full_check=True)
    except Exception as e:
        return f"{type(e).__name__}: {' '.join(str(e).split())[:200]}"
    return ""


def _session(path: str, optimized: bool) -> Any:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    if not optimized:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


_NP_OF_ORT = {
    "tensor(string)": "str",
    "tensor(float)": "float32",
    "tensor(double)": "float64",
    "tensor(float16)": "float16",
    "tensor(int64)": "int64",
    "tensor(int32)": "int32",
    "tensor(int8)": "int8",
    "tensor(uint8)": "uint8",
    "tensor(bool)": "bool",
}


def input_settings(sess: Any, feeds: dict[str, Any]) -> list[dict[str, tuple[list[int], str]]]:
    """Shapes and types of the inputs at each size setting: every dimension variable at base, 1, base + 1."""
    variables: dict[str, int] = {}
    specs = []
    for i in sess.get_inputs():
        dims: list[int | str] = []
        for k, d in enumerate(i.shape):
            if isinstance(d, int) and d > 0:
                dims.append(d)
                continue
            var = d if isinstance(d, str) and d else f"?{i.name}:{k}"
            base = int(feeds[i.name].shape[k]) if i.name in feeds and feeds[i.name].ndim > k else 2
            variables.setdefault(var, base)
            dims.append(var)
        specs.append((i.name, dims, _NP_OF_ORT.get(i.type, "float32")))
    settings = []
    for pick in ("base", "one", "plus"):
        if pick == "plus" and not variables:
            break  # no dimension variable: two draws at the fixed shapes
        size = {v: {"base": b, "one": 1, "plus": b + 1}[pick] for v, b in variables.items()}
        settings.append({n: ([d if isinstance(d, int) else size[d] for d in dims], t) for n, dims, t in specs})
    return settings


def make_inputs(setting: dict[str, tuple[list[int], str]], feeds: dict[str, Any], seed: int) -> dict[str, Any]:
    """Seeded random inputs of the setting's shapes; values like the corpus feed's where there is one (token ids
    stay under the largest id seen, a mask stays 0/1)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    out = {}
    for name, (shape, dtype) in setting.items():
        ref = feeds.get(name)
        if dtype == "bool":
            out[name] = rng.random(shape) < 0.5
        elif dtype == "str":  # the corpus feed's own strings (categories, words), drawn again
            pool = ref.ravel() if ref is not None and ref.size else np.array(["a", "b", "c"])
            out[name] = rng.choice(pool, size=shape)
        elif np.dtype(dtype).kind in "iu":
            lo, hi = (int(ref.min()), int(ref.max())) if ref is not None and ref.size else (0, 3)
            out[name] = rng.integers(lo, hi + 1, size=shape).astype(dtype)
        else:
            mu, sd = (float(ref.mean()), float(ref.std()) or 1.0) if ref is not None and ref.size else (0.0, 1.0)
            out[name] = (rng.standard_normal(shape) * sd + mu).astype(dtype)
    return out


def compare(got: list[Any], expected: list[Any], exact: list[int]) -> tuple[str, float]:
    """('' or what differs, the largest error relative to max(1, the output's largest magnitude))."""
    import numpy as np

    if len(got) != len(expected):
        return f"{len(got)} outputs, the original has {len(expected)}", float("inf")
    worst = 0.0
    for k, (g, e) in enumerate(zip(got, expected)):
        g, e = np.asarray(g), np.asarray(e)
        if g.shape != e.shape or g.dtype != e.dtype:
            return f"output {k}: {g.dtype}{list(g.shape)}, the original's {e.dtype}{list(e.shape)}", float("inf")
        if e.dtype.kind in "OUS":
            if not np.array_equal(g, e):
                return f"output {k}: strings differ", float("inf")
            continue
        if k in exact or e.dtype.kind in "iub":
            bad = float(np.mean(g != e)) if e.size else 0.0
            if bad > 0.01:
                return f"output {k}: {bad:.1%} of the values differ", float("inf")
            continue
        e64, g64 = e.astype(np.float64), g.astype(np.float64)
        finite = np.isfinite(e64)
        if not np.array_equal(finite, np.isfinite(g64)) or not np.array_equal(e64[~finite], g64[~finite]):
            return f"output {k}: NaN/inf at other places", float("inf")
        scale = max(1.0, float(np.max(np.abs(e64[finite]))) if finite.any() else 1.0)
        diff = np.abs(g64[finite] - e64[finite])
        err = float(np.max(diff)) / scale if diff.size else 0.0
        worst = max(worst, err)
        if not np.all(diff <= ATOL_SCALE * scale + RTOL * np.abs(e64[finite])):
            return f"output {k}: max abs difference {err * scale:.3g} (largest value {scale:.3g})", err
    return "", worst


def evaluate(spec: dict[str, Any]) -> dict[str, Any]:
    """Judge every variant of one case (see the module's text); a dictionary of cells by column."""
    import numpy as np

    case = Case(**spec["case"])
    variants: dict[str, str] = spec["variants"]
    repeat: int = spec["repeat"]
    feeds: dict[str, Any] = {}
    if case.feeds:
        with np.load(case.feeds) as z:
            feeds = {k[3:]: z[k] for k in z.files if k.startswith("in:")}
    cells: dict[str, dict[str, Any]] = {col: {} for col in variants}
    for col, path in variants.items():
        try:
            cells[col].update(model_facts(Path(path)))
        except Exception as e:
            cells[col]["facts_error"] = f"{type(e).__name__}: {str(e)[:200]}"
        cells[col]["checker"] = _checker(Path(path))
    reference = case.reference or case.path
    ref = _session(reference, optimized=False)
    settings = input_settings(ref, feeds)
    expected: list[tuple[dict[str, Any], list[Any]] | None] = []
    with np.errstate(all="ignore"):
        for k, setting in enumerate(settings):
            inputs = make_inputs(setting, feeds, seed=k)
            try:
                expected.append((inputs, ref.run(None, inputs)))
            except Exception:  # the original refuses this size: not a setting to compare at
                expected.append(None)
    del ref
    runnable = {}
    for col, path in variants.items():
        if col == "original" and case.reference:
            path = case.reference
        try:
            sess = _session(path, optimized=False)
        except Exception as e:
            cells[col]["same"] = f"onnxruntime cannot load it: {type(e).__name__}: {' '.join(str(e).split())[:200]}"
            continue
        names = {i.name for i in sess.get_inputs()}
        compared, worst, verdict = 0, 0.0, ""
        for item in expected:
            if item is None:
                continue
            inputs, want = item
            missing = names - set(inputs)
            if missing:
                verdict = f"needs inputs the original lacks: {sorted(missing)}"
                break
            try:
                with np.errstate(all="ignore"):
                    got = sess.run(None, {n: v for n, v in inputs.items() if n in names})
            except Exception as e:
                verdict = f"fails at {[list(v.shape) for v in inputs.values()]}: {' '.join(str(e).split())[:160]}"
                break
            verdict, err = compare(got, want, case.exact_outputs)
            worst = max(worst, err)
            compared += 1
            if verdict:
                break
        del sess
        cells[col]["same"] = verdict or "yes"
        cells[col]["max_error"] = worst
        cells[col]["sizes_compared"] = compared
        if not verdict:
            runnable[col] = path
    # onnxruntime time at the base size, one thread, the variants taking turns (a large model: one at a time)
    if expected and expected[0] is not None and runnable:
        inputs = expected[0][0]
        total = sum(cells[c].get("size", 0) for c in runnable)
        if total > BIG_TOTAL:
            for col, path in runnable.items():
                sess = _session(path, optimized=True)
                feed = {i.name: inputs[i.name] for i in sess.get_inputs()}
                sess.run(None, feed)
                best = float("inf")
                for _ in range(max(1, repeat // 3)):
                    t0 = time.perf_counter()
                    sess.run(None, feed)
                    best = min(best, time.perf_counter() - t0)
                cells[col]["ort_seconds"] = best
                del sess
        else:
            # Rounds of fresh sessions, one per variant each time. A session's own placement of its buffers moves
            # its best time by up to a few per cent for the whole session (measured: the same graph in eight
            # sessions, 0.97-1.06 of each other on a 1 ms CNN), and the order the sessions are made in moves it
            # too (four copies of one file made one after the other, twelve times: the last made 0.9 % faster
            # than the first, in 10 of 12 rounds). So the session, not the run, is the unit of noise, and the
            # order of making rotates: ORT_SESSIONS_PER_VARIANT * variants sessions each, session k made in the
            # order shifted by k // 2, so that the even sessions and the odd ones each put every variant at every
            # place once. The summary picks the best anchor on the odd sessions and compares medians on the even
            # ones (picking and comparing on the same sessions favours the best of three anchors by noise alone,
            # even where its graph is onnxcore's).
            per_session: dict[str, list[float]] = {col: [] for col in runnable}
            order = list(runnable)
            count = ORT_SESSIONS_PER_VARIANT * len(order)
            for k in range(count):
                shift = (k // 2) % len(order)
                made = {col: _session(runnable[col], optimized=True) for col in order[shift:] + order[:shift]}
                sessions = {col: made[col] for col in order}
                feed_of = {c: {i.name: inputs[i.name] for i in s.get_inputs()} for c, s in sessions.items()}
                for col, s in sessions.items():
                    s.run(None, feed_of[col])
                # Rounds until every variant has run ORT_BUDGET / count seconds in this session (at least
                # ``repeat`` rounds, at most ORT_MAX_ROUNDS), the order rotated each round and each session: a
                # variant is not always the one after the same other.
                best = dict.fromkeys(sessions, float("inf"))
                spent = dict.fromkeys(sessions, 0.0)
                rounds = 0
                while rounds < ORT_MAX_ROUNDS and (rounds < repeat or min(spent.values()) < ORT_BUDGET / count):
                    shift = (rounds + k) % len(order)
                    for col in order[shift:] + order[:shift]:
                        t0 = time.perf_counter()
                        sessions[col].run(None, feed_of[col])
                        took = time.perf_counter() - t0
                        best[col] = min(best[col], took)
                        spent[col] += took
                    rounds += 1
                for col in order:
                    per_session[col].append(best[col])
                del sessions, made
            for col, bests in per_session.items():
                cells[col]["ort_seconds"] = statistics.median(bests)
                cells[col]["ort_sessions"] = bests
    return cells


ORT_BUDGET = 1.0  # seconds of onnxruntime runs per variant, at least, over all its sessions
ORT_MAX_ROUNDS = 400
ORT_SESSIONS_PER_VARIANT = 2  # times the variants: the fresh sessions of each (module docstring)


def _evaluate_main(spec_path: str) -> int:
    try:
        answer: dict[str, Any] = {"cells": evaluate(json.loads(Path(spec_path).read_text()))}
    except BaseException as e:
        answer = {"error": f"{type(e).__name__}: {' '.join(str(e).split())[:300]}"}
    print(json.dumps(answer, default=str))
    return 0


# ------------------------------------------------------------------------------------------------ the parent


def _one_thread_env() -> dict[str, str]:
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = "1"
    return env


def bench_case(case: Case, tools: list[str], work: Path, repeat: int, timeout: float) -> dict[str, Any]:
    """Optimize one case with every tool and judge the results; the row's data."""
    out_dir = work / "out" / "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in case.name)
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    row: dict[str, Any] = {"case": asdict(case), "tools": {}}
    variants = {"original": case.path}
    env = _one_thread_env()
    for tool in tools:
        (out_dir / tool).mkdir()
        out = out_dir / tool / "model.onnx"
        res = run_child(["--child", tool, case.path, str(out), case.feeds], timeout, env)
        row["tools"][tool] = res
        status = f"fails: {res['error']}" if "error" in res else f"{res['seconds']:.1f} s"
        print(f"  {case.name} / {tool}: {status}, peak RSS {res['peak_rss'] / 2**20:.0f} MiB", file=sys.stderr)
        if "error" not in res:
            variants[tool] = str(out)
    spec = out_dir / "spec.json"
    spec.write_text(json.dumps({"case": asdict(case), "variants": variants, "repeat": repeat}))
    judged = run_child(["--evaluate", str(spec)], timeout * 2, env)
    if "error" in judged:
        row["evaluate_error"] = judged["error"]
        print(f"  {case.name}: judging failed: {judged['error']}", file=sys.stderr)
    row["cells"] = judged.get("cells", {})
    # the results take room (the big model's are gigabytes): keep only what the table needs
    shutil.rmtree(out_dir, ignore_errors=True)
    return row


# ---------------------------------------------------------------------------------------------- the tables


def _mib(n: float) -> str:
    return f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 2**10:.0f} KiB"


def _ms(t: float) -> str:
    return f"{t * 1e6:.0f} us" if t < 1e-3 else f"{t * 1e3:.2f} ms" if t < 0.1 else f"{t * 1e3:.0f} ms"


def _fail(row: dict[str, Any], col: str) -> str | None:
    """The reason a column has no result, or None."""
    if col != "original":
        err = row["tools"].get(col, {}).get("error")
        if err:
            return f"fails: {err}"
    cell = row["cells"].get(col)
    if cell is None:
        return f"fails: not judged ({row.get('evaluate_error', 'no result')})"
    return None


def cell_text(row: dict[str, Any], col: str, what: str) -> str:
    """The text of one cell of the table ``what``."""
    failed = _fail(row, col)
    if failed:
        return failed if what in ("nodes", "same") else "-"
    c = row["cells"][col]
    t = row["tools"].get(col, {})
    if what == "nodes":
        return str(c["nodes"]) if "nodes" in c else f"fails: {c.get('facts_error', '?')}"
    if what == "size":
        return _mib(c["size"]) if "size" in c else "-"
    if what == "ort":
        return _ms(c["ort_seconds"]) if "ort_seconds" in c else "-"
    if what == "cost":
        if col == "original":
            return "-"
        return f"{t['seconds']:.1f} s, {_mib(t['peak_rss'])} ({_mib(t['peak_anon'])} anon)"
    if what == "same":
        same = c.get("same", "?")
        checker = c.get("checker", "")
        text = f"yes ({c.get('sizes_compared', 0)} sizes, err {c.get('max_error', 0):.1e})" if same == "yes" else same
        if same != "yes":
            text = f"**CHANGED**: {text}"
        return text + (f"; **checker**: {checker}" if checker else "")
    raise ValueError(what)


TABLES = (
    ("nodes", "Nodes after (the graph's and its subgraphs')"),
    ("size", "File size after (model file + external data)"),
    ("ort", "onnxruntime time of the result (one thread, best of the runs)"),
    ("cost", "Time to optimize and peak memory (resident; anonymous in brackets)"),
    ("same", "Computes the same (onnxruntime, random inputs at several sizes) and onnx.checker (full_check)"),
)


def _valid(row: dict[str, Any], col: str, key: str) -> bool:
    """Whether ``col`` has a correct, valid result on ``row`` with a value for ``key``."""
    cell = row["cells"].get(col, {})
    return not _fail(row, col) and cell.get("same") == "yes" and not cell.get("checker") and key in cell


def _ort_ratios(rows: list[dict[str, Any]], anchors: list[str]) -> list[float]:
    """onnxcore's onnxruntime time over the best anchor's, per model: the anchor picked by the median of its odd
    sessions, the ratio of the medians of the even sessions (rows measured before sessions were kept have none:
    left out, and where no row has them the caller keeps the plain ratio)."""
    ratios = []
    for r in rows:
        if not _valid(r, "onnxcore", "ort_sessions"):
            continue
        valid = [a for a in anchors if _valid(r, a, "ort_sessions")]
        if not valid:
            continue
        best = min(valid, key=lambda a: statistics.median(r["cells"][a]["ort_sessions"][1::2]))
        mine = statistics.median(r["cells"]["onnxcore"]["ort_sessions"][0::2])
        theirs = statistics.median(r["cells"][best]["ort_sessions"][0::2])
        if theirs > 0:
            ratios.append(mine / theirs)
    return ratios


def summary(rows: list[dict[str, Any]], tools: list[str]) -> list[str]:
    """The goals of issue 39, each as a line."""
    lines = []
    ok = {
        col: [r for r in rows if not _fail(r, col) and r["cells"][col].get("same") == "yes"]
        for col in ("original", *tools)
    }
    for col in tools:
        changed = [
            f"{r['case']['name']} ({cell_text(r, col, 'same')})"
            for r in rows
            if not _fail(r, col) and (r["cells"][col].get("same") != "yes" or r["cells"][col].get("checker"))
        ]
        failed = [f"{r['case']['name']} ({_fail(r, col)})" for r in rows if _fail(r, col)]
        lines.append(
            f"{col}: {len(ok[col])} of {len(rows)} models optimized and judged the same; "
            f"changed result or invalid model: {len(changed)}{' - ' + '; '.join(changed) if changed else ''}; "
            f"failed: {len(failed)}{' - ' + '; '.join(failed) if failed else ''}."
        )
    anchors = [t for t in tools if t != "onnxcore"]
    if "onnxcore" in tools and anchors:
        for what, key in (("node count", "nodes"), ("onnxruntime time", "ort_seconds")):
            ratios = []
            for r in rows:
                if _fail(r, "onnxcore") or key not in r["cells"]["onnxcore"]:
                    continue
                best = [
                    r["cells"][a][key]
                    for a in anchors
                    if not _fail(r, a)
                    and r["cells"][a].get("same") == "yes"
                    and not r["cells"][a].get("checker")
                    and key in r["cells"][a]
                ]
                if best and min(best) > 0:
                    ratios.append(r["cells"]["onnxcore"][key] / min(best))
            how = ""
            if key == "ort_seconds" and (split := _ort_ratios(rows, anchors)):
                ratios, how = split, " (the best anchor picked on the odd sessions, compared on the even ones)"
            if ratios:
                lines.append(
                    f"{what}, onnxcore / the best anchor's (models where both have a correct and valid result){how}: "
                    f"median {statistics.median(ratios):.4f} over {len(ratios)} models (goal: at most 1)."
                )
        for a in anchors:
            each = [
                r["cells"]["onnxcore"]["ort_seconds"] / r["cells"][a]["ort_seconds"]
                for r in rows
                if _valid(r, "onnxcore", "ort_seconds") and _valid(r, a, "ort_seconds") and r["cells"][a]["ort_seconds"]
            ]
            if each:
                lines.append(
                    f"onnxruntime time, onnxcore / {a}'s: median {statistics.median(each):.4f} over {len(each)} models."
                )
        grown = [
            f"{r['case']['name']} ({r['cells']['original']['size']:,} -> {r['cells']['onnxcore']['size']:,} bytes)"
            for r in rows
            if not _fail(r, "onnxcore")
            and "size" in r["cells"]["onnxcore"]
            and "size" in r["cells"].get("original", {})
            and r["cells"]["onnxcore"]["size"] > r["cells"]["original"]["size"]
        ]
        lines.append(f"onnxcore's file larger than the original's: {', '.join(grown) if grown else 'never'}.")
        for r in rows:
            if r["case"]["group"] == "big":
                t = r["tools"].get("onnxcore", {})
                if "peak_rss" in t and "error" not in t:
                    lines.append(
                        f"{r['case']['name']}: onnxcore's peak memory {_mib(t['peak_rss'])} resident, "
                        f"{_mib(t['peak_anon'])} anonymous (goal: under 1 GiB)."
                    )
    return lines


def render(rows: list[dict[str, Any]], tools: list[str], recorder: Any) -> str:
    cols = ["original", *tools]
    out = []
    for what, title in TABLES:
        out.append(f"\n### {title}\n")
        out.append(recorder.table(["model", "group", *cols], ["---", "---", *(["---:"] * len(cols))]))
        recorder.data["tables"][-1]["title"] = title
        for r in rows:
            out.append(recorder.row([r["case"]["name"], r["case"]["group"], *(cell_text(r, c, what) for c in cols)]))
    out.append("")
    out += [recorder.note(line) for line in summary(rows, tools)]
    return "\n".join(out)


_LOCAL_PATH = re.compile(r"(?:/tmp|/work|/home|/root|/var)/[^\s\"',:;)]*")


def scrub(text: str) -> str:
    """``text`` with this machine's paths reduced to their last part (results files are committed)."""
    return _LOCAL_PATH.sub(lambda m: Path(m.group()).name, text)


def versions() -> dict[str, str]:
    """The versions of the tools measured; onnxcore's with the commit of the tree it was imported from."""
    import importlib.metadata as md

    import onnxcore

    got = {"onnxcore": str(getattr(onnxcore, "__version__", "?"))}
    src = Path(onnxcore.__file__).resolve().parent
    rev = subprocess.run(["git", "-C", str(src), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    if rev.returncode == 0:
        status = ["git", "-C", str(src), "status", "--porcelain", "--untracked-files=no", "."]
        dirty = subprocess.run(status, capture_output=True, text=True).stdout.strip()
        got["onnxcore"] = f"{got['onnxcore']} at {rev.stdout.strip()}{'+' if dirty else ''}"
    for dist in ("onnx", "onnxruntime", "onnxsim", "onnxslim", "onnxoptimizer", "numpy"):
        try:
            got[dist] = md.version(dist)
        except md.PackageNotFoundError:
            got[dist] = "not installed"
    return got


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        return _child_main(*argv[1:5])
    if argv[:1] == ["--evaluate"]:
        return _evaluate_main(argv[1])
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--quick", action="store_true", help="a few models of the zoo and the corpus, no big model")
    ap.add_argument("--groups", nargs="*", default=["zoo", "corpus", "big"], choices=["zoo", "corpus", "big"])
    ap.add_argument("--models", nargs="*", help="names (substrings) of the models to run")
    ap.add_argument("--tools", nargs="*", default=list(TOOLS), choices=list(TOOLS))
    ap.add_argument("--cache", type=Path, default=ROOT / ".cache" / "bench-corpus")
    ap.add_argument("--big-dir", type=Path, default=ROOT / ".cache" / "big-model")
    ap.add_argument("--work", type=Path, default=ROOT / ".cache" / "bench-optimize")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds a tool may take on one model")
    ap.add_argument("--json", type=Path, help="write the results here (benchmarks/results/optimize.json)")
    ap.add_argument(
        "--reuse",
        type=Path,
        nargs="*",
        default=[],
        help="earlier --json files whose rows are kept for the models this run does not measure",
    )
    ap.add_argument("--table-only", type=Path, help="print the tables of an earlier --json file, measure nothing")
    args = ap.parse_args(argv)

    sys.path.insert(0, str(HERE))
    from bench_json import Recorder

    if args.table_only:
        earlier = json.loads(args.table_only.read_text())
        print(render(earlier["rows"], args.tools, Recorder(None, "bench_optimize.py")))
        return 0
    groups = [g for g in args.groups if not (args.quick and g == "big")]
    cases: list[Case] = []
    if "zoo" in groups:
        cases += zoo_cases(args.work, args.models, args.quick)
    if "corpus" in groups:
        cases += corpus_cases(args.cache, args.models, args.quick)
    if "big" in groups:
        cases += [c for c in big_cases(args.big_dir) if not args.models or any(n in c.name for n in args.models)]
    rows = []
    here = versions()  # before the runs: the onnxcore they measure (a tree that changes meanwhile is not seen)
    t0 = time.perf_counter()
    for case in cases:
        print(f"{case.name} ({case.group})", file=sys.stderr)
        rows.append(bench_case(case, args.tools, args.work, args.repeat, args.timeout))
    minutes = round((time.perf_counter() - t0) / 60, 1)
    for row in rows:
        row["onnxcore"] = here["onnxcore"]
    measured = {r["case"]["name"] for r in rows}
    for path in args.reuse:  # rows of earlier runs, each keeping the onnxcore it measured
        earlier = json.loads(path.read_text())
        for row in earlier["rows"]:
            if row["case"]["name"] not in measured:
                row.setdefault("onnxcore", earlier["versions"]["onnxcore"])
                row["reused"] = f"{earlier['date']}, {earlier.get('minutes', '?')} min run"
                rows.append(row)
                measured.add(row["case"]["name"])
                minutes += earlier.get("minutes", 0) / max(1, len(earlier["rows"]))
    order = {"zoo": 0, "corpus": 1, "big": 2}
    rows.sort(key=lambda r: order.get(r["case"]["group"], 3))
    rec = Recorder(args.json, "bench_optimize.py")
    rec.data["versions"] = here
    sources = sorted({r["onnxcore"] for r in rows})
    if sources:
        rec.data["versions"]["onnxcore"] = "; ".join(sources)
    rec.data["minutes"] = round(minutes, 1)
    rec.data["rows"] = rows
    text = render(rows, args.tools, rec)
    head = ", ".join(f"{k} {v}" for k, v in rec.data["versions"].items())
    print(f"{rec.data['cpu']}; {head}; {rec.data['minutes']} min\n{text}")
    rec.data = json.loads(scrub(json.dumps(rec.data)))
    rec.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
