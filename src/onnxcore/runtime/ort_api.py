"""onnxruntime's Python API over :class:`onnxcore.runtime.Session`: what a CPU user of ``onnxruntime`` touches.

A script written for onnxruntime runs unchanged with ``import onnxcore as rt`` in place of
``import onnxruntime as rt`` (docs/onnxruntime.md): :class:`InferenceSession` with ``run``, ``run_with_ort_values``,
``io_binding``/``run_with_iobinding``, ``get_inputs``, ``get_outputs``, ``get_overridable_initializers``,
``get_modelmeta``, the provider queries and profiling; :class:`OrtValue`, :class:`IOBinding`,
:class:`SessionOptions`, :class:`RunOptions`, the enumerations and the module functions
(:mod:`onnxcore.runtime.ort_options`); onnxruntime's exception classes (:mod:`onnxcore.capi`). There is one
evaluator: an :class:`InferenceSession` holds a :class:`Session` and runs its plans.

Positions taken where onnxruntime's behaviour is not ours to copy (docs/types.md, "Values in the onnxruntime API"):

* The model is validated as :class:`Session` validates it (Clause 15.5), but error findings that leave evaluation
  possible and safe (:func:`onnxcore.runtime.ort_errors.runs_anyway`: an output declared without a type or shape,
  a declared shape contradicting the inferred one) do not refuse it: one
  :class:`~onnxcore.errors.ValidationWarning` names their codes, and the run returns the computed values (an
  output whose computed shape contradicts its declared one warns with ``OutputShapeWarning``). The session
  configuration entry ``"onnxcore.strict"`` set to ``"1"`` refuses such models, as :class:`Session` does.
* Failures raise onnxruntime's exception classes (``InvalidArgument``, ``Fail``, ``NoSuchFile``, ...), each also the
  onnxcore error it replaces (:mod:`onnxcore.runtime.ort_errors`); a missing required input is a ``ValueError``
  (an :class:`~onnxcore.errors.InputError`), as in onnxruntime.
* Feeds are converted as onnxruntime converts them (lists, map dicts, non-text elements of STRING inputs;
  :mod:`onnxcore.runtime.ort_feeds`); scalars are taken as 0-d tensors, where onnxruntime refuses them.
* Values come back as onnxruntime gives them, in this API only: a STRING tensor is an object array of ``str``
  (octets decoded as UTF-8; octets that are not UTF-8 decode with ``surrogateescape``, so nothing is lost), a map
  has ``str``/``int`` keys and Python ``float``/``int`` values where the map's values are scalars (ZipMap), so
  ``json.dumps`` of a classifier's probabilities works. :class:`Session` keeps octets (Clause 6.4).
* Only ``CPUExecutionProvider`` exists; a provider list naming others falls back to it with onnxruntime's warning.
  OrtValues and bindings live on the CPU: another ``device_type`` is refused by name.
* ``graph_optimization_level=ORT_DISABLE_ALL`` evaluates every node as written (the plan of
  ``Session.run(..., intermediates=True)``: no folding, fusion or reuse); every other level evaluates the
  optimised plan (there are no intermediate levels here). ``disabled_optimizers`` is accepted, without effect.
* ``optimized_model_filepath`` writes the model through the model rewrites of ``onnxcore.optimize`` (folding,
  no-ops, common subexpressions, dead nodes; :mod:`onnxcore.runtime.ort_export`), standard operators only, validated.
* ``intra_op_num_threads`` is the session's kernel threads (``Session(threads=...)``; 0, the default, is the
  machine's CPUs, as in onnxruntime); when positive it also caps the BLAS threads during each run, through
  threadpoolctl when it is installed (not honoured without it). ``inter_op_num_threads``, ``execution_mode`` and
  ``execution_order`` are accepted and have no effect: nodes run one after another. ``log_severity_level``,
  ``log_verbosity_level``, ``logid`` and other session config entries are kept and read back, and change nothing.
* For an IR version below 4, initializers listed among the graph inputs are constants (as onnxruntime treats
  them): not listed by ``get_overridable_initializers`` and refused as feeds. From IR 4 they may be fed.
* Profiling (``enable_profiling``) writes a Chrome trace (a JSON list of events ``{"cat", "name", "ph", "ts",
  "dur", "pid", "tid", "args"}``, microseconds) from the per-step times the session measures: one
  ``session_initialization`` event, and per run one ``model_run`` event and one ``<node>_kernel_time`` event per
  step. A profiled run is interpreted step by step (not compiled), so it is slower than an unprofiled one.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from onnxcore.errors import InputError, OnnxCoreError
from onnxcore.infer import infer_both
from onnxcore.kernels.ml_maps import ScoreMaps
from onnxcore.proto import TypeProto
from onnxcore.runtime.optimize.pipeline import disabled_for
from onnxcore.runtime.ort_errors import ort_error, runs_anyway
from onnxcore.runtime.ort_export import write_optimized_model
from onnxcore.runtime.ort_feeds import convert_feeds
from onnxcore.runtime.ort_options import (
    CPU_PROVIDER,
    GraphOptimizationLevel,
    RunOptions,
    SessionOptions,
    providers_asked,
)
from onnxcore.runtime.ort_values import IOBinding, OrtValue
from onnxcore.runtime.session import Session, StepTime, ValueDescription
from onnxcore.types.typestr import type_string

__all__ = ["InferenceSession", "ModelMetadata", "NodeArg"]


class NodeArg:
    """A graph input, output or overridable initializer as onnxruntime describes it.

    Attributes:
        name: The value's name.
        type: Its type string: ``'tensor(float)'``, ``'seq(tensor(int64))'``, ``'map(int64,tensor(float))'``.
        shape: For a tensor (or an optional tensor), one entry per axis: an ``int`` for a fixed extent, a ``str``
            for a dimension variable, None for an unknown extent; ``[]`` when no shape is declared and for other
            kinds of values. The declared shape: a checked model declares the shape of every graph output
            (Clause 7.1), so onnxruntime's inferred shapes of undeclared outputs do not arise.
    """

    __slots__ = ("name", "shape", "type")

    def __init__(self, name: str, type: str, shape: list[int | str | None]) -> None:
        self.name = name
        self.type = type
        self.shape = shape

    def __repr__(self) -> str:
        return f"NodeArg(name={self.name!r}, type={self.type!r}, shape={self.shape!r})"

    __str__ = __repr__


class ModelMetadata:
    """A model's metadata as onnxruntime reports it.

    Attributes:
        producer_name: ``ModelProto.producer_name``.
        graph_name: The main graph's name.
        domain: ``ModelProto.domain``.
        description: ``ModelProto.doc_string``.
        version: ``ModelProto.model_version``.
        custom_metadata_map: ``ModelProto.metadata_props`` as a dict.
        graph_description: The main graph's ``doc_string``.
    """

    __slots__ = (
        "custom_metadata_map",
        "description",
        "domain",
        "graph_description",
        "graph_name",
        "producer_name",
        "version",
    )

    def __init__(self, session: Session) -> None:
        model = session.model
        graph = model.graph
        self.producer_name = model.producer_name or ""
        self.graph_name = (graph.name if graph is not None else None) or ""
        self.domain = model.domain or ""
        self.description = model.doc_string or ""
        self.version = int(model.model_version or 0)
        self.custom_metadata_map = {p.key or "": p.value or "" for p in model.metadata_props}
        self.graph_description = (graph.doc_string if graph is not None else None) or ""


def _shape(tp: TypeProto | None) -> list[int | str | None]:
    """onnxruntime's ``NodeArg.shape`` of a declared type (see :class:`NodeArg`)."""
    while tp is not None and tp.which_oneof("value") == "optional_type" and tp.optional_type is not None:
        tp = tp.optional_type.elem_type
    if tp is None:
        return []
    kind = tp.which_oneof("value")
    tt = tp.tensor_type if kind == "tensor_type" else tp.sparse_tensor_type if kind == "sparse_tensor_type" else None
    if tt is None or tt.shape is None:
        return []
    return [int(d.dim_value) if d.has("dim_value") else (d.dim_param or None) for d in tt.shape.dim]


