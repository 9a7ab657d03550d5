"""Functions (Clause 8.4): model-local functions, attribute parameters, overloads, the body's own
operator set imports, schema function bodies as fallback, and a kernel winning over a body."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import onnxcore
from onnxcore import UnsupportedOperatorError, ValidationError
from onnxcore.kernels import registry

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as TP  # noqa: E402
from onnx import helper as h  # noqa: E402

LOCAL = "local.fn"
X3 = np.random.default_rng(84).standard_normal((2, 3, 4)).astype(np.float32)


def _vi(name: str, shape: list[Any] | None = None, elem: int = TP.FLOAT) -> Any:
    return h.make_tensor_value_info(name, elem, shape)


def _model(nodes: list[Any], functions: list[Any], opset: int = 18, out_shape: list[Any] | None = None) -> bytes:
    g = h.make_graph(nodes, "g", [_vi("x", [2, 3, 4])], [_vi("y", out_shape or [2, 3, 4])])
    m = h.make_model(
        g,
        opset_imports=[h.make_opsetid("", opset), h.make_opsetid(LOCAL, 1)],
        functions=functions,
        ir_version=10,
    )
    return m.SerializeToString()


def _ref(name: str, ref: str, kind: int) -> Any:
    a = onnx.AttributeProto()
    a.name, a.ref_attr_name, a.type = name, ref, kind
    return a


def _scaled_leaky() -> Any:
    """y = LeakyRelu(x * scale, alpha): ``scale`` has a default, ``alpha`` has none."""
    const = h.make_node("Constant", [], ["s"])
    const.attribute.append(_ref("value_float", "scale", onnx.AttributeProto.FLOAT))
    mul = h.make_node("Mul", ["a", "s"], ["m"])
    leaky = h.make_node("LeakyRelu", ["m"], ["b"])
    leaky.attribute.append(_ref("alpha", "alpha", onnx.AttributeProto.FLOAT))
    return h.make_function(
        LOCAL,
        "ScaledLeaky",
        ["a"],
        ["b"],
        [const, mul, leaky],
        [h.make_opsetid("", 18)],
        attributes=["alpha"],
        attribute_protos=[h.make_attribute("scale", 2.0)],
    )


def _leaky(x: np.ndarray, alpha: float) -> np.ndarray:
    return np.where(x >= 0, x, x * np.float32(alpha)).astype(np.float32)


def test_local_function_attribute_parameters() -> None:
    fn = _scaled_leaky()
    cases = [
        ({}, 2.0, 0.01),  # default of scale; alpha omitted, so LeakyRelu's own default
        ({"scale": 3.0}, 3.0, 0.01),
        ({"scale": 0.5, "alpha": 0.2}, 0.5, 0.2),
    ]
    for attrs, scale, alpha in cases:
        node = h.make_node("ScaledLeaky", ["x"], ["y"], domain=LOCAL, **attrs)
        (y,) = onnxcore.Session(_model([node], [fn])).run(None, {"x": X3})
        np.testing.assert_allclose(y, _leaky(X3 * np.float32(scale), alpha), rtol=1e-6)


def test_local_function_matches_onnxruntime() -> None:
    ort = pytest.importorskip("onnxruntime")
    node = h.make_node("ScaledLeaky", ["x"], ["y"], domain=LOCAL, scale=1.5, alpha=0.3)
    model = _model([node], [_scaled_leaky()])
    (want,) = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": X3})
    (got,) = onnxcore.Session(model).run(None, {"x": X3})
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_overloads_select_the_body() -> None:
    # Clause 8.4: (domain, name, overload) identifies a function.
    f_neg = h.make_function(LOCAL, "F", ["a"], ["b"], [h.make_node("Neg", ["a"], ["b"])], [h.make_opsetid("", 18)])
    f_abs = h.make_function(LOCAL, "F", ["a"], ["b"], [h.make_node("Abs", ["a"], ["b"])], [h.make_opsetid("", 18)])
    f_neg.overload = "neg"
    f_abs.overload = "abs"
    for overload, want in (("neg", -X3), ("abs", np.abs(X3))):
        node = h.make_node("F", ["x"], ["y"], domain=LOCAL)
        node.overload = overload
        (y,) = onnxcore.Session(_model([node], [f_neg, f_abs]), check=False).run(None, {"x": X3})
        np.testing.assert_array_equal(y, want)


def test_model_imports_govern_a_local_function_body_and_nesting() -> None:
    # Clause 8.4: "a function does not carry an operator set version of its own: the version is that of its
    # domain, as imported by the model". The inner function imports ai.onnx 11, the model 13: its Softmax is
    # Softmax-13 (along axis 1 alone), not the 2-D coercion of Softmax-1/11, in the evaluator as in the
    # validator (one bound model). The outer function calls the inner one.
    inner = h.make_function(
        LOCAL, "Inner", ["a"], ["b"], [h.make_node("Softmax", ["a"], ["b"], axis=1)], [h.make_opsetid("", 11)]
    )
    outer = h.make_function(
        LOCAL,
        "Outer",
        ["a"],
        ["b"],
        [h.make_node("Inner", ["a"], ["t"], domain=LOCAL), h.make_node("Identity", ["t"], ["b"])],
        [h.make_opsetid("", 13), h.make_opsetid(LOCAL, 1)],
    )
    node = h.make_node("Outer", ["x"], ["y"], domain=LOCAL)
    (y,) = onnxcore.Session(_model([node], [inner, outer], opset=13), check=False).run(None, {"x": X3})
    e = np.exp(X3 - X3.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-5)


def test_recursive_function_is_refused() -> None:
    f = h.make_function(
        LOCAL, "R", ["a"], ["b"], [h.make_node("R", ["a"], ["b"], domain=LOCAL)], [h.make_opsetid(LOCAL, 1)]
    )
    with pytest.raises((ValidationError, onnxcore.LimitError)):
        onnxcore.Session(_model([h.make_node("R", ["x"], ["y"], domain=LOCAL)], [f]), check=False)


def test_unsupported_operator_inside_a_body_is_reported() -> None:
    f = h.make_function(
        LOCAL,
        "G",
        ["a"],
        ["b"],
        [h.make_node("Nope", ["a"], ["b"], domain="nowhere")],
        [h.make_opsetid("nowhere", 2)],
    )
    with pytest.raises(UnsupportedOperatorError) as ei:
        onnxcore.Session(_model([h.make_node("G", ["x"], ["y"], domain=LOCAL)], [f]), check=False)
    assert ei.value.operators == [("nowhere", "Nope", 2)]


def _mish_model() -> bytes:
    g = h.make_graph([h.make_node("Mish", ["x"], ["y"])], "g", [_vi("x", [2, 3, 4])], [_vi("y", [2, 3, 4])])
    return h.make_model(g, opset_imports=[h.make_opsetid("", 18)], ir_version=10).SerializeToString()


def test_schema_body_is_the_fallback_and_a_kernel_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    ort = pytest.importorskip("onnxruntime")
    model = _mish_model()
    (want,) = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": X3})
    registry.lookup("", "Mish", 18)  # load the kernel modules before patching the table
    key = ("", "Mish", 18)
    calls: list[int] = []

    def spy(x: np.ndarray) -> np.ndarray:
        calls.append(1)
        return (x * np.tanh(np.log1p(np.exp(x)))).astype(x.dtype)

    # With a kernel registered, the kernel is used (Clause 8.4: the body is only a fallback).
    monkeypatch.setitem(registry._REGISTRY, key, registry.KernelDef("", "Mish", 18, spy, False))
    (y,) = onnxcore.Session(model).run(None, {"x": X3})
    assert calls == [1]
    np.testing.assert_allclose(y, want, rtol=1e-5)
    # Without one, the schema's function body is expanded and evaluated.
    monkeypatch.delitem(registry._REGISTRY, key)
    sess = onnxcore.Session(model)
    (y,) = sess.run(None, {"x": X3})
    assert calls == [1]
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)
