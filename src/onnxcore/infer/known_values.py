"""Constant folding for shape inference: small tensor values known statically, computed by the kernels.

A node whose inputs are all known small tensors is evaluated with its kernel (:mod:`onnxcore.kernels`, never the
evaluator) under tight limits, by the one folding rule the plan's constant folding follows too
(:mod:`onnxcore.kernels.folding`), so that a later rule reading a value (a
``Reshape`` to a computed shape) has it. Values are kept for small numeric tensors only; an initializer's
contents are decoded when a rule first reads them, a folded node's when a later rule first asks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from onnxcore.defs.opschema import OpSchema
from onnxcore.graph.attributes import attribute_value
from onnxcore.infer.shape_core import ShapeT, resolve
from onnxcore.kernels.folding import INFER_FOLD_ELEMENTS, INFER_FOLD_LIMITS, evaluate, fold_kernel, may_fold
from onnxcore.kernels.registry import KernelSet
from onnxcore.proto.messages import AttributeProto, NodeProto, TensorProto
from onnxcore.types import to_array

__all__ = [
    "MAX_VALUE_ELEMENTS",
    "LazyValue",
    "PendingFold",
    "dims_shape",
    "fold",
    "initializer_value",
    "small_shape",
    "small_value",
]

# Values kept: tensors of at most this many elements (shape tensors, scales, small constants).
MAX_VALUE_ELEMENTS = 4096


def small_value(a: Any) -> np.ndarray | None:
    """``a`` when it is a numeric array small enough to keep, else None."""
    if isinstance(a, np.ndarray) and a.size <= MAX_VALUE_ELEMENTS and a.dtype.kind in "biuf":
        return a
    return None


def small_shape(s: ShapeT | None) -> bool:
    """Whether a tensor of shape ``s`` (its fixed extents) is small enough for its value to be kept."""
    return s is not None and math.prod(d for d in s if isinstance(d, int)) <= MAX_VALUE_ELEMENTS


def fold(
    node: NodeProto,
    domain: str,
    version: int,
    schema: OpSchema | None,
    in_values: Sequence[Any],
    attrs: dict[str, AttributeProto],
    status: str = "schema",
    custom_ops: KernelSet | None = None,
) -> tuple[list[ShapeT | None], dict[int, np.ndarray]] | None:
    """Evaluate a node whose inputs are all known small tensors with its kernel, under tight limits.

    The folding rule is the plan's (:mod:`onnxcore.kernels.folding`): what may fold, the kernel a session chooses
    (:func:`~onnxcore.kernels.folding.fold_kernel`: from ``custom_ops``, a session's, first, then the process-wide
    registry; a node of a custom domain, ``status`` ``"custom"``, folds with the kernel its domain binds to, Clause
    16.1), evaluated under :data:`~onnxcore.kernels.folding.INFER_FOLD_LIMITS`. A node evaluated through
    its function body is left to the walk, which enters the body.

    Returns:
        The output shapes and the small values, or None when the node is not folded (no kernel, a kernel that
        needs a context, an input not known, a result too large, or any failure: folding never raises).
    """
    if not may_fold(node.op_type, node.attribute):
        return None
    values = [resolve(v) for v in in_values]
    for n, v in zip(node.input, values):
        if n and v is None:
            return None
    kdef = fold_kernel(domain, node.op_type, version, status, schema, custom_ops)
    if kdef is None:
        return None
    try:
        kw = {name: attribute_value(a) for name, a in attrs.items()}
    except Exception:
        return None
    args = [v if n else None for n, v in zip(node.input, values)]
    results = evaluate(kdef.fn, args, kw, INFER_FOLD_LIMITS)
    if results is None:
        return None
    # A kernel may give a numpy scalar (np.take with a scalar index does): it is a rank-0 tensor.
    results = tuple(np.asarray(r) if isinstance(r, np.generic) else r for r in results)
    shapes: list[ShapeT | None] = []
    kept: dict[int, np.ndarray] = {}
    for k, r in enumerate(results):
        if not isinstance(r, np.ndarray):
            shapes.append(None)
            continue
        if r.size > INFER_FOLD_ELEMENTS:
            return None
        shapes.append(tuple(int(d) for d in r.shape))
        v = small_value(r)
        if v is not None:
            kept[k] = v
    return shapes, kept


class PendingFold:
    """A node whose inputs are all known, evaluated the first time one of its outputs' values is asked for."""

    __slots__ = ("args", "done", "results")

    def __init__(
        self,
        node: NodeProto,
        domain: str,
        version: int,
        schema: OpSchema | None,
        in_values: Sequence[Any],
        attrs: dict[str, AttributeProto],
        custom_ops: KernelSet | None = None,
    ) -> None:
        self.args: tuple[Any, ...] = (node, domain, version, schema, in_values, attrs, "schema", custom_ops)
        self.done = False
        self.results: dict[int, np.ndarray] = {}

    def value(self, k: int) -> np.ndarray | None:
        """Output ``k``'s value (the node evaluated on first request), or None."""
        if not self.done:
            self.done = True
            folded = fold(*self.args)
            if folded is not None:
                self.results = folded[1]
            self.args = ()
        return self.results.get(k)


class LazyValue:
    """Output ``k`` of a :class:`PendingFold`: a value known to exist, computed on demand."""

    __slots__ = ("k", "pending")

    def __init__(self, pending: PendingFold, k: int) -> None:
        self.pending = pending
        self.k = k

    def get(self) -> np.ndarray | None:
        """The value, or None when the evaluation fails."""
        return self.pending.value(self.k)


def dims_shape(dims: Sequence[int]) -> ShapeT | None:
    """A tensor's stated dims as a shape; None when one is negative (reported on its own, Clause 6.5.1)."""
    out = tuple(int(d) for d in dims)
    return None if any(d < 0 for d in out) else out


class _InitializerValue:
    """The contents of a small numeric initializer stored inline, decoded when a rule first asks for them."""

    __slots__ = ("tensor", "value")

    def __init__(self, tensor: Any) -> None:
        self.tensor: Any = tensor
        self.value: np.ndarray | None = None

    def get(self) -> np.ndarray | None:
        if self.tensor is not None:
            try:
                self.value = small_value(to_array(self.tensor))
            except Exception:
                self.value = None
            self.tensor = None
        return self.value


def initializer_value(t: TensorProto) -> _InitializerValue | None:
    """A small numeric initializer stored inline, to be read on demand (weights and external data never are)."""
    count = 1
    for d in t.dims:
        if d < 0:
            return None
        count *= int(d)
    if count > MAX_VALUE_ELEMENTS or t.data_location == TensorProto.DataLocation.EXTERNAL:
        return None
    return _InitializerValue(t)
