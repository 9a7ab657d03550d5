"""Per-node overhead of small transformers (issue 27), Clause 8.2: the row-wise steps called straight from the
plan (runtime/optimize/rows.py), gathers by constant indices and the rotary embedding's ``rotate_half``
(runtime/optimize/shapeops.py), and the Cast and Gather kernels' fast paths. Each gives onnxruntime's result, the
kernel's own (bit for bit where the docstrings say so) and keeps ``intermediates=True`` exact; each runs on the
pure-numpy path and on the accelerator (``accel_path``)."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

import onnxcore
from onnxcore import kernels
from onnxcore.kernels import accel
from onnxcore.kernels.elementwise import gelu
from onnxcore.kernels.fused.conv import Conv1dTaps, ConvActivation
from onnxcore.kernels.fused.pattern import _attention
from onnxcore.kernels.fused.rotary import Rotary
from onnxcore.kernels.fused.rows import LayerNormRows, TanhGelu
from onnxcore.kernels.fused.shape import ExpandLike, PositionsLike

RNG = np.random.default_rng(7)


def _model(
    nodes: list, inputs: dict[str, tuple[int, list]], outputs: dict[str, tuple[int, list]], inits: list
) -> bytes:
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info(n, t, s) for n, (t, s) in inputs.items()],
        [h.make_tensor_value_info(n, t, s) for n, (t, s) in outputs.items()],
        inits,
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    return m.SerializeToString()


def _same_as_onnxruntime(
    model: bytes, feeds: dict[str, np.ndarray], *, rtol: float = 1e-5, exact: bool = False
) -> None:
    """Run twice (a shape's first run and the next), compare with onnxruntime, and with the graph as written."""
    s = onnxcore.Session(model)
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)
    for _ in range(3):
        got = s.run(None, feeds)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and g.shape == w.shape
            if exact:
                np.testing.assert_array_equal(g, w)
            else:
                np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol)
    written, _ = s.run(None, feeds, intermediates=True)
    for g, w in zip(s.run(None, feeds), written):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol)


def _calls(model: bytes, feeds: dict[str, np.ndarray]) -> set[type]:
    s = onnxcore.Session(model)
    s.run(None, feeds)
    s.run(None, feeds)  # the plan specialised to these shapes
    plan, _ = s._prepare(None, feeds, False)
    return {type(bn.call) for bn in plan.info}


# --- the attention probabilities -------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("scale", [None, ("Div", 5.65), ("Mul", 0.3)])
@pytest.mark.parametrize("mask_shape", [None, (2, 1, 5, 7), (2, 3, 5, 7), (1, 1, 1, 7)])
def test_attention_rows_agree_with_the_numpy_path(
    dtype: type, scale: tuple[str, float] | None, mask_shape: tuple[int, ...] | None
) -> None:
    """The compiled rows against the numpy steps: within the rounding of a row's sum, NaN where NaN, rows with
    nothing to attend to (all -inf), a NaN score and an infinite one included, with and without the guard."""
    if not accel.available():
        pytest.skip("the accelerator is not available (numba not installed, or ONNXCORE_ACCEL=0)")
    q = (RNG.standard_normal((2, 3, 5, 4)) * 3).astype(dtype)
    k = (RNG.standard_normal((2, 3, 4, 7)) * 3).astype(dtype)
    v = RNG.standard_normal((2, 3, 7, 4)).astype(dtype)
    q[1, 2, 3, 0] = np.nan  # a NaN score row
    q[0, 1, 4, :] = np.inf  # +inf and -inf scores
    args: tuple[np.ndarray, ...] = (q, k, v)
    if mask_shape is not None:
        mask = np.where(RNG.random(mask_shape) < 0.3, -np.inf, 0).astype(dtype)
        mask[0, 0, 0, :] = -np.inf  # a row with nothing to attend to
        args = (q, k, mask, v)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for guard in (True, False):
        kw = {"scale": scale, "masked": mask_shape is not None, "guard": guard}
        with np.errstate(all="ignore"):
            with accel.use(False):
                want = _attention(*args, **kw)
            with accel.use(True):
                got = _attention(*args, **kw)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
        if guard:
            assert not np.isnan(got[0, 0, 0]).any()  # the guard's zeros


# --- LayerNormalization, tanh GELU ----------------------------------------------------------------------


