"""The ONNX 1-3 test vectors, generated from the installed onnx package into a cache directory.

The onnx wheel ships the light model zoo but not the backend node cases; these are generated
from ``onnx.backend.test.case.node`` once per onnx version and reused across runs.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def cache_dir() -> Path:
    """Where generated test data lives (``ONNXCORE_TEST_CACHE`` overrides)."""
    import onnx

    base = Path(os.environ.get("ONNXCORE_TEST_CACHE", ROOT / ".cache"))
    return base / f"onnx-{onnx.__version__}"


def onnx_data_dir() -> Path:
    """The test data shipped in the onnx wheel (light model zoo, pytorch-converted, simple, real)."""
    import onnx

    return Path(onnx.__file__).parent / "backend" / "test" / "data"


def node_cases_dir() -> Path:
    """Generate (once) and return the directory of the ONNX 1-3 node test cases."""
    out = cache_dir() / "node"
    marker = cache_dir() / "node.complete"
    if marker.exists():
        return out
    cache_dir().mkdir(parents=True, exist_ok=True)
    lock = cache_dir() / "node.lock"
    with open(lock, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        if marker.exists():
            return out
        import warnings

        import onnx.backend.test.case.node as node_test
        import onnx.backend.test.cmd_tools as cmd_tools

        with warnings.catch_warnings(), contextlib.redirect_stdout(None):
            warnings.simplefilter("ignore")
            cases = node_test.collect_testcases(None)
            cmd_tools.model_test = types.SimpleNamespace(collect_testcases=lambda: cases)  # type: ignore[attr-defined]
            cmd_tools.generate_data(argparse.Namespace(output=str(cache_dir())))
        marker.write_text(str(len(cases)))
    return out


def node_case_dirs() -> list[Path]:
    """Every node case directory, sorted by name."""
    return sorted(p for p in node_cases_dir().iterdir() if p.is_dir())


def shipped_models() -> list[Path]:
    """Every ``.onnx`` model shipped in the onnx wheel's test data."""
    d = onnx_data_dir()
    return sorted(d.glob("*/*.onnx")) + sorted(d.glob("*/*/model.onnx"))
