"""Verification of a model whose inputs are related (issue 39: a decoder step's mask is one longer than its cache):
generated sets whose variables differ by one, and the caller's own feeds (``inputs=``, ``--inputs FILE.npz``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from optimize_models import T, model, ops, vi

import onnxcore
from onnxcore import helper
from onnxcore.cli import main
from onnxcore.errors import InputError
from onnxcore.optimizer import OptimizeError, optimize
from onnxcore.optimizer.verify import RELATED_SIZES, related_input_sets


def _step() -> onnxcore.ModelProto:
    """out = concat(mask, concat(past, new, axis=1), axis=0): runs only when total == past + 1 (no broadcast)."""
    nodes = [
        helper.make_node("Identity", ["past"], ["p"]),
        helper.make_node("Concat", ["p", "new"], ["kv"], axis=1),
        helper.make_node("Concat", ["mask", "kv"], ["out"], axis=0),
    ]
    inputs = [vi("past", T.FLOAT, ["batch", "past"]), vi("new", T.FLOAT, ["batch", 1]),
              vi("mask", T.FLOAT, ["batch", "total"])]  # fmt: skip
    return model(nodes, inputs, [vi("out", T.FLOAT, ["rows", "total"])])


def test_related_sets_set_one_variable_apart() -> None:
    sets = related_input_sets(_step())
    shapes = [(s["past"].shape, s["mask"].shape) for s in sets]
    # total one more than past: the sets the model accepts.
    assert ((2, 2), (2, 3)) in shapes and ((3, 3), (3, 4)) in shapes
    assert all(min(min(a), min(b)) >= 1 for a, b in shapes)
    assert len(RELATED_SIZES) == 2


def test_a_model_with_related_inputs_is_verified_on_related_sets() -> None:
    out, rep = optimize(_step())
    assert rep.verified and ops(out) == ["Concat", "Concat"]
    assert rep.verify_shapes
    for s in rep.verify_shapes:
        assert s["mask"][1] == s["past"][1] + 1


def test_given_inputs_are_compared() -> None:
    rng = np.random.default_rng(1)
    feeds = {"past": rng.standard_normal((4, 7), dtype=np.float32), "new": np.ones((4, 1), np.float32),
             "mask": rng.standard_normal((4, 8), dtype=np.float32)}  # fmt: skip
    _, rep = optimize(_step(), inputs=[feeds])
    assert rep.verified
    assert {"past": (4, 7), "new": (4, 1), "mask": (4, 8)} in rep.verify_shapes


def test_given_inputs_naming_no_input_are_refused() -> None:
    with pytest.raises(InputError, match="names no graph input"):
        optimize(_step(), inputs=[{"pats": np.zeros((1, 1), np.float32)}])
    with pytest.raises(InputError, match="list of feed dicts"):
        optimize(_step(), inputs={"past": np.zeros((1, 1), np.float32)})  # type: ignore[arg-type]


def test_a_model_refusing_every_set_still_cannot_be_verified() -> None:
    """total == past + 2: neither the equal nor the one-apart sets run; the message points at inputs=."""
    m = _step()
    assert m.graph is not None
    m.graph.node = [*m.graph.node[:2], helper.make_node("Pad", ["kv", "pads"], ["kv2"]),
                    helper.make_node("Concat", ["mask", "kv2"], ["out"], axis=0)]  # fmt: skip
    m.graph.initializer = [onnxcore.from_array(np.array([0, 0, 0, 1], np.int64), "pads")]
    with pytest.raises(OptimizeError, match="inputs="):
        optimize(m)


def test_cli_inputs_npz(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src, out, npz = tmp_path / "m.onnx", tmp_path / "o.onnx", tmp_path / "feeds.npz"
    onnxcore.save(_step(), src)
    np.savez(npz, past=np.ones((5, 6), np.float32), new=np.ones((5, 1), np.float32), mask=np.ones((5, 7), np.float32))
    assert main(["optimize", str(src), str(out), "--json", "--inputs", str(npz)]) == 0
    assert '"mask": [\n        5,\n        7\n      ]' in capsys.readouterr().out
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip")
    assert main(["optimize", str(src), str(out), "--inputs", str(bad)]) == 2
