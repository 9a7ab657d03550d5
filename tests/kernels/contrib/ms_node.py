"""One ``com.microsoft`` node run by onnxruntime (the reference) and by onnxcore's kernel, for the differential
tests of the quantized, fused and MatMulNBits operators."""

from __future__ import annotations

import functools
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


@functools.cache
def ort_u8s8_saturates() -> bool:
    """Whether this machine's onnxruntime saturates a uint8 x int8 product: its x86-64 kernels without VNNI (AVX2,
    AVX-512 before VNNI) add two adjacent products in 16 bits, so a pair beyond int16 is clipped (onnxruntime's
    quantization documentation names the limitation). 255 * 127 twice is 64770 exactly, 32767 saturated."""
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["a", "b"], ["y"])],
        "g",
        [helper.make_tensor_value_info("a", TensorProto.UINT8, [1, 2])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, [1, 1])],
        [helper.make_tensor("b", TensorProto.INT8, [2, 1], [127, 127])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    (y,) = sess.run(None, {"a": np.full((1, 2), 255, np.uint8)})
    return int(y[0, 0]) != 2 * 255 * 127


def u8s8_saturated(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Where onnxruntime's product of ``a`` (uint8, ``(..., M, K)``) by ``b`` (int8, ``(..., K, N)``, the leading
    axes broadcasting as MatMul's) may be clipped on a machine where :func:`ort_u8s8_saturates`: the elements
    ``(..., M, N)`` with a pair of adjacent products outside int16. All False for other types or where onnxruntime
    does not saturate."""
    k = b.shape[-2]
    prods = a.astype(np.int32)[..., :, :, None] * b.astype(np.int32)[..., None, :, :]  # (..., M, K, N)
    if a.dtype != np.uint8 or b.dtype != np.int8 or not ort_u8s8_saturates():
        return np.zeros(prods.shape[:-2] + prods.shape[-1:], bool)
    pairs = prods[..., 0 : k - 1 : 2, :] + prods[..., 1::2, :]
    return ((pairs > 32767) | (pairs < -32768)).any(axis=-2)


def skip_if_ort_clips(a_type: Any, b_type: Any = np.int8) -> None:
    """Skip a comparison with onnxruntime of uint8 x int8 products that this machine's onnxruntime clips
    (:func:`ort_u8s8_saturates`) where the elements it clips cannot be told apart (a convolution's packed order, a
    whole model): its outputs are no reference there. Ours are held against exact integer arithmetic in the
    matrix-product tests on every machine."""
    if a_type == np.uint8 and b_type == np.int8 and ort_u8s8_saturates():
        pytest.skip("this machine's onnxruntime clips uint8 x int8 pair sums to int16 (x86-64 without VNNI)")
