"""Batch evaluation on Dask (``pip install 'onnxcore[dask]'``): arrays, data frames, Parquet.

``run(model, inputs)`` evaluates a model over Dask arrays or a Dask data frame, lazily, one task per
partition; each worker process builds one :class:`onnxcore.Session` per model (keyed by the model's
canonical hash) and reuses it, and the model travels once. ``onnxcore batch`` (:mod:`onnxcore.dask.batch`)
scores a Parquet table or ``.npy`` arrays into a file that appears only when complete.

This package imports dask, pandas and pyarrow; ``import onnxcore`` never imports it.
"""

from __future__ import annotations

from onnxcore.dask.apply import run
from onnxcore.dask.sessions import ModelRef, built_sessions, clear_sessions, model_hash, session_for

__all__ = ["ModelRef", "built_sessions", "clear_sessions", "model_hash", "run", "session_for"]
