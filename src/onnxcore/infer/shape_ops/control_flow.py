"""Output shapes of the operators that hold subgraphs: ``If``, ``Loop``, ``Scan``, ``SequenceMap`` (Clause 9).

The engine walks each subgraph once, in its enclosing scope, with the input shapes given here; a subgraph
of another operator is walked with its declared input shapes only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from onnxcore.defs.opschema import OpSchema
from onnxcore.infer.shape_core import Extent, ShapeT
from onnxcore.proto.messages import AttributeProto, GraphProto, NodeProto

__all__ = ["control_flow_outputs", "join"]

Walk = Callable[[str, GraphProto, Sequence[ShapeT | None] | None], list[ShapeT | None]]


def join(a: ShapeT | None, b: ShapeT | None) -> ShapeT | None:
    """The shape a value has when it is either ``a`` or ``b``: extents both agree on, the rest unknown."""
    if a is None or b is None or len(a) != len(b):
        return None
    return tuple(x if x == y else None for x, y in zip(a, b))


def _graph(attrs: dict[str, AttributeProto], name: str) -> GraphProto | None:
    a = attrs.get(name)
    return a.g if a is not None else None


def _ints(attrs: dict[str, AttributeProto], name: str) -> list[int] | None:
    a = attrs.get(name)
    return [int(v) for v in a.ints] if a is not None else None


def _int(attrs: dict[str, AttributeProto], name: str, default: int) -> int:
    a = attrs.get(name)
    return int(a.i) if a is not None else default


def _drop(s: ShapeT | None, axis: int) -> ShapeT | None:
    if s is None or not -len(s) <= axis < len(s):
        return None
    axis %= len(s)
    return s[:axis] + s[axis + 1 :]


def _insert(s: ShapeT | None, axis: int, extent: Extent) -> ShapeT | None:
    if s is None or not -(len(s) + 1) <= axis <= len(s):
        return None
    axis %= len(s) + 1
    return s[:axis] + (extent,) + s[axis:]


def control_flow_outputs(
    node: NodeProto,
    schema: OpSchema,
    in_shapes: Sequence[ShapeT | None],
    attrs: dict[str, AttributeProto],
    walk: Walk,
    walked: set[str],
) -> list[ShapeT | None]:
    """Output shapes of an ``If``, ``Loop``, ``Scan`` or ``SequenceMap`` node; unknown for other such operators.

    ``walk(name, graph, input_shapes)`` walks one subgraph and returns its output shapes; each attribute
    walked is added to ``walked``.
    """
    n_out = len(node.output)
    unknown: list[ShapeT | None] = [None] * n_out
    op = node.op_type if schema.domain in ("", "ai.onnx") else ""
    if op == "If":
        branches: list[list[ShapeT | None]] = []
        for name in ("then_branch", "else_branch"):
            g = _graph(attrs, name)
            if g is not None:
                walked.add(name)
                branches.append(walk(name, g, []))
        if len(branches) != 2:
            return unknown
        return [join(a, b) for a, b in zip(branches[0] + unknown, branches[1] + unknown)][:n_out]
    if op == "Loop":
        body = _graph(attrs, "body")
        if body is None:
            return unknown
        walked.add("body")
        carried = list(in_shapes[2:])
        # The iteration number and condition are scalars by the definition, yet producers have declared them
        # [1]: they are left to the body's declaration rather than reported.
        outs = walk("body", body, [None, None, *carried])
        result: list[ShapeT | None] = []
        for k in range(n_out):
            if k < len(carried):
                # The value after the last iteration is the initial one (no iteration) or a body output.
                result.append(join(carried[k], outs[1 + k] if 1 + k < len(outs) else None))
            else:
                j = 1 + k
                per = outs[j] if j < len(outs) else None
                result.append(None if per is None else (None, *per))
        return result
    if op == "Scan":
        body = _graph(attrs, "body")
        if body is None:
            return unknown
        walked.add("body")
        return _scan(schema, in_shapes, attrs, body, walk, n_out)
    if op == "SequenceMap":
        body = _graph(attrs, "body")
        if body is None:
            return unknown
        walked.add("body")
        # A sequence's shape here is the one its elements share, which is what the body sees of it per
        # iteration; a tensor input is passed whole. Each output sequence holds the body output's shape.
        outs = walk("body", body, list(in_shapes))
        return [outs[k] if k < len(outs) else None for k in range(n_out)]
    return unknown


def _scan(
    schema: OpSchema,
    in_shapes: Sequence[ShapeT | None],
    attrs: dict[str, AttributeProto],
    body: GraphProto,
    walk: Walk,
    n_out: int,
) -> list[ShapeT | None]:
    m = _int(attrs, "num_scan_inputs", 0)
    if schema.since_version < 9:
        # Scan-8: input 0 is sequence_lens; every other input and output has a leading batch axis.
        states = list(in_shapes[1 : len(in_shapes) - m])
        scans = list(in_shapes[len(in_shapes) - m :])
        body_in: list[ShapeT | None] = [_drop(s, 0) for s in states]
        body_in += [None if s is None or len(s) < 2 else s[2:] for s in scans]
        outs = walk("body", body, body_in)
        n = len(states)
        batch: Extent = None
        for s in (*states, *scans):
            if s:
                batch = s[0]
                break
        seq: Extent = None
        for s in scans:
            if s is not None and len(s) >= 2:
                seq = s[1]
                break
        res: list[ShapeT | None] = []
        for k in range(n_out):
            o = outs[k] if k < len(outs) else None
            if o is None:
                res.append(None)
            elif k < n:
                res.append((batch, *o))
            else:
                res.append((batch, seq, *o))
        return res
    n = len(in_shapes) - m
    states = list(in_shapes[:n])
    scans = list(in_shapes[n:])
    in_axes = _ints(attrs, "scan_input_axes") or [0] * m
    out_axes = _ints(attrs, "scan_output_axes")
    body_in = list(states)
    seq = None
    for s, ax in zip(scans, in_axes):
        body_in.append(_drop(s, ax))
        if s is not None and seq is None and -len(s) <= ax < len(s):
            seq = s[ax]
    outs = walk("body", body, body_in)
    res = []
    for k in range(n_out):
        o = outs[k] if k < len(outs) else None
        if k < n:
            res.append(join(states[k], o))
            continue
        j = k - n
        axis = out_axes[j] if out_axes is not None and j < len(out_axes) else 0
        res.append(_insert(o, axis, seq))
    return res
