"""Chains of per-element affine steps (BatchNormalization, Mul and Add by constants, a closing Relu) as one pass: the
matcher of the fused AffineChain kernel (``onnxcore.kernels.fused.affine``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from onnxcore.runtime.optimize._common import fused_node, is_relu
from onnxcore.runtime.optimize.graph import PlanGraph
from onnxcore.runtime.step import PlanNode

__all__ = ["affine_step", "bn_parameters", "fuse_affine_chains"]


def bn_parameters(bn: PlanNode, const: Mapping[str, Any]) -> tuple[Any, ...] | None:
    node = bn.node
    if node.op_type != "BatchNormalization" or node.domain not in ("", "ai.onnx") or bn.call is None:
        return None
    if bn.since < 7 and not bn.kw.get("is_test", 0):
        return None
    if bn.kw.get("training_mode", 0) or bn.kw.get("spatial", 1) != 1 or len(bn.inputs) != 5:
        return None
    if len([o for o in bn.outputs if o]) != 1 or not bn.outputs[0]:
        return None
    params: list[np.ndarray] = []
    for n in bn.inputs[1:]:
        p = const.get(n)
        if not isinstance(p, np.ndarray) or p.dtype.kind != "f":
            return None
        params.append(p)
    if len({p.size for p in params}) != 1:
        return None
    return (*[p.ravel() for p in params], float(bn.kw.get("epsilon", 1e-5)))


def affine_step(bn: PlanNode, current: str, const: Mapping[str, Any]) -> tuple[str, np.ndarray] | None:
    """("mul"|"add", constant) when ``bn`` is Mul/Add of ``current`` and a float constant."""
    node = bn.node
    if node.op_type not in ("Mul", "Add") or node.domain not in ("", "ai.onnx") or bn.call is None or bn.kw:
        return None
    if len(bn.inputs) != 2 or current not in bn.inputs or bn.since < 7:
        return None
    other = bn.inputs[1] if bn.inputs[0] == current else bn.inputs[0]
    c = const.get(other)
    if not isinstance(c, np.ndarray) or c.dtype not in (np.float32, np.float64) or other == current:
        return None
    return ("mul" if node.op_type == "Mul" else "add"), c


def fuse_affine_chains(graph: PlanGraph) -> list[PlanNode]:
    """Replace each chain of per-element affine steps (and a closing Relu) by one step of the AffineChain kernel.

    A chain starts at an inference BatchNormalization or at a Mul/Add with a float constant, continues
    through Mul/Add with float constants, and may end with a Relu; every intermediate value has exactly
    one reader and is not a graph output. Chains of one node are left alone.
    """
    nodes, const = list(graph.nodes), graph.const

    uses, reader = graph.uses, graph.last_readers
    out: list[PlanNode] = []
    consumed: set[int] = set()
    for k, head in enumerate(nodes):
        if k in consumed:
            continue
        bnp = bn_parameters(head, const)
        first = None if bnp is not None else affine_step(head, _variable_input(head, const), const)
        if bnp is None and first is None:
            out.append(head)
            continue
        x = head.inputs[0] if bnp is not None else _variable_input(head, const)
        ops: list[tuple[str, np.ndarray]] = [] if first is None else [first]
        fallback = [_fallback_entry(head, x, const)]
        members = [k]
        current = head.outputs[0]
        relu = False
        while uses.get(current) == 1 and current in reader:
            j = reader[current]
            nxt = nodes[j]
            if is_relu(nxt):
                relu = True
            else:
                step = affine_step(nxt, current, const)
                if step is None:
                    break
                ops.append(step)
            fallback.append(_fallback_entry(nxt, current, const))
            members.append(j)
            current = nxt.outputs[0]
            if relu:
                break
        if len(members) < 2:
            out.append(head)
            continue
        absorbed = [nodes[m] for m in members[1:]]
        fused = fused_node(head, "AffineChain", [x], [current], const, absorbed=absorbed, bn=bnp, ops=ops, relu=relu,
                           fallback=fallback)  # fmt: skip
        fused.outer = []
        consumed.update(members)
        out.append(fused)
    return out


def _variable_input(bn: PlanNode, const: Mapping[str, Any]) -> str:
    vs = [n for n in bn.inputs if n and n not in const]
    return vs[0] if len(vs) == 1 else ""


def _fallback_entry(
    bn: PlanNode, current: str, const: Mapping[str, Any]
) -> tuple[Callable[..., Any], list[Any], dict[str, Any]]:
    # The node's own call, with None where it reads the running value and its constants bound.
    assert bn.call is not None
    return bn.call, [None if n == current else const[n] for n in bn.inputs], dict(bn.kw)
