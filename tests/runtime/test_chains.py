"""Elementwise chains and trees run as one step writing into the buffers it made (issues 27 and 42,
runtime/optimize/chains.py): the same
results bit for bit as the graph as written (``intermediates=True``, Clause 8.2), close to onnxruntime's, for
every element type and broadcast; errors still name the node."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import onnxcore
from onnxcore import EvaluationError
from onnxcore.kernels.fused.elementwise import ElementwiseGraph

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto as TP  # noqa: E402
from onnx import helper as h  # noqa: E402
from onnx import numpy_helper  # noqa: E402

_ELEM = {np.float16: TP.FLOAT16, np.float32: TP.FLOAT, np.float64: TP.DOUBLE, np.int32: TP.INT32}


def _chain_model(dtype: Any, shape: list[int], c_shape: list[int], ops: list[tuple[str, str]]) -> bytes:
    """x -> ops in turn; each binary op reads the running value and ``c`` (a constant) or ``r`` (an input), in
    the order its spelling gives ("v,c" or "c,v")."""
    nodes = []
    prev = "x"
    for i, (op, order) in enumerate(ops):
        out = f"t{i}" if i < len(ops) - 1 else "y"
        ins = [prev] if not order else [prev if s == "v" else s for s in order.split(",")]
        nodes.append(h.make_node(op, ins, [out]))
        prev = out
    rng = np.random.default_rng(3)
    c = numpy_helper.from_array((rng.uniform(0.5, 2.0, c_shape)).astype(dtype), "c")
    elem = _ELEM[dtype]
    g = h.make_graph(
        nodes,
        "chain",
        [h.make_tensor_value_info("x", elem, shape), h.make_tensor_value_info("r", elem, c_shape)],
        [h.make_tensor_value_info("y", elem, list(np.broadcast_shapes(tuple(shape), tuple(c_shape))))],
        [c],
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 18)], ir_version=9)
    return bytes(m.SerializeToString())


# Tame enough that onnxruntime's results stay close (Exp's rounding differs between libraries; a chaotic chain
# would amplify it), and every operator of the in-place table.
_FLOAT_OPS = [
    ("Add", "v,c"),
    ("Relu", ""),
    ("Mul", "c,v"),
    ("Sqrt", ""),
    ("Div", "v,r"),
    ("Sub", "r,v"),
    ("Neg", ""),
    ("Tanh", ""),
    ("Exp", ""),
    ("Mul", "v,v"),
    ("Abs", ""),
    ("Add", "v,r"),
    ("Reciprocal", ""),
    ("Log", ""),
]
_ROUNDING_OPS = [("Mul", "v,c"), ("Floor", ""), ("Add", "v,r"), ("Ceil", ""), ("Relu", "")]


def _steps(sess: onnxcore.Session) -> list[Any]:
    return [type(step[0]) for step in sess._plan.steps]


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize(
    ("shape", "c_shape"),
    [([3, 5], [3, 5]), ([3, 5], [5]), ([2, 3, 5], [3, 1]), ([5], [3, 5]), ([4], [])],
    ids=["same", "bias", "inner", "grows", "scalar"],
)
@pytest.mark.parametrize("rounding", [False, True])
def test_a_chain_is_one_step_and_exact(dtype: Any, shape: list[int], c_shape: list[int], rounding: bool) -> None:
    data = _chain_model(dtype, shape, c_shape, _FLOAT_OPS + _ROUNDING_OPS if rounding else _FLOAT_OPS)
    sess = onnxcore.Session(data)
    # Add -> Relu is fused by an earlier rewrite (an in-place Relu); the rest is one step.
    assert ElementwiseGraph in _steps(sess) and len(_steps(sess)) <= 2
    rng = np.random.default_rng(0)
    feeds = {"x": rng.uniform(-2, 2, shape).astype(dtype), "r": rng.uniform(0.5, 2, c_shape).astype(dtype)}
    feeds["x"].flat[0] = np.nan
    for _ in range(3):  # interpreted, then compiled
        (got,) = sess.run(None, feeds)
        _outs, values = sess.run(None, feeds, intermediates=True)
        np.testing.assert_array_equal(got, values["y"])  # bit for bit (NaN where NaN)
        assert got.dtype == dtype
    # Feeds untouched (nothing written into a caller's array).
    assert np.isnan(feeds["x"].flat[0])
    if rounding:
        return  # Floor and Ceil turn a last-place difference into a unit: compared with the graph as written only
    ref = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    tol = 2e-2 if dtype == np.float16 else 1e-5
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol)


def test_integer_chain_runs_the_kernels_and_errors_name_the_node() -> None:
    ops = [("Add", "v,c"), ("Mul", "v,r"), ("Div", "v,r"), ("Neg", ""), ("Abs", "")]
    data = _chain_model(np.int32, [2, 3], [3], ops)
    sess = onnxcore.Session(data)
    assert _steps(sess) == [ElementwiseGraph]
    feeds = {"x": np.array([[1, -7, 9], [2**30, 5, -3]], np.int32), "r": np.array([3, -2, 5], np.int32)}
    (got,) = sess.run(None, feeds)
    np.testing.assert_array_equal(got, sess.run(None, feeds, intermediates=True)[1]["y"])
    ref = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(got, ref.run(None, feeds)[0])
    with pytest.raises(EvaluationError, match="integer division by zero") as info:
        sess.run(None, {**feeds, "r": np.array([3, 0, 5], np.int32)})
    assert "fused with it at plan time" in str(info.value)
    assert (2, "Div", "") in info.value.fused_nodes  # type: ignore[attr-defined]


def test_a_chain_of_kernel_calls_alone_stays_steps() -> None:
    # Pow (a kernel call in a group: no ufunc) then ReduceSum (a reduction, a call too): fused, the step would
    # call both kernels as the plan does and add its own dispatch; with an Add after the Pow (a ufunc) the group is
    # one step. Either way the values are the graph's.
    def model(ops: list[str]) -> bytes:
        nodes, prev = [], "x"
        for i, op in enumerate(ops):
            out = "y" if i == len(ops) - 1 else f"t{i}"
            if op == "Pow":
                nodes.append(h.make_node("Pow", [prev, "two"], [out]))
            elif op == "Add":
                nodes.append(h.make_node("Add", [prev, "x"], [out]))
            else:
                nodes.append(h.make_node("ReduceSum", [prev, "axes"], [out], keepdims=1))
            prev = out
        consts = [
            numpy_helper.from_array(np.array(2.0, np.float32), "two"),
            numpy_helper.from_array(np.array([1], np.int64), "axes"),
        ]
        vi = [h.make_tensor_value_info("x", TP.FLOAT, [None, 4]), h.make_tensor_value_info("y", TP.FLOAT, [None, None])]
        g = h.make_graph(nodes, "g", vi[:1], vi[1:], consts)
        return bytes(h.make_model(g, opset_imports=[h.make_opsetid("", 18)], ir_version=9).SerializeToString())

    x = np.array([[0.5, -1.5, 2.0, 3.0], [1.0, np.nan, -0.0, 4.0]], np.float32)
    for ops, fused in ((["Pow", "ReduceSum"], False), (["Pow", "Add", "ReduceSum"], True)):
        sess = onnxcore.Session(model(ops))
        assert (ElementwiseGraph in _steps(sess)) == fused, ops
        (got,) = sess.run(None, {"x": x})
        want = sess.run(None, {"x": x}, intermediates=True)[1]["y"]
        assert got.tobytes() == want.tobytes()


def test_an_intermediate_read_elsewhere_ends_the_chain() -> None:
    nodes = [
        h.make_node("Add", ["x", "x"], ["a"]),
        h.make_node("Exp", ["a"], ["b"]),
        h.make_node("Neg", ["b"], ["y"]),
        h.make_node("Sqrt", ["a"], ["z"]),
    ]
    vi = [h.make_tensor_value_info(n, TP.FLOAT, [4]) for n in ("x", "y", "z")]
    m = h.make_model(h.make_graph(nodes, "g", vi[:1], vi[1:]), opset_imports=[h.make_opsetid("", 18)])
    sess = onnxcore.Session(m.SerializeToString())
    x = np.array([0.5, 1.0, 2.0, 3.0], np.float32)
    y, z = sess.run(None, {"x": x})
    np.testing.assert_array_equal(y, -np.exp(x + x))
    np.testing.assert_array_equal(z, np.sqrt(x + x))  # "a" was not overwritten by the chain after it
    assert _steps(sess).count(ElementwiseGraph) == 1


# --- random elementwise graphs: trees, shared values, Where/Clip/Cast, a closing reduction ----------------------

_BIN = ["Add", "Sub", "Mul", "Div", "Sum", "Max", "Min"]
_UN = ["Abs", "Neg", "Exp", "Tanh", "Sigmoid", "Relu", "Sqrt", "Reciprocal", "Floor", "Erf", "Sin"]


def _random_graph(seed: int, elem: int, with_reduce: bool, rows: int = 3, cols: int = 5) -> tuple[bytes, int]:
    """A random graph of 6-14 elementwise nodes over x (rows, cols), r (cols,) and a constant c (cols,): operands
    drawn from every value made so far (so values are shared and trees form), Where of a comparison, Clip by
    constants, a Cast to double and back; sometimes an intermediate is a second graph output; a ReduceMean over the
    last axis ends it when ``with_reduce``. Returns the model and how many nodes it has."""
    rng = np.random.default_rng(seed)
    pool = ["x", "r", "c"]
    shape = {"x": (rows, cols), "r": (cols,), "c": (cols,)}
    nodes = []
    inits = [numpy_helper.from_array(rng.uniform(0.5, 1.5, [cols]).astype(_NP[elem]), "c")]
    inits += [numpy_helper.from_array(np.array(v, _NP[elem]), n) for n, v in (("lo", -0.5), ("hi", 1.5))]
    for i in range(int(rng.integers(6, 15))):
        out = f"v{i}"
        u = rng.random()
        # The first operand varies with the feeds (a value of constants alone would be folded), the second may not.
        varying = [v for v in pool if v != "c"]
        a = varying[int(rng.integers(max(0, len(varying) - 4), len(varying)))]
        b = pool[int(rng.integers(max(0, len(pool) - 4), len(pool)))]
        if u < 0.45:
            nodes.append(h.make_node(_BIN[int(rng.integers(len(_BIN)))], [a, b], [out]))
        elif u < 0.8:
            nodes.append(h.make_node(_UN[int(rng.integers(len(_UN)))], [a], [out]))
            b = a
        elif u < 0.88:
            nodes.append(h.make_node("Greater", [a, b], [f"g{i}"]))
            nodes.append(h.make_node("Where", [f"g{i}", a, b], [out]))
        elif u < 0.95:
            nodes.append(h.make_node("Clip", [a, "lo", "hi"], [out]))
            b = a
        else:
            nodes.append(h.make_node("Cast", [a], [f"d{i}"], to=TP.DOUBLE))
            nodes.append(h.make_node("Cast", [f"d{i}"], [out], to=elem))
            b = a
        shape[out] = np.broadcast_shapes(shape[a], shape[b])
        pool.append(out)
    # The last value read by nothing else is the output; combine it with the value before so both are used.
    nodes.append(h.make_node("Add", [pool[-1], pool[-2]], ["y0"]))
    last, last_shape = "y0", list(np.broadcast_shapes(shape[pool[-1]], shape[pool[-2]]))
    if with_reduce:
        inits.append(numpy_helper.from_array(np.array([-1], np.int64), "axes"))
        nodes.append(h.make_node("ReduceMean", ["y0", "axes"], ["y"], keepdims=1))
        last, last_shape = "y", last_shape[:-1] + [1]
    outputs = [h.make_tensor_value_info(last, elem, last_shape)]
    if rng.random() < 0.3:
        extra = pool[3 + int(rng.integers(len(pool) - 3))]
        outputs.append(h.make_tensor_value_info(extra, elem, list(shape[extra])))
    g = h.make_graph(
        nodes,
        "random",
        [h.make_tensor_value_info("x", elem, [rows, cols]), h.make_tensor_value_info("r", elem, [cols])],
        outputs,
        inits,
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 18)], ir_version=9)
    return bytes(m.SerializeToString()), len(nodes)


_NP = {TP.FLOAT16: np.float16, TP.FLOAT: np.float32, TP.DOUBLE: np.float64}


@pytest.mark.parametrize("elem", [TP.FLOAT, TP.DOUBLE, TP.FLOAT16])
@pytest.mark.parametrize("seed", range(12))
def test_random_elementwise_graphs_are_the_unfused_plan_bit_for_bit(seed: int, elem: int) -> None:
    data, n = _random_graph(seed, elem, with_reduce=seed % 3 == 0)
    fused = onnxcore.Session(data)
    unfused = onnxcore.Session(data, disabled_rewrites=["fuse_elementwise_chains"])
    assert "fuse_elementwise_chains" in fused.fired_rewrites()
    assert len(fused._plan.steps) < n
    rng = np.random.default_rng(seed)
    dt = _NP[elem]
    feeds = {"x": rng.uniform(-2, 2, (3, 5)).astype(dt), "r": rng.uniform(-2, 2, 5).astype(dt)}
    feeds["x"][0, 0] = np.nan
    before = {k: v.copy() for k, v in feeds.items()}
    with np.errstate(all="ignore"):
        for _ in range(3):  # interpreted, then compiled
            got = fused.run(None, feeds)
            want = unfused.run(None, feeds)
            for g, w in zip(got, want):
                assert g.dtype == w.dtype and g.shape == w.shape
                np.testing.assert_array_equal(g, w)  # bit for bit (NaN where NaN)
    for k, v in before.items():
        np.testing.assert_array_equal(feeds[k], v)  # nothing written into a caller's array


@pytest.mark.parametrize("elem", [TP.FLOAT, TP.DOUBLE, TP.FLOAT16])
@pytest.mark.parametrize("seed", range(12))
def test_graphs_of_one_element_values_are_the_unfused_plan_bit_for_bit(seed: int, elem: int) -> None:
    """A regressor's one value per row: x (1, 1), r and the constant c (1,). The step then makes new arrays where it
    would write into one (numpy writes into an array of one element more slowly), applies a kernel's ufunc itself
    where the kernel's checks have nothing to refuse, and reads c as (1, 1) where only ufuncs read it; the values
    are the graph's, bit for bit, interpreted and replayed, with and without the accelerator."""
    from onnxcore.kernels import accel

    data, _ = _random_graph(seed, elem, with_reduce=seed % 3 == 2, rows=1, cols=1)
    fused = onnxcore.Session(data)
    unfused = onnxcore.Session(data, disabled_rewrites=["fuse_elementwise_chains"])
    assert ElementwiseGraph in _steps(fused)
    rng = np.random.default_rng(seed)
    dt = _NP[elem]
    for on in (False, True):
        for k in range(4):  # the first call interprets, the later ones replay
            feeds = {"x": rng.uniform(-2, 2, (1, 1)).astype(dt), "r": rng.uniform(-2, 2, 1).astype(dt)}
            if k == 3:
                feeds["x"][0, 0] = np.nan
            before = {n: v.copy() for n, v in feeds.items()}
            with accel.use(on), np.errstate(all="ignore"):
                got = fused.run(None, feeds)
                want = unfused.run(None, feeds)
            for g, w in zip(got, want):
                assert g.dtype == w.dtype and g.shape == w.shape
                np.testing.assert_array_equal(g, w)
            for n, v in before.items():
                np.testing.assert_array_equal(feeds[n], v)


