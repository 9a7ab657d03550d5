"""Shape operators with constant arguments as the numpy view they come down to (Clause 8.2, per-node overhead): the
matchers of the fused kernels of ``onnxcore.kernels.fused.shape`` (ReshapeView, SliceView, ExpandView,
SameTypeCast, TransposeView, TakeColumns, GatherPositions: each keeps the node's kernel for an input shape's first
call and from then on does only the numpy operation the kernel's result showed), and of the rotary embedding's
``rotate_half`` (``Concat(Neg(Slice(x, second half)), Slice(x, first half))`` along the last axis, the fused
RotateHalf kernel of ``onnxcore.kernels.fused.rotary``).

Exporters surround every matrix product with ``Reshape``, ``Unsqueeze``, ``Slice``, ``Expand`` and ``Cast``
nodes whose second inputs are constants (all the more in a plan specialised to its input shapes, where the shape
arithmetic that fed them is folded). Their kernels check and convert those constants on every call, which costs
several times the numpy operation itself on the small tensors of a transformer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from onnxcore.kernels.fused.lanes import value_token
from onnxcore.kernels.fused.shape import CAST_DTYPES
from onnxcore.runtime.optimize._common import fused_node
from onnxcore.runtime.optimize.graph import PlanGraph
from onnxcore.runtime.step import PlanNode

__all__ = ["fast_shape_ops", "fuse_rotate_half"]

_Call = tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]


def _consts(bn: PlanNode, const: Mapping[str, Any]) -> list[np.ndarray | None] | None:
    """The node's inputs after the first as constants (None for an unsupplied one), or None if one varies."""
    out: list[np.ndarray | None] = []
    for n in bn.inputs[1:]:
        if not n:
            out.append(None)
            continue
        v = const.get(n)
        if not isinstance(v, np.ndarray):
            return None
        out.append(v)
    return out


def fast_shape_ops(graph: PlanGraph) -> list[PlanNode]:
    """Give each default-domain shape operator with constant arguments its per-shape fast path (module doc)."""
    nodes, const = list(graph.nodes), graph.const
    # One wrapper per distinct computation (kernel, constant arguments by value, attributes), so that repeated
    # nodes still count as one computation when the plan evaluates repeats once (cse.py compares calls).
    made: dict[tuple[Any, ...], Callable[..., Any]] = {}
    for j, bn in enumerate(nodes):
        node = bn.node
        op = node.op_type
        ml = node.domain == "ai.onnx.ml" and op == "ArrayFeatureExtractor"
        if (node.domain not in ("", "ai.onnx") and not ml) or bn.call is None or bn.outer or not bn.inputs[:1]:
            continue
        if not bn.inputs[0]:
            continue
        if len(bn.outputs) != 1 or not bn.outputs[0]:
            continue
        fused: str | None = None
        attrs: dict[str, Any] = {}
        args = _consts(bn, const)
        if args is None or bn.inputs[0] in const:
            continue
        if ml:
            if len(args) == 1 and args[0] is not None and args[0].dtype.kind in "iu":
                fused = "TakeColumns"
        elif op in ("Reshape", "Unsqueeze", "Squeeze", "Flatten"):
            fused = "ReshapeView"
        elif op == "Transpose" and not args:
            perm = bn.kw.get("perm")
            fused, attrs = "TransposeView", {"perm": None if perm is None else list(perm)}
        elif op == "Expand" and len(args) == 1:
            fused = "ExpandView"
        elif op == "Slice" and bn.since >= 10 and 2 <= len(args) <= 4:
            fused = "SliceView"
        elif op in ("Gather", "GatherElements", "GatherND") and len(args) == 1 and args[0] is not None:
            fused = "GatherPositions"
        elif op == "Cast" and not args and isinstance(bn.kw.get("to"), int):
            # (Cast-1 names its target type by a string: left as it is. A graph output too, a classifier's label
            # cast 2.5 -> 1.0 us: the run hands the caller a copy where the input is a feed or another output,
            # runtime/results.py)
            if bn.kw["to"] in CAST_DTYPES:
                fused, attrs = "SameTypeCast", {"to": bn.kw["to"]}
        if fused is None:
            continue
        ins, outs = list(bn.inputs), list(bn.outputs)
        node_bn = fused_node(bn, fused, ins, outs, const, kw=dict(bn.kw), may_tuple=None, kernel=bn.call, **attrs)
        try:
            key = (bn.call, op, tuple(value_token(a) for a in args), repr(sorted(bn.kw.items())))
            shared = made.setdefault(key, node_bn.call)  # type: ignore[arg-type]
            node_bn.call = shared
        except TypeError:  # an unhashable call: its own step
            pass
        nodes[j] = node_bn
    return nodes


def fuse_rotate_half(graph: PlanGraph) -> list[PlanNode]:
    """Make each ``Slice -> Neg -> Concat`` with a second ``Slice`` of the same input (every intermediate read once,
    the slices' arguments constant) one step of the fused RotateHalf kernel."""
    nodes, const = list(graph.nodes), graph.const
    if not any(bn.node.op_type == "Neg" for bn in nodes):
        return nodes
    uses, producer = graph.uses, graph.producer

    def plain(k: int | None, op: str) -> bool:
        if k is None:
            return False
        bn = nodes[k]
        ok = bn.node.op_type == op and bn.node.domain in ("", "ai.onnx") and bn.call is not None and not bn.outer
        return ok and len(bn.outputs) == 1 and uses.get(bn.outputs[0]) == 1

    def call_of(bn: PlanNode, skip: int) -> _Call:
        assert bn.call is not None
        return bn.call, tuple(const[n] if n else None for n in bn.inputs[skip:]), dict(bn.kw)

    replaced: dict[int, PlanNode] = {}
    drop: set[int] = set()
    for c, bn in enumerate(nodes):
        if bn.node.op_type != "Concat" or len(bn.inputs) != 2 or not plain(c, "Concat") or c in drop:
            continue
        if int(bn.kw.get("axis", 0)) != -1:
            continue
        n, lo = producer.get(bn.inputs[0]), producer.get(bn.inputs[1])
        if n is None or lo is None or not plain(n, "Neg") or not plain(lo, "Slice"):
            continue
        hi = producer.get(nodes[n].inputs[0])
        if hi is None or not plain(hi, "Slice") or {n, lo, hi} & drop:
            continue
        x = nodes[lo].inputs[0]
        if not x or nodes[hi].inputs[0] != x or x in const:
            continue
        if any(not (i == "" or i in const) for k in (lo, hi) for i in nodes[k].inputs[1:]):
            continue
        absorbed = [nodes[k] for k in sorted((lo, hi, n))]
        replaced[c] = fused_node(bn, "RotateHalf", [x], list(bn.outputs), const, absorbed=absorbed,
                                 low=call_of(nodes[lo], 1), high=call_of(nodes[hi], 1), neg=call_of(nodes[n], 1),
                                 concat=call_of(bn, 2))  # fmt: skip
        drop.update((lo, hi, n))
    if not replaced:
        return nodes
    return [replaced.get(k, b) for k, b in enumerate(nodes) if k not in drop]
