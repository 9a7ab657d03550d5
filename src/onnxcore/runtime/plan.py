"""Plans: the bound nodes of a graph laid out as a flat list of steps over integer slots (Clause 8).

:mod:`onnxcore.runtime.compile` binds the nodes of a graph to kernels and function bodies, from the bound model,
into a :class:`GraphIR`; :meth:`GraphIR.plan` then lays a :class:`Plan` out for a set of requested outputs: the
nodes whose outputs are unused are left out (Clause 8.2), constants are folded and steps fused (Clause 8.2, see
:mod:`onnxcore.runtime.optimize`), every value gets an integer slot in one list, and each step names the slots
it frees after its last use.

At run time a step is a tuple ``(fn, input_slots, out0, outs, attrs, frees)``; the loop does no
lookups by name.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from onnxcore.errors import (
    EvaluationError,
    LimitError,
    OnnxCoreError,
    RunCancelledError,
    RunTimeoutError,
    ValidationError,
)
from onnxcore.external.mapped import mapped_pages, release_pages
from onnxcore.kernels.folding import FOLD_BUDGET_BYTES
from onnxcore.limits import RunControl, active_run_control
from onnxcore.runtime.codegen import MAX_STEPS, generate
from onnxcore.runtime.optimize.graph import PlanGraph, live_nodes
from onnxcore.runtime.optimize.pipeline import REWRITE_NAMES, run_pipeline
from onnxcore.runtime.step import PlanNode

__all__ = ["GraphIR", "Plan", "describe_value"]

COMPILE_AFTER = 1
"""Interpreted evaluations of a plan before it is compiled to Python (see :meth:`Plan.execute`)."""

SHAPE_FOLD_BUDGET = 1 << 26
"""Bytes of folded values a plan specialised to input shapes may hold (a causal mask of a long sequence, say)."""

NONE_SLOT = 0  # always holds None: an input left unsupplied (Clause 7.3.3)
TRASH_SLOT = 1  # receives outputs nobody named


class GraphIR:
    """A graph or function body with its nodes bound; lays out plans on demand.

    Attributes:
        input_names: Declared inputs, in order.
        inits: Constant values (initializers) by name; a name that is also an input is its default.
        nodes: The bound nodes in graph order.
        output_names: Declared outputs, in order.
        free_names: Names read from an enclosing scope (Clause 5.4.3), in first-use order.
        label: Where this graph is, for messages.
        disabled_rewrites: Names of the plan-time rewrites its plans leave out (:mod:`onnxcore.runtime.optimize.
            pipeline`).
        release_mapped: Its plans drop the resident pages of a memory-mapped value (a weight of a model loaded
            from a path, a spilled constant) after the value's last reader in a run (:func:`_releasing`). Set by a
            session made in lean memory (:func:`onnxcore.external.spill.lean_memory`: the optimizer's proof) for
            its main graph; False otherwise, where a run pays nothing for it.
    """

    __slots__ = (
        "_plans",
        "complete",
        "disabled_rewrites",
        "free_names",
        "inits",
        "input_names",
        "label",
        "nodes",
        "output_names",
        "release_mapped",
    )

    def __init__(
        self,
        input_names: list[str],
        inits: dict[str, Any],
        nodes: list[PlanNode],
        output_names: list[str],
        label: str,
        disabled_rewrites: frozenset[str] = frozenset(),
    ) -> None:
        unknown = sorted(set(disabled_rewrites) - REWRITE_NAMES)
        if unknown:
            raise ValidationError(f"{label}: no plan rewrite named {unknown}; the rewrites: {sorted(REWRITE_NAMES)}")
        self.disabled_rewrites = frozenset(disabled_rewrites)
        self.input_names = input_names
        self.inits = inits
        self.nodes = nodes
        self.output_names = output_names
        self.label = label
        self.complete = all(bn.call is not None for bn in nodes)
        self.release_mapped = False
        self._plans: dict[tuple[Any, ...], Plan] = {}
        defined = set(input_names) | set(inits)
        free: list[str] = []
        for bn in nodes:
            for n in (*bn.inputs, *bn.outer):
                if n and n not in defined and n not in free:
                    free.append(n)
            defined.update(o for o in bn.outputs if o)
        for n in output_names:
            if n and n not in defined and n not in free:
                free.append(n)
        self.free_names = free

    def plan(
        self,
        outputs: Sequence[str] | None = None,
        *,
        keep_all: bool = False,
        as_written: bool = False,
        fed: frozenset[str] | None = None,
        ranks: Mapping[str, int] | None = None,
        known: Mapping[str, Any] | None = None,
        signature: tuple[Any, ...] | None = None,
    ) -> Plan:
        """The plan computing ``outputs`` (all declared outputs by default); cached.

        With ``keep_all`` every node is evaluated and no value is freed (for ``intermediates``).
        With ``as_written`` the nodes ``outputs`` need are evaluated as written (no folding, fusion or reuse),
        and each value is freed after its last use: a probe of a few values that holds nothing else.
        ``fed`` names the inputs the caller supplies; an input left out of it keeps its initializer,
        which then counts as a constant (Clause 7.2). None: every input is supplied (subgraphs, functions).
        ``ranks`` are input ranks the caller guarantees (a session checks every feed against its declared
        rank); the plan may rely on them.
        ``known`` are values of node outputs that the caller guarantees for every run of this plan (the
        ``Shape`` values decided by the input shapes ``signature`` names, :mod:`onnxcore.runtime.optimize.
        specialize`): those nodes become constants, folded further. Such plans are cached by ``signature``
        (the caller keeps their number bounded).
        """
        outs = tuple(self.output_names if outputs is None else outputs)
        plain = keep_all or as_written
        key = (outs, keep_all, as_written, fed, None if ranks is None else frozenset(ranks.items()), signature)
        p = self._plans.get(key)
        if p is None:
            p = Plan(self, outs, keep_all, fed, ranks, None if plain else known, as_written=as_written)
            self._plans[key] = p
        return p

    def forget(self, signature: tuple[Any, ...]) -> None:
        """Drop the plans specialised to ``signature`` (the caller's cache of signatures is full)."""
        self._plans = {k: p for k, p in self._plans.items() if k[-1] != signature}


def _needed_nodes(nodes: list[PlanNode], outputs: Sequence[str]) -> list[PlanNode]:
    """The nodes some output in ``outputs`` depends on, in their order."""
    return [bn for bn, keep in zip(nodes, live_nodes(nodes, outputs, {})) if keep]


def _held(value: Any) -> list[Any]:
    """The arrays ``value`` is or holds (a fused step's attribute may be a tuple of them)."""
    if isinstance(value, tuple | list):
        return [a for v in value for a in _held(v)]
    return [value] if isinstance(value, np.ndarray) else []


def _releases(
    raw: Sequence[tuple[PlanNode, list[int], int, list[tuple[int, int]]]],
    frees: Sequence[Sequence[int]],
    constants: Mapping[str, Any],
) -> list[tuple[tuple[int, ...], tuple[np.ndarray, ...]]]:
    """Per step, what :func:`_releasing` drops after it (:attr:`GraphIR.release_mapped`): the positions of its
    arguments it is the last reader of (a value computed in the run may view a mapped weight: a Slice of a table),
    and the mapped constants it is the last step to hold. A step holds the constants it reads by name (its inputs,
    the enclosing-scope values its subgraphs read, the inputs its node and the nodes fused into it were written
    with: a fused Linear's weight is no input of the step, and a step fused again keeps it inside another's
    callable) and those a fused step was prepared with (its ``step_attrs``)."""
    last: dict[int, int] = {}
    mapped: dict[int, np.ndarray] = {}
    for idx, (bn, _ins, _o0, _outs) in enumerate(raw):
        names = [*bn.inputs, *bn.outer, *bn.node.input, *(n for f in bn.fused for n in (*f.inputs, *f.node.input))]
        held = [*(constants.get(n) for n in names if n), *_held(list(bn.step_attrs.values()))]
        for value in held:
            if isinstance(value, np.ndarray) and (id(value) in mapped or mapped_pages(value) is not None):
                mapped[id(value)] = value
                last[id(value)] = idx
    by_step: list[list[np.ndarray]] = [[] for _ in raw]
    for key, idx in last.items():
        by_step[idx].append(mapped[key])
    out = []
    for (_bn, ins, _o0, _outs), freed, arrays in zip(raw, frees, by_step):
        gone = set(freed)
        first = {s: p for p, s in reversed(list(enumerate(ins))) if s in gone}
        out.append((tuple(sorted(first.values())), tuple(arrays)))
    return out


def _releasing(
    call: Callable[..., Any], positions: tuple[int, ...], constants: tuple[np.ndarray, ...] = ()
) -> Callable[..., Any]:
    """``call``, then the resident pages dropped of its arguments at ``positions`` and of ``constants``, where they
    view a read-only mapped file (:func:`onnxcore.external.mapped.release_pages`; nothing for other values): the
    step is the last reader of those values in the run (:attr:`GraphIR.release_mapped`, :func:`_releases`).

    A run of a model whose weights are a mapped file then holds, of the file, about what one step reads, not every
    weight it has read: the pages stay in the page cache, and a later run (or a later step reading an alias of a
    value) maps them again without reading the disk. The values never change (the mapping is read-only).
    """

    def step(*args: Any, **kw: Any) -> Any:
        out = call(*args, **kw)
        for p in positions:
            release_pages(args[p])
        for a in constants:
            release_pages(a)
        return out

    return step


def describe_value(v: Any) -> str:
    """A short description of a runtime value for error messages: dtype and shape."""
    if v is None:
        return "None"
    dtype = getattr(v, "dtype", None)
    shape = getattr(v, "shape", None)
    if dtype is not None and shape is not None:
        return f"{dtype}{list(shape)}"
    if isinstance(v, list):
        inner = describe_value(v[0]) if v else "?"
        return f"seq[{len(v)} x {inner}]"
    if isinstance(v, dict):
        return f"map[{len(v)}]"
    return type(v).__name__


class Plan:
    """A flat list of steps over integer slots (see the module docstring)."""

    __slots__ = (
        "_runs",
        "compiled",
        "fired",
        "info",
        "input_slot_list",
        "input_slots",
        "ir",
        "keep_all",
        "names",
        "node_slots",
        "outer_slots",
        "output_slots",
        "steps",
        "template",
    )

    def __init__(
        self,
        ir: GraphIR,
        outputs: tuple[str, ...],
        keep_all: bool,
        fed: frozenset[str] | None = None,
        ranks: Mapping[str, int] | None = None,
        known: Mapping[str, Any] | None = None,
        *,
        as_written: bool = False,
    ) -> None:
        self.ir = ir
        slots: dict[str, int] = {}
        names: list[str] = ["", ""]
        template: list[Any] = [None, None]

        def new_slot(name: str, value: Any = None) -> int:
            s = len(template)
            template.append(value)
            names.append(name)
            slots[name] = s
            return s

        self.input_slot_list = [new_slot(n) for n in ir.input_names]
        self.input_slots = dict(zip(ir.input_names, self.input_slot_list))
        inits = dict(ir.inits)
        nodes = list(ir.nodes)
        # Values that vary between runs: the inputs supplied; an input left to its initializer is constant.
        variable = set(ir.input_names) if fed is None else {n for n in ir.input_names if n in fed or n not in inits}
        derived: dict[str, Any] = {}
        aliases: dict[str, str] = {}
        fired: list[str] = []
        if not (keep_all or as_written):
            # Clause 8.2: a node computed from constants alone is evaluated once, when the plan is made, and its
            # outputs become constants; then the declared pipeline of rewrites (optimize/pipeline.py) runs.
            known = known or {}
            if known:
                # Values this plan's runs are guaranteed (shapes decided by its input shapes): their nodes
                # become constants, and what is computed from them alone is folded with the rest.
                nodes = [bn for bn in nodes if not any(o in known for o in bn.outputs if o)]
            # Clause 8: a node whose results no requested output needs is not evaluated, so it is left out BEFORE
            # folding; folding it would materialise constants nothing reads (a model whose weights are built by
            # ConstantOfShape, with its outputs removed, would otherwise allocate them all at plan time).
            nodes = _needed_nodes(nodes, outputs)
            # A plan made per input shape folds at most SHAPE_FOLD_BUDGET bytes (a session keeps several).
            graph = PlanGraph(
                nodes,
                {n: v for n, v in inits.items() if n not in variable} | dict(known),
                outputs,
                added=known,
                budget=SHAPE_FOLD_BUDGET if known else FOLD_BUDGET_BYTES,
                sources=(*ir.input_names, *ir.free_names),
                ranks=ranks,
            )
            fired = run_pipeline(graph, ir.disabled_rewrites)
            nodes, aliases = graph.nodes, graph.aliases
            # Folding and fusion leave constants nothing reads any more (a weight before its fusion): drop them.
            read = set(outputs).union(*(bn.inputs for bn in nodes), *(bn.outer for bn in nodes))
            derived = {n: v for n, v in graph.added.items() if n in read}
        for name, value in inits.items():
            if name in slots:
                template[slots[name]] = value
            else:
                new_slot(name, value)
        for name, value in derived.items():
            new_slot(name, value)
        self.outer_slots = [(n, new_slot(n)) for n in ir.free_names]
        # Names that are another name's value (repeats merged, optimize/cse.py) get their target's slot.
        aliased: dict[str, list[str]] = {}
        for alias, target in aliases.items():
            aliased.setdefault(target, []).append(alias)

        # Clause 8.2: a node none of whose outputs is needed is not evaluated (fusion may have left some).
        live = [True] * len(nodes) if keep_all else live_nodes(nodes, outputs, aliases)

        raw: list[tuple[PlanNode, list[int], int, list[tuple[int, int]]]] = []
        node_slots: list[int] = []
        for k, bn in enumerate(nodes):
            if not live[k]:
                continue
            ins = [slots[n] if n else NONE_SLOT for n in bn.inputs] + [slots[n] for n in bn.outer]
            outs: list[tuple[int, int]] = []
            out0 = TRASH_SLOT
            for j, o in enumerate(bn.outputs):
                if not o:
                    continue
                s = new_slot(o)
                for alias in aliased.get(o, ()):
                    slots[alias] = s
                node_slots.append(s)
                outs.append((j, s))
                if j == 0:
                    out0 = s
            raw.append((bn, ins, out0, outs))
        missing = [o for o in outputs if o not in slots]
        if missing:
            raise ValidationError(f"{ir.label}: output(s) {missing} are not produced by the graph (Clause 7.1)")
        self.output_slots = [slots[o] for o in outputs]

        # Free each value after its last reader (or right away when nothing reads it).
        last: dict[int, int] = {}
        for idx, (_bn, ins, _o0, outs) in enumerate(raw):
            for _j, s in outs:
                last[s] = idx
            for s in ins:
                last[s] = idx
        protected = {NONE_SLOT, TRASH_SLOT, *self.output_slots}
        frees: list[list[int]] = [[] for _ in raw]
        if not keep_all:
            for s, idx in last.items():
                if s not in protected:
                    frees[idx].append(s)

        releases = _releases(raw, frees, inits | derived) if ir.release_mapped else None
        steps = []
        info = []
        for idx, (bn, ins, out0, outs) in enumerate(raw):
            assert bn.call is not None
            call = bn.call
            if releases is not None and (releases[idx][0] or releases[idx][1]):
                call = _releasing(call, *releases[idx])
            steps.append((call, tuple(ins), out0, tuple(outs), bn.kw, tuple(frees[idx])))
            info.append(bn)
        self.steps = steps
        self.info = info
        # The rewrites of the pipeline that changed this plan, in their order (none when nodes run as written).
        self.fired: tuple[str, ...] = tuple(fired)
        self.template = template
        self.names = names
        self.node_slots = node_slots
        self.keep_all = keep_all
        #: The plan as straight-line code (codegen), once a later run compiled it; None until then. A plain run
        #: (no run control in effect) may call it with the value slots directly, as :meth:`execute` does.
        self.compiled: Callable[[list[Any]], None] | None = None
        self._runs = 0

    def _compile(self) -> Callable[[list[Any]], None]:
        node_slots = self.node_slots
        first_node_slot = min(node_slots) if node_slots else len(self.template)
        prefilled = list(range(2, first_node_slot))
        stores = sorted(set(self.output_slots) | (set(node_slots) if self.keep_all else set()))
        may_tuple = [bn.may_tuple for bn in self.info]
        return generate(self.steps, may_tuple, prefilled, stores, self._error, repr(self.ir.label))

    def execute(self, vals: list[Any]) -> None:
        """Evaluate every step over ``vals`` (a copy of ``template`` with the inputs filled).

        Afterwards the output slots (every node slot for a ``keep_all`` plan) hold their values.
        """
        control = active_run_control()
        if control is not None:
            # A run with a deadline or a cancellation test is interpreted, checking between steps; the compiled
            # straight-line code of a plain run pays nothing for it.
            self._interpret(vals, control=control)
            return
        run = self.compiled
        if run is None:
            # Compiling costs about as much as a few interpreted runs: a plan evaluated once
            # (most sessions' first run) is interpreted; one evaluated again (a later run, a loop
            # body's next iteration) is compiled to straight-line code (see codegen).
            if self._runs >= COMPILE_AFTER and len(self.steps) <= MAX_STEPS:
                run = self.compiled = self._compile()
            else:
                self._runs += 1
                self._interpret(vals)
                return
        run(vals)

    def _interpret(self, vals: list[Any], times: list[float] | None = None, control: RunControl | None = None) -> None:
        clock = time.perf_counter
        t0 = 0.0
        i = 0
        try:
            for i, (fn, ins, out0, outs, kw, frees) in enumerate(self.steps):
                if control is not None:
                    control.check(f"{self.ir.label}: before node {self.info[i].index}")
                if times is not None:
                    t0 = clock()
                res = fn(*[vals[j] for j in ins], **kw)
                if times is not None:
                    times[i] = clock() - t0
                if type(res) is tuple:
                    for k, s in outs:
                        vals[s] = res[k]
                else:
                    vals[out0] = res
                for s in frees:
                    vals[s] = None
        except (RunTimeoutError, RunCancelledError):
            raise  # the run is stopped as a whole, not failed at a node: kept as it is, through enclosing graphs
        except Exception as e:
            raise self._error(i, vals.__getitem__, e) from e

    def profile(self, vals: list[Any]) -> list[float]:
        """Evaluate every step over ``vals`` as :meth:`execute` does, interpreted; each step's wall time."""
        times = [0.0] * len(self.steps)
        self._interpret(vals, times)
        return times

    def _error(self, i: int, value_of: Callable[[int], Any], e: BaseException) -> OnnxCoreError:
        """The error to raise for step ``i`` failing with ``e``: an :class:`EvaluationError` naming the node, its
        inputs and what is fused into it; a limit exceeded stays a :class:`LimitError`, prefixed with the node."""
        bn = self.info[i]
        _fn, ins, _o0, _outs, _kw, _fr = self.steps[i]
        node = bn.node
        n_real = len(bn.inputs)
        # Values made at plan time are named after a model value, a NUL and what they are (never a model's name).
        names = [name.replace("\x00", "/") if name else "<unsupplied>" for name in bn.inputs]
        desc = ", ".join(f"{name}: {describe_value(value_of(s))}" for name, s in zip(names, ins[:n_real]))
        op = f"{node.domain}::{node.op_type}" if node.domain else node.op_type
        msg = (
            f"{self.ir.label}: node {bn.index} ({op}, name {node.name!r}) failed: "
            f"{type(e).__name__}: {e} [inputs: {desc}]"
        )
        if bn.fused:
            others = ", ".join(f"node {f.index} ({f.node.op_type}, name {f.node.name!r})" for f in bn.fused)
            msg += (
                f" (this step also evaluates {others}, fused with it at plan time, Clause 8.2; "
                "run(..., intermediates=True) evaluates every node as written)"
            )
        if isinstance(e, LimitError):
            # The refusal keeps its type (Clause 15.4); the node is named, innermost last for a subgraph's.
            limit = LimitError(f"{self.ir.label}: node {bn.index} ({op}, name {node.name!r}): {e}")
            limit.node_index = bn.index  # type: ignore[attr-defined]
            limit.node_name = node.name  # type: ignore[attr-defined]
            return limit
        err: OnnxCoreError = EvaluationError(msg)
        err.node_index = bn.index  # type: ignore[attr-defined]
        err.node_name = node.name  # type: ignore[attr-defined]
        err.op_type = node.op_type  # type: ignore[attr-defined]
        err.domain = node.domain  # type: ignore[attr-defined]
        err.inputs = [(name, describe_value(value_of(s))) for name, s in zip(names, ins[:n_real])]  # type: ignore[attr-defined]
        err.fused_nodes = [(f.index, f.node.op_type, f.node.name) for f in bn.fused]  # type: ignore[attr-defined]
        return err

    def run(self, inputs: Sequence[Any], outer: Mapping[str, Any] | None = None) -> list[Any]:
        """Evaluate with positional ``inputs`` and enclosing-scope values ``outer``; the outputs."""
        vals = self.template.copy()
        if len(inputs) > len(self.input_slot_list):
            raise EvaluationError(
                f"{self.ir.label}: {len(inputs)} inputs supplied, the graph declares {len(self.input_slot_list)}"
            )
        for s, v in zip(self.input_slot_list, inputs):
            vals[s] = v
        if self.outer_slots:
            if outer is None:
                outer = {}
            try:
                for name, s in self.outer_slots:
                    vals[s] = outer[name]
            except KeyError as e:
                raise EvaluationError(f"{self.ir.label}: value {e} from the enclosing scope is not available") from None
        self.execute(vals)
        return [vals[s] for s in self.output_slots]
