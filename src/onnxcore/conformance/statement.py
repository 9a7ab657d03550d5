"""The conformance statement of Annex A, generated from the running code and a test-package run.

Every item of Table A.1 is produced here: identity and version, classes, profiles, IR versions, operator set
versions per domain, the operators not supported per operator set version, the tolerance achieved per element
type, the test-package result by version, the known divergences, the external data policy and the resource
limits. The output is deterministic for a given code and test package, so ``docs/conformance.md`` can be
checked for staleness.
"""

from __future__ import annotations

import dataclasses
import math
import platform
from collections.abc import Iterable
from functools import cache
from typing import Any

import onnxcore
from onnxcore.conformance.backend_runner import render_backend_runner_markdown
from onnxcore.conformance.compare import DEFAULT_ATOL, DEFAULT_RTOL
from onnxcore.conformance.contrib import contrib_section, render_contrib_markdown
from onnxcore.conformance.divergences import DIVERGENCES
from onnxcore.conformance.readings import render_readings_markdown
from onnxcore.conformance.runner import CaseResult
from onnxcore.defs import all_schemas, data_info, domain_versions, get_schema, known_domains
from onnxcore.defs.binding import canonical_domain, contrib_domains
from onnxcore.graph.bound import body_opsets, definition_binding
from onnxcore.kernels.select import select
from onnxcore.limits import DEFAULT_LIMITS, DERIVED_DEFAULTS
from onnxcore.proto.decoder import DECODE_BYTES_BASE, DECODE_BYTES_PER_OCTET
from onnxcore.types import ElementType

__all__ = ["build_statement", "render_markdown", "unsupported_operators", "is_supported"]

IR_VERSIONS = (1, 14)  # Clause 14.1.2: this edition specifies IR version 14.

# Operators that have a kernel but refuse some inputs rather than approximate (Clause 4.4): with EvaluationError
# when a node runs, or (Gradient) with UnsupportedOperatorError when the session is made.
LIMITATIONS: tuple[tuple[str, str], ...] = (
    (
        "ImageDecoder",
        "BMP, PNM, PNG, TIFF (uncompressed, LZW, Deflate, PackBits, JPEG), JPEG (baseline, extended, "
        "progressive Huffman), JPEG 2000 (JP2 and raw codestreams) and WebP (lossy, lossless, extended) "
        "decode exactly; animated WebP, arithmetic-coded, lossless, hierarchical and 12-bit JPEG, JPEG 2000 "
        "palettes and colour spaces other than grey and sRGB are refused naming the feature.",
    ),
    (
        "RegexFullMatch",
        "RE2's syntax matched in linear time by onnxcore's own matcher (onnxcore.libs.re2; tested against "
        "RE2); patterns RE2 refuses are refused, and so are Unicode classes (\\p, \\P) and \\C, which RE2 "
        "accepts.",
    ),
    (
        "Tokenizer (com.microsoft)",
        "its expressions are RE2's, searched leftmost-first in linear time by the same matcher (tested against "
        "RE2 and onnxruntime), with the same refusals; Python's re stands in only where it gives the same tokens "
        "in bounded time (a pattern whose backtracking onnxcore proves at most quadratic, on a short ASCII text).",
    ),
    (
        "Gradient (ai.onnx.preview.training)",
        "first-order reverse-mode differentiation of the graph that encloses the node; a y with more than one "
        "element is differentiated as the sum of its elements (a seed of ones), an xs tensor y does not depend "
        "on gets zeros; ties of Max/Min go to the first input, of MaxPool to the first element of the window, "
        "of ReduceMax/ReduceMin are shared equally. "
        "Refused when the session is made, naming the node: a node on the path without a differentiation "
        "rule (see onnxcore.runtime.gradient_rules), with subgraphs or itself a Gradient (higher order), an "
        "input that is neither computed from xs/zs nor a constant, a y not computed from xs/zs, integer xs.",
    ),
)

