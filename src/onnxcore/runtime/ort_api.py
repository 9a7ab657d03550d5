"""onnxruntime's Python API over :class:`onnxcore.runtime.Session`: what a CPU user of ``onnxruntime`` touches.

A script written for onnxruntime runs unchanged with ``import onnxcore as rt`` in place of
``import onnxruntime as rt``: :class:`InferenceSession` with ``run``, ``get_inputs``, ``get_outputs``,
``get_overridable_initializers``, ``get_modelmeta``, the provider queries and profiling; :class:`SessionOptions`,
:class:`RunOptions`, :class:`GraphOptimizationLevel`, :class:`ExecutionMode`, :func:`get_available_providers` and
:func:`get_device`. There is one evaluator: an :class:`InferenceSession` holds a :class:`Session` and runs its plans.

Positions taken where onnxruntime's behaviour is not ours to copy (docs/types.md, "Values in the onnxruntime API"):

* Values come back as onnxruntime gives them, in this API only: a STRING tensor is an object array of ``str``
  (octets decoded as UTF-8; octets that are not UTF-8 decode with ``surrogateescape``, so nothing is lost), a map
  has ``str``/``int`` keys and Python ``float``/``int`` values where the map's values are scalars (ZipMap), so
  ``json.dumps`` of a classifier's probabilities works. :class:`Session` keeps octets (Clause 6.4).
* Only ``CPUExecutionProvider`` exists; asking for any other provider is refused (:class:`ProviderError`), where
  onnxruntime warns and falls back.
* ``graph_optimization_level=ORT_DISABLE_ALL`` evaluates every node as written (the plan of
  ``Session.run(..., intermediates=True)``: no folding, fusion or reuse); every other level evaluates the
  optimised plan (there are no intermediate levels here).
* ``intra_op_num_threads`` is the session's kernel threads (``Session(threads=...)``; 0, the default, is the
  machine's CPUs, as in onnxruntime); when positive it also caps the BLAS threads during each run, through
  threadpoolctl when it is installed (not honoured without it). ``inter_op_num_threads`` and ``execution_mode``
  are accepted and have no effect: nodes run one after another. ``log_severity_level``, ``log_verbosity_level``,
  ``logid`` and session config entries are kept and read back, and change nothing.
* ``optimized_model_filepath`` is refused when set: the optimised plan is not a model that could be written.
* ``io_binding`` and the OrtValue entry points raise :class:`UnsupportedFeatureError`.
* For an IR version below 4, initializers listed among the graph inputs are constants (as onnxruntime treats
  them): not listed by ``get_overridable_initializers`` and refused as feeds. From IR 4 they may be fed.
* Profiling (``enable_profiling``) writes a Chrome trace (a JSON list of events ``{"cat", "name", "ph", "ts",
  "dur", "pid", "tid", "args"}``, microseconds) from the per-step times the session measures: one
  ``session_initialization`` event, and per run one ``model_run`` event and one ``<node>_kernel_time`` event per
  step. A profiled run is interpreted step by step (not compiled), so it is slower than an unprofiled one.
"""

from __future__ import annotations

import copy
import enum
import json
import os
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from onnxcore.errors import InputError, OnnxCoreError
from onnxcore.proto import TypeProto
from onnxcore.runtime.optimize.pipeline import disabled_for
from onnxcore.runtime.session import Session, StepTime, ValueDescription
from onnxcore.types.typestr import type_string

__all__ = [
    "ExecutionMode",
    "GraphOptimizationLevel",
    "InferenceSession",
    "ModelMetadata",
    "NodeArg",
    "ProviderError",
    "RunOptions",
    "SessionOptions",
    "UnsupportedFeatureError",
    "get_available_providers",
    "get_device",
]

CPU_PROVIDER = "CPUExecutionProvider"
"""The one execution provider: onnxcore evaluates on the CPU."""


class ProviderError(OnnxCoreError, ValueError):
    """An execution provider other than ``CPUExecutionProvider`` was asked for, or its options are malformed."""


class UnsupportedFeatureError(OnnxCoreError, NotImplementedError):
    """A part of onnxruntime's API that onnxcore does not provide (``io_binding``, writing an optimised model)."""


class GraphOptimizationLevel(enum.IntEnum):
    """onnxruntime's optimisation levels; here only ``ORT_DISABLE_ALL`` differs from the rest (module docstring)."""

    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_LAYOUT = 3
    ORT_ENABLE_ALL = 99


class ExecutionMode(enum.IntEnum):
    """onnxruntime's execution modes; accepted, without effect (nodes run one after another)."""

    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


