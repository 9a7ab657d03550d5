"""RNN, GRU and LSTM against the ONNX 1-3 vectors and onnxruntime (forward, reverse, bidirectional,
sequence_lens, initial states, peepholes, clip, layout, activations with alpha/beta)."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from runtime.node_harness import assert_close, run_single_node_case

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

OPS = ("test_rnn", "test_simple_rnn", "test_gru", "test_lstm")


def _cases(node_cases: list[Path]) -> list[Path]:
    return [c for c in node_cases if c.name.startswith(OPS) and "expanded" not in c.name]


def test_node_vectors(node_cases: list[Path]) -> None:
    cases = _cases(node_cases)
    assert len(cases) >= 15
    for case in cases:
        out = run_single_node_case(case)
        assert out is not None, case.name
        actual, expected = out
        for a, e in zip(actual, expected):
            assert_close(a, e)


def _model(op: str, opset: int, inputs: dict[str, np.ndarray], attrs: dict, n_out: int) -> bytes:
    names = ["X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"][: {"LSTM": 8}.get(op, 6)]
    node_inputs = [n if n in inputs else "" for n in names]
    while node_inputs and node_inputs[-1] == "":
        node_inputs.pop()
    outs = ["Y", "Y_h", "Y_c"][:n_out]
    node = helper.make_node(op, node_inputs, outs, **attrs)
    vis = [
        helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), list(v.shape))
        for n, v in inputs.items()
    ]
    graph = helper.make_graph(
        [node], "g", vis, [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs]
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model.SerializeToString()


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_against_onnxruntime(op: str) -> None:
    from onnxcore import decode
    from onnxcore.kernels.registry import lookup
    from onnxcore.proto import ModelProto

    rng = np.random.default_rng(7)
    k = {"RNN": 1, "GRU": 3, "LSTM": 4}[op]
    combos = itertools.product(["forward", "reverse", "bidirectional"], [0, 1], [False, True], [None, 2.0])
    for direction, layout, with_lens, clip in combos:
        if op == "RNN" and clip is not None and layout:
            continue
        seq, batch, inp, hid = 5, 3, 4, 6
        nd = 2 if direction == "bidirectional" else 1
        x = rng.standard_normal((batch, seq, inp) if layout else (seq, batch, inp)).astype(np.float32)
        feeds = {
            "X": x,
            "W": rng.standard_normal((nd, k * hid, inp)).astype(np.float32) * 0.5,
            "R": rng.standard_normal((nd, k * hid, hid)).astype(np.float32) * 0.5,
            "B": rng.standard_normal((nd, 2 * k * hid)).astype(np.float32) * 0.1,
        }
        if with_lens:
            feeds["sequence_lens"] = np.array([5, 2, 4], np.int32)
            h_shape = (batch, nd, hid) if layout else (nd, batch, hid)
            feeds["initial_h"] = rng.standard_normal(h_shape).astype(np.float32)
            if op == "LSTM":
                feeds["initial_c"] = rng.standard_normal(h_shape).astype(np.float32)
                feeds["P"] = rng.standard_normal((nd, 3 * hid)).astype(np.float32) * 0.1
        attrs: dict = {"hidden_size": hid, "direction": direction, "layout": layout}
        if clip is not None:
            attrs["clip"] = clip
        if op == "GRU":
            attrs["linear_before_reset"] = 1
        n_out = 3 if op == "LSTM" else 2
        data = _model(op, 14, feeds, attrs, n_out)
        # onnxruntime refuses layout=1: give it the time-major equivalent and transpose its outputs back.
        ort_feeds = dict(feeds)
        if layout:
            for name in ("X", "initial_h", "initial_c"):
                if name in ort_feeds:
                    ort_feeds[name] = np.ascontiguousarray(ort_feeds[name].transpose(1, 0, 2))
        ort_data = _model(op, 14, ort_feeds, {**attrs, "layout": 0}, n_out)
        expected = ort.InferenceSession(ort_data, providers=["CPUExecutionProvider"]).run(None, ort_feeds)
        if layout:
            expected = [expected[0].transpose(2, 0, 1, 3)] + [e.transpose(1, 0, 2) for e in expected[1:]]
        node = decode(ModelProto, data).graph.node[0]
        fn = lookup("", op, 14).fn
        args = [feeds.get(n) for n in ["X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"]]
        args = args[: 8 if op == "LSTM" else 6]
        actual = fn(
            *args, **{a.name: (a.s.decode() if a.type == 3 else a.f if a.type == 1 else a.i) for a in node.attribute}
        )
        for a, e in zip(actual, expected):
            np.testing.assert_allclose(a, e, rtol=1e-4, atol=1e-5, err_msg=f"{op} {direction} layout={layout}")


def test_activations_with_alpha_beta() -> None:
    from onnxcore.kernels.registry import lookup

    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 2, 3)).astype(np.float32)
    w = rng.standard_normal((1, 5, 3)).astype(np.float32)
    r = rng.standard_normal((1, 5, 5)).astype(np.float32)
    attrs = {"hidden_size": 5, "activations": ["LeakyRelu"], "activation_alpha": [0.3]}
    data = _model("RNN", 14, {"X": x, "W": w, "R": r}, attrs, 2)
    expected = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"X": x, "W": w, "R": r})
    actual = lookup("", "RNN", 14).fn(x, w, r, **attrs)
    for a, e in zip(actual, expected):
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_weights_of_the_wrong_shape_are_refused_not_broadcast(op: str) -> None:
    from onnxcore.errors import EvaluationError
    from onnxcore.kernels.registry import lookup

    fn = lookup("", op, 14).fn
    k = {"RNN": 1, "GRU": 3, "LSTM": 4}[op]
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 1, 3)).astype(np.float32)
    w = rng.standard_normal((1, k * 4, 3)).astype(np.float32)
    r = rng.standard_normal((1, k * 4, 4)).astype(np.float32)
    fn(x, w, r, hidden_size=4)  # the definition's shapes run
    with pytest.raises(EvaluationError, match="R"):
        fn(x, w, r[0], hidden_size=4)  # R of rank 2 (found by shape inference's differential fuzzing)
    with pytest.raises(EvaluationError, match="input size"):
        fn(x, w[:, :, :2], r, hidden_size=4)
    with pytest.raises(EvaluationError, match="B"):
        fn(x, w, r, np.zeros((1, k * 4), np.float32), hidden_size=4)
    # Initial states of another batch size broadcast, or raised a numpy ValueError (found by the fuzz against
    # onnxruntime); LSTM's peepholes of another shape too.
    h_batch3 = np.zeros((1, 3, 4), np.float32)
    with pytest.raises(EvaluationError, match=r"initial_h \(1, 3, 4\) should be \(1, 1, 4\)"):
        fn(x, w, r, None, None, h_batch3, hidden_size=4)
    fn(x, w, r, None, None, np.zeros((1, 1, 4), np.float32), hidden_size=4)
    with pytest.raises(EvaluationError, match=r"initial_h \(3, 1, 4\) should be \(1, 1, 4\)"):  # batch-major
        fn(np.swapaxes(x, 0, 1), w, r, None, None, np.zeros((3, 1, 4), np.float32), hidden_size=4, layout=1)
    if op == "LSTM":
        with pytest.raises(EvaluationError, match=r"initial_c \(1, 3, 4\) should be"):
            fn(x, w, r, None, None, None, h_batch3, hidden_size=4)
        with pytest.raises(EvaluationError, match=r"P \(1, 1, 12\) should be \(1, 12\)"):
            fn(x, w, r, None, None, None, None, np.zeros((1, 1, 12), np.float32), hidden_size=4)
