"""Plan-time folding evaluates only what an output needs (Clause 8: a node whose results no output needs need not
be evaluated) and holds no folded value nothing reads (issue 29: the fuzz campaign's vgg19 finding, a session
of a model whose ConstantOfShape weights no output needs growing by 1 GiB at creation).

Memory is measured in a child process as the growth of its peak RSS (Linux's VmHWM, reset through
``/proc/self/clear_refs``), as the fuzz campaign measures it (tests/fuzz/fuzz_worker.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

import onnxcore

MIB = 1 << 20
LIGHT = Path(ort.__file__).parent.parent / "onnx" / "backend" / "test" / "data" / "light"

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/clear_refs").exists(), reason="peak RSS is measured through Linux's /proc/self/clear_refs"
)

# The child: builds a Session (and runs it as the spec says), reporting the growth of its peak RSS in each phase.
CHILD = """
import json, sys
import numpy as np
import onnxcore

def peak():
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM")

def reset():
    with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
        fh.write("5")

spec = json.loads(sys.argv[1])
model = open(spec["model"], "rb").read()
out = {}
reset(); before = peak()
sess = onnxcore.Session(model)
out["create"] = peak() - before
if spec.get("feeds") is not None:
    feeds = {k: np.asarray(v, np.float32) for k, v in spec["feeds"].items()}
    reset(); before = peak()
    results = [sess.run(None, feeds) for _ in range(spec.get("runs", 1))]
    out["run"] = peak() - before
    out["outputs"] = [np.asarray(r).tolist() for r in results[-1]]
