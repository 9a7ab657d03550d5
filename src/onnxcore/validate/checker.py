"""``check``: build the indexes once, run every registered rule, collect every finding (Clause 10.5)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

# The rule modules register their rules on import, in this order (the order of the findings).
# isort: off
from onnxcore.validate import rules_model  # noqa: F401
from onnxcore.validate import rules_proto  # noqa: F401
from onnxcore.validate import rules_graph  # noqa: F401
from onnxcore.validate import rules_ops  # noqa: F401
from onnxcore.validate import rules_ml  # noqa: F401
from onnxcore.validate import rules_sized  # noqa: F401
from onnxcore.validate import rules_tensor  # noqa: F401
from onnxcore.validate import rules_function  # noqa: F401

# isort: on
from onnxcore import io
from onnxcore.errors import DecodeError, LimitError
from onnxcore.graph.bound import BoundModel, model_argument
from onnxcore.kernels.registry import KernelSet
from onnxcore.limits import DEFAULT_LIMITS, Limits, collection_paused
from onnxcore.proto.bridge import OnnxMessage, is_onnx_message
from onnxcore.proto.messages import ModelProto
from onnxcore.validate.catalog import CHECK_RULES, rule
from onnxcore.validate.context import Context
from onnxcore.validate.report import ERROR, Finding, Report

__all__ = ["check", "check_context"]


# Conditions found before any rule can run: registered so that their codes are catalogued.
@rule("E-DECODE", "12", "the octets are not a well-formed model (reported instead of every other rule)")
def _decode(ctx: Context) -> Any:
    return ()


@rule("E-DECODE-LIMIT", "15.4", "decoding refused at a resource limit (message nesting or size): a refusal")
def _decode_limit(ctx: Context) -> Any:
    return ()


@rule("E-INTERNAL", "10.1", "a rule failed on this model (a defect of the validator; reported, never raised)")
def _internal(ctx: Context) -> Any:
    return ()


_SPECIAL = frozenset({"E-DECODE", "E-DECODE-LIMIT", "E-INTERNAL"})


def _load(source: str | os.PathLike[str] | bytes | bytearray | memoryview, limits: Limits) -> ModelProto:
    # Clause 15.5: resolving external data is an explicit step, never part of checking.
    return io.load(source, external_data=False, limits=limits)


# Findings of one rule listed in a report (Clause 15.4): a file of a million empty entries (two octets each) would
# otherwise cost a million findings, each with its path and message, and seconds per hundred thousand; past the bound
# one closing finding of the rule says that more are not listed.
MAX_FINDINGS_PER_RULE = 10_000


def check(
    model_or_path: ModelProto | OnnxMessage | str | os.PathLike[str] | bytes | bytearray | memoryview,
    *,
    full: bool = True,
    limits: Limits | None = None,
    base_dir: str | os.PathLike[str] | None = None,
    bound: BoundModel | None = None,
) -> Report:
    """Validate a model under Clause 10 and report every finding.

    Never raises on a bad model: malformed octets, a model breaking any rule, even a rule that
    fails, all become findings. Reads no weight: ``raw_data`` is measured, never read, and
    external data is verified by reference (Clause 13.2, 15.3), not loaded.

    Args:
        model_or_path: A decoded :class:`~onnxcore.ModelProto` (or the onnx package's, converted by its
            octets), the octets of one, or a path to a model file (loaded without its external data).
        full: Also run the type checks (Clause 10.3, by type inference) and read sparse indices.
        limits: Resource limits (Clause 15.4); :data:`onnxcore.DEFAULT_LIMITS` when None.
        base_dir: Directory against which external references are resolved and verified; a
            path argument supplies its own directory when this is None.
        bound: The model already bound (:func:`onnxcore.graph.bind`, under the same limits), so that a caller
            that goes on to evaluate it binds it once.

    Returns:
        The :class:`Report`.

    Raises:
        OnnxCoreError: the file cannot be read at all: a :class:`~onnxcore.errors.ModelFileNotFoundError`
            (a ``FileNotFoundError`` too) when it does not exist, and likewise ``IsADirectoryError`` and
            ``PermissionError``.
        TypeError: ``model_or_path`` is none of the accepted kinds.
    """
    with collection_paused():  # binding, rules and inference make objects per node and free few
        return _check(model_or_path, full, limits, base_dir, bound)


def _check(
    model_or_path: ModelProto | OnnxMessage | str | os.PathLike[str] | bytes | bytearray | memoryview,
    full: bool,
    limits: Limits | None,
    base_dir: str | os.PathLike[str] | None,
    bound: BoundModel | None,
) -> Report:
    lim = limits or DEFAULT_LIMITS
    report = Report()
    model: ModelProto
    if isinstance(model_or_path, ModelProto) or is_onnx_message(model_or_path):
        model = model_argument(model_or_path, bound, "check")
    elif isinstance(model_or_path, bytes | bytearray | memoryview | str | os.PathLike):
        is_path = isinstance(model_or_path, str | os.PathLike)
        if is_path:
            report.source = os.fspath(model_or_path)  # type: ignore[arg-type]
            if base_dir is None:
                base_dir = Path(os.fspath(model_or_path)).resolve().parent  # type: ignore[arg-type]
        try:
            model = _load(model_or_path, lim)
        except (DecodeError, LimitError) as e:
            code, clause = ("E-DECODE-LIMIT", "15.4") if isinstance(e, LimitError) else ("E-DECODE", "12")
            report.findings.append(Finding(ERROR, code, clause, str(e), getattr(e, "path", "") or ""))
            return report
    else:
        raise TypeError(f"check() takes a ModelProto, octets or a path, not {type(model_or_path).__name__}")

    report, ctx = check_context(model, lim, full=full, base_dir=base_dir, bound=bound, report=report)
    if ctx is not None and bound is None:
        ctx.bound.release()  # made here and dropped here: freed by reference counting, not by the collector
    return report


def check_context(
    model: ModelProto,
    limits: Limits,
    *,
    full: bool = True,
    base_dir: str | os.PathLike[str] | None = None,
    bound: BoundModel | None = None,
    report: Report | None = None,
    custom_ops: KernelSet | None = None,
) -> tuple[Report, Context | None]:
    """:func:`check` of a decoded model, with the :class:`Context` the rules read (None if it could not be
    built): a caller that evaluates the model next reuses its bound model and its inference. ``custom_ops``: the
    kernels that caller runs the model with (inference folds with them, as its plan does)."""
    report = report if report is not None else Report()
    try:
        ctx = Context(model, limits=limits, full=full, bound=bound, custom_ops=custom_ops)
    except Exception as e:  # a defect of ours must not become the caller's crash
        report.findings.append(Finding(ERROR, "E-INTERNAL", "10.1", f"indexing failed: {type(e).__name__}: {e}", ""))
        return report, None
    if base_dir is not None:
        ctx.base_dir = os.fspath(base_dir)
    findings = report.findings
    for r in CHECK_RULES:
        if r.code in _SPECIAL or (r.full_only and not full):
            continue
        try:
            listed = 0
            for loc, msg in r.func(ctx):
                if listed == MAX_FINDINGS_PER_RULE:
                    # Stopping the rule's generator also stops its work on the rest of the model.
                    more = f"further findings of this rule are not listed (at most {MAX_FINDINGS_PER_RULE} per rule)"
                    findings.append(Finding(r.severity, r.code, r.clause, more, ""))
                    break
                findings.append(Finding(r.severity, r.code, r.clause, msg, loc))
                listed += 1
        except Exception as e:
            findings.append(Finding(ERROR, "E-INTERNAL", "10.1", f"rule {r.code} failed: {type(e).__name__}: {e}", ""))
    return report, ctx
