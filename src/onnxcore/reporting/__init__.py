"""A model report: one self-contained HTML page with the graph, inferred shapes, findings and a profile.

``onnxcore.report(model)`` (and ``onnxcore report MODEL``) reads a model once: it binds it
(:func:`onnxcore.graph.bind`), infers every value's type and shape (:func:`onnxcore.infer.infer_both`, dimension
variables kept), validates it (:func:`onnxcore.check`, each finding linked to the node its location names) and,
when asked, times each plan step (:meth:`onnxcore.Session.profile`). The drawing is a layered layout of our own
(:mod:`onnxcore.reporting.layout`); the page needs no network (everything is inlined).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from onnxcore.errors import InputError, OnnxCoreError
from onnxcore.external import internalize
from onnxcore.graph import BoundModel, bind
from onnxcore.infer import infer_both
from onnxcore.io import load
from onnxcore.limits import Limits
from onnxcore.proto.bridge import as_message
from onnxcore.proto.encoder import encode_parts
from onnxcore.proto.messages import ModelProto, TensorProto
from onnxcore.reporting.collect import Gathered, gather, short_type
from onnxcore.reporting.layout import Layout, count_crossings, layered_layout, segment_crossings
from onnxcore.reporting.page import render_page
from onnxcore.reporting.svg import standalone_svg
from onnxcore.runtime import Session
from onnxcore.types.elements import ElementType
from onnxcore.validate import check

__all__ = [
    "Layout",
    "count_crossings",
    "layered_layout",
    "random_feeds",
    "report",
    "ReportPage",
    "report_page",
    "segment_crossings",
    "short_type",
]


def report(
    model: ModelProto | str | os.PathLike[str] | bytes | Any,
    *,
    feeds: Mapping[str, Any] | None = None,
    profile: int | None = None,
    format: str = "html",
    limits: Limits | None = None,
    allow_outside: bool = False,
    title: str | None = None,
    optimization: Mapping[str, Any] | None = None,
) -> str:
    """The report of a model, as the text of an HTML page (or of an SVG drawing).

    Args:
        model: A model, its octets, or a path to a model file (external data beside it is resolved).
        feeds: Inputs to profile with (graph input name -> value); they imply a profile (3 runs unless
            ``profile`` says otherwise).
        profile: Time each plan step over this many runs; with no ``feeds``, on random inputs of the declared
            shapes (a dimension variable taken as 1; integers 0). None: no profile unless ``feeds`` are given.
        format: ``"html"`` (the page) or ``"svg"`` (the top-level drawing alone, subgraphs collapsed).
        limits: Resource limits (Clause 15.4); ``DEFAULT_LIMITS`` when None.
        allow_outside: Let external data lie outside the model's directory (Clause 15.3); only for trusted models.
        title: The page's title (default: the file name, or the graph's name).
        optimization: What ``onnxcore.optimize`` did to give this model (``OptimizeReport.to_json()``): shown as
            the page's Optimization section.

    Returns:
        The document's text.

    Raises:
        InputError: ``format`` is neither ``"html"`` nor ``"svg"``, or ``profile`` is below 1.
        OnnxCoreError: the model cannot be read.
    """
    return report_page(
        model,
        feeds=feeds,
        profile=profile,
        format=format,
        limits=limits,
        allow_outside=allow_outside,
        title=title,
        optimization=optimization,
    ).text


@dataclass(frozen=True, slots=True)
class ReportPage:
    """A report and what it could not show.

    Attributes:
        text: The document's text (HTML page or SVG drawing).
        profile_error: Why the profile asked for (``feeds`` or ``profile``) is not on the page; None when it is,
            or when none was asked.
    """

    text: str
    profile_error: str | None = None


def report_page(
    model: ModelProto | str | os.PathLike[str] | bytes | Any,
    *,
    feeds: Mapping[str, Any] | None = None,
    profile: int | None = None,
    format: str = "html",
    limits: Limits | None = None,
    allow_outside: bool = False,
    title: str | None = None,
    optimization: Mapping[str, Any] | None = None,
) -> ReportPage:
    """:func:`report`, telling also whether the profile asked for was made (the command line's exit code).

    A profile that cannot be made (the model has errors, a feed of the wrong type, a run that fails) leaves the
    page without it, saying why; ``profile_error`` says the same to the caller.
    """
    if format not in ("html", "svg"):
        raise InputError(f"report: format must be 'html' or 'svg', got {format!r}")
    if profile is not None and profile < 1:
        raise InputError(f"report: profile must be at least 1 run, got {profile}")
    base_dir: Path | None = None
    if isinstance(model, str | os.PathLike):
        path = Path(model)
        base_dir = path.resolve().parent
        title = title or path.name
        msg = load(path, allow_outside=allow_outside, limits=limits)
    elif isinstance(model, bytes | bytearray | memoryview):
        msg = load(bytes(model), limits=limits)
    else:
        msg = as_message(model, ModelProto, "report")
    bound = bind(msg, limits=limits)
    types, shapes = infer_both(msg, limits=limits, bound=bound)
    findings = check(msg, limits=limits, base_dir=base_dir, bound=bound)
    gathered = gather(bound, types, shapes, findings)
    if format == "svg":
        return ReportPage(standalone_svg(gathered.drawings[gathered.main]))
    prof = None
    if feeds is not None or profile is not None:
        prof = _profile(msg, bound, gathered, feeds, profile or 3, limits, has_errors=bool(findings.errors))
    graph_name = msg.graph.name if msg.graph is not None else ""
    summary = _summary(msg, bound, gathered, base_dir)
    text = render_page(title or graph_name or "model", summary, gathered, prof, optimization)
    return ReportPage(text, prof.get("error") if prof is not None else None)


def random_feeds(session: Session, *, seed: int = 0) -> dict[str, Any]:
    """Inputs of the declared shapes for every input without a default: floats standard normal, others zero.

    A dimension variable (or an unknown extent) is taken as 1.

    Raises:
        InputError: an input is not a tensor, or its element type or shape is not declared.
    """
    rng = np.random.default_rng(seed)
    feeds: dict[str, Any] = {}
    for d in session.inputs:
        if d.has_default:
            continue
        tp = d.type_proto
        tt = tp.tensor_type if tp is not None else None
        if tt is None or not int(tt.elem_type):
            raise InputError(f"input {d.name!r} is not a tensor of a declared element type: give it with --input")
        if tt.shape is None:
            raise InputError(f"input {d.name!r} has no declared shape: give it with --input")
        shape = [int(x.dim_value) if x.dim_value is not None and int(x.dim_value) > 0 else 1 for x in tt.shape.dim]
        et = ElementType(int(tt.elem_type))
        if et == ElementType.STRING:
            feeds[d.name] = np.full(shape, b"", dtype=object)
        elif et.is_float:
            feeds[d.name] = rng.standard_normal(shape).astype(et.np_dtype)
        else:
            feeds[d.name] = np.zeros(shape, dtype=et.np_dtype)
    return feeds


def _profile(
    model: ModelProto,
    bound: BoundModel,
    g: Gathered,
    feeds: Mapping[str, Any] | None,
    runs: int,
    limits: Limits | None,
    *,
    has_errors: bool,
) -> dict[str, Any]:
    if has_errors:
        return {"error": "the model has errors (see the findings)"}
    main = bound.main()
    try:
        session = Session(model, limits=limits, check=False)
        given = dict(feeds) if feeds is not None else random_feeds(session)
        steps = session.profile(given, repeat=runs)
    except OnnxCoreError as e:
        return {"error": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"}
    keys = {ref.index: g.key_of[id(ref)] for ref in main.nodes} if main is not None else {}
    per_op: dict[str, float] = {}
    total = 0.0
    for s in steps:
        total += s.seconds
        op = s.op_type if not s.fused else "+".join([s.op_type, *(f[1] for f in s.fused)]) + " (fused)"
        per_op[op] = per_op.get(op, 0.0) + s.seconds
        key = keys.get(s.index)
        if key is not None:
            g.info[key]["time"] = s.seconds
            if s.fused:
                g.info[key]["fused"] = [f"{f[1]} (node {f[0]})" for f in s.fused]
        for idx, _op, _name in s.fused:
            fk = keys.get(idx)
            if fk is not None and key is not None:
                g.info[fk]["time"] = s.seconds
                g.info[fk]["fused_into"] = key
    for key in keys.values():
        # Clause 8.2: the plan may fold a node, leave out one no output needs, or read a no-op's input in its
        # place (runtime/optimize/noops.py): such a node has no time of its own.
        if "time" not in g.info[key]:
            g.info[key]["not_a_step"] = True
    return {
        "runs": runs,
        "steps": len(steps),
        "total": total,
        "per_op": sorted(per_op.items(), key=lambda kv: -kv[1]),
        "inputs": "given" if feeds is not None else "random, of the declared shapes",
    }


def _summary(model: ModelProto, bound: BoundModel, g: Gathered, base_dir: Path | None) -> dict[str, Any]:
    graph = model.graph
    main = bound.main()
    inits = set(main.init_names) if main is not None else set()
    by_type: dict[str, list[int]] = {}
    external: dict[str, list[int]] = {}
    parameters = weight_bytes = n_init = 0
    for scope in bound.scopes:
        if scope.graph is None:
            continue
        for t in scope.graph.initializer:
            n_init += 1
            elems = int(np.prod([int(d) for d in t.dims], dtype=np.int64)) if len(t.dims) else 1
            try:
                et = ElementType(int(t.data_type))
                name, nbytes = et.type_name, (elems * et.bits + 7) // 8
            except ValueError:
                name, nbytes = f"type {int(t.data_type)}", 0
            row = by_type.setdefault(name, [0, 0, 0])
            row[0] += 1
            row[1] += elems
            row[2] += nbytes
            parameters += elems
            weight_bytes += nbytes
            _external(t, external)
    ext_rows = []
    for loc, (count, length) in sorted(external.items()):
        size: int | None = None
        if base_dir is not None:
            try:
                size = (base_dir / loc).stat().st_size
            except OSError:
                size = None
        ext_rows.append((loc, count, length, size))
    outs = main.outputs if main is not None else []
    label = _io_types(g, "graph")
    return {
        "ir_version": int(model.ir_version),
        "opsets": [(o.domain or "ai.onnx", int(o.version)) for o in model.opset_import],
        "producer": " ".join(x for x in (model.producer_name, model.producer_version) if x),
        "graph_name": graph.name if graph is not None else "",
        "nodes": len(main.nodes) if main is not None else 0,
        "all_nodes": sum(len(s.nodes) for s in bound.scopes),
        "subgraphs": sum(1 for s in bound.scopes if s.kind == "subgraph"),
        "functions": len(model.functions),
        "inputs": [(n, label.get(n, "?")) for n in (main.inputs if main is not None else []) if n not in inits],
        "outputs": [(n, label.get(n, "?")) for n in outs],
        "parameters": parameters,
        "weight_bytes": weight_bytes,
        "initializers": n_init,
        "by_type": sorted(((k, v[0], v[1], v[2]) for k, v in by_type.items()), key=lambda r: -r[3]),
        "external": ext_rows,
        "hash": _canonical_hash(model, inline=not external and not _external_attributes(bound)),
    }


def _io_types(g: Gathered, scope_loc: str) -> dict[str, str]:
    return {
        v["name"]: v["type"]
        for v in g.info.values()
        if v.get("kind") in ("input", "output") and v.get("scope") == scope_loc
    }


def _external(t: TensorProto, out: dict[str, list[int]]) -> None:
    if int(t.data_location or 0) != 1:
        return
    entries = {e.key: e.value for e in t.external_data}
    loc = entries.get("location", "?")
    row = out.setdefault(loc, [0, 0])
    row[0] += 1
    try:
        row[1] += int(entries.get("length", "0") or 0)
    except ValueError:
        pass


def _external_attributes(bound: BoundModel) -> bool:
    """Whether a node attribute holds an external tensor (a ``Constant``'s value, say)."""
    for ref in bound.all_nodes():
        for a in ref.node.attribute:
            tensors = ([a.t] if a.t is not None else []) + list(a.tensors)
            if any(int(t.data_location or 0) == 1 for t in tensors):
                return True
    return False


def _canonical_hash(model: ModelProto, *, inline: bool) -> str:
    """SHA-256 of the canonical encoding, external contents inline (as ``onnxcore hash``); ``inline``: no tensor
    is external (the copy bringing them inline is skipped)."""
    try:
        h = hashlib.sha256()
        for part in encode_parts(model if inline else internalize(model), canonical=True).parts():
            h.update(part)
        return h.hexdigest()
    except OnnxCoreError as e:
        return f"unavailable: {str(e).splitlines()[0] if str(e) else type(e).__name__}"
