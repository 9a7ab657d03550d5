"""matmul_add_to_gemm (runtime/optimize/standard/gemm.py, issue 39 item 2): ``MatMul(A, B) + C`` as Gemm where A is
2-D on every input, equal to onnxruntime on the original; left alone where A's rank is 3 or unknown, the bias
would grow the product, the product is read elsewhere, or the opset predates Gemm-7."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh
from standard_helpers import ops, rewrite, rewrite_and_compare

from onnxcore.runtime.optimize.pipeline import Rewrite
from onnxcore.runtime.optimize.standard import matmul_add_to_gemm

RNG = np.random.default_rng(3)
GEMM = [Rewrite("matmul_add_to_gemm", matmul_add_to_gemm, 1)]


def _model(x_shape: list | None, bias: np.ndarray, *, bias_first: bool = False, opset: int = 13,
           dtype: type = np.float32, extra_out: bool = False) -> object:  # fmt: skip
    elem = {np.float32: TP.FLOAT, np.float64: TP.DOUBLE, np.int64: TP.INT64}[dtype]
    w = nh.from_array(RNG.standard_normal((6, 4)).astype(dtype), "W")
    c = nh.from_array(bias.astype(dtype), "C")
    add = h.make_node("Add", ["C", "p"] if bias_first else ["p", "C"], ["y"], name="add")
    nodes = [h.make_node("MatMul", ["x", "W"], ["p"], name="mm"), add]
    inputs = [h.make_tensor_value_info("x", elem, x_shape or ["M", 6])]
    if x_shape is None:  # the MatMul reads a Reshape to a shape given at run time: its rank is not known
        nodes.insert(0, h.make_node("Reshape", ["x0", "s"], ["x"]))
        inputs = [h.make_tensor_value_info("x0", elem, ["M", 6]), h.make_tensor_value_info("s", TP.INT64, ["k"])]
    y_shape = ["M", 4] if x_shape is None else [*x_shape[:-1], 4]
    outs = [h.make_tensor_value_info("y", elem, y_shape)]
    if extra_out:
        outs.append(h.make_tensor_value_info("p", elem, y_shape))
    g = h.make_graph(nodes, "g", inputs, outs, [w, c])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 7
    return m


@pytest.mark.parametrize("bias_shape", [(4,), (1, 4), (1,), (), (1, 1)])
@pytest.mark.parametrize("bias_first", [False, True])
def test_matmul_add_becomes_gemm(bias_shape: tuple[int, ...], bias_first: bool) -> None:
    m = _model(["M", 6], RNG.standard_normal(bias_shape), bias_first=bias_first)
    feeds = [{"x": RNG.standard_normal((n, 6)).astype(np.float32)} for n in (1, 5)]
    out, fired = rewrite_and_compare(m, feeds, GEMM)
    assert fired == ["matmul_add_to_gemm"] and ops(out) == ["Gemm"]
    node = out.graph.node[0]
    assert node.name == "mm+add" and list(node.input) == ["x", "W", "C"] and node.output == ["y"]


def test_float64_and_a_full_bias_of_a_known_extent() -> None:
    m = _model([3, 6], RNG.standard_normal((3, 4)), dtype=np.float64)
    out, _ = rewrite_and_compare(m, [{"x": RNG.standard_normal((3, 6))}], GEMM)
    assert ops(out) == ["Gemm"]


@pytest.mark.parametrize(
    "case",
    [
        "rank3",  # A of rank 3: Gemm takes 2-D inputs only
        "rank_unknown",  # A's rank not known: it may be 3 on some input
        "bias_grows",  # C of [M, 4] with M a dimension variable: it may be 1 where C's extent is not
        "product_read_twice",  # the product is a graph output too
        "opset6",  # Gemm-6 broadcasts only with its broadcast attribute
        "int64",  # onnxruntime's Gemm runs floats only
    ],
)
def test_traps_are_left_alone(case: str) -> None:
    x_shape: list | None = ["M", 6]
    bias = RNG.standard_normal((4,))
    kw: dict = {}
    if case == "rank3":
        x_shape = ["B", "M", 6]
    elif case == "rank_unknown":
        x_shape = None
    elif case == "bias_grows":
        bias = RNG.standard_normal((3, 4))
    elif case == "product_read_twice":
        kw["extra_out"] = True
    elif case == "opset6":
        kw["opset"] = 6
    elif case == "int64":
        kw["dtype"] = np.int64
    out, fired = rewrite(_model(x_shape, bias, **kw), GEMM)
    assert fired == [] and ops(out)[-2:] == ["MatMul", "Add"]
