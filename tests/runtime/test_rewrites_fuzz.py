"""Random graphs through the plan-time rewrites (Clause 8.2): the result never changes.

Each example is a random DAG over NCHW float32 values built from the operators the rewrites of
``runtime/optimize/`` look for (Conv with and without bias, BatchNormalization, Mul and Add by constants,
Add and Sum of two values, Relu, AveragePool and MaxPool that keep the size, Concat along channels, and
repeats of an earlier node, which are evaluated once),
wired at random, so a value may have several readers and an intermediate value may be a graph output: the
cases where a fusion must not apply. The session's outputs are compared with onnxruntime and with the
node-by-node run (``intermediates=True``, every node as written).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import onnxcore

ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto as TP  # noqa: E402
from onnx import helper as h  # noqa: E402

_OPS = ("conv", "bn", "mul", "add_const", "add", "sum", "relu", "avgpool", "maxpool", "concat", "repeat")
# Sequences the rewrites look for, added as a unit (their first node still reads a random value): an
# AveragePool then a narrowing 1x1 Conv (reorder), a Conv then per-channel steps then Relu (fuse), an optional
# Concat then BatchNormalization, Relu and a 1x1 Conv (preactivation).
_MOTIFS = {
    "pool_projection": ("avgpool", "conv1_narrow", "relu?"),
    "conv_chain": ("conv", "bn", "mul?", "add_const?", "relu"),
    "preactivated": ("concat?", "bn", "relu", "conv1"),
}


class _Builder:
    """Grows a graph one random node at a time; every value is (name, channels)."""

    def __init__(self, draw: Any, channels: int, hw: int) -> None:
        self.draw = draw
        self.rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        self.hw = hw
        self.values: list[tuple[str, int]] = [("x", channels)]
        self.nodes: list[Any] = []
        self.inits: list[Any] = []

    def const(self, shape: tuple[int, ...], *, low: float | None = None) -> str:
        name = f"k{len(self.inits)}"
        if low is None:
            data = self.rng.standard_normal(shape)
        else:
            data = self.rng.uniform(low, low + 1.0, shape)
        self.inits.append(h.make_tensor(name, TP.FLOAT, list(shape), data.astype(np.float32).ravel()))
        return name

    def pick(self, channels: int | None = None) -> tuple[str, int]:
        pool = [v for v in self.values if channels is None or v[1] == channels]
        # Mostly the newest value, so that chains form (what the fusions look for); else any earlier one.
        if self.draw(st.integers(0, 3)):
            return pool[-1]
        return pool[self.draw(st.integers(0, len(pool) - 1))]

    def add(self, op: str) -> None:
        if op in _MOTIFS:
            for step in _MOTIFS[op]:
                if not step.endswith("?") or self.draw(st.booleans()):
                    self.add(step.rstrip("?"))
            return
        out = f"v{len(self.nodes)}"
        if op == "repeat" and self.nodes:
            # The same computation again (same operator, inputs and attributes): evaluated once, read twice.
            k = self.draw(st.integers(0, len(self.nodes) - 1))
            node = self.nodes[k]
            self.nodes.append(h.make_node(node.op_type, list(node.input), [out]))
            self.nodes[-1].attribute.extend(node.attribute)
            self.values.append((out, self.values[k + 1][1]))
            return
        src, c = self.pick()
        kind = {"channels": c}
        if op.startswith("conv"):
            narrow = max(1, c // 2)
            m = narrow if op == "conv1_narrow" else self.draw(st.sampled_from([narrow, c, 2 * c]))
            k = 1 if op.startswith("conv1") else self.draw(st.sampled_from([1, 3]))
            w = self.const((m, c, k, k))
            ins = [src, w] + ([self.const((m,))] if self.draw(st.booleans()) else [])
            self.nodes.append(h.make_node("Conv", ins, [out], pads=[k // 2] * 4))
            kind["channels"] = m
        elif op == "bn":
            ins = [src, self.const((c,), low=0.5), self.const((c,)), self.const((c,)), self.const((c,), low=0.5)]
            self.nodes.append(h.make_node("BatchNormalization", ins, [out]))
        elif op in ("mul", "add_const"):
            shape = self.draw(st.sampled_from([(1, c, 1, 1), (c, 1, 1), (1,), (1, 1, self.hw, 1)]))
            operand = self.const(shape, low=0.5 if op == "mul" else None)
            ins = [src, operand] if self.draw(st.booleans()) else [operand, src]
            self.nodes.append(h.make_node("Mul" if op == "mul" else "Add", ins, [out]))
        elif op in ("add", "sum", "repeat"):
            other, _ = self.pick(c)
            self.nodes.append(h.make_node("Add" if op == "add" else "Sum", [src, other], [out]))
        elif op == "relu":
            self.nodes.append(h.make_node("Relu", [src], [out]))
        elif op in ("avgpool", "maxpool"):
            attrs: dict[str, Any] = {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}
            if op == "avgpool":
                attrs["count_include_pad"] = self.draw(st.integers(0, 1))
            self.nodes.append(h.make_node("AveragePool" if op == "avgpool" else "MaxPool", [src], [out], **attrs))
        else:
            other, c2 = self.pick()
            self.nodes.append(h.make_node("Concat", [src, other], [out], axis=1))
            kind["channels"] = c + c2
        self.values.append((out, kind["channels"]))


@st.composite
def _graphs(draw: Any) -> tuple[bytes, dict[str, np.ndarray], list[str]]:
    channels = draw(st.sampled_from([2, 4, 8]))
    hw = draw(st.integers(3, 9))
    b = _Builder(draw, channels, hw)
    for op in draw(st.lists(st.sampled_from(_OPS + tuple(_MOTIFS)), min_size=1, max_size=10)):
        b.add(op)
    last = b.values[-1]
    extra = [v for v in b.values[1:-1] if draw(st.integers(0, 4)) == 0]
    outputs = [last, *extra]
    g = h.make_graph(
        b.nodes,
        "fuzz",
        [h.make_tensor_value_info("x", TP.FLOAT, [2, channels, hw, hw])],
        [h.make_tensor_value_info(o, TP.FLOAT, [2, c, hw, hw]) for o, c in outputs],
        b.inits,
    )
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 17)], ir_version=8)
    x = b.rng.standard_normal((2, channels, hw, hw)).astype(np.float32)
    return model.SerializeToString(), {"x": x}, [o for o, _ in outputs]


def _close(actual: np.ndarray, expected: np.ndarray) -> None:
    # Values grow through random chains: compare relative to each output's scale (Clause 11.5 tolerances).
    scale = max(1.0, float(np.max(np.abs(expected))) if expected.size else 1.0)
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-5 * scale)


Case = tuple[bytes, dict[str, Any], list[str]]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(_graphs())
def test_random_graphs_match_onnxruntime_and_the_node_by_node_run(case: Case) -> None:
    model, feeds, outputs = case
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    expected = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"]).run(None, feeds)
    session = onnxcore.Session(model)
    actual = session.run(None, feeds)
    written, _ = session.run(None, feeds, intermediates=True)
    for name, a, e, w in zip(outputs, actual, expected, written):
        assert a.shape == e.shape == w.shape, name
        _close(a, e)
        _close(a, w)
