"""Linear layers as one step (runtime/optimize/linear.py, Clause 8.2): the dynamo exporter's ``Reshape -> Gemm ->
Reshape`` computed as one product on the input's rows, with the values of the nodes as written bit for bit (and
onnxruntime's within float tolerance), and the nodes as written wherever the step's conditions fail."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

import onnxcore
from onnxcore.kernels.fused.linear import ReshapedLinearStep

RNG = np.random.default_rng(5)
K, N = 16, 24


def _model(
    x_shape: list[object],
    flat: list[int],
    out: list[int],
    *,
    bias: bool = True,
    alpha: float = 1.0,
    trans_b: int = 0,
    extra_output: bool = False,
) -> bytes:
    w = RNG.standard_normal((N, K) if trans_b else (K, N)).astype(np.float32)
    inits = [
        nh.from_array(w, "w"),
        nh.from_array(np.array(flat, np.int64), "flat"),
        nh.from_array(np.array(out, np.int64), "out"),
    ]
    gemm_in = ["r", "w"]
    if bias:
        inits.append(nh.from_array(RNG.standard_normal(N).astype(np.float32), "c"))
        gemm_in.append("c")
    nodes = [
        h.make_node("Reshape", ["x", "flat"], ["r"]),
        h.make_node("Gemm", gemm_in, ["g"], alpha=alpha, transB=trans_b),
        h.make_node("Reshape", ["g", "out"], ["y"]),
    ]
    outputs = [h.make_tensor_value_info("y", TP.FLOAT, ["d0", "d1", "d2"][: len(out)])]
    if extra_output:
        outputs.append(h.make_tensor_value_info("g", TP.FLOAT, ["m", N]))
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", TP.FLOAT, x_shape)], outputs, inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    return m.SerializeToString()


def _steps(s: onnxcore.Session, feeds: dict[str, np.ndarray]) -> list[object]:
    plan, _ = s._prepare(None, feeds, False)
    return [bn.call for bn in plan.info]


def _check(model: bytes, x: np.ndarray, *, fused: bool) -> None:
    s = onnxcore.Session(model)
    feeds = {"x": x}
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)
    written, _ = s.run(None, feeds, intermediates=True)
    for _ in range(3):  # the first run of a shape as written, the next ones by the product
        got = s.run(None, feeds)
        for g, w, wr in zip(got, want, written):
            assert g.shape == w.shape and g.dtype == w.dtype
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
            np.testing.assert_array_equal(g, wr)
    assert any(isinstance(c, ReshapedLinearStep) for c in _steps(s, feeds)) is fused


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize(
    ("x_shape", "flat", "out", "x"),
    [
        ([2, 5, K], [-1, K], [2, 5, N], (2, 5, K)),  # the leading axes flattened, then restored
        ([2, 5, K], [10, K], [2, -1, N], (2, 5, K)),  # the rows spelled out
        ([2, 5, 4, 4], [-1, K], [2, 5, N], (2, 5, 4, 4)),  # the last two axes merged into K (attention's heads)
        ([3, K], [-1, K], [1, 3, N], (3, K)),  # a 2-D input
    ],
)
def test_reshape_gemm_reshape_is_one_product(
    bias: bool, x_shape: list[object], flat: list[int], out: list[int], x: tuple[int, ...]
) -> None:
    _check(_model(x_shape, flat, out, bias=bias), RNG.standard_normal(x).astype(np.float32), fused=True)


def test_rows_that_cut_across_the_inputs_axes_are_the_reshapes_rows() -> None:
    """x of (2, K, 5) flattened into rows of K (each row mixing x's last two axes, as the Reshape makes them): the
    product of the step's rows is the nodes' product."""
    model = _model([2, K, 5], [-1, K], [2, 5, N])
    _check(model, RNG.standard_normal((2, K, 5)).astype(np.float32), fused=True)


@pytest.mark.parametrize("case", ["alpha", "transB", "read elsewhere"])
def test_not_fused(case: str) -> None:
    model = _model(
        [2, 5, K],
        [-1, K],
        [2, 5, N],
        alpha=0.5 if case == "alpha" else 1.0,
        trans_b=int(case == "transB"),
        extra_output=case == "read elsewhere",
    )
    _check(model, RNG.standard_normal((2, 5, K)).astype(np.float32), fused=False)


def test_a_bad_shape_is_refused_by_the_node_that_refuses_it() -> None:
    model = _model(["a", "b", K], [10, K], [2, 5, N])
    s = onnxcore.Session(model)
    x = RNG.standard_normal((2, 5, K)).astype(np.float32)
    for _ in range(2):
        s.run(None, {"x": x})
    with pytest.raises(onnxcore.EvaluationError) as info:
        s.run(None, {"x": RNG.standard_normal((3, 5, K)).astype(np.float32)})  # 15 rows, not 10
    assert info.value.op_type in ("Gemm", "Reshape")
    assert "Reshape" in str(info.value)


# --- a plain Gemm by constant weights: one Linear step for its 2-D input ----------------------------------------


def _gemm_model(c_shape: tuple[int, ...] | None, *, trans_b: int = 0, beta: float = 1.0, x_rank: int = 2) -> bytes:
    w = RNG.standard_normal((N, K) if trans_b else (K, N)).astype(np.float32)
    inits = [nh.from_array(w, "w")]
    ins = ["x", "w"]
    if c_shape is not None:
        inits.append(nh.from_array(RNG.standard_normal(c_shape).astype(np.float32), "c"))
        ins.append("c")
    node = h.make_node("Gemm", ins, ["y"], transB=trans_b, beta=beta)
    x_dims: list[object] = ["m", K] if x_rank == 2 else ["a", "b", K][-x_rank:]
    g = h.make_graph(
        [node],
        "gemm",
        [h.make_tensor_value_info("x", TP.FLOAT, x_dims)],
        [h.make_tensor_value_info("y", TP.FLOAT, ["m", N])],
        inits,
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    m.ir_version = 8
    return m.SerializeToString()


@pytest.mark.parametrize("trans_b", [0, 1])
@pytest.mark.parametrize("c_shape", [(N,), (1, N), (1,), (), (1, 1), None], ids=str)
def test_a_gemm_by_constant_weights_is_one_linear_step(trans_b: int, c_shape: tuple[int, ...] | None) -> None:
    from onnxcore.kernels.fused.linear import LinearStep

    model = _gemm_model(c_shape, trans_b=trans_b)
    s = onnxcore.Session(model)
    # The Gemm as the plan runs it without the step (with transB, its weights transposed once by prepack_gemm, as
    # the step takes them: BLAS rounds a product by a transposed operand differently).
    gemm = onnxcore.Session(model, disabled_rewrites=["fuse_linear"])
    ref = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    for rows in (1, 3, 40):
        x = RNG.standard_normal((rows, K)).astype(np.float32)
        assert [type(c) for c in _steps(s, {"x": x})] == [LinearStep]
        (want,) = gemm.run(None, {"x": x})
        (got,) = s.run(None, {"x": x})
        assert got.shape == (rows, N) and got.dtype == np.float32
        np.testing.assert_array_equal(got, want)  # the Gemm's own product and sum, bit for bit
        np.testing.assert_allclose(got, ref.run(None, {"x": x})[0], rtol=1e-5, atol=1e-5)


def test_a_gemm_the_step_does_not_take_runs_as_written() -> None:
    from onnxcore.kernels.fused.linear import LinearStep

    x = RNG.standard_normal((3, K)).astype(np.float32)
    for model in (_gemm_model((N,), beta=0.5), _gemm_model((3, N))):  # beta, a C of one value per element
        s = onnxcore.Session(model)
        assert not any(isinstance(c, LinearStep) for c in _steps(s, {"x": x}))
        (written,), _ = s.run(None, {"x": x}, intermediates=True)
        np.testing.assert_array_equal(s.run(None, {"x": x})[0], written)
    # An input that is not 2-D: refused as the Gemm refuses it (the step runs the node as written).
    s = onnxcore.Session(_gemm_model((N,), x_rank=3), check=False)
    with pytest.raises(onnxcore.EvaluationError) as info:
        s.run(None, {"x": RNG.standard_normal((2, 3, K)).astype(np.float32)})
    assert info.value.op_type == "Gemm"
