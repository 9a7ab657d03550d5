"""The conformance statement's section on onnxruntime's operators: ``com.microsoft`` and onnxruntime's extensions of
the default domain. They are not part of ONNX 1-2, so this section stands apart from the claim of Annex A.

What is implemented is read from the kernel registry (a kernel for the definition's since_version); how each
implemented operator is tested is recorded here, in :data:`TESTED`, next to the tests that do it
(tests/kernels/contrib; a test fails when an implemented operator has no record).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from onnxcore.defs import all_schemas, contrib_info
from onnxcore.kernels.registry import lookup

__all__ = ["ONNXRUNTIME", "FORMULA", "TESTED", "contrib_section", "render_contrib_markdown"]

ONNXRUNTIME = "against onnxruntime"
FORMULA = "against the formula of onnxruntime's documentation (onnxruntime has a CUDA kernel only)"

# (domain, operator) -> how the kernel is tested. "" is the default domain (onnxruntime's extensions of it).
TESTED: Mapping[tuple[str, str], str] = {
    ("com.microsoft", "Tokenizer"): ONNXRUNTIME + "; scikit-learn text pipelines converted by skl2onnx",
    ("com.microsoft", "MurmurHash3"): ONNXRUNTIME + "; scikit-learn's murmurhash3_32 and FeatureHasher (skl2onnx)",
    ("com.microsoft", "Gelu"): ONNXRUNTIME,
    ("com.microsoft", "FastGelu"): ONNXRUNTIME,
    ("com.microsoft", "BiasGelu"): ONNXRUNTIME,
    ("com.microsoft", "QuickGelu"): ONNXRUNTIME,
    ("com.microsoft", "BiasAdd"): FORMULA,
    ("com.microsoft", "BiasSoftmax"): FORMULA,
    ("com.microsoft", "CDist"): ONNXRUNTIME,
    ("com.microsoft", "SkipLayerNormalization"): ONNXRUNTIME,
    ("com.microsoft", "SkipSimplifiedLayerNormalization"): ONNXRUNTIME,
    ("com.microsoft", "EmbedLayerNormalization"): ONNXRUNTIME,
    ("com.microsoft", "Attention"): ONNXRUNTIME + "; BERT and GPT-2 fused by onnxruntime's transformer optimizer",
    ("com.microsoft", "MultiHeadAttention"): ONNXRUNTIME
    + " (packed QKV/KV, which its CPU kernel refuses: against the same attention on separate Q, K, V)",
    ("com.microsoft", "GroupQueryAttention"): ONNXRUNTIME + " (prompts and KV-cache decoding steps)",
    ("com.microsoft", "RotaryEmbedding"): ONNXRUNTIME,
    ("", "SimplifiedLayerNormalization"): ONNXRUNTIME,
    ("", "LayerNormalization"): ONNXRUNTIME,
    ("com.microsoft", "QLinearAdd"): ONNXRUNTIME + "; onnxruntime.quantization quantize_static models",
    ("com.microsoft", "QLinearMul"): ONNXRUNTIME + "; onnxruntime.quantization quantize_static models",
    ("com.microsoft", "QLinearSigmoid"): ONNXRUNTIME + "; onnxruntime.quantization quantize_static models",
    ("com.microsoft", "QLinearLeakyRelu"): ONNXRUNTIME + "; onnxruntime.quantization quantize_static models",
    ("com.microsoft", "QLinearConcat"): ONNXRUNTIME + "; onnxruntime.quantization quantize_static models",
    ("com.microsoft", "QLinearGlobalAveragePool"): ONNXRUNTIME + "; onnxruntime.quantization quantize_static models",
    ("com.microsoft", "QLinearAveragePool"): ONNXRUNTIME + "; onnxruntime.quantization quantize_static models",
    ("com.microsoft", "QLinearSoftmax"): ONNXRUNTIME + "; onnxruntime.quantization quantize_static models",
    ("com.microsoft", "QLinearConv"): ONNXRUNTIME + "; onnxruntime.quantization quantize_static models",
    ("com.microsoft", "QGemm"): ONNXRUNTIME + "; onnxruntime.quantization quantize_static models",
    ("com.microsoft", "QuantizeLinear"): ONNXRUNTIME,
    ("com.microsoft", "DequantizeLinear"): ONNXRUNTIME,
    ("com.microsoft", "DynamicQuantizeMatMul"): ONNXRUNTIME
    + "; quantize_dynamic models saved by onnxruntime (extended)",
    ("com.microsoft", "MatMulIntegerToFloat"): ONNXRUNTIME
    + "; quantize_dynamic models saved by onnxruntime (extended)",
    ("com.microsoft", "FusedConv"): ONNXRUNTIME + "; models saved by onnxruntime (basic, extended)",
    ("com.microsoft", "FusedGemm"): ONNXRUNTIME + "; models saved by onnxruntime (basic, extended)",
    ("com.microsoft", "FusedMatMul"): ONNXRUNTIME + "; models saved by onnxruntime (basic, extended)",
    (
        "com.microsoft",
        "NhwcConv",
    ): "against onnxruntime's Conv/FusedConv on transposed inputs (onnxruntime has no CPU kernel)",
    (
        "com.microsoft",
        "NhwcFusedConv",
    ): "against onnxruntime's Conv/FusedConv on transposed inputs (onnxruntime has no CPU kernel)",
    ("com.microsoft", "MatMulNBits"): ONNXRUNTIME + "; decoders quantized by MatMulNBitsQuantizer (2, 4, 8 bits)",
}


def contrib_section() -> dict[str, Any]:
    """The section as a JSON-ready dict: provenance, the implemented operators with how each is tested, and the
    operators defined but not implemented, per domain."""
    implemented: list[dict[str, Any]] = []
    missing: dict[str, list[str]] = {}
    for s in all_schemas(origin="onnxruntime"):
        domain = s.domain or "ai.onnx"
        if lookup(s.domain, s.name, s.since_version) is not None:
            implemented.append(
                {
                    "domain": domain,
                    "operator": s.name,
                    "since_version": s.since_version,
                    "tested": TESTED.get((s.domain, s.name), "not recorded"),
                }
            )
        else:
            missing.setdefault(domain, []).append(f"{s.name}-{s.since_version}")
    return {
        "definitions": f"onnxruntime {contrib_info().get('onnxruntime_version', '?')}",
        "implemented": implemented,
        "not_implemented": dict(sorted(missing.items())),
    }


def render_contrib_markdown(section: dict[str, Any]) -> list[str]:
    """The section's Markdown lines (a part of docs/conformance.md)."""
    lines = [
        "## onnxruntime's operators (outside the ONNX 1-2 claim)",
        "",
        f"Definitions as onnxruntime states them ({section['definitions']}; tools/gen_contrib_defs.py): the "
        "com.microsoft domain, and onnxruntime's extensions of ai.onnx (operators or versions ONNX 1-2 does not "
        "define there; the validator warns W-ORT-EXTENSION). Nodes bound to them are validated like standard ones; "
        "an operator of com.microsoft onnxruntime does not define is W-ORT-UNDEFINED. Where a definition leaves "
        "something open, onnxruntime's behaviour is taken (listed in each kernel module of onnxcore.kernels.contrib).",
        "",
        f"Implemented ({len(section['implemented'])}):",
        "",
        "| domain | operator | since version | tested |",
        "|---|---|---:|---|",
    ]
    for r in section["implemented"]:
        lines.append(f"| {r['domain']} | {r['operator']} | {r['since_version']} | {r['tested']} |")
    lines.append("")
    for domain, ops in section["not_implemented"].items():
        lines.append(f"Defined, not implemented in {domain} ({len(ops)}): {', '.join(ops)}")
        lines.append("")
    return lines
