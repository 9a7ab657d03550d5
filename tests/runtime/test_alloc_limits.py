"""Every kernel whose output size or iteration count comes from data or attributes checks it against the session's
``Limits`` before allocating or looping (Clause 15.4; issue 41).

Each case asks for about 4 MiB. Under ``max_alloc_bytes`` of 1 MiB it must be refused with ``LimitError`` and
nothing near that size allocated (``tracemalloc`` sees numpy's allocations: the peak stays under the limit);
under the defaults it runs, and its output is larger than the limit (so the refusal is the check's, not the
case's).
"""

from __future__ import annotations

import dataclasses
import tracemalloc
from typing import Any

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper

import onnxcore
from onnxcore import DEFAULT_LIMITS, LimitError

MIB = 1 << 20
SMALL = dataclasses.replace(DEFAULT_LIMITS, max_alloc_bytes=MIB)


def _model(
    nodes: list[Any], inputs: list[Any], rank: int, *, opset: int = 21, inits: list[Any] | None = None, out: int = 0
) -> bytes:
    y = h.make_tensor_value_info("y", out or TP.FLOAT, [f"d{k}" for k in range(rank)])
    g = h.make_graph(nodes, "g", inputs, [y], inits or [])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 10
    return bytes(m.SerializeToString())


def _vi(name: str, elem: int, shape: list[Any]) -> Any:
    return h.make_tensor_value_info(name, elem, shape)


def _f(*shape: int) -> np.ndarray:
    return np.ones(shape, np.float32)


def _i(*values: int) -> np.ndarray:
    return np.array(values, np.int64)


def _one(
    op: str, feeds: dict[str, np.ndarray], rank: int, *, opset: int = 21, out: int = 0, **attrs: Any
) -> tuple[bytes, Any]:
    names = list(feeds)
    elem = {np.dtype(np.float32): TP.FLOAT, np.dtype(np.int64): TP.INT64}
    inputs = [_vi(n, elem[v.dtype], [f"{n}{k}" for k in range(v.ndim)]) for n, v in feeds.items()]
    node = h.make_node(op, [n if n[0] != "_" else "" for n in names], ["y"], **attrs)
    return _model([node], inputs, rank, opset=opset, out=out), feeds


def _window(op: str) -> tuple[bytes, Any]:
    return _one(op, {"n": np.array(1 << 20, np.int64)}, 1, opset=17)


def _constant_input_model(
    op: str, const: dict[str, np.ndarray], feeds: dict[str, np.ndarray], rank: int, **attrs: Any
) -> tuple[bytes, Any]:
    inits = [numpy_helper.from_array(v, n) for n, v in const.items()]
    elem = {np.dtype(np.float32): TP.FLOAT, np.dtype(np.int64): TP.INT64}
    inputs = [_vi(n, elem[v.dtype], list(v.shape)) for n, v in feeds.items()]
    node = h.make_node(op, [*feeds, *const], ["y"], **attrs)
    return _model([node], inputs, rank, inits=inits), feeds


def _linear() -> tuple[bytes, Any]:
    # MatMul + Add by constants: the plan runs them as its fused linear step; the rows come from a broadcast view.
    w = numpy_helper.from_array(np.ones((4, 1024), np.float32), "w")
    b = numpy_helper.from_array(np.ones(1024, np.float32), "b")
    nodes = [h.make_node("MatMul", ["x", "w"], ["t"]), h.make_node("Add", ["t", "b"], ["y"])]
    model = _model(nodes, [_vi("x", TP.FLOAT, ["N", 4])], 2, inits=[w, b])
    return model, {"x": np.broadcast_to(np.ones((1, 4), np.float32), (1024, 4))}


