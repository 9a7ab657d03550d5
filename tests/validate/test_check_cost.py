"""What the faster check of a large graph relies on (issue 42, item 3), held to the findings it must keep.

The speed itself is measured by ``benchmarks/bench_check.py``, never here; these tests hold the shortcuts to their
meaning: ``check`` leaves nothing for the cyclic collector, the walk's per-node records are the ``NodeTypes`` a
caller reads, the operator index keeps model order, and the whole-scope tests of the name rules still find each
offending name where the node-by-node rules found it.
"""

from __future__ import annotations

import gc

import onnxcore
from onnxcore.infer import infer
from onnxcore.proto.messages import (
    AttributeProto,
    GraphProto,
    ModelProto,
    NodeProto,
    OperatorSetIdProto,
    TensorProto,
    TensorShapeProto,
    TypeProto,
    ValueInfoProto,
)
from onnxcore.validate import rules_proto
from onnxcore.validate.context import Context
from onnxcore.validate.sized import nodes_of


def _vi(name: str, dims: list[int]) -> ValueInfoProto:
    shape = TensorShapeProto(dim=[TensorShapeProto.Dimension(dim_value=d) for d in dims])
    return ValueInfoProto(
        name=name, type=TypeProto(tensor_type=TypeProto.Tensor(elem_type=TensorProto.FLOAT, shape=shape))
    )


def _model(nodes: list[NodeProto], out: str, *, initializers: list[TensorProto] | None = None) -> ModelProto:
    g = GraphProto(
        name="g", node=nodes, input=[_vi("x", [1, 4])], output=[_vi(out, [1, 4])], initializer=initializers or []
    )
    return ModelProto(ir_version=10, graph=g, opset_import=[OperatorSetIdProto(domain="", version=21)])


def _chain(n: int) -> ModelProto:
    b = TensorProto(name="b", dims=[4], data_type=TensorProto.FLOAT, float_data=[1.0, 2.0, 3.0, 4.0])
    nodes, prev = [], "x"
    for i in range(n):
        op, ins = ("Relu", [prev]) if i % 2 else ("Add", [prev, "b"])
        nodes.append(NodeProto(op_type=op, input=ins, output=[f"v{i}"], name=f"n{i}"))
        prev = f"v{i}"
    return _model(nodes, prev, initializers=[b])


def _codes(report: onnxcore.Report) -> list[tuple[str, str]]:
    return [(f.code, f.location) for f in report.findings]


def test_check_leaves_nothing_to_the_cyclic_collector() -> None:
    model = _chain(400)
    onnxcore.check(model)  # first use: definitions and rules loaded
    gc.collect()
    was_on = gc.isenabled()
    gc.disable()
    try:
        report = onnxcore.check(model)
        # Every object the check made and dropped was freed by reference counting (the bound model it made is
        # released, the shape step refers back to its walk weakly): a collection finds nothing unreachable.
        assert gc.collect() == 0
    finally:
        if was_on:
            gc.enable()
    assert report.ok, str(report)


def test_a_check_given_a_bound_model_leaves_it_usable() -> None:
    model = _chain(10)
    bound = onnxcore.graph.bind(model)
    assert onnxcore.check(model, bound=bound).ok
    main = bound.main()
    assert main is not None and len(main.nodes) == 10  # not released: the caller goes on with it
    assert onnxcore.check(model, bound=bound).ok


def test_node_records_are_the_node_types() -> None:
    model = _chain(6)
    inf = infer(model)
    assert len(inf.node_records) == len(inf.nodes) == 6
    for record, nt in zip(inf.node_records, inf.nodes, strict=True):
        assert (nt.graph, nt.index, nt.node, nt.schema, nt.function) == record[:5]
        assert (nt.input_types, nt.output_types, nt.bindings, nt.conflicts) == record[5:]
    add = inf.nodes[0]
    assert add.location == 'graph/node[0] "n0"'
    assert add.input_types == ("tensor(float)", "tensor(float)") and add.output_types == ("tensor(float)",)
    assert inf.node('graph/node[3] "n3"') is inf.nodes[3]


def test_a_type_finding_still_names_its_node() -> None:
    # A string input where Relu admits numbers only: E-TYPE-CONSTRAINT at the node's location, from the records.
    model = _model([NodeProto(op_type="Relu", input=["x"], output=["y"], name="r")], "y")
    model.graph.input[0].type.tensor_type.elem_type = TensorProto.STRING  # type: ignore[union-attr]
    model.graph.output[0].type.tensor_type.elem_type = TensorProto.STRING  # type: ignore[union-attr]
    found = [f for f in onnxcore.check(model).findings if f.code == "E-TYPE-CONSTRAINT"]
    assert [f.location for f in found] == ['graph/node[0] "r"/input[0]']
    assert "tensor(string)" in found[0].message


