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


def test_the_pure_numpy_run_is_shown_beside_the_accelerated_one(page: Any) -> None:
    # Issue 42: the pure-numpy path (ONNXCORE_ACCEL=0) stated beside the accelerated figures, model by model,
    # per family and in the headline, from the "numpy" results of `bench_corpus.py --accel both`.
    data = json.loads((ROOT / "benchmarks" / "results" / "corpus.json").read_text())
    data["numpy"] = [dict(r, onnxcore=r["onnxcore"] * 2, ratio=r["ratio"] * 2) for r in data["1"]]
    text = page.render({"corpus.json": data})
    pure = statistics.median(r["ratio"] for r in data["numpy"])
    assert "| onnxcore, numpy, 1 thread | ratio, numpy |" in text
    assert f"Pure-numpy path (`ONNXCORE_ACCEL=0`), one thread: **{pure:.2f}x** ({len(data['numpy'])} models)" in text
    first = data["1"][0]
    row = next(line for line in text.splitlines() if line.startswith(f"| {first['name']} |"))
    assert row.endswith(f"| {first['ratio'] * 2:.2f}x |")
    assert "median, numpy, 1 thread |" in text
    rows = dict(page.headline_rows({"corpus.json": data}))
    label = f"{len(data['numpy'])} models from today's exporters, pure numpy (no `accel`), one thread"
    assert rows[f"{label}: time / onnxruntime's (median)"] == f"{pure:.2f}x"
    # Without that run the page has no such column.
    del data["numpy"]
    assert "ratio, numpy" not in page.render({"corpus.json": data})
