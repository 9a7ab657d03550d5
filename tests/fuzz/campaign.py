"""The fuzz campaign: seeded mutations of the ONNX 1-3 models and the light zoo, each run in a child.

Run it as a script (a long campaign on demand)::

    PYTHONPATH=src python tests/fuzz/campaign.py --inputs 100000 --seconds 3600 --seed 1 --save

Targets: ``decode`` (``load`` of byte-level mutations, nesting bombs, million-entry fields), ``check``
(``onnxcore.check`` of structural and wire-level mutations), ``session`` (``Session`` + ``run`` of
schema-driven attribute values and mutated feeds), ``external`` (tampered external-data keys, paths
outside, links, a FIFO, sparse files), and the surfaces of :mod:`fuzz_surfaces` (``text``, ``convert``,
``compose``, ``build``, ``ort``, ``batch``, ``report``); docs/fuzzing.md describes them all. A failure
(see :mod:`fuzz_worker`) is minimised and, with ``--save``, written under ``tests/fuzz/cases/`` for the
normal suite to replay.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import hashlib
import json
import os
import random
import resource
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import fuzz_mutate as fm  # noqa: E402
import fuzz_surfaces as fs  # noqa: E402
import fuzz_worker as fw  # noqa: E402

CASES = HERE / "cases"
PARENT_ADDRESS_LIMIT = 8 << 30
TARGETS = ("decode", "check", "session", "external", *fs.SURFACES)
WEIGHTS = {
    "decode": 0.2,
    "check": 0.1,
    "session": 0.1,
    "external": 0.04,
    "text": 0.15,
    "convert": 0.07,
    "compose": 0.06,
    "build": 0.15,
    "ort": 0.07,
    "batch": 0.01,
    "report": 0.05,
}


# -- seeds --------------------------------------------------------------------------------------


class Seeds:
    """The models mutated: every ONNX 1-3 node case, the shipped simple/pytorch cases and the light zoo."""

    def __init__(self, limit: int | None = None) -> None:
        import corpus

        self.cases: list[Path] = corpus.node_case_dirs()
        data = corpus.onnx_data_dir()
        self.cases += sorted(p.parent for p in data.glob("*/*/model.onnx") if (p.parent / "test_data_set_0").exists())
        if limit is not None:
            self.cases = self.cases[:: max(1, len(self.cases) // limit)]
        self.zoo: list[Path] = sorted((data / "light").glob("*.onnx"))
        self._bytes: dict[Path, bytes] = {}
        self._feeds: dict[Path, dict[str, Any]] = {}

    def model(self, path: Path) -> bytes:
        if path not in self._bytes:
            f = path / "model.onnx" if path.is_dir() else path
            self._bytes[path] = f.read_bytes()
        return self._bytes[path]

    def feeds(self, path: Path) -> dict[str, Any]:
        if path not in self._feeds:
            try:
                if path.is_dir():
                    import onnxcore
                    from onnxcore.conformance.runner import load_case_values

                    sets = load_case_values(path, onnxcore.decode(onnxcore.ModelProto, self.model(path)))
                    self._feeds[path] = sets[0][0] if sets else {}
                else:
                    import corpus

                    name, x = corpus.light_model_input(path)
                    self._feeds[path] = {name: x}
            except Exception:
                self._feeds[path] = {}
        return self._feeds[path]

    def pick(self, rng: random.Random, *, zoo: float = 0.02) -> Path:
        return rng.choice(self.zoo) if self.zoo and rng.random() < zoo else rng.choice(self.cases)


# -- inputs -------------------------------------------------------------------------------------


def _onnx_model(data: bytes) -> Any:
    import onnx

    return onnx.load_from_string(data)


def make_input(rng: random.Random, seeds: Seeds, target: str) -> dict[str, Any]:
    if target == "decode":
        src = seeds.pick(rng, zoo=0.05)
        data = seeds.model(src)
        for _ in range(rng.choice([1, 1, 1, 2, 3])):
            data = fm.byte_mutate(rng, data)
        return {"target": "decode", "model": data, "seed_model": src.name}
    if target == "check":
        src = seeds.pick(rng, zoo=0.02)
        data = seeds.model(src)
        if rng.random() < 0.6:
            m = _onnx_model(data)
            for _ in range(rng.choice([1, 1, 2, 3])):
                m = fm.structural_mutate(rng, m)
            data = m.SerializeToString()
        else:
            data = fm.wire_mutate(rng, data)
        return {"target": "check", "model": data, "seed_model": src.name}
    if target == "session":
        src = seeds.pick(rng, zoo=0.01)
        data = seeds.model(src)
        feeds = seeds.feeds(src)
        r = rng.random()
        if r < 0.6:
            m = _onnx_model(data)
            for _ in range(rng.choice([1, 1, 2])):
                m = fm.structural_mutate(rng, m)
            data = m.SerializeToString()
        elif r < 0.65:
            data = fm.wire_mutate(rng, data)
        specs = fm.feed_mutations(rng, feeds) if r >= 0.4 else {k: fm.value_spec(v) for k, v in feeds.items()}
        return {
            "target": "session",
            "model": data,
            "feeds": specs,
            "unchecked": rng.random() < 0.2,
            "seed_model": src.name,
        }
    if target == "external":
        return external_input(rng)
    return surface_input(rng, seeds, target)


def _mutated(rng: random.Random, data: bytes, *, p: float = 0.5) -> bytes:
    if rng.random() < p:
        m = _onnx_model(data)
        for _ in range(rng.choice([1, 1, 2])):
            m = fm.structural_mutate(rng, m)
        return bytes(m.SerializeToString())
    return data


def surface_input(rng: random.Random, seeds: Seeds, target: str) -> dict[str, Any]:
    """An input of one of :mod:`fuzz_surfaces`' targets, from the seed models."""
    if target == "build":
        return fs.make_build(rng)
    if target == "batch":
        return fs.make_batch(rng)
    src = seeds.pick(rng, zoo=0.0)
    data = seeds.model(src)
    if target == "text":
        inp = fs.make_text(rng, _mutated(rng, data, p=0.2))
    elif target == "convert":
        inp = fs.make_convert(rng, _mutated(rng, data))
    elif target == "compose":
        other = seeds.model(seeds.pick(rng, zoo=0.0))
        inp = fs.make_compose(rng, _mutated(rng, data, p=0.3), _mutated(rng, other, p=0.3))
    elif target == "ort":
        inp = fs.make_ort(rng, _mutated(rng, data, p=0.2), seeds.feeds(src))
    else:
        inp = fs.make_report(rng, _mutated(rng, data, p=0.2))
    inp["seed_model"] = src.name
    return inp


