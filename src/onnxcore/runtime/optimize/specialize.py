"""Plans specialised to the input shapes of a run: which shape computations those shapes decide (Clause 8.2).

Exporters write a model's shape arithmetic into the graph (``Shape -> Gather -> Unsqueeze -> Concat -> Reshape``,
``ConstantOfShape``, ``Range``), evaluated on every run although, for given input shapes, it gives the same values
each time. A plan made for one set of input shapes (see :meth:`onnxcore.runtime.plan.GraphIR.plan`, ``known``)
takes the ``Shape`` and ``Size`` nodes whose input's shape those input shapes decide as constants, and constant
folding then removes everything computed from them alone.

Which shapes the input shapes decide is found conservatively, without evaluating anything: a value's shape is
decided when it is a constant or a fed input, or when its node is one whose output shapes follow from its input
shapes and attributes alone (:data:`SHAPE_FROM_SHAPES`) with the inputs that steer the shape (a Reshape's target,
a Slice's bounds, ...) decided in value; a value is decided in value when it is a constant, the ``Shape`` or
``Size`` of a value whose shape is decided, or the output of a deterministic node reading decided values only.
An operator outside the table (NonZero, Loop, a custom one...) decides nothing about its outputs' shapes, so a
``Shape`` of them stays a run-time computation.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from onnxcore.kernels.registry import NO_FOLD, NONDETERMINISTIC
from onnxcore.runtime.step import PlanNode

__all__ = ["SHAPE_FROM_SHAPES", "decided_shape_nodes", "has_shape_nodes"]

_REDUCE = ("ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin")
_REDUCE2 = ("ReduceProd", "ReduceSum", "ReduceSumSquare")
_SAME_OR_BROADCAST = (
    "Abs", "Acos", "Acosh", "Add", "And", "Asin", "Asinh", "Atan", "Atanh", "BitShift", "BitwiseAnd", "BitwiseNot",
    "BitwiseOr", "BitwiseXor", "Cast", "CastLike", "Ceil", "Celu", "Clip", "Cos", "Cosh", "CumSum", "Div", "Elu",
    "Equal", "Erf", "Exp", "Floor", "Gelu", "Greater", "GreaterOrEqual", "HardSigmoid", "HardSwish", "Hardmax",
    "Identity", "IsInf", "IsNaN", "LeakyRelu", "Less", "LessOrEqual", "Log", "LogSoftmax", "Max", "Mean", "Min",
    "Mish", "Mod", "Mul", "Neg", "Not", "Or", "PRelu", "Pow", "Reciprocal", "Relu", "Round", "Selu", "Sigmoid",
    "Sign", "Sin", "Sinh", "Softmax", "Softplus", "Softsign", "Sqrt", "Sub", "Sum", "Tan", "Tanh", "ThresholdedRelu",
    "Trilu", "Where", "Xor",
)  # fmt: skip
_FROM_SHAPES = (
    "ArgMax", "ArgMin", "AveragePool", "BatchNormalization", "Concat", "Conv", "ConvTranspose", "DepthToSpace",
    "Einsum", "Flatten", "Gather", "GatherElements", "GatherND", "Gemm", "GlobalAveragePool", "GlobalMaxPool",
    "GroupNormalization", "InstanceNormalization", "LayerNormalization", "LpNormalization", "LRN", "MatMul",
    "MaxPool", "MeanVarianceNormalization", "RMSNormalization", "Shape", "Size", "SpaceToDepth", "Transpose",
    "Dropout",
)  # fmt: skip

SHAPE_FROM_SHAPES: dict[str, frozenset[int]] = {
    **{op: frozenset() for op in (*_SAME_OR_BROADCAST, *_FROM_SHAPES)},
    **{op: frozenset({1}) for op in (*_REDUCE, *_REDUCE2)},
    "Reshape": frozenset({1}),
    "Expand": frozenset({1}),
    "Tile": frozenset({1}),
    "Unsqueeze": frozenset({1}),
    "Squeeze": frozenset({1}),
    "Split": frozenset({1}),
    "Slice": frozenset({1, 2, 3, 4}),
    "Pad": frozenset({1, 3}),
    "ConstantOfShape": frozenset({0}),
    "Range": frozenset({0, 1, 2}),
    "OneHot": frozenset({1}),
    "TopK": frozenset({1}),
    "Resize": frozenset({1, 2, 3}),
}
"""Operators (default domain) whose output shapes follow from their input shapes and attributes, with the inputs
whose values steer them (those must be decided in value too)."""


def _default_domain(bn: PlanNode) -> bool:
    return bn.node.domain in ("", "ai.onnx")


def has_shape_nodes(nodes: Sequence[PlanNode]) -> bool:
    """Whether a specialised plan could fold anything: some node reads a shape (``Shape`` or ``Size``)."""
    return any(bn.node.op_type in ("Shape", "Size") and _default_domain(bn) for bn in nodes)


def decided_shape_nodes(nodes: Sequence[PlanNode], constants: Collection[str], fed: Collection[str]) -> list[int]:
    """Indices of the ``Shape`` and ``Size`` nodes whose input's shape is decided by the shapes of the ``fed``
    inputs (``constants``: values that are the same on every run)."""
    shaped: set[str] = set(constants) | set(fed)  # shape decided
    valued: set[str] = set(constants)  # value decided
    found: list[int] = []
    for k, bn in enumerate(nodes):
        node = bn.node
        op = node.op_type
        outs = [o for o in bn.outputs if o]
        if bn.call is None or not outs:
            continue
        ins = [n for n in bn.inputs if n]
        subgraphs = any(a.g is not None or a.graphs for a in node.attribute)
        # A custom domain's operator or a model-local function may draw random numbers: never decided.
        deterministic = _default_domain(bn) and not bn.outer and op not in NONDETERMINISTIC and not subgraphs
        if op in ("Shape", "Size") and _default_domain(bn) and ins and ins[0] in shaped:
            found.append(k)
            valued.update(outs)
            shaped.update(outs)
            continue
        if deterministic and op not in NO_FOLD and all(n in valued for n in ins) and not bn.outer:
            valued.update(outs)
            shaped.update(outs)
            continue
        steer = SHAPE_FROM_SHAPES.get(op) if _default_domain(bn) and not bn.outer else None
        if steer is None:
            continue
        if all(n in shaped for n in ins) and all(
            j >= len(bn.inputs) or not bn.inputs[j] or bn.inputs[j] in valued for j in steer
        ):
            shaped.update(outs)
    return found


def shape_signature(feeds: Mapping[str, Any]) -> tuple[Any, ...] | None:
    """The identity of a run's input shapes (names, shapes, element types), or None when some feed is not a
    tensor (a sequence, a map, an optional): such runs use the general plan."""
    sig = []
    for name in sorted(feeds):
        v = feeds[name]
        shape = getattr(v, "shape", None)
        dtype = getattr(v, "dtype", None)
        if shape is None or dtype is None or isinstance(v, list | dict):
            return None
        sig.append((name, tuple(shape), str(dtype)))
    return tuple(sig)
