"""Linear layers as one product (Clause 8.2, per-node overhead): a MatMul by a constant matrix (and its bias), a Gemm
by one (alpha and beta 1, a constant C of one row or one value), and the dynamo exporter's ``Reshape -> Gemm ->
Reshape``, each one step over the input's rows. :func:`fuse_linear` finds
them; the steps are the fused kernels Linear and ReshapedLinear (``onnxcore.kernels.fused.linear``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from onnxcore.kernels.fused.common import FLOATS
from onnxcore.runtime.optimize._common import fused_node, transposed
from onnxcore.runtime.optimize.graph import PlanGraph
from onnxcore.runtime.optimize.patterns import _chain, _closed, _Graph
from onnxcore.runtime.step import PlanNode

__all__ = ["fuse_linear"]


def fuse_linear(graph: PlanGraph) -> list[PlanNode]:
    """A MatMul by a constant 2-D float matrix (and the Add of a constant bias along its last axis that follows
    it, when it is the product's only reader) as one step: the leading axes flattened into the rows of a single
    product, the bias added in place. The same products and sums (Clause 11.4: BLAS may block them differently);
    other inputs run the nodes as written."""
    nodes, const = list(graph.nodes), graph.const
    if not any(bn.node.op_type in ("MatMul", "Gemm") for bn in nodes):
        return nodes
    g = _Graph(graph, nodes)
    replaced: dict[int, PlanNode] = {}
    for k in range(len(nodes)):
        if g.op(k) == "Gemm" and k not in g.taken:
            found = _reshaped_gemm(g, k)
            if found is not None:
                members, xname, attrs = found
                last = members[-1]
                others = [g.nodes[j] for j in members if j != k]
                replaced[last] = fused_node(g.nodes[k], "ReshapedLinear", [xname], [g.out(last)], const,
                                            absorbed=others, **attrs)  # fmt: skip
                g.taken.update(members)
                continue
            found_gemm = _plain_gemm(g, k)
            if found_gemm is not None:
                xname, attrs = found_gemm
                replaced[k] = fused_node(g.nodes[k], "Linear", [xname], [g.out(k)], const, **attrs)
                g.taken.add(k)
            continue
        if g.op(k) != "MatMul" or len(g.nodes[k].inputs) != 2 or k in g.taken:
            continue
        xname, wname = g.nodes[k].inputs
        w = const.get(wname)
        if xname in const or not isinstance(w, np.ndarray) or w.ndim != 2 or w.dtype not in FLOATS:
            continue
        members = [k]
        b = None
        a = g.sole_reader(g.out(k), "Add")
        if a is not None:
            ins = g.nodes[a].inputs
            other = ins[1] if ins[0] == g.out(k) else ins[0]
            v = const.get(other)
            # A bias of shape (N,) or (1, N) (skl2onnx writes the latter): the same sums on the product of the
            # step's rows, whose rank is at least 2 (LinearStep's fast path; other inputs run the nodes as written).
            if (
                isinstance(v, np.ndarray)
                and v.dtype == w.dtype
                and v.ndim in (1, 2)
                and v.shape[:-1] in ((), (1,))
                and v.size in (1, w.shape[1])
            ):
                b = v.reshape(-1)
                members.append(a)
        if not _closed(g, members):
            continue
        last = members[-1]
        others = [g.nodes[j] for j in members[1:]]
        replaced[last] = fused_node(g.nodes[k], "Linear", [xname], [g.out(last)], const, absorbed=others, weight=w,
                                    bias=b, chain=_chain(g, members), x_name=xname)  # fmt: skip
        g.taken.update(members)
    if not replaced:
        return nodes
    return [replaced.get(j, bn) for j, bn in enumerate(nodes) if j in replaced or j not in g.taken]


def _plain_gemm(g: _Graph, k: int) -> tuple[str, dict[str, Any]] | None:
    """A Gemm of a computed A by a constant 2-D float B (``transB`` read once: the weights transposed into a row-major
    copy, as ``prepack_gemm`` gives them), alpha 1, no ``transA``, and a constant C of its type of one row or one
    value with beta 1, or none: A's name and the fused Linear kernel's attributes (``rows_only``: the product of a 2-D
    A, what the Gemm computes: the same product, then C added in the product's type)."""
    bn = g.nodes[k]
    kw = bn.kw
    if float(kw.get("alpha", 1.0)) != 1.0 or int(kw.get("transA", 0)) or bn.since < 11:
        return None
    if not 2 <= len(bn.inputs) <= 3 or len(bn.outputs) != 1 or not bn.outputs[0]:
        return None
    a_name, w_name = bn.inputs[:2]
    w = g.const.get(w_name)
    if a_name in g.const or not isinstance(w, np.ndarray) or w.ndim != 2 or w.dtype not in FLOATS:
        return None
    if int(kw.get("transB", 0)):
        w = transposed(w)
        w.flags.writeable = False
    b = None
    if len(bn.inputs) == 3 and bn.inputs[2]:
        c = g.const.get(bn.inputs[2])
        if float(kw.get("beta", 1.0)) != 1.0 or not isinstance(c, np.ndarray) or c.dtype != w.dtype:
            return None
        if c.ndim > 2 or c.shape[:-1] not in ((), (1,)) or c.size not in (1, w.shape[1]):
            return None
        b = c.reshape(-1)
    return a_name, {"weight": w, "bias": b, "chain": _chain(g, [k]), "x_name": a_name, "rows_only": True}


def _reshaped_gemm(g: _Graph, k: int) -> tuple[list[int], str, dict[str, Any]] | None:
    """``Reshape(x, (-1 or M, K)) -> Gemm(·, W (K, N) constant, C constant of N or none; alpha 1, beta 1, no
    transposition) -> Reshape(·, constant)``, every intermediate read once: the nodes, ``x`` and the fused
    ReshapedLinear kernel's attributes."""
    bn = g.nodes[k]
    kw = bn.kw
    if float(kw.get("alpha", 1.0)) != 1.0 or int(kw.get("transA", 0)) or int(kw.get("transB", 0)):
        return None
    if not 2 <= len(bn.inputs) <= 3 or len(bn.outputs) != 1 or bn.since < 11:
        return None
    a_name, w_name = bn.inputs[:2]
    w = g.const.get(w_name)
    if not isinstance(w, np.ndarray) or w.ndim != 2 or w.dtype not in FLOATS or not w.flags.c_contiguous:
        return None
    b = None
    if len(bn.inputs) == 3 and bn.inputs[2]:
        b = g.const.get(bn.inputs[2])
        if float(kw.get("beta", 1.0)) != 1.0 or not isinstance(b, np.ndarray) or b.dtype != w.dtype:
            return None
        if b.ndim != 1 or b.size not in (1, w.shape[1]):
            return None
    r1 = g.made_by(a_name, "Reshape")
    if r1 is None or g.uses.get(a_name) != 1 or len(g.nodes[r1].inputs) != 2:
        return None
    xname, s1 = g.nodes[r1].inputs
    shape1 = g.const.get(s1)
    if xname in g.const or not isinstance(shape1, np.ndarray) or shape1.shape != (2,) or int(shape1[1]) != w.shape[0]:
        return None
    r2 = g.sole_reader(g.out(k), "Reshape")
    if r2 is None or len(g.nodes[r2].inputs) != 2 or g.nodes[r2].inputs[0] != g.out(k):
        return None
    if not isinstance(g.const.get(g.nodes[r2].inputs[1]), np.ndarray):
        return None
    members = [r1, k, r2]
    if not _closed(g, members):
        return None
    return members, xname, {"weight": w, "bias": b, "chain": _chain(g, members), "x_name": xname}