class SessionOptions:
    """Options of an :class:`InferenceSession`, with onnxruntime's names and defaults.

    Attributes:
        intra_op_num_threads: The kernel threads (0: the machine's CPUs); positive: also the BLAS threads during a
            run (with threadpoolctl; 0 leaves those as they are).
        inter_op_num_threads: Accepted, without effect.
        graph_optimization_level: ``ORT_DISABLE_ALL`` evaluates every node as written; others the optimised plan.
        enable_profiling: Record a Chrome trace, written by :meth:`InferenceSession.end_profiling`.
        profile_file_prefix: The trace file's name before ``_<date>_<time>.json``.
        log_severity_level: Kept, without effect.
        log_verbosity_level: Kept, without effect.
        logid: Kept, without effect.
        execution_mode: Accepted, without effect.
        optimized_model_filepath: Must stay empty: a session with it set is refused.
        use_deterministic_compute: Kept, without effect (runs are deterministic).
        enable_cpu_mem_arena: Kept, without effect.
        enable_mem_pattern: Kept, without effect.
        enable_mem_reuse: Kept, without effect.
    """

    def __init__(self) -> None:
        self.intra_op_num_threads = 0
        self.inter_op_num_threads = 0
        self.graph_optimization_level = GraphOptimizationLevel.ORT_ENABLE_ALL
        self.enable_profiling = False
        self.profile_file_prefix = "onnxruntime_profile_"
        self.log_severity_level = -1
        self.log_verbosity_level = 0
        self.logid = ""
        self.execution_mode = ExecutionMode.ORT_SEQUENTIAL
        self.optimized_model_filepath = ""
        self.use_deterministic_compute = False
        self.enable_cpu_mem_arena = True
        self.enable_mem_pattern = True
        self.enable_mem_reuse = True
        self._config: dict[str, str] = {}

    def add_session_config_entry(self, key: str, value: str) -> None:
        """Keep a session configuration entry (read back by :meth:`get_session_config_entry`, otherwise unused)."""
        self._config[str(key)] = str(value)

    def get_session_config_entry(self, key: str) -> str:
        """The value of a configuration entry.

        Raises:
            KeyError: no entry has that key.
        """
        try:
            return self._config[key]
        except KeyError:
            raise KeyError(f"SessionOptions does not have configuration with key: {key}") from None

    def _copy(self) -> SessionOptions:
        other = copy.copy(self)
        other._config = dict(self._config)
        return other


class RunOptions:
    """Options of one :meth:`InferenceSession.run` (onnxruntime's names and defaults): ``terminate`` stops the
    runs using these options; the other fields are kept without effect."""

    def __init__(self) -> None:
        self.log_severity_level = -1
        self.log_verbosity_level = 0
        self.logid = ""
        self.terminate = False
        self.only_execute_path_to_fetches = False
        self._config: dict[str, str] = {}

    def add_run_config_entry(self, key: str, value: str) -> None:
        """Keep a run configuration entry."""
        self._config[str(key)] = str(value)

    def get_run_config_entry(self, key: str) -> str:
        """The value of a run configuration entry.

        Raises:
            KeyError: no entry has that key.
        """
        try:
            return self._config[key]
        except KeyError:
            raise KeyError(f"RunOptions does not have configuration with key: {key}") from None


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


def get_available_providers() -> list[str]:
    """The execution providers onnxcore has: ``['CPUExecutionProvider']``."""
    return [CPU_PROVIDER]


def get_device() -> str:
    """The device onnxcore evaluates on: ``'CPU'``."""
    return "CPU"


def _providers(providers: Any, provider_options: Any) -> dict[str, dict[str, str]]:
    """The providers asked for, checked (only the CPU provider), with their options, as onnxruntime spells them."""
    if providers is None:
        return {CPU_PROVIDER: {}}
    if isinstance(providers, str):
        raise ProviderError(f"providers must be a list of provider names, got the string {providers!r}")
    entries = list(providers)
    if provider_options is not None and len(provider_options) != len(entries):
        raise ProviderError(
            f"provider_options has {len(provider_options)} entries for {len(entries)} providers: one each"
        )
    out: dict[str, dict[str, str]] = {}
    for k, entry in enumerate(entries):
        if isinstance(entry, tuple) and len(entry) == 2 and isinstance(entry[1], Mapping):
            name, options = entry
            if provider_options is not None:
                raise ProviderError("give provider options in (name, options) tuples or in provider_options, not both")
        else:
            name = entry
            options = provider_options[k] if provider_options is not None else {}
        if name != CPU_PROVIDER:
            raise ProviderError(
                f"execution provider {name!r} is not available in onnxcore; available: {get_available_providers()}"
            )
        out[name] = {str(key): str(value) for key, value in dict(options).items()}
    return out or {CPU_PROVIDER: {}}


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


