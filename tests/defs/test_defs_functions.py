"""Function bodies stored as our own FunctionProto octets (Clause 8.4)."""

from __future__ import annotations

import pytest

import onnxcore
from onnxcore import defs

onnx_defs = pytest.importorskip("onnx.defs")


def _onnx_body(name: str, since: int, version: int, domain: str = "") -> bytes:
    q = onnx_defs.get_schema(name, since, domain)
    assert q.since_version == since
    return q.get_function_with_opset_version(version)


@pytest.mark.parametrize(
    ("name", "since", "version"),
    [
        ("Celu", 28, 28),
        ("Elu", 6, 18),
        ("HardSwish", 14, 14),
        ("MeanVarianceNormalization", 13, 13),
        ("MeanVarianceNormalization", 13, 18),
        ("Range", 11, 11),
        ("ReduceLogSumExp", 18, 18),
        ("AffineGrid", 20, 20),
        ("Swish", 24, 24),
        ("SwiGLU", 28, 28),
    ],
)
def test_body_reencodes_to_onnx_bytes(name, since, version):
    s = defs.get_schema(name, since)
    assert s is not None and s.since_version == since
    body = s.function_body(version)
    assert isinstance(body, onnxcore.FunctionProto)
    theirs = _onnx_body(name, since, version)
    assert onnxcore.encode(body) == theirs
    assert body.name == name
    assert body.node, "a body has nodes"


def test_every_stored_body_roundtrips():
    n = 0
    for s in defs.all_schemas():
        for v in s.function_versions:
            body = s.function_body(v)
            assert body is not None
            assert onnxcore.encode(body) == _onnx_body(s.name, s.since_version, v, s.domain)
            n += 1
    assert n >= 40


def test_body_selection_by_version():
    # MeanVarianceNormalization-13 has bodies written against opsets 13 and 18: a model importing 17
    # gets the 13 one, importing 20 the 18 one (greatest <= the import, as onnx does).
    s = defs.get_schema("MeanVarianceNormalization", 20)
    assert s is not None and s.since_version == 13 and s.function_versions == (13, 18)
    for v, want in ((13, 13), (17, 13), (18, 18), (20, 18)):
        body = s.function_body(v)
        assert body is not None
        assert onnxcore.encode(body) == onnx_defs.get_schema(
            "MeanVarianceNormalization", 13
        ).get_function_with_opset_version(want)
    assert s.function_body(12) is None
    # Elu-6's only body uses opset 18 operators: nothing for a model importing 10.
    elu = defs.get_schema("Elu", 10)
    assert elu is not None and elu.function_body(10) is None and elu.function_body(18) is not None
    # each call decodes afresh
    assert s.function_body(13) is not s.function_body(13)


def test_context_dependent_bodies_are_flagged_not_stored():
    for name, since in (("LayerNormalization", 17), ("Gelu", 20), ("Softmax", 13), ("CastLike", 15)):
        s = defs.get_schema(name, since)
        assert s is not None
        assert s.has_context_dependent_function
        assert since in s.context_dependent_function_versions
        assert s.function_body(since) is None
    assert not defs.get_schema("Relu", 13).has_function
