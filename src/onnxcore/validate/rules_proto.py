"""Annex B rules: mandatory fields and oneof groups, reserved tags, deprecated fields (Clause 12.6),
element type tags (Clause 6.2) and the agreement of an attribute's type with its value fields.

Where Annex B and the clauses disagree about an obligation, the clause governs; the divergences
are listed in :data:`DIVERGENCES` and documented in docs/validation.md.
"""

from __future__ import annotations

from collections.abc import Iterator

from onnxcore.proto import MESSAGE_CLASSES, MESSAGE_SPECS
from onnxcore.proto.messages import AttributeProto, TensorProto, TypeProto
from onnxcore.validate.catalog import rule
from onnxcore.validate.context import Context
from onnxcore.validate.types_util import elem_type

__all__ = ["DIVERGENCES", "ATTR_VALUE_FIELD"]

Found = Iterator[tuple[str, str]]

# (message, field or oneof group) -> why the Annex B obligation is not enforced as written.
DIVERGENCES: dict[tuple[str, str], str] = {
    ("AttributeProto", "f"): (
        "Annex B marks `f` mandatory, but it holds the value of a FLOAT attribute only (Clause 7.4); "
        "an attribute of any other type never carries it, and no producer writes it there."
    ),
    ("AttributeProto", "type"): (
        "Mandatory from IR version 2 only: IR version 1 predates the field, and its models carry none."
    ),
    ("OperatorSetIdProto", "domain"): (
        "Annex B marks `domain` mandatory, but the default domain is the empty name (Clause 5.3.2) and "
        "an empty string is not written by producers; an absent domain is the default domain."
    ),
    ("ValueInfoProto", "type"): (
        "Annex B marks `type` mandatory, but Clause 7.1 lets a subgraph declare only the names of its "
        "inputs and outputs, and value_info is an optional constraint; the type is required for the "
        "inputs and outputs of the top-level graph, by rule E-IO-TYPE."
    ),
    ("TypeProto.Tensor", "elem_type"): (
        "Annex B marks `elem_type` mandatory, but a value's type may be partly unknown (Clause 9.4) and "
        "Clause 7.1 lets a subgraph omit types; a tensor type without an element type is an unknown "
        "element type. Required for the inputs and outputs of the top-level graph, by rule E-IO-TYPE."
    ),
    ("TypeProto.SparseTensor", "elem_type"): "As for `TypeProto.Tensor.elem_type`.",
    ("TypeProto", "value"): (
        "Annex B requires exactly one member of the group, but an empty type is how producers write a "
        "type that is unknown (Clause 9.4), which Clause 7.1 permits in subgraphs; required at the "
        "top level by E-IO-TYPE. Two members present is still an error; an empty type in value_info is accepted "
        "as unknown but reported as a warning, W-TYPE-EMPTY, since the obligation is a SHALL (B.2.21)."
    ),
    ("AttributeProto", "tp"): (
        "Annex B marks `tp` deprecated, but it is the value field of a TYPE_PROTO attribute (Table B.4; "
        "e.g. the `type` attribute of Optional), which producers write and consumers read; ignoring it "
        "would change the meaning of such nodes. It is not reported."
    ),
    ("TensorShapeProto.Dimension", "value"): (
        "Annex B requires exactly one of dim_value and dim_param, but Clause 6.5.1 defines a third kind "
        "of dimension, unknown, which is written as neither. Both present is still an error."
    ),
}


def _plan() -> dict[type, tuple[tuple[str, ...], tuple[tuple[str, tuple[str, ...]], ...], tuple[str, ...]]]:
    plan = {}
    for name, cls in MESSAGE_CLASSES.items():
        spec = MESSAGE_SPECS[name]
        mandatory = tuple(f.name for f in spec.fields if f.obligation == "mandatory")
        oneofs = tuple(spec.oneofs.items())
        deprecated = tuple(f.name for f in spec.fields if f.obligation == "deprecated")
        if mandatory or oneofs or deprecated:
            plan[cls] = (mandatory, oneofs, deprecated)
    return plan


_PLAN = _plan()


@rule("E-PROTO-MANDATORY", "B.1", "a field Annex B marks mandatory is absent (save the known divergences)")
def proto_mandatory(ctx: Context) -> Found:
    for cls, (mandatory, _oneofs, _dep) in _PLAN.items():
        if not mandatory:
            continue
        name = cls._SPEC.name  # type: ignore[attr-defined]
        fields = [f for f in mandatory if (name, f) not in DIVERGENCES or (name, f) == ("AttributeProto", "type")]
        if not fields:
            continue
        for i in ctx.of(cls):
            msg = ctx.entries[i][0]
            for f in fields:
                if f == "type" and name == "AttributeProto" and 0 < ctx.ir_version < 2:
                    continue
                if not msg.has(f):
                    yield ctx.path(i), f"{name}.{f} is mandatory (Annex B) and absent"


