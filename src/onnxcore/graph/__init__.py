"""The bound model (Clauses 5.4, 7.4, 8.4, 14.3): scopes, node binding, typed attributes, function bodies.

:func:`bind` builds a :class:`BoundModel` once; validation, inference and evaluation consume it. The layer
sits above the operator definitions (:mod:`onnxcore.defs`) and below every pass.
"""

from __future__ import annotations

from onnxcore.graph.bound import (
    BoundModel,
    Definitions,
    NodeRef,
    Scope,
    bind,
    definition_binding,
    function_location,
    function_opsets,
    node_location,
)
from onnxcore.graph.walk import walk_scopes

__all__ = [
    "BoundModel",
    "Definitions",
    "NodeRef",
    "Scope",
    "bind",
    "definition_binding",
    "function_location",
    "function_opsets",
    "node_location",
    "walk_scopes",
]
