"""Mutated models never make the evaluator fail with anything but our errors (issue 2/6 standard).

Random octets of real ONNX 1-3 models are changed; each mutant is loaded, validated and, if it passes, run on the
case's own inputs. Whatever happens must be a result or an ``OnnxCoreError``: never an IndexError, a numpy error,
a RecursionError or a crash.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import onnxcore as oc
from onnxcore.conformance.runner import load_case_values


def _foreign(e: oc.OnnxCoreError) -> bool:
    """Whether a node failure was caused by something other than our own error (a kernel defect: the session
    reports every failure as an EvaluationError, so the type alone would hide a ZeroDivisionError or IndexError)."""
    return e.__cause__ is not None and not isinstance(e.__cause__, oc.OnnxCoreError)


def test_mutated_models_raise_only_our_errors(node_cases: list[Path]) -> None:
    rng = random.Random(20261130)
    tried = evaluated = 0
    foreign: list[str] = []
    for case in node_cases[::20]:
        data = (case / "model.onnx").read_bytes()
        sets = load_case_values(case, oc.load(data))
        for _ in range(10):
            mutant = bytearray(data)
            for _ in range(rng.randint(1, 3)):
                mutant[rng.randrange(len(mutant))] = rng.randrange(256)
            tried += 1
            try:
                session = oc.Session(oc.load(bytes(mutant)))
                for feeds, _expected in sets:
                    session.run(None, feeds)
                evaluated += 1
            except oc.OnnxCoreError as e:
                if _foreign(e):
                    foreign.append(f"{case.name}: {e}"[:300])
    assert not foreign, "\n".join(foreign)
    assert tried >= 900
    assert 0 < evaluated < tried  # some mutants still run, most are refused


def _mutate_structure(model: oc.ModelProto, rng: random.Random) -> None:
    assert model.graph is not None
    nodes = list(model.graph.node)
    if not nodes:
        return
    node = rng.choice(nodes)
    choice = rng.randrange(4)
    if choice == 0 and node.attribute:
        a = rng.choice(node.attribute)
        if a.ints:
            a.ints[rng.randrange(len(a.ints))] = rng.randint(-5, 10)
        elif a.floats:
            a.floats[rng.randrange(len(a.floats))] = rng.choice([0.0, -1.0, float("nan"), 1e30])
        else:
            a.i = rng.randint(-5, 10)
    elif choice == 1 and node.input:
        node.input[rng.randrange(len(node.input))] = rng.choice(["", *[i.name for i in model.graph.input]])
    elif choice == 2 and node.input:
        node.input.pop()
    else:
        node.attribute.append(
            oc.AttributeProto(name="axis", type=oc.AttributeProto.AttributeType.INT, i=rng.randint(-5, 5))
        )


# A mutant's declared output shape may contradict what it computes: the warning is the designed outcome there.
@pytest.mark.filterwarnings("ignore::onnxcore.errors.OutputShapeWarning")
def test_structurally_mutated_models_raise_only_our_errors(node_cases: list[Path]) -> None:
    """Attribute values out of range, inputs swapped or dropped: refused or evaluated, never anything else."""
    rng = random.Random(7)
    tried = 0
    foreign: list[str] = []
    for case in node_cases[::15]:
        data = (case / "model.onnx").read_bytes()
        sets = load_case_values(case, oc.load(data))
        for _ in range(4):
            model = oc.load(data)
            _mutate_structure(model, rng)
            tried += 1
            try:
                session = oc.Session(model)
                for feeds, _expected in sets:
                    session.run(None, feeds)
            except oc.OnnxCoreError as e:
                if _foreign(e):
                    foreign.append(f"{case.name}: {e}"[:300])
    assert not foreign, "\n".join(foreign)
    assert tried >= 400
