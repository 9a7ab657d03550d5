"""Property tests (hypothesis): random messages survive encode/decode; mutations never crash."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import corpus
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import onnxcore as oc
from onnxcore.proto import MESSAGE_CLASSES, MESSAGE_SPECS
from onnxcore.proto.spec import FieldSpec

_INT_RANGES = {
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint64": (0, 2**64 - 1),
}


def _scalar(f: FieldSpec) -> st.SearchStrategy[Any]:
    if f.kind == "enum":
        return st.integers(-(2**31), 2**31 - 1)
    if f.type in _INT_RANGES:
        lo, hi = _INT_RANGES[f.type]
        return st.integers(lo, hi)
    if f.type == "float":
        return st.floats(width=32, allow_nan=False)
    if f.type == "double":
        return st.floats(allow_nan=False)
    if f.type == "string":
        return st.text(max_size=8)
    return st.binary(max_size=8)


def _message(name: str, depth: int) -> st.SearchStrategy[Any]:
    spec = MESSAGE_SPECS[name]
    cls = MESSAGE_CLASSES[name]
    kwargs: dict[str, st.SearchStrategy[Any]] = {}
    for f in spec.fields:
        if f.oneof is not None:
            continue  # one member at most: added below
        if f.kind == "message":
            if depth <= 0:
                continue
            sub = _message(f.type, depth - 1)
            kwargs[f.name] = st.lists(sub, max_size=2) if f.repeated else st.none() | sub
        else:
            kwargs[f.name] = st.lists(_scalar(f), max_size=3) if f.repeated else st.none() | _scalar(f)
    base = st.fixed_dictionaries({}, optional=kwargs)
    if spec.oneofs:
        group = next(iter(spec.oneofs.values()))
        choices: list[st.SearchStrategy[Any]] = [st.just({})]
        for member in group:
            f = spec.by_name[member]
            if f.kind == "message":
                if depth > 0:
                    choices.append(_message(f.type, depth - 1).map(lambda v, m=member: {m: v}))
            else:
                choices.append(_scalar(f).map(lambda v, m=member: {m: v}))
        base = st.tuples(base, st.one_of(choices)).map(lambda t: {**t[0], **t[1]})
    return base.map(lambda kw: cls(**kw))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(MESSAGE_SPECS)).flatmap(lambda n: _message(n, 2)))
def test_random_messages_round_trip(msg: oc.Message) -> None:
    data = oc.encode(msg)
    back = oc.decode(type(msg), data)
    assert back == msg
    assert oc.encode(back) == data


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_message("ModelProto", 3))
def test_random_models_round_trip(msg: oc.ModelProto) -> None:
    data = oc.encode(msg)
    assert oc.decode(oc.ModelProto, data) == msg


def _mutants(data: bytes, rng: random.Random, n: int) -> list[bytes]:
    out = []
    for _ in range(n):
        b = bytearray(data)
        kind = rng.randrange(4)
        if kind == 0 and b:
            for _ in range(rng.randint(1, 4)):
                b[rng.randrange(len(b))] = rng.randrange(256)
        elif kind == 1 and b:
            del b[rng.randrange(len(b)) :]
        elif kind == 2:
            pos = rng.randrange(len(b) + 1)
            b[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        elif b:
            a = rng.randrange(len(b))
            del b[a : a + rng.randint(1, 16)]
        out.append(bytes(b))
    return out


def test_fuzz_mutations_decode_or_decode_error(node_cases: list[Path]) -> None:
    """Random byte mutations of real models either decode or raise DecodeError, never anything else."""
    rng = random.Random(1234)
    files = [d / "model.onnx" for d in node_cases[::40]] + corpus.shipped_models()[:3]
    tried = failed = 0
    for f in files:
        data = f.read_bytes()[:200_000]
        for m in _mutants(data, rng, 60):
            tried += 1
            try:
                model = oc.decode(oc.ModelProto, m)
            except oc.DecodeError:
                failed += 1
                continue
            oc.encode(model)  # whatever decodes also encodes
    assert tried > 2000 and 0 < failed < tried
