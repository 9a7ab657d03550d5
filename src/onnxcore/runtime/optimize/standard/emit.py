"""What the standard rewrites share: nodes of standard operators made and bound, names, the facts of the graph.

A node a standard rewrite makes is a fresh ``NodeProto`` of a standard operator (domain ``""`` or ``ai.onnx.ml``)
at the version the model imports, bound as a session binds any node: the definition by the graph layer's one
precedence rule (:func:`onnxcore.graph.bound.definition_binding`), what evaluates it by
:func:`onnxcore.kernels.select.select` (Clause 14.3). Where that finds no kernel (the operator is not in the
imported version, a model-local function of the same name takes precedence, Clause 8.4, or only a function body
would evaluate it) the rewrite does not fire.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from onnxcore.build.helper import make_node
from onnxcore.graph.attributes import attribute_value
from onnxcore.graph.bound import definition_binding
from onnxcore.kernels.registry import KernelContext, prepared_call
from onnxcore.kernels.select import select
from onnxcore.proto import NodeProto
from onnxcore.proto.message import copy_message
from onnxcore.runtime.optimize.graph import PlanGraph
from onnxcore.runtime.optimize.pipeline import ConditionError
from onnxcore.runtime.step import PlanNode

__all__ = [
    "Names",
    "constant_ints",
    "is_standard",
    "node_name",
    "opset",
    "rank",
    "rewire",
    "shape",
    "standard_node",
]

_MADE_DOMAINS = ("", "ai.onnx.ml")


def is_standard(bn: PlanNode, op_type: str) -> bool:
    """Whether ``bn`` is a default-domain ``op_type`` node as the model writes it (bound, no subgraph, not fused)."""
    n = bn.node
    return (
        n.op_type == op_type
        and n.domain in ("", "ai.onnx")
        and bn.call is not None
        and not bn.outer
        and not bn.step_kernel
        and not bn.fused
    )


def opset(graph: PlanGraph, domain: str = "") -> int | None:
    """The version of ``domain`` the model imports; None without facts or import."""
    return None if graph.facts is None else graph.facts.opsets.get(domain)


def shape(graph: PlanGraph, name: str) -> tuple[int | str | None, ...] | None:
    """The shape of value ``name`` (a constant's own, else inference's), or None."""
    v = graph.const.get(name)
    if isinstance(v, np.ndarray):
        return tuple(int(d) for d in v.shape)
    return None if graph.facts is None else graph.facts.shapes.get(name)


def rank(graph: PlanGraph, name: str) -> int | None:
    """The rank of value ``name``, or None."""
    s = shape(graph, name)
    return None if s is None else len(s)


def constant_ints(graph: PlanGraph, name: str) -> list[int] | None:
    """A constant integer tensor of rank 0 or 1 as a list, else None."""
    v = graph.const.get(name) if name else None
    if not isinstance(v, np.ndarray) or v.dtype.kind not in "iu" or v.ndim > 1:
        return None
    return [int(x) for x in v.reshape(-1)]


def node_name(parts: Iterable[PlanNode], fallback: str) -> str:
    """A name for a node replacing ``parts``: their names joined, or ``fallback`` when none has one."""
    names = [bn.node.name for bn in parts if bn.node.name]
    return "+".join(names) if names else fallback


class Names:
    """Fresh value names for one run of a rewrite: none taken by a value, a constant or a source of the graph, nor
    by a value of one of its subgraphs (a name is defined once across a graph and its subgraphs, Clause 5.4)."""

    def __init__(self, graph: PlanGraph) -> None:
        taken = set(graph.const) | set(graph.sources) | set(graph.outputs)
        for bn in graph.nodes:
            taken.update(bn.inputs)
            taken.update(bn.outer)
            taken.update(bn.outputs)
            _subgraph_names(bn.node, taken)
        self._taken = taken

    def fresh(self, base: str) -> str:
        """``base``, or ``base`` with the smallest suffix ``_k`` that makes it unused; reserved."""
        name, k = base, 0
        while name in self._taken:
            k += 1
            name = f"{base}_{k}"
        self._taken.add(name)
        return name


def _subgraph_names(node: NodeProto, into: set[str]) -> None:
    """Add every value name of ``node``'s subgraphs (and theirs) to ``into``."""
    for a in node.attribute:
        for g in ([a.g] if a.g is not None else []) + list(a.graphs):
            into.update(vi.name for vi in (*g.input, *g.output, *g.value_info))
            into.update(t.name for t in g.initializer)
            for n in g.node:
                into.update(n.input)
                into.update(n.output)
                _subgraph_names(n, into)


