"""The operator definition records: :class:`OpSchema`, :class:`FormalParameter`, :class:`AttributeDef`.

An operator is identified by (domain, name, since_version) (Clause 14.3); one :class:`OpSchema` is one
such definition of ONNX 1-2, read from the data file that ``tools/gen_defs.py`` writes.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Literal

from onnxcore.io import decode
from onnxcore.proto.messages import AttributeProto, FunctionProto

__all__ = ["AttributeDef", "FormalParameter", "OpSchema", "Option", "Origin"]

Option = Literal["single", "optional", "variadic"]

Origin = Literal["onnx", "onnxruntime"]

_OPTIONS: tuple[Option, Option, Option] = ("single", "optional", "variadic")


class FormalParameter:
    """A formal input or output of an operator (Clause 7.3).

    Attributes:
        name: The parameter's name in the definition.
        type_str: A type variable (e.g. ``"T"``) or a type string (e.g. ``"tensor(int64)"``).
        types: The type strings the parameter admits, in the canonical form of
            :func:`onnxcore.types.type_string` (``"map(string,tensor(float))"``).
        option: ``"single"``, ``"optional"`` (Clause 7.3.3) or ``"variadic"`` (Clause 7.3.2).
        is_homogeneous: For a variadic parameter, whether all its actuals have one type.
        min_arity: For a variadic parameter, the minimum number of actuals (Clause 7.3.2).
    """

    __slots__ = ("is_homogeneous", "min_arity", "name", "option", "type_str", "types")

    name: str
    type_str: str
    types: frozenset[str]
    option: Option
    is_homogeneous: bool
    min_arity: int

    def __init__(
        self, name: str, type_str: str, types: frozenset[str], option: Option, is_homogeneous: bool, min_arity: int
    ) -> None:
        self.name = name
        self.type_str = type_str
        self.types = types
        self.option = option
        self.is_homogeneous = is_homogeneous
        self.min_arity = min_arity

    def __repr__(self) -> str:
        return f"FormalParameter({self.name!r}, {self.type_str!r}, {self.option})"


class AttributeDef:
    """An attribute of an operator definition (Clause 7.4).

    Attributes:
        name: The attribute name.
        type: Its :class:`~onnxcore.proto.AttributeProto.AttributeType` (an int).
        required: Whether a node must supply it.
        default: The default value as an ``AttributeProto``, or None when there is none. It is shared;
            copy it (``copy.copy``) before changing it.
    """

    __slots__ = ("default", "name", "required", "type")

    name: str
    type: int
    required: bool
    default: AttributeProto | None

    def __init__(self, name: str, type: int, required: bool, default: AttributeProto | None) -> None:
        self.name = name
        self.type = type
        self.required = required
        self.default = default

    def __repr__(self) -> str:
        kind = AttributeProto.AttributeType(self.type).name if self.type in _ATTR_TYPES else str(self.type)
        return f"AttributeDef({self.name!r}, {kind}, required={self.required})"


_ATTR_TYPES = frozenset(int(t) for t in AttributeProto.AttributeType)


class OpSchema:
    """One definition of an operator: (domain, name, since_version) and its signature (Clause 14.3).

    Attributes:
        name: Operator name (``op_type``).
        domain: Its domain; ``""`` is the default domain ``ai.onnx``.
        since_version: The operator set version that introduced this definition.
        deprecated: Whether the definition is deprecated (Clause 14.5; still valid).
        inputs: Formal inputs in order.
        outputs: Formal outputs in order.
        attributes: Attribute definitions by name.
        type_constraints: Type variable to the allowed type strings (canonical form).
        min_input: Fewest inputs a node may give (after omitting trailing optional ones).
        max_input: Most inputs a node may give (2**31 - 1 for variadic).
        min_output: Fewest outputs.
        max_output: Most outputs.
        function_versions: Operator set versions for which a stored function body exists.
        context_dependent_function_versions: Versions for which onnx builds a body per node (not
            stored: such a body depends on the node's types and attributes).
        origin: Where the definition comes from: ``"onnx"`` (ONNX 1-2, as the ``onnx`` package states it) or
            ``"onnxruntime"`` (onnxruntime's own operators: the ``com.microsoft`` domain and its extensions of
            the default domain, as onnxruntime states them; not part of ONNX 1-2).
    """

    __slots__ = (
        "_functions",
        "attributes",
        "context_dependent_function_versions",
        "deprecated",
        "domain",
        "function_versions",
        "inputs",
        "max_input",
        "max_output",
        "min_input",
        "min_output",
        "name",
        "origin",
        "outputs",
        "since_version",
        "type_constraints",
    )

    name: str
    domain: str
    since_version: int
    deprecated: bool
    inputs: tuple[FormalParameter, ...]
    outputs: tuple[FormalParameter, ...]
    attributes: dict[str, AttributeDef]
    type_constraints: dict[str, tuple[str, ...]]
    min_input: int
    max_input: int
    min_output: int
    max_output: int
    function_versions: tuple[int, ...]
    context_dependent_function_versions: tuple[int, ...]
    origin: Origin
    _functions: dict[int, bytes]

    def __init__(
        self,
        *,
        name: str,
        domain: str,
        since_version: int,
        deprecated: bool,
        inputs: tuple[FormalParameter, ...],
        outputs: tuple[FormalParameter, ...],
        attributes: dict[str, AttributeDef],
        type_constraints: dict[str, tuple[str, ...]],
        min_input: int,
        max_input: int,
        min_output: int,
        max_output: int,
        functions: Mapping[int, bytes] | None = None,
        context_dependent_function_versions: tuple[int, ...] = (),
        origin: Origin = "onnx",
    ) -> None:
        self.name = name
        self.domain = domain
        self.since_version = since_version
        self.deprecated = deprecated
        self.inputs = inputs
        self.outputs = outputs
        self.attributes = attributes
        self.type_constraints = type_constraints
        self.min_input = min_input
        self.max_input = max_input
        self.min_output = min_output
        self.max_output = max_output
        self._functions = dict(sorted((functions or {}).items()))
        self.function_versions = tuple(self._functions)
        self.context_dependent_function_versions = context_dependent_function_versions
        self.origin = origin

    def input_bounds(self, n: int) -> tuple[int, int]:
        """Fewest and most inputs a node giving ``n`` may give (Clause 7.3.2, variadic minimum arity included)."""
        lo, hi = _bounds(self.inputs, n)
        return max(lo, self.min_input), min(hi, self.max_input)

    def output_bounds(self, n: int) -> tuple[int, int]:
        """Fewest and most outputs a node naming ``n`` may name (Clause 7.3.2)."""
        lo, hi = _bounds(self.outputs, n)
        return max(lo, self.min_output), min(hi, self.max_output)

    def unsupplied_required(self, names: Sequence[str]) -> list[tuple[int, FormalParameter]]:
        """The actual inputs left empty whose formal is not optional (Clause 7.3.3), with their formal.

        Actuals past the formals belong to the last one when it is variadic; others are an arity matter.
        """
        formals = self.inputs
        out = []
        for k, name in enumerate(names):
            if name or not formals or (k >= len(formals) and formals[-1].option != "variadic"):
                continue
            formal = formals[min(k, len(formals) - 1)]
            if formal.option != "optional":
                out.append((k, formal))
        return out

    @property
    def has_function(self) -> bool:
        """Whether a static function body is stored (for some operator set version)."""
        return bool(self._functions)

    @property
    def has_context_dependent_function(self) -> bool:
        """Whether onnx defines a body that depends on the node (not available here)."""
        return bool(self.context_dependent_function_versions)

    def function_body(self, version: int | None = None) -> FunctionProto | None:
        """The function body (Clause 8.4) for a model importing ``version`` of the domain.

        A schema may carry several bodies, each written against an operator set version; the one
        used is the body of the greatest such version <= ``version`` (the same binding rule as
        Clause 14.4, applied to the body's own imports). ``version`` defaults to ``since_version``.
        Each call decodes afresh, so the caller may change the result.

        Returns:
            The body, or None when there is none for that version (or only a context-dependent one).
        """
        if not self._functions:
            return None
        want = self.since_version if version is None else version
        best = None
        for v in self._functions:
            if v <= want:
                best = v
        if best is None:
            return None
        return decode(FunctionProto, self._functions[best])

    def has_function_body(self, version: int | None = None) -> bool:
        """Whether :meth:`function_body` gives a body for ``version`` (without decoding it)."""
        want = self.since_version if version is None else version
        return any(v <= want for v in self._functions)

    def function_body_bytes(self, version: int) -> bytes | None:
        """The stored octets of the body written against exactly ``version`` (None if absent)."""
        return self._functions.get(version)

    def __repr__(self) -> str:
        dom = self.domain or "ai.onnx"
        tail = "" if self.origin == "onnx" else f", {self.origin}"
        return f"OpSchema({dom}:{self.name}-{self.since_version}{tail})"


def schema_from_record(rec: Mapping[str, object], origin: Origin = "onnx") -> OpSchema:
    """Build an :class:`OpSchema` from one record of a data file (see ``tools/gen_defs.py``), of ``origin``."""
    tc_list = rec["t"]
    assert isinstance(tc_list, list)
    tc = {str(var): tuple(str(t) for t in types) for var, types in tc_list}

    def params(raw: object) -> tuple[FormalParameter, ...]:
        assert isinstance(raw, list)
        out = []
        for name, type_str, option, homogeneous, min_arity in raw:
            types = tc.get(type_str)
            out.append(
                FormalParameter(
                    name,
                    type_str,
                    frozenset(types) if types is not None else frozenset((type_str,)),
                    _OPTIONS[option],
                    bool(homogeneous),
                    int(min_arity),
                )
            )
        return tuple(out)

    attrs: dict[str, AttributeDef] = {}
    raw_attrs = rec["a"]
    assert isinstance(raw_attrs, list)
    for name, atype, required, default in raw_attrs:
        value = decode(AttributeProto, base64.b64decode(default)) if default is not None else None
        attrs[name] = AttributeDef(name, int(atype), bool(required), value)
    counts = rec["c"]
    assert isinstance(counts, list)
    raw_f = rec.get("f") or {}
    assert isinstance(raw_f, dict)
    raw_fc = rec.get("fc") or []
    assert isinstance(raw_fc, list)
    return OpSchema(
        name=str(rec["n"]),
        domain=str(rec["d"]),
        since_version=int(rec["v"]),  # type: ignore[call-overload]
        deprecated=bool(rec.get("x", 0)),
        inputs=params(rec["i"]),
        outputs=params(rec["o"]),
        attributes=attrs,
        type_constraints=tc,
        min_input=int(counts[0]),
        max_input=int(counts[1]),
        min_output=int(counts[2]),
        max_output=int(counts[3]),
        functions={int(k): base64.b64decode(v) for k, v in raw_f.items()},
        context_dependent_function_versions=tuple(int(v) for v in raw_fc),
        origin=origin,
    )


def _bounds(formals: tuple[FormalParameter, ...], n: int) -> tuple[int, int]:
    lo = 0
    for i, f in enumerate(formals):
        if f.option == "single":
            lo = i + 1
        elif f.option == "variadic":
            lo = max(lo, i + f.min_arity)
    hi = n if formals and formals[-1].option == "variadic" else len(formals)
    return lo, hi
