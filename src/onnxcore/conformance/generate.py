"""Writing the ONNX 1-3 node test package from the installed ``onnx`` package.

This is the one feature of onnxcore that needs ``onnx``: the test vectors are defined as Python code in
that package. The generator runs in a child interpreter so that ``onnx`` is never imported into the
caller's process (the runtime stays free of it, see tests/test_banned_imports.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from onnxcore.errors import OnnxCoreError

__all__ = ["generate_node_package"]

# Run in a child interpreter: collects the node cases and writes them with onnx's own writer.
_SCRIPT = r"""
import argparse, contextlib, os, sys, types, warnings
try:
    import onnx.backend.test.case.node as node_test
    import onnx.backend.test.cmd_tools as cmd_tools
except ImportError as e:
    sys.stderr.write(f"the onnx package is needed to generate the test package: {e}\n")
    sys.exit(3)
out = sys.argv[1]
with warnings.catch_warnings(), contextlib.redirect_stdout(sys.stderr):
    warnings.simplefilter("ignore")
    cases = node_test.collect_testcases(None)
    cmd_tools.model_test = types.SimpleNamespace(collect_testcases=lambda: cases)
    cmd_tools.generate_data(argparse.Namespace(output=out))
print(len(cases))
"""


def generate_node_package(directory: str | os.PathLike[str]) -> int:
    """Write the node cases under ``directory/node``; return how many were written.

    Raises:
        OnnxCoreError: the onnx package is missing or the generation failed.
    """
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([sys.executable, "-c", _SCRIPT, str(out)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise OnnxCoreError(f"generating the ONNX 1-3 node test package failed: {proc.stderr.strip()[-2000:]}")
    return int(proc.stdout.strip().splitlines()[-1])
