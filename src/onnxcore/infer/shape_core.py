"""What a shape rule sees and the arithmetic it shares (Clause 9, shapes).

A shape is a tuple of extents: an ``int`` (fixed), a ``str`` (a dimension variable, Clause 6.5.2) or
``None`` (unknown); a value whose rank is unknown has the shape ``None``. One rule per operator (all its
versions; ``ctx.since`` tells which definition the node binds to) is registered with :func:`shape_rule`
and returns one shape per output (``None`` where it cannot tell, Clause 9.4). A rule that finds two
statically known extents contradicting the definition calls ``ctx.fail(...)``: that is a finding under
Clause 10.3 (the position taken on its editorial note: a mismatch between two fixed extents is an
error; unknown extents and dimension variables are checked against nothing).

Clause 9.3 is kept: a dimension variable propagates only where an output extent equals an input extent;
no two distinct variables are concluded equal, no variable is concluded to be a particular integer,
and no arithmetic is done on variables (``5 + N`` is unknown).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from importlib import import_module
from typing import Any, NoReturn

import numpy as np

from onnxcore.errors import ShapeError
from onnxcore.graph.attributes import attribute_value
from onnxcore.infer.rule_index import RULE_MODULES
from onnxcore.proto.messages import AttributeProto, NodeProto
from onnxcore.types.broadcast import broadcast_extents, unidirectional_extents

__all__ = [
    "Extent",
    "SymbolicValue",
    "VALUE_RULES",
    "value_rule",
    "ShapeT",
    "ShapeIncompatible",
    "ShapeContext",
    "SHAPE_RULES",
    "shape_rule",
    "load_rules",
    "broadcast",
    "unidirectional",
    "unify",
    "unify_all",
    "unify_shapes",
    "norm_axis",
    "dim_at",
    "dim_div",
    "dim_mul",
    "dim_add",
    "dim_prod",
    "require_rank",
    "resolve",
    "same_as_input",
    "shape_from_input",
]

Extent = int | str | None
ShapeT = tuple[Extent, ...]
ShapeRule = Callable[["ShapeContext"], Sequence[ShapeT | None]]

SHAPE_RULES: dict[tuple[str, str], ShapeRule] = {}

# Which module registered each rule ("shape" or "value", domain, op_type), read by the tool that writes the
# operator -> module index (infer/rule_index.py) and by the test holding that index to the rules.
_ORIGIN: dict[tuple[str, str, str], str] = {}
_PACKAGE = "onnxcore.infer.shape_ops."
_loaded_ops: set[tuple[str, str]] = set()

_MISSING = object()


def load_rules(domain: str, op_type: str) -> None:
    """Import the modules of ``infer/shape_ops`` that register the shape and value rules of (canonical ``domain``,
    ``op_type``), as the generated index (:mod:`onnxcore.infer.rule_index`) names them: inference imports the
    rules of the operators it meets, not all 40 families (issue 42, item 3). An operator the index does not list
    has no rule (:func:`onnxcore.infer.shape_ops.load_all` imports every family)."""
    key = (domain, op_type)
    if key in _loaded_ops:
        return
    for name in RULE_MODULES.get(key, ()):
        import_module(name)
    _loaded_ops.add(key)


def _origin(kind: str, domain: str, op_types: tuple[str, ...]) -> None:
    module = str(sys._getframe(2).f_globals.get("__name__", ""))
    if module.startswith(_PACKAGE):
        for op in op_types:
            _ORIGIN[(kind, domain, op)] = module


def shape_rule(*op_types: str, domain: str = "") -> Callable[[ShapeRule], ShapeRule]:
    """Register a shape rule for every version of each of ``op_types`` in ``domain`` (explicitly, never by scan).

    The rule returns a sequence with one entry per output it can speak of (a shorter sequence leaves the
    rest unknown).
    """
    _origin("shape", domain, op_types)

    def deco(fn: ShapeRule) -> ShapeRule:
        for op in op_types:
            key = (domain, op)
            if key in SHAPE_RULES:
                raise RuntimeError(f"shape rule for {domain or 'ai.onnx'}:{op} registered twice")
            SHAPE_RULES[key] = fn
        return fn

    return deco


class SymbolicValue:
    """A small integer tensor (rank 0 or 1) whose elements are extents: the value of ``Shape`` of a tensor with
    dimension variables, and what ``Gather``, ``Slice``, ``Concat``... make of it. A ``Reshape`` to such a value
    keeps the variables (data propagation; Clause 9.3 still holds: nothing is computed over them).

    Attributes:
        extents: The elements, as extents (int, str, or None for unknown).
        scalar: Whether the tensor has rank 0 (then it holds one element).
    """

    __slots__ = ("extents", "scalar")

    def __init__(self, extents: Sequence[Extent], scalar: bool = False) -> None:
        self.extents = tuple(extents)
        self.scalar = scalar

    def get(self) -> None:
        """No array: some element is not a fixed integer (see :func:`resolve`)."""
        return None


ValueRule = Callable[["ShapeContext"], "SymbolicValue | None"]
VALUE_RULES: dict[tuple[str, str], ValueRule] = {}


def value_rule(*op_types: str, domain: str = "") -> Callable[[ValueRule], ValueRule]:
    """Register how each of ``op_types`` maps symbolic input values to the symbolic value of output 0."""
    _origin("value", domain, op_types)

    def deco(fn: ValueRule) -> ValueRule:
        for op in op_types:
            if (domain, op) in VALUE_RULES:
                raise RuntimeError(f"value rule for {domain or 'ai.onnx'}:{op} registered twice")
            VALUE_RULES[(domain, op)] = fn
        return fn

    return deco


class ShapeIncompatible(Exception):
    """A node whose statically known extents contradict its operator definition (Clause 10.3)."""


class ShapeContext:
    """One node, as a shape rule sees it.

    Attributes:
        node: The node.
        op_type: ``node.op_type``.
        since: The since_version of the definition the node binds to (Clause 14.4); 0 for a model-local
            function or an operator without a definition.
        n_inputs: ``len(node.input)`` (a trailing optional input may be omitted, a middle one left ``""``).
        n_outputs: ``len(node.output)``.
    """

    __slots__ = (
        "_attrs",
        "_defaults",
        "_out_values",
        "_shapes",
        "_values",
        "n_inputs",
        "n_outputs",
        "node",
        "op_type",
        "since",
    )

    def __init__(
        self,
        node: NodeProto,
        since: int,
        shapes: Sequence[ShapeT | None],
        values: Sequence[np.ndarray | None],
        attrs: dict[str, AttributeProto],
        defaults: dict[str, AttributeProto] | None,
    ) -> None:
        self.node = node
        self.op_type = node.op_type
        self.since = since
        self.n_inputs = len(node.input)
        self.n_outputs = len(node.output)
        self._shapes = shapes
        self._values = values
        self._attrs = attrs
        self._defaults = defaults
        self._out_values: dict[int, np.ndarray] = {}

    # --- inputs ---------------------------------------------------------------------------------

    def present(self, i: int) -> bool:
        """Whether input ``i`` is supplied (not omitted, not ``""``)."""
        return i < self.n_inputs and bool(self.node.input[i])

    def shape(self, i: int) -> ShapeT | None:
        """The shape of input ``i``; None when it is absent or its rank is unknown."""
        return self._shapes[i] if i < len(self._shapes) else None

    def rank(self, i: int) -> int | None:
        """The rank of input ``i``, or None."""
        s = self.shape(i)
        return None if s is None else len(s)

    def value(self, i: int) -> np.ndarray | None:
        """The value of input ``i`` when it is statically known (an initializer, a Constant, a folded node)."""
        return resolve(self._values[i]) if i < len(self._values) else None

    def ints(self, i: int) -> list[int] | None:
        """The statically known value of input ``i`` as a flat list of ints (integer tensors only)."""
        v = self.value(i)
        if v is None or not isinstance(v, np.ndarray) or v.dtype.kind not in "iub":
            return None
        return [int(x) for x in v.reshape(-1)]

    def symbolic(self, i: int) -> SymbolicValue | None:
        """Input ``i`` as a :class:`SymbolicValue` when its elements are known as extents (a fixed integer tensor
        of rank 0 or 1 included), else None."""
        raw = self._values[i] if i < len(self._values) else None
        if isinstance(raw, SymbolicValue):
            return raw
        v = resolve(raw)
        if v is None or v.dtype.kind not in "iu" or v.ndim > 1:
            return None
        return SymbolicValue([int(x) for x in v.reshape(-1)], scalar=v.ndim == 0)

    def dims(self, i: int) -> list[Extent] | None:
        """The elements of 1-D input ``i`` as extents (a shape given as a tensor), when known, else None."""
        sv = self.symbolic(i)
        return None if sv is None else list(sv.extents)

    # --- attributes -----------------------------------------------------------------------------

    def has_attr(self, name: str) -> bool:
        """Whether the node sets attribute ``name``."""
        return name in self._attrs

    def attr(self, name: str, default: Any = _MISSING) -> Any:
        """Attribute ``name`` in Python form (int, float, str, list, ``np.ndarray``, ``GraphProto``).

        When the node does not set it: ``default`` if given, else the definition's default, else None.
        """
        a = self._attrs.get(name)
        if a is None:
            if default is not _MISSING:
                return default
            if self._defaults is None:
                return None
            a = self._defaults.get(name)
            if a is None:
                return None
        return _attr_value(a)

    # --- outputs --------------------------------------------------------------------------------

    def set_value(self, k: int, value: np.ndarray) -> None:
        """Record the statically known value of output ``k`` (e.g. ``Shape`` of a fixed shape)."""
        self._out_values[k] = value

    def fail(self, message: str) -> NoReturn:
        """Report that statically known extents contradict the operator definition (Clause 10.3)."""
        raise ShapeIncompatible(message)


def resolve(v: Any) -> np.ndarray | None:
    """A known value: an array, or one the engine computes when first asked for (an object with ``get()``)."""
    if v is None or isinstance(v, np.ndarray):
        return v
    got: np.ndarray | None = v.get()
    return got


def _attr_value(a: AttributeProto) -> Any:

    return attribute_value(a)


# --- extent arithmetic (Clause 9.3: nothing is computed over variables) -----------------------------


def unify(ctx: ShapeContext, a: Extent, b: Extent, what: str) -> Extent:
    """Two extents the definition requires equal: the more informative one; fail when both are fixed and differ."""
    if a is None:
        return b
    if b is None or a == b:
        return a
    if isinstance(a, int) and isinstance(b, int):
        ctx.fail(f"{what}: extents {a} and {b} differ")
    if isinstance(a, int):
        return a
    if isinstance(b, int):
        return b
    return a  # two variables: both denote the same extent if the model runs; keep the first


def unify_shapes(ctx: ShapeContext, a: ShapeT | None, b: ShapeT | None, what: str) -> ShapeT | None:
    """Two shapes the definition requires equal (rank and every extent)."""
    if a is None:
        return b
    if b is None:
        return a
    if len(a) != len(b):
        ctx.fail(f"{what}: ranks {len(a)} and {len(b)} differ")
    return tuple(unify(ctx, x, y, f"{what}, axis {i}") for i, (x, y) in enumerate(zip(a, b)))


def broadcast(ctx: ShapeContext, shapes: Sequence[ShapeT | None]) -> ShapeT | None:
    """Multidirectional broadcasting (Clause 6.6.2, 6.6.4) of known shapes; None if any rank is unknown.

    The rule is :func:`onnxcore.types.broadcast.broadcast_dims` (the one the public
    :func:`onnxcore.broadcast_shapes` applies); two different fixed extents, neither 1, fail.
    """
    if not shapes or any(s is None for s in shapes):
        return None
    try:
        return broadcast_extents([s for s in shapes if s is not None])
    except ShapeError as e:
        ctx.fail(str(e))


def unidirectional(ctx: ShapeContext, target: ShapeT | None, shape: ShapeT | None) -> ShapeT | None:
    """Unidirectional broadcasting (Clause 6.6.3, 6.6.4) of ``shape`` to ``target``: ``target``, refined where
    its extent is unknown or a variable and ``shape``'s is fixed and not 1 (the rule of
    :func:`onnxcore.types.broadcast.unidirectional_dim`). None when ``target``'s rank is unknown; ``target``
    when ``shape``'s is."""
    if target is None or shape is None:
        return target
    try:
        return unidirectional_extents(target, shape)
    except ShapeError as e:
        ctx.fail(str(e))


