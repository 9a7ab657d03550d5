"""load/save: paths are memory-mapped (weights never copied), saves are atomic (issue 2)."""

from __future__ import annotations

import io
import mmap
from pathlib import Path

import numpy as np
import pytest

import onnxcore as oc


def _model(n: int = 1 << 20) -> oc.ModelProto:
    w = np.arange(n, dtype=np.uint8)
    t = oc.TensorProto(name="w", dims=[n], data_type=oc.TensorProto.DataType.UINT8, raw_data=w.tobytes())
    g = oc.GraphProto(name="g", initializer=[t])
    return oc.ModelProto(ir_version=8, graph=g, opset_import=[oc.OperatorSetIdProto(domain="", version=17)])


def test_path_is_memory_mapped_and_weights_are_views(tmp_path: Path) -> None:
    p = tmp_path / "m.onnx"
    oc.save(_model(), p)
    m = oc.load(p)
    raw = m.graph.initializer[0].raw_data
    assert isinstance(raw, memoryview) and isinstance(raw.obj, mmap.mmap)
    assert raw.readonly
    arr = oc.to_array(m.graph.initializer[0])
    assert not arr.flags.owndata and not arr.flags.writeable  # a view of the map, not a copy
    assert arr[1000] == 1000 % 256


def test_load_from_bytes_file_and_memoryview(tmp_path: Path) -> None:
    data = oc.encode(_model(1000))
    for source in (data, bytearray(data), memoryview(data), io.BytesIO(data)):
        assert oc.load(source).graph.initializer[0].dims == [1000]
    p = tmp_path / "m.onnx"
    p.write_bytes(data)
    with open(p, "rb") as fh:
        assert oc.load(fh) == oc.load(data)


def test_failed_save_leaves_old_file_and_no_temporary(tmp_path: Path) -> None:
    p = tmp_path / "m.onnx"
    oc.save(_model(10), p)
    before = p.read_bytes()
    broken = _model(10)
    broken.graph.node.append(oc.NodeProto(name=b"not a str"))  # type: ignore[arg-type]
    with pytest.raises(oc.EncodeError):
        oc.save(broken, p)
    assert p.read_bytes() == before
    assert sorted(x.name for x in tmp_path.iterdir()) == ["m.onnx"]


def test_unreadable_path_is_our_error(tmp_path: Path) -> None:
    with pytest.raises(oc.OnnxCoreError):
        oc.load(tmp_path / "missing.onnx")
    with pytest.raises(oc.DecodeError):
        oc.load(b"\x0b")
