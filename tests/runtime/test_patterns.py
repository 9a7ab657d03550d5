"""Exporters' chains evaluated as one operator (runtime/optimize/patterns.py, Clause 8.2): each fusion fires on the
pattern the exporter writes, gives onnxruntime's result (and the unfused run's) within float tolerance, keeps
``intermediates=True`` exact, and stays away from chains whose intermediates are read elsewhere."""

from __future__ import annotations

import math

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

import onnxcore
from onnxcore.kernels._rowwise import row_max
from onnxcore.kernels.fused.linear import LinearStep
from onnxcore.kernels.fused.pattern import FusedPattern, RowsPattern

RNG = np.random.default_rng(0)
C = 16


def _const(name: str, v: float | list[float] | np.ndarray) -> object:
    return nh.from_array(np.asarray(v, np.float32), name)


def _model(nodes: list, inits: list, out: str = "y", opset: int = 17, extra_outputs: tuple[str, ...] = ()) -> bytes:
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", TP.FLOAT, ["B", "S", C])],
        [h.make_tensor_value_info(o, TP.FLOAT, ["B", "S", C]) for o in (out, *extra_outputs)],
        inits,
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 8
    return m.SerializeToString()


def _erf_gelu_parts(half_first: bool) -> tuple[list, list]:
    nodes = [h.make_node("Div", ["x", "sqrt2"], ["t"]), h.make_node("Erf", ["t"], ["e"]),
             h.make_node("Add", ["e", "one"], ["a"])]  # fmt: skip
    if half_first:  # the Python expression x * 0.5 * (1 + erf(...))
        nodes += [h.make_node("Mul", ["x", "half"], ["hx"]), h.make_node("Mul", ["hx", "a"], ["y"])]
    else:  # torch.onnx's decomposition of gelu: Mul(x, a) then Mul(., 0.5)
        nodes += [h.make_node("Mul", ["x", "a"], ["m"]), h.make_node("Mul", ["m", "half"], ["y"])]
    return nodes, [_const("sqrt2", math.sqrt(2)), _const("one", 1.0), _const("half", 0.5)]


def _erf_gelu(half_first: bool) -> bytes:
    return _model(*_erf_gelu_parts(half_first))


def _tanh_gelu(variant: str = "pow") -> bytes:
    if variant == "pow":  # GPT-2's gelu_new through either exporter
        cube = [h.make_node("Pow", ["x", "three"], ["p"])]
        tail = [h.make_node("Mul", ["x", "half"], ["hx"]), h.make_node("Mul", ["hx", "a"], ["y"])]
    else:  # torch's gelu(approximate="tanh"): x * (x * x), and 0.5 * (1 + tanh) before the product with x
        cube = [h.make_node("Mul", ["x", "x"], ["x2"]), h.make_node("Mul", ["x", "x2"], ["p"])]
        tail = [h.make_node("Mul", ["half", "a"], ["ha"]), h.make_node("Mul", ["x", "ha"], ["y"])]
    nodes = [
        *cube,
        h.make_node("Mul", ["k", "p"], ["q"]),
        h.make_node("Add", ["x", "q"], ["s"]),
        h.make_node("Mul", ["c", "s"], ["m"]),
        h.make_node("Tanh", ["m"], ["t"]),
        h.make_node("Add", ["t", "one"], ["a"]),
        *tail,
    ]
    inits = [_const("half", 0.5), _const("three", 3.0), _const("k", 0.044715),
             _const("c", math.sqrt(2 / math.pi)), _const("one", 1.0)]  # fmt: skip
    return _model(nodes, inits)


def _layer_norm(opset: int, affine: bool = True) -> bytes:
    def mean(i: str, o: str) -> object:
        if opset >= 18:
            return h.make_node("ReduceMean", [i, "axes"], [o], keepdims=1)
        return h.make_node("ReduceMean", [i], [o], axes=[-1], keepdims=1)

    nodes = [
        mean("x", "mu"),
        h.make_node("Sub", ["x", "mu"], ["d"]),
        h.make_node("Pow", ["d", "two"], ["sq"]),
        mean("sq", "var"),
        h.make_node("Add", ["var", "eps"], ["ve"]),
        h.make_node("Sqrt", ["ve"], ["sd"]),
        h.make_node("Div", ["d", "sd"], ["n" if affine else "y"]),
    ]
    if affine:
        nodes += [h.make_node("Mul", ["n", "gamma"], ["g"]), h.make_node("Add", ["g", "beta"], ["y"])]
    inits = [_const("two", 2.0), _const("eps", 1e-5), _const("gamma", RNG.standard_normal(C)),
             _const("beta", RNG.standard_normal(C)), nh.from_array(np.array([-1], np.int64), "axes")]  # fmt: skip
    return _model(nodes, inits, opset=opset)


