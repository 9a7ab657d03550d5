"""The plan-time rewrites as one declared pipeline (Clause 8.2): an ordered list of :class:`Rewrite`, each with a
name (its switch), one contract (``apply(graph) -> changed``) and declared pre- and postconditions, in the manner of
onnx-ir's pass infrastructure (a pass says what it requires of its input and what it ensures of its output).

Every plan runs the same pipeline (:class:`onnxcore.runtime.plan.Plan`; a plan specialised to input shapes too,
with their shape arithmetic folded first); ``Session(..., disabled_rewrites=...)`` switches rewrites off by name and
:meth:`onnxcore.Session.fired_rewrites` lists those that changed its plan. :func:`disabled_for` reads onnxruntime's
``graph_optimization_level`` and ``disabled_optimizers`` into the names to switch off.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass

from onnxcore.errors import OnnxCoreError
from onnxcore.runtime.optimize.affine import fuse_affine_chains
from onnxcore.runtime.optimize.chains import fuse_elementwise_chains
from onnxcore.runtime.optimize.conv1d import fast_conv1d
from onnxcore.runtime.optimize.cse import merge_repeats
from onnxcore.runtime.optimize.fold import fold_constants
from onnxcore.runtime.optimize.forests import join_forests
from onnxcore.runtime.optimize.fuse import (
    fuse_conv_chains,
    fuse_relu,
    measure_conv_paths,
    prepack_gemm,
    use_winograd,
)
from onnxcore.runtime.optimize.graph import PlanGraph
from onnxcore.runtime.optimize.lanes import stack_lanes
from onnxcore.runtime.optimize.linear import fuse_linear
from onnxcore.runtime.optimize.noops import drop_noops
from onnxcore.runtime.optimize.patterns import fuse_attention, fuse_patterns
from onnxcore.runtime.optimize.preactivation import flatten_concats, fuse_preactivation
from onnxcore.runtime.optimize.prepare import prepare_with_constants
from onnxcore.runtime.optimize.reorder import project_before_pooling
from onnxcore.runtime.optimize.rotary import fuse_rotary
from onnxcore.runtime.optimize.rows import fast_layer_norms
from onnxcore.runtime.optimize.scan import batch_scans
from onnxcore.runtime.optimize.shapeops import fast_shape_ops, fuse_rotate_half
from onnxcore.runtime.step import PlanNode

__all__ = [
    "PIPELINE",
    "REWRITE_NAMES",
    "Condition",
    "ConditionError",
    "Rewrite",
    "check_conditions",
    "disabled_for",
    "run_pipeline",
]


class ConditionError(OnnxCoreError, AssertionError):
    """A rewrite's declared precondition or postcondition does not hold (a defect of the rewrite or its order)."""


@dataclass(frozen=True)
class Condition:
    """A property of a plan graph a rewrite requires or ensures: a name (for messages) and its test."""

    name: str
    holds: Callable[[PlanGraph], bool]


def _bound(graph: PlanGraph) -> bool:
    return all(bn.call is not None for bn in graph.nodes)


def _closed(graph: PlanGraph) -> bool:
    """Every name a node reads is made by an earlier node (or is the alias of a name it makes), a constant, or one of
    the graph's sources (its inputs and what it reads from an enclosing scope); every output is made too."""
    made = set(graph.sources) | set(graph.const)
    aliased: dict[str, list[str]] = {}
    for alias, target in graph.aliases.items():
        aliased.setdefault(target, []).append(alias)
    for bn in graph.nodes:
        if any(n and n not in made for n in (*bn.inputs, *bn.outer)):
            return False
        for o in bn.outputs:
            if o:
                made.add(o)
                made.update(aliased.get(o, ()))  # an alias is made with its target
    return all(o in made for o in graph.outputs)


def _as_written(graph: PlanGraph) -> bool:
    return not any(bn.step_kernel for bn in graph.nodes)


BOUND = Condition("every node bound to what evaluates it", _bound)
CLOSED = Condition("every name read is made before (or a constant, or a source), every output made", _closed)
AS_WRITTEN = Condition("no node is a fused step yet (the nodes as the model writes them)", _as_written)

# Whether apply() tests the conditions (tests switch it on; a plan made at run time, per input shape, pays nothing).
_CHECK = [False]


class check_conditions:
    """Within ``with check_conditions():`` every rewrite tests its declared conditions before and after it runs,
    raising :class:`ConditionError` where one does not hold."""

    def __enter__(self) -> None:
        self._old = _CHECK[0]
        _CHECK[0] = True

    def __exit__(self, *exc: object) -> None:
        _CHECK[0] = self._old


@dataclass(frozen=True)
class Rewrite:
    """One plan-time rewrite (Clause 8.2).

    Attributes:
        name: Its switch: the name ``disabled_rewrites`` and :meth:`onnxcore.Session.fired_rewrites` use.
        run: The rewrite: reads the plan graph (its nodes, constants, outputs and indices), may add constants, and
            returns the new node list.
        level: The onnxruntime ``graph_optimization_level`` from which it runs (1 basic, 2 extended, 99 all).
        requires: What it requires of the graph it is given.
        ensures: What it ensures of the graph it leaves.
    """

    name: str
    run: Callable[[PlanGraph], list[PlanNode]]
    level: int = 2
    requires: tuple[Condition, ...] = (BOUND, CLOSED)
    ensures: tuple[Condition, ...] = (BOUND, CLOSED)

    def apply(self, graph: PlanGraph) -> bool:
        """Run the rewrite on ``graph`` in place; whether it changed the graph (its nodes or its constants)."""
        if _CHECK[0]:
            self._check(graph, self.requires, "precondition")
        n_added, n_aliases = len(graph.added), len(graph.aliases)
        changed = graph.set_nodes(self.run(graph))
        changed = changed or len(graph.added) != n_added or len(graph.aliases) != n_aliases
        if _CHECK[0]:
            self._check(graph, self.ensures, "postcondition")
        return changed

    def _check(self, graph: PlanGraph, conditions: tuple[Condition, ...], kind: str) -> None:
        for c in conditions:
            if not c.holds(graph):
                raise ConditionError(f"plan rewrite {self.name}: {kind} does not hold: {c.name}")


