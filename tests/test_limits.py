"""Resource limits (Clause 15.4): refusals as LimitError, never MemoryError, RecursionError or a crash."""

from __future__ import annotations

import dataclasses
import functools
import gc
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

import onnxcore
from onnxcore import DEFAULT_LIMITS, DecodeLimitError, LimitError, Limits, TensorError, TensorProto
from onnxcore.limits import UNLIMITED_DEPTH
from onnxcore.wire.varint import encode_varint


def _field(tag: int, payload: bytes) -> bytes:
    return encode_varint(tag << 3 | 2) + encode_varint(len(payload)) + payload


def _varint_field(tag: int, value: int) -> bytes:
    return encode_varint(tag << 3) + encode_varint(value)


@functools.cache
def _nested_model(levels: int) -> bytes:
    """ModelProto bytes whose graph nests ``levels`` If-like subgraphs, built without recursion.

    Each level is GraphProto.node(1) -> NodeProto.attribute(5) -> AttributeProto.g(6) -> GraphProto.
    The nested field is the last of each message, so the octets are the heads of every level,
    outermost first, followed by the leaf: built inside out in linear time.
    """
    inner = _field(2, b"leaf")  # GraphProto.name
    size = len(inner)
    heads: list[bytes] = []
    for _ in range(levels):
        attr_head = _field(1, b"body") + _varint_field(20, 5) + encode_varint(6 << 3 | 2) + encode_varint(size)
        size += len(attr_head)  # AttributeProto: name, type=GRAPH, g
        node_head = _field(4, b"If") + encode_varint(5 << 3 | 2) + encode_varint(size)
        size += len(node_head)  # NodeProto: op_type, attribute
        graph_head = encode_varint(1 << 3 | 2) + encode_varint(size)
        size += len(graph_head)  # GraphProto: node
        heads += [attr_head, node_head, graph_head]
    opset = _field(8, _varint_field(2, 17))  # opset_import { version: 17 }
    top = _varint_field(1, 10) + opset + encode_varint(7 << 3 | 2) + encode_varint(size)  # ir_version, graph
    return top + b"".join(reversed(heads)) + inner


def test_nested_model_builder_is_what_it_says() -> None:
    model = onnxcore.load(_nested_model(3))
    depth, g = 0, model.graph
    while g.node:
        g = g.node[0].attribute[0].g
        depth += 1
    assert depth == 3 and g.name == "leaf"


@pytest.mark.parametrize("limits", [None, Limits(max_nesting_depth=10), Limits.unlimited()])
def test_ten_thousand_nested_subgraphs_are_refused(limits: Limits | None) -> None:
    blob = _nested_model(10_000)
    with pytest.raises(LimitError) as info:
        onnxcore.load(blob, limits=limits)
    assert isinstance(info.value, DecodeLimitError)
    assert "Clause 15.4" in str(info.value)


def test_nesting_within_the_limit_loads(tmp_path: Path) -> None:
    assert DEFAULT_LIMITS.max_nesting_depth is not None
    model = onnxcore.load(_nested_model(DEFAULT_LIMITS.max_nesting_depth))
    # The external data walk is iterative: it copes with any depth the decoder accepted.
    from onnxcore.external.tensor_walk import iter_tensors

    assert list(iter_tensors(model)) == []
    with pytest.raises(LimitError):
        onnxcore.load(_nested_model(20), limits=Limits(max_nesting_depth=4))


def test_message_size_limit(tmp_path: Path) -> None:
    blob = _nested_model(2)
    with pytest.raises(LimitError):
        onnxcore.load(blob, limits=Limits(max_message_bytes=len(blob) - 1))
    assert onnxcore.load(blob, limits=Limits(max_message_bytes=len(blob))).graph is not None


def _huge_tensor() -> TensorProto:
    return TensorProto(name="huge", data_type=TensorProto.DataType.FLOAT, dims=[1 << 40], raw_data=b"\0\0\0\0")


def test_tensor_declaring_2_to_the_40_elements_loads_and_is_refused_on_use(tmp_path: Path) -> None:
    to_array = pytest.importorskip("onnxcore.types").to_array
    model = onnxcore.ModelProto(ir_version=10, graph=onnxcore.GraphProto(name="g", initializer=[_huge_tensor()]))
    path = tmp_path / "huge.onnx"
    onnxcore.save(model, path)
    loaded = onnxcore.load(path)  # loading is fine: nothing is allocated for the declaration
    t = loaded.graph.initializer[0]
    assert t.dims == [1 << 40] and len(t.raw_data) == 4
    tracemalloc.start()
    try:
        with pytest.raises((TensorError, LimitError)):
            to_array(t)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20  # refused before allocating


def test_external_tensor_declaring_2_to_the_40_elements(tmp_path: Path) -> None:
    to_array = pytest.importorskip("onnxcore.types").to_array
    (tmp_path / "w.bin").write_bytes(b"\0" * 4)
    t = TensorProto(
        name="huge",
        data_type=TensorProto.DataType.FLOAT,
        dims=[1 << 40],
        data_location=TensorProto.DataLocation.EXTERNAL,
        external_data=[onnxcore.StringStringEntryProto(key="location", value="w.bin")],
    )
    path = tmp_path / "huge.onnx"
    onnxcore.save(onnxcore.ModelProto(ir_version=10, graph=onnxcore.GraphProto(name="g", initializer=[t])), path)
    loaded = onnxcore.load(path)
    with pytest.raises((TensorError, LimitError)):
        to_array(loaded.graph.initializer[0])