def _rms_norm(form: str) -> bytes:
    nodes = [
        h.make_node("Pow", ["x", "two"], ["sq"]),
        h.make_node("ReduceMean", ["sq"], ["ms"], axes=[-1], keepdims=1),
        h.make_node("Add", ["ms", "eps"], ["me"]),
        h.make_node("Sqrt", ["me"], ["rt"]),
    ]
    if form == "reciprocal":  # the dynamo exporter's rsqrt
        nodes += [h.make_node("Reciprocal", ["rt"], ["r"]), h.make_node("Mul", ["x", "r"], ["n"])]
    else:  # the TorchScript exporter's 1 / sqrt, then a Cast to the same type (Llama)
        nodes += [h.make_node("Div", ["one", "rt"], ["r"]), h.make_node("Mul", ["x", "r"], ["n0"]),
                  h.make_node("Cast", ["n0"], ["n"], to=TP.FLOAT)]  # fmt: skip
    nodes.append(h.make_node("Mul", ["w", "n"], ["y"]))
    inits = [_const("two", 2.0), _const("eps", 1e-6), _const("one", 1.0), _const("w", RNG.standard_normal(C))]
    return _model(nodes, inits)


def _silu(sigmoid_first: bool) -> bytes:
    mul = ["s", "x"] if sigmoid_first else ["x", "s"]
    return _model([h.make_node("Sigmoid", ["x"], ["s"]), h.make_node("Mul", mul, ["y"])], [])


CASES = {
    "silu, x * sigmoid(x)": (lambda: _silu(False), "SiLU"),
    "silu, sigmoid(x) * x": (lambda: _silu(True), "SiLU"),
    "erf-gelu, 0.5 last": (lambda: _erf_gelu(False), "GELU (erf)"),
    "erf-gelu, 0.5 first": (lambda: _erf_gelu(True), "GELU (erf)"),
    "tanh-gelu": (_tanh_gelu, "GELU (tanh)"),
    "tanh-gelu, x * x * x": (lambda: _tanh_gelu("mul"), "GELU (tanh)"),
    "layernorm, axes attribute": (lambda: _layer_norm(13), "LayerNorm"),
    "layernorm, axes input": (lambda: _layer_norm(18), "LayerNorm"),
    "layernorm, no affine": (lambda: _layer_norm(13, affine=False), "LayerNorm"),
    "rmsnorm, reciprocal": (lambda: _rms_norm("reciprocal"), "RMSNorm"),
    "rmsnorm, div and cast": (lambda: _rms_norm("div"), "RMSNorm"),
}


def _fused(s: onnxcore.Session) -> list[str]:
    return [bn.call.label for bn in s._plan.info if isinstance(bn.call, FusedPattern)]


@pytest.mark.usefixtures("accel_path")
@pytest.mark.parametrize("case", list(CASES))
def test_fusion_fires_and_matches_onnxruntime(case: str) -> None:
    make, label = CASES[case]
    model = make()
    s = onnxcore.Session(model)
    assert _fused(s) == [label]
    assert len(s._plan.steps) == 1  # the whole chain is one step
    ref = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    x = (RNG.standard_normal((2, 5, C)) * 2).astype(np.float32)
    (y,) = s.run(None, {"x": x})
    (want,) = ref.run(None, {"x": x})
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    # The unfused run (every node as written) agrees within float tolerance, and names every intermediate.
    (y_written,), values = s.run(None, {"x": x}, intermediates=True)
    np.testing.assert_allclose(y, y_written, rtol=1e-5, atol=1e-5)
    assert len(values) == len(onnxcore.load(model).graph.node)
    # The chain as written, inside the fused step (the path for inputs the kernel does not take), agrees too.
    step = s._plan.info[0].call
    np.testing.assert_allclose(step.as_written(x), y_written, rtol=0, atol=0)