@rule("E-PROTO-ONEOF", "B.1", "a oneof group with more than one member present, or none where one is required")
def proto_oneof(ctx: Context) -> Found:
    for cls, (_m, oneofs, _dep) in _PLAN.items():
        if not oneofs:
            continue
        name = cls._SPEC.name  # type: ignore[attr-defined]
        for i in ctx.of(cls):
            msg = ctx.entries[i][0]
            for group, members in oneofs:
                present = [m for m in members if msg.has(m)]
                if len(present) > 1:
                    yield ctx.path(i), f"{name}: {', '.join(present)} are all present; group {group!r} admits one"
                elif not present and (name, group) not in DIVERGENCES:
                    yield ctx.path(i), f"{name}: exactly one of {', '.join(members)} must be present"


# The position on an empty TypeProto in value_info: accepted, read as an unknown type (Clause 9.4; the divergence
# recorded for TypeProto.value above), but Annex B B.2.21 says exactly one member of the group SHALL be present, so
# the model is told about it.
_TYPE_GROUP = dict(TypeProto._SPEC.oneofs)["value"]


@rule(
    "W-TYPE-EMPTY",
    "B.2.21",
    "a value_info entry whose type is an empty TypeProto (no member of its group, which Annex B says SHALL be "
    "present): read as an unknown type (Clause 9.4)",
)
def type_empty(ctx: Context) -> Found:
    entries = ctx.entries
    for i in ctx.of(TypeProto):
        msg, parent, field, _k = entries[i]
        if field != "type" or parent <= 0 or entries[parent][2] != "value_info":
            continue
        if not any(msg.has(m) for m in _TYPE_GROUP):
            yield (
                ctx.path(i),
                f"value_info {entries[parent][0].name!r} has an empty type; Annex B (B.2.21) says exactly one of "  # type: ignore[attr-defined]
                f"{', '.join(_TYPE_GROUP)} SHALL be present; read as an unknown type",
            )


@rule("W-PROTO-DEPRECATED", "B.1", "a deprecated field is present (a consumer ignores it)")
def proto_deprecated(ctx: Context) -> Found:
    for cls, (_m, _o, deprecated) in _PLAN.items():
        if not deprecated:
            continue
        name = cls._SPEC.name  # type: ignore[attr-defined]
        fields = [f for f in deprecated if (name, f) not in DIVERGENCES]
        if not fields:
            continue
        for i in ctx.of(cls):
            msg = ctx.entries[i][0]
            for f in fields:
                if msg.has(f):
                    yield ctx.path(i), f"{name}.{f} is deprecated; it is ignored"


def _unknown(ctx: Context) -> list[tuple[int, int, bool]]:
    """(entry, tag, reserved) of every unknown field of every message, found by one pass over the entries for the two
    rules that read them (a 50,000-node graph's entries are walked once, not once per rule)."""
    found: list[tuple[int, int, bool]] | None = getattr(ctx, "_unknown_fields", None)
    if found is None:
        found = []
        for i, (msg, _p, _f, _k) in enumerate(ctx.entries):
            if msg._unknown:
                reserved = msg._SPEC.reserved_tags
                for tag, _octets in msg.unknown_fields:
                    found.append((i, tag, tag in reserved))
        setattr(ctx, "_unknown_fields", found)  # noqa: B010 (a cache the Context does not declare)
    return found


@rule("E-PROTO-RESERVED", "12.6", "a field with a tag Annex B reserves")
def proto_reserved(ctx: Context) -> Found:
    for i, tag, reserved in _unknown(ctx):
        if reserved:
            name = ctx.entries[i][0]._SPEC.name
            yield ctx.path(i), f"tag {tag} is reserved in {name} and SHALL NOT be used"


@rule("W-PROTO-UNKNOWN-FIELD", "12.4", "a field this edition does not define (kept, not interpreted)")
def proto_unknown(ctx: Context) -> Found:
    for i, tag, reserved in _unknown(ctx):
        if not reserved:
            name = ctx.entries[i][0]._SPEC.name
            yield ctx.path(i), f"{name} carries a field of unknown tag {tag}; it is kept and not interpreted"


_ELEM_FIELDS = (
    (TypeProto.Tensor, "elem_type", True),
    (TypeProto.SparseTensor, "elem_type", True),
    (TypeProto.Map, "key_type", True),
    (TensorProto, "data_type", False),
)


def _elem_tags(ctx: Context) -> Iterator[tuple[int, str, int]]:
    for cls, field, needs_presence in _ELEM_FIELDS:
        for i in ctx.of(cls):
            msg = ctx.entries[i][0]
            # An absent elem_type of a type is reported by E-PROTO-MANDATORY, not twice.
            if needs_presence and not msg.has(field):
                continue
            yield i, field, int(getattr(msg, field))


