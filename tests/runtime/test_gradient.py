"""Gradient-1 (``ai.onnx.preview.training``): reverse-mode differentiation of the enclosing graph.

Oracles: the two cases of the onnx project's former Gradient test (and its shipped test data when the onnx
wheel carries it); central finite differences in float64 for every rule, on random shapes (broadcasting
included) and attributes, across the attribute and input forms of each operator's versions; analytic numpy
formulas for MatMul, Gemm, Conv and Softmax. Then the definition's cases (an intermediate tensor in xs, zs,
skipped outputs, an x y does not depend on, a non-scalar y) and the refusals at session construction.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import onnxcore
from onnxcore.errors import UnsupportedOperatorError

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as TP  # noqa: E402
from onnx import helper, numpy_helper  # noqa: E402

TRAINING = "ai.onnx.preview.training"
_ELEM = {np.dtype(np.float64): TP.DOUBLE, np.dtype(np.float32): TP.FLOAT, np.dtype(np.float16): TP.FLOAT16}


def _elem(v: np.ndarray) -> int:
    return _ELEM.get(v.dtype, TP.INT64 if v.dtype == np.int64 else TP.BOOL)


def _model(
    nodes: list[Any],
    feeds: dict[str, np.ndarray],
    outputs: list[tuple[str, int, Any]],
    *,
    opset: int = 13,
    inits: dict[str, np.ndarray] | None = None,
) -> Any:
    ins = [helper.make_tensor_value_info(n, _elem(v), list(v.shape)) for n, v in feeds.items()]
    outs = [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs]
    init = [numpy_helper.from_array(v, n) for n, v in (inits or {}).items()]
    g = helper.make_graph(nodes, "grad", ins, outs, initializer=init)
    return helper.make_model(
        g, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(TRAINING, 1)], ir_version=8
    )


def _grad_node(xs: list[str], y: str, zs: list[str] | None = None, outs: list[str] | None = None) -> Any:
    outs = [f"d_{x}" for x in xs] if outs is None else outs
    kw: dict[str, Any] = {"xs": xs, "y": y}
    if zs:
        kw["zs"] = zs
    return helper.make_node("Gradient", xs + (zs or []), outs, domain=TRAINING, name="grad", **kw)


def gradients(
    nodes: list[Any],
    feeds: dict[str, np.ndarray],
    xs: list[str],
    y: str = "Y",
    *,
    opset: int = 13,
    inits: dict[str, np.ndarray] | None = None,
    zs: list[str] | None = None,
) -> list[np.ndarray]:
    """dsum(Y)/dx for each x of xs, through onnxcore.Session."""
    grad = _grad_node(xs, y, zs)
    outs = [(f"d_{x}", _elem(feeds[x]), list(feeds[x].shape)) for x in xs]
    m = _model([*nodes, grad], feeds, outs, opset=opset, inits=inits)
    return list(onnxcore.Session(m).run(None, feeds))


def finite_differences(
    nodes: list[Any],
    feeds: dict[str, np.ndarray],
    xs: list[str],
    y: str = "Y",
    *,
    opset: int = 13,
    inits: dict[str, np.ndarray] | None = None,
    eps: float = 1e-6,
) -> list[np.ndarray]:
    """Central differences of sum(Y) in float64."""
    # The oracle's output has no declared shape, which validation requires: it is run unchecked.
    sess = onnxcore.Session(_model(nodes, feeds, [(y, TP.DOUBLE, None)], opset=opset, inits=inits), check=False)

    def f(fd: dict[str, np.ndarray]) -> float:
        return float(np.sum(sess.run([y], fd)[0]))

    out = []
    for x in xs:
        base = feeds[x]
        g = np.zeros(base.shape)
        for idx in np.ndindex(base.shape):
            hi, lo = np.array(base), np.array(base)
            h = eps * max(1.0, abs(float(base[idx])))
            hi[idx] += h
            lo[idx] -= h
            g[idx] = (f({**feeds, x: hi}) - f({**feeds, x: lo})) / (2 * h)
        out.append(g)
    return out


def check(
    nodes: list[Any],
    feeds: dict[str, np.ndarray],
    xs: list[str] | None = None,
    *,
    opset: int = 13,
    inits: dict[str, np.ndarray] | None = None,
    zs: list[str] | None = None,
) -> list[np.ndarray]:
    xs = [n for n, v in feeds.items() if v.dtype == np.float64] if xs is None else xs
    got = gradients(nodes, feeds, xs, opset=opset, inits=inits, zs=zs)
    want = finite_differences(nodes, feeds, xs, opset=opset, inits=inits)
    for x, a, b in zip(xs, got, want):
        assert a.shape == feeds[x].shape and a.dtype == feeds[x].dtype, x
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7, err_msg=x)
    return got


def _node(op: str, ins: list[str], outs: list[str] | None = None, **attrs: Any) -> Any:
    return helper.make_node(op, ins, outs or ["Y"], **attrs)


def _away(rng: np.random.Generator, shape: tuple[int, ...], lo: float = 0.2, hi: float = 2.0) -> np.ndarray:
    """Random values with magnitudes in [lo, hi) and random signs: away from the kinks at 0."""
    return np.asarray(rng.uniform(lo, hi, shape) * rng.choice([-1.0, 1.0], shape))


def _i64(*v: int) -> np.ndarray:
    return np.array(v, np.int64)


# ---------------------------------------------------------------------------------------------
# The onnx project's former Gradient test
# ---------------------------------------------------------------------------------------------


def test_gradient_of_add() -> None:
    a, b = np.array(1.0, np.float32), np.array(2.0, np.float32)
    nodes = [_node("Add", ["a", "b"], ["c"]), _grad_node(["a", "b"], "c", outs=["dc_da", "dc_db"])]
    m = _model(
        nodes, {"a": a, "b": b}, [("c", TP.FLOAT, []), ("dc_da", TP.FLOAT, []), ("dc_db", TP.FLOAT, [])], opset=12
    )
    c, da, db = onnxcore.Session(m).run(None, {"a": a, "b": b})
    assert c == 3 and da == 1 and db == 1
    assert da.dtype == np.float32 and da.shape == ()


def test_gradient_of_add_and_mul() -> None:
    a, b = np.array(1.0, np.float32), np.array(2.0, np.float32)
    nodes = [
        _node("Add", ["a", "b"], ["c"]),
        _node("Mul", ["c", "a"], ["d"]),
        _grad_node(["a", "b"], "d", outs=["dd_da", "dd_db"]),
    ]
    m = _model(
        nodes, {"a": a, "b": b}, [("d", TP.FLOAT, []), ("dd_da", TP.FLOAT, []), ("dd_db", TP.FLOAT, [])], opset=12
    )
    d, da, db = onnxcore.Session(m).run(None, {"a": a, "b": b})
    assert d == 3 and da == 2 * a + b and db == a


@pytest.mark.parametrize("name", ["test_gradient_of_add", "test_gradient_of_add_and_mul"])
def test_shipped_gradient_data(name: str) -> None:
    d = Path(onnx.__file__).parent / "backend" / "test" / "data" / "simple" / name
    if not d.exists():
        pytest.skip("the onnx wheel does not ship this case")
    m = onnx.load(str(d / "model.onnx"))
    sess = onnxcore.Session(m.SerializeToString())
    for ds in sorted(d.glob("test_data_set_*")):
        ins = [numpy_helper.to_array(onnx.load_tensor(str(p))) for p in sorted(ds.glob("input_*.pb"))]
        want = [numpy_helper.to_array(onnx.load_tensor(str(p))) for p in sorted(ds.glob("output_*.pb"))]
        got = sess.run(None, {vi.name: v for vi, v in zip(m.graph.input, ins)})
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-6)


# ---------------------------------------------------------------------------------------------
# Every rule against central finite differences
# ---------------------------------------------------------------------------------------------

Case = dict[str, Any]
R = np.random.Generator


def _unary_cases() -> dict[str, Callable[[R], Case]]:
    def positive(rng: R, s: tuple[int, ...]) -> np.ndarray:
        return np.asarray(rng.uniform(0.3, 2.0, s))

    cases: dict[str, Callable[[R], Case]] = {}
    specs: list[tuple[str, dict[str, Any], Callable[[R, tuple[int, ...]], np.ndarray], int]] = [
        ("Identity", {}, _away, 13),
        ("Neg", {}, _away, 6),
        ("Abs", {}, _away, 13),
        ("Sqrt", {}, positive, 13),
        ("Reciprocal", {}, _away, 6),
        ("Exp", {}, _away, 13),
        ("Log", {}, positive, 13),
        ("Tanh", {}, _away, 13),
        ("Sigmoid", {}, _away, 6),
        ("Relu", {}, _away, 14),
        ("LeakyRelu", {"alpha": 0.3}, _away, 16),
        ("LeakyRelu", {}, _away, 6),
        ("Elu", {"alpha": 0.7}, _away, 22),
        ("Softplus", {}, _away, 13),
        ("Sin", {}, _away, 7),
        ("Cos", {}, _away, 22),
        ("Erf", {}, _away, 13),
        ("Cast", {"to": TP.DOUBLE}, _away, 19),
    ]
    for op, attrs, gen, opset in specs:

        def build(rng: R, op: str = op, attrs: dict[str, Any] = attrs, gen: Any = gen, opset: int = opset) -> Case:
            shape = tuple(int(d) for d in rng.integers(1, 4, rng.integers(0, 4)))
            return {"nodes": [_node(op, ["X"], **attrs)], "feeds": {"X": gen(rng, shape)}, "opset": opset}

        cases[f"{op}-{opset}{'-attrs' if attrs else ''}"] = build
    return cases


def _shapes_broadcasting(rng: R, n: int) -> list[tuple[int, ...]]:
    full = tuple(int(d) for d in rng.integers(1, 4, rng.integers(1, 4)))
    out = []
    for _ in range(n):
        drop = int(rng.integers(0, len(full) + 1))
        s = [1 if rng.random() < 0.4 else d for d in full[drop:]]
        out.append(tuple(s))
    out[0] = full
    rng.shuffle(out)
    return out


def _binary(op: str, opset: int) -> Callable[[R], Case]:
    def build(rng: R) -> Case:
        sa, sb = _shapes_broadcasting(rng, 2)
        a = rng.uniform(0.5, 2.0, sa) if op == "Pow" else _away(rng, sa)
        b = rng.uniform(-1.5, 1.5, sb) if op == "Pow" else _away(rng, sb)
        return {"nodes": [_node(op, ["A", "B"])], "feeds": {"A": a, "B": b}, "opset": opset}

    return build


def _legacy_binary(op: str) -> Callable[[R], Case]:
    def build(rng: R) -> Case:  # before opset 7: B matches a run of A's axes starting at ``axis``
        a = _away(rng, (2, 3, 4))
        b = rng.uniform(0.5, 1.5, (3,))
        return {"nodes": [_node(op, ["A", "B"], broadcast=1, axis=1)], "feeds": {"A": a, "B": b}, "opset": 6}

    return build


def _variadic(op: str, opset: int) -> Callable[[R], Case]:
    def build(rng: R) -> Case:
        shapes = _shapes_broadcasting(rng, 3) if opset >= 8 else [(2, 3)] * 3
        feeds = {
            f"X{i}": rng.permutation(np.linspace(-2, 2, int(np.prod(s)))).reshape(s) + 0.01 * i
            for i, s in enumerate(shapes)
        }
        return {"nodes": [_node(op, list(feeds))], "feeds": feeds, "opset": opset}

    return build


def _where(rng: R) -> Case:
    sc, sx, sy = _shapes_broadcasting(rng, 3)
    feeds = {"X": _away(rng, sx), "Z": _away(rng, sy)}
    cond = rng.random(sc) < 0.5
    return {"nodes": [_node("Where", ["C", "X", "Z"])], "feeds": feeds, "inits": {"C": cond}, "opset": 16}


def _clip_attrs(rng: R) -> Case:
    x = rng.choice([-1.0, 1.0], (3, 4)) * rng.uniform(0.1, 3.0, (3, 4))
    x[np.abs(np.abs(x) - 1.0) < 0.1] = 0.5
    return {"nodes": [_node("Clip", ["X"], min=-1.0, max=1.0)], "feeds": {"X": x}, "opset": 6}


def _clip_inputs(rng: R) -> Case:
    x = rng.choice([-1.0, 1.0], (3, 4)) * rng.uniform(0.1, 3.0, (3, 4))
    x[np.abs(np.abs(x) - 1.0) < 0.1] = 0.5
    feeds = {"X": x, "lo": np.array(-1.0), "hi": np.array(1.0)}
    return {"nodes": [_node("Clip", ["X", "lo", "hi"])], "feeds": feeds, "opset": 13}


def _shape_cases() -> dict[str, Callable[[R], Case]]:
    def one(
        op: str, opset: int, xshape: tuple[int, ...], *ins: tuple[str, np.ndarray], **attrs: Any
    ) -> Callable[[R], Case]:
        def build(rng: R) -> Case:
            inits = dict(ins)
            return {
                "nodes": [_node(op, ["X", *inits], **attrs)],
                "feeds": {"X": rng.normal(size=xshape)},
                "inits": inits,
                "opset": opset,
            }

        return build

    return {
        "Reshape-1": one("Reshape", 1, (2, 3, 2), shape=[3, 4]),
        "Reshape-14": one("Reshape", 14, (2, 3, 2), ("s", _i64(-1, 2, 0))),
        "Flatten-13": one("Flatten", 13, (2, 3, 2), axis=2),
        "Squeeze-11": one("Squeeze", 11, (2, 1, 3, 1), axes=[1, -1]),
        "Squeeze-13": one("Squeeze", 13, (2, 1, 3, 1), ("a", _i64(1))),
        "Unsqueeze-13": one("Unsqueeze", 13, (2, 3), ("a", _i64(0, -1))),
        "Transpose-13": one("Transpose", 13, (2, 3, 4), perm=[1, 2, 0]),
        "Transpose-default": one("Transpose", 1, (2, 3, 4)),
        "Slice-1": one("Slice", 1, (4, 5), starts=[1, 0], ends=[3, 10], axes=[0, 1]),
        "Slice-13": one(
            "Slice", 13, (4, 5, 3), ("st", _i64(-1, 1)), ("en", _i64(-5, 5)), ("ax", _i64(1, 0)), ("sp", _i64(-2, 2))
        ),
        "Gather-13": one("Gather", 13, (4, 3), ("i", _i64(3, 0, 3, -1)), axis=0),
        "Gather-axis1": one("Gather", 11, (2, 4, 3), ("i", np.array([[1, 1], [2, 0]], np.int64)), axis=1),
        "GatherElements-13": one(
            "GatherElements", 13, (3, 3), ("i", np.array([[0, 2], [1, 1], [2, 2]], np.int64)), axis=1
        ),
        "Expand-13": one("Expand", 13, (3, 1), ("s", _i64(2, 3, 4))),
        "Tile-13": one("Tile", 13, (2, 3), ("r", _i64(2, 3))),
        "Pad-13": one("Pad", 13, (2, 3), ("p", _i64(1, 0, 0, 2)), mode="reflect"),
        "Pad-2": one("Pad", 2, (2, 3), pads=[1, 1, 0, 2], value=0.5),
        "DepthToSpace-13": one("DepthToSpace", 13, (1, 8, 2, 2), blocksize=2, mode="CRD"),
        "Split-13": lambda rng: {
            "nodes": [
                _node("Split", ["X", "sp"], ["a", "b"], axis=1),
                _node("Mul", ["a", "a"], ["a2"]),
                _node("Concat", ["b", "a2"], ["Y"], axis=1),
            ],
            "feeds": {"X": rng.normal(size=(2, 5))},
            "inits": {"sp": _i64(2, 3)},
            "opset": 13,
        },
        "Split-18": lambda rng: {
            "nodes": [_node("Split", ["X"], ["a", "b", "c"], axis=0, num_outputs=3), _node("Mul", ["a", "c"], ["Y"])],
            "feeds": {"X": rng.normal(size=(3, 2))},
            "opset": 18,
        },
        "Split-2-unused": lambda rng: {
            "nodes": [_node("Split", ["X"], ["a", "b"], axis=1, split=[1, 3]), _node("Exp", ["b"], ["Y"])],
            "feeds": {"X": rng.normal(size=(2, 4))},
            "opset": 2,
        },
        "Concat-4": lambda rng: {
            "nodes": [_node("Concat", ["X", "Z", "X"], axis=0)],
            "feeds": {"X": rng.normal(size=(1, 3)), "Z": rng.normal(size=(2, 3))},
            "opset": 4,
        },
    }


def _reduce(op: str, opset: int, keepdims: int, form: str) -> Callable[[R], Case]:
    def build(rng: R) -> Case:
        shape = (2, 3, 4)
        x = rng.permutation(np.linspace(0.5, 2.5, 24)).reshape(shape) * rng.choice([-1.0, 1.0], shape)
        if op in ("ReduceLogSum", "ReduceL1"):
            x = np.abs(x)
        inits: dict[str, np.ndarray] = {}
        attrs: dict[str, Any] = {"keepdims": keepdims}
        ins = ["X"]
        if form == "attr":
            attrs["axes"] = [0, -1]
        elif form == "input":
            inits["ax"] = _i64(-1, 1)
            ins.append("ax")
        return {"nodes": [_node(op, ins, **attrs)], "feeds": {"X": x}, "inits": inits, "opset": opset}

    return build


def _softmax(op: str, opset: int, axis: int | None) -> Callable[[R], Case]:
    def build(rng: R) -> Case:
        attrs = {} if axis is None else {"axis": axis}
        feeds = {"X": rng.normal(size=(2, 3, 4)), "W": rng.normal(size=(2, 3, 4))}
        # Weighted, so that the sum's gradient does not vanish for Softmax.
        nodes = [_node(op, ["X"], ["S"], **attrs), _node("Mul", ["S", "W"])]
        return {"nodes": nodes, "feeds": feeds, "opset": opset}

    return build


def _matmul(sa: tuple[int, ...], sb: tuple[int, ...]) -> Callable[[R], Case]:
    return lambda rng: {
        "nodes": [_node("MatMul", ["A", "B"])],
        "feeds": {"A": rng.normal(size=sa), "B": rng.normal(size=sb)},
        "opset": 13,
    }


def _gemm(opset: int, ta: int, tb: int, sc: tuple[int, ...] | None, **extra: Any) -> Callable[[R], Case]:
    def build(rng: R) -> Case:
        m, k, n = 3, 4, 2
        feeds = {"A": rng.normal(size=(k, m) if ta else (m, k)), "B": rng.normal(size=(n, k) if tb else (k, n))}
        if sc is not None:
            feeds["C"] = rng.normal(size=sc)
        attrs = {"alpha": 0.7, "beta": 1.3, "transA": ta, "transB": tb, **extra}
        return {"nodes": [_node("Gemm", list(feeds), **attrs)], "feeds": feeds, "opset": opset}

    return build


def _conv(xs: tuple[int, ...], ws: tuple[int, ...], bias: bool, opset: int = 11, **attrs: Any) -> Callable[[R], Case]:
    def build(rng: R) -> Case:
        feeds = {"X": rng.normal(size=xs), "W": rng.normal(size=ws)}
        if bias:
            feeds["B"] = rng.normal(size=(ws[0],))
        return {"nodes": [_node("Conv", list(feeds), **attrs)], "feeds": feeds, "opset": opset}

    return build


def _batchnorm(opset: int, **attrs: Any) -> Callable[[R], Case]:
    def build(rng: R) -> Case:
        c: tuple[int, ...] = (3,) if attrs.get("spatial", 1) else (3, 2, 3)  # spatial=0: one per feature
        feeds = {
            "X": rng.normal(size=(2, 3, 2, 3)),
            "scale": rng.normal(size=c),
            "bias": rng.normal(size=c),
            "mean": rng.normal(size=c),
            "var": rng.uniform(0.5, 2.0, c),
        }
        nodes = [_node("BatchNormalization", list(feeds), ["B"], **attrs), _node("Mul", ["B", "B"])]
        return {"nodes": nodes, "feeds": feeds, "opset": opset}

    return build


def _pool(op: str, opset: int, xs: tuple[int, ...], n_out: int = 1, **attrs: Any) -> Callable[[R], Case]:
    def build(rng: R) -> Case:
        x = rng.permutation(np.linspace(-2, 2, int(np.prod(xs)))).reshape(xs)  # distinct: no ties
        outs = ["P", "I"][:n_out]
        nodes = [_node(op, ["X"], outs, **attrs), _node("Mul", ["P", "P"])]
        return {"nodes": nodes, "feeds": {"X": x}, "opset": opset}

    return build


FAMILIES: dict[str, dict[str, Callable[[R], Case]]] = {
    "unary": _unary_cases(),
    "binary": {
        **{f"{op}-{v}": _binary(op, v) for op in ("Add", "Sub", "Mul", "Div", "Pow") for v in (7, 14)},
        **{f"{op}-legacy": _legacy_binary(op) for op in ("Add", "Sub", "Mul", "Div")},
    },
    "variadic": {f"{op}-{v}": _variadic(op, v) for op in ("Sum", "Mean", "Max", "Min") for v in (6, 13)},
    "select": {"Where-16": _where, "Clip-6": _clip_attrs, "Clip-13": _clip_inputs},
    "shape": _shape_cases(),
    "reduce": {
        **{
            f"{op}-{v}-{k}-{f}": _reduce(op, v, k, f)
            for op in (
                "ReduceMean",
                "ReduceSumSquare",
                "ReduceL2",
                "ReduceMax",
                "ReduceMin",
                "ReduceL1",
                "ReduceLogSum",
                "ReduceLogSumExp",
            )
            for v, f in ((13, "attr"), (18, "input"), (18, "all"))
            for k in (0, 1)
        },
        **{
            f"ReduceSum-{v}-{k}-{f}": _reduce("ReduceSum", v, k, f)
            for v, f in ((11, "attr"), (13, "input"), (13, "all"))
            for k in (0, 1)
        },
        "ReduceSum-13-noop": lambda rng: {
            "nodes": [_node("ReduceSum", ["X"], ["R"], noop_with_empty_axes=1), _node("Mul", ["R", "R"])],
            "feeds": {"X": rng.normal(size=(2, 3))},
            "opset": 13,
        },
    },
    "softmax": {
        f"{op}-{v}-{axis}": _softmax(op, v, axis)
        for op in ("Softmax", "LogSoftmax")
        for v, axis in ((1, None), (11, 1), (11, -1), (13, None), (13, 1))
    },
    "matmul": {
        "2d": _matmul((3, 4), (4, 2)),
        "nd-broadcast": _matmul((2, 1, 3, 4), (3, 4, 2)),
        "1d-left": _matmul((4,), (2, 4, 3)),
        "1d-right": _matmul((2, 3, 4), (4,)),
        "1d-both": _matmul((4,), (4,)),
    },
    "gemm": {
        "13-noC": _gemm(13, 0, 0, None),
        "13-row": _gemm(13, 1, 0, (2,)),
        "11-col": _gemm(11, 0, 1, (3, 1)),
        "9-full": _gemm(9, 1, 1, (3, 2)),
        "6-broadcast": _gemm(6, 0, 0, (1,), broadcast=1),
    },
    "conv": {
        "2d": _conv((2, 3, 5, 5), (4, 3, 3, 3), True),
        "2d-strided": _conv((1, 2, 7, 6), (3, 2, 3, 2), False, strides=[2, 2], pads=[1, 0, 2, 1], dilations=[1, 2]),
        "2d-groups": _conv((1, 4, 5, 5), (6, 2, 2, 3), True, group=2, strides=[1, 2]),
        "1d": _conv((2, 2, 9), (3, 2, 3), True, opset=1, dilations=[2], pads=[2, 1]),
        "3d-same": _conv(
            (1, 2, 4, 3, 5), (2, 1, 3, 2, 2), False, opset=22, group=2, auto_pad="SAME_UPPER", strides=[2, 1, 2]
        ),
    },
    "pool": {
        "avg-1": _pool("AveragePool", 1, (1, 2, 5, 5), kernel_shape=[2, 3], pads=[1, 0, 1, 1], strides=[2, 1]),
        "avg-7-include": _pool(
            "AveragePool", 7, (2, 1, 5, 4), kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1
        ),
        "avg-10-ceil": _pool("AveragePool", 10, (1, 2, 6, 5), kernel_shape=[3, 2], strides=[2, 2], ceil_mode=1),
        "avg-19-dilated": _pool(
            "AveragePool", 19, (1, 1, 7, 6), kernel_shape=[2, 2], dilations=[2, 3], pads=[0, 1, 1, 0]
        ),
        "avg-22-ceil": _pool(
            "AveragePool",
            22,
            (1, 1, 6, 6),
            kernel_shape=[3, 3],
            strides=[3, 3],
            pads=[1, 1, 1, 1],
            ceil_mode=1,
            count_include_pad=1,
        ),
        "avg-1d-same": _pool("AveragePool", 11, (2, 2, 7), kernel_shape=[3], strides=[2], auto_pad="SAME_UPPER"),
        "max-1": _pool("MaxPool", 1, (1, 2, 5, 5), kernel_shape=[2, 2], pads=[1, 1, 0, 0]),
        "max-8-indices": _pool("MaxPool", 8, (2, 1, 4, 6), 2, kernel_shape=[2, 3], strides=[2, 3]),
        "max-10-ceil": _pool("MaxPool", 10, (1, 2, 5, 5), kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1),
        "max-12-dilated": _pool("MaxPool", 12, (1, 1, 6, 7), kernel_shape=[2, 3], dilations=[2, 2], pads=[1, 1, 1, 1]),
        "max-22-3d": _pool("MaxPool", 22, (1, 1, 4, 4, 4), kernel_shape=[2, 2, 2], strides=[1, 2, 2]),
    },
    "batchnorm": {
        "15": _batchnorm(15),
        "9": _batchnorm(9, epsilon=1e-3),
        "7": _batchnorm(7),
        "6-is_test": _batchnorm(6, is_test=1),
        "7-non-spatial": _batchnorm(7, spatial=0),
    },
}


@pytest.mark.parametrize("family", list(FAMILIES))
def test_rules_against_finite_differences(family: str) -> None:
    for i, (name, build) in enumerate(FAMILIES[family].items()):
        rng = np.random.default_rng(1000 + i)
        case = build(rng)
        try:
            check(case["nodes"], case["feeds"], opset=case["opset"], inits=case.get("inits"))
        except Exception as e:
            raise AssertionError(f"{family}/{name}: {e}") from e


# ---------------------------------------------------------------------------------------------
# Analytic formulas: MatMul, Gemm, Conv, Softmax
# ---------------------------------------------------------------------------------------------


def test_matmul_analytic() -> None:
    rng = np.random.default_rng(1)
    a, b, w = rng.normal(size=(2, 1, 3, 4)), rng.normal(size=(5, 4, 2)), rng.normal(size=(2, 5, 3, 2))
    # y = sum(W * (A @ B)): dA = sum over the broadcast batch of W @ B^T, dB = A^T @ W.
    nodes = [_node("MatMul", ["A", "B"], ["P"]), _node("Mul", ["P", "W"])]
    da, db = gradients(nodes, {"A": a, "B": b}, ["A", "B"], inits={"W": w})
    np.testing.assert_allclose(da, (w @ np.swapaxes(b, -1, -2)).sum(axis=1, keepdims=True), rtol=1e-12)
    np.testing.assert_allclose(db, (np.swapaxes(a, -1, -2) @ w).sum(axis=0), rtol=1e-12)


def test_gemm_analytic() -> None:
    rng = np.random.default_rng(2)
    a, b, c, w = rng.normal(size=(4, 3)), rng.normal(size=(2, 4)), rng.normal(size=(1, 2)), rng.normal(size=(3, 2))
    nodes = [_node("Gemm", ["A", "B", "C"], ["P"], alpha=0.5, beta=2.0, transA=1, transB=1), _node("Mul", ["P", "W"])]
    da, db, dc = gradients(nodes, {"A": a, "B": b, "C": c}, ["A", "B", "C"], inits={"W": w})
    # P = 0.5 A^T B^T + 2 C: dA = 0.5 (W B)^T... written out: dA^T = 0.5 W B, dB^T = 0.5 A W.
    np.testing.assert_allclose(da, 0.5 * (w @ b).T, rtol=1e-12)
    np.testing.assert_allclose(db, 0.5 * (a @ w).T, rtol=1e-12)
    np.testing.assert_allclose(dc, 2.0 * w.sum(axis=0, keepdims=True), rtol=1e-12)


def test_conv_analytic() -> None:
    rng = np.random.default_rng(3)
    x, k, w = rng.normal(size=(2, 2, 5, 6)), rng.normal(size=(3, 2, 2, 3)), rng.normal(size=(2, 3, 2, 2))
    s = 2  # stride 2, pads 1 on every side: out = floor((5 + 2 - 2) / 2) + 1 = 3 by floor((6 + 2 - 3) / 2) + 1 = 3
    nodes = [_node("Conv", ["X", "K"], ["P"], strides=[s, s], pads=[1, 1, 1, 1]), _node("Mul", ["P", "W"])]
    w = rng.normal(size=(2, 3, 3, 3))
    dx, dk = gradients(nodes, {"X": x, "K": k}, ["X", "K"], inits={"W": w})
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    want_x = np.zeros_like(xp)
    want_k = np.zeros_like(k)
    for n, m, i, j in np.ndindex(2, 3, 3, 3):
        window = xp[n, :, i * s : i * s + 2, j * s : j * s + 3]
        want_k[m] += w[n, m, i, j] * window
        want_x[n, :, i * s : i * s + 2, j * s : j * s + 3] += w[n, m, i, j] * k[m]
    np.testing.assert_allclose(dx, want_x[:, :, 1:-1, 1:-1], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dk, want_k, rtol=1e-12)


def test_softmax_analytic() -> None:
    rng = np.random.default_rng(4)
    x, w = rng.normal(size=(3, 5)), rng.normal(size=(3, 5))
    (dx,) = gradients(
        [_node("Softmax", ["X"], ["S"], axis=1), _node("Mul", ["S", "W"])], {"X": x}, ["X"], inits={"W": w}
    )
    e = np.exp(x - x.max(axis=1, keepdims=True))
    y = e / e.sum(axis=1, keepdims=True)
    # The Jacobian of each row is diag(y) - y y^T.
    want = np.stack([(np.diag(r) - np.outer(r, r)) @ g for r, g in zip(y, w)])
    np.testing.assert_allclose(dx, want, rtol=1e-12, atol=1e-14)


# ---------------------------------------------------------------------------------------------
# The definition's cases
# ---------------------------------------------------------------------------------------------


def _conv_gemm(grad: Any, outs: list[tuple[str, int, Any]], feeds: dict[str, np.ndarray]) -> Any:
    """The definition's graph: W --> Conv(X) --> H --> Gemm(Z) --> Y, then a Gradient node."""
    nodes = [
        _node("Conv", ["X", "W"], ["H4"]),
        _node("Flatten", ["H4"], ["H"]),
        _node("Gemm", ["H", "Z"], ["Y"]),
        grad,
    ]
    return _model(nodes, feeds, outs)


