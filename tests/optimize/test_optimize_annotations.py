"""The result's shape annotations (issue 39): never a file larger than the model it came from (annotations only in
the bytes the rewrites saved, the most useful first), and never one that onnx's checker rejects because its own
inference computes a shape otherwise (STFT's frequency bins)."""

from __future__ import annotations

import corpus
import numpy as np
import pytest
from optimize_models import T, model, tensor, vi

import onnxcore
from onnxcore import helper
from onnxcore.optimizer import optimize
from onnxcore.optimizer.annotations import annotate_within
from onnxcore.runtime.rewrite_model import model_size

onnx = pytest.importorskip("onnx")


def _chain(n: int) -> onnxcore.ModelProto:
    """Relu after Neg after ...: nothing to fold, remove or merge."""
    nodes = [helper.make_node("Neg" if k % 2 else "Relu", [f"v{k}"], [f"v{k + 1}"]) for k in range(n)]
    nodes[-1].output[0] = "Y"
    nodes[0].input[0] = "X"
    return model(nodes, [vi("X", T.FLOAT, ["N", 4])], [vi("Y", T.FLOAT, ["N", 4])])


def test_a_model_where_nothing_fires_is_not_made_larger() -> None:
    src = _chain(12)
    out, rep = optimize(src)
    assert not rep.fired
    assert len(onnxcore.encode(out)) <= len(onnxcore.encode(src))
    assert rep.size_after <= rep.size_before
    assert rep.annotations_kept == 0 and rep.annotations_dropped == 11  # no byte saved, none spent


def test_annotations_fill_the_bytes_given_most_useful_first() -> None:
    src = _chain(12)
    everything = annotate_within(src, 1 << 20)
    assert everything.kept == 11 and everything.dropped == 0
    grown = model_size(everything.model) - model_size(src)
    # Room for about half: all of one class (every extent known), so in graph order; within the budget.
    half = annotate_within(src, grown // 2)
    assert 0 < half.kept < 11 and half.kept + half.dropped == 11
    assert model_size(half.model) <= model_size(src) + grown // 2
    assert half.model.graph is not None
    assert [v.name for v in half.model.graph.value_info] == [f"v{k}" for k in range(1, half.kept + 1)]
    assert annotate_within(src, 0).kept == 0


def _zoo(stem: str) -> bytes:
    paths = [p for p in corpus.shipped_models() if p.stem == stem]
    if not paths:
        pytest.skip(f"{stem} is not in this onnx wheel")
    return paths[0].read_bytes()


@pytest.mark.parametrize("stem", ["light_inception_v1", "light_squeezenet"])
def test_zoo_models_are_never_made_larger(stem: str) -> None:
    src = _zoo(stem)
    out, rep = optimize(src)
    data = onnxcore.encode(out)
    assert len(data) <= len(src), (len(data), len(src))
    assert rep.verified and rep.nodes_after < rep.nodes_before
    assert rep.annotations_kept > 0  # the rewrites saved bytes, some of them spent on shapes
    onnx.checker.check_model(onnx.load_from_string(data), full_check=True)


def _stft() -> onnxcore.ModelProto:
    """STFT (onesided: 16 / 2 + 1 = 9 bins, which onnx's inference gives as 16) -> Abs -> Neg -> Y; plus a branch
    that does not depend on it, which is annotated."""
    nodes = [
        helper.make_node("STFT", ["x", "step", "window"], ["spec"]),
        helper.make_node("Abs", ["spec"], ["mag"]),
        helper.make_node("Neg", ["mag"], ["Y"]),
        helper.make_node("Identity", ["x"], ["xi"]),
        helper.make_node("Relu", ["xi"], ["r"]),
        helper.make_node("Neg", ["r"], ["Z"]),
    ]
    inits = [tensor("step", np.array(8, np.int64)), tensor("window", np.hanning(16).astype(np.float32)),
             tensor("pad", np.zeros(4096, np.float32))]  # fmt: skip
    outs = [vi("Y", T.FLOAT, [None] * 4), vi("Z", T.FLOAT, [1, 128, 1])]
    # "pad", read by nothing, is removed: the bytes saved leave room for every annotation.
    return model(nodes, [vi("x", T.FLOAT, [1, 128, 1])], outs, inits)


def test_values_onnx_infers_otherwise_are_not_annotated() -> None:
    out, rep = optimize(_stft())
    assert out.graph is not None
    named = {v.name for v in out.graph.value_info}
    assert "r" in named
    assert not named & {"spec", "mag"}
    assert rep.annotations_dropped == 2 and rep.annotations_kept == 1  # r (the Identity is gone)
    onnx.checker.check_model(onnx.load_from_string(onnxcore.encode(out)), full_check=True)
    # What the rule avoids: our (right) annotation of the STFT's output, which onnx's checker rejects.
    full = onnxcore.infer.annotate(_stft())
    with pytest.raises(Exception, match="STFT"):
        onnx.checker.check_model(onnx.load_from_string(onnxcore.encode(full)), full_check=True)
