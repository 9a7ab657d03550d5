"""A run's deadline and cancellation (issue 29: a Loop of 10^8 trivial iterations ran for minutes, and nothing
could stop a run): ``Session.run(..., timeout=, cancel=)`` and onnxruntime's ``RunOptions.terminate``."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import onnxcore as oc
from onnxcore.build import helper
from onnxcore.proto.messages import TensorProto


def _long_loop(trip: int) -> oc.ModelProto:
    """A Loop of ``trip`` iterations whose body adds one to a counter, with a cond input (so the trip count
    cannot be refused up front: the body may end the loop early)."""
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
            helper.make_node("Add", ["v_in", "one"], ["v_out"]),
        ],
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("v_in", TensorProto.INT64, []),
        ],
        [
            helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("v_out", TensorProto.INT64, []),
        ],
        initializer=[helper.make_tensor("one", TensorProto.INT64, [], [1])],
    )
    graph = helper.make_graph(
        [helper.make_node("Loop", ["M", "cond", "v0"], ["v"], body=body)],
        "g",
        [helper.make_tensor_value_info("v0", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("v", TensorProto.INT64, [])],
        initializer=[
            helper.make_tensor("M", TensorProto.INT64, [], [trip]),
            helper.make_tensor("cond", TensorProto.BOOL, [], [True]),
        ],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])


def test_a_short_loop_runs_as_before_with_a_timeout() -> None:
    sess = oc.Session(_long_loop(50))
    (v,) = sess.run(None, {"v0": np.array(3, np.int64)}, timeout=60.0)
    assert int(v) == 53


def test_timeout_stops_a_long_loop() -> None:
    sess = oc.Session(_long_loop(10**8))
    with pytest.raises(oc.RunTimeoutError, match=r"timeout of 0\.2 s") as info:
        sess.run(None, {"v0": np.array(0, np.int64)}, timeout=0.2)
    assert isinstance(info.value, oc.LimitError) and isinstance(info.value, TimeoutError)
    # The session is still usable afterwards, and a run without a deadline is unaffected.
    (v,) = oc.Session(_long_loop(5)).run(None, {"v0": np.array(0, np.int64)})
    assert int(v) == 5


def test_cancel_from_another_thread() -> None:
    sess = oc.Session(_long_loop(10**8))
    stop = threading.Event()
    timer = threading.Timer(0.2, stop.set)
    timer.start()
    try:
        with pytest.raises(oc.RunCancelledError, match="cancelled"):
            sess.run(None, {"v0": np.array(0, np.int64)}, cancel=stop.is_set)
    finally:
        timer.cancel()


def test_onnxruntime_terminate_stops_the_run() -> None:
    sess = oc.InferenceSession(oc.encode(_long_loop(10**8)))
    options = oc.RunOptions()

    def terminate() -> None:
        options.terminate = True

    timer = threading.Timer(0.2, terminate)
    timer.start()
    try:
        with pytest.raises(oc.RunCancelledError):
            sess.run(None, {"v0": np.array(0, np.int64)}, options)
    finally:
        timer.cancel()


@pytest.mark.parametrize("bad", [-1.0, float("nan")])
def test_a_bad_timeout_is_refused(bad: float) -> None:
    sess = oc.Session(_long_loop(5))
    with pytest.raises(oc.InputError, match="timeout"):
        sess.run(None, {"v0": np.array(0, np.int64)}, timeout=bad)
