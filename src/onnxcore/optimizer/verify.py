"""The proof of an optimization: the model and its optimized form evaluated on the same inputs, compared.

Inputs are generated from the declared inputs: every dimension variable (and unknown extent) set to each of
:data:`SIZES` in turn (1 included, where a rewrite that assumed a broadcast would show), unless the caller pins the
input's shape; when the model refuses all of those (its variables are related: a mask one longer than the cache),
one variable at a time one more or one less than the others (:func:`related_input_sets`). Floats standard normal,
integers small and non-negative (indices stay in range), booleans random, strings short. An input set the original
model refuses (a size its arithmetic does not admit) is skipped; the two models must agree on every set the original
accepts, within the conformance tolerances (:func:`onnxcore.conformance.compare.compare_values`, Clause 11.4's
rounding), a float output's absolute tolerance scaled by its largest magnitude (:data:`WHOLE_MODEL_ATOL`). The
caller may add feed sets of real data (``onnxcore.optimize(inputs=...)``).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from onnxcore.conformance.compare import DEFAULT_ATOL, compare_values
from onnxcore.errors import OnnxCoreError, OutputShapeWarning
from onnxcore.proto import ModelProto, ValueInfoProto
from onnxcore.runtime import Session
from onnxcore.runtime.seeding import seeded
from onnxcore.types.elements import ElementType

__all__ = ["RELATED_SIZES", "SIZES", "Verification", "input_sets", "related_input_sets", "verify"]

WHOLE_MODEL_ATOL = 1e-5
"""The absolute tolerance of a float output, per unit of its largest magnitude (at least 1): a rewrite that rounds
weights anew (BatchNormalization folded into a Gemm's weights, a product and a sum merged) changes the rounding of
every sum the weights feed, and where a long sum cancels (an output of 4e-3 from terms a thousand times larger) the
difference exceeds the node-level tolerance of Clause 11.4 relative to the output while staying at the rounding of
the terms. A rewrite that changes what is computed (another epsilon, axis, slice or constant) moves outputs far
more."""


def _atol(expected: Any) -> float:
    """The absolute tolerance for one output (:data:`WHOLE_MODEL_ATOL`); the conformance default for non-floats."""
    if isinstance(expected, np.ndarray) and expected.dtype.kind in "fc" and expected.size:
        finite = np.abs(expected[np.isfinite(expected)]) if expected.dtype.kind == "f" else np.abs(expected)
        largest = float(finite.max()) if finite.size else 0.0
        return max(DEFAULT_ATOL, WHOLE_MODEL_ATOL * max(1.0, largest))
    return DEFAULT_ATOL


SIZES = (1, 3, 2)
"""The extents given to dimension variables, one input set each (1 first: the size exporters' traces forget)."""

RELATED_SIZES = (2, 3)
"""The sizes around which :func:`related_input_sets` sets one variable apart (one less stays at least 1)."""


@dataclass
class Verification:
    """The outcome of :func:`verify`.

    Attributes:
        ok: Every input set the original accepts gave equal outputs (and at least one was accepted).
        max_error: The largest absolute difference over every output of every set.
        shapes: The input shapes of the sets compared.
        reason: Why not ok (the output, the set and the difference, or why nothing could be compared).
    """

    ok: bool
    max_error: float = 0.0
    shapes: list[dict[str, tuple[int, ...]]] = field(default_factory=list)
    reason: str = ""


def _extents(vi: ValueInfoProto) -> list[int | str] | None:
    """The declared extents of a tensor input: an int, or the name of its variable (an unknown extent is a variable
    of its own, named after its input and axis); None without a declared shape."""
    tt = vi.type.tensor_type if vi.type is not None else None
    if tt is None or tt.shape is None:
        return None
    out: list[int | str] = []
    for axis, d in enumerate(tt.shape.dim):
        if d.dim_param:
            out.append(d.dim_param)
        elif d.dim_value is not None:
            out.append(int(d.dim_value))
        else:
            out.append(f"?{vi.name}:{axis}")
    return out


def _variables(fed: list[ValueInfoProto], pinned: Mapping[str, Sequence[int]]) -> list[str]:
    """The dimension variables of the fed inputs whose shapes are not pinned, in order of first appearance."""
    names: list[str] = []
    for vi in fed:
        if vi.name in pinned:
            continue
        for e in _extents(vi) or []:
            if isinstance(e, str) and e not in names:
                names.append(e)
    return names


def _value(et: ElementType, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    if et == ElementType.STRING:
        return np.array(rng.choice(["a", "bc", ""], size=shape), dtype=object)
    if et == ElementType.BOOL:
        return rng.integers(0, 2, size=shape).astype(bool)
    if et.is_float:
        return rng.standard_normal(shape).astype(et.np_dtype)
    return rng.integers(0, 3, size=shape).astype(et.np_dtype)


def _fed_inputs(model: ModelProto) -> list[ValueInfoProto]:
    g = model.graph
    if g is None:
        return []
    defaults = {t.name for t in g.initializer}
    return [vi for vi in g.input if vi.name not in defaults]


def _sets_for(
    model: ModelProto,
    assignments: Sequence[Mapping[str, int]],
    pinned: Mapping[str, Sequence[int]],
    rng: np.random.Generator,
) -> list[dict[str, np.ndarray]]:
    """One feed set per assignment of sizes to the dimension variables (repeats of a set of shapes left out)."""
    sets: list[dict[str, np.ndarray]] = []
    seen: set[tuple[Any, ...]] = set()
    for sizes in assignments:
        feeds: dict[str, np.ndarray] = {}
        for vi in _fed_inputs(model):
            tt = vi.type.tensor_type if vi.type is not None else None
            extents = _extents(vi)
            if tt is None or not tt.elem_type or (extents is None and vi.name not in pinned):
                raise OnnxCoreError(
                    f"input {vi.name!r} is not a tensor of a declared element type and shape: verification needs one "
                    "(give its shape with input_shapes, or verify=False)"
                )
            if vi.name in pinned:
                shape = tuple(int(d) for d in pinned[vi.name])
            else:
                shape = tuple(e if isinstance(e, int) else sizes[e] for e in extents or [])
            feeds[vi.name] = _value(ElementType(int(tt.elem_type)), shape, rng)
        key = tuple(sorted((k, v.shape) for k, v in feeds.items()))
        if key not in seen:
            seen.add(key)
            sets.append(feeds)
    return sets


def input_sets(
    model: ModelProto, pinned: Mapping[str, Sequence[int]] | None = None, *, seed: int = 0
) -> list[dict[str, np.ndarray]]:
    """Feeds for the model's inputs without a default (module docstring): one set per size in :data:`SIZES`, every
    dimension variable at that size, or one set when no input has a dimension variable."""
    pinned = pinned or {}
    names = _variables(_fed_inputs(model), pinned)
    return _sets_for(model, [dict.fromkeys(names, size) for size in SIZES], pinned, np.random.default_rng(seed))


def related_input_sets(
    model: ModelProto, pinned: Mapping[str, Sequence[int]] | None = None, *, seed: int = 0
) -> list[dict[str, np.ndarray]]:
    """Feeds for a model that refused every set of :func:`input_sets` (its variables are related, as a mask's length
    is a cache's plus one): at each size in :data:`RELATED_SIZES`, one variable one more, then one less, than the
    others, for each variable in turn (a model seldom relates its variables otherwise)."""
    pinned = pinned or {}
    names = _variables(_fed_inputs(model), pinned)
    assignments = [
        {n: size + (delta if n == name else 0) for n in names}
        for size in RELATED_SIZES
        for name in names
        for delta in (1, -1)
    ]
    return _sets_for(model, assignments, pinned, np.random.default_rng(seed + 1))


def verify(
    original: ModelProto, optimized: ModelProto, sets: Sequence[Mapping[str, np.ndarray]], *, seed: int = 0
) -> Verification:
    """Evaluate ``original`` and ``optimized`` on each input set and compare every output (module docstring). Both
    sessions' random operators draw from generators seeded alike (the passes never fold, merge or reorder them).

    Raises:
        OnnxCoreError: ``original`` cannot be evaluated (an operator without a kernel, a model it refuses).
    """
    with seeded(seed):
        source = Session(original)
    try:
        with seeded(seed):
            opt = Session(optimized)
    except OnnxCoreError as e:
        return Verification(False, reason=f"the optimized model cannot be evaluated: {e}")
    names = [d.name for d in source.get_outputs()]
    # The optimized model may have left out inputs nothing read (keep_io=False): it is fed only those it has.
    accepted = {d.name for d in opt.get_inputs()}
    with warnings.catch_warnings():
        # A generated size may differ from a fixed extent an output declares: the run says so, the proof need not.
        warnings.simplefilter("ignore", OutputShapeWarning)
        return _compare(source, opt, names, accepted, sets)


def _compare(
    original: Session, opt: Session, names: list[str], accepted: set[str], sets: Sequence[Mapping[str, np.ndarray]]
) -> Verification:
    worst = 0.0
    compared: list[dict[str, tuple[int, ...]]] = []
    refused = ""
    for feeds in sets:
        shapes = {k: tuple(int(x) for x in v.shape) for k, v in feeds.items()}
        try:
            expected = original.run(names, feeds)
        except OnnxCoreError as e:
            refused = refused or f"the model refuses inputs of shapes {shapes}: {e}"
            continue
        try:
            actual = opt.run(names, {k: v for k, v in feeds.items() if k in accepted})
        except OnnxCoreError as e:
            return Verification(False, worst, compared, f"the optimized model fails on inputs of shapes {shapes}: {e}")
        for name, got, want in zip(names, actual, expected):
            c = compare_values(got, want, atol=_atol(want))
            if not c.ok:
                return Verification(False, worst, compared,
                                    f"output {name!r} differs on inputs of shapes {shapes}: {c.reason}")  # fmt: skip
            worst = max(worst, float(c.max_abs))
        compared.append(shapes)
    if not compared:
        return Verification(False, reason=refused or "no input set to evaluate")
    return Verification(True, worst, compared)
