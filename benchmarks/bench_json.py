"""The benchmarks' ``--json FILE`` output: the tables they print, stamped with where they were measured.

A file holds the benchmark's name, the command line, the commit (``git describe``-style short hash, ``+`` when
the tree had uncommitted changes), the CPU, the date, the tables (columns, alignment, rows of cells as printed)
and the summary lines. ``tools/performance_page.py`` renders the performance page from such files kept in
``benchmarks/results/``.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _git(*args: str) -> str:
    try:
        out = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return ""
    return out.stdout.strip()


FORCING_BLAS_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
"""Variables some machines set to force OpenBLAS's choice of kernels and its idea of the L2 cache."""

UNSET_NOTE_VAR = "ONNXCORE_BENCH_BLAS_UNSET"
"""Where :func:`unforce_blas` leaves what it unset, for the child processes' reports."""


def unforce_blas() -> str:
    """Unset :data:`FORCING_BLAS_VARS` in this process's environment, which its child processes inherit.

    A machine may force OpenBLAS onto an older core's kernels than its CPU has (seen: ``OPENBLAS_CORETYPE=Haswell``
    on an AVX-512 AMD EPYC, where numpy's float32 products then ran at 55-60 % of the speed of the kernels OpenBLAS
    picks itself), while onnxruntime's MLAS picks its kernels by the CPU regardless: the comparison would then
    measure the variable. Unset, each engine's library chooses by the CPU, as on a machine that sets nothing. Must
    run before numpy is imported in the process that times (the standards let a benchmark unset both for its own
    processes and say so: the returned text says what was unset, "" when nothing was).
    """
    unset = [f"{v}={os.environ.pop(v)}" for v in FORCING_BLAS_VARS if v in os.environ]
    note = " and ".join(unset)
    if note:
        os.environ[UNSET_NOTE_VAR] = note
    return note


def cpu_name() -> str:
    """The CPU's model name and the cores this process may use."""
    name = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{name} ({cores} cores), {platform.system()}"


def stamp(benchmark: str) -> dict[str, Any]:
    """Where and when a run was made."""
    commit = _git("rev-parse", "--short", "HEAD")
    if commit and _git("status", "--porcelain", "--untracked-files=no"):
        commit += "+"
    return {
        "benchmark": benchmark,
        "command": "python " + " ".join([f"benchmarks/{benchmark}", *sys.argv[1:]]),
        "commit": commit or "unknown",
        "cpu": cpu_name(),
        "date": datetime.date.today().isoformat(),
    }


class Recorder:
    """Collects the tables a benchmark prints, and writes them as JSON when given a path."""

    def __init__(self, path: Path | None, benchmark: str) -> None:
        self.path = path
        self.data: dict[str, Any] = {**stamp(benchmark), "tables": [], "notes": []}

    def table(self, columns: list[str], align: list[str]) -> str:
        """Start a table; its Markdown header, to print."""
        self.data["tables"].append({"columns": columns, "align": align, "rows": []})
        return "| " + " | ".join(columns) + " |\n|" + "|".join(align) + "|"

    def row(self, cells: list[str]) -> str:
        """Record a row of the current table; its Markdown line, to print."""
        self.data["tables"][-1]["rows"].append(cells)
        return "| " + " | ".join(cells) + " |"

    def note(self, text: str) -> str:
        self.data["notes"].append(text.strip())
        return text

    def write(self) -> None:
        if self.path is not None:
            self.path.write_text(json.dumps(self.data, indent=1) + "\n", encoding="utf-8")
