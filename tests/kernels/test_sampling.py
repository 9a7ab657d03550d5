"""GridSample, AffineGrid and NonMaxSuppression against the ONNX 1-3 vectors and onnxruntime.

GridSample: every mode x padding_mode x align_corners, 2-D at versions 16 (bilinear/nearest/bicubic)
and 20/22 (linear/nearest/cubic), 1-D and 3-D at version 20 (onnxruntime implements 3-D linear and
nearest only: cubic N-D is checked against a separable float64 composition of 1-D cubic sampling).
NonMaxSuppression: random boxes in both box formats with ties, thresholds and limits.
"""

from __future__ import annotations

import itertools
from typing import Any

import corpus
import ml_dtypes
import numpy as np
import pytest
from runtime.node_harness import assert_close, run_single_node_case

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

PREFIXES = ("test_gridsample", "test_affine_grid", "test_nonmaxsuppression")
CASES = {c.name: c for c in corpus.node_case_dirs() if c.name.startswith(PREFIXES) and "expanded" not in c.name}


@pytest.mark.parametrize("name", sorted(CASES))
def test_node_vector(name: str) -> None:
    out = run_single_node_case(CASES[name])
    assert out is not None, f"{name}: no kernel registered"
    actual, expected = out
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        assert_close(a, e)


def test_vector_count() -> None:
    assert len(CASES) >= 30


