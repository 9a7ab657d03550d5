"""The model's octets on every worker of a ``dask.distributed`` cluster, sent once per worker.

A task that depended on a scattered future would have the octets fetched to its worker before it runs, again
whenever the cluster's memory manager dropped that replica (between runs), and the graph would have to keep the
future alive. Instead the octets ride in a worker plugin: the scheduler keeps one copy and gives it to each
worker as it joins, a worker the nanny restarts after a crash included; tasks carry only the model's hash.
"""

from __future__ import annotations

from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin

from onnxcore.dask.sessions import install

__all__ = ["ModelPlugin", "plugin_name"]


def plugin_name(key: str) -> str:
    """The plugin's name for a model hash: registering a model twice replaces the plugin, never doubles it."""
    return f"onnxcore-model-{key[:32]}"


class ModelPlugin(WorkerPlugin):
    """Installs a model's octets in each worker process (:func:`onnxcore.dask.sessions.install`).

    Idempotent: registering the same model again (another ``run`` call) leaves the workers alone.
    """

    idempotent = True

    def __init__(self, key: str, data: bytes) -> None:
        self.key = key
        self.data = data

    def setup(self, worker: Any) -> None:
        """Called by distributed on each worker, now and when one joins."""
        install(self.key, self.data)
