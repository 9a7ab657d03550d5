"""``onnx.compose``: :mod:`onnxcore.build.compose` and the output-dimension edits of
:mod:`onnxcore.build.interface` under onnx's module name (re-exports only)."""

from __future__ import annotations

from onnxcore.build.compose import (
    add_prefix,
    add_prefix_graph,
    check_overlapping_names,
    merge_graphs,
    merge_models,
)
from onnxcore.build.interface import expand_out_dim, expand_out_dim_graph

__all__ = [
    "add_prefix",
    "add_prefix_graph",
    "check_overlapping_names",
    "expand_out_dim",
    "expand_out_dim_graph",
    "merge_graphs",
    "merge_models",
]
