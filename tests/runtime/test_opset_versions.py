"""Version binding (Clause 14.3, 14.4): a model importing version m is evaluated with the definition
in force at m. Single-node models are built at each version where an operator's semantics changed
and compared with onnxruntime (onnx.reference where onnxruntime has no kernel for that version).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import onnxcore

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import helper as h  # noqa: E402
from onnx import numpy_helper  # noqa: E402

RNG = np.random.default_rng(14)
X3 = RNG.standard_normal((2, 3, 4)).astype(np.float32)


def _build(
    op: str, opset: int, inputs: dict[str, np.ndarray], n_out: int, out_shapes: list[Any] | None, **attrs: Any
) -> Any:
    ins = [
        h.make_tensor_value_info(k, onnx.helper.np_dtype_to_tensor_dtype(v.dtype), v.shape) for k, v in inputs.items()
    ]
    names = [f"y{i}" for i in range(n_out)]
    outs = [
        h.make_empty_tensor_value_info(n) if out_shapes is None else h.make_tensor_value_info(n, *out_shapes[i])
        for i, n in enumerate(names)
    ]
    node = h.make_node(op, list(inputs), names, **attrs)
    g = h.make_graph([node], f"{op}_{opset}", ins, outs)
    return h.make_model(g, opset_imports=[h.make_opsetid("", opset)], ir_version=7)


def _oracle(op: str, opset: int, inputs: dict[str, np.ndarray], n_out: int, **attrs: Any) -> list[np.ndarray]:
    model = _build(op, opset, inputs, n_out, None, **attrs)
    try:
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        so.log_severity_level = 3
        sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
        return sess.run(None, inputs)
    except Exception:  # onnxruntime lacks a kernel for this (old) version
        from onnx.reference import ReferenceEvaluator

        return list(ReferenceEvaluator(model).run(None, inputs))


def _check(op: str, opset: int, inputs: dict[str, np.ndarray], n_out: int = 1, **attrs: Any) -> list[np.ndarray]:
    want = _oracle(op, opset, inputs, n_out, **attrs)
    shapes = [(onnx.helper.np_dtype_to_tensor_dtype(w.dtype), list(w.shape)) for w in want]
    model = _build(op, opset, inputs, n_out, shapes, **attrs)
    got = onnxcore.Session(model.SerializeToString()).run(None, inputs)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, g.shape, w.dtype, w.shape)
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    return got


def _i64(*v: int) -> np.ndarray:
    return np.array(v, dtype=np.int64)


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax", "Hardmax"])
def test_softmax_family_coercion_before_13(op: str) -> None:
    # Before 13: the input is coerced to 2-D at `axis`; from 13: along `axis` only.
    old = _check(op, 11, {"x": X3}, axis=1)
    new = _check(op, 13, {"x": X3}, axis=1)
    assert not np.allclose(old[0], new[0])
    _check(op, 1, {"x": X3}, axis=1)
    _check(op, 1, {"x": X3})  # default axis 1 before 13
    _check(op, 13, {"x": X3})  # default axis -1 from 13


def test_reshape_attribute_then_input() -> None:
    _check("Reshape", 1, {"x": X3}, shape=[4, 6])
    _check("Reshape", 5, {"x": X3, "shape": _i64(4, -1)})
    _check("Reshape", 14, {"x": X3, "shape": _i64(0, 12)})
    _check("Reshape", 14, {"x": np.zeros((0, 3), np.float32), "shape": _i64(3, 0)}, allowzero=1)


@pytest.mark.parametrize("opset", [1, 11])
def test_squeeze_unsqueeze_attribute_forms(opset: int) -> None:
    x = RNG.standard_normal((1, 3, 1, 2)).astype(np.float32)
    _check("Squeeze", opset, {"x": x}, axes=[0, 2] if opset == 1 else [0, -2])
    _check("Squeeze", opset, {"x": x})
    _check("Unsqueeze", opset, {"x": X3}, axes=[0, 4] if opset == 1 else [0, -1])


@pytest.mark.parametrize("opset", [13, 21])
def test_squeeze_unsqueeze_input_forms(opset: int) -> None:
    x = RNG.standard_normal((1, 3, 1, 2)).astype(np.float32)
    _check("Squeeze", opset, {"x": x, "axes": _i64(0, -2)})
    _check("Unsqueeze", opset, {"x": X3, "axes": _i64(0, -1)})


def test_split_versions() -> None:
    x = RNG.standard_normal((6, 4)).astype(np.float32)
    _check("Split", 2, {"x": x}, n_out=2, split=[2, 4])
    _check("Split", 11, {"x": x}, n_out=3, axis=-2)
    _check("Split", 13, {"x": x, "split": _i64(1, 5)}, n_out=2)
    _check("Split", 18, {"x": x}, n_out=2, axis=1, num_outputs=2)
    _check("Split", 18, {"x": RNG.standard_normal((7,)).astype(np.float32)}, n_out=3, num_outputs=3)


def test_clip_attribute_then_inputs() -> None:
    x = RNG.standard_normal((3, 4)).astype(np.float32) * 3
    _check("Clip", 6, {"x": x}, min=-1.0, max=0.5)
    _check("Clip", 6, {"x": x})
    _check("Clip", 11, {"x": x, "lo": np.array(-1.0, np.float32), "hi": np.array(0.5, np.float32)})
    _check("Clip", 13, {"x": x.astype(np.int32), "lo": np.array(-1, np.int32), "hi": np.array(2, np.int32)})


def test_pad_attribute_then_inputs() -> None:
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    _check("Pad", 2, {"x": x}, pads=[0, 1, 1, 0], value=1.5)
    _check("Pad", 2, {"x": x}, pads=[1, 1, 1, 1], mode="reflect")
    _check("Pad", 11, {"x": x, "pads": _i64(0, 1, 1, 0), "v": np.array(2.0, np.float32)})
    _check("Pad", 13, {"x": x, "pads": _i64(1, 2, 1, 2)}, mode="edge")
    _check("Pad", 18, {"x": x, "pads": _i64(1, 2), "v": np.array(0.0, np.float32), "axes": _i64(-1)})
    _check("Pad", 19, {"x": x, "pads": _i64(1, 1, 1, 2)}, mode="wrap")


def test_slice_attribute_then_inputs() -> None:
    _check("Slice", 1, {"x": X3}, starts=[0, 1], ends=[1, 1000], axes=[0, 2])
    _check("Slice", 1, {"x": X3}, starts=[1], ends=[3])
    _check("Slice", 10, {"x": X3, "s": _i64(2, 0), "e": _i64(0, 3), "a": _i64(2, 1), "st": _i64(-1, 2)})
    _check("Slice", 13, {"x": X3, "s": _i64(-3), "e": _i64(-1), "a": _i64(-1)})


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceL2", "ReduceLogSumExp"])
def test_reduce_axes_attribute_then_input(op: str) -> None:
    _check(op, 11, {"x": X3}, axes=[-1, 0], keepdims=0)
    _check(op, 1, {"x": X3})
    input_version = 13 if op == "ReduceSum" else 18
    _check(op, input_version, {"x": X3, "axes": _i64(1)}, keepdims=1)
    _check(op, input_version, {"x": X3, "axes": np.zeros((0,), np.int64)}, noop_with_empty_axes=1)
    _check(op, input_version, {"x": X3})


def test_topk_attribute_then_input() -> None:
    x = RNG.permutation(24).astype(np.float32).reshape(4, 6)
    _check("TopK", 1, {"x": x}, n_out=2, k=2)
    _check("TopK", 10, {"x": x, "k": _i64(3)}, n_out=2, axis=0)
    _check("TopK", 11, {"x": x, "k": _i64(3)}, n_out=2, axis=-1, largest=0)


def test_binding_uses_the_imported_version() -> None:
    # The same node evaluates differently at 11 and 13: the kernel bound is the one of the
    # definition in force (Clause 14.4), never the newest one.
    m11 = _build("Softmax", 11, {"x": X3}, 1, [(1, [2, 3, 4])], axis=1)
    m13 = _build("Softmax", 13, {"x": X3}, 1, [(1, [2, 3, 4])], axis=1)
    y11 = onnxcore.Session(m11.SerializeToString()).run(None, {"x": X3})[0]
    y13 = onnxcore.Session(m13.SerializeToString()).run(None, {"x": X3})[0]
    np.testing.assert_allclose(y11.reshape(2, 12).sum(axis=1), [1.0, 1.0], rtol=1e-5)
    np.testing.assert_allclose(y13.sum(axis=1), np.ones((2, 4)), rtol=1e-5)
    assert numpy_helper is not None