def _node_arg(desc: ValueDescription) -> NodeArg:
    return NodeArg(desc.name, type_string(desc.type_proto) or "unknown", _shape(desc.type_proto))


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
        providers: None, or a list of provider names or ``(name, options)`` tuples; only
            ``"CPUExecutionProvider"``.
        provider_options: One dict of options per provider of ``providers``, or None.
        **kwargs: onnxruntime's further keywords: ``disabled_optimizers`` switches off the plan rewrites of those
            names (ours, or onnxruntime's names of the optimizers one of ours stands for:
            :func:`onnxcore.runtime.optimize.pipeline.disabled_for`); ``read_config_from_model`` is accepted
            without effect.

    Raises:
        ProviderError: a provider other than ``CPUExecutionProvider``, or malformed provider options.
        UnsupportedFeatureError: ``optimized_model_filepath`` is set.
        ValidationError, UnsupportedOperatorError, LimitError: as :class:`Session`.
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
        self._providers = _providers(providers, provider_options)
        options = (sess_options if sess_options is not None else SessionOptions())._copy()
        if options.optimized_model_filepath:
            raise UnsupportedFeatureError(
                f"SessionOptions.optimized_model_filepath={options.optimized_model_filepath!r}: onnxcore "
                "optimises into a plan, not into a model it could write; leave it empty"
            )
        self._options = options
        # The optimisation level and disabled_optimizers choose the plan's rewrites (ORT_DISABLE_ALL: as written).
        disabled = disabled_for(int(options.graph_optimization_level), kwargs.get("disabled_optimizers") or ())
        self._session = Session(
            path_or_bytes, threads=max(0, int(options.intra_op_num_threads)), disabled_rewrites=disabled
        )
        self._as_written = int(options.graph_optimization_level) == GraphOptimizationLevel.ORT_DISABLE_ALL
        self._threads = _blas_limiter(int(options.intra_op_num_threads))
        session = self._session
        # IR 3 lists every initializer among the inputs: onnxruntime treats them as constants there.
        ir_version = int(session.model.ir_version or 0)
        self._overridable = [d for d in session.inputs if d.has_default and ir_version >= 4]
        self._required = [d for d in session.inputs if not d.has_default]
        self._feedable = frozenset(d.name for d in (*self._required, *self._overridable))
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
        """The graph outputs."""
        return [_node_arg(d) for d in self._session.outputs]

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
        """Choose the providers again (only ``CPUExecutionProvider``).

        Raises:
            ProviderError: as the constructor.
        """
        self._providers = _providers(providers, provider_options)

    def get_session_options(self) -> SessionOptions:
        """The options the session was made with."""
        return self._options

    def get_profiling_start_time_ns(self) -> int:
        """When the session started, in nanoseconds since the epoch (the trace's time 0)."""
        return self._profiling_start_ns

    def io_binding(self) -> Any:
        """Not provided.

        Raises:
            UnsupportedFeatureError: always.
        """
        raise UnsupportedFeatureError("io_binding is not available in onnxcore: feed numpy values to run()")

    def run_with_ort_values(self, *args: Any, **kwargs: Any) -> Any:
        """Not provided.

        Raises:
            UnsupportedFeatureError: always.
        """
        raise UnsupportedFeatureError("OrtValues are not available in onnxcore: use run() with numpy values")

    def run(
        self,
        output_names: Sequence[str] | None,
        input_feed: Mapping[str, Any],
        run_options: RunOptions | None = None,
    ) -> list[Any]:
        """Evaluate the model.

        Args:
            output_names: The outputs to return, in order; None (or an empty list) for every graph output.
            input_feed: A value per input name (numpy arrays; ``str`` arrays for STRING inputs; lists for
                sequences, dicts for maps).
            run_options: A :class:`RunOptions`, or None. Its ``terminate``, set to true (from another thread),
                stops the run with :class:`~onnxcore.RunCancelledError` (not while profiling); its other fields
                are kept without effect.

        Returns:
            The outputs, as onnxruntime gives them (module docstring).

        Raises:
            TypeError: ``output_names`` is a string (a list of names is expected), or ``run_options`` is not
                a :class:`RunOptions`.
            InputError: an unknown or constant input name, a missing input, a feed of the wrong type or shape,
                an unknown output name.
            EvaluationError, LimitError: as :meth:`Session.run`.
        """
        if isinstance(output_names, str | bytes):
            raise TypeError(
                f"run: output_names must be a list of output names or None, got the string {output_names!r} "
                f"(write [{output_names!r}])"
            )
        if run_options is not None and not isinstance(run_options, RunOptions):
            raise TypeError(f"run: run_options must be a RunOptions or None, got {type(run_options).__name__}")
        if not isinstance(input_feed, Mapping):
            raise InputError(f"run: input_feed must be a dict of input name to value, got {type(input_feed).__name__}")
        bad = [name for name in input_feed if name not in self._feedable]
        if bad:
            raise InputError(f"run: invalid input name(s) {bad}; inputs: {[d.name for d in self._required]}")
        # onnxruntime reads an empty list as every output, too.
        names = list(output_names) if output_names else None
        # onnxruntime's terminate: setting it (from another thread) stops the runs using these options.
        cancel = None if run_options is None else (lambda: bool(run_options.terminate))
        with self._threads():
            if self._events is not None:
                outs = self._run_profiled(names, input_feed)
            elif self._as_written:
                outs = self._session.run(names, input_feed, intermediates=True, cancel=cancel)[0]
            else:
                outs = self._session.run(names, input_feed, cancel=cancel)
        return [_user_value(v) for v in outs]

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