@pytest.mark.parametrize("x_first", [True, False])
def test_x_times_hard_sigmoid_is_one_step_bit_for_bit(x_first: bool) -> None:
    """``Mul(x, HardSigmoid(x))`` (HardSwish before opset 14, as exporters write it for MobileNetV3) is one step of
    the fused HardSigmoidMul kernel: the graph's own values bit for bit, and onnxruntime's within rounding."""
    hs = h.make_node("HardSigmoid", ["x"], ["hs"], alpha=1 / 6, beta=0.5)
    mul = h.make_node("Mul", ["x", "hs"] if x_first else ["hs", "x"], ["y"])
    model = _model([hs, mul], [])
    s = onnxcore.Session(model)
    assert _fused(s) == ["HardSigmoid * x"] and len(s._plan.steps) == 1
    x = (RNG.standard_normal((2, 5, C)) * 4).astype(np.float32)
    (y,) = s.run(None, {"x": x})
    (y_written,), _values = s.run(None, {"x": x}, intermediates=True)
    np.testing.assert_array_equal(y, y_written)
    (want,) = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    np.testing.assert_allclose(y, want, rtol=1e-6, atol=1e-6)
    steps = s.profile({"x": x}, repeat=1)
    assert [st.kernel for st in steps] == ["onnxcore.fused::HardSigmoidMul"]


def test_profile_names_the_fused_nodes() -> None:
    s = onnxcore.Session(_tanh_gelu())
    steps = s.profile({"x": np.ones((1, 2, C), np.float32)}, repeat=1)
    assert len(steps) == 1 and steps[0].op_type == "Tanh"
    assert sorted(f[1] for f in steps[0].fused) == ["Add", "Add", "Mul", "Mul", "Mul", "Mul", "Pow"]


@pytest.mark.parametrize("shared", ["e", "a", "hx"])
def test_no_fusion_when_an_intermediate_is_read_elsewhere(shared: str) -> None:
    # The intermediate becomes a graph output too: the chain must keep computing it.
    m2 = _model(*_erf_gelu_parts(True), extra_outputs=(shared,))
    s = onnxcore.Session(m2)
    assert _fused(s) == []
    ref = ort.InferenceSession(m2, providers=["CPUExecutionProvider"])
    x = RNG.standard_normal((1, 3, C)).astype(np.float32)
    for got, want in zip(s.run(None, {"x": x}), ref.run(None, {"x": x})):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_near_miss_constants_are_not_fused() -> None:
    """A chain that is not GELU (a different constant) is left as written."""
    nodes = [h.make_node("Div", ["x", "sqrt2"], ["t"]), h.make_node("Erf", ["t"], ["e"]),
             h.make_node("Add", ["e", "one"], ["a"]), h.make_node("Mul", ["x", "a"], ["m"]),
             h.make_node("Mul", ["m", "half"], ["y"])]  # fmt: skip
    model = _model(nodes, [_const("sqrt2", 1.5), _const("one", 1.0), _const("half", 0.5)])
    assert _fused(onnxcore.Session(model)) == []


def test_layernorm_over_another_axis_is_not_fused() -> None:
    nodes = [
        h.make_node("ReduceMean", ["x"], ["mu"], axes=[1], keepdims=1),
        h.make_node("Sub", ["x", "mu"], ["d"]),
        h.make_node("Pow", ["d", "two"], ["sq"]),
        h.make_node("ReduceMean", ["sq"], ["var"], axes=[1], keepdims=1),
        h.make_node("Add", ["var", "eps"], ["ve"]),
        h.make_node("Sqrt", ["ve"], ["sd"]),
        h.make_node("Div", ["d", "sd"], ["y"]),
    ]
    model = _model(nodes, [_const("two", 2.0), _const("eps", 1e-5)], opset=13)
    assert _fused(onnxcore.Session(model)) == []


def _graph_model(nodes: list, inputs: dict[str, list], out_shape: list, inits: list) -> bytes:
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info(n, TP.FLOAT, s) for n, s in inputs.items()],
        [h.make_tensor_value_info("y", TP.FLOAT, out_shape)],
        inits,
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    return m.SerializeToString()


