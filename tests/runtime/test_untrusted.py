"""A model one does not trust (issue 41): ``Limits.untrusted()``, its default deadline, ``--untrusted`` on the CLI;
and the refusals that come before any work whatever the limits: a Loop's trip count, convolution attributes past
the index range at binding, a checksum over a file too large to hash."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

import corpus
import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper

import onnxcore
from onnxcore import DEFAULT_LIMITS, LimitError, Limits, RunTimeoutError
from onnxcore.cli import main
from onnxcore.conformance.runner import run_case
from onnxcore.limits import UNTRUSTED_FIELDS


def _model(nodes: list, inputs: list, outputs: list, *, inits: list | None = None, opset: int = 21) -> bytes:
    g = h.make_graph(nodes, "g", inputs, outputs, inits or [])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 10
    return bytes(m.SerializeToString())


def _loop(trip: int, cond: str) -> bytes:
    """``v + 1`` carried ``trip`` times; ``cond``: ``none`` (no cond input), ``given`` (true, passed on) or
    ``computed`` (the body computes a condition that stays true)."""
    body_nodes = [h.make_node("Add", ["v_in", "one"], ["v_out"])]
    if cond == "computed":
        body_nodes.append(h.make_node("Less", ["i", "big"], ["c_out"]))
    else:
        body_nodes.append(h.make_node("Identity", ["c_in"], ["c_out"]))
    body = h.make_graph(
        body_nodes,
        "body",
        [
            h.make_tensor_value_info("i", TP.INT64, []),
            h.make_tensor_value_info("c_in", TP.BOOL, []),
            h.make_tensor_value_info("v_in", TP.FLOAT, [1]),
        ],
        [h.make_tensor_value_info("c_out", TP.BOOL, []), h.make_tensor_value_info("v_out", TP.FLOAT, [1])],
        [
            numpy_helper.from_array(np.ones(1, np.float32), "one"),
            numpy_helper.from_array(np.array(1 << 62, np.int64), "big"),
        ],
    )
    inits = [numpy_helper.from_array(np.array(True), "cond"), numpy_helper.from_array(np.array(trip, np.int64), "M")]
    node = h.make_node("Loop", ["M", "" if cond == "none" else "cond", "V"], ["R"], body=body)
    return _model(
        [node],
        [h.make_tensor_value_info("V", TP.FLOAT, [1])],
        [h.make_tensor_value_info("R", TP.FLOAT, [1])],
        inits=inits,
    )


V = {"V": np.zeros(1, np.float32)}


def test_the_preset_is_stricter_than_the_defaults_everywhere() -> None:
    lim = Limits.untrusted()
    for f in dataclasses.fields(Limits):
        strict, default = getattr(lim, f.name), getattr(DEFAULT_LIMITS, f.name)
        if f.name == "run_timeout":
            assert default is None and strict == UNTRUSTED_FIELDS["run_timeout"]
        else:
            assert strict is not None and (default is None or strict <= default), f.name
    assert lim.max_alloc_bytes is not None and lim.max_alloc_bytes <= 1 << 28
    with pytest.raises(ValueError, match="run_timeout"):
        Limits(run_timeout=0)
    with pytest.raises(ValueError, match="run_timeout"):
        Limits(run_timeout=float("nan"))


@pytest.mark.parametrize("cond", ["none", "given", "computed"])
@pytest.mark.parametrize("trip", [(1 << 31) + 1, 1 << 40, (1 << 63) - 1])
def test_a_trip_count_past_the_limit_is_refused_before_the_first_iteration(trip: int, cond: str) -> None:
    # issue 41: with cond given or computed the loop ran (until the alarm) instead of being refused.
    start = time.perf_counter()
    with pytest.raises(LimitError, match="max_loop_iterations"):
        onnxcore.Session(_loop(trip, cond)).run(None, V)
    assert time.perf_counter() - start < 5


@pytest.mark.parametrize("cond", ["none", "given", "computed"])
def test_a_trip_count_at_the_limit_runs(cond: str) -> None:
    lim = dataclasses.replace(DEFAULT_LIMITS, max_loop_iterations=50)
    (r,) = onnxcore.Session(_loop(50, cond), limits=lim).run(None, V)
    assert r.tolist() == [50.0]
    with pytest.raises(LimitError, match="max_loop_iterations"):
        onnxcore.Session(_loop(51, cond), limits=lim).run(None, V)


def test_the_preset_gives_every_run_a_deadline() -> None:
    # A Loop within the iteration budget but long: the preset's deadline stops it, no timeout given by the call.
    lim = dataclasses.replace(Limits.untrusted(), run_timeout=0.2)
    sess = onnxcore.Session(_loop(1 << 20, "given"), limits=lim)
    start = time.perf_counter()
    with pytest.raises(RunTimeoutError, match=r"timeout of 0\.2 s"):
        sess.run(None, V)
    assert time.perf_counter() - start < 10
    # The call's own timeout wins over the preset's.
    short = onnxcore.Session(_loop(10, "given"), limits=lim)
    assert short.run(None, V, timeout=30)[0].tolist() == [10.0]
    # The defaults give none: the same loop, shorter, runs to its end.
    assert onnxcore.Session(_loop(1000, "given")).run(None, V)[0].tolist() == [1000.0]


@pytest.mark.parametrize("attr", ["strides", "dilations", "pads", "kernel_shape"])
def test_convolution_attributes_past_the_index_range_are_refused_at_binding(attr: str) -> None:
    # issue 41: a Conv with strides 2**63 - 1 was stuck in compiled code for 45 s, out of reach of any deadline.
    big = (1 << 63) - 1
    attrs = {"strides": [big, big], "dilations": [big, big], "pads": [big] * 4, "kernel_shape": [big, big]}
    model = _model(
        [h.make_node("Conv", ["X", "W"], ["Y"], **{attr: attrs[attr]})],
        [h.make_tensor_value_info("X", TP.FLOAT, [1, 1, 8, 8]), h.make_tensor_value_info("W", TP.FLOAT, [1, 1, 3, 3])],
        [h.make_tensor_value_info("Y", TP.FLOAT, ["a", "b", "c", "d"])],
    )
    with pytest.raises(LimitError, match=f"attribute '{attr}' holds {big}, past the index range"):
        onnxcore.Session(model, check=False)  # at binding: no run needed


def test_convolution_attributes_within_the_index_range_bind() -> None:
    model = _model(
        [h.make_node("Conv", ["X", "W"], ["Y"], strides=[(1 << 31) - 1, 1])],
        [h.make_tensor_value_info("X", TP.FLOAT, [1, 1, 8, 8]), h.make_tensor_value_info("W", TP.FLOAT, [1, 1, 3, 3])],
        [h.make_tensor_value_info("Y", TP.FLOAT, ["a", "b", "c", "d"])],
    )
    x, w = np.ones((1, 1, 8, 8), np.float32), np.ones((1, 1, 3, 3), np.float32)
    (y,) = onnxcore.Session(model, check=False).run(None, {"X": x, "W": w})
    assert y.shape == (1, 1, 1, 6) and np.all(y == 9)


def _external_model(tmp_path: Path, size: int, offset: int) -> Path:
    t = numpy_helper.from_array(np.zeros(4, np.float32), "W")
    t.ClearField("raw_data")
    t.data_location = TP.EXTERNAL
    for k, v in (("location", "w.bin"), ("offset", str(offset)), ("length", "16"), ("checksum", "0" * 40)):
        e = t.external_data.add()
        e.key, e.value = k, v
    g = h.make_graph(
        [h.make_node("Add", ["X", "W"], ["Y"])],
        "g",
        [h.make_tensor_value_info("X", TP.FLOAT, [4])],
        [h.make_tensor_value_info("Y", TP.FLOAT, [4])],
        [t],
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    with open(tmp_path / "w.bin", "wb") as fh:
        fh.truncate(size)  # sparse: costs nothing to make, minutes to hash
    path = tmp_path / "m.onnx"
    path.write_bytes(m.SerializeToString())
    return path


def test_a_checksum_over_a_file_past_the_bound_is_refused_before_hashing(tmp_path: Path) -> None:
    # issue 41: an external tensor at offset 2**40 - 16 of a sparse file of 1 TiB (max_external_file_bytes) with
    # a checksum: the whole file was hashed (minutes).
    path = _external_model(tmp_path, 1 << 40, (1 << 40) - 16)
    start = time.perf_counter()
    with pytest.raises(onnxcore.ExternalDataError, match="max_checksum_bytes"):
        onnxcore.load(path)
    assert time.perf_counter() - start < 5
    # Within the bound the checksum is verified (and, here, does not match).
    small = _external_model(tmp_path, 64, 0)
    with pytest.raises(onnxcore.ExternalDataError, match="SHA-1"):
        onnxcore.load(small)


def _constant_of_shape(tmp_path: Path, count: int) -> Path:
    value = h.make_tensor("v", TP.INT8, [1], [1])
    model = _model(
        [h.make_node("ConstantOfShape", ["S"], ["Y"], value=value)],
        [],
        [h.make_tensor_value_info("Y", TP.INT8, ["n"])],
        inits=[numpy_helper.from_array(np.array([count], np.int64), "S")],
    )
    path = tmp_path / "cos.onnx"
    path.write_bytes(model)
    return path


def test_the_cli_runs_a_model_as_untrusted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # 300 MB from one ConstantOfShape: within the defaults, past the preset's max_alloc_bytes (256 MiB).
    path = _constant_of_shape(tmp_path, 300_000_000)
    assert main(["run", str(path), "--untrusted"]) == 1
    assert "exceeds the limit of 268435456 elements" in capsys.readouterr().err
    assert main(["run", str(path)]) == 0
    capsys.readouterr()
    out = tmp_path / "page.html"
    main(["report", str(path), "--untrusted", "--profile", "1", "-o", str(out)])
    # The profile's run is refused under the preset (the page or the command says so, whichever reports it).
    assert "268435456" in (out.read_text() if out.exists() else "") + capsys.readouterr().err


def _identity(tp: Any) -> bytes:
    g = h.make_graph(
        [h.make_node("Identity", ["X"], ["Y"])], "g", [h.make_value_info("X", tp)], [h.make_value_info("Y", tp)]
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 21)])
    m.ir_version = 10
    return bytes(m.SerializeToString())


FEED_TYPES = {
    "float": h.make_tensor_type_proto(TP.FLOAT, ["N"]),
    "string": h.make_tensor_type_proto(TP.STRING, ["N"]),
    "float8e5m2fnuz": h.make_tensor_type_proto(TP.FLOAT8E5M2FNUZ, ["N"]),
    "sequence": h.make_sequence_type_proto(h.make_tensor_type_proto(TP.FLOAT, ["N"])),
    "optional": h.make_optional_type_proto(h.make_tensor_type_proto(TP.FLOAT, ["N"])),
}
HOSTILE_FEEDS = [
    1, 1.5, "monday", b"x", [1, 2], [[1, 2], [3]], [["a"], [1]], {"a": 1}, np.array(["monday"]),
    np.array([3, 4], np.int32), np.array([b"\xff"]), np.array(["1.5", "abc", "nan"], dtype="<U3"), np.array([1 + 2j]),
    np.array([object()], dtype=object), np.array([None], dtype=object), np.zeros((2, 2)), np.float32(1),
    [np.zeros(2, np.float32), "x"], np.array([np.datetime64("2020-01-01")]), np.zeros(2, "V4"),
    np.array([1], np.uint64),
]  # fmt: skip


@pytest.mark.parametrize("kind", sorted(FEED_TYPES))
def test_a_bad_feed_is_an_input_error(kind: str) -> None:
    # issue 41's outside campaign: feed conversion raised a bare ValueError ("invalid literal for int() with base
    # 10: 'monday'") and TypeError ("Cannot cast array data from dtype(float8_e5m2fnuz) to dtype('<U3')").
    sess = onnxcore.Session(_identity(FEED_TYPES[kind]))
    refused = 0
    for value in HOSTILE_FEEDS:
        for timeout in (None, 30.0):  # the fast path (precomputed feed checks) and the general one
            try:
                sess.run(None, {"X": value}, timeout=timeout)
            except onnxcore.InputError:
                refused += 1
    assert refused >= len(HOSTILE_FEEDS)  # most are refused; none with another error


def test_a_test_package_runs_under_the_given_limits(capsys: pytest.CaptureFixture[str]) -> None:
    case = corpus.node_cases_dir() / "test_constantofshape_float_ones"
    assert run_case(case).status == "pass"
    tiny = dataclasses.replace(DEFAULT_LIMITS, max_alloc_bytes=16)
    refused = run_case(case, limits=tiny)
    assert refused.status == "error" and "max_alloc_bytes (16)" in refused.detail
    assert main(["conformance", str(corpus.node_cases_dir()), "--untrusted", "--filter", "test_constantofshape*"]) == 0
    assert "pass" in capsys.readouterr().out
