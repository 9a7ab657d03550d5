"""What the cheaper fixed cost of a run keeps (issue 42, item 1): the common path of ``Session.run`` and of the
onnxruntime façade's ``run`` returns what the general path returns, refuses what it refuses with the same error
naming the input, and hands out outputs that share no memory with a feed or with each other (Clause 8: a run's
results are the caller's; onnxruntime's are separate arrays too).

The outputs' ownership test settles a view whose base and each feed's base are two distinct allocations without
``np.may_share_memory``; these tests feed views of one caller array, arrays over a foreign buffer, and outputs that
are views of one intermediate, where only the exact test decides.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

import onnxcore
from onnxcore import InputError, LimitError
from onnxcore.limits import (
    DEFAULT_LIMITS,
    RunControl,
    active_limits,
    active_run_control,
    enter_run,
    exit_run,
    limits_in_effect,
)

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto as TP  # noqa: E402
from onnx import helper as h  # noqa: E402
from onnx import numpy_helper as nh  # noqa: E402


def _views_model() -> bytes:
    """``r`` a view of the feed, ``a`` and ``b`` two views of one intermediate, ``t`` a view of another."""
    nodes = [
        h.make_node("Reshape", ["x", "s32"], ["r"]),
        h.make_node("Relu", ["x"], ["y"]),
        h.make_node("Reshape", ["y", "s32"], ["a"]),
        h.make_node("Reshape", ["y", "s6"], ["b"]),
        h.make_node("Neg", ["x"], ["n"]),
        h.make_node("Reshape", ["n", "s6"], ["t"]),
    ]
    g = h.make_graph(
        nodes,
        "views",
        [h.make_tensor_value_info("x", TP.FLOAT, [2, 3])],
        [h.make_tensor_value_info(n, TP.FLOAT, d) for n, d in (("r", [3, 2]), ("a", [3, 2]), ("b", [6]), ("t", [6]))],
        [nh.from_array(np.array([3, 2], np.int64), "s32"), nh.from_array(np.array([6], np.int64), "s6")],
    )
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)], ir_version=8).SerializeToString()


def _assert_own(outs: list[Any], feeds: list[np.ndarray]) -> None:
    for i, a in enumerate(outs):
        assert a.flags.writeable
        for x in feeds:
            assert not np.shares_memory(a, x), f"output {i} shares a feed's memory"
        for j in range(i):
            assert not np.shares_memory(a, outs[j]), f"outputs {j} and {i} share memory"


def _feeds() -> dict[str, np.ndarray]:
    big = np.arange(-12, 12, dtype=np.float32).reshape(4, 6)
    over_bytes = np.frombuffer(bytearray(np.arange(6, dtype=np.float32).tobytes()), np.float32).reshape(2, 3)
    return {
        "owning": np.array([[1, -2, 3], [-4, 5, -6]], np.float32),
        "view of a caller array": big[1:3, 2:5],  # the feed's base is the caller's array, the output's too
        "over a foreign buffer": over_bytes,  # its base is no ndarray: only the exact test can tell
    }


@pytest.mark.parametrize("kind", list(_feeds()))
def test_outputs_are_the_callers_own_on_every_run(kind: str) -> None:
    model = _views_model()
    x = _feeds()[kind]
    original = x.copy()
    s = onnxcore.Session(model)
    ref = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    for _ in range(3):  # the first run interpreted, the later ones compiled (the common path throughout)
        outs = s.run(None, {"x": x})
        for a, b in zip(outs, ref):
            np.testing.assert_array_equal(a, b)
        _assert_own(outs, [x])
        for a in outs:
            a[...] = 99.0
        np.testing.assert_array_equal(x, original)


def test_a_view_of_a_fresh_intermediate_is_handed_out_uncopied() -> None:
    # ``t`` is a view of ``n`` (a value no feed or other output holds): it is given as it is, not copied; ``b``
    # views the same intermediate as ``a`` and is copied.
    s = onnxcore.Session(_views_model())
    x = np.ones((2, 3), np.float32)
    for _ in range(3):
        _r, a, b, t = s.run(None, {"x": x})
        assert t.base is not None and t.base.shape == (2, 3)
        assert b.base is None or not np.shares_memory(b, a)


def test_two_feeds_viewing_one_caller_array() -> None:
    # Both feeds are views of one array; an output that is a view of one of them shares memory with both.
    g = h.make_graph(
        [h.make_node("Identity", ["x"], ["u"]), h.make_node("Add", ["x", "y"], ["v"])],
        "two",
        [h.make_tensor_value_info("x", TP.FLOAT, [3]), h.make_tensor_value_info("y", TP.FLOAT, [3])],
        [h.make_tensor_value_info("u", TP.FLOAT, [3]), h.make_tensor_value_info("v", TP.FLOAT, [3])],
    )
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 17)], ir_version=8).SerializeToString()
    base = np.arange(6, dtype=np.float32)
    feeds = {"x": base[:3], "y": base[3:]}
    s = onnxcore.Session(model)
    for _ in range(3):
        outs = s.run(None, feeds)
        np.testing.assert_array_equal(outs[0], [0, 1, 2])
        np.testing.assert_array_equal(outs[1], [3, 5, 7])
        _assert_own(outs, list(feeds.values()))


def _add_model(rows: int | str = 1) -> bytes:
    g = h.make_graph(
        [h.make_node("Add", ["x", "y"], ["z"])],
        "add",
        [h.make_tensor_value_info("x", TP.FLOAT, [rows, 4]), h.make_tensor_value_info("y", TP.FLOAT, [rows, 4])],
        [h.make_tensor_value_info("z", TP.FLOAT, [rows, 4])],
    )
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)], ir_version=8).SerializeToString()


_GOOD = np.ones((1, 4), np.float32)


@pytest.mark.parametrize(
    ("feeds", "message"),
    [
        ({"x": _GOOD, "y": np.ones((1, 4), np.float64)}, r"input 'y': element type float64"),
        ({"x": _GOOD, "y": np.ones((4,), np.float32)}, r"input 'y': rank 1"),
        ({"x": np.ones((1, 5), np.float32), "y": _GOOD}, r"input 'x': extent 5 on axis 1"),
    ],
)
def test_a_wrong_feed_with_the_right_names_is_refused_by_name(feeds: dict[str, Any], message: str) -> None:
    # The names match exactly (the façade's common call); the value is still checked, on a compiled plan too.
    s = onnxcore.Session(_add_model())
    fs = onnxcore.InferenceSession(_add_model())
    theirs = ort.InferenceSession(_add_model(), providers=["CPUExecutionProvider"])
    for _ in range(3):
        s.run(None, {"x": _GOOD, "y": _GOOD})
        fs.run(None, {"x": _GOOD, "y": _GOOD})
    with pytest.raises(InputError, match=message):
        s.run(None, feeds)
    with pytest.raises(InputError, match=message) as ours:
        fs.run(None, feeds)
    with pytest.raises(Exception) as oracle:
        theirs.run(None, feeds)
    assert type(ours.value).__name__ == type(oracle.value).__name__ == "InvalidArgument"


def test_the_facade_common_call_returns_what_onnxruntime_returns() -> None:
    fs = onnxcore.InferenceSession(_add_model())
    theirs = ort.InferenceSession(_add_model(), providers=["CPUExecutionProvider"])
    x = np.arange(4, dtype=np.float32).reshape(1, 4)
    names = ["z"]
    for output_names in (None, [], names):
        for _ in range(2):
            (ours,) = fs.run(output_names, {"x": x, "y": x})
            (ref,) = theirs.run(output_names, {"x": x, "y": x})
            np.testing.assert_array_equal(ours, ref)
            assert not np.shares_memory(ours, x)
    assert names == ["z"]  # the caller's list is left as it was
    with pytest.raises(Exception, match="nope") as ours_err:
        fs.run(["nope"], {"x": x, "y": x})
    with pytest.raises(Exception) as oracle:
        theirs.run(["nope"], {"x": x, "y": x})
    assert type(ours_err.value).__name__ == type(oracle.value).__name__


def test_the_run_context_is_set_only_where_it_differs_and_restored() -> None:
    # enter_run sets a context variable only when its value is not in effect already; either way the run sees
    # the session's limits and control, and what was in effect before is in effect after.
    strict = dataclasses.replace(DEFAULT_LIMITS, max_tensor_elements=10)
    control = RunControl(timeout=60.0)
    assert active_limits() is DEFAULT_LIMITS and active_run_control() is None
    tokens = enter_run(DEFAULT_LIMITS, None)
    assert tokens == (None, None)  # nothing to set
    exit_run(tokens)
    with limits_in_effect(strict):
        tokens = enter_run(DEFAULT_LIMITS, control)
        assert active_limits() is DEFAULT_LIMITS and active_run_control() is control
        exit_run(tokens)
        assert active_limits() is strict and active_run_control() is None
    assert active_limits() is DEFAULT_LIMITS


def test_a_session_run_inside_another_sessions_context_uses_its_own() -> None:
    # A session of strict limits and one of the defaults, each run where the other's limits are in effect: each
    # refuses (or not) by its own limits, and the outer context is intact after.
    strict = dataclasses.replace(DEFAULT_LIMITS, max_tensor_elements=3)
    x = np.ones((1, 4), np.float32)
    plain, bounded = onnxcore.Session(_add_model("N")), onnxcore.Session(_add_model("N"), limits=strict)
    for _ in range(2):
        with limits_in_effect(strict):
            np.testing.assert_array_equal(plain.run(None, {"x": x, "y": x})[0], x + x)
            assert active_limits() is strict
        with pytest.raises(LimitError, match="input 'x'"):
            bounded.run(None, {"x": x, "y": x})
        assert active_limits() is DEFAULT_LIMITS


@pytest.mark.parametrize(
    ("bounds", "most"),
    [
        ({"max_tensor_bytes": 32}, 8),
        ({"max_tensor_elements": 8}, 8),
        ({"max_tensor_elements": 8, "max_tensor_bytes": 16}, 4),
    ],
)
def test_the_feed_bound_is_exact_at_its_edge(bounds: dict[str, int], most: int) -> None:
    # The common path compares a feed with one bound made of max_tensor_elements and max_tensor_bytes (Clause 15.4):
    # a feed of exactly that many elements runs, one more is refused by the general check, naming the input.
    limits = dataclasses.replace(DEFAULT_LIMITS, **{"max_tensor_elements": None, "max_tensor_bytes": None, **bounds})
    s = onnxcore.Session(_add_model("N"), limits=limits, check=False)
    for _ in range(3):
        x = np.ones((most // 4, 4), np.float32)
        np.testing.assert_array_equal(s.run(None, {"x": x, "y": x})[0], x + x)
        y = np.ones((most // 4 + 1, 4), np.float32)
        with pytest.raises(LimitError, match="input 'x'"):
            s.run(None, {"x": y, "y": y})