def _optional(tp: TypeProto | None) -> bool:
    return tp is not None and tp.which_oneof("value") == "optional_type"


def _node_arg(desc: ValueDescription) -> NodeArg:
    return NodeArg(desc.name, type_string(desc.type_proto) or "unknown", _shape(desc.type_proto))


def _undeclared(tp: TypeProto | None) -> bool:
    """Whether a graph output's declaration leaves its type, or its tensor shape, to inference."""
    if tp is None or tp.which_oneof("value") is None:
        return True
    return tp.which_oneof("value") == "tensor_type" and (tp.tensor_type is None or tp.tensor_type.shape is None)


def _output_args(session: Session) -> list[NodeArg]:
    """The session's outputs as NodeArgs, inferring what an output does not declare (only when one does not)."""
    args = [_node_arg(d) for d in session.outputs]
    if not any(_undeclared(d.type_proto) for d in session.outputs):
        return args
    types, shapes = infer_both(session.model)
    known = types.types().get("graph", {})
    for k, d in enumerate(session.outputs):
        if not _undeclared(d.type_proto):
            continue
        inferred = type_string(known.get(d.name)) or args[k].type
        shape = shapes.shape(d.name)
        args[k] = NodeArg(d.name, inferred, [e if isinstance(e, int | str) else None for e in shape or ()])
    return args