def test_a_replay_reads_a_constant_with_the_rank_of_its_readers() -> None:
    # (x * c + r) / c with x (1, 4), c a constant (4,): the replay reads c as (1, 4), x and c then have one shape
    # (numpy's fastest path); the values are the graph's.
    nodes = [
        h.make_node("Mul", ["x", "c"], ["m"]),
        h.make_node("Add", ["m", "r"], ["a"]),
        h.make_node("Div", ["a", "c"], ["y"]),
    ]
    c = numpy_helper.from_array(np.array([0.5, 1.5, 2.0, 3.0], np.float32), "c")
    g = h.make_graph(
        nodes,
        "aligned",
        [h.make_tensor_value_info("x", TP.FLOAT, ["n", 4]), h.make_tensor_value_info("r", TP.FLOAT, [4])],
        [h.make_tensor_value_info("y", TP.FLOAT, ["n", 4])],
        [c],
    )
    data = h.make_model(g, opset_imports=[h.make_opsetid("", 18)], ir_version=9).SerializeToString()
    sess = onnxcore.Session(data)
    assert _steps(sess) == [ElementwiseGraph]
    graph = sess._plan.steps[0][0]
    x = np.array([[1.0, -2.0, 3.0, 0.25]], np.float32)
    r = np.array([0.5, 0.5, -1.0, 2.0], np.float32)
    want = (x * np.array([0.5, 1.5, 2.0, 3.0], np.float32) + r) / np.array([0.5, 1.5, 2.0, 3.0], np.float32)
    from onnxcore.kernels import accel

    with accel.use(False):  # (the accelerator's loop would take this graph of IEEE operations: no replay)
        for _ in range(3):
            np.testing.assert_array_equal(sess.run(None, {"x": x, "r": r})[0], want)
    (replay,) = graph._replays.values()
    views = [v for k, v in replay.__globals__.items() if k.startswith("K")]
    assert [v.shape for v in views] == [(1, 4)]  # c; r is fed (not a constant), x has the rank already


