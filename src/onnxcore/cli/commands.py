"""The subcommands of ``onnxcore`` other than ``inspect``."""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

import onnxcore
from onnxcore.cli.validate import main as check_main
from onnxcore.conformance.generate import generate_node_package
from onnxcore.conformance.runner import discover, run_package, summarize_by_operator, terminal_progress
from onnxcore.conformance.statement import build_statement, render_markdown
from onnxcore.errors import OnnxCoreError
from onnxcore.infer import annotate
from onnxcore.proto.codec import encode_parts
from onnxcore.types import value_from_proto

__all__ = ["bundled_model_path", "model_digest", "cmd_demo", "cmd_check", "cmd_run", "cmd_convert", "cmd_hash"]

# Four flowers (sepal length, sepal width, petal length, petal width) for the demo.
_DEMO_INPUT = np.array(
    [[5.1, 3.5, 1.4, 0.2], [6.2, 2.9, 4.3, 1.3], [6.7, 3.0, 5.2, 2.3], [4.9, 3.1, 1.5, 0.1]], dtype=np.float32
)


def bundled_model_path() -> Path:
    """Path of the small model shipped inside the package."""
    return Path(str(resources.files("onnxcore") / "data" / "iris_mlp.onnx"))


def _preview(value: Any) -> dict[str, Any]:
    if isinstance(value, np.ndarray):
        flat = value.ravel()
        items = flat[:8].tolist()
        items = [x.decode("utf-8", "replace") if isinstance(x, bytes) else x for x in items]
        return {"shape": list(value.shape), "dtype": str(value.dtype), "preview": items, "elements": int(value.size)}
    if isinstance(value, list):
        return {"sequence": [_preview(v) for v in value[:4]], "length": len(value)}
    if isinstance(value, dict):
        return {"map": {str(k): _preview(v) for k, v in list(value.items())[:4]}, "length": len(value)}
    if value is None:
        return {"optional": None}
    return {"value": repr(value)}


def _unreadable(path: str) -> bool:
    """True when ``path`` cannot be opened for reading (exit code 2 rather than 1)."""
    try:
        with open(path, "rb"):
            return False
    except OSError as e:
        print(f"error: cannot read {path}: {e.strerror or e}", file=sys.stderr)
        return True


def cmd_demo(args: argparse.Namespace) -> int:
    """Validate the bundled model, run it on four flowers, print the result."""

    path = bundled_model_path()
    report = onnxcore.check(path)
    session = onnxcore.Session(path)
    names = [o.name for o in session.outputs]
    outputs = session.run(None, {"x": _DEMO_INPUT})
    if args.json:
        print(
            json.dumps(
                {
                    "model": str(path),
                    "validation": json.loads(report.to_json()),
                    "outputs": {n: _preview(v) for n, v in zip(names, outputs)},
                },
                indent=1,
            )
        )
        return 0
    print(f"model: {path}")
    print(f"validation: {len(report.errors)} errors, {len(report.warnings)} warnings")
    print("input x (4 flowers x 4 features):")
    print(np.array2string(_DEMO_INPUT, precision=2))
    for n, v in zip(names, outputs):
        print(f"{n} {v.dtype}{list(v.shape)}:")
        print(np.array2string(v, precision=4, suppress_small=True))
    model = onnxcore.load(path)
    labels = next((p.value.split(",") for p in model.metadata_props if p.key == "labels"), None)
    if labels is not None:
        print("predicted:", ", ".join(labels[int(i)] for i in outputs[names.index("label")]))
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    """Validate a model; exit 0 without errors, 1 with errors, 2 if unreadable."""

    flags = [f for f, on in (("--json", args.json), ("--fast", args.fast), ("--errors-only", args.errors_only)) if on]
    return check_main([args.model, *flags])


def _load_input(spec: str) -> tuple[str, Any]:
    name, sep, file = spec.partition("=")
    if not sep:
        raise OnnxCoreError(f"--input expects NAME=FILE, got {spec!r}")
    path = Path(file)
    if path.suffix == ".npy":
        return name, np.load(path, allow_pickle=False)

    data = path.read_bytes()
    for cls in (onnxcore.TensorProto, onnxcore.SequenceProto, onnxcore.MapProto, onnxcore.OptionalProto):
        try:
            return name, value_from_proto(onnxcore.decode(cls, data))
        except OnnxCoreError:
            continue
    raise OnnxCoreError(f"{file}: not a TensorProto, SequenceProto, MapProto or OptionalProto")


