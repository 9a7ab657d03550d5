"""The model report: layout quality against graphviz ``dot``, and the time to build and to open the page.

For each light-zoo model (and the 1,000-node transformer of tests/report/report_models.py), the top-level drawing
of ``onnxcore.report`` (initializers folded, the same boxes): edge crossings (proper intersections of the drawn
segments, counted alike for both layouts by :func:`onnxcore.reporting.segment_crossings`) and the drawing's width
in points; the same graph, with the same box sizes, laid out by ``dot`` (``-Tplain``; edges as the polylines through
their spline control points, which may cross where the curves do not: dot's count is an upper bound) when graphviz
is installed, else that column is skipped and the output says so.
Then the time to build the page (``onnxcore.report``), best of ``--repeat``, and, when Playwright and Chromium are
present, the time until the page's ``load`` event in headless Chromium.

Run: ``PYTHONPATH=src python benchmarks/bench_report.py [--repeat 3] [--chain 50000]``.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import onnxcore
from onnxcore.graph import bind
from onnxcore.infer import infer_both
from onnxcore.reporting import report, segment_crossings
from onnxcore.reporting.collect import Drawing, gather

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "report"))
import corpus
import report_models

CHROMIUM = "/usr/bin/chromium"


def _models(chain: int) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = [
        (p.stem, onnxcore.load(p)) for p in sorted((corpus.onnx_data_dir() / "light").glob("light_*.onnx"))
    ]
    out.append(("transformer_1000", onnxcore.from_onnx(report_models.transformer_model(1000))))
    if chain:
        out.append((f"chain_{chain}", onnxcore.from_onnx(report_models.chain_model(chain))))
    return out


def _drawing(model: Any) -> Drawing:
    bound = bind(model)
    types, shapes = infer_both(model, bound=bound)
    g = gather(bound, types, shapes, onnxcore.check(model, bound=bound))
    return g.drawings[g.main]


def _dot(d: Drawing) -> tuple[int, float] | None:
    """(crossings, width in points) of ``dot``'s layout of the same boxes and edges, or None without dot."""
    exe = shutil.which("dot")
    if exe is None:
        return None
    lines = ["digraph g {", 'node [shape=box, fixedsize=true, label=""];']
    for i, n in enumerate(d.nodes):
        lines.append(f"n{i} [width={n.width / 72:.3f}, height={n.height / 72:.3f}];")
    for e in d.edges:
        lines.append(f"n{e.src} -> n{e.dst};")
    lines.append("}")
    out = subprocess.run([exe, "-Tplain"], input="\n".join(lines), capture_output=True, text=True, check=True).stdout
    polylines: list[list[tuple[float, float]]] = []
    width = 0.0
    for row in out.splitlines():
        f = row.split()
        if f and f[0] == "graph":
            width = float(f[2]) * 72
        elif f and f[0] == "edge":
            n = int(f[3])
            pts = [(float(f[4 + 2 * k]) * 72, float(f[5 + 2 * k]) * 72) for k in range(n)]
            polylines.append(pts)
    return segment_crossings(polylines), width


def _open_time(html: str) -> float | None:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    if not Path(CHROMIUM).exists():
        return None
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        path = Path(tmp) / "report.html"
        path.write_text(html, encoding="utf-8")
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        page = b.new_page(viewport={"width": 1400, "height": 1000})
        t = time.perf_counter()
        page.goto(path.as_uri())
        page.wait_for_load_state("load")
        page.evaluate("document.querySelectorAll('#canvas g').length")  # the drawing is in the DOM
        elapsed = time.perf_counter() - t
        b.close()
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--chain", type=int, default=0, help="also a chain of this many nodes (50000: drawn as clusters)")
    args = ap.parse_args()
    has_dot = shutil.which("dot") is not None
    if not has_dot:
        print("graphviz dot: not installed (apt-get install graphviz); the dot columns are skipped")
    head = f"{'model':<26} {'boxes':>6} {'edges':>6} {'crossings':>10} {'width':>8}"
    head += f" {'dot cross':>10} {'dot width':>10}" if has_dot else ""
    head += f" {'build s':>8} {'open s':>7}"
    print(head)
    for name, model in _models(args.chain):
        d = _drawing(model)
        assert d.layout is not None
        ours = segment_crossings(d.layout.edges)
        row = f"{name:<26} {len(d.nodes):>6} {len(d.edges):>6} {ours:>10} {d.layout.width:>8.0f}"
        if has_dot:
            dot = _dot(d)
            assert dot is not None
            row += f" {dot[0]:>10} {dot[1]:>10.0f}"
        best = float("inf")
        html = ""
        for _ in range(args.repeat):
            t = time.perf_counter()
            html = report(model)
            best = min(best, time.perf_counter() - t)
        opened = _open_time(html)
        row += f" {best:>8.3f} {'-' if opened is None else f'{opened:.3f}':>7}"
        print(row, flush=True)


if __name__ == "__main__":
    main()