@pytest.mark.usefixtures("accel_path")
@pytest.mark.parametrize("bias", [True, False])
def test_layer_norm_step_is_the_kernel(bias: bool) -> None:
    """A LayerNormalization node with constant Scale and B: its step gives the kernel's three outputs bit for bit
    (small inputs by the direct compiled call, a large one by the kernel) and onnxruntime's within tolerance."""
    c = 32
    scale = RNG.standard_normal(c).astype(np.float32)
    b = RNG.standard_normal(c).astype(np.float32)
    ins = ["x", "scale", "b"] if bias else ["x", "scale"]
    node = h.make_node("LayerNormalization", ins, ["y", "mean", "inv"], axis=-1, epsilon=1e-5)
    inits = [nh.from_array(scale, "scale")] + ([nh.from_array(b, "b")] if bias else [])
    f = TP.FLOAT
    model = _model(
        [node],
        {"x": (f, ["B", "S", c])},
        {"y": (f, ["B", "S", c]), "mean": (f, ["B", "S", 1]), "inv": (f, ["B", "S", 1])},
        inits,
    )
    for shape in [(2, 5, c), (1, 1, c), (64, 128, c)]:
        x = (RNG.standard_normal(shape) * 3 + 1).astype(np.float32)
        assert LayerNormRows in _calls(model, {"x": x})
        _same_as_onnxruntime(model, {"x": x})
        got = onnxcore.Session(model).run(None, {"x": x})
        want = kernels.run("LayerNormalization", 17, x, scale, *([b] if bias else []), axis=-1, epsilon=1e-5)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)


@pytest.mark.usefixtures("accel_path")
@pytest.mark.parametrize("names", [["y", "mean", "inv"], ["y", "", ""], ["y"]])
def test_layer_norm_step_without_readers_of_its_statistics(names: list[str]) -> None:
    """A LayerNormalization that does not name its Mean and InvStdDev (exporters write Y alone): its step gives Y
    alone, the kernel's bit for bit, run after run and across shapes (the statistics' buffers grow). One that names
    them keeps the three outputs, whether a run asks for them or not, the kernel's too."""
    c = 16
    scale = RNG.standard_normal(c).astype(np.float32)
    b = RNG.standard_normal(c).astype(np.float32)
    f = TP.FLOAT
    nodes = [
        h.make_node("LayerNormalization", ["x", "scale", "b"], names, axis=-1, epsilon=1e-5),
        h.make_node("Relu", ["y"], ["z"]),
    ]
    named = len(names) > 1 and bool(names[1])
    outputs = {"z": (f, ["B", "S", c])}
    if named:
        outputs.update({"mean": (f, ["B", "S", 1]), "inv": (f, ["B", "S", 1])})
    model = _model(nodes, {"x": (f, ["B", "S", c])}, outputs, [nh.from_array(scale, "scale"), nh.from_array(b, "b")])
    s = onnxcore.Session(model)
    for shape in [(1, 1, c), (2, 5, c), (1, 3, c), (3, 7, c)]:
        x = (RNG.standard_normal(shape) * 3 + 1).astype(np.float32)
        want = kernels.run("LayerNormalization", 17, x, scale, b, axis=-1, epsilon=1e-5)
        for _ in range(3):  # (interpreted, then the compiled plan)
            (z,) = s.run(["z"], {"x": x})
            np.testing.assert_array_equal(z, np.maximum(want[0], 0))
        plan, _ = s._prepare(["z"], {"x": x}, False)
        steps = [bn.call for bn in plan.info if isinstance(bn.call, LayerNormRows)]
        assert len(steps) == 1 and steps[0].stats == named
        if named:
            z, mean, inv = s.run(["z", "mean", "inv"], {"x": x})
            np.testing.assert_array_equal(mean, want[1])
            np.testing.assert_array_equal(inv, want[2])
            plan, _ = s._prepare(["z", "mean"], {"x": x}, False)
            assert [bn.call.stats for bn in plan.info if isinstance(bn.call, LayerNormRows)] == [True]


