"""exporter_operators (runtime/optimize/standard/exporter.py, issue 39 item 2): exporters' chains for GELU, SiLU,
HardSwish, LayerNorm and RMSNorm written as the operator set's own operator where it has one, equal to onnxruntime
on the original; the epsilon and axis are the graph's (a chain over another axis, or whose two reductions differ,
is left alone), and so is a chain below the operator's opset or whose last extent may be 1."""

from __future__ import annotations

import math

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh
from standard_helpers import ops, rewrite, rewrite_and_compare

from onnxcore.runtime.optimize.pipeline import Rewrite
from onnxcore.runtime.optimize.standard import exporter_operators

RNG = np.random.default_rng(11)
EXPORTER = [Rewrite("exporter_operators", exporter_operators, 2)]
C = 8


def _model(nodes: list, inits: list, opset: int, *, x_shape: list | None = None, dtype: type = np.float32) -> object:
    elem = TP.DOUBLE if dtype == np.float64 else TP.FLOAT
    shape = x_shape or ["B", "S", C]
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", elem, shape)],
                     [h.make_tensor_value_info("y", elem, shape)], inits)  # fmt: skip
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 10
    return m


def _c(name: str, v: float | np.ndarray, dtype: type = np.float32) -> object:
    return nh.from_array(np.asarray(v, dtype), name)


def _feeds(dtype: type = np.float32, last: int = C) -> list[dict[str, np.ndarray]]:
    return [{"x": RNG.standard_normal((b, s, last)).astype(dtype)} for b, s in ((1, 1), (2, 5))]


def _erf_gelu(opset: int) -> object:
    nodes = [h.make_node("Div", ["x", "sqrt2"], ["t"], name="div"), h.make_node("Erf", ["t"], ["e"]),
             h.make_node("Add", ["e", "one"], ["a"]), h.make_node("Mul", ["x", "a"], ["m"]),
             h.make_node("Mul", ["m", "half"], ["y"])]  # fmt: skip
    return _model(nodes, [_c("sqrt2", math.sqrt(2)), _c("one", 1.0), _c("half", 0.5)], opset)


def _tanh_gelu(opset: int) -> object:
    nodes = [h.make_node("Pow", ["x", "three"], ["p"]), h.make_node("Mul", ["k", "p"], ["q"]),
             h.make_node("Add", ["x", "q"], ["s"]), h.make_node("Mul", ["c", "s"], ["m"]),
             h.make_node("Tanh", ["m"], ["t"]), h.make_node("Add", ["t", "one"], ["a"]),
             h.make_node("Mul", ["x", "half"], ["hx"]), h.make_node("Mul", ["hx", "a"], ["y"])]  # fmt: skip
    inits = [_c("half", 0.5), _c("three", 3.0), _c("k", 0.044715), _c("c", math.sqrt(2 / math.pi)), _c("one", 1.0)]
    return _model(nodes, inits, opset)


def _layer_norm(opset: int, *, eps: float = 1e-5, affine: bool = True, axes: tuple[int, int] = (-1, -1),
                x_shape: list | None = None, dtype: type = np.float32) -> object:  # fmt: skip
    def mean(i: str, o: str, axis: int) -> object:
        if opset >= 18:
            return h.make_node("ReduceMean", [i, f"axes{o}"], [o], keepdims=1)
        return h.make_node("ReduceMean", [i], [o], axes=[axis], keepdims=1)

    nodes = [mean("x", "mu", axes[0]), h.make_node("Sub", ["x", "mu"], ["d"]), h.make_node("Pow", ["d", "two"], ["p"]),
             mean("p", "var", axes[1]), h.make_node("Add", ["var", "eps"], ["ve"]), h.make_node("Sqrt", ["ve"], ["sd"]),
             h.make_node("Div", ["d", "sd"], ["n" if affine else "y"])]  # fmt: skip
    inits = [_c("two", 2.0, dtype), _c("eps", eps, dtype)]
    if opset >= 18:
        inits += [nh.from_array(np.asarray([a], np.int64), f"axes{o}") for a, o in zip(axes, ("mu", "var"))]
    if affine:
        nodes += [h.make_node("Mul", ["n", "gamma"], ["g"]), h.make_node("Add", ["g", "beta"], ["y"])]
        inits += [_c("gamma", RNG.standard_normal(C), dtype), _c("beta", RNG.standard_normal(C), dtype)]
    return _model(nodes, inits, opset, x_shape=x_shape, dtype=dtype)


def _rms_norm(opset: int) -> object:
    nodes = [h.make_node("Pow", ["x", "two"], ["p"]), h.make_node("ReduceMean", ["p", "axes"], ["ms"], keepdims=1),
             h.make_node("Add", ["ms", "eps"], ["a"]), h.make_node("Sqrt", ["a"], ["s"]),
             h.make_node("Reciprocal", ["s"], ["r"]), h.make_node("Mul", ["x", "r"], ["n"]),
             h.make_node("Mul", ["n", "w"], ["y"])]  # fmt: skip
    inits = [_c("two", 2.0), _c("eps", 1e-6), nh.from_array(np.asarray([-1], np.int64), "axes"),
             _c("w", RNG.standard_normal(C))]  # fmt: skip
    return _model(nodes, inits, opset)