def _external_base() -> tuple[Any, bytes]:
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    w = np.arange(16, dtype=np.float32).reshape(4, 4)
    t = numpy_helper.from_array(w, "W")
    data = t.raw_data
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    g = helper.make_graph(
        [helper.make_node("Add", ["X", "W"], ["Y"])],
        "ext",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [4, 4])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [4, 4])],
        [t],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m, data


def external_input(rng: random.Random) -> dict[str, Any]:
    """A model with one external initializer, its keys tampered with, and the files around it."""
    import numpy as np

    model, payload = _external_base()
    pad = bytes(rng.randrange(256) for _ in range(rng.choice([0, 0, 3, 64])))
    blob = pad + payload
    sha = hashlib.sha1(blob).hexdigest()
    keys: dict[str, str] = {"location": "w.bin", "offset": str(len(pad)), "length": str(len(payload))}
    if rng.random() < 0.5:
        keys["checksum"] = sha
    for _ in range(rng.choice([1, 1, 2, 3])):
        k = rng.choice(["location", "offset", "length", "checksum", "extra", "drop"])
        if k == "location":
            keys[k] = rng.choice(
                ["w.bin", "../outside.bin", "/etc/hostname", "sub/../w.bin", "", ".", "sub", "link_out", "link_in",
                 "link_dir/w.bin", "fifo", "big.bin", "w.bin\x00x", "nope.bin", "./w.bin", "a" * 300, "w.bin/",
                 "..\\w.bin", "C:w.bin", "//w.bin", "sub/../../outside.bin", "link_loop", "/dev/zero", "\u00e9.bin"]
            )  # fmt: skip
        elif k in ("offset", "length"):
            keys[k] = rng.choice(["0", "-1", "1", "3", "64", "67", str(1 << 63), str(1 << 64), "abc", "", "1e3",
                                  " 1", "0x10", str(1 << 31), "9" * 40, str(64 << 20)])  # fmt: skip
        elif k == "checksum":
            keys[k] = rng.choice([sha, sha.upper(), "0" * 40, "", "zz", sha[:-1], hashlib.sha1(b"").hexdigest()])
        elif k == "extra":
            keys[rng.choice(["basepath", "x", "location "])] = "1"
        else:
            keys.pop(rng.choice(sorted(keys)), None)
    t = model.graph.initializer[0]
    for key, value in keys.items():
        e = t.external_data.add()
        e.key, e.value = key, value
    if rng.random() < 0.1:
        t.external_data.append(t.external_data[0])
    if rng.random() < 0.05:
        t.data_location = 0
    if rng.random() < 0.05:
        t.raw_data = payload
    if rng.random() < 0.05:
        t.dims[0] = rng.choice([0, 8, 1 << 40])
    files: dict[str, Any] = {
        "m/w.bin": {"data": blob},
        "outside.bin": {"data": blob},
        "m/sub": {"dir": True},
        "m/link_out": {"symlink": "../outside.bin"},
        "m/link_in": {"symlink": "w.bin"},
        "m/link_dir": {"symlink": "../m"},
        "m/link_loop": {"symlink": "link_loop"},
        "m/fifo": {"fifo": True},
        "m/big.bin": {"sparse": rng.choice([64 << 20, 1 << 20])},
    }
    if rng.random() < 0.3:
        files["m/w.bin"] = {"data": blob[: rng.randrange(len(blob) + 1)]}
    seed = rng.randrange(1 << 30)
    feeds = {"X": ["array", "float32", [4, 4], "random", seed]}
    if rng.random() < 0.2:
        feeds = fm.feed_mutations(rng, {"X": np.zeros((4, 4), np.float32)})
    return {"target": "external", "model": model.SerializeToString(), "files": files, "feeds": feeds}


