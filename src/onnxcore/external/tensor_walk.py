"""Every tensor a message holds, wherever it is nested (graphs, subgraphs, functions, training).

The walk follows the Annex B fields that can lead to a ``TensorProto`` (``message_fields``), so a tensor
in an attribute of a node of a function of a subgraph is found as surely as an initializer, and a model
nested deeper than the interpreter stack (Clause 15.4) is walked without recursion. It holds one iterator
per level and builds a path only for a tensor found: walking a model of a million empty entries costs no
memory per entry (issue 29).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from operator import attrgetter
from typing import Any

from onnxcore.proto.message import Message
from onnxcore.proto.message_walk import message_fields
from onnxcore.proto.messages import AttributeProto, NodeProto, TensorProto

__all__ = ["iter_tensors", "tensor_label"]

_FIELDS = message_fields("TensorProto")


def _render(prefix: str, path: list[tuple[str, int]], name: str, index: int) -> str:
    parts = [prefix] if prefix else []
    parts += [f"{n}[{k}]" if k >= 0 else n for n, k in path]
    parts.append(f"{name}[{index}]" if index >= 0 else name)
    return ".".join(parts)


def _children(msg: Message) -> Iterator[tuple[str, int, Message]]:
    # The children of ``msg`` along the followed fields that can hold a tensor.
    for name, repeated in _FIELDS.get(type(msg), ()):
        v = getattr(msg, name)
        if repeated:
            for k, child in enumerate(v):
                if _leads_somewhere(child):
                    yield name, k, child
        elif v is not None and _leads_somewhere(v):
            yield name, -1, v


def _leads_somewhere(msg: Message) -> bool:
    # A tensor, or a message one of whose followed fields holds anything (for a node: one of whose attributes
    # leads somewhere); most nodes of a graph hold no tensor and are passed over here, without a generator.
    cls = type(msg)
    if cls is TensorProto:
        return True
    if cls is NodeProto:
        assert isinstance(msg, NodeProto)
        for a in msg.attribute:
            if _ATTR_VALUES(a) != _ATTR_EMPTY:
                return True
        return False
    getter = _GETTERS.get(cls)
    if getter is None:
        return False
    return bool(getter[0](msg) != getter[1])


def _getter(fields: tuple[tuple[str, bool], ...]) -> tuple[Callable[[Any], Any], tuple[Any, ...]]:
    # One C-level call reading the followed fields of a message as a tuple, and that tuple when all are empty.
    names = [f for f, _ in fields] * (2 if len(fields) == 1 else 1)
    empty: tuple[Any, ...] = tuple([] if repeated else None for _, repeated in fields) * (2 if len(fields) == 1 else 1)
    return attrgetter(*names), empty


_GETTERS = {cls: _getter(fields) for cls, fields in _FIELDS.items() if fields}
_ATTR_VALUES, _ATTR_EMPTY = _GETTERS[AttributeProto]


def iter_tensors(root: Message, prefix: str = "") -> Iterator[tuple[str, TensorProto]]:
    """Yield ``(field path, tensor)`` for every ``TensorProto`` in ``root`` (``root`` included).

    Paths read like ``graph.node[3].attribute[0].g.initializer[1]`` (built only for the tensors
    found, so walking a large graph costs little). Tensors come in document order (pre-order, fields
    in table order). A tensor object reachable twice is yielded each time.
    """
    if type(root) is TensorProto:
        yield prefix, root
    path: list[tuple[str, int]] = []
    stack = [_children(root)]
    while stack:
        for name, index, child in stack[-1]:
            if type(child) is TensorProto:
                yield _render(prefix, path, name, index), child
            if _FIELDS.get(type(child)):
                path.append((name, index))
                stack.append(_children(child))
                break
        else:
            stack.pop()
            if stack:
                path.pop()


def tensor_label(path: str, tensor: TensorProto) -> str:
    """How an error names a tensor: its name, or its field path when it has none."""
    return tensor.name if tensor.name else (path or "<tensor>")
