"""``onnxcore inspect``: fields with offsets; tensors summarised; a corrupt file shows where it fails."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest

import onnxcore as oc
from onnxcore.cli import main
from onnxcore.cli.inspect import inspect_rows, run_inspect


def _model(tmp_path: Path) -> Path:
    w = np.arange(12, dtype=np.float32)
    t = oc.TensorProto(name="w", dims=[3, 4], data_type=1, raw_data=w.tobytes())
    g = oc.GraphProto(name="g", initializer=[t], node=[oc.NodeProto(op_type="Identity", input=["w"], output=["y"])])
    m = oc.ModelProto(ir_version=8, producer_name="p", graph=g, opset_import=[oc.OperatorSetIdProto(version=17)])
    p = tmp_path / "m.onnx"
    oc.save(m, p)
    return p


def test_rows_match_the_spec_layout(tmp_path: Path) -> None:
    p = _model(tmp_path)
    data = p.read_bytes()
    rows = list(inspect_rows(data, depth=3))
    first = rows[0]
    # modelproto-fields.txt: ir_version is field 1, VARINT, at offset 0 (08 08 ...).
    assert (first.tag, first.name, first.wire_type, first.offset, first.length, first.value) == (
        1,
        "ir_version",
        "VARINT",
        0,
        2,
        8,
    )
    init = next(r for r in rows if r.name == "initializer")
    assert init.summary == {"name": "w", "dims": [3, 4], "data_type": "FLOAT", "storage": "raw_data", "octets": 48}
    assert data[init.offset] == 0x2A  # key of GraphProto.initializer (5, LEN)
    graph = next(r for r in rows if r.name == "graph")
    assert graph.offset + graph.length <= len(data)
    assert any(r.path == ".graph.node[0].op_type" and r.value == "Identity" for r in rows)
    opset = next(r for r in rows if r.name == "opset_import")
    assert opset.depth == 0


@pytest.mark.parametrize("cut", [5, 20, 40, 60])
def test_truncated_file_reports_offset_and_path(tmp_path: Path, cut: int, capsys: pytest.CaptureFixture[str]) -> None:
    p = _model(tmp_path)
    data = p.read_bytes()
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(data[: len(data) - cut])
    out = io.StringIO()
    assert run_inspect(str(bad), depth=1, max_items=5, as_json=False, out=out) == 1
    (text,) = capsys.readouterr().err.splitlines()  # the rows decoded so far on out, the failure on stderr
    assert text.startswith("onnxcore inspect: ")
    assert "decoding failed at byte offset" in text and "ModelProto" in text
    with pytest.raises(oc.DecodeError) as e:
        oc.load(bad)
    assert f"byte offset {e.value.offset}" in text


def test_json_output_and_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = _model(tmp_path)
    assert main(["inspect", str(p), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["error"] is None and doc["fields"][0]["name"] == "ir_version"
    assert main(["inspect", str(tmp_path / "missing.onnx")]) == 2
    (tmp_path / "t.onnx").write_bytes(p.read_bytes()[:-3])
    assert main(["inspect", str(tmp_path / "t.onnx"), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["error"]["offset"] >= 0 and doc["error"]["path"].startswith("ModelProto")


def test_corruption_below_display_depth_is_found(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = _model(tmp_path)
    data = bytearray(p.read_bytes())
    # Make the node's op_type length run past the node (a length beyond its enclosing message).
    i = bytes(data).index(b"Identity")
    data[i - 1] = 0x7F
    bad = tmp_path / "deep.onnx"
    bad.write_bytes(bytes(data))
    out = io.StringIO()
    assert run_inspect(str(bad), depth=0, max_items=5, as_json=False, out=out) == 1
    assert "ModelProto.graph.node[0]" in capsys.readouterr().err