def test_a_tree_reading_a_computed_value_twice_is_one_step() -> None:
    # a * exp(-a) of a computed a (a tree: a is read twice, no operator's pattern), then a residual Add and a
    # ReduceSum over the last axis: one step, the graph's values.
    nodes = [
        h.make_node("Mul", ["x", "w"], ["a"]),
        h.make_node("Neg", ["a"], ["n"]),
        h.make_node("Exp", ["n"], ["s"]),
        h.make_node("Mul", ["a", "s"], ["m"]),
        h.make_node("Add", ["m", "x"], ["t"]),
        h.make_node("ReduceSum", ["t", "axes"], ["y"], keepdims=0),
    ]
    inits = [
        numpy_helper.from_array(np.linspace(0.5, 1.5, 6).astype(np.float32), "w"),
        numpy_helper.from_array(np.array([-1], np.int64), "axes"),
    ]
    g = h.make_graph(
        nodes,
        "tree",
        [h.make_tensor_value_info("x", TP.FLOAT, [4, 6])],
        [h.make_tensor_value_info("y", TP.FLOAT, [4])],
        inits,
    )
    data = h.make_model(g, opset_imports=[h.make_opsetid("", 18)], ir_version=9).SerializeToString()
    sess = onnxcore.Session(data)
    assert _steps(sess) == [ElementwiseGraph]
    x = np.random.default_rng(1).standard_normal((4, 6)).astype(np.float32)
    (got,) = sess.run(None, {"x": x})
    (want,) = onnxcore.Session(data, disabled_rewrites=["fuse_elementwise_chains"]).run(None, {"x": x})
    np.testing.assert_array_equal(got, want)
    ref = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


