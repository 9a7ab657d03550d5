"""The model test cases shipped in the onnx wheel (``simple``, ``pytorch-converted``, ``pytorch-operator``).

Beside the node cases (generated, ``test_node_cases.py``) and the light model zoo
(``ops/test_light_models.py``), the onnx backend test suite runs these: whole models with recorded inputs
and outputs, many at old operator set versions (5 and 6) that onnxruntime no longer runs. Every one
must pass through the conformance runner (Clause 11.5 tolerances, rtol 1e-3, atol 1e-7); there is no
expected-failures list for them.
"""

from __future__ import annotations

from pathlib import Path

import corpus
import pytest

from onnxcore.conformance.runner import run_case

_SUITES = ("simple", "pytorch-converted", "pytorch-operator")


def _cases() -> list[object]:
    try:
        root = corpus.onnx_data_dir()
    except ImportError:
        return []
    return [
        pytest.param(d, id=f"{suite}/{d.name}")
        for suite in _SUITES
        for d in sorted((root / suite).glob("*"))
        if (d / "model.onnx").exists() and any(d.glob("test_data_set_*"))
    ]


CASES = _cases()


def test_the_wheel_ships_the_suites() -> None:
    if not CASES:
        pytest.skip("onnx is not installed")
    names = {c.id.split("/")[0] for c in CASES}  # type: ignore[attr-defined]
    assert names == set(_SUITES)
    assert len(CASES) > 100


@pytest.mark.parametrize("case", CASES)
def test_shipped_model_case(case: Path) -> None:
    result = run_case(case)
    assert result.status == "pass", f"{result.status}: {result.detail} {result.where}".strip()
