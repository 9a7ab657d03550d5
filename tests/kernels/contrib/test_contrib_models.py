"""Whole models saved by onnxruntime with its optimized graph (``SessionOptions.optimized_model_filepath``), as a
user gets them: its fusions write com.microsoft operators (SkipLayerNormalization, BiasGelu, FastGelu) and its
default-domain extensions (SimplifiedLayerNormalization, LayerNormalization in a model importing ai.onnx 13).
onnxcore validates them (W-ORT-EXTENSION only) and evaluates them to onnxruntime's outputs."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import onnxcore
from onnxcore.defs import extension_schema, get_schema
from onnxcore.errors import UnsupportedOperatorError
from onnxcore.kernels.registry import lookup

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

H, F = 16, 32


def _consts(rng: np.random.Generator) -> list[Any]:
    def w(name: str, *shape: int) -> Any:
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), name)

    scalars = {"sqrt2": np.sqrt(2.0), "one": 1.0, "half": 0.5, "two": 2.0, "eps": 1e-6, "c": 0.044715,
               "k": np.sqrt(2.0 / np.pi), "three": 3.0}  # fmt: skip
    out = [w("g1", H), w("b1", H), w("w1", H, F), w("bias1", F), w("w2", F, H), w("bias2", H), w("g2", H)]
    out += [w("b2", H), w("g3", H)]
    return out + [numpy_helper.from_array(np.array(v, np.float32), k) for k, v in scalars.items()]


def _layer_norm(x: str, g: str, b: str, out: str, opset: int) -> list[Any]:
    if opset >= 17:
        return [helper.make_node("LayerNormalization", [x, g, b], [out], axis=-1, epsilon=1e-5)]
    # the decomposition exporters write below opset 17 (onnxruntime fuses it into LayerNormalization)
    p = out + "_"
    return [
        helper.make_node("ReduceMean", [x], [p + "mean"], axes=[-1]),
        helper.make_node("Sub", [x, p + "mean"], [p + "d"]),
        helper.make_node("Pow", [p + "d", "two"], [p + "sq"]),
        helper.make_node("ReduceMean", [p + "sq"], [p + "var"], axes=[-1]),
        helper.make_node("Add", [p + "var", "eps"], [p + "ve"]),
        helper.make_node("Sqrt", [p + "ve"], [p + "sd"]),
        helper.make_node("Div", [p + "d", p + "sd"], [p + "n"]),
        helper.make_node("Mul", [p + "n", g], [p + "s"]),
        helper.make_node("Add", [p + "s", b], [out]),
    ]


def _gelu(h: str, out: str, tanh: bool) -> list[Any]:
    if not tanh:
        return [
            helper.make_node("Div", [h, "sqrt2"], ["gd"]),
            helper.make_node("Erf", ["gd"], ["ge"]),
            helper.make_node("Add", ["ge", "one"], ["ge1"]),
            helper.make_node("Mul", [h, "ge1"], ["gm"]),
            helper.make_node("Mul", ["gm", "half"], [out]),
        ]
    return [  # 0.5 h (1 + tanh(sqrt(2/pi) (h + 0.044715 h h h)))
        helper.make_node("Mul", [h, "c"], ["t1"]),
        helper.make_node("Mul", ["t1", h], ["t2"]),
        helper.make_node("Mul", ["t2", h], ["t3"]),
        helper.make_node("Add", [h, "t3"], ["ti"]),
        helper.make_node("Mul", ["ti", "k"], ["tk"]),
        helper.make_node("Tanh", ["tk"], ["tt"]),
        helper.make_node("Add", ["tt", "one"], ["tp"]),
        helper.make_node("Mul", [h, "tp"], ["tm"]),
        helper.make_node("Mul", ["tm", "half"], [out]),
    ]


def _block(opset: int, tanh: bool) -> Any:
    """A transformer MLP block and a Llama-style RMS norm: LN, MatMul+bias, Gelu, MatMul+bias, residual, LN,
    residual, x / sqrt(mean(x^2) + eps) * g."""
    nodes = _layer_norm("x", "g1", "b1", "ln1", opset)
    nodes += [helper.make_node("MatMul", ["ln1", "w1"], ["mm1"]), helper.make_node("Add", ["mm1", "bias1"], ["h1"])]
    nodes += _gelu("h1", "gelu", tanh)
    nodes += [helper.make_node("MatMul", ["gelu", "w2"], ["mm2"]), helper.make_node("Add", ["mm2", "bias2"], ["h2"])]
    nodes += [helper.make_node("Add", ["h2", "x"], ["res"])]
    nodes += _layer_norm("res", "g2", "b2", "ln2", opset)
    nodes += [
        helper.make_node("Add", ["ln2", "x"], ["res2"]),
        helper.make_node("Pow", ["res2", "two"], ["sq"]),
        helper.make_node("ReduceMean", ["sq"], ["ms"], axes=[-1]),
        helper.make_node("Add", ["ms", "eps"], ["mse"]),
        helper.make_node("Sqrt", ["mse"], ["rms"]),
        helper.make_node("Div", ["res2", "rms"], ["nrm"]),
        helper.make_node("Mul", ["nrm", "g3"], ["y"]),
    ]
    g = helper.make_graph(
        nodes,
        "block",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", "S", H])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["B", "S", H])],
        _consts(np.random.default_rng(0)),
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def _without_kernel(data: bytes) -> set[str]:
    """The operators of a model onnxcore has no kernel for (the definition it binds to has none)."""
    m = onnx.load_from_string(data)
    imports = {o.domain: o.version for o in m.opset_import}
    out = set()
    for n in m.graph.node:
        schema = get_schema(n.op_type, imports[n.domain], n.domain) or extension_schema(
            n.op_type, imports[n.domain], n.domain
        )
        if schema is None or lookup(n.domain, n.op_type, schema.since_version) is None:
            out.add(n.op_type)
    return out


LEVELS = {"basic": "ORT_ENABLE_BASIC", "extended": "ORT_ENABLE_EXTENDED", "all": "ORT_ENABLE_ALL"}


@pytest.mark.parametrize("level", list(LEVELS))
@pytest.mark.parametrize("opset", [13, 17])
@pytest.mark.parametrize("tanh", [False, True])
def test_a_model_saved_by_onnxruntime(tmp_path: Path, level: str, opset: int, tanh: bool) -> None:
    model = _block(opset, tanh)
    so = ort.SessionOptions()
    so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, LEVELS[level])
    so.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    so.log_severity_level = 3
    x = np.random.default_rng(1).standard_normal((2, 5, H)).astype(np.float32)
    ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    saved = Path(so.optimized_model_filepath).read_bytes()
    ops = {(n.domain, n.op_type) for n in onnx.load_from_string(saved).graph.node}
    if level != "basic":  # onnxruntime's fusions wrote its own operators
        assert ("com.microsoft", "SkipLayerNormalization") in ops
        assert ("", "SimplifiedLayerNormalization") in ops
        # (onnxruntime fuses the erf form into BiasGelu; the tanh form stays as written)
        assert tanh or ("com.microsoft", "BiasGelu") in ops
    report = onnxcore.check(saved, full=True)
    assert report.ok, str(report)
    # (names onnxruntime writes, "/ln/Add_output_0" and the like, are not C identifiers: W-NAME-SYNTAX, one per name)
    extensions = {f.code for f in report.findings} - {"W-NAME-SYNTAX"}
    assert extensions == (set() if level == "basic" else {"W-ORT-EXTENSION"})
    missing = _without_kernel(saved)
    if missing:
        # An operator of another family (FusedMatMul: issue 28's quantized and fused operators) is refused up
        # front, by name, before anything runs.
        with pytest.raises(UnsupportedOperatorError) as info:
            onnxcore.Session(saved)
        assert {op for _, op, _ in info.value.operators} == missing
        return
    plain = ort.SessionOptions()
    plain.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    (theirs,) = ort.InferenceSession(saved, plain, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (ours,) = onnxcore.Session(saved).run(None, {"x": x})
        (unoptimized,) = onnxcore.Session(model.SerializeToString()).run(None, {"x": x})
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=2e-5)
    np.testing.assert_allclose(ours, unoptimized, rtol=1e-4, atol=2e-4)


@pytest.mark.parametrize("opset", [13, 17])
@pytest.mark.parametrize("tanh", [False, True])
def test_a_model_through_the_transformer_optimizer(tmp_path: Path, opset: int, tanh: bool) -> None:
    optimizer = pytest.importorskip("onnxruntime.transformers.optimizer")
    path = tmp_path / "block.onnx"
    model = _block(opset, tanh)
    onnx.save(model, str(path))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        opt = optimizer.optimize_model(str(path), model_type="bert", num_heads=0, hidden_size=0, opt_level=0)
    out = tmp_path / "optimized.onnx"
    opt.save_model_to_file(str(out))  # as users save it (this adds the com.microsoft import)
    data = out.read_bytes()
    ops = {(n.domain, n.op_type) for n in onnx.load_from_string(data).graph.node}
    assert ("com.microsoft", "SkipLayerNormalization") in ops
    assert tanh or ("com.microsoft", "BiasGelu") in ops
    report = onnxcore.check(data, full=True)
    assert report.ok, str(report)
    # below ai.onnx 17 the fused LayerNormalization is onnxruntime's LayerNormalization-1
    assert {f.code for f in report.findings} - {"W-NAME-SYNTAX"} == ({"W-ORT-EXTENSION"} if opset < 17 else set())
    x = np.random.default_rng(2).standard_normal((3, 4, H)).astype(np.float32)
    plain = ort.SessionOptions()
    plain.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    (theirs,) = ort.InferenceSession(data, plain, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (ours,) = onnxcore.Session(data).run(None, {"x": x})
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=2e-5)
