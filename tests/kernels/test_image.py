"""Resize and Upsample against the ONNX 1-3 vectors and onnxruntime."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from runtime.node_harness import assert_close, run_single_node_case

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

PREFIXES = ("test_resize", "test_upsample")


def test_node_vectors(node_cases: list[Path]) -> None:
    cases = [c for c in node_cases if c.name.startswith(PREFIXES) and "expanded" not in c.name]
    assert len(cases) >= 35
    failures = []
    for case in cases:
        out = run_single_node_case(case)
        assert out is not None, case.name
        actual, expected = out
        try:
            for a, e in zip(actual, expected):
                assert_close(a, e)
        except AssertionError as err:
            failures.append(f"{case.name}: {str(err)[:300]}")
    assert failures == []


def _ort_resize(x: np.ndarray, scales: np.ndarray | None, sizes: np.ndarray | None, attrs: dict) -> np.ndarray:
    inputs = ["X", "", "scales" if scales is not None else "", "sizes" if sizes is not None else ""]
    while inputs[-1] == "":
        inputs.pop()
    node = helper.make_node("Resize", inputs, ["Y"], **attrs)
    vis = [helper.make_tensor_value_info("X", TensorProto.FLOAT, list(x.shape))]
    feeds = {"X": x}
    if scales is not None:
        vis.append(helper.make_tensor_value_info("scales", TensorProto.FLOAT, [len(scales)]))
        feeds["scales"] = scales
    if sizes is not None:
        vis.append(helper.make_tensor_value_info("sizes", TensorProto.INT64, [len(sizes)]))
        feeds["sizes"] = sizes
    g = helper.make_graph([node], "g", vis, [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)])
    m.ir_version = 9
    return ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]


def test_against_onnxruntime() -> None:
    from onnxcore.kernels.registry import lookup

    fn = lookup("", "Resize", 19).fn
    rng = np.random.default_rng(5)
    # Extents times scales are whole numbers here: where they are not, onnxruntime uses the integer output
    # length in align_corners/pytorch_half_pixel while the ONNX 1-3 vectors (which we follow, see
    # test_node_vectors: test_resize_downsample_scales_cubic_align_corners) use the fractional one.
    x = rng.standard_normal((1, 2, 6, 8)).astype(np.float32)
    modes = ["nearest", "linear", "cubic"]
    ctms = ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"]
    for mode, ctm, scale in itertools.product(modes, ctms, [0.5, 1.5, 2.0]):
        scales = np.array([1, 1, scale, scale], np.float32)
        attrs = {"mode": mode, "coordinate_transformation_mode": ctm}
        expected = _ort_resize(x, scales, None, attrs)
        actual = fn(x, None, scales, None, **attrs)
        np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-5, err_msg=f"{mode} {ctm} {scale}")
    for size in ([1, 2, 4, 5], [1, 2, 12, 20]):
        sizes = np.array(size, np.int64)
        for mode in modes:
            attrs = {"mode": mode}
            expected = _ort_resize(x, None, sizes, attrs)
            np.testing.assert_allclose(fn(x, None, None, sizes, **attrs), expected, rtol=1e-4, atol=1e-5)


def test_integer_input_keeps_its_type() -> None:
    from onnxcore.kernels.registry import lookup

    x = np.arange(16, dtype=np.uint8).reshape(1, 1, 4, 4) * 15
    y = lookup("", "Resize", 19).fn(x, None, np.array([1, 1, 2, 2], np.float32), None, mode="linear")
    assert y.dtype == np.uint8 and y.shape == (1, 1, 8, 8)
    assert y.min() >= 0 and y.max() <= 225


@pytest.mark.parametrize("antialias", [0, 1])
@pytest.mark.parametrize(
    ("shape", "sizes"), [((1, 1, 4, 4), [1, 1, 0, 0]), ((1, 1, 4, 4), [1, 1, -2, 2]), ((1, 1, 0, 4), [1, 1, 2, 2])]
)
def test_resize_sizes_implying_no_positive_scale_are_refused(
    antialias: int, shape: tuple[int, ...], sizes: list[int]
) -> None:
    # The scale is "greater than 0" (Resize-13 and later); sizes of 0 made antialiasing divide by zero, an input
    # extent of 0 the scale itself (found by the differential fuzz against onnxruntime, which refuses both).
    from onnxcore.errors import EvaluationError
    from onnxcore.kernels.registry import lookup

    fn = lookup("", "Resize", 19).fn
    x = np.ones(shape, np.float32)
    with pytest.raises(EvaluationError, match="imply a scale that is not positive"):
        fn(x, None, None, np.array(sizes, np.int64), mode="linear", antialias=antialias)