def cmd_run(args: argparse.Namespace) -> int:
    """Run a model; print shapes, types and a preview; optionally write .npy outputs."""

    if _unreadable(args.model):
        return 2
    try:
        feeds = dict(_load_input(s) for s in args.input)
        session = onnxcore.Session(args.model)
    except (OSError, OnnxCoreError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2 if isinstance(e, OSError) else 1
    try:
        outputs = session.run(None, feeds)
        steps = session.profile(feeds, repeat=args.profile) if args.profile else None
    except OnnxCoreError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    names = [o.name for o in session.outputs]
    if args.output_dir:
        out = Path(args.output_dir)
        out.mkdir(parents=True, exist_ok=True)
        for n, v in zip(names, outputs):
            if isinstance(v, np.ndarray):
                np.save(out / f"{n}.npy", v, allow_pickle=v.dtype == object)
    if args.json:
        doc: dict[str, Any] = {n: _preview(v) for n, v in zip(names, outputs)}
        if steps is not None:
            doc = {"outputs": doc, "profile": {"runs": args.profile, "steps": [dataclasses.asdict(s) for s in steps]}}
        print(json.dumps(doc, indent=1))
    else:
        for n, v in zip(names, outputs):
            p = _preview(v)
            print(f"{n}: {json.dumps(p)}")
        if steps is not None:
            print(profile_table(steps, args.profile))
    return 0


def profile_table(steps: list[Any], runs: int, *, top: int = 15) -> str:
    """The costliest ``top`` steps of a :meth:`onnxcore.Session.profile` and the time per operator, as text."""
    total = sum(s.seconds for s in steps) or 1e-30
    lines = [f"profile: {total * 1e3:.3f} ms per run (sum of {len(steps)} steps, mean of {runs} runs)"]
    lines.append(f"{'ms':>9} {'share':>6}  {'node':>6}  operator (with the nodes fused into it)  name")
    for s in sorted(steps, key=lambda s: -s.seconds)[:top]:
        op = f"{s.domain}::{s.op_type}" if s.domain else s.op_type
        if s.fused:
            op += f" (with {', '.join(f[1] for f in s.fused)})"
        lines.append(f"{s.seconds * 1e3:9.3f} {s.seconds / total:6.1%}  {s.index:>6}  {op}  {s.name}")
    per_op: dict[str, float] = {}
    for s in steps:
        per_op[s.op_type] = per_op.get(s.op_type, 0.0) + s.seconds
    lines.append("per operator (a fused step counts for its first node's operator):")
    for op, t in sorted(per_op.items(), key=lambda kv: -kv[1]):
        lines.append(f"{t * 1e3:9.3f} {t / total:6.1%}  {op}")
    return "\n".join(lines)


def cmd_convert(args: argparse.Namespace) -> int:
    """Re-save a model with another layout."""

    if _unreadable(args.model):
        return 2
    try:
        model = onnxcore.load(args.model)
        if args.inline:
            model = onnxcore.internalize(model)
        if args.infer_shapes:
            model = annotate(model)
        onnxcore.save(model, args.out, external_data=bool(args.external_data), canonical=bool(args.canonical))
    except (OSError, OnnxCoreError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2 if isinstance(e, OSError) else 1
    return 0


def model_digest(path: str | Path) -> str:
    """SHA-256 of the canonical encoding of the model at ``path``, external contents inlined.

    The same content gives the same digest whether the weights are inline or external and
    whatever order another writer put the fields in (canonical form, docs/canonical.md).
    """

    model = onnxcore.internalize(onnxcore.load(path))
    h = hashlib.sha256()
    for part in encode_parts(model, canonical=True).parts():
        h.update(part)
    return h.hexdigest()


def cmd_hash(args: argparse.Namespace) -> int:
    """Print the content digest of a model."""
    if _unreadable(args.model):
        return 2
    try:
        digest = model_digest(args.model)
    except (OSError, OnnxCoreError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2 if isinstance(e, OSError) else 1
    if args.json:
        print(json.dumps({"model": args.model, "sha256": digest}))
    else:
        print(f"{digest}  {args.model}")
    return 0


def cmd_conformance(args: argparse.Namespace) -> int:
    """Run (or generate) a test package; exit 0 when no case failed or errored, 1 otherwise."""

    if args.generate:
        try:
            n = generate_node_package(args.directory)
        except OnnxCoreError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        print(f"wrote {n} node cases under {Path(args.directory) / 'node'}")
        return 0
    cases = discover(args.directory, args.filter)
    if not cases:
        print(f"error: no cases (directories with model.onnx) under {args.directory}", file=sys.stderr)
        return 2
    results = run_package(cases, jobs=max(1, args.jobs), progress=terminal_progress)
    if args.json:
        Path(args.json).write_text(json.dumps([r.to_dict() for r in results], indent=1), encoding="utf-8")
    table = summarize_by_operator(results)
    print(f"{'operator':<32} {'pass':>6} {'fail':>6} {'error':>6} {'unsupp':>7}")
    for op, row in table.items():
        print(f"{op:<32} {row['pass']:>6} {row['fail']:>6} {row['error']:>6} {row['unsupported']:>7}")
    counts = {s: sum(1 for r in results if r.status == s) for s in ("pass", "fail", "error", "unsupported")}
    for r in results:
        if r.status in ("fail", "error"):
            print(f"{r.status.upper()} {r.name}: {r.where} {r.detail.splitlines()[0] if r.detail else ''}")
    print(
        f"{len(results)} cases: {counts['pass']} passed, {counts['fail']} failed, "
        f"{counts['error']} errors, {counts['unsupported']} unsupported"
    )
    return 0 if counts["fail"] == 0 and counts["error"] == 0 else 1


def cmd_statement(args: argparse.Namespace) -> int:
    """Generate the conformance statement (Annex A) from a fresh run of the test package."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        package = args.package
        if package is None:
            try:
                generate_node_package(tmp)
            except OnnxCoreError as e:
                print(f"error: {e}", file=sys.stderr)
                return 2
            package = str(Path(tmp) / "node")
        cases = discover(package)
        if not cases:
            print(f"error: no cases under {package}", file=sys.stderr)
            return 2
        results = run_package(cases, jobs=max(1, args.jobs), progress=terminal_progress)
    st = build_statement(results)
    text = json.dumps(st, indent=1) + "\n" if args.json else render_markdown(st)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0