CASES: dict[str, tuple[bytes, dict[str, Any]]] = {
    "ConstantOfShape": _one("ConstantOfShape", {"s": _i(1024, 1024)}, 2),
    "Expand": _one("Expand", {"x": _f(1, 1), "s": _i(1024, 1024)}, 2),
    "Tile": _one("Tile", {"x": _f(2, 2), "r": _i(512, 512)}, 2),
    "Pad": _one("Pad", {"x": _f(2, 2), "p": _i(511, 511, 511, 511)}, 2),
    "Range": _one(
        "Range",
        {"a": np.array(0, np.int64), "b": np.array(1 << 19, np.int64), "c": np.array(1, np.int64)},
        1,
        out=TP.INT64,
    ),
    "Resize": _one(
        "Resize", {"x": _f(1, 1, 4, 4), "_r": np.zeros(0, np.float32), "s": np.array([1, 1, 256, 256], np.float32)}, 4
    ),
    "OneHot": _one(
        "OneHot", {"i": _i(*range(64)), "d": np.array(1 << 14, np.int64), "v": np.array([0, 1], np.float32)}, 2
    ),
    "Multinomial": _one("Multinomial", {"x": np.zeros((64, 4), np.float32)}, 2, sample_size=1 << 14, out=TP.INT32),
    "CenterCropPad": _one("CenterCropPad", {"x": _f(2, 2), "s": _i(1024, 1024)}, 2),
    "MatMul": _one("MatMul", {"a": _f(1024, 4), "b": _f(4, 1024)}, 2),
    "Gemm": _one("Gemm", {"a": _f(1024, 4), "b": _f(4, 1024)}, 2),
    "MatMul (fused linear step)": _linear(),
    "MaxRoiPool": _one(
        "MaxRoiPool", {"x": _f(1, 1, 4, 4), "r": np.array([[0, 0, 0, 3, 3]], np.float32)}, 4, pooled_shape=[1024, 1024]
    ),
    "RoiAlign": _one(
        "RoiAlign",
        {"x": _f(1, 1, 4, 4), "r": np.array([[0, 0, 3, 3]], np.float32), "b": np.zeros(1, np.int64)},
        4,
        output_height=1024,
        output_width=1024,
    ),
    "MaxUnpool": _one(
        "MaxUnpool",
        {"x": _f(1, 1, 2, 2), "i": np.zeros((1, 1, 2, 2), np.int64), "s": _i(1, 1, 1024, 1024)},
        4,
        kernel_shape=[2, 2],
    ),
    "DFT": _one("DFT", {"x": _f(1, 4, 1), "n": np.array(1 << 19, np.int64)}, 3, opset=20),
    "AffineGrid": _one(
        "AffineGrid", {"t": np.array([[[1, 0, 0], [0, 1, 0]]], np.float32), "s": _i(1, 1, 512, 512)}, 4, opset=20
    ),
    "Conv (pads)": _one("Conv", {"x": _f(1, 1, 4, 4), "w": _f(1, 1, 3, 3)}, 4, pads=[512, 512, 512, 512]),
    "ConvTranspose (strides)": _one("ConvTranspose", {"x": _f(1, 1, 4, 4), "w": _f(1, 1, 3, 3)}, 4, strides=[300, 300]),
    "LpPool (pads)": _one("LpPool", {"x": _f(1, 1, 4, 4)}, 4, kernel_shape=[2, 2], pads=[512, 512, 512, 512]),
    "AveragePool (pads)": _one("AveragePool", {"x": _f(1, 1, 4, 4)}, 4, kernel_shape=[2, 2], pads=[512, 512, 512, 512]),
    "STFT": _one(
        "STFT",
        {"x": _f(1, 2048, 1), "s": np.array(1, np.int64), "_w": np.zeros(0, np.float32), "l": np.array(1024, np.int64)},
        4,
        opset=17,
    ),
    "HannWindow": _window("HannWindow"),
    "HammingWindow": _window("HammingWindow"),
    "BlackmanWindow": _window("BlackmanWindow"),
    "RandomUniform": (_model([h.make_node("RandomUniform", [], ["y"], shape=[1024, 1024])], [], 2), {}),
    "RandomNormal": (_model([h.make_node("RandomNormal", [], ["y"], shape=[1024, 1024])], [], 2), {}),
    "EyeLike": _one("EyeLike", {"x": _f(1024, 1024)}, 2),
}
# EyeLike's output is its input's size: fed within the limit it must run; listed to show a kernel sized by its
# input is not refused (the feed was already admitted).
NOT_DATA_SIZED = {"EyeLike"}


def _run(model: bytes, feeds: dict[str, Any], limits: Any) -> list[Any]:
    return onnxcore.Session(model, limits=limits).run(None, feeds)


@pytest.mark.parametrize("op", sorted(set(CASES) - NOT_DATA_SIZED))
def test_refused_before_anything_of_that_size_is_allocated(op: str) -> None:
    model, feeds = CASES[op]
    session = onnxcore.Session(model, limits=SMALL)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        with pytest.raises(LimitError, match=r"max_alloc_bytes|exceeds"):
            session.run(None, feeds)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < MIB, f"{op}: {peak} octets allocated before the refusal"


@pytest.mark.parametrize("op", sorted(CASES))
def test_the_defaults_run_it(op: str) -> None:
    # What the small limit refuses is past the limit: the defaults run it and its output is larger.
    model, feeds = CASES[op]
    (y,) = _run(model, feeds, None)
    assert np.asarray(y).nbytes > MIB


def test_a_kernel_sized_by_its_admitted_input_runs_under_the_small_limit() -> None:
    model, _ = CASES["EyeLike"]
    (y,) = _run(model, {"x": _f(256, 256)}, SMALL)
    assert y.shape == (256, 256)
