"""The standard rewrites on models exported by torch (issue 39 item 2): torchvision's resnet18 with its
BatchNormalizations kept (``do_constant_folding=False``) and the tiny BERT of tests/kernels/contrib at opset 14 and,
converted by onnx, at 20; each rewritten model equals onnxruntime on the original for two input sizes (batch and
sequence 1 included), and the node counts say what the rewrites removed."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import pytest
from standard_helpers import FOLD, ops, rewrite_and_compare

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