def norm_axis(ctx: ShapeContext, axis: int, rank: int, what: str = "axis") -> int:
    """``axis`` in ``[0, rank)``; a negative one counts from the end. Fails when out of range."""
    if not -rank <= axis < rank:
        ctx.fail(f"{what} {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def dim_at(s: ShapeT | None, i: int) -> Extent:
    """Extent ``i`` of ``s`` (negative counts from the end); None when the rank is unknown or too small."""
    if s is None or not -len(s) <= i < len(s):
        return None
    return s[i]


def dim_div(ctx: ShapeContext, a: Extent, b: Extent, what: str) -> Extent:
    """``a / b`` where the definition makes ``a`` a multiple of ``b`` (fails when both are fixed and it is not)."""
    if b == 1:
        return a
    if isinstance(a, int) and isinstance(b, int) and b > 0:
        if a % b:
            ctx.fail(f"{what}: {a} is not a multiple of {b}")
        return a // b
    return None


def unify_all(ctx: ShapeContext, dims: Sequence[Extent], what: str) -> Extent:
    """Extents the definition requires equal, unified (fails on two fixed ones that differ)."""
    out: Extent = None
    for d in dims:
        out = unify(ctx, out, d, what)
    return out


def require_rank(ctx: ShapeContext, s: ShapeT | None, ranks: Sequence[int], what: str) -> None:
    """Fail when ``s`` is known and its rank is none of ``ranks``."""
    if s is not None and len(s) not in ranks:
        ctx.fail(f"{what} has rank {len(s)}, the definition requires {' or '.join(map(str, ranks))}")


def dim_mul(a: Extent, b: Extent) -> Extent:
    """``a * b`` when both are fixed; a variable times 1 is itself; otherwise unknown (0 times anything is 0)."""
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    if a == 0 or b == 0:
        return 0
    if a == 1:
        return b
    if b == 1:
        return a
    return None


def dim_add(a: Extent, b: Extent) -> Extent:
    """``a + b`` when both are fixed; a variable plus 0 is itself; otherwise unknown."""
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    if a == 0:
        return b
    if b == 0:
        return a
    return None


def dim_prod(dims: Sequence[Extent]) -> Extent:
    """The product of ``dims`` (see :func:`dim_mul`); 1 for none."""
    out: Extent = 1
    for d in dims:
        out = dim_mul(out, d)
    return out


def same_as_input(ctx: ShapeContext) -> list[ShapeT | None]:
    """Every output has the shape of input 0 (unary elementwise operators)."""
    return [ctx.shape(0)] * max(1, ctx.n_outputs)


def shape_from_input(ctx: ShapeContext, i: int) -> ShapeT | None:
    """A shape given as the contents of 1-D input ``i`` (ConstantOfShape, Expand): its extents if known (dimension
    variables included, see :class:`SymbolicValue`), else its length as the rank."""
    dims = ctx.dims(i)
    if dims is not None:
        if any(isinstance(d, int) and d < 0 for d in dims):
            ctx.fail(f"shape input {i} holds a negative extent: {dims}")
        return tuple(dims)
    s = ctx.shape(i)
    if s is not None and len(s) == 1 and isinstance(s[0], int):
        return (None,) * s[0]
    return None
