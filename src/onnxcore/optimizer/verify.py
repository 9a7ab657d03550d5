"""The proof of an optimization: the model and its optimized form evaluated on the same inputs, compared.

Inputs are generated from the declared inputs: every dimension variable (and unknown extent) set to each of
:data:`SIZES` in turn (1 included, where a rewrite that assumed a broadcast would show), unless the caller pins the
input's shape; floats standard normal, integers small and non-negative (indices stay in range), booleans random,
strings short. An input set the original model refuses (a size its arithmetic does not admit) is skipped; the two
models must agree on every set the original accepts, within the conformance tolerances
(:func:`onnxcore.conformance.compare.compare_values`, Clause 11.4's rounding).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from onnxcore.conformance.compare import compare_values
from onnxcore.errors import OnnxCoreError, OutputShapeWarning
from onnxcore.proto import ModelProto, ValueInfoProto
from onnxcore.runtime import Session
from onnxcore.runtime.seeding import seeded
from onnxcore.types.elements import ElementType

__all__ = ["SIZES", "Verification", "input_sets", "verify"]

SIZES = (1, 3, 2)
"""The extents given to dimension variables, one input set each (1 first: the size exporters' traces forget)."""


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


def _shape(vi: ValueInfoProto, size: int, pinned: Mapping[str, Sequence[int]]) -> tuple[int, ...] | None:
    if vi.name in pinned:
        return tuple(int(d) for d in pinned[vi.name])
    tt = vi.type.tensor_type if vi.type is not None else None
    if tt is None or tt.shape is None:
        return None
    return tuple(int(d.dim_value) if d.dim_value is not None and not d.dim_param else size for d in tt.shape.dim)


def _value(et: ElementType, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    if et == ElementType.STRING:
        return np.array(rng.choice(["a", "bc", ""], size=shape), dtype=object)
    if et == ElementType.BOOL:
        return rng.integers(0, 2, size=shape).astype(bool)
    if et.is_float:
        return rng.standard_normal(shape).astype(et.np_dtype)
    return rng.integers(0, 3, size=shape).astype(et.np_dtype)


def input_sets(
    model: ModelProto, pinned: Mapping[str, Sequence[int]] | None = None, *, seed: int = 0
) -> list[dict[str, np.ndarray]]:
    """Feeds for the model's inputs without a default (module docstring): one set per size in :data:`SIZES`, or one
    set when no input has a dimension variable."""
    g = model.graph
    if g is None:
        return []
    pinned = pinned or {}
    defaults = {t.name for t in g.initializer}
    rng = np.random.default_rng(seed)
    sets: list[dict[str, np.ndarray]] = []
    seen: set[tuple[Any, ...]] = set()
    for size in SIZES:
        feeds: dict[str, np.ndarray] = {}
        for vi in g.input:
            if vi.name in defaults:
                continue
            tt = vi.type.tensor_type if vi.type is not None else None
            shape = _shape(vi, size, pinned)
            if tt is None or not tt.elem_type or shape is None:
                raise OnnxCoreError(
                    f"input {vi.name!r} is not a tensor of a declared element type and shape: verification needs one "
                    "(give its shape with input_shapes, or verify=False)"
                )
            feeds[vi.name] = _value(ElementType(int(tt.elem_type)), shape, rng)
        key = tuple(sorted((k, v.shape) for k, v in feeds.items()))
        if key not in seen:
            seen.add(key)
            sets.append(feeds)
    return sets


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
            c = compare_values(got, want)
            if not c.ok:
                return Verification(False, worst, compared,
                                    f"output {name!r} differs on inputs of shapes {shapes}: {c.reason}")  # fmt: skip
            worst = max(worst, float(c.max_abs))
        compared.append(shapes)
    if not compared:
        return Verification(False, reason=refused or "no input set to evaluate")
    return Verification(True, worst, compared)