def test_erf_gelu_becomes_gelu() -> None:
    out, fired = rewrite_and_compare(_erf_gelu(20), _feeds(), EXPORTER)
    assert fired and ops(out) == ["Gelu"] and out.graph.node[0].attribute == []
    assert out.graph.node[0].name == "div"


def test_tanh_gelu_becomes_gelu_tanh() -> None:
    out, _ = rewrite_and_compare(_tanh_gelu(20), _feeds(), EXPORTER)
    assert ops(out) == ["Gelu"] and h.get_attribute_value(out.graph.node[0].attribute[0]) == b"tanh"


def test_gelu_below_opset_20_is_left_alone() -> None:
    out, fired = rewrite(_erf_gelu(19), EXPORTER)
    assert fired == [] and "Erf" in ops(out)


@pytest.mark.parametrize("opset", [17, 18])
@pytest.mark.parametrize("eps", [1e-5, 1e-12, 1e-3])
def test_layer_norm_becomes_layer_normalization_with_the_graphs_epsilon(opset: int, eps: float) -> None:
    out, _ = rewrite_and_compare(_layer_norm(opset, eps=eps), _feeds(), EXPORTER)
    assert ops(out) == ["LayerNormalization"]
    attrs = {a.name: h.get_attribute_value(a) for a in out.graph.node[0].attribute}
    assert attrs["axis"] == -1 and attrs["epsilon"] == pytest.approx(np.float32(eps), rel=1e-7)
    assert list(out.graph.node[0].input) == ["x", "gamma", "beta"]


def test_layer_norm_without_affine_gets_unit_scale() -> None:
    out, _ = rewrite_and_compare(_layer_norm(17, affine=False), _feeds(), EXPORTER)
    assert ops(out) == ["LayerNormalization"] and len(out.graph.node[0].input) == 2


def test_float64_layer_norm_runs_its_first_stage_in_float64() -> None:
    out, _ = rewrite_and_compare(_layer_norm(17, dtype=np.float64), _feeds(np.float64), EXPORTER)
    attrs = {a.name: h.get_attribute_value(a) for a in out.graph.node[0].attribute}
    assert ops(out) == ["LayerNormalization"] and attrs["stash_type"] == TP.DOUBLE


@pytest.mark.parametrize(
    ("case", "kw"),
    [
        ("another axis", {"axes": (1, 1)}),  # normalised over axis 1: LayerNormalization(axis=-1) would be wrong
        ("reductions differ", {"axes": (-1, 1)}),  # the variance over another axis than the mean
        ("last extent may be 1", {"x_shape": ["B", "S", "C"]}),  # Mul by gamma [8] grows a last extent of 1
        ("opset 16", {"opset": 16}),  # no LayerNormalization before 17
    ],
)
def test_layer_norm_traps_are_left_alone(case: str, kw: dict) -> None:
    opset = kw.pop("opset", 17)
    out, fired = rewrite(_layer_norm(opset, **kw), EXPORTER)
    assert fired == [] and "LayerNormalization" not in ops(out), case


def test_rms_norm_becomes_rms_normalization_at_23_only() -> None:
    out, _ = rewrite_and_compare(_rms_norm(23), _feeds(), EXPORTER)
    assert ops(out) == ["RMSNormalization"]
    attrs = {a.name: h.get_attribute_value(a) for a in out.graph.node[0].attribute}
    assert attrs["epsilon"] == pytest.approx(1e-6, rel=1e-6)
    out, fired = rewrite(_rms_norm(22), EXPORTER)
    assert fired == [] and "RMSNormalization" not in ops(out)


def test_silu_becomes_swish_at_24() -> None:
    nodes = [h.make_node("Sigmoid", ["x"], ["s"]), h.make_node("Mul", ["x", "s"], ["y"])]
    out, _ = rewrite_and_compare(_model(nodes, [], 24), _feeds(), EXPORTER)
    assert ops(out) == ["Swish"]
    out, fired = rewrite(_model(nodes, [], 23), EXPORTER)
    assert fired == [] and ops(out) == ["Sigmoid", "Mul"]


def test_hard_sigmoid_product_becomes_hard_swish_only_with_its_constants() -> None:
    def model(alpha: float) -> object:
        nodes = [h.make_node("HardSigmoid", ["x"], ["s"], alpha=alpha, beta=0.5), h.make_node("Mul", ["x", "s"], ["y"])]
        return _model(nodes, [], 14)

    out, _ = rewrite_and_compare(model(float(np.float32(1 / 6))), _feeds(), EXPORTER)
    assert ops(out) == ["HardSwish"]
    out, fired = rewrite(model(0.2), EXPORTER)  # HardSigmoid's default alpha: not HardSwish
    assert fired == [] and ops(out) == ["HardSigmoid", "Mul"]
