"""Interop with the oracles: our external data loads in onnx and onnxruntime, and theirs in ours."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from ext_helpers import EXTERNAL, add_model

import onnxcore
from onnxcore import TensorProto
from onnxcore.external import is_resolved
from onnxcore.external.tensor_walk import iter_tensors

onnx = pytest.importorskip("onnx")
numpy_helper = pytest.importorskip("onnx.numpy_helper")
helper = pytest.importorskip("onnx.helper")

N = 4096


def _weights() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(5)
    return {
        "w": rng.standard_normal(N).astype(np.float32),
        "b": rng.standard_normal(N).astype(np.float32),
        "tiny": np.array([1.5, -2.0], dtype=np.float32),
    }


def _our_model() -> onnxcore.ModelProto:
    ws = _weights()
    ts = [
        TensorProto(name=k, data_type=TensorProto.DataType.FLOAT, dims=list(v.shape), raw_data=v.tobytes())
        for k, v in ws.items()
    ]
    return add_model(ts, (N,))


@pytest.mark.parametrize("checksum", [False, True])
def test_ours_loads_in_onnx(tmp_path: Path, checksum: bool) -> None:
    path = tmp_path / "m.onnx"
    onnxcore.save(_our_model(), path, external_data=True, checksum=checksum)
    theirs = onnx.load(str(path), load_external_data=True)
    got = {t.name: numpy_helper.to_array(t) for t in theirs.graph.initializer}
    for name, want in _weights().items():
        assert np.array_equal(got[name], want)
    onnx.checker.check_model(str(path))


def test_ours_runs_in_onnxruntime(tmp_path: Path) -> None:
    ort = pytest.importorskip("onnxruntime")
    path = tmp_path / "m.onnx"
    onnxcore.save(_our_model(), path, external_data=True, checksum=True)
    assert (tmp_path / "m.onnx.data").stat().st_size == 2 * 4 * N  # w and b; tiny stays inline
    x = np.linspace(-1, 1, N, dtype=np.float32)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (y,) = session.run(None, {"x": x})
    assert np.array_equal(y, x + _weights()["w"])


def _onnx_model() -> object:
    ws = _weights()
    const = helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(ws["b"], "c"))
    nodes = [helper.make_node("Add", ["x", "w"], ["t"]), const, helper.make_node("Add", ["t", "c"], ["y"])]
    vi = [helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, [N]) for n in ("x", "y")]
    inits = [numpy_helper.from_array(ws["w"], "w"), numpy_helper.from_array(ws["tiny"], "tiny")]
    graph = helper.make_graph(nodes, "g", [vi[0]], [vi[1]], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    return model


@pytest.mark.parametrize("one_file", [True, False])
def test_onnx_external_data_loads_in_ours(tmp_path: Path, one_file: bool) -> None:
    path = tmp_path / "m.onnx"
    onnx.save_model(
        _onnx_model(),
        str(path),
        save_as_external_data=True,
        all_tensors_to_one_file=one_file,
        location="weights.data" if one_file else None,
        size_threshold=0,
        convert_attribute=True,
    )
    reference = onnx.load(str(path), load_external_data=True)
    want = {
        t.name: numpy_helper.to_array(t)
        for t in [*reference.graph.initializer, *(a.t for n in reference.graph.node for a in n.attribute)]
    }
    model = onnxcore.load(path)
    got = {t.name: t for _, t in iter_tensors(model)}
    assert sorted(got) == sorted(want) == ["c", "tiny", "w"]
    for name, t in got.items():
        assert t.data_location == EXTERNAL and is_resolved(t)
        assert np.array_equal(np.frombuffer(t.raw_data, "<f4"), want[name])
    to_array = pytest.importorskip("onnxcore.types").to_array
    assert np.array_equal(to_array(got["w"]), want["w"])


def test_onnx_model_round_trips_through_our_save(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    onnx.save_model(_onnx_model(), str(src / "m.onnx"), save_as_external_data=True, size_threshold=0)
    ours = onnxcore.load(src / "m.onnx")
    onnxcore.save(ours, tmp_path / "m.onnx", external_data=True, size_threshold=16)
    theirs = onnx.load(str(tmp_path / "m.onnx"))
    original = onnx.load(str(src / "m.onnx"))
    for a, b in zip(theirs.graph.initializer, original.graph.initializer):
        assert np.array_equal(numpy_helper.to_array(a), numpy_helper.to_array(b))
    tiny = next(t for t in theirs.graph.initializer if t.name == "tiny")
    assert tiny.data_location == onnx.TensorProto.DEFAULT  # 8 octets: below the threshold, inline