def _model(op: str, opset: int, inputs: list[tuple[str, np.ndarray | None]], out_type: int, attrs: dict) -> Any:
    names = [n if v is not None else "" for n, v in inputs]
    while names and names[-1] == "":
        names.pop()
    node = helper.make_node(op, names, ["out"], **attrs)
    vis = [
        helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), list(v.shape))
        for n, v in inputs
        if v is not None
    ]
    graph = helper.make_graph([node], "g", vis, [helper.make_tensor_value_info("out", out_type, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model


def _run_both(
    op: str, opset: int, inputs: list[tuple[str, np.ndarray | None]], out_type: int, attrs: dict
) -> tuple[np.ndarray, np.ndarray]:
    ort = pytest.importorskip("onnxruntime")
    from onnxcore.kernels.registry import lookup

    model = _model(op, opset, inputs, out_type, attrs)
    feeds = {n: v for n, v in inputs if v is not None}
    (expected,) = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    since = onnx.defs.get_schema(op, opset, "").since_version
    k = lookup("", op, since)
    assert k is not None
    actual = k.fn(*[v for _, v in inputs], **attrs)
    return actual, expected


RNG = np.random.default_rng(1234)


# ---------------------------------------------------------------------------------------------
# GridSample
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("opset", [16, 20, 22])
def test_grid_sample_2d_against_onnxruntime(opset: int) -> None:
    modes = ["bilinear", "nearest", "bicubic"] if opset == 16 else ["linear", "nearest", "cubic"]
    for mode, pad, align in itertools.product(modes, ["zeros", "border", "reflection"], [0, 1]):
        x = RNG.standard_normal((2, 3, 5, 7)).astype(np.float32)
        grid = RNG.uniform(-1.6, 1.6, (2, 4, 6, 2)).astype(np.float32)
        grid[0, 0, 0] = [3.7, -4.2]  # far outside: reflection folds several times
        attrs = {"mode": mode, "padding_mode": pad, "align_corners": align}
        _, expected = _run_both("GridSample", opset, [("X", x), ("grid", grid)], TensorProto.FLOAT, attrs)
        actual = _ours_grid(opset, x, grid, attrs)
        assert actual.dtype == expected.dtype and actual.shape == expected.shape
        np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-5, err_msg=f"{mode} {pad} align={align}")


def _ours_grid(opset: int, x: np.ndarray, grid: np.ndarray, attrs: dict) -> np.ndarray:
    from onnxcore.kernels.registry import lookup

    fn = lookup("", "GridSample", onnx.defs.get_schema("GridSample", opset, "").since_version).fn
    return fn(x, grid, **attrs)


def test_grid_sample_3d_against_onnxruntime() -> None:
    for mode, pad, align in itertools.product(["linear", "nearest"], ["zeros", "border", "reflection"], [0, 1]):
        x = RNG.standard_normal((2, 2, 3, 4, 5)).astype(np.float32)
        grid = RNG.uniform(-1.4, 1.4, (2, 2, 3, 4, 3)).astype(np.float32)
        attrs = {"mode": mode, "padding_mode": pad, "align_corners": align}
        actual, expected = _run_both("GridSample", 20, [("X", x), ("grid", grid)], TensorProto.FLOAT, attrs)
        np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-5, err_msg=f"3-D {mode} {pad} align={align}")


def test_grid_sample_cubic_3d_is_separable() -> None:
    """N-cubic equals cubic along each axis in turn (the definition's N-D extension)."""
    from onnxcore.kernels.registry import lookup

    fn = lookup("", "GridSample", 20).fn
    x = RNG.standard_normal((1, 1, 4, 5, 6))
    # Sample at a grid varying along the innermost axis only: the result is then 1-D cubic
    # along W at the exact rows/planes (positions 1 and 2 in D and H hit sample centers).
    d_pos, h_pos = 1, 2
    gz = 2 * (d_pos + 0.5) / 4 - 1
    gy = 2 * (h_pos + 0.5) / 5 - 1
    gx = RNG.uniform(-1, 1, 7)
    grid = np.stack([gx, np.full(7, gy), np.full(7, gz)], axis=-1).reshape(1, 1, 1, 7, 3)
    y3 = fn(x, grid, mode="cubic", padding_mode="border")
    line = x[:, :, d_pos, h_pos, :]  # (1, 1, 6): one spatial axis
    y1 = fn(line, grid[..., :1].reshape(1, 7, 1), mode="cubic", padding_mode="border")
    np.testing.assert_allclose(y3.reshape(-1), y1.reshape(-1), rtol=1e-12)


def test_grid_sample_1d_linear_by_hand() -> None:
    from onnxcore.kernels.registry import lookup

    x = np.array([[[10.0, 20.0, 40.0]]], np.float32)
    grid = np.array([[[-1.0], [0.0], [0.5], [1.0]]], np.float32)
    y = lookup("", "GridSample", 20).fn(x, grid, align_corners=1)
    np.testing.assert_allclose(y, [[[10.0, 20.0, 30.0, 40.0]]])


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16, np.float64, np.int32, np.uint8])
def test_grid_sample_dtypes(dtype: Any) -> None:
    """Other element types against onnxruntime on float32 (it implements GridSample-20 for float only)."""
    from onnxcore.kernels.registry import lookup

    kind = "f" if dtype == ml_dtypes.bfloat16 else np.dtype(dtype).kind
    x = (RNG.standard_normal((1, 2, 4, 4)) * 20 if kind == "f" else RNG.integers(0, 100, (1, 2, 4, 4))).astype(dtype)
    grid = RNG.uniform(-1, 1, (1, 3, 3, 2)).astype(np.float32)
    for mode in ("linear", "nearest", "cubic"):
        x32 = x.astype(np.float32)
        _, expected = _run_both("GridSample", 20, [("X", x32), ("grid", grid)], TensorProto.FLOAT, {"mode": mode})
        actual = lookup("", "GridSample", 20).fn(x, grid, mode=mode)
        assert actual.dtype == x.dtype
        if kind in "iu":
            # Interpolated in floating point, converted to the integer type at the end (truncation).
            ref = np.trunc(expected.astype(np.float64))
            if kind == "u":
                ref = np.clip(ref, 0, None)
            assert np.abs(actual.astype(np.float64) - ref).max() <= 1.0
            assert (actual == ref).mean() > 0.9
        else:
            tol = {np.dtype(np.float16): 2e-3, np.dtype(ml_dtypes.bfloat16): 1e-2}.get(np.dtype(dtype), 1e-4)
            np.testing.assert_allclose(actual.astype(np.float64), expected, rtol=tol, atol=tol * 20)


def test_grid_sample_nearest_non_numeric() -> None:
    from onnxcore.errors import OnnxCoreError
    from onnxcore.kernels.registry import lookup

    fn = lookup("", "GridSample", 20).fn
    x = np.array([[[[b"a", b"b"], [b"c", b"d"]]]], dtype=object)
    grid = np.array([[[[-0.5, -0.5], [0.5, 0.5]]]], np.float32)
    y = fn(x, grid, mode="nearest", align_corners=0)
    assert y.tolist() == [[[[b"a", b"d"]]]]
    with pytest.raises(OnnxCoreError):
        fn(x, grid, mode="linear")
    with pytest.raises(OnnxCoreError):
        lookup("", "GridSample", 16).fn(x, grid, mode="linear")  # version 16 spells it "bilinear"


def test_grid_sample_empty_output() -> None:
    from onnxcore.kernels.registry import lookup

    y = lookup("", "GridSample", 20).fn(np.ones((2, 3, 4, 4), np.float32), np.zeros((2, 0, 5, 2), np.float32))
    assert y.shape == (2, 3, 0, 5) and y.dtype == np.float32


