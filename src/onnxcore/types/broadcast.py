"""Broadcasting (Clause 6.6) over fixed extents, dimension variables and unknown extents.

Extents are ``int`` (fixed), ``str`` (a dimension variable) or ``None`` (unknown); :class:`Dim` and
:class:`Shape` are accepted too. Results are tuples of bare extents.

Rules at one position (after left-padding with 1):

* Fixed extents: equal, or 1 (Clause 6.6.2). Two different extents other than 1 -> ShapeError.
* A dimension variable equals only itself and is never assumed to be 1 (6.6.4): a variable against a
  fixed extent other than 1, or against another variable, is not broadcastable -> ShapeError.
  Against 1 it gives the variable.
* An unknown extent is unrelated to everything (6.5.2), so no static error can be proved from it.
  It gives the other extent when that is known and not 1 (both possibilities that can succeed at
  evaluation, the unknown being 1 or being equal to it, give that extent), and unknown otherwise
  (against 1 the result is 1 or the unknown extent itself). This is sound: whatever extent the
  unknown has at evaluation, the evaluation either fails or produces the result stated.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from onnxcore.errors import ShapeError
from onnxcore.types.valuetypes import Dim, Extent

__all__ = ["broadcast_shapes", "unidirectional_broadcast", "broadcast_dims"]


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


def _fmt(shapes: Sequence[tuple[Extent, ...]]) -> str:
    return " and ".join("(" + ", ".join("?" if e is None else str(e) for e in s) + ")" for s in shapes)


def broadcast_dims(extents: Sequence[Extent]) -> Extent:
    """The multidirectionally broadcast extent of one position (Clause 6.6.2, 6.6.4).

    Raises:
        ShapeError: When the extents are not broadcastable.
    """
    fixed: Extent = None  # the fixed extent other than 1, if any
    var: str | None = None
    unknown = False
    for e in extents:
        if e is None:
            unknown = True
        elif isinstance(e, str):
            if var is not None and e != var:
                raise ShapeError(f"dimension variables {var!r} and {e!r} are not known to be equal (Clause 6.6.4)")
            var = e
        elif e != 1:
            if fixed is not None and e != fixed:
                raise ShapeError(f"extents {fixed} and {e} are neither equal nor 1 (Clause 6.6.2)")
            fixed = e
    if var is not None:
        if fixed is not None:
            raise ShapeError(
                f"dimension variable {var!r} is not known to equal extent {fixed} (Clause 6.6.4: never assumed)"
            )
        return var
    if fixed is not None:
        return fixed
    return None if unknown else 1


def broadcast_shapes(*shapes: Iterable[Any]) -> tuple[Extent, ...]:
    """The shape of multidirectionally broadcasting ``shapes`` (Clause 6.6.2), as a tuple of extents.

    Args:
        *shapes: Shapes as sequences of int, str (dimension variable), None (unknown) or :class:`Dim`.

    Raises:
        ShapeError: When the shapes are not broadcastable (see the module docstring for variables).
    """
    ext = [_extents(s) for s in shapes]
    if not ext:
        return ()
    rank = max(len(s) for s in ext)
    if all(all(type(e) is int for e in s) for s in ext):  # fast path: fixed extents only
        out: list[Extent] = []
        for i in range(rank):
            best = 1
            for s in ext:
                k = i - rank + len(s)
                if k < 0:
                    continue
                e = s[k]
                if e != 1:
                    if best != 1 and e != best:
                        raise ShapeError(f"shapes {_fmt(ext)} are not broadcastable: at axis {i}, {best} vs {e}")
                    best = e  # type: ignore[assignment]
            out.append(best)
        return tuple(out)
    padded = [(1,) * (rank - len(s)) + s for s in ext]
    res = []
    for i in range(rank):
        try:
            res.append(broadcast_dims([s[i] for s in padded]))
        except ShapeError as e:
            raise ShapeError(f"shapes {_fmt(ext)} are not broadcastable at axis {i}: {e}") from None
    return tuple(res)


def unidirectional_broadcast(target: Iterable[Any], shape: Iterable[Any]) -> tuple[Extent, ...]:
    """The result of unidirectionally broadcasting ``shape`` (B) to ``target`` (A) (Clause 6.6.3).

    The result is the shape of A, except that an unknown extent of A facing a known extent of B
    other than 1 is given B's extent (the only extent for which the broadcast can succeed).

    Raises:
        ShapeError: When B has a higher rank than A, or some extent of B is neither A's nor 1.
    """
    a = _extents(target)
    b = _extents(shape)
    if len(b) > len(a):
        raise ShapeError(f"shape {_fmt([b])} has a higher rank than the target {_fmt([a])} (Clause 6.6.3)")
    bp = (1,) * (len(a) - len(b)) + b
    out: list[Extent] = []
    for i, (x, y) in enumerate(zip(a, bp, strict=True)):
        if y == 1 or y is None or x == y:
            out.append(x)
        elif x is None:
            out.append(y)
        else:
            why = (
                "a dimension variable equals only itself (Clause 6.6.4)"
                if isinstance(x, str) or isinstance(y, str)
                else "neither equal nor 1 (Clause 6.6.3)"
            )
            raise ShapeError(
                f"shape {_fmt([b])} is not unidirectionally broadcastable to {_fmt([a])}: "
                f"at axis {i}, {y} vs {x}: {why}"
            )
    return tuple(out)
