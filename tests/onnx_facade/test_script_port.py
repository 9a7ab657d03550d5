"""The import swap on a whole script: ``import onnx`` -> ``import onnxcore.onnx as onnx`` prints the same.

The script (``scripts/api_tour.py``) builds, checks, prints, serializes, edits with protobuf's methods, infers
shapes and catches a ValidationError. The two runs' outputs are compared line for line, after the two documented
differences: onnx names the unknown dimensions shape inference creates (``unk__0``; onnxcore leaves them
unnamed, ``?``), and onnx warns that ``printable_graph`` is deprecated.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("onnx")

SCRIPT = Path(__file__).parent / "scripts" / "api_tour.py"
SRC = Path(__file__).resolve().parents[2] / "src"


def _run(path: Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env, check=True)
    return done.stdout


def test_swapped_import_prints_the_same(tmp_path: Path) -> None:
    """The script's output with onnx equals its output with the façade (modulo the two documented differences)."""
    text = SCRIPT.read_text(encoding="utf-8")
    swapped = text.replace("\nimport onnx\n", "\nimport onnxcore.onnx as onnx\n").replace(
        "\nfrom onnx import ", "\nfrom onnxcore.onnx import "
    )
    assert swapped != text
    (tmp_path / "swapped.py").write_text(swapped, encoding="utf-8")
    original = re.sub(r"unk__\d+", "?", _run(SCRIPT))
    ours = _run(tmp_path / "swapped.py")
    assert ours.splitlines() == original.splitlines()
    assert "invalid model caught" in ours and "ir_version: 8" in ours
