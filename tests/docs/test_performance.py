"""The performance page and the README's headline figures are what the benchmarks' JSON results say (issue 40).

``docs/performance.md`` is rendered from ``benchmarks/results/*.json`` by ``tools/performance_page.py``; the README's
headline table is computed from the same files. Both are checked here for staleness, and the renderer against
the results it reads.
"""

from __future__ import annotations

import importlib.util
import json
import statistics
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIX = "regenerate with `python tools/performance_page.py --write`"


@pytest.fixture(scope="module")
def page() -> Any:
    spec = importlib.util.spec_from_file_location("performance_page", ROOT / "tools" / "performance_page.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["performance_page"] = module
    spec.loader.exec_module(module)
    return module


def test_page_is_rendered_from_the_results(page: Any) -> None:
    results = page.load_results()
    assert (ROOT / "docs" / "performance.md").read_text(encoding="utf-8") == page.render(results), FIX


def test_readme_headline_is_computed_from_the_results(page: Any) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert page.readme_with_headline(readme, page.load_results()) == readme, FIX


def test_every_section_has_its_results_and_provenance(page: Any) -> None:
    results = page.load_results()
    assert sorted(results) == sorted(s.file for s in page.SECTIONS)
    for name, data in results.items():
        meta = data.get("meta", data)
        for key in ("benchmark", "command", "commit", "cpu", "date"):
            assert meta.get(key), f"{name}: no {key}"
        assert (ROOT / "benchmarks" / meta["benchmark"]).exists(), name
        assert meta["command"].startswith(f"python benchmarks/{meta['benchmark']}"), name


def test_corpus_medians_are_the_results(page: Any) -> None:
    data = json.loads((ROOT / "benchmarks" / "results" / "corpus.json").read_text())
    one = statistics.median(r["ratio"] for r in data["1"])
    default = statistics.median(r["ratio"] for r in data["default"])
    text = page.render(page.load_results())
    assert f"**{one:.2f}x** at one thread ({len(data['1'])} models)" in text
    assert f"**{default:.2f}x** at default threads" in text
    rows = dict(page.headline_rows(page.load_results()))
    assert f"{one:.2f}x" in rows.values() and f"{default:.2f}x" in rows.values()


def test_a_new_result_changes_the_page(page: Any, tmp_path: Path) -> None:
    for f in (ROOT / "benchmarks" / "results").glob("*.json"):
        (tmp_path / f.name).write_text(f.read_text())
    data = json.loads((tmp_path / "load.json").read_text())
    data["tables"][0]["rows"][0][3] = "0.001 s"
    data["commit"] = "abc1234"
    (tmp_path / "load.json").write_text(json.dumps(data))
    results = page.load_results(tmp_path)
    text = page.render(results)
    assert "0.001 s" in text and "commit `abc1234`" in text
    assert "| 0.001 s |" in page.headline_table(results)
