from __future__ import annotations

import os

# Tests on a shared 2-core machine: one BLAS thread keeps numpy's matmul from fighting itself for the cores
# (set before numpy is imported; a caller's own setting wins).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus


@pytest.fixture(scope="session", autouse=True)
def _user_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The user's cache directory (where the accelerator keeps generated elementwise loops) in a temporary one: the
    tests write nothing into the home directory."""
    before = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("xdg-cache"))
    yield
    if before is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = before


@pytest.fixture(scope="session")
def node_cases() -> list[Path]:
    """Directories of the ONNX 1-3 node test cases (generated into the cache once)."""
    return corpus.node_case_dirs()


@pytest.fixture(scope="session")
def package_results(node_cases: list[Path]) -> list:
    """One run of the conformance runner over the whole ONNX 1-3 node package, shared by the tests."""
    from onnxcore.conformance.runner import run_package

    return run_package(node_cases)


@pytest.fixture(params=["numpy", "accel"])
def accel_path(request: pytest.FixtureRequest) -> Iterator[str]:
    """Run the test on the pure-numpy kernels and again on the compiled accelerator (the ``accel`` extra, numba);
    the second is skipped, saying why, where numba is missing or ``ONNXCORE_ACCEL=0``."""
    from onnxcore.kernels import accel

    on = request.param == "accel"
    if on and not accel.available():
        pytest.skip("the accelerator is not available (numba not installed, or ONNXCORE_ACCEL=0)")
    with accel.use(on):
        yield request.param
