"""Runtime benchmark (issue 6): onnxcore.Session against onnxruntime and onnx.reference, in one run.

Graphs (built in memory with the onnx helper):
- chain: 10,000 elementwise nodes (Add, Relu, Mul in turn) on a tiny tensor: per-node overhead;
- matmul: a 16-layer MLP of MatMul+Add / Gemm with Relu, batch 64, width 512;
- reduce: 60 reductions (ReduceSum/Mean/Max/L2 over various axes) of a 64x128x64 tensor.

Each engine runs every graph after one warm-up; the engines then take turns, and the best of several
timed runs of each is reported, with the ratio to onnxcore (a ratio > 1 means onnxcore is faster).
Targets: at least 10x faster than ReferenceEvaluator everywhere, within 2x of onnxruntime on the MatMul
graph.
Usage: ``python benchmarks/bench_runtime.py [--repeat 5] [--blas-threads 1]``. On a loaded machine,
OpenBLAS's spinning threads can make numpy's matmul an order of magnitude slower than with one thread.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from typing import Any

# BLAS threads must be fixed before numpy loads OpenBLAS (``--blas-threads N``; default: OpenBLAS's own).
if "--blas-threads" in sys.argv:
    _n = sys.argv[sys.argv.index("--blas-threads") + 1]
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[_var] = _n

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper
from onnx.reference import ReferenceEvaluator

import onnxcore

OPSET = 18


def _model(nodes: list[Any], inputs: list[Any], outputs: list[Any], inits: list[Any]) -> onnx.ModelProto:
    g = h.make_graph(nodes, "bench", inputs, outputs, initializer=inits)
    return h.make_model(g, opset_imports=[h.make_opsetid("", OPSET)], ir_version=9)


def chain_graph(n: int = 10_000) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """``n`` elementwise nodes in a chain over a 4-element tensor."""
    nodes = []
    prev = "x"
    ops = ("Add", "Relu", "Mul")
    for i in range(n):
        op = ops[i % 3]
        out = f"v{i}" if i < n - 1 else "y"
        ins = [prev] if op == "Relu" else [prev, "c"]
        nodes.append(h.make_node(op, ins, [out]))
        prev = out
    c = numpy_helper.from_array(np.full(4, 1.0001, np.float32), "c")
    model = _model(
        nodes, [h.make_tensor_value_info("x", TP.FLOAT, [4])], [h.make_tensor_value_info("y", TP.FLOAT, [4])], [c]
    )
    return model, {"x": np.linspace(-1, 1, 4).astype(np.float32)}


def matmul_graph(layers: int = 16, batch: int = 64, width: int = 512) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """An MLP alternating MatMul+Add and Gemm, each followed by Relu."""
    rng = np.random.default_rng(0)
    nodes, inits = [], []
    prev = "x"
    for i in range(layers):
        w = numpy_helper.from_array((rng.standard_normal((width, width)) / np.sqrt(width)).astype(np.float32), f"w{i}")
        b = numpy_helper.from_array(rng.standard_normal(width).astype(np.float32) * 0.01, f"b{i}")
        inits += [w, b]
        if i % 2 == 0:
            nodes.append(h.make_node("MatMul", [prev, f"w{i}"], [f"m{i}"]))
            nodes.append(h.make_node("Add", [f"m{i}", f"b{i}"], [f"a{i}"]))
        else:
            nodes.append(h.make_node("Gemm", [prev, f"w{i}", f"b{i}"], [f"a{i}"], transB=1))
        out = f"r{i}" if i < layers - 1 else "y"
        nodes.append(h.make_node("Relu", [f"a{i}"], [out]))
        prev = out
    model = _model(
        nodes,
        [h.make_tensor_value_info("x", TP.FLOAT, [batch, width])],
        [h.make_tensor_value_info("y", TP.FLOAT, [batch, width])],
        inits,
    )
    return model, {"x": rng.standard_normal((batch, width)).astype(np.float32)}


def reduce_graph(count: int = 60) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """``count`` reductions of one 64x128x64 tensor, each reduced to [1, 1] and summed."""
    rng = np.random.default_rng(1)
    nodes, inits = [], []
    ops = ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceL2")
    axes_choices = ([1], [2], [1, 2], [-1])
    outs = []
    for i in range(count):
        op = ops[i % len(ops)]
        ax = axes_choices[(i // len(ops)) % len(axes_choices)]
        name = f"ax{i}"
        inits.append(numpy_helper.from_array(np.array(ax, np.int64), name))
        nodes.append(h.make_node(op, ["x", name], [f"r{i}"], keepdims=0))
        nodes.append(h.make_node("ReduceSum", [f"r{i}"], [f"s{i}"], keepdims=1))
        outs.append(f"s{i}")
    nodes.append(h.make_node("Sum", outs, ["y"]))
    model = _model(
        nodes,
        [h.make_tensor_value_info("x", TP.FLOAT, [64, 128, 64])],
        [h.make_tensor_value_info("y", TP.FLOAT, [1, 1])],
        inits,
    )
    return model, {"x": rng.standard_normal((64, 128, 64)).astype(np.float32)}


def _best_in_turns(fns: dict[str, Callable[[], Any]], repeat: dict[str, int], budget: float = 60.0) -> dict[str, float]:
    """Best time of each function, the functions taking turns (one warm-up run each first).

    Taking turns spreads this machine's minute-to-minute speed changes over every engine alike; timing one
    engine after the other let a slow minute fall on one of them (ratios swung 2x between runs).
    """
    for fn in fns.values():
        fn()
    best = dict.fromkeys(fns, float("inf"))
    start = time.perf_counter()
    for r in range(max(repeat.values())):
        for name, fn in fns.items():
            if r >= repeat[name]:
                continue
            t = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t)
        if time.perf_counter() - start > budget:
            break
    return best


def _engines(model: onnx.ModelProto) -> dict[str, Callable[[dict[str, np.ndarray]], Any]]:
    data = model.SerializeToString()
    ours = onnxcore.Session(data)
    so1 = ort.SessionOptions()
    so1.intra_op_num_threads = 1
    so1.log_severity_level = 3
    ort1 = ort.InferenceSession(data, so1, providers=["CPUExecutionProvider"])
    sod = ort.SessionOptions()
    sod.log_severity_level = 3
    ortd = ort.InferenceSession(data, sod, providers=["CPUExecutionProvider"])
    ref = ReferenceEvaluator(model)
    return {
        "onnxcore": lambda f: ours.run(None, f),
        "ort (1 thread)": lambda f: ort1.run(None, f),
        "onnx.reference": lambda f: ref.run(None, f),
        "ort (default)": lambda f: ortd.run(None, f),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--blas-threads", type=int, default=None, help="threads of numpy's BLAS (set before import)")
    args = ap.parse_args()
    graphs = {"chain 10k": chain_graph(), "matmul": matmul_graph(), "reduce": reduce_graph()}
    rows = []
    for gname, (model, feeds) in graphs.items():
        engines = _engines(model)
        want = engines["ort (1 thread)"](feeds)[0]
        got = engines["onnxcore"](feeds)[0]
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)
        # onnxruntime's default-threads session is timed apart, last: its pool threads spin for a while after a
        # run and would be charged to whatever ran next.
        results: dict[str, float] = {}
        for group in (["onnxcore", "ort (1 thread)", "onnx.reference"], ["ort (default)"]):
            results |= _best_in_turns(
                {e: (lambda fn=engines[e], feeds=feeds: fn(feeds)) for e in group},
                {e: args.repeat if e != "onnx.reference" else max(1, args.repeat // 2) for e in group},
            )
        rows.append((gname, len(model.graph.node), results))
        del engines
    names = ["onnxcore", "ort (1 thread)", "ort (default)", "onnx.reference"]
    print(f"{'graph':<10} {'nodes':>6} " + " ".join(f"{n:>16}" for n in names) + "   per-node (onnxcore)")
    for gname, n, res in rows:
        cells = [f"{res[e] * 1e3:13.2f} ms" for e in names]
        print(f"{gname:<10} {n:>6} " + " ".join(f"{c:>16}" for c in cells) + f"   {res['onnxcore'] / n * 1e6:.2f} us")
    print()
    print("ratios (time of engine / time of onnxcore; > 1: onnxcore faster)")
    print(f"{'graph':<10} " + " ".join(f"{n:>16}" for n in names[1:]))
    for gname, _n, res in rows:
        print(f"{gname:<10} " + " ".join(f"{res[e] / res['onnxcore']:16.2f}" for e in names[1:]))


if __name__ == "__main__":
    main()
