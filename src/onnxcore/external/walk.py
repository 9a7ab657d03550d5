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
from onnxcore.proto.messages import TensorProto
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
        out[MESSAGE_CLASSES[name]] = tuple(
            (f.name, f.repeated) for f in spec.fields if f.kind == "message" and f.type in reaches
        )
    return out


_FIELDS = _tensor_fields()


def iter_tensors(root: Message, prefix: str = "") -> Iterator[tuple[str, TensorProto]]:
    """Yield ``(field path, tensor)`` for every ``TensorProto`` in ``root`` (``root`` included).

    Paths read like ``graph.node[3].attribute[0].g.initializer[1]``. Tensors come in document
    order. Shared subobjects (the same tensor object reachable twice) are yielded each time.
    """
    stack: list[tuple[str, Message]] = [(prefix, root)]
    while stack:
        path, msg = stack.pop()
        if type(msg) is TensorProto:
            yield path, msg
            continue
        fields = _FIELDS.get(type(msg), ())
        children: list[tuple[str, Message]] = []
        for fname, repeated in fields:
            value = getattr(msg, fname)
            sub = f"{path}.{fname}" if path else fname
            if repeated:
                children.extend((f"{sub}[{i}]", v) for i, v in enumerate(value))
            elif value is not None:
                children.append((sub, value))
        stack.extend(reversed(children))


def tensor_label(path: str, tensor: TensorProto) -> str:
    """How an error names a tensor: its name, or its field path when it has none."""
    return tensor.name if tensor.name else (path or "<tensor>")
