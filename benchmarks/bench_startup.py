"""Time to first result (issue 42, item 3): import, session and first run in a fresh process, against onnxruntime.

A script pays its imports and its session's preparation on every start, a command-line call every time; this
benchmark measures what a user waits for before the first result. Every measurement is a fresh interpreter
(``--python``, by default this one: give it a virtual environment made by a plain ``pip install`` to measure the
dependency versions users get), the engines taking turns run by run, ``--repeat`` rounds; the table gives the
median of each phase:

- ``import``: ``import onnxcore`` or ``import onnxruntime`` (numpy included: both import it);
- ``session``: ``onnxcore.Session(path, threads=1)``, or ``onnxruntime.InferenceSession`` with one thread;
- ``first run``: the first ``run`` with the corpus entry's feeds; ``total``: the three together, the ratio
  onnxcore / onnxruntime on it; ``total CPU``: the process's CPU time over the same phases (less sensitive to a
  shared machine's load than the wall time); ``next run``: the second run, for scale.

onnxcore runs three ways: ``numpy`` (``ONNXCORE_ACCEL=0``, the pure-numpy path), ``accel warm`` (numba's cache
populated by an untimed run before, in a directory of the benchmark's own: ``NUMBA_CACHE_DIR``) and ``accel cold``
(an empty cache each time: everything the plan's loops need compiled in the run; ``--cold-repeat`` rounds, since
each takes seconds). A column says whether the run imported numba at all.

The models: the corpus's small models (``corpus_models.py``'s tabular entries at one row, made on first use), the
random forest with its ZipMap (TreeEnsembleClassifier, Cast, ZipMap: the issue's three-node model) and the bundled
iris MLP. Then two commands from a cold process: ``onnxcore check`` of the bundled model against
``onnx.checker.check_model`` (``python -c``), and ``import onnx`` alone for scale.

Children run with one thread (``OMP_NUM_THREADS=1``, ``OPENBLAS_NUM_THREADS=1``) and with byte-code caching on (an
installed package has its ``.pyc`` files; the first, untimed, round writes them).

Usage: ``python benchmarks/bench_startup.py [--python VENV/bin/python] [--repeat 7] [--cold-repeat 1]
[--models random_forest iris ...] [--no-cold] [--cache DIR] [--json FILE]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench_json import Recorder

HERE = Path(__file__).resolve().parent
DEFAULT_CACHE = HERE.parent / ".cache" / "bench-corpus"
BUNDLED = HERE.parent / "src" / "onnxcore" / "data" / "iris_mlp.onnx"
TABULAR = ("random_forest-1", "gradient_boosting-1", "lightgbm-1", "xgboost-1", "svm-1")

_CHILD = r"""
import json, sys, time
c0, t0 = time.process_time(), time.perf_counter()
engine, path, data = sys.argv[1:4]
if engine == "onnxruntime":
    import onnxruntime as ort
    t1 = time.perf_counter()
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
else:
    import onnxcore
    t1 = time.perf_counter()
    s = onnxcore.Session(path, threads=1)
c2, t2 = time.process_time(), time.perf_counter()
import numpy as np
with np.load(data) as z:
    feeds = {k[3:]: z[k] for k in z.files if k.startswith("in:")}
c3, t3 = time.process_time(), time.perf_counter()
s.run(None, feeds)
c4, t4 = time.process_time(), time.perf_counter()
s.run(None, feeds)
t5 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "session": t2 - t1, "first": t4 - t3, "next": t5 - t4,
                  "cpu": (c2 - c0) + (c4 - c3),
                  "numba": "numba" in sys.modules, "ml_dtypes": "ml_dtypes" in sys.modules}))
