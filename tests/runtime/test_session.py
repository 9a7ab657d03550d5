"""Session: construction, feeds (InputError), outputs, intermediates, errors, unsupported operators.

Models are built with the onnx helper (an oracle/tool in tests only) and handed to onnxcore as octets.
Results are compared with onnxruntime where a numeric result is asserted.
"""

from __future__ import annotations

import copy
import time
from typing import Any

import numpy as np
import pytest

import onnxcore
from onnxcore import EvaluationError, InputError, LimitError, UnsupportedOperatorError, ValidationError
from onnxcore.kernels.registry import kernel
from onnxcore.runtime.plan import Plan

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as TP  # noqa: E402
from onnx import helper as h  # noqa: E402

TEST_DOMAIN = "test.onnxcore"


# Test-only kernels, in a custom domain that no production kernel uses (Clause 16.1).
@kernel("Fail", 1, domain=TEST_DOMAIN)
def _fail(x: np.ndarray) -> np.ndarray:
    raise ZeroDivisionError("deliberate failure")


@kernel("Twice", 1, domain=TEST_DOMAIN)
def _twice(x: np.ndarray, *, factor: int = 2) -> np.ndarray:
    return x * np.asarray(factor, dtype=x.dtype)


@kernel("Counter", 1, domain=TEST_DOMAIN)
def _counter(x: np.ndarray) -> np.ndarray:
    _counter.calls += 1  # type: ignore[attr-defined]
    return x


_counter.calls = 0  # type: ignore[attr-defined]


@kernel("Sleep", 1, domain=TEST_DOMAIN)
def _sleep(x: np.ndarray, *, ms: int = 1) -> np.ndarray:
    time.sleep(ms / 1000)
    return x


def _model(nodes: list[Any], inputs: list[Any], outputs: list[Any], *, opset: int = 18, **kw: Any) -> bytes:
    g = h.make_graph(nodes, "g", inputs, outputs, initializer=kw.pop("initializer", None))
    imports = [h.make_opsetid("", opset), h.make_opsetid(TEST_DOMAIN, 1), *kw.pop("extra_imports", [])]
    m = h.make_model(g, opset_imports=imports, ir_version=kw.pop("ir_version", 10), **kw)
    return m.SerializeToString()


def _ort(model: bytes, feeds: dict[str, Any]) -> list[Any]:
    ort = pytest.importorskip("onnxruntime")
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    s = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    return s.run(None, feeds)


def _vi(name: str, elem: int = TP.FLOAT, shape: list[Any] | None = None) -> Any:
    return h.make_tensor_value_info(name, elem, shape)


