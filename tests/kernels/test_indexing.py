"""Indexing kernels (runtime/ops/indexing.py): ONNX 1-3 node cases and onnxruntime on random inputs.

Each differential test builds a one-node model at several opset versions (so every
since_version is exercised), runs it in onnxruntime and compares with our kernel bound to the
same definition (Clause 14.4): negative axes and indices, empty tensors, batch_dims, reductions.
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
from onnxcore.errors import EvaluationError  # noqa: E402
from onnxcore.kernels.registry import KernelContext, lookup  # noqa: E402

INDEXING_OPS = frozenset(
    "Gather GatherElements GatherND NonZero OneHot ReverseSequence Scatter ScatterElements ScatterND Unique "
    "Compress TensorScatter".split()
)


CASES = single_node_cases(INDEXING_OPS, include_expanded=True)


def test_every_indexing_op_has_node_cases() -> None:
    ops = set()
    for param in CASES:
        m = onnx.load(str(param.values[0] / "model.onnx"), load_external_data=False)
        ops.add(m.graph.node[0].op_type)
    assert ops == INDEXING_OPS


@pytest.mark.parametrize("op", sorted(INDEXING_OPS))
def test_every_since_version_has_a_kernel(op: str) -> None:
    assert_every_version_has_a_kernel(op)


@pytest.mark.parametrize("case_dir", CASES)
def test_node_case(case_dir: Path) -> None:
    assert_node_case(case_dir)


# ---------------------------------------------------------------------------------------------
# One node in onnxruntime and in our kernels
# ---------------------------------------------------------------------------------------------


def _elem(arr: np.ndarray) -> int:
    return onnx.TensorProto.STRING if arr.dtype == object else onnx.helper.np_dtype_to_tensor_dtype(arr.dtype)


def _strs(x: np.ndarray, to_str: bool) -> np.ndarray:
    if not isinstance(x, np.ndarray) or x.dtype != object:
        return x
    conv = [
        (v.decode() if isinstance(v, bytes) else v) if to_str else (v.encode() if isinstance(v, str) else v)
        for v in x.ravel()
    ]
    return np.array(conv, dtype=object).reshape(x.shape)


def run_ort(
    op: str, opset: int, inputs: list[np.ndarray | None], attrs: dict[str, Any] | None = None, n_out: int = 1
) -> list[Any]:
    ort = pytest.importorskip("onnxruntime")
    h = onnx.helper
    inputs = list(inputs)
    while inputs and inputs[-1] is None:
        inputs.pop()
    names = [f"i{k}" if x is not None else "" for k, x in enumerate(inputs)]
    outs = [f"o{k}" for k in range(n_out)]
    node = h.make_node(op, names, outs, **(attrs or {}))
    vis = [h.make_tensor_value_info(n, _elem(x), x.shape) for n, x in zip(names, inputs) if x is not None]
    graph = h.make_graph([node], "g", vis, [onnx.ValueInfoProto(name=o) for o in outs])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", opset)])
    model.ir_version = 8 if opset <= 18 else 10
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    feeds = {n: _strs(x, True) for n, x in zip(names, inputs) if x is not None}
    return [_strs(y, False) for y in sess.run(None, feeds)]


def run_ours(
    op: str, opset: int, inputs: list[np.ndarray | None], attrs: dict[str, Any] | None = None, n_out: int = 1
) -> list[Any]:
    schema = onnx.defs.get_schema(op, opset, "")
    k = lookup("", op, schema.since_version)
    assert k is not None, f"no kernel for {op}-{schema.since_version}"
    kw = {a: (v.decode() if isinstance(v, bytes) else v) for a, v in (attrs or {}).items()}
    args = list(inputs)
    while args and args[-1] is None:
        args.pop()
    if k.context:
        out = k.fn(
            KernelContext(None, since_version=schema.since_version, opset_version=opset, num_outputs=n_out), *args, **kw
        )
    else:
        out = k.fn(*args, **kw)
    return list(out) if isinstance(out, tuple) else [out]


def check(
    op: str,
    opset: int,
    inputs: list[np.ndarray | None],
    attrs: dict[str, Any] | None = None,
    n_out: int = 1,
    rtol: float = 0,
) -> None:
    expected = run_ort(op, opset, inputs, attrs, n_out)
    actual = run_ours(op, opset, inputs, attrs, n_out)
    assert len(actual) >= len(expected)
    for a, e in zip(actual, expected):
        assert_close(a, e, rtol=rtol, atol=0)


RNG = np.random.default_rng(7)


def rand(*shape: int, dtype: Any = np.float32) -> np.ndarray:
    if np.dtype(dtype).kind in "iu":
        return RNG.integers(-20, 20, size=shape).astype(dtype)
    return RNG.standard_normal(shape).astype(dtype)


def rand_index(size: int, shape: tuple[int, ...], dtype: Any = np.int64) -> np.ndarray:
    """Indices in [-size, size-1] (negative ones included)."""
    if size == 0:
        return np.zeros(shape, dtype=dtype)
    return RNG.integers(-size, size, size=shape).astype(dtype)


# ---------------------------------------------------------------------------------------------
# Gather family
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("opset", [7, 11, 13])
def test_gather_matches_ort(opset: int) -> None:
    data = rand(3, 4, 5)
    for axis in range(-3, 3):
        n = data.shape[axis]
        for ishape in [(), (2,), (2, 3), (0,)]:
            for dt in (np.int32, np.int64):
                idx = rand_index(n, ishape, dt) if opset >= 11 else RNG.integers(0, n, size=ishape).astype(dt)
                check("Gather", opset, [data, idx], {"axis": axis})
    check("Gather", opset, [np.zeros((0, 3), np.float32), np.zeros((2,), np.int64)], {"axis": 1})
    check("Gather", opset, [np.array([b"a", b"b", b"c"], dtype=object), np.array([[2, 0]], np.int64)])


def test_gather_refuses_out_of_bounds() -> None:
    with pytest.raises(EvaluationError, match="out of bounds"):
        run_ours("Gather", 13, [rand(3, 2), np.array([3], np.int64)])
    with pytest.raises(EvaluationError, match="out of bounds"):
        run_ours("Gather", 13, [rand(3, 2), np.array([-4], np.int64)])


@pytest.mark.parametrize("opset", [11, 13])
def test_gather_elements_matches_ort(opset: int) -> None:
    data = rand(4, 5, 3)
    for axis in range(-3, 3):
        a = axis % 3
        for ishape in [(4, 5, 3), (2, 5, 1), (4, 7, 2), (0, 5, 3)]:
            shape = list(ishape)
            for d in range(3):
                if d != a:
                    shape[d] = min(shape[d], data.shape[d])
            idx = rand_index(data.shape[a], tuple(shape), np.int32 if axis % 2 else np.int64)
            check("GatherElements", opset, [data, idx], {"axis": axis})


@pytest.mark.parametrize("opset", [11, 12, 13])
def test_gather_nd_matches_ort(opset: int) -> None:
    data = rand(2, 3, 4, 5)
    for b in [0, 1, 2] if opset >= 12 else [0]:
        for k in range(1, 4 - b + 1):
            for mid in [(), (3,), (2, 2), (0,)]:
                shape = data.shape[:b] + mid + (k,)
                idx = np.stack([rand_index(data.shape[b + j], shape[:-1]) for j in range(k)], axis=-1).reshape(shape)
                check("GatherND", opset, [data, idx.astype(np.int64)], {"batch_dims": b} if opset >= 12 else {})


# ---------------------------------------------------------------------------------------------
# Scatter family
# ---------------------------------------------------------------------------------------------


def _unique_axis_indices(size: int, shape: tuple[int, ...], axis: int) -> np.ndarray:
    """Indices along ``axis`` without repeats for fixed other coordinates (as reduction none needs)."""
    moved = list(shape)
    m = moved.pop(axis)
    rows = [RNG.permutation(size)[:m] for _ in range(int(np.prod(moved)))]
    arr = np.array(rows, dtype=np.int64).reshape(moved + [m])
    arr = np.where(RNG.random(arr.shape) < 0.5, arr - size, arr)  # some negative
    return np.moveaxis(arr, -1, axis)


@pytest.mark.parametrize("opset", [11, 13, 16, 18])
def test_scatter_elements_matches_ort(opset: int) -> None:
    data = rand(4, 5, 3)
    reductions = ["none"] + (["add", "mul"] if opset >= 16 else []) + (["max", "min"] if opset >= 18 else [])
    for axis in range(-3, 3):
        a = axis % 3
        ishape = [3, 4, 2]
        ishape[a] = min(3, data.shape[a])
        for red in reductions:
            if red == "none":
                idx = _unique_axis_indices(data.shape[a], tuple(ishape), a)
            else:
                idx = rand_index(data.shape[a], tuple(ishape))  # duplicates reduce
            upd = rand(*ishape)
            attrs: dict[str, Any] = {"axis": axis} | ({"reduction": red} if opset >= 16 else {})
            check("ScatterElements", opset, [data, idx, upd], attrs, rtol=1e-6)
    check("ScatterElements", opset, [data, np.zeros((0, 5, 3), np.int64), np.zeros((0, 5, 3), np.float32)])
    ints = rand(6, dtype=np.int32)
    check("ScatterElements", opset, [ints, np.array([1, -1], np.int32), np.array([7, 8], np.int32)])


@pytest.mark.parametrize("opset", [9, 10])
def test_scatter_deprecated_matches_ort(opset: int) -> None:
    data = rand(3, 4)
    for axis in (0, 1):
        idx = _unique_axis_indices(data.shape[axis], (2, 3) if axis == 0 else (3, 2), axis)
        idx = np.where(idx < 0, idx + data.shape[axis], idx)  # Scatter-9 states no negative range
        check("Scatter", opset, [data, idx, rand(*idx.shape)], {"axis": axis})


def test_scatter_11_deprecated_still_evaluates() -> None:
    # Clause 14.5: Scatter is deprecated at 11 but a consumer keeps evaluating it.
    data = np.zeros((2, 3), np.float32)
    (y,) = run_ours(
        "Scatter", 11, [data, np.array([[1, -1]], np.int64), np.array([[5.0, 6.0]], np.float32)], {"axis": 1}
    )
    assert y.tolist() == [[0, 5, 6], [0, 0, 0]]
    assert data.tolist() == [[0, 0, 0], [0, 0, 0]]


@pytest.mark.parametrize("opset", [11, 13, 16, 18])
def test_scatter_nd_matches_ort(opset: int) -> None:
    data = rand(4, 3, 5)
    reductions = ["none"] + (["add", "mul"] if opset >= 16 else []) + (["max", "min"] if opset >= 18 else [])
    for red in reductions:
        for k in (1, 2, 3):
            for lead in [(2,), (2, 2), (0,)]:
                n = int(np.prod(lead))
                if red == "none":
                    flat = np.array(list(np.ndindex(*data.shape[:k])), dtype=np.int64)
                    pick = flat[RNG.permutation(len(flat))[:n]]
                    pick = np.where(RNG.random(pick.shape) < 0.5, pick - np.array(data.shape[:k]), pick)
                else:
                    pick = np.stack([rand_index(data.shape[j], (n,)) for j in range(k)], axis=-1)
                idx = pick.reshape(lead + (k,))
                upd = rand(*(lead + data.shape[k:]))
                attrs = {"reduction": red} if opset >= 16 else {}
                check("ScatterND", opset, [data, idx, upd], attrs, rtol=1e-6)
    ints = rand(3, 3, dtype=np.int64)
    check("ScatterND", opset, [ints, np.array([[0, -1], [2, 1]], np.int64), np.array([9, 10], np.int64)])
    s = np.array([b"a", b"b", b"c"], dtype=object)
    check("ScatterND", opset, [s, np.array([[1]], np.int64), np.array([b"zz"], dtype=object)])


def test_scatter_nd_reductions_with_duplicates_exact() -> None:
    data = np.array([1, 2, 3, 4], np.int64)
    idx = np.array([[1], [1], [-1], [1]], np.int64)
    upd = np.array([10, 20, 5, 2], np.int64)
    want = {"add": [1, 34, 3, 9], "mul": [1, 800, 3, 20], "max": [1, 20, 3, 5], "min": [1, 2, 3, 4]}
    for red, w in want.items():
        (y,) = run_ours("ScatterND", 18, [data, idx, upd], {"reduction": red})
        assert y.tolist() == w
    with pytest.raises(EvaluationError, match="reduction"):
        run_ours("ScatterND", 16, [data, idx, upd], {"reduction": "max"})


def _tensor_scatter_ref(past: np.ndarray, upd: np.ndarray, wi: np.ndarray | None, mode: str, axis: int) -> np.ndarray:
    # The pseudocode of TensorScatter-24, literally.
    axis = axis % past.ndim
    out = past.copy()
    wi = np.zeros(past.shape[0], np.int64) if wi is None else wi
    max_len, seq_len = past.shape[axis], upd.shape[axis]
    for prefix in np.ndindex(*past.shape[:axis]):
        for s in range(seq_len):
            c = int(wi[prefix[0]]) + s
            if mode == "circular":
                c %= max_len
            out[(*prefix, c)] = upd[(*prefix, s)]
    return out


@pytest.mark.parametrize("mode", ["linear", "circular"])
@pytest.mark.parametrize("axis", [-2, 1, 2, -1])
def test_tensor_scatter(mode: str, axis: int) -> None:
    past = rand(3, 4, 6, 2)
    ushape = list(past.shape)
    a = axis % 4
    ushape[a] = 2
    upd = rand(*ushape)
    for wi in (None, np.array([0, 3, 1], np.int64), np.array([4, 0, 5], np.int64)):
        if mode == "linear" and wi is not None and int(wi.max()) + 2 > past.shape[a]:
            with pytest.raises(EvaluationError):
                run_ours("TensorScatter", 24, [past, upd, wi], {"mode": mode, "axis": axis})
            continue
        (y,) = run_ours("TensorScatter", 24, [past, upd, wi], {"mode": mode, "axis": axis})
        assert np.array_equal(y, _tensor_scatter_ref(past, upd, wi, mode, axis))
        check("TensorScatter", 24, [past, upd, wi], {"mode": mode, "axis": axis})
    with pytest.raises(EvaluationError, match="axis"):
        run_ours("TensorScatter", 24, [past, past], {"axis": 0})


# ---------------------------------------------------------------------------------------------
# OneHot, NonZero, Compress, ReverseSequence, Unique
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("opset", [9, 11])
def test_one_hot_matches_ort(opset: int) -> None:
    values = np.array([-1.0, 3.0], np.float32)
    # (indices, depth) type pairs onnxruntime has kernels for, float depth and indices truncated
    cases = [
        (np.array([[0, 3], [4, 1], [-1, -4]], np.int64), np.array(4, np.int64)),
        (np.array([0.0, 2.0, 5.0, -1.0, -4.0, -9.0], np.float32), np.array([5.9], np.float32)),
        (np.array([[1, -2, 2]], np.int32), np.array(3.0, np.float32)),
        (np.zeros((0, 2), np.int64), np.array(3, np.int64)),
    ]
    for ind, depth in cases:
        if opset < 11:
            # OneHot-9 gives all off_value outside [0, depth); onnxruntime counts negative
            # indices from the back at 9 too, so compare non-negative indices only.
            ind = np.abs(ind)
        for axis in range(-ind.ndim - 1, ind.ndim + 1):
            check("OneHot", opset, [ind, depth, values], {"axis": axis})
    check("OneHot", opset, [np.array([1, 0], np.int64), np.array(3, np.int64), np.array([0, 1], np.int64)])


def test_one_hot_negative_indices_and_float_truncation_by_version() -> None:
    ind = np.array([-1, 2.7, -4.5], np.float32)
    v = np.array([0, 1], np.int64)
    # Non-integer indices and depth are cast to int64 (truncation): 2.7 -> 2, -4.5 -> -4.
    (y9,) = run_ours("OneHot", 9, [ind, np.array(4.9, np.float32), v])
    (y11,) = run_ours("OneHot", 11, [ind, np.array(4.9, np.float32), v])
    assert y9.tolist() == [[0, 0, 0, 0], [0, 0, 1, 0], [0, 0, 0, 0]]
    assert y11.tolist() == [[0, 0, 0, 1], [0, 0, 1, 0], [1, 0, 0, 0]]


@pytest.mark.parametrize("opset", [9, 13])
def test_non_zero_matches_ort(opset: int) -> None:
    for x in (
        np.array([[0, 1, 0], [2, 0, 3]], np.int32),
        (RNG.random((2, 3, 4)) > 0.5),
        np.array([0.0, -0.0, np.nan, 1.0], np.float32),
        np.zeros((0, 3), np.float32),
        np.zeros((2, 2), np.int64),
    ):
        check("NonZero", opset, [x])
    (y,) = run_ours("NonZero", opset, [np.array([b"", b"a", b"b"], dtype=object)])
    assert y.tolist() == [[1, 2]]


def test_non_zero_scalar() -> None:
    # onnxruntime and the definition's shape inference treat a scalar as rank 1.
    check("NonZero", 13, [np.array(5.0, np.float32)])
    check("NonZero", 13, [np.array(0, np.int64)])


@pytest.mark.parametrize("opset", [9, 11])
def test_compress_matches_ort(opset: int) -> None:
    x = rand(3, 4)
    for axis in [None, 0, 1] + ([-1, -2] if opset >= 11 else []):
        for cond in ([True, False, True], [False] * 2, [True, True, False, True], [], [True] * 12):
            n = x.size if axis is None else x.shape[axis]
            c = np.array(cond[:n], dtype=np.bool_)
            check("Compress", opset, [x, c], {} if axis is None else {"axis": axis})


@pytest.mark.parametrize("batch_axis,time_axis", [(1, 0), (0, 1)])
def test_reverse_sequence_matches_ort(batch_axis: int, time_axis: int) -> None:
    x = rand(4, 3, 2) if batch_axis == 1 else rand(3, 4, 2)
    for lens in ([4, 3, 1], [1, 1, 1], [2, 4, 4]):
        check("ReverseSequence", 10, [x, np.array(lens, np.int64)], {"batch_axis": batch_axis, "time_axis": time_axis})


@pytest.mark.parametrize("sorted_", [0, 1])
def test_unique_matches_ort(sorted_: int) -> None:
    cases = [
        (np.array([2, 1, 1, 3, 4, 3, -5], np.int64), [None, 0, -1]),
        (
            np.array([[1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [2.0, 3.0, 4.0], [1.0, 3.0, 0.0]], np.float32),
            [None, 0, 1, -1, -2],
        ),
        (RNG.integers(0, 3, size=(3, 4, 2)).astype(np.int64), [None, 0, 1, 2, -1]),
        (np.array([3, -1, 3, 7], np.int8), [None]),
        (np.zeros((0, 3), np.float32), [None, 0]),
    ]
    for x, axes in cases:
        for axis in axes:
            attrs = {"sorted": sorted_} | ({} if axis is None else {"axis": axis})
            check("Unique", 11, [x], attrs, n_out=4)


def test_unique_strings_unsorted() -> None:
    x = np.array([b"b", b"a", b"b", b"c", b"a"], dtype=object)
    y, idx, inv, cnt = run_ours("Unique", 11, [x], {"sorted": 0}, n_out=4)
    assert y.tolist() == [b"b", b"a", b"c"] and idx.tolist() == [0, 1, 3]
    assert inv.tolist() == [0, 1, 0, 2, 1] and cnt.tolist() == [2, 2, 1]
    y, idx, inv, cnt = run_ours(
        "Unique", 11, [np.array([[b"x", b"y"], [b"a", b"b"], [b"x", b"y"]], dtype=object)], {"axis": 0}, n_out=4
    )
    assert y.tolist() == [[b"a", b"b"], [b"x", b"y"]] and idx.tolist() == [1, 0] and cnt.tolist() == [1, 2]


def _i(*v: int) -> np.ndarray:
    return np.array(v, dtype=np.int64)


@pytest.mark.parametrize(
    "op,opset,inputs,attrs,n_out",
    [
        ("Gather", 13, [np.zeros((2, 3)), _i(0)], {"axis": 2}, 1),
        ("Gather", 13, [np.zeros(()), _i(0)], {}, 1),
        ("Gather", 13, [np.zeros((2, 3)), np.array([0.5])], {}, 1),
        ("GatherElements", 13, [np.zeros((2, 3)), np.zeros((3, 3), np.int64)], {"axis": 1}, 1),
        ("GatherElements", 13, [np.zeros((2, 3)), _i(0)], {}, 1),
        ("GatherND", 13, [np.zeros((2, 3)), _i(0, 0, 0)], {}, 1),
        ("GatherND", 13, [np.zeros((2, 3)), np.zeros((3, 1), np.int64)], {"batch_dims": 1}, 1),
        ("GatherND", 13, [np.zeros((2, 3)), _i(2, 0)], {}, 1),
        ("ScatterElements", 18, [np.zeros((2, 3)), np.zeros((2, 3), np.int64), np.zeros((2, 2))], {}, 1),
        ("ScatterElements", 18, [np.zeros((2, 3)), _i(5).reshape(1, 1), np.zeros((1, 1))], {}, 1),
        ("ScatterElements", 18, [np.zeros(3), _i(1), np.zeros(1)], {"reduction": "sub"}, 1),
        ("ScatterND", 18, [np.zeros((2, 3)), _i(0, 0, 0).reshape(1, 3), np.zeros(1)], {}, 1),
        ("ScatterND", 18, [np.zeros((2, 3)), _i(-3).reshape(1, 1), np.zeros((1, 3))], {}, 1),
        ("ScatterND", 18, [np.zeros((2, 3)), _i(0).reshape(1, 1), np.zeros((1, 2))], {}, 1),
        ("OneHot", 11, [_i(1), _i(3), _i(0, 1, 2)], {}, 1),
        ("OneHot", 11, [_i(1), _i(-3), _i(0, 1)], {}, 1),
        ("OneHot", 11, [_i(1), _i(3), _i(0, 1)], {"axis": 2}, 1),
        ("Compress", 11, [np.zeros((2, 3)), np.array([True, False, True])], {"axis": 0}, 1),
        ("Compress", 11, [np.zeros((2, 3)), np.array([True])], {"axis": 2}, 1),
        ("ReverseSequence", 10, [np.zeros((3, 2)), _i(4, 1)], {}, 1),
        ("ReverseSequence", 10, [np.zeros((3, 2)), _i(1, 1, 1)], {}, 1),
        ("ReverseSequence", 10, [np.zeros((3, 1)), np.array(2, np.int64)], {}, 1),  # lengths must be 1-D
        ("ReverseSequence", 10, [np.zeros((3, 2)), _i(1, 1)], {"batch_axis": 0, "time_axis": 0}, 1),
        ("Unique", 11, [np.zeros((2, 3))], {"axis": 2}, 4),
        ("TensorScatter", 24, [np.zeros((2, 4, 3)), np.zeros((2, 5, 3))], {"axis": 1}, 1),
        ("TensorScatter", 24, [np.zeros((2, 4, 3)), np.zeros((2, 2, 3)), _i(0)], {"axis": 1}, 1),
        ("TensorScatter", 24, [np.zeros((2, 4, 3)), np.zeros((2, 2, 3)), _i(0, -1)], {"axis": 1}, 1),
        ("TensorScatter", 24, [np.zeros((2, 4, 3)), np.zeros((2, 2, 3))], {"axis": 1, "mode": "ring"}, 1),
    ],
)
def test_bad_input_is_refused_with_our_error(
    op: str, opset: int, inputs: list[np.ndarray], attrs: dict[str, Any], n_out: int
) -> None:
    from onnxcore.errors import OnnxCoreError

    with pytest.raises(OnnxCoreError):
        run_ours(op, opset, inputs, attrs, n_out)


def test_unique_nan_is_one_value() -> None:
    # numpy.unique (cited by the definition) counts NaNs as one value; onnxruntime merges every
    # value into the first NaN, so the comparison is with numpy.
    x = np.array([np.nan, 1, np.nan, -0.0, 0.0, 1], np.float32)
    y, idx, inv, cnt = run_ours("Unique", 11, [x], {"sorted": 1}, n_out=4)
    wy, widx, winv, wcnt = np.unique(x, return_index=True, return_inverse=True, return_counts=True)
    assert np.array_equal(y, wy, equal_nan=True) and idx.tolist() == widx.tolist()
    assert inv.tolist() == winv.ravel().tolist() and cnt.tolist() == wcnt.tolist()
    y, idx, inv, cnt = run_ours("Unique", 11, [x], {"sorted": 0}, n_out=4)
    assert np.array_equal(y, [np.nan, 1, -0.0], equal_nan=True) and cnt.tolist() == [2, 2, 2]
    assert idx.tolist() == [0, 1, 3] and inv.tolist() == [0, 1, 0, 2, 2, 1]


def test_gather_scatter_nd_empty_and_whole_slices() -> None:
    data = np.arange(6, dtype=np.int64).reshape(2, 3)
    # k = 0: every index tuple selects (or replaces) the whole of data.
    (g,) = run_ours("GatherND", 13, [data, np.zeros((2, 0), np.int64)])
    assert g.shape == (2, 2, 3) and (g == data).all()
    (s,) = run_ours(
        "ScatterND", 18, [data, np.zeros((2, 0), np.int64), np.full((2, 2, 3), 7, np.int64)], {"reduction": "add"}
    )
    assert s.tolist() == (data + 14).tolist()
    (g,) = run_ours("GatherND", 13, [np.zeros((0, 3, 4)), np.zeros((0, 2, 1), np.int64)], {"batch_dims": 1})
    assert g.shape == (0, 2, 4)
    (s,) = run_ours("ScatterND", 13, [data, np.zeros((0, 1), np.int64), np.zeros((0, 3), np.int64)])
    assert s.tolist() == data.tolist()


@pytest.mark.parametrize("shape", [(1, 50), (3, 4), (2, 3, 4), (5,), (4, 1)], ids=str)
@pytest.mark.parametrize("idtype", [np.int64, np.int32, np.uint8, np.uint64])
def test_gather_elements_of_a_few_indices_is_take_along_axis(shape: tuple[int, ...], idtype: Any) -> None:
    """Up to 16 indices in range are taken at flat positions kept per geometry: what take_along_axis gives, for any
    axis, layout and index type; negative or out-of-range indices as the general path has them."""
    from onnxcore.kernels.indexing import gather_elements

    rng = np.random.default_rng(22)
    base = rng.standard_normal(shape).astype(np.float32)
    for x in (base, base.T, base[..., ::-1], base.astype(object)):
        for axis in range(-x.ndim, x.ndim):
            n = x.shape[axis]
            for _ in range(6):
                ishape = tuple(int(rng.integers(1, d + 1)) for d in x.shape)
                ind = rng.integers(0, n, ishape).astype(idtype)
                got = gather_elements(x, ind, axis=axis)
                part = tuple(slice(None) if d == axis % x.ndim else slice(0, k) for d, k in enumerate(ishape))
                want = np.take_along_axis(x[part], ind.astype(np.int64), axis)
                assert got.shape == want.shape and got.dtype == want.dtype and got.flags.c_contiguous
                assert got.tolist() == want.tolist()
            if np.dtype(idtype).kind == "i":
                neg = np.full((1,) * x.ndim, -1, idtype)
                assert gather_elements(x, neg, axis=axis).ravel().tolist() == [np.take(x, [n - 1], axis)[(0,) * x.ndim]]
            with pytest.raises(EvaluationError, match="out of bounds"):
                gather_elements(x, np.full((1,) * x.ndim, n, idtype), axis=axis)
