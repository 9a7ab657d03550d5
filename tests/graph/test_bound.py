"""The bound model (graph/): scopes, the one binding rule (Clauses 14.3, 8.4), the walker, the nesting limit."""

from __future__ import annotations

import dataclasses

from onnxcore import DEFAULT_LIMITS
from onnxcore.graph import bind, walk_scopes
from onnxcore.proto import (
    AttributeProto,
    FunctionProto,
    GraphProto,
    ModelProto,
    NodeProto,
    OperatorSetIdProto,
)


def _node(op: str, ins: list[str], outs: list[str], domain: str = "", **graphs: GraphProto) -> NodeProto:
    n = NodeProto(op_type=op, domain=domain, input=ins, output=outs)
    for name, g in graphs.items():
        n.attribute.append(AttributeProto(name=name, type=AttributeProto.AttributeType.GRAPH, g=g))
    return n


def _model(nodes: list[NodeProto], opsets: dict[str, int], functions: list[FunctionProto] = ()) -> ModelProto:  # type: ignore[assignment]
    g = GraphProto(name="g", node=nodes)
    return ModelProto(
        ir_version=10,
        graph=g,
        opset_import=[OperatorSetIdProto(domain=d, version=v) for d, v in opsets.items()],
        functions=list(functions),
    )


def _scaler_function() -> FunctionProto:
    return FunctionProto(
        domain="ai.onnx.ml",
        name="Scaler",
        input=["X"],
        output=["Y"],
        node=[_node("Neg", ["X"], ["Y"])],
        opset_import=[OperatorSetIdProto(domain="", version=18)],
    )


def test_binding_statuses_in_precedence_order() -> None:
    nodes = [
        _node("Scaler", ["x"], ["a"], domain="ai.onnx.ml"),  # a model-local function shadows the definition
        _node("Relu", ["x"], ["b"]),  # an operator definition
        _node("Gelu", ["x"], ["c"]),  # defined from ai.onnx 20 only
        _node("NoSuchOp", ["x"], ["d"]),
        _node("Thing", ["x"], ["e"], domain="com.example"),  # a domain onnxcore has no definitions for
        _node("Other", ["x"], ["f"], domain="org.not.imported"),
    ]
    m = _model(nodes, {"": 18, "ai.onnx.ml": 3, "com.example": 1}, [_scaler_function()])
    bound = bind(m)
    main = bound.main()
    assert main is not None
    got = [(r.status, r.version) for r in main.nodes]
    assert got == [
        ("function", 0),
        ("schema", 18),
        ("not_in_version", 18),
        ("undefined", 18),
        ("custom", 1),
        ("undeclared", 0),
    ]
    assert main.nodes[0].function is m.functions[0]
    relu = main.nodes[1].schema
    assert relu is not None and relu.name == "Relu" and relu.since_version == 14
    assert [r.node.op_type for r in bound.unusual] == ["Scaler", "Gelu", "NoSuchOp", "Thing", "Other"]
    # The function body is a scope of its own, found from the function; its imports fill the model's gaps.
    fscope = bound.function_scope(m.functions[0])
    assert fscope is not None and fscope.kind == "function" and fscope.loc == 'functions[0] "ai.onnx.ml:Scaler"'
    assert [(r.node.op_type, r.status) for r in fscope.nodes] == [("Neg", "schema")]


def _nested_ifs(depth: int) -> ModelProto:
    """``depth`` If nodes, each in the then-branch of the one above (built iteratively)."""
    inner = GraphProto(name=f"g{depth}", node=[_node("Identity", ["x"], [f"y{depth}"])], output=[])
    for level in range(depth - 1, -1, -1):
        els = GraphProto(name=f"e{level}", node=[_node("Identity", ["x"], [f"z{level}"])])
        node = _node("If", ["c"], [f"y{level}"], then_branch=inner, else_branch=els)
        inner = GraphProto(name=f"g{level}", node=[node])
    return ModelProto(ir_version=10, graph=inner, opset_import=[OperatorSetIdProto(domain="", version=18)])


def test_nesting_limit_from_limits_only() -> None:
    m = _nested_ifs(100)
    b = bind(m)
    assert b.too_deep and b.too_deep[0][1] == 65
    assert max(s.depth for s in b.scopes) == 64
    deep = bind(m, limits=dataclasses.replace(DEFAULT_LIMITS, max_nesting_depth=200))
    assert not deep.too_deep and max(s.depth for s in deep.scopes) == 100


def test_walk_scopes_enter_and_exit_in_depth_first_order() -> None:
    m = _nested_ifs(2)
    b = bind(m)
    events: list[str] = []
    walk_scopes(
        [s for s in b.scopes if s.parent is None],
        enter=lambda s: events.append(f"enter {s.loc}"),
        exit=lambda s: events.append(f"exit {s.loc}"),
    )
    assert events == [
        "enter graph",
        "enter graph/node[0]/then_branch",
        "enter graph/node[0]/then_branch/node[0]/then_branch",
        "exit graph/node[0]/then_branch/node[0]/then_branch",
        "enter graph/node[0]/then_branch/node[0]/else_branch",
        "exit graph/node[0]/then_branch/node[0]/else_branch",
        "exit graph/node[0]/then_branch",
        "enter graph/node[0]/else_branch",
        "exit graph/node[0]/else_branch",
        "exit graph",
    ]
    # enter returning False skips the subgraphs below, and that scope's exit.
    seen: list[str] = []
    walk_scopes([b.scopes[0]], enter=lambda s: seen.append(s.loc) or s.depth < 1)
    assert seen == ["graph", "graph/node[0]/then_branch", "graph/node[0]/else_branch"]


def test_outer_names_resolve_to_the_innermost_enclosing_definition() -> None:
    m = _nested_ifs(2)
    b = bind(m)
    innermost = next(s for s in b.scopes if s.depth == 2)
    found = b.lookup_outer(innermost, "y1")  # defined by the If node at depth 1
    assert found is not None
    scope, definition, holder = found
    assert scope.depth == 1 and definition == ("node", 0) and holder == 0
    assert b.lookup_outer(innermost, "nowhere") is None


def test_definition_bodies_are_bound_once_and_cached() -> None:
    m = _model([_node("Relu", ["x"], ["y"])], {"": 18})
    b = bind(m)
    schema = b.definitions.schema("MeanVarianceNormalization", 18, "")
    assert schema is not None
    opsets = b.opsets
    body = b.body_scope(schema, 18, opsets)
    assert body is not None and body.kind == "body" and body.nodes
    assert all(r.status == "schema" for r in body.nodes)
    assert b.body_scope(schema, 18, opsets) is body
    assert body not in b.scopes  # the model's own scopes only
    conv = b.definitions.schema("Conv", 18, "")  # a definition without a function body
    assert conv is not None and b.body_scope(conv, 18, opsets) is None


def test_ir_versions_before_opset_import_bind_to_ai_onnx_1() -> None:
    m = ModelProto(ir_version=2, graph=GraphProto(name="g", node=[_node("Relu", ["x"], ["y"])]))
    ref = bind(m).scopes[0].nodes[0]
    assert (ref.status, ref.version) == ("schema", 1)
    assert ref.schema is not None and ref.schema.since_version == 1
    m.ir_version = 3  # from IR version 3 on, imports are mandatory: nothing is assumed
    assert bind(m).scopes[0].nodes[0].status == "undeclared"
