"""The generic step: what follows from the difference of two consecutive definitions alone (Clause 14.3).

After a pair's adapter (if any) ran, the node is reconciled with the definition it moves to, reading only
the two :class:`~onnxcore.defs.OpSchema` records:

* an attribute the new definition lacks is dropped when the node gives it the old default (or it is one of
  the hints that never changed a result, ``consumed_inputs`` and ``is_test``), else the node is refused;
* an attribute whose default changed is written out with the old default, so the node keeps its meaning;
  an attribute the new definition requires and the old one lacked refuses the node;
* an attribute that became an input of the same name (or the reverse) refuses the node: only an adapter
  moves a value between the two (the constants rule lives there);
* inputs and outputs beyond the new arity are dropped when omitted (inputs) or unused (outputs), else the
  node is refused; fewer than the new minimum refuses it;
* a type the new definition does not admit: when moving down, ``Cast`` nodes around the node compute it in
  a wider admitted type where that gives the same result (:data:`EXACT_WIDENING`), else the node is refused.
"""

from __future__ import annotations

from typing import Any

from onnxcore.convert.adapters import Refuse
from onnxcore.convert.version_step import Step, elem_of, type_of_elem
from onnxcore.defs.opschema import FormalParameter
from onnxcore.graph.attributes import attribute_kind, attribute_value
from onnxcore.proto.messages import AttributeProto
from onnxcore.types import ElementType

__all__ = ["EXACT_WIDENING", "cast_version", "check_types", "reconcile", "same_value"]

E = ElementType

# Hints that never changed an operator's result, removed from later definitions.
_HINTS = frozenset({"consumed_inputs", "is_test"})

# Wider element types that hold every value of a narrower one, best first.
_WIDER: dict[ElementType, tuple[ElementType, ...]] = {
    E.FLOAT16: (E.FLOAT, E.DOUBLE),
    E.BFLOAT16: (E.FLOAT, E.DOUBLE),
    E.FLOAT: (E.DOUBLE,),
    E.INT8: (E.INT16, E.INT32, E.INT64),
    E.INT16: (E.INT32, E.INT64),
    E.INT32: (E.INT64,),
    E.UINT8: (E.UINT16, E.INT16, E.INT32, E.UINT32, E.INT64, E.UINT64),
    E.UINT16: (E.INT32, E.UINT32, E.INT64, E.UINT64),
    E.UINT32: (E.INT64, E.UINT64),
}

# Operators whose results only select, move, compare or exactly compute values: computed in a wider type
# that holds every value and cast back, they give the same result (Clause 6: a Cast to a wider type and back
# is the identity on the narrower type's values).
_SELECTING = frozenset(
    {
        "Abs", "ArgMax", "ArgMin", "Ceil", "Clip", "Concat", "DepthToSpace", "Equal", "Expand", "Flatten", "Floor",
        "Gather", "GatherElements", "GatherND", "Greater", "GreaterOrEqual", "Identity", "IsInf", "IsNaN", "Less",
        "LessOrEqual", "Max", "MaxPool", "Min", "NonZero", "Pad", "ReduceMax", "ReduceMin", "Relu", "Reshape",
        "ReverseSequence", "Round", "ScatterElements", "ScatterND", "Shape", "Sign", "Size", "Slice",
        "SpaceToDepth", "Split", "Squeeze", "Tile", "TopK", "Transpose", "Trilu", "Unsqueeze", "Where", "Compress",
    }
)  # fmt: skip
# Correctly rounded operations: in float32 then rounded to float16/bfloat16 they round once (the format has
# more than twice the precision plus two bits), so the result is the narrow type's correctly rounded one.
_ROUNDED_ONCE = frozenset({"Add", "Sub", "Mul", "Div", "Sqrt", "Neg"})
_HALF = frozenset({E.FLOAT16, E.BFLOAT16})

EXACT_WIDENING = (_SELECTING, _ROUNDED_ONCE)
"""The operators for which :func:`reconcile` computes in a wider type (selecting ones; rounded-once ones for
the half-precision floats only)."""


def cast_version(target: int) -> int:
    """The version to write a helper ``Cast`` in: ``to`` is an integer from Cast-6 on."""
    return max(target, 6)


def same_value(a: AttributeProto, b: AttributeProto) -> bool:
    """Whether two attributes hold the same value."""
    try:
        va, vb = attribute_value(a), attribute_value(b)
    except Exception:  # a malformed attribute is never "the default"
        return False
    if hasattr(va, "shape") or hasattr(vb, "shape"):
        return False
    return bool(va == vb)


def _show(a: AttributeProto) -> str:
    try:
        v: Any = attribute_value(a)
    except Exception:
        return "?"
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def reconcile(step: Step, used: set[str]) -> None:
    """Bring the node into the form of ``step.dst`` as far as the two definitions tell (see the module).

    Args:
        step: The step (its ``dst`` is not None).
        used: Every value name read anywhere in the model or declared as a graph output.

    Raises:
        Refuse: what the definitions' difference cannot express.
    """
    a, b = step.src, step.dst
    assert b is not None
    node = step.node
    label = f"{node.op_type}-{b.since_version}"
    b_inputs = {f.name for f in b.inputs}
    kept: list[AttributeProto] = []
    for attr in node.attribute:
        name = attr.name
        bdef = b.attributes.get(name)
        if bdef is not None:
            if not attr.ref_attr_name and attribute_kind(attr) != bdef.type:
                raise Refuse(f"attribute {name!r} changes type in {label}; no adapter")
            kept.append(attr)
            continue
        if name in b_inputs:
            raise Refuse(f"attribute {name!r} is an input in {label}; no adapter moves it")
        if name in _HINTS:
            continue
        adef = a.attributes.get(name)
        if adef is not None and adef.default is not None and not attr.ref_attr_name and same_value(attr, adef.default):
            continue
        raise Refuse(f"attribute {name}={_show(attr)} has no counterpart in {label}")
    node.attribute = kept
    for name, bdef in b.attributes.items():
        if step.has_attr(name):
            continue
        adef = a.attributes.get(name)
        if adef is not None and adef.default is not None:
            if bdef.default is None or not same_value(adef.default, bdef.default):
                new = AttributeProto()
                for field in AttributeProto._SPEC.fields:
                    setattr(new, field.name, getattr(adef.default, field.name))
                new._present = adef.default._present
                new.name = name
                node.attribute.append(new)
        elif bdef.required:
            raise Refuse(f"{label} requires attribute {name!r}, which {node.op_type}-{a.since_version} does not have")
    _arity(step, used, label)
    _types(step, label)


