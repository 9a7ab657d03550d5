"""``onnxcore print``: the model in the textual syntax, weights summarised; one-line errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import onnxcore as oc
from onnxcore.cli import main
from onnxcore.text import parse_model


def _model(tmp_path: Path, n: int = 100) -> Path:
    w = np.arange(n, dtype=np.float32)
    t = oc.TensorProto(name="w", dims=[n], data_type=1, raw_data=w.tobytes())
    g = oc.GraphProto(name="g", initializer=[t], node=[oc.NodeProto(op_type="Identity", input=["w"], output=["y"])])
    m = oc.ModelProto(ir_version=8, graph=g, opset_import=[oc.OperatorSetIdProto(domain="", version=17)])
    p = tmp_path / "m.onnx"
    oc.save(m, p)
    return p


def test_print_summarises_weights(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["print", str(_model(tmp_path))]) == 0
    out = capsys.readouterr().out
    assert out.startswith('<\n   ir_version: 8,\n   opset_import: ["" : 17]\n>\ng () => () \n')
    assert "float[100] w =  {0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,...}" in out
    assert "   y = Identity (w)\n" in out


def test_print_all_values_parses_back(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["print", str(_model(tmp_path, 5)), "--max-elements", "5"]) == 0
    model = parse_model(capsys.readouterr().out)
    assert model.graph is not None and model.graph.initializer[0].float_data == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_print_unreadable_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["print", str(tmp_path / "missing.onnx")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("onnxcore print: ") and err.count("\n") == 1


def test_print_corrupt_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x0a\xff\xff\xff")
    assert main(["print", str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("onnxcore print: ") and err.count("\n") == 1


def test_print_refuses_a_negative_count(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["print", "m.onnx", "--max-elements", "-1"]) == 2
    assert "expected 0 or more" in capsys.readouterr().err
