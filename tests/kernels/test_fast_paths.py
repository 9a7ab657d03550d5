"""The fast paths of issue 27 against onnxruntime and the ONNX 1-3 vectors, and their determinism.

Pow with a constant small integer exponent (products), the blocked Erf/Gelu/activations, Softmax,
LayerNormalization and RMSNormalization by blocks of rows, depthwise convolution by windows, Resize by
interpolation matrices; every one gives the same bits for any number of kernel threads
(:mod:`onnxcore.kernels.threads`). The kernel ``prepare`` hook is tested here too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from runtime.node_harness import assert_close, run_single_node_case

from kernels import compare, run_ours, single_node_cases
from onnxcore.kernels.threads import threads_in_effect

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")

OPS = {"Pow", "Erf", "Sigmoid", "HardSwish", "Gelu", "Softmax", "LayerNormalization", "RMSNormalization", "Conv",
       "Resize"}  # fmt: skip
RNG = np.random.default_rng(27)


def f32(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("case_dir", single_node_cases(OPS))
def test_onnx_node_vectors(case_dir: Path) -> None:
    out = run_single_node_case(case_dir)
    assert out is not None, case_dir.name
    for a, e in zip(*out):
        assert_close(a, e)


# --- Pow --------------------------------------------------------------------------------------

SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 1e-20, -3e12, 2.5], np.float32)


@pytest.mark.parametrize("exponent", [2, 3, 4, -2, -3, -4, 1.5, 2.5, -0.5, -1.5])
@pytest.mark.parametrize("ydtype", [np.float32, np.int64])
@pytest.mark.parametrize("yshape", [(), (1, 1)])
def test_pow_constant_exponent_vs_onnxruntime(exponent: float, ydtype: Any, yshape: tuple[int, ...]) -> None:
    if ydtype is np.int64 and exponent != int(exponent):
        pytest.skip("a half-integer exponent has no integer form")
    x = np.concatenate([f32(2000) * 3, SPECIALS]).reshape(-1, 10)
    y = np.full(yshape, exponent, ydtype)
    ours = compare("Pow", [x, y], 15, rtol=2e-6, atol=1e-30)[0]
    # Also against numpy's power (rounded once) within the products' roundings: special values bit for bit.
    with np.errstate(all="ignore"):
        ref = np.power(x.astype(np.float64), float(exponent)).astype(np.float32)
    finite = np.isfinite(ref) & (ref != 0)
    np.testing.assert_allclose(ours[finite], ref[finite], rtol=2e-6)
    assert np.array_equal(np.signbit(ours[~finite]), np.signbit(ref[~finite]))
    assert np.array_equal(np.isnan(ours), np.isnan(ref))


def test_pow_float16_and_float64_products() -> None:
    for dt in (np.float16, np.float64):
        x = (f32(500) * 2).astype(dt)
        compare("Pow", [x, np.array(3.0, dt)], 15, rtol=1e-3 if dt == np.float16 else 1e-12, atol=0)


# --- activations, normalisations --------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "opset", "attrs"),
    [("Erf", 13, {}), ("Sigmoid", 13, {}), ("HardSwish", 14, {}), ("Gelu", 20, {}),
     ("Gelu", 20, {"approximate": "tanh"})],
)  # fmt: skip
def test_activations_large_vs_onnxruntime(op: str, opset: int, attrs: dict[str, Any]) -> None:
    x = f32(3, 70001) * 3  # several blocks and a partial one
    x[0, :5] = [np.nan, np.inf, -np.inf, 0.0, -0.0]
    compare(op, [x], opset, attrs, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape", [(4, 33, 768), (2, 3, 5), (1, 70000), (300, 1)])
def test_softmax_rows_vs_onnxruntime(shape: tuple[int, ...]) -> None:
    compare("Softmax", [f32(*shape) * 4], 13, {"axis": -1})
    big = f32(*shape) * 100  # beyond the bound where rows are shifted by their maxima
    big[-1, ...] += 500
    compare("Softmax", [big], 13, {"axis": -1}, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape", [(1, 3), (16, 3), (5, 17), (1000, 3), (2, 3, 40), (70, 300)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_shift_compiled_once_numba_is_loaded_gives_numpys_bits(shape: tuple[int, ...], dtype: Any) -> None:
    """Rows beyond the no-shift bound are shifted by their maxima; once numba is imported by another kernel
    (``accel.loaded``) that shift is one compiled pass: the numpy path's bits, a row of NaN, of -inf and one holding
    +inf included, in one block and in several."""
    from onnxcore.kernels import accel
    from onnxcore.kernels._rowwise import softmax_rows_last

    if not accel.available():
        pytest.skip("the accelerator is not available (numba not installed, or ONNXCORE_ACCEL=0)")
    x = (np.random.default_rng(3).standard_normal(shape) * 90).astype(dtype)
    rows = x.reshape(-1, shape[-1])
    if rows.shape[0] >= 4:
        rows[0, 0], rows[1], rows[2, -1] = np.nan, -np.inf, np.inf
    with accel.use(False):
        assert not accel.loaded()
        want = softmax_rows_last(x)
    with accel.use(True):
        assert accel.enabled() and accel.loaded()
        got = softmax_rows_last(x)
    assert want is not None and got is not None
    np.testing.assert_array_equal(got, want, strict=True)


LN_SHAPES = [((8, 40, 768), -1, (768,)), ((4, 6, 16, 16), -2, (16, 16)), ((5, 768), -1, (1, 768)),
             ((2, 3, 4), 0, (2, 3, 4))]  # fmt: skip


@pytest.mark.parametrize(("shape", "axis", "pshape"), LN_SHAPES)
@pytest.mark.parametrize("with_bias", [True, False])
def test_layer_norm_rows_vs_onnxruntime(
    shape: tuple[int, ...], axis: int, pshape: tuple[int, ...], with_bias: bool
) -> None:
    x = f32(*shape) * 2 + 1
    inputs = [x, f32(*pshape)] + ([f32(*pshape)] if with_bias else [])
    compare("LayerNormalization", inputs, 17, {"axis": axis, "epsilon": 1e-5}, n_outputs=3, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(("shape", "axis", "pshape"), [((8, 40, 768), -1, (768,)), ((4, 6, 16, 16), -2, (16, 16)),
                                                        ((5, 768), -1, (1, 768))])  # fmt: skip
def test_rms_norm_rows_vs_onnxruntime(shape: tuple[int, ...], axis: int, pshape: tuple[int, ...]) -> None:
    x = f32(*shape) * 2 + 1
    try:
        compare("RMSNormalization", [x, f32(*pshape)], 23, {"axis": axis}, rtol=1e-4, atol=1e-5)
    except Exception as e:  # onnxruntime before RMSNormalization-23
        if "RMSNormalization" in str(e) and "not" in str(e).lower():
            pytest.skip(str(e)[:120])
        raise


# --- depthwise convolution, Resize --------------------------------------------------------------


@pytest.mark.parametrize(
    ("c", "size", "k", "attrs"),
    [
        (256, 14, 3, {"pads": [1, 1, 1, 1]}),
        (160, 14, 5, {"pads": [2, 2, 2, 2], "strides": [2, 2]}),
        (128, 9, 7, {"pads": [3, 2, 1, 3]}),
        (32, 12, 3, {"pads": [2, 2, 2, 2], "dilations": [2, 2]}),
        (48, 20, 5, {"auto_pad": "SAME_UPPER", "strides": [2, 2]}),
        (24, 7, 3, {}),
    ],
)
@pytest.mark.parametrize("batch", [1, 2])
@pytest.mark.parametrize("with_bias", [True, False])
def test_depthwise_conv_vs_onnxruntime(c: int, size: int, k: int, attrs: dict[str, Any], batch: int,
                                       with_bias: bool) -> None:  # fmt: skip
    x = f32(batch, c, size, size)
    w = (f32(c, 1, k, k) / k).astype(np.float32)
    inputs = [x, w] + ([f32(c)] if with_bias else [])
    compare("Conv", inputs, 11, {**attrs, "group": c}, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    ("shape", "scales", "attrs"),
    [
        ((1, 1024, 7, 7), [1, 1, 2, 2], {"mode": "linear"}),
        ((2, 16, 56, 40), [1, 1, 2, 2], {"mode": "linear"}),
        ((1, 8, 20, 20), [1, 1, 0.5, 0.75], {"mode": "linear", "coordinate_transformation_mode": "align_corners"}),
        ((1, 3, 12, 16), [1, 1, 2, 2], {"mode": "cubic"}),
        ((1, 3, 12, 16), [1, 1, 1.5, 1], {"mode": "cubic", "coordinate_transformation_mode": "asymmetric"}),
        ((2, 4, 30), [1, 2, 3], {"mode": "linear"}),
        ((1, 5, 9, 9), [1, 2, 1, 1], {"mode": "linear"}),
        ((1, 4, 24, 24), [1, 1, 0.5, 0.5], {"mode": "cubic", "antialias": 1}),
    ],
)
def test_resize_vs_onnxruntime(shape: tuple[int, ...], scales: list[float], attrs: dict[str, Any]) -> None:
    x = f32(*shape)
    opset = 18 if attrs.get("antialias") else 13
    compare("Resize", [x, np.array([], np.float32), np.array(scales, np.float32)], opset, attrs, rtol=1e-4,
            atol=1e-5)  # fmt: skip


# --- the same bits for any number of threads ------------------------------------------------------


CASES_THREADS: list[tuple[str, int, list[np.ndarray], dict[str, Any]]] = [
    ("Erf", 13, [f32(5, 100003)], {}),
    ("Gelu", 20, [f32(5, 100003)], {}),
    ("Sigmoid", 13, [f32(5, 100003)], {}),
    ("HardSwish", 14, [f32(5, 100003)], {}),
    ("Softmax", 13, [f32(64, 33, 300)], {}),
    ("LayerNormalization", 17, [f32(64, 33, 300), f32(300), f32(300)], {}),
    ("RMSNormalization", 23, [f32(64, 33, 300), f32(300)], {}),
    ("Conv", 11, [f32(2, 256, 28, 28), f32(256, 1, 5, 5), f32(256)], {"group": 256, "pads": [2, 2, 2, 2]}),
]


@pytest.mark.parametrize(("op", "opset", "inputs", "attrs"), CASES_THREADS, ids=[c[0] for c in CASES_THREADS])
def test_same_bits_for_any_thread_count(op: str, opset: int, inputs: list[np.ndarray], attrs: dict[str, Any]) -> None:
    with threads_in_effect(1):
        one = run_ours(op, inputs, opset, attrs)
    for threads in (2, 3, 8):
        with threads_in_effect(threads):
            other = run_ours(op, inputs, opset, attrs)
        for a, b in zip(one, other):
            assert np.array_equal(a, b, equal_nan=True), (op, threads)


# --- the kernel prepare hook ---------------------------------------------------------------------


def test_prepare_hook_runs_once_per_node_and_defers_its_errors() -> None:
    from onnx import TensorProto, helper

    import onnxcore
    from onnxcore.errors import EvaluationError
    from onnxcore.kernels import KernelSet

    calls: list[float] = []
    ops = KernelSet()

    def prepare(*, factor: float = 2.0) -> Any:
        calls.append(factor)
        if factor < 0:
            raise EvaluationError("factor must not be negative")
        f = np.float32(factor)
        return lambda x: x * f

    @ops.kernel("Scale", 1, domain="com.example", prepare=prepare)
    def scale(x: np.ndarray, *, factor: float = 2.0) -> np.ndarray:
        return prepare(factor=factor)(x)

    def model(factor: float) -> bytes:
        node = helper.make_node("Scale", ["x"], ["y"], domain="com.example", factor=factor)
        g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])])  # fmt: skip
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])
        return m.SerializeToString()

    x = np.array([1, 2, 3], np.float32)
    s = onnxcore.Session(model(3.0), custom_ops=ops)
    assert calls == [3.0]
    for _ in range(3):
        assert s.run(None, {"x": x})[0].tolist() == [3.0, 6.0, 9.0]
    assert calls == [3.0]  # prepared once, when the session was made
    bad = onnxcore.Session(model(-1.0), custom_ops=ops)  # the preparation's error waits for a run
    with pytest.raises(EvaluationError, match="factor must not be negative"):
        bad.run(None, {"x": x})


# --- the thread pool ----------------------------------------------------------------------------------


def test_parallel_for_covers_every_item_once_and_reraises() -> None:
    import threading

    from onnxcore.kernels.threads import active_threads, parallel_for

    seen = np.zeros(1000, np.int64)
    inner: list[int] = []
    lock = threading.Lock()

    def fn(a: int, b: int) -> None:
        seen[a:b] += 1
        with lock:
            inner.append(active_threads())

    with threads_in_effect(4):
        parallel_for(fn, 1000, threads=4, min_block=10, measured=False)  # the blocks, not the measured choice
    assert (seen == 1).all()
    # 16 blocks (BLOCKS_PER_THREAD per thread), taken by the caller (4 threads in effect) and the pool's workers,
    # which run with one thread.
    assert len(inner) == 16 and set(inner) <= {1, 4}
    inner.clear()
    with threads_in_effect(4):
        parallel_for(fn, 50, threads=4, min_block=10, measured=False)  # at most 5 blocks of at least 10 items
    assert (seen[:50] == 2).all() and (seen[50:] == 1).all() and len(inner) == 5

    def boom(a: int, b: int) -> None:
        if a > 0:
            raise ValueError(f"block {a}")

    with pytest.raises(ValueError, match=r"^block 9$"):  # the first failing block in block order (100 = 9 + 9 + ...)
        parallel_for(boom, 100, threads=3, measured=False)
    parallel_for(lambda a, b: None, 0, threads=3)  # nothing to do


def test_parallel_for_learns_per_call_site_whether_the_threads_pay() -> None:
    """The measured choice (the default): the first calls of a call site alternate the calling thread and the split,
    each covering every item once; then the faster is kept. Blocks that wait (sleep, without the GIL) are split;
    blocks of a microsecond stay on the calling thread, where handing them to the pool costs more than they do."""
    import time

    from onnxcore.kernels import threads as th

    th.clear_choices()
    seen = np.zeros(8, np.int64)
    calls: list[tuple[int, int]] = []

    def waits(a: int, b: int) -> None:
        seen[a:b] += 1
        time.sleep(0.002 * (b - a))

    def quick(a: int, b: int) -> None:
        seen[a:b] += 1
        calls.append((a, b))

    for fn in (waits, quick):
        for i in range(2 * th._TRIALS):
            assert th.serial_pays(fn, 8, 2) is None
            th.parallel_for(fn, 8, threads=2)
            assert (seen == i + 1).all()  # every item once per call, whichever way it ran
        seen[:] = 0
    assert th.serial_pays(waits, 8, 2) is False
    assert th.serial_pays(quick, 8, 2) is True
    calls.clear()
    th.parallel_for(quick, 8, threads=2)
    assert calls == [(0, 8)]  # the kept choice: one call on the calling thread
    # Another total (or size, or thread count) is another measurement.
    assert th.serial_pays(quick, 16, 2) is None and th.serial_pays(quick, 8, 2, size=1 << 20) is None
    th.clear_choices()
    assert th.serial_pays(quick, 8, 2) is None


def test_session_threads_reach_kernels() -> None:
    from onnx import TensorProto, helper

    import onnxcore
    from onnxcore.kernels import KernelSet
    from onnxcore.kernels.threads import active_threads, machine_threads

    ops = KernelSet()

    @ops.kernel("Threads", 1, domain="com.example")
    def threads_op(x: np.ndarray) -> np.ndarray:
        return np.full(x.shape, active_threads(), np.int64)

    node = helper.make_node("Threads", ["x"], ["y"], domain="com.example")
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                          [helper.make_tensor_value_info("y", TensorProto.INT64, [1])])  # fmt: skip
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])
    x = np.zeros(1, np.float32)
    assert onnxcore.Session(model, custom_ops=ops).run(None, {"x": x})[0][0] == 1
    assert onnxcore.Session(model, custom_ops=ops, threads=3).run(None, {"x": x})[0][0] == 3
    assert onnxcore.Session(model, custom_ops=ops, threads=0).threads == machine_threads()
    assert active_threads() == 1  # outside a run


def test_ort_api_intra_op_threads() -> None:
    from onnx import TensorProto, helper

    from onnxcore.kernels.threads import machine_threads
    from onnxcore.runtime import ort_api

    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])  # fmt: skip
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    assert ort_api.InferenceSession(model)._session.threads == machine_threads()  # onnxruntime's default: the cores
    so = ort_api.SessionOptions()
    so.intra_op_num_threads = 1
    assert ort_api.InferenceSession(model, so)._session.threads == 1
