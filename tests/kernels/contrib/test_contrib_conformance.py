"""The conformance statement's section on onnxruntime's operators: generated from the kernel registry, every
implemented operator with a record of how it is tested, and docs/conformance.md current."""

from __future__ import annotations

from pathlib import Path

from onnxcore.conformance.contrib import TESTED, contrib_section, render_contrib_markdown
from onnxcore.conformance.statement import is_supported, unsupported_operators
from onnxcore.defs import all_schemas, contrib_domains, known_domains
from onnxcore.kernels.registry import registered

DOC = Path(__file__).resolve().parents[3] / "docs" / "conformance.md"


def test_every_implemented_onnxruntime_operator_records_its_test() -> None:
    section = contrib_section()
    missing = [f"{r['domain']}::{r['operator']}" for r in section["implemented"] if r["tested"] == "not recorded"]
    assert missing == [], "add each to onnxcore.conformance.contrib.TESTED with how its test checks it"
    implemented = {(r["domain"].replace("ai.onnx", ""), r["operator"]) for r in section["implemented"]}
    assert set(TESTED) <= implemented, "TESTED names an operator without a kernel"


def test_the_section_follows_the_registry() -> None:
    section = contrib_section()
    ort_ops = {(s.domain, s.name) for s in all_schemas(origin="onnxruntime")}
    ours = {(k.domain, k.op_type) for k in registered() if k.domain in contrib_domains()}
    assert ours <= ort_ops
    listed = {r["operator"] for r in section["implemented"] if r["domain"] == "com.microsoft"}
    assert listed == {op for _, op in ours}
    assert "Tokenizer" in listed


def test_docs_hold_the_current_section() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert "\n".join(render_contrib_markdown(contrib_section())) in text, (
        "docs/conformance.md is stale: regenerate it with `onnxcore statement --markdown "
        "--package .cache/onnx-1.23.2/node --output docs/conformance.md`"
    )


def test_the_onnx_claim_is_unchanged() -> None:
    # onnxruntime's default-domain kernels (LayerNormalization-1...) add nothing to the ai.onnx claim
    assert "com.microsoft" not in known_domains()
    # (a kernel exists for LayerNormalization-1, but ai.onnx 16 has no LayerNormalization)
    assert not is_supported("", "LayerNormalization", 16)
    assert is_supported("", "LayerNormalization", 17)
    assert not is_supported("", "SimplifiedLayerNormalization", 21)
    assert "LayerNormalization" not in unsupported_operators("", 17)
