"""Isomorphic sibling nodes evaluated once on stacked operands (Clause 8.2; the matcher is
``onnxcore.runtime.optimize.lanes``).

Converters of classical models write one chain of nodes per feature, per class or per member of an ensemble, side
by side: a polynomial expansion one ``ArrayFeatureExtractor -> ReduceProd`` per output column (65 pairs), a
binning encoder ``ArrayFeatureExtractor -> Cast -> Less -> ... -> OneHotEncoder -> Reshape`` per column, an
isolation forest eight nodes per tree, AdaBoost four per estimator. At a few rows each node costs its call (a
microsecond or more) for a handful of values, and the chains are most of the model's time.

Such siblings are *lanes*: nodes of one operator with equal attributes whose inputs at each position are one value
they share, constants of one shape and type (one per lane), values of the lanes of an earlier group (lane ``i``
reading lane ``i``), or distinct outputs of one node (gathered). A :class:`Lanes` step evaluates a group's ``k``
nodes once: its value is their outputs stacked along a new leading axis, ``[k, *lane shape]``, and its other
outputs are the lanes some other node reads (views of it). The stacked form computes exactly what each node
computes, bit for bit, because only operators whose value at each lane is the same computation on that lane's
elements take part (:func:`lane_kind`):

- ``map``: elementwise operators with multidirectional broadcasting (Clause 6.6.2): every stacked operand is given
  the rank of the lane's result plus the lane axis (leading ones, which broadcasting prepends anyway), so each
  element meets the same elements of the other operands; also the fused ``ElementwiseGraph`` of such operators
  (its program is a sequence of them; programs that differ only in the single-value constants of their
  ``AffineChain`` steps run as one, each lane's chain applied to its lane) and the ML encoders that map each
  element alone (``OneHotEncoder``, ``LabelEncoder``, ``Binarizer``);
- ``axis``: ``ArgMax``/``ArgMin``, ``ReduceMax``/``ReduceMin`` (exact in any order), ``ReduceProd`` over the
  lane's trailing axes (each output's product along the contiguous inner axis, as for the lane alone) and
  ``Concat``, with their axes moved past the lane axis;
- ``take``: ``Gather`` and ``ArrayFeatureExtractor`` with either the data or the indices stacked (a copy);
- ``shape``: ``Reshape``, ``Flatten``, ``Squeeze``, ``Unsqueeze``, ``Identity``: the lane's result shape, found
  by the node's own kernel on the first lane, with the lane axis in front.

Sums over the reduced axis of a ``ReduceSum`` and ``Softmax``-like operators are never stacked: their kernels make
choices from the whole tensor (a summation order, a shift by the maximum) that would then depend on the other
lanes. At run time a step whose lane values are large (:data:`MAX_BATCH_ELEMENTS`) or of different shapes, or whose
stacked call raises, calls each lane's own step instead (then the error is that lane's); its value is then the
lanes' results as a tuple, which the next group reads the same way.

``LaneFold`` is a ``Sum``/``Max``/``Min`` of all the lanes of one group in lane order: the operator's left fold
(``uf(l0, l1)`` then ``uf(acc, li)`` in place), as its kernel folds them. ``LaneConcat`` is a ``Concat`` of lanes
of groups (and other values): consecutive lanes of one group are one block of the stacked value.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import attrgetter
from typing import Any

import numpy as np

from onnxcore.errors import EvaluationError
from onnxcore.kernels._util import left_fold, with_rank
from onnxcore.kernels.fused import FUSED_DOMAIN
from onnxcore.kernels.fused.elementwise import AFFINE, ElementwiseGraph
from onnxcore.kernels.registry import kernel

__all__ = [
    "GATHER",
    "LANES",
    "MAX_BATCH_ELEMENTS",
    "SHARED",
    "STACKED",
    "LaneConcat",
    "LaneFold",
    "Lanes",
    "lane_kind",
    "program_token",
    "stackable_input",
    "value_token",
]

MAX_BATCH_ELEMENTS = 1 << 16
"""Elements of a stacked operand (all lanes) above which the lanes' own values are not copied into one, and a
program of several passes (a fused elementwise graph) runs lane by lane: past the L2 cache each pass over all lanes
costs more than the lanes' own passes over a value the cache holds (an AdaBoost's 50 lanes of 1,000 x 3: 1.1
against 1.0 ms), and the calls saved are a small part of the time. One pass over a stacked value runs stacked at any
size (a polynomial expansion's 55 products of 1,000 rows: 55 strided reductions cost more than one)."""

# How a step reads each input position of its nodes.
SHARED = "shared"  # one value every lane reads (one argument)
STACKED = "stacked"  # one constant per lane, stacked when the plan is made (no argument)
LANES = "lanes"  # the value of an earlier group: lane i reads its lane i, or the lane a map says (one argument)
GATHER = "gather"  # distinct values, one per lane (k arguments)

_MAP_OPS = frozenset(
    (
        "Abs", "Add", "And", "BitShift", "BitwiseAnd", "BitwiseNot", "BitwiseOr", "BitwiseXor", "Cast", "Ceil",
        "Clip", "Cos", "Div", "Elu", "Equal", "Erf", "Exp", "Floor", "Greater", "GreaterOrEqual", "HardSigmoid",
        "HardSwish", "Identity", "IsInf", "IsNaN", "LeakyRelu", "Less", "LessOrEqual", "Log", "Max", "Min", "Mod",
        "Mul", "Neg", "Not", "Or", "Pow", "Reciprocal", "Relu", "Round", "Selu", "Sigmoid", "Sign", "Sin",
        "Softplus", "Softsign", "Sqrt", "Sub", "Sum", "Tan", "Tanh", "Where", "Xor",
    )
)  # fmt: skip
_ML_MAP_OPS = frozenset(("Binarizer", "LabelEncoder", "OneHotEncoder"))
_AXIS_OPS = frozenset(("ArgMax", "ArgMin", "Concat", "ReduceMax", "ReduceMin", "ReduceProd"))
_SHAPE_OPS = frozenset(("Flatten", "Reshape", "Squeeze", "Unsqueeze"))
# Steps a plan binds a node to that compute the node's own operator (so its kernel may stand for them).
_OWN_STEPS = frozenset(("", "SameTypeCast", "ReshapeView", "TakeColumns", "GatherPositions"))


def lane_kind(domain: str, op_type: str, step_kernel: str, fused_ops: Sequence[str] = ()) -> str | None:
    """How lanes of this node are stacked (module docstring): ``map``, ``axis``, ``take``, ``shape``, or None when
    they are not. ``step_kernel`` is the fused kernel the plan bound the node to (``""``: its own) and
    ``fused_ops`` the operators of the other nodes fused into it."""
    if step_kernel == "ElementwiseGraph":
        ops = (op_type, *fused_ops)
        return "map" if domain in ("", "ai.onnx") and all(o in _MAP_OPS for o in ops) else None
    if step_kernel not in _OWN_STEPS or fused_ops:
        return None
    if domain == "ai.onnx.ml":
        if op_type in _ML_MAP_OPS:
            return "map"
        return "take" if op_type == "ArrayFeatureExtractor" else None
    if domain not in ("", "ai.onnx"):
        return None
    if op_type in _MAP_OPS:
        return "map"
    if op_type in _AXIS_OPS:
        return "axis"
    if op_type == "Gather":
        return "take"
    return "shape" if op_type in _SHAPE_OPS else None


def value_token(v: Any) -> Any:
    """A hashable stand-in for an attribute value or a constant, equal for equal values (an array by its type,
    shape and bytes; an object that is not a value by itself, compared by identity)."""
    if isinstance(v, np.ndarray):
        return ("array", v.dtype.str, v.shape, v.tobytes())
    if isinstance(v, dict):
        return ("dict", tuple(sorted((k, value_token(x)) for k, x in v.items())))
    if isinstance(v, list | tuple):
        return (type(v).__name__, tuple(value_token(x) for x in v))
    if isinstance(v, float) and v != v:
        return ("nan",)
    try:
        hash(v)
    except TypeError:
        return ("id", id(v))
    return v


def program_token(program: Sequence[Any], constants: bool = False) -> tuple[Any, ...] | None:
    """A hashable token equal for fused elementwise graphs that compute the same for any operands (their
    instructions' kernels, ufuncs, sources and attributes) but for the single-value constants of their
    ``AffineChain`` steps, which a stacked program takes lane by lane (``ElementwiseGraph.for_lanes``); with
    ``constants``, equal only where those are equal too. None when one holds what depends on the operands' layout
    (an ``AffineChain`` with per-channel constants)."""
    out: list[Any] = []
    for call, uf, sources, kw, allocates in program:
        if uf == AFFINE:
            scalar = getattr(call, "scalar_token", None)
            t = scalar(values=constants) if scalar is not None else None
            if t is None:
                return None
            out.append((t, sources, allocates))
        else:
            out.append((call, uf, sources, value_token(kw), allocates))
    return tuple(out)


def stackable_input(kind: str, op_type: str, position: int) -> bool:
    """Whether the constants at input ``position`` may differ between lanes (else they must be one value)."""
    if kind == "map":
        return not (op_type == "Clip" and position > 0)  # (Clip's bounds are single values)
    if kind == "axis":
        return op_type == "Concat"  # (a reduction's axes are one list)
    return kind == "take"


Call = Callable[..., Any]


class Lanes:
    """The step of one group of lanes (module docstring).

    Args:
        kind: :func:`lane_kind` of the nodes.
        operator: Their operator.
        fn: What computes the stacked value: the operator's kernel (or, for a fused elementwise graph and the ML
            encoders, the first lane's step, which computes the same for any operands; a graph's chains are then
            replaced by the lanes' own, :meth:`ElementwiseGraph.for_lanes`).
        attrs: The attributes ``fn`` is called with.
        specs: Per input position: (:data:`SHARED` | :data:`STACKED` | :data:`LANES` | :data:`GATHER` | ``""``
            unsupplied; the lanes' constants for STACKED, for LANES the lane of the group's value each lane reads
            or None when lane i reads lane i of all of them, else None).
        lanes: Each lane's own step and attributes (what the plan called before).
        views: The lanes whose values the step returns too, after the stacked value (another node reads them).
        axes_input: A reduction reads its axes as its second input (opset 18), not as an attribute.
    """

    __slots__ = (
        "axes_input", "columns", "fn", "k", "kind", "kw", "lane_axis", "lanes", "maps", "op_type", "own", "passes",
        "shapes", "specs", "stacked", "stacks", "views",
    )  # fmt: skip

    def __init__(
        self,
        kind: str,
        operator: str,
        fn: Call,
        attrs: dict[str, Any],
        specs: Sequence[tuple[str, Sequence[np.ndarray] | None]],
        lanes: Sequence[tuple[Call, dict[str, Any]]],
        views: Sequence[int],
        axes_input: bool = False,
    ) -> None:
        self.axes_input = axes_input
        self.shapes: dict[Any, tuple[int, ...]] = {}  # a shape operator's stacked shape by lane shape and target
        # A program of several passes over its operands (a fused elementwise graph): past the cache, lane by lane
        self.passes = len(getattr(fn, "program", ())) > 1
        # Graphs that differ in their chains' constants: the program with each lane's chain on its lane, which needs
        # the lane axis on every value, so shared operands are given it too (broadcast views). Lanes whose graphs are
        # not of one program (which the matcher does not group) have no stacked form: each runs alone.
        self.stacks, self.lane_axis = True, False
        if isinstance(fn, ElementwiseGraph):
            try:
                stacked_fn = fn.for_lanes([call for call, _kw in lanes])
            except EvaluationError:
                self.stacks = False
            else:
                self.lane_axis, fn = stacked_fn is not fn, stacked_fn
        self.kind, self.op_type, self.fn, self.kw = kind, operator, fn, attrs
        self.k = len(lanes)
        self.lanes, self.views = tuple(lanes), tuple(views)
        self.specs = tuple(s for s, _c in specs)
        # The lanes' constants of each STACKED position as one array (their own, unchanged, for the lanes' steps)
        self.stacked = tuple(_read_only(np.stack(c)) if s == STACKED and c is not None else None for s, c in specs)
        # (the lanes' own constants, the very objects: a step prepared for its constants may know them by identity)
        self.own = tuple(tuple(c) if s == STACKED and c is not None else None for s, c in specs)
        self.maps = tuple(list(c) if s == LANES and c is not None else None for s, c in specs)
        if self.k < 2 or any(not 0 <= i < self.k for i in self.views):
            raise EvaluationError("Lanes: a group needs two lanes or more, and views of its own lanes")
        # ArrayFeatureExtractor's constant indices: flat, with their bounds (checked against the data's last extent
        # as the kernel checks them, then one take)
        self.columns: tuple[np.ndarray, int, int] | None = None
        if operator == "ArrayFeatureExtractor" and self.specs[1:] == (STACKED,):
            idx = self.stacked[1]
            if idx is not None and idx.dtype.kind in "iu" and idx.size:
                flat = idx.reshape(-1).astype(np.int64)
                self.columns = (flat, int(flat.min()), int(flat.max()))

    def __call__(self, *args: Any) -> tuple[Any, ...]:
        operands = self._operands(args) if self.stacks else None
        value: Any = None
        if operands is not None:
            try:
                value = self._stacked(operands)
            except Exception:  # (the lanes' own steps, below, raise the error of the lane that has it)
                value = None
        if value is None:
            value = self._each(args)
        return (value, *[value[i] for i in self.views])

    # -- the stacked form ------------------------------------------------------------------------------------------

    def _operands(self, args: tuple[Any, ...]) -> list[tuple[str, Any]] | None:
        """Each position's operand in stacked form (SHARED as it is, "" None), or None when the lanes' values are
        large (decided before anything is copied) or do not stack (different shapes or types, not arrays)."""
        out: list[tuple[str, Any]] = []
        pending: list[tuple[int, Any, Any]] = []  # (position, lanes, map): what needs a copy, made once all pass
        a = 0
        k = self.k
        passes = self.passes
        for spec, stacked, lane_map in zip(self.specs, self.stacked, self.maps):
            if spec == LANES:
                v = args[a]
                a += 1
                if type(v) is np.ndarray and lane_map is None:
                    # (the group's value as it is: a program of several passes runs lane by lane past the cache)
                    if passes and v.size > MAX_BATCH_ELEMENTS:
                        return None
                    out.append((LANES, v))
                    continue
            elif spec == GATHER:
                v = args[a : a + k]
                a += k
            elif spec == SHARED:
                v = args[a]
                a += 1
                # (a shared operand as large as the bound makes a result of the lanes that large at least)
                if passes and type(v) is np.ndarray and v.size * k > MAX_BATCH_ELEMENTS:
                    return None
                out.append((SHARED, v))
                continue
            elif spec == STACKED:
                if stacked is None or (passes and stacked.size > MAX_BATCH_ELEMENTS):
                    return None
                out.append((STACKED, stacked))
                continue
            else:
                out.append(("", None))
                continue
            first = v[0]
            # (values to copy into a stacked operand: not past the bound)
            if type(first) is not np.ndarray or first.size * k > MAX_BATCH_ELEMENTS:
                return None
            pending.append((len(out), v, lane_map))
            out.append((LANES, None))
        for at, v, lane_map in pending:
            if lane_map is not None:  # (lanes read in another order, or some twice: a copy)
                v = v[lane_map] if type(v) is np.ndarray else [v[i] for i in lane_map]
            if type(v) is not np.ndarray:
                v = _stack(v)
                if v is None:
                    return None
            out[at] = (LANES, v)
        return out

    def _stacked(self, operands: list[tuple[str, Any]]) -> Any:
        """The group's value stacked along a new leading axis, or None where the stacked form does not apply."""
        if self.kind == "map":
            return self._map(operands)
        if self.kind == "axis":
            return self._axis(operands)
        if self.kind == "take":
            return self._take(operands)
        return self._shape(operands)

    def _map(self, operands: list[tuple[str, Any]]) -> Any:
        rank = 0
        for spec, v in operands:
            if spec == SHARED:
                rank = max(rank, np.ndim(v))
            elif spec != "":
                rank = max(rank, v.ndim - 1)
        args = []
        for spec, v in operands:
            if spec in (STACKED, LANES) and v.ndim - 1 < rank:
                # (the lane axis first, then the leading ones broadcasting gives the lane's own operand)
                v = v.reshape((self.k,) + (1,) * (rank - v.ndim + 1) + v.shape[1:])
            elif spec == SHARED and self.lane_axis:
                v = with_rank(np.asarray(v), rank)
                v = np.broadcast_to(v, (self.k, *v.shape))  # (every lane reads it: a view)
            args.append(v)
        while args and args[-1] is None:
            args.pop()
        y = self.fn(*args, **self.kw)
        if type(y) is tuple:
            y = y[0]
        if type(y) is not np.ndarray or y.ndim < rank + 1 or y.shape[0] != self.k:
            return None
        return y

    def _axis(self, operands: list[tuple[str, Any]]) -> Any:
        op, kw, k = self.op_type, dict(self.kw), self.k
        if op == "Concat":
            lanes = [v for spec, v in operands if spec in (STACKED, LANES)]
            r = lanes[0].ndim - 1
            axis = kw.get("axis")
            if type(axis) is not int or not -r <= axis < r:
                return None
            return _concat(operands, axis % r, k)
        spec, x = operands[0]
        if spec != LANES:
            return None
        r = x.ndim - 1
        if op in ("ArgMax", "ArgMin"):
            axis = kw.get("axis", 0)
            if r == 0 or not -r <= axis < r:
                return None
            kw["axis"] = axis % r + 1
            return self.fn(x, **kw)
        # ReduceMax, ReduceMin, ReduceProd: axes as an attribute, or (opset 18) as a shared input
        if self.axes_input:
            axes_v = operands[1][1] if len(operands) > 1 else None
            axes = [] if axes_v is None else [int(a) for a in np.asarray(axes_v).ravel().tolist()]
            if not axes and kw.get("noop_with_empty_axes", 0):
                return None  # (the input itself: nothing to gain)
        else:
            axes = list(kw.get("axes") or ())
        if r == 0 or any(not -r <= a < r for a in axes):
            return None
        lane_axes = sorted({a % r for a in axes}) if axes else list(range(r))
        if op == "ReduceProd" and lane_axes != list(range(r - len(lane_axes), r)):
            return None  # (a product over other axes may be taken in another order)
        shifted = [a + 1 for a in lane_axes]
        if self.axes_input:
            return self.fn(x, np.asarray(shifted, dtype=np.int64), **kw)
        kw["axes"] = shifted
        return self.fn(x, **kw)

    def _take(self, operands: list[tuple[str, Any]]) -> Any:
        (ds, data), (is_, idx) = operands[0], operands[1]
        k = self.k
        ml = self.op_type == "ArrayFeatureExtractor"
        if ds == LANES and is_ == SHARED:
            r = data.ndim - 1
            if ml:
                if r == 0:
                    return None
                y = self.fn(data, idx)
                return y.reshape(k, 1, -1) if r == 1 else y
            axis = self.kw.get("axis", 0)
            if not -r <= axis < r:
                return None
            return self.fn(data, idx, **{**self.kw, "axis": axis % r + 1})
        if ds == SHARED and is_ in (STACKED, LANES):
            if ml:
                m = idx[0].size
                cols = self.columns
                if (
                    cols is not None
                    and type(data) is np.ndarray
                    and data.ndim
                    and 0 <= cols[1]
                    and cols[2] < data.shape[-1]
                ):
                    y = data.take(cols[0], axis=-1)  # (the kernel's take, its bounds checked once per run)
                    if data.ndim == 1:
                        y = y.reshape(1, -1)
                else:
                    y = self.fn(data, idx)
                return _lane_first(y.reshape(*y.shape[:-1], k, m), y.ndim - 1)
            r = np.ndim(data)
            axis = self.kw.get("axis", 0)
            if not -r <= axis < r:
                return None
            axis %= r
            return _lane_first(self.fn(data, idx, **{**self.kw, "axis": axis}), axis)
        return None

    def _shape(self, operands: list[tuple[str, Any]]) -> Any:
        spec, x = operands[0]
        if spec != LANES or any(s not in (SHARED, "") for s, _v in operands[1:]):
            return None
        rest = [v for _s, v in operands[1:]]
        while rest and rest[-1] is None:
            rest.pop()
        # The lane's shape from the node's kernel on the first lane, once per lane shape and target (a shape
        # input is a few integers)
        key: Any = (x.shape, *[v.tobytes() if type(v) is np.ndarray and v.size <= 16 else id(v) for v in rest])
        shape = self.shapes.get(key) if all(type(v) is np.ndarray and v.size <= 16 for v in rest) else None
        if shape is None:
            shape = (self.k, *np.shape(self.fn(x[0], *rest, **self.kw)))
            if len(self.shapes) < 16:
                self.shapes[key] = shape
        return x.reshape(shape)

    # -- each lane alone -------------------------------------------------------------------------------------------

    def _each(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        """Each lane's own step on its own operands: the lanes' results as a tuple."""
        results = []
        for i, (call, kw) in enumerate(self.lanes):
            ins: list[Any] = []
            a = 0
            for spec, own, lane_map in zip(self.specs, self.own, self.maps):
                if spec == SHARED:
                    ins.append(args[a])
                    a += 1
                elif spec == STACKED:
                    assert own is not None
                    ins.append(own[i])
                elif spec == "":
                    ins.append(None)
                elif spec == LANES:
                    ins.append(args[a][i if lane_map is None else lane_map[i]])
                    a += 1
                else:
                    ins.append(args[a + i])
                    a += self.k
            y = call(*ins, **kw)
            results.append(y[0] if type(y) is tuple else y)
        return tuple(results)


def _prepare(constants: Sequence[Any], **attributes: Any) -> Lanes:
    return Lanes(**attributes)  # (the attributes are Lanes' arguments, by name)


@kernel("Lanes", 1, domain=FUSED_DOMAIN, prepare=_prepare, prepare_constants=True)
def lanes(*args: Any, **attributes: Any) -> tuple[Any, ...]:
    """The stacked value of a group of lanes and the lanes other nodes read (module docstring)."""
    return _prepare(args, **attributes)(*args)


def _read_only(a: np.ndarray) -> np.ndarray:
    """``a`` marked read-only: a constant every run shares (a step that returns it as it is, a Cast to its own type,
    hands the caller a copy, as for any constant)."""
    a.flags.writeable = False
    return a


def _concat(operands: list[tuple[str, Any]], axis: int, k: int) -> np.ndarray | None:
    """Concat of stacked operands along ``axis`` of the lanes (a shared one broadcast over the lanes), each copied
    into its place; None when their types or other extents differ (the lanes' own Concat then says why)."""
    vals: list[Any] = []
    lanes: list[tuple[int, ...]] = []
    for spec, v in operands:
        if spec:
            vals.append(v)
            lanes.append(v.shape if spec == SHARED else v.shape[1:])
    first, dt = lanes[0], vals[0].dtype
    head, tail = first[:axis], first[axis + 1 :]
    total = 0
    for v, shape in zip(vals, lanes):
        if v.dtype != dt or shape[:axis] != head or shape[axis + 1 :] != tail:
            return None
        total += shape[axis]
    out = np.empty((k, *head, total, *tail), dt)
    lead = (slice(None),) * (axis + 1)
    at = 0
    for v, shape in zip(vals, lanes):
        n = shape[axis]
        out[lead + (slice(at, at + n),)] = v  # (a shared operand broadcast over the lanes by the assignment)
        at += n
    return out


def _stack(values: Sequence[Any]) -> np.ndarray | None:
    """The lanes' own values stacked, or None when they are not arrays of one shape and element type, or large."""
    first = values[0]
    try:
        if len(set(map(_DTYPE, values))) != 1:  # (np.array would promote them to one type)
            return None
        # (np.array checks the shapes in C: 7.5 against 17.6 us for np.stack of 50 rows of 3)
        out = np.array(values)
    except (AttributeError, ValueError, TypeError):  # not arrays, or of different shapes
        return None
    return out if out.dtype == first.dtype and out.shape[1:] == first.shape else None


_DTYPE = attrgetter("dtype")


def _lane_first(y: np.ndarray, axis: int) -> np.ndarray:
    """``y`` with its axis ``axis`` (the lanes) moved first, a view (``np.moveaxis`` costs 2.8 against 0.4 us)."""
    return y.transpose((axis, *range(axis), *range(axis + 1, y.ndim)))


class LaneFold:
    """``Sum``, ``Max`` or ``Min`` of every lane of a group: the kernel's left fold in the node's order of its
    operands (:func:`~onnxcore.kernels._util.left_fold`, as the kernel folds many small operands) on the stacked
    value, or the kernel itself on the lanes' tuple.

    Args:
        ufunc: ``np.add``, ``np.maximum`` or ``np.minimum``.
        order: The lane each operand is, in the node's order.
        kernel: The operator's kernel and attributes, for lanes that are not float arrays of rank 1 or more.
    """

    __slots__ = ("identity", "kernel", "kw", "order", "ufunc")

    def __init__(self, ufunc: np.ufunc, order: Sequence[int], kernel: Call, attrs: dict[str, Any]) -> None:
        self.ufunc, self.order, self.kernel, self.kw = ufunc, tuple(order), kernel, attrs
        self.identity = tuple(range(len(self.order)))

    def __call__(self, value: Any) -> Any:
        order = self.order
        if type(value) is not np.ndarray or value.dtype.kind != "f" or value.ndim < 2 or len(order) < 2:
            return self.kernel(*[value[i] for i in order], **self.kw)
        return left_fold(self.ufunc, value, None if order == self.identity else order)


def _prepare_fold(
    constants: Sequence[Any], *, ufunc: np.ufunc, order: Sequence[int], kernel: Call, attrs: dict[str, Any]
) -> LaneFold:
    return LaneFold(ufunc, order, kernel, attrs)


@kernel("LaneFold", 1, domain=FUSED_DOMAIN, prepare=_prepare_fold, prepare_constants=True)
def lane_fold(value: Any, *, ufunc: np.ufunc, order: Sequence[int], kernel: Call, attrs: dict[str, Any]) -> Any:
    """A variadic ``Sum``/``Max``/``Min`` of a group's lanes (:class:`LaneFold`)."""
    return LaneFold(ufunc, order, kernel, attrs)(value)


class LaneConcat:
    """``Concat`` whose operands are lanes of groups, or other values.

    Args:
        runs: Per argument, the lanes of a group's value it stands for (consecutive operands of the node), or None
            for a value read as it is.
        axis: The Concat's axis (of the lanes' rank).
        kernel: The Concat kernel (and its attributes), which joins the pieces.
    """

    __slots__ = ("axis", "kernel", "kw", "runs")

    def __init__(self, runs: Sequence[Sequence[int] | None], axis: int, kernel: Call, attrs: dict[str, Any]) -> None:
        # (a run of consecutive lanes is a slice of the stacked value, any other a copy of its lanes)
        self.runs = tuple(
            None if r is None else slice(r[0], r[-1] + 1) if list(r) == list(range(r[0], r[-1] + 1)) else list(r)
            for r in runs
        )
        self.axis, self.kernel, self.kw = axis, kernel, attrs

    def __call__(self, *args: Any) -> Any:
        pieces: list[Any] = []
        for run, v in zip(self.runs, args):
            if run is None:
                pieces.append(v)
                continue
            if type(v) is not np.ndarray:
                pieces.extend(v[run] if type(run) is slice else [v[i] for i in run])
                continue
            block = v[run]
            r = block.ndim - 1
            if not -r <= self.axis < r:
                pieces.extend(block)
                continue
            a = self.axis % r
            # lanes side by side along the axis: the lane axis moved next to it, the two merged (lane-major)
            moved = block.transpose((*range(1, a + 1), 0, *range(a + 1, r + 1)))
            shape = moved.shape
            pieces.append(moved.reshape((*shape[:a], shape[a] * shape[a + 1], *shape[a + 2 :])))
        return self.kernel(*pieces, **self.kw)


def _prepare_concat(
    constants: Sequence[Any], *, runs: Sequence[Sequence[int] | None], axis: int, kernel: Call, attrs: dict[str, Any]
) -> LaneConcat:
    return LaneConcat(runs, axis, kernel, attrs)


@kernel("LaneConcat", 1, domain=FUSED_DOMAIN, prepare=_prepare_concat, prepare_constants=True)
def lane_concat(
    *args: Any, runs: Sequence[Sequence[int] | None], axis: int, kernel: Call, attrs: dict[str, Any]
) -> Any:
    """A Concat of runs of lanes (:class:`LaneConcat`)."""
    return LaneConcat(runs, axis, kernel, attrs)(*args)
