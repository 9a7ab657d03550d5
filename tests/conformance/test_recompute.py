"""The float64 re-computation used to state tolerances for narrow float outputs (Clause 11.5)."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto as TP
from onnx import helper as h

import onnxcore as oc
from onnxcore.conformance.recompute import recompute_float64, widened_model


def _model(nodes: list, elem: int) -> oc.ModelProto:
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", elem, [4])],
        [h.make_tensor_value_info("y", elem, [4])],
        [h.make_tensor("w", elem, [4], [0.1, 0.2, 0.3, 0.4])],
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 21)])
    m.ir_version = 10
    return oc.decode(oc.ModelProto, m.SerializeToString())


def test_widened_model_is_double_and_closer_to_exact() -> None:
    model = _model([h.make_node("Mul", ["x", "w"], ["t"]), h.make_node("Exp", ["t"], ["y"])], TP.FLOAT16)
    wide = widened_model(model)
    assert wide is not None and wide.graph is not None
    assert wide.graph.input[0].type.tensor_type.elem_type == TP.DOUBLE
    assert wide.graph.initializer[0].data_type == TP.DOUBLE
    x = np.array([1.3, -2.1, 0.7, 3.3], np.float16)
    (ref,) = recompute_float64(model, {"x": x}, ["y"])
    assert ref.dtype == np.float64
    exact = np.exp(x.astype(np.float64) * oc.to_array(model.graph.initializer[0]).astype(np.float64))
    np.testing.assert_allclose(ref, exact, rtol=1e-12)
    (ours,) = oc.Session(model).run(None, {"x": x})
    assert ours.dtype == np.float16
    np.testing.assert_allclose(ours.astype(np.float64), ref, rtol=2**-10)


def test_conversions_are_not_recomputed() -> None:
    model = _model(
        [h.make_node("Cast", ["x"], ["t"], to=TP.FLOAT), h.make_node("Cast", ["t"], ["y"], to=TP.FLOAT16)], TP.FLOAT16
    )
    assert widened_model(model) is None
