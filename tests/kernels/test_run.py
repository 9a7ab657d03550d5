"""``onnxcore.kernels.run``: one kernel evaluated on its own, bound as a node importing that version would be."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from onnxcore import kernels
from onnxcore.errors import KernelNotFoundError, OnnxCoreError, UnknownOperatorError, UnsupportedOperatorError
from onnxcore.kernels import registry
from onnxcore.proto import GraphProto


def test_relu() -> None:
    x = np.array([-1.5, 0.0, 2.0], np.float32)
    (y,) = kernels.run("Relu", 14, x)
    np.testing.assert_array_equal(y, np.array([0.0, 0.0, 2.0], np.float32))
    assert y.dtype == np.float32


def test_attributes_and_the_ai_onnx_spelling() -> None:
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.arange(12, dtype=np.float32).reshape(4, 3)
    c = np.ones(4, np.float32)
    (y,) = kernels.run("Gemm", 13, a, b, c, transB=1, alpha=2.0, domain="ai.onnx")
    np.testing.assert_allclose(y, 2.0 * a @ b.T + c)


def test_a_version_binds_to_its_definition() -> None:
    # Clause 14.3: opset 12 binds Softmax-11 (the 2-D coercion), opset 13 Softmax-13 (one axis).
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    (old,) = kernels.run("Softmax", 12, x, axis=1)
    (new,) = kernels.run("Softmax", 13, x, axis=1)
    np.testing.assert_allclose(new.sum(axis=1), np.ones((2, 4)), rtol=1e-6)
    np.testing.assert_allclose(old.reshape(2, 12).sum(axis=1), np.ones(2), rtol=1e-6)


def test_a_context_kernel() -> None:
    # Split reads how many outputs its node declares from its KernelContext.
    x = np.arange(6, dtype=np.int64)
    parts = kernels.run("Split", 18, x, axis=0, num_outputs=3, outputs=3)
    assert [p.tolist() for p in parts] == [[0, 1], [2, 3], [4, 5]]
    assert registry.lookup("", "Split", 18) is not None and registry.lookup("", "Split", 18).context  # type: ignore[union-attr]


def test_several_outputs() -> None:
    values, indices = kernels.run("TopK", 11, np.array([3.0, 1.0, 2.0], np.float32), np.array([2], np.int64))
    assert values.tolist() == [3.0, 2.0] and indices.tolist() == [0, 2]


def test_ai_onnx_ml() -> None:
    x = np.array([[1.0, -2.0]], np.float32)
    (y,) = kernels.run("Scaler", 3, x, domain="ai.onnx.ml", offset=[1.0, 0.0], scale=[2.0, 3.0])
    np.testing.assert_allclose(y, np.array([[0.0, -6.0]], np.float32))


def test_a_custom_domain_binds_the_greatest_kernel_version_not_above(monkeypatch: pytest.MonkeyPatch) -> None:
    # Clause 16.1: a domain without definitions binds the registered kernel of greatest since_version <= version.
    registry.lookup("", "Relu", 14)  # load the kernel modules before patching the table
    for v in (1, 3):
        fn = functools.partial(np.multiply, np.float32(v))
        monkeypatch.setitem(
            registry._REGISTRY, ("com.example", "Times", v), registry.KernelDef("com.example", "Times", v, fn, False)
        )
    x = np.ones(2, np.float32)
    assert kernels.run("Times", 2, x, domain="com.example")[0].tolist() == [1.0, 1.0]
    assert kernels.run("Times", 5, x, domain="com.example")[0].tolist() == [3.0, 3.0]


def test_errors() -> None:
    with pytest.raises(UnknownOperatorError, match="NoSuchOp"):
        kernels.run("NoSuchOp", 18, np.zeros(1))
    with pytest.raises(UnknownOperatorError, match="Gelu"):  # Gelu is defined from opset 20 on
        kernels.run("Gelu", 19, np.zeros(1, np.float32))
    with pytest.raises(UnknownOperatorError):
        kernels.run("Anything", 1, np.zeros(1), domain="com.example")
    with pytest.raises(OnnxCoreError, match="no attribute 'bogus'"):
        kernels.run("Relu", 14, np.zeros(1, np.float32), bogus=1)
    with pytest.raises(OnnxCoreError, match="holds a graph"):
        kernels.run("If", 19, np.array(True), then_branch=GraphProto(), else_branch=GraphProto())


def test_no_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    registry.lookup("", "Relu", 14)  # load the kernel modules before patching the table
    monkeypatch.delitem(registry._REGISTRY, ("", "Relu", 14))
    with pytest.raises(KernelNotFoundError, match="Relu-14") as ei:
        kernels.run("Relu", 14, np.zeros(1, np.float32))
    assert isinstance(ei.value, UnsupportedOperatorError)
    assert ei.value.operators == [("", "Relu", 14)]
