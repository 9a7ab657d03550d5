"""Every tensor a message holds, wherever it is nested (graphs, subgraphs, functions, training).

The walk is :func:`onnxcore.proto.walk.walk_messages` along the Annex B fields that can lead to a
``TensorProto``, so a tensor in an attribute of a node of a function of a subgraph is found as surely
as an initializer, and a model nested deeper than the interpreter stack (Clause 15.4) is walked
without recursion.
"""

from __future__ import annotations

from collections.abc import Iterator

from onnxcore.proto.message import Message
from onnxcore.proto.messages import TensorProto
from onnxcore.proto.walk import Entry, message_fields, walk_messages

__all__ = ["iter_tensors", "tensor_label"]

_FIELDS = message_fields("TensorProto")


def _render(prefix: str, entries: list[Entry], i: int) -> str:
    parts: list[str] = []
    while i > 0:
        _msg, parent, name, index = entries[i]
        parts.append(f"{name}[{index}]" if index >= 0 else name)
        i = parent
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
    walk = walk_messages(root, _FIELDS, prune=True, visit_order=True)
    entries = walk.entries
    for i in walk.order:
        msg = entries[i][0]
        if type(msg) is TensorProto:
            yield _render(prefix, entries, i), msg


def tensor_label(path: str, tensor: TensorProto) -> str:
    """How an error names a tensor: its name, or its field path when it has none."""
    return tensor.name if tensor.name else (path or "<tensor>")
