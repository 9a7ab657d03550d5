"""Elementwise graphs as one step (Clause 8.2; the matcher is ``onnxcore.runtime.optimize.chains``).

``ElementwiseGraph``: a tree or chain of elementwise nodes (unary, binary with broadcasting, ``Where``, ``Clip``,
``Cast``, ...; optionally ending in a reduction) whose intermediate values no other node reads, evaluated by one
step. Every node computes what its own kernel computes, on the same operands in the same order: where its kernel
applies one numpy ufunc to float operands of one type (``Add``, ``Mul``, ``Exp``, ...), the step applies that ufunc
writing into an operand the step made and no later node reads (``out=``) instead of allocating a new array; any
other node (another element type, a broadcast that grows the value, an operator without an in-place form) is its
kernel, called as the plan would call it. Only allocations and per-node dispatch are removed: the results are the
graph's bit for bit (no reassociation, no wider intermediates). ``run(..., intermediates=True)`` runs the graph as
written.

Tiny operands (a classifier's one row) meet numpy's fixed costs, measured with numpy 2.4: a ufunc writing into an
array of one element takes about 1.4 us against 0.6 us for a new one, so a one-element value is never written
into; operands of different ranks (``(1, 1)`` and ``(1,)``) cost 1.4 us against 0.6 us for equal shapes, so a
replay reads a constant operand with the leading ones of the values it meets (Clause 6.6.2 prepends them anyway);
and where the interpreter called a node's kernel on float operands of one type whose result has one operand's shape,
the replay applies the kernel's ufunc itself (the kernel's checks have nothing to refuse there).

With the accelerator on, a graph whose every node is one of the correctly rounded IEEE operations (``Add``, ``Sub``,
``Mul``, ``Div``, ``Sum`` of two, ``Neg``, ``Abs``, ``Sqrt``, ``Relu``) on float32 or float64 operands that are
arrays of the output's shape, rows of its last extent, columns (one value per row) or single values runs as one
compiled loop over the output (``kernels/accel/_jit_ew.py``: each node's value in the element type in the graph's
order, so the same bits); the first run of each graph in a process compiles it (a few tenths of a second).

A program is a sequence of instructions, one per node in graph order: ``(kernel, ufunc or None or AFFINE, sources,
attributes, allocates)``. A source is the index of a step argument (``>= 0``) or ``-(j + 1)`` for the value of
instruction ``j``; ``allocates`` says the kernel returns a new array (then a later instruction may write into it).
The last instruction's value is the step's output.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from operator import attrgetter
from typing import Any

import numpy as np

from onnxcore.errors import EvaluationError
from onnxcore.kernels import accel
from onnxcore.kernels._util import NUMPY_FLOATS, out_for, with_rank
from onnxcore.kernels.fused import FUSED_DOMAIN
from onnxcore.kernels.fused.affine import LaneAffine
from onnxcore.kernels.registry import kernel

__all__ = ["AFFINE", "ElementwiseGraph", "Instruction"]

AFFINE = "affine"
"""In an instruction's ufunc place: an ``AffineChain`` step applied to its one operand (``into`` when it can)."""

Instruction = tuple[Callable[..., Any], "np.ufunc | str | None", tuple[int, ...], dict[str, Any], bool]

# The ufuncs the compiled loop computes (kernels/accel/_jit_ew.py's table): correctly rounded in numpy and in the loop.
_COMPILABLE = frozenset(
    (np.add, np.subtract, np.multiply, np.true_divide, np.negative, np.absolute, np.sqrt, np.maximum)
)
_FULL, _ROW, _ONE, _COL = 0, 1, 2, 3  # operand kinds of the compiled loop (_jit_ew.FULL, ROW, ONE, COL)
_COMPILED_TYPES = (np.dtype(np.float32), np.dtype(np.float64))
_UNSEEN = object()  # (a shape key not looked at yet; None is a key looked at and refused)
_RESHAPE = np.ndarray.reshape


