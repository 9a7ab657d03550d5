"""``onnx.compose``: :mod:`onnxcore.build.compose` and the output-dimension edits of
:mod:`onnxcore.build.interface` under onnx's module name.

The composition functions are ours; the adapters here only give what they return protobuf's ``add`` on every
repeated message field (:func:`onnxcore.proto.message.adopt_lists`), as an onnx script expects.
"""

from __future__ import annotations

from typing import Any

from onnxcore.build import compose as _compose
from onnxcore.build.compose import check_overlapping_names
from onnxcore.build.interface import expand_out_dim, expand_out_dim_graph
from onnxcore.proto.message import adopt_lists
from onnxcore.proto.messages import GraphProto, ModelProto

__all__ = [
    "add_prefix",
    "add_prefix_graph",
    "check_overlapping_names",
    "expand_out_dim",
    "expand_out_dim_graph",
    "merge_graphs",
    "merge_models",
]


def add_prefix(model: ModelProto | Any, prefix: str, *args: Any, **kwargs: Any) -> ModelProto:
    """:func:`onnxcore.build.compose.add_prefix` (onnx's ``compose.add_prefix``)."""
    return adopt_lists(_compose.add_prefix(model, prefix, *args, **kwargs))


def add_prefix_graph(graph: GraphProto | Any, prefix: str, *args: Any, **kwargs: Any) -> GraphProto:
    """:func:`onnxcore.build.compose.add_prefix_graph` (onnx's ``compose.add_prefix_graph``)."""
    return adopt_lists(_compose.add_prefix_graph(graph, prefix, *args, **kwargs))


def merge_graphs(g1: GraphProto | Any, g2: GraphProto | Any, io_map: Any, *args: Any, **kwargs: Any) -> GraphProto:
    """:func:`onnxcore.build.compose.merge_graphs` (onnx's ``compose.merge_graphs``)."""
    return adopt_lists(_compose.merge_graphs(g1, g2, io_map, *args, **kwargs))


def merge_models(m1: ModelProto | Any, m2: ModelProto | Any, io_map: Any, *args: Any, **kwargs: Any) -> ModelProto:
    """:func:`onnxcore.build.compose.merge_models` (onnx's ``compose.merge_models``)."""
    return adopt_lists(_compose.merge_models(m1, m2, io_map, *args, **kwargs))
