"""Differential: random graphs of elementwise, shape and reduction operators with constant branches, no-ops and
repeats, optimized and evaluated by onnxruntime on random inputs of several sizes: the same outputs as the original's
(within the conformance tolerance: a value we fold may round differently from onnxruntime's own kernel)."""

from __future__ import annotations

import numpy as np
import pytest
from optimize_models import T, assert_same_by_ort, model, tensor, vi

from onnxcore import helper
from onnxcore.optimizer import optimize

pytest.importorskip("onnxruntime")

_UNARY = ("Relu", "Neg", "Abs", "Sigmoid", "Tanh", "Identity", "Exp")
_BINARY = ("Add", "Mul", "Sub", "Max", "Min")


def _random_model(seed: int) -> object:
    rng = np.random.default_rng(seed)
    inits = [tensor("w0", rng.standard_normal(4).astype(np.float32)), tensor("one", np.array(1.0, np.float32)),
             tensor("zeros", np.zeros(4, np.int64)), tensor("shape", np.array([0, 4], np.int64)),
             tensor("big", np.array([2**63 - 1], np.int64)), tensor("st", np.array([0], np.int64)),
             tensor("ax", np.array([0], np.int64)), tensor("exp", np.array([1, 4], np.int64))]  # fmt: skip
    values = ["X"]  # values of shape [N, 4]
    consts = ["w0"]  # values of shape [4] computed from constants only
    nodes = []
    for k in range(int(rng.integers(6, 14))):
        kind = int(rng.integers(0, 6))
        out = f"v{k}"
        if kind == 0:  # a constant branch
            src = consts[int(rng.integers(len(consts)))]
            nodes.append(helper.make_node(str(rng.choice(_UNARY[:5])), [src], [out]))
            consts.append(out)
            continue
        a = values[int(rng.integers(len(values)))]
        if kind == 1:
            nodes.append(helper.make_node(str(rng.choice(_UNARY)), [a], [out]))
        elif kind == 2:
            b = (values + consts)[int(rng.integers(len(values) + len(consts)))]
            nodes.append(helper.make_node(str(rng.choice(_BINARY)), [a, b], [out]))
        elif kind == 3:  # a no-op the shapes prove, or one they do not
            op = int(rng.integers(0, 4))
            if op == 0:
                nodes.append(helper.make_node("Mul", [a, "one"], [out]))
            elif op == 1:
                nodes.append(helper.make_node("Reshape", [a, "shape"], [out]))
            elif op == 2:
                nodes.append(helper.make_node("Slice", [a, "st", "big", "ax"], [out]))
            else:
                nodes.append(helper.make_node("Expand", [a, "exp"], [out]))
        elif kind == 4:  # a repeat of an earlier node
            if not nodes:
                continue
            prev = nodes[int(rng.integers(len(nodes)))]
            if not all(i in values or i in consts or i in [t.name for t in inits] for i in prev.input):
                continue
            nodes.append(helper.make_node(prev.op_type, list(prev.input), [out], **{
                a_.name: helper.get_attribute_value(a_) for a_ in prev.attribute}))  # fmt: skip
            (consts if prev.output[0] in consts else values).append(out)
            continue
        else:
            nodes.append(helper.make_node("Pad", [a, "zeros"], [out]))
        values.append(out)
    last = values[-1] if len(values) > 1 else "X"
    nodes.append(helper.make_node("Add", [last, consts[-1]], ["Y"]))
    nodes.append(helper.make_node("ReduceSum", [values[len(values) // 2]], ["Z"], keepdims=1))
    return model(nodes, [vi("X", T.FLOAT, ["N", 4])], [vi("Y", T.FLOAT, ["N", 4]), vi("Z", T.FLOAT, [1, 1])], inits)


@pytest.mark.parametrize("seed", range(25))
def test_optimized_random_graphs_compute_what_the_originals_compute(seed: int) -> None:
    m = _random_model(seed)
    out, rep = optimize(m)
    assert rep.verified
    assert rep.nodes_after <= rep.nodes_before
    for n in (1, 2, 5):
        x = {"X": np.random.default_rng(seed + n).standard_normal((n, 4)).astype(np.float32)}
        assert_same_by_ort(m, out, x)
