"""Every tensor a message holds, wherever it is nested (graphs, subgraphs, functions, training).

The walk follows the Annex B fields that can lead to a ``TensorProto`` (``message_fields``), so a tensor
in an attribute of a node of a function of a subgraph is found as surely as an initializer, and a model
nested deeper than the interpreter stack (Clause 15.4) is walked without recursion. It holds one iterator
per level and builds a path only for a tensor found, reading fields with ``peek``: walking a model of a
million empty entries costs no memory per entry (issue 29).
"""

from __future__ import annotations

from collections.abc import Iterator

from onnxcore.proto.message import Message, peek
from onnxcore.proto.messages import TensorProto
from onnxcore.proto.walk import message_fields

__all__ = ["iter_tensors", "tensor_label"]

_FIELDS = message_fields("TensorProto")


def _render(prefix: str, path: list[tuple[str, int]], name: str, index: int) -> str:
    parts = [prefix] if prefix else []
    parts += [f"{n}[{k}]" if k >= 0 else n for n, k in path]
    parts.append(f"{name}[{index}]" if index >= 0 else name)
    return ".".join(parts)


def _children(msg: Message) -> Iterator[tuple[str, int, Message]]:
    for name, repeated in _FIELDS.get(type(msg), ()):
        v = peek(msg, name)
        if repeated:
            for k, child in enumerate(v):
                yield name, k, child
        elif v is not None:
            yield name, -1, v


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
