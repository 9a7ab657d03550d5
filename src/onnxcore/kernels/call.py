"""One kernel called on its own, outside any model (as ``onnx.reference``'s ``OpRun.eval``).

:func:`run` binds an operator the way a node of a model importing ``version`` of its domain would be bound
(Clause 14.3: the definition with the greatest since_version not above ``version``, then the kernel registered
for exactly that since_version; a domain without definitions, Clause 16.1: the kernel of the greatest
since_version not above ``version``), from a :class:`~onnxcore.kernels.registry.KernelSet` given first, and
evaluates it on the values given. The definition is the graph layer's
(:func:`onnxcore.graph.definition_binding`), the kernel :func:`onnxcore.kernels.select.select`'s: the choice a
session makes. An operator a session evaluates through its definition's function body is refused here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from onnxcore.defs.binding import canonical_domain
from onnxcore.defs.opschema import OpSchema
from onnxcore.errors import KernelNotFoundError, OnnxCoreError, UnknownOperatorError
from onnxcore.graph.bound import definition_binding
from onnxcore.kernels.registry import KernelContext, KernelDef, KernelSet
from onnxcore.kernels.select import select
from onnxcore.proto import GraphProto, NodeProto

__all__ = ["run"]


def _bind(domain: str, op_type: str, version: int, custom_ops: KernelSet | None) -> tuple[KernelDef, OpSchema | None]:
    """(kernel, definition or None) for ``op_type`` of ``domain`` at imported ``version``: the definition by the
    graph layer's precedence (no model, so no model-local function), the kernel by :func:`select`."""
    label = f"{domain or 'ai.onnx'}::{op_type}"
    status, schema = definition_binding(domain, op_type, version)
    choice = select(domain, op_type, version, status, schema, custom_ops)
    if choice.kernel is not None:
        return choice.kernel, schema
    if schema is not None:
        how = (
            "it is evaluated through its function body (Clause 8.4), which needs a model: use a Session"
            if choice.rule == "body"
            else "no kernel evaluates this definition (Clause 4.4)"
        )
        raise KernelNotFoundError(f"{label}-{schema.since_version}: {how}", [(domain, op_type, version)])
    if status == "custom":
        raise UnknownOperatorError(f"{label}: no kernel at or below version {version} of a custom domain (16.1)")
    raise UnknownOperatorError(f"{label}: no definition at operator set version {version} (Clause 14.3)")


def run(
    op_type: str,
    version: int,
    *inputs: Any,
    domain: str = "",
    outputs: int | None = None,
    custom_ops: KernelSet | None = None,
    **attributes: Any,
) -> tuple[Any, ...]:
    """Evaluate one operator on ``inputs`` with one kernel, as a node importing ``version`` of ``domain`` would.

    Args:
        op_type: The operator, e.g. ``"Relu"``.
        version: The version of its domain to bind at (Clause 14.3), e.g. 14 binds Relu to Relu-14.
        *inputs: The input values in order (numpy arrays; lists for sequences; None for an input left out).
        domain: The operator's domain (``""`` or ``"ai.onnx"``: the default domain).
        outputs: How many outputs the node declares; by default one per formal output of the definition (a
            variadic one counted once, so give it for a Split of several outputs).
        custom_ops: Kernels to bind from before the process-wide registry, as a session given them binds
            (:class:`~onnxcore.kernels.registry.KernelSet`).
        **attributes: Attribute values as a kernel receives them (int, float, str or bytes, numpy arrays, lists
            of these); those left out take the definition's defaults.

    Returns:
        Always a tuple, one value per output the kernel computes, even for an operator with one output.

    Raises:
        UnknownOperatorError: no definition binds the operator at ``version`` (or, in a domain without
            definitions, no kernel is registered at or below it).
        KernelNotFoundError: the operator is defined, but no kernel evaluates that definition.
        OnnxCoreError: an attribute the definition does not have, or a graph attribute (subgraphs need a model:
            use :class:`onnxcore.Session`).
        TypeError: ``custom_ops`` is not a ``KernelSet``.
        EvaluationError, ShapeError, LimitError: as the kernel raises them; limits are those active
            (:func:`onnxcore.limits.active_limits`).
    """
    if custom_ops is not None and not isinstance(custom_ops, KernelSet):
        raise TypeError(f"custom_ops: expected an onnxcore.kernels.KernelSet, got {type(custom_ops).__name__}")
    dom = canonical_domain(domain)
    kdef, schema = _bind(dom, op_type, version, custom_ops)
    label = f"{dom or 'ai.onnx'}::{op_type}-{kdef.since_version}"
    for name, value in attributes.items():
        if isinstance(value, GraphProto) or (isinstance(value, list) and value and isinstance(value[0], GraphProto)):
            raise OnnxCoreError(f"{label}: attribute {name!r} holds a graph; kernels.run evaluates no subgraph")
        if schema is not None and name not in schema.attributes:
            raise OnnxCoreError(f"{label}: no attribute {name!r} (Clause 10.4); it has {sorted(schema.attributes)}")
    # IEEE 754 results (log(0) = -inf) are results, not warnings (Clause 11.2), as in a session's runs.
    with np.errstate(all="ignore"):
        if kdef.context:
            n_out = outputs if outputs is not None else (len(schema.outputs) if schema is not None else 1)
            node = NodeProto(
                op_type=op_type,
                domain=dom,
                input=[f"input{i}" if v is not None else "" for i, v in enumerate(inputs)],
                output=[f"output{j}" for j in range(n_out)],
            )
            ctx = KernelContext(
                node,
                since_version=kdef.since_version,
                opset_version=version,
                num_outputs=n_out,
                rng=np.random.default_rng(),
            )
            result = kdef.fn(ctx, *inputs, **attributes)
        else:
            result = kdef.fn(*inputs, **attributes)
    return result if type(result) is tuple else (result,)