def _check_against_onnxruntime(model: bytes, feeds: dict[str, np.ndarray], label: str) -> None:
    s = onnxcore.Session(model)
    assert _fused(s) == [label]
    assert len(s._plan.steps) == 1
    (y,) = s.run(None, feeds)
    (want,) = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    (y_written,), _ = s.run(None, feeds, intermediates=True)
    np.testing.assert_allclose(y, y_written, rtol=1e-5, atol=1e-5)
    step = s._plan.info[0]
    with np.errstate(all="ignore"):  # as a session runs it (a row with nothing to attend to is NaN, then 0)
        written = step.call.as_written(*[feeds[n] for n in step.inputs])
    np.testing.assert_allclose(written, y_written, rtol=0, atol=0)


@pytest.mark.parametrize("bias", [True, False])
def test_linear_layer_is_one_product(bias: bool) -> None:
    w = RNG.standard_normal((C, 24)).astype(np.float32)
    nodes = [h.make_node("MatMul", ["x", "w"], ["m" if bias else "y"])]
    inits = [nh.from_array(w, "w")]
    if bias:
        nodes.append(h.make_node("Add", ["b", "m"], ["y"]))  # the bias first, as some exporters write it
        inits.append(_const("b", RNG.standard_normal(24)))
    model = _graph_model(nodes, {"x": ["B", "S", C]}, ["B", "S", 24], inits)
    _check_against_onnxruntime(model, {"x": RNG.standard_normal((3, 5, C)).astype(np.float32)}, "Linear")


def test_linear_layer_takes_a_row_bias() -> None:
    """A bias of shape (1, N) (skl2onnx's MLP and linear models write it so) joins the linear step: the same sums
    on the rows of a 2-D or 3-D input; a 1-D input, whose product the (1, N) bias makes 2-D, runs as written."""
    w = RNG.standard_normal((C, 24)).astype(np.float32)
    nodes = [h.make_node("MatMul", ["x", "w"], ["m"]), h.make_node("Add", ["m", "b"], ["y"])]
    inits = [nh.from_array(w, "w"), nh.from_array(RNG.standard_normal((1, 24)).astype(np.float32), "b")]
    model = _graph_model(nodes, {"x": ["B", C]}, ["B", 24], inits)
    _check_against_onnxruntime(model, {"x": RNG.standard_normal((3, C)).astype(np.float32)}, "Linear")
    step = onnxcore.Session(model)._plan.info[0].call
    for x in (RNG.standard_normal((2, 4, C)), RNG.standard_normal(C)):
        x = x.astype(np.float32)
        got, want = step(x), step.as_written(x)
        assert got.shape == want.shape == ((*x.shape[:-1], 24) if x.ndim > 1 else (1, 24))
        np.testing.assert_array_equal(got, want)


@pytest.mark.usefixtures("accel_path")
@pytest.mark.parametrize("scale", ["Div", "Mul", None])
@pytest.mark.parametrize("masked", [True, False])
def test_attention_chain_is_one_step(scale: str | None, masked: bool) -> None:
    nodes = [h.make_node("MatMul", ["q", "kt"], ["s0"])]
    cur = "s0"
    if scale is not None:
        nodes.append(h.make_node(scale, [cur, "c"], ["s1"]))
        cur = "s1"
    if masked:
        nodes.append(h.make_node("Add", [cur, "mask"], ["s2"]))
        cur = "s2"
    nodes += [
        h.make_node("Softmax", [cur], ["p"], axis=-1),
        h.make_node("IsNaN", ["p"], ["nan"]),
        h.make_node("Where", ["nan", "zero", "p"], ["p2"]),
        h.make_node("MatMul", ["p2", "v"], ["y"]),
    ]
    inputs = {"q": [2, 4, 6, 8], "kt": [2, 4, 8, 6], "v": [2, 4, 6, 8]}
    if masked:
        inputs["mask"] = [2, 1, 6, 6]
    model = _graph_model(nodes, inputs, [2, 4, 6, 8], [_const("c", 2.828427), _const("zero", 0.0)])
    feeds = {n: RNG.standard_normal(s).astype(np.float32) for n, s in inputs.items()}
    if masked:
        mask = np.zeros((2, 1, 6, 6), np.float32)
        mask[1, :, :, 4:] = -np.inf  # padding
        mask[0, :, 2, :] = -np.inf  # a row with nothing to attend to: NaN, zeroed by the Where
        feeds["mask"] = mask
    _check_against_onnxruntime(model, feeds, "Attention")


