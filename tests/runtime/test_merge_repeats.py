"""Common-subexpression elimination as a rewrite of the declared pipeline (issue 37; Clause 8.2): ``merge_repeats``
fires, is switched off by name, keeps a repeated graph output or a name a subgraph reads as an alias of the
earlier value, and the pipeline's conditions hold with aliases."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnxruntime as ort
from onnx import TensorProto as TP
from onnx import helper as h

import onnxcore
from onnxcore.kernels.registry import kernel
from onnxcore.runtime.optimize.pipeline import PIPELINE, check_conditions

DOMAIN = "test.onnxcore.merge_repeats"
CALLS = {"n": 0}


@kernel("CountedExp", 1, domain=DOMAIN)
def _counted_exp(x: np.ndarray) -> np.ndarray:
    CALLS["n"] += 1
    return np.exp(x)


def _model(nodes: list[Any], outputs: list[str], *, custom: bool = True) -> bytes:
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", TP.FLOAT, [2, 3])],
        [h.make_tensor_value_info(o, TP.FLOAT, [2, 3]) for o in outputs],
    )
    imports = [h.make_opsetid("", 18)] + ([h.make_opsetid(DOMAIN, 1)] if custom else [])
    return bytes(h.make_model(g, opset_imports=imports, ir_version=9).SerializeToString())


X = np.arange(6, dtype=np.float32).reshape(2, 3) / 7


def test_it_follows_every_fusion_and_precedes_the_joins_that_need_it() -> None:
    # Last but for join_forests, which joins tree ensembles reading one value once their repeated inputs (an
    # isolation forest's Gather per tree) are merged, and stack_lanes, whose sibling chains read the joined forests'
    # outputs and whose lanes would otherwise include repeats; neither makes a repeat for it to merge. Then only
    # prepare_with_constants, which binds the nodes left as they are to steps prepared with their constants (a
    # prepared step is a new callable per node: merge_repeats would not see two of them as repeats).
    names = [r.name for r in PIPELINE]
    assert names[-4:] == ["merge_repeats", "join_forests", "stack_lanes", "prepare_with_constants"]
    assert PIPELINE[-4].level == 1


def test_repeats_evaluated_once_and_named_as_fired() -> None:
    nodes = [
        h.make_node("CountedExp", ["x"], ["a"], domain=DOMAIN),
        h.make_node("CountedExp", ["x"], ["b"], domain=DOMAIN),
        h.make_node("Sub", ["a", "b"], ["y"]),
    ]
    model = _model(nodes, ["y"])
    s = onnxcore.Session(model)
    assert "merge_repeats" in s.fired_rewrites()
    before = CALLS["n"]
    (y,) = s.run(None, {"x": X})
    assert CALLS["n"] - before == 1
    np.testing.assert_array_equal(y, np.zeros_like(X))
    off = onnxcore.Session(model, disabled_rewrites=["merge_repeats"])
    assert "merge_repeats" not in off.fired_rewrites()
    before = CALLS["n"]
    off.run(None, {"x": X})
    assert CALLS["n"] - before == 2


def test_repeated_graph_outputs_are_aliases_of_one_value() -> None:
    """Two outputs computed alike (and a third reading the repeat): one evaluation, every output as onnxruntime's."""
    nodes = [
        h.make_node("Exp", ["x"], ["y1"]),
        h.make_node("Exp", ["x"], ["y2"]),
        h.make_node("Neg", ["y2"], ["y3"]),
    ]
    model = _model(nodes, ["y1", "y2", "y3"], custom=False)
    with check_conditions():  # CLOSED holds with the alias (y2 made with y1)
        s = onnxcore.Session(model)
    assert s._plan.fired.count("merge_repeats") == 1
    assert [bn.node.op_type for bn in s._plan.info] == ["Exp", "Neg"]
    got = s.run(None, {"x": X})
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": X})
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)  # exp within an ulp of onnxruntime's (Clause 11.4)
    np.testing.assert_array_equal(got[0], got[1])  # one value under two names


def test_a_repeat_a_subgraph_reads_stays_readable_by_its_name() -> None:
    """``b`` repeats ``a`` and an If branch reads ``b`` from the enclosing scope: the branch still finds it."""
    then = h.make_graph([h.make_node("Neg", ["b"], ["t"])], "then", [], [h.make_tensor_value_info("t", TP.FLOAT, None)])
    other = h.make_graph(
        [h.make_node("Abs", ["a"], ["e"])], "else", [], [h.make_tensor_value_info("e", TP.FLOAT, None)]
    )
    nodes = [
        h.make_node("Exp", ["x"], ["a"]),
        h.make_node("Exp", ["x"], ["b"]),
        h.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
        h.make_node("Greater", ["s", "zero"], ["c"]),
        h.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other),
    ]
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", TP.FLOAT, [2, 3])],
        [h.make_tensor_value_info("y", TP.FLOAT, [2, 3])],
        [h.make_tensor("zero", TP.FLOAT, [], [0.0])],
    )
    model = bytes(h.make_model(g, opset_imports=[h.make_opsetid("", 18)], ir_version=9).SerializeToString())
    with check_conditions():
        s = onnxcore.Session(model)
    assert "merge_repeats" in s.fired_rewrites()
    assert [bn.node.op_type for bn in s._plan.info].count("Exp") == 1
    ref = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    for x in (X, -X - 1):
        np.testing.assert_allclose(s.run(None, {"x": x})[0], ref.run(None, {"x": x})[0], rtol=1e-6)
