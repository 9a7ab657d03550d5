"""Isomorphic sibling nodes run as one step per group on stacked operands (issue 42, runtime/optimize/lanes.py and
kernels/fused/lanes.py; Clause 8.2): every output is what the plan without the rewrite gives, bit for bit, for
chains of elementwise nodes (stacked constants of other ranks, shared operands of a higher rank, NaN and infinite
values), gathers by shared data or shared indices, ArgMax, ReduceMax/ReduceProd (axes as attribute and as input),
Concat with a shared operand, Reshape, OneHotEncoder, read by a Sum (in another order), a Concat of lanes of two
groups, another node and the graph's outputs; at 0, 1, 3 and 17 rows, accelerator on and off. Lanes of different
shapes or large ones run lane by lane; a failing lane's error names that lane's node; nodes that depend on one
another, fewer than MIN_LANES nodes and Softmax are never grouped."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import onnxcore
from onnxcore import EvaluationError
from onnxcore.kernels import accel
from onnxcore.kernels.fused.lanes import MAX_BATCH_ELEMENTS, lane_kind
from onnxcore.runtime.optimize.lanes import MIN_LANES

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as TP  # noqa: E402
from onnx import helper as h  # noqa: E402
from onnx import numpy_helper as nh  # noqa: E402

_F = 6  # features


_Out = tuple[str, Any, int]  # an output's name, element type and rank


def _model(nodes: list[Any], inits: list[Any], outputs: list[_Out], *, opset: int = 17, x_shape: Any = None) -> bytes:
    graph = h.make_graph(
        nodes,
        "lanes",
        [h.make_tensor_value_info("x", TP.FLOAT, x_shape or ["n", _F])],
        [h.make_tensor_value_info(o, t, [None] * r) for o, t, r in outputs],
        initializer=inits,
    )
    opsets = [h.make_opsetid("", opset), h.make_opsetid("ai.onnx.ml", 3)]
    return h.make_model(graph, opset_imports=opsets, ir_version=9).SerializeToString()


def _const(name: str, v: np.ndarray) -> Any:
    return nh.from_array(np.asarray(v), name)


def _chains(rng: np.random.Generator, k: int, opset: int) -> bytes:
    """k lanes: column j of x (Gather of shared data by each lane's indices), then elementwise nodes with stacked
    constants of other ranks, a shared operand, Where/Cast/Less, a ReduceMax and a ReduceProd over the last axis,
    ArgMax; read by a Sum in reverse order, a Concat of two groups interleaved, a Concat of runs of two groups and
    another value, a Mul of one lane and the graph's outputs. Lanes may gather the same columns (common-subexpression
    elimination then merges their Gathers, and the next lanes read some lane twice)."""
    nodes, inits = [], [_const("shared", rng.standard_normal((1, 2)).astype(np.float32))]
    sums, cats, argmaxes, pairs = [], [], [], []
    for j in range(k):
        c = f"c{j}"
        inits += [
            _const(f"idx{j}", np.array(sorted(rng.choice(_F, 2, replace=False)), np.int64)),
            _const(f"s{j}", np.float32(rng.standard_normal())),  # rank 0 against rank 2
            _const(f"r{j}", rng.standard_normal(2).astype(np.float32)),  # a row
            _const(f"t{j}", np.float32(rng.standard_normal())),
        ]
        nodes += [
            h.make_node("Gather", ["x", f"idx{j}"], [f"{c}g"], axis=1),
            h.make_node("Div", [f"{c}g", f"s{j}"], [f"{c}m"]),
            h.make_node("Max", [f"{c}m", f"r{j}"], [f"{c}a"]),
            h.make_node("Sub", [f"{c}a", "shared"], [f"{c}b"]),
            h.make_node("Less", [f"{c}b", f"t{j}"], [f"{c}lt"]),
            h.make_node("Where", [f"{c}lt", f"{c}b", f"{c}a"], [f"{c}w"]),
            h.make_node("Exp", [f"{c}w"], [f"{c}e"]),
            h.make_node("ArgMax", [f"{c}e"], [f"{c}am"], axis=1, keepdims=1),
            h.make_node("Cast", [f"{c}am"], [f"{c}cf"], to=TP.FLOAT),
        ]
        if opset >= 18:
            inits.append(_const(f"ax{j}", np.array([1], np.int64)))
            nodes += [
                h.make_node("ReduceMax", [f"{c}e", f"ax{j}"], [f"{c}mx"], keepdims=1),
                h.make_node("ReduceProd", [f"{c}w", f"ax{j}"], [f"{c}pr"], keepdims=1),
            ]
        else:
            nodes += [
                h.make_node("ReduceMax", [f"{c}e"], [f"{c}mx"], axes=[1], keepdims=1),
                h.make_node("ReduceProd", [f"{c}w"], [f"{c}pr"], axes=[-1], keepdims=1),
            ]
        nodes.append(h.make_node("Add", [f"{c}mx", f"{c}pr"], [f"{c}out"]))
        sums.append(f"{c}cf")
        cats += [f"{c}pr", f"{c}cf"]
        pairs.append(f"{c}pr")
        argmaxes.append(f"{c}am")
    nodes += [
        h.make_node("Sum", sums[::-1], ["total"]),
        h.make_node("Concat", cats, ["joined"], axis=1),
        h.make_node("Concat", [*pairs[1:], "x", *sums], ["blocks"], axis=-1),
        h.make_node("Mul", ["c1pr", "c1pr"], ["squared"]),
        h.make_node("Sum", [f"c{j}out" for j in range(k)], ["outs"]),
    ]
    outs = [("total", TP.FLOAT, 2), ("joined", TP.FLOAT, 2), ("squared", TP.FLOAT, 2), ("c2e", TP.FLOAT, 2)]
    outs += [("outs", TP.FLOAT, 2), ("blocks", TP.FLOAT, 2)]
    return _model(nodes, inits, [*outs, (argmaxes[0], TP.INT64, 2)], opset=opset)


def _feeds(rng: np.random.Generator, rows: int) -> dict[str, np.ndarray]:
    x = (rng.standard_normal((rows, _F)) * 3).astype(np.float32)
    if rows >= 3:
        x[1, 2] = np.nan
        x[2, 0] = np.inf
        x[0, 4] = -np.inf
    return {"x": x}


def _same(a: Any, b: Any) -> bool:
    if not isinstance(a, np.ndarray):
        return bool(a == b)  # (a ZipMap's list of maps)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _check(data: bytes, feeds: dict[str, np.ndarray], *, fired: bool = True) -> None:
    lanes = onnxcore.Session(data)
    alone = onnxcore.Session(data, disabled_rewrites=["stack_lanes"])
    for on in (True, False):
        with accel.use(on):
            got, want = lanes.run(None, feeds), alone.run(None, feeds)
            for g, w in zip(got, want):
                assert _same(g, w)
    assert ("stack_lanes" in lanes.fired_rewrites()) is fired


@pytest.mark.parametrize("opset", [13, 17, 18])
@pytest.mark.parametrize("rows", [0, 1, 3, 17])
def test_chains_bit_for_bit(opset: int, rows: int) -> None:
    rng = np.random.default_rng(opset * 100 + rows)
    _check(_chains(rng, 6, opset), _feeds(rng, rows))


def test_repeated_runs_and_steps() -> None:
    rng = np.random.default_rng(3)
    data = _chains(rng, 8, 17)
    lanes = onnxcore.Session(data)
    alone = onnxcore.Session(data, disabled_rewrites=["stack_lanes"])
    for rows in (1, 5, 1, 40):  # (a plan compiled after its first runs, other shapes in between)
        feeds = _feeds(rng, rows)
        for g, w in zip(lanes.run(None, feeds), alone.run(None, feeds)):
            assert _same(g, w)
    kernels = [p.kernel for p in lanes.profile(_feeds(rng, 2), repeat=1)]
    assert "onnxcore.fused::Lanes" in kernels
    assert "onnxcore.fused::LaneFold" in kernels
    assert "onnxcore.fused::LaneConcat" in kernels
    assert len(kernels) < 30  # (8 lanes of 14 nodes and 3 readers: 115 steps without the rewrite)


def _encoders(k: int, rows_shape: Any = None) -> bytes:
    """A binning encoder as skl2onnx writes it: per column an ArrayFeatureExtractor, Cast, Less against the bin
    edges, Cast, Concat with a shared column, ArgMax, OneHotEncoder and Reshape; the columns joined by a Concat."""
    nodes, inits = [], [_const("edges_shape", np.array([-1, 5], np.int64)), _const("one", np.float32(1.0))]
    outs = []
    for j in range(k):
        c = f"c{j}"
        inits += [
            _const(f"col{j}", np.int64(j % _F)),
            _const(f"edges{j}", np.sort(np.random.default_rng(j).standard_normal(4)).astype(np.float32)),
        ]
        nodes += [
            h.make_node("ArrayFeatureExtractor", ["x", f"col{j}"], [f"{c}col"], domain="ai.onnx.ml"),
            h.make_node("Cast", [f"{c}col"], [f"{c}f"], to=TP.FLOAT),
            *([h.make_node("Mul", ["c0f", "one"], ["extra"])] if j == 0 else []),
            h.make_node("Less", [f"{c}f", f"edges{j}"], [f"{c}lt"]),
            h.make_node("Cast", [f"{c}lt"], [f"{c}lf"], to=TP.FLOAT),
            h.make_node("Concat", [f"{c}lf", "extra"], [f"{c}cat"], axis=1),
            h.make_node("ArgMax", [f"{c}cat"], [f"{c}am"], axis=1),
            h.make_node(
                "OneHotEncoder", [f"{c}am"], [f"{c}oh"], domain="ai.onnx.ml", cats_int64s=[0, 1, 2, 3, 4], zeros=1
            ),
            h.make_node("Reshape", [f"{c}oh", "edges_shape"], [f"{c}r"]),
        ]
        outs.append(f"{c}r")
    nodes.append(h.make_node("Concat", outs, ["encoded"], axis=1))
    return _model(nodes, inits, [("encoded", TP.FLOAT, 2)], x_shape=rows_shape)


@pytest.mark.parametrize("rows", [1, 4, 33])
def test_binning_encoder(rows: int) -> None:
    rng = np.random.default_rng(rows)
    _check(_encoders(7), _feeds(rng, rows))


def test_lanes_of_different_shapes_run_lane_by_lane() -> None:
    # Each lane reads its own input; shapes differ at run time, so the stacked form cannot apply.
    k = MIN_LANES + 1
    nodes = [h.make_node("Pow", [f"in{j}", f"w{j}"], [f"y{j}"]) for j in range(k)]
    nodes += [h.make_node("ArgMax", [f"y{j}"], [f"z{j}"], axis=-1) for j in range(k)]
    inits = [_const(f"w{j}", np.float32(j + 0.5)) for j in range(k)]
    graph = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info(f"in{j}", TP.FLOAT, ["a", f"b{j}"]) for j in range(k)],
        [h.make_tensor_value_info(f"z{j}", TP.INT64, ["a", 1]) for j in range(k)],
        initializer=inits,
    )
    data = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)], ir_version=9).SerializeToString()
    rng = np.random.default_rng(0)
    same = {f"in{j}": rng.standard_normal((2, 3)).astype(np.float32) for j in range(k)}
    mixed = {f"in{j}": rng.standard_normal((2, j + 1)).astype(np.float32) for j in range(k)}
    _check(data, same)
    _check(data, mixed)


def test_large_lanes_run_lane_by_lane() -> None:
    rng = np.random.default_rng(1)
    rows = MAX_BATCH_ELEMENTS // (2 * MIN_LANES) + 1  # (two columns per lane: past the bound)
    _check(_chains(rng, MIN_LANES, 17), _feeds(rng, rows))


def test_error_names_the_failing_lane() -> None:
    # Each lane gathers one column; the fifth lane's column is beyond a narrow input's last extent.
    k = MIN_LANES + 1
    nodes = [h.make_node("Gather", ["x", f"i{j}"], [f"g{j}"], axis=1, name=f"gather{j}") for j in range(k)]
    nodes += [h.make_node("Neg", [f"g{j}"], [f"y{j}"]) for j in range(k)]
    inits = [_const(f"i{j}", np.array([j], np.int64)) for j in range(k)]
    data = _model(nodes, inits, [(f"y{j}", TP.FLOAT, 2) for j in range(k)], x_shape=["n", "m"])
    sess = onnxcore.Session(data)
    x = np.ones((2, k - 1), np.float32)
    with pytest.raises(EvaluationError, match="gather4"):
        sess.run(None, {"x": x})
    assert "stack_lanes" in sess.fired_rewrites()


def test_not_grouped() -> None:
    rng = np.random.default_rng(2)
    # A chain of Mul nodes (each reads the one before: one lane each level), three lanes, Softmax lanes.
    nodes = [h.make_node("Mul", ["x" if j == 0 else f"m{j - 1}", f"w{j}"], [f"m{j}"]) for j in range(6)]
    nodes += [h.make_node("Add", ["x", f"w{j}"], [f"a{j}"]) for j in range(MIN_LANES - 1)]
    nodes += [h.make_node("Softmax", [f"a{j % 3}"], [f"s{j}"], axis=j % 2) for j in range(6)]
    inits = [_const(f"w{j}", rng.standard_normal(_F).astype(np.float32)) for j in range(6)]
    outs = [("m5", TP.FLOAT, 2), *[(f"s{j}", TP.FLOAT, 2) for j in range(6)]]
    _check(_model(nodes, inits, outs), _feeds(rng, 3), fired=False)


def test_lane_kinds() -> None:
    assert lane_kind("", "Add", "") == "map"
    assert lane_kind("", "Add", "AffineChain") is None  # (coefficients held by the step)
    assert lane_kind("", "Mul", "ElementwiseGraph", ["Add", "Exp"]) == "map"
    assert lane_kind("", "Mul", "ElementwiseGraph", ["ReduceSum"]) is None
    assert lane_kind("", "Softmax", "") is None
    assert lane_kind("", "ReduceSum", "") is None  # (its summation order is the kernel's choice)
    assert lane_kind("", "ReduceProd", "") == "axis"
    assert lane_kind("ai.onnx.ml", "ArrayFeatureExtractor", "TakeColumns") == "take"
    assert lane_kind("ai.onnx.ml", "OneHotEncoder", "") == "map"
    assert lane_kind("com.example", "Add", "") is None


def test_skl2onnx_polynomial_and_binning() -> None:
    skl2onnx = pytest.importorskip("skl2onnx")
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import KBinsDiscretizer, PolynomialFeatures

    rng = np.random.default_rng(5)
    x = rng.standard_normal((60, 4)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(np.int64)
    models = [
        make_pipeline(PolynomialFeatures(3), Ridge()).fit(x, x[:, 0]),
        make_pipeline(KBinsDiscretizer(4, encode="onehot-dense"), LogisticRegression()).fit(x, y),
    ]
    for model in models:
        onx = skl2onnx.to_onnx(model, x[:1], target_opset={"": 17, "ai.onnx.ml": 3})
        data = onx.SerializeToString()
        for rows in (1, 16):
            _check(data, {"X": x[:rows]} if onx.graph.input[0].name == "X" else {onx.graph.input[0].name: x[:rows]})


def test_graph_outputs_are_arrays_of_their_own() -> None:
    # Every lane of four groups a graph output (a Gather, a Reshape of it, a Cast to the type the lane has already,
    # a Relu): no output shares memory with another or with the feed (Clause 8.2: a fused step changes no value's
    # ownership), though a Reshape's stacked value is a view of the Gathers'.
    k = MIN_LANES
    nodes = [h.make_node("Gather", ["x", f"i{j}"], [f"g{j}"], axis=0) for j in range(k)]  # (rows: contiguous)
    nodes += [h.make_node("Reshape", [f"g{j}", "flat"], [f"v{j}"]) for j in range(k)]
    nodes += [h.make_node("Cast", [f"v{j}"], [f"c{j}"], to=TP.FLOAT) for j in range(k)]
    nodes += [h.make_node("Relu", [f"c{j}"], [f"r{j}"]) for j in range(k)]
    nodes.append(h.make_node("Cast", ["x"], ["same"], to=TP.FLOAT))
    pairs = [[0, 1], [1, 2], [2, 0], [0, 2], [2, 1], [1, 0]]
    inits = [_const(f"i{j}", np.array(pairs[j], np.int64)) for j in range(k)]
    inits.append(_const("flat", np.array([-1])))
    outs = [(f"{v}{j}", TP.FLOAT, 2 if v == "g" else 1) for v in "gvcr" for j in range(k)]
    data = _model(nodes, inits, [*outs, ("same", TP.FLOAT, 2)])
    rng = np.random.default_rng(8)
    feeds = _feeds(rng, 3)
    _check(data, feeds)
    got = onnxcore.Session(data).run(None, feeds)
    for a in range(len(got)):
        assert not np.shares_memory(got[a], feeds["x"])
        for b in range(a):
            assert not np.shares_memory(got[a], got[b])


_ELEM = {np.dtype(np.float32): TP.FLOAT, np.dtype(np.float64): TP.DOUBLE, np.dtype(np.float16): TP.FLOAT16}


def _calibrations(rng: np.random.Generator, k: int, shared: bool, relu: bool, dtype: Any = np.float32) -> bytes:
    """k sigmoid calibrations as a calibrated classifier writes them, one per lane: ``1 / (1 + exp(x * a + b))`` with
    each lane's own single-value constants (fused into one elementwise graph per lane whose affine chain holds them),
    on a column of x per lane (Gather) or on x itself (shared); read by a Concat. With ``relu`` the chain closes
    with a Relu. Values of ``dtype`` throughout."""
    dt = np.dtype(dtype)
    nodes, inits = [], [_const("one", np.ones((1, 1), dt))]
    cols = []
    for j in range(k):
        src = "x"
        if not shared:
            inits.append(_const(f"idx{j}", np.array([j % _F], np.int64)))
            nodes.append(h.make_node("Gather", ["x", f"idx{j}"], [f"col{j}"], axis=1))
            src = f"col{j}"
        inits += [
            _const(f"a{j}", np.full((1, 1), rng.standard_normal() * 2, dt)),
            _const(f"b{j}", dt.type(rng.standard_normal())),
        ]
        nodes += [
            h.make_node("Mul", [src, f"a{j}"], [f"m{j}"]),
            h.make_node("Add", [f"m{j}", f"b{j}"], [f"t{j}"]),
        ]
        if relu:
            nodes.append(h.make_node("Relu", [f"t{j}"], [f"r{j}"]))
        nodes += [
            h.make_node("Exp", [f"r{j}" if relu else f"t{j}"], [f"e{j}"]),
            h.make_node("Add", ["one", f"e{j}"], [f"d{j}"]),
            h.make_node("Div", ["one", f"d{j}"], [f"p{j}"]),
        ]
        cols.append(f"p{j}")
    nodes.append(h.make_node("Concat", cols, ["probs"], axis=1))
    elem = _ELEM[dt]
    graph = h.make_graph(
        nodes,
        "calibrations",
        [h.make_tensor_value_info("x", elem, ["n", _F])],
        [h.make_tensor_value_info("probs", elem, [None, None]), h.make_tensor_value_info("p1", elem, [None, None])],
        initializer=inits,
    )
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 17)], ir_version=9).SerializeToString()


def _lane_chains(data: bytes, feeds: dict[str, np.ndarray]) -> list[Any]:
    """The LaneAffine steps of the plan a session makes for ``feeds``."""
    steps = [fn for fn, *_rest in onnxcore.Session(data)._prepare(None, feeds, False)[0].steps]
    return [
        call
        for fn in steps
        if type(fn).__name__ == "Lanes"
        for call, *_rest in getattr(fn.fn, "program", ())
        if type(call).__name__ == "LaneAffine"
    ]


@pytest.mark.parametrize("shared", [False, True])
@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("rows", [0, 1, 3, 9])
def test_graphs_differing_in_their_chain_constants_run_as_one(shared: bool, relu: bool, rows: int) -> None:
    # Sibling elementwise graphs whose affine chains differ only in their single-value constants (a calibrated
    # classifier's per-class sigmoids) are one group, each lane's chain applied to its lane (LaneAffine): the bits
    # of the lanes alone. Nine lanes and nine rows: a shared x whose first extent is the lane count too.
    rng = np.random.default_rng(31 + rows + 2 * shared + 4 * relu)
    data = _calibrations(rng, 9, shared, relu)
    _check(data, _feeds(rng, rows))
    chains = _lane_chains(data, _feeds(rng, 3))
    assert len(chains) == 1 and len(chains[0].chains) == 9


@pytest.mark.parametrize("dtype", [np.float64, np.float16])
@pytest.mark.parametrize("shared", [False, True])
def test_chain_constant_lanes_of_other_float_types(dtype: Any, shared: bool) -> None:
    # float64 graphs hold affine chains (LaneAffine in the stacked program) as float32 ones do; float16 graphs hold
    # none (their Mul and Add stay elementwise nodes, stacked constants): the bits of the lanes alone either way.
    rng = np.random.default_rng(57 + shared)
    data = _calibrations(rng, 9, shared, False, dtype)
    for rows in (1, 9):
        feeds = {"x": _feeds(rng, rows)["x"].astype(dtype)}
        _check(data, feeds)
        assert len(_lane_chains(data, feeds)) == (1 if dtype == np.float64 else 0)
