"""Packaging facts: package-data globs that match files, and one version for the code and the metadata."""

from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path

import pytest

import onnxcore

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path(onnxcore.__file__).resolve().parent
tomllib = pytest.importorskip("tomllib" if sys.version_info >= (3, 11) else "tomli")


def _pyproject() -> dict:
    path = ROOT / "pyproject.toml"
    if not path.exists():
        pytest.skip("no pyproject.toml next to the tests (installed package)")
    return tomllib.loads(path.read_text(encoding="utf-8"))


def test_every_package_data_glob_matches_a_file():
    data = _pyproject()["tool"]["setuptools"]["package-data"]
    assert set(data) == {"onnxcore"}
    globs = data["onnxcore"]
    assert globs
    for pattern in globs:
        matched = [p for p in PACKAGE.glob(pattern) if p.is_file()]
        assert matched, f"package-data glob {pattern!r} matches no file under {PACKAGE}"


def test_the_version_is_declared_once():
    project = _pyproject()["project"]
    assert "version" not in project
    assert "version" in project["dynamic"]
    assert _pyproject()["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "onnxcore.__version__"}


def test_the_installed_metadata_carries_the_package_version():
    try:
        installed = importlib.metadata.version("onnxcore")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("onnxcore is not installed (run from a source tree)")
    assert onnxcore.__version__ == installed
    parts = onnxcore.__version__.split(".")
    assert len(parts) >= 2 and all(p.isdigit() for p in parts[:2])
