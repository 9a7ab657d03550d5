"""The rotary position embedding as one step (issue 27, Clause 8.2): the matcher of the fused Rotary kernel
(``onnxcore.kernels.fused.rotary``, where the step's arithmetic and its exactness are described).

Llama-style decoders apply ``x * cos + rotate_half(x) * sin`` to every query and key: after
:func:`onnxcore.runtime.optimize.shapeops.fuse_rotate_half` that is four steps (``Mul``, the RotateHalf step,
``Mul``, ``Add``), each a few microseconds of Python around a few thousand values. :func:`fuse_rotary` makes them
one step. ``run(..., intermediates=True)`` runs the graph as written.
"""

from __future__ import annotations

from onnxcore.runtime.optimize._common import fused_node
from onnxcore.runtime.optimize.graph import PlanGraph
from onnxcore.runtime.step import PlanNode

__all__ = ["fuse_rotary"]


def _plain(bn: PlanNode, op: str, since: int) -> bool:
    node = bn.node
    return (
        node.op_type == op
        and node.domain in ("", "ai.onnx")
        and bn.call is not None
        and not bn.outer
        and bn.since >= since
        and len(bn.inputs) == 2
        and all(bn.inputs)
        and len(bn.outputs) == 1
        and bool(bn.outputs[0])
    )


def fuse_rotary(graph: PlanGraph) -> list[PlanNode]:
    """Make each ``Add(Mul(x, cos), Mul(RotateHalf(x), sin))`` whose intermediates are each read once (the
    products in either order, their operands in either order) one step of the fused Rotary kernel."""
    nodes, const = list(graph.nodes), graph.const
    if not any(bn.step_kernel == "RotateHalf" for bn in nodes):
        return nodes
    uses, producer = graph.uses, graph.producer
    replaced: dict[int, PlanNode] = {}
    drop: set[int] = set()
    for a, bn in enumerate(nodes):
        # Add-7 on: multidirectional broadcasting (no legacy broadcast attribute); Mul likewise.
        if not _plain(bn, "Add", 7) or a in drop:
            continue
        muls = [producer.get(n) for n in bn.inputs]
        if any(m is None or m in drop or not _plain(nodes[m], "Mul", 7) for m in muls):
            continue
        if any(uses.get(n) != 1 for n in bn.inputs) or muls[0] == muls[1]:
            continue
        found = None
        for side, m in enumerate(muls):
            assert m is not None
            for pos, name in enumerate(nodes[m].inputs):
                r = producer.get(name)
                rotate_half = r is not None and nodes[r].step_kernel == "RotateHalf"
                if r is not None and rotate_half and uses.get(name) == 1 and r not in drop:
                    found = (side, m, pos, r)
        if found is None:
            continue
        side, ms, pos, r = found
        mc = muls[1 - side]
        assert mc is not None
        x = nodes[r].inputs[0]
        cos_ins = nodes[mc].inputs
        if x not in cos_ins or cos_ins[0] == cos_ins[1]:
            continue
        cos = cos_ins[1] if cos_ins[0] == x else cos_ins[0]
        sin = nodes[ms].inputs[1 - pos]
        call_c, call_s, call_a = nodes[mc].call, nodes[ms].call, bn.call
        assert call_c is not None and call_s is not None and call_a is not None
        absorbed = [nodes[k] for k in sorted((r, mc, ms))]
        replaced[a] = fused_node(bn, "Rotary", [x, cos, sin], list(bn.outputs), const, absorbed=absorbed,
                                 rotate=nodes[r].call, cos_mul=(call_c, cos_ins[0] != x), sin_mul=(call_s, pos == 1),
                                 add=(call_a, side == 0))  # fmt: skip
        drop.update((r, mc, ms))
    if not replaced:
        return nodes
    return [replaced.get(k, b) for k, b in enumerate(nodes) if k not in drop]