EXTERNAL_DATA_POLICY = (
    "External data (Clause 13) is supported for reading and writing. References are resolved at load against the "
    "directory of the model file, which is itself resolved once; below it every path component is opened with "
    "O_NOFOLLOW relative to its parent's descriptor, so a symbolic link anywhere is refused; absolute paths, "
    "parent-directory components and empty locations are refused; the file must be a regular file with exactly "
    "one hard link, and the descriptor opened is the one checked (no check-then-open race). Offset and length are "
    "validated against the file size before anything is mapped. Only the keys of Table 11 are accepted; a "
    "checksum (SHA-1 of the file) is verified before use. Reading outside the model directory needs the explicit "
    "allow_outside=True. load(..., external_data=False) leaves references unresolved (Clause 15.5). Contents are "
    "memory-mapped, never copied until used. See docs/external-data.md."
)


def _domain_label(domain: str) -> str:
    return domain or "ai.onnx"


@cache
def is_supported(domain: str, op_type: str, version: int) -> bool:
    """Whether a node (domain, op_type) in a model importing ``version`` of its domain can be evaluated.

    Supported means what a session would choose (:func:`onnxcore.kernels.select.select`, for the definition the
    graph layer binds): a kernel, or a static function body whose every node is itself supported under the
    body's imports (Clause 8.4, :func:`onnxcore.graph.body_opsets`). The statement claims the operators their
    domains define: a node of an ONNX domain that binds only to onnxruntime's extension of it (LayerNormalization
    importing ai.onnx 16) is evaluated by a session, but is no ONNX operator, so it is not counted here.

    Cached: the answer is read once per key (the registry is complete once loaded).
    """
    return _supported(canonical_domain(domain), op_type, version, ())


def _supported(domain: str, op_type: str, version: int, calling: tuple[tuple[str, str], ...]) -> bool:
    # ``calling``: the operators whose bodies are being checked, so a body that calls its own operator is refused.
    status, schema = definition_binding(domain, op_type, version)
    if schema is not None and schema.origin == "onnxruntime" and domain not in contrib_domains():
        return False  # onnxruntime's extension of an ONNX domain: outside the claim
    choice = select(domain, op_type, version, status, schema)
    if choice.rule != "body":
        return choice.evaluable
    assert schema is not None
    body = schema.function_body(version)
    assert body is not None
    opsets = body_opsets(body, {domain: version})
    inner = (*calling, (domain, op_type))
    for node in body.node:
        d = canonical_domain(node.domain)
        v = opsets.get(d)
        if v is None or (d, node.op_type) in inner or not _supported(d, node.op_type, v, inner):
            return False
    return True


def unsupported_operators(domain: str, version: int) -> list[str]:
    """Operators defined in ``version`` of ``domain`` that onnxcore cannot evaluate (Clause 4.4)."""

    names = sorted({s.name for s in all_schemas() if s.domain == domain and s.since_version <= version})
    out = []
    for name in names:
        if get_schema(name, version, domain) is None:
            continue
        if not is_supported(domain, name, version):
            out.append(name)
    return out


def _ceil_pow10(x: float) -> str:
    if x <= 0 or not math.isfinite(x):
        return "0" if x == 0 else "inf"
    return f"1e{math.ceil(math.log10(x)):+03d}"


def _element_type_name(dtype: str) -> str:

    try:
        return ElementType.from_dtype(dtype).name
    except (ValueError, TypeError):
        return dtype


