"""A ``Scan`` whose iterations are independent, evaluated as one batched pass (issue 42; Clause 8.2; the matcher
``runtime/optimize/scan.py``, the fused kernel ``kernels/fused/scan.py``).

Each batched Scan gives the values of the same session without the rewrite (``disabled_rewrites=["batch_scans"]``)
bit for bit, and onnxruntime's within rounding; each Scan the rewrite must not take (a state that changes, a reverse
direction, another scan axis, a product in the body) is left as written. On the pure-numpy path and on the
accelerator (``accel_path``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
import skl2onnx
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh
from onnx import shape_inference
from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor

import onnxcore
from onnxcore import kernels
from onnxcore.errors import LimitError
from onnxcore.kernels.fused import scan as fused_scan
from onnxcore.kernels.fused.scan import REDUCTIONS, BodyOp

RNG = np.random.default_rng(42)
F = TP.FLOAT


def _scan_model(
    body_nodes: list[Any],
    states: list[tuple[str, int, list[Any]]],
    rows: list[tuple[str, int, list[Any]]],
    body_outputs: list[tuple[str, int, list[Any] | None]],
    *,
    scan_rows: np.ndarray,
    state_shape: list[Any],
    opset: int = 17,
    body_inits: list[Any] = (),  # type: ignore[assignment]
    **scan_attributes: Any,
) -> bytes:
    """A model ``Scan(X, R)``: one state fed by the input ``X`` and one scan input, the constant ``R``."""
    body = h.make_graph(
        body_nodes,
        "body",
        [h.make_tensor_value_info(n, t, s) for n, t, s in states + rows],
        [h.make_tensor_value_info(n, t, s) for n, t, s in body_outputs],
        list(body_inits),
    )
    n_out = len(body_outputs)
    outs = ["state_out", *[f"y{k}" for k in range(n_out - 1)]]
    scan = h.make_node("Scan", ["X", "R"], outs, body=body, num_scan_inputs=1, **scan_attributes)
    g = h.make_graph(
        [scan],
        "g",
        [h.make_tensor_value_info("X", F, state_shape)],
        [h.make_tensor_value_info(o, F, None) for o in outs],
        [nh.from_array(scan_rows, "R")],
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 8
    return _with_output_shapes(m)


def _with_output_shapes(m: Any) -> bytes:
    """The model with its outputs' shapes as onnx's inference states them (a top-level output states its rank)."""
    inferred = shape_inference.infer_shapes(m, strict_mode=True)
    for out, inf in zip(m.graph.output, inferred.graph.output):
        out.type.CopyFrom(inf.type)
    return m.SerializeToString()


def _distance_body(reduce: list[Any], *, op: str = "Sub", opset: int = 17) -> tuple[list[Any], list[Any]]:
    nodes = [
        h.make_node("Identity", ["x"], ["x_out"]),
        h.make_node(op, ["x", "row"], ["d"]),
        *reduce,
    ]
    return nodes, [("x_out", F, None), ("y", F, None)]


def _check(model: bytes, feeds: dict[str, np.ndarray], *, batched: bool, rtol: float = 1e-5) -> None:
    s = onnxcore.Session(model)
    written = onnxcore.Session(model, disabled_rewrites=["batch_scans"])
    assert ("batch_scans" in s.fired_rewrites()) is batched
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)
    for _ in range(2):  # a shape's first run and a later one (the plan specialised to it)
        got = s.run(None, feeds)
        for g, w, o in zip(got, written.run(None, feeds), want):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_array_equal(g, w)
            # Sums of thousands of values cancel: onnxruntime's other order is measured against the largest value.
            np.testing.assert_allclose(g, o, rtol=rtol, atol=rtol * max(1.0, float(np.abs(o).max(initial=0))))


REDUCTION_CASES = [
    ("ReduceSumSquare", [1], 0),
    ("ReduceSumSquare", [1], 1),
    ("ReduceSumSquare", [0], 0),
    ("ReduceSumSquare", None, 0),
    ("ReduceL1", [-1], 0),
    ("ReduceL2", [1], 1),
    ("ReduceMean", [0, 1], 0),
    ("ReduceSum", [1], 0),
    ("ReduceSum", None, 1),
]


@pytest.mark.parametrize(("reduce", "axes", "keepdims"), REDUCTION_CASES)
@pytest.mark.parametrize("shape", [(1, 4), (16, 10), (7, 1), (60, 150), (100, 164)])
@pytest.mark.usefixtures("accel_path")
def test_reductions_of_each_row_batched_bit_for_bit(
    reduce: str, axes: list[int] | None, keepdims: int, shape: tuple[int, int]
) -> None:
    """Row sizes below, around and above BLAS_SUM_MIN (60 x 150 = 9,000; 100 x 164 = 16,400, where the reduction
    kernel sums by BLAS and the Scan runs as written); axes as an attribute (opset 17) and as a constant input."""
    n, d = shape
    r = RNG.standard_normal((23, d)).astype(np.float32)
    x = RNG.standard_normal((n, d)).astype(np.float32)
    if reduce == "ReduceSum":
        inits = [] if axes is None else [nh.from_array(np.array(axes, np.int64), "axes")]
        node = h.make_node(reduce, ["d"] + (["axes"] if axes else []), ["y"], keepdims=keepdims)
    else:
        inits = []
        node = h.make_node(reduce, ["d"], ["y"], keepdims=keepdims, **({} if axes is None else {"axes": axes}))
    nodes, outs = _distance_body([node])
    model = _scan_model(nodes, [("x", F, [None, d])], [("row", F, [d])], outs, scan_rows=r, state_shape=[None, d],
                        body_inits=inits)  # fmt: skip
    _check(model, {"X": x}, batched=True, rtol=1e-4)


@pytest.mark.usefixtures("accel_path")
def test_reductions_with_axes_inputs_at_opset_18() -> None:
    """ReduceSumSquare-18 and ReduceL1-18 read their axes from a constant input; noop_with_empty_axes with no axes
    returns the squares themselves."""
    r = RNG.standard_normal((31, 5)).astype(np.float32)
    x = RNG.standard_normal((9, 5)).astype(np.float32)
    axes = nh.from_array(np.array([1], np.int64), "axes")
    for reduce in (
        h.make_node("ReduceSumSquare", ["d", "axes"], ["y"], keepdims=0),
        h.make_node("ReduceL1", ["d", "axes"], ["y"], keepdims=1),
        h.make_node("ReduceSumSquare", ["d"], ["y"], noop_with_empty_axes=1),
    ):
        nodes, outs = _distance_body([reduce])
        model = _scan_model(nodes, [("x", F, [None, 5])], [("row", F, [5])], outs, scan_rows=r, state_shape=[None, 5],
                            body_inits=[axes], opset=18)  # fmt: skip
        _check(model, {"X": x}, batched=True)


def test_elementwise_body_of_several_outputs_and_broadcasts() -> None:
    """Rows of rank 1 against a state of rank 3 (the row gets unit axes after the batch axis), a comparison, a
    Where, a Cast and two scan outputs, one of them the scanned row itself."""
    r = RNG.standard_normal((12, 4)).astype(np.float32)
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    zero = nh.from_array(np.zeros((), np.float32), "zero")
    nodes = [
        h.make_node("Identity", ["x"], ["x_out"]),
        h.make_node("Mul", ["x", "row"], ["p"]),
        h.make_node("Less", ["p", "zero"], ["neg"]),
        h.make_node("Where", ["neg", "zero", "p"], ["q"]),
        h.make_node("Cast", ["q"], ["q64"], to=TP.DOUBLE),
        h.make_node("Sqrt", ["q64"], ["s"]),
        h.make_node("Cast", ["s"], ["y"], to=TP.FLOAT),
        h.make_node("Abs", ["row"], ["y2"]),
    ]
    body = h.make_graph(
        nodes,
        "body",
        [h.make_tensor_value_info("x", F, [2, 3, 4]), h.make_tensor_value_info("row", F, [4])],
        [h.make_tensor_value_info(n, F, None) for n in ("x_out", "y", "y2")],
        [zero],
    )
    scan = h.make_node("Scan", ["X", "R"], ["state_out", "y0", "y1"], body=body, num_scan_inputs=1)
    g = h.make_graph(
        [scan],
        "g",
        [h.make_tensor_value_info("X", F, [2, 3, 4])],
        [h.make_tensor_value_info(o, F, None) for o in ("state_out", "y0", "y1")],
        [nh.from_array(r, "R")],
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    _check(_with_output_shapes(m), {"X": x}, batched=True)


def _not_batched(**changes: Any) -> tuple[bytes, dict[str, np.ndarray]]:
    r = RNG.standard_normal((6, 3)).astype(np.float32)
    x = RNG.standard_normal((4, 3)).astype(np.float32)
    reduce = h.make_node("ReduceSumSquare", ["d"], ["y"], axes=[1], keepdims=0)
    nodes, outs = _distance_body([reduce])
    state_node = changes.pop("state_node", None)
    if state_node is not None:
        nodes[0] = state_node
    if changes.pop("matmul", False):
        nodes[1] = h.make_node("MatMul", ["x", "row"], ["d0"])
        nodes.insert(2, h.make_node("Unsqueeze", ["d0", "one"], ["d"]))
        changes["body_inits"] = [nh.from_array(np.array([1], np.int64), "one")]
    model = _scan_model(nodes, [("x", F, [4, 3])], [("row", F, [3])], outs, scan_rows=r, state_shape=[4, 3],
                        **changes)  # fmt: skip
    return model, {"X": x}


@pytest.mark.parametrize(
    "changes",
    [
        {"state_node": h.make_node("Add", ["x", "row"], ["x_out"])},  # a state carried from one iteration on
        {"scan_input_directions": [1]},
        {"scan_output_directions": [1]},
        {"matmul": True},
    ],
    ids=["state-carried", "reverse-input", "reverse-output", "matmul-in-body"],
)
def test_scans_left_as_written(changes: dict[str, Any]) -> None:
    model, feeds = _not_batched(**changes)
    _check(model, feeds, batched=False)


def test_another_scan_axis_is_left_as_written() -> None:
    r = RNG.standard_normal((3, 6)).astype(np.float32)  # scanned along axis 1: 6 rows of 3
    x = RNG.standard_normal((4, 3)).astype(np.float32)
    nodes, outs = _distance_body([h.make_node("ReduceSumSquare", ["d"], ["y"], axes=[1], keepdims=0)])
    model = _scan_model(nodes, [("x", F, [4, 3])], [("row", F, [3])], outs, scan_rows=r, state_shape=[4, 3],
                        scan_input_axes=[1])  # fmt: skip
    _check(model, {"X": x}, batched=False)


# The rank of the empty stack is the kernel as written's (both sessions warn alike).
@pytest.mark.filterwarnings("ignore::onnxcore.errors.OutputShapeWarning")
def test_limits_and_empty_scans_run_as_written() -> None:
    """The iteration bound refuses a batched Scan as it refuses the Scan as written (Clause 15.4); a scan of no
    rows gives the outputs the kernel as written gives."""
    r = RNG.standard_normal((60, 3)).astype(np.float32)
    nodes, outs = _distance_body([h.make_node("ReduceSumSquare", ["d"], ["y"], axes=[1], keepdims=0)])
    model = _scan_model(nodes, [("x", F, [None, 3])], [("row", F, [3])], outs, scan_rows=r, state_shape=[None, 3])
    s = onnxcore.Session(model, limits=onnxcore.Limits(max_loop_iterations=50))
    assert "batch_scans" in s.fired_rewrites()
    with pytest.raises(LimitError, match="max_loop_iterations"):
        s.run(None, {"X": np.ones((2, 3), np.float32)})
    empty = _scan_model(nodes, [("x", F, [None, 3])], [("row", F, [3])], outs,
                        scan_rows=np.zeros((0, 3), np.float32), state_shape=[None, 3])  # fmt: skip
    x = np.ones((2, 3), np.float32)
    got = onnxcore.Session(empty).run(None, {"X": x})
    want = onnxcore.Session(empty, disabled_rewrites=["batch_scans"]).run(None, {"X": x})
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype


def test_a_body_that_fails_fails_as_written() -> None:
    """Rows that do not broadcast against the state: the batched Scan raises the error the Scan as written raises."""
    r = RNG.standard_normal((6, 5)).astype(np.float32)
    nodes, outs = _distance_body([h.make_node("ReduceSumSquare", ["d"], ["y"], axes=[1], keepdims=0)])
    model = _scan_model(nodes, [("x", F, [None, None])], [("row", F, [5])], outs, scan_rows=r,
                        state_shape=[None, None])  # fmt: skip
    x = np.ones((2, 3), np.float32)
    s = onnxcore.Session(model)
    assert "batch_scans" in s.fired_rewrites()
    with pytest.raises(onnxcore.OnnxCoreError) as batched:
        s.run(None, {"X": x})
    with pytest.raises(onnxcore.OnnxCoreError) as written:
        onnxcore.Session(model, disabled_rewrites=["batch_scans"]).run(None, {"X": x})
    assert type(batched.value) is type(written.value)


def test_blocks_of_iterations_join_bit_for_bit(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a small block size the iterations run in many blocks (the first of one iteration); the stacked outputs
    are those of one block."""
    r = RNG.standard_normal((97, 8)).astype(np.float32)
    x = RNG.standard_normal((5, 8)).astype(np.float32)
    nodes, outs = _distance_body([h.make_node("ReduceSumSquare", ["d"], ["y"], axes=[1], keepdims=0)])
    model = _scan_model(nodes, [("x", F, [None, 8])], [("row", F, [8])], outs, scan_rows=r, state_shape=[None, 8])
    whole = onnxcore.Session(model).run(None, {"X": x})
    monkeypatch.setattr(fused_scan, "BLOCK_ELEMENTS", 100)
    blocks = onnxcore.Session(model).run(None, {"X": x})
    for a, b in zip(whole, blocks):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("metric", ["euclidean", "manhattan"])