def test_gradient_with_respect_to_an_intermediate() -> None:
    rng = np.random.default_rng(5)
    feeds = {"X": rng.normal(size=(2, 1, 3, 3)), "W": rng.normal(size=(2, 1, 2, 2)), "Z": rng.normal(size=(8, 3))}
    grad = helper.make_node("Gradient", ["H", "Z"], ["dH", "dZ"], domain=TRAINING, xs=["H", "Z"], y="Y")
    m = _conv_gemm(grad, [("dH", TP.DOUBLE, [2, 8]), ("dZ", TP.DOUBLE, [8, 3])], feeds)
    out, values = onnxcore.Session(m).run(None, feeds, intermediates=True)
    dh, dz = out
    h = values["H"]
    np.testing.assert_allclose(dh, np.ones((2, 3)) @ feeds["Z"].T, rtol=1e-12)
    np.testing.assert_allclose(dz, h.T @ np.ones((2, 3)), rtol=1e-12)


def test_zs_and_skipped_outputs() -> None:
    rng = np.random.default_rng(6)
    feeds = {"X": rng.normal(size=(2, 1, 3, 3)), "W": rng.normal(size=(2, 1, 2, 2)), "Z": rng.normal(size=(8, 3))}
    # xs = [W, Z], zs = [X]; the first output (dY/dW) is skipped.
    grad = helper.make_node("Gradient", ["W", "Z", "X"], ["", "dZ"], domain=TRAINING, xs=["W", "Z"], zs=["X"], y="Y")
    m = _conv_gemm(grad, [("dZ", TP.DOUBLE, [8, 3])], feeds)
    (dz,) = onnxcore.Session(m).run(None, feeds)
    conv = onnxcore.Session(
        _model(
            [_node("Conv", ["X", "W"], ["H4"])], {"X": feeds["X"], "W": feeds["W"]}, [("H4", TP.DOUBLE, [2, 2, 2, 2])]
        )
    )
    h = conv.run(None, {"X": feeds["X"], "W": feeds["W"]})[0].reshape(2, 8)
    np.testing.assert_allclose(dz, h.T @ np.ones((2, 3)), rtol=1e-12)
    # and dY/dW against finite differences, X held as a zs value
    check(_conv_gemm(grad, [], feeds).graph.node[:3], feeds, ["W", "Z"], zs=["X"])


