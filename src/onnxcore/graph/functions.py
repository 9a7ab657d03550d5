"""Functions (Clause 8.4): a function body with its attribute defaults, and binding its attribute parameters.

Which body a node is evaluated through is the bound model's decision (:mod:`onnxcore.graph.bound`): a node
bound to a model-local function (identified by domain, name and overload) is evaluated through its body, which
wins over the operator definition and any kernel; a node bound to an operator definition is evaluated by its
kernel, else through the definition's body (:meth:`OpSchema.function_body`, a fallback: Clause 8.4).

A body is evaluated as a sub-plan compiled for its call site; the uses of attribute parameters
(``ref_attr_name``) in its nodes, subgraphs included, are replaced at that point by the value the
call site supplies, else the parameter's default, else the attribute is omitted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from onnxcore.defs.binding import canonical_domain
from onnxcore.proto import AttributeProto, FunctionProto, GraphProto, NodeProto
from onnxcore.proto.message import shallow_copy

__all__ = [
    "UNRESOLVED",
    "FunctionBody",
    "Unresolved",
    "bind_attribute_refs",
    "resolve_attribute",
]


class FunctionBody:
    """A function body selected for a node.

    Attributes:
        proto: The ``FunctionProto``.
        defaults: Default values of its attribute parameters, by name.
        origin: ``"local"`` (a model-local function) or ``"schema"`` (an operator definition's body).
    """

    __slots__ = ("defaults", "origin", "proto")

    def __init__(self, proto: FunctionProto, defaults: dict[str, AttributeProto], origin: str) -> None:
        self.proto = proto
        self.defaults = defaults
        self.origin = origin

    @property
    def key(self) -> tuple[str, str, str]:
        """(domain, name, overload) of the function."""
        p = self.proto
        return (canonical_domain(p.domain), p.name, p.overload)


class Unresolved:
    """The outcome of an attribute reference in a body walked without a call site (no value to bind)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNRESOLVED"


UNRESOLVED = Unresolved()


def resolve_attribute(
    attr: AttributeProto, callsite: Mapping[str, AttributeProto] | None, defaults: Mapping[str, Any]
) -> AttributeProto | Unresolved | None:
    """One attribute of a body's node as its call site makes it (Clause 8.4).

    Args:
        attr: The attribute as written in the body.
        callsite: The call site's attributes by name; None when the body is read without a call site.
        defaults: The attribute parameters' default values, by name.

    Returns:
        ``attr`` itself when it refers to no parameter; else the value supplied for the parameter (renamed
        to ``attr``'s name), else the parameter's default, else None (the attribute is omitted: the node's
        own default applies); :data:`UNRESOLVED` when it refers to a parameter and there is no call site.
    """
    if not attr.ref_attr_name:
        return attr
    if callsite is None:
        return UNRESOLVED
    return _substitute(attr, callsite, defaults)


def _substitute(attr: AttributeProto, callsite: Mapping[str, AttributeProto], defaults: Mapping[str, Any]) -> Any:
    # Returns the attribute to use in place of a reference, or None when it is omitted.
    src = callsite.get(attr.ref_attr_name)
    if src is None:
        src = defaults.get(attr.ref_attr_name)
    if src is None:
        return None
    new = shallow_copy(src)
    new.name = attr.name
    new.clear_field("ref_attr_name")
    return new


def _resolve_graph(g: GraphProto, callsite: Mapping[str, AttributeProto], defaults: Mapping[str, Any]) -> GraphProto:
    nodes = bind_attribute_refs(g.node, callsite, defaults)
    if nodes is g.node:
        return g
    new = shallow_copy(g)
    new.node = nodes
    return new


def _resolve_node(node: NodeProto, callsite: Mapping[str, AttributeProto], defaults: Mapping[str, Any]) -> NodeProto:
    changed = False
    attrs: list[AttributeProto] = []
    for a in node.attribute:
        if a.ref_attr_name:
            changed = True
            sub = _substitute(a, callsite, defaults)
            if sub is not None:
                attrs.append(sub)
            continue
        if a.g is not None or a.graphs:
            g2 = _resolve_graph(a.g, callsite, defaults) if a.g is not None else None
            gs2 = [_resolve_graph(g, callsite, defaults) for g in a.graphs]
            if g2 is not a.g or any(x is not y for x, y in zip(gs2, a.graphs)):
                changed = True
                a = shallow_copy(a)
                a.g = g2
                a.graphs = gs2
        attrs.append(a)
    if not changed:
        return node
    new = shallow_copy(node)
    new.attribute = attrs
    return new


def bind_attribute_refs(
    nodes: list[NodeProto], callsite: Mapping[str, AttributeProto], defaults: Mapping[str, Any]
) -> list[NodeProto]:
    """The nodes of a body with every ``ref_attr_name`` use replaced (Clause 8.4).

    Returns ``nodes`` itself when nothing refers to an attribute parameter.
    """
    out = [_resolve_node(n, callsite, defaults) for n in nodes]
    if all(a is b for a, b in zip(out, nodes)):
        return nodes
    return out
