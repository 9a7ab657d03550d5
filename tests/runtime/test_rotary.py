"""The rotary embedding ``x * cos + rotate_half(x) * sin`` as one plan step (runtime/optimize/rotary.py, Clause
8.2): the same values bit for bit as the graph as written and as onnxruntime (two products and a sum, each
rounded), on the compiled loop and on numpy; the four steps as written wherever the step's conditions fail."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

import onnxcore
from onnxcore.kernels.fused.rotary import Rotary, RotateHalf

RNG = np.random.default_rng(11)
_DT = {np.float32: TP.FLOAT, np.float64: TP.DOUBLE}


def _model(
    d: int,
    cs_shape: list[Any],
    *,
    dtype: type = np.float32,
    swap: bool = False,
    first: tuple[int, int] | None = None,
    const: bool = False,
    extra_output: bool = False,
) -> bytes:
    """The exporters' rotary embedding of ``x`` (rank 4, last axis ``d``). ``swap`` writes every Mul and the Add with
    their operands the other way round; ``first`` makes the first Slice another range than the lower half;
    ``const`` makes cos and sin initializers of ``cs_shape`` (else inputs); ``extra_output`` makes ``x * cos`` a
    graph output too."""
    half = d // 2
    lo = first or (0, half)
    nodes = [
        h.make_node("Slice", ["x", "s0", "e0", "ax"], ["lo"]),
        h.make_node("Slice", ["x", "s1", "e1", "ax"], ["hi"]),
        h.make_node("Neg", ["hi"], ["nhi"]),
        h.make_node("Concat", ["nhi", "lo"], ["rot"], axis=-1),
        h.make_node("Mul", ["sin", "rot"] if swap else ["rot", "sin"], ["rs"]),
        h.make_node("Mul", ["cos", "x"] if swap else ["x", "cos"], ["xc"]),
        h.make_node("Add", ["rs", "xc"] if swap else ["xc", "rs"], ["y"]),
    ]
    i64 = lambda n, v: nh.from_array(np.array(v, np.int64), n)  # noqa: E731
    inits = [i64("s0", [lo[0]]), i64("e0", [lo[1]]), i64("s1", [half]), i64("e1", [1 << 62]), i64("ax", [-1])]
    t = _DT[dtype]
    inputs = [h.make_tensor_value_info("x", t, ["B", "H", "S", d])]
    if const:
        for name in ("cos", "sin"):
            inits.append(nh.from_array(RNG.standard_normal(cs_shape).astype(dtype), name))
    else:
        inputs += [h.make_tensor_value_info(n, t, cs_shape) for n in ("cos", "sin")]
    rank4 = ["o0", "o1", "o2", "o3"]
    outputs = [h.make_tensor_value_info("y", t, rank4)]
    if extra_output:
        outputs.append(h.make_tensor_value_info("xc", t, rank4))
    g = h.make_graph(nodes, "rotary", inputs, outputs, inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    return m.SerializeToString()


def _steps(s: onnxcore.Session, feeds: dict[str, np.ndarray]) -> set[type]:
    plan, _ = s._prepare(None, feeds, False)
    return {type(bn.call) for bn in plan.info}


def _check(model: bytes, feeds: dict[str, np.ndarray], *, fused: bool) -> None:
    """Three runs (a shape's first run goes as written, the next ones by the step): each equal, bit for bit, to
    onnxruntime's result and to the graph as written (``intermediates=True``)."""
    s = onnxcore.Session(model)
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)
    written, _ = s.run(None, feeds, intermediates=True)
    for _ in range(3):
        got = s.run(None, feeds)
        for g, w, x in zip(got, want, written):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_array_equal(g, w)
            np.testing.assert_array_equal(g, x)
    assert (Rotary in _steps(s, feeds)) is fused
    if fused:
        assert RotateHalf not in _steps(s, feeds)  # inside the Rotary step


@pytest.mark.usefixtures("accel_path")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("swap", [False, True])
@pytest.mark.parametrize(
    ("x_shape", "cs_shape"),
    [
        ((2, 4, 24, 32), (1, 1, 24, 32)),  # Llama's cos and sin: per position, broadcast over batch and heads
        ((2, 2, 5, 16), (2, 1, 5, 16)),  # per batch entry (position ids)
        ((1, 4, 1, 64), (1, 1, 1, 64)),  # a decoder step: one position
        ((3, 1, 7, 8), (7, 8)),  # cos and sin of lower rank
        ((2, 3, 4, 6), (2, 3, 4, 6)),  # the full shape
    ],
)
def test_rotary_is_one_step_with_the_graphs_bits(
    dtype: type, swap: bool, x_shape: tuple[int, ...], cs_shape: tuple[int, ...]
) -> None:
    model = _model(x_shape[-1], list(cs_shape), dtype=dtype, swap=swap)
    feeds = {
        "x": (RNG.standard_normal(x_shape) * 4).astype(dtype),
        "cos": RNG.standard_normal(cs_shape).astype(dtype),
        "sin": RNG.standard_normal(cs_shape).astype(dtype),
    }
    _check(model, feeds, fused=True)


