"""The rules of :mod:`onnxcore.build.builder`: what a call may give (attributes, constants, element types, output
counts), checked against the operator definitions; the least IR version of an opset import; and the state a
builder shares with the builders of its subgraphs (imports, the names taken, given back by a call that fails).

Each check raises :class:`Fail` with a message naming the operator, the argument and the opset; the builder's
entry points turn it into a :class:`BuildError` at their caller's line.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from onnxcore.defs import OpSchema, all_schemas, canonical_domain, domain_versions, schema_versions
from onnxcore.defs.ir import BASE_IR_VERSION, opset_ir_version
from onnxcore.errors import OnnxCoreError
from onnxcore.infer.rules import bind_inputs, formal_at
from onnxcore.proto.message import copy_message
from onnxcore.proto.messages import AttributeProto, GraphProto, SparseTensorProto, TensorProto, TypeProto
from onnxcore.types import ElementType, from_array, to_array
from onnxcore.types.typestr import parse_type_string, tensor_elem

__all__ = [
    "BuildError",
    "Extent",
    "Fail",
    "Shared",
    "as_array",
    "attributes",
    "check_input_types",
    "check_opsets",
    "constant_type",
    "element_type_of",
    "elem_of",
    "extent",
    "min_ir_version",
    "output_count",
    "unknown_operator",
]

Extent = int | str | None
A = AttributeProto.AttributeType


class BuildError(OnnxCoreError, ValueError):
    """A graph builder call that cannot make a valid node: what is wrong, with the operator and its opset.

    Raised at the caller's line: the traceback's last frame is the call that made the mistake (the builder's
    frame that raised it comes just before).
    """


class Fail(Exception):
    """Raised inside the builder; the public entry point turns it into a :class:`BuildError` at its caller."""


def min_ir_version(opsets: Mapping[str, int]) -> int:
    """The least IR version a model importing ``opsets`` (domain -> version) needs (3 for unknown domains), from
    the one table of :mod:`onnxcore.defs.ir`."""
    return max([BASE_IR_VERSION, *(opset_ir_version(d, v) or BASE_IR_VERSION for d, v in opsets.items())])


class Shared:
    """What a builder shares with the builders of its subgraphs: imports, names, counters."""

    def __init__(self, opsets: dict[str, int], constants: str) -> None:
        self.opsets = opsets
        self.constants = constants
        self.ir_version = min_ir_version(opsets)
        self.values: set[str] = set()
        self.nodes: set[str] = set()
        self.counters: dict[str, int] = {}
        self.serial = 0
        # The names taken, in order: a call that fails gives back those it took.
        self.journal: list[tuple[set[str], str, str, int]] = []

    def fresh(self, prefix: str, used: set[str]) -> str:
        """Take a new name ``prefix<k>``."""
        start = k = self.counters.get(prefix, 0)
        while f"{prefix}{k}" in used:
            k += 1
        self.counters[prefix] = k + 1
        name = f"{prefix}{k}"
        used.add(name)
        self.journal.append((used, name, prefix, start))
        return name

    def claim(self, name: str, used: set[str], what: str) -> None:
        """Take the name ``name`` given by the user."""
        if not isinstance(name, str) or not name:
            raise Fail(f"a {what} name is a non-empty str, got {name!r}")
        if name in used:
            raise Fail(f"{what} name {name!r} is already used in this model")
        used.add(name)
        self.journal.append((used, name, "", -1))

    def give_back(self, mark: int) -> None:
        """Free the names taken since ``len(journal)`` was ``mark``."""
        while len(self.journal) > mark:
            used, name, prefix, counter = self.journal.pop()
            used.discard(name)
            if counter >= 0:
                self.counters[prefix] = counter


def check_opsets(opset: int | None, opsets: Mapping[str, int] | None) -> dict[str, int]:
    """The imports of a builder (domain -> version) from its ``opset`` and ``opsets`` arguments, checked."""
    out: dict[str, int] = {}
    if opsets is not None and not isinstance(opsets, Mapping):
        raise Fail(f"opsets is a mapping of domain to version, got {type(opsets).__name__}")
    if opset is not None and (isinstance(opset, bool) or not isinstance(opset, int)):
        raise Fail(f"opset is an int, got {opset!r:.60}")
    for domain, version in (opsets or {}).items():
        out[canonical_domain(domain)] = version
    if opset is not None:
        if out.get("", opset) != opset:
            raise Fail(f"opset={opset} and opsets={{'': {out['']}}} disagree")
        out[""] = opset
    if not out:
        raise Fail("give the operator set version: GraphBuilder(opset=18) or opsets={'': 18, 'ai.onnx.ml': 3}")
    for domain, version in out.items():
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise Fail(f"the version of domain {domain or 'ai.onnx'!r} must be a positive int, got {version!r}")
        known = domain_versions(domain)
        if known is not None and not known[0] <= version <= known[1]:
            raise Fail(f"domain {domain or 'ai.onnx'!r} has versions {known[0]} to {known[1]}, not {version}")
    return out


def element_type_of(spec: Any) -> ElementType:
    """The element type named by ``spec``: an :class:`ElementType` or ``TensorProto.DataType`` (an int tag),
    an ONNX type name (``"FLOAT"``, ``"float"`` is 32-bit, ``"bfloat16"``), or a numpy dtype or scalar type.

    Raises:
        Fail: ``spec`` names no element type.
    """
    try:
        if isinstance(spec, ElementType):
            return spec
        if isinstance(spec, int | np.integer) and not isinstance(spec, bool):
            return ElementType(int(spec))
        if isinstance(spec, str):
            member = ElementType.__members__.get(spec.upper())
            if member is not None:
                return member
        return ElementType.from_dtype(spec)
    except (ValueError, TypeError) as e:
        raise Fail(f"{spec!r} is not an element type: {e}") from None


def elem_of(type_str: str | None) -> ElementType | None:
    """The element type of a tensor type string (None for another type)."""
    name = tensor_elem(type_str)
    return None if name is None else ElementType.__members__.get(name.upper())


def extent(d: Any) -> Extent:
    """An extent given by the user, checked."""
    if d is None or isinstance(d, str):
        return d
    if isinstance(d, int | np.integer) and not isinstance(d, bool) and d >= 0:
        return int(d)
    raise Fail(f"an extent is an int >= 0, a dimension name (str) or None, got {d!r}")


def as_array(value: Any, et: ElementType | None, where: str = "constant") -> np.ndarray:
    """``value`` as a new array: numpy values keep their dtype; Python ones take ``et`` (else int64, float32 or
    bool; a float is refused for an integer ``et`` unless integral)."""
    if isinstance(value, TensorProto):
        return np.asarray(to_array(value))
    if isinstance(value, np.ndarray | np.generic):
        return np.array(value)  # a copy: the caller may change its array afterwards
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError) as e:
        raise Fail(f"{where}: {value!r} is not a constant: {e}") from None
    if arr.dtype.kind not in "biufUS":
        raise Fail(f"{where}: {value!r} is not a constant (a number, a string, or a list of them)")
    if et is None:
        et = {"b": ElementType.BOOL, "i": ElementType.INT64, "f": ElementType.FLOAT}.get(arr.dtype.kind)
        if et is None:
            return arr.astype(object)
    if et is ElementType.STRING:
        return arr.astype(object)
    try:
        out = arr.astype(et.np_dtype)
    except (ValueError, TypeError, OverflowError) as e:  # text that is not a number, say
        raise Fail(f"{where}: {value!r} is not a value of {et.name}: {e}") from None
    if arr.dtype.kind == "f" and (et.is_integer or et is ElementType.BOOL) and not np.array_equal(out, arr):
        raise Fail(f"{where}: {value!r} is not a value of {et.name}")
    return out


def constant_type(schema: OpSchema | None, k: int, in_types: Sequence[str | None]) -> ElementType | None:
    """The element type a Python constant at input ``k`` takes: that of its type variable as the other inputs
    (of types ``in_types``) bind it, or the only one its formal admits; None when neither tells."""
    if schema is None:
        return None
    formal = formal_at(schema.inputs, k)
    if formal is None:
        return None
    bindings, _ = bind_inputs(schema, in_types)
    t = bindings.get(formal.type_str)
    if t is None and len(formal.types) == 1:
        t = next(iter(formal.types))
    return elem_of(t)


def check_input_types(schema: OpSchema, inputs: Sequence[tuple[str, str | None] | None], where: str) -> None:
    """The known types of the inputs (name and type string, None for an input left out) are admitted by their
    formals, and the inputs of one type variable have one type."""
    for k, item in enumerate(inputs):
        formal = formal_at(schema.inputs, k)
        if item is None or item[1] is None or formal is None or item[1] in formal.types:
            continue
        allowed = ", ".join(sorted(formal.types))
        raise Fail(f"{where}: input {k} ({formal.name!r}) is {item[0]!r} of type {item[1]}, not one of {allowed}")
    _, conflicts = bind_inputs(schema, [None if item is None else item[1] for item in inputs])
    for var in sorted(conflicts):
        seen = [
            f"{item[0]!r} {item[1]}"
            for k, item in enumerate(inputs)
            if item is not None and (f := formal_at(schema.inputs, k)) is not None and f.type_str == var
        ]
        raise Fail(f"{where}: inputs of type variable {var} must have one type, got {', '.join(seen)}")


def unknown_operator(op_type: str, domain: str, version: int) -> str:
    """The message for an operator ``domain`` does not have at ``version`` (when it comes, or a near name)."""
    dom = domain or "ai.onnx"
    versions = schema_versions(op_type, domain)
    if versions:
        return f"{op_type} is not in {dom} opset {version}: it is defined from opset {versions[0]}"
    msg = f"{dom} has no operator {op_type!r} (opset {version})"
    names = sorted({s[1] for s in _operator_names(domain)})
    close = _close_match(op_type, names)
    return msg + (f"; did you mean {close[0]!r}?" if close else "")


def _operator_names(domain: str) -> list[tuple[str, str]]:
    return [(s.domain, s.name) for s in all_schemas() if s.domain == domain]


def attributes(
    kwargs: Mapping[str, Any], schema: OpSchema | None, where: str
) -> tuple[list[AttributeProto], dict[str, tuple[Any, int]]]:
    """The node's attributes (checked against the definition), and its subgraph attributes left to build
    (name -> (value given, GRAPH or GRAPHS))."""
    attrs: list[AttributeProto] = []
    graphs: dict[str, tuple[Any, int]] = {}
    for key, val in kwargs.items():
        if val is None:
            continue
        if schema is None:
            kind = _guess_kind(val, key, where)
        else:
            adef = schema.attributes.get(key)
            if adef is None:
                names = sorted(schema.attributes)
                close = _close_match(key, names)
                hint = f"did you mean {close[0]!r}?" if close else f"it has {', '.join(names) or 'none'}"
                raise Fail(f"{where}: unknown attribute {key!r}; {hint}")
            kind = adef.type
        if kind in (A.GRAPH, A.GRAPHS):
            graphs[key] = (val, kind)
        else:
            attrs.append(_attribute(key, kind, val, where))
    if schema is not None:
        for key, adef in schema.attributes.items():
            if adef.required and kwargs.get(key) is None:
                raise Fail(f"{where}: attribute {key!r} is required")
    return attrs, graphs


def _attribute(key: str, kind: int, val: Any, where: str) -> AttributeProto:
    """An attribute of type ``kind`` holding the Python value ``val``."""
    if isinstance(val, AttributeProto):
        if val.type != kind:
            raise Fail(f"{where}: attribute {key!r} must be {A(kind).name}, got an AttributeProto of type {val.type}")
        out = copy_message(val)
        out.name = key
        return out
    conv = _CONVERT.get(kind)
    value = None if conv is None else conv(val)
    if value is None:
        got = type(val).__name__
        raise Fail(f"{where}: attribute {key!r} must be {A(kind).name} ({_KIND_TEXT[A(kind)]}), got {got} {val!r:.60}")
    return AttributeProto(name=key, type=int(kind), **{_FIELD[A(kind)]: value})


def _guess_kind(val: Any, key: str, where: str) -> int:
    """The attribute type of a Python value, for an operator without a definition."""
    for kind in (A.INT, A.FLOAT, A.STRING, A.INTS, A.FLOATS, A.STRINGS, A.TENSOR, A.TYPE_PROTO):
        if _CONVERT[kind](val) is not None:
            return kind
    if callable(val) or isinstance(val, GraphProto):
        return A.GRAPH
    raise Fail(f"{where}: cannot tell the type of attribute {key!r} from {type(val).__name__}")


def _int(v: Any) -> int | None:
    if isinstance(v, bool | int | np.integer):
        return int(v)
    if isinstance(v, type | np.dtype) and not isinstance(v, bool):
        try:
            return int(ElementType.from_dtype(v))
        except ValueError:
            return None
    return None


def _float(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float | np.integer | np.floating) and not isinstance(v, bool) else None


def _string(v: Any) -> bytes | None:
    return v.encode() if isinstance(v, str) else bytes(v) if isinstance(v, bytes) else None


def _list(item: Callable[[Any], Any]) -> Callable[[Any], list[Any] | None]:
    def conv(v: Any) -> list[Any] | None:
        if isinstance(v, np.ndarray) and v.ndim == 1:
            v = list(v)
        if not isinstance(v, list | tuple):
            return None
        out = [item(x) for x in v]
        return None if any(x is None for x in out) else out

    return conv


def _tensor(v: Any) -> TensorProto | None:
    if isinstance(v, TensorProto):
        return v
    if isinstance(v, np.ndarray | np.generic | int | float | bool) or (
        isinstance(v, list) and np.asarray(v).dtype.kind in "biuf"
    ):
        try:
            return from_array(as_array(v, None))
        except ValueError:
            return None
    return None


def _type_proto(v: Any) -> TypeProto | None:
    if isinstance(v, TypeProto):
        return v
    if isinstance(v, str) and "(" in v:
        try:
            return parse_type_string(v.replace(" ", ""))
        except ValueError:
            return None
    return None


def _sparse(v: Any) -> SparseTensorProto | None:
    return v if isinstance(v, SparseTensorProto) else None


_CONVERT: dict[int, Callable[[Any], Any]] = {
    A.FLOAT: _float,
    A.INT: _int,
    A.STRING: _string,
    A.TENSOR: _tensor,
    A.SPARSE_TENSOR: _sparse,
    A.TYPE_PROTO: _type_proto,
    A.FLOATS: _list(_float),
    A.INTS: _list(_int),
    A.STRINGS: _list(_string),
    A.TENSORS: _list(_tensor),
    A.SPARSE_TENSORS: _list(_sparse),
    A.TYPE_PROTOS: _list(_type_proto),
}
_FIELD = {
    A.FLOAT: "f",
    A.INT: "i",
    A.STRING: "s",
    A.TENSOR: "t",
    A.SPARSE_TENSOR: "sparse_tensor",
    A.TYPE_PROTO: "tp",
    A.FLOATS: "floats",
    A.INTS: "ints",
    A.STRINGS: "strings",
    A.TENSORS: "tensors",
    A.SPARSE_TENSORS: "sparse_tensors",
    A.TYPE_PROTOS: "type_protos",
}
_KIND_TEXT = {
    A.FLOAT: "a number",
    A.INT: "an int",
    A.STRING: "a str",
    A.TENSOR: "a numpy array or a TensorProto",
    A.SPARSE_TENSOR: "a SparseTensorProto",
    A.TYPE_PROTO: "a TypeProto or a type string",
    A.FLOATS: "a list of numbers",
    A.INTS: "a list of ints",
    A.STRINGS: "a list of str",
    A.TENSORS: "a list of arrays",
    A.SPARSE_TENSORS: "a list of SparseTensorProto",
    A.TYPE_PROTOS: "a list of TypeProto",
}


def output_count(
    outputs: int | Sequence[str | None] | None,
    num_outputs: int | None,
    schema: OpSchema | None,
    op_type: str,
    bodies: Sequence[int],
    where: str,
) -> int:
    """How many outputs the node names: given, from its subgraphs (If, Loop, Scan: ``bodies`` are the numbers of
    outputs of the subgraphs built), or from its definition."""
    if isinstance(outputs, bool) or (outputs is not None and not isinstance(outputs, int | list | tuple)):
        raise Fail(f"{where}: outputs= is a count or a list of names, got {outputs!r}")
    if isinstance(outputs, int):
        n = outputs
    elif outputs is not None:
        n = len(outputs)
    elif num_outputs is not None:
        n = num_outputs
    else:
        if bodies and op_type in ("If", "Scan", "Loop"):
            if len(set(bodies)) > 1:
                raise Fail(f"{where}: the branches give different numbers of outputs: {bodies}")
            return bodies[0] - (op_type == "Loop")
        if schema is None:
            return 1
        if schema.outputs and schema.outputs[-1].option == "variadic":
            raise Fail(f"{where}: the number of outputs is variadic; give it with num_outputs= (or outputs=)")
        singles = 0
        while singles < len(schema.outputs) and schema.outputs[singles].option == "single":
            singles += 1
        return singles or len(schema.outputs)
    if schema is not None:
        lo, hi = schema.output_bounds(n)
        if not lo <= n <= hi:
            raise Fail(f"{where}: has {lo} to {hi} outputs, asked for {n}")
    elif n < 1:
        raise Fail(f"{where}: a node has at least one output, asked for {n}")
    return n


def _close_match(word: str, names: Sequence[str]) -> list[str]:
    """The name nearest ``word``, for a "did you mean" (at most one)."""
    # Here, not at the top: difflib is imported by every session (the runtime imports the builder), used by a typo.
    import difflib

    return difflib.get_close_matches(word, names, n=1)
