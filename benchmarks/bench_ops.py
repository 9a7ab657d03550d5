"""Single-operator benchmark: onnxcore against onnxruntime (one thread) on sizes real models use.

Each case is one node in a model of its own, fed seeded random data; both engines run it through their
session API (so per-run overhead counts), best of ``--repeat`` runs by CPU time, the engines taking
turns. Outputs are checked against onnxruntime (rtol 1e-3, atol 1e-4). The table says where onnxcore
stands operator by operator, beyond the light model zoo of ``bench_models.py``.

Usage: ``python benchmarks/bench_ops.py [--repeat 7] [--blas-threads 1] [--only Conv LSTM ...]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from typing import Any

# BLAS threads must be fixed before numpy loads OpenBLAS.
if "--blas-threads" in sys.argv:
    _n = sys.argv[sys.argv.index("--blas-threads") + 1]
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[_var] = _n

import numpy as np
import onnxruntime as ort
from onnx import helper, numpy_helper

import onnxcore

RNG = np.random.default_rng(0)


def f32(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def weights(*shape: int) -> np.ndarray:
    """Convolution weights scaled by 1/sqrt(fan-in), as trained networks have them: outputs of order 1, so
    the check's atol means what it says (Winograd's reassociation error scales with the largest output)."""
    return (RNG.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))).astype(np.float32)


def _boxes(n: int) -> np.ndarray:
    xy = RNG.uniform(0, 100, (1, n, 2))
    wh = RNG.uniform(1, 20, (1, n, 2))
    return np.concatenate([xy[..., ::-1], (xy + wh)[..., ::-1]], axis=-1).astype(np.float32)


# (label, op, opset, graph inputs, constant inputs, attributes, number of outputs)
Case = tuple[str, str, int, dict[str, np.ndarray], dict[str, np.ndarray], dict[str, Any], int]

CASES: list[Case] = [
    ("Conv 3x3 64->64 @56", "Conv", 13, {"x": f32(1, 64, 56, 56)}, {"w": weights(64, 64, 3, 3)}, {"pads": [1] * 4}, 1),
    ("Conv 3x3 128->32 @56 (few outputs)", "Conv", 13, {"x": f32(1, 128, 56, 56)}, {"w": weights(32, 128, 3, 3)},
     {"pads": [1] * 4}, 1),
    ("Conv 1x1 256->1024 @14", "Conv", 13, {"x": f32(1, 256, 14, 14)}, {"w": weights(1024, 256, 1, 1)}, {}, 1),
    ("Conv depthwise 3x3 272 @14", "Conv", 13, {"x": f32(1, 272, 14, 14)}, {"w": weights(272, 1, 3, 3)},
     {"pads": [1] * 4, "group": 272}, 1),
    ("ConvTranspose 4x4 s2 64->32 @28", "ConvTranspose", 11, {"x": f32(1, 64, 28, 28)}, {"w": f32(64, 32, 4, 4)},
     {"strides": [2, 2], "pads": [1] * 4}, 1),
    ("MaxPool 3x3 s2 64 @112", "MaxPool", 12, {"x": f32(1, 64, 112, 112)}, {},
     {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1] * 4}, 1),
    ("AveragePool 3x3 s1 576 @14", "AveragePool", 19, {"x": f32(1, 576, 14, 14)}, {},
     {"kernel_shape": [3, 3], "pads": [1] * 4}, 1),
    ("BatchNormalization 256 @56", "BatchNormalization", 15, {"x": f32(1, 256, 56, 56)},
     {"s": f32(256), "b": f32(256), "m": f32(256), "v": np.abs(f32(256)) + 0.5}, {}, 1),
    ("LayerNormalization 64x128x768", "LayerNormalization", 17, {"x": f32(64, 128, 768)},
     {"s": f32(768), "b": f32(768)}, {"axis": -1}, 1),
    ("InstanceNormalization 4x64 @56", "InstanceNormalization", 6, {"x": f32(4, 64, 56, 56)},
     {"s": f32(64), "b": f32(64)}, {}, 1),
    ("Softmax 8x12x128x128", "Softmax", 13, {"x": f32(8, 12, 128, 128)}, {}, {}, 1),
    ("MatMul 8192x768 @ 768x768", "MatMul", 13, {"x": f32(64, 128, 768)}, {"w": f32(768, 768)}, {}, 1),
    ("Gemm transB 64x512 x 512x512", "Gemm", 13, {"x": f32(64, 512)}, {"w": f32(512, 512)}, {"transB": 1}, 1),
    ("Attention 2x8x128x64", "Attention", 23, {"q": f32(2, 8, 128, 64), "k": f32(2, 8, 128, 64),
     "v": f32(2, 8, 128, 64)}, {}, {}, 1),
    ("LSTM seq 50, batch 8, 128->128", "LSTM", 14, {"x": f32(50, 8, 128)},
     {"W": f32(1, 512, 128) * 0.1, "R": f32(1, 512, 128) * 0.1}, {"hidden_size": 128}, 1),
    ("GRU seq 50, batch 8, 128->128", "GRU", 14, {"x": f32(50, 8, 128)},
     {"W": f32(1, 384, 128) * 0.1, "R": f32(1, 384, 128) * 0.1}, {"hidden_size": 128}, 1),
    ("Erf 6.3M", "Erf", 13, {"x": f32(64, 128, 768)}, {}, {}, 1),
    ("Relu 6.3M", "Relu", 14, {"x": f32(64, 128, 768)}, {}, {}, 1),
    ("Add 6.3M + row", "Add", 14, {"x": f32(64, 128, 768)}, {"b": f32(768)}, {}, 1),
    ("ReduceSum 64x128x768 axis 1", "ReduceSum", 13, {"x": f32(64, 128, 768)}, {"a": np.array([1])}, {}, 1),
    ("ReduceMax 64x128x64 last axis", "ReduceMax", 18, {"x": f32(64, 128, 64)}, {"a": np.array([-1])}, {}, 1),
    ("Resize linear x2 64 @56", "Resize", 13, {"x": f32(1, 64, 56, 56)},
     {"roi": np.array([], np.float32), "scales": np.array([1, 1, 2, 2], np.float32)}, {"mode": "linear"}, 1),
    ("GridSample bilinear 2x16 @64", "GridSample", 16, {"x": f32(2, 16, 64, 64),
     "grid": RNG.uniform(-1, 1, (2, 48, 48, 2)).astype(np.float32)}, {}, {}, 1),
    ("NonMaxSuppression 80 classes x 1000", "NonMaxSuppression", 11,
     {"boxes": _boxes(1000), "scores": RNG.random((1, 80, 1000)).astype(np.float32)},
     {"m": np.array([100]), "i": np.array([0.5], np.float32), "t": np.array([0.05], np.float32)}, {}, 1),
]  # fmt: skip


def _model(op: str, opset: int, inputs: dict[str, np.ndarray], consts: dict[str, np.ndarray],
           attrs: dict[str, Any], outs: list[np.ndarray] | None, n_out: int) -> bytes:  # fmt: skip
    def info(name: str, v: np.ndarray | None) -> Any:
        if v is None:
            return helper.make_empty_tensor_value_info(name)  # onnxruntime infers it
        return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)

    node = helper.make_node(op, [*inputs, *consts], [f"y{i}" for i in range(n_out)], **attrs)
    graph = helper.make_graph(
        [node],
        "bench",
        [info(k, v) for k, v in inputs.items()],
        [info(f"y{i}", None if outs is None else outs[i]) for i in range(n_out)],
        [numpy_helper.from_array(v, k) for k, v in consts.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8).SerializeToString()


def best_of(fns: list[Callable[[], Any]], repeat: int) -> list[float]:
    for fn in fns:
        fn()
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            t0 = time.process_time()
            fn()
            best[i] = min(best[i], time.process_time() - t0)
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--blas-threads", type=int, default=None)
    ap.add_argument("--only", nargs="*", default=None, help="operator types to run")
    args = ap.parse_args()
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    print("| operator case | onnxcore | onnxruntime, 1 thread | ratio | matches |")
    print("|---|---:|---:|---:|:---:|")
    ok_all = True
    for label, op, opset, inputs, consts, attrs, n_out in CASES:
        if args.only and op not in args.only:
            continue
        theirs = ort.InferenceSession(_model(op, opset, inputs, consts, attrs, None, n_out), so)
        expected = theirs.run(None, inputs)
        # onnxcore wants the graph outputs typed (Clause 7.1): take them from onnxruntime's results.
        ours = onnxcore.Session(_model(op, opset, inputs, consts, attrs, expected, n_out))
        got = ours.run(None, inputs)
        ok = all(np.allclose(a, e, rtol=1e-3, atol=1e-4) for a, e in zip(got, expected))
        ok_all &= ok
        t_ours, t_ort = best_of([lambda s=s, f=inputs: s.run(None, f) for s in (ours, theirs)], args.repeat)
        print(f"| {label} | {t_ours * 1e3:.2f} ms | {t_ort * 1e3:.2f} ms | {t_ours / t_ort:.1f} | "
              f"{'yes' if ok else 'NO'} |")  # fmt: skip
    return 0 if ok_all else 1


if __name__ == "__main__":
    raise SystemExit(main())
