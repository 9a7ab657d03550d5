"""Building models in code: composing models (:mod:`onnxcore.build.compose`)."""

from __future__ import annotations

from onnxcore.build.compose import (
    CompositionError,
    add_prefix,
    add_prefix_graph,
    check_overlapping_names,
    merge_graphs,
    merge_models,
)

__all__ = [
    "CompositionError",
    "add_prefix",
    "add_prefix_graph",
    "check_overlapping_names",
    "merge_graphs",
    "merge_models",
]
