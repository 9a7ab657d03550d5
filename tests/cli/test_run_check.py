"""``onnxcore run`` and ``onnxcore check`` on the command line (issue 7)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import onnxcore as oc
from onnxcore.cli import main
from onnxcore.cli.commands import _DEMO_INPUT, bundled_model_path


def test_run_with_npy_and_pb_inputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ort = pytest.importorskip("onnxruntime")
    x = _DEMO_INPUT
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "out"
    assert main(["run", str(bundled_model_path()), "--input", f"x={tmp_path / 'x.npy'}", "--output-dir", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "probabilities" in printed and "label" in printed
    expected = ort.InferenceSession(str(bundled_model_path()), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    np.testing.assert_allclose(np.load(out / "probabilities.npy"), expected[0], rtol=1e-5)
    np.testing.assert_array_equal(np.load(out / "label.npy"), expected[1])
    # The same input as a TensorProto .pb file, and JSON output.
    (tmp_path / "x.pb").write_bytes(oc.encode(oc.from_array(x, "x")))
    assert main(["run", str(bundled_model_path()), "--input", f"x={tmp_path / 'x.pb'}", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["label"]["preview"] == expected[1].tolist()
    assert doc["probabilities"]["shape"] == [4, 3] and doc["probabilities"]["dtype"] == "float32"


def test_run_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(tmp_path / "missing.onnx")]) == 2
    np.save(tmp_path / "bad.npy", np.ones((4, 5), np.float32))
    assert main(["run", str(bundled_model_path()), "--input", f"x={tmp_path / 'bad.npy'}"]) == 1
    assert "extent" in capsys.readouterr().err


def test_check_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(bundled_model_path())]) == 0
    model = oc.load(bundled_model_path())
    model.graph.node[0].input[0] = "nowhere"  # a value with no producer (Clause 10.2)
    bad = tmp_path / "bad.onnx"
    oc.save(model, bad)
    capsys.readouterr()
    assert main(["check", str(bad), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["errors"] >= 1 and any(f["clause"].startswith(("10.2", "7.5")) for f in doc["findings"])
    assert main(["check", str(tmp_path / "missing.onnx")]) == 2


def test_run_profile_lists_the_steps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    np.save(tmp_path / "x.npy", _DEMO_INPUT)
    args = ["run", str(bundled_model_path()), "--input", f"x={tmp_path / 'x.npy'}"]
    assert main([*args, "--profile", "2"]) == 0
    printed = capsys.readouterr().out
    assert "probabilities" in printed
    assert "ms per run (sum of" in printed and "mean of 2 runs" in printed and "per operator" in printed
    steps = oc.Session(bundled_model_path())._plan.info
    assert any(bn.node.op_type in printed for bn in steps)
    assert main([*args, "--profile", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) == {"outputs", "profile"} and doc["profile"]["runs"] == 5
    assert "probabilities" in doc["outputs"]
    assert len(doc["profile"]["steps"]) == len(steps)
    assert all(s["seconds"] >= 0 and {"index", "op_type", "name", "fused"} <= set(s) for s in doc["profile"]["steps"])
    assert main([*args, "--profile", "0"]) == 0  # 0: no profile
    assert "per operator" not in capsys.readouterr().out
