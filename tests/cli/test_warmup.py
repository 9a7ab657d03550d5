"""``onnxcore warmup``: a session and two runs of each model, timed; with the accelerator, numba's cache filled with the
loops the model uses, so that a later process compiles nothing (issue 42, item 3; docs/guide/startup.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from onnx import TensorProto, helper

from onnxcore.cli import main
from onnxcore.cli.commands import bundled_model_path


def test_warmup_times_each_model(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["warmup", str(bundled_model_path()), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (row,) = doc["models"]
    assert row["model"] == str(bundled_model_path())
    assert row["session_s"] > 0 and row["first_run_s"] > 0 and row["second_run_s"] > 0
    assert doc["accelerator"] in ("installed", "loaded", "off")


def test_warmup_text_and_a_missing_model(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["warmup", str(bundled_model_path())]) == 0
    out = capsys.readouterr().out
    assert "first run" in out and "accelerator:" in out
    assert main(["warmup", str(tmp_path / "absent.onnx")]) == 2
    assert "absent.onnx" in capsys.readouterr().err


def test_warmup_fills_numbas_cache_for_a_later_process(tmp_path: Path) -> None:
    pytest.importorskip("numba")
    g = helper.make_graph(
        [helper.make_node("HardSwish", ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 8])],
    )
    model = tmp_path / "hardswish.onnx"
    model.write_bytes(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    cache = tmp_path / "numba-cache"
    env = {k: v for k, v in os.environ.items() if k != "ONNXCORE_ACCEL"} | {"NUMBA_CACHE_DIR": str(cache)}
    cmd = [sys.executable, "-m", "onnxcore", "warmup", str(model), "--json"]
    first = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert first.returncode == 0, first.stderr
    doc = json.loads(first.stdout)
    assert doc["accelerator"] == "loaded"
    assert doc["numba_cache"] is not None and Path(doc["numba_cache"]).is_relative_to(cache)
    cached = sorted(p.name for p in Path(doc["numba_cache"]).iterdir())
    assert any(name.startswith("_jit.hard_swish-") and name.endswith(".nbi") for name in cached), cached
    # A later process finds the loop in the cache: numba writes nothing new.
    second = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert second.returncode == 0, second.stderr
    assert sorted(p.name for p in Path(doc["numba_cache"]).iterdir()) == cached