def test_a_fused_step_refuses_as_the_nodes_do() -> None:
    """Extents the chain's MatMul refuses: the error names the node, as the unfused run's does."""
    nodes = [
        h.make_node("MatMul", ["q", "kt"], ["s"]),
        h.make_node("Softmax", ["s"], ["p"], axis=-1),
        h.make_node("MatMul", ["p", "v"], ["y"]),
    ]
    inputs = {"q": [1, 2, 3, "D"], "kt": [1, 2, "E", 3], "v": [1, 2, 3, 4]}
    s = onnxcore.Session(_graph_model(nodes, inputs, [1, 2, 3, 4], []))
    assert _fused(s) == ["Attention"]
    feeds = {"q": np.ones((1, 2, 3, 5), np.float32), "kt": np.ones((1, 2, 6, 3), np.float32),
             "v": np.ones((1, 2, 3, 4), np.float32)}  # fmt: skip
    with pytest.raises(onnxcore.EvaluationError, match="MatMul"):
        s.run(None, feeds)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_attention_row_max_is_numpys_max(dtype: type) -> None:
    """The attention step's row maxima (over a transposed copy for short rows) are ndarray.max's bit for bit:
    NaN rows, rows of -inf, +inf and signed zeros included, every row length around the short-row bound."""
    for n in range(1, 70):
        a = (RNG.standard_normal((2, 3, 5, n)) * 50).astype(dtype)
        a[0, 0, 0, n // 2] = np.nan
        a[0, 1, 1, :] = -np.inf
        a[1, 2, 3, n - 1] = np.inf
        a[1, 0, 2, :] = 0.0
        a[1, 0, 2, 0] = -0.0
        got, want = row_max(a), a.max(axis=-1, keepdims=True)
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        # The shifted scores, what the step computes from them, are the same bits.
        with np.errstate(invalid="ignore"):
            assert np.array_equal(np.exp(a - got), np.exp(a - want), equal_nan=True)


# --- the linear and normalisation steps written out (LinearStep, RowsPattern) ------------------------------------


@pytest.mark.usefixtures("accel_path")
@pytest.mark.parametrize("case", ["linear", "linear, bias", "layernorm", "rmsnorm"])
def test_written_out_steps_give_the_generic_steps_values(case: str) -> None:
    """The steps that write their fast test and call out give, bit for bit, what the generic FusedPattern step
    gives, for the inputs they take (small, C-contiguous) and those they pass on (a strided view, a large input,
    a 2-D input, float64 for a float32 layer)."""
    if case.startswith("linear"):
        w = RNG.standard_normal((C, 24)).astype(np.float32)
        nodes = [h.make_node("MatMul", ["x", "w"], ["m" if "bias" in case else "y"])]
        inits = [nh.from_array(w, "w")]
        if "bias" in case:
            nodes.append(h.make_node("Add", ["m", "b"], ["y"]))
            inits.append(_const("b", RNG.standard_normal(24)))
        model, kind = _graph_model(nodes, {"x": ["B", "S", C]}, ["B", "S", 24], inits), LinearStep
    else:
        model, kind = (_layer_norm(13) if case == "layernorm" else _rms_norm("reciprocal")), RowsPattern
    s = onnxcore.Session(model)
    step = s._plan.info[0].call
    assert type(step) is kind
    base = (RNG.standard_normal((3, 40, C)) * 2).astype(np.float32)
    inputs = [
        base,
        base[:, ::2],  # strided
        base[0],  # 2-D
        (RNG.standard_normal((4, 1 << 14, C))).astype(np.float32),  # above the kernel threads' size
    ]
    for x in inputs:
        got = step(x)
        want = FusedPattern.__call__(step, x)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    # Another type than the layer's: the chain as written (it refuses as the nodes do, or computes as they do).
    x64 = base.astype(np.float64)
    try:
        want = FusedPattern.__call__(step, x64)
    except onnxcore.OnnxCoreError as e:
        with pytest.raises(type(e)):
            step(x64)
    else:
        np.testing.assert_array_equal(step(x64), want)