def test_x_that_y_does_not_depend_on_gets_zeros() -> None:
    x, u = np.array([1.0, 2.0], np.float32), np.ones((2, 3), np.float16)
    nodes = [_node("Mul", ["X", "X"], ["Y"]), _node("Neg", ["U"], ["V"])]
    nodes.append(helper.make_node("Gradient", ["X", "U"], ["dX", "dU"], domain=TRAINING, xs=["X", "U"], y="Y"))
    m = _model(nodes, {"X": x, "U": u}, [("dX", TP.FLOAT, [2]), ("dU", TP.FLOAT16, [2, 3])])
    dx, du = onnxcore.Session(m).run(None, {"X": x, "U": u})
    np.testing.assert_array_equal(dx, 2 * x)
    assert du.dtype == np.float16 and du.shape == (2, 3) and not du.any()


def test_non_scalar_y_is_summed() -> None:
    rng = np.random.default_rng(7)
    x = rng.normal(size=(3, 4))
    (dx,) = gradients([_node("Tanh", ["X"])], {"X": x}, ["X"])
    np.testing.assert_allclose(dx, 1 - np.tanh(x) ** 2, rtol=1e-12)


def test_float16_rounds_once() -> None:
    x = np.array([0.5, -1.25, 2.0], np.float16)
    (dx,) = gradients([_node("Mul", ["X", "X"], ["S"]), _node("Exp", ["S"])], {"X": x}, ["X"])
    # The forward values are the graph's own (float16); the backward pass runs in float32 and rounds once.
    xw = x.astype(np.float32)
    y16 = np.exp((x * x).astype(np.float32)).astype(np.float16)
    assert dx.dtype == np.float16
    np.testing.assert_array_equal(dx, (2 * xw * y16.astype(np.float32)).astype(np.float16))