@pytest.fixture(params=["compiled", "interpreted"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Evaluate plans as generated Python from the first run, or interpret them always."""
    from onnxcore.runtime import plan as plan_mod

    if request.param == "compiled":
        monkeypatch.setattr(plan_mod, "COMPILE_AFTER", 0)
    else:
        monkeypatch.setattr(plan_mod, "MAX_STEPS", 0)
    return str(request.param)


@pytest.fixture
def chain() -> bytes:
    nodes = [
        h.make_node("Add", ["x", "y"], ["s"], name="add"),
        h.make_node("Relu", ["s"], ["r"], name="relu"),
        h.make_node("Mul", ["r", "x"], ["z"], name="mul"),
    ]
    return _model(nodes, [_vi("x", shape=[2, "N"]), _vi("y", shape=[2, "N"])], [_vi("z", shape=[2, "N"])])


def test_run_matches_onnxruntime(chain: bytes, mode: str) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 5), dtype=np.float32)
    y = rng.standard_normal((2, 5), dtype=np.float32)
    s = onnxcore.Session(chain)
    (got,) = s.run(None, {"x": x, "y": y})
    (want,) = _ort(chain, {"x": x, "y": y})
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert [d.name for d in s.inputs] == ["x", "y"] and [d.name for d in s.outputs] == ["z"]
    assert s.inputs[0].type.elem_type == onnxcore.ElementType.FLOAT
    assert s.inputs[0].type.shape == onnxcore.Shape(2, "N")


def test_session_from_path_and_model(tmp_path: Any, chain: bytes) -> None:
    p = tmp_path / "m.onnx"
    p.write_bytes(chain)
    x = np.ones((2, 3), np.float32)
    a = onnxcore.Session(p).run(None, {"x": x, "y": x})
    b = onnxcore.Session(onnxcore.load(chain)).run(["z"], {"x": x, "y": x})
    np.testing.assert_array_equal(a[0], b[0])
    c = onnxcore.Session(onnx.load_from_string(chain)).run(None, {"x": x, "y": x})  # onnx's own ModelProto
    np.testing.assert_array_equal(a[0], c[0])
    with pytest.raises(TypeError):
        onnxcore.Session(42)
    np.testing.assert_array_equal(a[0], (x + x) * x)


def test_intermediates_returns_every_node_value(chain: bytes, mode: str) -> None:
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 3
    y = np.ones((2, 3), np.float32)
    outs, values = onnxcore.Session(chain).run(None, {"x": x, "y": y}, intermediates=True)
    assert set(values) == {"s", "r", "z"}
    np.testing.assert_array_equal(values["s"], x + y)
    np.testing.assert_array_equal(values["r"], np.maximum(x + y, 0))
    np.testing.assert_array_equal(outs[0], values["z"])


def test_output_subset_and_intermediate_name(chain: bytes) -> None:
    x = np.full((2, 2), -1.0, np.float32)
    s = onnxcore.Session(chain)
    (r, z) = s.run(["r", "z"], {"x": x, "y": x})
    np.testing.assert_array_equal(r, np.zeros((2, 2), np.float32))
    np.testing.assert_array_equal(z, np.zeros((2, 2), np.float32))
    with pytest.raises(InputError, match="unknown output"):
        s.run(["nope"], {"x": x, "y": x})


def test_unused_nodes_are_not_evaluated(mode: str) -> None:
    # Clause 8.2: a node whose outputs nobody uses may be elided.
    nodes = [
        h.make_node("Counter", ["x"], ["dead"], domain=TEST_DOMAIN),
        h.make_node("Counter", ["x"], ["live"], domain=TEST_DOMAIN),
        h.make_node("Identity", ["live"], ["y"]),
    ]
    s = onnxcore.Session(_model(nodes, [_vi("x", shape=[1])], [_vi("y", shape=[1])]))
    before = _counter.calls  # type: ignore[attr-defined]
    s.run(None, {"x": np.ones(1, np.float32)})
    assert _counter.calls - before == 1  # type: ignore[attr-defined]
    s.run(None, {"x": np.ones(1, np.float32)}, intermediates=True)  # debugging evaluates everything
    assert _counter.calls - before == 3  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("feed", "match"),
    [
        ({"x": np.ones((2, 3), np.float64), "y": np.ones((2, 3), np.float32)}, "element type"),
        ({"x": np.ones((2, 3, 1), np.float32), "y": np.ones((2, 3), np.float32)}, "rank"),
        ({"x": np.ones((3, 3), np.float32), "y": np.ones((3, 3), np.float32)}, "extent"),
        ({"x": np.ones((2, 3), np.float32), "y": np.ones((2, 4), np.float32)}, "dimension variable 'N'"),
        ({"x": np.ones((2, 3), np.float32)}, "not fed"),
        ({"x": [[1.0]], "y": np.ones((2, 3), np.float32)}, "numpy array"),
        ({"x": np.ones((2, 3), np.float32), "y": np.ones((2, 3), np.float32), "w": np.ones(1)}, "not an input"),
    ],
)
def test_input_errors(chain: bytes, feed: dict[str, Any], match: str) -> None:
    with pytest.raises(InputError, match=match):
        onnxcore.Session(chain).run(None, feed)


def test_initializers_default_override_and_constants() -> None:
    # Clause 7.2: an initializer that is also an input is a default the caller may override;
    # one that is not an input is a constant and cannot be fed.
    nodes = [h.make_node("Add", ["x", "b"], ["t"]), h.make_node("Mul", ["t", "k"], ["y"])]
    inits = [h.make_tensor("b", TP.FLOAT, [2], [1.0, 2.0]), h.make_tensor("k", TP.FLOAT, [2], [10.0, 10.0])]
    model = _model(nodes, [_vi("x", shape=[2]), _vi("b", shape=[2])], [_vi("y", shape=[2])], initializer=inits)
    s = onnxcore.Session(model)
    x = np.zeros(2, np.float32)
    np.testing.assert_array_equal(s.run(None, {"x": x})[0], [10.0, 20.0])
    np.testing.assert_array_equal(s.run(None, {"x": x, "b": np.ones(2, np.float32)})[0], [10.0, 10.0])
    assert [d.has_default for d in s.inputs] == [False, True]
    with pytest.raises(InputError, match=r"Clause 7\.2"):
        s.run(None, {"x": x, "k": x})


def test_output_that_is_an_initializer_is_a_private_copy(mode: str) -> None:
    inits = [h.make_tensor("c", TP.FLOAT, [2], [1.0, 2.0])]
    model = _model([h.make_node("Identity", ["c"], ["y"])], [], [_vi("y", shape=[2])], initializer=inits)
    s = onnxcore.Session(model)
    (y,) = s.run(None, {})
    y[:] = 99
    np.testing.assert_array_equal(s.run(None, {})[0], [1.0, 2.0])


def test_string_feeds_become_bytes() -> None:
    model = _model([h.make_node("Identity", ["x"], ["y"])], [_vi("x", TP.STRING, [2])], [_vi("y", TP.STRING, [2])])
    (y,) = onnxcore.Session(model).run(None, {"x": np.array(["a", "é"])})
    assert y.dtype == object and y.tolist() == [b"a", "é".encode()]


@pytest.mark.parametrize(
    "feed",
    [
        np.array([["Paris", ""], ["Lyon", "Nice"]]),  # numpy text, ASCII: the code points taken as octets
        np.array([["é", "x"], ["日本", "z"]]),  # not ASCII: encoded one by one
        np.asfortranarray(np.array([["ab", "c"], ["def", "g"]])),
        np.array([["ab", "c"], ["d", "efg"]])[:, ::-1],
        np.array([[b"ab", b""], [b"c", b"xyz"]]),  # fixed-width bytes
        np.array([["a", b"b"], ["c", "d"]], dtype=object),
        np.array([[f"city {i}", "x" * (i % 7)] for i in range(40)]),  # enough elements for the octets' path
        np.array([["é" if i == 39 else "e", "x"] for i in range(40)]),  # one not ASCII among many
    ],
)
def test_every_kind_of_string_feed_becomes_the_same_bytes(feed: np.ndarray) -> None:
    """A STRING feed of numpy text, fixed-width bytes or objects becomes an object array of the UTF-8 bytes of each
    element, in its shape (Clause 6: a string is its UTF-8 octets), whichever conversion applies."""
    shape = list(feed.shape)
    model = _model([h.make_node("Identity", ["x"], ["y"])], [_vi("x", TP.STRING, shape)], [_vi("y", TP.STRING, shape)])
    (y,) = onnxcore.Session(model).run(None, {"x": feed})
    expected = [[v if isinstance(v, bytes) else str(v).encode() for v in row] for row in feed.tolist()]
    assert y.dtype == object and y.shape == feed.shape and y.tolist() == expected
    assert all(type(v) is bytes for v in y.ravel())


def test_evaluation_error_names_the_node(mode: str) -> None:
    nodes = [
        h.make_node("Relu", ["x"], ["r"], name="first"),
        h.make_node("Fail", ["r"], ["y"], name="boom", domain=TEST_DOMAIN),
    ]
    s = onnxcore.Session(_model(nodes, [_vi("x", shape=[2, 3])], [_vi("y", shape=[2, 3])]))
    with pytest.raises(EvaluationError) as ei:
        s.run(None, {"x": np.ones((2, 3), np.float32)})
    err = ei.value
    msg = str(err)
    assert "boom" in msg and "Fail" in msg and "node 1" in msg and "float32[2, 3]" in msg
    assert err.node_index == 1 and err.node_name == "boom" and err.op_type == "Fail"  # type: ignore[attr-defined]
    assert err.inputs == [("r", "float32[2, 3]")]  # type: ignore[attr-defined]
    assert isinstance(err.__cause__, ZeroDivisionError)


def test_unsupported_operators_listed_all_at_once() -> None:
    # Clause 4.4, 16.1: every unsupported operator is named, in the graph, its subgraphs and a
    # custom domain, before anything is evaluated.
    then_g = h.make_graph(
        [h.make_node("NoSuchOp", ["x"], ["a"], domain="other.domain")], "then", [], [_vi("a", shape=[1])]
    )
    else_g = h.make_graph([h.make_node("Identity", ["x"], ["b"])], "else", [], [_vi("b", shape=[1])])
    nodes = [
        h.make_node("Frobnicate", ["x"], ["f"], domain=TEST_DOMAIN),
        h.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g),
        h.make_node("Relu", ["x"], ["z"]),
    ]
    model = _model(
        nodes,
        [_vi("x", shape=[1]), _vi("c", TP.BOOL, [])],
        [_vi("y", shape=[1]), _vi("z", shape=[1]), _vi("f", shape=[1])],
        extra_imports=[h.make_opsetid("other.domain", 3)],
    )
    with pytest.raises(UnsupportedOperatorError) as ei:
        onnxcore.Session(model, check=False)
    ops = ei.value.operators
    assert (TEST_DOMAIN, "Frobnicate", 1) in ops and ("other.domain", "NoSuchOp", 3) in ops
    assert len(ops) == 2
    assert "Frobnicate" in str(ei.value) and "NoSuchOp" in str(ei.value)


def test_operator_not_in_imported_version_is_unsupported() -> None:
    # Gelu enters the default domain at version 20; a model importing 18 cannot use it.
    model = _model([h.make_node("Gelu", ["x"], ["y"])], [_vi("x", shape=[1])], [_vi("y", shape=[1])])
    with pytest.raises(UnsupportedOperatorError) as ei:
        onnxcore.Session(model, check=False)
    assert ei.value.operators == [("", "Gelu", 18)]


def test_custom_domain_kernel_with_attribute() -> None:
    node = h.make_node("Twice", ["x"], ["y"], domain=TEST_DOMAIN, factor=3)
    s = onnxcore.Session(_model([node], [_vi("x", shape=[2])], [_vi("y", shape=[2])]))
    np.testing.assert_array_equal(s.run(None, {"x": np.array([1, 2], np.float32)})[0], [3, 6])


def test_model_with_errors_is_refused() -> None:
    # A node reads a value nobody defines (Clause 7.5).
    model = _model([h.make_node("Relu", ["nowhere"], ["y"])], [_vi("x", shape=[1])], [_vi("y", shape=[1])])
    with pytest.raises(ValidationError):
        onnxcore.Session(model)


def test_undefined_value_is_refused_without_validator() -> None:
    model = _model([h.make_node("Relu", ["nowhere"], ["y"])], [_vi("x", shape=[1])], [_vi("y", shape=[1])])
    with pytest.raises(ValidationError, match="nowhere"):
        onnxcore.Session(model, check=False)


def test_attribute_undefined_at_bound_version_is_refused_without_validator() -> None:
    # LSTM's kernel serves versions 7, 14 and 22; layout enters at 14 (Clause 10.4), so LSTM-7 with
    # layout=1 must not run as the batch-major layout of LSTM-14.
    node = h.make_node("LSTM", ["x", "w", "r"], ["y"], hidden_size=2, layout=1)
    inputs = [_vi("x", shape=[1, 3, 2]), _vi("w", shape=[1, 8, 2]), _vi("r", shape=[1, 8, 2])]
    model = _model([node], inputs, [_vi("y")], opset=7)
    with pytest.raises(ValidationError, match=r"'layout' is not defined by LSTM-7"):
        onnxcore.Session(model, check=False)
    # The same node at opset 14 binds and runs.
    s = onnxcore.Session(_model([node], inputs, [_vi("y")], opset=14), check=False)
    feeds = {n: np.ones(shp, np.float32) for n, shp in (("x", (1, 3, 2)), ("w", (1, 8, 2)), ("r", (1, 8, 2)))}
    (y,) = s.run(None, feeds)
    assert y.shape == (1, 3, 1, 2)


def test_arity_is_refused_at_binding_without_validator() -> None:
    # A structural fuzz of unchecked sessions found kernels called with too few inputs (a TypeError inside):
    # binding refuses what E-INPUT-ARITY and E-OUTPUT-ARITY report (Clause 7.3.2).
    x = _vi("x", shape=[2])
    few = _model([h.make_node("Div", ["x"], ["y"])], [x], [_vi("y", shape=[2])])
    with pytest.raises(ValidationError, match=r"node 0 \(Div\): Div-14 has at least 2 inputs, the node gives 1"):
        onnxcore.Session(few, check=False)
    many = _model([h.make_node("Relu", ["x"], ["y", "z"])], [x], [_vi("y", shape=[2])])
    with pytest.raises(ValidationError, match=r"Relu-14 has at most 1 outputs, the node gives 2"):
        onnxcore.Session(many, check=False)


@pytest.mark.parametrize("check", [True, False])
def test_flag_attribute_outside_0_and_1_is_refused(check: bool) -> None:
    # keepdims=2 is read as true by numpy-based evaluators and as false by onnxruntime (defs/flags.py):
    # the validator warns (W-ATTR-FLAG), the evaluator refuses rather than pick one (Clause 4.4).
    node = h.make_node("ReduceSum", ["x"], ["y"], keepdims=2, name="sum")
    model = _model([node], [_vi("x", shape=[2, 3])], [_vi("y", shape=[1, 1])], opset=13)
    assert [f.code for f in onnxcore.check(model).findings] == ["W-ATTR-FLAG"]
    with pytest.raises(ValidationError, match=r"node 0 \(ReduceSum\): attribute 'keepdims' is 2; ReduceSum-13"):
        onnxcore.Session(model, check=check)
    node = h.make_node("ReduceSum", ["x"], ["y"], keepdims=0, name="sum")
    s = onnxcore.Session(_model([node], [_vi("x", shape=[2, 3])], [_vi("y", shape=[])], opset=13), check=check)
    (y,) = s.run(None, {"x": np.ones((2, 3), np.float32)})
    assert y.shape == () and y == 6


def _nested_ifs(depth: int) -> bytes:
    inner = h.make_graph([h.make_node("Identity", ["x"], ["o0"])], "g0", [], [_vi("o0", shape=[1])])
    for d in range(1, depth + 1):
        inner = h.make_graph(
            [h.make_node("If", ["c"], [f"o{d}"], then_branch=inner, else_branch=inner)],
            f"g{d}",
            [],
            [_vi(f"o{d}", shape=[1])],
        )
    nodes = [h.make_node("If", ["c"], ["y"], then_branch=inner, else_branch=inner)]
    return _model(nodes, [_vi("x", shape=[1]), _vi("c", TP.BOOL, [])], [_vi("y", shape=[1])])


def test_nesting_depth_limit() -> None:
    model = _nested_ifs(4)
    x = np.array([5.0], np.float32)
    (y,) = onnxcore.Session(model, check=False).run(None, {"x": x, "c": np.array(True)})
    np.testing.assert_array_equal(y, x)
    with pytest.raises(LimitError, match="max_nesting_depth"):
        onnxcore.Session(model, check=False, limits=onnxcore.Limits(max_nesting_depth=3))


def test_compiled_after_first_run_and_interpreted_when_long(monkeypatch: pytest.MonkeyPatch, chain: bytes) -> None:
    # A plan is interpreted on its first evaluation and compiled from the second; plans longer
    # than MAX_STEPS are always interpreted. All paths agree.
    from onnxcore.runtime import plan as plan_mod

    x = np.linspace(-2, 2, 6, dtype=np.float32).reshape(2, 3)
    s = onnxcore.Session(chain)
    first = s.run(None, {"x": x, "y": x})
    assert s._plan.compiled is None
    second = s.run(None, {"x": x, "y": x})
    assert s._plan.compiled is not None
    np.testing.assert_array_equal(first[0], second[0])
    monkeypatch.setattr(plan_mod, "MAX_STEPS", 0)
    s = onnxcore.Session(chain)
    for _ in range(3):
        np.testing.assert_array_equal(s.run(None, {"x": x, "y": x})[0], first[0])
    assert s._plan.compiled is None


def test_scalar_feed_and_optional_input() -> None:
    opt = h.make_tensor_type_proto(TP.FLOAT, [])
    opt_in = h.make_value_info("o", h.make_optional_type_proto(opt))
    nodes = [h.make_node("Identity", ["x"], ["y"])]
    g = h.make_graph(nodes, "g", [_vi("x", shape=[]), opt_in], [_vi("y", shape=[])])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 18)], ir_version=10)
    s = onnxcore.Session(m.SerializeToString())
    (y,) = s.run(None, {"x": np.float32(2.5)})  # a numpy scalar is taken as a 0-d array
    assert isinstance(y, np.ndarray) and y.shape == () and float(y) == 2.5
    with pytest.raises(InputError, match="element type"):
        s.run(None, {"x": np.float64(2.5)})


_made: list[Any] = []


@kernel("Make", 1, domain=TEST_DOMAIN)
def _make(x: np.ndarray) -> np.ndarray:
    import weakref

    y = x + np.ones((), x.dtype)
    _made.append(weakref.ref(y))
    return y


@kernel("Probe", 1, domain=TEST_DOMAIN)
def _probe(x: np.ndarray) -> np.ndarray:
    # The value "Make" produced was last read by the node before this one: freed by now.
    return np.array(_made[-1]() is None)


def test_values_are_freed_after_last_use(mode: str) -> None:
    nodes = [
        h.make_node("Make", ["x"], ["a"], domain=TEST_DOMAIN),
        h.make_node("Neg", ["a"], ["b"]),
        h.make_node("Probe", ["b"], ["freed"], domain=TEST_DOMAIN),
    ]
    s = onnxcore.Session(_model(nodes, [_vi("x", shape=[3])], [_vi("freed", TP.BOOL, [])]))
    (freed,) = s.run(None, {"x": np.zeros(3, np.float32)})
    assert bool(freed)
    # With intermediates=True nothing is freed (every value is returned).
    (freed,), values = s.run(None, {"x": np.zeros(3, np.float32)}, intermediates=True)
    assert not bool(freed) and values["a"].tolist() == [1.0, 1.0, 1.0]


@kernel("Attrs", 1, domain=TEST_DOMAIN)
def _attrs(x: np.ndarray, **kw: Any) -> np.ndarray:
    return np.array(sorted(kw), dtype=object)


def test_attribute_names_are_never_code(mode: str) -> None:
    # Attribute names come from the (untrusted) model; in generated code only identifiers are
    # spelled as keywords, anything else is passed through a dict.
    node = h.make_node(
        "Attrs", ["x"], ["y"], domain=TEST_DOMAIN, **{"a-b": 1, "x) or __import__('os') #": 2, "lambda": 3, "ok": 4}
    )
    s = onnxcore.Session(_model([node], [_vi("x", shape=[1])], [_vi("y", TP.STRING, [4])]), check=False)
    for _ in range(2):
        (y,) = s.run(None, {"x": np.ones(1, np.float32)})
        assert y.tolist() == sorted(["a-b", "x) or __import__('os') #", "lambda", "ok"])


def test_profile_times_each_step_and_names_what_is_fused() -> None:
    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    nodes = [
        h.make_node("Sleep", ["x"], ["s"], name="nap", domain=TEST_DOMAIN, ms=30),
        h.make_node("Conv", ["s", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        h.make_node("Relu", ["c"], ["y"], name="act"),
    ]
    inits = [h.make_tensor("w", TP.FLOAT, list(w.shape), w.ravel())]
    model = _model(nodes, [_vi("x", shape=[1, 3, 8, 8])], [_vi("y", shape=[1, 4, 8, 8])], initializer=inits)
    s = onnxcore.Session(model)
    feeds = {"x": rng.standard_normal((1, 3, 8, 8)).astype(np.float32)}
    steps = s.profile(feeds, repeat=2)
    assert [(st.index, st.op_type, st.name) for st in steps] == [(0, "Sleep", "nap"), (1, "Conv", "conv")]
    assert steps[0].domain == TEST_DOMAIN and steps[0].fused == ()
    assert steps[1].fused == ((2, "Relu", "act"),)
    assert 0.03 <= steps[0].seconds < 1 and 0 < steps[1].seconds < steps[0].seconds
    # Only what the requested outputs need is timed, and the run's results are unaffected: the same bits as a session
    # that never profiled (the Conv's measured path is kept per process), the graph's values as written within
    # float32 rounding (the path sums in its own order).
    assert [st.op_type for st in s.profile(feeds, output_names=["s"], repeat=1)] == ["Sleep"]
    np.testing.assert_array_equal(s.run(None, feeds)[0], onnxcore.Session(model).run(None, feeds)[0])
    as_written = s.run(None, feeds, intermediates=True)[0][0]
    np.testing.assert_allclose(s.run(None, feeds)[0], as_written, rtol=1e-5, atol=1e-5)
    with pytest.raises(InputError):
        s.profile(feeds, repeat=0)
    with pytest.raises(InputError):
        s.profile({"x": np.zeros((1, 2, 8, 8), np.float32)})


def test_profile_times_one_plan_and_never_its_first_run(monkeypatch: pytest.MonkeyPatch) -> None:
    # A feed-decided Shape: the general path runs the general plan, then (a signature's second run) a plan
    # specialised to the shapes. Before the fix the repeats summed step i of one plan with step i of the other and
    # timed the specialised plan's first run (its one-time costs: 2.6 ms credited to a RotaryEmbedding of 12 us).
    nodes = [
        h.make_node("Shape", ["x"], ["s"]),
        h.make_node("Reshape", ["x", "s"], ["r"]),
        h.make_node("Relu", ["r"], ["y"]),
    ]
    s = onnxcore.Session(_model(nodes, [_vi("x", shape=["n", 3])], [_vi("y", shape=["n", 3])]))
    feeds = {"x": np.arange(-3, 3, dtype=np.float32).reshape(2, 3)}
    executed: list[int] = []
    timed: list[tuple[int, bool]] = []
    execute, profile = Plan.execute, Plan.profile

    def spy_execute(self: Plan, vals: list[Any]) -> None:
        executed.append(id(self))
        execute(self, vals)

    def spy_profile(self: Plan, vals: list[Any]) -> list[float]:
        timed.append((id(self), id(self) in executed))
        executed.append(id(self))
        return profile(self, vals)

    monkeypatch.setattr(Plan, "execute", spy_execute)
    monkeypatch.setattr(Plan, "profile", spy_profile)
    steps = s.profile(feeds, repeat=3)
    plans = {p for p, _ in timed}
    assert len(timed) == 3 and len(plans) == 1, timed  # one plan, timed `repeat` times
    assert all(warm for _, warm in timed), timed  # each timed run had a run of that plan before it
    # The plan timed is the one the general path settles on: the specialised one (its Shape folded away).
    assert [st.op_type for st in steps] == [st.op_type for st in s.profile(feeds, repeat=1)]
    assert "Shape" not in [st.op_type for st in steps]


def test_profile_ends_when_the_plan_never_settles(monkeypatch: pytest.MonkeyPatch) -> None:
    # A plan made anew at every call (none is, today; the loop must not wait for one that settles): the profile
    # ends, one step time per step of a plan, each timed run that plan's own.
    nodes = [h.make_node("Relu", ["x"], ["r"]), h.make_node("Transpose", ["r"], ["y"])]
    model = _model(nodes, [_vi("x", shape=[2, 3])], [_vi("y", shape=[3, 2])])
    feeds = {"x": np.ones((2, 3), np.float32)}
    expected = [(st.op_type, st.fused) for st in onnxcore.Session(model).profile(feeds, repeat=1)]
    s = onnxcore.Session(model)
    real = s._prepare

    def fresh(*args: Any) -> tuple[Plan, list[Any]]:
        plan, vals = real(*args)
        return copy.copy(plan), vals

    monkeypatch.setattr(s, "_prepare", fresh)
    for repeat in (1, 3):
        steps = s.profile(feeds, repeat=repeat)
        assert [(st.op_type, st.fused) for st in steps] == expected and all(st.seconds > 0 for st in steps)


def test_profile_reports_a_failing_step_as_run_does() -> None:
    nodes = [h.make_node("Fail", ["x"], ["y"], name="boom", domain=TEST_DOMAIN)]
    s = onnxcore.Session(_model(nodes, [_vi("x", shape=[2])], [_vi("y", shape=[2])]))
    with pytest.raises(EvaluationError, match="boom"):
        s.profile({"x": np.ones(2, np.float32)})


def test_a_scalar_constant_read_from_unaligned_octets_stays_a_scalar() -> None:
    # The raw_data of this Constant sits at an odd offset of the file, so it is copied once to be aligned;
    # numpy's ascontiguousarray would have made the scalar one-dimensional (found by shape inference).
    import corpus

    path = corpus.onnx_data_dir() / "pytorch-converted" / "test_Softsign" / "model.onnx"
    model = onnxcore.load(path)
    assert model.graph.node[1].op_type == "Constant" and not model.graph.node[1].attribute[0].t.dims
    x = np.linspace(-2, 2, 30, dtype=np.float32).reshape(3, 2, 5)
    (y,), values = onnxcore.Session(model).run(None, {"0": x}, intermediates=True)
    assert values["2"].shape == ()
    np.testing.assert_allclose(y, x / (1 + np.abs(x)), rtol=1e-6)


# --- An unchecked session still refuses declared types its definitions do not admit (issue 29) ---------------------


def _add_model(a_elem: int, b_elem: int) -> bytes:
    g = h.make_graph(
        [h.make_node("Add", ["a", "b"], ["y"])],
        "g",
        [h.make_tensor_value_info("a", a_elem, [2]), h.make_tensor_value_info("b", b_elem, [2])],
        [h.make_tensor_value_info("y", a_elem, [2])],
    )
    return h.make_model(g, opset_imports=[h.make_opsetid("", 19)], ir_version=9).SerializeToString()


def test_unchecked_session_refuses_a_type_the_definition_does_not_admit() -> None:
    # numpy would try float + bytes and fail with a TypeError mid-run; the definition refuses it at binding.
    with pytest.raises(onnxcore.ValidationError, match=r"input 1 \('b'\) is tensor\(string\); Add-14"):
        onnxcore.Session(_add_model(TP.FLOAT, TP.STRING), check=False)


def test_unchecked_session_refuses_one_type_variable_bound_twice() -> None:
    # numpy would silently promote float + double to double.
    with pytest.raises(onnxcore.ValidationError, match="binds type variable T"):
        onnxcore.Session(_add_model(TP.FLOAT, TP.DOUBLE), check=False)
    (y,) = onnxcore.Session(_add_model(TP.FLOAT, TP.FLOAT), check=False).run(
        None, {"a": np.ones(2, np.float32), "b": np.ones(2, np.float32)}
    )
    assert y.tolist() == [2.0, 2.0]


def test_unchecked_session_refuses_an_attribute_of_another_type() -> None:
    # Found by the fuzz campaign: AveragePool's strides given as a graph reached a plan-time rewrite as a TypeError.
    body = h.make_graph([], "body", [], [])
    node = h.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    node.attribute.append(h.make_attribute("strides", body))
    g = h.make_graph(
        [node],
        "g",
        [h.make_tensor_value_info("x", TP.FLOAT, [1, 1, 4, 4])],
        [h.make_tensor_value_info("y", TP.FLOAT, None)],
    )
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 19)], ir_version=9).SerializeToString()
    with pytest.raises(
        onnxcore.ValidationError, match="attribute 'strides' is of type GRAPH; AveragePool-19 defines it as INTS"
    ):
        onnxcore.Session(model, check=False)