def _tolerances(results: Iterable[CaseResult]) -> dict[str, dict[str, Any]]:
    table: dict[str, dict[str, Any]] = {}
    for r in results:
        if r.status != "pass" or r.detail.startswith("non-deterministic"):
            continue
        for dtype, (max_abs, max_rel) in r.errors_by_dtype.items():
            acc = table.setdefault(_element_type_name(dtype), {"cases": 0, "max_abs": 0.0, "max_rel": 0.0})
            acc["cases"] += 1
            acc["max_abs"] = max(acc["max_abs"], max_abs)
            acc["max_rel"] = max(acc["max_rel"], max_rel)
    recomputed: dict[str, list[float]] = {}
    counts: dict[str, int] = {}
    for r in results:
        if r.status != "pass":
            continue
        for dtype, vals in r.recomputed_by_dtype.items():
            worst = recomputed.setdefault(dtype, [0.0, 0.0, 0.0, 0.0])
            for j, x in enumerate(vals):
                worst[j] = max(worst[j], x)
            counts[dtype] = counts.get(dtype, 0) + 1
    out: dict[str, dict[str, Any]] = {}
    for k, v in sorted(table.items()):
        row: dict[str, Any] = {
            "cases": v["cases"],
            "max_abs_at_most": _ceil_pow10(v["max_abs"]),
            "max_rel_at_most": _ceil_pow10(v["max_rel"]),
        }
        if k in recomputed:
            _ours_abs, ours_rel, _exp_abs, exp_rel = recomputed[k]
            row["float64_recomputed"] = {
                "cases": counts[k],
                "ours_max_rel_at_most": _ceil_pow10(ours_rel),
                "expected_max_rel_at_most": _ceil_pow10(exp_rel),
            }
        out[k] = row
    return out


def _results_by_version(results: Iterable[CaseResult]) -> dict[str, dict[str, int]]:
    table: dict[int, dict[str, int]] = {}
    for r in results:
        row = table.setdefault(r.opset, {"pass": 0, "fail": 0, "error": 0, "unsupported": 0})
        row[r.status] = row.get(r.status, 0) + 1
    return {str(k): v for k, v in sorted(table.items())}


def _compress(per_version: list[tuple[int, list[str]]]) -> list[dict[str, Any]]:
    """Merge consecutive versions with the same list into ranges."""
    out: list[dict[str, Any]] = []
    for v, ops in per_version:
        if out and out[-1]["operators"] == ops and out[-1]["to"] == v - 1:
            out[-1]["to"] = v
        else:
            out.append({"from": v, "to": v, "operators": ops})
    return out