# --- the compiled loop (accelerator) of graphs of correctly rounded operations ---------------------------------

_IEEE_BIN = ["Add", "Sub", "Mul", "Div", "Sum"]
_IEEE_UN = ["Neg", "Abs", "Sqrt", "Relu"]


def _ieee_graph(seed: int, elem: int) -> bytes:
    """A random tree of correctly rounded operations over x (4, 6), a row r (6,), a single value s (1,), a column k
    (4, 1) and a constant row c: what the compiled loop computes."""
    rng = np.random.default_rng(seed)
    pool = ["x", "r", "s", "c"]
    nodes = []
    for i in range(int(rng.integers(5, 12))):
        a = ["x", *pool[4:]][int(rng.integers(0, len(pool) - 3))]
        b = pool[int(rng.integers(0, len(pool)))]
        if rng.random() < 0.6:
            nodes.append(h.make_node(_IEEE_BIN[int(rng.integers(len(_IEEE_BIN)))], [a, b], [f"v{i}"]))
        else:
            nodes.append(h.make_node(_IEEE_UN[int(rng.integers(len(_IEEE_UN)))], [a], [f"v{i}"]))
        pool.append(f"v{i}")
    nodes.append(h.make_node(_IEEE_BIN[seed % len(_IEEE_BIN)], [pool[-1], "k"], ["by_row"]))
    nodes.append(h.make_node("Add", ["by_row", "x"], ["y"]))
    c = numpy_helper.from_array(rng.uniform(-2, 2, 6).astype(_NP[elem]), "c")
    g = h.make_graph(
        nodes,
        "ieee",
        [h.make_tensor_value_info(n, elem, s) for n, s in (("x", [4, 6]), ("r", [6]), ("s", [1]), ("k", [4, 1]))],
        [h.make_tensor_value_info("y", elem, [4, 6])],
        [c],
    )
    return bytes(h.make_model(g, opset_imports=[h.make_opsetid("", 18)], ir_version=9).SerializeToString())