# -- minimising and saving ----------------------------------------------------------------------


def _kind(verdict: tuple[str, str]) -> str:
    return verdict[1].split(":", 1)[0] if verdict[0] == "failure" else verdict[0]


def minimise(pool: fw.Pool, inp: dict[str, Any], verdict: tuple[str, str], *, budget: float = 60.0) -> dict[str, Any]:
    """A smaller input failing the same way: drop nodes and attributes, then delta-debug the octets."""
    want = _kind(verdict)
    end = time.monotonic() + budget

    def fails(candidate: dict[str, Any]) -> bool:
        return time.monotonic() < end and _kind(pool.run(candidate)) == want

    best = dict(inp)
    try:
        m = _onnx_model(best["model"])
        for coll in ("node", "initializer", "value_info", "output"):
            seq = getattr(m.graph, coll)
            i = len(seq) - 1
            while i >= 0 and time.monotonic() < end:
                trial = type(m)()
                trial.CopyFrom(m)
                del getattr(trial.graph, coll)[i]
                cand = dict(best, model=trial.SerializeToString())
                if fails(cand):
                    m, best = trial, cand
                i -= 1
        for n in range(len(m.graph.node)):
            j = len(m.graph.node[n].attribute) - 1
            while j >= 0 and time.monotonic() < end:
                trial = type(m)()
                trial.CopyFrom(m)
                del trial.graph.node[n].attribute[j]
                cand = dict(best, model=trial.SerializeToString())
                if fails(cand):
                    m, best = trial, cand
                j -= 1
    except Exception:
        pass
    # ddmin over the octets (a failure that lives in the wire form).
    data = best.get("model", b"")
    n = 2
    while len(data) >= 2 and time.monotonic() < end:
        size = max(1, len(data) // n)
        chunks = [data[i : i + size] for i in range(0, len(data), size)]
        reduced = False
        for k in range(len(chunks)):
            cand_bytes = b"".join(chunks[:k] + chunks[k + 1 :])
            cand = dict(best, model=cand_bytes)
            if fails(cand):
                data, best, reduced = cand_bytes, cand, True
                n = max(n - 1, 2)
                break
        if not reduced:
            if size == 1:
                break
            n = min(len(data), n * 2)
    return best


def _jsonable(inp: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in inp.items() if k not in ("model", "second")}
    if "second" in inp:  # compose's second model
        out["second_b64"] = base64.b64encode(inp["second"]).decode()
    if "files" in out:
        files = out["files"].items()
        out["files"] = {k: ({"data_b64": base64.b64encode(v["data"]).decode()} if "data" in v else v) for k, v in files}
    return out


def save_case(
    inp: dict[str, Any], verdict: tuple[str, str], *, expected: str | None = None, where: Path = CASES
) -> Path:
    """Write ``<target>-<digest>.onnx.gz`` and its ``.json`` under ``where`` (``cases/``)."""
    where.mkdir(parents=True, exist_ok=True)
    model = inp.get("model", b"")  # the build and batch targets have none: an empty file
    digest = hashlib.sha1(model + json.dumps(_jsonable(inp), sort_keys=True).encode()).hexdigest()[:10]
    name = f"{inp['target']}-{digest}"
    (where / f"{name}.onnx.gz").write_bytes(gzip.compress(model, mtime=0))
    meta = _jsonable(inp) | {"found": verdict[1][:500], "expected": expected}
    (where / f"{name}.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    return where / f"{name}.json"


def load_case(path: Path) -> dict[str, Any]:
    meta = json.loads(path.read_text())
    inp = {k: v for k, v in meta.items() if k not in ("found", "expected", "note")}
    inp["model"] = gzip.decompress(path.with_name(path.name[: -len(".json")] + ".onnx.gz").read_bytes())
    if "second_b64" in inp:
        inp["second"] = base64.b64decode(inp.pop("second_b64"))
    if "files" in inp:
        inp["files"] = {
            k: ({"data": base64.b64decode(v["data_b64"])} if "data_b64" in v else v) for k, v in inp["files"].items()
        }
    return inp


# -- the campaign -------------------------------------------------------------------------------


class Summary:
    def __init__(self) -> None:
        self.counts: dict[str, Counter[str]] = {t: Counter() for t in TARGETS}
        self.failures: list[tuple[str, str]] = []

    def add(self, target: str, verdict: tuple[str, str]) -> None:
        c = self.counts[target]
        if verdict[0] == "skipped":
            c["skipped"] += 1
            return
        c["inputs"] += 1
        c[verdict[0]] += 1
        if verdict[0] == "failure":
            c["failure:" + _kind(verdict)] += 1
            self.failures.append((target, verdict[1]))

    def table(self) -> str:
        rows = ["| target | inputs | refused with our errors | accepted | failures |", "|---|---:|---:|---:|---|"]
        for t in TARGETS:
            c = self.counts[t]
            kinds = ", ".join(f"{v} {k.split(':', 1)[1]}" for k, v in sorted(c.items()) if k.startswith("failure:"))
            slow = f" ({c['slow']} past the alarm once, not twice)" if c["slow"] else ""
            rows.append(f"| {t} | {c['inputs']:,} | {c['refused']:,} | {c['accepted']:,} | {kinds or 'none'}{slow} |")
        total = sum(c["inputs"] for c in self.counts.values())
        return "\n".join(rows) + f"\n\n{total:,} inputs in all."

    def as_json(self) -> dict[str, Any]:
        return {t: dict(c) for t, c in self.counts.items()} | {"failures": self.failures[:200]}

    def write(self, path: Path) -> None:
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.as_json(), indent=1) + "\n")
        tmp.replace(path)


