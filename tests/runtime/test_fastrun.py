"""The common case of ``Session.run`` (issue 27: its fixed cost): feeds accepted by the precomputed checks of
``runtime/fastrun.py`` run exactly as through the general checks, and every feed those checks do not accept still
gets the general path's error or conversion (Clauses 6.5, 7.1, 11.2, 15.4)."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

import onnxcore
from onnxcore import InputError, LimitError
from onnxcore.kernels import KernelSet
from onnxcore.kernels.threads import active_threads
from onnxcore.limits import DEFAULT_LIMITS, active_limits, active_run_control

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto as TP  # noqa: E402
from onnx import helper as h  # noqa: E402

ME = "test.onnxcore.fastrun"


def _model(nodes: list[Any], inputs: list[Any], outputs: list[Any], *, domains: dict[str, int] | None = None) -> bytes:
    imports = [h.make_opsetid("", 18)] + [h.make_opsetid(d, v) for d, v in (domains or {}).items()]
    m = h.make_model(h.make_graph(nodes, "g", inputs, outputs), opset_imports=imports, ir_version=9)
    return bytes(m.SerializeToString())


def _two_inputs() -> bytes:
    return _model(
        [h.make_node("Add", ["x", "y"], ["s"]), h.make_node("Log", ["s"], ["z"])],
        [h.make_tensor_value_info("x", TP.FLOAT, ["N", 4]), h.make_tensor_value_info("y", TP.FLOAT, ["N", 4])],
        [h.make_tensor_value_info("z", TP.FLOAT, ["N", 4])],
    )


def test_common_case_matches_onnxruntime_and_ignores_float_errors() -> None:
    data = _two_inputs()
    sess = onnxcore.Session(data)
    ref = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    x = np.array([[0.0, 1.0, -1.0, 2.0], [3.0, -4.0, 0.5, 0.0]], np.float32)
    feeds = {"x": x, "y": np.zeros_like(x)}
    before = np.geterr()
    # A caller's own floating-point state is restored after the run, and the run itself ignores errors (log(0)
    # is -inf, log(-1) NaN: results, Clause 11.2).
    with np.errstate(all="raise"):
        for _ in range(3):  # the first run is interpreted, later ones compiled
            (got,) = sess.run(None, feeds)
            np.testing.assert_array_equal(got, ref.run(None, feeds)[0])
        assert np.geterr()["divide"] == "raise"
        with pytest.raises(FloatingPointError):
            np.log(np.zeros(1, np.float32))
    assert np.geterr() == before


@pytest.mark.parametrize(
    ("feeds", "message"),
    [
        ({"x": np.zeros((2, 4), np.float32), "y": np.zeros((3, 4), np.float32)}, "dimension variable 'N'"),
        ({"x": np.zeros((2, 4), np.float32), "y": np.zeros((2, 5), np.float32)}, "extent 5 on axis 1"),
        ({"x": np.zeros((2, 4), np.float32), "y": np.zeros((2, 4), np.float64)}, "element type float64"),
        ({"x": np.zeros((2, 4), np.float32), "y": np.zeros((2, 4, 1), np.float32)}, "rank 3"),
        ({"x": np.zeros((2, 4), np.float32)}, "input 'y' is not fed"),
        ({"x": np.zeros((2, 4), np.float32), "q": np.zeros((2, 4), np.float32)}, "'q' is not an input"),
        ({"x": np.zeros((2, 4), np.float32), "y": [[0.0] * 4] * 2}, "expected a numpy array"),
    ],
)
def test_feeds_the_fast_check_refuses_get_the_general_error(feeds: dict[str, Any], message: str) -> None:
    sess = onnxcore.Session(_two_inputs())
    good = {"x": np.ones((2, 4), np.float32), "y": np.ones((2, 4), np.float32)}
    sess.run(None, good)
    sess.run(None, good)
    with pytest.raises(InputError, match=message):
        sess.run(None, feeds)


def test_limits_of_the_session_apply_to_feeds_and_kernels() -> None:
    limits = dataclasses.replace(DEFAULT_LIMITS, max_tensor_elements=6)
    sess = onnxcore.Session(_two_inputs(), limits=limits)
    with pytest.raises(LimitError, match="max_tensor_elements"):
        sess.run(None, {"x": np.zeros((2, 4), np.float32), "y": np.zeros((2, 4), np.float32)})
    small = {"x": np.ones((1, 4), np.float32), "y": np.ones((1, 4), np.float32)}
    np.testing.assert_array_equal(sess.run(None, small)[0], np.log(np.full((1, 4), 2.0, np.float32)))


def test_a_scalar_feed_is_converted_as_before() -> None:
    data = _model(
        [h.make_node("Neg", ["x"], ["y"])],
        [h.make_tensor_value_info("x", TP.FLOAT, [])],
        [h.make_tensor_value_info("y", TP.FLOAT, [])],
    )
    sess = onnxcore.Session(data)
    (got,) = sess.run(None, {"x": np.float32(2.0)})  # a numpy scalar: the general path converts it
    assert isinstance(got, np.ndarray) and got.shape == () and got == -2.0


def test_the_run_context_is_the_sessions() -> None:
    seen: list[tuple[Any, int, Any]] = []
    ops = KernelSet()

    @ops.kernel("Probe", 1, domain=ME)
    def probe(x: np.ndarray) -> np.ndarray:
        seen.append((active_limits(), active_threads(), active_run_control()))
        return x.copy()

    data = _model(
        [h.make_node("Probe", ["x"], ["y"], domain=ME)],
        [h.make_tensor_value_info("x", TP.FLOAT, [2])],
        [h.make_tensor_value_info("y", TP.FLOAT, [2])],
        domains={ME: 1},
    )
    limits = dataclasses.replace(DEFAULT_LIMITS, max_rank=7)
    sess = onnxcore.Session(data, limits=limits, custom_ops=ops, threads=2)
    for _ in range(3):
        sess.run(None, {"x": np.ones(2, np.float32)})
    assert seen == [(limits, 2, None)] * 3
    # Outside a run, nothing of it is left in effect.
    assert active_limits() is DEFAULT_LIMITS and active_threads() == 1 and active_run_control() is None


def test_read_only_outputs_are_copied_and_declared_shapes_warn() -> None:
    data = _model(
        [h.make_node("Identity", ["c"], ["y"]), h.make_node("Identity", ["x"], ["z"])],
        [h.make_tensor_value_info("x", TP.FLOAT, [2])],
        [h.make_tensor_value_info("y", TP.FLOAT, [3]), h.make_tensor_value_info("z", TP.FLOAT, [2])],
    )
    m = onnx.load_from_string(data)
    m.graph.initializer.append(onnx.numpy_helper.from_array(np.arange(2, dtype=np.float32), "c"))
    sess = onnxcore.Session(m.SerializeToString(), check=False)  # the declared [3] contradicts inference
    for _ in range(2):
        with pytest.warns(onnxcore.errors.OutputShapeWarning, match="output 'y'"):
            y, z = sess.run(None, {"x": np.ones(2, np.float32)})
        np.testing.assert_array_equal(z, [1.0, 1.0])
        assert y.flags.writeable
        y[0] = 5.0  # the caller's own copy: the next run is unaffected
    with pytest.warns(onnxcore.errors.OutputShapeWarning, match="output 'y'"):  # the general path warns alike
        (y,) = sess.run(["y"], {"x": np.ones(2, np.float32)})
    np.testing.assert_array_equal(y, [0.0, 1.0])


def test_named_outputs_take_the_common_path_with_their_own_plan() -> None:
    data = _model(
        [h.make_node("Neg", ["x"], ["a"]), h.make_node("Exp", ["x"], ["b"]), h.make_node("Shape", ["x"], ["s"])],
        [h.make_tensor_value_info("x", TP.FLOAT, ["N"])],
        [
            h.make_tensor_value_info("a", TP.FLOAT, ["N"]),
            h.make_tensor_value_info("b", TP.FLOAT, ["N"]),
            h.make_tensor_value_info("s", TP.INT64, [1]),
        ],
    )
    sess = onnxcore.Session(data)
    ref = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    for n in (3, 3, 3, 5, 5, 5):  # a shape's second run makes its specialised plan (Shape folded)
        feeds = {"x": np.linspace(-1, 1, n).astype(np.float32)}
        for names in (["b"], ["s", "a"], ["a", "b", "s"], ["a", "a"], []):
            got = sess.run(names, feeds)
            want = ref.run(names, feeds) if names else []
            assert len(got) == len(want)
            for g, w in zip(got, want):
                assert g.dtype == w.dtype and g.shape == w.shape
                np.testing.assert_allclose(g, w, rtol=1e-6)  # Exp: libraries round differently
    assert {("b",), ("s", "a"), ("a", "b", "s"), ("a", "a"), ()} <= set(sess._fast_targets)
    with pytest.raises(InputError, match="unknown output name"):
        sess.run(["nope"], {"x": np.ones(2, np.float32)})
    with pytest.raises(InputError, match="unknown output name"):  # the refusal is not remembered as a plan
        sess.run(["nope"], {"x": np.ones(2, np.float32)})


def _string_model() -> bytes:
    """A string feed next to a numeric one: LabelEncoder of ``s`` (strings to integers), ``x`` passed through."""
    enc = h.make_node(
        "LabelEncoder", ["s"], ["k"], domain="ai.onnx.ml", keys_strings=["a", "bé", "c"], values_int64s=[1, 2, 3]
    )
    return _model(
        [enc, h.make_node("Identity", ["x"], ["y"])],
        [h.make_tensor_value_info("s", TP.STRING, ["N"]), h.make_tensor_value_info("x", TP.FLOAT, ["N"])],
        [h.make_tensor_value_info("k", TP.INT64, ["N"]), h.make_tensor_value_info("y", TP.FLOAT, ["N"])],
        domains={"ai.onnx.ml": 2},
    )


@pytest.mark.parametrize(
    "strings",
    [
        np.array(["a", "bé", "zz", "c"]),  # numpy's str
        np.array(["a", "bé", "zz", "c"], dtype=object),  # Python str
        np.array([b"a", "bé".encode(), b"zz", b"c"], dtype=object),  # bytes, taken as they are
        np.array([b"a", "bé".encode(), b"zz", b"c"]),  # numpy's bytes
    ],
)
def test_string_feeds_take_the_common_path_converted_once(strings: np.ndarray) -> None:
    """A STRING input no longer sends every run to the general checks (issue 42): its feed is converted to bytes
    in one pass (Clause 6.4), the caller's array untouched, the outputs onnxruntime's."""
    data = _string_model()
    sess = onnxcore.Session(data)
    assert sess._fast_feeds.usable and sess._fast_feeds.strings == ("s",)
    ref = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    x = np.arange(4, dtype=np.float32)
    copy = strings.copy()
    for _ in range(3):  # interpreted, then compiled
        k, y = sess.run(None, {"s": strings, "x": x})
        np.testing.assert_array_equal(k, ref.run(None, {"s": np.array(["a", "bé", "zz", "c"]), "x": x})[0])
        np.testing.assert_array_equal(k, [1, 2, -1, 3])
        np.testing.assert_array_equal(y, x)
        assert y is not x
    np.testing.assert_array_equal(strings, copy)
    assert strings.dtype == copy.dtype


def test_a_bad_string_element_gets_the_general_error_on_the_common_path() -> None:
    sess = onnxcore.Session(_string_model())
    x = np.zeros(2, np.float32)
    with pytest.raises(InputError, match=r"input 's': a STRING element must be bytes or str, got int"):
        sess.run(None, {"s": np.array([b"a", 3], dtype=object), "x": x})
    with pytest.raises(InputError, match=r"input 's'.*rank 2 where the input declares rank 1"):
        sess.run(None, {"s": np.array([["a"]]), "x": np.zeros(1, np.float32)})
    tight = onnxcore.Session(_string_model(), limits=dataclasses.replace(DEFAULT_LIMITS, max_tensor_elements=3))
    with pytest.raises(LimitError):
        tight.run(None, {"s": np.array(["a"] * 4), "x": np.zeros(4, np.float32)})
    # and the run context is left as it was
    assert active_run_control() is None and active_limits() is DEFAULT_LIMITS
