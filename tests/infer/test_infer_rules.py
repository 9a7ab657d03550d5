"""Coverage of the explicit rules, and the type-string reading shared with onnxcore.types."""

from __future__ import annotations

import pytest

import onnxcore
from onnxcore import defs
from onnxcore.infer.rules import TYPE_RULES
from onnxcore.types.typestr import parse_type_string, type_string


def _unbound_outputs(schema):
    """Output type variables admitting several types that no required input binds."""
    tc = schema.type_constraints
    bound = {
        p.type_str
        for p in schema.inputs
        if (p.option == "single" or (p.option == "variadic" and p.min_arity > 0)) and p.is_homogeneous
    }
    return [
        p.name
        for p in schema.outputs
        if p.type_str in tc and len(tc[p.type_str]) > 1 and (p.type_str not in bound or not p.is_homogeneous)
    ]


# Outputs left unknown on purpose: the definition gives no way to tell the type from the node.
NO_RULE = {("ai.onnx.preview.training", "Gradient")}


def test_every_output_not_bound_by_an_input_has_an_explicit_rule():
    # Scans every definition: a new operator of this kind makes this test fail until it has a rule.
    missing = set()
    for s in defs.all_schemas():
        if _unbound_outputs(s) and (s.domain, s.name) not in TYPE_RULES and (s.domain, s.name) not in NO_RULE:
            missing.add((s.domain, s.name, s.since_version, tuple(_unbound_outputs(s))))
    assert not missing, sorted(missing)


def test_every_constraint_type_string_parses_back():
    seen = set()
    for s in defs.all_schemas():
        for types in s.type_constraints.values():
            seen.update(types)
        for p in s.inputs + s.outputs:
            if p.type_str not in s.type_constraints:
                seen.add(p.type_str)
    assert len(seen) > 50
    for t in seen:
        assert type_string(parse_type_string(t)) == t, t


@pytest.mark.parametrize(
    "text",
    [
        "tensor(float)",
        "tensor(float8e4m3fn)",
        "sparse_tensor(int64)",
        "seq(tensor(uint4))",
        "map(int64,tensor(float))",
        "map(string,seq(tensor(double)))",
        "optional(seq(tensor(float)))",
        "optional(map(string,tensor(int64)))",
    ],
)
def test_agrees_with_the_shared_type_string(text):
    types = pytest.importorskip("onnxcore.types")
    shared = getattr(types, "type_string", None)
    if shared is None:
        pytest.skip("onnxcore.types.type_string not built yet")
    tp = parse_type_string(text)
    assert shared(tp) == type_string(tp) == text
    # and through the octets
    again = onnxcore.decode(onnxcore.TypeProto, onnxcore.encode(tp))
    assert shared(again) == type_string(again) == text


def test_unknown_types_read_as_none():
    TP = onnxcore.TypeProto
    assert type_string(None) is None
    assert type_string(TP()) is None
    assert type_string(TP(tensor_type=TP.Tensor())) is None  # elem_type 0 (Table 5: undefined)
    assert type_string(TP(tensor_type=TP.Tensor(elem_type=99))) is None
    assert type_string(TP(sequence_type=TP.Sequence())) is None
    assert type_string(TP(map_type=TP.Map(key_type=7))) is None
    with pytest.raises(ValueError):
        parse_type_string("tensor(nonsense)")
    with pytest.raises(ValueError):
        parse_type_string("T")


def test_agrees_with_shared_type_string_on_the_corpus(node_cases):
    types = pytest.importorskip("onnxcore.types")
    shared = getattr(types, "type_string", None)
    if shared is None:
        pytest.skip("onnxcore.types.type_string not built yet")
    n = 0
    for d in node_cases[::7]:
        m = onnxcore.load(d / "model.onnx")
        for vi in list(m.graph.input) + list(m.graph.output):
            assert type_string(vi.type) == shared(vi.type), (d.name, vi.name)
            n += 1
    assert n > 500
