"""The onnx.helper functions onnxcore lacked, differential against onnx.helper: element-type helpers, value
messages (make_sequence, make_map, make_optional, make_training_info), printable_* text, small helpers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import onnxcore as oc
import onnxcore.onnx as oc_onnx
from onnxcore.build import helper as ours
from onnxcore.types.elements import ElementTypeError

onnx = pytest.importorskip("onnx")
theirs = onnx.helper
pytest.importorskip("onnx.numpy_helper")


def test_dtype_helpers_every_type() -> None:
    """tensor_dtype_to_string/field/storage/np_dtype and get_all_tensor_dtypes agree with onnx on every type."""
    assert list(ours.get_all_tensor_dtypes()) == list(theirs.get_all_tensor_dtypes())  # the same order too
    for dt in theirs.get_all_tensor_dtypes():
        assert ours.tensor_dtype_to_string(dt) == theirs.tensor_dtype_to_string(dt)
        assert ours.tensor_dtype_to_field(dt) == theirs.tensor_dtype_to_field(dt)
        assert ours.tensor_dtype_to_storage_tensor_dtype(dt) == theirs.tensor_dtype_to_storage_tensor_dtype(dt)
        assert ours.tensor_dtype_to_np_dtype(dt) == theirs.tensor_dtype_to_np_dtype(dt)
        if dt not in (onnx.TensorProto.STRING,):
            np_dt = theirs.tensor_dtype_to_np_dtype(dt)
            assert ours.np_dtype_to_tensor_dtype(np_dt) == theirs.np_dtype_to_tensor_dtype(np_dt)
    for bad in (0, 99):
        with pytest.raises(ElementTypeError):
            ours.tensor_dtype_to_field(bad)


def _bytes(msg: Any) -> bytes:
    return bytes(msg.SerializeToString())


def _tensors(m: Any, n: int) -> list[Any]:
    return [m.numpy_helper.from_array(np.arange(k + 1, dtype=np.float32), f"t{k}") for k in range(n)]


def test_make_sequence_map_optional() -> None:
    """The same octets as onnx.helper for sequences of every kind, maps with string and integer keys, optionals."""
    facade = oc_onnx
    for elem, make in (
        (onnx.SequenceProto.TENSOR, lambda m, h: _tensors(m, 3)),
        (onnx.SequenceProto.SEQUENCE, lambda m, h: [h.make_sequence("inner", 1, _tensors(m, 2))]),
        (onnx.SequenceProto.UNDEFINED, lambda m, h: []),
    ):
        a = ours.make_sequence("s", elem, make(facade, ours))
        b = theirs.make_sequence("s", elem, make(onnx, theirs))
        assert _bytes(a) == _bytes(b)
    values_ours = ours.make_sequence("v", oc.SequenceProto.TENSOR, _tensors(facade, 2))
    values_theirs = theirs.make_sequence("v", onnx.SequenceProto.TENSOR, _tensors(onnx, 2))
    for key_type, keys in ((onnx.TensorProto.STRING, [b"a", b"b"]), (onnx.TensorProto.INT64, [1, 2])):
        a = ours.make_map("m", key_type, keys, values_ours)
        b = theirs.make_map("m", key_type, keys, values_theirs)
        assert _bytes(a) == _bytes(b)
    for elem, value in ((onnx.OptionalProto.TENSOR, 0), (onnx.OptionalProto.SEQUENCE, 1)):
        v_ours = _tensors(facade, 1)[0] if value == 0 else values_ours
        v_theirs = _tensors(onnx, 1)[0] if value == 0 else values_theirs
        assert _bytes(ours.make_optional("o", elem, v_ours)) == _bytes(theirs.make_optional("o", elem, v_theirs))
    assert _bytes(ours.make_optional("o", 0, None)) == _bytes(theirs.make_optional("o", 0, None))
    with pytest.raises(TypeError):
        ours.make_sequence("s", 99, [])


def test_make_training_info() -> None:
    """make_training_info gives onnx's octets."""

    def build(h: Any, m: Any) -> Any:
        g = h.make_graph([h.make_node("Identity", ["a"], ["b"])], "alg", [], [])
        init = h.make_graph([], "init", [], [])
        return h.make_training_info(g, [("w", "b")], init, [("w", "c")])

    assert _bytes(build(ours, oc)) == _bytes(build(theirs, onnx))
    assert _bytes(ours.make_training_info(ours.make_graph([], "g", [], []), [], None, None)) == _bytes(
        theirs.make_training_info(theirs.make_graph([], "g", [], []), [], None, None)
    )


def _attributes(h: Any, m: Any) -> list[Any]:
    t_scalar = h.make_tensor("s", m.TensorProto.FLOAT, [], [2.5])
    t_int = h.make_tensor("i", m.TensorProto.INT64, [], [7])
    t = h.make_tensor("t", m.TensorProto.FLOAT, [2], [1.0, 2.0])
    g = h.make_graph([h.make_node("Identity", ["x"], ["y"])], "body", [], [])
    tp = h.make_tensor_type_proto(m.TensorProto.FLOAT, [2, "N"])
    sp = h.make_sparse_tensor(t, h.make_tensor("ix", m.TensorProto.INT64, [1], [0]), [4])
    return [
        h.make_attribute("f", 0.1),
        h.make_attribute("i", -3),
        h.make_attribute("s", "x" * 70),
        h.make_attribute("s2", b"\xff\xfeab"),
        h.make_attribute("t", t),
        h.make_attribute("ts", t_scalar),
        h.make_attribute("ti", t_int),
        h.make_attribute("g", g),
        h.make_attribute("tp", tp),
        h.make_attribute("sp", sp),
        h.make_attribute("fs", [0.5, 1e-8, 3.0]),
        h.make_attribute("is", [1, 2]),
        h.make_attribute("ss", ["a", "b" * 80]),
        h.make_attribute("tss", [t, t]),
        h.make_attribute("gs", [g, g]),
        h.make_attribute("tps", [tp, tp]),
        h.make_attribute("sps", [sp]),
    ]


