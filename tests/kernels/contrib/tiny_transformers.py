"""Tiny BERT and GPT-2 in torch, written as Hugging Face transformers 4.x writes them (eager attention).

transformers 5 (the version installed) builds its attention masks with ``aten::diff``, which the TorchScript
exporter cannot export, and the graphs its dynamo export gives are not the ones onnxruntime's transformer
optimizer fuses into Attention. These modules compute what the 4.x ``BertModel`` and ``GPT2LMHeadModel``
compute, op for op (the extended mask ``(1 - mask) * -10000``, erf GELU in BERT, the tanh GELU and the
``torch.where(causal, scores, finfo.min)`` mask of GPT-2, the KV cache as ``present`` outputs), so their
exports are the graphs users held when they ran the optimizer. Weights are random with a fixed seed.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import torch
from torch import nn


class _BertLayer(nn.Module):
    def __init__(self, hidden: int, heads: int, inner: int) -> None:
        super().__init__()
        self.heads, self.head = heads, hidden // heads
        self.query, self.key, self.value = (
            nn.Linear(hidden, hidden),
            nn.Linear(hidden, hidden),
            nn.Linear(hidden, hidden),
        )
        self.out, self.ln1 = nn.Linear(hidden, hidden), nn.LayerNorm(hidden, eps=1e-12)
        self.inter, self.output, self.ln2 = (
            nn.Linear(hidden, inner),
            nn.Linear(inner, hidden),
            nn.LayerNorm(hidden, eps=1e-12),
        )

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        return x.view(x.size()[:-1] + (self.heads, self.head)).permute(0, 2, 1, 3)

    def forward(self, h: torch.Tensor, ext_mask: torch.Tensor) -> torch.Tensor:
        q, k, v = self._split(self.query(h)), self._split(self.key(h)), self._split(self.value(h))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head)
        probs = nn.functional.softmax(scores + ext_mask, dim=-1)
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        ctx = ctx.view(ctx.size()[:-2] + (self.heads * self.head,))
        a = self.ln1(self.out(ctx) + h)
        return self.ln2(self.output(nn.functional.gelu(self.inter(a))) + a)


class TinyBert(nn.Module):
    """BertModel (4.x): embeddings, encoder layers, pooler; inputs input_ids, attention_mask, token_type_ids."""

    def __init__(self, vocab: int = 100, hidden: int = 32, heads: int = 4, layers: int = 2, max_pos: int = 64) -> None:
        super().__init__()
        self.word, self.pos, self.token_type = (
            nn.Embedding(vocab, hidden),
            nn.Embedding(max_pos, hidden),
            nn.Embedding(2, hidden),
        )
        self.ln = nn.LayerNorm(hidden, eps=1e-12)
        self.layers = nn.ModuleList([_BertLayer(hidden, heads, 4 * hidden) for _ in range(layers)])
        self.pool = nn.Linear(hidden, hidden)
        self.register_buffer("position_ids", torch.arange(max_pos).expand((1, -1)), persistent=False)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor) -> Any:
        seq = input_ids.size(1)
        h = self.word(input_ids) + self.token_type(token_type_ids) + self.pos(self.position_ids[:, :seq])
        h = self.ln(h)
        ext = attention_mask[:, None, None, :].to(h.dtype)
        ext = (1.0 - ext) * -10000.0
        for layer in self.layers:
            h = layer(h, ext)
        return h, torch.tanh(self.pool(h[:, 0]))


class _Conv1D(nn.Module):
    """GPT-2's Conv1D: a linear layer whose weight is stored (in, out)."""

    def __init__(self, nf: int, nx: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(nx, nf) * 0.02)
        self.bias = nn.Parameter(torch.randn(nf) * 0.02)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        size_out = x.size()[:-1] + (self.bias.size(0),)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(size_out)


