"""Tensor kernels (runtime/ops/tensor.py, tensor_layout.py): ONNX 1-3 node cases and onnxruntime.

The node cases run through ``node_harness`` (single-node cases only). The differential tests
build one-node models with onnx.helper at several opset versions (so each since_version of an
operator is exercised), run them in onnxruntime, and compare with our kernel bound the same
way (greatest since_version <= the model's opset, Clause 14.4).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "runtime"))

onnx = pytest.importorskip("onnx")

from node_harness import assert_close  # noqa: E402

from kernels import assert_every_version_has_a_kernel, assert_node_case, single_node_cases  # noqa: E402
from onnxcore.errors import EvaluationError, OnnxCoreError  # noqa: E402
from onnxcore.kernels.registry import KernelContext, lookup  # noqa: E402
from onnxcore.kernels.tensor import cast_6  # noqa: E402
from onnxcore.types.convert import cast_array  # noqa: E402

TENSOR_OPS = frozenset(
    "Cast CastLike Concat Constant ConstantOfShape Expand EyeLike Flatten Identity Pad Range Reshape Shape "
    "Size Slice Split Squeeze Tile Transpose Unsqueeze DepthToSpace SpaceToDepth CenterCropPad".split()
)


CASES = single_node_cases(TENSOR_OPS, include_expanded=True)


def test_every_tensor_op_has_node_cases() -> None:
    ops = set()
    for param in CASES:
        m = onnx.load(str(param.values[0] / "model.onnx"), load_external_data=False)
        ops.add(m.graph.node[0].op_type)
    assert ops == TENSOR_OPS


@pytest.mark.parametrize("op", sorted(TENSOR_OPS))
def test_every_since_version_has_a_kernel(op: str) -> None:
    assert_every_version_has_a_kernel(op)


@pytest.mark.parametrize("case_dir", CASES)
def test_node_case(case_dir: Path) -> None:
    assert_node_case(case_dir)


# ---------------------------------------------------------------------------------------------
# Running one node in onnxruntime and in our kernels
# ---------------------------------------------------------------------------------------------


def _np_to_elem(arr: np.ndarray) -> int:
    return onnx.helper.np_dtype_to_tensor_dtype(arr.dtype) if arr.dtype != object else onnx.TensorProto.STRING


def run_ort_many(
    op: str, opset: int, cases: list[tuple[list[np.ndarray | None], dict[str, Any]]], n_out: int = 1
) -> list[list[np.ndarray]]:
    """Evaluate one ``op`` node per case in a single onnxruntime session (sessions are slow to make)."""
    ort = pytest.importorskip("onnxruntime")
    h = onnx.helper
    nodes, vis, outs, feeds, per_case = [], [], [], {}, []
    for c, (inputs, attrs) in enumerate(cases):
        inputs = list(inputs)
        while inputs and inputs[-1] is None:
            inputs.pop()
        names = [f"c{c}_i{k}" if x is not None else "" for k, x in enumerate(inputs)]
        o = [f"c{c}_o{k}" for k in range(n_out)]
        nodes.append(h.make_node(op, names, o, **attrs))
        vis += [h.make_tensor_value_info(n, _np_to_elem(x), x.shape) for n, x in zip(names, inputs) if x is not None]
        # onnxruntime reads STRING feeds as str objects (it would stringify bytes objects).
        feeds.update({n: _str_strings(x) for n, x in zip(names, inputs) if x is not None})
        outs += o
        per_case.append(o)
    graph = h.make_graph(nodes, "g", vis, [onnx.ValueInfoProto(name=o) for o in outs])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", opset)])
    model.ir_version = 8 if opset <= 18 else 10
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    got = dict(zip(outs, sess.run(outs, feeds)))
    return [[_bytes_strings(got[o]) for o in names] for names in per_case]


def run_ort(
    op: str, opset: int, inputs: list[np.ndarray | None], attrs: dict[str, Any] | None = None, n_out: int = 1
) -> list[np.ndarray]:
    return run_ort_many(op, opset, [(inputs, attrs or {})], n_out)[0]


def _str_strings(x: np.ndarray) -> np.ndarray:
    if x.dtype == object:
        return np.array([v.decode() if isinstance(v, bytes) else v for v in x.ravel()], dtype=object).reshape(x.shape)
    return x


def _bytes_strings(y: Any) -> Any:
    # onnxruntime returns STRING tensors as str objects; ours are octet strings (Clause 6.4).
    if isinstance(y, np.ndarray) and y.dtype == object:
        return np.array([v.encode() if isinstance(v, str) else v for v in y.ravel()], dtype=object).reshape(y.shape)
    return y


def _attr(v: Any) -> Any:
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, onnx.TensorProto):
        return onnx.numpy_helper.to_array(v)
    return v


def run_ours(
    op: str, opset: int, inputs: list[np.ndarray | None], attrs: dict[str, Any] | None = None, n_out: int = 1
) -> list[Any]:
    schema = onnx.defs.get_schema(op, opset, "")
    k = lookup("", op, schema.since_version)
    assert k is not None, f"no kernel for {op}-{schema.since_version}"
    kw = {a: _attr(v) for a, v in (attrs or {}).items()}
    args = list(inputs)
    while args and args[-1] is None:
        args.pop()
    if k.context:
        ctx = KernelContext(None, since_version=schema.since_version, opset_version=opset, num_outputs=n_out)
        out = k.fn(ctx, *args, **kw)
    else:
        out = k.fn(*args, **kw)
    return list(out) if isinstance(out, tuple) else [out]


def check_many(op: str, opset: int, cases: list[tuple[list[np.ndarray | None], dict[str, Any]]]) -> None:
    """Compare ours with onnxruntime on many single-output cases run in one session."""
    for (inputs, attrs), expected in zip(cases, run_ort_many(op, opset, cases)):
        (actual,) = run_ours(op, opset, inputs, attrs)[:1]
        assert_close(actual, expected[0], rtol=0, atol=0)


def check(
    op: str, opset: int, inputs: list[np.ndarray | None], attrs: dict[str, Any] | None = None, n_out: int = 1
) -> list[Any]:
    expected = run_ort(op, opset, inputs, attrs, n_out)
    actual = run_ours(op, opset, inputs, attrs, n_out)
    assert len(actual) >= len(expected)
    for a, e in zip(actual, expected):
        assert_close(a, e, rtol=0, atol=0)
    return actual


RNG = np.random.default_rng(1234)


def rand(*shape: int, dtype: Any = np.float32) -> np.ndarray:
    if np.dtype(dtype).kind in "iu":
        return RNG.integers(-50, 50, size=shape).astype(dtype)
    return RNG.standard_normal(shape).astype(dtype)


def i64(*v: int) -> np.ndarray:
    return np.array(v, dtype=np.int64)


# ---------------------------------------------------------------------------------------------
# Slice: every step sign and clamp case at each since_version
# ---------------------------------------------------------------------------------------------

INT_MAX = np.iinfo(np.int64).max
INT_MIN = np.iinfo(np.int64).min
_BOUNDS = [INT_MIN, -9, -5, -4, -1, 0, 1, 3, 4, 5, 9, INT_MAX]


def _slice_ref(dim: int, s: int, e: int, step: int) -> list[int]:
    # The effective starts/ends of Slice-13, transcribed literally.
    s = s + dim if s < 0 else s
    e = e + dim if e < 0 else e
    if step > 0:
        s, e = min(max(s, 0), dim), min(max(e, 0), dim)
    else:
        s, e = min(max(s, 0), dim - 1), min(max(e, -1), dim - 1)
    return list(range(s, e, step))


@pytest.mark.parametrize("opset", [10, 11, 13])
@pytest.mark.parametrize("step", [-INT_MAX, -3, -1, 1, 2, INT_MAX])
def test_slice_clamping_matches_ort(opset: int, step: int) -> None:
    x = rand(5, 3)
    data = np.stack([np.arange(5)] * 2, axis=1).astype(np.int64)
    cases: list[tuple[list[np.ndarray | None], dict[str, Any]]] = []
    for s in _BOUNDS:
        for e in _BOUNDS:
            ins: list[np.ndarray | None] = [x, i64(s), i64(e), i64(0), i64(step)]
            (ours,) = run_ours("Slice", opset, ins)
            assert np.array_equal(ours, x[_slice_ref(x.shape[0], s, e, step)])
            if step < 0 and e == INT_MAX:
                # onnxruntime reads ends=INT_MAX with a negative step as "through index 0";
                # the definition clamps it to dims-1 (an empty slice here), as we do.
                continue
            cases.append((ins, {}))
    check_many("Slice", opset, cases)
    # int32 starts/ends, negative axes (from 11), several axes at once, empty dims
    if opset >= 11:
        check(
            "Slice",
            opset,
            [
                data,
                np.array([-1, 0], np.int32),
                np.array([-6, 1], np.int32),
                np.array([0, -1], np.int32),
                np.array([-1, 1], np.int32),
            ],
        )
    check("Slice", opset, [np.zeros((0, 3), np.float32), i64(0, -1), i64(5, INT_MIN), i64(0, 1), i64(1, -1)])


@pytest.mark.parametrize(
    "starts,ends,axes", [([1, 0], [2, 3], [0, 1]), ([0, 1], [-1, 1000], None), ([-100], [100], [1])]
)
def test_slice_1_attributes(starts: list[int], ends: list[int], axes: list[int] | None) -> None:
    attrs: dict[str, Any] = {"starts": starts, "ends": ends}
    if axes is not None:
        attrs["axes"] = axes
    check("Slice", 9, [rand(4, 5)], attrs)


def test_slice_returns_view_and_strings() -> None:
    x = rand(6, 4)
    (y,) = run_ours("Slice", 13, [x, i64(1), i64(5), i64(0), i64(2)])
    assert np.shares_memory(x, y)
    s = np.array([b"a", b"bc", b"", b"d"], dtype=object)
    (z,) = run_ours("Slice", 13, [s, i64(-1), i64(INT_MIN), i64(0), i64(-2)])
    assert z.tolist() == [b"d", b"bc"]


# ---------------------------------------------------------------------------------------------
# Reshape, Squeeze, Unsqueeze, Flatten, Transpose
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("opset", [5, 13, 14, 21])
@pytest.mark.parametrize("shape", [[0, -1], [-1], [2, 0, 2, 2], [3, -1, 2], [0, 0, 0, 0], [24], [4, 6], [1, -1, 1]])
def test_reshape_matches_ort(opset: int, shape: list[int]) -> None:
    check("Reshape", opset, [rand(2, 3, 2, 2), i64(*shape)])


@pytest.mark.parametrize("opset", [14, 21])
def test_reshape_allowzero(opset: int) -> None:
    check("Reshape", opset, [np.zeros((0, 3), np.float32), i64(3, 0)], {"allowzero": 1})
    check("Reshape", opset, [rand(2, 3), i64(0, 3)], {"allowzero": 0})
    with pytest.raises(Exception, match="allowzero"):
        run_ours("Reshape", opset, [rand(2, 3), i64(0, -1)], {"allowzero": 1})


def test_reshape_1_attribute_and_view() -> None:
    x = rand(2, 3, 4)
    (y,) = run_ours("Reshape", 4, [x], {"shape": [0, -1]})
    assert y.shape == (2, 12) and np.shares_memory(x, y)
    check("Reshape", 13, [np.array([[b"a", b"b"], [b"c", b"d"]], dtype=object), i64(4)])


@pytest.mark.parametrize("opset", [11, 13, 21])
def test_squeeze_unsqueeze_matches_ort(opset: int) -> None:
    x = rand(1, 3, 1, 2)
    for axes in ([0], [-2], [0, -2], None):
        if opset < 13:
            check("Squeeze", opset, [x], {} if axes is None else {"axes": axes})
        else:
            check("Squeeze", opset, [x, None if axes is None else i64(*axes)])
    if opset >= 13:
        check("Squeeze", opset, [x, np.zeros(0, np.int64)])
    y = rand(3, 2)
    for axes in ([0], [-1], [0, 3], [-4, 1], [2, 0, -1]):
        if opset < 13:
            check("Unsqueeze", opset, [y], {"axes": axes})
        else:
            check("Unsqueeze", opset, [y, i64(*axes)])


@pytest.mark.parametrize("opset", [9, 11, 13, 21])
def test_flatten_transpose_matches_ort(opset: int) -> None:
    x = rand(2, 3, 0, 4) if opset >= 11 else rand(2, 3, 1, 4)
    for axis in range(0 if opset < 11 else -4, 5):
        check("Flatten", opset, [x], {"axis": axis})
    for perm in (None, [0, 1, 2, 3], [3, 1, 0, 2]):
        check("Transpose", opset, [x], {} if perm is None else {"perm": perm})


# ---------------------------------------------------------------------------------------------
# Split, Concat
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("opset", [11, 13, 18, 21])
def test_split_matches_ort(opset: int) -> None:
    x = rand(6, 4)
    n = {"num_outputs": 3} if opset >= 18 else {}
    check("Split", opset, [x], {"axis": 0} | n, n_out=3)
    check("Split", opset, [x], {"axis": -1} | ({"num_outputs": 2} if n else {}), n_out=2)
    if opset < 13:
        check("Split", opset, [x], {"axis": 0, "split": [1, 0, 5]}, n_out=3)
    else:
        check("Split", opset, [x, i64(1, 0, 5)], {"axis": 0}, n_out=3)
    if opset >= 18:
        check("Split", opset, [rand(7, 2)], {"axis": 0, "num_outputs": 3}, n_out=3)
        check("Split", opset, [rand(2, 5)], {"axis": 1, "num_outputs": 2}, n_out=2)


def test_split_1_input_and_attribute() -> None:
    x = rand(5, 2)
    a, b = run_ours("Split", 1, [x], {"axis": 0, "split": [2, 3]}, n_out=2)
    assert np.array_equal(a, x[:2]) and np.array_equal(b, x[2:])
    a, b = run_ours("Split", 1, [x, np.array([4.0, 1.0], np.float32)], {"axis": 0}, n_out=2)
    assert a.shape == (4, 2) and b.shape == (1, 2)


@pytest.mark.parametrize("opset", [4, 11, 13])
def test_concat_matches_ort(opset: int) -> None:
    axes = range(-3 if opset >= 11 else 0, 3)
    for axis in axes:
        shapes = [[2, 3, 4], [2, 3, 4]]
        a = normalize = axis % 3
        shapes[1][normalize] = 0 if a == 1 else 5
        check("Concat", opset, [rand(*shapes[0]), rand(*shapes[1])], {"axis": axis})
    s = np.array([[b"x"], [b"yz"]], dtype=object)
    check("Concat", opset, [s, s, s], {"axis": 1})


# ---------------------------------------------------------------------------------------------
# Pad, CenterCropPad
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("opset", [11, 13, 18, 19, 21])
@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
def test_pad_matches_ort(opset: int, mode: str) -> None:
    if mode == "wrap" and opset < 19:
        with pytest.raises(EvaluationError, match="mode"):  # wrap is new in Pad-19
            run_ours("Pad", opset, [rand(2, 2), i64(1, 1, 1, 1)], {"mode": mode})
        return
    x = rand(4, 5)
    # Negative pads crop first; reflect pads at most extent - 1 (onnxruntime refuses more).
    cases = [[1, 2, 2, 1], [0, 0, 0, 0], [3, 3, 1, 0], [-1, 1, 0, -2], [1, -1, -1, 2], [-2, -1, 1, 2]]
    for pads in cases:
        cv = np.array(1.5, np.float32) if mode == "constant" else None
        check("Pad", opset, [x, i64(*pads), cv], {"mode": mode})
    if mode == "wrap":
        check("Pad", opset, [x, i64(9, 0, 0, 7)], {"mode": mode})
    if opset >= 18:
        check("Pad", opset, [rand(3, 3, 4), i64(1, 2, 0, 1), None, i64(-1, 0)], {"mode": mode})
    if mode == "constant":
        xi = rand(2, 2, dtype=np.int32)
        check("Pad", opset, [xi, i64(1, 0, 0, 1)], {"mode": mode})
        check("Pad", opset, [xi, i64(1, 0, 0, 1), np.array(-3, np.int32)], {"mode": mode})
    if mode in ("constant", "edge") and opset >= 13:
        # onnxruntime has no STRING or BOOL Pad kernel: compare with numpy.pad
        s = np.array([b"a", b"bc"], dtype=object)
        (y,) = run_ours(
            "Pad", opset, [s, i64(1, 2), np.array(b"z", dtype=object) if mode == "constant" else None], {"mode": mode}
        )
        want = np.pad(s, (1, 2), mode=mode, **({"constant_values": b"z"} if mode == "constant" else {}))
        assert y.tolist() == want.tolist()
        (y,) = run_ours("Pad", opset, [s, i64(1, 0)])
        assert y.tolist() == [b"", b"a", b"bc"]
        (b,) = run_ours("Pad", opset, [np.array([True, True]), i64(1, 1)], {"mode": mode})
        assert b.tolist() == ([False, True, True, False] if mode == "constant" else [True] * 4)


def test_pad_2_and_1_attributes() -> None:
    x = rand(3, 2)
    check("Pad", 2, [x], {"pads": [0, 2, 0, 0], "mode": "constant", "value": 2.0})
    check("Pad", 2, [x], {"pads": [1, 1, 1, 1], "mode": "reflect"})
    check("Pad", 10, [x], {"pads": [1, -1, 0, 1], "mode": "edge"})
    (y,) = run_ours("Pad", 1, [x], {"paddings": [0, 2, 0, 0], "value": 1.0})
    (z,) = run_ours("Pad", 2, [x], {"pads": [0, 2, 0, 0], "value": 1.0})
    assert np.array_equal(y, z) and y.shape == (3, 4)


def _center_crop_pad(x: np.ndarray, shape: list[int], axes: list[int]) -> np.ndarray:
    # The definition's rule, element by element: output[i] = input[i - pad_begin + crop_begin].
    out = np.zeros([shape[axes.index(a)] if a in axes else d for a, d in enumerate(x.shape)], x.dtype)
    for idx in np.ndindex(*out.shape):
        src = []
        for a, i in enumerate(idx):
            d = x.shape[a]
            t = out.shape[a]
            off = (d - t) // 2 if d >= t else -((t - d) // 2)
            src.append(i + off)
        if all(0 <= s < d for s, d in zip(src, x.shape)):
            out[idx] = x[tuple(src)]
    return out


@pytest.mark.parametrize(
    "shape,axes", [([3, 5], [0, 1]), ([7, 2], [0, 1]), ([1], [-1]), ([6, 6], [-2, -1]), ([4], [0])]
)
def test_center_crop_pad(shape: list[int], axes: list[int]) -> None:
    x = rand(4, 3)
    (y,) = run_ours("CenterCropPad", 18, [x, i64(*shape)], {"axes": axes})
    assert np.array_equal(y, _center_crop_pad(x, shape, [a % 2 for a in axes]))
    check("CenterCropPad", 18, [x, i64(*shape)], {"axes": axes})


# ---------------------------------------------------------------------------------------------
# Expand, Tile, Shape, Size, Range, EyeLike, ConstantOfShape, Constant
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("opset", [8, 13])
def test_expand_tile_matches_ort(opset: int) -> None:
    x = rand(3, 1)
    for shape in ([2, 3, 4], [3, 1], [1], [1, 1, 1, 5], [0, 1, 1], [3, 0], [3, 4], [1, 4]):
        check("Expand", opset, [x, i64(*shape)])
    with pytest.raises(OnnxCoreError, match="not broadcastable"):  # one rank, extents 3 and 2 (Clause 6.6.2)
        run_ours("Expand", opset, [x, i64(2, 4)])
    for reps in ([1, 1], [2, 3], [0, 2]):
        check("Tile", opset, [x, i64(*reps)])
    check("Tile", opset, [np.array([[b"a"], [b"b"]], dtype=object), i64(1, 2)])


def test_tile_1() -> None:
    x = rand(2, 3)
    (y,) = run_ours("Tile", 1, [x, np.array(3.0, np.float32), np.array(1.0, np.float32)])
    assert np.array_equal(y, np.tile(x, (1, 3)))


@pytest.mark.parametrize("opset", [13, 15, 21])
def test_shape_size_matches_ort(opset: int) -> None:
    x = rand(2, 3, 4, 5)
    check("Size", opset, [x])
    check("Shape", opset, [x])
    if opset >= 15:
        for start in (None, -10, -2, 0, 2, 10):
            for end in (None, -10, -1, 0, 3, 10):
                attrs = {k: v for k, v in (("start", start), ("end", end)) if v is not None}
                check("Shape", opset, [x], attrs)


@pytest.mark.parametrize("opset", [11, 21])
@pytest.mark.parametrize(
    "dtype,args",
    [
        (np.int32, (3, 9, 3)),
        (np.int64, (10, 4, -2)),
        (np.int64, (0, 0, 1)),
        (np.int16, (5, 1, 1)),
        (np.int64, (-7, 8, 5)),
        (np.float32, (1.0, 2.0, 0.3)),
        (np.float32, (2.5, -1.0, -0.7)),
        (np.float64, (0.0, 1.0, 0.1)),
    ],
)
def test_range_matches_ort(opset: int, dtype: Any, args: tuple[float, float, float]) -> None:
    ins = [np.array(a, dtype=dtype) for a in args]
    if np.dtype(dtype).kind == "f":
        # The definition computes start + i * delta; onnxruntime accumulates delta, so the two
        # agree to rounding only. The exact rule is checked against the pseudocode below.
        (e,) = run_ort("Range", opset, ins)
        (a,) = run_ours("Range", opset, ins)
        assert a.dtype == e.dtype and a.shape == e.shape
        np.testing.assert_allclose(a, e, rtol=1e-6)
        n = max(int(np.ceil((float(ins[1]) - float(ins[0])) / float(ins[2]))), 0)
        want = np.array([ins[0] + np.array(i, dtype) * ins[2] for i in range(n)], dtype=dtype)
        assert np.array_equal(a, want)
    else:
        check("Range", opset, ins)


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8"])
def test_range_of_integers_is_the_definitions_ramp(dtype: str) -> None:
    """Integer Range is ``start + i * delta`` for ``i < max(ceil((limit - start) / delta), 0)`` (Range-11), up to the
    edges of the type and for steps that overshoot the limit."""
    info = np.iinfo(dtype)
    big = max(1, (int(info.max) - int(info.min)) // 700)  # a step giving some hundred values over the whole type
    cases = [(0, 24, 1), (5, 0, -2), (3, 3, 1), (0, 10, 3), (info.max - 2, info.max, 1), (info.min, info.max, big)]
    cases += [(info.max, info.min, -(info.max // 2) - 1), (info.min, info.min + 1, info.max)]
    for a, b, c in cases:
        n = max(-((a - b) // c), 0)
        if c == 0 or not (info.min <= c <= info.max) or n > 1000:
            continue
        (got,) = run_ours("Range", 11, [np.array(v, dtype) for v in (a, b, c)])
        assert got.dtype == np.dtype(dtype) and got.tolist() == [a + i * c for i in range(n)], (a, b, c)


def test_range_27_stash_type() -> None:
    import ml_dtypes

    (y,) = run_ours("Range", 27, [np.array(v, np.float16) for v in (2000.0, 2100.0, 1.0)])
    assert y.dtype == np.float16 and y.shape == (100,)
    # stash_type 1: each value rounded once from float32 (2001 rounds to 2000 or 2002 in float16)
    assert np.array_equal(y, (2000.0 + np.arange(100, dtype=np.float32)).astype(np.float16))
    (b,) = run_ours("Range", 27, [np.array(v, ml_dtypes.bfloat16) for v in (0.0, 3.0, 0.5)])
    assert b.dtype == ml_dtypes.bfloat16 and b.astype(np.float32).tolist() == [0, 0.5, 1, 1.5, 2, 2.5]


@pytest.mark.parametrize("opset", [9, 22])
def test_eyelike_matches_ort(opset: int) -> None:
    for shape in ((3, 3), (3, 5), (5, 2), (0, 3)):
        for k in (-6, -1, 0, 2, 7):
            check("EyeLike", opset, [rand(*shape)], {"k": k})
            check("EyeLike", opset, [rand(*shape, dtype=np.int32)], {"k": k, "dtype": onnx.TensorProto.DOUBLE})


@pytest.mark.parametrize("opset", [9, 20, 21])
def test_constant_of_shape_matches_ort(opset: int) -> None:
    check("ConstantOfShape", opset, [i64(2, 3)])
    check(
        "ConstantOfShape", opset, [i64(0, 3)], {"value": onnx.helper.make_tensor("v", onnx.TensorProto.INT32, [1], [7])}
    )
    check(
        "ConstantOfShape",
        opset,
        [np.zeros(0, np.int64)],
        {"value": onnx.helper.make_tensor("v", onnx.TensorProto.DOUBLE, [1], [2.5])},
    )


def test_constant_attribute_forms() -> None:
    from onnxcore.types import SparseTensor

    def one(**attrs: Any) -> np.ndarray:
        return run_ours("Constant", 13, [], attrs)[0]

    assert one(value_float=1.5).dtype == np.float32 and one(value_float=1.5).shape == ()
    assert one(value_floats=[1.0, 2.0]).shape == (2,)
    assert one(value_int=3).dtype == np.int64
    assert one(value_ints=[1, 2, 3]).tolist() == [1, 2, 3]
    assert one(value_string="é").item() == "é".encode()
    assert one(value_strings=["a", "b"]).tolist() == [b"a", b"b"]
    sp = SparseTensor(np.array([5.0, 6.0], np.float32), np.array([1, 5]), (2, 3))
    assert one(sparse_value=sp).tolist() == [[0, 5, 0], [0, 0, 6]]
    from onnxcore.proto import SparseTensorProto
    from onnxcore.types import from_array

    msg = SparseTensorProto(
        values=from_array(np.array([7, 8], np.int32)), indices=from_array(np.array([[0, 2], [1, 0]])), dims=[2, 3]
    )
    assert one(sparse_value=msg).tolist() == [[0, 0, 7], [8, 0, 0]]
    with pytest.raises(EvaluationError, match="exactly one"):
        one(value_int=1, value_float=2.0)
    assert run_ours("Constant", 9, [], {"value": np.array([1.5], np.float32)})[0].tolist() == [1.5]
    assert run_ours("Constant", 11, [], {"sparse_value": sp})[0].shape == (2, 3)
    with pytest.raises(EvaluationError, match="exactly one"):
        run_ours("Constant", 11, [], {"sparse_value": sp, "value": np.zeros(1)})


# ---------------------------------------------------------------------------------------------
# DepthToSpace, SpaceToDepth, Cast
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("opset", [1, 11, 13])
def test_depth_space_matches_ort(opset: int) -> None:
    x = rand(2, 8, 3, 2)
    modes = ["DCR"] if opset < 11 else ["DCR", "CRD"]
    for mode in modes:
        check("DepthToSpace", max(opset, 7), [x], {"blocksize": 2} | ({"mode": mode} if opset >= 11 else {}))
    check("SpaceToDepth", max(opset, 7), [rand(1, 3, 4, 6)], {"blocksize": 2})


def test_space_to_depth_28_crd_inverts_depth_to_space_crd() -> None:
    x = rand(2, 3, 4, 6)
    (y,) = run_ours("SpaceToDepth", 28, [x], {"blocksize": 2, "mode": "CRD"})
    (z,) = run_ours("DepthToSpace", 28, [y], {"blocksize": 2, "mode": "CRD"})
    assert np.array_equal(z, x)
    (y,) = run_ours("SpaceToDepth", 28, [x], {"blocksize": 2})
    (z,) = run_ours("DepthToSpace", 28, [y], {"blocksize": 2})
    assert np.array_equal(z, x)


_CAST_TYPES = [np.float32, np.float64, np.float16, np.int8, np.uint8, np.int16, np.int32, np.int64, np.uint32, np.bool_]


@pytest.mark.parametrize("opset", [6, 13, 19, 21])
def test_cast_matches_ort(opset: int) -> None:
    x = np.array([0.0, -0.0, 1.5, -2.5, 3.49, 100.0, -7.0, 0.25], np.float32)
    casts: list[tuple[list[np.ndarray | None], dict[str, Any]]] = []
    likes: list[tuple[list[np.ndarray | None], dict[str, Any]]] = []
    for src in _CAST_TYPES:
        xs = x.astype(src)
        for dst in _CAST_TYPES:
            casts.append(([xs], {"to": onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dst))}))
            likes.append(([xs, np.zeros(1, dst)], {}))
    check_many("Cast", opset, casts)
    if opset >= 15:
        check_many("CastLike", opset, likes)


def test_cast_1_names_the_type() -> None:
    (y,) = run_ours("Cast", 1, [np.array([1.7, -2.2], np.float32)], {"to": "INT32"})
    assert y.dtype == np.int32 and y.tolist() == [1, -2]


@pytest.mark.parametrize("to", [onnx.TensorProto.FLOAT8E4M3FNUZ, onnx.TensorProto.FLOAT8E5M2FNUZ])
@pytest.mark.parametrize("opset", [19, 23, 24])
def test_cast_fnuz_infinity_saturates(to: int, opset: int) -> None:
    import ml_dtypes

    x = np.array([np.inf, -np.inf, 1.0, 1e9], np.float32)
    (y,) = run_ours("Cast", opset, [x], {"to": to, "saturate": 1})
    # The corrected table of Cast-24 (onnx PR 7085, a clarification) at every version, as
    # onnxruntime does: read back through a second Cast since it cannot return float 8 arrays.
    f = y.astype(np.float32)
    top = float(ml_dtypes.finfo(y.dtype).max)
    assert f.tolist() == [top, -top, 1.0, top]
    ort = pytest.importorskip("onnxruntime")
    h = onnx.helper
    nodes = [h.make_node("Cast", ["x"], ["y"], to=to, saturate=1), h.make_node("Cast", ["y"], ["z"], to=1)]
    vi = [h.make_tensor_value_info(n, onnx.TensorProto.FLOAT, [4]) for n in ("x", "z")]
    model = h.make_model(h.make_graph(nodes, "g", vi[:1], vi[1:]), opset_imports=[h.make_opsetid("", opset)])
    model.ir_version = 10
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    (z,) = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    assert z.tolist() == f.tolist()


@pytest.mark.parametrize(
    "op,opset,inputs,attrs,n_out",
    [
        ("Reshape", 14, [np.zeros((2, 3)), i64(4, -1)], {}, 1),
        ("Reshape", 14, [np.zeros((2, 3)), i64(-1, -1)], {}, 1),
        ("Reshape", 14, [np.zeros((2, 3)), i64(2, 0, 3)], {}, 1),
        ("Squeeze", 13, [np.zeros((2, 1)), i64(0)], {}, 1),
        ("Squeeze", 13, [np.zeros((2, 1)), i64(2)], {}, 1),
        ("Unsqueeze", 13, [np.zeros((2,)), i64(0, 0)], {}, 1),
        ("Unsqueeze", 13, [np.zeros((2,)), i64(3)], {}, 1),
        ("Concat", 13, [np.zeros((2, 3)), np.zeros((3, 3))], {"axis": 1}, 1),
        ("Concat", 13, [np.zeros((2, 3)), np.zeros((2, 3))], {"axis": 2}, 1),
        ("Expand", 13, [np.zeros((3,)), i64(2, 2)], {}, 1),
        ("Expand", 13, [np.zeros((3,)), i64(1 << 40, 3)], {}, 1),
        ("ConstantOfShape", 21, [i64(-1, 2)], {}, 1),
        ("Tile", 13, [np.zeros((2, 3)), i64(2)], {}, 1),
        ("Tile", 13, [np.zeros((2, 3)), i64(-1, 1)], {}, 1),
        ("Transpose", 13, [np.zeros((2, 3))], {"perm": [0, 0]}, 1),
        ("Slice", 13, [np.zeros((2, 3)), i64(0), i64(1), i64(0), i64(0)], {}, 1),
        ("Slice", 13, [np.zeros((2, 3)), i64(0, 0), i64(1, 1), i64(0, -2)], {}, 1),
        ("Split", 13, [np.zeros((5, 3))], {"axis": 0}, 2),
        ("Split", 13, [np.zeros((5, 3)), i64(2, 2)], {"axis": 0}, 2),
        ("Split", 18, [np.zeros((5, 3))], {"axis": 0}, 2),
        ("Pad", 19, [np.zeros((2, 3)), i64(-3, 0, 0, 0)], {}, 1),
        ("Pad", 19, [np.zeros((2, 3)), i64(-3, 0, 5, 0)], {}, 1),
        ("Pad", 19, [np.zeros((2, 3)), i64(1, 1)], {}, 1),
        ("Pad", 18, [np.zeros((2, 3)), i64(1, 1, 1, 1)], {"mode": "wrap"}, 1),
        ("Pad", 19, [np.zeros((0, 3)), i64(1, 0, 0, 0)], {"mode": "edge"}, 1),
        ("Range", 11, [np.array(0), np.array(5), np.array(0)], {}, 1),
        ("Range", 11, [np.array(0.0), np.array(np.inf), np.array(1.0)], {}, 1),
        ("EyeLike", 22, [np.zeros((2, 2, 2))], {}, 1),
        ("DepthToSpace", 13, [np.zeros((1, 3, 2, 2))], {"blocksize": 2}, 1),
        ("SpaceToDepth", 28, [np.zeros((1, 3, 2, 2))], {"blocksize": 2, "mode": "XYZ"}, 1),
        ("Flatten", 13, [np.zeros((2, 3))], {"axis": 3}, 1),
        ("Flatten", 9, [np.zeros((2, 3))], {"axis": -1}, 1),  # negative axes from Flatten-11 only
        ("Cast", 21, [np.zeros(2)], {"to": 0}, 1),
        ("Cast", 1, [np.zeros(2)], {"to": "NOT_A_TYPE"}, 1),
        ("CenterCropPad", 18, [np.zeros((2, 3)), i64(1)], {}, 1),
        ("Constant", 13, [], {}, 1),
    ],
)
def test_bad_input_is_refused_with_our_error(
    op: str, opset: int, inputs: list[np.ndarray], attrs: dict[str, Any], n_out: int
) -> None:
    from onnxcore.errors import OnnxCoreError

    with pytest.raises(OnnxCoreError):
        run_ours(op, opset, inputs, attrs, n_out)


def test_cast_every_pair_of_element_types() -> None:
    # Every (source, target) pair of Table 5 except the complex types (Cast has none) goes
    # through Cast-25 (Cast-28 for the 6-bit floats), keeping the value 1 (representable in all).
    from onnxcore.types import ElementType

    types = [t for t in ElementType if not t.is_complex]
    for src in types:
        version = 28 if "FLOAT6" in src.name else 25
        (x,) = run_ours("Cast", version, [np.ones(3, np.float32)], {"to": int(src)})
        assert x.dtype == src.np_dtype
        for dst in types:
            v = 28 if "FLOAT6" in src.name or "FLOAT6" in dst.name else 25
            (y,) = run_ours("Cast", v, [x], {"to": int(dst)})
            assert y.dtype == dst.np_dtype and y.shape == (3,), (src, dst)
            if dst is ElementType.STRING:
                assert all(float(s) == 1.0 for s in y), (src, y)
            else:
                (back,) = run_ours("Cast", v, [y], {"to": int(ElementType.FLOAT)})
                assert back.tolist() == [1.0] * 3, (src, dst)


@pytest.mark.parametrize("src", ["float32", "float64"])
@pytest.mark.parametrize("to", [6, 7])  # INT32, INT64
def test_cast_float_to_int_common_path_is_cast_arrays(src: str, to: int) -> None:
    """A float to INT32/INT64 cast takes a short path when every value is finite and in range (issue 42: the
    label Cast exporters write); its results are cast_array's, and so are those of the values it leaves to it."""
    big = 2.0**31 if to == 6 else 2.0**63
    cases = [
        np.array([[0.0, -0.0, 1.9, -1.9, 2.5, -2.5, 7.0]], src),
        np.array([3.0], src),
        np.array([big / 2, -big / 2], src),
        np.array([1.0, np.nan, 2.0], src),  # NaN: cast_array's rule
        np.array([1.0, np.inf, -np.inf], src),
        np.array([big * 4, -big * 4, 1.5], src),  # out of range: reduced modulo 2**bits
        np.zeros((0, 3), src),
        # The edges of the range: the greatest value's truncation is in range, big itself is not (2**63 - 1 is no
        # float, so a bound written as a float admitted 2**63); -big is, below it not (-2**31 - 0.5 truncates to
        # -2**31, in range; -2**31 - 1 is not). A few values and many (the two ways of checking them).
        np.array([big, 1.0], src),
        np.array([-big, np.nextafter(big, 0, dtype=src), 1.0], src),
        np.array([-big - 0.5, -big - 1, big - 0.5], src) if to == 6 else np.array([-big, -big * (1 + 2**-40)], src),
        np.tile(np.array([-big, np.nextafter(big, 0, dtype=src), 1.0, big], src), 9),
    ]
    for x in cases:
        got = cast_6(x, to=to)
        want = cast_array(x, to)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