def test_constant_nodes_and_initializers() -> None:
    rng = np.random.default_rng(8)
    x = rng.normal(size=(2, 6))
    shape = helper.make_node("Constant", [], ["s"], value=numpy_helper.from_array(_i64(3, 4)))
    nodes = [shape, _node("Reshape", ["X", "s"], ["R"]), _node("Mul", ["R", "K"])]
    k = rng.normal(size=(3, 4))
    check(nodes, {"X": x}, ["X"], inits={"K": k})


def test_overridden_initializer_reaches_the_gradient() -> None:
    x, k = np.array([1.0, 2.0]), np.array([3.0, 5.0])
    nodes = [_node("Mul", ["X", "K"], ["Y"]), _grad_node(["X"], "Y")]
    m = _model(nodes, {"X": x, "K": k}, [("d_X", TP.DOUBLE, [2])], inits={"K": k})
    sess = onnxcore.Session(m)
    np.testing.assert_array_equal(sess.run(None, {"X": x})[0], k)
    np.testing.assert_array_equal(sess.run(None, {"X": x, "K": 2 * k})[0], 2 * k)


# ---------------------------------------------------------------------------------------------
# Refusals at construction
# ---------------------------------------------------------------------------------------------


def _refused(nodes: list[Any], feeds: dict[str, np.ndarray], outs: list[tuple[str, int, Any]], match: str) -> None:
    m = _model(nodes, feeds, outs)
    with pytest.raises(UnsupportedOperatorError, match=match) as info:
        onnxcore.Session(m)
    assert "node" in str(info.value) and "Gradient" in str(info.value)
    assert info.value.operators == [(TRAINING, "Gradient", 1)]


