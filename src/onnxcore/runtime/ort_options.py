"""onnxruntime's options, enumerations and module functions for :mod:`onnxcore.runtime.ort_api`.

:class:`SessionOptions` and :class:`RunOptions` have onnxruntime's fields and defaults (1.31) and, like its
pybind objects, refuse an attribute they do not have, by name. The provider functions answer as onnxruntime's
CPU package does, with only ``CPUExecutionProvider`` available: a provider list naming others falls back to it
with onnxruntime's warning.
"""

from __future__ import annotations

import copy
import enum
import warnings
from collections.abc import Mapping
from typing import Any

from onnxcore.errors import OnnxCoreError

__all__ = [
    "ALL_PROVIDERS",
    "CPU_PROVIDER",
    "STRICT_CONFIG_KEY",
    "ExecutionMode",
    "ExecutionOrder",
    "GraphOptimizationLevel",
    "ProviderError",
    "RunOptions",
    "SessionOptions",
    "UnsupportedFeatureError",
    "get_all_providers",
    "get_available_providers",
    "get_device",
    "get_version_string",
    "logger_settings",
    "providers_asked",
    "set_default_logger_severity",
    "set_default_logger_verbosity",
]

CPU_PROVIDER = "CPUExecutionProvider"
"""The one execution provider: onnxcore evaluates on the CPU."""

# onnxruntime 1.31's get_all_providers(), in its order: the providers its builds may have.
ALL_PROVIDERS: tuple[str, ...] = (
    "NvTensorRTRTXExecutionProvider", "TensorrtExecutionProvider", "CUDAExecutionProvider",
    "MIGraphXExecutionProvider", "OpenVINOExecutionProvider", "DnnlExecutionProvider", "VitisAIExecutionProvider",
    "QNNExecutionProvider", "NnapiExecutionProvider", "VSINPUExecutionProvider", "JsExecutionProvider",
    "CoreMLExecutionProvider", "ACLExecutionProvider", "DmlExecutionProvider", "RknpuExecutionProvider",
    "WebNNExecutionProvider", "WebGpuExecutionProvider", "XnnpackExecutionProvider", "CANNExecutionProvider",
    "AzureExecutionProvider", CPU_PROVIDER,
)  # fmt: skip

STRICT_CONFIG_KEY = "onnxcore.strict"
"""The session configuration entry that selects strict validation in the façade (``"1"``: every error finding
refuses the model, as :class:`onnxcore.Session` does)."""

# The version onnxruntime's API follows here: get_version_string() answers it (onnxcore's own is __version__).
ORT_API_VERSION = "1.31.1"


class ProviderError(OnnxCoreError, ValueError):
    """Malformed provider arguments: a string where a list is expected, options that do not pair with providers."""


class UnsupportedFeatureError(OnnxCoreError, NotImplementedError):
    """A part of onnxruntime's API that onnxcore does not provide (custom operator libraries, free dimension
    overrides, devices other than the CPU)."""


class GraphOptimizationLevel(enum.IntEnum):
    """onnxruntime's optimisation levels; here only ``ORT_DISABLE_ALL`` differs from the rest (ort_api's module
    docstring)."""

    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_LAYOUT = 3
    ORT_ENABLE_ALL = 99


class ExecutionMode(enum.IntEnum):
    """onnxruntime's execution modes; accepted, without effect (nodes run one after another)."""

    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


class ExecutionOrder(enum.IntEnum):
    """onnxruntime's node orders; accepted, without effect (nodes run in the plan's order)."""

    DEFAULT = 0
    PRIORITY_BASED = 1
    MEMORY_EFFICIENT = 2