def test_printable_attribute_every_kind() -> None:
    """printable_attribute: every attribute kind, text equal to onnx's (floats as binary32, long strings cut)."""
    for a, b in zip(_attributes(ours, oc), _attributes(theirs, onnx), strict=True):
        assert ours.printable_attribute(a) == theirs.printable_attribute(b)
        text, graphs = ours.printable_attribute(a, True)
        text_b, graphs_b = theirs.printable_attribute(b, True)
        assert text == text_b and len(graphs) == len(graphs_b)
    assert ours.printable_attribute(oc.AttributeProto(name="e")) == theirs.printable_attribute(
        onnx.AttributeProto(name="e")
    )


def test_printable_type_value_info_tensor() -> None:
    """printable_type, printable_value_info, printable_tensor_proto, printable_dim as onnx prints them."""
    for shape in ([], [1, "N", None], None):
        a = ours.make_tensor_value_info("x", oc.TensorProto.FLOAT16, shape)
        b = theirs.make_tensor_value_info("x", onnx.TensorProto.FLOAT16, shape)
        assert ours.printable_value_info(a) == theirs.printable_value_info(b)
        assert ours.printable_type(a.type) == theirs.printable_type(b.type)
    seq_a = ours.make_tensor_sequence_value_info("s", 1, [2])
    seq_b = theirs.make_tensor_sequence_value_info("s", 1, [2])
    assert ours.printable_value_info(seq_a) == theirs.printable_value_info(seq_b)
    assert ours.printable_value_info(oc.ValueInfoProto(name="u")) == theirs.printable_value_info(
        onnx.ValueInfoProto(name="u")
    )
    for dims in ([], [2, 3]):
        a = ours.make_tensor("w", oc.TensorProto.INT8, dims, np.zeros(dims, dtype=np.int8).ravel().tolist())
        b = theirs.make_tensor("w", onnx.TensorProto.INT8, dims, np.zeros(dims, dtype=np.int8).ravel().tolist())
        assert ours.printable_tensor_proto(a) == theirs.printable_tensor_proto(b)


def test_printable_node_and_graph_on_vectors(node_cases: list[Path]) -> None:
    """printable_graph and printable_node of every ONNX 1-3 vector model (subgraphs included) equal onnx's."""
    import warnings

    count = 0
    for case in node_cases:
        data = (case / "model.onnx").read_bytes()
        m_ours = oc.decode(oc.ModelProto, data)
        m_theirs = onnx.ModelProto.FromString(data)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            expected = theirs.printable_graph(m_theirs.graph, prefix="> ")
        assert m_ours.graph is not None
        assert ours.printable_graph(m_ours.graph, prefix="> ") == expected, case.name
        for a, b in zip(m_ours.graph.node, m_theirs.graph.node, strict=True):
            assert ours.printable_node(a, "  ", True)[0] == theirs.printable_node(b, "  ", True)[0]
            assert ours.printable_node(a) == theirs.printable_node(b)
        count += 1
    assert count > 1000


def test_printable_graph_initializer_sections() -> None:
    """The header's three sections: inputs, inputs with initializers, initializers that are not inputs."""

    def build(h: Any, m: Any) -> Any:
        x = h.make_tensor_value_info("x", m.TensorProto.FLOAT, [2])
        w = h.make_tensor_value_info("w", m.TensorProto.FLOAT, [2])
        inits = [h.make_tensor("w", m.TensorProto.FLOAT, [2], [1, 2]), h.make_tensor("b", m.TensorProto.FLOAT, [], [1])]
        nodes = [h.make_node("Add", ["x", "w"], ["s"]), h.make_node("Add", ["s", "b"], ["y"], alpha=1.0)]
        y = h.make_tensor_value_info("y", m.TensorProto.FLOAT, [2])
        return h.make_graph(nodes, "sections", [x, w], [y], inits)

    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert ours.printable_graph(build(ours, oc)) == theirs.printable_graph(build(theirs, onnx))


def test_get_node_attr_value_and_strip_doc_string() -> None:
    """get_node_attr_value answers as onnx's (ValueError when absent); strip_doc_string empties every doc_string."""
    a = ours.make_node("Conv", ["x"], ["y"], kernel_shape=[3, 3], doc_string="d")
    b = theirs.make_node("Conv", ["x"], ["y"], kernel_shape=[3, 3], doc_string="d")
    assert ours.get_node_attr_value(a, "kernel_shape") == theirs.get_node_attr_value(b, "kernel_shape")
    with pytest.raises(ValueError, match="no attribute"):
        ours.get_node_attr_value(a, "pads")
    g_a = ours.make_graph([a], "g", [], [], doc_string="gd")
    ours.strip_doc_string(g_a)
    # onnx 1.23's own strip_doc_string fails under protobuf 7 (FieldDescriptor.label is gone): compare with the
    # graph onnx makes without doc strings.
    plain = theirs.make_graph([theirs.make_node("Conv", ["x"], ["y"], kernel_shape=[3, 3])], "g", [], [])
    assert _bytes(g_a) == _bytes(plain)
    assert "doc_string" not in str(g_a)
