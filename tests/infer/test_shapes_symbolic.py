"""Data propagation (Clause 9.3): the elements of Shape of a tensor with dimension variables, carried through
Gather, Slice, Concat, Unsqueeze, Squeeze, Cast and Identity into Reshape, Expand and ConstantOfShape."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

import onnxcore
from onnxcore.infer import annotate, infer_shapes
from onnxcore.infer import shapes as shape_engine
from onnxcore.proto.messages import ModelProto


@pytest.fixture(autouse=True)
def _strict(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shape_engine, "STRICT", True)


def _c(name: str, v: object) -> object:
    return numpy_helper.from_array(np.array(v, np.int64), name)


def _model(nodes: list, inputs: list, outputs: list[str], inits: list, opset: int) -> ModelProto:
    outs = [h.make_tensor_value_info(o, T.FLOAT, None) for o in outputs]
    g = h.make_graph(nodes, "g", inputs, outs, inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    return onnxcore.decode(ModelProto, m.SerializeToString())


def _exporter_chain(opset: int) -> ModelProto:
    """What exporters write for ``x.reshape(x.shape[0], x.shape[1], -1)`` and friends."""
    unsq = {"axes": [0]} if opset < 13 else {}
    ax = [] if opset < 13 else ["ax0"]
    nodes = [
        h.make_node("Shape", ["x"], ["s"]),
        h.make_node("Gather", ["s", "i0"], ["d0"], axis=0),
        h.make_node("Gather", ["s", "i1"], ["d1"], axis=0),
        h.make_node("Unsqueeze", ["d0", *ax], ["u0"], **unsq),
        h.make_node("Unsqueeze", ["d1", *ax], ["u1"], **unsq),
        h.make_node("Concat", ["u0", "u1", "m1"], ["t"], axis=0),
        h.make_node("Reshape", ["x", "t"], ["y"]),
        h.make_node("Slice", ["s", "st", "en"], ["s2"]),
        h.make_node("Cast", ["s2"], ["s3"], to=T.INT64),
        h.make_node("ConstantOfShape", ["s3"], ["z"]),
        h.make_node("Expand", ["b", "s"], ["e"]),
        h.make_node("Gather", ["s", "last"], ["dl"], axis=0),  # a negative index
        h.make_node("Unsqueeze", ["dl", *ax], ["ul"], **unsq),
        h.make_node("Concat", ["ul", "m1"], ["t2"], axis=0),
        h.make_node("Reshape", ["x", "t2"], ["w"]),  # the last extent first: could be 0 at run time
    ]
    inputs = [
        h.make_tensor_value_info("x", T.FLOAT, ["N", "S", 4, 5]),
        h.make_tensor_value_info("b", T.FLOAT, [1, 1, 1, 5]),
    ]
    inits = [_c("i0", 0), _c("i1", 1), _c("ax0", [0]), _c("m1", [-1]), _c("st", [1]), _c("en", [3]), _c("last", -1)]
    return _model(nodes, inputs, ["y", "z", "e", "w"], inits, opset)


@pytest.mark.parametrize("opset", [11, 13, 21])
def test_variables_survive_an_exporters_shape_arithmetic(opset: int) -> None:
    m = _exporter_chain(opset)
    r = infer_shapes(m)
    assert not r.incompatibilities
    assert r.shape("y") == ("N", "S", 20)
    assert r.shape("z") == ("S", 4)
    assert r.shape("e") == ("N", "S", 4, 5)
    assert r.shape("w") == (5, None)  # 5 at position 0 is fixed; the -1 needs N*S
    # Substituting the variables gives what a run produces.
    for n, s in ((2, 3), (1, 7)):
        x = np.zeros((n, s, 4, 5), np.float32)
        b = np.ones((1, 1, 1, 5), np.float32)
        got = onnxcore.Session(annotate(m)).run(None, {"x": x, "b": b})  # annotate states the outputs' ranks
        env = {"N": n, "S": s}
        for name, arr in zip(["y", "z", "e", "w"], got):
            shape = r.shape(name)
            assert shape is not None and len(shape) == arr.ndim
            for d, a in zip(shape, arr.shape):
                assert d is None or env.get(d, d) == a  # type: ignore[arg-type]


def test_a_variable_where_the_input_has_another_extent_is_not_concluded() -> None:
    # Reshape(y, [N, -1]) with y of shape (M, 6): N could be 0 at run time, which copies M.
    nodes = [
        h.make_node("Shape", ["x"], ["s"]),
        h.make_node("Slice", ["s", "z0", "o1"], ["n"]),
        h.make_node("Concat", ["n", "m1"], ["t"], axis=0),
        h.make_node("Reshape", ["y", "t"], ["r"]),
    ]
    inputs = [h.make_tensor_value_info("x", T.FLOAT, ["N", 2]), h.make_tensor_value_info("y", T.FLOAT, ["M", 6])]
    m = _model(nodes, inputs, ["r"], [_c("z0", [0]), _c("o1", [1]), _c("m1", [-1])], 17)
    r = infer_shapes(m)
    assert r.shape("n") == (1,) and r.shape("r") == (None, None)
    # allowzero=1: the target's extents are taken as they are.
    nodes[-1] = h.make_node("Reshape", ["y", "t"], ["r"], allowzero=1)
    r = infer_shapes(_model(nodes, inputs, ["r"], [_c("z0", [0]), _c("o1", [1]), _c("m1", [-1])], 17))
    assert r.shape("r") == ("N", None)


def test_squeeze_slice_backwards_and_a_float_cast_stop_nothing_they_should_not() -> None:
    nodes = [
        h.make_node("Shape", ["x"], ["s"]),
        h.make_node("Slice", ["s", "st", "en", "ax", "neg"], ["rev"]),  # reversed: [C, B, A]
        h.make_node("ConstantOfShape", ["rev"], ["z"]),
        h.make_node("Slice", ["s", "z0", "o1"], ["first"]),
        h.make_node("Squeeze", ["first", "ax"], ["sc"]),
        h.make_node("Unsqueeze", ["sc", "ax"], ["back"]),
        h.make_node("ConstantOfShape", ["back"], ["z1"]),
        h.make_node("Cast", ["s"], ["sf"], to=T.FLOAT),
        h.make_node("Cast", ["sf"], ["si"], to=T.INT64),
        h.make_node("ConstantOfShape", ["si"], ["z2"]),
    ]
    inits = [_c("st", [-1]), _c("en", [-(2**63)]), _c("ax", [0]), _c("neg", [-1]), _c("z0", [0]), _c("o1", [1])]
    m = _model(nodes, [h.make_tensor_value_info("x", T.FLOAT, ["A", "B", "C"])], ["z", "z1", "z2"], inits, 21)
    r = infer_shapes(m)
    assert r.shape("z") == ("C", "B", "A")
    assert r.shape("z1") == ("A",)
    assert r.shape("z2") == (None, None, None)  # through float the elements are not followed
