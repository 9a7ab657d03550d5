"""Broadcasting (Clause 6.6) over fixed extents, dimension variables and unknown extents: the one rule.

Extents are ``int`` (fixed), ``str`` (a dimension variable) or ``None`` (unknown, the representation
:class:`Dim` and shape inference both use); :class:`Dim` and :class:`Shape` are accepted too. Results
are tuples of bare extents. This module is the only statement of the rule: the public
:func:`broadcast_shapes` and :func:`unidirectional_broadcast`, shape inference
(:func:`onnxcore.infer.shape_core.broadcast`, ``unidirectional``) and the kernels' refusals
(``onnxcore.kernels._util.check_unidirectional``) all call it.

Position taken on Clause 6.6.4. Shapes are first extended on the left with extents of 1 to the greatest
rank (6.6.2). A static answer is then the extent the result has *if the evaluation succeeds*; a
refusal (:class:`ShapeError`) means no evaluation can succeed. Multidirectionally, at one position:

========================================  ==============================================================
extents at the position                   result
========================================  ==============================================================
all equal (the same int or variable)      that extent
1 and X (X fixed, variable or unknown)    X
a variable and a fixed n other than 1     n: the only value with which the evaluation can succeed. The
                                          variable is not concluded equal to n or to 1 (9.3); which
                                          it is, is checked at run time (6.6.4 forbids appealing to
                                          its value statically, so no static error either)
two different variables                   unknown (either may be 1, so the result may be either)
unknown and a fixed n other than 1        n, as for a variable (the unknown is 1 or n, or evaluation
                                          fails)
unknown and a variable, or two unknowns   unknown
two different fixed extents, neither 1    incompatible: ShapeError (no evaluation can succeed)
========================================  ==============================================================

Extent 0 is a fixed extent like any other: it broadcasts with 1 and with itself only, and gives 0
(numpy's rule; 6.6.2's "greatest extent" would say 1 for 0 against 1, which no evaluation produces).

Unidirectionally (B to A, 6.6.3) the result is A's extent, except where A's is unknown or a variable
and B's is a fixed n other than 1: the evaluation succeeds only when A's extent is n, so the result is
n. B's rank greater than A's, or a fixed extent of B neither 1 nor A's fixed extent, is incompatible.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from onnxcore.errors import ShapeError
from onnxcore.types.valuetypes import Dim, Extent

__all__ = [
    "broadcast_dims",
    "broadcast_extents",
    "broadcast_shapes",
    "unidirectional_broadcast",
    "unidirectional_dim",
    "unidirectional_extents",
]


def _extents(shape: Iterable[Any]) -> tuple[Extent, ...]:
    if shape is None:
        raise ShapeError("cannot broadcast a shape of unknown rank")
    out: list[Extent] = []
    for d in shape:
        if isinstance(d, Dim):
            out.append(d.value)
        elif d is None or isinstance(d, str):
            out.append(d or None)
        elif isinstance(d, bool):
            raise ShapeError(f"not a dimension: {d!r}")
        else:
            try:
                v = int(d)
            except (TypeError, ValueError):
                raise ShapeError(f"not a dimension: {d!r}") from None
            if v < 0:
                raise ShapeError(f"negative dimension extent {v}")
            out.append(v)
    return tuple(out)


def _fmt(shapes: Sequence[Sequence[Extent]]) -> str:
    return " and ".join("(" + ", ".join("?" if e is None else str(e) for e in s) + ")" for s in shapes)


def broadcast_dims(extents: Iterable[Extent]) -> Extent:
    """The multidirectionally broadcast extent of one position (Clause 6.6.2, 6.6.4; see the module docstring).

    Args:
        extents: The extents at the position, after left-padding with 1.

    Raises:
        ShapeError: Two different fixed extents, neither 1.
    """
    fixed: Extent = None  # the fixed extent other than 1, if any
    var: str | None = None
    vague = False  # an unknown extent, or two different variables: 1 or not is unknown
    for e in extents:
        if e is None:
            vague = True
        elif isinstance(e, str):
            if var is None:
                var = e
            elif e != var:
                vague = True
        elif e != 1:
            if fixed is not None and e != fixed:
                raise ShapeError(f"extents {fixed} and {e} are neither equal nor 1 (Clause 6.6.2)")
            fixed = e
    if fixed is not None:
        return fixed
    if vague:
        return None
    return 1 if var is None else var


def broadcast_extents(shapes: Sequence[Sequence[Extent]]) -> tuple[Extent, ...]:
    """:func:`broadcast_shapes` over shapes already given as bare extents (no conversion or validation).

    Raises:
        ShapeError: When the shapes are not broadcastable; the message names the shapes and the axis.
    """
    if not shapes:
        return ()
    rank = max(len(s) for s in shapes)
    out: list[Extent] = []
    for i in range(rank):
        column = [s[k] for s in shapes if (k := i - rank + len(s)) >= 0]
        try:
            out.append(broadcast_dims(column))
        except ShapeError as e:
            raise ShapeError(f"shapes {_fmt(shapes)} are not broadcastable at axis {i}: {e}") from None
    return tuple(out)


def broadcast_shapes(*shapes: Iterable[Any]) -> tuple[Extent, ...]:
    """The shape of multidirectionally broadcasting ``shapes`` (Clause 6.6.2, 6.6.4), as a tuple of extents.

    Args:
        *shapes: Shapes as sequences of int, str (dimension variable), None (unknown) or :class:`Dim`.

    Returns:
        The extents the result has if the evaluation succeeds (see the module docstring), e.g.
        ``broadcast_shapes(("N",), (3,)) == (3,)``.

    Raises:
        ShapeError: When no evaluation can succeed (two different fixed extents, neither 1, at one
            position), or a shape is not a shape.
    """
    return broadcast_extents([_extents(s) for s in shapes])


def unidirectional_dim(target: Extent, extent: Extent) -> Extent:
    """The extent at one position of unidirectionally broadcasting ``extent`` (B's) to ``target`` (A's), 6.6.3.

    Raises:
        ShapeError: ``extent`` is fixed, neither 1 nor ``target`` and ``target`` is fixed.
    """
    if extent == 1 or extent == target or extent is None or isinstance(extent, str):
        return target
    if target is None or isinstance(target, str):
        return extent  # the only extent of A with which the evaluation succeeds (not concluded of a variable, 9.3)
    raise ShapeError(f"extent {extent} is neither 1 nor the target's {target} (Clause 6.6.3)")


def unidirectional_extents(target: Sequence[Extent], shape: Sequence[Extent]) -> tuple[Extent, ...]:
    """:func:`unidirectional_broadcast` over shapes already given as bare extents.

    Raises:
        ShapeError: When ``shape`` is not unidirectionally broadcastable to ``target``.
    """
    if len(shape) > len(target):
        raise ShapeError(f"shape {_fmt([shape])} has a higher rank than the target {_fmt([target])} (Clause 6.6.3)")
    off = len(target) - len(shape)
    out = list(target)
    for j, y in enumerate(shape):
        try:
            out[off + j] = unidirectional_dim(target[off + j], y)
        except ShapeError as e:
            raise ShapeError(
                f"shape {_fmt([shape])} is not unidirectionally broadcastable to {_fmt([target])} "
                f"at axis {off + j}: {e}"
            ) from None
    return tuple(out)


def unidirectional_broadcast(target: Iterable[Any], shape: Iterable[Any]) -> tuple[Extent, ...]:
    """The result of unidirectionally broadcasting ``shape`` (B) to ``target`` (A) (Clause 6.6.3, 6.6.4).

    Args:
        target: A's shape (see :func:`broadcast_shapes` for the forms accepted).
        shape: B's shape.

    Returns:
        A's shape, except that an unknown extent or a variable of A facing a fixed extent of B other
        than 1 is given B's extent (the only extent with which the evaluation can succeed).

    Raises:
        ShapeError: When B has a higher rank than A, or a fixed extent of B is neither 1 nor A's fixed
            extent.
    """
    return unidirectional_extents(_extents(target), _extents(shape))
