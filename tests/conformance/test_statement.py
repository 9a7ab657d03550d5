"""The conformance statement (Annex A) and the test-package runner (issue 7)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import corpus
import pytest

from onnxcore.cli import main
from onnxcore.conformance.runner import CaseResult, discover
from onnxcore.conformance.statement import build_statement, render_markdown

DOC = Path(__file__).resolve().parent.parent.parent / "docs" / "conformance.md"

TABLE_A1 = [
    "## Identity and version",
    "## Conformance classes claimed",
    "## Conformance profiles claimed",
    "## IR versions supported",
    "## Operator set versions supported, per domain",
    "## Operators not supported, per operator set version",
    "## Numerical tolerance achieved, per element type",
    "## Result of the test package (ONNX 1-3), by version",
    "## Known divergences from ONNX Part 1",
    "## External data handling policy",
    "## Resource limits",
]


def test_runner_count_matches_an_independent_count(node_cases: list[Path], package_results: list[CaseResult]) -> None:
    # Independent count: what onnx's own collector produced when the package was generated.
    marker = corpus.cache_dir() / "node.complete"
    assert len(discover(corpus.node_cases_dir())) == int(marker.read_text()) == len(node_cases)
    assert len(package_results) == len(node_cases)
    assert {r.name for r in package_results} == {c.name for c in node_cases}
    assert all(r.status in ("pass", "fail", "error", "unsupported") for r in package_results)


def test_statement_has_every_item_of_table_a1(package_results: list[CaseResult]) -> None:
    st = build_statement(package_results)
    md = render_markdown(st)
    for heading in TABLE_A1:
        assert heading in md
    assert st["test_package"]["cases"] == len(package_results)
    totals = st["test_package"]["totals"]
    assert sum(totals.values()) == len(package_results)
    assert st["tolerances"]["achieved_by_element_type"]["FLOAT"]["cases"] > 100
    assert json.loads(json.dumps(st)) == st


_BIN = re.compile(r"<= (1e[+-]\d+|0)")


def _exponent(cell: str) -> int:
    return -99 if cell == "0" else int(cell[2:])


def test_docs_conformance_md_is_current(package_results: list[CaseResult]) -> None:
    """docs/conformance.md is what `onnxcore statement --markdown` generates from this code.

    The measured error bounds may differ by one power of ten between processors (BLAS kernels round
    differently); everything else must match exactly.
    """
    expected = render_markdown(build_statement(package_results))
    committed = DOC.read_text(encoding="utf-8")
    if _BIN.sub("<= N", committed) != _BIN.sub("<= N", expected):
        pytest.fail(
            "docs/conformance.md is stale: regenerate it with `onnxcore statement --markdown "
            "--package .cache/onnx-1.23.2/node --output docs/conformance.md`"
        )
    for ours, theirs in zip(_BIN.findall(committed), _BIN.findall(expected)):
        assert abs(_exponent(ours) - _exponent(theirs)) <= 1 or ("0" in (ours, theirs) and ours == theirs)


def test_conformance_command_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.json"
    code = main(["conformance", str(corpus.node_cases_dir()), "--filter", "test_relu*", "--json", str(out)])
    records = json.loads(out.read_text())
    names = {c.name for c in discover(corpus.node_cases_dir(), "test_relu*")}
    assert {r["name"] for r in records} == names and len(records) == len(names)
    assert code == (0 if all(r["status"] in ("pass", "unsupported") for r in records) else 1)
    text = capsys.readouterr().out
    assert f"{len(names)} cases:" in text and "Relu" in text


def test_generate_writes_the_node_package(tmp_path: Path) -> None:
    """`onnxcore conformance --generate` writes the same cases the test suite's own generation found."""
    assert main(["conformance", str(tmp_path), "--generate"]) == 0
    written = {p.name for p in (tmp_path / "node").iterdir() if (p / "model.onnx").exists()}
    assert written == {c.name for c in corpus.node_case_dirs()}


def test_parallel_run_gives_the_same_records(tmp_path: Path) -> None:
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    node_dir = str(corpus.node_cases_dir())
    main(["conformance", node_dir, "--filter", "test_add*", "--json", str(one)])
    main(["conformance", node_dir, "--filter", "test_add*", "--json", str(two), "--jobs", "2"])
    strip = lambda recs: [{k: v for k, v in r.items() if k != "seconds"} for r in recs]  # noqa: E731
    assert strip(json.loads(one.read_text())) == strip(json.loads(two.read_text()))
