"""Small models made as users make them (torch export, onnxruntime's quantization tools and optimizer), for the
differential tests of the ``com.microsoft`` quantized, fused and MatMulNBits operators and for
``benchmarks/bench_contrib.py``. Each maker writes into a directory and returns the model's path; nothing here
computes an expected result."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

OPSET = 17


def _torch_export(module: Any, example: Any, path: Path, *, dynamic_batch: bool = True) -> Path:
    import torch

    module.eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module,
            (example,),
            str(path),
            input_names=["x"],
            output_names=["y"],
            opset_version=OPSET,
            dynamo=False,
            dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}} if dynamic_batch else None,
        )
    return path


def cnn_float(dirpath: Path) -> Path:
    """A small CNN: Conv+BN+Relu blocks, a residual Add, pooling, Concat, Sigmoid gating, Gemm head."""
    import torch
    from torch import nn

    torch.manual_seed(0)

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.c1 = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
            self.c2 = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1), nn.ReLU())
            self.c3 = nn.Conv2d(8, 8, 1)
            self.pool = nn.AvgPool2d(2)
            self.c4 = nn.Sequential(nn.Conv2d(16, 16, 3, stride=2, padding=1), nn.LeakyReLU(0.1))
            self.fc1 = nn.Linear(16, 32)
            self.fc2 = nn.Linear(32, 10)

        def forward(self, x: Any) -> Any:
            a = self.c1(x)
            b = self.c2(a) + a
            c = torch.cat([b, self.c3(b) * torch.sigmoid(b)], dim=1)
            d = self.c4(self.pool(c))
            e = torch.nn.functional.adaptive_avg_pool2d(d, 1).flatten(1)
            return torch.softmax(self.fc2(torch.relu(self.fc1(e))), dim=-1)

    net = Net()
    with torch.no_grad():
        for m in net.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 1.5)
    return _torch_export(net, torch.randn(2, 3, 16, 16), dirpath / "cnn.onnx")


def mlp_attention_float(dirpath: Path) -> Path:
    """A transformer-like block: Linear projections, single-head attention with MatMul/Softmax, a GELU MLP,
    residuals and LayerNorm."""
    import torch
    from torch import nn

    torch.manual_seed(1)
    d = 32

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.up, self.down = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x: Any) -> Any:
            h = self.ln1(x)
            att = torch.softmax(self.q(h) @ self.k(h).transpose(-1, -2) / d**0.5, dim=-1)
            x = x + self.o(att @ self.v(h))
            return x + self.down(torch.relu(self.up(self.ln2(x))))

    return _torch_export(Block(), torch.randn(2, 8, d), dirpath / "mlp_attention.onnx")


def decoder_mlp_float(dirpath: Path, *, d: int = 64, layers: int = 2) -> Path:
    """A decoder-like stack of gated MLP layers (SiLU gate, up and down projections, residuals) whose MatMuls
    a 4-bit quantizer turns into MatMulNBits."""
    import torch
    from torch import nn

    torch.manual_seed(2)

    class Layer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.gate = nn.Linear(d, 2 * d, bias=False)
            self.up = nn.Linear(d, 2 * d, bias=False)
            self.down = nn.Linear(2 * d, d, bias=False)

        def forward(self, x: Any) -> Any:
            return x + self.down(torch.nn.functional.silu(self.gate(x)) * self.up(x))

    net = nn.Sequential(*(Layer() for _ in range(layers)), nn.Linear(d, 100, bias=False))
    return _torch_export(net, torch.randn(1, 5, d), dirpath / "decoder_mlp.onnx")


class _Reader:
    """Calibration data for quantize_static: a few seeded batches."""

    def __init__(self, name: str, shape: tuple[int, ...], n: int = 4) -> None:
        rng = np.random.default_rng(3)
        self._data = iter([{name: rng.standard_normal(shape).astype(np.float32)} for _ in range(n)])

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._data, None)


def quantized_static(src: Path, dst: Path, shape: tuple[int, ...], *, qdq: bool, per_channel: bool = False,
                     activation_type: str = "QUInt8", weight_type: str = "QInt8") -> Path:  # fmt: skip
    """onnxruntime.quantization.quantize_static, QOperator (QLinear* operators) or QDQ format."""
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    pre = dst.with_suffix(".pre.onnx")
    quant_pre_process(str(src), str(pre), skip_symbolic_shape=True)
    quantize_static(
        str(pre),
        str(dst),
        _Reader("x", shape),
        quant_format=QuantFormat.QDQ if qdq else QuantFormat.QOperator,
        per_channel=per_channel,
        activation_type=getattr(QuantType, activation_type),
        weight_type=getattr(QuantType, weight_type),
    )
    return dst


def quantized_dynamic(src: Path, dst: Path, *, weight_type: str = "QInt8", per_channel: bool = False) -> Path:
    """onnxruntime.quantization.quantize_dynamic (DynamicQuantizeMatMul / MatMulIntegerToFloat and friends)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(src), str(dst), weight_type=getattr(QuantType, weight_type), per_channel=per_channel)
    return dst


def ort_optimized(src: Path, dst: Path, level: str) -> Path:
    """The graph onnxruntime saves after its optimizations at ``level`` (basic or extended)."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = {
        "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    }[level]
    so.optimized_model_filepath = str(dst)
    so.intra_op_num_threads = 1
    ort.InferenceSession(str(src), so, providers=["CPUExecutionProvider"])
    return dst


def matmul_nbits(src: Path, dst: Path, *, bits: int = 4, block_size: int = 32, symmetric: bool = False,
                 accuracy_level: int | None = None) -> Path:  # fmt: skip
    """onnxruntime.quantization.matmul_nbits_quantizer: every MatMul with a constant weight to MatMulNBits."""
    import onnx
    from onnxruntime.quantization.matmul_nbits_quantizer import DefaultWeightOnlyQuantConfig, MatMulNBitsQuantizer

    cfg = DefaultWeightOnlyQuantConfig(
        block_size=block_size, is_symmetric=symmetric, accuracy_level=accuracy_level, bits=bits
    )
    q = MatMulNBitsQuantizer(onnx.load(str(src)), algo_config=cfg)
    q.process()
    q.model.save_model_to_file(str(dst), use_external_data_format=False)
    return dst


Maker = Callable[[Path], Path]


def op_types(path: Path) -> list[str]:
    """``domain::op_type`` of every node of the main graph."""
    import onnx

    return [f"{n.domain or ''}::{n.op_type}" for n in onnx.load(str(path)).graph.node]


def output_step(path: Path) -> float:
    """The quantization step of the model's output: the scale of the DequantizeLinear that writes a graph output
    (else the largest DequantizeLinear scale of the graph)."""
    import onnx
    from onnx import numpy_helper

    g = onnx.load(str(path)).graph
    inits = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    outs = {o.name for o in g.output}
    dq = [n for n in g.node if n.op_type == "DequantizeLinear" and n.input[1] in inits]
    chosen = [n for n in dq if n.output[0] in outs] or dq
    return max((float(np.max(inits[n.input[1]])) for n in chosen), default=0.0)


def input_for(shape: tuple[int, ...], seed: int = 9) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def ort_session(path: Path, *, threads: int = 1) -> Any:
    """onnxruntime's session on the model as it is (no further graph optimization), CPU."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def run_both(path: Path, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(onnxruntime's output 0, onnxcore's output 0) on one seeded input ``x``."""
    from onnxcore import Session

    x = input_for(shape)
    expected = np.asarray(ort_session(path).run(None, {"x": x})[0])
    actual = np.asarray(Session(str(path)).run(None, {"x": x})[0])
    return expected, actual
