"""The import swap on a whole script: ``import onnx`` -> ``import onnxcore.onnx as onnx`` prints the same.

The scripts (``scripts/``, written for this test in the style of onnx's documentation) build, check, print,
serialize, edit with protobuf's methods, infer shapes and function types, convert, compose, extract and catch a
ValidationError. The two runs' outputs are compared line for line, after the two documented
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

SCRIPTS = sorted((Path(__file__).parent / "scripts").glob("*.py"))
SRC = Path(__file__).resolve().parents[2] / "src"


def _run(path: Path, cwd: Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env, check=True, cwd=cwd)
    return done.stdout


def swap_imports(text: str) -> str:
    """The script with its onnx imports swapped for the façade's, and nothing else changed."""
    out = []
    for line in text.splitlines(keepends=True):
        if line.strip() == "import onnx":
            line = line.replace("import onnx", "import onnxcore.onnx as onnx")
        elif line.startswith(("from onnx import ", "from onnx.")):
            line = "from onnxcore.onnx" + line[len("from onnx") :]
        elif re.match(r"import onnx\.", line):
            line = re.sub(r"\bonnx\.", "onnxcore.onnx.", line)
        out.append(line)
    return "".join(out)


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.stem for p in SCRIPTS])
def test_swapped_import_prints_the_same(script: Path, tmp_path: Path) -> None:
    """The script's output with onnx equals its output with the façade (modulo the two documented differences)."""
    text = script.read_text(encoding="utf-8")
    swapped = swap_imports(text)
    assert swapped != text
    assert not re.search(r"^(from onnx[ .]|import onnx\b)", swapped, re.MULTILINE)
    (tmp_path / "theirs").mkdir()
    (tmp_path / "ours").mkdir()
    (tmp_path / "swapped.py").write_text(swapped, encoding="utf-8")
    original = re.sub(r"unk__\d+", "?", _run(script, tmp_path / "theirs"))
    ours = _run(tmp_path / "swapped.py", tmp_path / "ours")
    assert ours.splitlines() == original.splitlines()
    assert len(ours.splitlines()) > 50
