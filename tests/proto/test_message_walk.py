"""The one Annex-B-driven walk over nested messages (proto/message_walk.py), as the validator and external data
use it."""

from __future__ import annotations

import pytest

from onnxcore.proto.message_walk import MESSAGE_FIELDS, message_fields, walk_messages
from onnxcore.proto.messages import (
    AttributeProto,
    FunctionProto,
    GraphProto,
    ModelProto,
    NodeProto,
    StringStringEntryProto,
    TensorProto,
)

A = AttributeProto.AttributeType


def _tensor(name: str) -> TensorProto:
    return TensorProto(name=name, dims=[1], data_type=TensorProto.DataType.FLOAT, float_data=[1.0])


def _if(name: str, then: GraphProto) -> NodeProto:
    return NodeProto(
        op_type="If", input=["c"], output=[name], attribute=[AttributeProto(name="then_branch", type=A.GRAPH, g=then)]
    )


def _nested(depth: int) -> ModelProto:
    g = GraphProto(name="leaf", initializer=[_tensor("deep")])
    for d in range(depth):
        g = GraphProto(name=f"g{d}", node=[_if(f"y{d}", g)])
    return ModelProto(ir_version=10, graph=g)


def _model() -> ModelProto:
    body = GraphProto(name="body", initializer=[_tensor("in_body")])
    nodes = [
        NodeProto(op_type="Relu", input=["x"], output=["a"]),
        NodeProto(
            op_type="Constant", output=["k"], attribute=[AttributeProto(name="value", type=A.TENSOR, t=_tensor("k"))]
        ),
        NodeProto(
            op_type="Flatten", input=["a"], output=["b"], attribute=[AttributeProto(name="axis", type=A.INT, i=1)]
        ),
        _if("c_out", body),
    ]
    graph = GraphProto(name="g", node=nodes, initializer=[_tensor("w")])
    fn = FunctionProto(
        name="f",
        domain="d",
        node=[
            NodeProto(
                op_type="Constant",
                output=["z"],
                attribute=[AttributeProto(name="value", type=A.TENSOR, t=_tensor("fk"))],
            )
        ],
    )
    return ModelProto(
        ir_version=10, graph=graph, functions=[fn], metadata_props=[StringStringEntryProto(key="k", value="v")]
    )


def _path(entries, i: int) -> str:
    parts = []
    while i > 0:
        _msg, parent, name, k = entries[i]
        parts.append(f"{name}[{k}]" if k >= 0 else name)
        i = parent
    return ".".join(reversed(parts))


def test_the_plan_follows_every_message_field_of_annex_b():
    assert MESSAGE_FIELDS[NodeProto] == (("attribute", True), ("metadata_props", True), ("device_configurations", True))
    assert MESSAGE_FIELDS[TensorProto] == (("segment", False), ("external_data", True), ("metadata_props", True))
    towards = message_fields("TensorProto")
    assert towards[NodeProto] == (("attribute", True),)
    assert towards[TensorProto] == ()
    assert towards[StringStringEntryProto] == ()
    assert ("metadata_props", True) not in towards[ModelProto]


def test_every_message_is_met_once_with_its_parent():
    m = _model()
    walk = walk_messages(m, unique=True, visit_order=True)
    entries = walk.entries
    assert entries[0] == (m, -1, "", -1)
    for msg, parent, name, k in entries[1:]:
        holder = getattr(entries[parent][0], name)
        assert (holder[k] if k >= 0 else holder) is msg
    paths = {_path(entries, i) for i in range(len(entries))}
    assert {"graph.node[0]", "graph.node[1].attribute[0].t", "graph.node[3].attribute[0].g.initializer[0]"} <= paths
    assert {"functions[0].node[0].attribute[0].t", "metadata_props[0]"} <= paths
    assert [entries[i][0].name for i in walk.by_class[TensorProto]] == ["w", "k", "in_body", "fk"]
    assert [entries[i][2:] for i in walk.by_class[NodeProto]][:4] == [
        ("node", 0),
        ("node", 1),
        ("node", 2),
        ("node", 3),
    ]
    assert walk.repeated == []
    # A node holding no message is recorded but never visited; the visits run in document order.
    relu = walk.by_class[NodeProto][0]
    assert relu not in walk.order
    visited_tensors = [entries[i][0].name for i in walk.order if type(entries[i][0]) is TensorProto]
    assert visited_tensors == ["k", "in_body", "w", "fk"]


def test_an_object_met_twice_is_recorded_not_entered_again():
    shared = _tensor("shared")
    m = ModelProto(ir_version=10, graph=GraphProto(name="g", initializer=[shared, shared]))
    m.graph.sparse_initializer = []
    walk = walk_messages(m, unique=True)
    assert walk.by_class[TensorProto] == [walk.entries.index((shared, 1, "initializer", 0))]
    assert [walk.entries[i][2:] for i in walk.repeated] == [("initializer", 1)]
    # Without unique, both occurrences are entries of their class.
    assert len(walk_messages(m).by_class[TensorProto]) == 2


def test_a_graph_that_contains_itself_does_not_loop_with_unique():
    g = GraphProto(name="g")
    g.node.append(_if("y", g))
    walk = walk_messages(ModelProto(ir_version=10, graph=g), unique=True)
    assert [walk.entries[i][0] for i in walk.repeated] == [g]


def test_subgraphs_below_the_nesting_limit_are_not_entered():
    m = _nested(5)
    full = walk_messages(m, unique=True)
    assert [full.entries[i][0].name for i in full.by_class[TensorProto]] == ["deep"]
    assert len(full.by_class[GraphProto]) == 6
    cut = walk_messages(m, unique=True, max_nesting=3)
    assert TensorProto not in cut.by_class
    assert len(cut.by_class[GraphProto]) == 4  # the main graph and three levels of subgraphs


def test_pruned_walk_towards_tensors_records_only_their_ancestors():
    m = _model()
    walk = walk_messages(m, message_fields("TensorProto"), prune=True, visit_order=True)
    entries = walk.entries
    found = [(_path(entries, i), entries[i][0].name) for i in walk.order if type(entries[i][0]) is TensorProto]
    assert found == [
        ("graph.node[1].attribute[0].t", "k"),
        ("graph.node[3].attribute[0].g.initializer[0]", "in_body"),
        ("graph.initializer[0]", "w"),
        ("functions[0].node[0].attribute[0].t", "fk"),
    ]
    recorded = {id(e[0]) for e in entries}
    assert id(m.graph.node[0]) not in recorded and id(m.graph.node[2]) not in recorded  # no tensor below them
    assert id(m.metadata_props[0]) not in recorded


def test_prune_refuses_what_it_cannot_honour():
    with pytest.raises(ValueError, match="prune and unique"):
        walk_messages(_model(), message_fields("TensorProto"), prune=True, unique=True)
    with pytest.raises(ValueError, match="only through its attributes"):
        walk_messages(_model(), MESSAGE_FIELDS, prune=True)
