"""Operator rules: binding to a definition (Clauses 10.2, 10.4, 14.3-14.5, 16.1), attributes (7.4),
arity (7.3.2, 7.3.3) and types (10.3, 9.4)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from onnxcore.defs.flags import is_flag
from onnxcore.infer import Inference, ShapeInference, formal_at, node_location
from onnxcore.proto.messages import AttributeProto
from onnxcore.validate.catalog import rule
from onnxcore.validate.context import Context, NodeRef

__all__ = ["inference", "shape_inference"]

Found = Iterator[tuple[str, str]]
AT = AttributeProto.AttributeType


NodeCheck = Callable[[NodeRef, Any], Iterable[tuple[str, str]]]


def _per_group(ctx: Context, fn: NodeCheck) -> Found:
    """Run a signature check on one node of each group, and on every node of a failing group."""
    for refs in ctx.groups():
        first = list(fn(refs[0], refs[0].schema))
        if not first:
            continue
        yield from first
        for ref in refs[1:]:
            yield from fn(ref, ref.schema)


@rule("E-OP-UNDEFINED", "10.2", "a node whose operator no version of its (ONNX) domain defines")
def op_undefined(ctx: Context) -> Found:
    for ref in ctx.unusual:
        if ref.status == "undefined":
            yield (
                ref.loc,
                f"{ref.label()} is not an operator of domain {ref.domain or 'ai.onnx'} (nor a local function)",
            )


@rule("E-OP-VERSION", "10.4", "a node whose operator is absent from the imported version of its domain (14.3)")
def op_version(ctx: Context) -> Found:
    for ref in ctx.unusual:
        if ref.status == "not_in_version":
            first = ctx.defs.versions(ref.node.op_type, ref.domain)
            yield (
                ref.loc,
                f"{ref.label()} first appears in version {min(first)} of domain {ref.domain or 'ai.onnx'}; "
                f"the model imports version {ref.version}",
            )


@rule(
    "W-CUSTOM-DOMAIN",
    "16.1",
    "an operator of a domain ONNX 1-2 does not define (valid; an evaluator may not support it)",
)
def custom_domain(ctx: Context) -> Found:
    seen: set[tuple[str, str]] = set()
    for ref in ctx.unusual:
        if ref.status == "custom" and not ctx.defs.is_contrib_domain(ref.domain):
            key = (ref.domain, ref.node.op_type)
            if key not in seen:
                seen.add(key)
                yield ref.loc, f"{ref.label()} is a custom operator of domain {ref.domain!r}; it is not checked"


# The position on an operator of com.microsoft that onnxruntime does not define: a warning, not an error. The domain
# is not ONNX's, so the model is valid (Clause 16.1) and a custom-op library may add operators to it; but neither
# onnxruntime as published nor onnxcore (without a custom kernel) evaluates the node, and nothing checks it.
@rule(
    "W-ORT-UNDEFINED",
    "16.1",
    "an operator of onnxruntime's domain com.microsoft that onnxruntime does not define (not checked; only a custom "
    "kernel evaluates it)",
)
def ort_undefined(ctx: Context) -> Found:
    seen: set[tuple[str, str]] = set()
    for ref in ctx.unusual:
        if ref.status == "custom" and ctx.defs.is_contrib_domain(ref.domain):
            key = (ref.domain, ref.node.op_type)
            if key not in seen:
                seen.add(key)
                yield (
                    ref.loc,
                    f"{ref.label()} is not an operator onnxruntime defines in {ref.domain!r}; it is not checked, "
                    "and only a custom kernel evaluates it",
                )


@rule(
    "W-ORT-EXTENSION",
    "10.2",
    "a node of an ONNX domain bound to onnxruntime's own definition (an operator or version ONNX 1-2 does not "
    "define there): the model depends on onnxruntime's extensions",
)
def ort_extension(ctx: Context) -> Found:
    seen: set[tuple[str, str, int]] = set()
    for refs in ctx.groups():
        ref, schema = refs[0], refs[0].schema
        assert schema is not None  # groups() holds nodes bound to a definition
        if schema.origin != "onnxruntime" or ctx.defs.is_contrib_domain(ref.domain):
            continue
        key = (ref.domain, ref.node.op_type, schema.since_version)
        if key not in seen:
            seen.add(key)
            yield (
                ref.loc,
                f"{ref.label()} is not defined by ONNX 1-2 in version {ref.version} of {ref.domain or 'ai.onnx'}; "
                f"it binds to onnxruntime's {schema.name}-{schema.since_version}: the model depends on onnxruntime's "
                "extensions",
            )


@rule("W-OP-DEPRECATED", "14.5", "a deprecated operator (still valid and evaluated)")
def op_deprecated(ctx: Context) -> Found:
    seen: set[tuple[str, str]] = set()
    for refs in ctx.groups():
        ref, schema = refs[0], refs[0].schema
        assert schema is not None  # groups() holds nodes bound to a definition
        if schema.deprecated:
            key = (ref.domain, ref.node.op_type)
            if key not in seen:
                seen.add(key)
                yield ref.loc, f"{ref.label()} is deprecated as of version {schema.since_version}"


@rule("E-ATTR-UNKNOWN", "10.4", "an attribute the operator does not define")
def attr_unknown(ctx: Context) -> Found:
    yield from _per_group(ctx, _attr_unknown)


def _attr_unknown(ref: NodeRef, schema: Any) -> Found:
    defs = schema.attributes
    for k, a in enumerate(ref.node.attribute):
        if a.name not in defs:
            yield f'{ref.loc}/attribute[{k}] "{a.name}"', f"{ref.label()} has no attribute {a.name!r}"


@rule("E-ATTR-MISSING", "10.4", "a required attribute that the node does not give")
def attr_missing(ctx: Context) -> Found:
    yield from _per_group(ctx, _attr_missing)


def _attr_missing(ref: NodeRef, schema: Any) -> Found:
    given = None
    for name, d in schema.attributes.items():
        if d.required:
            if given is None:
                given = {a.name for a in ref.node.attribute}
            if name not in given:
                yield ref.loc, f"{ref.label()} requires attribute {name!r}"


@rule("E-ATTR-TYPE", "7.3.1", "an attribute whose type differs from the one the operator defines")
def attr_type(ctx: Context) -> Found:
    yield from _per_group(ctx, _attr_type)


def _attr_type(ref: NodeRef, schema: Any) -> Found:
    defs = schema.attributes
    for k, a in enumerate(ref.node.attribute):
        d = defs.get(a.name)
        if d is None or not a.has("type") or int(a.type) == int(d.type):
            continue
        yield (
            f'{ref.loc}/attribute[{k}] "{a.name}"',
            f"{ref.label()} attribute {a.name!r} is {_at(d.type)}, the node gives {_at(a.type)}",
        )


def _at(t: int) -> str:
    try:
        return AT(t).name
    except ValueError:
        return str(t)


@rule(
    "W-ATTR-FLAG",
    "7.3.1",
    "a flag attribute (an INT its definition gives the values 0 and 1 only) with another value: its meaning is "
    "left open, and evaluators differ (onnxcore refuses to evaluate it)",
)
def attr_flag(ctx: Context) -> Found:
    for refs in ctx.groups():
        first = refs[0]
        assert first.schema is not None  # groups() holds nodes bound to a definition
        defs = first.schema.attributes
        flags = [
            k
            for k, a in enumerate(first.node.attribute)
            if not a.ref_attr_name
            and is_flag(first.domain, a.name)
            and a.name in defs
            and defs[a.name].type == AT.INT
            and a.type == AT.INT
        ]
        if not flags:
            continue
        # The group shares attribute names and types, not values: every node is read.
        for ref in refs:
            for k in flags:
                a = ref.node.attribute[k]
                if a.i not in (0, 1):
                    yield (
                        f'{ref.loc}/attribute[{k}] "{a.name}"',
                        f"{ref.label()} attribute {a.name!r} is {a.i}; the definition gives only 0 and 1",
                    )


@rule("E-INPUT-ARITY", "7.3.2", "too few or too many inputs for the operator (variadic minimum arity included)")
def input_arity(ctx: Context) -> Found:
    yield from _per_group(ctx, _input_arity)


def _input_arity(ref: NodeRef, schema: Any) -> Found:
    n = len(ref.node.input)
    lo, hi = schema.input_bounds(n)
    if n < lo:
        yield ref.loc, f"{ref.label()} needs at least {lo} input(s), the node gives {n}"
    elif n > hi:
        yield ref.loc, f"{ref.label()} takes at most {hi} input(s), the node gives {n}"


@rule("E-INPUT-UNSUPPLIED", "7.3.3", "a required (non-optional) input left unsupplied with an empty name")
def input_unsupplied(ctx: Context) -> Found:
    yield from _per_group(ctx, _input_unsupplied)


def _input_unsupplied(ref: NodeRef, schema: Any) -> Found:
    # Empty names among variadic actuals are refused too (onnx's checker lets them pass; a kernel would be
    # handed nothing).
    for k, formal in schema.unsupplied_required(ref.node.input):
        yield f"{ref.loc}/input[{k}]", f"{ref.label()} input {k} ({formal.name}) is required, but left empty"


@rule("E-OUTPUT-ARITY", "7.3.2", "too few outputs for the operator (variadic minimum arity included)")
def output_arity(ctx: Context) -> Found:
    yield from _per_group(ctx, _output_arity)


def _output_arity(ref: NodeRef, schema: Any) -> Found:
    n = len(ref.node.output)
    lo, _hi = schema.output_bounds(n)
    if n < lo:
        yield ref.loc, f"{ref.label()} has at least {lo} output(s), the node names {n}"


@rule("E-OUTPUT-EXTRA", "7.3.3", "names given for outputs the operator does not have")
def output_extra(ctx: Context) -> Found:
    yield from _per_group(ctx, _output_extra)


def _output_extra(ref: NodeRef, schema: Any) -> Found:
    outs = ref.node.output
    n = len(outs)
    _lo, hi = schema.output_bounds(n)
    for k in range(hi, n):
        if outs[k]:
            yield (
                f"{ref.loc}/output[{k}]",
                f"{ref.label()} has {hi} output(s); output {k} ({outs[k]!r}) does not exist",
            )


@rule("E-OUTPUT-UNNAMED", "7.3.3", "a non-optional output left without a name (it is always computed)")
def output_unnamed(ctx: Context) -> Found:
    yield from _per_group(ctx, _output_unnamed)


def _output_unnamed(ref: NodeRef, schema: Any) -> Found:
    formals = schema.outputs
    for k, name in enumerate(ref.node.output):
        if not name and k < len(formals) and formals[k].option == "single":
            yield (
                f"{ref.loc}/output[{k}]",
                f"{ref.label()} output {k} ({formals[k].name}) is always computed; name it",
            )


# ---- types (Clause 10.3), from onnxcore.infer ------------------------------------------------------


def inference(ctx: Context) -> Inference | None:
    """The type inference of the model (:attr:`Context.inference`: computed once, on the bound model)."""
    return ctx.inference


@rule("E-TYPE-CONSTRAINT", "10.3", "an input whose type the operator's type constraints do not admit", full_only=True)
def type_constraint(ctx: Context) -> Found:
    inf = inference(ctx)
    if inf is None:
        return
    passed: set[tuple[int, tuple[str | None, ...]]] = set()
    # The walk's records, not NodeTypes: a node's location is rendered only when it has a finding.
    for graph, index, node, schema, _fn, input_types, _out, _b, _c in inf.node_records:
        if schema is None:
            continue
        key = (id(schema), input_types)
        if key in passed:
            continue  # same definition, same input types: the same (passing) verdict
        found = False
        for k, t in enumerate(input_types):
            if t is None:
                continue
            f = formal_at(schema.inputs, k)
            if f is None or not f.types or t in f.types:
                continue
            found = True
            allowed = ", ".join(sorted(f.types))
            if len(allowed) > 160:
                allowed = allowed[:160] + "..."
            yield (
                f"{node_location(graph, index, node)}/input[{k}]",
                f"{schema.name} input {k} ({f.name}: {f.type_str}) is {t}; allowed: {allowed}",
            )
        if not found:
            passed.add(key)


@rule(
    "E-TYPE-BINDING",
    "10.3",
    "inputs bound to one type variable (or a homogeneous variadic) with different types",
    full_only=True,
)
def type_binding(ctx: Context) -> Found:
    inf = inference(ctx)
    if inf is None:
        return
    for graph, index, node, schema, _fn, input_types, _out, _b, conflicts in inf.node_records:
        if not conflicts or schema is None:
            continue
        for var in sorted(conflicts):
            seen = []
            for k, t in enumerate(input_types):
                f = _formal(schema.inputs, k)
                if t is not None and f is not None and f.type_str == var:
                    seen.append(f"input {k} is {t}")
            yield (
                node_location(graph, index, node),
                f"{schema.name}: type variable {var} is bound inconsistently ({'; '.join(seen)})",
            )


def _formal(formals: tuple[Any, ...], k: int) -> Any:
    if k < len(formals):
        return formals[k]
    if formals and formals[-1].option == "variadic":
        return formals[-1]
    return None


@rule(
    "E-TYPE-MISMATCH",
    "9.4",
    "an inferred type that contradicts the type declared for the same value (10.3)",
    full_only=True,
)
def type_mismatch(ctx: Context) -> Found:
    inf = inference(ctx)
    if inf is None:
        return
    for m in inf.mismatches:
        yield m.location, m.message


# ---- shapes (Clause 10.3, 9.4), from onnxcore.infer.shapes ------------------------------------------


def shape_inference(ctx: Context) -> ShapeInference | None:
    """The shape inference of the model (:attr:`Context.shapes`: computed once, when types are inferred)."""
    return ctx.shapes


@rule(
    "E-SHAPE-INCOMPATIBLE",
    "10.3",
    "a node whose statically known input extents contradict its operator definition",
    full_only=True,
)
def shape_incompatible(ctx: Context) -> Found:
    inf = shape_inference(ctx)
    if inf is None:
        return
    for s in inf.incompatibilities:
        yield s.location, f"{s.op_type}: {s.message}"


@rule(
    "E-SHAPE-MISMATCH",
    "9.4",
    "an inferred shape that contradicts the shape declared for the same value (10.3)",
    full_only=True,
)
def shape_mismatch(ctx: Context) -> Found:
    inf = shape_inference(ctx)
    if inf is None:
        return
    for m in inf.mismatches:
        yield m.location, m.message
