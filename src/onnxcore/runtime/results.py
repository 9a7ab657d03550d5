"""What a run hands back to its caller (Clause 8): each output the caller's own array, and a warning of an output
whose computed shape contradicts the graph's declaration (Clause 9.4).

A run's values live in its plan's slots. An output there may be a constant every run shares (read-only), a view
of a feed (``Identity(x)``, ``Reshape(x)``) or the very array of another output; :func:`outputs_for_caller` copies
exactly those, so that writing into one output never changes the caller's input, another output or a later run.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

from onnxcore.errors import LimitError, OutputShapeWarning
from onnxcore.runtime.plan import Plan, describe_value

__all__ = ["outputs_for_caller", "value_for_caller", "warn_on_shapes"]


def outputs_for_caller(plan: Plan, vals: list[Any], feeds: Mapping[str, Any]) -> list[Any]:
    """The run's outputs, each the caller's own array: a constant is copied (:func:`value_for_caller`), and so is
    an output whose memory is a feed's (``Identity(x)``, ``Reshape(x)``: numpy views) or an earlier output's (``y``
    and ``Identity(y)`` both outputs), so that writing into one output never changes the caller's input or another
    output (onnxruntime's outputs are separate arrays too)."""
    # (one plain loop: this is part of every run's fixed cost, where a generator expression or a call per output
    # costs a noticeable share of a small model's run)
    outs: list[Any] = []
    fed = feeds.values()
    for s in plan.output_slots:
        v = vals[s]
        if type(v) is not np.ndarray:
            outs.append(value_for_caller(v, plan.names[s]))  # a subclass, a sequence, a map, None
            continue
        if not v.flags.writeable:
            outs.append(_copy_for_caller(v, plan.names[s]))  # a constant shared by every run
            continue
        shared = False
        owner = v.base
        if owner is None:  # owns its memory: shared only if it IS a feed or an earlier output
            for u in fed:
                if u is v:
                    shared = True
            for u in outs:
                if u is v:
                    shared = True
        else:
            # A view: its memory lies in its base's. When that base is an array owning its memory, an array whose
            # own base is another such array cannot overlap it (two allocations): the common case, settled with
            # identity tests rather than np.may_share_memory.
            distinct = type(owner) is np.ndarray and owner.flags.owndata
            for u in (*fed, *outs):
                if type(u) is not np.ndarray:
                    continue
                if distinct:
                    other = u.base
                    if other is None:
                        other = u
                    if other is not owner and type(other) is np.ndarray and other.flags.owndata:
                        continue
                if np.may_share_memory(v, u):
                    shared = True
        outs.append(_copy_for_caller(v, plan.names[s]) if shared else v)
    return outs


def value_for_caller(v: Any, name: str) -> Any:
    """``v`` as the caller may keep it: a read-only array (an initializer or a folded constant, shared by every run)
    copied, anything else as it is.

    Raises:
        LimitError: the copy does not fit in memory (it names the output ``name``).
    """
    if isinstance(v, np.ndarray) and not v.flags.writeable:
        return _copy_for_caller(v, name)
    return v


def _copy_for_caller(v: np.ndarray, name: str) -> np.ndarray:
    try:
        return v.copy()
    except MemoryError:
        # The copy is outside the plan's error wrapping: refuse by name rather than let MemoryError escape.
        raise LimitError(
            f"output {name!r} ({describe_value(v)}, {v.nbytes:,} octets) cannot be copied for the caller: "
            "out of memory (Clause 15.4)"
        ) from None


def warn_on_shapes(plan: Plan, outs: list[Any], declared_shapes: Mapping[str, tuple[Any, ...]]) -> None:
    """Warn (:class:`OutputShapeWarning`) of an output whose computed shape contradicts its declared one.

    onnxmltools declares LightGBM's ``label`` as ``[1]`` while a run gives ``(16,)``: the result is returned,
    as onnxruntime returns it, but not in silence (Clause 9.4). Called by ``Session.run`` itself: the warning
    points at the line that called ``run``.

    Args:
        plan: The plan the run evaluated.
        outs: Its outputs, in the order of ``plan.output_slots``.
        declared_shapes: The declared shape (None for an unknown extent, a string for a variable) by output name.
    """
    for s, value in zip(plan.output_slots, outs):
        name = plan.names[s]
        declared = declared_shapes.get(name)
        if declared is not None and isinstance(value, np.ndarray) and _contradicts(value.shape, declared):
            shown = "[" + ", ".join("?" if d is None else str(d) for d in declared) + "]"
            warnings.warn(
                f"output {name!r}: the run computed shape {list(value.shape)}, the graph declares {shown}",
                OutputShapeWarning,
                stacklevel=3,
            )


def _contradicts(shape: tuple[int, ...], declared: tuple[Any, ...]) -> bool:
    # Rank, or a fixed extent that differs; a dimension variable or an unknown extent contradicts nothing here.
    return len(shape) != len(declared) or any(isinstance(d, int) and d != n for n, d in zip(shape, declared))
