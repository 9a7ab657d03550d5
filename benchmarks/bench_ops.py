"""Single-operator benchmark: onnxcore against onnxruntime (one thread) on sizes real models use.

Each case is one node in a model of its own, fed seeded random data; both engines run it through their
session API (so per-run overhead counts), best of ``--repeat`` runs by CPU time, the engines taking
turns. Outputs are checked against onnxruntime (rtol 1e-3, atol 1e-4). The table says where onnxcore
stands operator by operator, beyond the light model zoo of ``bench_models.py``.

Beyond single nodes, a few cases are small graphs as exporters write them (the Erf and tanh GELU, the legacy
exporter's LayerNormalization, RMSNorm) and tabular models as skl2onnx and onnxmltools write them (random forest,
gradient boosting, LightGBM, XGBoost, SVM; at 1 and 1,000 rows). Those need scikit-learn, skl2onnx, lightgbm,
xgboost and onnxmltools; a case whose library is missing is skipped with a note.

``--threads N`` gives both engines N threads (onnxruntime's ``intra_op_num_threads``, onnxcore's
``Session(threads=...)``; 0: each engine's default, the machine's cores); the default, 1, is the single-threaded
comparison, timed by CPU time; with several threads the wall time is compared.

``--accel both`` times onnxcore twice, on the pure-numpy kernels and on the compiled accelerator
(:mod:`onnxcore.kernels.accel`, the ``accel`` extra), the three taking turns; by default onnxcore runs as the
environment says (``ONNXCORE_ACCEL=0`` turns the accelerator off).

Usage: ``python benchmarks/bench_ops.py [--repeat 7] [--blas-threads 1] [--threads 1] [--accel both]
[--only Conv LSTM ...]``.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# BLAS threads must be fixed before numpy loads OpenBLAS.
if "--blas-threads" in sys.argv:
    _n = sys.argv[sys.argv.index("--blas-threads") + 1]
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[_var] = _n

import numpy as np
import onnxruntime as ort
from bench_json import Recorder
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
    ("Conv depthwise 5x5 672 @14", "Conv", 13, {"x": f32(1, 672, 14, 14)}, {"w": weights(672, 1, 5, 5)},
     {"pads": [2] * 4, "group": 672}, 1),
    ("Conv depthwise 7x7 96 @56", "Conv", 13, {"x": f32(1, 96, 56, 56)}, {"w": weights(96, 1, 7, 7)},
     {"pads": [3] * 4, "group": 96}, 1),
    ("Conv depthwise 7x7 768 @7", "Conv", 13, {"x": f32(1, 768, 7, 7)}, {"w": weights(768, 1, 7, 7)},
     {"pads": [3] * 4, "group": 768}, 1),
    ("Conv depthwise 3x3 s2 96 @112", "Conv", 13, {"x": f32(1, 96, 112, 112)}, {"w": weights(96, 1, 3, 3)},
     {"pads": [1] * 4, "group": 96, "strides": [2, 2]}, 1),
    ("Conv grouped 3x3 g32 256 @28", "Conv", 13, {"x": f32(1, 256, 28, 28)}, {"w": weights(256, 8, 3, 3)},
     {"pads": [1] * 4, "group": 32}, 1),
    ("Conv depthwise 5x5 s2 144 @56", "Conv", 13, {"x": f32(1, 144, 56, 56)}, {"w": weights(144, 1, 5, 5)},
     {"pads": [2] * 4, "group": 144, "strides": [2, 2]}, 1),
    ("AveragePool 3x3 s1 48 @56 (pooling mixer)", "AveragePool", 19, {"x": f32(1, 48, 56, 56)}, {},
     {"kernel_shape": [3, 3], "pads": [1] * 4, "count_include_pad": 0}, 1),
    ("AveragePool 3x3 s1 448 @7 (pooling mixer)", "AveragePool", 19, {"x": f32(1, 448, 7, 7)}, {},
     {"kernel_shape": [3, 3], "pads": [1] * 4, "count_include_pad": 0}, 1),
    ("GlobalAveragePool 672 @14", "GlobalAveragePool", 1, {"x": f32(1, 672, 14, 14)}, {}, {}, 1),
    ("RMSNormalization 64x128x768", "RMSNormalization", 23, {"x": f32(64, 128, 768)}, {"s": f32(768)},
     {"axis": -1}, 1),
    ("Softmax 64x128x768 last axis", "Softmax", 13, {"x": f32(64, 128, 768)}, {}, {}, 1),
    ("Pow cube 6.3M", "Pow", 15, {"x": f32(64, 128, 768)}, {"p": np.array(3.0, np.float32)}, {}, 1),
    ("Pow square 6.3M", "Pow", 15, {"x": f32(64, 128, 768)}, {"p": np.array(2.0, np.float32)}, {}, 1),
    ("Pow 0.5 6.3M", "Pow", 15, {"x": np.abs(f32(64, 128, 768))}, {"p": np.array(0.5, np.float32)}, {}, 1),
    ("Erf 6.3M", "Erf", 13, {"x": f32(64, 128, 768)}, {}, {}, 1),
    ("Sigmoid 6.3M", "Sigmoid", 13, {"x": f32(64, 128, 768)}, {}, {}, 1),
    ("HardSwish 6.3M", "HardSwish", 14, {"x": f32(64, 128, 768)}, {}, {}, 1),
    ("Gelu 6.3M", "Gelu", 20, {"x": f32(64, 128, 768)}, {}, {}, 1),
    ("Gelu tanh 6.3M", "Gelu", 20, {"x": f32(64, 128, 768)}, {}, {"approximate": "tanh"}, 1),
    ("Relu 6.3M", "Relu", 14, {"x": f32(64, 128, 768)}, {}, {}, 1),
    ("Add 6.3M + row", "Add", 14, {"x": f32(64, 128, 768)}, {"b": f32(768)}, {}, 1),
    ("ReduceSum 64x128x768 axis 1", "ReduceSum", 13, {"x": f32(64, 128, 768)}, {"a": np.array([1])}, {}, 1),
    ("ReduceMax 64x128x64 last axis", "ReduceMax", 18, {"x": f32(64, 128, 64)}, {"a": np.array([-1])}, {}, 1),
    ("Resize linear x2 64 @56", "Resize", 13, {"x": f32(1, 64, 56, 56)},
     {"roi": np.array([], np.float32), "scales": np.array([1, 1, 2, 2], np.float32)}, {"mode": "linear"}, 1),
    ("Resize linear x2 1024 @7", "Resize", 13, {"x": f32(1, 1024, 7, 7)},
     {"roi": np.array([], np.float32), "scales": np.array([1, 1, 2, 2], np.float32)}, {"mode": "linear"}, 1),
    ("Resize cubic x2 64 @56", "Resize", 13, {"x": f32(1, 64, 56, 56)},
     {"roi": np.array([], np.float32), "scales": np.array([1, 1, 2, 2], np.float32)}, {"mode": "cubic"}, 1),
    ("GridSample bilinear 2x16 @64", "GridSample", 16, {"x": f32(2, 16, 64, 64),
     "grid": RNG.uniform(-1, 1, (2, 48, 48, 2)).astype(np.float32)}, {}, {}, 1),
    ("NonMaxSuppression 80 classes x 1000", "NonMaxSuppression", 11,
     {"boxes": _boxes(1000), "scores": RNG.random((1, 80, 1000)).astype(np.float32)},
     {"m": np.array([100]), "i": np.array([0.5], np.float32), "t": np.array([0.05], np.float32)}, {}, 1),
]  # fmt: skip


def _graph(nodes: list[Any], x: np.ndarray, consts: dict[str, np.ndarray], opset: int = 17) -> bytes:
    """A model of ``nodes`` reading graph input ``x`` and the constants, writing ``y`` (typed as ``x``)."""
    t = helper.np_dtype_to_tensor_dtype(x.dtype)
    graph = helper.make_graph(
        nodes,
        "bench",
        [helper.make_tensor_value_info("x", t, x.shape)],
        [helper.make_tensor_value_info("y", t, x.shape)],
        [numpy_helper.from_array(v, k) for k, v in consts.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8).SerializeToString()


def _erf_gelu() -> tuple[bytes, dict[str, np.ndarray]]:
    # torch's exporters: x * 0.5 * (1 + erf(x / sqrt(2))).
    x = f32(64, 128, 768)
    c = {"r2": np.array(np.sqrt(2.0), np.float32), "one": np.array(1.0, np.float32), "half": np.array(0.5, np.float32)}
    mk = helper.make_node
    nodes = [mk("Div", ["x", "r2"], ["a"]), mk("Erf", ["a"], ["b"]), mk("Add", ["b", "one"], ["c"]),
             mk("Mul", ["x", "c"], ["d"]), mk("Mul", ["d", "half"], ["y"])]  # fmt: skip
    return _graph(nodes, x, c), {"x": x}


def _tanh_gelu() -> tuple[bytes, dict[str, np.ndarray]]:
    # GPT-2: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))).
    x = f32(8, 128, 3072)
    c = {"three": np.array(3.0, np.float32), "k": np.array(0.044715, np.float32),
         "s": np.array(np.sqrt(2 / np.pi), np.float32), "one": np.array(1.0, np.float32),
         "half": np.array(0.5, np.float32)}  # fmt: skip
    mk = helper.make_node
    nodes = [mk("Pow", ["x", "three"], ["p"]), mk("Mul", ["p", "k"], ["q"]), mk("Add", ["x", "q"], ["r"]),
             mk("Mul", ["r", "s"], ["t"]), mk("Tanh", ["t"], ["u"]), mk("Add", ["u", "one"], ["v"]),
             mk("Mul", ["x", "half"], ["h"]), mk("Mul", ["h", "v"], ["y"])]  # fmt: skip
    return _graph(nodes, x, c), {"x": x}


def _legacy_layernorm() -> tuple[bytes, dict[str, np.ndarray]]:
    # The TorchScript exporter's LayerNormalization before opset 17.
    x = f32(64, 128, 768)
    c = {"two": np.array(2.0, np.float32), "eps": np.array(1e-5, np.float32), "g": f32(768), "b": f32(768)}
    mk = helper.make_node
    nodes = [mk("ReduceMean", ["x"], ["m"], axes=[-1]), mk("Sub", ["x", "m"], ["d"]), mk("Pow", ["d", "two"], ["p"]),
             mk("ReduceMean", ["p"], ["v"], axes=[-1]), mk("Add", ["v", "eps"], ["ve"]), mk("Sqrt", ["ve"], ["s"]),
             mk("Div", ["d", "s"], ["n"]), mk("Mul", ["n", "g"], ["ng"]), mk("Add", ["ng", "b"], ["y"])]  # fmt: skip
    return _graph(nodes, x, c, opset=13), {"x": x}


def _rmsnorm_graph() -> tuple[bytes, dict[str, np.ndarray]]:
    # Llama-style RMSNorm as exporters write it: Pow, ReduceMean, Add, Sqrt, Reciprocal, Mul, Mul.
    x = f32(64, 128, 768)
    c = {"two": np.array(2.0, np.float32), "eps": np.array(1e-6, np.float32), "g": f32(768)}
    mk = helper.make_node
    nodes = [mk("Pow", ["x", "two"], ["p"]), mk("ReduceMean", ["p"], ["m"], axes=[-1]),
             mk("Add", ["m", "eps"], ["e"]), mk("Sqrt", ["e"], ["s"]), mk("Reciprocal", ["s"], ["r"]),
             mk("Mul", ["x", "r"], ["n"]), mk("Mul", ["n", "g"], ["y"])]  # fmt: skip
    return _graph(nodes, x, c, opset=13), {"x": x}


def _silu_graph() -> tuple[bytes, dict[str, np.ndarray]]:
    # EfficientNet's activation: x * Sigmoid(x).
    x = f32(1, 96, 112, 112)
    mk = helper.make_node
    return _graph([mk("Sigmoid", ["x"], ["s"]), mk("Mul", ["x", "s"], ["y"])], x, {}), {"x": x}


def _conv_act(act: str, c_in: int, c_out: int, hw: int, k: int = 1, group: int = 1) -> tuple[bytes, dict[str, Any]]:
    """Conv (weights and bias) then ``act`` (SiLU as Sigmoid and Mul, the exporter's erf GELU, HardSwish): the
    chains of EfficientNet, EfficientFormer and MobileNetV3."""
    x = f32(1, c_in, hw, hw)
    mk = helper.make_node
    c = {"w": weights(c_out, c_in // group, k, k), "b": f32(c_out) * 0.1}
    nodes = [mk("Conv", ["x", "w", "b"], ["c"], pads=[k // 2] * 4, group=group)]
    if act == "silu":
        nodes += [mk("Sigmoid", ["c"], ["s"]), mk("Mul", ["c", "s"], ["y"])]
    elif act == "gelu":
        c |= {"r2": np.array(np.sqrt(2.0), np.float32), "one": np.array(1.0, np.float32)}
        c["half"] = np.array(0.5, np.float32)
        nodes += [mk("Div", ["c", "r2"], ["a"]), mk("Erf", ["a"], ["e"]), mk("Add", ["e", "one"], ["f"]),
                  mk("Mul", ["c", "f"], ["m"]), mk("Mul", ["m", "half"], ["y"])]  # fmt: skip
    else:
        nodes.append(mk("HardSwish", ["c"], ["y"]))
    t = helper.np_dtype_to_tensor_dtype(x.dtype)
    graph = helper.make_graph(
        nodes,
        "bench",
        [helper.make_tensor_value_info("x", t, x.shape)],
        [helper.make_tensor_value_info("y", t, [1, c_out, hw, hw])],
        [numpy_helper.from_array(v, n) for n, v in c.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8).SerializeToString(), {
        "x": x
    }


def _tabular(kind: str, rows: int) -> tuple[bytes, dict[str, np.ndarray]]:
    """A tabular model trained on seeded data (20 features) and converted as its exporter does; ``rows`` to run."""
    model = _tabular_model(kind)
    name = onnxcore.load(model).graph.input[0].name
    return model, {name: np.random.default_rng(1).standard_normal((rows, 20)).astype(np.float32)}


@functools.cache
def _tabular_model(kind: str) -> bytes:
    # Heavy optional libraries: loaded only when a tabular case runs.
    from sklearn.datasets import make_classification, make_regression

    if kind == "gbr":
        xt, yt = make_regression(2000, 20, random_state=0)
    else:
        xt, yt = make_classification(2000, 20, n_informative=8, n_classes=3, random_state=0)
    xt = xt.astype(np.float32)
    if kind in ("rf", "gbr", "svc"):
        from skl2onnx import to_onnx
        from sklearn.ensemble import GradientBoostingRegressor, RandomForestClassifier
        from sklearn.svm import SVC

        est: Any = {
            "rf": lambda: RandomForestClassifier(100, max_depth=10, random_state=0),
            "gbr": lambda: GradientBoostingRegressor(n_estimators=100, max_depth=3, random_state=0),
            "svc": lambda: SVC(probability=True, random_state=0),
        }[kind]()
        est.fit(xt[:500] if kind == "svc" else xt, yt[:500] if kind == "svc" else yt)
        opts = {id(est): {"zipmap": False}} if kind != "gbr" else None
        onx = to_onnx(est, xt[:1], options=opts, target_opset={"": 17, "ai.onnx.ml": 3})
    else:
        from onnxmltools.convert import convert_lightgbm, convert_xgboost
        from onnxmltools.convert.common.data_types import FloatTensorType

        init = [("x", FloatTensorType([None, 20]))]
        if kind == "lgbm":
            import lightgbm

            lg = lightgbm.LGBMClassifier(n_estimators=100, num_leaves=31, random_state=0, verbose=-1).fit(xt, yt)
            onx = convert_lightgbm(lg, initial_types=init, zipmap=False, target_opset=15)
        else:
            import xgboost

            xg = xgboost.XGBClassifier(n_estimators=100, max_depth=6, random_state=0).fit(xt, yt)
            onx = convert_xgboost(xg, initial_types=init, target_opset=15)
    return bytes(onx.SerializeToString())


# (label, tag for --only, builder of (model octets, feeds)): graphs as exporters write them.
GRAPH_CASES: list[tuple[str, str, Callable[[], tuple[bytes, dict[str, np.ndarray]]]]] = [
    ("Erf-GELU graph 6.3M", "Gelu", _erf_gelu),
    ("tanh-GELU graph 3.1M", "Gelu", _tanh_gelu),
    ("LayerNorm graph (legacy export) 64x128x768", "LayerNormalization", _legacy_layernorm),
    ("RMSNorm graph 64x128x768", "RMSNormalization", _rmsnorm_graph),
    ("SiLU graph (x * Sigmoid(x)) 96 @112", "Sigmoid", _silu_graph),
    ("Conv 1x1 + SiLU 24->144 @56", "Conv", lambda: _conv_act("silu", 24, 144, 56)),
    ("Conv depthwise 3x3 + SiLU 144 @56", "Conv", lambda: _conv_act("silu", 144, 144, 56, 3, 144)),
    ("Conv 1x1 + erf GELU 48->192 @56", "Conv", lambda: _conv_act("gelu", 48, 192, 56)),
    ("Conv 1x1 + HardSwish 24->96 @28", "Conv", lambda: _conv_act("hardswish", 24, 96, 28)),
    ("TreeEnsemble random forest 100x d10, 1 row", "TreeEnsemble", lambda: _tabular("rf", 1)),
    ("TreeEnsemble random forest 100x d10, 1000 rows", "TreeEnsemble", lambda: _tabular("rf", 1000)),
    ("TreeEnsemble gradient boosting 100x d3, 1 row", "TreeEnsemble", lambda: _tabular("gbr", 1)),
    ("TreeEnsemble gradient boosting 100x d3, 1000 rows", "TreeEnsemble", lambda: _tabular("gbr", 1000)),
    ("TreeEnsemble LightGBM 3 classes x100, 1 row", "TreeEnsemble", lambda: _tabular("lgbm", 1)),
    ("TreeEnsemble LightGBM 3 classes x100, 1000 rows", "TreeEnsemble", lambda: _tabular("lgbm", 1000)),
    ("TreeEnsemble XGBoost 3 classes x100, 1 row", "TreeEnsemble", lambda: _tabular("xgb", 1)),
    ("TreeEnsemble XGBoost 3 classes x100, 1000 rows", "TreeEnsemble", lambda: _tabular("xgb", 1000)),
    ("SVMClassifier rbf 3 classes, 1 row", "SVMClassifier", lambda: _tabular("svc", 1)),
    ("SVMClassifier rbf 3 classes, 1000 rows", "SVMClassifier", lambda: _tabular("svc", 1000)),
]


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


def best_of(fns: list[Callable[[], Any]], repeat: int, clock: Callable[[], float] = time.process_time) -> list[float]:
    for fn in fns:
        fn()
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            t0 = clock()
            fn()
            best[i] = min(best[i], clock() - t0)
    return best


def _session(model: bytes, threads: int) -> Any:
    # Sessions made before the threads option existed (the "before" numbers) take no keyword.
    return onnxcore.Session(model) if threads == 1 else onnxcore.Session(model, threads=threads)


def _on_path(session: Any, feeds: dict[str, np.ndarray], on: bool) -> Any:
    from onnxcore.kernels import accel

    with accel.use(on):
        return session.run(None, feeds)


def _row(
    rec: Recorder,
    label: str,
    ours: Any,
    theirs: Any,
    feeds: dict[str, np.ndarray],
    repeat: int,
    threads: int,
    both: bool = False,
) -> bool:
    expected = theirs.run(None, feeds)
    paths = [False, True] if both else [None]
    ok = True
    for on in paths:
        got = ours.run(None, feeds) if on is None else _on_path(ours, feeds, on)
        ok &= all(np.allclose(np.asarray(a), np.asarray(e), rtol=1e-3, atol=1e-4) for a, e in zip(got, expected))
    # One thread: CPU time (steadier on a shared machine). Several: wall time (CPU time adds the threads up).
    clock = time.process_time if threads == 1 else time.perf_counter
    fns: list[Callable[[], Any]] = [
        (lambda f=feeds: ours.run(None, f)) if on is None else (lambda f=feeds, o=on: _on_path(ours, f, o))
        for on in paths
    ]
    *t_ours, t_ort = best_of([*fns, lambda f=feeds: theirs.run(None, f)], repeat, clock)
    cols = [f"{t * 1e3:.3f} ms" for t in t_ours]
    ratios = [f"{t / t_ort:.2f}" for t in t_ours]
    print(rec.row([label, *cols, f"{t_ort * 1e3:.3f} ms", *ratios, "yes" if ok else "NO"]), flush=True)
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--blas-threads", type=int, default=None)
    ap.add_argument("--threads", type=int, default=1, help="threads of both engines (0: each engine's default)")
    ap.add_argument("--only", nargs="*", default=None, help="operator types to run")
    ap.add_argument("--match", default=None, help="run only the cases whose label contains this text")
    ap.add_argument(
        "--accel",
        choices=["default", "both"],
        default="default",
        help="both: time onnxcore without and with the compiled accelerator (the accel extra), taking turns",
    )
    ap.add_argument("--json", type=Path, help="also write the table here (benchmarks/bench_json.py)")
    args = ap.parse_args()
    rec = Recorder(args.json, "bench_ops.py")
    both = args.accel == "both"
    so = ort.SessionOptions()
    so.intra_op_num_threads = max(args.threads, 0)
    so.log_severity_level = 3
    ours_threads = args.threads if args.threads > 0 else os.cpu_count() or 1
    threads = f"onnxruntime, {args.threads or 'default'} thread(s)"
    if both:
        head = ["onnxcore, numpy", "onnxcore, accel", threads, "ratio, numpy", "ratio, accel"]
        print(rec.table(["operator case", *head, "matches"], ["---", *["---:"] * 5, ":---:"]))
    else:
        print(
            rec.table(
                ["operator case", "onnxcore", threads, "ratio", "matches"], ["---", "---:", "---:", "---:", ":---:"]
            )
        )
    ok_all = True
    for label, op, opset, inputs, consts, attrs, n_out in CASES:
        if (args.only and op not in args.only) or (args.match and args.match not in label):
            continue
        theirs = ort.InferenceSession(_model(op, opset, inputs, consts, attrs, None, n_out), so)
        expected = theirs.run(None, inputs)
        # onnxcore wants the graph outputs typed (Clause 7.1): take them from onnxruntime's results.
        ours = _session(_model(op, opset, inputs, consts, attrs, expected, n_out), ours_threads)
        ok_all &= _row(rec, label, ours, theirs, inputs, args.repeat, args.threads, both)
    for label, tag, build in GRAPH_CASES:
        if (args.only and tag not in args.only) or (args.match and args.match not in label):
            continue
        try:
            model, feeds = build()
        except ImportError as e:
            print(f"| {label} | skipped: {e} | | | |")
            continue
        theirs = ort.InferenceSession(model, so)
        ok_all &= _row(rec, label, _session(model, ours_threads), theirs, feeds, args.repeat, args.threads, both)
    rec.write()
    return 0 if ok_all else 1


if __name__ == "__main__":
    raise SystemExit(main())
