"""Every tensor a message holds, wherever it is nested (graphs, subgraphs, functions, training).

The walk is driven by Annex B (:data:`onnxcore.proto.spec.MESSAGE_SPECS`) rather than by a list of
places written by hand, so a tensor in an attribute of a node of a function of a subgraph is found
as surely as an initializer. It is iterative: a model nested deeper than the interpreter stack
(Clause 15.4) is walked without recursion.
"""

from __future__ import annotations

from collections.abc import Iterator

from onnxcore.proto.codec import MESSAGE_CLASSES
from onnxcore.proto.message import Message
from onnxcore.proto.messages import AttributeProto, FunctionProto, GraphProto, NodeProto, TensorProto
from onnxcore.proto.spec import MESSAGE_SPECS

__all__ = ["iter_tensors", "tensor_label"]


def _tensor_fields() -> dict[type[Message], tuple[tuple[str, bool], ...]]:
    """For each message class, its message fields that can lead to a ``TensorProto``."""
    reaches: set[str] = {"TensorProto"}
    changed = True
    while changed:
        changed = False
        for name, spec in MESSAGE_SPECS.items():
            if name in reaches:
                continue
            if any(f.kind == "message" and f.type in reaches for f in spec.fields):
                reaches.add(name)
                changed = True
    out: dict[type[Message], tuple[tuple[str, bool], ...]] = {}
    for name, spec in MESSAGE_SPECS.items():
        if name == "TensorProto":
            continue
        # Reversed: the walk pushes them on a stack, and pops them in table order.
        out[MESSAGE_CLASSES[name]] = tuple(
            (f.name, f.repeated) for f in reversed(spec.fields) if f.kind == "message" and f.type in reaches
        )
    return out


_FIELDS = _tensor_fields()
# The shortcut in iter_tensors relies on these (Annex B); fail loudly if the schema ever changes.
assert _FIELDS[NodeProto] == (("attribute", True),)
assert {f for f, _ in _FIELDS[AttributeProto]} == {"t", "g", "sparse_tensor", "tensors", "graphs", "sparse_tensors"}
assert all(dict(_FIELDS[c]).get("node") is True for c in (GraphProto, FunctionProto))
assert not any("node" in dict(f) for c, f in _FIELDS.items() if c not in (GraphProto, FunctionProto))


_Link = tuple[object, str, int] | None  # (parent link, field name, index or -1)


def _render(prefix: str, link: _Link) -> str:
    parts: list[str] = []
    while link is not None:
        parent, name, index = link
        parts.append(f"{name}[{index}]" if index >= 0 else name)
        link = parent  # type: ignore[assignment]
    parts.reverse()
    if prefix:
        parts.insert(0, prefix)
    return ".".join(parts)


def iter_tensors(root: Message, prefix: str = "") -> Iterator[tuple[str, TensorProto]]:
    """Yield ``(field path, tensor)`` for every ``TensorProto`` in ``root`` (``root`` included).

    Paths read like ``graph.node[3].attribute[0].g.initializer[1]`` (built only for the tensors
    found, so walking a large graph costs little). Tensors come in document order. A tensor
    object reachable twice is yielded each time.
    """
    stack: list[tuple[Message, _Link]] = [(root, None)]
    pop = stack.pop
    push = stack.append
    fields_of = _FIELDS.get
    while stack:
        msg, link = pop()
        if type(msg) is TensorProto:
            yield _render(prefix, link), msg
            continue
        for fname, repeated in fields_of(type(msg), ()):
            value = getattr(msg, fname)
            if fname == "node":
                # Most nodes carry no tensor: look through their attributes here rather than
                # pushing every node and attribute (a large graph is walked in a fraction of the time).
                for i in range(len(value) - 1, -1, -1):
                    attrs = value[i].attribute
                    for j in range(len(attrs) - 1, -1, -1):
                        a = attrs[j]
                        if (
                            a.t is not None
                            or a.g is not None
                            or a.sparse_tensor is not None
                            or a.tensors
                            or a.graphs
                            or a.sparse_tensors
                        ):
                            push((a, ((link, "node", i), "attribute", j)))
                continue
            if repeated:
                for i in range(len(value) - 1, -1, -1):
                    push((value[i], (link, fname, i)))
            elif value is not None:
                push((value, (link, fname, -1)))


def tensor_label(path: str, tensor: TensorProto) -> str:
    """How an error names a tensor: its name, or its field path when it has none."""
    return tensor.name if tensor.name else (path or "<tensor>")