def campaign(
    *,
    seconds: float,
    inputs: int | None = None,
    seed: int = 0,
    targets: tuple[str, ...] = TARGETS,
    save: Path | None = None,
    seeds_limit: int | None = None,
    progress: bool = False,
    minimise_budget: float = 60.0,
    summary_path: Path | None = None,
) -> Summary:
    """Run inputs until ``seconds`` pass or ``inputs`` have run; failures minimised (and saved with ``save``)."""
    rng = random.Random(seed)
    seeds = Seeds(limit=seeds_limit)
    pool = fw.Pool()
    summary = Summary()
    weights = [WEIGHTS[t] for t in targets]
    start = time.monotonic()
    done = 0
    last = start
    saved: Counter[tuple[str, str, str]] = Counter()
    try:
        while time.monotonic() - start < seconds and (inputs is None or done < inputs):
            target = rng.choices(targets, weights)[0]
            try:
                inp = make_input(rng, seeds, target)
            except Exception as e:  # a mutation the onnx package cannot serialise: not an input
                if progress or isinstance(e, MemoryError):
                    print(f"skipped a mutation ({target}): {type(e).__name__}: {e}"[:200], file=sys.stderr)
                continue
            verdict = pool.run(inp)
            if _kind(verdict) == "hang":
                # The machine is shared: an input past the alarm runs once more in a fresh child before it counts
                # as a hang (a slow answer the second time is counted as slow, with that answer's verdict).
                again = pool.run(inp)
                if _kind(again) != "hang":
                    summary.counts[target]["slow"] += 1
                    verdict = again
            summary.add(target, verdict)
            if verdict[0] != "skipped":  # an input the worker could not run (see execute) is not counted
                done += 1
            if verdict[0] == "failure":
                print(f"FAILURE {target} ({inp.get('seed_model', '')}): {verdict[1][:300]}", file=sys.stderr)
                kind = (target, _kind(verdict), verdict[1][:60])
                if save is not None and saved[kind] < 2:
                    saved[kind] += 1
                    small = minimise(pool, inp, verdict, budget=minimise_budget)
                    print(f"  saved {save_case(small, verdict, where=save)}", file=sys.stderr)
            if progress and time.monotonic() - last > 60:
                last = time.monotonic()
                rate = done / (last - start)
                print(f"[{last - start:6.0f} s] {done} inputs ({rate:.1f}/s)", file=sys.stderr)
                print(summary.table(), file=sys.stderr, flush=True)
                if summary_path is not None:
                    summary.write(summary_path)
    finally:
        pool.close()
    return summary


