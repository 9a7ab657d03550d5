"""The textual syntax against onnx's printer and parser on every model of the ONNX 1-3 vectors and the wheel's zoo.

For each model ``m``: our text is onnx's text character for character (:data:`PRINT_DIFFERENCES` lists the
reasoned exceptions); onnx's parser reads our text to the model it reads from its own; our parser reads onnx's
text to the model onnx's parser makes (field for field, presence included); and ours -> ours is a fixed point.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import corpus
import onnx
import onnx.parser
import onnx.printer
import pytest

from onnxcore.proto.bridge import from_onnx
from onnxcore.text import parse_model, to_text

# case name -> why our text differs from onnx.printer's (none in this corpus; see test_text_syntax.py for the
# constructs where ours deliberately differs).
PRINT_DIFFERENCES: dict[str, str] = {}


def _models() -> list[tuple[str, Path]]:
    nodes = [(d.name, d / "model.onnx") for d in corpus.node_case_dirs()]
    shipped = [(p.parent.name if p.name == "model.onnx" else p.stem, p) for p in corpus.shipped_models()]
    return nodes + shipped


@dataclass
class Results:
    """What one pass over the corpus found: counts, and the models failing each check by name."""

    models: int = 0
    identical: int = 0
    failures: dict[str, list[str]] = field(
        default_factory=lambda: {"print": [], "onnx_reads_ours": [], "we_read_onnx": [], "fixed_point": []}
    )


@pytest.fixture(scope="module")
def results() -> Results:
    """Every check over the whole corpus at once (one pass keeps the suite quick)."""
    r = Results()
    for name, path in _models():
        m = onnx.load(str(path), load_external_data=False)
        r.models += 1
        theirs = onnx.printer.to_text(m)
        ours = to_text(from_onnx(m))
        if ours == theirs:
            r.identical += 1
        elif name not in PRINT_DIFFERENCES:
            r.failures["print"].append(name)
        ref = onnx.parser.parse_model(theirs)
        if onnx.parser.parse_model(ours).SerializeToString() != ref.SerializeToString():
            r.failures["onnx_reads_ours"].append(name)
        parsed = parse_model(theirs)
        if parsed != from_onnx(ref):
            r.failures["we_read_onnx"].append(name)
        again = to_text(parsed)
        if again != ours or parse_model(again) != parsed:
            r.failures["fixed_point"].append(name)
    return r


def test_the_corpus_is_there(results: Results) -> None:
    assert results.models > 2000
    assert results.identical == results.models - len(PRINT_DIFFERENCES)


@pytest.mark.parametrize("check", ["print", "onnx_reads_ours", "we_read_onnx", "fixed_point"])
def test_check_holds_on_every_model(results: Results, check: str) -> None:
    failed = results.failures[check]
    assert not failed, f"{len(failed)} models: {failed[:10]}"