@pytest.mark.parametrize("elem", [TP.FLOAT, TP.DOUBLE])
@pytest.mark.parametrize("seed", range(10))
def test_compiled_elementwise_graphs_are_numpys_bit_for_bit(seed: int, elem: int) -> None:
    from onnxcore.kernels import accel

    if not accel.available():
        pytest.skip("the accelerator is not available (numba not installed, or ONNXCORE_ACCEL=0)")
    data = _ieee_graph(seed, elem)
    sess = onnxcore.Session(data)
    assert _steps(sess) == [ElementwiseGraph]
    unfused = onnxcore.Session(data, disabled_rewrites=["fuse_elementwise_chains"])
    rng = np.random.default_rng(100 + seed)
    dt = _NP[elem]
    x = rng.uniform(-3, 3, (4, 6)).astype(dt)
    x.flat[:5] = [np.nan, -0.0, 0.0, np.inf, -np.inf]  # NaN, signed zeros and infinities through every operation
    feeds = {"x": x, "r": rng.uniform(-3, 3, 6).astype(dt), "s": np.array([-0.0], dt)}
    feeds["k"] = rng.uniform(-3, 3, (4, 1)).astype(dt)
    with np.errstate(all="ignore"):
        (want,) = unfused.run(None, feeds)
        with accel.use(False):
            (numpy_path,) = sess.run(None, feeds)
        with accel.use(True):
            before = len(accel.jit_ew()._loops)
            (got,) = sess.run(None, feeds)
            assert len(accel.jit_ew()._loops) >= max(before, 1)  # the compiled loop ran (made here or before)
        # operands that are not C-contiguous (a Fortran-ordered x, a strided column) take the interpreted path
        strided = dict(feeds, x=np.asfortranarray(x), k=np.repeat(feeds["k"], 2, axis=1)[:, :1])
        with accel.use(True):
            (got_strided,) = sess.run(None, strided)
    for v in (got, numpy_path, got_strided):
        assert v.dtype == want.dtype
        np.testing.assert_array_equal(v, want)
        # -0.0 where the kernels give -0.0; a NaN is a NaN (its sign bit is the hardware's choice, not a value)
        num = ~np.isnan(want)
        assert np.array_equal(np.signbit(v[num]), np.signbit(want[num]))


