"""Function rules (Clause 8.4): identity, attribute references, and calls of model-local functions.

A function body is also a scope of its own, so the graph, operator and type rules apply to its
nodes as they do to a graph's (body nodes well formed, topologically sorted, bound to definitions).
"""

from __future__ import annotations

from collections.abc import Iterator

from onnxcore.defs.binding import canonical_domain
from onnxcore.proto.messages import FunctionProto
from onnxcore.validate.catalog import rule
from onnxcore.validate.context import Context, NodeRef

__all__: list[str] = []

Found = Iterator[tuple[str, str]]


@rule("E-FUNC-DUPLICATE", "8.4", "two model-local functions with the same (domain, name, overload)")
def func_duplicate(ctx: Context) -> Found:
    seen: dict[tuple[str, str, str], int] = {}
    for i, f in enumerate(ctx.model.functions):
        key = (canonical_domain(f.domain), f.name, f.overload)
        if key in seen:
            yield (
                f'functions[{i}] "{f.domain}:{f.name}"',
                f"function {key} is already defined by functions[{seen[key]}]",
            )
        else:
            seen[key] = i


def _fn_attr_names(f: FunctionProto) -> set[str]:
    return set(f.attribute) | {a.name for a in f.attribute_proto}


@rule("E-FUNC-REF-ATTR", "8.4", "an attribute reference (ref_attr_name) to no attribute of the enclosing function")
def func_ref_attr(ctx: Context) -> Found:
    names_cache: dict[int, set[str]] = {}
    for ref in ctx.attr_refs:
        fscope = ref.scope.function_scope()
        names: set[str] | None = None
        if fscope is not None:
            f = fscope.function
            assert f is not None
            names = names_cache.get(id(f))
            if names is None:
                names = names_cache[id(f)] = _fn_attr_names(f)
        for k, a in enumerate(ref.node.attribute):
            if not a.ref_attr_name:
                continue
            loc = f'{ref.loc}/attribute[{k}] "{a.name}"'
            if names is None:
                yield loc, f"attribute {a.name!r} refers to {a.ref_attr_name!r}, but it is not in a function body"
            elif a.ref_attr_name not in names:
                yield loc, f"attribute {a.name!r} refers to {a.ref_attr_name!r}, which the function does not declare"


def _calls(ctx: Context) -> Iterator[tuple[NodeRef, FunctionProto]]:
    for ref in ctx.unusual:
        if ref.status == "function" and ref.function is not None:
            yield ref, ref.function


@rule(
    "E-FUNC-CALL-ARITY", "8.4", "a call of a local function that does not supply its inputs, or names outputs it lacks"
)
def func_call_arity(ctx: Context) -> Found:
    for ref, f in _calls(ctx):
        n_in, n_out = len(ref.node.input), len(ref.node.output)
        if n_in != len(f.input):
            yield ref.loc, f"function {f.name!r} has {len(f.input)} input(s), the call gives {n_in}"
        if n_out > len(f.output):
            yield ref.loc, f"function {f.name!r} has {len(f.output)} output(s), the call names {n_out}"
        elif n_out == 0 and f.output:
            yield ref.loc, f"the call of function {f.name!r} names none of its outputs"


def _required_attrs(ctx: Context, f: FunctionProto) -> set[str]:
    """Attributes without a default that a body node's definition requires (Clause 8.4: else omitted)."""
    cache = ctx.fn_required
    if id(f) in cache:
        return cache[id(f)]
    without_default = set(f.attribute) - {a.name for a in f.attribute_proto}
    required: set[str] = set()
    for scope in ctx.scopes:
        if scope.function is not f:
            continue
        for ref in scope.nodes:
            if ref.schema is None:
                continue
            for a in ref.node.attribute:
                d = ref.schema.attributes.get(a.name)
                if a.ref_attr_name in without_default and d is not None and d.required:
                    required.add(a.ref_attr_name)
    cache[id(f)] = required
    return required


@rule(
    "E-FUNC-CALL-ATTR",
    "8.4",
    "a call of a local function with an attribute it does not declare, or without one it needs",
)
def func_call_attr(ctx: Context) -> Found:
    for ref, f in _calls(ctx):
        declared = _fn_attr_names(f)
        given = set()
        for k, a in enumerate(ref.node.attribute):
            given.add(a.name)
            if a.name not in declared:
                yield f'{ref.loc}/attribute[{k}] "{a.name}"', f"function {f.name!r} declares no attribute {a.name!r}"
        for name in sorted(_required_attrs(ctx, f) - given):
            yield (
                ref.loc,
                f"function {f.name!r} needs attribute {name!r} (a body node requires it and it has no default)",
            )
