"""A node like one the walk has seen (same definition, imports, input types, shapes and known values) takes that
node's outcome in one lookup (InferenceWalk.repeats): what is reported per node must still be reported at each of
them, and a known input value that differs must give a different outcome (Clauses 9.4, 10.3)."""

from __future__ import annotations

import numpy as np
import pytest

import onnxcore
from onnxcore.infer import infer_both

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as T  # noqa: E402
from onnx import helper as h  # noqa: E402
from onnx import numpy_helper, shape_inference  # noqa: E402


def _ours(model) -> onnxcore.ModelProto:
    return onnxcore.decode(onnxcore.ModelProto, model.SerializeToString())


def _model(nodes, inputs, outputs, initializers=(), value_info=()):
    g = h.make_graph(nodes, "g", inputs, outputs, list(initializers), value_info=list(value_info))
    return h.make_model(g, opset_imports=[h.make_opsetid("", 21)], ir_version=10)


def test_repeated_nodes_with_different_known_values_get_their_own_shapes():
    # Six Reshapes of one input alike in everything but the target shape they read from an initializer, each
    # twice: onnx's inference gives every output's shape, and ours must agree node by node.
    targets = [[2, 6], [3, 4], [12], [4, 3], [1, 12], [6, 2]]
    nodes, inits, outs = [], [], []
    for k, t in enumerate(targets):
        inits.append(numpy_helper.from_array(np.array(t, dtype=np.int64), f"s{k}"))
        for rep in range(2):
            nodes.append(h.make_node("Reshape", ["x", f"s{k}"], [f"y{k}_{rep}"]))
            outs.append(h.make_tensor_value_info(f"y{k}_{rep}", T.FLOAT, None))
    model = _model(nodes, [h.make_tensor_value_info("x", T.FLOAT, [3, 4])], outs, inits)
    expected = {
        vi.name: [d.dim_value for d in vi.type.tensor_type.shape.dim]
        for vi in shape_inference.infer_shapes(model, strict_mode=True).graph.output
    }
    _, shapes = infer_both(_ours(model))
    got = {name: list(shapes.shape(name)) for name in expected}
    assert got == expected
    assert got["y1_1"] == [3, 4] and got["y2_0"] == [12]


def test_a_declared_type_contradicted_at_a_repeated_node_is_reported_there():
    # Five identical Relus in a chain; the fourth one's output is declared int64. The mismatch is found at that
    # node, which is a repeat of the ones before it (and the fifth, reading int64, contradicts v5's float).
    nodes = [h.make_node("Relu", [f"v{k}"], [f"v{k + 1}"]) for k in range(5)]
    vi = [h.make_tensor_value_info("v4", T.INT64, [2])]
    model = _model(
        nodes,
        [h.make_tensor_value_info("v0", T.FLOAT, [2])],
        [h.make_tensor_value_info("v5", T.FLOAT, [2])],
        value_info=vi,
    )
    types, _ = infer_both(_ours(model))
    assert [(m.name, m.location) for m in types.mismatches] == [
        ("v4", "graph/node[3]/output[0]"),
        ("v5", "graph/node[4]/output[0]"),
    ]
    report = onnxcore.check(_ours(model))
    assert not report.ok
    assert any(f.location.startswith("graph/node[3]") for f in report.findings if f.severity == "error")


def test_incompatible_shapes_are_reported_at_every_repeated_node():
    # [3] + [4] cannot broadcast (Clause 6.4): three nodes alike, three incompatibilities, one per node.
    nodes = [h.make_node("Add", ["a", "b"], [f"y{k}"]) for k in range(3)]
    model = _model(
        nodes,
        [h.make_tensor_value_info("a", T.FLOAT, [3]), h.make_tensor_value_info("b", T.FLOAT, [4])],
        [h.make_tensor_value_info(f"y{k}", T.FLOAT, None) for k in range(3)],
    )
    _, shapes = infer_both(_ours(model))
    assert [i.location for i in shapes.incompatibilities] == [f"graph/node[{k}]" for k in range(3)]


def test_a_type_constraint_broken_at_repeated_nodes_is_reported_at_each():
    # Add's T binds float from its first input and int64 from its second: every one of the four alike nodes breaks
    # it, and the check names each of them.
    nodes = [h.make_node("Add", ["a", "b"], [f"y{k}"]) for k in range(4)]
    model = _model(
        nodes,
        [h.make_tensor_value_info("a", T.FLOAT, [2]), h.make_tensor_value_info("b", T.INT64, [2])],
        [h.make_tensor_value_info(f"y{k}", T.FLOAT, [2]) for k in range(4)],
    )
    report = onnxcore.check(_ours(model))
    paths = sorted(f.location for f in report.findings if f.code == "E-TYPE-BINDING")
    assert paths == [f"graph/node[{k}]" for k in range(4)]
