"""The one constant-folding rule (Clause 8.2; Clause 9's values): what may fold, how it is evaluated, its budgets.

Two folders evaluate a node whose inputs are all known: inference's value propagation
(:mod:`onnxcore.infer.known_values`, small values a later shape rule reads) and a plan's constant folding
(:mod:`onnxcore.runtime.optimize.fold`, values computed once when the plan is made). Both follow this module:

* what may fold (:func:`may_fold`): not an operator of :data:`~onnxcore.kernels.registry.NO_FOLD` (random draws,
  Dropout, work a small input does not bound), no subgraph attribute (a body's values may vary), no value read
  from an enclosing scope;
* what evaluates it (:func:`fold_kernel`): the kernel :func:`onnxcore.kernels.select.select` chooses, custom
  domains included (Clause 16.1), from the ``custom_ops`` given first; a node whose choice is its function body is
  left to the folder's own walk (inference enters the body; a plan folds the body's nodes), one that needs a
  kernel context is not folded;
* how (:func:`evaluate`): floating-point warnings silenced (a folded ``1 / 0`` is ``inf`` as at run time), any
  failure meaning "not folded" (the node then fails at run time, where the error names it);
* the size budgets: :data:`FOLD_BUDGET_BYTES`, the bytes of folded values a plan may hold for a session's life,
  and :data:`INFER_FOLD_ELEMENTS`, the elements of any one input or result inference evaluates (it folds under
  :data:`INFER_FOLD_LIMITS`, so that validation never does a run's work).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from onnxcore.defs.opschema import OpSchema
from onnxcore.kernels.registry import NO_FOLD, KernelDef, KernelSet
from onnxcore.kernels.select import select
from onnxcore.limits import Limits, limits_in_effect

__all__ = [
    "FOLD_BUDGET_BYTES",
    "INFER_FOLD_ELEMENTS",
    "INFER_FOLD_LIMITS",
    "evaluate",
    "fold_kernel",
    "may_fold",
]

# Folded values are held for the session's life: once a graph's folded values total this many bytes, further
# constant nodes stay run-time computations. Generous on purpose: a model that builds its weights from
# ConstantOfShape (the onnx light zoo does) should not rebuild hundreds of megabytes on every run; onnxruntime
# folds them all. There is no bound per constant below this: only nodes an output needs reach folding (the plan
# leaves the others out first, Clause 8), and a value an output needs costs as much at run time as folded; a node
# whose output exceeds the session's limits fails here and is left to run time, where the refusal names it.
FOLD_BUDGET_BYTES = 1 << 32
"""Bytes of folded values one plan may hold."""

INFER_FOLD_ELEMENTS = 1 << 16
"""Elements of any one input or result inference evaluates a node for (shape tensors, scales, small constants)."""

INFER_FOLD_LIMITS = Limits(max_tensor_elements=INFER_FOLD_ELEMENTS, max_tensor_bytes=8 * INFER_FOLD_ELEMENTS)
"""The limits inference's folding runs a kernel under."""


def may_fold(op_type: str, attributes: Iterable[Any] = (), outer: Sequence[str] = ()) -> bool:
    """Whether a node of ``op_type`` with these ``AttributeProto`` ``attributes``, reading the enclosing-scope values
    ``outer``, may be folded when its inputs are known (module docstring)."""
    if op_type in NO_FOLD or outer:
        return False
    return not any(a.g is not None or a.graphs for a in attributes)


def fold_kernel(
    domain: str,
    op_type: str,
    version: int,
    status: str,
    schema: OpSchema | None,
    custom_ops: KernelSet | None = None,
) -> KernelDef | None:
    """The kernel a folder evaluates a node with (the session's choice, :func:`~onnxcore.kernels.select.select`),
    or None: a function body, nothing, or a kernel that needs a context."""
    kdef = select(domain, op_type, version, status, schema, custom_ops).kernel
    return None if kdef is None or kdef.context else kdef


def evaluate(
    fn: Callable[..., Any], args: Sequence[Any], kw: dict[str, Any], limits: Limits | None = None
) -> tuple[Any, ...] | None:
    """``fn(*args, **kw)``'s results as a tuple (a kernel's one result as a 1-tuple), or None when it fails.

    Run under ``limits`` when given (else those in effect), with floating-point warnings silenced.
    """
    try:
        with np.errstate(all="ignore"):
            if limits is None:
                res = fn(*args, **kw)
            else:
                with limits_in_effect(limits):
                    res = fn(*args, **kw)
    except Exception:
        return None
    return res if type(res) is tuple else (res,)
