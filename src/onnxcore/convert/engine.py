"""Operator set conversion (Clause 14): every node of a domain moved, definition by definition, to a version.

The model is bound once (:func:`onnxcore.graph.bind`) and inferred once (Clause 9); each scope's nodes
(the graph, every subgraph, every model-local function body) are rewritten into new lists, step by step
across each pair of consecutive definitions between the node's and the target's (an adapter of
:mod:`onnxcore.convert.adapters` where one is registered, then the generic step of
:mod:`onnxcore.convert.generic`). Every refusal is collected; only when there is none is anything written,
into a copy of the model that shares the tensors' contents (external data stays referenced, never read).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from onnxcore.build.helper import make_tensor_value_info
from onnxcore.convert import adapters_axes, adapters_ml, adapters_ops, adapters_renamed  # noqa: F401 -- fill the tables
from onnxcore.convert.adapters import Direction, Refuse, find_adapter
from onnxcore.convert.generic import check_types, reconcile
from onnxcore.convert.version_step import Emitted, ScopeContext, Step
from onnxcore.defs.binding import canonical_domain, domain_versions, get_schema, schema_versions
from onnxcore.defs.ir import opset_ir_version
from onnxcore.errors import ConversionError, Refusal
from onnxcore.graph import Scope, bind, walk_scopes
from onnxcore.graph.functions import bind_attribute_refs
from onnxcore.infer import annotate, infer_both
from onnxcore.proto.bridge import OnnxMessage, as_message
from onnxcore.proto.message import copy_message
from onnxcore.proto.messages import (
    AttributeProto,
    ModelProto,
    NodeProto,
    OperatorSetIdProto,
    TensorProto,
    ValueInfoProto,
)
from onnxcore.types import ElementType, from_array

__all__ = ["convert_node", "convert_version"]

_MAX_STEPS = 64  # renames and steps of one node: far above any chain of definitions


def convert_version(
    model: ModelProto | OnnxMessage, target_opset: int, *, domain: str = "", expand_functions: bool = False
) -> ModelProto:
    """The model with every node of ``domain`` rewritten for operator set version ``target_opset``.

    Up and down, node by node (the top-level graph, subgraphs and model-local functions), one adapter per
    changed definition (Clause 14.3). Names, metadata, doc strings and value_info are kept; tensors are
    shared with ``model``, so external data stays in its files, referenced and unread. ``model`` itself is
    not changed.

    Args:
        model: The model (onnxcore's or the onnx package's ``ModelProto``).
        target_opset: The version of ``domain`` to import.
        domain: ``""`` (ai.onnx) or ``"ai.onnx.ml"``.
        expand_functions: When moving down, replace a node that cannot be expressed at the target by its
            operator's function body (Clause 8.4), when that body converts.

    Returns:
        The converted model (a new message).

    Raises:
        ConversionError: one or more nodes cannot be expressed at ``target_opset``; ``refusals`` lists them
            all (operator, versions, location, reason). Nothing is returned then.
    """
    src_model = as_message(model, ModelProto, "convert_version")
    dom = canonical_domain(domain)
    known = domain_versions(dom)
    if known is None:
        raise ConversionError(f"domain {domain!r} has no operator definitions to convert between")
    if not known[0] <= target_opset <= known[1]:
        raise ConversionError(
            f"opset {target_opset} of {dom or 'ai.onnx'} is not defined (known: {known[0]} to {known[1]})"
        )
    out = copy_message(src_model)  # shares the tensors' contents (zero-copy views), never reads a file
    source = _imported(out.opset_import, dom)
    if source is None:
        raise ConversionError(f"the model does not import {dom or 'ai.onnx'}")
    bound = bind(out)
    types, shapes = infer_both(out, bound=bound)
    used = _used_names(bound.scopes)
    names = _all_names(bound.scopes)
    original_names = set(names)  # (names grows as the rewrites take fresh ones)
    refusals: list[Refusal] = []
    rewrites: list[tuple[Scope, list[NodeProto], ScopeContext]] = []
    contexts: dict[int, ScopeContext] = {}

    def enter(scope: Scope) -> bool:
        parent = contexts.get(id(scope.parent)) if scope.parent is not None else None
        if scope.kind == "function":
            assert scope.function is not None
            version = _imported(scope.function.opset_import, dom)
        else:
            version = source
        ctx = _context(scope, parent, dom, target_opset, types.type_strings, shapes.shapes, names, out.ir_version)
        ctx.used = used
        contexts[id(scope)] = ctx
        if version is None:
            return True
        new_nodes: list[NodeProto] = []
        for ref in scope.nodes:
            node = ref.node
            if canonical_domain(node.domain) != dom or ref.status == "function":
                new_nodes.append(node)
                continue
            try:
                if ref.status != "schema":
                    raise Refuse(f"the node does not bind to a definition at version {version} ({ref.status})")
                new_nodes.extend(convert_node(node, version, ctx, used))
            except Refuse as e:
                reason = str(e)
                if expand_functions and target_opset < version:
                    try:
                        new_nodes.extend(_expand(node, version, ctx, used))
                        continue
                    except Refuse as e2:
                        reason = f"{reason}; its function body does not convert either: {e2}"
                label = f"{node.domain}::{node.op_type}" if node.domain else node.op_type
                since = ref.schema.since_version if ref.schema is not None else version
                refusals.append(Refusal(ref.loc, label, since, target_opset, reason))
        rewrites.append((scope, new_nodes, ctx))
        return True

    walk_scopes([s for s in bound.scopes if s.parent is None], enter=enter)
    if refusals:
        n = len(refusals)
        raise ConversionError(
            f"cannot convert to {dom or 'ai.onnx'} opset {target_opset}: {n} node{'s' if n > 1 else ''} refused",
            refusals,
        )
    for scope, nodes, ctx in rewrites:
        _apply(scope, nodes, ctx)
    _set_import(out.opset_import, dom, target_opset)
    for o in out.opset_import:
        # The converted model states each import's domain, the default one's "" included (Annex B presence), as
        # onnx's converter writes them: a model's text and octets show `domain: ""` after a conversion.
        o.mark_present("domain")
    for fn in out.functions:
        if _imported(fn.opset_import, dom) is not None:
            _set_import(fn.opset_import, dom, target_opset)
    need = opset_ir_version(dom, target_opset)
    if need is not None and out.ir_version < need:
        out.ir_version = need
    _state_new_values(src_model, out, original_names)
    return out


def _state_new_values(src: ModelProto, out: ModelProto, names: set[str]) -> None:
    """A model that states its intermediates' types (value_info, as ``annotate`` writes it) keeps doing so: the
    values the rewrites added to its top-level graph get their inferred type and shape (the values it had keep
    theirs, since a conversion keeps every value's meaning)."""
    if src.graph is None or out.graph is None or not src.graph.value_info:
        return
    inferred = annotate(out)
    assert inferred.graph is not None
    added = [vi for vi in inferred.graph.value_info if vi.name not in names]
    if added:
        out.graph.value_info = [*out.graph.value_info, *added]


def _imported(imports: Iterable[OperatorSetIdProto], dom: str) -> int | None:
    for o in imports:
        if canonical_domain(o.domain or "") == dom:
            return int(o.version)
    return None


def _set_import(imports: list[OperatorSetIdProto], dom: str, version: int) -> None:
    for o in imports:
        if canonical_domain(o.domain or "") == dom:
            o.version = version


def _used_names(scopes: Iterable[Scope]) -> set[str]:
    used: set[str] = set()
    for s in scopes:
        used.update(s.outputs)
        for ref in s.nodes:
            used.update(ref.node.input)
    return used


def _all_names(scopes: Iterable[Scope]) -> set[str]:
    names: set[str] = set()
    for s in scopes:
        names.update(s.inputs)
        names.update(s.outputs)
        names.update(s.init_names)
        for ref in s.nodes:
            names.update(ref.node.input)
            names.update(ref.node.output)
            if ref.node.name:
                names.add(ref.node.name)
    return names


def _context(
    scope: Scope,
    parent: ScopeContext | None,
    dom: str,
    target: int,
    types: dict[str, dict[str, str]],
    shapes: dict[str, dict[str, Any]],
    names: set[str],
    ir_version: int,
) -> ScopeContext:
    t = dict(parent.types) if parent is not None else {}
    s = dict(parent.shapes) if parent is not None else {}
    c = dict(parent.constants) if parent is not None else {}
    t.update(types.get(scope.loc, {}))
    s.update(shapes.get(scope.loc, {}))
    if scope.graph is not None:
        for init in scope.graph.initializer:
            if init.name:
                c[init.name] = init
    for ref in scope.nodes:
        n = ref.node
        if n.op_type == "Constant" and canonical_domain(n.domain) == "" and len(n.output) == 1:
            tensor = _constant_value(n)
            if tensor is not None:
                c[n.output[0]] = tensor
    return ScopeContext(
        domain=dom,
        target=target,
        path=scope.loc,
        types=t,
        shapes=s,
        constants=c,
        names=names,
        in_function=scope.kind == "function",
        ir_version=ir_version,
    )


def _constant_value(node: NodeProto) -> TensorProto | None:
    for a in node.attribute:
        if a.ref_attr_name:
            return None
        if a.name == "value" and a.t is not None:
            return a.t
        if a.name == "value_int":
            return from_array(int(a.i), elem_type=ElementType.INT64)
        if a.name == "value_ints":
            return from_array([int(v) for v in a.ints], elem_type=ElementType.INT64)
        if a.name == "value_float":
            return from_array(float(a.f), elem_type=ElementType.FLOAT)
        if a.name == "value_floats":
            return from_array([float(v) for v in a.floats], elem_type=ElementType.FLOAT)
    return None


def _shallow_node(node: NodeProto) -> NodeProto:
    new = NodeProto.__new__(NodeProto)
    for f in NodeProto._SPEC.fields:
        v = getattr(node, f.name)
        setattr(new, f.name, list(v) if f.repeated else v)
    new._present = node._present
    new._unknown = node._unknown
    return new


def convert_node(node: NodeProto, version: int, ctx: ScopeContext, used: set[str], depth: int = 0) -> list[NodeProto]:
    """The nodes that express ``node`` (of operator set ``version`` of ``ctx.domain``) at ``ctx.target``.

    Raises:
        Refuse: the node cannot be expressed there (the message says why).
    """
    if depth > 8:
        raise Refuse("helper nodes nest too deep")
    dom, target = ctx.domain, ctx.target
    node = _shallow_node(node)
    before: list[Emitted] = []
    after: list[Emitted] = []
    cur = version
    for _ in range(_MAX_STEPS):
        op = node.op_type
        s_cur = get_schema(op, cur, dom)
        if s_cur is None:
            raise Refuse(f"{op} is not defined at version {cur}")
        for a in node.attribute:
            d = s_cur.attributes.get(a.name)
            if d is not None and d.type and a.type and a.type != d.type:
                # The adapters read attributes as their definition types them; one of another type (an INTS where
                # an INT goes, a TENSOR for a flag) is the validator's E-ATTR-TYPE, refused here too (Clause 7.3.1).
                raise Refuse(f"attribute {a.name!r} is not of the type {op}-{s_cur.since_version} defines")
        versions = schema_versions(op, dom)
        direction: Direction = "up" if target >= cur else "down"
        if direction == "up":
            pairs = [
                (v, get_schema(op, v - 1, dom), get_schema(op, v, dom))
                for v in versions
                if s_cur.since_version < v <= target
            ]
            if s_cur.deprecated and target > cur and find_adapter(dom, op, s_cur.since_version, "up") is not None:
                # a deprecated definition (Clause 14.5): its replacement takes the node over
                pairs.insert(0, (s_cur.since_version, get_schema(op, s_cur.since_version - 1, dom), s_cur))
        else:
            s_tgt = get_schema(op, target, dom)
            floor = s_tgt.since_version if s_tgt is not None else 0
            pairs = [
                (v, get_schema(op, v, dom), get_schema(op, v - 1, dom))
                for v in reversed(versions)
                if floor < v <= s_cur.since_version
            ]
        renamed = False
        for v, src, dst in pairs:
            assert src is not None
            step = Step(node, ctx, src, dst, direction)
            fn = find_adapter(dom, op, v, direction)
            if fn is not None:
                fn(step)
            if node.op_type != op:
                before.extend(step.before)
                after[:0] = step.after
                cur = v if direction == "up" else v - 1
                renamed = True
                break
            if dst is None:
                raise Refuse(f"{op} is first defined in version {v}: no earlier definition expresses it")
            reconcile(step, used)
            before.extend(step.before)
            after[:0] = step.after
        if not renamed:
            break
    else:
        raise Refuse("the conversion does not settle (adapters rename in a circle)")
    final = get_schema(node.op_type, target, dom)
    if final is None:
        raise Refuse(f"{node.op_type} is not defined at version {target}")
    check_types(Step(node, ctx, final, final, "down"))
    out: list[NodeProto] = []
    for helper, at in before:
        out.extend(_helper(helper, at, ctx, used, depth))
    out.append(node)
    for helper, at in after:
        out.extend(_helper(helper, at, ctx, used, depth))
    return out


def _helper(node: NodeProto, at: int, ctx: ScopeContext, used: set[str], depth: int) -> list[NodeProto]:
    if ctx.domain != "":
        raise Refuse(f"the rewrite needs an ai.onnx {node.op_type} node inside a {ctx.domain} conversion")
    return convert_node(node, at, ctx, used, depth + 1)


def _expand(node: NodeProto, version: int, ctx: ScopeContext, used: set[str]) -> list[NodeProto]:
    """The node replaced by its operator's function body (Clause 8.4), converted to the target."""
    schema = get_schema(node.op_type, version, ctx.domain)
    body = schema.function_body(version) if schema is not None else None
    if body is None:
        raise Refuse(f"{node.op_type} has no stored function body")
    body_version = _imported(body.opset_import, ctx.domain) or version
    if any(canonical_domain(n.domain) != ctx.domain for n in body.node):
        raise Refuse("its function body uses another domain")
    callsite = {a.name: a for a in node.attribute}
    defaults: dict[str, AttributeProto] = {a.name: a for a in body.attribute_proto}
    nodes = bind_attribute_refs(list(body.node), callsite, defaults)
    mapping: dict[str, str] = {"": ""}
    for k, name in enumerate(body.input):
        mapping[name] = node.input[k] if k < len(node.input) else ""
    for k, name in enumerate(body.output):
        mapping[name] = node.output[k] if k < len(node.output) else ctx.fresh(f"{node.name or node.op_type}_{name}")
    prefix = node.name or node.op_type
    out: list[NodeProto] = []
    for n in nodes:
        new = _shallow_node(n)
        for name in [*n.input, *n.output]:
            if name not in mapping:
                mapping[name] = ctx.fresh(f"{prefix}_{name}")
        new.input = [mapping[x] for x in n.input]
        new.output = [mapping[x] for x in n.output]
        if n.name:
            new.name = ctx.fresh(f"{prefix}_{n.name}")
        out.extend(convert_node(new, body_version, ctx, used))
    return out


def _apply(scope: Scope, nodes: list[NodeProto], ctx: ScopeContext) -> None:
    if scope.graph is not None:
        g = scope.graph
        g.node = nodes
        if ctx.new_initializers:
            g.initializer = [*g.initializer, *ctx.new_initializers]
            if ctx.ir_version < 4:  # IR 3: every initializer is also a graph input
                g.input = [*g.input, *(_value_info(t) for t in ctx.new_initializers)]
        produced = {o for n in nodes for o in n.output} | set(scope.inputs) | set(scope.init_names)
        g.value_info = [vi for vi in g.value_info if vi.name in produced]
    elif scope.function is not None:
        scope.function.node = nodes


def _value_info(t: TensorProto) -> ValueInfoProto:
    assert t.name is not None
    return make_tensor_value_info(t.name, t.data_type, list(t.dims))
