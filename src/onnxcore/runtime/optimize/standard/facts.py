"""The facts of a model's top-level graph a standard rewrite reads (:class:`GraphFacts`), from one inference walk."""

from __future__ import annotations

from onnxcore.defs.binding import canonical_domain
from onnxcore.graph.bound import BoundModel
from onnxcore.infer import infer_both
from onnxcore.proto import ModelProto
from onnxcore.runtime.optimize.graph import GraphFacts

__all__ = ["graph_facts"]


def graph_facts(model: ModelProto, *, bound: BoundModel | None = None, path: str = "graph") -> GraphFacts:
    """The imports, model-local functions, element types and shapes (Clause 9: declared and inferred, dimension
    variables kept by name) of one graph of ``model``.

    Args:
        model: The model (onnxcore's ``ModelProto``).
        bound: The model bound by :func:`onnxcore.graph.bind`, used as is; bound here when None.
        path: The graph, as inference names it (:mod:`onnxcore.infer`): ``"graph"`` for the top-level graph, a
            subgraph by its node's location and attribute (``'graph/node[3] "loop1"/body'``).
    """
    types, shapes = infer_both(model, bound=bound)
    elem_types: dict[str, int] = {}
    for name, tp in types.types().get(path, {}).items():
        tt = tp.tensor_type
        if tt is not None and tt.elem_type:
            elem_types[name] = int(tt.elem_type)
    return GraphFacts(
        opsets={canonical_domain(o.domain): int(o.version) for o in model.opset_import},
        functions=frozenset((canonical_domain(f.domain), f.name) for f in model.functions),
        elem_types=elem_types,
        shapes=dict(shapes.shapes.get(path, {})),
    )
