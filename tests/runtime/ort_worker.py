"""onnxruntime in a separate process, for differential fuzzing.

A mutated model can make onnxruntime abort (a C++ assertion was seen), which would end the test run with it; in a
child process an abort is one lost case. The child is started with ``spawn`` (no copy of the parent's threads).
"""

from __future__ import annotations

import multiprocessing as mp
import os
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

import numpy as np

Outcome = tuple[bool, str, list[Any] | None]


def _run(model: bytes, feeds: dict[str, np.ndarray]) -> Outcome:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import onnxruntime as ort

    ort.set_default_logger_severity(4)
    try:
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        so.inter_op_num_threads = 1
        so.log_severity_level = 4
        out = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"]).run(None, feeds)
        return True, "", [x if isinstance(x, list) else np.asarray(x) for x in out]
    except Exception as e:  # onnxruntime's refusal, whatever its kind
        return False, str(e).replace("\n", " ")[:300], None


class OrtWorker:
    """Runs models in one child process, replaced when it dies or hangs."""

    def __init__(self, timeout: float = 20.0) -> None:
        self.timeout = timeout
        self.crashes = 0
        self._pool: ProcessPoolExecutor | None = None

    def _executor(self) -> ProcessPoolExecutor:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context("spawn"))
        return self._pool

    def run(self, model: bytes, feeds: dict[str, np.ndarray]) -> Outcome:
        """(ran, onnxruntime's message, outputs); a crash or a hang is a refusal named so."""
        try:
            return self._executor().submit(_run, model, feeds).result(timeout=self.timeout)
        except (BrokenProcessPool, TimeoutError) as e:
            self.crashes += 1
            self.close()
            return False, f"onnxruntime process lost: {type(e).__name__}", None

    def close(self) -> None:
        if self._pool is not None:
            for p in list(getattr(self._pool, "_processes", {}).values()):
                p.kill()
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