# ---------------------------------------------------------------------------------------------
# AffineGrid
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dims", [(2, 3, 4, 5), (3, 1, 1, 6), (2, 2, 3, 4, 5), (1, 1, 2, 1, 3)])
@pytest.mark.parametrize("align", [0, 1])
def test_affine_grid_against_onnxruntime(dims: tuple[int, ...], align: int) -> None:
    r = len(dims) - 2
    theta = RNG.standard_normal((dims[0], r, r + 1)).astype(np.float32)
    size = np.array(dims, np.int64)
    actual, expected = _run_both(
        "AffineGrid", 20, [("theta", theta), ("size", size)], TensorProto.FLOAT, {"align_corners": align}
    )
    if align and 1 in dims[2:]:
        # An axis of one position with align_corners=1 has no defined spacing: onnxruntime puts it
        # at +1, PyTorch at 0, onnx.reference at -1 (the first corner). We follow onnx.reference.
        from onnx.reference import ReferenceEvaluator

        model = _model(
            "AffineGrid", 20, [("theta", theta), ("size", size)], TensorProto.FLOAT, {"align_corners": align}
        )
        with np.errstate(divide="ignore"):  # onnx.reference divides by (1 - 1) for the spacing
            (expected,) = ReferenceEvaluator(model).run(None, {"theta": theta, "size": size})
    assert actual.shape == expected.shape == (dims[0], *dims[2:], r)
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6)


def test_affine_grid_identity_feeds_grid_sample() -> None:
    """The identity transform with align_corners=1 resamples an image exactly."""
    from onnxcore.kernels.registry import lookup

    theta = np.array([[[1.0, 0, 0], [0, 1.0, 0]]], np.float64)
    grid = lookup("", "AffineGrid", 20).fn(theta, np.array([1, 1, 3, 4]), align_corners=1)
    x = RNG.standard_normal((1, 1, 3, 4))
    y = lookup("", "GridSample", 20).fn(x, grid, align_corners=1)
    np.testing.assert_allclose(y, x, rtol=1e-12, atol=1e-12)
    assert grid.dtype == np.float64


# ---------------------------------------------------------------------------------------------
# NonMaxSuppression
# ---------------------------------------------------------------------------------------------


def _random_boxes(nb: int, ns: int, center: int) -> np.ndarray:
    xy = RNG.uniform(0, 10, (nb, ns, 2))
    wh = RNG.uniform(0.5, 4, (nb, ns, 2))
    if center:
        return np.concatenate([xy, wh], axis=-1).astype(np.float32)
    # [y1, x1, y2, x2], sometimes with the corners swapped.
    b = np.concatenate([xy[..., ::-1], (xy + wh)[..., ::-1]], axis=-1)
    flip = RNG.random((nb, ns)) < 0.3
    b[flip] = b[flip][:, [2, 3, 0, 1]]
    return b.astype(np.float32)


def _nms_inputs(
    boxes: np.ndarray, scores: np.ndarray, limit: int, iou: float, score: float | None
) -> list[tuple[str, np.ndarray | None]]:
    return [
        ("boxes", boxes),
        ("scores", scores),
        ("max_output_boxes_per_class", np.array([limit], np.int64)),
        ("iou_threshold", np.array([iou], np.float32)),
        ("score_threshold", None if score is None else np.array([score], np.float32)),
    ]


@pytest.mark.parametrize("opset", [10, 11])
def test_nms_against_onnxruntime(opset: int) -> None:
    for center, limit, iou, score in itertools.product([0, 1], [1, 3, 100], [0.0, 0.3, 0.7], [None, 0.4]):
        nb, nc, ns = 2, 3, 40
        boxes = _random_boxes(nb, ns, center)
        scores = RNG.random((nb, nc, ns)).astype(np.float32)
        scores[:, :, 5:9] = 0.5  # ties: lower index first
        inputs = _nms_inputs(boxes, scores, limit, iou, score)
        actual, expected = _run_both(
            "NonMaxSuppression", opset, inputs, TensorProto.INT64, {"center_point_box": center}
        )
        assert actual.dtype == np.int64
        np.testing.assert_array_equal(
            actual, expected, err_msg=f"center={center} limit={limit} iou={iou} score={score}"
        )