def _text(x: Any) -> Any:
    if isinstance(x, bytes):
        return x.decode("utf-8", "surrogateescape")
    return x


def _user_value(v: Any) -> Any:
    """A value as onnxruntime gives it (module docstring): STRING tensors of ``str``, maps of Python scalars."""
    if isinstance(v, np.ndarray):
        if v.dtype == object:
            out = np.empty(v.shape, dtype=object)
            for idx, x in np.ndenumerate(v):
                out[idx] = _text(x)
            return out
        return v
    if isinstance(v, ScoreMaps):
        # ZipMap's maps: every score converted to a Python number by one tolist(), the keys once; each map takes
        # the next len(keys) numbers of one iterator (no list per row: fewer objects for the garbage collector).
        keys = [_map_key(k) for k in v.labels]
        numbers = iter(v.scores.ravel().tolist())
        return [dict(zip(keys, numbers)) for _ in range(len(v))]  # zip stops at the last key
    if isinstance(v, list):
        return [_user_value(x) for x in v]
    if isinstance(v, dict):
        return {_map_key(k): _map_value(x) for k, x in v.items()}
    return v


def _map_key(k: Any) -> Any:
    if isinstance(k, bytes):
        return _text(k)
    return k.item() if isinstance(k, np.generic) else k


def _map_value(x: Any) -> Any:
    # onnxruntime gives a map of scalars (ZipMap's) with Python numbers: json.dumps takes them.
    if isinstance(x, np.generic) or (isinstance(x, np.ndarray) and x.ndim == 0 and x.dtype != object):
        return x.item()
    return _user_value(x)


