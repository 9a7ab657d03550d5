"""A node of a plan: bound to what evaluates it, before slots are laid out.

Its own module so that the plan (:mod:`onnxcore.runtime.plan`), the plan-time rewrites
(:mod:`onnxcore.runtime.optimize`) and differentiation (:mod:`onnxcore.runtime.gradient`) all import it
without importing one another.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from onnxcore.proto import NodeProto

__all__ = ["PlanNode"]


class PlanNode:
    """A node of a graph or function body bound to an implementation (a kernel, a compiled function body, a
    rewrite's fused step), with the names it reads and writes.

    Attributes:
        index: The node's position in its graph.
        node: The ``NodeProto`` (after attribute references were resolved, in a function body).
        call: What evaluates it; None when it cannot be bound (the model is then refused).
        kw: Its attributes, converted once, passed as keywords.
        inputs: Names of its inputs (``""``: unsupplied).
        outer: Names its subgraphs read from the enclosing scope (Clause 5.4.3), passed after its inputs.
        outputs: Names of its outputs.
        may_tuple: Whether ``call`` may return a tuple (an operator with several formal outputs).
        since: The since_version of the definition a kernel was bound for (0: a function body, or unbound).
        fused: Other nodes a plan-time rewrite folded into this step (Clause 8.2), in graph order.
        step_kernel: The fused kernel (of ``onnxcore.kernels.fused``) a plan-time rewrite bound this step to, by
            its op_type in that domain; ``""`` for a node bound to its own kernel or body.
        step_attrs: The attributes that fused kernel was prepared with (a later rewrite prepares it again with
            some of them changed).
    """

    __slots__ = (
        "call",
        "fused",
        "index",
        "inputs",
        "kw",
        "may_tuple",
        "node",
        "outer",
        "outputs",
        "since",
        "step_attrs",
        "step_kernel",
    )

    def __init__(
        self,
        index: int,
        node: NodeProto,
        call: Callable[..., Any] | None,
        kw: dict[str, Any],
        outer: list[str],
    ) -> None:
        self.index = index
        self.node = node
        self.call = call
        self.kw = kw
        self.inputs: list[str] = list(node.input)
        self.outer = outer
        self.outputs: list[str] = list(node.output)
        # A kernel may answer any node with a tuple (Identity returns a 1-tuple so that a sequence is never
        # mistaken for a list of outputs), so every result is checked unless a rewrite knows better.
        self.may_tuple = True
        self.since = 0
        # An error in the step names the fused nodes too.
        self.fused: list[PlanNode] = []
        self.step_kernel = ""
        self.step_attrs: dict[str, Any] = {}

    def renamed(self, inputs: list[str], outputs: list[str] | None = None, node: NodeProto | None = None) -> PlanNode:
        """A copy of this node with the same binding reading ``inputs`` (and writing ``outputs``, this node's by
        default; its NodeProto replaced by ``node`` where given): what a rewrite makes when it renames a value."""
        out = PlanNode(self.index, self.node if node is None else node, self.call, self.kw, self.outer)
        out.inputs = inputs
        out.outputs = list(self.outputs) if outputs is None else outputs
        out.since, out.may_tuple, out.fused = self.since, self.may_tuple, list(self.fused)
        out.step_kernel, out.step_attrs = self.step_kernel, self.step_attrs
        return out
