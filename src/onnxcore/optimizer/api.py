"""``onnxcore.optimize``: a model simplified by the model rewrites, proved to compute what it computed.

The steps: load (a path keeps its external tensors in the file, memory-mapped, read only where folded), optionally
convert to another operator set version (:func:`onnxcore.convert_version`) and inline the model-local functions,
rewrite (:func:`onnxcore.runtime.rewrite_model.rewrite_model`: every graph, subgraph and function body, standard
operators only), annotate with inferred shapes (``value_info``) within the bytes the rewrites saved
(:mod:`onnxcore.optimizer.annotations`: the result is never larger than the model), validate
(:func:`onnxcore.check`), and verify (:mod:`onnxcore.optimizer.verify`). A result that fails verification is never
returned: the passes that fired are switched off one at a time to find the one that changed the result, and
:class:`~onnxcore.errors.OptimizeError` names it.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, TypeVar, cast

from onnxcore.build.inline import inline_local_functions
from onnxcore.convert import convert_version
from onnxcore.errors import InputError, OnnxCoreError, OptimizeError, ValidationError
from onnxcore.external import base_dir_of
from onnxcore.external.spill import lean_memory
from onnxcore.io import load
from onnxcore.optimizer.annotations import annotate_within
from onnxcore.optimizer.report import OptimizeReport, op_counts
from onnxcore.optimizer.shapes import fix_input_shapes
from onnxcore.optimizer.verify import Verification, input_sets, related_input_sets, verify
from onnxcore.proto import ModelProto
from onnxcore.proto.bridge import as_message
from onnxcore.runtime.optimize.model_passes import MODEL_PIPELINE, MODEL_REWRITE_NAMES
from onnxcore.runtime.rewrite_model import RewriteOutcome, model_size, rewrite_model
from onnxcore.validate import check

__all__ = ["LEVELS", "optimize"]

_F = TypeVar("_F", bound=Callable[..., Any])

_BASIC = frozenset(("fold_constants", "drop_noops", "drop_dead_nodes", "drop_unused_initializers",
                    "drop_unused_inputs"))  # fmt: skip

# How verify() says the original model refused every generated input set (nothing was compared).
_REFUSED = ("the model refuses", "no input set")

# Passes whose gain depends on the runtime's kernels, run at level "all" only. One MatMul by q|k|v's weights side by
# side and a Split: onnxruntime (one thread) ran BERT, DistilBERT and Llama 0.6-0.8 % slower with it at 8 tokens (its
# Split copies the three products out) and ViT 0.4 % faster at 197 tokens; the separate MatMuls are what its own
# fusions look for.
_RUNTIME_DEPENDENT = frozenset(("merge_parallel_matmuls",))

LEVELS: dict[str, frozenset[str]] = {
    "none": frozenset(),
    "basic": _BASIC,
    "default": frozenset(MODEL_REWRITE_NAMES) - _RUNTIME_DEPENDENT,
    "all": frozenset(MODEL_REWRITE_NAMES),
}
"""The passes each ``level`` runs (by name)."""


def _source(model: Any) -> tuple[ModelProto, str | None]:
    if isinstance(model, str | os.PathLike):
        return load(model), base_dir_of(model)
    if isinstance(model, bytes | bytearray | memoryview):
        return load(bytes(model)), None
    return as_message(model, ModelProto, "optimize"), None


def _lean(fn: _F) -> _F:
    """Run ``optimize`` in lean memory (:func:`onnxcore.external.spill.lean_memory`), spilling beside a source
    path: a model over 2 GiB then costs its mapped file and what a rewrite reads at a time, not copies of its
    weights."""

    @functools.wraps(fn)
    def run(*args: Any, **options: Any) -> Any:
        model = args[0] if args else options.get("model")
        where = os.path.dirname(os.path.abspath(model)) if isinstance(model, str | os.PathLike) else None
        with lean_memory(where):
            return fn(*args, **options)

    return cast(_F, run)


@_lean
def optimize(
    model: ModelProto | str | os.PathLike[str] | bytes | Any,
    *,
    level: str = "default",
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    keep_io: bool = True,
    verify: bool = True,
    disabled: Collection[str] = (),
    opset: int | None = None,
    fold_growth: float = 1.0,
    inline_functions: bool = False,
    seed: int = 0,
    inputs: Sequence[Mapping[str, Any]] | None = None,
    overridable_initializers: bool | None = None,
) -> tuple[ModelProto, OptimizeReport]:
    """Simplify a model without changing what it computes (the model rewrites, ``docs/guide/optimize.md``).

    Args:
        model: A ModelProto (onnxcore's or the onnx package's), a path (external data beside it stays in its file
            until written, read only where folded) or the model's octets.
        level: ``"none"`` (only the round trip, shapes annotated), ``"basic"`` (folding, no-ops, dead nodes,
            unused initializers), ``"default"`` (every pass but ``merge_parallel_matmuls``, whose gain depends on
            the runtime's kernels and the sequence length) or ``"all"`` (every pass).
        input_shapes: Input name -> shape: the result declares these shapes (their dimension variables fixed
            wherever the graph names them), so shape arithmetic over them folds; the proof runs at them. Without
            it the result keeps every dimension variable (:mod:`onnxcore.optimizer.shapes`).
        keep_io: Keep every graph input; False lets ``drop_unused_inputs`` remove inputs nothing reads.
        verify: Evaluate the model and the result on generated inputs and compare them (module docstring).
        disabled: Passes to switch off, by name (``onnxcore.optimizer.PASSES``).
        opset: Convert the model to this version of the ONNX operator set first.
        fold_growth: Constant folding may make the file at most this factor of its size (1.0: never larger).
        inline_functions: Inline the model-local functions first (their bodies are optimized either way).
        seed: Seed of the generated inputs.
        inputs: Feed sets (input name -> array) to verify with, in addition to the generated ones: real data for a
            model whose inputs are related (a mask as long as the cache plus one) that generated inputs cannot
            satisfy. When given, a generated set the model refuses is no reason to refuse.
        overridable_initializers: Whether initializers listed among the graph inputs stay values a caller may
            override (Clause 7.2; nothing folds through them). None: from IR version 4 they do; before IR 4 they are
            constants, as onnxruntime treats them (``docs/guide/optimize.md``).

    Returns:
        The optimized model and its :class:`OptimizeReport`.

    Raises:
        InputError: an unknown ``level`` or pass name, a bad ``fold_growth``, or an ``input_shapes`` entry that
            names no input or contradicts its declared shape.
        ValidationError: the model does not conform (Clause 10); nothing is optimized.
        OptimizeError: the result could not be proved equal (naming the pass found by bisection).
        ConversionError: ``opset`` cannot be reached.
    """
    if level not in LEVELS:
        raise InputError(f"optimize: level must be one of {sorted(LEVELS)}, got {level!r}")
    unknown = sorted(set(disabled) - set(MODEL_REWRITE_NAMES) - {r.name for r in MODEL_PIPELINE})
    if unknown:
        raise InputError(f"optimize: no pass named {unknown}; the passes: {list(MODEL_REWRITE_NAMES)}")
    source, base_dir = _source(model)
    if opset is not None:
        source = convert_version(source, opset)
    if inline_functions and source.functions:
        source = inline_local_functions(source)
    if input_shapes:
        source = fix_input_shapes(source, input_shapes)
    findings = check(source, base_dir=base_dir).errors
    if findings:
        raise ValidationError(f"optimize: the model does not conform: {findings[0]}")
    off = (frozenset(MODEL_REWRITE_NAMES) - LEVELS[level]) | frozenset(disabled)
    report = OptimizeReport(
        ops_before=op_counts(source),
        nodes_before=sum(op_counts(source).values()),
        size_before=model_size(source),
    )

    def attempt(off_now: frozenset[str]) -> RewriteOutcome:
        outcome = rewrite_model(
            source,
            disabled=off_now,
            keep_inputs=keep_io,
            fold_growth=fold_growth,
            base_dir=base_dir,
            overridable_initializers=overridable_initializers,
        )
        notes = annotate_within(outcome.model, report.size_before - model_size(outcome.model))
        outcome.model = notes.model
        report.annotations_kept, report.annotations_dropped = notes.kept, notes.dropped
        return outcome

    outcome = attempt(off)
    result = outcome.model
    errors = check(result, base_dir=base_dir).errors
    if errors:
        raise OptimizeError(f"optimize: the result does not conform (a defect of a pass): {errors[0]}")
    given = _given_inputs(source, inputs)
    if verify:
        proof = _prove(source, result, input_shapes, seed, given)
        if not proof.ok and not proof.shapes and proof.reason.startswith(_REFUSED):
            raise OptimizeError(f"optimize: cannot verify: {proof.reason} (give inputs= feeds or input_shapes the "
                                "model accepts, or verify=False optimizes without the proof)")  # fmt: skip
        if not proof.ok:
            culprit = _bisect(source, input_shapes, seed, off, list(outcome.fired), attempt, given)
            report.failed_pass = culprit
            blame = f"pass {culprit!r} changed the result" if culprit else "no single pass is to blame"
            raise OptimizeError(f"optimize: verification failed: {proof.reason} ({blame}); nothing was written",
                                culprit)  # fmt: skip
        report.verified = True
        report.max_error = proof.max_error
        report.verify_shapes = proof.shapes
    report.fired = dict(outcome.fired)
    report.ops_after = op_counts(result)
    report.nodes_after = sum(report.ops_after.values())
    report.size_after = model_size(result)
    return result, report


def _given_inputs(source: ModelProto, inputs: Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    """The caller's feed sets, each naming only graph inputs (a misspelt name would otherwise make the set one the
    model refuses, skipped without a word)."""
    if inputs is None:
        return []
    names = {vi.name for vi in source.graph.input} if source.graph is not None else set()
    if isinstance(inputs, Mapping):
        raise InputError("optimize: inputs must be a list of feed dicts (input name -> array), got one dict")
    sets = []
    for k, feeds in enumerate(inputs):
        if not isinstance(feeds, Mapping):
            raise InputError(f"optimize: inputs[{k}] must be a dict of input name -> array, got {type(feeds).__name__}")
        unknown = sorted(set(feeds) - names)
        if unknown:
            raise InputError(f"optimize: inputs[{k}] names no graph input: {unknown}; the inputs: {sorted(names)}")
        sets.append(dict(feeds))
    return sets


def _prove(
    source: ModelProto,
    result: ModelProto,
    input_shapes: Mapping[str, Sequence[int]] | None,
    seed: int,
    given: Sequence[Mapping[str, Any]] = (),
) -> Verification:
    """The caller's feed sets and the generated ones; when the model refuses all of them, the generated sets whose
    variables differ by one (:func:`~onnxcore.optimizer.verify.related_input_sets`)."""
    try:
        sets = [*given, *input_sets(source, input_shapes, seed=seed)]
        proof = verify(source, result, sets, seed=seed)
        if not proof.ok and not proof.shapes and proof.reason.startswith(_REFUSED):
            related = related_input_sets(source, input_shapes, seed=seed)
            if related:
                again = verify(source, result, related, seed=seed)
                if again.ok or again.shapes or not again.reason.startswith(_REFUSED):
                    return again
        return proof
    except OnnxCoreError as e:
        raise OptimizeError(f"optimize: cannot verify, the model cannot be evaluated here: {e} (verify=False "
                            "optimizes without the proof)") from e  # fmt: skip


def _bisect(
    source: ModelProto,
    input_shapes: Mapping[str, Sequence[int]] | None,
    seed: int,
    off: frozenset[str],
    fired: list[str],
    attempt: Any,
    given: Sequence[Mapping[str, Any]] = (),
) -> str | None:
    """The pass whose switching off makes the result agree: each fired pass alone first, then the fired passes
    switched off cumulatively in order (the last one switched off is named)."""
    for name in fired:
        if _prove(source, attempt(off | {name}).model, input_shapes, seed, given).ok:
            return name
    cumulative = set(off)
    for name in fired:
        cumulative.add(name)
        if _prove(source, attempt(frozenset(cumulative)).model, input_shapes, seed, given).ok:
            return name
    return None
