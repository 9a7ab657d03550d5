"""The performance page, rendered from the benchmarks' JSON results (``benchmarks/results/*.json``).

Each benchmark that feeds the page writes its results with ``--json FILE`` (``benchmarks/bench_json.py`` stamps
them with the commit, CPU and date); copy a new run over the file of the same name and the site shows it on
its next build (``tools/docs_site.py`` calls :func:`render`). The README's headline table is
:func:`headline_table` of the same files; ``tests/docs/test_performance.py`` checks that it matches.

Usage: ``python tools/performance_page.py [--results DIR] [--output FILE]`` prints (or writes) the page;
``--headline`` prints the README's table.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"


@dataclass(frozen=True)
class Section:
    """One results file on the page: its heading and what the numbers are."""

    file: str
    title: str
    about: str


SECTIONS = [
    Section(
        "corpus.json",
        "Today's exporters (the corpus)",
        "Models exported by today's tools (`benchmarks/corpus_models.py`, with the `bench` extra): torchvision and "
        "timm CNNs and a ViT at 224x224, small transformers (BERT, DistilBERT, GPT-2, T5 encoder, Whisper encoder, "
        "Llama, a Llama decoder step with its key/value cache), each by both torch exporters, and scikit-learn, "
        "LightGBM and XGBoost models at 1 and 1,000 rows. Wall time, best of the runs, the engines taking turns; "
        "every output of both engines is compared with the framework's own. Ratio: onnxcore's time over "
        "onnxruntime's (below 1: onnxcore is faster). One thread: BLAS at one thread, onnxruntime "
        "`intra_op_num_threads=1`; default: each engine as it comes.",
    ),
    Section(
        "models.json",
        "Light model zoo",
        "The ONNX light model zoo's CNNs with seeded random weights, CPU time, against onnxruntime single-threaded "
        "and default, and the reference evaluator `onnx.reference`; every output matches onnxruntime "
        "(`tests/kernels/test_light_models.py` checks it too).",
    ),
    Section(
        "ops.json",
        "Operators one by one",
        "One node per model, both engines through their session API, CPU time; the last rows are small graphs as "
        "exporters write them and tabular models as skl2onnx and onnxmltools write them. Ratio: onnxcore / "
        "onnxruntime single-threaded.",
    ),
    Section(
        "ops_accel.json",
        "Operators with the optional accelerator",
        "The operators the [optional accelerator](guide/accelerator.md) compiles, on the pure-numpy path and "
        "with numba, against onnxruntime single-threaded.",
    ),
    Section(
        "load.json",
        "Loading",
        "`onnxcore.load` against `onnx.load`, each load in a fresh process; peak RSS of the load alone.",
    ),
    Section(
        "check.json",
        "Validation and shape inference",
        "`onnxcore.check` against `onnx.checker.check_model(full_check=True)` and shape inference against "
        "`onnx.shape_inference`, on a 50,000-node graph and a 256 MiB weights model.",
    ),
]


def load_results(directory: Path = RESULTS) -> dict[str, Any]:
    """Every results file of the page that exists, by file name."""
    return {s.file: json.loads((directory / s.file).read_text()) for s in SECTIONS if (directory / s.file).exists()}


def _bench_corpus() -> Any:
    """benchmarks/bench_corpus.py, whose ``table`` prints the corpus's results (benchmarks/ is not a package)."""
    if str(ROOT / "benchmarks") not in sys.path:  # its own imports (bench_json) are its siblings
        sys.path.insert(0, str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location("bench_corpus", ROOT / "benchmarks" / "bench_corpus.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _markdown_table(table: dict[str, Any]) -> list[str]:
    columns, rows = table["columns"], table["rows"]
    align = table.get("align") or ["---"] * len(columns)
    out = ["| " + " | ".join(columns) + " |", "|" + "|".join(align) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return out


def _provenance(meta: dict[str, Any]) -> list[str]:
    line = f"Measured on commit `{meta['commit']}`, {meta['date']}, {meta['cpu']}."
    if meta.get("source"):
        line += f" ({meta['source'][0].upper()}{meta['source'][1:]}.)"
    return [f"Reproduce: `{meta['command']}`", "", line, ""]


def _section(section: Section, data: dict[str, Any]) -> list[str]:
    lines = [f"## {section.title}", "", section.about, ""]
    if section.file == "corpus.json":
        meta = data["meta"]
        lines += _provenance(meta)
        runs = {k: v for k, v in data.items() if k != "meta"}
        lines += [_bench_corpus().table(runs), ""]
    else:
        meta = data
        lines += _provenance(meta)
        for table in data["tables"]:
            lines += [*_markdown_table(table), ""]
    lines += [*meta.get("notes", []), ""]
    return lines


def _ratio(text: str) -> float:
    return float(str(text).rstrip("x").replace(",", ""))


def headline_rows(results: dict[str, Any]) -> list[tuple[str, str]]:
    """The few figures the README shows, each computed from the results files."""
    rows: list[tuple[str, str]] = []
    corpus = results.get("corpus.json")
    if corpus:
        for mode, label in (("1", "one thread"), ("default", "default threads")):
            ratios = [r["ratio"] for r in corpus.get(mode, []) if "ratio" in r]
            if ratios:
                rows.append(
                    (
                        f"{len(ratios)} models from today's exporters, {label}: time / onnxruntime's (median)",
                        f"{statistics.median(ratios):.2f}x",
                    )
                )
    zoo = results.get("models.json")
    if zoo:
        table = zoo["tables"][0]
        col = table["columns"].index("reference / onnxcore")
        speedups = [_ratio(r[col]) for r in table["rows"]]
        rows.append(("light model zoo: faster than `onnx.reference` (median)", f"{statistics.median(speedups):.0f}x"))
    load = results.get("load.json")
    if load:
        row = load["tables"][0]["rows"][0]
        rows.append((f"`load` of a {row[1]} weights-heavy model (`onnx.load`: {row[2]})", row[3]))
    check = results.get("check.json")
    if check:
        row = check["tables"][0]["rows"][0]
        rows.append(("`check` of a 50,000-node graph: time / `onnx.checker`'s (full check)", f"{row[3]}x"))
    return rows


def headline_table(results: dict[str, Any]) -> str:
    """The README's table of headline figures, linking to the page."""
    lines = ["| measured | onnxcore |", "|---|---:|"]
    lines += [f"| {what} | {value} |" for what, value in headline_rows(results)]
    return "\n".join(lines)


def render(results: dict[str, Any]) -> str:
    """The whole page."""
    lines = [
        "# Performance",
        "",
        "Measured by the scripts in `benchmarks/`, each against the anchors (onnxruntime, onnx) in one run, on a "
        "shared 2-core machine: the numbers vary from run to run, the ratios are what matter. Every table is "
        "rendered from the benchmark's JSON results (`benchmarks/results/`) when the site is built; how the "
        "numbers came to be, round by round, is in the [changelog](changelog.md).",
        "",
        "| measured | onnxcore |",
        "|---|---:|",
        *(f"| {what} | {value} |" for what, value in headline_rows(results)),
        "",
    ]
    for section in SECTIONS:
        if section.file in results:
            lines += _section(section, results[section.file])
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--results", type=Path, default=RESULTS)
    ap.add_argument("--output", type=Path, help="write the page here instead of printing it")
    ap.add_argument("--headline", action="store_true", help="print the README's headline table")
    args = ap.parse_args(argv)
    results = load_results(args.results)
    text = headline_table(results) + "\n" if args.headline else render(results)
    if args.output:
        args.output.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