@pytest.mark.parametrize("n_neighbors", [1, 5])
@pytest.mark.parametrize("kind", ["classifier", "regressor"])
@pytest.mark.usefixtures("accel_path")
def test_skl2onnx_nearest_neighbours(kind: str, n_neighbors: int, metric: str) -> None:
    """skl2onnx's KNeighbors models compute their distances in a Scan of one iteration per training row: batched,
    bit for bit with the Scan as written, within rounding of onnxruntime, at 1, 16 and 700 rows (700 x 6 values
    per iteration: below BLAS_SUM_MIN)."""
    X = RNG.standard_normal((300, 6)).astype(np.float32)
    if kind == "classifier":
        est: Any = KNeighborsClassifier(n_neighbors=n_neighbors, metric=metric).fit(X, (X[:, 0] > 0).astype(int))
        options: Any = {KNeighborsClassifier: {"zipmap": False}}
    else:
        est = KNeighborsRegressor(n_neighbors=n_neighbors, metric=metric).fit(X, X[:, 1])
        options = None
    model = skl2onnx.to_onnx(est, X[:1], options=options, target_opset={"": 17, "ai.onnx.ml": 3}).SerializeToString()
    for rows in (1, 16, 700):
        _check(model, {"X": RNG.standard_normal((rows, 6)).astype(np.float32)}, batched=True, rtol=1e-4)


