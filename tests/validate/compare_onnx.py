"""Generate the tables of docs/validation.md: the rule catalogue, the Annex B divergences, and what
``onnx.checker.check_model(full_check=True)`` catches of the mutation suite, found by running it.

Run ``python tests/check/compare_onnx.py`` to rewrite the generated sections of the document (between
the ``<!-- name:begin -->`` and ``<!-- name:end -->`` markers); ``test_docs.py`` fails when they are stale.
"""

from __future__ import annotations

import re
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import mutants

import onnxcore
from onnxcore.validate import CHECK_RULES, check
from onnxcore.validate.rules_proto import DIVERGENCES

DOC = Path(__file__).resolve().parents[2] / "docs" / "validation.md"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def rule_table() -> str:
    lines = ["| Code | Severity | Clause | Detects |", "|---|---|---|---|"]
    for r in CHECK_RULES:
        lines.append(f"| `{r.code}` | {r.severity} | {r.clause} | {_cell(r.summary)} |")
    return "\n".join(lines)


def divergence_table() -> str:
    lines = ["| Annex B item | Our reading |", "|---|---|"]
    for (msg, field), why in DIVERGENCES.items():
        lines.append(f"| `{msg}.{field}` | {_cell(why)} |")
    return "\n".join(lines)


def onnx_verdict(m: mutants.Mutant) -> str:
    """What onnx does with the mutant: ``caught: <first words>``, ``missed`` or ``n/a: <why>``."""
    import onnx

    if not m.encodable:
        return "n/a: not encodable (a graph holding itself exists only in memory)"
    built = m.build()
    data = built if isinstance(built, bytes) else onnxcore.encode(built)
    try:
        model = onnx.load_from_string(data)
    except Exception as e:
        return f"caught on load: {type(e).__name__}"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            onnx.checker.check_model(model, full_check=True)
    except Exception as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        first = re.sub(r"\s+", " ", first)
        return f"caught: {first[:90]}"
    return "missed"


def comparison_rows() -> list[tuple[str, str, str, str, str]]:
    rows = []
    for m in mutants.MUTANTS:
        report = check(m.build(), limits=m.limits)
        ours = "yes" if any(f.code == m.code for f in report.findings) else "NO"
        rows.append((m.code, m.clause, m.what, ours, onnx_verdict(m)))
    return rows


def comparison_table() -> str:
    rows = comparison_rows()
    caught = sum(1 for r in rows if r[4].startswith("caught"))
    lines = [
        f"onnx {__import__('onnx').__version__}: `onnx.checker.check_model(model, full_check=True)` raises on "
        f"{caught} of the {len(rows)} mutants; onnxcore reports {sum(1 for r in rows if r[3] == 'yes')}.",
        "",
        "| Rule | Clause | Mutant | onnxcore | onnx.checker (full_check=True) |",
        "|---|---|---|---|---|",
    ]
    for code, clause, what, ours, theirs in rows:
        lines.append(f"| `{code}` | {clause} | {_cell(what)} | {ours} | {_cell(theirs)} |")
    return "\n".join(lines)


SECTIONS = {"rules": rule_table, "divergences": divergence_table, "onnx-comparison": comparison_table}


def render(text: str) -> str:
    """``text`` with every generated section replaced by its current content."""
    for name, fn in SECTIONS.items():
        begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
        a, b = text.index(begin) + len(begin), text.index(end)
        text = text[:a] + "\n" + fn() + "\n" + text[b:]
    return text


def main() -> None:
    DOC.write_text(render(DOC.read_text(encoding="utf-8")), encoding="utf-8")
    print(f"wrote {DOC}")


if __name__ == "__main__":
    main()