def test_limits_defaults_and_checks() -> None:
    lim = Limits()
    assert lim == DEFAULT_LIMITS
    assert (lim.max_tensor_elements, lim.max_tensor_bytes, lim.max_rank, lim.max_nesting_depth) == (
        1 << 34,
        1 << 36,
        64,
        64,
    )
    assert (lim.max_loop_iterations, lim.max_external_file_bytes, lim.max_message_bytes) == (1 << 31, 1 << 40, 1 << 40)
    assert lim.max_image_pixels == 1 << 27
    lim.check_pixels(1 << 13, 1 << 14)
    with pytest.raises(LimitError, match="max_image_pixels"):
        lim.check_pixels(1 << 14, (1 << 13) + 1)
    assert lim.message_depth() == 4 * 64 + 16
    assert Limits.unlimited().message_depth() == UNLIMITED_DEPTH
    lim.check_tensor([1 << 10, 1 << 10], 32)
    with pytest.raises(LimitError, match="max_tensor_elements"):
        lim.check_tensor([1 << 40], 32)
    with pytest.raises(LimitError, match="max_tensor_bytes"):
        Limits(max_tensor_bytes=100).check_tensor([26], 32)
    with pytest.raises(LimitError, match="max_rank"):
        lim.check_tensor([1] * 65, 8)
    with pytest.raises(LimitError, match="max_loop_iterations"):
        Limits(max_loop_iterations=3).check_iterations(4)
    with pytest.raises(LimitError, match="max_nesting_depth"):
        lim.check_depth(65)
    Limits.unlimited().check_tensor([1 << 60], 64)
    smaller = dataclasses.replace(lim, max_rank=8)
    assert smaller.max_rank == 8 and lim.max_rank == 64
    with pytest.raises(ValueError):
        Limits(max_rank=-1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        lim.max_rank = 3  # type: ignore[misc]


def test_deep_nesting_leaves_the_interpreter_usable() -> None:
    # After the refusal the stack is unwound: ordinary deep-ish work still succeeds.
    with pytest.raises(LimitError):
        onnxcore.load(_nested_model(10_000), limits=Limits.unlimited())
    assert sys.getrecursionlimit() >= 1000
    assert np.array_equal(np.frombuffer(b"\0" * 8, "<f4"), np.zeros(2, np.float32))


# --- Embedded messages per repeated field and in all (issue 29: two-octet empty entries decoded to gigabytes) ---


def _graph_of_empty_entries(**fields: int) -> bytes:
    """A ModelProto whose graph holds ``count`` empty entries of each named repeated field (two octets each)."""
    tags = {"node": 1, "initializer": 5, "value_info": 13}
    graph = b"".join(bytes([tags[name] << 3 | 2, 0]) * count for name, count in fields.items())
    return b"\x08\x07" + b"\x3a" + encode_varint(len(graph)) + graph


def test_repeated_field_count_is_bounded() -> None:
    data = _graph_of_empty_entries(node=1001)
    with pytest.raises(onnxcore.DecodeLimitError, match=r"max_repeated_messages") as info:
        onnxcore.load(data, limits=onnxcore.Limits(max_repeated_messages=1000))
    assert "graph.node" in str(info.value)
    assert (
        len(
            onnxcore.load(
                _graph_of_empty_entries(node=1000), limits=onnxcore.Limits(max_repeated_messages=1000)
            ).graph.node
        )
        == 1000
    )


def test_total_message_count_is_bounded() -> None:
    data = _graph_of_empty_entries(node=600, initializer=600)
    with pytest.raises(onnxcore.DecodeLimitError, match=r"max_messages") as info:
        onnxcore.load(data, limits=onnxcore.Limits(max_messages=1000))
    assert "graph.initializer" in str(info.value)
    model = onnxcore.load(data, limits=onnxcore.Limits(max_messages=1200))
    assert (len(model.graph.node), len(model.graph.initializer)) == (600, 600)


def test_defaults_refuse_a_field_of_millions_of_empty_entries() -> None:
    assert onnxcore.DEFAULT_LIMITS.max_repeated_messages == 1 << 19
    assert onnxcore.DEFAULT_LIMITS.max_messages == 1 << 21
    # Under the default bound: decoded. Over a lowered bound the refusal comes before the whole field is built.
    assert len(onnxcore.load(_graph_of_empty_entries(value_info=50_000)).graph.value_info) == 50_000


@pytest.mark.parametrize("enabled", [True, False])
def test_decoding_leaves_the_garbage_collector_as_it_found_it(enabled: bool) -> None:
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        onnxcore.load(_graph_of_empty_entries(node=10))
        with pytest.raises(onnxcore.DecodeLimitError):
            onnxcore.load(_graph_of_empty_entries(node=11), limits=onnxcore.Limits(max_repeated_messages=10))
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()