@pytest.mark.parametrize("seed", range(20))
def test_reductions_of_rank_3_rows_against_the_kernel_row_by_row(seed: int) -> None:
    """Rows of rank 3 (sizes from 1 to about 8,000 values), each sum-type reduction over a random set of axes, with
    and without keepdims: the fused kernel run alone gives, bit for bit, the reduction kernel applied row by row."""
    rng = np.random.default_rng(seed)
    for op_type in REDUCTIONS:
        shape = tuple(int(v) for v in rng.integers(1, 21, size=3))
        rows = rng.standard_normal((int(rng.integers(1, 40)), *shape)).astype(rng.choice([np.float32, np.float64]))
        axes = sorted(int(a) for a in rng.choice(3, size=int(rng.integers(1, 4)), replace=False))
        keepdims = int(rng.integers(0, 2))
        ops = [BodyOp(op_type, ("row",), "y", lambda *a, **k: None, {"keepdims": keepdims}, tuple(axes))]
        got = kernels.run("BatchedScan", 1, rows, domain="onnxcore.fused", n_state=0, body_inputs=["row"],
                          body_outputs=["y"], outer=[], body_constants={}, ops=ops,
                          fallback=lambda *a, **k: pytest.fail("run as written"), fallback_kw={})  # fmt: skip
        want = np.stack([kernels.run(op_type, 11, r, axes=axes, keepdims=keepdims)[0] for r in rows])
        assert got[0].dtype == want.dtype
        np.testing.assert_array_equal(got[0], want)
