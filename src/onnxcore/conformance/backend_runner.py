"""The section of the conformance statement on onnx's backend test runner (``onnx.backend.test.BackendTest``) run
against :mod:`onnxcore.backend`: its counts, as tests/runtime/test_backend.py runs the runner (that test checks
that these counts are the runner's: the cases it collects, and the exclusions it lists)."""

from __future__ import annotations

__all__ = ["BACKEND_RUNNER_CASES", "BACKEND_RUNNER_EXCLUDED", "render_backend_runner_markdown"]

BACKEND_RUNNER_CASES: dict[str, int] = {
    "node": 1884,
    "simple": 23,
    "pytorch-converted": 82,
    "pytorch-operator": 35,
}
"""Cases of the runner on the CPU device, by the kind of test data (onnx 1.23.2)."""

BACKEND_RUNNER_EXCLUDED: dict[str, tuple[int, str]] = {
    "node": (
        8,
        "six Bernoulli cases (Clause 8.5: random draws are not specified), one float16 attention case (Clause 11: "
        "the vector's step-by-step float16 rounding, 2 ulps off in 2 of 192 elements) and test_loop16_seq_none "
        "(the runner cannot compare a sequence holding a 0-d tensor; the output equals the vector's, tested "
        "separately)",
    ),
}
"""Excluded cases by kind: how many, and why."""


def render_backend_runner_markdown() -> list[str]:
    """The statement's section on onnx's backend test runner, as Markdown lines."""
    lines = [
        "## onnx's backend test runner",
        "",
        "onnx's own runner (`onnx.backend.test.BackendTest`) with `onnxcore.backend` as its backend, on the CPU "
        "device (the real models, which it downloads, left out); every case not excluded passes.",
        "",
        "| test data | cases | passed | excluded |",
        "|---|---:|---:|---:|",
    ]
    for kind, cases in BACKEND_RUNNER_CASES.items():
        excluded = BACKEND_RUNNER_EXCLUDED.get(kind, (0, ""))[0]
        lines.append(f"| {kind} | {cases} | {cases - excluded} | {excluded} |")
    lines.append("")
    lines += [f"Excluded ({kind}): {why}." for kind, (_n, why) in BACKEND_RUNNER_EXCLUDED.items()]
    lines.append("")
    return lines