def test_nodes_of_keeps_model_order_across_signature_groups() -> None:
    # Two Constant nodes with different attributes are two signature groups; the operator index gives them in
    # model order all the same.
    def constant(name: str, attr: AttributeProto) -> NodeProto:
        return NodeProto(op_type="Constant", output=[name], name=name, attribute=[attr])

    f = AttributeProto(name="value_float", type=AttributeProto.AttributeType.FLOAT, f=1.0)
    i = AttributeProto(name="value_int", type=AttributeProto.AttributeType.INT, i=1)
    nodes = [
        constant("c0", f),
        constant("c1", i),
        constant("c2", f),
        NodeProto(op_type="Relu", input=["x"], output=["y"]),
        constant("c3", i),
    ]
    ctx = Context(_model(nodes, "y"))
    assert len(ctx.groups()) == 3
    assert [r.node.name for r in nodes_of(ctx, "", "Constant")] == ["c0", "c1", "c2", "c3"]
    assert [r.node.name for r in nodes_of(ctx, "", "Relu")] == [""]
    assert nodes_of(ctx, "", "Gemm") == []


def test_name_syntax_finds_each_bad_name_in_a_scope_of_good_ones() -> None:
    model = _chain(8)
    model.graph.node[3].name = "layer.3"  # not a C identifier
    model.graph.node[5].output[0] = "v5é"  # a Python identifier, not ASCII: not a C identifier either
    model.graph.node[6].input[0] = "v5é"
    found = [(f.code, f.location) for f in onnxcore.check(model).findings if f.code == "W-NAME-SYNTAX"]
    assert found == [("W-NAME-SYNTAX", 'graph/node[3] "layer.3"'), ("W-NAME-SYNTAX", 'graph/node[5] "n5"/output[0]')]
    assert not [f for f in onnxcore.check(_chain(8)).findings if f.code == "W-NAME-SYNTAX"]


def test_empty_names_of_nodes_are_found() -> None:
    model = _chain(4)
    model.graph.node[2].op_type = ""
    report = onnxcore.check(model)
    assert ("E-NAME-EMPTY", 'graph/node[2] "n2"') in _codes(report)
    model = _chain(4)
    model.graph.node[1].attribute.append(AttributeProto(name="", type=AttributeProto.AttributeType.INT, i=1))
    assert ("E-NAME-EMPTY", 'graph/node[1] "n1"/attribute[0]') in _codes(onnxcore.check(model))
    assert not [f for f in onnxcore.check(_chain(4)).findings if f.code == "E-NAME-EMPTY"]


class _CountingEntries(list):  # type: ignore[type-arg]
    """The context's entries, counting the passes made over them."""

    passes = 0

    def __iter__(self):  # type: ignore[no-untyped-def]
        type(self).passes += 1
        return super().__iter__()


def test_unknown_fields_are_found_by_one_pass_for_both_rules() -> None:
    model = _chain(4)
    model.graph.node[1]._unknown = [(99, b"\x98\x06\x01")]  # field 99, a varint: unknown to Annex B
    ctx = Context(model)
    ctx.entries = _CountingEntries(ctx.entries)
    _CountingEntries.passes = 0
    reserved = list(rules_proto.proto_reserved(ctx))
    unknown = list(rules_proto.proto_unknown(ctx))
    assert _CountingEntries.passes == 1  # the second rule reads what the first one's pass found
    assert reserved == []
    assert unknown == [
        ('graph/node[1] "n1"', "NodeProto carries a field of unknown tag 99; it is kept and not interpreted")
    ]


def test_uses_in_order_skip_only_nodes_without_findings() -> None:
    # Omitted, later, undefined and outer uses still resolved one by one, among nodes whose uses are all in order.
    model = _chain(6)
    model.graph.node[2].input.append("")  # omitted: no finding
    model.graph.node[3].input[0] = "v4"  # produced later
    model.graph.node[4].input.append("nothing")  # produced by nothing
    found = [(f.code, f.location) for f in onnxcore.check(model).findings if f.code.startswith(("E-TOPO", "E-VALUE"))]
    assert ("E-VALUE-UNDEFINED", 'graph/node[4] "n4"/input[2]') in found
    assert any(code == "E-TOPO-CYCLE" or loc == 'graph/node[3] "n3"/input[0]' for code, loc in found)
    assert not [f for f in onnxcore.check(_chain(6)).findings if f.code.startswith(("E-TOPO", "E-VALUE"))]
