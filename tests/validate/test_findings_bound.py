"""One rule lists at most MAX_FINDINGS_PER_RULE findings (Clause 15.4): a file of many empty entries is checked in
bounded time, and the report still says the rule was broken and that more findings were left out."""

from __future__ import annotations

import onnxcore
from onnxcore.validate.checker import MAX_FINDINGS_PER_RULE


def _model_with_opset_entries(count: int) -> bytes:
    # ModelProto: ir_version 7, a graph with nothing, then `count` empty opset_import entries (field 8, two octets
    # each), which carry no version: each breaks a mandatory-field rule.
    return b"\x08\x07" + b"\x3a\x00" + b"\x42\x00" * count


def test_a_rule_lists_a_bounded_number_of_findings() -> None:
    count = MAX_FINDINGS_PER_RULE + 2_000
    report = onnxcore.check(_model_with_opset_entries(count))
    by_code: dict[str, list[onnxcore.Finding]] = {}
    for f in report.findings:
        by_code.setdefault(f.code, []).append(f)
    assert report.errors
    assert not any(f.code == "E-INTERNAL" for f in report.findings)
    # Before the bound every entry had its finding (12,000 of one code); now the rule stops after the bound.
    assert max(len(v) for v in by_code.values()) == MAX_FINDINGS_PER_RULE + 1
    capped = [v for v in by_code.values() if len(v) == MAX_FINDINGS_PER_RULE + 1]
    assert all("not listed" in v[-1].message for v in capped)


def test_below_the_bound_every_finding_is_listed() -> None:
    report = onnxcore.check(_model_with_opset_entries(50))
    counts: dict[str, int] = {}
    for f in report.findings:
        counts[f.code] = counts.get(f.code, 0) + 1
    assert max(counts.values()) >= 50
    assert not any("not listed" in f.message for f in report.findings)
