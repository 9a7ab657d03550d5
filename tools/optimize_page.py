"""The optimizer benchmark's page (``docs/optimize-benchmark.md``), rendered from ``benchmarks/results/optimize.json``.

``benchmarks/bench_optimize.py --json benchmarks/results/optimize.json`` writes the results (the tables it prints,
stamped by ``benchmarks/bench_json.py`` with the commit, CPU and date, plus the tools' versions); this renders
them with the page's fixed text around them::

    python tools/optimize_page.py --write    # regenerate the page
    python tools/optimize_page.py --check    # exit 1 when the page is not what the results render

Without an option the page is printed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "optimize.json"
PAGE = ROOT / "docs" / "optimize-benchmark.md"

INTRO = """\
# The optimizer against the simplifiers

`onnxcore.optimize` (`onnxcore optimize IN OUT`) simplifies a model without changing what it computes. This page
measures it against the three simplifiers people run before deploying, each pinned in the `bench` extra and run
with its defaults: [onnxsim](https://github.com/daquexian/onnx-simplifier) (onnx-simplifier),
[onnxslim](https://github.com/inisis/OnnxSlim) and [onnxoptimizer](https://github.com/onnx/optimizer).

**How it is measured** (`benchmarks/bench_optimize.py`):

- each tool optimizes each model in a fresh process; the time is the work (imports excluded), the memory is the
  process's peak resident set (which counts pages of memory-mapped files) and, in brackets, the peak of its
  anonymous memory (what it allocated);
- the results are judged by onnx and onnxruntime, never by onnxcore: `onnx.checker.check_model(full_check=True)`,
  and onnxruntime with its graph optimizations off runs the original and the result on seeded random inputs with
  every dimension variable at the base size, at 1 and at base + 1; outputs agree within rtol 1e-3 and atol 1e-4
  of the output's largest magnitude (at least 1), labels on at least 99 %;
- the onnxruntime time of a result is one thread (`intra_op_num_threads=1`), default graph optimizations, in two
  fresh sessions per variant and variant compared (ten for the original and the four tools), made in an order
  rotated every second session; in each, the variants take turns run by run in an order rotated each round, until
  each has run 1 s over its sessions (at least 5 rounds each); a session's time is its best run, a variant's the
  median of its sessions. A session's placement of its buffers moves its best time by up to a few per cent for
  the whole session (the same graph in eight sessions: 0.97-1.06 of each other on a 1 ms CNN), and so does the
  order sessions are made in (four copies of one file made one after the other, twelve times: the last made 0.9 %
  faster than the first in 10 of the 12). So the best anchor is picked by its odd sessions and compared on the
  even ones, and each half puts every variant at every place of the order once: picked and compared on the same
  sessions, the best of three anchors wins by noise alone, even where its graph is onnxcore's;
- a tool that fails on a model is a cell `fails: <reason>`; a result that computes something else is
  **CHANGED**, one onnx's checker refuses names the **checker**'s message.

The models: the light model zoo of the onnx wheel (with seeded random weights, and two as shipped, whose
weights are `ConstantOfShape` nodes that folding would write out), the corpus of today's exporters
(`benchmarks/corpus_models.py`) and a ~2.5 GiB model (`benchmarks/make_big_model.py`: Gemms of 256 MiB weights,
BatchNorms to fold, identity chains, shape arithmetic and foldable constants), as one file over 2 GiB and with
external data.

The goals (issue 39): never a changed result and never an invalid model; a node count at most the best anchor's
on the median; a file never larger than the original; an onnxruntime time at most the best anchor's on the
median; the 2.5 GiB model optimized in under 1 GiB of memory.

To run it again (45 minutes on two cores: the zoo and the corpus 36, the big model 9; `--quick`: 13 models, 3-6
minutes):

```text
OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_optimize.py \\
    --json benchmarks/results/optimize.json
python tools/optimize_page.py --write
```
"""


FUZZ = """\
## The fuzz campaign

`tests/optimize/test_optimize_fuzz.py` composes random graphs from the ONNX 1-3 node test cases
(`tests/optimize/fuzz_graphs.py`): pieces of one operator set version, joined where element types and shapes
agree, their other inputs made graph inputs, initializers or `Constant` nodes, and baited with what a simplifier
rewrites (`Identity` chains, `Mul` by one, `Add` of zero, a `Transpose` and its inverse, a `Reshape` to its own
shape, a node computed twice). Each graph onnxruntime runs goes through `onnxcore.optimize(verify=True)`; the
result must be verified, accepted by `onnx.checker` (`full_check=True`) and evaluate in onnxruntime to the
original's outputs. A graph the verifier cannot evaluate on its generated inputs (values outside an operator's
domain: nothing is returned, so nothing changes) and one onnxcore's validator refuses are counted, not failed.
The suite runs 40 graphs and the seeds that once failed; the long form is the same test with more:

```text
ONNXCORE_OPT_FUZZ_GRAPHS=5000 ONNXCORE_OPT_FUZZ_SEED=1000 python -m pytest tests/optimize/test_optimize_fuzz.py -s
```
"""


def _table(table: dict[str, Any]) -> list[str]:
    lines = ["| " + " | ".join(table["columns"]) + " |", "|" + "|".join(table["align"]) + "|"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in table["rows"]]
    return lines


def render(data: dict[str, Any] | None) -> str:
    """The page's Markdown for the results ``data`` (None: no run recorded yet)."""
    lines = [INTRO]
    if data is None:
        lines.append("No run is recorded yet (`benchmarks/results/optimize.json` is missing).\n")
        return "\n".join([*lines, FUZZ])
    versions = ", ".join(f"{k} {v}" for k, v in data.get("versions", {}).items())
    lines += [
        "## The last run\n",
        f"`{data['command']}` on the code of commit `{data['commit']}`, {data['cpu']}, {data['date']}"
        + (f", {data['minutes']} minutes" if "minutes" in data else "")
        + ".",
        "",
        f"Versions: {versions}." if versions else "",
        "",
        "### The goals\n",
        *(f"- {note}" for note in data.get("notes", [])),
        "",
    ]
    for table in data.get("tables", []):
        lines += [f"### {table.get('title', '')}\n", *_table(table), ""]
    return "\n".join([*lines, FUZZ])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--results", type=Path, default=RESULTS)
    ap.add_argument("--write", action="store_true", help="write docs/optimize-benchmark.md")
    ap.add_argument("--check", action="store_true", help="exit 1 when the page is stale")
    args = ap.parse_args(argv)
    data = json.loads(args.results.read_text(encoding="utf-8")) if args.results.exists() else None
    page = render(data)
    if args.write:
        PAGE.write_text(page, encoding="utf-8")
    elif args.check:
        if not PAGE.exists() or PAGE.read_text(encoding="utf-8") != page:
            print(f"{PAGE.name} is stale: run python tools/optimize_page.py --write", file=sys.stderr)
            return 1
    else:
        sys.stdout.write(page)
    return 0


if __name__ == "__main__":
    sys.exit(main())
