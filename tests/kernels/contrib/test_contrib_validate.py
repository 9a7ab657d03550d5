"""com.microsoft nodes and onnxruntime's default-domain extensions in the validator, the session and a KernelSet:
a known operator is type-checked like a standard one (no W-CUSTOM-DOMAIN), an unknown one is W-ORT-UNDEFINED,
an extension of ai.onnx is W-ORT-EXTENSION (not E-OP-UNDEFINED / E-OP-VERSION), and a session refuses every
operator it cannot evaluate up front, all at once, by name."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import onnxcore
from onnxcore.errors import KernelRegistrationError, UnsupportedOperatorError
from onnxcore.kernels import KernelSet, run

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

MS = "com.microsoft"


def _model(nodes: list[Any], *, opset: int = 17, elem: int = TensorProto.FLOAT, out: list[Any] | None = None) -> bytes:
    last = nodes[-1].output[0]
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", elem, [2, 3])],
        [helper.make_tensor_value_info(last, elem, out or [2, 3])],
    )
    ops = [helper.make_opsetid("", opset), helper.make_opsetid(MS, 1)]
    return helper.make_model(g, opset_imports=ops, ir_version=8).SerializeToString()


def _codes(model: bytes) -> list[str]:
    return [f.code for f in onnxcore.check(model, full=True).findings]


def test_a_known_operator_is_checked_not_custom() -> None:
    assert _codes(_model([helper.make_node("Gelu", ["x"], ["y"], domain=MS)])) == []
    assert _codes(_model([helper.make_node("Gelu", ["x"], ["y"], domain=MS)], elem=TensorProto.INT32)) == [
        "E-TYPE-CONSTRAINT"
    ]
    assert _codes(_model([helper.make_node("Gelu", ["x", "x"], ["y"], domain=MS)])) == ["E-INPUT-ARITY"]
    assert _codes(_model([helper.make_node("QuickGelu", ["x"], ["y"], domain=MS, beta=1.0)])) == ["E-ATTR-UNKNOWN"]
    assert _codes(_model([helper.make_node("QuickGelu", ["x"], ["y"], domain=MS, alpha=1)])) == ["E-ATTR-TYPE"]
    tok = helper.make_node("Tokenizer", ["x"], ["y"], domain=MS, pad_value="#", separators=[" "])
    assert _codes(_model([tok], elem=TensorProto.STRING, out=[2, 3, "D"])) == [
        "E-ATTR-MISSING",
        "E-ATTR-MISSING",
    ]  # mark, mincharnum


def test_an_operator_onnxruntime_does_not_define() -> None:
    report = onnxcore.check(_model([helper.make_node("NoSuchOperator", ["x"], ["y"], domain=MS)]), full=True)
    assert [f.code for f in report.findings] == ["W-ORT-UNDEFINED"]
    assert "com.microsoft::NoSuchOperator" in report.findings[0].message
    # another custom domain keeps its warning
    g = helper.make_graph(
        [helper.make_node("Op", ["x"], ["y"], domain="com.example")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])
    assert _codes(m.SerializeToString()) == ["W-CUSTOM-DOMAIN"]


@pytest.mark.parametrize(
    "node,opset",
    [
        (helper.make_node("SimplifiedLayerNormalization", ["x", "s"], ["y"]), 17),
        (helper.make_node("LayerNormalization", ["x", "s"], ["y"]), 13),  # ONNX 1-2 defines it from 17
    ],
)
def test_the_default_domain_extensions_warn(node: Any, opset: int) -> None:
    g = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]), helper.make_tensor_value_info("s", 1, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
    )
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8).SerializeToString()
    report = onnxcore.check(model, full=True)
    assert [f.code for f in report.findings] == ["W-ORT-EXTENSION"]
    assert "onnxruntime's extensions" in report.findings[0].message
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    (y,) = onnxcore.Session(model).run(None, {"x": x, "s": np.ones(3, np.float32)})
    assert y.shape == (2, 3)
    # ai.onnx's own LayerNormalization from 17: no warning
    if node.op_type == "LayerNormalization":
        m17 = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8).SerializeToString()
        assert _codes(m17) == []


def test_unsupported_operators_are_refused_at_once_by_name() -> None:
    nodes = [
        helper.make_node("Irfft", ["x"], ["a"], domain=MS),
        helper.make_node("NoSuchOperator", ["a"], ["b"], domain=MS),
        helper.make_node("Gelu", ["b"], ["c"], domain=MS),
        helper.make_node("Rfft", ["c"], ["d"], domain=MS),
    ]
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("d", TensorProto.FLOAT, None)],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)], ir_version=8)
    with pytest.raises(UnsupportedOperatorError) as info:
        onnxcore.Session(m.SerializeToString(), check=False)
    names = {op for _, op, _ in info.value.operators}
    assert names == {"Irfft", "NoSuchOperator", "Rfft"}
    for name in names:
        assert f"com.microsoft::{name}" in str(info.value)


def test_a_kernel_set_fills_in_com_microsoft_operators() -> None:
    ks = KernelSet()

    @ks.kernel("Rfft", 1, domain=MS)  # onnxruntime defines it; onnxcore has no kernel
    def rfft(x: np.ndarray, *, normalized: int = 0, onesided: int = 1, signal_ndim: int = 1) -> np.ndarray:
        return x * 2

    @ks.kernel("MyOp", 1, domain=MS)  # onnxruntime does not define it
    def my_op(x: np.ndarray) -> np.ndarray:
        return x + 1

    @ks.kernel("Scale", 1)  # onnxruntime's extension of ai.onnx (binds Scale-1 below 10)
    def scale(x: np.ndarray, *, scale: float = 1.0) -> np.ndarray:
        return x * np.float32(scale)

    nodes = [
        helper.make_node("Rfft", ["x"], ["a"], domain=MS),
        helper.make_node("MyOp", ["a"], ["b"], domain=MS),
        helper.make_node("Scale", ["b"], ["c"], scale=3.0),
    ]
    model = _model(nodes, opset=9)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    (y,) = onnxcore.Session(model, custom_ops=ks, check=False).run(None, {"x": x})
    np.testing.assert_array_equal(y, (x * 2 + 1) * 3)
    (z,) = run("MyOp", 1, x, domain=MS, custom_ops=ks)
    np.testing.assert_array_equal(z, x + 1)
    # an ai.onnx operator that neither ONNX 1-2 nor onnxruntime defines is still refused
    with pytest.raises(KernelRegistrationError, match="not defined"):
        ks.kernel("NoSuchOperator", 1)


def test_a_user_kernel_at_another_version_of_an_onnxruntime_operator() -> None:
    # Before these definitions, com.microsoft was a custom domain: a kernel registered at version 2 served a model
    # importing com.microsoft 2. It still does (the definition has since_version 1).
    ks = KernelSet()

    @ks.kernel("Rfft", 2, domain=MS)
    def rfft(x: np.ndarray, **_: Any) -> np.ndarray:
        return -x

    g = helper.make_graph(
        [helper.make_node("Rfft", ["x"], ["y"], domain=MS)],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 2)], ir_version=8)
    (y,) = onnxcore.Session(m.SerializeToString(), custom_ops=ks, check=False).run(None, {"x": np.ones(2, np.float32)})
    np.testing.assert_array_equal(y, -np.ones(2, np.float32))


def test_the_graph_builder_checks_onnxruntime_operators() -> None:
    from onnxcore.build import BuildError, GraphBuilder

    b = GraphBuilder(opsets={"": 17, MS: 1})
    x = b.input("x", "float", ["N", 8])
    y = b.op_in(MS).FastGelu(x, b.initializer("bias", np.zeros(8, np.float32)))
    assert y.dtype is not None and y.shape == ("N", 8)  # typed and shaped by onnxruntime's definition
    z = b.op.SimplifiedLayerNormalization(y, b.initializer("scale", np.ones(8, np.float32)), epsilon=1e-6)
    assert z.shape == ("N", 8)
    with pytest.raises(BuildError, match="alpha"):
        b.op_in(MS).Gelu(x, alpha=1.0)
    b.output(z, "z")
    (out,) = onnxcore.Session(b.model()).run(None, {"x": np.ones((2, 8), np.float32)})
    assert out.shape == (2, 8)
    b2 = GraphBuilder(opsets={"": 17, MS: 1})
    w = b2.op_in(MS).NoSuchOperator(b2.input("x", "float", [2]))  # onnxruntime does not define it: unchecked
    assert w.type is None
