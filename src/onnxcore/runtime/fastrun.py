"""The common case of ``Session.run`` checked with a few comparisons (Clauses 6.5, 7.1, 15.4).

A run's fixed cost is what a one-node model or a tree ensemble at one row pays on every call: checking the feeds
against the declared inputs, entering the run's context (limits, threads, run control, numpy's floating-point
state), laying out the value slots and handing the outputs back. :class:`FeedChecks` precomputes, per declared
input, what a feed must be (a numpy array of the declared element type and rank, every fixed extent, every
dimension variable bound consistently, within the tensor limits) and accepts the common case without building a
message or reading a ``TypeProto``; a STRING input's feed (an array of ``str`` or ``bytes``) is converted to
``bytes`` elements in one pass (:meth:`FeedChecks.strings_as_bytes`, the general check's own conversion).
Anything else (another container, another dtype, a bad extent, a sequence input, an override of an initializer,
...) is left to the general checks of :mod:`onnxcore.runtime.feeds`, which
raise the errors (same classes, same messages) or convert the value: the fast check never decides a refusal.

:class:`IgnoreFloatErrors` is ``np.errstate(all="ignore")`` (Clause 11.2: IEEE 754 results are results, not
events) without constructing a context manager per run.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from onnxcore.limits import Limits
from onnxcore.proto import TensorProto, TypeProto
from onnxcore.runtime.feeds import np_dtype, string_feed

__all__ = ["FeedChecks", "IgnoreFloatErrors", "OutputShapes"]

_STRING = int(TensorProto.DataType.STRING)
_OBJECT = np.dtype(object)

# numpy >= 2 keeps its floating-point error state in a context variable; setting it directly costs a tenth of
# entering ``np.errstate``. Private names: when they are missing (numpy 1.x, a later change), the public context
# manager is used instead.
_EXTOBJ: Any = None
_MAKE_EXTOBJ: Any = None
try:
    from numpy._core import _ufunc_config, umath

    _EXTOBJ = getattr(_ufunc_config, "_extobj_contextvar", None)
    _MAKE_EXTOBJ = getattr(umath, "_make_extobj", None)
except ImportError:  # pragma: no cover - depends on numpy's version
    pass
if _EXTOBJ is None or _MAKE_EXTOBJ is None:  # pragma: no cover - depends on numpy's version
    _EXTOBJ = _MAKE_EXTOBJ = None


class IgnoreFloatErrors:
    """Enter and leave ``np.errstate(all="ignore")`` cheaply: :meth:`enter` returns what :meth:`leave` needs.

    The state set is made from the one in effect (numpy's buffer size and error callback are kept) and cached
    for it, so a run under a caller's own ``np.errstate`` or ``np.setbufsize`` sees exactly what ``np.errstate``
    would have given.
    """

    __slots__ = ("_cache",)

    def __init__(self) -> None:
        self._cache: tuple[Any, Any] = (None, None)

    def enter(self) -> Any:
        """Ignore floating-point errors in this context; the token for :meth:`leave`."""
        if _EXTOBJ is None:  # pragma: no cover - depends on numpy's version
            state = np.errstate(all="ignore")
            state.__enter__()
            return state
        current = _EXTOBJ.get()
        seen, made = self._cache
        if seen is not current:
            made = _MAKE_EXTOBJ(all="ignore")
            self._cache = (current, made)  # replaced whole: another thread reads a consistent pair
        return _EXTOBJ.set(made)

    @staticmethod
    def leave(token: Any) -> None:
        """Restore the state :meth:`enter` replaced."""
        if isinstance(token, contextvars.Token):
            _EXTOBJ.reset(token)
        else:  # pragma: no cover - depends on numpy's version
            token.__exit__(None, None, None)


class FeedChecks:
    """The fast check of a run's feeds: every input the caller must feed, as a numpy array that needs no check
    beyond a few comparisons (see the module docstring).

    Args:
        inputs: ``(name, declared type)`` of every graph input, in order.
        required: The inputs a caller must feed (no initializer supplies them).
        limits: The session's limits (their tensor bounds are read once).

    Attributes:
        usable: False when some required input is of a kind the fast check does not handle (then every run takes
            the general checks).
        names: The required inputs' names, in graph order.
    """

    __slots__ = ("_checks", "names", "strings", "usable")

    def __init__(self, inputs: Sequence[tuple[str, TypeProto | None]], required: frozenset[str], limits: Limits):
        checks: list[
            tuple[str, np.dtype[Any], int, tuple[tuple[int, int], ...], tuple[tuple[int, str], ...], bool]
        ] = []
        usable = True
        for name, tp in inputs:
            if name not in required:
                continue
            spec = _tensor_spec(tp)
            if spec is None:
                usable = False
                break
            checks.append((name, *spec))
        self.usable = usable
        # Per input, the most elements a feed may hold: max_tensor_elements and max_tensor_bytes (over the
        # element's size; a STRING element counts one reference) as one bound, so a feed is compared once.
        most = _most_elements(limits)
        self._checks = tuple((*c[:5], c[5], most(c[1].itemsize)) for c in checks) if usable else ()
        self.names = tuple(c[0] for c in self._checks)
        #: The required STRING inputs: their feeds pass :meth:`strings_as_bytes` before a run.
        self.strings = tuple(c[0] for c in self._checks if c[5])

    def check(self, feeds: Mapping[str, Any]) -> tuple[tuple[int, ...], ...] | None:
        """The shapes of the feeds (in :attr:`names` order) when they pass, else None (use the general checks).

        Passing means: ``feeds`` is a ``dict`` naming exactly the required inputs, each an ``np.ndarray`` of the
        declared element type and rank, each fixed extent as declared, each dimension variable one extent across
        all inputs, and each within ``max_tensor_elements`` and ``max_tensor_bytes``.
        """
        if type(feeds) is not dict or len(feeds) != len(self._checks):
            return None
        shapes = []
        dims: dict[str, int] | None = None
        for name, dtype, ndim, fixed, params, text, most in self._checks:
            v = feeds.get(name)
            if type(v) is not np.ndarray or v.ndim != ndim:
                return None
            if v.dtype != dtype and not (text and v.dtype.kind in "US"):
                return None
            shape = v.shape
            for axis, extent in fixed:
                if shape[axis] != extent:
                    return None
            if params:
                if dims is None:
                    dims = {}
                for axis, param in params:
                    if dims.setdefault(param, shape[axis]) != shape[axis]:
                        return None
            if most is not None and v.size > most:
                return None
            shapes.append(shape)
        return tuple(shapes)

    def strings_as_bytes(self, feeds: Mapping[str, Any]) -> Mapping[str, Any]:
        """``feeds`` with every STRING input's feed as an object array of ``bytes`` (the general check's
        conversion, :func:`~onnxcore.runtime.feeds.string_feed`: its errors, under the limits in force); the same
        dict when every one is already so."""
        out: dict[str, Any] | None = None
        for name in self.strings:
            v = feeds[name]
            conv = string_feed(v, f"input {name!r}")
            if conv is not v:
                if out is None:
                    out = dict(feeds)
                out[name] = conv
        return feeds if out is None else out


def _most_elements(limits: Limits) -> Callable[[int], int | None]:
    """The most elements of a given size a feed may hold under ``limits`` (None: no bound)."""
    max_elements, max_bytes = limits.max_tensor_elements, limits.max_tensor_bytes

    def most(itemsize: int) -> int | None:
        by_bytes = None if max_bytes is None else max_bytes // max(itemsize, 1)
        if max_elements is None:
            return by_bytes
        return max_elements if by_bytes is None else min(max_elements, by_bytes)

    return most


def _tensor_spec(
    tp: TypeProto | None,
) -> tuple[np.dtype[Any], int, tuple[tuple[int, int], ...], tuple[tuple[int, str], ...], bool] | None:
    """(dtype, rank, fixed extents, dimension variables, whether STRING) of a tensor declaration with an element
    type and a shape (a STRING one as dtype object); None for anything else (the general checks handle it)."""
    if tp is None or tp.which_oneof("value") != "tensor_type" or tp.tensor_type is None:
        return None
    tt = tp.tensor_type
    elem = int(tt.elem_type)
    if not elem or tt.shape is None:
        return None
    text = elem == _STRING
    dtype = _OBJECT if text else np_dtype(elem)
    if dtype is None or (dtype == _OBJECT and not text):
        return None
    fixed: list[tuple[int, int]] = []
    params: list[tuple[int, str]] = []
    for axis, d in enumerate(tt.shape.dim):
        if d.has("dim_value"):
            fixed.append((axis, int(d.dim_value)))
        elif d.dim_param:
            params.append((axis, d.dim_param))
    return dtype, len(tt.shape.dim), tuple(fixed), tuple(params), text


class OutputShapes:
    """The declared output shapes a run's results are compared with (:func:`onnxcore.runtime.results.warn_on_shapes`):
    per output position, the declared rank and fixed extents, for a quick test that finds nothing to warn about.

    Args:
        declared: The declared shape (``None`` for an unknown extent, a string for a variable) by output name.
        names: The outputs in the order a run returns them.
    """

    __slots__ = ("_checks",)

    def __init__(self, declared: Mapping[str, tuple[Any, ...]], names: Sequence[str]) -> None:
        self._checks = tuple(
            (i, len(shape), tuple((a, d) for a, d in enumerate(shape) if isinstance(d, int)))
            for i, name in enumerate(names)
            if (shape := declared.get(name)) is not None
        )

    def agree(self, outs: Sequence[Any]) -> bool:
        """Whether every output that is an array agrees with its declaration (nothing to warn about)."""
        for i, rank, fixed in self._checks:
            v = outs[i]
            if type(v) is not np.ndarray:
                if isinstance(v, np.ndarray):
                    return False  # a subclass: the general test decides
                continue
            shape = v.shape
            if len(shape) != rank:
                return False
            for a, d in fixed:
                if shape[a] != d:
                    return False
        return True
