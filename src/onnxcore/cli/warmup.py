"""``onnxcore warmup``: pay a model's one-time costs ahead, and say what they were (issue 42, item 3).

A model's first run in a process loads what its plan needs; with the accelerator (the ``accel`` extra), the first
call of each compiled loop also loads it from numba's on-disk cache, or compiles it for this machine when the cache
does not hold it (seconds per loop family). This command builds a session of each model and runs it twice on
inputs of the declared shapes, so that the cache is filled where the model will run (a container's build step, a
deployment's first step); it prints the time of each phase. A later process still imports numba and reads the
cache (well under a second), but compiles nothing.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import onnxcore
from onnxcore.cli.files import CliError, require_readable
from onnxcore.errors import OnnxCoreError
from onnxcore.kernels.shared import accelerator_status
from onnxcore.reporting import random_feeds

__all__ = ["cmd_warmup"]


def _one(path: str) -> dict[str, Any]:
    started = time.perf_counter()
    session = onnxcore.Session(path)
    made = time.perf_counter()
    feeds = random_feeds(session)
    fed = time.perf_counter()
    session.run(None, feeds)
    first = time.perf_counter()
    session.run(None, feeds)
    second = time.perf_counter()
    return {
        "model": path,
        "session_s": made - started,
        "first_run_s": first - fed,
        "second_run_s": second - first,
    }


def cmd_warmup(args: argparse.Namespace) -> int:
    """Build a session of each model and run it twice on inputs of its declared shapes; print the times."""
    for path in args.model:
        require_readable(path)
    rows = []
    for path in args.model:
        try:
            rows.append(_one(path))
        except OnnxCoreError as e:
            # The model named (several may be given), the exit code the error has (1: a corrupt or invalid model).
            text = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise CliError(f"{path}: {text}", getattr(e, "code", 1)) from None
    state, cache = accelerator_status()
    doc = {"models": rows, "accelerator": state, "numba_cache": cache}
    if args.json:
        print(json.dumps(doc, indent=1))
        return 0
    for r in rows:
        print(
            f"{r['model']}: session {r['session_s'] * 1e3:.0f} ms, first run {r['first_run_s'] * 1e3:.1f} ms, "
            f"second run {r['second_run_s'] * 1e3:.1f} ms"
        )
    if state == "loaded":
        print(f"accelerator: the compiled loops these models use are cached in {cache or 'numba cache directory'}")
    elif state == "installed":
        print("accelerator: installed, not used by these models (nothing to compile)")
    else:
        print("accelerator: off (numba is not installed, or ONNXCORE_ACCEL=0): nothing to compile")
    return 0
