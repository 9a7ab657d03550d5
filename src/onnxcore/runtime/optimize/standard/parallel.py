"""MatMuls of one input by constant weights, as one MatMul by the weights side by side and a Split (issue 39).

An attention block projects its input three times (``q = x @ Wq``, ``k = x @ Wk``, ``v = x @ Wv``). Column ``j`` of
``x @ [Wq | Wk | Wv]`` is ``x @ W[:, j]`` (Clause 11: MatMul's element ``[..., i, j]`` is the sum over ``k`` of
``A[..., i, k] * B[k, j]``), so splitting the product along its last axis at the weights' widths gives the three
products: two nodes for three, the same values up to the rounding of each sum (Clause 11.4).

Preconditions, each checked:

- at least three standard MatMuls read the same first input ``A`` (not a constant) and each a constant 2-D weight
  of one float type (float16, float32 or float64) and one height ``K``; each weight is read by its MatMul alone;
- the weights together hold at most 64 MiB (they are written side by side into a new constant: a model whose
  weights live in an external file is not copied whole into memory for this);
- the model imports ai.onnx 11 or later (Split with a negative axis; its sizes as an attribute before 13, as an
  input from 13).

Two MatMuls would become two nodes too (a MatMul and a Split): they are left as they are.
"""

from __future__ import annotations

import numpy as np

from onnxcore.runtime.optimize.graph import PlanGraph
from onnxcore.runtime.optimize.standard.emit import Names, is_standard, node_name, opset, standard_node
from onnxcore.runtime.step import PlanNode

__all__ = ["merge_parallel_matmuls"]

_TYPES = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))
_MAX_OCTETS = 64 << 20
_MIN_GROUP = 3


def _weight(graph: PlanGraph, bn: PlanNode) -> np.ndarray | None:
    """The constant 2-D weight of a standard MatMul read by it alone, else None."""
    if not is_standard(bn, "MatMul") or len(bn.inputs) != 2 or len(bn.outputs) != 1 or not bn.outputs[0]:
        return None
    a, w_name = bn.inputs
    w = graph.const.get(w_name)
    if a in graph.const or not isinstance(w, np.ndarray) or w.ndim != 2 or w.dtype not in _TYPES:
        return None
    if graph.uses.get(w_name) != 1 or w_name in graph.outputs:
        return None
    return w


def merge_parallel_matmuls(graph: PlanGraph) -> list[PlanNode]:
    """Each group of MatMuls of one input by constant weights as one MatMul and a Split (module docstring: the
    preconditions)."""
    nodes = list(graph.nodes)
    version = opset(graph) or 0
    if graph.facts is None or version < 11 or sum(bn.node.op_type == "MatMul" for bn in nodes) < _MIN_GROUP:
        return nodes
    groups: dict[tuple[str, str, int], list[int]] = {}
    for k, bn in enumerate(nodes):
        w = _weight(graph, bn)
        if w is not None:
            groups.setdefault((bn.inputs[0], w.dtype.str, int(w.shape[0])), []).append(k)
    names = Names(graph)
    replace: dict[int, list[PlanNode]] = {}
    drop: set[int] = set()
    for (a, _, _), members in groups.items():
        weights = [graph.const[nodes[k].inputs[1]] for k in members]
        if len(members) < _MIN_GROUP or sum(w.nbytes for w in weights) > _MAX_OCTETS:
            continue
        first = nodes[members[0]]
        parts = [nodes[k] for k in members]
        w_name = names.fresh(f"{first.inputs[1]}_merged")
        product = names.fresh(f"{first.outputs[0]}_merged")
        mm = standard_node(graph, first, "MatMul", [a, w_name], [product], name=node_name(parts, f"MatMul_{product}"))
        widths = [int(w.shape[1]) for w in weights]
        outputs = [nodes[k].outputs[0] for k in members]
        split_name = f"Split_{product}"
        if version >= 13:
            sizes = names.fresh(f"{product}_split")
            split = standard_node(graph, first, "Split", [product, sizes], outputs, name=split_name, axis=-1,
                                  outputs_context=True)  # fmt: skip
        else:
            sizes = ""
            split = standard_node(graph, first, "Split", [product], outputs, name=split_name, axis=-1,
                                  split=widths, outputs_context=True)  # fmt: skip
        if mm is None or split is None:
            continue
        graph.add_constant(w_name, np.concatenate(weights, axis=1))
        if sizes:
            graph.add_constant(sizes, np.asarray(widths, np.int64))
        replace[members[0]] = [mm, split]
        drop.update(members[1:])
    if not replace:
        return nodes
    out: list[PlanNode] = []
    for k, bn in enumerate(nodes):
        if k in replace:
            out.extend(replace[k])
        elif k not in drop:
            out.append(bn)
    return out
