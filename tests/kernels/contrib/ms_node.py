"""One ``com.microsoft`` node run by onnxruntime (the reference) and by onnxcore's kernel, for the differential
tests of the quantized, fused and MatMulNBits operators."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from onnxcore import kernels

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")

MS = "com.microsoft"


def ort_node(op: str, inputs: list[Any], attrs: dict[str, Any] | None = None, *, domain: str = MS) -> np.ndarray:
    """Output 0 of one node run by onnxruntime's CPU provider, one thread, no graph optimization. ``None`` in
    ``inputs`` leaves that input out (an empty name)."""
    from onnx import helper

    names, infos, feeds = [], [], {}
    for i, a in enumerate(inputs):
        if a is None:
            names.append("")
            continue
        arr = np.asarray(a)
        names.append(f"i{i}")
        infos.append(helper.make_tensor_value_info(f"i{i}", helper.np_dtype_to_tensor_dtype(arr.dtype), arr.shape))
        feeds[f"i{i}"] = arr
    while names and not names[-1]:
        names.pop()
    node = helper.make_node(op, names, ["y"], domain=domain, **(attrs or {}))
    graph = helper.make_graph([node], "g", infos, [helper.make_value_info("y", onnx.TypeProto())])
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid(MS, 1)], ir_version=10
    )
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return np.asarray(sess.run(None, feeds)[0])


def ours(op: str, inputs: list[Any], attrs: dict[str, Any] | None = None, *, domain: str = MS) -> np.ndarray:
    """Output 0 of onnxcore's kernel for the same node."""
    while inputs and inputs[-1] is None:
        inputs = inputs[:-1]
    return np.asarray(kernels.run(op, 1, *inputs, domain=domain, **(attrs or {}))[0])


def both(op: str, inputs: list[Any], attrs: dict[str, Any] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(onnxruntime's, ours), checked to agree in shape and element type."""
    expected = ort_node(op, inputs, attrs)
    actual = ours(op, inputs, attrs)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    return expected, actual