class SessionOptions:
    """Options of an :class:`~onnxcore.runtime.ort_api.InferenceSession`, with onnxruntime's names and defaults.

    Setting an attribute onnxruntime's ``SessionOptions`` does not have raises ``AttributeError`` naming it.

    Attributes:
        intra_op_num_threads: The kernel threads (0: the machine's CPUs); positive: also the BLAS threads during a
            run (with threadpoolctl; 0 leaves those as they are).
        inter_op_num_threads: Accepted, without effect.
        graph_optimization_level: ``ORT_DISABLE_ALL`` evaluates every node as written; others the optimised plan.
        enable_profiling: Record a Chrome trace, written by ``InferenceSession.end_profiling``.
        profile_file_prefix: The trace file's name before ``_<date>_<time>.json``.
        log_severity_level: Kept, without effect.
        log_verbosity_level: Kept, without effect.
        logid: Kept, without effect.
        execution_mode: Accepted, without effect.
        execution_order: Accepted, without effect.
        optimized_model_filepath: When set, the session writes the model it runs there: standard operators only,
            the model rewrites of ``onnxcore.optimize`` applied, unverified (docs/onnxruntime.md).
        use_deterministic_compute: Kept, without effect (runs are deterministic).
        use_per_session_threads: Kept, without effect.
        enable_cpu_mem_arena: Kept, without effect.
        enable_mem_pattern: Kept, without effect.
        enable_mem_reuse: Kept, without effect.
    """

    __slots__ = (
        "_config",
        "enable_cpu_mem_arena",
        "enable_mem_pattern",
        "enable_mem_reuse",
        "enable_profiling",
        "execution_mode",
        "execution_order",
        "graph_optimization_level",
        "inter_op_num_threads",
        "intra_op_num_threads",
        "log_severity_level",
        "log_verbosity_level",
        "logid",
        "optimized_model_filepath",
        "profile_file_prefix",
        "use_deterministic_compute",
        "use_per_session_threads",
    )

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
        self.execution_order = ExecutionOrder.DEFAULT
        self.optimized_model_filepath = ""
        self.use_deterministic_compute = False
        self.use_per_session_threads = True
        self.enable_cpu_mem_arena = True
        self.enable_mem_pattern = True
        self.enable_mem_reuse = True
        self._config: dict[str, str] = {}

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in SessionOptions.__slots__:
            raise AttributeError(f"'SessionOptions' object has no attribute {name!r}")
        object.__setattr__(self, name, value)

    def add_session_config_entry(self, key: str, value: str) -> None:
        """Keep a session configuration entry (read back by :meth:`get_session_config_entry`).

        Only ``"onnxcore.strict"`` changes anything: ``"1"`` makes the session refuse a model for any error
        finding, as :class:`onnxcore.Session` does; the façade's default runs what onnxruntime runs, with a
        warning."""
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

    def register_custom_ops_library(self, library_path: str) -> None:
        """Not provided: custom operators are Python kernels here (``onnxcore.kernels.KernelSet``).

        Raises:
            UnsupportedFeatureError: always.
        """
        raise UnsupportedFeatureError(
            f"register_custom_ops_library({library_path!r}): onnxcore loads no native operator library; "
            "register Python kernels (onnxcore.kernels.KernelSet) instead"
        )

    def add_free_dimension_override_by_name(self, dim_name: str, dim_value: int) -> None:
        """Not provided.

        Raises:
            UnsupportedFeatureError: always.
        """
        raise UnsupportedFeatureError(f"add_free_dimension_override_by_name({dim_name!r}, {dim_value}) is not provided")

    def add_free_dimension_override_by_denotation(self, dim_denotation: str, dim_value: int) -> None:
        """Not provided.

        Raises:
            UnsupportedFeatureError: always.
        """
        raise UnsupportedFeatureError(
            f"add_free_dimension_override_by_denotation({dim_denotation!r}, {dim_value}) is not provided"
        )

    def copy(self) -> SessionOptions:
        """An independent copy (a session keeps its own: later changes do not reach it)."""
        other = copy.copy(self)
        object.__setattr__(other, "_config", dict(self._config))
        return other

    @property
    def strict(self) -> bool:
        """Whether the ``"onnxcore.strict"`` configuration entry selects strict validation."""
        return self._config.get(STRICT_CONFIG_KEY, "0").strip().lower() in ("1", "true", "yes")


class RunOptions:
    """Options of one ``InferenceSession.run`` (onnxruntime's names and defaults): ``terminate`` stops the runs
    using these options; the other fields are kept without effect. Unknown attributes are refused by name."""

    __slots__ = ("_config", "log_severity_level", "log_verbosity_level", "logid", "only_execute_path_to_fetches",
                 "terminate")  # fmt: skip

    def __init__(self) -> None:
        self.log_severity_level = -1
        self.log_verbosity_level = 0
        self.logid = ""
        self.terminate = False
        self.only_execute_path_to_fetches = False
        self._config: dict[str, str] = {}

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in RunOptions.__slots__:
            raise AttributeError(f"'RunOptions' object has no attribute {name!r}")
        object.__setattr__(self, name, value)

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


def get_available_providers() -> list[str]:
    """The execution providers onnxcore has: ``['CPUExecutionProvider']``."""
    return [CPU_PROVIDER]


def get_all_providers() -> list[str]:
    """onnxruntime's list of the providers its builds may have (only ``CPUExecutionProvider`` is available)."""
    return list(ALL_PROVIDERS)


def get_device() -> str:
    """The device onnxcore evaluates on: ``'CPU'``."""
    return "CPU"


def get_version_string() -> str:
    """The onnxruntime version whose Python API this façade follows (``onnxcore.__version__`` is onnxcore's)."""
    return ORT_API_VERSION


_logger = {"severity": 2, "verbosity": 0}


def set_default_logger_severity(severity: int) -> None:
    """Keep the default log severity (0 verbose ... 4 fatal), as onnxruntime takes it; onnxcore writes no log.

    Raises:
        ValueError: ``severity`` outside 0..4 (onnxruntime refuses it too).
    """
    if not 0 <= int(severity) <= 4:
        raise ValueError(f"set_default_logger_severity: severity must be 0..4, got {severity}")
    _logger["severity"] = int(severity)


def set_default_logger_verbosity(verbosity: int) -> None:
    """Keep the default log verbosity, as onnxruntime takes it; onnxcore writes no log."""
    _logger["verbosity"] = int(verbosity)


def logger_settings() -> dict[str, int]:
    """The kept default logger severity and verbosity."""
    return dict(_logger)


def providers_asked(providers: Any, provider_options: Any) -> dict[str, dict[str, str]]:
    """The providers a session gets, with their options, as onnxruntime spells them: only the CPU provider.

    A provider other than ``CPUExecutionProvider`` is left out with onnxruntime's warning (its text), and the
    session falls back to the CPU, as onnxruntime's CPU package does.

    Raises:
        ProviderError: a string instead of a list, or ``provider_options`` that do not pair with ``providers``.
    """
    if providers is None:
        return {CPU_PROVIDER: {}}
    if isinstance(providers, str):
        raise ProviderError(f"providers must be a list of provider names, got the string {providers!r}")
    entries = list(providers)
    if provider_options is not None and len(provider_options) != len(entries):
        raise ProviderError("'providers' and 'provider_options' should be the same length if both are given.")
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
            # onnxruntime's text, character for character (its missing space after the full stop included).
            warnings.warn(
                f"Specified provider '{name}' is not in available provider names."
                f"Available providers: '{', '.join(get_available_providers())}'",
                UserWarning,
                stacklevel=3,
            )
            continue
        out[name] = {str(key): str(value) for key, value in dict(options).items()}
    return out or {CPU_PROVIDER: {}}