@pytest.mark.parametrize("elem", [TP.FLOAT, TP.DOUBLE, TP.FLOAT16])
@pytest.mark.parametrize("seed", range(12))
def test_a_graph_replays_what_it_decided_for_a_signature(seed: int, elem: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """After the first call with operands of one signature (types, shapes, element types), a graph runs the
    decisions it made then as one generated function: the interpreter's values bit for bit, for every signature
    met (the rows of the operands alternating), without writing into an operand, with the accelerator off too."""
    from onnxcore.kernels import accel

    data, _ = _random_graph(seed, elem, with_reduce=seed % 3 == 1)
    sess = onnxcore.Session(data)
    calls: list[tuple[ElementwiseGraph, tuple[Any, ...]]] = []
    real = ElementwiseGraph.__call__

    def spy(self: ElementwiseGraph, *args: Any) -> Any:
        calls.append((self, args))
        return real(self, *args)

    rng = np.random.default_rng(seed)
    dt = _NP[elem]
    feeds = {"x": rng.uniform(-2, 2, (3, 5)).astype(dt), "r": rng.uniform(-2, 2, 5).astype(dt)}
    monkeypatch.setattr(ElementwiseGraph, "__call__", spy)
    with accel.use(False), np.errstate(all="ignore"):
        sess.run(None, feeds)
    monkeypatch.setattr(ElementwiseGraph, "__call__", real)
    assert calls
    with accel.use(False), np.errstate(all="ignore"):
        for graph, args in calls:
            graph._replays.clear()
            for rows in (3, 1, 3, 4, 1):  # signatures met again after others
                # Every operand of the input's rows (3, 5) takes `rows` rows; the others are as the plan gave them.
                ops = [
                    rng.uniform(-2, 2, (rows, 5)).astype(dt) if getattr(a, "shape", None) == (3, 5) else a for a in args
                ]
                before = [np.array(o, copy=True) for o in ops]
                want = graph._interpret(tuple(np.array(o, copy=True) for o in ops), None)
                got = graph(*ops)
                assert type(got) is type(want) and got.dtype == want.dtype and got.shape == want.shape
                np.testing.assert_array_equal(got, want)
                for o, b in zip(ops, before):
                    np.testing.assert_array_equal(o, b)
            varies = any(getattr(a, "shape", None) == (3, 5) for a in args)
            assert len(graph._replays) == (3 if varies else 1)


def test_a_replay_keeps_the_operand_order_of_what_it_writes_into() -> None:
    # Sub and Div whose computed operand comes second: written into as uf(other, value, value).
    nodes = [
        h.make_node("Exp", ["x"], ["e"]),
        h.make_node("Sub", ["r", "e"], ["d"]),
        h.make_node("Div", ["r", "d"], ["q"]),
        h.make_node("Tanh", ["q"], ["y"]),
    ]
    g = h.make_graph(
        nodes,
        "order",
        [h.make_tensor_value_info("x", TP.FLOAT, ["n", 5]), h.make_tensor_value_info("r", TP.FLOAT, [5])],
        [h.make_tensor_value_info("y", TP.FLOAT, ["n", 5])],
    )
    data = h.make_model(g, opset_imports=[h.make_opsetid("", 18)], ir_version=9).SerializeToString()
    sess = onnxcore.Session(data)
    rng = np.random.default_rng(5)
    r = rng.uniform(1, 2, 5).astype(np.float32)
    for rows in (3, 3, 2, 2):
        x = rng.uniform(-1, 1, (rows, 5)).astype(np.float32)
        want = np.tanh(r / (r - np.exp(x)))
        np.testing.assert_array_equal(sess.run(None, {"x": x, "r": r})[0], want)


@pytest.mark.parametrize(("dtype", "elem"), [(np.float64, TP.DOUBLE), (np.float32, TP.FLOAT)])
def test_affine_chain_of_a_rank_0_value(dtype: Any, elem: int) -> None:
    # Regression: a Mul -> Add chain on a rank-0 float64 value (fused into an AffineChain) gave x + 0 on every run:
    # the chain's placeholder for "the previous run" had shape () and a dtype of None, which numpy compares equal
    # to float64's. Clause 8.2: the fused step gives the nodes' values.
    graph = h.make_graph(
        [h.make_node("Mul", ["x", "a"], ["m"]), h.make_node("Add", ["m", "b"], ["y"])],
        "scalar_chain",
        [h.make_tensor_value_info("x", elem, [])],
        [h.make_tensor_value_info("y", elem, [])],
        [numpy_helper.from_array(np.array(2.0, dtype), "a"), numpy_helper.from_array(np.array(1.0, dtype), "b")],
    )
    data = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)], ir_version=9).SerializeToString()
    sess = onnxcore.Session(data)
    for v in (3.0, -0.25, 3.0):
        (y,) = sess.run(None, {"x": np.array(v, dtype)})
        assert y.dtype == dtype and y.shape == () and float(y) == 2.0 * v + 1.0
    assert "fuse_affine_chains" in sess.fired_rewrites()
