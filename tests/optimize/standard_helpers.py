"""A model through the standard rewrites and back, for the tests of ``runtime/optimize/standard``.

The model pipeline (``onnxcore.optimize``) turns a model into a plan graph and back; these tests need only its
top-level graph: the nodes bound as a session binds them, the rewrites applied with their declared conditions
checked, and the nodes written back as a model that onnxruntime and onnxcore evaluate.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import numpy as np
import onnx
import onnxruntime as ort

import onnxcore
from onnxcore.graph.bound import bind
from onnxcore.proto import ModelProto
from onnxcore.runtime.compile import CompileEnv, compile_graph
from onnxcore.runtime.optimize.fold import FOLD_BUDGET_BYTES
from onnxcore.runtime.optimize.graph import PlanGraph
from onnxcore.runtime.optimize.pipeline import PIPELINE, Rewrite, check_conditions
from onnxcore.runtime.optimize.standard.facts import graph_facts
from onnxcore.types import from_array


def plan_graph(model: ModelProto) -> PlanGraph:
    """The top-level graph of ``model`` as a plan graph with its facts (initializers not fed are constants)."""
    bound = bind(model)
    main = bound.main()
    assert model.graph is not None and main is not None
    env = CompileEnv(bound, None, np.random.default_rng(0), validated=True)
    ir = compile_graph(env, model.graph, main)
    inputs = {vi.name for vi in model.graph.input}
    return PlanGraph(
        ir.nodes,
        {n: v for n, v in ir.inits.items() if n not in inputs},
        ir.output_names,
        sources=ir.input_names,
        facts=graph_facts(model, bound=bound),
        budget=FOLD_BUDGET_BYTES,
    )


FOLD = next(r for r in PIPELINE if r.name == "fold_constants")
"""The plan's constant folding, run first on exported models (their constants are Constant nodes), as the model
pipeline folds before the structural rewrites."""


def apply(rewrites: Sequence[Rewrite], graph: PlanGraph) -> list[str]:
    """Apply ``rewrites`` in order with their conditions checked; the names of those that fired."""
    fired = []
    with check_conditions():
        for r in rewrites:
            before = {id(bn) for bn in graph.nodes}
            if r.apply(graph):
                fired.append(r.name)
            for bn in graph.nodes:
                if id(bn) not in before and r.name != "fold_constants":
                    # Standard in, standard out: each node made is a standard operator, bound, not a fused step.
                    assert bn.node.domain in ("", "ai.onnx.ml") and bn.call is not None and not bn.step_kernel, r.name
    return fired


def to_model(graph: PlanGraph, original: ModelProto) -> ModelProto:
    """``original`` with its top-level graph's nodes and initializers those of ``graph`` (initializers nothing
    reads any more left out)."""
    m = copy.deepcopy(original)
    g = m.graph
    assert g is not None
    nodes = []
    for bn in graph.nodes:
        n = copy.copy(bn.node)
        n.input, n.output = list(bn.inputs), list(bn.outputs)
        nodes.append(n)
    read = {n for bn in graph.nodes for n in (*bn.inputs, *bn.outer)} | set(graph.outputs)
    inputs = {vi.name for vi in g.input}
    kept = [t for t in g.initializer if t.name in read or t.name in inputs]
    have = {t.name for t in kept}
    kept += [from_array(np.asarray(v), name) for name, v in graph.added.items() if name in read and name not in have]
    g.node = type(g.node)(nodes)
    g.initializer = type(g.initializer)(kept)
    g.value_info = type(g.value_info)([])
    return m


def to_onnx_bytes(model: ModelProto) -> bytes:
    return onnxcore.encode(model)


def run_both(model_bytes: bytes, feeds: dict[str, np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(onnxruntime's outputs, onnxcore's outputs) of a serialised model, one thread each."""
    onnx.checker.check_model(onnx.load_from_string(model_bytes))
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model_bytes, so, providers=["CPUExecutionProvider"])
    ours = onnxcore.Session(model_bytes).run(None, feeds)
    return sess.run(None, feeds), ours


RTOL, ATOL = 1e-3, 1e-5
"""The comparison: the conformance rtol (1e-3); atol 1e-5 for the rounding of float32 sums in another order."""


def ort_run(model_bytes: bytes, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model_bytes, so, providers=["CPUExecutionProvider"]).run(None, feeds)


def rewrite(m: onnx.ModelProto, rewrites: Sequence[Rewrite]) -> tuple[onnx.ModelProto, list[str]]:
    """``m`` through ``rewrites`` (conditions checked): the rewritten model, checked by onnx, and what fired."""
    model = onnxcore.load(m.SerializeToString())
    graph = plan_graph(model)
    fired = apply(rewrites, graph)
    out = onnx.load_from_string(to_onnx_bytes(to_model(graph, model)))
    onnx.checker.check_model(out)
    return out, fired


def rewrite_and_compare(
    m: onnx.ModelProto, feeds_list: Sequence[dict[str, np.ndarray]], rewrites: Sequence[Rewrite]
) -> tuple[onnx.ModelProto, list[str]]:
    """``m`` rewritten, its outputs by onnxruntime and by onnxcore equal to onnxruntime's on the original for
    every feed (RTOL, ATOL); the rewritten model and the rewrites that fired."""
    out, fired = rewrite(m, rewrites)
    original, rewritten = m.SerializeToString(), out.SerializeToString()
    for feeds in feeds_list:
        expected = ort_run(original, feeds)
        by_ort, ours = run_both(rewritten, feeds)
        for e, a, b in zip(expected, by_ort, ours):
            np.testing.assert_allclose(a, e, rtol=RTOL, atol=ATOL)
            np.testing.assert_allclose(b, e, rtol=RTOL, atol=ATOL)
    return out, fired


def ops(m: onnx.ModelProto) -> list[str]:
    return [n.op_type for n in m.graph.node]