@pytest.mark.usefixtures("accel_path")
def test_rms_norm_23_step_is_the_kernel() -> None:
    """An RMSNormalization-23 node with a constant scale (what the dynamo exporter writes at opset 23) takes the
    step of the fused RMSNorm pattern's rows: the kernel's output bit for bit, small and large inputs, and
    onnxruntime's within tolerance; with the rewrite off, the kernel as bound."""
    c = 32
    scale = RNG.standard_normal(c).astype(np.float32)
    node = h.make_node("RMSNormalization", ["x", "scale"], ["y"], axis=-1, epsilon=1e-6)
    g = h.make_graph(
        [node],
        "g",
        [h.make_tensor_value_info("x", TP.FLOAT, ["B", "S", c])],
        [h.make_tensor_value_info("y", TP.FLOAT, ["B", "S", c])],
        [nh.from_array(scale, "scale")],
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 23)])
    m.ir_version = 11
    model = m.SerializeToString()
    for shape in [(2, 5, c), (1, 1, c), (64, 128, c)]:
        x = (RNG.standard_normal(shape) * 3 + 1).astype(np.float32)
        s = onnxcore.Session(model)
        assert "fast_layer_norms" in s.fired_rewrites()
        (got,) = s.run(None, {"x": x})
        (want,) = kernels.run("RMSNormalization", 23, x, scale, axis=-1, epsilon=1e-6)
        np.testing.assert_array_equal(got, want)
        (unfused,) = onnxcore.Session(model, disabled_rewrites=["fast_layer_norms"]).run(None, {"x": x})
        np.testing.assert_array_equal(got, unfused)
        ref = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.usefixtures("accel_path")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tanh_gelu_step_is_the_kernel_bit_for_bit(dtype: type) -> None:
    step = TanhGelu(gelu)
    for shape in [(2, 24, 512), (3, 7), (300, 300)]:  # the last: above the compiled path's size, the kernel
        x = (RNG.standard_normal(shape) * 4).astype(dtype)
        x.flat[:4] = [np.nan, np.inf, -np.inf, -0.0]
        with np.errstate(all="ignore"):
            want = gelu(x, approximate="tanh")
            got = step(x, approximate="tanh")
            np.testing.assert_array_equal(got, want)
            # Not contiguous: the kernel.
            np.testing.assert_array_equal(step(x.T, approximate="tanh"), gelu(x.T, approximate="tanh"))


# --- gathers by constant indices, Expand ----------------------------------------------------------------


@pytest.mark.usefixtures("accel_path")
@pytest.mark.parametrize("op", ["GatherND", "Gather", "GatherElements"])
def test_gather_by_constant_indices_takes_positions(op: str) -> None:
    f = TP.FLOAT
    if op == "GatherND":
        idx = np.array([[[0, 1]], [[1, -1]], [[0, 0]]], np.int64)  # (3, 1, 2): pairs, one negative
        node = h.make_node("GatherND", ["x", "i"], ["y"])
    elif op == "Gather":
        idx = np.array([[2, -1], [0, 1]], np.int64)
        node = h.make_node("Gather", ["x", "i"], ["y"], axis=1)
    else:
        idx = np.array([1, -2, 0], np.int64).reshape(1, 3, 1)
        node = h.make_node("GatherElements", ["x", "i"], ["y"], axis=1)
    rank = {"GatherND": 3, "Gather": 4, "GatherElements": 3}[op]
    out = (f, [f"d{k}" for k in range(rank)])
    model = _model([node], {"x": (f, ["A", "B", "C"])}, {"y": out}, [nh.from_array(idx, "i")])
    for shape in [(2, 3, 4), (2, 5, 1), (2, 3, 4), (3, 4, 2)]:
        x = RNG.standard_normal(shape).astype(np.float32)
        x.flat[0] = np.nan
        feeds = {"x": x}
        assert PositionsLike in _calls(model, feeds)
        _same_as_onnxruntime(model, feeds, exact=True)
    # An index out of bounds for a shape is refused on every run, naming the node.
    s = onnxcore.Session(model)
    small = np.ones((1, 1, 1), np.float32)
    for _ in range(3):
        with pytest.raises(onnxcore.EvaluationError, match=op):
            s.run(None, {"x": small})


def test_expand_to_its_own_shape_and_a_small_copy() -> None:
    f = TP.FLOAT
    nodes = [h.make_node("Expand", ["x", "shape"], ["y"]), h.make_node("Expand", ["x", "big"], ["z"])]
    inits = [nh.from_array(np.array([2, 1, 3], np.int64), "shape"), nh.from_array(np.array([2, 1000, 3]), "big")]
    model = _model(nodes, {"x": (f, [2, 1, 3])}, {"y": (f, [2, 1, 3]), "z": (f, [2, 1000, 3])}, inits)
    x = RNG.standard_normal((2, 1, 3)).astype(np.float32)
    assert ExpandLike in _calls(model, {"x": x})
    _same_as_onnxruntime(model, {"x": x}, exact=True)
    model_small = _model(nodes[1:], {"x": (f, [2, 1, 3])}, {"z": (f, [2, 1000, 3])}, inits)
    s = onnxcore.Session(model_small)
    for _ in range(3):
        (z,) = s.run(None, {"x": x})
        np.testing.assert_array_equal(z, np.broadcast_to(x, (2, 1000, 3)))