_X = {"X": np.ones(3), "Z": np.ones(3)}
_DX: list[tuple[str, int, Any]] = [("d_X", TP.DOUBLE, [3])]


def test_refuses_an_op_without_a_rule() -> None:
    nodes = [_node("Floor", ["X"], ["F"]), _node("Add", ["F", "Z"]), _grad_node(["X"], "Y", zs=["Z"])]
    _refused(nodes, _X, _DX, r"node 0 \(Floor.*no differentiation rule")


def test_refuses_a_non_constant_input() -> None:
    nodes = [_node("Add", ["X", "Z"]), _grad_node(["X"], "Y")]
    _refused(nodes, _X, _DX, r"input 'Z' of node 0 \(Add\) is neither")


def test_refuses_an_unreachable_y() -> None:
    nodes = [_node("Neg", ["Z"]), _grad_node(["X"], "Y")]
    _refused(nodes, _X, _DX, r"y 'Y' is not computed from")
    _refused([_node("Neg", ["Z"]), _grad_node(["X"], "nowhere")], _X, _DX, r"'nowhere' is not computed in")


def test_refuses_higher_order() -> None:
    nodes = [
        _node("Mul", ["X", "X"]),
        helper.make_node("Gradient", ["X"], ["G"], domain=TRAINING, xs=["X"], y="Y", name="first"),
        helper.make_node("Gradient", ["X"], ["d_X"], domain=TRAINING, xs=["X"], y="G", name="second"),
    ]
    _refused(nodes, {"X": np.ones(3)}, _DX, r"name 'second'.*node 1 \(Gradient, name 'first'\).*higher-order")