@pytest.mark.parametrize("iou", [-0.1, 1.5, float("nan")])
def test_nms_iou_threshold_outside_its_range_is_refused(iou: float) -> None:
    # "Value range [0, 1]" (the definition); found by the differential fuzz against onnxruntime, which refuses.
    from onnxcore.errors import EvaluationError
    from onnxcore.kernels.registry import lookup

    fn = lookup("", "NonMaxSuppression", 11).fn
    inputs = [v for _, v in _nms_inputs(_random_boxes(1, 4, 0), RNG.random((1, 1, 4)).astype(np.float32), 3, iou, None)]
    with pytest.raises(EvaluationError, match=r"iou_threshold .* is outside \[0, 1\]"):
        fn(*inputs)
    inputs[3] = np.array([1.0], np.float32)  # the bounds themselves are in range
    assert fn(*inputs).shape == (3, 3)


def test_nms_many_boxes_against_onnxruntime() -> None:
    """Hundreds of boxes per class, clustered so that most are suppressed (the working set is compacted
    between rounds), with boxes of zero area and tied scores."""
    for limit, iou, score in [(1000, 0.5, None), (50, 0.3, 0.2), (1000, 0.0, None), (7, 0.9, 0.5)]:
        nb, nc, ns = 2, 4, 700
        centres = RNG.uniform(0, 40, (nb, 12, 2))[:, RNG.integers(0, 12, ns)]
        xy = centres + RNG.normal(0, 1.5, (nb, ns, 2))
        wh = RNG.uniform(2, 6, (nb, ns, 2))
        wh[:, ::50] = 0  # empty boxes never suppress nor are suppressed
        boxes = np.concatenate([xy[..., ::-1], (xy + wh)[..., ::-1]], axis=-1).astype(np.float32)
        scores = RNG.random((nb, nc, ns)).astype(np.float32)
        scores[:, :, 100:130] = 0.75
        inputs = _nms_inputs(boxes, scores, limit, iou, score)
        actual, expected = _run_both("NonMaxSuppression", 11, inputs, TensorProto.INT64, {})
        assert len(expected) > 50
        np.testing.assert_array_equal(actual, expected, err_msg=f"limit={limit} iou={iou} score={score}")


def test_nms_defaults_and_empty() -> None:
    from onnxcore.kernels.registry import lookup

    fn = lookup("", "NonMaxSuppression", 11).fn
    boxes = _random_boxes(1, 5, 0)
    scores = RNG.random((1, 2, 5)).astype(np.float32)
    out = fn(boxes, scores)  # max_output_boxes_per_class defaults to 0: nothing selected
    assert out.shape == (0, 3) and out.dtype == np.int64
    out = fn(boxes, scores, np.array(10, np.int64), None, np.array(2.0, np.float32))
    assert out.shape == (0, 3)
    out = fn(boxes, scores, np.array(10, np.int64), None, None)
    # iou_threshold defaults to 0: any overlap suppresses.
    assert out.shape[1] == 3 and set(out[:, 1].tolist()) <= {0, 1}


def test_grid_sample_16_is_2d_only() -> None:
    from onnxcore.errors import OnnxCoreError
    from onnxcore.kernels.registry import lookup

    x = np.ones((1, 1, 2, 2, 2), np.float32)
    grid = np.zeros((1, 1, 1, 1, 3), np.float32)
    with pytest.raises(OnnxCoreError):
        lookup("", "GridSample", 16).fn(x, grid)
    assert lookup("", "GridSample", 20).fn(x, grid).shape == (1, 1, 1, 1, 1)


def test_nms_chain_against_onnxruntime() -> None:
    """A chain of overlapping boxes: a suppressed box suppresses nothing (greedy, not transitive)."""
    n = 12
    x0 = np.arange(n, dtype=np.float32) * 0.5  # neighbours: IoU 1/3; two apart: touching only
    boxes = np.stack([np.zeros(n), x0, np.ones(n), x0 + 1], axis=-1).astype(np.float32)[None]  # [y1, x1, y2, x2]
    scores = np.linspace(1.0, 0.1, n, dtype=np.float32)[None, None]
    scores[0, 0, 3] = 0.95  # out of order in the middle of the chain
    for iou in (0.1, 0.3, 0.4):
        inputs = [
            ("boxes", boxes),
            ("scores", scores),
            ("max_output_boxes_per_class", np.array([n], np.int64)),
            ("iou_threshold", np.array([iou], np.float32)),
        ]
        actual, expected = _run_both("NonMaxSuppression", 11, inputs, TensorProto.INT64, {})
        np.testing.assert_array_equal(actual, expected, err_msg=f"iou={iou}")
        assert 1 < len(actual) < n if iou < 1 / 3 else len(actual) == n