_NUMPY_INTS = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]


@pytest.mark.parametrize("src", _NUMPY_INTS)
@pytest.mark.parametrize("to", [2, 3, 4, 5, 6, 7, 12, 13])  # UINT8 INT8 UINT16 INT16 INT32 INT64 UINT32 UINT64
def test_cast_between_numpy_integers_is_cast_arrays(src: str, to: int) -> None:
    """Casts between numpy's integer types (and from bool) take astype (issue 42: a classifier's int32 classes to
    its INT64 label); every value, the extremes of the source type included, wraps as cast_array wraps it
    (Clause 6.3: modulo 2**bits)."""
    dt = np.dtype(src)
    if dt.kind == "b":
        x = np.array([[True, False, True]])
    else:
        info = np.iinfo(dt)
        x = np.array([info.min, info.max, 0, 1, info.max // 3, info.min // 3 if info.min else 7], dt).reshape(2, 3)
    for arr in (x, x.T, x[:0]):  # a view in Fortran order and an empty one too
        got = cast_6(arr, to=to)
        want = cast_array(arr, to)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("src", ["float16", "float32", "float64"])
def test_cast_float_to_bool_is_cast_arrays(src: str) -> None:
    """A float to BOOL: nonzero is true, NaN and the infinities too, -0.0 false (Clause 6.3; cast_array's rule)."""
    x = np.array([[0.0, -0.0, 1e-30, -2.5, np.nan, np.inf, -np.inf, 1.0]], src)
    got = cast_6(x, to=9)
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, cast_array(x, 9))
    assert got.tolist() == [[False, False, src != "float16", True, True, True, True, True]]
