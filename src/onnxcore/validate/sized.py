"""Reading a node's attributes by size, for the rules that compare attribute lengths with each other and with the
extents of the node's input (:mod:`onnxcore.validate.rules_ml`, :mod:`onnxcore.validate.rules_sized`).

Only lengths and small integer lists are read: a list attribute by its repeated field, a tensor attribute by its
``dims`` (never its data), so a rule costs nothing on a model with large weights.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from onnxcore.proto.messages import AttributeProto
from onnxcore.validate.context import Context, NodeRef

__all__ = ["Attrs", "Found", "features", "nodes_of"]

Found = Iterator[tuple[str, str]]
AT = AttributeProto.AttributeType


def nodes_of(ctx: Context, domain: str, op_type: str) -> list[NodeRef]:
    """Every node bound to the definition of ``domain::op_type``, from an index of the model's nodes by operator made
    once per check (a rule per operator would otherwise walk every node of the model once each)."""
    index: dict[tuple[str, str], list[list[NodeRef]]] | None = getattr(ctx, "_sized_index", None)
    if index is None:
        # From the signature groups (Context.groups: nodes bound to a definition, each group one operator), not from
        # another walk over every node.
        index = {}
        for refs in ctx.groups():
            index.setdefault((refs[0].domain, refs[0].node.op_type), []).append(refs)
        setattr(ctx, "_sized_index", index)  # noqa: B010 (a cache the Context does not declare)
    groups = index.get((domain, op_type))
    if not groups:
        return []
    if len(groups) == 1:
        return groups[0]
    # Several groups of one operator: their nodes in model order again (scopes in order, nodes in order).
    order = {id(s): k for k, s in enumerate(ctx.scopes)}
    return sorted((r for g in groups for r in g), key=lambda r: (order[id(r.scope)], r.index))


def features(ctx: Context, ref: NodeRef, k: int = 0) -> int | None:
    """The last extent of input ``k`` of ``ref`` when statically known (declared or inferred), else None.

    Inference runs only for a full check; a quick check (``full=False``) compares attributes with each other alone.
    """
    if not ctx.full or k >= len(ref.node.input) or not ref.node.input[k]:
        return None
    shapes = ctx.shapes
    if shapes is None:
        return None
    shape = shapes.shape(ref.node.input[k], ref.scope.loc)
    if not shape or not isinstance(shape[-1], int):
        return None
    return shape[-1]


def rank(ctx: Context, ref: NodeRef, k: int = 0) -> int | None:
    """The rank of input ``k`` of ``ref`` when statically known, else None."""
    if not ctx.full or k >= len(ref.node.input) or not ref.node.input[k]:
        return None
    shapes = ctx.shapes
    shape = None if shapes is None else shapes.shape(ref.node.input[k], ref.scope.loc)
    return None if shape is None else len(shape)


class Attrs:
    """The attributes of one node by name (the first of a duplicated name: E-ATTR-DUPLICATE reports the others)."""

    def __init__(self, ref: NodeRef) -> None:
        self.ref = ref
        self.index: dict[str, int] = {}
        for k, a in enumerate(ref.node.attribute):
            if not a.ref_attr_name:  # a reference in a function body: its value is the caller's, unknown here
                self.index.setdefault(a.name, k)

    def has(self, name: str) -> bool:
        """Whether the node gives ``name`` with a value."""
        return name in self.index

    def get(self, name: str) -> AttributeProto | None:
        """The attribute ``name``, or None."""
        k = self.index.get(name)
        return None if k is None else self.ref.node.attribute[k]

    def where(self, name: str) -> str:
        """The location of attribute ``name`` (the node's when absent)."""
        k = self.index.get(name)
        return self.ref.loc if k is None else f'{self.ref.loc}/attribute[{k}] "{name}"'

    def size(self, name: str) -> int | None:
        """The number of values of a list or tensor attribute (1 for a scalar), or None when not given."""
        a = self.get(name)
        if a is None:
            return None
        t = int(a.type)
        if t == AT.FLOATS:
            return len(a.floats)
        if t == AT.INTS:
            return len(a.ints)
        if t == AT.STRINGS:
            return len(a.strings)
        if t == AT.TENSOR:
            return math.prod(int(d) for d in a.t.dims) if a.t is not None else None
        if t in (AT.FLOAT, AT.INT, AT.STRING):
            return 1
        return None

    def first_size(self, *names: str) -> tuple[str, int] | None:
        """(name, size) of the first of ``names`` the node gives (a tensor form or a list form of one attribute)."""
        for name in names:
            n = self.size(name)
            if n is not None:
                return name, n
        return None

    def ints(self, name: str, limit: int = 1 << 20) -> list[int] | None:
        """The values of an INTS attribute (None when absent, not INTS, or longer than ``limit``)."""
        a = self.get(name)
        if a is None or int(a.type) != AT.INTS or len(a.ints) > limit:
            return None
        return list(map(int, a.ints))

    def int(self, name: str, default: int) -> int:
        """The value of an INT attribute, or ``default``."""
        a = self.get(name)
        return int(a.i) if a is not None and int(a.type) == AT.INT else default

    def given(self, *names: str) -> list[str]:
        """Those of ``names`` the node gives with at least one value."""
        return [n for n in names if (self.size(n) or 0) > 0]

    def label(self) -> str:
        """The node's operator, for messages."""
        return self.ref.node.op_type


def same_length(at: Attrs, names: tuple[str, ...], what: str) -> Found:
    """One finding per attribute of ``names`` whose length differs from the first given one's."""
    sizes = [(n, at.size(n)) for n in names]
    present = [(n, s) for n, s in sizes if s is not None]
    if len(present) < 2:
        return
    first, n0 = present[0]
    for name, n in present[1:]:
        if n != n0:
            yield at.where(name), f"{at.label()}: {name} has {n} values, {first} has {n0} ({what})"


def one_of(at: Attrs, names: tuple[str, ...], *, required: bool = True) -> Found:
    """A finding when more than one of ``names`` is given (or none, when ``required``)."""
    given = at.given(*names)
    if len(given) > 1:
        yield at.where(given[1]), f"{at.label()}: give one of {', '.join(names)}, not {' and '.join(given)}"
    elif required and not given:
        yield at.ref.loc, f"{at.label()}: one of {', '.join(names)} is required (with at least one value)"
