"""graph.functions.resolve_attribute: the one place an attribute reference of a body is resolved (Clause 8.4)."""

from __future__ import annotations

from onnxcore import AttributeProto
from onnxcore.graph.functions import UNRESOLVED, resolve_attribute

_INT = AttributeProto.AttributeType.INT


def test_an_attribute_without_reference_is_itself() -> None:
    a = AttributeProto(name="axis", type=_INT, i=1)
    assert resolve_attribute(a, None, {}) is a
    assert resolve_attribute(a, {"axis": AttributeProto(name="axis", type=_INT, i=5)}, {}) is a


def test_a_reference_takes_the_call_site_value_then_the_default_renamed() -> None:
    ref = AttributeProto(name="axis", type=_INT, ref_attr_name="ax")
    given = AttributeProto(name="ax", type=_INT, i=3)
    default = AttributeProto(name="ax", type=_INT, i=7)
    r = resolve_attribute(ref, {"ax": given}, {"ax": default})
    assert isinstance(r, AttributeProto) and (r.name, r.i, r.ref_attr_name) == ("axis", 3, "")
    assert given.name == "ax"  # the call site's attribute is not changed
    r = resolve_attribute(ref, {}, {"ax": default})
    assert isinstance(r, AttributeProto) and (r.name, r.i) == ("axis", 7)
    assert resolve_attribute(ref, {}, {}) is None  # omitted: the node's own default applies


def test_a_reference_without_call_site_is_unresolved() -> None:
    ref = AttributeProto(name="axis", type=_INT, ref_attr_name="ax")
    assert resolve_attribute(ref, None, {"ax": AttributeProto(name="ax", type=_INT, i=7)}) is UNRESOLVED