def run_jobs(args: argparse.Namespace) -> int:
    """Run ``args.jobs`` campaigns as child processes with their own seeds and sum their counts.

    Each job is this script with one worker, seed ``seed * 100 + k`` and its share of ``--inputs``; a job's
    failures are its own (saved by it with ``--save``), the table is the sum.
    """
    import subprocess  # the parallel form only

    share = None if args.inputs is None else -(-args.inputs // args.jobs)
    total = Summary()
    # The jobs' own summaries go to a temporary directory (removed after): the only file left is --summary's.
    with tempfile.TemporaryDirectory(prefix="onnxcore-fuzz-") as tmp:
        procs = []
        for k in range(args.jobs):
            part = Path(tmp) / f"job{k}.json"
            cmd = [sys.executable, __file__, "--seconds", str(args.seconds), "--seed", str(args.seed * 100 + k)]
            cmd += ["--targets", args.targets, "--summary", str(part)]
            if share is not None:
                cmd += ["--inputs", str(share)]
            if args.save is not None:
                cmd += ["--save", str(args.save)]
            procs.append((part, subprocess.Popen(cmd)))
        for part, proc in procs:
            proc.wait()
            data = json.loads(part.read_text())
            for t in TARGETS:
                total.counts[t].update(data.get(t, {}))
            total.failures += [tuple(f) for f in data.get("failures", [])]  # type: ignore[misc]
    print(total.table())
    if args.summary is not None:
        total.write(args.summary)
    return 1 if total.failures or any(p.returncode not in (0, 1) for _, p in procs) else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=float(os.environ.get("ONNXCORE_FUZZ_SECONDS", "60")))
    ap.add_argument("--inputs", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--targets", default=",".join(TARGETS))
    ap.add_argument("--save", type=Path, default=None, help="minimise failures and save them in this directory")
    ap.add_argument("--summary", type=Path, default=None, help="write the counts as JSON here")
    ap.add_argument("--jobs", type=int, default=1, help="campaigns side by side (seeds seed*100+k), counts summed")
    args = ap.parse_args(argv)
    if args.jobs > 1:
        return run_jobs(args)
    # The parent makes the inputs: bounded too (a run's parent was once killed by the machine running out of
    # memory), so that a mutation that asks for too much is a MemoryError, reported and skipped (the children set
    # their own, lower bound).
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard == resource.RLIM_INFINITY or hard > PARENT_ADDRESS_LIMIT:
        resource.setrlimit(resource.RLIMIT_AS, (PARENT_ADDRESS_LIMIT, hard))
    summary = campaign(
        seconds=args.seconds,
        inputs=args.inputs,
        seed=args.seed,
        targets=tuple(args.targets.split(",")),
        save=args.save,
        progress=True,
        summary_path=args.summary,
    )
    print(summary.table())
    if args.summary is not None:
        summary.write(args.summary)
    return 1 if summary.failures else 0


if __name__ == "__main__":
    sys.exit(main())
