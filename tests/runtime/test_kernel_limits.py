"""Kernels that size a tensor from data or attributes refuse it under the session's limits (Clause 15.2, 15.4).

A few octets of an untrusted model (a shape input, a scale, a pad, a stride) can ask for a tensor of any size.
Every such kernel checks the size against ``max_tensor_elements`` of the :class:`onnxcore.Limits` the session
was made with, before allocating, and raises :class:`onnxcore.LimitError` naming the node; nothing is
allocated, so neither ``MemoryError`` nor the system's out-of-memory killer is reached.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from typing import Any

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as h

import onnxcore
from onnxcore.kernels.registry import kernel
from onnxcore.limits import DEFAULT_LIMITS, MACHINE_ALLOC_BYTES, active_limits, limits_in_effect

_DOMAIN = "test.onnxcore.limits"
_SEEN: list[Any] = []


@kernel("SeeLimits", 1, domain=_DOMAIN)
def _see_limits(x: np.ndarray) -> np.ndarray:
    _SEEN.append(active_limits())
    return x


def _vi(name: str, elem: int, rank: int) -> Any:
    return h.make_tensor_value_info(name, elem, [f"{name}{i}" for i in range(rank)])


def _model(node: Any, inputs: list[Any], rank: int, opset: int = 19) -> bytes:
    g = h.make_graph([node], "g", inputs, [_vi("y", TP.FLOAT, rank)])
    imports = [h.make_opsetid("", opset), h.make_opsetid(_DOMAIN, 1)]
    return h.make_model(g, opset_imports=imports, ir_version=9).SerializeToString()


def _f(*shape: int) -> np.ndarray:
    return np.ones(shape, np.float32)


# (operator, model, feeds that ask for about 10^6 elements): under a 10^5 limit each is refused; under the
# defaults each runs.
CASES: dict[str, tuple[bytes, dict[str, np.ndarray]]] = {
    "ConstantOfShape": (
        _model(h.make_node("ConstantOfShape", ["s"], ["y"]), [_vi("s", TP.INT64, 1)], 2),
        {"s": np.array([1000, 1000])},
    ),
    "Resize": (
        _model(
            h.make_node("Resize", ["x", "", "sc"], ["y"]),
            [_vi("x", TP.FLOAT, 4), _vi("sc", TP.FLOAT, 1)],
            4,
        ),
        {"x": _f(1, 1, 4, 4), "sc": np.array([1, 1, 250, 250], np.float32)},
    ),
    "Upsample": (
        _model(h.make_node("Upsample", ["x", "sc"], ["y"]), [_vi("x", TP.FLOAT, 4), _vi("sc", TP.FLOAT, 1)], 4, 9),
        {"x": _f(1, 1, 4, 4), "sc": np.array([1, 1, 250, 250], np.float32)},
    ),
    "ConvTranspose": (
        _model(
            h.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[300, 300]),
            [_vi("x", TP.FLOAT, 4), _vi("w", TP.FLOAT, 4)],
            4,
        ),
        {"x": _f(1, 1, 4, 4), "w": _f(1, 1, 3, 3)},
    ),
    "Conv": (
        _model(
            h.make_node("Conv", ["x", "w"], ["y"], pads=[500, 500, 500, 500]),
            [_vi("x", TP.FLOAT, 4), _vi("w", TP.FLOAT, 4)],
            4,
        ),
        {"x": _f(1, 1, 4, 4), "w": _f(1, 1, 3, 3)},
    ),
    "AveragePool": (
        _model(
            h.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], pads=[500, 500, 500, 500]),
            [_vi("x", TP.FLOAT, 4)],
            4,
        ),
        {"x": _f(1, 1, 4, 4)},
    ),
    "MaxUnpool": (
        _model(
            h.make_node("MaxUnpool", ["x", "i", "s"], ["y"], kernel_shape=[2, 2]),
            [_vi("x", TP.FLOAT, 4), _vi("i", TP.INT64, 4), _vi("s", TP.INT64, 1)],
            4,
        ),
        {"x": _f(1, 1, 2, 2), "i": np.zeros((1, 1, 2, 2), np.int64), "s": np.array([1, 1, 1000, 1000])},
    ),
    "RoiAlign": (
        _model(
            h.make_node("RoiAlign", ["x", "r", "b"], ["y"], output_height=1000, output_width=1000),
            [_vi("x", TP.FLOAT, 4), _vi("r", TP.FLOAT, 2), _vi("b", TP.INT64, 1)],
            4,
        ),
        {"x": _f(1, 1, 4, 4), "r": np.array([[0, 0, 3, 3]], np.float32), "b": np.zeros(1, np.int64)},
    ),
    "MaxRoiPool": (
        _model(
            h.make_node("MaxRoiPool", ["x", "r"], ["y"], pooled_shape=[1000, 1000]),
            [_vi("x", TP.FLOAT, 4), _vi("r", TP.FLOAT, 2)],
            4,
        ),
        {"x": _f(1, 1, 4, 4), "r": np.array([[0, 0, 0, 3, 3]], np.float32)},
    ),
    "AffineGrid": (
        _model(
            h.make_node("AffineGrid", ["t", "s"], ["y"]),
            [_vi("t", TP.FLOAT, 3), _vi("s", TP.INT64, 1)],
            4,
            20,
        ),
        {"t": np.array([[[1, 0, 0], [0, 1, 0]]], np.float32), "s": np.array([1, 1, 700, 700])},
    ),
    "Col2Im": (
        _model(
            h.make_node("Col2Im", ["x", "img", "blk"], ["y"], strides=[998, 998]),
            [_vi("x", TP.FLOAT, 3), _vi("img", TP.INT64, 1), _vi("blk", TP.INT64, 1)],
            4,
        ),
        {"x": _f(1, 4, 4), "img": np.array([1000, 1000]), "blk": np.array([2, 2])},
    ),
}

STRICT = dataclasses.replace(DEFAULT_LIMITS, max_tensor_elements=100_000)


@pytest.mark.parametrize("op", sorted(CASES))
def test_a_data_sized_tensor_is_refused_under_the_session_limits(op: str) -> None:
    model, feeds = CASES[op]
    with pytest.raises(onnxcore.LimitError, match=r"node 0 \(" + op + r".*exceeds the limit of 100000 elements"):
        onnxcore.Session(model, limits=STRICT).run(None, feeds)
    (y,) = onnxcore.Session(model).run(None, feeds)  # the defaults admit it
    assert y.size > 100_000


def test_constant_folding_runs_under_the_session_limits() -> None:
    """A ConstantOfShape of a constant shape is folded when the session is made; under strict limits the
    fold is refused, and the refusal surfaces when the node runs."""
    shape = h.make_tensor("s", TP.INT64, [2], [1000, 1000])
    g = h.make_graph([h.make_node("ConstantOfShape", ["s"], ["y"])], "g", [], [_vi("y", TP.FLOAT, 2)], [shape])
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 19)], ir_version=9).SerializeToString()
    session = onnxcore.Session(model, limits=STRICT)
    with pytest.raises(onnxcore.LimitError, match="ConstantOfShape"):
        session.run(None, {})
    assert onnxcore.Session(model).run(None, {})[0].shape == (1000, 1000)


def test_kernels_see_the_limits_of_the_session_that_runs_them() -> None:
    g = h.make_graph(
        [h.make_node("SeeLimits", ["x"], ["y"], domain=_DOMAIN)], "g", [_vi("x", TP.FLOAT, 1)], [_vi("y", TP.FLOAT, 1)]
    )
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 19), h.make_opsetid(_DOMAIN, 1)], ir_version=9)
    data = model.SerializeToString()
    strict, default = onnxcore.Session(data, limits=STRICT), onnxcore.Session(data)
    _SEEN.clear()
    strict.run(None, {"x": _f(2)})
    default.run(None, {"x": _f(2)})
    strict.profile({"x": _f(2)}, repeat=1)
    assert _SEEN[:2] == [STRICT, DEFAULT_LIMITS] and all(s is STRICT for s in _SEEN[2:])
    assert active_limits() is DEFAULT_LIMITS  # restored after each run
    with limits_in_effect(STRICT):
        assert active_limits() is STRICT
        default.run(None, {"x": _f(2)})  # a session's own limits win inside its run
        assert _SEEN[-1] is DEFAULT_LIMITS and active_limits() is STRICT
    assert active_limits() is DEFAULT_LIMITS


def test_a_limit_inside_a_subgraph_names_both_nodes() -> None:
    body = h.make_graph(
        [h.make_node("ConstantOfShape", ["s"], ["z"], name="inner")], "then", [], [_vi("z", TP.FLOAT, 2)]
    )
    g = h.make_graph(
        [h.make_node("If", ["c"], ["y"], name="outer", then_branch=body, else_branch=body)],
        "g",
        [_vi("c", TP.BOOL, 0), _vi("s", TP.INT64, 1)],
        [_vi("y", TP.FLOAT, 2)],
    )
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 19)], ir_version=9).SerializeToString()
    with pytest.raises(onnxcore.LimitError) as info:
        onnxcore.Session(model, limits=STRICT).run(None, {"c": np.array(True), "s": np.array([1000, 1000])})
    msg = str(info.value)
    assert msg.index("'outer'") < msg.index("'inner'") < msg.index("exceeds the limit")


def _broadcast_model(nodes: list[Any], inputs: list[Any], inits: list[Any] | None = None) -> bytes:
    g = h.make_graph(nodes, "g", inputs, [_vi("y", TP.FLOAT, 2)], inits or [])
    return h.make_model(g, opset_imports=[h.make_opsetid("", 19)], ir_version=9).SerializeToString()


@pytest.mark.parametrize("op", ["Add", "Mul", "Sum", "Max", "Where", "chain"])
def test_a_broadcast_that_multiplies_extents_is_refused(op: str) -> None:
    """(1000, 1) with (1, 1000): two inputs of 1000 elements broadcast to 10^6."""
    col, row = _f(1000, 1), _f(1, 1000)
    if op == "Where":
        nodes = [h.make_node("Where", ["c", "a", "b"], ["y"])]
        inputs = [_vi("c", TP.BOOL, 2), _vi("a", TP.FLOAT, 2), _vi("b", TP.FLOAT, 2)]
        feeds: dict[str, np.ndarray] = {"c": np.ones((1000, 1), bool), "a": col, "b": row}
        inits = None
    elif op == "chain":  # Mul then Add by constants: one fused step
        nodes = [h.make_node("Mul", ["a", "k"], ["t"]), h.make_node("Add", ["t", "k"], ["y"])]
        inputs, feeds = [_vi("a", TP.FLOAT, 2)], {"a": col}
        inits = [h.make_tensor("k", TP.FLOAT, [1, 1000], row.ravel())]
    else:
        nodes = [h.make_node(op, ["a", "b"], ["y"])]
        inputs, feeds, inits = [_vi("a", TP.FLOAT, 2), _vi("b", TP.FLOAT, 2)], {"a": col, "b": row}, None
    model = _broadcast_model(nodes, inputs, inits)
    with pytest.raises(onnxcore.LimitError, match="exceeds the limit of 100000 elements"):
        onnxcore.Session(model, limits=STRICT).run(None, feeds)
    assert onnxcore.Session(model).run(None, feeds)[0].shape == (1000, 1000)
    # Inputs of equal shapes (10^5 elements each, at the limit) do not grow: admitted.
    same = {k: np.ones((1000, 100), v.dtype) for k, v in feeds.items()}
    if op != "chain":
        assert onnxcore.Session(model, limits=STRICT).run(None, same)[0].shape == (1000, 100)


# --- Bytes as well as elements, the machine-derived allocation bound, feeds (issue 29) ---------------------------


def _one_node(node: Any, inputs: list[Any], out_elem: int, rank: int) -> bytes:
    g = h.make_graph([node], "g", inputs, [h.make_tensor_value_info("y", out_elem, [f"y{i}" for i in range(rank)])])
    return h.make_model(g, opset_imports=[h.make_opsetid("", 19)], ir_version=9).SerializeToString()


def test_constant_of_shape_is_refused_by_its_bytes() -> None:
    # 2**34 doubles: within max_tensor_elements (2**34), 128 GiB: beyond max_tensor_bytes (64 GiB). numpy was asked.
    value = h.make_tensor("v", TP.DOUBLE, [1], [1.0])
    model = _one_node(h.make_node("ConstantOfShape", ["s"], ["y"], value=value), [_vi("s", TP.INT64, 1)], TP.DOUBLE, 1)
    sess = onnxcore.Session(model)
    with pytest.raises(onnxcore.LimitError, match=r"ConstantOfShape.*8-octet elements.*max_tensor_bytes"):
        sess.run(None, {"s": np.array([2**34], np.int64)})


def test_random_uniform_is_refused_by_its_bytes() -> None:
    node = h.make_node("RandomUniform", [], ["y"], shape=[10**5, 10**5], dtype=TP.DOUBLE)
    sess = onnxcore.Session(_one_node(node, [], TP.DOUBLE, 2))
    with pytest.raises(onnxcore.LimitError, match=r"RandomUniform.*max_tensor_bytes"):
        sess.run(None, {})


def test_allocation_bound_derives_from_the_machine() -> None:
    assert DEFAULT_LIMITS.max_alloc_bytes == MACHINE_ALLOC_BYTES <= 1 << 36
    pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    assert MACHINE_ALLOC_BYTES == min(1 << 36, pages // 2)  # (the test process has no address-space limit)
    # Lowered, it refuses what the other limits let through, naming itself.
    tile = h.make_node("Tile", ["x", "r"], ["y"])
    model = _one_node(tile, [_vi("x", TP.FLOAT, 1), _vi("r", TP.INT64, 1)], TP.FLOAT, 1)
    sess = onnxcore.Session(model, limits=dataclasses.replace(DEFAULT_LIMITS, max_alloc_bytes=4000))
    (y,) = sess.run(None, {"x": np.ones(10, np.float32), "r": np.array([100], np.int64)})
    assert y.shape == (1000,)
    with pytest.raises(onnxcore.LimitError, match="max_alloc_bytes"):
        sess.run(None, {"x": np.ones(10, np.float32), "r": np.array([101], np.int64)})


def test_a_broadcast_view_feed_counts_as_its_nominal_size() -> None:
    model = _one_node(h.make_node("Relu", ["x"], ["y"]), [_vi("x", TP.FLOAT, 2)], TP.FLOAT, 2)
    sess = onnxcore.Session(model)
    huge = np.broadcast_to(np.ones(4, np.float32), (2**40, 4))  # 16 octets of memory, 16 TiB as a tensor
    with pytest.raises(onnxcore.LimitError, match=r"input 'x'.*max_tensor_elements"):
        sess.run(None, {"x": huge})


def test_range_is_refused_by_its_bytes() -> None:
    # Found by the fuzz campaign: Range of 2**31 int64 elements (within max_tensor_elements) asked numpy for 16 GiB.
    node = h.make_node("Range", ["start", "limit", "delta"], ["y"])
    inputs = [h.make_tensor_value_info(n, TP.INT64, []) for n in ("start", "limit", "delta")]
    model = _one_node(node, inputs, TP.INT64, 1)
    sess = onnxcore.Session(model, limits=dataclasses.replace(DEFAULT_LIMITS, max_alloc_bytes=1 << 30))
    feeds = {"start": np.array(0, np.int64), "limit": np.array(2**31, np.int64), "delta": np.array(1, np.int64)}
    with pytest.raises(onnxcore.LimitError, match=r"Range.*max_alloc_bytes"):
        sess.run(None, feeds)
    feeds["limit"] = np.array(5, np.int64)
    assert sess.run(None, feeds)[0].tolist() == [0, 1, 2, 3, 4]


def test_allocation_bound_follows_the_address_space_limit() -> None:
    # Under `ulimit -v` (RLIMIT_AS) the machine's memory is not what the process may use: half the limit is.
    code = (
        "import resource; resource.setrlimit(resource.RLIMIT_AS, (6 << 30, resource.RLIM_INFINITY)); "
        "from onnxcore.limits import MACHINE_ALLOC_BYTES; print(MACHINE_ALLOC_BYTES)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert int(out.stdout) == min(3 << 30, MACHINE_ALLOC_BYTES)
