"""What evaluates a bound node: the one choice of a kernel or a function body (Clauses 8.4, 14.3, 16.1).

The session's compiler, :func:`onnxcore.kernels.run`, the conformance statement and inference's constant folding
all ask :func:`select`; the definition a node binds to comes from the graph layer's one precedence rule
(:meth:`onnxcore.graph.BoundModel.binding`, or :func:`onnxcore.graph.definition_binding` where there is no model).
Given that binding, in this order:

* ``function``: a model-local function of the node's name (bound as such by the graph layer) is its body;
* ``exact``: the kernel registered for exactly the bound definition's ``since_version`` (Clause 14.3);
* ``onnxruntime``: for a definition of onnxruntime's (com.microsoft, or its extensions of ai.onnx), the kernel a
  custom domain would bind to (the greatest since_version not above the imported version, Clause 16.1): a user's
  kernel for an onnxruntime operator registered at another version;
* ``body``: the definition's own function body (Clause 8.4), evaluated node by node;
* ``custom``: a domain without definitions: the kernel of the greatest since_version not above the import;
* ``none``: nothing evaluates the node (Clause 4.4: it is refused, never approximated).

A kernel comes from the ``custom_ops`` :class:`~onnxcore.kernels.registry.KernelSet` first, then the process-wide
registry.
"""

from __future__ import annotations

from typing import Literal

from onnxcore.defs.opschema import OpSchema
from onnxcore.graph.bound import NodeRef
from onnxcore.kernels.registry import KernelDef, KernelSet, custom_domain_kernel, lookup

__all__ = ["Rule", "Selection", "select", "select_node"]

Rule = Literal["function", "exact", "onnxruntime", "body", "custom", "none"]


class Selection:
    """What :func:`select` chose.

    Attributes:
        rule: Which rule decided (see the module docstring).
        kernel: The kernel, for ``exact``, ``onnxruntime`` and ``custom``; else None.
        since_version: The kernel's since_version; for ``body``, the definition's; else 0.
    """

    __slots__ = ("kernel", "rule", "since_version")

    def __init__(self, rule: Rule, kernel: KernelDef | None = None, since_version: int = 0) -> None:
        self.rule: Rule = rule
        self.kernel = kernel
        self.since_version = since_version

    @property
    def evaluable(self) -> bool:
        """Whether something evaluates the node (any rule but ``none``)."""
        return self.rule != "none"

    def __repr__(self) -> str:
        return f"Selection({self.rule}, {self.kernel!r})"


_NONE = Selection("none")
_FUNCTION = Selection("function")


def select(
    domain: str,
    op_type: str,
    version: int,
    status: str,
    schema: OpSchema | None,
    custom_ops: KernelSet | None = None,
) -> Selection:
    """What evaluates a node bound by the graph layer.

    Args:
        domain: The node's canonical domain.
        op_type: Its operator.
        version: The imported version of its domain.
        status: Its binding status (:class:`onnxcore.graph.NodeRef`'s ``status``: ``"function"``, ``"schema"``,
            ``"custom"``, or one that nothing evaluates).
        schema: The bound definition (status ``"schema"``).
        custom_ops: The session's (or the run's) own kernels, chosen before the registry's at the same key.

    Returns:
        The :class:`Selection`; its ``rule`` is ``"none"`` when nothing evaluates the node.
    """
    if status == "function":
        return _FUNCTION
    if status == "schema":
        assert schema is not None
        since = int(schema.since_version)
        kdef = lookup(domain, op_type, since, custom_ops)
        if kdef is not None:
            return Selection("exact", kdef, since)
        if schema.origin == "onnxruntime":
            kdef = custom_domain_kernel(domain, op_type, version, custom_ops)
            if kdef is not None:
                return Selection("onnxruntime", kdef, kdef.since_version)
        if schema.has_function_body(version):
            return Selection("body", None, since)
        return _NONE
    if status == "custom":
        kdef = custom_domain_kernel(domain, op_type, version, custom_ops)
        if kdef is not None:
            return Selection("custom", kdef, kdef.since_version)
    return _NONE


def select_node(ref: NodeRef, custom_ops: KernelSet | None = None) -> Selection:
    """:func:`select` for a node of a bound model."""
    return select(ref.domain, ref.node.op_type, ref.version, ref.status, ref.schema, custom_ops)