def test_refuses_subgraphs_and_non_float_casts() -> None:
    then = helper.make_graph(
        [_node("Neg", ["X"], ["t"])], "then", [], [helper.make_tensor_value_info("t", TP.DOUBLE, [3])]
    )
    other = helper.make_graph(
        [_node("Abs", ["X"], ["e"])], "else", [], [helper.make_tensor_value_info("e", TP.DOUBLE, [3])]
    )
    nodes = [_node("If", ["c"], ["Y"], then_branch=then, else_branch=other), _grad_node(["X"], "Y")]
    m = _model(nodes, {"X": np.ones(3)}, _DX, inits={"c": np.array(True)})
    with pytest.raises(UnsupportedOperatorError, match=r"node 0 \(If\) on the path to y has subgraphs"):
        onnxcore.Session(m)
    nodes = [_node("Cast", ["X"], ["I"], to=TP.INT64), _node("Cast", ["I"], to=TP.DOUBLE), _grad_node(["X"], "Y")]
    _refused(nodes, {"X": np.ones(3)}, _DX, r"node 0 \(Cast.*not differentiable")


def test_refuses_integer_xs() -> None:
    nodes = [_node("Mul", ["X", "X"]), _grad_node(["X"], "Y")]
    _refused(nodes, {"X": np.ones(3, np.int64)}, [("d_X", TP.INT64, [3])], r"'X' is not a floating-point tensor")


