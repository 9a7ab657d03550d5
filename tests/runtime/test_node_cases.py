"""The ONNX 1-3 node test vectors, evaluated through :class:`onnxcore.Session`.

Every case is one test (by case name). A case whose operators (after function expansion) are not
all supported is skipped with "operator not yet implemented" (Clause 4.4: the session refuses it
at construction). A failing case listed in ``expected_failures.txt`` is an xfail with the reason
given there; a listed case that passes fails the run (strict), so the list only shrinks.
Tolerance: rtol 1e-3 (2**-6 for bfloat16 outputs), atol 1e-7, NaN equal to NaN, exact for
integers, booleans and strings (the onnx harness's convention; Clause 11.5).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import corpus
import pytest
from runtime.node_harness import assert_close

import onnxcore
from onnxcore import UnsupportedOperatorError

HERE = Path(__file__).resolve().parent
_EXPECTED_FILE = HERE / "expected_failures.txt"


def _expected_failures() -> dict[str, str]:
    out: dict[str, str] = {}
    if not _EXPECTED_FILE.exists():
        return out
    for line in _EXPECTED_FILE.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, _, reason = line.partition("\t")
        out[name.strip()] = reason.strip() or "listed in expected_failures.txt"
    return out


EXPECTED = _expected_failures()
CASES = corpus.node_case_dirs()


def _load_value(path: Path, type_proto: Any) -> Any:
    """A test vector value: our decoder and ``value_from_proto`` (the oracle loader as fallback)."""
    try:
        from onnxcore.types import value_from_proto
    except ImportError:  # pragma: no cover - until the types package exists
        import onnx
        from runtime.node_harness import _load_value as oracle

        return oracle(path, onnx.TypeProto.FromString(onnxcore.encode(type_proto)))
    from onnxcore.proto import MapProto, OptionalProto, SequenceProto, TensorProto

    kind = type_proto.which_oneof("value") if type_proto is not None else "tensor_type"
    cls = {"sequence_type": SequenceProto, "map_type": MapProto, "optional_type": OptionalProto}.get(
        kind or "", TensorProto
    )
    return value_from_proto(onnxcore.decode(cls, path.read_bytes()))


def _rtol(expected: Any) -> float:
    # The onnx harness widens rtol to two bfloat16 ulps for bfloat16 outputs (its runner's
    # assert_similar_outputs); 1e-3 is below one bfloat16 ulp (2**-8 relative).
    if getattr(getattr(expected, "dtype", None), "name", "") == "bfloat16":
        return max(1e-3, 2.0**-6)
    return 1e-3


def _datasets(case: Path) -> list[Path]:
    return sorted(p for p in case.iterdir() if p.is_dir() and p.name.startswith("test_data_set_"))


def _run_case(case: Path) -> None:
    model = onnxcore.load(case / "model.onnx")
    try:
        sess = onnxcore.Session(model)
    except UnsupportedOperatorError:
        pytest.skip("operator not yet implemented")
    graph = model.graph
    for ds in _datasets(case):
        feeds = {}
        for i, vi in enumerate(graph.input):
            p = ds / f"input_{i}.pb"
            if p.exists():
                feeds[vi.name] = _load_value(p, vi.type)
        expected = []
        for i, vi in enumerate(graph.output):
            expected.append(_load_value(ds / f"output_{i}.pb", vi.type))
        actual = sess.run(None, feeds)
        assert len(actual) == len(expected)
        for k, (a, e) in enumerate(zip(actual, expected)):
            try:
                assert_close(a, e, rtol=_rtol(e), atol=1e-7)
            except AssertionError as err:
                raise AssertionError(f"{ds.name}: output {k} ({graph.output[k].name}): {err}") from None


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_node_case(case: Path) -> None:
    reason = EXPECTED.get(case.name)
    if reason is None:
        _run_case(case)
        return
    try:
        _run_case(case)
    except pytest.skip.Exception:
        raise
    except Exception as e:  # a listed failure
        pytest.xfail(f"{reason} ({type(e).__name__})")
    pytest.fail(f"{case.name} is listed in expected_failures.txt but passes: remove it", pytrace=False)


def test_expected_failures_are_cases() -> None:
    """Every listed name is a real case and carries a reason (the file is a committed record)."""
    names = {c.name for c in CASES}
    unknown = sorted(set(EXPECTED) - names)
    assert not unknown, f"expected_failures.txt lists unknown cases: {unknown}"