@rule("E-ELEM-UNDEFINED", "6.2", "element type tag 0 (UNDEFINED) used as the element type of a value")
def elem_undefined(ctx: Context) -> Found:
    for i, field, tag in _elem_tags(ctx):
        if tag == 0:
            yield f"{ctx.path(i)}/{field}", "element type 0 (UNDEFINED) is not the type of any value"


@rule("E-ELEM-UNKNOWN", "6.2", "an element type tag not listed in Table 5")
def elem_unknown(ctx: Context) -> Found:
    for i, field, tag in _elem_tags(ctx):
        if tag != 0 and elem_type(tag) is None:
            yield f"{ctx.path(i)}/{field}", f"element type tag {tag} is not in Table 5"


AT = AttributeProto.AttributeType
# The value field each attribute type uses (Clause 7.4, Table B.4).
ATTR_VALUE_FIELD: dict[int, str] = {
    AT.FLOAT: "f",
    AT.INT: "i",
    AT.STRING: "s",
    AT.TENSOR: "t",
    AT.GRAPH: "g",
    AT.SPARSE_TENSOR: "sparse_tensor",
    AT.TYPE_PROTO: "tp",
    AT.FLOATS: "floats",
    AT.INTS: "ints",
    AT.STRINGS: "strings",
    AT.TENSORS: "tensors",
    AT.GRAPHS: "graphs",
    AT.SPARSE_TENSORS: "sparse_tensors",
    AT.TYPE_PROTOS: "type_protos",
}
_VALUE_FIELDS = tuple(ATTR_VALUE_FIELD.values())
# The types whose value is one message: absent, the attribute has no value at all.
_MESSAGE_VALUED = frozenset({int(AT.TENSOR), int(AT.GRAPH), int(AT.SPARSE_TENSOR), int(AT.TYPE_PROTO)})


@rule("E-ATTR-VALUE", "7.4", "an attribute whose type is undefined, or whose value fields disagree with its type")
def attr_value(ctx: Context) -> Found:
    for i in ctx.of(AttributeProto):
        a = ctx.entries[i][0]
        assert isinstance(a, AttributeProto)
        used = [f for f in _VALUE_FIELDS if a.has(f)]
        if a.ref_attr_name:
            if used:
                yield ctx.path(i), f"attribute {a.name!r} refers to {a.ref_attr_name!r} and also carries a value"
            continue
        if not a.has("type"):
            continue  # E-PROTO-MANDATORY
        t = int(a.type)
        if t not in ATTR_VALUE_FIELD:
            yield ctx.path(i), f"attribute {a.name!r} has type {t}, which is not a value type of Table B.4"
            continue
        if len(used) > 1:
            yield ctx.path(i), f"attribute {a.name!r} carries several values ({', '.join(used)})"
        elif not used and t in _MESSAGE_VALUED:
            # A scalar left at its default is a value (0, "" or an empty list); a message is not (Table B.4).
            field = ATTR_VALUE_FIELD[t]
            yield ctx.path(i), f"attribute {a.name!r} has type {AT(t).name} but no value (field {field!r} is absent)"
        elif used and used[0] != ATTR_VALUE_FIELD[t]:
            yield (
                ctx.path(i),
                f"attribute {a.name!r} has type {AT(t).name} but its value is in field {used[0]!r}",
            )


_MAP_KEYS = frozenset({2, 3, 4, 5, 6, 7, 8, 12, 13})  # the integral element types and STRING (6.8.2)
_OPTIONAL_ELEMS = frozenset({"tensor_type", "sparse_tensor_type", "sequence_type", "map_type"})


@rule(
    "E-TYPE-COMPOSITE", "6.8", "a map key that is not integral or string, an optional of an optional, a nameless opaque"
)
def type_composite(ctx: Context) -> Found:
    for i in ctx.of(TypeProto.Map):
        mt = ctx.entries[i][0]
        assert isinstance(mt, TypeProto.Map)
        key = int(mt.key_type)
        if mt.has("key_type") and key not in _MAP_KEYS and elem_type(key) is not None:
            yield f"{ctx.path(i)}/key_type", f"map keys are integers or strings (6.8.2), not {elem_type(key).name}"
    for i in ctx.of(TypeProto.Optional):
        ot = ctx.entries[i][0]
        assert isinstance(ot, TypeProto.Optional)
        inner = ot.elem_type.which_oneof("value") if ot.elem_type is not None else None
        if inner is not None and inner not in _OPTIONAL_ELEMS:
            kind = inner.removesuffix("_type")
            yield f"{ctx.path(i)}/elem_type", f"an optional holds a tensor, sparse tensor, sequence or map, not {kind}"
    for i in ctx.of(TypeProto.Opaque):
        op = ctx.entries[i][0]
        assert isinstance(op, TypeProto.Opaque)
        if not op.name:
            yield ctx.path(i), "an opaque type has no name (6.8.4: the name is required; Annex B: optional)"
