"""Positions revisited in issue 41 item 5: an empty TypeProto in value_info is accepted as an unknown type but
reported (Annex B B.2.21 says SHALL); W-NAME-SYNTAX and W-DIM-SYNTAX give one finding per offending name, located."""

from __future__ import annotations

import numpy as np
import pytest

import onnxcore
from onnxcore.proto.messages import ModelProto, TensorShapeProto, TypeProto, ValueInfoProto

pytest.importorskip("onnx", reason="onnx.helper builds the models")
from onnx import TensorProto as T
from onnx import helper


def _model(names: tuple[str, str, str] = ("x", "s", "y"), dim: str = "N", graph: str = "g") -> ModelProto:
    x, s, y = names
    g = helper.make_graph(
        [helper.make_node("Relu", [x], [s], name="relu"), helper.make_node("Neg", [s], [y], name="neg")],
        graph,
        [helper.make_tensor_value_info(x, T.FLOAT, [dim, 3])],
        [helper.make_tensor_value_info(y, T.FLOAT, [dim, 3])],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    return onnxcore.decode(ModelProto, m.SerializeToString())


def test_empty_type_in_value_info_is_a_warning_and_runs() -> None:
    m = _model()
    assert m.graph is not None
    m.graph.value_info.append(ValueInfoProto(name="s", type=TypeProto()))
    report = onnxcore.check(m)
    assert report.ok, str(report)
    (w,) = report.warnings
    assert (w.code, w.clause, w.location) == ("W-TYPE-EMPTY", "B.2.21", 'graph/value_info[0] "s"/type')
    assert "SHALL" in w.message
    x = np.array([[-1.0, 2.0, -3.0]], np.float32)
    (y,) = onnxcore.Session(m).run(None, {"x": x})  # still read as an unknown type
    np.testing.assert_array_equal(y, -np.maximum(x, 0))
    # A value_info with a type stated is not reported.
    m2 = _model()
    assert m2.graph is not None
    m2.graph.value_info.append(
        ValueInfoProto(name="s", type=TypeProto(tensor_type=TypeProto.Tensor(elem_type=int(T.FLOAT))))
    )
    assert onnxcore.check(m2).findings == []


def test_name_syntax_gives_one_located_finding_per_name() -> None:
    m = _model(("in-put", "mid/0", "out put"), graph="my graph")
    found = [(f.location, f.message) for f in onnxcore.check(m).findings if f.code == "W-NAME-SYNTAX"]
    assert [loc for loc, _ in found] == [
        "graph",
        'graph/input[0] "in-put"',
        'graph/output[0] "out put"',
        'graph/node[0] "relu"/output[0]',
    ], found
    # 'mid/0' is produced by relu and consumed by neg: one finding, where it is first given.
    assert ["'my graph'" in found[0][1], "'mid/0'" in found[3][1]] == [True, True]


def test_dim_syntax_gives_one_located_finding_per_variable() -> None:
    m = _model(dim="batch size")
    assert m.graph is not None
    m.graph.output[0].type.tensor_type.shape.dim[1] = TensorShapeProto.Dimension(dim_param="3 wide")
    found = [(f.location, f.message) for f in onnxcore.check(m).findings if f.code == "W-DIM-SYNTAX"]
    assert [loc for loc, _ in found] == [
        'graph/input[0] "x"/type/tensor_type/shape/dim[0]',
        'graph/output[0] "y"/type/tensor_type/shape/dim[1]',
    ], found
    assert "'batch size'" in found[0][1] and "'3 wide'" in found[1][1]