def _arity(step: Step, used: set[str], label: str) -> None:
    a, b = step.src, step.dst
    assert b is not None
    node = step.node
    for k, name in enumerate(node.input):
        if not name or k >= len(a.inputs):
            continue
        formal = a.inputs[k].name
        if formal in b.attributes and not (k < len(b.inputs) and b.inputs[k].name == formal):
            raise Refuse(f"input {k} ({formal!r}) is an attribute in {label}; no adapter moves it")
    n = len(node.input)
    lo, hi = b.input_bounds(n)
    if n > hi:
        if any(node.input[hi:]):
            k = next(i for i in range(hi, n) if node.input[i])
            raise Refuse(f"input {k} ({node.input[k]!r}) has no counterpart in {label}")
        node.input = node.input[:hi]
        while node.input and not node.input[-1]:
            node.input.pop()
    if len(node.input) < lo:
        raise Refuse(f"{label} needs at least {lo} inputs, the node gives {len(node.input)}")
    missing = b.unsupplied_required(node.input)
    if missing:
        k, f = missing[0]
        raise Refuse(f"input {k} ({f.name!r}) of {label} may not be omitted")
    m = len(node.output)
    lo, hi = b.output_bounds(m)
    if m > hi:
        extra = [o for o in node.output[hi:] if o and o in used]
        if extra:
            raise Refuse(f"output {extra[0]!r} has no counterpart in {label} and is used")
        node.output = node.output[:hi]
        while node.output and not node.output[-1]:
            node.output.pop()
    if len(node.output) < lo:
        raise Refuse(f"{label} needs at least {lo} outputs, the node gives {len(node.output)}")


def _formal(formals: tuple[FormalParameter, ...], k: int) -> FormalParameter | None:
    if k < len(formals):
        return formals[k]
    if formals and formals[-1].option == "variadic":
        return formals[-1]
    return None


def _types(step: Step, label: str) -> None:
    b = step.dst
    assert b is not None
    node = step.node
    bad: dict[str, str] = {}  # type variable (or fixed type) -> actual type string
    for formals, names in ((b.inputs, node.input), (b.outputs, node.output)):
        for k, name in enumerate(names):
            f = _formal(formals, k)
            t = step.type(name)
            if f is None or not name or t is None or t in f.types:
                continue
            bad.setdefault(f.type_str, t)
    if not bad:
        return
    var, actual = next(iter(bad.items()))
    allowed = b.type_constraints.get(var)
    why = f"type {actual} is not admitted by {label}"
    if step.direction == "up" or allowed is None or len(bad) > 1:
        raise Refuse(why)
    elem = elem_of(actual)
    if elem is None:
        raise Refuse(why)
    op = node.op_type
    if op not in _SELECTING and not (op in _ROUNDED_ONCE and elem in _HALF):
        raise Refuse(f"{why}, and computing {op} in a wider type is not exact")
    wide = next((w for w in _WIDER.get(elem, ()) if type_of_elem(w) in allowed), None)
    if wide is None:
        raise Refuse(f"{why}, and no admitted wider type holds its values")
    _cast_around(step, var, elem, wide)


def _cast_around(step: Step, var: str, elem: ElementType, wide: ElementType) -> None:
    b = step.dst
    assert b is not None
    node = step.node
    version = cast_version(step.ctx.target)
    wide_t = type_of_elem(wide)
    inputs = list(node.input)
    for k, name in enumerate(inputs):
        f = _formal(b.inputs, k)
        if f is None or f.type_str != var or not name:
            continue
        new = step.new_value(f"{name}_{wide.type_name}", wide_t, step.shape(name))
        step.emit("Cast", [name], [new], version, to=int(wide))
        inputs[k] = new
    node.input = inputs
    outputs = list(node.output)
    for k, name in enumerate(outputs):
        f = _formal(b.outputs, k)
        if f is None or f.type_str != var or not name:
            continue
        new = step.new_value(f"{name}_{wide.type_name}", wide_t, step.shape(name))
        step.emit("Cast", [new], [name], version, after=True, to=int(elem))
        outputs[k] = new
    node.output = outputs


def check_types(step: Step) -> None:
    """Refuse a node whose known input or output types its definition in force (``step.dst``) does not admit."""
    b = step.dst
    assert b is not None
    node = step.node
    for formals, names in ((b.inputs, node.input), (b.outputs, node.output)):
        for k, name in enumerate(names):
            f = _formal(formals, k)
            t = step.type(name)
            if f is not None and name and t is not None and t not in f.types:
                raise Refuse(f"type {t} is not admitted by {node.op_type}-{b.since_version}")
