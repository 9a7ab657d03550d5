"""Soak and concurrency (issue 41): what holds today keeps holding.

One session shared by threads gives outputs bit-identical to sequential runs; memory stays flat over many runs;
sessions made and dropped leave no descriptor and no mapping behind. Short by default; ``ONNXCORE_SOAK=1`` runs
the long form (the figures of issue 41: 8 threads, 200,000 runs, 300 sessions).
"""

from __future__ import annotations

import gc
import os
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper

import onnxcore

LONG = os.environ.get("ONNXCORE_SOAK", "") not in ("", "0")
THREADS = 8
RUNS_PER_THREAD = 200 if LONG else 20
FLAT_RUNS = 200_000 if LONG else 5_000
SESSIONS = 300 if LONG else 40
RSS_GROWTH_BOUND = 16 << 20

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self")


def _cnn() -> bytes:
    """A small network with the steps a real model has: Conv + BatchNormalization + Relu (fused at plan time),
    MaxPool, a linear layer (MatMul + Add, the fused linear step), Softmax; batch a dimension variable."""
    rng = np.random.default_rng(41)
    inits = [
        numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "w"),
        numpy_helper.from_array(rng.random(8).astype(np.float32) + 0.5, "scale"),
        numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "bias"),
        numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "mean"),
        numpy_helper.from_array(rng.random(8).astype(np.float32) + 0.5, "var"),
        numpy_helper.from_array(np.array([0, -1], np.int64), "flat"),
        numpy_helper.from_array(rng.standard_normal((8 * 8 * 8, 10)).astype(np.float32), "fc"),
        numpy_helper.from_array(rng.standard_normal(10).astype(np.float32), "fcb"),
    ]
    nodes = [
        h.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        h.make_node("BatchNormalization", ["c", "scale", "bias", "mean", "var"], ["bn"]),
        h.make_node("Relu", ["bn"], ["r"]),
        h.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        h.make_node("Reshape", ["p", "flat"], ["f"]),
        h.make_node("MatMul", ["f", "fc"], ["m"]),
        h.make_node("Add", ["m", "fcb"], ["logits"]),
        h.make_node("Softmax", ["logits"], ["y"], axis=-1),
    ]
    g = h.make_graph(
        nodes,
        "soak",
        [h.make_tensor_value_info("x", TP.FLOAT, ["N", 3, 16, 16])],
        [h.make_tensor_value_info("y", TP.FLOAT, ["N", 10])],
        inits,
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    return bytes(m.SerializeToString())


def _inputs(count: int) -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    return [rng.standard_normal((1 + k % 3, 3, 16, 16)).astype(np.float32) for k in range(count)]


def test_one_session_shared_by_threads_is_bit_identical_to_sequential_runs() -> None:
    sess = onnxcore.Session(_cnn())
    xs = _inputs(THREADS * 4)
    expected = [sess.run(None, {"x": x})[0] for x in xs]
    got: dict[tuple[int, int], np.ndarray] = {}
    errors: list[BaseException] = []
    start = threading.Barrier(THREADS)

    def work(t: int) -> None:
        try:
            start.wait()
            for r in range(RUNS_PER_THREAD):
                k = (t + r) % len(xs)
                got[(t, r)] = sess.run(None, {"x": xs[k]})[0]
        except BaseException as e:  # reported below, with the thread's index
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    assert len(got) == THREADS * RUNS_PER_THREAD
    for (t, r), y in got.items():
        want = expected[(t + r) % len(xs)]
        assert y.dtype == want.dtype and y.shape == want.shape
        assert y.tobytes() == want.tobytes(), f"thread {t}, run {r} differs from the sequential run"


def _rss() -> int:
    with open("/proc/self/statm", encoding="ascii") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_memory_stays_flat_over_many_runs() -> None:
    sess = onnxcore.Session(_cnn())
    xs = _inputs(8)
    for k in range(200):  # warm-up: plans per shape, scratch buffers, numpy's caches
        sess.run(None, {"x": xs[k % len(xs)]})
    gc.collect()
    before = _rss()
    for k in range(FLAT_RUNS):
        sess.run(None, {"x": xs[k % len(xs)]})
    gc.collect()
    grown = _rss() - before
    assert grown < RSS_GROWTH_BOUND, f"RSS grew by {grown >> 10} KiB over {FLAT_RUNS} runs"


def _descriptors() -> dict[str, str]:
    """The process's open descriptors and what each refers to (a file's path, ``pipe:[...]``, ``socket:[...]``)."""
    out = {}
    for fd in os.listdir("/proc/self/fd"):
        try:
            out[fd] = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # closed between listing and reading (the listing's own descriptor)
            continue
    return out


def _mappings(path: Path) -> int:
    with open("/proc/self/maps", encoding="utf-8", errors="replace") as fh:
        return sum(1 for line in fh if str(path) in line)


def _external_model(tmp_path: Path) -> Path:
    # Weights of 2 MiB in a data file: large enough that a session memory-maps the file rather than reading it.
    w = np.arange(512 * 1024, dtype=np.float32).reshape(1024, 512)
    t = numpy_helper.from_array(w, "w")
    (tmp_path / "w.bin").write_bytes(t.raw_data)
    t.ClearField("raw_data")
    t.data_location = TP.EXTERNAL
    for k, v in (("location", "w.bin"), ("offset", "0"), ("length", str(w.nbytes))):
        e = t.external_data.add()
        e.key, e.value = k, v
    g = h.make_graph(
        [h.make_node("MatMul", ["x", "w"], ["y"])],
        "ext",
        [h.make_tensor_value_info("x", TP.FLOAT, ["N", 1024])],
        [h.make_tensor_value_info("y", TP.FLOAT, ["N", 512])],
        [t],
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    path = tmp_path / "m.onnx"
    path.write_bytes(m.SerializeToString())
    return path


def test_sessions_made_and_dropped_leave_no_descriptor_or_mapping(tmp_path: Path) -> None:
    path = _external_model(tmp_path)
    data = tmp_path / "w.bin"
    x = np.ones((2, 1024), np.float32)
    want = onnxcore.Session(path).run(None, {"x": x})[0]  # imports and caches settle before the baseline
    gc.collect()
    fds, maps = _descriptors(), _mappings(data)
    assert maps == 0
    peak_maps = 0
    for _ in range(SESSIONS):
        sess = onnxcore.Session(path)
        y = sess.run(None, {"x": x})[0]
        assert y.tobytes() == want.tobytes()
        peak_maps = max(peak_maps, _mappings(data))
        del sess, y
    gc.collect()
    assert peak_maps >= 1, "the weights were expected to be memory-mapped (the test would prove nothing otherwise)"
    after = _descriptors()
    # No descriptor refers to the model or its data file: a session that kept either open would leave one per
    # session. Descriptors other threads of the process open meanwhile (a pool an earlier test started, the
    # interpreter's own) are not the sessions': they are bounded by a count that a leak per session would exceed.
    ours = sorted(t for t in after.values() if t.startswith(str(tmp_path)))
    assert not ours, f"descriptors left open on the model's files: {ours}"
    new = {fd: t for fd, t in after.items() if fd not in fds}
    assert len(new) < SESSIONS // 4, f"{len(new)} descriptors more after {SESSIONS} sessions: {sorted(new.values())}"
    assert _mappings(data) == 0, "mappings of the data file left"
