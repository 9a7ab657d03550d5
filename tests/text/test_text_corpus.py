"""The textual syntax against onnx's printer and parser on every model of the ONNX 1-3 vectors and the wheel's zoo.

For each model ``m``: our text is onnx's text character for character (:data:`PRINT_DIFFERENCES` lists the
reasoned exceptions); onnx's parser reads our text to the model it reads from its own; our parser reads onnx's
text to the model onnx's parser makes (field for field, presence included); ours -> ours is a fixed point; and
reading our text gives ``m`` back, field for field, but for the presence of default values (the syntax cannot
carry it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import corpus
import onnx
import onnx.parser
import onnx.printer
import pytest

from onnxcore.proto import Message, TensorProto
from onnxcore.proto.bridge import from_onnx
from onnxcore.proto.message import copy_message
from onnxcore.text import parse_model, to_text
from onnxcore.types import to_array

M = TypeVar("M", bound=Message)
_TYPED_FIELD = {TensorProto.FLOAT: "float_data", TensorProto.DOUBLE: "double_data", TensorProto.INT64: "int64_data"}
CHECKS = ("print", "onnx_reads_ours", "we_read_onnx", "fixed_point", "round_trip")

# case name -> why our text differs from onnx.printer's (none in this corpus; see test_text_syntax.py for the
# constructs where ours deliberately differs).
PRINT_DIFFERENCES: dict[str, str] = {}


def _models() -> list[tuple[str, Path]]:
    nodes = [(d.name, d / "model.onnx") for d in corpus.node_case_dirs()]
    shipped = [(p.parent.name if p.name == "model.onnx" else p.stem, p) for p in corpus.shipped_models()]
    return nodes + shipped


def _defaults_absent(msg: M) -> M:
    """A copy of ``msg`` with every scalar field holding its default made absent, all the way down.

    The syntax cannot say whether a default was present: onnx's parser (so ours) makes a node's empty domain
    and a tensor constant's empty name present. Nor does it say how values were encoded: ``raw_data`` becomes
    the typed field. Everything else must come back as it was.
    """
    out = copy_message(msg)
    stack: list[Message] = [out]
    while stack:
        m = stack.pop()
        if isinstance(m, TensorProto) and m.has("raw_data"):
            # The syntax writes values, not their encoding: raw octets read back as the typed field.
            setattr(m, _TYPED_FIELD[m.data_type], to_array(m).ravel().tolist())
            m.clear_field("raw_data")
        for f in m._SPEC.fields:
            v = getattr(m, f.name)
            if f.kind == "message":
                stack.extend(v if f.repeated else [v] if v is not None else [])
            elif not f.repeated and not isinstance(v, float) and v == f.default:
                m.clear_field(f.name)
    return out


@dataclass
class Results:
    """What one pass over the corpus found: counts, and the models failing each check by name."""

    models: int = 0
    identical: int = 0
    failures: dict[str, list[str]] = field(default_factory=lambda: {check: [] for check in CHECKS})


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
        original = from_onnx(m)
        if _defaults_absent(parse_model(ours)) != _defaults_absent(original):
            r.failures["round_trip"].append(name)
    return r


def test_the_corpus_is_there(results: Results) -> None:
    assert results.models > 2000
    assert results.identical == results.models - len(PRINT_DIFFERENCES)


@pytest.mark.parametrize("check", CHECKS)
def test_check_holds_on_every_model(results: Results, check: str) -> None:
    failed = results.failures[check]
    assert not failed, f"{len(failed)} models: {failed[:10]}"
