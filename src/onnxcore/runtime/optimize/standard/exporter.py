"""Exporters' chains as the operator set's own operator, where the model's operator set has it (issue 39).

The chains are recognised by the one matcher the plan's fused steps use
(:func:`onnxcore.runtime.optimize.patterns.exporter_patterns`: every value a chain makes but its last is read by
the chain alone and is not a graph output); this rewrite writes each as a standard node instead:

- erf GELU -> ``Gelu`` (ai.onnx 20 on), tanh GELU -> ``Gelu(approximate="tanh")``;
- ``x * Sigmoid(x)`` -> ``Swish`` (24 on, ``alpha`` 1); ``x * HardSigmoid(x)`` with HardSigmoid's ``alpha`` 1/6
  and ``beta`` 0.5 (as float32 writes them) -> ``HardSwish`` (14 on);
- LayerNorm over the last axis -> ``LayerNormalization(axis=-1)`` (17 on), RMSNorm over the last axis ->
  ``RMSNormalization(axis=-1)`` (23 on): the epsilon is the one the graph adds (read from its constant, never
  assumed), the axis the one both reductions name (the matcher takes the last axis only, ``-1`` as written); the
  scale and shift are the chain's constants. The first stage runs in the chain's own type (``stash_type`` 11 for
  float64, whose default of float32 would lose precision; float32's default is float32 itself). float16 chains
  are left alone (the operator's float32 stage rounds differently from the chain's float16 arithmetic).

The matcher reads the chains' fixed constants (``sqrt(2)``, ``0.5``, ``0.044715``, ``sqrt(2/pi)``, 1) to a relative
1e-4, so a chain written with rounded constants becomes the operator with exact ones: a difference well inside the
conformance tolerance (rtol 1e-3), which the model pipeline's verification measures. Preconditions, beyond the
matcher's: the chain's input is float32 or float64 (its element type known); for the
norms, the last extent of the input is a known integer ``C`` and each constant has ``C`` elements or one (a
dimension variable there may be 1, where the chain's product with a ``[C]`` scale would grow the result and the
operator would refuse it); a scale left out is written as ones, a shift of one element is written out to ``C``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from onnxcore.runtime.optimize.graph import PlanGraph
from onnxcore.runtime.optimize.patterns import PatternMatch, exporter_patterns
from onnxcore.runtime.optimize.standard.emit import Names, node_name, opset, shape, standard_node
from onnxcore.runtime.step import PlanNode

__all__ = ["exporter_operators"]

_FLOAT, _DOUBLE = 1, 11
_ELEM = {np.dtype(np.float32): _FLOAT, np.dtype(np.float64): _DOUBLE}


def _param(
    value: Any, name: str, c: int, dtype: np.dtype[Any], new: str, fill: float | None, pending: dict[str, np.ndarray]
) -> str | None:
    """The name of a ``[C]`` constant for the operator: the chain's own where it is one already, else ``new``
    (its one element written out, or ``fill`` where the chain has none; put in ``pending``, added once the node is
    made); ``""`` where the chain has none and the operator needs none; None where it has another size."""
    if value is None:
        if fill is None:
            return ""
        pending[new] = np.full((c,), fill, dtype)
        return new
    if value.size == c and value.ndim == 1:
        return name
    if value.size != 1:
        return None
    pending[new] = np.full((c,), value.reshape(()), dtype)
    return new


def _norm(graph: PlanGraph, m: PatternMatch, names: Names, version: int, anchor: PlanNode, y: str,
          name: str) -> PlanNode | None:  # fmt: skip
    op, since = ("LayerNormalization", 17) if m.kind == "ln" else ("RMSNormalization", 23)
    dtype: np.dtype[Any] = m.info["dtype"]
    s = shape(graph, m.x)
    if version < since or dtype not in _ELEM or s is None or not s or not isinstance(s[-1], int):
        return None
    c = s[-1]
    pending: dict[str, np.ndarray] = {}
    scale = _param(m.info.get("w"), m.info.get("w_name", ""), c, dtype, f"{y}_scale", 1.0, pending)
    bias: str | None = ""
    if m.kind == "ln":
        bias = _param(m.info.get("b"), m.info.get("b_name", ""), c, dtype, f"{y}_bias", None, pending)
    if scale is None or bias is None:
        return None
    renamed = {n: names.fresh(n) for n in pending}
    scale, bias = renamed.get(scale, scale), renamed.get(bias, bias)
    attrs: dict[str, Any] = {"axis": -1, "epsilon": float(m.info["eps"])}
    if dtype == np.float64:
        attrs["stash_type"] = _DOUBLE
    inputs = [m.x, scale] + ([bias] if bias else [])
    out = standard_node(graph, anchor, op, inputs, [y], name=name, **attrs)
    if out is not None:
        for n, v in pending.items():
            graph.add_constant(renamed[n], v)
    return out


def _standard_for(graph: PlanGraph, m: PatternMatch, names: Names, version: int) -> PlanNode | None:
    nodes = graph.nodes
    last = nodes[m.members[-1]]
    y = last.outputs[0]
    anchor = nodes[m.anchor]
    name = node_name((nodes[j] for j in m.members), f"{m.kind}_{y}")
    facts = graph.facts
    elem = None if facts is None else facts.elem_types.get(m.x)
    if elem not in (_FLOAT, _DOUBLE):
        return None
    if m.kind in ("ln", "rms"):
        return _norm(graph, m, names, version, anchor, y, name)
    if m.kind in ("none", "tanh"):
        if version < 20:
            return None
        attrs: dict[str, Any] = {"approximate": "tanh"} if m.kind == "tanh" else {}
        return standard_node(graph, anchor, "Gelu", [m.x], [y], name=name, **attrs)
    if m.kind == "silu":
        return standard_node(graph, anchor, "Swish", [m.x], [y], name=name) if version >= 24 else None
    if m.kind == "hard_sigmoid" and version >= 14:
        alpha, beta = float(anchor.kw.get("alpha", 0.2)), float(anchor.kw.get("beta", 0.5))
        if math.isclose(alpha, 1 / 6, rel_tol=1e-7) and beta == 0.5:
            return standard_node(graph, anchor, "HardSwish", [m.x], [y], name=name)
    return None


def exporter_operators(graph: PlanGraph) -> list[PlanNode]:
    """Each exporter's chain as the operator set's own operator (module docstring: the preconditions)."""
    nodes = list(graph.nodes)
    version = opset(graph)
    if version is None or version < 14:
        return nodes
    names = Names(graph)
    replaced: dict[int, PlanNode] = {}
    taken: set[int] = set()
    for m in exporter_patterns(graph):
        new = _standard_for(graph, m, names, version)
        if new is not None:
            replaced[m.members[-1]] = new
            taken.update(m.members)
    if not replaced:
        return nodes
    return [replaced.get(j, bn) for j, bn in enumerate(nodes) if j in replaced or j not in taken]
