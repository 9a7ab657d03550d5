"""The README's main job: validate and run the bundled model, print the result."""

from __future__ import annotations

import json

import numpy as np
import pytest

from onnxcore.cli import main
from onnxcore.cli.commands import _DEMO_INPUT, bundled_model_path


def test_demo_matches_onnxruntime(capsys: pytest.CaptureFixture[str]) -> None:
    ort = pytest.importorskip("onnxruntime")
    assert main(["demo", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["validation"]["ok"] is True and doc["validation"]["errors"] == 0
    sess = ort.InferenceSession(str(bundled_model_path()), providers=["CPUExecutionProvider"])
    probs, label = sess.run(None, {"x": _DEMO_INPUT})
    assert doc["outputs"]["label"]["preview"] == label.tolist() == [0, 1, 2, 0]
    np.testing.assert_allclose(doc["outputs"]["probabilities"]["preview"], probs.ravel()[:8], rtol=1e-5)


def test_demo_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "validation: 0 errors" in out
    assert "predicted: setosa, versicolor, virginica, setosa" in out