def _gelu_new(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class _GPT2Block(nn.Module):
    def __init__(self, hidden: int, heads: int, max_pos: int) -> None:
        super().__init__()
        self.heads, self.head, self.hidden = heads, hidden // heads, hidden
        self.ln_1, self.ln_2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
        self.c_attn, self.c_proj = _Conv1D(3 * hidden, hidden), _Conv1D(hidden, hidden)
        self.c_fc, self.mlp_proj = _Conv1D(4 * hidden, hidden), _Conv1D(hidden, 4 * hidden)
        bias = torch.tril(torch.ones((max_pos, max_pos), dtype=torch.uint8)).view(1, 1, max_pos, max_pos)
        self.register_buffer("bias", bias, persistent=False)

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        return x.view(x.size()[:-1] + (self.heads, self.head)).permute(0, 2, 1, 3)

    def forward(self, x: torch.Tensor, past: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.ln_1(x)
        q, k, v = self.c_attn(h).split(self.hidden, dim=2)
        q, k, v = self._split(q), self._split(k), self._split(v)
        past_key, past_value = past[0], past[1]
        k = torch.cat((past_key, k), dim=-2)
        v = torch.cat((past_value, v), dim=-2)
        present = torch.stack((k, v))
        w = torch.matmul(q, k.transpose(-1, -2))
        w = w / torch.full([], v.size(-1) ** 0.5, dtype=w.dtype)
        nd, ns = q.size(-2), k.size(-2)
        causal = self.bias[:, :, ns - nd : ns, :ns].bool()
        w = torch.where(causal, w, torch.tensor(torch.finfo(w.dtype).min, dtype=w.dtype))
        w = nn.functional.softmax(w + mask, dim=-1)
        a = torch.matmul(w, v).permute(0, 2, 1, 3).contiguous()
        a = self.c_proj(a.view(a.size()[:-2] + (self.hidden,)))
        x = x + a
        x = x + self.mlp_proj(_gelu_new(self.c_fc(self.ln_2(x))))
        return x, present


class TinyGPT2(nn.Module):
    """GPT2LMHeadModel (4.x) with its KV cache: inputs input_ids, position_ids, attention_mask, past_<i>."""

    def __init__(self, vocab: int = 100, hidden: int = 32, heads: int = 4, layers: int = 2, max_pos: int = 64) -> None:
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, hidden), nn.Embedding(max_pos, hidden)
        self.blocks = nn.ModuleList([_GPT2Block(hidden, heads, max_pos) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(hidden)

    def forward(
        self, input_ids: torch.Tensor, position_ids: torch.Tensor, attention_mask: torch.Tensor, *past: torch.Tensor
    ) -> Any:
        x = self.wte(input_ids) + self.wpe(position_ids)
        mask = attention_mask[:, None, None, :].to(x.dtype)
        mask = (1.0 - mask) * -10000.0
        presents = []
        for block, p in zip(self.blocks, past):
            x, present = block(x, p, mask)
            presents.append(present)
        logits = torch.matmul(self.ln_f(x), self.wte.weight.t())
        return (logits, *presents)


def export_bert(
    path: Path, *, dynamo: bool = False, layers: int = 2, heads: int = 4, hidden: int = 32, max_pos: int = 64
) -> None:
    """Export :class:`TinyBert` (seed 0) to ``path`` with dynamic batch and sequence."""
    torch.manual_seed(0)
    model = TinyBert(hidden=hidden, heads=heads, layers=layers, max_pos=max_pos).eval()
    ids = torch.randint(0, 100, (2, 7))
    mask = torch.ones(2, 7, dtype=torch.int64)
    types = torch.zeros(2, 7, dtype=torch.int64)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    axes = {n: {0: "batch", 1: "sequence"} for n in names}
    torch.onnx.export(
        model,
        (ids, mask, types),
        str(path),
        input_names=names,
        output_names=["last_hidden_state", "pooler_output"],
        dynamic_axes=axes,
        opset_version=14,
        dynamo=dynamo,
    )


def export_gpt2(path: Path, *, layers: int = 2, heads: int = 4, hidden: int = 32, max_pos: int = 64) -> None:
    """Export :class:`TinyGPT2` (seed 0) with past inputs ``past_<i>`` and ``present_<i>`` outputs."""
    torch.manual_seed(0)
    model = TinyGPT2(layers=layers, heads=heads, hidden=hidden, max_pos=max_pos).eval()
    batch, seq, past_len = 2, 3, 2
    ids = torch.randint(0, 100, (batch, seq))
    pos = torch.arange(past_len, past_len + seq).expand(batch, seq)
    mask = torch.ones(batch, past_len + seq, dtype=torch.float32)
    past = [torch.randn(2, batch, heads, past_len, hidden // heads) for _ in range(layers)]
    names = ["input_ids", "position_ids", "attention_mask"] + [f"past_{i}" for i in range(layers)]
    outs = ["logits"] + [f"present_{i}" for i in range(layers)]
    axes: dict[str, dict[int, str]] = {
        "input_ids": {0: "batch", 1: "seq"},
        "position_ids": {0: "batch", 1: "seq"},
        "attention_mask": {0: "batch", 1: "total"},
        "logits": {0: "batch", 1: "seq"},
    }
    for i in range(layers):
        axes[f"past_{i}"] = {1: "batch", 3: "past"}
        axes[f"present_{i}"] = {1: "batch", 3: "total"}
    torch.onnx.export(
        model,
        (ids, pos, mask, *past),
        str(path),
        input_names=names,
        output_names=outs,
        dynamic_axes=axes,
        opset_version=14,
        dynamo=False,
    )