print(json.dumps(out))
"""


def _measure(model: bytes, tmp_path: Path, feeds: dict[str, list[float]] | None = None, runs: int = 1) -> dict:
    path = tmp_path / "model.onnx"
    path.write_bytes(model)
    spec = json.dumps({"model": str(path), "feeds": feeds, "runs": runs})
    env = {**os.environ, "PYTHONPATH": str(Path(onnxcore.__file__).resolve().parent.parent)}
    env["OPENBLAS_NUM_THREADS"] = "1"
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, spec], capture_output=True, text=True, env=env, timeout=300, check=False
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _cos(shape_name: str, out: str, value: float = 1.0) -> object:
    return h.make_node("ConstantOfShape", [shape_name], [out], value=h.make_tensor("v", TP.FLOAT, [1], [value]))


def _model(nodes: list, inits: list, outputs: list[str], extra_inputs: list | None = None) -> bytes:
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", TP.FLOAT, ["N"]), *(extra_inputs or [])],
        [h.make_tensor_value_info(o, TP.FLOAT, ["N"]) for o in outputs],
        inits,
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    return m.SerializeToString()


def test_a_huge_constant_no_output_needs_is_never_materialised(tmp_path: Path) -> None:
    # ConstantOfShape [2**28] float (1 GiB) scaled by Mul: the graph's output reads neither. Before the fix the
    # plan folded both at Session creation (2 GiB of peak RSS, 1 GiB held for the session's life).
    nodes = [
        _cos("big_shape", "big"),
        h.make_node("Mul", ["big", "two"], ["big2"]),
        h.make_node("Add", ["x", "x"], ["y"]),
    ]
    inits = [nh.from_array(np.array([1 << 28], np.int64), "big_shape"), nh.from_array(np.array(2, np.float32), "two")]
    got = _measure(_model(nodes, inits, ["y"]), tmp_path, feeds={"x": [1.0, 2.5]}, runs=2)
    assert got["create"] < 64 * MIB, got
    # Two runs of the same shapes: the second makes the plan specialised to them, probing shape values (none here)
    assert got["run"] < 64 * MIB, got
    assert got["outputs"] == [[2.0, 5.0]]


def test_the_shape_probe_evaluates_only_what_the_shapes_need(tmp_path: Path) -> None:
    # A Shape decided by the feed: on a signature's second run the session probes it (session._specialised); the
    # probe evaluated every node as written before, the unneeded 1 GiB ConstantOfShape included.
    nodes = [
        _cos("big_shape", "big"),
        h.make_node("Shape", ["x"], ["s"]),
        h.make_node("ConstantOfShape", ["s"], ["ones"], value=h.make_tensor("v", TP.FLOAT, [1], [3.0])),
        h.make_node("Add", ["x", "ones"], ["y"]),
    ]
    inits = [nh.from_array(np.array([1 << 28], np.int64), "big_shape")]
    got = _measure(_model(nodes, inits, ["y"]), tmp_path, feeds={"x": [1.0, 2.0]}, runs=3)
    assert got["create"] < 64 * MIB, got
    assert got["run"] < 64 * MIB, got
    assert got["outputs"] == [[4.0, 5.0]]


def test_a_folded_chain_holds_only_what_is_still_read(tmp_path: Path) -> None:
    # A needed weight built in four folded steps of 128 MiB each: folding holds at most two of them at a time
    # (a step's input and its result), not every step's result until the end.
    nodes = [
        _cos("w_shape", "w0"),
        h.make_node("Mul", ["w0", "two"], ["w1"]),
        h.make_node("Mul", ["w1", "three"], ["w2"]),
        h.make_node("Mul", ["w2", "four"], ["w3"]),
        h.make_node("ReduceMax", ["w3"], ["m"], keepdims=0),
        h.make_node("Add", ["x", "m"], ["y"]),
    ]
    inits = [
        nh.from_array(np.array([1 << 25], np.int64), "w_shape"),
        nh.from_array(np.array(2, np.float32), "two"),
        nh.from_array(np.array(3, np.float32), "three"),
        nh.from_array(np.array(4, np.float32), "four"),
    ]
    model = _model(nodes, inits, ["y"])
    got = _measure(model, tmp_path, feeds={"x": [1.0, -1.0]})
    assert got["create"] < 300 * MIB, got
    expected = ort.InferenceSession(model).run(None, {"x": np.array([1.0, -1.0], np.float32)})[0]
    assert got["outputs"] == [expected.tolist()]


def test_a_constant_of_shape_an_output_needs_is_folded_and_right() -> None:
    nodes = [_cos("shape", "c", 0.5), h.make_node("Mul", ["c", "x"], ["y"]), h.make_node("Identity", ["c"], ["z"])]
    inits = [nh.from_array(np.array([3], np.int64), "shape")]
    model = _model(nodes, inits, ["y", "z"])
    sess = onnxcore.Session(model)
    x = np.array([1.0, 2.0, 4.0], np.float32)
    ours = sess.run(None, {"x": x})
    theirs = ort.InferenceSession(model).run(None, {"x": x})
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a, b)
    # The folded value is shared by every run: the caller gets its own, writable copy (issue 29).
    assert ours[1].flags.writeable
    ours[1][:] = 7
    np.testing.assert_array_equal(sess.run(None, {"x": x})[1], theirs[1])


def test_intermediates_still_evaluate_every_node_as_written() -> None:
    # run(..., intermediates=True) is the debugging mode: every node is evaluated as written, the ones no output
    # needs included, and each value is returned.
    nodes = [
        _cos("shape", "unused", 2.0),
        h.make_node("Mul", ["unused", "unused"], ["unused_sq"]),
        h.make_node("Add", ["x", "x"], ["y"]),
    ]
    inits = [nh.from_array(np.array([4], np.int64), "shape")]
    sess = onnxcore.Session(_model(nodes, inits, ["y"]))
    x = np.array([1.0, 2.0], np.float32)
    outs, values = sess.run(None, {"x": x}, intermediates=True)
    np.testing.assert_array_equal(outs[0], x + x)
    np.testing.assert_array_equal(values["unused"], np.full(4, 2.0, np.float32))
    np.testing.assert_array_equal(values["unused_sq"], np.full(4, 4.0, np.float32))
    # The ordinary plan holds neither.
    assert not {"unused", "unused_sq"} & set(sess._plan.names)


@pytest.mark.skipif(not (LIGHT / "light_vgg19.onnx").exists(), reason="onnx's light zoo (light_vgg19.onnx) absent")
def test_vgg19_with_its_output_removed_costs_nothing_at_creation(tmp_path: Path) -> None:
    # The fuzz campaign's finding as found: the light zoo's vgg19 (weights built by ConstantOfShape, about 550 MB)
    # with its graph output removed grew by about 1 GiB when its Session was made.
    m = onnx.load(str(LIGHT / "light_vgg19.onnx"))
    del m.graph.output[:]
    got = _measure(m.SerializeToString(), tmp_path)
    assert got["create"] < 64 * MIB, got
