"""Hand-built models and checks the optimizer tests share."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

import onnxcore
from onnxcore import helper
from onnxcore.proto import ModelProto, TensorProto

T = TensorProto


def vi(name: str, elem: int, shape: Sequence[int | str | None] | None) -> Any:
    return helper.make_tensor_value_info(name, elem, shape)


def model(
    nodes: list[Any],
    inputs: list[Any],
    outputs: list[Any],
    inits: Sequence[Any] = (),
    *,
    opset: int = 17,
    functions: Sequence[Any] = (),
    extra_opsets: Sequence[Any] = (),
) -> ModelProto:
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(
        g,
        opset_imports=[helper.make_opsetid("", opset), *extra_opsets],
        ir_version=8,
        functions=list(functions),
    )


def tensor(name: str, value: np.ndarray) -> Any:
    return onnxcore.from_array(np.asarray(value), name)


def ops(m: ModelProto) -> list[str]:
    assert m.graph is not None
    return [n.op_type for n in m.graph.node]


def ort_run(m: ModelProto, feeds: Mapping[str, np.ndarray]) -> list[Any]:
    """The model evaluated by onnxruntime (one thread): the evidence that a rewrite kept what it computes."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(onnxcore.encode(m), so, providers=["CPUExecutionProvider"])
    return list(s.run(None, dict(feeds)))


def assert_same_by_ort(a: ModelProto, b: ModelProto, feeds: Mapping[str, np.ndarray]) -> None:
    """onnxruntime gives the same outputs for both models: bit for bit, but for a value folded by our kernel where
    onnxruntime's rounds differently (Clause 11.4: within the conformance tolerance)."""
    for x, y in zip(ort_run(a, feeds), ort_run(b, feeds), strict=True):
        x, y = np.asarray(x), np.asarray(y)
        if x.dtype.kind == "f":
            np.testing.assert_allclose(y, x, rtol=1e-6, atol=1e-7)
        else:
            np.testing.assert_array_equal(y, x)
