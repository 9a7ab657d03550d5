"""The plan-time fusions of optimize/patterns.py on what torch's exporters really write (issue 27): a small block
with GELU (erf and tanh), LayerNorm, RMSNorm, SiLU and attention, exported by the TorchScript exporter (opset 14,
where LayerNorm is still the ReduceMean/Sub/Pow chain) and the dynamo one; each fusion fires and the outputs
equal torch's own. Skipped without torch (the ``bench`` extra)."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest

import onnxcore
from onnxcore.kernels.fused.pattern import FusedPattern

torch = pytest.importorskip("torch")
pytest.importorskip("onnxscript")


class _Block(torch.nn.Module):  # type: ignore[misc,name-defined]
    def __init__(self) -> None:
        super().__init__()
        d = 32
        self.ln = torch.nn.LayerNorm(d)
        self.rms_w = torch.nn.Parameter(torch.rand(d) + 0.5)
        self.q = torch.nn.Linear(d, d)
        self.k = torch.nn.Linear(d, d)
        self.v = torch.nn.Linear(d, d)
        self.up = torch.nn.Linear(d, 64)
        self.down = torch.nn.Linear(64, d)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:  # type: ignore[name-defined]
        h = self.ln(x)
        var = h.pow(2).mean(-1, keepdim=True)
        h = self.rms_w * (h * torch.rsqrt(var + 1e-6))
        b, s, d = h.shape
        q = self.q(h).view(b, s, 4, d // 4).transpose(1, 2)
        k = self.k(h).view(b, s, 4, d // 4).transpose(1, 2)
        v = self.v(h).view(b, s, 4, d // 4).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-1, -2)) / (d // 4) ** 0.5 + mask
        a = torch.matmul(torch.softmax(scores, dim=-1), v).transpose(1, 2).reshape(b, s, d)
        u = self.up(a + x)
        u = torch.nn.functional.gelu(u) + torch.nn.functional.gelu(u, approximate="tanh")
        return self.down(torch.nn.functional.silu(u))


@pytest.mark.parametrize("dynamo", [False, True])
def test_fusions_fire_on_exported_models(dynamo: bool) -> None:
    torch.manual_seed(0)
    model = _Block().eval()
    x = torch.randn(2, 6, 32)
    mask = torch.zeros(2, 1, 6, 6)
    mask[1, :, :, 4:] = -1e4
    with torch.no_grad():
        want = model(x, mask).numpy()
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if dynamo:
            prog = torch.onnx.export(model, (x, mask), dynamo=True, verbose=False)
            raw = prog.model_proto.SerializeToString()
        else:
            torch.onnx.export(model, (x, mask), buf, dynamo=False, opset_version=14, input_names=["x", "mask"])
            raw = buf.getvalue()
    s = onnxcore.Session(raw)
    feeds = {s.inputs[0].name: x.numpy(), s.inputs[1].name: mask.numpy()}
    for _ in range(3):  # the general plan, then the plan made for these shapes
        (got,) = s.run(None, feeds)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    plans = [s._plan, *s._shape_plans.values()]
    labels = {bn.call.label for p in plans for bn in p.info if isinstance(bn.call, FusedPattern)}
    expected = {"RMSNorm", "Attention", "Linear", "SiLU"}
    if not dynamo:  # opset 14: LayerNorm and both GELUs are chains (dynamo, at opset 20, writes the operators)
        expected |= {"LayerNorm", "GELU (erf)", "GELU (tanh)"}
    assert expected <= labels