@pytest.mark.usefixtures("accel_path")
def test_constant_cos_and_sin_and_a_new_shape() -> None:
    model = _model(16, [1, 1, 6, 16], const=True)
    for shape in [(2, 4, 6, 16), (1, 1, 6, 16), (2, 4, 6, 16)]:
        _check(model, {"x": RNG.standard_normal(shape).astype(np.float32)}, fused=True)


@pytest.mark.usefixtures("accel_path")
def test_cos_that_grows_x_runs_as_written() -> None:
    """cos and sin of a larger shape than x (the sum is of their shape): the steps as written give that shape."""
    model = _model(8, ["c0", "c1", "c2", 8])
    feeds = {
        "x": RNG.standard_normal((1, 1, 3, 8)).astype(np.float32),
        "cos": RNG.standard_normal((2, 4, 3, 8)).astype(np.float32),
        "sin": RNG.standard_normal((2, 4, 3, 8)).astype(np.float32),
    }
    _check(model, feeds, fused=True)  # the step is in the plan; it runs the nodes as written for these shapes
    out = onnxcore.Session(model).run(None, feeds)[0]
    assert out.shape == (2, 4, 3, 8)


@pytest.mark.usefixtures("accel_path")
def test_cos_broadcast_along_the_last_axis_runs_as_written() -> None:
    model = _model(8, [1, 1, 3, 1])
    feeds = {
        "x": RNG.standard_normal((2, 2, 3, 8)).astype(np.float32),
        "cos": RNG.standard_normal((1, 1, 3, 1)).astype(np.float32),
        "sin": RNG.standard_normal((1, 1, 3, 1)).astype(np.float32),
    }
    _check(model, feeds, fused=True)


@pytest.mark.usefixtures("accel_path")
def test_slices_that_are_not_the_halves_run_as_written() -> None:
    """Concat(-x[..., 4:], x[..., 4:]): Slice, Neg and Concat of other values than rotate_half's halves; the step
    never takes its fast path (its RotateHalf never sees the halves) and gives the values as written."""
    model = _model(8, [1, 1, 3, 8], first=(4, 8))
    feeds = {
        "x": RNG.standard_normal((2, 2, 3, 8)).astype(np.float32),
        "cos": RNG.standard_normal((1, 1, 3, 8)).astype(np.float32),
        "sin": RNG.standard_normal((1, 1, 3, 8)).astype(np.float32),
    }
    _check(model, feeds, fused=True)


def test_a_product_read_elsewhere_is_not_fused() -> None:
    model = _model(8, [1, 1, 3, 8], extra_output=True)
    feeds = {
        "x": RNG.standard_normal((2, 2, 3, 8)).astype(np.float32),
        "cos": RNG.standard_normal((1, 1, 3, 8)).astype(np.float32),
        "sin": RNG.standard_normal((1, 1, 3, 8)).astype(np.float32),
    }
    _check(model, feeds, fused=False)


def test_an_error_names_the_fused_nodes() -> None:
    """sin of another last extent: the Mul inside the step refuses, and the error names the Add and what is
    fused into it."""
    model = _model(8, [1, 1, 3, None])
    s = onnxcore.Session(model)
    feeds = {
        "x": RNG.standard_normal((2, 2, 3, 8)).astype(np.float32),
        "cos": RNG.standard_normal((1, 1, 3, 8)).astype(np.float32),
        "sin": RNG.standard_normal((1, 1, 3, 8)).astype(np.float32),
    }
    s.run(None, feeds)
    s.run(None, feeds)
    feeds["sin"] = RNG.standard_normal((1, 1, 3, 5)).astype(np.float32)
    with pytest.raises(onnxcore.EvaluationError) as info:
        s.run(None, feeds)
    assert info.value.op_type == "Add"
    assert {op for _i, op, _n in info.value.fused_nodes} >= {"Mul", "Neg", "Concat"}