def build_statement(results: list[CaseResult], *, package: str = "ONNX 1-3 node test vectors") -> dict[str, Any]:
    """The statement as a JSON-ready dict (Table A.1)."""

    domains = []
    for d in known_domains():
        rng = domain_versions(d)
        if rng is None:
            continue
        lo, hi = rng
        per_version = [(v, unsupported_operators(d, v)) for v in range(lo, hi + 1)]
        domains.append(
            {
                "domain": _domain_label(d),
                "opset_versions": [lo, hi],
                "unsupported_by_version": _compress(per_version),
            }
        )
    counts = {s: sum(1 for r in results if r.status == s) for s in ("pass", "fail", "error", "unsupported")}
    limits = {
        f.name: DERIVED_DEFAULTS.get(f.name, getattr(DEFAULT_LIMITS, f.name))
        for f in dataclasses.fields(DEFAULT_LIMITS)
    }
    limits["decode_memory"] = (
        f"{DECODE_BYTES_PER_OCTET} x input octets + {DECODE_BYTES_BASE >> 20} MiB (the objects decoding builds; "
        "lifted with max_messages)"
    )
    info = data_info()
    return {
        "identity": {
            "implementation": "onnxcore",
            "version": onnxcore.__version__,
            "operator_definitions": f"ONNX 1-2 as published in onnx {info.get('onnx_version', '?')}",
            "python": ".".join(platform.python_version_tuple()[:2]),
        },
        "conformance_classes": ["Producer", "Validating consumer", "Evaluating consumer"],
        "conformance_profiles": "none (Clause 4.3 defines no profile yet)",
        "ir_versions": {"read": list(IR_VERSIONS), "write": list(IR_VERSIONS)},
        "operator_sets": domains,
        "tolerances": {
            "criterion": {"rtol": DEFAULT_RTOL, "atol": DEFAULT_ATOL},
            "rule": "|actual - expected| <= atol + rtol * |expected| element-wise; NaN equals NaN; infinities must "
            "match in sign; integer, bool and string types exactly. For bfloat16 and the 8-bit and narrower float "
            "types rtol is raised to twice the type's epsilon (two ulps: bfloat16 2^-6, float8e4m3 2^-2, "
            "float8e5m2 2^-1, float4e2m1 1), since the expected values are themselves rounded to the type; "
            "float16 keeps rtol 1e-3 (about one ulp). Float16 and bfloat16 inputs of "
            "the NN operators compute in float32 and round once.",
            "special_values": "Max and Min propagate NaN (IEEE 754-2019 maximum/minimum, Clause 11.3).",
            "reassociation": "Clause 11.4: float32/float64 sums over consecutive axes of tensors of 16,384 "
            "elements or more are BLAS products with a vector of ones (sums of squares an einsum), not numpy's "
            "pairwise sum; matrix products use the BLAS blocked order. At plan time (never with "
            "intermediates=True) constant subgraphs are folded, and the per-channel steps after a Conv "
            "(inference BatchNormalization, Mul and Add by constants) are composed in float64 into its weights "
            "and bias, chains of such steps elsewhere into one multiply-add, each rounded once to the type; "
            "such a chain ending in Relu before an unpadded Conv becomes relu(a x + b) = |a| max(sign(a) x, "
            "-b/|a|) + b per channel, |a| and b folded into the Conv, so clamped elements cancel to within "
            "rounding of the weights times b. Float32 3x3 stride-1 Conv layers of at least 64 input channels, 16 "
            "output channels and 36 output blocks run as Winograd F(4x4, 3x3) (points 0, 1, -1, 2, -2, "
            "infinity): error about 1e-5 of the layer's largest output (direct: 5e-7); a result holding an "
            "infinity or NaN is recomputed directly. An AveragePool that keeps the image size followed by a 1x1 "
            "Conv that narrows the channels runs projection first (avgpool(W x) + b, equal to W avgpool(x) + b "
            "in real arithmetic): each output is the same sums taken in another order. A 2-D Conv's path (the "
            "kernel's channels-first columns or flat layout, channels-last columns, the compiled depthwise loops) "
            "is chosen per layer shape by timing the candidates on the shape's first run, the choice kept for the "
            "process: each computes the same sums in another order.",
            "achieved_by_element_type": _tolerances(results),
        },
        "test_package": {
            "package": package,
            "cases": len(results),
            "totals": counts,
            "by_opset_version": _results_by_version(results),
        },
        "limitations": dict(LIMITATIONS),
        "known_divergences": [{"clause": c, "gap": g, "position": p} for c, g, p in DIVERGENCES],
        "onnxruntime_operators": contrib_section(),
        "external_data_policy": EXTERNAL_DATA_POLICY,
        "resource_limits": limits,
    }