def standard_node(
    graph: PlanGraph,
    anchor: PlanNode,
    op_type: str,
    inputs: Sequence[str],
    outputs: Sequence[str],
    *,
    name: str,
    domain: str = "",
    attributes_of: PlanNode | None = None,
    outputs_context: bool = False,
    **attributes: Any,
) -> PlanNode | None:
    """A fresh node ``op_type`` of the standard ``domain`` from ``inputs`` to ``outputs``, bound at the version the
    model imports (module docstring), at ``anchor``'s place (its index, for messages); None where nothing standard
    evaluates it there (the rewrite then leaves the graph as it is).

    Args:
        graph: The graph (its facts give the imports and the model-local functions).
        anchor: The node it replaces, whose index it takes.
        op_type: The operator.
        inputs: Input names (``""`` for one left out).
        outputs: Output names.
        name: The node's name.
        domain: ``""`` (ai.onnx) or ``"ai.onnx.ml"``.
        attributes_of: A node whose attributes the new node takes as they are written (copies), before
            ``attributes``.
        outputs_context: Bind a kernel that needs the node's context too, given the node and its outputs (how
            many, which requested) but no input types, random generator or subgraphs: for an operator whose kernel
            reads only its outputs' count (Split).
        **attributes: Its attributes, as :func:`onnxcore.build.helper.make_node` takes them.
    """
    if domain not in _MADE_DOMAINS or graph.facts is None:
        return None
    version = graph.facts.opsets.get(domain)
    if version is None or (domain, op_type) in graph.facts.functions:
        return None
    status, schema = definition_binding(domain, op_type, version)
    if status != "schema" or schema is None:
        return None
    choice = select(domain, op_type, version, status, schema)
    kdef = choice.kernel
    # A kernel that needs the node's context, or a definition evaluated through its body, is bound by a session's
    # compiler only; the standard rewrites make nodes of plain kernels (or, asked for, of kernels that read only the
    # outputs' count).
    if kdef is None or (kdef.context and not outputs_context):
        return None
    node = make_node(op_type, list(inputs), list(outputs), name=name or None, domain=domain or None, **attributes)
    if attributes_of is not None:
        given = {a.name for a in node.attribute}
        node.attribute = type(node.attribute)(
            [copy_message(a) for a in attributes_of.node.attribute if a.name not in given] + list(node.attribute)
        )
    kw = {a.name: attribute_value(a) for a in node.attribute}
    unknown = set(kw) - set(schema.attributes)
    if unknown:
        # A defect of the rewrite, never of the model: it wrote an attribute the definition does not have.
        raise ConditionError(f"{name}: {op_type}-{schema.since_version} has no attribute {sorted(unknown)}")
    call: Callable[..., Any] = prepared_call(kdef, kw)
    if kdef.context:
        ctx = KernelContext(node, since_version=choice.since_version, opset_version=version,
                            num_outputs=len(node.output), outputs_requested=[bool(o) for o in node.output])  # fmt: skip
        call = functools.partial(kdef.fn, ctx)
    bn = PlanNode(anchor.index, node, call, kw, [])
    bn.since = choice.since_version
    return bn


def rewire(graph: PlanGraph, nodes: list[PlanNode], old: str, new: str) -> bool:
    """Make every node of ``nodes`` that reads ``old`` read ``new`` instead (copies of them, same binding), so that
    the node making ``old`` can go; False (nothing changed) where ``old`` is a graph output or read from inside a
    subgraph, which only its own name can serve."""
    if old in graph.outputs or any(old in bn.outer for bn in nodes):
        return False
    for k, bn in enumerate(nodes):
        if old not in bn.inputs:
            continue
        ins = [new if n == old else n for n in bn.inputs]
        node = copy.copy(bn.node)  # a shallow copy: only its input list is replaced
        node.input = list(ins)
        nodes[k] = bn.renamed(ins, node=node)
    return True
