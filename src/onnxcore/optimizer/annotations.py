"""The shape annotations of an optimized model: what inference tells, within the bytes the rewrites saved.

:func:`onnxcore.infer.annotate` states every intermediate value's inferred type and shape (``value_info``) and the
shape of each output declared without one. Stated in full that can make a file larger than the model it came from
(issue 39's goal is a result never larger than its input), so :func:`annotate_within` keeps only the annotations
that fit in the bytes the rewrites saved, the most useful first: the graph outputs' shapes, then values whose every
extent is known (a number or a dimension variable), then values of known rank, then values of a known type only;
within a class, in the order of the graph. When nothing was saved, nothing is annotated.

Values whose shape onnx's own inference computes otherwise are never annotated, nor any value computed from them:
``onnx.checker.check_model(full_check=True)`` merges its inferred shapes with the stated ones and rejects a file
where they differ, even where the stated shape is the operator's (:data:`REFERENCE_INFERENCE_DIFFERS`). The
annotation is a courtesy to the model's readers; a file their checker rejects would be none.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from onnxcore.infer import annotate
from onnxcore.proto import GraphProto, ModelProto, ValueInfoProto
from onnxcore.proto.encoder import encode_message
from onnxcore.runtime.rewrite_model import model_size

__all__ = ["REFERENCE_INFERENCE_DIFFERS", "Annotated", "annotate_within"]

REFERENCE_INFERENCE_DIFFERS = frozenset({"STFT"})
"""Operators (of the ONNX domain) whose output shapes onnx's shape inference computes otherwise than their
definition and onnxruntime: ``STFT`` with ``onesided`` (its frequency bins: ``frame_length / 2 + 1``, where onnx 1.23
infers ``frame_length``)."""

# Bytes kept in hand for the length prefixes of the graph and model around the annotations (a varint grows by a byte
# each time its value passes a power of 128).
_SLACK = 16


@dataclass
class Annotated:
    """What :func:`annotate_within` did.

    Attributes:
        model: The model with the annotations kept.
        kept: Annotations written (``value_info`` entries and output shapes).
        dropped: Annotations inference offered that were left out (no room, or onnx's inference differs).
    """

    model: ModelProto
    kept: int
    dropped: int


def _field_bytes(vi: ValueInfoProto) -> int:
    """Bytes ``vi`` costs as an element of a repeated message field: its tag, its length and itself."""
    n = len(encode_message(vi))
    return 1 + max(1, (n.bit_length() + 6) // 7) + n


def _rank(vi: ValueInfoProto) -> int:
    """0 every extent known, 1 the rank known, 2 the type only."""
    tt = vi.type.tensor_type if vi.type is not None else None
    if tt is None or tt.shape is None:
        return 2
    known = all(d.dim_param or d.dim_value is not None for d in tt.shape.dim)
    return 0 if known else 1


def _downstream(g: GraphProto, ops: frozenset[str]) -> set[str]:
    """Names computed by a node of ``ops`` (ONNX domain) or, transitively, from one in the top-level graph."""
    tainted: set[str] = set()
    for node in g.node:  # nodes are in topological order (Clause 7.5)
        if (node.domain in ("", "ai.onnx") and node.op_type in ops) or any(n in tainted for n in node.input):
            tainted.update(o for o in node.output if o)
    return tainted


def annotate_within(model: ModelProto, budget: int) -> Annotated:
    """``model`` annotated with inferred shapes in at most ``budget`` more bytes (module docstring).

    Args:
        model: The optimized model, its ``value_info`` the entries it kept from the original.
        budget: Bytes the annotations may add (the original's size less the unannotated result's); 0 or less adds
            none.
    """
    g0 = model.graph
    if g0 is None:
        return Annotated(model, 0, 0)
    full = annotate(model)
    g = full.graph
    assert g is not None
    had = {vi.name for vi in g0.value_info}
    tainted = _downstream(g0, REFERENCE_INFERENCE_DIFFERS)
    # (class, order, kind, index, cost): kind 0 an output's shape, 1 a value_info entry.
    offers: list[tuple[int, int, int, int, int]] = []
    refused = 0
    for k, (old, new) in enumerate(zip(g0.output, g.output, strict=True)):
        if encode_message(new) != encode_message(old):
            if new.name in tainted:
                refused += 1
            else:
                offers.append((-1, k, 0, k, _field_bytes(new) - _field_bytes(old)))
    for k, vi in enumerate(g.value_info):
        if vi.name in had:
            continue
        if vi.name in tainted:
            refused += 1
        else:
            offers.append((_rank(vi), k, 1, k, _field_bytes(vi)))
    room = budget - _SLACK
    chosen: set[tuple[int, int]] = set()
    for _cls, _order, kind, index, cost in sorted(offers):
        if cost <= room:
            chosen.add((kind, index))
            room -= cost
    out = copy.copy(model)
    graph = copy.copy(g0)
    graph.output = [new if (0, k) in chosen else old for k, (old, new) in enumerate(zip(g0.output, g.output))]
    graph.value_info = [vi for k, vi in enumerate(g.value_info) if vi.name in had or (1, k) in chosen]
    out.graph = graph
    dropped = refused + len(offers) - len(chosen)
    if chosen and model_size(out) > model_size(model) + budget:
        return Annotated(model, 0, dropped + len(chosen))  # the estimate missed: none rather than a larger file
    return Annotated(out, len(chosen), dropped)
