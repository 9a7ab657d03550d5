"""STANDARD_REWRITES as a whole (runtime/optimize/standard/__init__.py): names of their own, the model's conditions,
nothing done without the graph's facts (a session's plan), and each made node a standard operator bound at the
model's opset (checked for every rewrite by standard_helpers.apply)."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh
from standard_helpers import plan_graph

import onnxcore
from onnxcore.runtime.optimize.pipeline import AS_WRITTEN, BOUND, CLOSED, REWRITE_NAMES
from onnxcore.runtime.optimize.standard import STANDARD_REWRITES


def test_names_are_their_own_and_conditions_are_the_models() -> None:
    names = [r.name for r in STANDARD_REWRITES]
    assert len(set(names)) == len(names) and not set(names) & REWRITE_NAMES
    for r in STANDARD_REWRITES:
        # A model may hold an operator no kernel evaluates: every node bound is not required.
        assert BOUND not in r.requires and set(r.requires) == set(r.ensures) == {CLOSED, AS_WRITTEN}


def test_without_facts_nothing_fires() -> None:
    # A session's plan graph has no facts: the same graph a model pipeline would rewrite stays as it is.
    w = nh.from_array(np.ones((4, 2, 1, 1), np.float32), "W")
    inits = [w] + [nh.from_array(np.full(4, v, np.float32), n) for n, v in (("s", 2), ("b", 1), ("m", 0), ("v", 1))]
    nodes = [h.make_node("Conv", ["x", "W"], ["c"]),
             h.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["y"]),
             h.make_node("Transpose", ["y"], ["t"], perm=[0, 2, 3, 1]),
             h.make_node("Transpose", ["t"], ["z"], perm=[0, 3, 1, 2])]  # fmt: skip
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", TP.FLOAT, ["N", 2, 3, 3])],
                     [h.make_tensor_value_info("z", TP.FLOAT, ["N", 4, 3, 3])], inits)  # fmt: skip
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    graph = plan_graph(onnxcore.load(m.SerializeToString()))
    with_facts = [r.name for r in STANDARD_REWRITES if r.run(graph) != graph.nodes]
    assert with_facts == ["fold_batchnorm", "merge_layout_ops"]
    graph = plan_graph(onnxcore.load(m.SerializeToString()))
    graph.facts = None
    assert all(r.run(graph) == graph.nodes for r in STANDARD_REWRITES) and not graph.added
