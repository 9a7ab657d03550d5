"""The standard rewrites on models exported by torch (issue 39 item 2): torchvision's resnet18 with its
BatchNormalizations kept (``do_constant_folding=False``) and the tiny BERT of tests/kernels/contrib at opset 14 and,
converted by onnx, at 20; a channel shuffle with a layer scale through the whole optimizer; each rewritten model
equals onnxruntime on the original for two input sizes (batch and sequence 1 included), and the node counts say what
the rewrites removed."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import pytest
from standard_helpers import ATOL, FOLD, RTOL, ops, ort_run, rewrite_and_compare

import onnxcore
from onnxcore.runtime.optimize.standard import STANDARD_REWRITES

torch = pytest.importorskip("torch")
REWRITES = [FOLD, *STANDARD_REWRITES]


def test_resnet18_batchnorms_fold(tmp_path: Path) -> None:
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    # 64x64, not 32x32: at 32x32 layer4's strided 1x1 downsampling Conv reads a 2x2 input, which onnxcore's Conv
    # kernel refuses (a fault of the kernel's strided 1x1 path, the original model too; not of these rewrites).
    net = torchvision.models.resnet18(weights=None).eval()
    path = tmp_path / "resnet18.onnx"
    torch.onnx.export(net, (torch.randn(1, 3, 64, 64),), str(path), input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "N"}, "y": {0: "N"}}, opset_version=17, dynamo=False,
                      do_constant_folding=False)  # fmt: skip
    model = onnx.load(str(path))
    before = Counter(ops(model))
    rng = np.random.default_rng(0)
    feeds = [{"x": rng.standard_normal((n, 3, 64, 64)).astype(np.float32)} for n in (1, 2)]
    out, fired = rewrite_and_compare(model, feeds, REWRITES)
    after = Counter(ops(out))
    assert "fold_batchnorm" in fired
    assert before["BatchNormalization"] == 20 and after["BatchNormalization"] == 0
    assert after["Conv"] == before["Conv"] == 20
    assert sum(after.values()) == sum(before.values()) - 20 - before["Identity"]  # 141 -> 49 nodes


@pytest.fixture(scope="module")
def bert(tmp_path_factory: pytest.TempPathFactory) -> onnx.ModelProto:
    from kernels.contrib import tiny_transformers  # imports torch (heavy, optional): only when a test runs

    path = tmp_path_factory.mktemp("standard") / "bert.onnx"
    tiny_transformers.export_bert(path)
    return onnx.load(str(path))


def _bert_feeds() -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(1)
    return [
        {"input_ids": rng.integers(0, 100, (b, s)).astype(np.int64), "attention_mask": np.ones((b, s), np.int64),
         "token_type_ids": np.zeros((b, s), np.int64)}
        for b, s in ((1, 1), (2, 7))
    ]  # fmt: skip


@pytest.mark.parametrize("opset", [14, 20])
def test_tiny_bert(bert: onnx.ModelProto, opset: int) -> None:
    model = bert if opset == 14 else onnx.version_converter.convert_version(bert, opset)
    before = Counter(ops(model))
    out, fired = rewrite_and_compare(model, _bert_feeds(), REWRITES)
    after = Counter(ops(out))
    assert "resolve_reshape_targets" in fired
    # Every Reshape's target is a constant; the shape arithmetic feeding them is gone.
    assert after["Reshape"] == before["Reshape"] == 8 and after["Concat"] == 0 and after["Shape"] <= 1
    if opset == 20:  # LayerNormalization from 17, Gelu from 20
        assert after["LayerNormalization"] == 5 and after["Gelu"] == 2 and after["Erf"] == 0
        assert after["ReduceMean"] == 0 and after["Sqrt"] == 0
    else:
        assert after["LayerNormalization"] == 0 and after["ReduceMean"] == 10
    print(f"opset {opset}: {sum(before.values())} -> {sum(after.values())} nodes")


def test_torch_group_norm_at_opset_21(tmp_path: Path) -> None:
    # torch's exporter writes GroupNorm as Reshape, InstanceNormalization, Reshape, Mul, Add (opset 18 here, converted
    # to 21 by onnx's converter, where GroupNormalization has per-channel scale and bias).
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.GroupNorm(4, 8, eps=1e-4), torch.nn.ReLU()).eval()
    path = tmp_path / "gn.onnx"
    torch.onnx.export(net, (torch.randn(1, 3, 8, 8),), str(path), input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "N", 2: "H", 3: "W"}}, opset_version=18, dynamo=False)  # fmt: skip
    model = onnx.version_converter.convert_version(onnx.load(str(path)), 21)
    rng = np.random.default_rng(2)
    feeds = [{"x": rng.standard_normal((n, 3, s, s)).astype(np.float32)} for n, s in ((1, 3), (2, 9))]
    out, fired = rewrite_and_compare(model, feeds, REWRITES)
    assert "group_norms" in fired and ops(out) == ["Conv", "GroupNormalization", "Relu"]


def test_torch_channel_shuffle_and_layer_scale(tmp_path: Path) -> None:
    # ShuffleNet's channel shuffle (x.view(b, g, c // g, h, w) from x.size()) and timm's layer scale (a [1, C, 1, 1]
    # parameter times a convolution's output) as TorchScript writes them, the batch a dimension variable: the
    # channel arithmetic on fixed extents becomes constants (fold_shape_values; no Div left), the scale goes into the
    # convolution (fold_channel_affine; no Mul left), the batch stays a variable.
    class Block(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = torch.nn.Conv2d(4, 8, 3, padding=1)
            self.gamma = torch.nn.Parameter(torch.rand(1, 8, 1, 1) + 0.5)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = self.conv(x) * self.gamma
            b, c, h, w = y.size()
            y = y.view(b, 2, c // 2, h, w).transpose(1, 2).contiguous()
            return torch.relu(y.view(b, -1, h, w))

    torch.manual_seed(0)
    path = tmp_path / "shuffle.onnx"
    torch.onnx.export(Block().eval(), (torch.randn(1, 4, 6, 6),), str(path), input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "N"}, "y": {0: "N"}}, opset_version=17, dynamo=False)  # fmt: skip
    assert {"Div", "Mul", "Shape"} <= set(ops(onnx.load(str(path))))
    # The whole optimizer (its passes repeated until none fires: the folding after the constants these make).
    model = onnxcore.load(str(path))
    out, report = onnxcore.optimize(model)
    assert report.verified and {"fold_shape_values", "fold_channel_affine"} <= set(report.fired)
    after = [n.op_type for n in out.graph.node]
    assert "Div" not in after and "Mul" not in after and after.count("Conv") == 1
    assert out.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "N"
    rng = np.random.default_rng(3)
    for n in (1, 3):
        x = rng.standard_normal((n, 4, 6, 6)).astype(np.float32)
        (want,), (got,) = ort_run(onnxcore.encode(model), {"x": x}), ort_run(onnxcore.encode(out), {"x": x})
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
