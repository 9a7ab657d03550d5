"""The evaluation session (Clause 8), shaped like onnxruntime's ``InferenceSession``.

Construction loads the model, binds it once (:func:`onnxcore.graph.bind`: every node of the graph, of its
subgraphs and of the function bodies it calls), validates it on that bound model (Clause 15.5: a consumer
validates before it evaluates), compiles its plan from the same bound model, and refuses the model at
once, naming every operator it cannot evaluate (Clause 4.4, 16.1).
``run`` checks the feeds, evaluates the compiled plan and hands back the outputs as the caller's own arrays
(:mod:`onnxcore.runtime.results`).
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from onnxcore.errors import (
    InputError,
    LimitError,
    UnsupportedOperatorError,
    ValidationError,
    ValidationWarning,
)
from onnxcore.external.spill import in_lean_memory
from onnxcore.graph.bound import BoundModel, bind
from onnxcore.io import load
from onnxcore.kernels.fused import FUSED_DOMAIN
from onnxcore.kernels.registry import KernelSet
from onnxcore.kernels.threads import active_threads, enter_threads, exit_threads, machine_threads, threads_in_effect
from onnxcore.limits import (
    DEFAULT_LIMITS,
    NESTING_REFUSAL,
    Limits,
    RunControl,
    collection_paused,
    enter_run,
    exit_run,
    limits_in_effect,
    run_control_in_effect,
)
from onnxcore.proto import ModelProto, TypeProto
from onnxcore.proto.bridge import as_message, is_onnx_message
from onnxcore.runtime.compile import CompileEnv, compile_graph
from onnxcore.runtime.fastrun import FeedChecks, IgnoreFloatErrors, OutputShapes
from onnxcore.runtime.feeds import check_feed
from onnxcore.runtime.optimize.specialize import decided_shape_nodes, has_shape_nodes, shape_signature
from onnxcore.runtime.plan import GraphIR, Plan
from onnxcore.runtime.results import outputs_for_caller, value_for_caller, warn_on_shapes
from onnxcore.runtime.seeding import session_rng
from onnxcore.types import type_from_proto
from onnxcore.types.valuetypes import declared_shape
from onnxcore.validate.checker import check_context
from onnxcore.validate.report import Finding, Report

__all__ = ["MAX_SHAPE_PLANS", "Session", "StepTime", "ValueDescription"]

MAX_SHAPE_PLANS = 8
"""Input-shape signatures a session keeps specialised plans for (see ``Session._specialised``)."""

_PROFILE_PLAN_CHANGES = 4
# New plans Session.profile runs untimed before it times whichever comes (the general plan, then the specialised
# one: two).


@dataclass(frozen=True, slots=True)
class StepTime:
    """The time one step of a session's plan took (:meth:`Session.profile`).

    Attributes:
        index: The position of the step's node in the graph.
        op_type: Its operator.
        domain: Its domain (``""``: ai.onnx).
        name: Its name (often empty).
        fused: ``(index, op_type, name)`` of the nodes fused into this step at plan time (Clause 8.2): its
            time is theirs too.
        seconds: Wall time per run, the mean over the timed runs.
        kernel: The fused kernel a plan-time rewrite bound the step to (``"onnxcore.fused::Linear"``, say; the
            kernels of ``onnxcore.kernels.fused``), or ``""`` when the step runs the node's own kernel or body.
    """

    index: int
    op_type: str
    domain: str
    name: str
    fused: tuple[tuple[int, str, str], ...]
    seconds: float
    kernel: str = ""


class ValueDescription:
    """A graph input or output as the session sees it.

    Attributes:
        name: The value's name.
        type: Its value type (``onnxcore.types.type_from_proto`` of the declaration), or None.
        type_proto: The declared ``TypeProto`` (None when undeclared).
        has_default: For an input: whether an initializer supplies its value when it is not fed
            (Clause 7.2). Always False for outputs.
    """

    __slots__ = ("has_default", "name", "type", "type_proto")

    def __init__(self, name: str, type_proto: TypeProto | None, has_default: bool = False) -> None:
        self.name = name
        self.type_proto = type_proto
        self.has_default = has_default
        self.type: Any = None
        if type_proto is not None:
            self.type = type_from_proto(type_proto)

    def __repr__(self) -> str:
        extra = ", has_default=True" if self.has_default else ""
        return f"ValueDescription(name={self.name!r}, type={self.type!r}{extra})"


def _load(model_or_path: Any) -> tuple[ModelProto, Path | None]:
    if isinstance(model_or_path, ModelProto):
        return model_or_path, None
    if isinstance(model_or_path, bytes | bytearray | memoryview):
        return load(bytes(model_or_path)), None
    if isinstance(model_or_path, str | os.PathLike):
        path = Path(model_or_path)
        return load(path), path.resolve().parent
    if is_onnx_message(model_or_path):  # onnx's ModelProto, by its octets; another of its messages is refused
        return as_message(model_or_path, ModelProto, "Session"), None
    serialize = getattr(model_or_path, "SerializeToString", None)
    if callable(serialize):  # another object that gives a model's octets
        return load(bytes(serialize())), None
    raise TypeError(f"Session: expected a ModelProto, bytes or a path, got {type(model_or_path).__name__}")


class Session:
    """Evaluates one model.

    A session may be run from several threads at once: each run has its own values, kernels keep their
    temporaries in per-thread buffers, and the caches a plan keeps per input shape are replaced whole.

    Args:
        model_or_path: A ``ModelProto``, the model's octets, a path to a model file, or any
            object with ``SerializeToString()`` (such as ``onnx.ModelProto``).
        limits: Resource limits (Clause 15.4); ``DEFAULT_LIMITS`` when None.
        check: Validate the model first (Clause 15.5). Turn off only for models already checked.
        custom_ops: Kernels only this session sees (:class:`onnxcore.kernels.KernelSet`), read once here: they
            evaluate operators of custom domains, and at the same (domain, op_type, since_version) replace a
            process-wide kernel, a built-in one too, in this session alone.
        threads: Threads a kernel may split its work over during a run (onnxruntime's ``intra_op_num_threads``;
            :mod:`onnxcore.kernels.threads`): 1 (the default) runs every kernel on the calling thread; 0 uses the
            CPUs this process may run on. Results are the same for any number of threads. BLAS keeps its own
            threads (set them with threadpoolctl or ``OPENBLAS_NUM_THREADS``). The default is 1, not the CPUs as
            in onnxruntime: beside BLAS's own threads, splitting did not pay on the measured 2-core machine
            (CHANGELOG.md, 0.2.0, "Threads").
        tolerate: With ``check``, a predicate over the error findings: those it accepts do not refuse the model
            but are issued as one :class:`~onnxcore.errors.ValidationWarning` naming their codes (the onnxruntime
            façade's lenient default, for findings that leave evaluation possible and safe). None (the default):
            every error refuses the model.
        disabled_rewrites: Plan-time rewrites (Clause 8.2) this session's plans leave out, by name
            (:data:`onnxcore.runtime.optimize.pipeline.PIPELINE`; :meth:`fired_rewrites` lists those that changed
            the plan). A name that is no rewrite is refused.

    Raises:
        ValidationError: the model has errors (Clause 10).
        UnsupportedOperatorError: some nodes have neither a kernel nor a function body;
            ``.operators`` lists every (domain, op_type, version) at once.
        LimitError: the model exceeds a limit (subgraph nesting, for instance).

    Attributes:
        inputs: Every declared graph input, as :class:`ValueDescription`.
        outputs: Every declared graph output, as :class:`ValueDescription`.
    """

    def __init__(
        self,
        model_or_path: Any,
        *,
        limits: Limits | None = None,
        check: bool = True,
        custom_ops: KernelSet | None = None,
        threads: int = 1,
        tolerate: Callable[[Finding], bool] | None = None,
        disabled_rewrites: Collection[str] = (),
    ) -> None:
        if isinstance(threads, bool) or not isinstance(threads, int):
            raise TypeError(f"Session: threads must be an integer (0: the machine's CPUs), got {threads!r}")
        if threads < 0:
            raise ValueError(f"Session: threads must be 0 (the machine's CPUs) or more, got {threads}")
        self._threads = threads if threads > 0 else machine_threads()
        self._limits = limits if limits is not None else DEFAULT_LIMITS
        with collection_paused():  # loading, binding, checking and planning make objects per node and free few
            self._make(model_or_path, check, custom_ops, tolerate, disabled_rewrites)

    def _make(
        self,
        model_or_path: Any,
        check: bool,
        custom_ops: KernelSet | None,
        tolerate: Callable[[Finding], bool] | None,
        disabled_rewrites: Collection[str],
    ) -> None:
        model, base_dir = _load(model_or_path)
        self._model = model
        bound = _bind_and_check(model, self._limits, base_dir, check, tolerate, custom_ops)
        graph = model.graph
        main = bound.main()
        if graph is None or main is None:
            raise ValidationError("the model has no graph (Clause 5.3.1)")
        env = CompileEnv(
            bound,
            base_dir,
            session_rng(),
            validated=check,
            custom_ops=custom_ops,
            disabled_rewrites=frozenset(disabled_rewrites),
        )
        try:
            # Plans fold constants by running kernels: under this session's limits, as its runs are.
            with limits_in_effect(self._limits):
                ir = compile_graph(env, graph, main, 0, label=f"graph {graph.name!r}")
        except RecursionError:  # only reachable with max_nesting_depth=None
            raise LimitError(
                f"subgraphs nest deeper than this interpreter can follow ({NESTING_REFUSAL}, Clause 15.4)"
            ) from None
        if env.unsupported:
            ops = ", ".join(f"{d or 'ai.onnx'}::{op}-{v}" for d, op, v in env.unsupported)
            raise UnsupportedOperatorError(
                f"the model uses operators with neither a kernel nor a function body (Clause 4.4): {ops}",
                list(env.unsupported),
            )
        if ir.free_names:
            raise ValidationError(f"values {ir.free_names} are used but never defined (Clause 7.5)")
        # In lean memory (the optimizer's proof) a run drops each mapped weight's pages after its last reader.
        ir.release_mapped = in_lean_memory()
        self._ir: GraphIR = ir
        init_names = set(ir.inits)
        self.inputs = [ValueDescription(vi.name, vi.type, vi.name in init_names) for vi in graph.input]
        self.outputs = [ValueDescription(vi.name, vi.type) for vi in graph.output]
        self._input_by_name = {d.name: d for d in self.inputs}
        self._output_names = [d.name for d in self.outputs]
        # Declared output shapes with a fixed extent somewhere: a run's result is compared with them (cheaply).
        self._declared_outputs = {
            d.name: shape
            for d in self.outputs
            if (shape := declared_shape(d.type_proto)) is not None and any(isinstance(e, int) for e in shape)
        }
        self._constants = init_names - set(self._input_by_name)
        # Inputs the caller must feed; an input with an initializer that is not fed keeps it as a constant.
        self._fed = frozenset(n for n in self._input_by_name if n not in init_names)
        # Every feed is checked against its declared rank, so the plan may rely on those ranks.
        self._ranks = {d.name: r for d in self.inputs if (r := _declared_rank(d.type_proto)) is not None}
        with limits_in_effect(self._limits):
            self._plan = ir.plan(fed=self._fed, ranks=self._ranks)
        # Plans specialised to the input shapes of a run (optimize/specialize.py): made on a signature's second
        # run (a shape seen once, such as each step of a growing decoder cache, never pays for a plan).
        self._specialise = has_shape_nodes(ir.nodes)
        self._seen: dict[tuple[Any, ...], int] = {}
        self._shape_plans: dict[tuple[Any, ...], Plan] = {}
        self._decided: dict[frozenset[str], list[int]] = {}
        known = set(self._output_names) | set(ir.inits) | set(self._input_by_name)
        known.update(o for bn in ir.nodes for o in bn.outputs if o)
        self._known_names = frozenset(known)
        # The common case of a run (every output, the required inputs fed as arrays of their declared types),
        # checked and dispatched with a few comparisons (fastrun.py); anything else takes the general path.
        self._fast_feeds = FeedChecks([(d.name, d.type_proto) for d in self.inputs], self._fed, self._limits)
        # Whether a run given no timeout and no cancel test may take that path: the feeds' kinds allow the fast
        # check and the limits set no default deadline (a run with one is interpreted, checking between steps).
        self._plain_runs = self._fast_feeds.usable and self._limits.run_timeout is None
        # What a common-case run computes, by its output_names (None: every output); None for names the general
        # path refuses. Replaced whole when added to.
        self._fast_targets: dict[tuple[str, ...] | None, _FastTarget | None] = {
            None: _FastTarget(
                None, self._output_names, OutputShapes(self._declared_outputs, self._output_names), self._plan
            )
        }
        # Plans of the common case by output names and the feeds' shapes: specialised ones, or the general plan
        # when the feeds decide no shape computation. Replaced whole, as ``_shape_plans``.
        self._fast_plans: dict[tuple[Any, ...], Plan] = {}
        self._fp = IgnoreFloatErrors()

    @property
    def limits(self) -> Limits:
        """The session's resource limits."""
        return self._limits

    @property
    def threads(self) -> int:
        """The threads a kernel may use during this session's runs (``threads=0`` resolved to the CPU count)."""
        return self._threads

    @property
    def model(self) -> ModelProto:
        """The model this session evaluates, as loaded."""
        return self._model

    @property
    def bound_graph(self) -> GraphIR:
        """The main graph with its nodes bound and its initializers, as the session's plans are laid out from it
        (its nodes in graph order, before any plan-time folding or fusion)."""
        return self._ir

    def has_value(self, name: str) -> bool:
        """Whether ``name`` is a value of the main graph (an input, initializer, node output or graph output):
        a name :meth:`run` may be asked for."""
        return name in self._known_names

    def get_inputs(self) -> list[ValueDescription]:
        """The graph inputs (onnxruntime spelling of :attr:`inputs`)."""
        return self.inputs

    def get_outputs(self) -> list[ValueDescription]:
        """The graph outputs (onnxruntime spelling of :attr:`outputs`)."""
        return self.outputs

    def _check_feeds(self, feeds: Mapping[str, Any]) -> dict[str, Any]:
        if not isinstance(feeds, Mapping):
            raise InputError(f"feeds must be a dict of input name to value, got {type(feeds).__name__}")
        dims: dict[str, int] = {}
        out: dict[str, Any] = {}
        for name, value in feeds.items():
            desc = self._input_by_name.get(name)
            if desc is None:
                if name in self._constants:
                    raise InputError(
                        f"{name!r} is an initializer that is not a graph input: it cannot be fed (Clause 7.2)"
                    )
                raise InputError(f"{name!r} is not an input of the graph; inputs: {list(self._input_by_name)}")
            out[name] = check_feed(value, desc.type_proto, f"input {name!r}", dims)
        for desc in self.inputs:
            if desc.name in out or desc.has_default:
                continue
            tp = desc.type_proto
            if tp is not None and tp.which_oneof("value") == "optional_type":
                continue  # an absent optional value
            raise InputError(f"input {desc.name!r} is not fed")
        return out

    def run(
        self,
        output_names: Sequence[str] | None,
        feeds: Mapping[str, Any],
        *,
        intermediates: bool = False,
        timeout: float | None = None,
        cancel: Callable[[], bool] | None = None,
    ) -> Any:
        """Evaluate the model.

        Args:
            output_names: The outputs to compute, in the order to return them; None for every
                graph output. Only the nodes they depend on are evaluated (Clause 8.2).
            feeds: A value for each graph input by name. An input with an initializer may be
                omitted (its initializer is used) or fed (overriding it), Clause 7.2.
            intermediates: Also return every value the graph's nodes computed.
            timeout: Seconds the run may take; past them it stops (between two plan steps, or at the next
                iteration of a loop) with :class:`~onnxcore.RunTimeoutError`. None (the default): the session's
                ``Limits.run_timeout`` (no deadline unless the limits set one, as :meth:`Limits.untrusted` does).
            cancel: A callable polled at the same points, from the running thread; when it returns true the run
                stops with :class:`~onnxcore.RunCancelledError` (set a flag from another thread to cancel).

        Returns:
            A list of output values in the order of ``output_names``. With ``intermediates=True``,
            a pair ``(outputs, values)`` where ``values`` maps the name of every node output of the
            top-level graph (all nodes are evaluated in this mode) to its value.

        Raises:
            InputError: a feed of the wrong kind, element type, rank or extent, an unknown
                name, an initializer that is not an input, or a missing input.
            EvaluationError: a kernel failed. The message names the node (index, op type, name)
                and the dtype and shape of each input; the error also carries them as
                ``node_index``, ``node_name``, ``op_type``, ``domain`` and ``inputs`` (a list of
                ``(name, description)``), and is chained to the kernel's exception. When the
                step had other nodes fused into it at plan time (a BatchNormalization and Relu
                into a Conv, say), the message names them too, and ``fused_nodes`` lists them as
                ``(index, op_type, name)``; ``intermediates=True`` runs every node as written. A
                failure inside a subgraph or a function body is chained the same way, innermost
                last.
            LimitError: a limit of the session's ``Limits`` was exceeded while evaluating (loop
                iterations, or a tensor a kernel sizes from data or attributes: ConstantOfShape,
                Expand, Resize, Conv padding, ...), checked before anything is allocated; the
                message names the node.
            RunTimeoutError, RunCancelledError: see ``timeout`` and ``cancel``. A kernel call in progress is not
                interrupted (its work is bounded by the limits), so a run stops at most one kernel call late.
        """
        if (
            timeout is None
            and cancel is None
            and not intermediates
            and self._plain_runs
            and (output_names is None or type(output_names) is list)
            and (target := self._fast_targets[None] if output_names is None else self._fast_target(output_names))
            is not None
            and (shapes := self._fast_feeds.check(feeds)) is not None
        ):
            # The common case (no deadline, no cancellation: the session's limits set no run_timeout): the feeds
            # passed the precomputed checks (fastrun.FeedChecks), so they are what _check_feeds would return; the
            # run context is entered without context managers and the plan's compiled code called directly (no
            # run control to interpret under).
            tokens = enter_run(self._limits, None)
            # (a context variable set only when it differs: a session of one thread under the default sets none)
            threads = None if active_threads() == self._threads else enter_threads(self._threads)
            fp = self._fp.enter()
            try:
                if self._fast_feeds.strings:
                    feeds = self._fast_feeds.strings_as_bytes(feeds)
                plan = self._fast_plans.get((target.key, shapes)) if self._specialise else target.plan
                if plan is None:
                    plan = self._fast_plan(target, shapes, feeds)
                vals = _filled(plan, feeds)
                run = plan.compiled
                if run is not None:
                    run(vals)
                else:
                    plan.execute(vals)
            finally:
                IgnoreFloatErrors.leave(fp)
                if threads is not None:
                    exit_threads(threads)
                exit_run(tokens)
            outs = outputs_for_caller(plan, vals, feeds)
            if self._declared_outputs and not target.shapes.agree(outs):
                warn_on_shapes(plan, outs, self._declared_outputs)
            return outs
        if timeout is None:
            timeout = self._limits.run_timeout  # the session's default deadline (Limits.untrusted sets one)
        control = None if timeout is None and cancel is None else RunControl(timeout=timeout, cancel=cancel)
        # IEEE 754 results such as log(0) = -inf or 0/0 = NaN are results here, not events to warn about
        # (Clause 11.2); numpy's warnings are silenced once per run rather than in every kernel. Kernels that
        # size a tensor from data check it against this session's limits.
        with (
            limits_in_effect(self._limits),
            threads_in_effect(self._threads),
            run_control_in_effect(control),
            np.errstate(all="ignore"),
        ):
            plan, vals = self._prepare(output_names, feeds, intermediates)
            plan.execute(vals)
        outs = outputs_for_caller(plan, vals, feeds)
        if self._declared_outputs:
            warn_on_shapes(plan, outs, self._declared_outputs)
        if not intermediates:
            return outs
        values = {plan.names[s]: value_for_caller(vals[s], plan.names[s]) for s in plan.node_slots}
        return outs, values

    def profile(
        self, feeds: Mapping[str, Any], *, output_names: Sequence[str] | None = None, repeat: int = 3
    ) -> list[StepTime]:
        """Time each step of the plan :meth:`run` evaluates for these feeds.

        One untimed run first (caches and scratch buffers fill as in any first run), then ``repeat`` timed
        ones; steps are timed one by one with a wall clock, so their sum slightly exceeds a plain run's time.

        Args:
            feeds: As for :meth:`run`.
            output_names: As for :meth:`run`.
            repeat: Timed runs to average over (at least 1).

        Returns:
            One :class:`StepTime` per step, in evaluation order; ``sorted(..., key=lambda s: -s.seconds)``
            puts the costliest first.

        Raises:
            InputError: as :meth:`run`, or ``repeat`` below 1.
            EvaluationError, LimitError: as :meth:`run`.
        """
        if repeat < 1:
            raise InputError(f"profile: repeat must be at least 1, got {repeat}")
        self.run(output_names, feeds)
        # The plan timed is the one _prepare gives for these feeds, which may differ from the run's above and
        # change on its first calls (a plan specialised to the feeds' shapes is made on a signature's second run):
        # each new plan runs once untimed before it is timed, and only one plan's times are summed (step i of one
        # plan is not step i of another). A plan settles within a few calls; should it not, the last one is timed.
        total: list[float] = []
        timed: Plan | None = None
        done = changes = 0
        for _ in range(repeat + _PROFILE_PLAN_CHANGES):
            with limits_in_effect(self._limits), threads_in_effect(self._threads), np.errstate(all="ignore"):
                plan, vals = self._prepare(output_names, feeds, False)
                if plan is not timed:
                    timed, total, done = plan, [], 0
                    if changes < _PROFILE_PLAN_CHANGES:
                        changes += 1
                        plan.execute(vals)  # untimed: this plan's first-run costs (prepared kernels, caches)
                        continue
                times = plan.profile(vals)
            total = times if not total else [a + b for a, b in zip(total, times)]
            done += 1
            if done == repeat:
                break
        if not done:  # (the last call brought a new plan: its own run, timed)
            with limits_in_effect(self._limits), threads_in_effect(self._threads), np.errstate(all="ignore"):
                plan, vals = self._prepare(output_names, feeds, False)
                total, done = plan.profile(vals), 1
        return _step_times(plan, [t / done for t in total])

    def fired_rewrites(self, output_names: Sequence[str] | None = None) -> list[str]:
        """The plan-time rewrites (Clause 8.2) that changed the plan :meth:`run` evaluates for ``output_names`` (all
        outputs by default; an input with an initializer left to it), in pipeline order
        (:mod:`onnxcore.runtime.optimize.pipeline`); a plan specialised to a run's input shapes runs the same
        pipeline."""
        names = tuple(self._output_names if output_names is None else output_names)
        with limits_in_effect(self._limits):
            plan = self._ir.plan(names, fed=self._fed, ranks=self._ranks)
        return list(plan.fired)

    def run_profiled(
        self, output_names: Sequence[str] | None, feeds: Mapping[str, Any], *, as_written: bool = False
    ) -> tuple[list[Any], list[StepTime]]:
        """Evaluate once, as :meth:`run` does, timing each step (the plan is interpreted, not compiled).

        Args:
            output_names: As for :meth:`run`.
            feeds: As for :meth:`run`.
            as_written: Evaluate every node as written (the plan of ``run(..., intermediates=True)``: no
                folding, fusion or reuse) rather than the optimised plan.

        Returns:
            ``(outputs, steps)``: the outputs as :meth:`run` returns them, and one :class:`StepTime` per step
            in evaluation order (``seconds`` is this run's time).

        Raises:
            InputError, EvaluationError, LimitError: as :meth:`run`.
        """
        with limits_in_effect(self._limits), threads_in_effect(self._threads), np.errstate(all="ignore"):
            plan, vals = self._prepare(output_names, feeds, as_written)
            times = plan.profile(vals)
        return outputs_for_caller(plan, vals, feeds), _step_times(plan, times)

    def _prepare(
        self, output_names: Sequence[str] | None, feeds: Mapping[str, Any], intermediates: bool
    ) -> tuple[Plan, list[Any]]:
        """The plan for these outputs and feeds, and its value slots with the feeds in place."""
        if isinstance(output_names, str | bytes):
            # A plain string is a sequence too: "probs" would be read as the names "p", "r", "o", ...
            raise InputError(f"output_names is a single string {output_names!r}; give a list: [{output_names!r}]")
        checked = self._check_feeds(feeds)
        names = self._output_names if output_names is None else list(output_names)
        bad = [] if output_names is None else [n for n in names if n not in self._known_names]
        if bad:
            raise InputError(f"unknown output name(s) {bad}; outputs: {self._output_names}")
        plan: Plan
        # An initializer the caller overrides is not a constant for this run (Clause 7.2).
        overridden = [n for n in checked if n in self._ir.inits]
        fed = self._fed if not overridden else self._fed.union(overridden)
        if intermediates:
            plan = self._ir.plan(names, keep_all=True, fed=fed)
        elif self._specialise and (spec := self._specialised(names, fed, checked)) is not None:
            plan = spec
        elif output_names is None and not overridden:
            plan = self._plan
        else:
            plan = self._ir.plan(names, fed=fed, ranks=self._ranks)
        return plan, _filled(plan, checked)

    def _fast_target(self, output_names: list[str] | None) -> _FastTarget | None:
        """What a common-case run with these ``output_names`` computes; None when the general path must decide
        (a name that is no value of the graph: it raises there)."""
        key = None if output_names is None else tuple(output_names)
        target = self._fast_targets.get(key, _UNSEEN)
        if target is not _UNSEEN:
            return target  # type: ignore[return-value]
        names = list(output_names or ())
        made: _FastTarget | None = None
        if all(type(n) is str and n in self._known_names for n in names):
            with limits_in_effect(self._limits):  # a plan folds constants by running kernels: under the limits
                plan = self._ir.plan(names, fed=self._fed, ranks=self._ranks)
            made = _FastTarget(key, names, OutputShapes(self._declared_outputs, names), plan)
        targets: dict[tuple[str, ...] | None, _FastTarget | None] = (
            dict(self._fast_targets) if len(self._fast_targets) < 64 else {None: self._fast_targets[None]}
        )
        targets[key] = made
        self._fast_targets = targets
        return made

    def _fast_plan(self, target: _FastTarget, shapes: tuple[tuple[int, ...], ...], feeds: Mapping[str, Any]) -> Plan:
        """The plan of a common-case run (``target``'s outputs, the required inputs fed) with feeds of these
        shapes: the specialised one once made (kept by output names and shapes), else the general plan."""
        spec = self._specialised(target.names, self._fed, dict(feeds))
        if spec is None:
            if self._decided.get(frozenset(feeds)) != []:
                return target.plan  # not made yet (a signature's first run)
            spec = target.plan  # these feeds decide no shape computation: the general plan, from now on
        plans = dict(self._fast_plans)
        while len(plans) >= 2 * MAX_SHAPE_PLANS:
            del plans[next(iter(plans))]
        plans[(target.key, shapes)] = spec
        self._fast_plans = plans
        return spec

    def _specialised(self, names: list[str], fed: frozenset[str], feeds: dict[str, Any]) -> Plan | None:
        """The plan specialised to these feeds' shapes, if one is made (on a signature's second run), else None.

        Its ``Shape`` and ``Size`` nodes whose input shapes the feeds decide hold the values of a probe: the
        plan of ``intermediates=True`` (every node as written) evaluated once on these feeds. At most
        :data:`MAX_SHAPE_PLANS` signatures keep plans; the oldest is dropped first.
        """
        sig = shape_signature(feeds)
        if sig is None:
            return None
        key = (tuple(names), fed, sig)
        plan = self._shape_plans.get(key)
        if plan is not None:
            return plan
        seen = self._seen.get(key, 0) + 1
        if len(self._seen) >= 4 * MAX_SHAPE_PLANS:
            self._seen = {}
        self._seen[key] = seen
        if seen < 2:
            return None
        ir = self._ir
        supplied = frozenset(feeds)
        decided = self._decided.get(supplied)
        if decided is None:  # which Shape nodes the feeds decide depends on their names only
            decided = decided_shape_nodes(ir.nodes, [n for n in ir.inits if n not in fed], supplied)
            self._decided[supplied] = decided
        if not decided:
            return None
        # The probe evaluates, as written, only the nodes the decided values need (not every node: a model may
        # hold large computations that no output needs, Clause 8), freeing each value after its last use.
        wanted = tuple(dict.fromkeys(o for k in decided for o in ir.nodes[k].outputs if o))
        probe = ir.plan(wanted, as_written=True, fed=fed)
        vals = _filled(probe, feeds)
        probe.execute(vals)
        slot = dict(zip(wanted, probe.output_slots))
        known: dict[str, Any] = {}
        for k in decided:
            for o in ir.nodes[k].outputs:
                v = vals[slot[o]] if o in slot else None
                if isinstance(v, np.ndarray):
                    v = v.copy()
                    v.flags.writeable = False
                    known[o] = v
        plan = ir.plan(names, fed=fed, ranks=self._ranks, known=known, signature=key)
        plans = dict(self._shape_plans)
        while len(plans) >= MAX_SHAPE_PLANS:
            oldest = next(iter(plans))
            del plans[oldest]
            ir.forget(oldest)
        plans[key] = plan
        self._shape_plans = plans  # replaced whole: a run in another thread keeps the dict it read
        return plan


_UNSEEN = object()


class _FastTarget:
    """What a common-case run computes for one ``output_names``: the names, their declared shapes and the general
    plan (``key``: the names as the session's cache keys them, None for every output)."""

    __slots__ = ("key", "names", "plan", "shapes")

    def __init__(self, key: tuple[str, ...] | None, names: list[str], shapes: OutputShapes, plan: Plan) -> None:
        self.key = key
        self.names = names
        self.shapes = shapes
        self.plan = plan


def _filled(plan: Plan, feeds: Mapping[str, Any]) -> list[Any]:
    """A copy of the plan's value slots with the feeds in place."""
    vals = plan.template.copy()
    slots = plan.input_slots
    for name, value in feeds.items():
        vals[slots[name]] = value
    return vals


def _bind_and_check(
    model: ModelProto,
    limits: Limits,
    base_dir: Path | None,
    check: bool,
    tolerate: Callable[[Finding], bool] | None = None,
    custom_ops: KernelSet | None = None,
) -> BoundModel:
    """Bind the model once (the validator and the compiler share the bound model); with ``check``, validate it
    first (Clause 15.5) and raise :class:`ValidationError` carrying the whole report if it has errors (save those
    ``tolerate`` accepts: one :class:`ValidationWarning` names them). Inference folds constants with the session's
    ``custom_ops`` as its plan will (one folding rule, :mod:`onnxcore.kernels.folding`)."""
    try:
        bound = bind(model, limits=limits)
    except Exception:
        if check:
            # A model too malformed to bind: the validator reports why (it survives what bind cannot).
            check_context(model, limits, base_dir=base_dir)[0].raise_for_errors()
        raise
    if check:
        report, _ctx = check_context(model, limits, base_dir=base_dir, bound=bound, custom_ops=custom_ops)
        if tolerate is not None:
            _warn_tolerated(report, tolerate)
        else:
            report.raise_for_errors()
    return bound


def _warn_tolerated(report: Report, tolerate: Callable[[Finding], bool]) -> None:
    """Refuse the model for the errors ``tolerate`` does not accept; warn once of those it does."""
    errors = report.errors
    refused = [f for f in errors if not tolerate(f)]
    if refused:
        Report([*refused, *report.warnings], report.source).raise_for_errors()
    if errors:
        codes = ", ".join(sorted({f.code for f in errors}))
        head = "; ".join(str(f) for f in errors[:3])
        more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
        warnings.warn(
            f"the model does not conform ({codes}); evaluated anyway, as onnxruntime does: {head}{more}",
            ValidationWarning,
            stacklevel=_caller_level(),
        )


_PACKAGE_DIR = str(Path(__file__).resolve().parent.parent) + os.sep


def _caller_level() -> int:
    """The ``stacklevel`` of the first caller outside onnxcore, seen from the function calling this one: a warning
    points at the user's line (``InferenceSession(...)`` or ``Session(...)``), however deep inside it was made."""
    level = 1
    frame = sys._getframe(1)
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
        level += 1
    return level


def _step_times(plan: Plan, seconds: Sequence[float]) -> list[StepTime]:
    """One :class:`StepTime` per step of ``plan``, with its time."""
    return [
        StepTime(
            bn.index,
            bn.node.op_type,
            bn.node.domain,
            bn.node.name,
            tuple((f.index, f.node.op_type, f.node.name) for f in bn.fused),
            t,
            f"{FUSED_DOMAIN}::{bn.step_kernel}" if bn.step_kernel else "",
        )
        for bn, t in zip(plan.info, seconds)
    ]


def _declared_rank(tp: TypeProto | None) -> int | None:
    """The rank a tensor input declares (None: not a tensor, or no shape declared)."""
    if tp is None or tp.which_oneof("value") != "tensor_type" or tp.tensor_type is None:
        return None
    shape = tp.tensor_type.shape
    return None if shape is None else len(shape.dim)
