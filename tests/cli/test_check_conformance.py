"""``check`` of several files (and of files that are no model), ``conformance --json -`` (issue 22)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import onnxcore as oc
from onnxcore.cli import main
from onnxcore.cli.commands import _DEMO_INPUT, bundled_model_path

MODEL = str(bundled_model_path())


def _bad(tmp_path: Path) -> str:
    model = oc.load(bundled_model_path())
    assert model.graph is not None
    model.graph.node[0].input[0] = "nowhere"
    path = tmp_path / "bad.onnx"
    oc.save(model, path)
    return str(path)


def test_check_several_models_exits_with_the_worst(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = _bad(tmp_path)
    assert main(["check", MODEL, MODEL]) == 0
    assert capsys.readouterr().out.count(f"{MODEL}: conforms") == 2
    assert main(["check", MODEL, bad]) == 1
    out = capsys.readouterr().out
    assert f"{MODEL}: conforms" in out and f"{bad}: does not conform" in out
    missing = str(tmp_path / "missing.onnx")
    assert main(["check", missing, bad, MODEL]) == 2
    captured = capsys.readouterr()
    assert f"{bad}: does not conform" in captured.out and f"{MODEL}: conforms" in captured.out
    assert captured.err.strip().splitlines() == [captured.err.strip()] and missing in captured.err
    assert main(["check", MODEL, bad, "--json"]) == 1
    docs = json.loads(capsys.readouterr().out)
    assert [(d["source"], d["ok"]) for d in docs] == [(MODEL, True), (bad, False)]
    assert main(["check", MODEL, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["source"] == MODEL  # one model: the report itself, as before


def test_check_says_when_a_file_is_no_onnx_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    np.save(tmp_path / "a.npy", np.ones(3))
    (tmp_path / "notes.txt").write_text("just some text\nsecond line\n")
    (tmp_path / "pic.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))
    kinds = {"a.npy": "NumPy array", "notes.txt": "text", "pic.png": "PNG image"}
    for name, kind in kinds.items():
        assert main(["check", str(tmp_path / name)]) == 1
        lines = capsys.readouterr().out.splitlines()
        assert lines[0].startswith(f"{tmp_path / name}: not an ONNX model: looks like") and kind in lines[0]
        assert "does not conform" in lines[1] and any("E-DECODE" in line for line in lines[2:])
    assert main(["check", str(tmp_path / "a.npy"), "--json"]) == 1
    assert "NumPy" in json.loads(capsys.readouterr().out)["not_onnx"]
    assert main(["check", _bad(tmp_path)]) == 1  # a model with errors is still an ONNX model
    assert "not an ONNX model" not in capsys.readouterr().out


def _package(tmp_path: Path) -> Path:
    case = tmp_path / "pkg" / "node" / "test_iris"
    data = case / "test_data_set_0"
    data.mkdir(parents=True)
    shutil.copy(bundled_model_path(), case / "model.onnx")
    outputs = oc.Session(bundled_model_path()).run(None, {"x": _DEMO_INPUT})
    (data / "input_0.pb").write_bytes(oc.encode(oc.from_array(_DEMO_INPUT, "x")))
    for i, v in enumerate(outputs):
        (data / f"output_{i}.pb").write_bytes(oc.encode(oc.from_array(v)))
    return tmp_path / "pkg"


def test_conformance_json_to_stdout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pkg = _package(tmp_path)
    assert main(["conformance", str(pkg), "--json", "-"]) == 0
    captured = capsys.readouterr()
    records = json.loads(captured.out)
    assert [(r["name"], r["status"]) for r in records] == [("test_iris", "pass")]
    assert "1 cases: 1 passed" in captured.err
    assert not (Path.cwd() / "-").exists()
    report = tmp_path / "r.json"
    assert main(["conformance", str(pkg), "--json", str(report)]) == 0
    assert "1 cases: 1 passed" in capsys.readouterr().out
    assert json.loads(report.read_text(encoding="utf-8"))[0]["status"] == "pass"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pkg", "r.json"]  # no temporary left beside it
    assert main(["statement", "--package", str(pkg), "--json", "--output", str(tmp_path / "st.json")]) == 0
    assert json.loads((tmp_path / "st.json").read_text(encoding="utf-8"))
    assert main(["conformance", str(tmp_path / "nowhere")]) == 2
    assert "nowhere" in capsys.readouterr().err
