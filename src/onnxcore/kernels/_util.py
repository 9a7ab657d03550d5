"""Helpers shared by the kernel modules: axes, broadcasting (Clause 6.6) and element types.

Every kernel family imports from here; the functions below keep their signatures stable.
Errors are ours (Clause 15: bad input is refused with an :class:`~onnxcore.errors.OnnxCoreError`):
an axis out of range or a repeated axis raises :class:`EvaluationError`, shapes that do not
broadcast raise :class:`ShapeError`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from onnxcore.errors import EvaluationError, LimitError, ShapeError
from onnxcore.kernels.threads import BLOCK_ELEMENTS, blockwise
from onnxcore.limits import Limits, active_limits
from onnxcore.types.broadcast import unidirectional_extents
from onnxcore.types.elements import narrow_float_dtypes

__all__ = [
    "ACCUMULATE_ELEMENTS",
    "left_fold",
    "check_broadcast_size",
    "check_elements",
    "out_for",
    "with_rank",
    "BLAS_SUM_MIN",
    "SQUARE_SUM_MIN",
    "SHORT_ROWS",
    "short_sum",
    "RowTiles",
    "consecutive_blocks",
    "float_sum",
    "reduced_shape",
    "normalize_axis",
    "normalize_axes",
    "axes_from_input",
    "broadcast_shape",
    "check_broadcast",
    "check_unidirectional",
    "legacy_broadcast",
    "NARROW_FLOAT_DTYPES",
    "NUMPY_FLOATS",
    "is_narrow_float",
    "is_float",
    "is_integer",
    "is_unsigned",
    "compute_dtype",
    "to_compute",
    "from_compute",
    "as_tensor",
    "float_unary",
    "scalar_of",
    "int_list",
    "select",
    "distinct",
]


_LARGEST_ITEM = 16  # octets of the widest element the remembered bound covers (complex128; wider: the full test)
# (limits, count): the last limits check_elements saw, and an element count no tensor of at most _LARGEST_ITEM-octet
# elements reaching it can exceed any of them with. Replaced whole (threads read a complete pair).
_unbounded_below: tuple[Limits | None, int] = (None, -1)


def _remember_bound(limits: Limits) -> None:
    global _unbounded_below
    caps = [limits.max_tensor_elements]
    caps += [None if b is None else b // _LARGEST_ITEM for b in (limits.max_tensor_bytes, limits.max_alloc_bytes)]
    _unbounded_below = (limits, min((c for c in caps if c is not None), default=math.inf))  # type: ignore[assignment]


def check_elements(shape: tuple[int, ...] | list[int] | Sequence[int], what: str, *, itemsize: int = 8) -> None:
    """Refuse to allocate a tensor whose shape comes from data and exceeds the element limit.

    Shapes read from tensor values or attributes (ConstantOfShape, Expand, Tile, Range, Pad, Resize,
    ConvTranspose, ...) are untrusted (Clause 15.2): a huge request is refused with
    :class:`LimitError` before anything is allocated, rather than surfacing as ``MemoryError`` (or
    as the system killing the process once an over-committed allocation is written). The limit is
    ``max_tensor_elements`` of the session's :class:`onnxcore.Limits` (:func:`active_limits`), and with
    ``itemsize`` (octets per element of what will be allocated) ``max_tensor_bytes`` and ``max_alloc_bytes`` too.
    ``itemsize`` defaults to 8: most kernels compute in float64 or int64 whatever their output's type, so a
    kernel that allocates narrower elements only says so.
    """
    limits = active_limits()
    count = math.prod(shape)
    bound = _unbounded_below
    if limits is bound[0] and count <= bound[1] and itemsize <= _LARGEST_ITEM and min(shape, default=0) >= 0:
        return  # the common case: far below every limit (a kernel's call on a small tensor costs little more)
    if min(shape, default=0) < 0:
        raise EvaluationError(f"{what}: negative extent in shape {tuple(shape)}")
    _remember_bound(limits)
    limit = limits.max_tensor_elements
    if limit is not None and count > limit:
        raise LimitError(f"{what}: shape {tuple(shape)} exceeds the limit of {limit} elements (Clause 15.4)")
    for name in ("max_tensor_bytes", "max_alloc_bytes"):
        byte_limit = getattr(limits, name)
        if byte_limit is not None and count * itemsize > byte_limit:
            raise LimitError(
                f"{what}: shape {tuple(shape)} of {itemsize}-octet elements ({count * itemsize} octets) exceeds "
                f"{name} ({byte_limit}) (Clause 15.4)"
            )


def check_broadcast_size(arrays: Sequence[np.ndarray], what: str) -> None:
    """Refuse a broadcast whose result would exceed the element limit (:func:`check_elements`).

    Broadcasting multiplies extents: a ``(100000, 1)`` and a ``(1, 100000)`` constant of 400 kB each make
    10^10 elements. The result cannot hold more elements than the product of the inputs' sizes, so the exact
    extents are worked out only when that product is over the limit: the common case costs a multiplication.
    """
    limit = active_limits().max_tensor_elements
    if limit is None:
        return
    # (two operands, a binary operator's: their product without math.prod's generator, a third of the check)
    if (arrays[0].size * arrays[1].size if len(arrays) == 2 else math.prod(a.size for a in arrays)) <= limit:
        return
    rank = max(a.ndim for a in arrays)
    shape = []
    for k in range(rank):
        dims = [a.shape[a.ndim - rank + k] for a in arrays if a.ndim - rank + k >= 0]
        shape.append(0 if 0 in dims else max(dims))
    check_elements(shape, what)


def out_for(y: np.ndarray) -> np.ndarray | None:
    """``y`` as the ``out`` of a ufunc writing its result into ``y`` where that pays; None (a new array) for an array
    of one element, which numpy (2.4) writes into more slowly than it makes one (1.4 against 0.6 us: a classifier's
    one row, a regressor's one value)."""
    return None if y.size == 1 else y


def with_rank(c: np.ndarray, rank: int) -> np.ndarray:
    """``c`` with leading extents of 1 up to ``rank`` (a view; ``c`` itself when its rank is not lower): what the
    multidirectional broadcast (Clause 6.6.2) makes of it against an operand of that rank, given to numpy ready,
    which broadcasts operands of one rank faster (0.6 against 1.4 us for a ``(1, 1)`` and a ``(1,)``, numpy 2.4)."""
    return c.reshape((1,) * (rank - c.ndim) + c.shape) if c.ndim < rank else c


# ---------------------------------------------------------------------------------------------
# Axes
# ---------------------------------------------------------------------------------------------


def normalize_axis(axis: int, rank: int, *, name: str = "axis", allow_end: bool = False) -> int:
    """Map a possibly negative ``axis`` into ``[0, rank)`` (``[0, rank]`` with ``allow_end``).

    Args:
        axis: The axis as written in the model (negative counts from the back).
        rank: Rank of the tensor the axis refers to.
        name: Attribute or input name, for the error message.
        allow_end: Accept ``rank`` itself (and ``-rank-1``), as insertion positions do.

    Raises:
        EvaluationError: the axis is out of range.
    """
    hi = rank + 1 if allow_end else rank
    a = int(axis)
    if a < -hi or a >= hi:
        raise EvaluationError(f"{name}={a} is out of range for rank {rank} (accepted [{-hi}, {hi - 1}])")
    return a + hi if a < 0 else a


def normalize_axes(
    axes: Iterable[int] | np.ndarray, rank: int, *, name: str = "axes", allow_end: bool = False
) -> tuple[int, ...]:
    """Normalise every axis of ``axes`` (see :func:`normalize_axis`) and refuse repeats.

    Returns:
        The axes in the order given, each in ``[0, rank)``.

    Raises:
        EvaluationError: an axis out of range or named twice.
    """
    # Plain Python ints: this runs once per node evaluation, so it avoids numpy calls.
    vals = axes.ravel().tolist() if isinstance(axes, np.ndarray) else [int(a) for a in axes]
    hi = rank + 1 if allow_end else rank
    out = []
    for a in vals:
        if a < -hi or a >= hi:
            raise EvaluationError(f"{name}={a} is out of range for rank {rank} (accepted [{-hi}, {hi - 1}])")
        out.append(a + hi if a < 0 else a)
    if len(set(out)) != len(out):
        raise EvaluationError(f"{name} {vals} repeats an axis")
    return tuple(out)


def axes_from_input(axes: np.ndarray | None) -> list[int] | None:
    """The list of ints held by an optional 1-D ``axes`` input (``None`` stays ``None``).

    Raises:
        EvaluationError: the tensor is not of an integer type or has rank greater than 1.
    """
    if axes is None:
        return None
    arr = np.asarray(axes)
    if arr.ndim > 1:
        raise EvaluationError(f"axes input must be 1-D, got shape {arr.shape}")
    if arr.size and arr.dtype.kind not in "iu":
        raise EvaluationError(f"axes input must be an integer tensor, got {arr.dtype}")
    return [int(a) for a in arr.ravel().tolist()]


def int_list(value: Any) -> list[int]:
    """An INTS attribute or a 0-/1-D integer tensor as a list of Python ints."""
    return [int(v) for v in np.asarray(value).ravel()]


def scalar_of(value: Any, *, name: str = "input") -> Any:
    """The single element of a scalar (rank 0) or one-element tensor, as a Python number.

    Raises:
        EvaluationError: the tensor holds other than exactly one element.
    """
    arr = np.asarray(value)
    if arr.size != 1:
        raise EvaluationError(f"{name} must hold exactly one element, got shape {arr.shape}")
    return arr.reshape(()).item()


# ---------------------------------------------------------------------------------------------
# Broadcasting (Clause 6.6)
# ---------------------------------------------------------------------------------------------


def broadcast_shape(*shapes: Sequence[int]) -> tuple[int, ...]:
    """The multidirectional broadcast (Clause 6.6.2) of concrete shapes.

    Raises:
        ShapeError: the shapes are not multidirectionally broadcastable.
    """
    if len(shapes) == 2 and len(shapes[0]) == len(shapes[1]):
        # Two shapes of one rank (an Expand's input and target, a binary node's operands): extent by extent, without
        # numpy's broadcast_shapes (2 us, as much as a small node's work); anything else goes there.
        out = []
        for a, b in zip(shapes[0], shapes[1]):
            if a == b or b == 1:
                out.append(int(a))
            elif a == 1:
                out.append(int(b))
            else:
                break
        else:
            return tuple(out)
    try:
        return tuple(np.broadcast_shapes(*(tuple(s) for s in shapes)))
    except ValueError:
        raise ShapeError(
            "shapes " + ", ".join(str(tuple(s)) for s in shapes) + " are not broadcastable (Clause 6.6.2)"
        ) from None


def check_broadcast(*arrays: np.ndarray) -> tuple[int, ...]:
    """The multidirectional broadcast shape of ``arrays``; raises :class:`ShapeError` if none."""
    return broadcast_shape(*(a.shape for a in arrays))


def check_unidirectional(b_shape: Sequence[int], a_shape: Sequence[int]) -> None:
    """Refuse ``b_shape`` unless it broadcasts unidirectionally to ``a_shape`` (Clause 6.6.3).

    Raises:
        ShapeError: ``b_shape`` has greater rank, or an extent differing from both ``a``'s and 1.
    """
    unidirectional_extents(tuple(a_shape), tuple(b_shape))  # the one rule (onnxcore.types.broadcast)


def legacy_broadcast(a: np.ndarray, b: np.ndarray, broadcast: int, axis: int | None) -> np.ndarray:
    """``b`` reshaped for the pre-opset-7 ``broadcast``/``axis`` attributes of binary ops.

    Before opset 7, ``B`` has ``A``'s shape (``broadcast=0``) or, with ``broadcast=1``, either a
    single element (of rank at most ``A``'s) or a shape equal to a contiguous run of ``A``'s
    dimensions starting at ``axis`` (by default the suffix). The definitions add "1-dim expansion
    doesn't work yet", but the onnx project's own vectors (pytorch-operator
    ``test_operator_add_size1_*``: B ``(2, 1)`` and ``(1, 3)`` against A ``(2, 3)``) expect an extent
    of 1 to stretch, as onnx's reference evaluator and shape inference do: it stretches here too (a
    listed divergence). The returned view of ``b`` broadcasts with numpy's rules against ``a``.

    Raises:
        ShapeError: the shapes do not satisfy the rule.
    """
    if not broadcast:
        if a.shape != b.shape:
            raise ShapeError(f"shapes {a.shape} and {b.shape} differ and broadcast=0 (opset < 7)")
        return b
    ra, rb = a.ndim, b.ndim
    if rb > ra:
        raise ShapeError(f"broadcast B {b.shape} has greater rank than A {a.shape}")
    if b.size == 1:
        return b.reshape(())
    start = ra - rb if axis is None else normalize_axis(axis, ra)
    run = a.shape[start : start + rb]
    if start + rb > ra or any(x != 1 and x != y for x, y in zip(b.shape, run)):
        raise ShapeError(f"B {b.shape} does not match A {a.shape} at axis {start} (opset < 7 broadcasting)")
    return b.reshape(b.shape + (1,) * (ra - start - rb))


# ---------------------------------------------------------------------------------------------
# Element types
# ---------------------------------------------------------------------------------------------


class _NarrowFloats:
    """The ml_dtypes floating-point types numpy cannot compute in natively (bfloat16, float8, float6, float4).

    Membership of a numpy-native dtype is answered without importing ml_dtypes (its types are all of kind V).
    """

    __slots__ = ()

    def __contains__(self, dtype: object) -> bool:
        return getattr(dtype, "kind", None) == "V" and dtype in narrow_float_dtypes()


NARROW_FLOAT_DTYPES = _NarrowFloats()
"""The ml_dtypes floating-point types numpy cannot compute in natively (``dt in NARROW_FLOAT_DTYPES``)."""


def is_narrow_float(dtype: Any) -> bool:
    """True for bfloat16 and the 8-, 6- and 4-bit float types (ml_dtypes)."""
    return np.dtype(dtype) in NARROW_FLOAT_DTYPES


NUMPY_FLOATS = frozenset(np.dtype(t) for t in (np.float16, np.float32, np.float64))
"""numpy's own float types (ml_dtypes' types excluded, even float8_e5m2, whose kind is "f" too): the types whose
ufuncs compute what the kernels compute, with numpy's rounding and overflow."""


def is_float(dtype: Any) -> bool:
    """True for every floating-point element type, narrow ones included (not complex)."""
    dt = np.dtype(dtype)
    return dt.kind == "f" or dt in NARROW_FLOAT_DTYPES


def is_integer(dtype: Any) -> bool:
    """True for signed and unsigned integers of numpy (not bool, not int4/int2 of ml_dtypes)."""
    return np.dtype(dtype).kind in "iu"


def is_unsigned(dtype: Any) -> bool:
    """True for unsigned integers."""
    return np.dtype(dtype).kind == "u"


def compute_dtype(dtype: Any) -> np.dtype[Any]:
    """The dtype arithmetic on ``dtype`` is done in: float32 for the narrow floats, else itself."""
    dt = np.dtype(dtype)
    return np.dtype(np.float32) if dt in NARROW_FLOAT_DTYPES else dt


def to_compute(x: np.ndarray) -> np.ndarray:
    """``x`` widened to float32 if it is a narrow float (a copy), else ``x`` itself."""
    return x.astype(np.float32) if x.dtype in NARROW_FLOAT_DTYPES else x


def from_compute(y: Any, dtype: Any) -> np.ndarray:
    """``y`` as an ndarray of ``dtype`` (rounded once for narrow floats); never a numpy scalar."""
    dt = np.dtype(dtype)
    arr = np.asarray(y)
    if arr.dtype != dt:
        arr = arr.astype(dt)
    return arr


def as_tensor(y: Any, dtype: Any = None) -> np.ndarray:
    """Wrap a numpy scalar or array-like as an ndarray (rank 0 stays a 0-d array)."""
    return np.asarray(y, dtype=dtype)


def float_unary(x: np.ndarray, fn: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """Apply the composite formula ``fn`` to ``x``, rounding once to ``x.dtype``.

    float16 and the narrow floats are computed in float32 (a formula of several operations
    would otherwise round at every step); float32 and float64 natively. ``fn`` must not write
    into its argument (it may be ``x`` itself); its result is converted back to ``x.dtype``.
    """
    if x.ndim == 0:
        # numpy returns scalars from 0-d operations, which in-place steps (out=) cannot take.
        return float_unary(x.reshape(1), fn).reshape(())
    dt = x.dtype
    native = dt.kind == "f" and dt.itemsize >= 4  # float32 and float64 (float16 is kind "f", the narrow ones "V")
    if not native and (dt in NARROW_FLOAT_DTYPES or dt.kind == "f"):
        return np.asarray(fn(x.astype(np.float32))).astype(dt)
    # Fewer elements than two blocks (blockwise would decline them): the formula whole, no output array made first
    # (a small tensor's kernel call costs about what its arithmetic does).
    if native and x.size >= 2 * BLOCK_ELEMENTS and x.flags.c_contiguous:
        # A large array by blocks: the formula's temporaries stay in cache, and blocks run on the kernel threads.
        out = np.empty(x.shape, dt)

        def block(xb: np.ndarray, ob: np.ndarray) -> None:
            ob[...] = fn(xb)

        if blockwise(block, x, out):
            return out
    y = fn(x)
    return y if type(y) is np.ndarray and y.dtype == dt else np.asarray(y).astype(dt)


def select(mask: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``numpy.where(mask, a, b)`` for ``a`` and ``b`` of one shape and dtype, bit-exact.

    For 2-, 4- and 8-byte types it blends the bit patterns with integer masks, which costs the
    same whatever the mask looks like; ``numpy.where`` is branchy and several times slower on
    an unpredictable mask. Other cases fall back to ``numpy.where``.
    """
    size = a.dtype.itemsize
    if a.shape != b.shape or a.dtype != b.dtype or mask.shape != a.shape or size not in (2, 4, 8) or a.dtype == object:
        return np.asarray(np.where(mask, a, b))
    u = np.dtype(f"u{size}")
    a_bits = np.ascontiguousarray(a).view(u)
    b_bits = np.ascontiguousarray(b).view(u)
    m = np.ascontiguousarray(mask, dtype=np.bool_).view(np.uint8).astype(u)
    np.negative(m, out=m)  # 1 -> all ones, 0 -> 0
    out = np.bitwise_xor(a_bits, b_bits)
    out &= m
    out ^= b_bits
    # ascontiguousarray made rank 0 into rank 1: restore the shape.
    return out.view(a.dtype).reshape(a.shape)


def consecutive_blocks(x: np.ndarray, ax: tuple[int, ...] | None) -> tuple[int, int, int] | None:
    """``(A, R, B)`` when ``x`` is C-contiguous and reducing ``ax`` is reducing the middle axis of
    ``x.reshape(A, R, B)`` (the reduced axes are consecutive), else None."""
    if not x.flags.c_contiguous or x.size == 0:
        return None
    axes = sorted({a % x.ndim for a in ax}) if ax is not None else list(range(x.ndim))
    if not axes or axes != list(range(axes[0], axes[-1] + 1)):
        return None
    shape = x.shape
    return math.prod(shape[: axes[0]]), math.prod(shape[axes[0] : axes[-1] + 1]), math.prod(shape[axes[-1] + 1 :])


# From this many elements a sum over consecutive axes is a BLAS product with ones. numpy's reduction runs one inner
# loop per output value, so short rows are slow even in small arrays: (576, 4) float32 rows (a squeeze-and-excitation
# block's ReduceMean over H, W) take 10 us in add.reduce and 1.3 us by BLAS; (96, 16) 2.8 and 1.0 us; at a few
# hundred elements the two cost the same (measured, AMD EPYC and OpenBLAS).
BLAS_SUM_MIN = 1 << 8

# From this many elements a sum of squares over consecutive axes is one einsum (below, numpy's square then its
# reduction): einsum's set-up costs about as much as a small pass, and keeping numpy's order there keeps the values
# scripts have published for small models (k-means' squared norms).
SQUARE_SUM_MIN = 1 << 14


SHORT_ROWS = 64
"""Rows from which a reduction over a short last axis runs as passes over its columns (:func:`short_sum`, and
the kernels' max, min and product): numpy's reduction runs its inner loop once per row, which costs little for
fewer."""


def short_sum(xc: np.ndarray, ax: tuple[int, ...] | None, keepdims: bool) -> np.ndarray | None:
    """numpy's float sum over a short last axis (2 to 15 values) of a C-contiguous ``xc`` (``np.add.reduce(xc,
    axis=ax, keepdims=keepdims)``) as passes over its columns, or None elsewhere.

    numpy sums a contiguous row of fewer than 8 values in order, and one of 8 to 15 as ``((x0 + x1) + (x2 + x3)) +
    ((x4 + x5) + (x6 + x7))`` then the rest in order (its pairwise summation's unrolled block); the passes add the
    same values in the same order, so the bits are the reduction's, where its inner loop ran once per row (1,000
    rows of 10 squares: 22 against 12 us). A row of another layout is iterated in another order by numpy: None."""
    if ax is None or len(ax) != 1 or ax[0] != xc.ndim - 1 or not xc.flags.c_contiguous:
        return None
    m = xc.shape[-1]
    if not 2 <= m < 16 or xc.size < m * SHORT_ROWS:
        return None
    cols = [xc[..., j] for j in range(m)]
    if m < 8:
        y = np.add(cols[0], cols[1])
        rest = cols[2:]
    else:
        y = np.add(np.add(cols[0], cols[1]), np.add(cols[2], cols[3]))
        np.add(y, np.add(np.add(cols[4], cols[5]), np.add(cols[6], cols[7])), out=y)
        rest = cols[8:]
    for c in rest:
        np.add(y, c, out=y)
    return y[..., None] if keepdims else y


TILED_ROW_MAX = 32
"""The longest row :class:`RowTiles` repeats. numpy runs a binary ufunc whose operand broadcasts along the rows
of the other one inner loop per row, and a loop of a few elements costs about what its call does: 1,000 x 10
float32 minus a row of 10 took 12.4 us, the same with the row repeated 100 times 5.6 us (numpy 2.4, AMD EPYC);
rows of 32 still gain a quarter."""

_TILE_ELEMENTS = 1024  # elements of a repeated row: a few cache lines' worth of loop per call, little memory


class RowTiles:
    """A constant row (an operand that broadcasts along the last axis of the other: a scaler's offsets, a feature
    row's weights) repeated ``k`` times, so that numpy's loop over rows of a few elements becomes a loop over ``k``
    rows at once: ``x`` viewed as ``(n / k, k * d)`` against the repeated row, ``k`` the largest divisor of the row
    count ``n`` whose repetition holds at most ``_TILE_ELEMENTS`` (found once per shape). Every element meets the
    same operand element through the same ufunc as in the broadcast, so the values are the broadcast's bit for bit
    (a prepared Sub of a row, float32: 1,000 x 10 12 -> 8.5 us, 1,000 x 3 12.6 -> 8.8 us, 4,000 x 10 43 -> 15 us).

    Args:
        row: The constant; it holds one row (every extent but the last is 1).
    """

    __slots__ = ("_by_shape", "rank", "row")

    def __init__(self, row: np.ndarray) -> None:
        self.row = np.ascontiguousarray(row).reshape(-1)
        self.rank = row.ndim  # (an operand of lower rank would be broadcast to this one's: not taken)
        # Per operand shape: (the view's shape, the repeated row), or None where no repetition pays.
        self._by_shape: dict[tuple[int, ...], tuple[tuple[int, int], np.ndarray] | None] = {}

    @staticmethod
    def is_row(c: np.ndarray) -> bool:
        """Whether the constant ``c`` is a row :class:`RowTiles` repeats: every extent but the last 1, the last
        from 2 to :data:`TILED_ROW_MAX`."""
        d = c.shape[-1] if c.ndim else 0
        return 2 <= d <= TILED_ROW_MAX and c.size == d

    def _tiling(self, shape: tuple[int, ...]) -> tuple[tuple[int, int], np.ndarray] | None:
        d = self.row.size
        n = math.prod(shape) // d if d else 0
        k = min(n, _TILE_ELEMENTS // d) if d and n >= _MIN_ROWS else 0
        while k > 1 and n % k:
            k -= 1
        made = None
        if k >= _MIN_TILE_ROWS:
            tile = np.tile(self.row, k)
            tile.flags.writeable = False
            made = ((n // k, k * d), tile)
        by_shape = self._by_shape if len(self._by_shape) < 16 else {}
        by_shape[shape] = made
        self._by_shape = by_shape  # (replaced whole: a run in another thread reads a complete dict)
        return made

    def apply(self, uf: np.ufunc, x: np.ndarray, row_first: bool, out: np.ndarray | None = None) -> np.ndarray | None:
        """``uf(x, row)`` (``uf(row, x)`` with ``row_first``), into ``out`` (of ``x``'s shape and type, C-contiguous;
        a new array when None), for a C-contiguous ``x`` of the row's element type, of no lower rank, whose last
        axis is the row's and whose row count has a divisor that pays; None (nothing written) otherwise."""
        shape = x.shape
        got = self._by_shape.get(shape, _UNTILED)
        if got is _UNTILED:
            if x.dtype != self.row.dtype or len(shape) < self.rank or shape[-1] != self.row.size:
                return None
            got = self._tiling(shape)
        if (
            got is None
            or x.dtype != self.row.dtype
            or not x.flags.c_contiguous
            or (out is not None and not out.flags.c_contiguous)
        ):
            return None
        view, tile = got
        xv = x.reshape(view)
        if out is not None:
            uf(*((tile, xv) if row_first else (xv, tile)), out=out.reshape(view))
            return out
        y = uf(tile, xv) if row_first else uf(xv, tile)
        return y.reshape(shape)


_MIN_TILE_ROWS = 4  # fewer rows at once than this: numpy's broadcast costs no more
_MIN_ROWS = 128  # fewer rows: the view's making costs what the broadcast's loops do (100 x 10: 2.2 us either way)
_UNTILED: Any = object()


def float_sum(xc: np.ndarray, ax: tuple[int, ...] | None, keepdims: bool, *, square: bool = False) -> np.ndarray:
    """Sum (of squares with ``square``) of ``xc`` over ``ax``.

    For float32 and float64 over consecutive axes the sum is a product with a vector of ones (BLAS),
    and the sum of squares an einsum: 3-4x faster than numpy's reductions, whose inner loops are
    the short rows of the non-reduced axes. Both accumulate in another order than numpy's pairwise
    sum, which Clause 11.4 permits (the tolerance statement covers it).
    """
    least = SQUARE_SUM_MIN if square else BLAS_SUM_MIN
    blocks = consecutive_blocks(xc, ax) if xc.dtype in (np.float32, np.float64) and xc.size >= least else None
    # Reducing everything, numpy's pairwise sum runs one long SIMD loop and is the faster.
    if blocks is None or blocks[0] == blocks[2] == 1:
        add: Any = np.add  # numpy's stubs reject a non-literal keepdims on ufunc.reduce
        return np.asarray(add.reduce(np.square(xc) if square else xc, axis=ax, keepdims=keepdims))
    a, r, b = blocks
    if square:
        y = np.einsum("arb,arb->ab", *(xc.reshape(a, r, b),) * 2)
    elif b == 1:
        y = xc.reshape(a, r) @ np.ones(r, xc.dtype)
    elif a == 1:
        y = np.ones(r, xc.dtype) @ xc.reshape(r, b)
    else:
        y = np.matmul(np.ones((1, r), xc.dtype), xc.reshape(a, r, b))
    return reduced_shape(y, xc.shape, ax, keepdims)


def reduced_shape(y: np.ndarray, shape: tuple[int, ...], ax: tuple[int, ...] | None, keepdims: bool) -> np.ndarray:
    """``y`` (the reduced values in order) shaped as reducing ``shape`` over ``ax`` gives."""
    axes = set(range(len(shape))) if ax is None else {i % len(shape) for i in ax}
    if keepdims:
        return y.reshape([1 if i in axes else n for i, n in enumerate(shape)])
    return y.reshape([n for i, n in enumerate(shape) if i not in axes])


def distinct(values: np.ndarray) -> np.ndarray:
    """The distinct values of ``values`` (flattened), sorted: ``np.unique(values)`` for values without NaN.

    ``np.unique`` without ``return_*`` asks ``numpy.ma`` whether the array is masked, importing ``numpy.ma``: 7-14
    ms of the first session of a tree ensemble, whose preparation calls it. A sort and a comparison give the same.
    """
    flat = np.sort(np.asarray(values).ravel())
    if flat.size < 2:
        return flat
    keep = np.empty(flat.size, dtype=bool)
    keep[0] = True
    np.not_equal(flat[1:], flat[:-1], out=keep[1:])
    return flat[keep]


ACCUMULATE_ELEMENTS = 64
"""Elements per operand up to which :func:`left_fold` accumulates (numpy's accumulate along the first axis steps
through one element of every operand at a time: 50 operands of [1, 3] 38 -> 9 us against a loop of calls, but of
[64, 3] 54 against 16 us and of [1000, 3] 574 against 28 us)."""


def left_fold(uf: np.ufunc, stacked: np.ndarray, order: Sequence[int] | None = None) -> np.ndarray:
    """``uf(uf(s[0], s[1]), s[2])...`` over the first axis of ``stacked`` (in ``order``, by default its own), the
    variadic operators' left fold: by one ``accumulate``, sequential by definition (row ``i`` is row ``i - 1`` op
    operand ``i``, in the operands' type), for operands of a few elements; otherwise by one call per operand into
    the running result. A new array either way; ``stacked`` holds at least two operands."""
    lanes = stacked if order is None else stacked[list(order)]
    if lanes[0].size <= ACCUMULATE_ELEMENTS:
        return uf.accumulate(lanes, axis=0, dtype=lanes.dtype)[-1].copy()
    acc = uf(lanes[0], lanes[1])
    for i in range(2, lanes.shape[0]):
        uf(acc, lanes[i], out=acc)
    return acc
