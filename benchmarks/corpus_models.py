"""The benchmark corpus of issue 27: models as today's exporters write them, generated into a cache directory.

Every model is made here from the pinned exporters of the ``bench`` extra (pyproject.toml), never downloaded:

- torchvision (resnet18, mobilenet_v3_small, efficientnet_b0) and timm (convnext_atto, efficientformer_l1,
  vit_tiny), built with random weights (``pretrained=False``), exported by both torch exporters
  (``dynamo=True`` and the TorchScript one);
- transformers with small configurations (BERT, DistilBERT, GPT-2, T5 encoder, Whisper encoder, Llama), batch
  and sequence axes dynamic, both exporters, and a KV-cache decoder step (Llama with its past keys and values
  as inputs); then by family (encoder: BERT; decoders: GPT-2 and Llama, each with and without past keys and
  values; encoder-decoder: BART) at opsets 17 (TorchScript), 18 (dynamo) and 23 (dynamo asked for it: the
  standard RMSNormalization, RotaryEmbedding and Attention) and at two sequence lengths (``_text_variants``);
- scikit-learn (random forest, gradient boosting, SVM) through skl2onnx and LightGBM, XGBoost through
  onnxmltools, each at 1, 16 and 1,000 rows; every other scikit-learn family skl2onnx converts, and CatBoost,
  in ``corpus_ml.py`` (the ``ml-`` entries).

Weights are seeded; BatchNorm statistics are set by a few train-mode passes over random batches (a cumulative
average), so that outputs are of normal size and a wrong kernel shows. The framework's own output for the
benchmark's feeds is stored next to the model (``<name>.npz``: ``in:<input>`` and ``out:<k>``) and the
exported model is checked against it with onnxruntime when it is made; ``manifest.json`` lists every entry.

Usage: ``python benchmarks/corpus_models.py [--cache .cache/bench-corpus] [--models bert gpt2 ...] [--force]``.
``bench_corpus.py`` calls :func:`ensure` itself.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import corpus_ml
import numpy as np

DEFAULT_CACHE = Path(__file__).resolve().parent.parent / ".cache" / "bench-corpus"
CORPUS_VERSION = 1  # bump when a recipe changes: entries of another version are made again


@dataclass
class Entry:
    """One benchmark case: a model file and the feeds it is run with."""

    name: str
    family: str
    exporter: str
    model: str  # file name in the cache
    data: str  # npz with in:<name> feeds and out:<k> framework outputs
    exact_outputs: list[int] = field(default_factory=list)  # outputs compared exactly (labels)
    note: str = ""
    version: int = CORPUS_VERSION


# --------------------------------------------------------------------------------------------- torch models


def _torch() -> Any:
    import torch

    torch.manual_seed(0)
    return torch


def _set_bn_stats(model: Any, batch: Callable[[], Any], passes: int = 3) -> None:
    """BatchNorm running statistics from a few train-mode passes (cumulative average, not momentum)."""
    torch = _torch()
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not bns:
        model.eval()
        return
    for m in bns:
        m.reset_running_stats()
        m.momentum = None
    model.train()
    with torch.no_grad():
        for _ in range(passes):
            model(batch())
    model.eval()


class _Wrap:
    """A torch module calling ``fn(model, *args)`` and returning a tuple of tensors (made lazily: torch import)."""

    @staticmethod
    def make(model: Any, fn: Callable[..., Any]) -> Any:
        torch = _torch()

        class Wrapped(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.inner = model

            def forward(self, *args: Any) -> Any:
                return fn(self.inner, *args)

        return Wrapped().eval()


@dataclass
class TorchRecipe:
    """A torch model and its feeds; ``opset`` asks the exporters for that opset (None: each exporter's default,
    18 for the dynamo exporter and 17 here for the TorchScript one). At opset 23 the dynamo exporter writes the
    standard ``RMSNormalization``, ``RotaryEmbedding`` and ``Attention`` where the older opsets spell them out."""

    name: str
    family: str
    build: Callable[[], tuple[Any, tuple[Any, ...], tuple[Any, ...], list[str], dict[str, dict[int, str]]]]
    exporters: tuple[str, ...] = ("dynamo", "torchscript")
    opset: int | None = None


def _vision(ctor: Callable[[], Any], size: int = 224) -> Callable[[], Any]:
    def build() -> Any:
        torch = _torch()
        model = ctor()
        gen = torch.Generator().manual_seed(1)
        _set_bn_stats(model, lambda: torch.randn(8, 3, size, size, generator=gen))
        x = torch.randn(1, 3, size, size, generator=gen)
        return model, (x,), (x,), ["input"], {}

    return build


def _tv(name: str) -> Callable[[], Any]:
    def ctor() -> Any:
        import torchvision

        _torch()
        return getattr(torchvision.models, name)(weights=None)

    return ctor


def _timm(name: str) -> Callable[[], Any]:
    def ctor() -> Any:
        import timm

        _torch()
        return timm.create_model(name, pretrained=False)

    return ctor


def _ids(torch: Any, batch: int, seq: int, vocab: int, seed: int) -> Any:
    return torch.randint(0, vocab, (batch, seq), generator=torch.Generator().manual_seed(seed))


def _mask(torch: Any, batch: int, seq: int) -> Any:
    m = torch.ones(batch, seq, dtype=torch.int64)
    if batch > 1:
        m[1, seq - seq // 4 :] = 0  # the second row padded: masking shows
    return m


_TEXT_AXES = {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"}}
VOCAB = 512


def _text(make: Callable[[Any], Any], *, mask: bool = True, seq: int = 24, batch: int = 2) -> Callable[[], Any]:
    """A transformers encoder/decoder: export at (2, 16), run at (``batch``, ``seq``) (so the axes are really
    dynamic)."""

    def build() -> Any:
        torch = _torch()
        model = make(torch).eval()
        if mask:
            wrapped = _Wrap.make(model, lambda m, ids, am: (m(input_ids=ids, attention_mask=am).last_hidden_state,))
            ex = (_ids(torch, 2, 16, VOCAB, 1), _mask(torch, 2, 16))
            run = (_ids(torch, batch, seq, VOCAB, 2), _mask(torch, batch, seq))
            names = ["input_ids", "attention_mask"]
        else:
            wrapped = _Wrap.make(model, lambda m, ids: (m(input_ids=ids).last_hidden_state,))
            ex = (_ids(torch, 2, 16, VOCAB, 1),)
            run = (_ids(torch, batch, seq, VOCAB, 2),)
            names = ["input_ids"]
        return wrapped, ex, run, names, {n: _TEXT_AXES[n] for n in names}

    return build


def _bert(torch: Any) -> Any:
    from transformers import BertConfig, BertModel

    cfg = BertConfig(
        vocab_size=VOCAB,
        hidden_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=512,
        max_position_embeddings=128,
    )
    return BertModel(cfg, add_pooling_layer=False)


def _distilbert(torch: Any) -> Any:
    from transformers import DistilBertConfig, DistilBertModel

    cfg = DistilBertConfig(
        vocab_size=VOCAB, dim=128, n_layers=2, n_heads=4, hidden_dim=512, max_position_embeddings=128
    )
    return DistilBertModel(cfg)


def _gpt2(torch: Any) -> Any:
    from transformers import GPT2Config, GPT2Model

    cfg = GPT2Config(vocab_size=VOCAB, n_embd=128, n_layer=2, n_head=4, n_positions=128)
    return GPT2Model(cfg)


def _t5(torch: Any) -> Any:
    from transformers import T5Config, T5EncoderModel

    cfg = T5Config(vocab_size=VOCAB, d_model=128, d_kv=32, d_ff=512, num_layers=2, num_heads=4)
    return T5EncoderModel(cfg)


def _llama_config() -> Any:
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=128,
        intermediate_size=344,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
    )


def _llama(torch: Any) -> Any:
    from transformers import LlamaModel

    return LlamaModel(_llama_config())


def _whisper() -> Any:
    torch = _torch()
    from transformers import WhisperConfig
    from transformers.models.whisper.modeling_whisper import WhisperEncoder

    cfg = WhisperConfig(
        num_mel_bins=80, d_model=128, encoder_layers=2, encoder_attention_heads=4, encoder_ffn_dim=512,
        max_source_positions=64,
    )  # fmt: skip
    model = WhisperEncoder(cfg).eval()
    wrapped = _Wrap.make(model, lambda m, f: (m(input_features=f).last_hidden_state,))
    gen = torch.Generator().manual_seed(3)
    ex = (torch.randn(2, 80, 128, generator=gen),)
    run = (torch.randn(1, 80, 128, generator=gen),)
    return wrapped, ex, run, ["input_features"], {"input_features": {0: "batch"}}


def _wav2vec2() -> Any:
    """An audio encoder (wav2vec2, small): its convolutional feature extractor (1-D convolutions with strides, a
    group normalization, GELU) over raw samples, then a transformer encoder with a grouped positional convolution;
    exported at 2 x 0.5 s, run at 1 x 1 s of 16 kHz audio."""
    torch = _torch()
    from transformers import Wav2Vec2Config, Wav2Vec2Model

    cfg = Wav2Vec2Config(
        hidden_size=128, num_hidden_layers=2, num_attention_heads=4, intermediate_size=512,
        conv_dim=(64,) * 7, num_conv_pos_embeddings=32, num_conv_pos_embedding_groups=4,
    )  # fmt: skip
    model = Wav2Vec2Model(cfg).eval()
    wrapped = _Wrap.make(model, lambda m, a: (m(input_values=a).last_hidden_state,))
    gen = torch.Generator().manual_seed(6)
    ex = (torch.randn(2, 8000, generator=gen),)
    run = (torch.randn(1, 16000, generator=gen),)
    return wrapped, ex, run, ["input_values"], {"input_values": {0: "batch", 1: "samples"}}


def _kv_step(
    make: Callable[[], tuple[Any, int, int, int]] | None = None, past: int = 31, batch: int = 2
) -> Callable[[], Any]:
    """One decoder step with a cache: input_ids (B, 1), past keys/values per layer; exported at (2, past 16), run
    at (``batch``, ``past``). ``make`` gives (a causal LM, layers, key/value heads, head size); Llama by default."""

    def build() -> Any:
        torch = _torch()
        from transformers import DynamicCache

        model, layers, kv, hd = (make or _llama_lm)()

        def step(m: Any, ids: Any, am: Any, *past_kv: Any) -> Any:
            cache = DynamicCache()
            for i in range(layers):
                cache.update(past_kv[2 * i], past_kv[2 * i + 1], i)
            out = m(input_ids=ids, attention_mask=am, past_key_values=cache, use_cache=True)
            new = out.past_key_values
            flat = []
            for i in range(layers):
                flat += [new.layers[i].keys, new.layers[i].values]
            return (out.logits, *flat)

        wrapped = _Wrap.make(model, step)

        def feeds(batch: int, length: int, seed: int) -> tuple[Any, ...]:
            gen = torch.Generator().manual_seed(seed)
            ids = torch.randint(0, VOCAB, (batch, 1), generator=gen)
            am = torch.ones(batch, length + 1, dtype=torch.int64)
            pkv = [torch.randn(batch, kv, length, hd, generator=gen) for _ in range(2 * layers)]
            return (ids, am, *pkv)

        names = ["input_ids", "attention_mask"] + [f"past_{k}_{i}" for i in range(layers) for k in ("key", "value")]
        axes: dict[str, dict[int, str]] = {"input_ids": {0: "batch"}, "attention_mask": {0: "batch", 1: "total"}}
        axes.update({n: {0: "batch", 2: "past"} for n in names[2:]})
        return wrapped, feeds(2, 16, 4), feeds(batch, past, 5), names, axes

    return build


def _llama_lm() -> tuple[Any, int, int, int]:
    from transformers import LlamaForCausalLM

    cfg = _llama_config()
    hd = cfg.hidden_size // cfg.num_attention_heads
    return LlamaForCausalLM(cfg).eval(), cfg.num_hidden_layers, cfg.num_key_value_heads, hd


def _gpt2_lm() -> tuple[Any, int, int, int]:
    _torch()
    from transformers import GPT2Config, GPT2LMHeadModel

    cfg = GPT2Config(vocab_size=VOCAB, n_embd=128, n_layer=2, n_head=4, n_positions=256)
    return GPT2LMHeadModel(cfg).eval(), cfg.n_layer, cfg.n_head, cfg.n_embd // cfg.n_head


def _seq2seq(make: Callable[[Any], Any], seq: int = 24) -> Callable[[], Any]:
    """An encoder-decoder (``make(torch)``, small) as exported: the encoder reads (2, ``seq``) tokens, the decoder
    (2, ``seq`` // 2)."""

    def build() -> Any:
        torch = _torch()
        model = make(torch).eval()

        def forward(m: Any, ids: Any, am: Any, dec: Any) -> Any:
            return (m(input_ids=ids, attention_mask=am, decoder_input_ids=dec).last_hidden_state,)

        wrapped = _Wrap.make(model, forward)
        ex = (_ids(torch, 2, 16, VOCAB, 1), _mask(torch, 2, 16), _ids(torch, 2, 8, VOCAB, 3))
        run = (_ids(torch, 2, seq, VOCAB, 2), _mask(torch, 2, seq), _ids(torch, 2, seq // 2, VOCAB, 4))
        names = ["input_ids", "attention_mask", "decoder_input_ids"]
        axes = {**_TEXT_AXES, "decoder_input_ids": {0: "batch", 1: "dec"}}
        return wrapped, ex, run, names, axes

    return build


def _bart(torch: Any) -> Any:
    from transformers import BartConfig, BartModel

    cfg = BartConfig(
        vocab_size=VOCAB, d_model=128, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
        decoder_attention_heads=4, encoder_ffn_dim=512, decoder_ffn_dim=512, max_position_embeddings=256,
    )  # fmt: skip
    return BartModel(cfg)


def _t5_seq2seq(torch: Any) -> Any:
    """T5 as an encoder-decoder: relative position biases in both stacks, the decoder's causal self-attention and
    its cross-attention over the encoder's output. The dynamo exporter of torch 2.14 does not take it (a view of
    T5's attention output); TorchScript does."""
    from transformers import T5Config, T5Model

    cfg = T5Config(vocab_size=VOCAB, d_model=128, d_kv=32, d_ff=512, num_layers=2, num_decoder_layers=2, num_heads=4)
    return T5Model(cfg)


def _text_variants() -> list[TorchRecipe]:
    """The transformers families at the opsets exporters write (17: TorchScript, 18: dynamo, 23: dynamo asked for
    it) and at two sequence lengths (24 and 128 tokens; a decoder step after 31 and 127 cached positions).
    Names: ``<family>[_o23][_s128]-<exporter>``; the recipes above are the 18/17 entries at the short length.

    Llama at opset 23 runs a batch of one: the dynamo exporter writes RotaryEmbedding's caches for one batch row,
    (1, seq, rot/2), which the definition's reference broadcasts but onnxruntime 1.23 refuses for a larger batch.
    """
    short: list[tuple[str, str, Callable[[int, int], Callable[[], Any]], bool]] = [
        ("bert", "small transformer", lambda n, b: _text(_bert, seq=n, batch=b), False),
        ("gpt2", "GPT-2 decoder", lambda n, b: _text(_gpt2, seq=n, batch=b), False),
        ("llama", "small transformer", lambda n, b: _text(_llama, seq=n, batch=b), False),
        ("llama_kv_step", "KV-cache decoder step", lambda n, b: _kv_step(past=n - 1, batch=b), False),
        ("gpt2_kv_step", "KV-cache decoder step", lambda n, b: _kv_step(_gpt2_lm, past=n - 1, batch=b), True),
        ("bart", "encoder-decoder", lambda n, b: _seq2seq(_bart, n), True),
    ]
    out = []
    for name, family, build, new in short:
        b23 = 1 if name.startswith("llama") else 2
        if new:  # the families the first corpus lacked, at the short length and the exporters' default opsets
            out.append(TorchRecipe(name, family, build(24, 2)))
        out.append(TorchRecipe(f"{name}_s128", family, build(128, 2)))
        out.append(TorchRecipe(f"{name}_o23", family, build(24, b23), ("dynamo",), 23))
        out.append(TorchRecipe(f"{name}_o23_s128", family, build(128, b23), ("dynamo",), 23))
    return out


TORCH_RECIPES: list[TorchRecipe] = [
    TorchRecipe("resnet18", "dense CNN", _vision(_tv("resnet18"))),
    TorchRecipe("mobilenet_v3_small", "mobile CNN", _vision(_tv("mobilenet_v3_small"))),
    TorchRecipe("efficientnet_b0", "mobile CNN", _vision(_tv("efficientnet_b0"))),
    TorchRecipe("convnext_atto", "convnext", _vision(_timm("convnext_atto"))),
    TorchRecipe("efficientformer_l1", "mobile CNN", _vision(_timm("efficientformer_l1"))),
    TorchRecipe("vit_tiny", "dense CNN / ViT", _vision(_timm("vit_tiny_patch16_224"))),
    # Issue 42: torchvision's classification families and timm's mobile families, each at two input sizes (the
    # smaller one is where small spatial extents, and im2col's fixed costs, dominate).
    TorchRecipe("resnet34_160", "dense CNN", _vision(_tv("resnet34"), 160)),
    TorchRecipe("resnet18_128", "dense CNN", _vision(_tv("resnet18"), 128)),
    TorchRecipe("mobilenet_v2", "mobile CNN", _vision(_tv("mobilenet_v2"))),
    TorchRecipe("mobilenet_v3_large_160", "mobile CNN", _vision(_tv("mobilenet_v3_large"), 160)),
    TorchRecipe("mobilenet_v3_small_128", "mobile CNN", _vision(_tv("mobilenet_v3_small"), 128)),
    TorchRecipe("efficientnet_b0_160", "mobile CNN", _vision(_tv("efficientnet_b0"), 160)),
    TorchRecipe("shufflenet_v2", "grouped CNN", _vision(_tv("shufflenet_v2_x1_0"))),
    TorchRecipe("shufflenet_v2_x05_160", "grouped CNN", _vision(_tv("shufflenet_v2_x0_5"), 160)),
    TorchRecipe("squeezenet", "dense CNN", _vision(_tv("squeezenet1_1"))),
    TorchRecipe("squeezenet10_160", "dense CNN", _vision(_tv("squeezenet1_0"), 160)),
    TorchRecipe("regnet_y_400mf", "grouped CNN", _vision(_tv("regnet_y_400mf"))),
    TorchRecipe("regnet_x_400mf_160", "grouped CNN", _vision(_tv("regnet_x_400mf"), 160)),
    TorchRecipe("densenet121_160", "dense CNN", _vision(_tv("densenet121"), 160)),
    TorchRecipe("mnasnet", "mobile CNN", _vision(_tv("mnasnet1_0"))),
    TorchRecipe("mnasnet05_128", "mobile CNN", _vision(_tv("mnasnet0_5"), 128)),
    TorchRecipe("convnext_atto_160", "convnext", _vision(_timm("convnext_atto"), 160)),
    TorchRecipe("mobilevit_xxs", "mobile CNN / ViT", _vision(_timm("mobilevit_xxs"), 256)),
    TorchRecipe("mobilevit_xxs_160", "mobile CNN / ViT", _vision(_timm("mobilevit_xxs"), 160)),
    TorchRecipe("efficientformerv2_s0", "mobile CNN / ViT", _vision(_timm("efficientformerv2_s0"))),
    TorchRecipe("mobilenetv4_small", "mobile CNN", _vision(_timm("mobilenetv4_conv_small"))),
    TorchRecipe("mobilenetv4_small_160", "mobile CNN", _vision(_timm("mobilenetv4_conv_small"), 160)),
    TorchRecipe("ghostnet_160", "mobile CNN", _vision(_timm("ghostnet_100"), 160)),
    TorchRecipe("lcnet_050", "mobile CNN", _vision(_timm("lcnet_050"))),
    TorchRecipe("repvit_m0_9_160", "mobile CNN", _vision(_timm("repvit_m0_9"), 160)),
    TorchRecipe("bert", "small transformer", _text(_bert)),
    TorchRecipe("distilbert", "small transformer", _text(_distilbert)),
    TorchRecipe("gpt2", "GPT-2 decoder", _text(_gpt2)),
    TorchRecipe("t5_encoder", "small transformer", _text(_t5)),
    TorchRecipe("whisper_encoder", "small transformer", _whisper),
    TorchRecipe("wav2vec2", "audio encoder", _wav2vec2),
    TorchRecipe("t5", "encoder-decoder", _seq2seq(_t5_seq2seq), ("torchscript",)),
    TorchRecipe("t5_s128", "encoder-decoder", _seq2seq(_t5_seq2seq, 128), ("torchscript",)),
    TorchRecipe("llama", "small transformer", _text(_llama)),
    TorchRecipe("llama_kv_step", "KV-cache decoder step", _kv_step()),
    *_text_variants(),
]


def _flat_outputs(out: Any) -> list[np.ndarray]:
    torch = _torch()
    if isinstance(out, torch.Tensor):
        return [out.detach().numpy()]
    if isinstance(out, tuple | list):
        return [o.detach().numpy() for o in out]
    raise TypeError(f"unexpected output {type(out).__name__}")


def _export_torch(
    recipe: TorchRecipe, cache: Path, exporters: Sequence[str], failed: dict[str, str] | None = None
) -> list[Entry]:
    torch = _torch()
    model, ex_args, run_args, names, axes = recipe.build()
    with torch.no_grad():
        expected = _flat_outputs(model(*run_args))
    out_names = [f"out{k}" for k in range(len(expected))]
    entries = []
    for exporter in exporters:
        if exporter not in recipe.exporters:
            continue
        name = f"{recipe.name}-{exporter}"
        path = cache / f"{name}.onnx"
        tmp = cache / f"{name}.tmp.onnx"
        dyn = {**axes}
        if exporter == "torchscript":
            dyn.update({o: {} for o in out_names})
        kwargs: dict[str, Any] = {"input_names": names, "output_names": out_names}
        if axes and exporter == "dynamo":
            # torch.export's own spelling: every named axis dynamic, relations between them found by tracing.
            auto = torch.export.Dim.DYNAMIC
            # The wrapper's forward takes *args: one structure, a tuple of per-input specs.
            kwargs["dynamic_shapes"] = (tuple({a: auto for a in axes.get(n, {})} or None for n in names),)
        elif axes:
            kwargs["dynamic_axes"] = {k: v for k, v in dyn.items() if v}
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if exporter == "dynamo":
                    opset = {"opset_version": recipe.opset} if recipe.opset else {}
                    torch.onnx.export(model, ex_args, str(tmp), dynamo=True, external_data=False, **kwargs, **opset)
                else:
                    ts_opset = recipe.opset or 17
                    torch.onnx.export(model, ex_args, str(tmp), dynamo=False, opset_version=ts_opset, **kwargs)
        except Exception as e:  # one exporter failing leaves the other's model
            root: BaseException = e
            while root.__cause__ is not None:  # the exporter wraps the reason: name the innermost
                root = root.__cause__
            first = str(root).strip().splitlines()[0] if str(root).strip() else ""
            e = root
            print(f"{name}: export failed: {type(e).__name__}: {first[:200]}", file=sys.stderr)
            if failed is not None:
                failed[name] = f"{type(e).__name__}: {first[:200]}"
            if os.environ.get("CORPUS_TRACEBACK"):
                traceback.print_exc()
            continue
        os.replace(tmp, path)
        feeds = {n: a.detach().numpy() for n, a in zip(names, run_args)}
        entries.append(_store(cache, name, recipe.family, exporter, path.name, feeds, expected))
    return entries


# ----------------------------------------------------------------------------------------------- tabular


def _tabular_data(n: int, features: int = 20, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, features)).astype(np.float32)
    y = ((x[:, 0] + x[:, 1] * x[:, 2] - x[:, 3] + 0.3 * rng.standard_normal(n)) > 0).astype(np.int64)
    y += (x[:, 4] > 1.0).astype(np.int64)  # three classes
    return x, y


def _tabular(cache: Path, only: Callable[[str], bool]) -> list[Entry]:
    from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier
    from sklearn.svm import SVC

    x, y = _tabular_data(2000)
    xt, _ = _tabular_data(1000, seed=1)
    recipes: list[tuple[str, str, Callable[[], Any], str]] = [
        ("random_forest", "tree ensemble", lambda: RandomForestClassifier(100, max_depth=10, random_state=0), "skl"),
        ("gradient_boosting", "tree ensemble", lambda: GradientBoostingClassifier(n_estimators=100, random_state=0),
         "skl"),
        ("lightgbm", "tree ensemble", _lgbm, "lgbm"),
        ("xgboost", "tree ensemble", _xgb, "xgb"),
        ("svm", "SVM", lambda: SVC(kernel="rbf", probability=False, random_state=0), "skl"),
    ]  # fmt: skip
    entries = []
    for name, family, make, kind in recipes:
        if not any(only(f"{name}-{rows}") for rows in corpus_ml.ROWS):
            continue
        model = make().fit(x, y)
        onx = _convert_tabular(model, kind, x.shape[1])
        exporter = "onnxmltools" if kind in ("lgbm", "xgb") else "skl2onnx"
        path = cache / f"{name}.onnx"
        tmp = cache / f"{name}.tmp.onnx"
        tmp.write_bytes(onx.SerializeToString())
        os.replace(tmp, path)
        for rows in corpus_ml.ROWS:
            feed = xt[:rows]
            label = model.predict(feed).astype(np.int64)
            second = model.decision_function(feed) if kind == "skl" and name == "svm" else model.predict_proba(feed)
            exp = [label, np.asarray(second, np.float32)]
            entries.append(
                _store(cache, f"{name}-{rows}", family, exporter, path.name, {"input": feed}, exp, exact_outputs=[0])
            )
    return entries


def _lgbm() -> Any:
    import lightgbm

    return lightgbm.LGBMClassifier(n_estimators=100, num_leaves=31, random_state=0, verbose=-1)


def _xgb() -> Any:
    import xgboost

    return xgboost.XGBClassifier(n_estimators=100, max_depth=6, random_state=0)


def _convert_tabular(model: Any, kind: str, features: int) -> Any:
    if kind == "skl":
        from skl2onnx import to_onnx
        from skl2onnx.common.data_types import FloatTensorType

        return to_onnx(
            model,
            initial_types=[("input", FloatTensorType([None, features]))],
            options={id(model): {"zipmap": False}} if hasattr(model, "predict_proba") else None,
            target_opset={"": 17, "ai.onnx.ml": 3},
        )
    from onnxmltools import convert_lightgbm, convert_xgboost
    from onnxmltools.convert.common.data_types import FloatTensorType as MlFloat

    types = [("input", MlFloat([None, features]))]
    if kind == "lgbm":
        return convert_lightgbm(model, initial_types=types, zipmap=False, target_opset=15)
    return convert_xgboost(model, initial_types=types, target_opset=15)


# ------------------------------------------------------------------------------------------------ storage


def _store(
    cache: Path,
    name: str,
    family: str,
    exporter: str,
    model_file: str,
    feeds: dict[str, np.ndarray],
    expected: Sequence[np.ndarray],
    *,
    exact_outputs: Sequence[int] = (),
) -> Entry:
    arrays = {f"in:{k}": v for k, v in feeds.items()} | {f"out:{k}": np.asarray(v) for k, v in enumerate(expected)}
    tmp = cache / f"{name}.tmp.npz"
    np.savez(tmp, **arrays)  # type: ignore[arg-type]
    os.replace(tmp, cache / f"{name}.npz")
    entry = Entry(name, family, exporter, model_file, f"{name}.npz", list(exact_outputs))
    entry.note = check_entry(cache, entry, "onnxruntime")
    return entry


def load_entry(cache: Path, entry: Entry) -> tuple[dict[str, np.ndarray], list[np.ndarray]]:
    """The feeds and the framework's outputs of an entry."""
    with np.load(cache / entry.data) as z:
        feeds = {k[3:]: z[k] for k in z.files if k.startswith("in:")}
        outs = [z[f"out:{k}"] for k in range(sum(1 for f in z.files if f.startswith("out:")))]
    return feeds, outs


def compare(got: Sequence[Any], expected: Sequence[np.ndarray], exact: Sequence[int] = ()) -> str:
    """'' when ``got`` matches the framework's outputs, else what differs. Floats: rtol 1e-3 and an atol of
    1e-4 of the output's largest magnitude; labels (``exact``): at most 1 % of them may differ (float32
    thresholds against the framework's float64 ones put a point on the other side now and then)."""
    if len(got) < len(expected):
        return f"{len(got)} outputs, the framework gives {len(expected)}"
    for k, (g, e) in enumerate(zip(got, expected)):
        g = np.asarray(g)
        if g.size != e.size:
            return f"output {k}: shape {g.shape}, the framework's {e.shape}"
        g = g.reshape(e.shape)
        if k in exact or e.dtype.kind in "iub":
            bad = float(np.mean(g.astype(np.int64) != e.astype(np.int64))) if e.size else 0.0
            if bad > 0.01:
                return f"output {k}: {bad:.1%} of the labels differ"
            continue
        scale = float(np.max(np.abs(e))) if e.size else 0.0
        if not np.allclose(g.astype(np.float64), e, rtol=1e-3, atol=1e-4 * max(scale, 1.0)):
            diff = float(np.max(np.abs(g.astype(np.float64) - e)))
            return f"output {k}: max abs difference {diff:.3g} (largest value {scale:.3g})"
    return ""


def check_entry(cache: Path, entry: Entry, engine: str) -> str:
    """'' when onnxruntime (the exporter's own check) reproduces the framework's outputs, else what differs."""
    import onnxruntime as ort

    feeds, expected = load_entry(cache, entry)
    try:
        sess = ort.InferenceSession(str(cache / entry.model), providers=["CPUExecutionProvider"])
        got = sess.run(None, feeds)
    except Exception as e:
        return f"{engine} failed: {type(e).__name__}: {str(e)[:200]}"
    msg = compare(got, expected, entry.exact_outputs)
    return f"{engine}: {msg}" if msg else ""


def read_manifest(cache: Path) -> list[Entry]:
    path = cache / "manifest.json"
    if not path.exists():
        return []
    return [Entry(**e) for e in json.loads(path.read_text())]


def _write_manifest(cache: Path, entries: list[Entry]) -> None:
    tmp = cache / "manifest.tmp.json"
    tmp.write_text(json.dumps([asdict(e) for e in sorted(entries, key=lambda e: e.name)], indent=1))
    os.replace(tmp, cache / "manifest.json")


def ensure(
    cache: Path = DEFAULT_CACHE, names: Sequence[str] | None = None, *, force: bool = False, log: Any = sys.stderr
) -> list[Entry]:
    """Make the corpus entries whose name contains one of ``names`` (all by default) that are not cached yet;
    return the entries asked for. A recipe that fails to export is reported and skipped."""
    cache.mkdir(parents=True, exist_ok=True)
    have = {e.name: e for e in read_manifest(cache) if e.version == CORPUS_VERSION}
    # Exports that failed with these pinned versions are not tried again on every run (--force does).
    failed_path = cache / "failed.json"
    failed: dict[str, str] = {}
    if failed_path.exists() and not force:
        stored = json.loads(failed_path.read_text())
        failed = stored.get("failed", {}) if stored.get("version") == CORPUS_VERSION else {}

    def wanted(name: str) -> bool:
        return not names or any(n in name for n in names)

    def missing(name: str) -> bool:
        if name in failed:
            return False
        return wanted(name) and (force or name not in have or not (cache / have[name].model).exists())

    for recipe in TORCH_RECIPES:
        todo = [x for x in recipe.exporters if missing(f"{recipe.name}-{x}")]
        if not todo:
            continue
        t0 = time.perf_counter()
        try:
            for e in _export_torch(recipe, cache, todo, failed):
                have[e.name] = e
                print(f"made {e.name} ({time.perf_counter() - t0:.1f} s){' ' + e.note if e.note else ''}", file=log)
        except Exception as e:
            print(f"{recipe.name}: export failed: {type(e).__name__}: {str(e)[:300]}", file=log)
            if os.environ.get("CORPUS_TRACEBACK"):
                traceback.print_exc()
        _write_manifest(cache, list(have.values()))
        tmp = cache / "failed.tmp.json"
        tmp.write_text(json.dumps({"version": CORPUS_VERSION, "failed": failed}, indent=1))
        os.replace(tmp, failed_path)
    for name, why in sorted(failed.items()):
        if wanted(name):
            print(f"not in the corpus: {name} (export failed: {why})", file=log)
    tab = ["random_forest", "gradient_boosting", "lightgbm", "xgboost", "svm"]
    if any(missing(f"{t}-{r}") for t in tab for r in corpus_ml.ROWS):
        try:
            for e in _tabular(cache, missing):
                have[e.name] = e
                print(f"made {e.name}{' ' + e.note if e.note else ''}", file=log)
        except Exception as e:
            print(f"tabular: failed: {type(e).__name__}: {str(e)[:300]}", file=log)
        _write_manifest(cache, list(have.values()))
    if any(missing(n) for n in corpus_ml.names()):
        for e in corpus_ml.make(cache, missing, log):
            have[e.name] = e
        _write_manifest(cache, list(have.values()))
    return [e for e in have.values() if wanted(e.name)]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    ap.add_argument("--models", nargs="*", help="names (substrings) of the entries to make")
    ap.add_argument("--force", action="store_true", help="make them again even if cached")
    args = ap.parse_args(argv)
    entries = ensure(args.cache, args.models, force=args.force)
    for e in sorted(entries, key=lambda e: e.name):
        print(f"{e.name:32} {e.family:24} {e.exporter:12} {e.note or 'matches the framework'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