"""

_ONNX_CHECK = "import sys, onnx; onnx.checker.check_model(sys.argv[1])"
_ONNX_IMPORT = "import onnx"


def _env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "ONNXCORE_ACCEL")}
    env.update({"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"})
    env.update(extra)
    return env


def _child(python: str, engine: str, model: Path, data: Path, extra: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run(
        [python, "-c", _CHILD, engine, str(model), str(data)],
        capture_output=True,
        text=True,
        env=_env(extra),
        timeout=600,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{engine} on {model.name} failed:\n{done.stderr[-2000:]}")
    out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return out


def _wall(cmd: list[str], extra: dict[str, str] | None = None) -> float:
    t = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=_env(extra or {}), timeout=600)
    took = time.perf_counter() - t
    if done.returncode != 0:
        raise RuntimeError(f"{cmd} failed:\n{done.stderr[-2000:]}")
    return took


def _zipmap_forest(cache: Path) -> tuple[Path, Path]:
    """The random forest of the corpus with ZipMap (skl2onnx's default output): three nodes."""
    model, data = cache / "random_forest_zipmap.onnx", cache / "random_forest_zipmap-1.npz"
    if model.exists() and data.exists():
        return model, data
    import numpy as np
    from corpus_models import _tabular_data
    from skl2onnx import to_onnx
    from skl2onnx.common.data_types import FloatTensorType
    from sklearn.ensemble import RandomForestClassifier

    x, y = _tabular_data(2000)
    forest = RandomForestClassifier(100, max_depth=10, random_state=0).fit(x, y)
    onx = to_onnx(forest, initial_types=[("input", FloatTensorType([None, x.shape[1]]))], target_opset=17)
    model.write_bytes(onx.SerializeToString())
    np.savez(data, **{"in:input": _tabular_data(1, seed=1)[0]})
    return model, data


def _iris(cache: Path) -> tuple[Path, Path]:
    import numpy as np

    data = cache / "iris_mlp-1.npz"
    if not data.exists():
        np.savez(data, **{"in:x": np.array([[5.1, 3.5, 1.4, 0.2]], np.float32)})
    return BUNDLED, data


def models(cache: Path, wanted: Sequence[str] | None) -> list[tuple[str, Path, Path]]:
    """(name, model, feeds) of the models measured."""
    from corpus_models import ensure

    def want(name: str) -> bool:
        return not wanted or any(w in name for w in wanted)

    out: list[tuple[str, Path, Path]] = []
    names = [t for t in TABULAR if want(t)]
    if names:
        for e in sorted(ensure(cache, names), key=lambda e: e.name):
            if e.name in names:
                out.append((e.name, cache / e.model, cache / e.data))
    if want("random_forest_zipmap-1"):
        out.append(("random_forest_zipmap-1", *_zipmap_forest(cache)))
    if want("iris_mlp-1"):
        out.append(("iris_mlp-1", *_iris(cache)))
    return out


def _median(rows: list[dict[str, Any]], key: str) -> float:
    return statistics.median(r[key] for r in rows)


def _total(r: dict[str, Any]) -> float:
    return float(r["import"] + r["session"] + r["first"])


def _ms(v: float) -> str:
    return f"{v * 1e3:.0f}" if v >= 0.01 else f"{v * 1e3:.1f}"


def _versions(python: str) -> str:
    code = (
        "import importlib.metadata as m, platform\n"
        "names = ['numpy', 'ml_dtypes', 'onnxruntime', 'onnx', 'numba', 'llvmlite']\n"
        "got = []\n"
        "for n in names:\n"
        "    try: got.append(f'{n} {m.version(n)}')\n"
        "    except m.PackageNotFoundError: got.append(f'{n} absent')\n"
        "print('Python ' + platform.python_version() + ', ' + ', '.join(got))"
    )
    return subprocess.run([python, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--python", default=sys.executable, help="the interpreter the fresh processes run")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--cold-repeat", type=int, default=1, help="rounds with numba's cache empty (seconds each)")
    ap.add_argument("--no-cold", action="store_true", help="skip the cold-cache accelerator runs")
    ap.add_argument("--models", nargs="*", help="names (substrings) of the models to measure")
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    ap.add_argument("--json", type=Path, help="write the tables as JSON")
    args = ap.parse_args(argv)
    rec = Recorder(args.json, "bench_startup.py")
    python = args.python
    has_numba = "numba absent" not in _versions(python)
    print(rec.note(f"CPU: {rec.data['cpu']}; children: {_versions(python)}"))
    work = Path(tempfile.mkdtemp(prefix="bench-startup-"))
    warm_cache = work / "numba-warm"
    modes: list[tuple[str, str, dict[str, str]]] = [
        ("onnxruntime", "onnxruntime", {}),
        ("numpy", "onnxcore", {"ONNXCORE_ACCEL": "0"}),
    ]
    if has_numba:
        modes.append(("accel warm", "onnxcore", {"NUMBA_CACHE_DIR": str(warm_cache)}))
    try:
        cases = models(args.cache, args.models)
        results: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for name, model, data in cases:
            for _label, engine, extra in modes:  # untimed: byte code, file cache, numba's warm cache
                _child(python, engine, model, data, extra)
            for _ in range(args.repeat):
                for label, engine, extra in modes:
                    results.setdefault((name, label), []).append(_child(python, engine, model, data, extra))
            if has_numba and not args.no_cold:
                for _ in range(args.cold_repeat):
                    cold = Path(tempfile.mkdtemp(dir=work, prefix="numba-cold-"))
                    got = _child(python, "onnxcore", model, data, {"NUMBA_CACHE_DIR": str(cold)})
                    results.setdefault((name, "accel cold"), []).append(got)
                    shutil.rmtree(cold, ignore_errors=True)
            print(f"measured {name}", file=sys.stderr)
        print()
        columns = ["model", "engine", "import ms", "session ms", "first run ms", "total ms", "x onnxruntime",
                   "total CPU ms", "x onnxruntime (CPU)", "next run ms", "numba loaded"]  # fmt: skip
        print(rec.table(columns, ["---", "---", *["---:"] * 8, "---"]))
        ratios: dict[str, list[float]] = {}
        cpu_ratios: dict[str, list[float]] = {}
        for name, _model, _data in cases:
            base = statistics.median(_total(r) for r in results[(name, "onnxruntime")])
            base_cpu = _median(results[(name, "onnxruntime")], "cpu")
            for label in [m[0] for m in modes] + (["accel cold"] if has_numba and not args.no_cold else []):
                rows = results.get((name, label), [])
                if not rows:
                    continue
                total = statistics.median(_total(r) for r in rows)
                cpu = _median(rows, "cpu")
                if label != "onnxruntime":
                    ratios.setdefault(label, []).append(total / base)
                    cpu_ratios.setdefault(label, []).append(cpu / base_cpu)
                cells = [name, label, _ms(_median(rows, "import")), _ms(_median(rows, "session")),
                         _ms(_median(rows, "first")), _ms(total), f"{total / base:.2f}x", _ms(cpu),
                         f"{cpu / base_cpu:.2f}x", _ms(_median(rows, "next")),
                         "yes" if any(r["numba"] for r in rows) else "no"]  # fmt: skip
                print(rec.row(cells))
        print()
        for label, rs in ratios.items():
            cs = cpu_ratios[label]
            print(
                rec.note(
                    f"{label}: median {statistics.median(rs):.2f}x onnxruntime, worst {max(rs):.2f}x (CPU time: "
                    f"median {statistics.median(cs):.2f}x, worst {max(cs):.2f}x)"
                )
            )
        _commands(python, args.repeat, rec)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    rec.write()
    return 0


def _commands(python: str, repeat: int, rec: Recorder) -> None:
    script = Path(python).with_name("onnxcore")
    ours = [str(script)] if script.exists() else [python, "-m", "onnxcore"]
    cmds = {
        "onnxcore check (bundled model)": [*ours, "check", str(BUNDLED)],
        "onnx.checker.check_model": [python, "-c", _ONNX_CHECK, str(BUNDLED)],
        "python -c 'import onnx'": [python, "-c", _ONNX_IMPORT],
        "python -c 'import onnxcore'": [python, "-c", "import onnxcore"],
        "python -c 'pass'": [python, "-c", "pass"],
    }
    times: dict[str, list[float]] = {k: [] for k in cmds}
    for cmd in cmds.values():
        _wall(cmd)  # untimed: byte code, file cache
    for _ in range(repeat):
        for k, cmd in cmds.items():
            times[k].append(_wall(cmd))
    print()
    print(rec.table(["command (cold process)", "median ms", "min ms"], ["---", "---:", "---:"]))
    for k, ts in times.items():
        print(rec.row([k, _ms(statistics.median(ts)), _ms(min(ts))]))
    ratio = statistics.median(times["onnxcore check (bundled model)"]) / statistics.median(
        times["onnx.checker.check_model"]
    )
    print()
    print(rec.note(f"onnxcore check / onnx's checker, cold process: {ratio:.2f}x"))


if __name__ == "__main__":
    sys.exit(main())
