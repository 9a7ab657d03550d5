"""The ONNX 1-3 node test vectors, evaluated through :class:`onnxcore.Session`.

Every case is one test (by case name), judged from one shared run of the conformance runner
(``onnxcore.conformance.runner``; the ``package_results`` fixture runs the package once for this file and
the conformance-statement tests). A case whose operators (after function expansion) are not all supported
is skipped with "operator not yet implemented" (Clause 4.4: the session refuses it at construction). A
failing case listed in ``expected_failures.txt`` is an xfail with the reason given there; a listed case that
passes fails the run (strict), so the list only shrinks. Tolerance: rtol 1e-3, atol 1e-7, two ulps for
bfloat16 and narrower float outputs, NaN equal to NaN, exact for integers, booleans and strings
(``onnxcore.conformance.compare``; Clause 11.5).
"""

from __future__ import annotations

from pathlib import Path

import corpus
import pytest

from onnxcore.conformance.runner import CaseResult

HERE = Path(__file__).resolve().parent
_EXPECTED_FILE = HERE / "expected_failures.txt"


def _expected_failures() -> dict[str, str]:
    out: dict[str, str] = {}
    if not _EXPECTED_FILE.exists():
        return out
    for line in _EXPECTED_FILE.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, _, reason = line.partition("\t")
        out[name.strip()] = reason.strip() or "listed in expected_failures.txt"
    return out


EXPECTED = _expected_failures()
CASES = corpus.node_case_dirs()


@pytest.fixture(scope="module")
def results(package_results: list[CaseResult]) -> dict[str, CaseResult]:
    return {r.name: r for r in package_results}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_node_case(case: Path, results: dict[str, CaseResult]) -> None:
    r = results[case.name]
    if r.status == "unsupported":
        pytest.skip(f"operator not yet implemented: {', '.join(r.unsupported)}")
    reason = EXPECTED.get(case.name)
    if r.status == "pass":
        if reason is not None:
            pytest.fail(f"{case.name} is listed in expected_failures.txt but passes: remove it", pytrace=False)
        return
    message = f"{r.status}: {r.where} {r.detail}"
    if reason is not None:
        pytest.xfail(f"{reason} ({message[:200]})")
    pytest.fail(message, pytrace=False)


def test_expected_failures_are_cases() -> None:
    """Every listed name is a real case and carries a reason (the file is a committed record)."""
    names = {c.name for c in CASES}
    unknown = sorted(set(EXPECTED) - names)
    assert not unknown, f"expected_failures.txt lists unknown cases: {unknown}"
