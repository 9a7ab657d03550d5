"""What exporters write for one operator, evaluated as that operator (Clause 8.2): GELU, SiLU, LayerNorm, RMSNorm.

The TorchScript exporter (and older opsets generally) spells common layers as chains of elementwise nodes:

- GELU as ``Div(x, sqrt 2) -> Erf -> Add(1) -> Mul(x) -> Mul(0.5)`` (or ``Mul(x, 0.5)`` first), and GPT-2's tanh
  approximation as ``Pow(x, 3) -> Mul(0.044715) -> Add(x) -> Mul(sqrt(2/pi)) -> Tanh -> Add(1) -> Mul(0.5 x)``;
- LayerNorm as ``ReduceMean -> Sub -> Pow(2) -> ReduceMean -> Add(eps) -> Sqrt -> Div``, then ``Mul(gamma)`` and
  ``Add(beta)``;
- SiLU (Swish) as ``Mul(x, Sigmoid(x))``, here ``x / (1 + exp(-x))`` in one buffer;
- HardSwish before opset 14 as ``Mul(x, HardSigmoid(x))``, here the product written into the HardSigmoid's result
  (the same operations: one array fewer, one step);
- RMSNorm (T5, Llama) as ``Pow(x, 2) -> ReduceMean -> Add(eps) -> Sqrt -> Reciprocal`` (or ``Div(1, .)``) ``->
  Mul(x)``, a ``Cast`` to the same type, then ``Mul(weight)``.

Each chain is one step running the operator's kernel (Gelu-20, LayerNormalization-17, RMSNormalization-23: their
kernels, looked up in the registry when the plan is made), fewer passes over the data and one call instead of
five to nine. The operator computes the chain's value up to rounding (Clause 11.4); an input the operator would
read differently (another element type, a weight that does not run along the last axis) runs the chain as
written. Matched only when every intermediate value is read by the chain alone and is not a graph output; never
in debugging mode (``intermediates=True`` runs every node as written).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from onnxcore.kernels.fused.common import FLOATS
from onnxcore.kernels.fused.pattern import ONNX_FLOAT
from onnxcore.runtime.optimize._common import fused_node
from onnxcore.runtime.optimize.graph import PlanGraph
from onnxcore.runtime.step import PlanNode

__all__ = ["PatternMatch", "exporter_patterns", "fuse_attention", "fuse_patterns"]

_ANCHORS = ("Erf", "Tanh", "ReduceMean", "Sigmoid", "HardSigmoid")
_FLOATS = FLOATS
_SQRT2 = math.sqrt(2.0)
_TANH_C = math.sqrt(2.0 / math.pi)


class _Graph:
    """The nodes of a plan with what the matchers ask of them."""

    def __init__(self, graph: PlanGraph, nodes: list[PlanNode]) -> None:
        # The plan graph's indices, and the nodes of this pass (the graph's own, replaced in place as it goes).
        self.nodes = nodes
        self.const = graph.const
        self.uses = graph.uses
        self.producer = graph.producer
        self.readers = graph.readers
        self.taken: set[int] = set()

    def op(self, k: int | None) -> str:
        if k is None or k in self.taken:
            return ""
        bn = self.nodes[k]
        if bn.node.domain not in ("", "ai.onnx") or bn.call is None or bn.outer or not bn.outputs:
            return ""
        return bn.node.op_type

    def made_by(self, name: str, op: str) -> int | None:
        k = self.producer.get(name)
        return k if self.op(k) == op else None

    def sole_reader(self, name: str, op: str) -> int | None:
        r = self.readers.get(name, [])
        if len(r) != 1 or self.uses.get(name) != 1:
            return None
        return r[0] if self.op(r[0]) == op else None

    def scalar(self, name: str) -> float | None:
        v = self.const.get(name)
        if isinstance(v, np.ndarray) and v.size == 1 and v.dtype in (np.float32, np.float64):
            return float(v.reshape(()))
        return None

    def with_scalar(self, k: int | None, op: str, target: float, *, commutes: bool = True) -> str | None:
        """The other input of a binary ``op`` node one of whose inputs is a constant close to ``target``."""
        if k is None or self.op(k) != op:
            return None
        ins = self.nodes[k].inputs
        if len(ins) != 2:
            return None
        for c, other in ((1, 0), (0, 1)) if commutes else ((1, 0),):
            v = self.scalar(ins[c])
            if v is not None and math.isclose(v, target, rel_tol=1e-4) and ins[other] not in self.const:
                return ins[other]
        return None

    def out(self, k: int) -> str:
        return self.nodes[k].outputs[0]


def _last_axis_mean(g: _Graph, k: int) -> bool:
    """A ReduceMean over the last axis alone, keeping it."""
    bn = g.nodes[k]
    if int(bn.kw.get("keepdims", 1)) != 1:
        return False
    axes = bn.kw.get("axes")
    if axes is None and len(bn.inputs) > 1 and bn.inputs[1]:
        axes = g.const.get(bn.inputs[1])
    if axes is None:
        return False
    return [int(a) for a in np.asarray(axes).reshape(-1)] == [-1]


def _gelu_tail(g: _Graph, inner: str, x: str) -> list[int] | None:
    """``Add(inner, 1)`` then the product with ``x`` and 0.5 in either order; the nodes, the last one last."""
    a = g.sole_reader(inner, "Add")
    if a is None or g.with_scalar(a, "Add", 1.0) != inner:
        return None
    m1 = g.sole_reader(g.out(a), "Mul")
    if m1 is None:
        return None
    ins = g.nodes[m1].inputs
    other = ins[1] if ins[0] == g.out(a) else ins[0]
    if g.with_scalar(m1, "Mul", 0.5) == g.out(a):  # 0.5 * (1 + inner), then times x
        m2 = g.sole_reader(g.out(m1), "Mul")
        if m2 is not None and sorted(g.nodes[m2].inputs) == sorted([x, g.out(m1)]):
            return [a, m1, m2]
        return None
    if other == x:
        m2 = g.sole_reader(g.out(m1), "Mul")
        if m2 is not None and g.with_scalar(m2, "Mul", 0.5) == g.out(m1):
            return [a, m1, m2]
        return None
    h = g.made_by(other, "Mul")
    if h is not None and g.with_scalar(h, "Mul", 0.5) == x:
        return [h, a, m1]
    return None


def _erf_gelu(g: _Graph, k: int) -> tuple[list[int], str] | None:
    t = g.producer.get(g.nodes[k].inputs[0])
    x = g.with_scalar(t, "Div", _SQRT2, commutes=False) or g.with_scalar(t, "Mul", 1 / _SQRT2)
    if x is None or t is None:
        return None
    tail = _gelu_tail(g, g.out(k), x)
    return None if tail is None else ([t, k, *tail], x)


def _tanh_gelu(g: _Graph, k: int) -> tuple[list[int], str] | None:
    m = g.producer.get(g.nodes[k].inputs[0])
    a = g.with_scalar(m, "Mul", _TANH_C)
    ka = None if a is None else g.made_by(a, "Add")
    if ka is None or m is None:
        return None
    for x, q in (g.nodes[ka].inputs, g.nodes[ka].inputs[::-1]):
        kq = g.made_by(q, "Mul")
        p = g.with_scalar(kq, "Mul", 0.044715)
        cube = None if p is None else _cube(g, p, x)
        if cube is None or kq is None:
            continue
        tail = _gelu_tail(g, g.out(k), x)
        if tail is not None:
            return [*cube, kq, ka, m, k, *tail], x
    return None


def _cube(g: _Graph, name: str, x: str) -> list[int] | None:
    """``name`` as ``x`` cubed: ``Pow(x, 3)`` or ``Mul(x, Mul(x, x))`` in either order; the nodes."""
    kp = g.made_by(name, "Pow")
    if kp is not None:
        pin = g.nodes[kp].inputs
        return [kp] if pin[0] == x and g.scalar(pin[1]) == 3.0 else None
    k3 = g.made_by(name, "Mul")
    if k3 is None or x not in g.nodes[k3].inputs:
        return None
    a, b = g.nodes[k3].inputs
    sq = b if a == x else a
    k2 = g.made_by(sq, "Mul")
    if k2 is None or g.nodes[k2].inputs != [x, x]:
        return None
    return [k2, k3]


def _silu_match(g: _Graph, k: int) -> tuple[list[int], str] | None:
    """``Mul(x, Sigmoid(x))`` (SiLU, Swish: EfficientNet, Llama's MLP)."""
    x = g.nodes[k].inputs[0]
    m = g.sole_reader(g.out(k), "Mul")
    if m is None or sorted(g.nodes[m].inputs) != sorted([x, g.out(k)]) or x == g.out(k):
        return None
    return [k, m], x


def _affine_tail(
    g: _Graph, name: str, dtype: np.dtype[Any], ops: Sequence[str]
) -> tuple[list[int], list[Any], list[str]]:
    """Following ``name``: an optional ``Cast`` to ``dtype``, then ``Mul`` and ``Add`` (in the order of ``ops``) by
    constants along the last axis (1-D, or one element); the nodes, the constants (None where absent) and their
    names (``""`` where absent)."""
    members: list[int] = []
    cur = name
    c = g.sole_reader(cur, "Cast")
    if c is not None and int(g.nodes[c].kw.get("to", 0)) == ONNX_FLOAT.get(dtype.str, -1):
        members.append(c)
        cur = g.out(c)
    found: list[Any] = []
    names: list[str] = []
    for op in ops:
        k = g.sole_reader(cur, op)
        w = None
        if k is not None:
            ins = g.nodes[k].inputs
            other = ins[1] if ins[0] == cur else ins[0]
            v = g.const.get(other)
            if isinstance(v, np.ndarray) and v.dtype == dtype and v.ndim <= 1 and other != cur:
                w = v
                names.append(other)
                members.append(k)
                cur = g.out(k)
        found.append(w)
        if w is None:
            break
    pad = len(ops) - len(found)
    return members, found + [None] * pad, names + [""] * (len(ops) - len(names))


def _eps_sqrt(g: _Graph, k: int) -> tuple[list[int], float, np.dtype[Any]] | None:
    """From a last-axis ReduceMean: ``Add(eps) -> Sqrt``; the nodes, eps and the element type."""
    if not _last_axis_mean(g, k):
        return None
    a = g.sole_reader(g.out(k), "Add")
    eps_name = None
    if a is not None:
        ins = g.nodes[a].inputs
        eps_name = ins[1] if ins[0] == g.out(k) else ins[0]
    eps = None if eps_name is None else g.scalar(eps_name)
    s = None if a is None else g.sole_reader(g.out(a), "Sqrt")
    if a is None or eps is None or s is None or eps_name is None:
        return None
    return [a, s], eps, g.const[eps_name].dtype


def _rms_norm(g: _Graph, k: int) -> tuple[list[int], str, dict[str, Any]] | None:
    p = g.producer.get(g.nodes[k].inputs[0])
    if g.op(p) != "Pow" or p is None or g.scalar(g.nodes[p].inputs[1]) != 2.0:
        return None
    x = g.nodes[p].inputs[0]
    found = _eps_sqrt(g, k)
    if found is None:
        return None
    (a, s), eps, dtype = found
    sq = g.out(s)
    members = [p, k, a, s]
    r = g.sole_reader(sq, "Reciprocal")
    if r is None:
        d = g.sole_reader(sq, "Div")
        if d is not None and g.nodes[d].inputs[1] == sq and g.scalar(g.nodes[d].inputs[0]) == 1.0:
            r = d
    if r is not None:
        n = g.sole_reader(g.out(r), "Mul")
        if n is None or set(g.nodes[n].inputs) != {x, g.out(r)}:
            return None
        members += [r, n]
    else:
        n = g.sole_reader(sq, "Div")
        if n is None or g.nodes[n].inputs[0] != x:
            return None
        members.append(n)
    tail, (w,), (w_name,) = _affine_tail(g, g.out(n), dtype, ["Mul"])
    return [*members, *tail], x, {"kind": "rms", "eps": eps, "dtype": dtype, "w": w, "w_name": w_name}


def _layer_norm(g: _Graph, k: int) -> tuple[list[int], str, dict[str, Any]] | None:
    if not _last_axis_mean(g, k):
        return None
    x = g.nodes[k].inputs[0]
    mean = g.out(k)
    sub = g.sole_reader(mean, "Sub")
    if sub is None or g.nodes[sub].inputs != [x, mean]:
        return None
    d = g.out(sub)
    readers = g.readers.get(d, [])
    if len(readers) != 2 or g.uses.get(d) != 2:
        return None
    p = next((j for j in readers if g.op(j) == "Pow" and g.nodes[j].inputs[0] == d), None)
    div = next((j for j in readers if g.op(j) == "Div" and g.nodes[j].inputs[0] == d), None)
    if p is None or div is None or g.scalar(g.nodes[p].inputs[1]) != 2.0:
        return None
    k2 = g.sole_reader(g.out(p), "ReduceMean")
    found = None if k2 is None else _eps_sqrt(g, k2)
    if found is None or k2 is None:
        return None
    (a, s), eps, dtype = found
    if g.nodes[div].inputs[1] != g.out(s):
        return None
    tail, (gamma, beta), (g_name, b_name) = _affine_tail(g, g.out(div), dtype, ["Mul", "Add"])
    info = {"kind": "ln", "eps": eps, "dtype": dtype, "w": gamma, "b": beta, "w_name": g_name, "b_name": b_name}
    return [k, sub, p, k2, a, s, div, *tail], x, info


def _chain(
    g: _Graph, members: Sequence[int]
) -> list[tuple[Callable[..., Any], list[str | np.ndarray | None], dict[str, Any], list[str]]]:
    """The members as :class:`FusedPattern` runs them as written."""
    chain: list[tuple[Callable[..., Any], list[str | np.ndarray | None], dict[str, Any], list[str]]] = []
    for j in members:
        bn = g.nodes[j]
        assert bn.call is not None
        ins: list[str | np.ndarray | None] = [g.const[n] if n in g.const else (n or None) for n in bn.inputs]
        chain.append((bn.call, ins, dict(bn.kw), list(bn.outputs)))
    return chain


def _fused(g: _Graph, members: list[int], x: str, info: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The fused kernel for a matched chain and its attributes (the nodes as written among them)."""
    chain = _chain(g, members)
    kind = info["kind"]
    if kind in ("none", "tanh"):
        return "GeluPattern", {"approximate": kind, "chain": chain, "x_names": (x,)}
    if kind == "silu":
        return "SiLUPattern", {"chain": chain, "x_names": (x,)}
    if kind == "hard_sigmoid":
        hs = g.nodes[members[0]]  # the HardSigmoid comes before the Mul that reads it
        kw: dict[str, Any] = {a: float(hs.kw[a]) for a in ("alpha", "beta") if a in hs.kw}
        return "HardSigmoidMul", {**kw, "kernel": hs.call, "chain": chain, "x_names": (x,)}
    norm = {"epsilon": info["eps"], "dtype": info["dtype"], "scale": info["w"], "chain": chain, "x_names": (x,)}
    if kind == "rms":
        return "RMSNormPattern", norm
    return "LayerNormPattern", {**norm, "bias": info["b"]}


def _closed(g: _Graph, members: list[int]) -> bool:
    """Whether every value the chain makes, but its last, is read by the chain alone (never a graph output)."""
    inside = set(members)
    last = max(members)
    for j in members:
        if j in g.taken:
            return False
        for o in g.nodes[j].outputs:
            if not o or j == last:
                continue
            if g.uses.get(o, 0) != sum(1 for r in g.readers.get(o, []) if r in inside):
                return False
    return len(g.nodes[last].outputs) == 1 or not any(g.nodes[last].outputs[1:])


@dataclass(frozen=True)
class PatternMatch:
    """One exporter's chain found in a plan graph (:func:`exporter_patterns`).

    Attributes:
        kind: ``"none"`` (erf GELU), ``"tanh"`` (tanh GELU), ``"silu"``, ``"hard_sigmoid"`` (``x *
            HardSigmoid(x)``), ``"ln"`` (LayerNorm over the last axis) or ``"rms"`` (RMSNorm over the last axis).
        anchor: The index of the node the chain was found from (its Erf, Tanh, Sigmoid, HardSigmoid or first
            ReduceMean).
        members: The indices of the chain's nodes, in graph order; the last one makes its result.
        x: The value the chain reads.
        info: For the norms: ``eps`` (read from the graph), ``dtype`` (the element type of the epsilon, which is
            the chain's), ``w`` and ``b`` (the constant scale and shift along the last axis, None where absent;
            ``b`` for LayerNorm only) and their names ``w_name`` and ``b_name`` (``""`` where absent).
    """

    kind: str
    anchor: int
    members: list[int]
    x: str
    info: dict[str, Any]


def exporter_patterns(graph: PlanGraph) -> list[PatternMatch]:
    """Every exporter's chain for GELU, SiLU, ``x * HardSigmoid(x)``, LayerNorm and RMSNorm in the graph (module
    docstring), each matched where every value it makes but its last is read by the chain alone and is not a graph
    output, no two sharing a node. The one recognition of these chains: the plan's fused steps
    (:func:`fuse_patterns`) and the standard rewrites into the opset's own operators both read it."""
    nodes = graph.nodes
    if not any(bn.node.op_type in _ANCHORS for bn in nodes):
        return []
    g = _Graph(graph, list(nodes))
    found: list[PatternMatch] = []
    for k in range(len(nodes)):
        op = g.op(k)
        if op not in _ANCHORS or k in g.taken:
            continue
        match: tuple[list[int], str, dict[str, Any]] | None = None
        if op == "Erf":
            chain = _erf_gelu(g, k)
            match = None if chain is None else (chain[0], chain[1], {"kind": "none"})
        elif op == "Tanh":
            chain = _tanh_gelu(g, k)
            match = None if chain is None else (chain[0], chain[1], {"kind": "tanh"})
        elif op == "Sigmoid":
            chain = _silu_match(g, k)
            match = None if chain is None else (chain[0], chain[1], {"kind": "silu"})
        elif op == "HardSigmoid":
            # Mul(x, HardSigmoid(x)): HardSwish as exporters write it before opset 14 (MobileNetV3); HardSigmoid-6
            # on (no consumed_inputs).
            chain = _silu_match(g, k) if g.nodes[k].since >= 6 else None
            match = None if chain is None else (chain[0], chain[1], {"kind": "hard_sigmoid"})
        else:
            match = _layer_norm(g, k) or _rms_norm(g, k)
        if match is None:
            continue
        members, x, info = match
        members = sorted(set(members))
        if not _closed(g, members):
            continue
        found.append(PatternMatch(info["kind"], k, members, x, info))
        g.taken.update(members)
    return found


def fuse_patterns(graph: PlanGraph) -> list[PlanNode]:
    """Replace each exporter's chain for GELU, SiLU, LayerNorm and RMSNorm with one step (module docstring)."""
    nodes, const = list(graph.nodes), graph.const
    matches = exporter_patterns(graph)
    if not matches:
        return nodes
    g = _Graph(graph, nodes)
    replaced: dict[int, PlanNode] = {}
    taken: set[int] = set()
    for m in matches:
        op, attrs = _fused(g, m.members, m.x, m.info)
        last = m.members[-1]
        y = g.nodes[last].outputs[0]
        others = [g.nodes[j] for j in m.members if j != m.anchor]
        replaced[last] = fused_node(g.nodes[m.anchor], op, [m.x], [y], const, absorbed=others, **attrs)
        taken.update(m.members)
    return [replaced.get(j, bn) for j, bn in enumerate(nodes) if j in replaced or j not in taken]


def _scores(g: _Graph, name: str) -> tuple[list[int], tuple[str, float] | None, int] | None:
    """``name`` as ``MatMul(q, k)``, optionally divided or multiplied by a constant: the nodes, the scaling and
    the MatMul; every value read once."""
    if g.uses.get(name) != 1:
        return None
    scale = None
    members: list[int] = []
    for op in ("Div", "Mul"):
        j = g.made_by(name, op)
        if j is None:
            continue
        a, b = g.nodes[j].inputs
        c = g.scalar(b)
        if c is None and op == "Mul":
            a, b, c = b, a, g.scalar(a)
        if c is None or c == 0.0 or g.uses.get(a) != 1:
            return None
        scale, name = (op, c), a
        members.append(j)
        break
    qk = g.made_by(name, "MatMul")
    if qk is None:
        return None
    return [*members, qk], scale, qk


def fuse_attention(graph: PlanGraph) -> list[PlanNode]:
    """The scaled-dot-product attention chain exporters write, ``MatMul(q, k) -> Div|Mul(scale) -> Add(mask) ->
    Softmax(last axis) -> [Where(IsNaN(.), 0, .)] -> MatMul(., v)`` (scale and mask optional), as one step whose
    score matrix is made once and updated in place (the same operations in the same order; other inputs run the
    nodes as written)."""
    nodes, const = list(graph.nodes), graph.const
    if not any(bn.node.op_type == "Softmax" for bn in nodes):
        return nodes
    g = _Graph(graph, nodes)
    replaced: dict[int, PlanNode] = {}
    for sm in range(len(nodes)):
        if g.op(sm) != "Softmax" or int(g.nodes[sm].kw.get("axis", -1)) != -1:
            continue
        cur = g.nodes[sm].inputs[0]
        found = _scores(g, cur)
        mask = None
        members = [sm]
        if found is None:
            j = g.made_by(cur, "Add")
            if j is None or g.uses.get(cur) != 1:
                continue
            for s_name, m_name in (g.nodes[j].inputs, g.nodes[j].inputs[::-1]):
                found = _scores(g, s_name)
                if found is not None:
                    mask = m_name
                    members.append(j)
                    break
        if found is None:
            continue
        chain_nodes, scale, qk = found
        members += chain_nodes
        q, kname = g.nodes[qk].inputs
        out = g.out(sm)
        guard = False
        if g.uses.get(out) == 2:
            isn = next((r for r in g.readers.get(out, []) if g.op(r) == "IsNaN"), None)
            wh = next((r for r in g.readers.get(out, []) if g.op(r) == "Where"), None)
            if isn is None or wh is None:
                continue
            w_ins = g.nodes[wh].inputs
            if w_ins[0] != g.out(isn) or w_ins[2] != out or g.scalar(w_ins[1]) != 0.0:
                continue
            members += [isn, wh]
            out = g.out(wh)
            guard = True
        pv = g.sole_reader(out, "MatMul")
        if pv is None or g.nodes[pv].inputs[0] != out:
            continue
        members = sorted({*members, pv})
        if not _closed(g, members):
            continue
        inputs = [q, kname] + ([mask] if mask is not None else []) + [g.nodes[pv].inputs[1]]
        last = members[-1]
        others = [g.nodes[j] for j in members if j != sm]
        replaced[last] = fused_node(g.nodes[sm], "AttentionPattern", inputs, [g.out(last)], const, absorbed=others,
                                    scale=scale, masked=mask is not None, guard=guard, chain=_chain(g, members),
                                    x_names=tuple(inputs))  # fmt: skip
        g.taken.update(members)
    if not replaced:
        return nodes
    return [replaced.get(j, bn) for j, bn in enumerate(nodes) if j in replaced or j not in g.taken]
