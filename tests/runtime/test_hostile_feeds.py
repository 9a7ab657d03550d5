"""What the fuzz campaign (tests/fuzz) found in Session and run, each refused with our error now (issue 29)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from onnx import TensorProto, helper

import onnxcore
from onnxcore.runtime import Session


def _model(nodes: list, inputs: list, outputs: list, opset: int = 19) -> bytes:
    g = helper.make_graph(nodes, "g", inputs, outputs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 9
    return m.SerializeToString()


def test_a_flag_attribute_of_another_type_is_refused_by_an_unchecked_session() -> None:
    # Before: numpy's "truth value of an empty array is ambiguous" ValueError escaped binding.
    node = helper.make_node("ReduceSum", ["x"], ["y"])
    node.attribute.append(helper.make_attribute("noop_with_empty_axes", helper.make_tensor("t", 1, [0], [])))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    data = _model([node], [x], [y], opset=18)
    with pytest.raises(
        onnxcore.ValidationError, match=r"noop_with_empty_axes.* is of type TENSOR; ReduceSum-13 defines it as INT"
    ):
        Session(data, check=False)
    with pytest.raises(onnxcore.ValidationError):
        Session(data)


def test_a_broadcast_string_feed_is_refused_before_it_is_copied() -> None:
    # Before: converting the view asked numpy for 16 GiB (a bare MemoryError under a memory limit).
    x = helper.make_tensor_value_info("x", TensorProto.STRING, ["n"])
    y = helper.make_tensor_value_info("y", TensorProto.STRING, ["n"])
    view = np.broadcast_to(np.array(["a"], dtype=object), (2**31,))
    limits = dataclasses.replace(onnxcore.DEFAULT_LIMITS, max_alloc_bytes=1 << 30)
    sess = Session(_model([helper.make_node("Identity", ["x"], ["y"])], [x], [y]), limits=limits)
    with pytest.raises(onnxcore.LimitError, match="max_alloc_bytes"):
        sess.run(None, {"x": view})
    # A small one still runs, as bytes.
    (out,) = sess.run(None, {"x": np.array(["a", "b"], dtype=object)})
    assert out.tolist() == [b"a", b"b"]


def test_resize_counts_octets_of_what_it_allocates() -> None:
    # Before: sizes (294,)*4 passed the element limit and 28 GiB reached numpy.
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])
    s = helper.make_tensor_value_info("s", TensorProto.INT64, [4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["a", "b", "c", "d"])
    node = helper.make_node("Resize", ["x", "", "", "s"], ["y"])
    limits = dataclasses.replace(onnxcore.DEFAULT_LIMITS, max_alloc_bytes=1 << 30)
    sess = Session(_model([node], [x, s], [y]), limits=limits)
    feeds = {"x": np.ones((1, 1, 4, 4), np.float32)}
    with pytest.raises(onnxcore.LimitError, match="max_alloc_bytes"):
        sess.run(None, feeds | {"s": np.full(4, 294, np.int64)})
    (out,) = sess.run(None, feeds | {"s": np.array([1, 1, 8, 8], np.int64)})
    assert out.shape == (1, 1, 8, 8)