class ElementwiseGraph:
    """The step of a fused elementwise graph (module docstring).

    Args:
        program: The instructions, in graph order; the last one's value is the output.
    """

    __slots__ = (
        "_compiled",
        "_constants",
        "_fits",
        "_loops",
        "_may_reuse",
        "_replays",
        "_shapes",
        "_zeros",
        "last_use",
        "program",
    )

    def __init__(self, program: Sequence[Instruction], constants: Sequence[Any] = ()) -> None:
        if not program:
            raise EvaluationError("ElementwiseGraph: an empty program")
        self.program = tuple(program)
        # The step's constant arguments (None for the others): a replay reads them with the rank of their readers.
        self._constants = tuple(constants)
        # The last instruction reading each instruction's value (-1: none): it alone may write into that value.
        last = [-1] * len(self.program)
        for j, (_call, _uf, sources, _kw, _alloc) in enumerate(self.program):
            for s in sources:
                if s < 0:
                    if -s - 1 >= j:
                        raise EvaluationError(f"ElementwiseGraph: instruction {j} reads a value not made before it")
                    last[-s - 1] = j
        self.last_use = tuple(last)
        # Per instruction, whether it may write into an operand at all: only into a value of an earlier instruction
        # that it reads for the last time (the others never are; _in_place is not asked for them).
        self._may_reuse = tuple(
            any(src < 0 and last[-src - 1] == j for src in sources)
            for j, (_call, _uf, sources, _kw, _alloc) in enumerate(self.program)
        )
        self._fits: dict[tuple[tuple[int, ...], tuple[int, ...]], bool] = {}
        # The program as the compiled loop takes it (per instruction its ufunc and sources), when every instruction
        # is one it computes (module docstring); None otherwise.
        # (np.maximum of two operands is Max, not Relu's maximum against zero: the loop computes the latter only)
        compiled = [
            (uf, sources)
            for _c, uf, sources, kw, _a in self.program
            if uf in _COMPILABLE and not kw and (uf is not np.maximum or len(sources) == 1)
        ]
        self._compiled = tuple(compiled) if len(compiled) == len(self.program) else None
        # Per operand signature: their element type and what the compiled loop needs of their shapes (_layout_of),
        # None when it does not take them.
        self._shapes: dict[tuple[Any, ...], Any] = {}
        self._loops: dict[tuple[int, ...], Callable[..., None]] = {}  # the compiled loops by operand kinds
        self._zeros = {dt: np.zeros(1, dt) for dt in _COMPILED_TYPES}
        # Per operand signature (type, shape, element type of each), the program as one generated function that
        # makes the decisions the interpreter made for that signature (:func:`_replay`).
        self._replays: dict[tuple[Any, ...], Callable[..., Any]] = {}

    def for_lanes(self, lanes: Sequence[Any]) -> ElementwiseGraph:
        """This program for its lanes stacked along a new leading axis (a ``Lanes`` step of graphs that differ only in
        their chains' single-value constants, ``onnxcore.kernels.fused.lanes``): each chain replaced by the lanes'
        chains at its place (:class:`~onnxcore.kernels.fused.affine.LaneAffine`); the graph itself when it has none.
        ``lanes``: each lane's graph, this one's program but for those constants."""
        if not any(uf is AFFINE for _c, uf, _s, _kw, _a in self.program):
            return self
        programs: list[Sequence[Instruction]] = [getattr(lane, "program", ()) for lane in lanes]
        if not programs or any(len(p) != len(self.program) for p in programs):
            raise EvaluationError("ElementwiseGraph: the lanes' programs differ from this one")
        stacked: list[Instruction] = []
        for j, (call, uf, sources, kw, allocates) in enumerate(self.program):
            if uf is AFFINE:
                call = LaneAffine([p[j][0] for p in programs])
            stacked.append((call, uf, sources, kw, allocates))
        return ElementwiseGraph(stacked)

    def __call__(self, *args: Any) -> Any:
        try:
            key = tuple(map(_SIGNATURE, args))
        except AttributeError:  # an operand that is not an array: interpreted
            return self._interpret(args, None)
        if self._compiled is not None and accel.enabled():
            y = self._loop(args, key)
            if y is not None:
                return y
        replay = self._replays.get(key)
        if replay is not None:
            return replay(*args)
        trace: list[tuple[Any, ...]] = []
        ranks: list[int] = []
        y = self._interpret(args, trace, ranks)
        replays = dict(self._replays) if len(self._replays) < 16 else {}
        replays[key] = _replay(self.program, trace, self.last_use, len(args), self._aligned(args, trace, ranks))
        self._replays = replays  # replaced whole: runs in other threads read a complete dict
        return y

    def _interpret(
        self, args: tuple[Any, ...], trace: list[tuple[Any, ...]] | None, ranks: list[int] | None = None
    ) -> Any:
        """The program on ``args``, deciding per instruction whether it writes into an operand; with ``trace``,
        each decision is appended to it (:func:`_replay` writes them out for later calls of the same operand
        types and shapes), and with ``ranks`` each value's rank (-1: not an array)."""
        n = len(self.program)
        vals: list[Any] = [None] * n
        # Whether the value is a float array this step made and may overwrite once its last reader comes.
        own = [False] * n
        last = self.last_use
        may_reuse = self._may_reuse
        for j, (call, uf, sources, kw, allocates) in enumerate(self.program):
            y = None
            if uf is not None and may_reuse[j]:
                y = self._in_place(j, uf, sources, args, vals, own, last, call, trace)
            if y is None:
                ops = [args[s] if s >= 0 else vals[-s - 1] for s in sources]
                y = call(*ops, **kw)
                if type(y) is tuple:
                    y = y[0]
                own[j] = allocates and type(y) is np.ndarray and y.dtype.kind == "f" and y.flags.writeable
                if trace is not None:
                    trace.append(("ufunc", y.dtype.type(0)) if _as_ufunc(uf, ops, y) else ("call",))
            else:
                own[j] = True
            vals[j] = y
            if ranks is not None:
                ranks.append(y.ndim if type(y) is np.ndarray else -1)
            for s in sources:  # a value read for the last time is dropped (its memory freed early)
                if s < 0 and last[-s - 1] == j:
                    vals[-s - 1] = None
        return vals[n - 1]

    def _in_place(
        self,
        j: int,
        uf: np.ufunc | str,
        sources: tuple[int, ...],
        args: tuple[Any, ...],
        vals: list[Any],
        own: list[bool],
        last: tuple[int, ...],
        call: Callable[..., Any],
        trace: list[tuple[Any, ...]] | None = None,
    ) -> np.ndarray | None:
        """Instruction ``j`` written into one of its operands, when that is exact (module docstring); else None.
        With ``trace``, what it did is appended to it (nothing when it returns None: the caller records its call)."""
        if uf is AFFINE:
            s = sources[0]
            if s < 0 and own[-s - 1] and last[-s - 1] == j:
                y = vals[-s - 1]
                if trace is not None:
                    trace.append(("affine", s))  # (into() may refuse a first shape: the replay asks it every time)
                if call.into(y):  # type: ignore[attr-defined]
                    return y
                if trace is not None:
                    trace.pop()
            return None
        assert isinstance(uf, np.ufunc)
        if len(sources) == 1:
            s = sources[0]
            if s >= 0 or not own[-s - 1] or last[-s - 1] != j:
                return None
            y = vals[-s - 1]
            if out_for(y) is None:
                return None  # (a new array of one element costs less than writing into one)
            if uf is np.maximum:
                # Relu against a zero of y's type: with a Python 0 (or positionally) numpy takes a slower path
                uf(y, y.dtype.type(0), out=y)
            else:
                uf(y, y)
            if trace is not None:
                trace.append(("unary", s))
            return y
        a, b = sources
        for k, s in enumerate(sources):
            if s >= 0 or not own[-s - 1] or last[-s - 1] != j:
                continue
            y = vals[-s - 1]
            if out_for(y) is None:
                continue
            o = b if k == 0 else a
            if o == s:
                uf(y, y, y)
                if trace is not None:
                    trace.append(("binary", s, s, 0))
                return y
            other = args[o] if o >= 0 else vals[-o - 1]
            if type(other) is np.ndarray and other.dtype == y.dtype and self._fit(y.shape, other.shape):
                if k == 0:
                    uf(y, other, y)
                else:
                    uf(other, y, y)
                if trace is not None:
                    trace.append(("binary", s, o, k))
                return y
        return None

    def _aligned(
        self, args: tuple[Any, ...], trace: Sequence[tuple[Any, ...]], ranks: Sequence[int]
    ) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        """The constant arguments a replay reads with leading ones, by index: those of a lower rank than every value
        made from them, where each of their readers applies its ufunc (module docstring)."""
        readers: dict[int, list[int]] = {}
        for j, (_call, _uf, sources, _kw, _alloc) in enumerate(self.program):
            for s in sources:
                if s >= 0:
                    readers.setdefault(s, []).append(j)
        aligned: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for i, c in enumerate(self._constants):
            a = args[i] if i < len(args) else None
            if c is None or a is not c or type(a) is not np.ndarray or i not in readers:
                continue
            js = readers[i]
            if any(trace[j][0] not in ("ufunc", "binary") for j in js):
                continue
            rank = min(ranks[j] for j in js)
            if a.ndim < rank:
                aligned[i] = (a, with_rank(a, rank))
        return aligned

    def _loop(self, args: tuple[Any, ...], key: tuple[Any, ...]) -> np.ndarray | None:
        """The output by the compiled loop, when the operands (of signature ``key``) are float32 or float64 arrays of
        one type, each of the output's shape (C-contiguous), a row of its last extent, a column or a single value;
        None otherwise. What depends on the signature alone is decided once per signature: a graph the loop does
        not take (a per-channel operand, a kernel's type) costs one look-up, not the tests."""
        got = self._shapes.get(key, _UNSEEN)
        if got is _UNSEEN:
            got = self._layout_of(key)
            if len(self._shapes) < 64:
                self._shapes[key] = got
        if got is None:
            return None
        for a in args:  # a loop, not all() of a generator: this runs on every call
            if not a.flags.c_contiguous:
                return None
        dt, (shape, rows, cols, kinds, views) = got
        assert self._compiled is not None
        loop = self._loops.get(kinds)
        if loop is None:
            loop = accel.jit_ew().graph_loop(self._compiled, kinds)
            if len(self._loops) < 16:
                self._loops[kinds] = loop
        out = np.empty(shape, dt)
        # (each operand as the loop reads it: C-contiguous, so every reshape is a view)
        loop(out.reshape(rows, cols), self._zeros[dt], *map(_RESHAPE, args, views))
        return out

    @classmethod
    def _layout_of(cls, key: tuple[Any, ...]) -> tuple[np.dtype[Any], Any] | None:
        """For operands of the signatures ``key``: their one element type and :meth:`_layout` of their shapes, when
        they are arrays of one compiled type the loop lays out; else None."""
        if not key or any(c is not np.ndarray for c, _s, _d in key):
            return None
        dt = key[0][2]
        if dt not in _COMPILED_TYPES or any(d != dt for _c, _s, d in key):
            return None
        layout = cls._layout(tuple(s for _c, s, _d in key))
        return None if layout is None else (dt, layout)

    @staticmethod
    def _layout(
        key: tuple[tuple[int, ...], ...],
    ) -> tuple[tuple[int, ...], int, int, tuple[int, ...], tuple[tuple[int, ...], ...]] | None:
        """For C-contiguous operands of the shapes ``key``: the output's shape, its rows and last extent, each
        operand's kind and the shape the loop reads it in; None when an operand is of no kind the loop takes."""
        try:
            shape = np.broadcast_shapes(*key)
        except ValueError:
            return None  # the kernels report it
        if not shape or 0 in shape:
            return None
        # (math.prod: np.prod's Python wrapper costs microseconds)
        rows, cols = (math.prod(shape[:-1]) if len(shape) > 1 else 1), shape[-1]
        kinds: list[int] = []
        views: list[tuple[int, ...]] = []
        for s in key:
            if s == shape:
                kinds.append(_FULL)
                views.append((rows, cols))
            elif math.prod(s) == 1:
                kinds.append(_ONE)
                views.append((1,))
            elif s and s[-1] == cols and math.prod(s) == cols:
                kinds.append(_ROW)
                views.append((cols,))
            elif len(s) == len(shape) and s[-1] == 1 and s[:-1] == shape[:-1]:
                kinds.append(_COL)  # one value per row (k-means' squared norms, a row statistic)
                views.append((rows,))
            else:
                return None
        return shape, rows, cols, tuple(kinds), tuple(views)

    def _fit(self, shape: tuple[int, ...], other: tuple[int, ...]) -> bool:
        """Whether an operand of shape ``other`` broadcasts into ``shape`` without growing it."""
        if shape == other:
            return True
        key = (shape, other)
        fit = self._fits.get(key)
        if fit is None:
            try:
                fit = np.broadcast_shapes(shape, other) == shape
            except ValueError:
                fit = False  # the kernel reports it
            if len(self._fits) < 64:
                self._fits[key] = fit
        return fit


