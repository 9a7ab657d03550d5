"""Building models in code: ``onnx.helper``'s functions (:mod:`onnxcore.build.helper`), the least IR version
(:mod:`onnxcore.build.ir_version`), a graph builder (:mod:`onnxcore.build.builder`) and composition
(:mod:`onnxcore.build.compose`, onnx.compose's API).

A plain re-export list, one line a name, so the modules added beside these merge without conflict.
"""

from __future__ import annotations

from onnxcore.build import helper
from onnxcore.build.builder import BuildError, GraphBuilder, OpFunction, Opset
from onnxcore.build.builder_nodes import Value
from onnxcore.build.compose import (
    CompositionError,
    add_prefix,
    add_prefix_graph,
    check_overlapping_names,
    merge_graphs,
    merge_models,
)
from onnxcore.build.helper import AttributeTypeError, HelperError
from onnxcore.build.ir_version import least_ir_version

__all__ = [
    "BuildError",
    "GraphBuilder",
    "OpFunction",
    "Opset",
    "Value",
    "AttributeTypeError",
    "CompositionError",
    "HelperError",
    "add_prefix",
    "add_prefix_graph",
    "check_overlapping_names",
    "helper",
    "least_ir_version",
    "merge_graphs",
    "merge_models",
]
