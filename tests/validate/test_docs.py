"""docs/validation.md is current: its generated tables match the registry and a fresh run of onnx's checker."""

from __future__ import annotations

import pytest

pytest.importorskip("onnx")
compare_onnx = pytest.importorskip("compare_onnx")


def test_generated_sections_are_current() -> None:
    text = compare_onnx.DOC.read_text(encoding="utf-8")
    assert compare_onnx.render(text) == text, "run: python tests/check/compare_onnx.py"


def test_onnx_misses_what_the_issue_says_it_misses() -> None:
    # The issue's premise, checked rather than assumed: onnx's checker misses type-constraint violations
    # and several Clause 7 rules that the validator reports.
    rows = {code: theirs for code, _c, _w, ours, theirs in compare_onnx.comparison_rows() if ours == "yes"}
    assert len(rows) == len(compare_onnx.mutants.MUTANTS)
    missed = {code for code, theirs in rows.items() if theirs == "missed"}
    assert {"E-GRAPH-NAME", "E-NODE-NAME-DUPLICATE", "E-SCOPE-SHADOW"} & missed
