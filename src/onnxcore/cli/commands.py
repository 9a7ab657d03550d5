"""The subcommands of ``onnxcore`` other than ``inspect``."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import signal
import sys
import tempfile
import time
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

import onnxcore
from onnxcore.cli.files import (
    NAMES_FILE,
    CliError,
    check_writable,
    load_npy,
    require_readable,
    write_outputs,
    write_text,
)
from onnxcore.conformance.generate import generate_node_package
from onnxcore.conformance.runner import discover, run_package, summarize_by_operator, terminal_progress
from onnxcore.conformance.statement import build_statement, render_markdown
from onnxcore.convert import convert_version
from onnxcore.errors import ConversionError, InputError, OnnxCoreError
from onnxcore.external.tensor_walk import iter_tensors
from onnxcore.infer import annotate
from onnxcore.io import canonical_digest
from onnxcore.reporting import report_page
from onnxcore.text import to_text
from onnxcore.types import value_from_proto

__all__ = [
    "bundled_model_path",
    "model_digest",
    "output_table",
    "profile_table",
    "cmd_demo",
    "cmd_run",
    "cmd_convert",
    "cmd_hash",
    "cmd_print",
    "cmd_report",
    "cmd_conformance",
    "cmd_statement",
    "cmd_batch",
]

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


def _status(command: str, text: str | None) -> None:
    """A one-line status on stderr while long work goes on, only on a terminal (None clears it)."""
    if not sys.stderr.isatty():
        return
    sys.stderr.write(f"\r\x1b[K{command}: {text}" if text else "\r\x1b[K")
    sys.stderr.flush()


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


def _load_input(spec: str) -> tuple[str, Any]:
    """``NAME=FILE``: the value of a .npy file (by its magic, whatever its suffix) or of a serialized proto."""
    name, sep, file = spec.partition("=")
    if not sep or not name or not file:
        raise CliError(f"--input {spec}: expected NAME=FILE")
    try:
        with open(file, "rb") as fh:
            head = fh.read(6)
    except OSError as e:
        raise CliError(f"--input {spec}: cannot read {file}: {e.strerror or e}") from None
    if head == b"\x93NUMPY" or file.endswith(".npy"):
        return name, load_npy(file)
    try:
        data = Path(file).read_bytes()
    except OSError as e:
        raise CliError(f"--input {spec}: cannot read {file}: {e.strerror or e}") from None
    for cls in (onnxcore.TensorProto, onnxcore.SequenceProto, onnxcore.MapProto, onnxcore.OptionalProto):
        try:
            return name, value_from_proto(onnxcore.decode(cls, data))
        except OnnxCoreError:
            continue
    raise CliError(
        f"--input {spec}: {file} is neither a .npy file nor a TensorProto, SequenceProto, MapProto or OptionalProto"
    )


def _limits(args: argparse.Namespace) -> onnxcore.Limits | None:
    """``Limits.untrusted()`` with ``--untrusted``, else None (the defaults)."""
    return onnxcore.Limits.untrusted() if getattr(args, "untrusted", False) else None


def _open_session(
    path: str, *, check: bool, allow_outside: bool, limits: onnxcore.Limits | None = None
) -> onnxcore.Session:
    if not allow_outside:
        return onnxcore.Session(path, check=check, limits=limits)
    # The session loads a path under the default rules; the opt-in needs the model loaded here.
    return onnxcore.Session(onnxcore.load(path, allow_outside=True, limits=limits), check=check, limits=limits)


def _few(names: list[str], limit: int = 5) -> str:
    shown = ", ".join(names[:limit])
    return f"{shown} and {len(names) - limit} more" if len(names) > limit else shown or "none"


def _check_feeds(session: onnxcore.Session, feeds: dict[str, Any]) -> None:
    """Unknown and missing input names are argument errors (exit code 2), listing only the inputs to feed."""
    known = {d.name for d in session.inputs}
    # An input with an initializer (every weight, in a model of IR version < 4) needs no feed.
    needed = [d.name for d in session.inputs if not d.has_default]
    for name in feeds:
        if name not in known:
            raise CliError(f"--input {name}: the model has no input {name!r}; inputs to feed: {_few(needed)}")
    missing = [n for n in needed if n not in feeds]
    if missing:
        raise CliError(f"missing --input for {_few(missing)}")


def cmd_run(args: argparse.Namespace) -> int:
    """Run a model; print a table of outputs (or JSON); optionally write them to a directory."""

    require_readable(args.model)
    feeds: dict[str, Any] = {}
    for spec in args.input:
        name, value = _load_input(spec)
        if name in feeds:
            raise CliError(f"--input {spec}: {name!r} is given twice")
        feeds[name] = value
    if args.output_dir and os.path.exists(args.output_dir) and not os.path.isdir(args.output_dir):
        raise CliError(f"--output-dir {args.output_dir}: exists and is not a directory")
    session = _open_session(args.model, check=not args.no_check, allow_outside=args.allow_outside, limits=_limits(args))
    _check_feeds(session, feeds)
    outputs = session.run(None, feeds)
    steps = session.profile(feeds, repeat=args.profile) if args.profile else None
    named = dict(zip([o.name for o in session.outputs], outputs))
    files = write_outputs(args.output_dir, named) if args.output_dir else None
    if args.json:
        doc: dict[str, Any] = {n: _preview(v) for n, v in named.items()}
        if steps is not None:
            doc = {"outputs": doc, "profile": {"runs": args.profile, "steps": [dataclasses.asdict(s) for s in steps]}}
        print(json.dumps(doc, indent=1))
        return 0
    print(output_table(named))
    if files is not None:
        print(f"wrote {len(files)} outputs to {args.output_dir} ({NAMES_FILE} maps each output name to its file)")
    if steps is not None:
        print(profile_table(steps, args.profile))
    return 0


def _describe(value: Any) -> tuple[str, str, str]:
    """(type, shape, preview) of a runtime value, for the table of ``run``."""
    if isinstance(value, np.ndarray):
        dtype = "string" if value.dtype == object else str(value.dtype)
        flat = value.ravel()
        items = []
        for x in flat[:6].tolist():
            if isinstance(x, bytes):
                x = x.decode("utf-8", "replace")
            if isinstance(x, str):
                items.append(repr(x if len(x) <= 20 else x[:17] + "..."))
            elif isinstance(x, float):
                items.append(f"{x:.6g}")
            else:
                items.append(str(x))
        more = ", ..." if flat.size > 6 else ""
        return f"tensor({dtype})", str(list(value.shape)), ", ".join(items) + more
    if isinstance(value, list):
        inner = _describe(value[0])[0] if value else "?"
        return f"sequence({inner})", f"{len(value)} items", ""
    if isinstance(value, dict):
        return "map", f"{len(value)} entries", ", ".join(str(k) for k in list(value)[:6])
    if value is None:
        return "optional", "-", "(empty)"
    return type(value).__name__, "-", repr(value)[:60]


def output_table(named: dict[str, Any]) -> str:
    """The outputs of a run as a text table: name, type, shape and the first elements."""
    rows = [("output", "type", "shape", "preview")]
    rows += [(n if len(n) <= 48 else n[:45] + "...", *_describe(v)) for n, v in named.items()]
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    return "\n".join(f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]:<{widths[2]}}  {r[3]}".rstrip() for r in rows)


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

    require_readable(args.model)
    check_writable(args.out)
    if args.opset is not None and not (args.inline or args.external_data):
        return _convert_opset(args)
    try:
        _status("onnxcore convert", f"loading {args.model}")
        model = onnxcore.load(args.model, allow_outside=args.allow_outside)
        if args.opset is not None:
            _status("onnxcore convert", f"converting to opset {args.opset}")
            model = convert_version(model, args.opset, domain=args.domain, expand_functions=bool(args.expand_functions))
        if args.inline:
            _status("onnxcore convert", "bringing external data inline")
            model = onnxcore.internalize(model)
        if args.infer_shapes:
            _status("onnxcore convert", "inferring shapes")
            model = annotate(model)
        _status("onnxcore convert", f"writing {args.out}")
        try:
            onnxcore.save(model, args.out, external_data=bool(args.external_data), canonical=bool(args.canonical))
        except OSError as e:
            # save writes through a temporary file: name the file the user asked for, not that one.
            raise CliError(f"cannot write {args.out}: {e.strerror or e}") from None
    finally:
        _status("onnxcore convert", None)
    return 0


def _convert_opset(args: argparse.Namespace) -> int:
    """``convert --opset N``: the operator set rewrite, external data referenced and never read."""
    model = onnxcore.load(args.model, external_data=False)
    external = [t for _path, t in iter_tensors(model) if t.data_location == onnxcore.TensorProto.DataLocation.EXTERNAL]
    same_dir = os.path.realpath(os.path.dirname(os.path.abspath(args.out))) == os.path.realpath(
        os.path.dirname(os.path.abspath(args.model))
    )
    if external and not same_dir:
        raise CliError(
            f"{args.model} keeps {len(external)} tensors in external data files, located relative to it: write OUT "
            "in the same directory, or add --inline or --external-data"
        )
    try:
        _status("onnxcore convert", f"converting to opset {args.opset}")
        try:
            converted = convert_version(
                model, args.opset, domain=args.domain, expand_functions=bool(args.expand_functions)
            )
        except ConversionError as e:  # nothing written; every refused node on stdout, one per line
            head, *nodes = str(e).splitlines()
            for line in nodes:
                print(line.strip())
            raise CliError(f"{head} (listed above); nothing written", code=1) from None
        _status("onnxcore convert", f"writing {args.out}")
        try:
            onnxcore.save(converted, args.out, canonical=bool(args.canonical))
        except OSError as e:
            raise CliError(f"cannot write {args.out}: {e.strerror or e}") from None
    finally:
        _status("onnxcore convert", None)
    return 0


def model_digest(path: str | Path, *, allow_outside: bool = False) -> str:
    """SHA-256 of the canonical encoding of the model at ``path``, external contents inlined.

    The same content gives the same digest whether the weights are inline or external and
    whatever order another writer put the fields in (canonical form, docs/canonical.md).

    Args:
        path: The model file.
        allow_outside: Let external data lie outside the model's directory (Clause 15.3).
    """

    return canonical_digest(onnxcore.load(path, allow_outside=allow_outside))


def cmd_hash(args: argparse.Namespace) -> int:
    """Print the content digest of a model."""
    require_readable(args.model)
    digest = model_digest(args.model, allow_outside=args.allow_outside)
    if args.json:
        print(json.dumps({"model": args.model, "sha256": digest}))
    else:
        print(f"{digest}  {args.model}")
    return 0


def cmd_print(args: argparse.Namespace) -> int:
    """Print a model in the textual syntax; external data is named, not read."""
    require_readable(args.model)
    model = onnxcore.load(args.model, external_data=False)
    print(to_text(model, max_elements=args.max_elements))
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """Write the report page (or the drawing alone) of a model."""
    require_readable(args.model)
    if args.format == "svg" and (args.input or args.profile):
        raise CliError("--input and --profile apply to the HTML page only (the drawing alone shows no profile)")
    out = args.output or Path(args.model).stem + "." + args.format
    check_writable(out)
    feeds: dict[str, Any] = {}
    for spec in args.input:
        name, value = _load_input(spec)
        if name in feeds:
            raise CliError(f"--input {spec}: {name!r} is given twice")
        feeds[name] = value
    page = report_page(
        args.model,
        feeds=feeds or None,
        profile=args.profile,
        format=args.format,
        limits=_limits(args),
        allow_outside=args.allow_outside,
    )
    write_text(out, page.text)
    if page.profile_error is not None:
        # The page is written (its findings and graph are worth reading), but the profile asked for is not on it.
        where = "standard output" if out == "-" else out
        raise CliError(f"wrote {where} but not profiled: {page.profile_error}", code=1)
    if out != "-":
        print(f"wrote {out} ({len(page.text):,} bytes)")
    return 0


def _generate(directory: str) -> int:
    try:
        return generate_node_package(directory)
    except OSError as e:
        raise CliError(f"cannot write {e.filename or directory}: {e.strerror or e}") from None
    except OnnxCoreError as e:  # onnx missing or failing in the child process: the package cannot be made here
        raise CliError(str(e)) from None


def cmd_conformance(args: argparse.Namespace) -> int:
    """Run (or generate) a test package; exit 0 when no case failed or errored, 1 otherwise."""

    if args.generate:
        n = _generate(args.directory)
        print(f"wrote {n} node cases under {Path(args.directory) / 'node'}")
        return 0
    if not Path(args.directory).is_dir():
        raise CliError(f"{args.directory}: no such directory")
    if args.json:
        check_writable(args.json)
    cases = discover(args.directory, args.filter)
    if not cases:
        raise CliError(f"no cases (directories with model.onnx) under {args.directory}")
    results = run_package(cases, jobs=args.jobs, progress=terminal_progress, limits=_limits(args))
    # With the records on standard output, the human summary goes to standard error.
    out = sys.stderr if args.json == "-" else sys.stdout
    if args.json:
        write_text(args.json, json.dumps([r.to_dict() for r in results], indent=1) + "\n")
    table = summarize_by_operator(results)
    print(f"{'operator':<32} {'pass':>6} {'fail':>6} {'error':>6} {'unsupp':>7}", file=out)
    for op, row in table.items():
        print(f"{op:<32} {row['pass']:>6} {row['fail']:>6} {row['error']:>6} {row['unsupported']:>7}", file=out)
    counts = {s: sum(1 for r in results if r.status == s) for s in ("pass", "fail", "error", "unsupported")}
    for r in results:
        if r.status in ("fail", "error"):
            print(f"{r.status.upper()} {r.name}: {r.where} {r.detail.splitlines()[0] if r.detail else ''}", file=out)
    print(
        f"{len(results)} cases: {counts['pass']} passed, {counts['fail']} failed, "
        f"{counts['error']} errors, {counts['unsupported']} unsupported",
        file=out,
    )
    return 0 if counts["fail"] == 0 and counts["error"] == 0 else 1


def cmd_statement(args: argparse.Namespace) -> int:
    """Generate the conformance statement (Annex A) from a fresh run of the test package."""
    if args.output:
        check_writable(args.output)
    with tempfile.TemporaryDirectory() as tmp:
        package = args.package
        if package is None:
            _generate(tmp)
            package = str(Path(tmp) / "node")
        cases = discover(package)
        if not cases:
            raise CliError(f"no cases (directories with model.onnx) under {package}")
        results = run_package(cases, jobs=args.jobs, progress=terminal_progress, limits=_limits(args))
    st = build_statement(results)
    text = json.dumps(st, indent=1) + "\n" if args.json else render_markdown(st)
    write_text(args.output or "-", text)
    return 0


def _interrupt_on_term(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def cmd_batch(args: argparse.Namespace) -> int:
    """Score a table or arrays on Dask into one output that appears only when complete."""
    require_readable(args.model)
    try:
        # lazy: dask, pandas and pyarrow are the optional extra of this one command
        from onnxcore.dask.batch import score
    except ImportError as e:
        raise CliError(f"needs the dask extra (pip install 'onnxcore[dask]'): {e}") from None
    if os.path.lexists(args.output):  # a dataset directory or a file: never replaced, never merged into
        raise CliError(f"--output {args.output}: exists; remove it or choose another name")
    check_writable(args.output)
    started = time.perf_counter()

    def progress(done: int, total: int, rows: int) -> None:
        if not sys.stderr.isatty():
            return
        width = 30
        filled = width * done // max(total, 1)
        rate = rows / max(time.perf_counter() - started, 1e-9)
        _status(
            "onnxcore batch",
            f"[{'#' * filled}{'.' * (width - filled)}] {done}/{total} parts, {rows} rows, {rate:,.0f} rows/s",
        )

    # SIGTERM cleans up as Ctrl-C does: the partial parts are removed, nothing appears at the output path.
    previous = signal.signal(signal.SIGTERM, _interrupt_on_term)
    try:
        result = score(
            args.model,
            args.input,
            args.output,
            scheduler=args.scheduler,
            workers=args.workers,
            batch_rows=args.batch_rows,
            output_names=args.output_name or None,
            check=not args.no_check,
            progress=progress,
        )
    except InputError as e:  # the data or the options do not fit the model: an argument error (exit code 2)
        raise CliError(str(e)) from None
    finally:
        signal.signal(signal.SIGTERM, previous)
        _status("onnxcore batch", None)
    rate = result.rows / max(result.seconds, 1e-9)
    took = f"{result.parts} parts, {result.seconds:.1f} s, {rate:,.0f} rows/s"
    print(f"wrote {result.rows} rows to {result.output} ({took})")
    return 0