# ---------------------------------------------------------------------------------------------
# Gradient in a subgraph and in a function body: the graph that immediately encloses it
# ---------------------------------------------------------------------------------------------


def _vi(name: str, shape: list[int], elem: int = TP.DOUBLE) -> Any:
    return helper.make_tensor_value_info(name, elem, shape)


def _if_model(then_nodes: list[Any], inputs: list[Any]) -> Any:
    then = helper.make_graph(then_nodes, "then", [], [_vi("G", [3])])
    other = helper.make_graph([_node("Neg", ["X"], ["G2"])], "else", [], [_vi("G2", [3])])
    g = helper.make_graph(
        [_node("If", ["c"], ["out"], then_branch=then, else_branch=other)],
        "g",
        [*inputs, _vi("c", [], TP.BOOL)],
        [_vi("out", [3])],
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(TRAINING, 1)])


def test_gradient_in_a_subgraph() -> None:
    x = np.array([1.0, 2.0, 3.0])
    nodes = [_node("Mul", ["X", "X"]), helper.make_node("Gradient", ["X"], ["G"], domain=TRAINING, xs=["X"], y="Y")]
    (out,) = onnxcore.Session(_if_model(nodes, [_vi("X", [3])])).run(None, {"X": x, "c": np.array(True)})
    np.testing.assert_array_equal(out, 2 * x)
    # a value of the enclosing scope that is not in xs/zs is not a constant of the subgraph
    nodes = [_node("Mul", ["X", "K"]), helper.make_node("Gradient", ["X"], ["G"], domain=TRAINING, xs=["X"], y="Y")]
    with pytest.raises(UnsupportedOperatorError, match=r"graph then/node 1 \(Gradient.*input 'K' of node 0 \(Mul\)"):
        onnxcore.Session(_if_model(nodes, [_vi("X", [3]), _vi("K", [3])]))


