"""Run one ai.onnx.ml node both through onnxruntime and through our registered kernel (test helper)."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper
from runtime.node_harness import _attr_value

ML = "ai.onnx.ml"

_NP_TO_ONNX = {
    np.dtype(np.float32): TensorProto.FLOAT,
    np.dtype(np.float64): TensorProto.DOUBLE,
    np.dtype(np.float16): TensorProto.FLOAT16,
    np.dtype(np.int64): TensorProto.INT64,
    np.dtype(np.int32): TensorProto.INT32,
    np.dtype(np.int16): TensorProto.INT16,
    np.dtype(object): TensorProto.STRING,
}


def _vi(name: str, value: Any) -> onnx.ValueInfoProto:
    if isinstance(value, dict):
        k = next(iter(value))
        kt = TensorProto.STRING if isinstance(k, str | bytes) else TensorProto.INT64
        v = next(iter(value.values()))
        vt = (
            TensorProto.STRING
            if isinstance(v, str | bytes)
            else TensorProto.INT64
            if isinstance(v, int | np.integer)
            else (TensorProto.DOUBLE if isinstance(v, np.float64) else TensorProto.FLOAT)
        )
        return helper.make_value_info(name, helper.make_map_type_proto(kt, helper.make_tensor_type_proto(vt, None)))
    return helper.make_tensor_value_info(name, _NP_TO_ONNX[np.asarray(value).dtype], list(np.asarray(value).shape))


def _ort_feed(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            (k.decode() if isinstance(k, bytes) else k): (v.decode() if isinstance(v, bytes) else v)
            for k, v in value.items()
        }
    arr = np.asarray(value)
    if arr.dtype == object:
        return np.array([v.decode() if isinstance(v, bytes) else v for v in arr.ravel()], dtype=object).reshape(
            arr.shape
        )
    return arr


def _normalise_expected(value: Any) -> Any:
    """onnxruntime's str elements/keys as bytes, like our runtime values."""
    if isinstance(value, list):
        return [_normalise_expected(v) for v in value]
    if isinstance(value, dict):
        return {(k.encode() if isinstance(k, str) else k): np.asarray(v) for k, v in value.items()}
    arr = np.asarray(value)
    if arr.dtype == object or arr.dtype.kind == "U":
        return np.array([v.encode() if isinstance(v, str) else v for v in arr.ravel()], dtype=object).reshape(arr.shape)
    return arr


def make_model(
    op: str, version: int, inputs: dict[str, Any], outputs: list[tuple[str, Any]], attrs: dict
) -> onnx.ModelProto:
    """A one-node model: ``outputs`` are (name, TypeProto | elem_type int)."""
    node = helper.make_node(op, list(inputs), [o[0] for o in outputs], domain=ML, **attrs)
    outs = []
    for name, t in outputs:
        if isinstance(t, onnx.TypeProto):
            outs.append(helper.make_value_info(name, t))
        else:
            outs.append(helper.make_tensor_value_info(name, t, None))
    graph = helper.make_graph([node], "g", [_vi(n, v) for n, v in inputs.items()], outs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19), helper.make_opsetid(ML, version)])
    model.ir_version = 9
    return model


def run_ort(model: onnx.ModelProto, inputs: dict[str, Any]) -> list[Any]:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    out = sess.run(None, {k: _ort_feed(v) for k, v in inputs.items()})
    return [_normalise_expected(o) for o in out]


def run_ours(model: onnx.ModelProto, inputs: dict[str, Any]) -> list[Any]:
    from onnxcore.kernels.registry import KernelContext, lookup

    node = model.graph.node[0]
    version = next(o.version for o in model.opset_import if o.domain == ML)
    schema = onnx.defs.get_schema(node.op_type, version, ML)
    k = lookup(ML, node.op_type, schema.since_version)
    assert k is not None, f"no kernel for {node.op_type}-{schema.since_version}"
    attrs = {a.name: _attr_value(a) for a in node.attribute}
    args = [inputs[n] for n in node.input]
    if k.context:
        from onnxcore import decode
        from onnxcore.proto import NodeProto

        ctx = KernelContext(
            decode(NodeProto, node.SerializeToString()),
            since_version=schema.since_version,
            opset_version=version,
            num_outputs=len(node.output),
        )
        out = k.fn(ctx, *args, **attrs)
    else:
        out = k.fn(*args, **attrs)
    if not isinstance(out, tuple):
        out = (out,)
    return list(out)


def both(
    op: str, version: int, inputs: dict[str, Any], outputs: list[tuple[str, Any]], **attrs: Any
) -> tuple[list[Any], list[Any]]:
    """(ours, onnxruntime's) outputs of the one-node model."""
    model = make_model(op, version, inputs, outputs, attrs)
    return run_ours(model, inputs), run_ort(model, inputs)


def assert_same(actual: list[Any], expected: list[Any], rtol: float = 1e-5, atol: float = 1e-6, msg: str = "") -> None:
    """Equal dtypes and values (exact for ints/strings, close for floats, NaN equal to NaN)."""
    assert len(actual) == len(expected), msg
    for i, (a, e) in enumerate(zip(actual, expected)):
        if isinstance(e, list):
            assert isinstance(a, list) and len(a) == len(e), msg
            for am, em in zip(a, e):
                assert set(am) == set(em), msg
                for key in em:
                    np.testing.assert_allclose(am[key], em[key], rtol=rtol, atol=atol, err_msg=msg)
            continue
        a = np.asarray(a)
        assert a.dtype == e.dtype, f"{msg} output {i}: dtype {a.dtype} != {e.dtype}"
        assert a.shape == e.shape, f"{msg} output {i}: shape {a.shape} != {e.shape}"
        if e.dtype == object or e.dtype.kind in "iub":
            assert a.tolist() == e.tolist(), f"{msg} output {i}: {a.tolist()} != {e.tolist()}"
        else:
            np.testing.assert_allclose(a, e, rtol=rtol, atol=atol, equal_nan=True, err_msg=f"{msg} output {i}")