# ------------------------------------------------------------------------------------------------ the replay

# An operand's signature: every decision of the interpreter depends on the operands' types, shapes and element
# types alone (and on the values the kernels make from them, which depend on those alone).
_SIGNATURE = attrgetter("__class__", "shape", "dtype")


def _as_ufunc(uf: Any, ops: Sequence[Any], y: Any) -> bool:
    """Whether an instruction whose kernel gave ``y`` on ``ops`` computed what its ufunc alone computes: operands of
    one numpy float type (ml_dtypes' types are computed in float32 and rounded back) whose result (not 0-d: a ufunc
    would give a scalar) has one operand's shape, so that no
    check of the kernel (a broadcast's size, an element type) could refuse it."""
    if not isinstance(uf, np.ufunc) or type(y) is not np.ndarray or not y.ndim or y.dtype not in NUMPY_FLOATS:
        return False
    for o in ops:
        if type(o) is not np.ndarray or o.dtype != y.dtype:
            return False
    return any(o.shape == y.shape for o in ops)


def _replay(
    program: Sequence[Instruction],
    trace: Sequence[tuple[Any, ...]],
    last_use: Sequence[int],
    n_args: int,
    aligned: dict[int, tuple[np.ndarray, np.ndarray]] | None = None,
) -> Callable[..., Any]:
    """The program as one straight-line function of its operands, each instruction doing what ``trace`` says the
    interpreter did for operands of one signature: the same kernel calls and the same ufuncs written into the same
    operands, in the same order (so the same values), without the interpreter's per-instruction decisions, which
    cost more than a small pass. A value is dropped after its last reader, as the interpreter drops it. ``aligned``:
    constant arguments by index with their views of leading ones, read in place of the argument when it is that
    constant (the same values broadcast to the same shapes)."""
    ns: dict[str, Any] = {}
    params = [f"a{i}" for i in range(n_args)]
    lines = [f"def replay({', '.join(params)}):"]
    for i, (constant, view) in (aligned or {}).items():
        ns[f"C{i}"], ns[f"K{i}"] = constant, view
        lines.append(f"    if a{i} is C{i}: a{i} = K{i}")

    def ref(src: int) -> str:
        return f"a{src}" if src >= 0 else f"v{-src - 1}"

    for j, ((call, uf, sources, kw, _alloc), step) in enumerate(zip(program, trace)):
        ns[f"c{j}"], ns[f"u{j}"] = call, uf
        kind = step[0]
        if kind == "ufunc":  # the kernel's ufunc on operands the kernel would pass to it as they are (_as_ufunc)
            args = [ref(s) for s in sources]
            if uf is np.maximum and len(sources) == 1:
                ns[f"z{j}"] = step[1]  # Relu: against a zero of the value's type
                args.append(f"z{j}")
            lines.append(f"    v{j} = u{j}({', '.join(args)})")
        elif kind == "call":
            args = [ref(s) for s in sources]
            if kw:
                ns[f"k{j}"] = kw
                args.append(f"**k{j}")
            lines.append(f"    v{j} = c{j}({', '.join(args)})")
            lines.append(f"    v{j} = v{j}[0] if type(v{j}) is tuple else v{j}")
        elif kind == "affine":
            y = ref(step[1])
            lines.append(f"    v{j} = {y} if c{j}.into({y}) else c{j}({y})")
        elif kind == "unary":
            y = ref(step[1])
            lines.append(f"    u{j}({y}, {y}.dtype.type(0), out={y})" if uf is np.maximum else f"    u{j}({y}, {y})")
            lines.append(f"    v{j} = {y}")
        else:  # binary: (kind, the operand written into, the other, its position)
            y, other = ref(step[1]), ref(step[2])
            lines.append(f"    u{j}({y}, {other}, {y})" if step[3] == 0 else f"    u{j}({other}, {y}, {y})")
            lines.append(f"    v{j} = {y}")
        for src in sources:
            if src < 0 and last_use[-src - 1] == j and -src - 1 != j:
                lines.append(f"    v{-src - 1} = None")
    lines.append(f"    return v{len(program) - 1}")
    # Our own source, made from the program's indexes alone: no text from a model reaches it.
    exec(compile("\n".join(lines), "<onnxcore elementwise replay>", "exec"), ns)
    replay: Callable[..., Any] = ns["replay"]
    return replay


# ------------------------------------------------------------------------------------------------ the kernel


def _prepare(constants: Sequence[Any], *, program: Sequence[Instruction]) -> ElementwiseGraph:
    return ElementwiseGraph(program, constants)


@kernel("ElementwiseGraph", 1, domain=FUSED_DOMAIN, prepare=_prepare, prepare_constants=True)
def elementwise_graph(*args: Any, program: Sequence[Instruction]) -> Any:
    """The nodes of ``program`` (their kernels, the ufuncs they apply or None, their sources: a step argument's
    index or ``-(j + 1)`` for instruction ``j``'s value, their attributes, whether their kernels allocate) on
    ``args``: the last instruction's value."""
    return _prepare(args, program=program)(*args)