def test_gradient_in_a_function_body() -> None:
    f = helper.make_function(
        "local",
        "SquareGrad",
        ["A"],
        ["dA"],
        [
            _node("Mul", ["A", "A"], ["S"]),
            helper.make_node("Gradient", ["A"], ["dA"], domain=TRAINING, xs=["A"], y="S"),
        ],
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(TRAINING, 1)],
    )
    g = helper.make_graph(
        [helper.make_node("SquareGrad", ["X"], ["out"], domain="local")], "g", [_vi("X", [3])], [_vi("out", [3])]
    )
    imports = [helper.make_opsetid("", 17), helper.make_opsetid(TRAINING, 1), helper.make_opsetid("local", 1)]
    m = helper.make_model(g, opset_imports=imports, functions=[f])
    x = np.array([1.0, -2.0, 3.0])
    np.testing.assert_array_equal(onnxcore.Session(m).run(None, {"X": x})[0], 2 * x)


def test_refuses_batch_normalization_in_training_mode() -> None:
    c = {n: np.ones(2) for n in ("s", "b", "m", "v")}
    bn = _node("BatchNormalization", ["X", *c], ["Y", "rm", "rv"], training_mode=1)
    m = _model(
        [bn, _grad_node(["X"], "Y")], {"X": np.ones((2, 2, 3))}, [("d_X", TP.DOUBLE, [2, 2, 3])], opset=15, inits=c
    )
    with pytest.raises(UnsupportedOperatorError, match=r"node 0 \(BatchNormalization.*inference mode only"):
        onnxcore.Session(m)
