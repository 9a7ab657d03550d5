"""A single-file model larger than 2 GiB loads and saves (protobuf refuses messages over 2 GiB).

The model file is written sparse (its 2.1 GiB tensor is a hole in the file), so the test costs little
disk and memory; loading memory-maps it and saving streams the view back out.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import onnxcore as oc
from onnxcore.wire import encode_varint

SIZE = (1 << 31) + (1 << 26)  # 2 GiB + 64 MiB


def _sparse_model(path: Path) -> None:
    head = oc.encode(oc.TensorProto(name="big", dims=[SIZE], data_type=oc.TensorProto.DataType.UINT8))
    tensor_len = len(head) + 1 + len(encode_varint(SIZE)) + SIZE
    graph_tail = oc.encode(oc.GraphProto(name="g"))
    graph_len = 1 + len(encode_varint(tensor_len)) + tensor_len + len(graph_tail)
    # Written in increasing tag order, as our writer (and protobuf) write it.
    ir_version = oc.encode(oc.ModelProto(ir_version=8))
    opset = oc.encode(oc.ModelProto(opset_import=[oc.OperatorSetIdProto(domain="", version=17)]))
    with open(path, "wb") as fh:
        fh.write(ir_version)
        fh.write(bytes([0x3A]) + encode_varint(graph_len))  # ModelProto.graph (7, LEN)
        fh.write(graph_tail)  # GraphProto.name (tag 2) before the initializer (tag 5)
        fh.write(bytes([0x2A]) + encode_varint(tensor_len))  # GraphProto.initializer (5, LEN)
        fh.write(head + bytes([0x4A]) + encode_varint(SIZE))  # TensorProto.raw_data (9, LEN)
        fh.seek(SIZE, os.SEEK_CUR)
        fh.write(opset)


def test_model_over_2gib_loads_and_saves(tmp_path: Path) -> None:
    if shutil.disk_usage(tmp_path).free < SIZE + (1 << 30):
        pytest.skip("needs about 3 GiB of free disk for the re-saved copy")
    src = tmp_path / "big.onnx"
    _sparse_model(src)
    assert src.stat().st_size > 2**31
    model = oc.load(src)
    t = model.graph.initializer[0]
    assert isinstance(t.raw_data, memoryview) and len(t.raw_data) == SIZE
    assert model.ir_version == 8 and model.graph.name == "g"
    out = tmp_path / "copy.onnx"
    oc.save(model, out)
    assert out.stat().st_size == src.stat().st_size
    with open(src, "rb") as a, open(out, "rb") as b:
        assert a.read(64) == b.read(64)
        a.seek(-256, os.SEEK_END)
        b.seek(-256, os.SEEK_END)
        assert a.read() == b.read()
    again = oc.load(out)
    assert again.graph.initializer[0].dims == [SIZE]