_FIRST = (BOUND, CLOSED, AS_WRITTEN)

PIPELINE: tuple[Rewrite, ...] = (
    # Basic (onnxruntime's level 1): values computed once, nodes that compute nothing (their kernels prepared with
    # their constants comes last).
    Rewrite("fold_constants", fold_constants, 1, requires=_FIRST),
    Rewrite("drop_noops", drop_noops, 1, requires=_FIRST),
    # Extended: what exporters write for one operator, then fusions into convolutions and products.
    Rewrite("fuse_patterns", fuse_patterns),
    Rewrite("fuse_attention", fuse_attention),
    Rewrite("fuse_linear", fuse_linear),
    Rewrite("fuse_conv_chains", fuse_conv_chains),
    Rewrite("prepack_gemm", prepack_gemm, 99),
    Rewrite("fuse_affine_chains", fuse_affine_chains),
    Rewrite("flatten_concats", flatten_concats),
    Rewrite("fuse_preactivation", fuse_preactivation),
    Rewrite("fuse_relu", fuse_relu),
    Rewrite("project_before_pooling", project_before_pooling),
    # All (level 99): kernels chosen for the data's layout and the per-node overhead of small tensors.
    Rewrite("measure_conv_paths", measure_conv_paths, 99),
    Rewrite("use_winograd", use_winograd, 99),
    Rewrite("batch_scans", batch_scans, 99),
    Rewrite("fast_shape_ops", fast_shape_ops, 99),
    Rewrite("fuse_rotate_half", fuse_rotate_half, 99),
    Rewrite("fuse_rotary", fuse_rotary, 99),
    Rewrite("fast_layer_norms", fast_layer_norms, 99),
    Rewrite("fast_conv1d", fast_conv1d, 99),
    Rewrite("fuse_elementwise_chains", fuse_elementwise_chains, 99),
    # Basic again, but last: repeats of one computation evaluated once, over what the fusions left (their
    # fused steps included).
    Rewrite("merge_repeats", merge_repeats, 1),
    # All again, after the repeats are merged: tree ensembles that read one value (an isolation forest's trees each
    # read their own Gather of the same columns until then).
    Rewrite("join_forests", join_forests, 99),
    # Then isomorphic sibling nodes (a converter's chain per feature, class or member) as one step per group on
    # stacked operands: after the forests are joined, whose outputs the chains read.
    Rewrite("stack_lanes", stack_lanes, 99),
    # Basic, last of all: the kernels left as the nodes' own prepared with their constant inputs (MatMulNBits'
    # weights dequantized once, a binary operator's constant operand shaped once): after every fusion and grouping,
    # which recognise a node by its kernel, so that a prepared node does not escape them.
    Rewrite("prepare_with_constants", prepare_with_constants, 1),
)
"""The rewrites, in the order every plan runs them."""

REWRITE_NAMES: frozenset[str] = frozenset(r.name for r in PIPELINE)


def run_pipeline(graph: PlanGraph, disabled: Collection[str] = ()) -> list[str]:
    """Apply every rewrite of :data:`PIPELINE` not in ``disabled`` to ``graph``, in order; the names of those that
    changed it."""
    fired: list[str] = []
    for rewrite in PIPELINE:
        if rewrite.name not in disabled and rewrite.apply(graph):
            fired.append(rewrite.name)
    return fired


# onnxruntime's names for its optimizers that do what one of ours does (SessionOptions' disabled_optimizers).
_ORT_NAMES: dict[str, str] = {
    "ConstantFolding": "fold_constants",
    "CommonSubexpressionElimination": "merge_repeats",
    "EliminateIdentity": "drop_noops",
    "GeluFusion": "fuse_patterns",
    "LayerNormFusion": "fuse_patterns",
    "SimplifiedLayerNormFusion": "fuse_patterns",
    "AttentionFusion": "fuse_attention",
    "MatMulAddFusion": "fuse_linear",
    "ConvBNFusion": "fuse_conv_chains",
    "ConvMulFusion": "fuse_conv_chains",
    "ConvAddFusion": "fuse_conv_chains",
    "ConvActivationFusion": "fuse_conv_chains",
    "RotaryEmbeddingFusion": "fuse_rotary",
}


def disabled_for(level: int = 99, disabled_optimizers: Iterable[str] = ()) -> frozenset[str]:
    """The rewrites to switch off for onnxruntime's ``graph_optimization_level`` (0 none, 1 basic, 2 extended, 99
    all) and ``disabled_optimizers`` (our rewrite names, or onnxruntime's names of the optimizers one of ours stands
    for; other onnxruntime names have no counterpart here and change nothing)."""
    off = {r.name for r in PIPELINE if r.level > level}
    for name in disabled_optimizers:
        if name in REWRITE_NAMES:
            off.add(name)
        elif name in _ORT_NAMES:
            off.add(_ORT_NAMES[name])
    return frozenset(off)
