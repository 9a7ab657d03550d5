"""Tests of onnxruntime's operators (com.microsoft and its default-domain extensions), differential against
onnxruntime: a one-node model run by onnxruntime and by an onnxcore Session (validation on).

:func:`both` runs a node in both and returns the two lists of outputs; :func:`check` asserts they agree.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from kernels import assert_same

MS = "com.microsoft"


def node_model(
    op: str,
    inputs: list[np.ndarray | None],
    n_outputs: int | list[bool],
    attrs: dict[str, Any] | None = None,
    *,
    domain: str = MS,
    opset: int = 17,
    out_types: list[tuple[int, int]] | None = None,
) -> Any:
    """A one-node ``onnx.ModelProto`` importing ai.onnx ``opset`` and com.microsoft 1; ``n_outputs`` may be a list
    of flags, False leaving that output unnamed; ``out_types`` declares the named outputs' (element type, rank)."""
    import onnx
    from onnx import helper

    names, vis = [], []
    for i, a in enumerate(inputs):
        if a is None:
            names.append("")
            continue
        names.append(f"x{i}")
        elem = helper.np_dtype_to_tensor_dtype(a.dtype) if a.dtype != object else onnx.TensorProto.STRING
        vis.append(helper.make_tensor_value_info(f"x{i}", elem, list(a.shape)))
    while names and names[-1] == "":
        names.pop()
    flags = [True] * n_outputs if isinstance(n_outputs, int) else n_outputs
    outs = [f"y{i}" if f else "" for i, f in enumerate(flags)]
    while outs and outs[-1] == "":
        outs.pop()
    node = helper.make_node(op, names, outs, domain=domain, **(attrs or {}))
    named = [o for o in outs if o]
    if out_types is None:
        outputs = [helper.make_value_info(o, onnx.TypeProto()) for o in named]
    else:
        outputs = [
            helper.make_tensor_value_info(o, t, [f"{o}_{k}" for k in range(r)])
            for o, (t, r) in zip(named, out_types, strict=True)
        ]
    graph = helper.make_graph([node], "g", vis, outputs)
    opsets = [helper.make_opsetid("", opset), helper.make_opsetid(MS, 1)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=8)


def feeds_of(inputs: list[np.ndarray | None]) -> dict[str, np.ndarray]:
    return {f"x{i}": a for i, a in enumerate(inputs) if a is not None}


def run_ort_model(model: Any, feeds: dict[str, Any]) -> list[Any]:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return list(sess.run(None, feeds))


def run_ours_model(model: Any, feeds: dict[str, Any]) -> list[Any]:
    import onnxcore

    sess = onnxcore.Session(model.SerializeToString())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return list(sess.run(None, feeds))


def inferred_shapes(model: Any) -> list[Any]:
    """onnxcore's shape inference of the named graph outputs (inputs typed with fixed shapes): their shapes."""
    import onnxcore
    from onnxcore.infer import infer_shapes

    ours = onnxcore.decode(onnxcore.ModelProto, model.SerializeToString())
    res = infer_shapes(ours)
    assert not res.incompatibilities, res.incompatibilities
    return [res.shape(o.name) for o in model.graph.output]


def inferred_types(model: Any) -> list[str | None]:
    """onnxcore's type inference of the named graph outputs (declared without a type): their type strings."""
    import onnxcore
    from onnxcore.infer import infer

    res = infer(onnxcore.decode(onnxcore.ModelProto, model.SerializeToString()))
    return [res.type_strings["graph"].get(o.name) for o in model.graph.output]


_TYPE_STRINGS = {"float32": "float", "float64": "double", "float16": "float16", "object": "string"}


def both(
    op: str,
    inputs: list[np.ndarray | None],
    n_outputs: int | list[bool] = 1,
    attrs: dict[str, Any] | None = None,
    *,
    domain: str = MS,
    opset: int = 17,
) -> tuple[list[Any], list[Any]]:
    """(ours, onnxruntime's) outputs of the one-node model."""
    from onnx import helper

    feeds = feeds_of(inputs)
    theirs = run_ort_model(node_model(op, inputs, n_outputs, attrs, domain=domain, opset=opset), feeds)
    types = [
        (8 if np.asarray(t).dtype == object else helper.np_dtype_to_tensor_dtype(np.asarray(t).dtype), np.ndim(t))
        for t in theirs
    ]
    model = node_model(op, inputs, n_outputs, attrs, domain=domain, opset=opset, out_types=types)
    return run_ours_model(model, feeds), theirs


def check(
    op: str,
    inputs: list[np.ndarray | None],
    n_outputs: int | list[bool] = 1,
    attrs: dict[str, Any] | None = None,
    *,
    domain: str = MS,
    opset: int = 17,
    rtol: float = 1e-5,
    atol: float = 1e-6,
    shapes: bool = True,
) -> list[Any]:
    """Assert onnxcore and onnxruntime agree on every output (shape, dtype, values), and (``shapes``) that shape
    inference gives each output's shape whole, an extent it leaves unknown only where the values decide it;
    return ours."""
    ours, theirs = both(op, inputs, n_outputs, attrs, domain=domain, opset=opset)
    assert len(ours) == len(theirs)
    if shapes:
        untyped = node_model(op, inputs, n_outputs, attrs, domain=domain, opset=opset)
        for g_type, t in zip(inferred_types(untyped), theirs, strict=True):
            dt = str(np.asarray(t).dtype)
            assert g_type == f"tensor({_TYPE_STRINGS.get(dt, dt)})", f"inferred type {g_type}, onnxruntime gives {dt}"
        got = inferred_shapes(untyped)
        for g, t in zip(got, theirs, strict=True):
            shape = np.shape(t)
            assert g is not None and len(g) == len(shape), f"inferred {g}, onnxruntime gives {shape}"
            assert all(a is None or a == b for a, b in zip(g, shape, strict=True)), f"inferred {g}, actual {shape}"
            assert op == "Tokenizer" or None not in g, f"inferred {g} (not whole), actual {shape}"
    for a, e in zip(ours, theirs, strict=True):
        if np.asarray(e).dtype == object:
            e = np.asarray(e).astype(object)
            a = np.asarray([x.decode() if isinstance(x, bytes) else x for x in np.asarray(a).ravel()], dtype=object)
            a = a.reshape(np.asarray(e).shape) if a.size == e.size else a
            assert a.shape == e.shape, f"shape {a.shape} != {e.shape}"
            assert a.tolist() == e.tolist()
        else:
            assert_same(np.asarray(a), e, rtol=rtol, atol=atol)
    return ours
