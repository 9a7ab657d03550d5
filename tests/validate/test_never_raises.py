"""``check`` never raises on a bad model: random field mutations and corrupted octets (Clause 10.5)."""

from __future__ import annotations

import random

import pytest

import onnxcore
from onnxcore.validate import Report, check

mutants = pytest.importorskip("mutants")
fuzz_util = pytest.importorskip("fuzz_util")

BASES = list(mutants.BASES.values())


@pytest.mark.parametrize("seed", range(0, 300))
def test_random_field_mutations_give_a_report(seed: int) -> None:
    rng = random.Random(seed)
    model = rng.choice(BASES)()
    fuzz_util.mutate(model, rng, rng.randint(1, 8))
    report = check(model)
    assert isinstance(report, Report)
    assert "E-INTERNAL" not in report.codes(), str(report)
    report.to_json()
    str(report)


@pytest.mark.parametrize("seed", range(0, 200))
def test_corrupted_octets_give_a_report(seed: int) -> None:
    rng = random.Random(seed)
    data = bytearray(onnxcore.encode(rng.choice(BASES)()))
    for _ in range(rng.randint(1, 4)):
        data[rng.randrange(len(data))] = rng.randrange(256)
    if rng.random() < 0.3:
        del data[rng.randrange(len(data)) :]
    report = check(bytes(data))
    assert isinstance(report, Report)
    assert "E-INTERNAL" not in report.codes(), str(report)


def test_mutants_with_a_shared_or_cyclic_graph_do_not_hang() -> None:
    m = next(x for x in mutants.MUTANTS if x.code == "E-SUBGRAPH-CYCLE").build()
    report = check(m)
    assert "E-SUBGRAPH-CYCLE" in report.codes()