# --- rotate_half ----------------------------------------------------------------------------------------


def _rotary(half: int, first: tuple[int, int], second: tuple[int, int]) -> bytes:
    """``x * cos + rotate_half(x) * sin`` as the exporters write it (Slice, Slice, Neg, Concat)."""
    d = 2 * half
    nodes = [
        h.make_node("Slice", ["x", "s0", "e0", "ax"], ["lo"]),
        h.make_node("Slice", ["x", "s1", "e1", "ax"], ["hi"]),
        h.make_node("Neg", ["hi"], ["nhi"]),
        h.make_node("Concat", ["nhi", "lo"], ["rot"], axis=-1),
        h.make_node("Mul", ["rot", "sin"], ["rs"]),
        h.make_node("Mul", ["x", "cos"], ["xc"]),
        h.make_node("Add", ["xc", "rs"], ["y"]),
    ]
    i64 = lambda n, v: nh.from_array(np.array(v, np.int64), n)  # noqa: E731
    inits = [
        i64("s0", [first[0]]), i64("e0", [first[1]]), i64("s1", [second[0]]), i64("e1", [second[1]]), i64("ax", [-1]),
        nh.from_array(RNG.standard_normal(d).astype(np.float32), "sin"),
        nh.from_array(RNG.standard_normal(d).astype(np.float32), "cos"),
    ]  # fmt: skip
    f = TP.FLOAT
    return _model(nodes, {"x": (f, ["B", "H", "S", d])}, {"y": (f, ["B", "H", "S", d])}, inits)


@pytest.mark.usefixtures("accel_path")
def test_rotate_half_is_one_step() -> None:
    model = _rotary(8, (0, 8), (8, 1 << 62))
    for shape in [(2, 4, 3, 16), (1, 2, 1, 16), (2, 4, 3, 16)]:
        x = RNG.standard_normal(shape).astype(np.float32)
        calls = _calls(model, {"x": x})
        assert Rotary in calls  # rotate_half's RotateHalf step, and the products and sum around it (test_rotary.py)
        s = onnxcore.Session(model)
        assert not any(bn.node.op_type == "Neg" for bn in s._plan.info)  # fused into the Concat's step
        _same_as_onnxruntime(model, {"x": x})


def test_rotate_half_of_other_slices_is_still_right() -> None:
    """Slices that are not the two halves (an odd split): the step runs them as written, with their values."""
    model = _rotary(8, (0, 6), (6, 1 << 62))
    x = RNG.standard_normal((2, 4, 3, 16)).astype(np.float32)
    _same_as_onnxruntime(model, {"x": x})


# --- Cast and Gather kernels ----------------------------------------------------------------------------


@pytest.mark.parametrize("to", [TP.BOOL, TP.FLOAT, TP.DOUBLE])
@pytest.mark.parametrize("src", [np.int64, np.int32, np.uint8, np.bool_])
def test_cast_of_integers_matches_onnxruntime(src: type, to: int) -> None:
    if src is np.bool_:
        x = RNG.integers(0, 2, (4, 33)).astype(np.bool_)
    else:
        info = np.iinfo(src)
        x = RNG.integers(info.min, info.max, (4, 33), dtype=src, endpoint=True)
        x[0, :3] = [info.min, info.max, 0]
        if info.max > (1 << 25):
            x[1, 0] = (1 << 24) + 1  # rounds in float32
    tp = {np.int64: TP.INT64, np.int32: TP.INT32, np.uint8: TP.UINT8, np.bool_: TP.BOOL}[src]
    model = _model([h.make_node("Cast", ["x"], ["y"], to=to)], {"x": (tp, [4, 33])}, {"y": (to, [4, 33])}, [])
    _same_as_onnxruntime(model, {"x": x}, exact=True)


def test_gather_negative_and_out_of_range_indices() -> None:
    x = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(
        kernels.run("Gather", 13, x, np.array([-3, -1, 2], np.int64), axis=0)[0], x[[0, 2, 2]]
    )
    np.testing.assert_array_equal(
        kernels.run("Gather", 13, x, np.array([[1, -4]], np.int32), axis=1)[0], x[:, [[1, 0]]]
    )
    for bad in (3, -4):
        with pytest.raises(onnxcore.EvaluationError, match=f"index {bad} is out of bounds"):
            kernels.run("Gather", 13, x, np.array([bad], np.int64), axis=0)