class InferenceSession:
    """onnxruntime's ``InferenceSession`` over an onnxcore :class:`Session` (the module docstring lists positions).

    Args:
        path_or_bytes: A path to a model file, the model's octets, or an object with ``SerializeToString()``
            (``onnx.ModelProto``); an onnxcore ``ModelProto`` too.
        sess_options: A :class:`SessionOptions` (copied: later changes do not reach the session).
        providers: None, or a list of provider names or ``(name, options)`` tuples. Providers other than
            ``"CPUExecutionProvider"`` are left out with onnxruntime's warning (the session runs on the CPU).
        provider_options: One dict of options per provider of ``providers``, or None.
        **kwargs: onnxruntime's further keywords: ``disabled_optimizers`` switches off the plan rewrites of those
            names (ours, or onnxruntime's names of the optimizers one of ours stands for:
            :func:`onnxcore.runtime.optimize.pipeline.disabled_for`); ``read_config_from_model`` is accepted
            without effect.

    Raises:
        ProviderError: malformed provider arguments.
        NoSuchFile, InvalidProtobuf, InvalidGraph, InvalidArgument, Fail, NotImplemented: the model cannot be
            loaded or evaluated, as onnxruntime raises them (each also the onnxcore error it replaces:
            ``ModelFileNotFoundError``, ``DecodeError``, ``ValidationError``, ``UnsupportedOperatorError``, ...).
    """

    def __init__(
        self,
        path_or_bytes: Any,
        sess_options: SessionOptions | None = None,
        providers: Sequence[str | tuple[str, Mapping[str, Any]]] | None = None,
        provider_options: Sequence[Mapping[str, Any]] | None = None,
        **kwargs: Any,
    ) -> None:
        start_ns = time.perf_counter_ns()
        self._profiling_start_ns = time.time_ns()
        self._providers = providers_asked(providers, provider_options)
        options = (sess_options if sess_options is not None else SessionOptions()).copy()
        self._options = options
        self._disabled_optimizers = list(kwargs.get("disabled_optimizers") or [])
        tolerate = None if options.strict else runs_anyway
        # The optimisation level and disabled_optimizers choose the plan's rewrites (ORT_DISABLE_ALL: as written).
        disabled = disabled_for(int(options.graph_optimization_level), self._disabled_optimizers)
        try:
            self._session = Session(
                path_or_bytes,
                threads=max(0, int(options.intra_op_num_threads)),
                tolerate=tolerate,
                disabled_rewrites=disabled,
            )
            if options.optimized_model_filepath:
                write_optimized_model(
                    self._session.model,
                    options.optimized_model_filepath,
                    tolerate,
                    optimize=int(options.graph_optimization_level) != GraphOptimizationLevel.ORT_DISABLE_ALL,
                    disabled=disabled,
                )
        except OnnxCoreError as exc:
            mapped = ort_error(exc)
            if mapped is exc:  # one of onnxruntime's classes already (an OrtValue's refusal)
                raise
            raise mapped from exc
        self._as_written = int(options.graph_optimization_level) == GraphOptimizationLevel.ORT_DISABLE_ALL
        self._threads = _blas_limiter(int(options.intra_op_num_threads))
        session = self._session
        # IR 3 lists every initializer among the inputs: onnxruntime treats them as constants there.
        ir_version = int(session.model.ir_version or 0)
        self._overridable = [d for d in session.inputs if d.has_default and ir_version >= 4]
        self._required = [d for d in session.inputs if not d.has_default]
        self._feedable = frozenset(d.name for d in (*self._required, *self._overridable))
        # The inputs a run must feed (an optional one left out is absent, Clause 7.1).
        self._must_feed = tuple(d.name for d in self._required if not _optional(d.type_proto))
        self._must_feed_set = frozenset(self._must_feed)
        self._types = {d.name: d.type_proto for d in session.inputs}
        self._output_args: list[NodeArg] | None = None
        self._profile_lock = threading.Lock()
        self._events: list[dict[str, Any]] | None = None
        self._start_ns = start_ns
        if options.enable_profiling:
            self._events = [self._event("Session", "session_initialization", start_ns, time.perf_counter_ns(), {})]

    @property
    def session(self) -> Session:
        """The onnxcore :class:`Session` evaluating the model (its values keep STRING as octets)."""
        return self._session

    def get_inputs(self) -> list[NodeArg]:
        """The inputs a run must feed: graph inputs no initializer supplies."""
        return [_node_arg(d) for d in self._required]

    def get_outputs(self) -> list[NodeArg]:
        """The graph outputs; an output declared without a type or shape is described by its inferred type and
        shape (Clause 9), as onnxruntime describes it."""
        if self._output_args is None:
            self._output_args = _output_args(self._session)
        return list(self._output_args)

    def get_overridable_initializers(self) -> list[NodeArg]:
        """The graph inputs an initializer supplies unless fed (IR 4 and later; none for IR 3)."""
        return [_node_arg(d) for d in self._overridable]

    def get_modelmeta(self) -> ModelMetadata:
        """The model's metadata."""
        return ModelMetadata(self._session)

    def get_providers(self) -> list[str]:
        """The session's execution providers: ``['CPUExecutionProvider']``."""
        return list(self._providers)

    def get_provider_options(self) -> dict[str, dict[str, str]]:
        """Each provider's options, by provider name."""
        return {name: dict(options) for name, options in self._providers.items()}

    def set_providers(
        self,
        providers: Sequence[str | tuple[str, Mapping[str, Any]]] | None = None,
        provider_options: Sequence[Mapping[str, Any]] | None = None,
    ) -> None:
        """Choose the providers again (others than the CPU's are left out with onnxruntime's warning).

        Raises:
            ProviderError: as the constructor.
        """
        self._providers = providers_asked(providers, provider_options)

    def disable_fallback(self) -> None:
        """Accepted, without effect (there is one provider)."""

    def enable_fallback(self) -> None:
        """Accepted, without effect (there is one provider)."""

    def get_session_options(self) -> SessionOptions:
        """The options the session was made with."""
        return self._options

    def get_profiling_start_time_ns(self) -> int:
        """When the session started, in nanoseconds since the epoch (the trace's time 0)."""
        return self._profiling_start_ns

    def io_binding(self) -> IOBinding:
        """A new :class:`IOBinding` for :meth:`run_with_iobinding` (CPU only)."""
        session = self._session
        return IOBinding(
            [d.name for d in (*self._required, *self._overridable)],
            [d.name for d in session.outputs],
            session.has_value,
        )

    def run_with_iobinding(self, iobinding: IOBinding, run_options: RunOptions | None = None) -> None:
        """Run with the inputs and outputs of ``iobinding``; its ``get_outputs()`` then holds the results.

        Raises:
            InvalidArgument, Fail: as :meth:`run`; Fail also when a result does not fit the memory bound for it.
        """
        if not isinstance(iobinding, IOBinding):
            raise TypeError(f"run_with_iobinding: expected an IOBinding, got {type(iobinding).__name__}")
        names = iobinding.bound_outputs
        values = self.run(names or None, iobinding.bound_inputs, run_options) if names else []
        iobinding.deliver(values)

    def run_with_ort_values(
        self,
        output_names: Sequence[str] | None,
        input_dict_ort_values: Mapping[str, OrtValue],
        run_options: RunOptions | None = None,
    ) -> list[OrtValue]:
        """Evaluate with :class:`OrtValue` feeds; the outputs are OrtValues.

        Raises:
            InvalidArgument: a feed that is not an OrtValue; otherwise as :meth:`run`.
        """
        feeds: dict[str, Any] = {}
        for name, value in input_dict_ort_values.items():
            if not isinstance(value, OrtValue):
                raise ort_error(
                    InputError(f"run_with_ort_values: input {name!r} is a {type(value).__name__}, not an OrtValue")
                )
            feeds[name] = value.numpy()
        return [OrtValue(v) for v in self.run(output_names, feeds, run_options)]

    def run(
        self,
        output_names: Sequence[str] | None,
        input_feed: Mapping[str, Any],
        run_options: RunOptions | None = None,
    ) -> list[Any]:
        """Evaluate the model.

        Args:
            output_names: The outputs to return, in order; None (or an empty list) for every graph output.
            input_feed: A value per input name: numpy arrays, or what onnxruntime also takes (lists, dicts for
                maps; docs/onnxruntime.md lists each conversion).
            run_options: A :class:`RunOptions`, or None. Its ``terminate``, set to true (from another thread),
                stops the run with ``Fail`` (not while profiling); its other fields are kept without effect.

        Returns:
            The outputs, as onnxruntime gives them (module docstring).

        Raises:
            TypeError: ``output_names`` is a string (a list of names is expected), or ``run_options`` is not
                a :class:`RunOptions`.
            ValueError: a required input is not fed (an ``InputError``, as onnxruntime raises ``ValueError``).
            InvalidArgument: an unknown input or output name, a feed of the wrong type or shape or that cannot be
                converted (also an ``InputError``).
            Fail: a kernel failed (also the ``EvaluationError``), a limit was exceeded, the run was terminated.
        """
        if (
            run_options is None
            and type(input_feed) is dict
            and (output_names is None or type(output_names) is list)
            and input_feed.keys() == self._must_feed_set
        ):
            # The common call (a dict naming exactly the inputs a run must feed, a list of output names or None):
            # the checks below would pass, and the session checks each feed itself.
            names = output_names or None  # onnxruntime reads an empty list as every output, too
            cancel = None
        else:
            names, cancel = self._checked_call(output_names, input_feed, run_options)
        try:
            feeds = convert_feeds(input_feed, self._types)
            if self._threads is _NoLimit and cancel is None and self._events is None and not self._as_written:
                # The plain run (no BLAS cap to set, no terminate flag to poll, not profiling): the session's own.
                outs = self._session.run(names, feeds)
            else:
                outs = self._run_under_options(names, feeds, cancel)
        except OnnxCoreError as exc:
            mapped = ort_error(exc)
            if mapped is exc:  # one of onnxruntime's classes already (an OrtValue's refusal)
                raise
            raise mapped from exc
        # (an array of numbers is given as it is: tested here, not in a call per output)
        return [v if type(v) is np.ndarray and v.dtype.kind != "O" else _user_value(v) for v in outs]

    def _run_under_options(
        self, names: list[str] | None, feeds: Mapping[str, Any], cancel: Callable[[], bool] | None
    ) -> list[Any]:
        """A run under the session's options: the BLAS threads capped, profiled or as written, cancellable."""
        with self._threads():
            if self._events is not None:
                return self._run_profiled(names, feeds)
            if self._as_written:
                outs: list[Any] = self._session.run(names, feeds, intermediates=True, cancel=cancel)[0]
                return outs
            return self._session.run(names, feeds, cancel=cancel)

    def _checked_call(
        self, output_names: Sequence[str] | None, input_feed: Mapping[str, Any], run_options: RunOptions | None
    ) -> tuple[list[str] | None, Callable[[], bool] | None]:
        """The output names and the cancel test of a :meth:`run`, its arguments checked (the errors it lists)."""
        if isinstance(output_names, str | bytes):
            raise TypeError(
                f"run: output_names must be a list of output names or None, got the string {output_names!r} "
                f"(write [{output_names!r}])"
            )
        if run_options is not None and not isinstance(run_options, RunOptions):
            raise TypeError(f"run: run_options must be a RunOptions or None, got {type(run_options).__name__}")
        if not isinstance(input_feed, Mapping):
            raise ort_error(
                InputError(f"run: input_feed must be a dict of input name to value, got {type(input_feed).__name__}")
            )
        missing = [name for name in self._must_feed if name not in input_feed]
        if missing:
            # onnxruntime's ValueError (its Python layer checks this before the run), in its words.
            raise InputError(f"Required inputs ({missing}) are missing from input feed ({list(input_feed)}).")
        bad = [name for name in input_feed if name not in self._feedable]
        if bad:
            raise ort_error(InputError(f"run: invalid input name(s) {bad}; inputs: {[d.name for d in self._required]}"))
        # onnxruntime reads an empty list as every output, too.
        names = list(output_names) if output_names else None
        # onnxruntime's terminate: setting it (from another thread) stops the runs using these options.
        cancel = None if run_options is None else (lambda: bool(run_options.terminate))
        return names, cancel

    def end_profiling(self) -> str:
        """Stop profiling and write the Chrome trace.

        Returns:
            The path of the JSON file written (``<profile_file_prefix>_<date>_<time>.json``), or ``""`` when the
            session is not profiling (not enabled, or ended already).
        """
        with self._profile_lock:
            events, self._events = self._events, None
        if events is None:
            return ""
        path = f"{self._options.profile_file_prefix}_{time.strftime('%Y-%m-%d_%H-%M-%S')}.json"
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(events, fh, indent=0)
        return path

    def _run_profiled(self, names: list[str] | None, feeds: Mapping[str, Any]) -> list[Any]:
        begin = time.perf_counter_ns()
        outs, steps = self._session.run_profiled(names, feeds, as_written=self._as_written)
        end = time.perf_counter_ns()
        # Steps run one after another: each starts where the steps before it (from the run's start) ended.
        at = begin
        events = [self._event("Session", "model_run", begin, end, {})]
        for step in steps:
            dur = int(step.seconds * 1e9)
            events.append(self._event("Node", _kernel_event_name(step), at, at + dur, _kernel_args(step)))
            at += dur
        with self._profile_lock:
            if self._events is not None:
                self._events.extend(events)
        return outs

    def _event(self, cat: str, name: str, begin_ns: int, end_ns: int, args: dict[str, Any]) -> dict[str, Any]:
        return {
            "cat": cat,
            "pid": os.getpid(),
            "tid": threading.get_native_id(),
            "dur": max(0, (end_ns - begin_ns) // 1000),
            "ts": max(0, (begin_ns - self._start_ns) // 1000),
            "ph": "X",
            "name": name,
            "args": args,
        }


def _kernel_event_name(step: StepTime) -> str:
    return f"{step.name or f'{step.op_type}_{step.index}'}_kernel_time"


def _kernel_args(step: StepTime) -> dict[str, Any]:
    args: dict[str, Any] = {"op_name": step.op_type, "provider": CPU_PROVIDER, "node_index": str(step.index)}
    if step.domain:
        args["domain"] = step.domain
    if step.fused:
        args["fused_nodes"] = [f"{name or f'{op}_{index}'}" for index, op, name in step.fused]
    return args


class _NoLimit:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _blas_limiter(threads: int) -> Any:
    """A factory of context managers capping the BLAS threads at ``threads`` during a run (0: no cap)."""
    if threads <= 0:
        return _NoLimit
    try:
        # Optional (scikit-learn brings it, onnxcore does not depend on it): without it the cap is not honoured.
        import threadpoolctl
    except ImportError:
        return _NoLimit
    libs = list(threadpoolctl.ThreadpoolController().select(user_api="blas").lib_controllers)
    if not libs:
        return _NoLimit
    return lambda: _BlasCap(libs, threads)


class _BlasCap:
    """Set each BLAS library's threads to ``threads`` for the ``with`` block and restore them after, as
    ``threadpoolctl``'s ``limit`` does, but reading each library's count first (one call into it) and changing
    only those that differ: ``limit`` costs about 15 us a run, a one-node model's whole run several times over."""

    __slots__ = ("_libs", "_restore", "_threads")

    def __init__(self, libs: list[Any], threads: int) -> None:
        self._libs = libs
        self._threads = threads
        self._restore: list[tuple[Any, int]] = []

    def __enter__(self) -> None:
        for lib in self._libs:
            current = lib.num_threads
            if current is not None and current != self._threads:
                lib.set_num_threads(self._threads)
                self._restore.append((lib, current))

    def __exit__(self, *exc: object) -> None:
        for lib, current in reversed(self._restore):
            lib.set_num_threads(current)