def render_markdown(st: dict[str, Any]) -> str:
    """The statement as Markdown (committed as docs/conformance.md)."""
    ident = st["identity"]
    lines = [
        "# Conformance statement (ONNX Part 1, Annex A)",
        "",
        "Generated by `onnxcore statement --markdown` from the running code and a fresh run of the test package; "
        "do not edit by hand (tests/conformance/test_statement.py fails when it is stale).",
        "",
        "## Identity and version",
        "",
        f"- Implementation: {ident['implementation']} {ident['version']} (Python {ident['python']})",
        f"- Operator definitions: {ident['operator_definitions']}",
        "",
        "## Conformance classes claimed (Clause 4.2)",
        "",
        *[f"- {c}" for c in st["conformance_classes"]],
        "",
        "## Conformance profiles claimed (Clause 4.3)",
        "",
        f"- {st['conformance_profiles']}",
        "",
        "## IR versions supported",
        "",
        f"- Read and validate: {st['ir_versions']['read'][0]} to {st['ir_versions']['read'][1]}",
        f"- Write: {st['ir_versions']['write'][0]} to {st['ir_versions']['write'][1]} (the version the model states)",
        "",
        "## Operator set versions supported, per domain",
        "",
        "| domain | versions accepted |",
        "|---|---|",
    ]
    for d in st["operator_sets"]:
        lo, hi = d["opset_versions"]
        lines.append(f"| {d['domain']} | {lo} to {hi} |")
    lines += ["", "## Operators not supported, per operator set version (Clause 4.4)", ""]
    for d in st["operator_sets"]:
        lines.append(f"### {d['domain']}")
        lines.append("")
        for r in d["unsupported_by_version"]:
            span = f"{r['from']}" if r["from"] == r["to"] else f"{r['from']} to {r['to']}"
            ops = ", ".join(r["operators"]) if r["operators"] else "(none: every operator is supported)"
            lines.append(f"- version {span} ({len(r['operators'])}): {ops}")
        lines.append("")
    tol = st["tolerances"]
    lines += [
        "## Numerical tolerance achieved, per element type (Clause 11.5)",
        "",
        f"Criterion: rtol {tol['criterion']['rtol']}, atol {tol['criterion']['atol']}. {tol['rule']}",
        "",
        f"Special values: {tol['special_values']}",
        "",
        f"Reassociation: {tol['reassociation']}",
        "",
        "Largest error over the passing cases, as an upper bound (power of ten):",
        "",
        "| element type | cases | max absolute error | max relative error |",
        "|---|---:|---:|---:|",
    ]
    for k, v in tol["achieved_by_element_type"].items():
        lines.append(f"| {k} | {v['cases']} | <= {v['max_abs_at_most']} | <= {v['max_rel_at_most']} |")
    lines += [
        "",
        "The expected values of narrow float types are themselves rounded, so those cases are also evaluated with",
        "every narrow float widened to DOUBLE (conformance/recompute.py; conversions excluded), and both our result",
        "and the expected values are compared with that re-computation (largest relative error, power of ten):",
        "",
        "| element type | cases re-computed | ours vs float64 | expected vs float64 |",
        "|---|---:|---:|---:|",
    ]
    for k, v in tol["achieved_by_element_type"].items():
        rc = v.get("float64_recomputed")
        if rc:
            lines.append(
                f"| {k} | {rc['cases']} | <= {rc['ours_max_rel_at_most']} | <= {rc['expected_max_rel_at_most']} |"
            )
    tp = st["test_package"]
    t = tp["totals"]
    lines += [
        "",
        "## Result of the test package (ONNX 1-3), by version",
        "",
        f"{tp['package']}: {tp['cases']} cases, {t['pass']} passed, {t['fail']} failed, {t['error']} errors, "
        f"{t['unsupported']} unsupported.",
        "",
        "| opset version of the case | pass | fail | error | unsupported |",
        "|---:|---:|---:|---:|---:|",
    ]
    for v, row in tp["by_opset_version"].items():
        lines.append(f"| {v} | {row['pass']} | {row['fail']} | {row['error']} | {row['unsupported']} |")
    lines += ["", "Opset version 0: cases importing no version of the default domain (other domains only)."]
    lines += ["", "## Operators supported with limitations", ""]
    lines += [f"- {op}: {what}" for op, what in st["limitations"].items()]
    lines += ["", "## Known divergences from ONNX Part 1", "", "| clause | gap | position taken |", "|---|---|---|"]
    for d in st["known_divergences"]:
        lines.append(f"| {d['clause']} | {d['gap']} | {d['position']} |")
    lines += ["", *render_readings_markdown()]
    lines += ["", *render_contrib_markdown(st["onnxruntime_operators"])]
    lines += ["## External data handling policy", "", st["external_data_policy"], ""]
    lines += ["## Resource limits (Clause 15.4)", "", "| limit | default |", "|---|---:|"]
    for k, v in st["resource_limits"].items():
        lines.append(f"| {k} | {v if v is not None else 'unlimited'} |")
    lines += ["", *render_backend_runner_markdown()]
    return "\n".join(lines)