# --- 1-D convolutions -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stride", "dilation", "pads", "bias"),
    [(1, 1, [1, 1], True), (2, 1, [1, 1], True), (3, 2, [2, 0], False), (2, 3, None, True), (1, 1, "VALID", False)],
)
def test_conv1d_by_taps_matches_onnxruntime(
    stride: int, dilation: int, pads: list[int] | str | None, bias: bool
) -> None:
    c, m, k = 6, 5, 3
    w = RNG.standard_normal((m, c, k)).astype(np.float32)
    attrs: dict[str, object] = {"strides": [stride], "dilations": [dilation]}
    if pads == "VALID":
        attrs["auto_pad"] = "VALID"
    elif pads is not None:
        attrs["pads"] = pads
    ins = ["x", "w", "b"] if bias else ["x", "w"]
    inits = [nh.from_array(w, "w")] + ([nh.from_array(RNG.standard_normal(m).astype(np.float32), "b")] if bias else [])
    f = TP.FLOAT
    model = _model(
        [h.make_node("Conv", ins, ["y"], **attrs)], {"x": (f, ["N", c, "L"])}, {"y": (f, ["N", m, "O"])}, inits
    )
    for shape in [(2, c, 31), (1, c, 8), (2, c, 31)]:
        x = RNG.standard_normal(shape).astype(np.float32)
        assert Conv1dTaps in _calls(model, {"x": x})
        _same_as_onnxruntime(model, {"x": x}, rtol=1e-4)
    # Every run of one input gives the same bits, the first (which also runs the kernel for its checks) included.
    s = onnxcore.Session(model)
    x = RNG.standard_normal((2, c, 40)).astype(np.float32)
    first = s.run(None, {"x": x})[0]
    for _ in range(2):
        np.testing.assert_array_equal(s.run(None, {"x": x})[0], first)
    # A shape the Conv refuses (padded, shorter than the dilated kernel) is refused on every run.
    for _ in range(3):
        with pytest.raises(onnxcore.OnnxCoreError):
            s.run(None, {"x": np.ones((1, c, 0), np.float32)})


@pytest.mark.usefixtures("accel_path")
@pytest.mark.parametrize("stride", [1, 2])
def test_conv1d_then_gelu_by_taps_matches_onnxruntime(stride: int) -> None:
    """Whisper's front end: a 1-D Conv (80 -> 128 channels in the model, kernel 3) then an erf GELU, one
    ConvActivation step whose Conv is the taps (its bias and the GELU after it, in one pass)."""
    c, m, k = 12, 16, 3
    inits = [
        nh.from_array(RNG.standard_normal((m, c, k)).astype(np.float32), "w"),
        nh.from_array(RNG.standard_normal(m).astype(np.float32), "b"),
    ]
    f = TP.FLOAT
    nodes = [h.make_node("Conv", ["x", "w", "b"], ["t"], pads=[1, 1], strides=[stride], kernel_shape=[k])]
    nodes += [
        h.make_node("Div", ["t", "sqrt2"], ["d"]),
        h.make_node("Erf", ["d"], ["e"]),
        h.make_node("Add", ["e", "one"], ["p"]),
        h.make_node("Mul", ["t", "p"], ["q"]),
        h.make_node("Mul", ["q", "half"], ["y"]),
    ]
    inits += [nh.from_array(np.array(v, np.float32), n) for n, v in [("sqrt2", 2**0.5), ("one", 1.0), ("half", 0.5)]]
    model = _model(nodes, {"x": (f, [1, c, "L"])}, {"y": (f, [1, m, "O"])}, inits)
    for length in [32, 9, 32]:
        x = RNG.standard_normal((1, c, length)).astype(np.float32)
        s = onnxcore.Session(model)
        s.run(None, {"x": x})
        s.run(None, {"x": x})
        plan, _ = s._prepare(None, {"x": x}, False)
        steps = [bn.call for bn in plan.info if bn.node.op_type == "Conv"]
        assert len(steps) == 1 and isinstance(steps[0], ConvActivation) and isinstance(steps[0].call, Conv1dTaps)
        _same_as_onnxruntime(model, {"x": x}, rtol=1e-4)
