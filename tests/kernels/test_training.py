"""Adagrad-1, Adam-1 and Momentum-1 (``ai.onnx.preview.training``); Gradient-1 is tested in test_gradient.py.

Oracles: every single-node ONNX 1-3 vector (``test_adagrad*``, ``test_adam*``, ``test_momentum*``,
``test_nesterov_momentum*``) through the kernel registry and through :class:`onnxcore.Session`
(``run_case``); ``onnx.reference.ReferenceEvaluator`` on random inputs (several tensors at once,
T = 0 and T > 0, float and double, broadcasting, attributes off their defaults). onnxruntime has
no kernels for this domain.
"""

from __future__ import annotations

from typing import Any

import corpus
import numpy as np
import pytest
from runtime.node_harness import assert_close, run_single_node_case

import onnxcore
from onnxcore.errors import OnnxCoreError, UnsupportedOperatorError
from onnxcore.kernels.registry import lookup

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as TP  # noqa: E402
from onnx import helper  # noqa: E402

TRAINING = "ai.onnx.preview.training"
PREFIXES = ("test_adagrad", "test_adam", "test_momentum", "test_nesterov_momentum")
CASES = {c.name: c for c in corpus.node_case_dirs() if c.name.startswith(PREFIXES) and "expanded" not in c.name}


@pytest.mark.parametrize("name", sorted(CASES))
def test_node_vector(name: str) -> None:
    out = run_single_node_case(CASES[name])
    assert out is not None, f"{name}: no kernel registered"
    actual, expected = out
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        assert a.dtype == e.dtype and a.shape == e.shape
        assert_close(a, e)


@pytest.mark.parametrize("name", sorted(CASES))
def test_node_vector_session(name: str) -> None:
    from onnxcore.conformance.runner import run_case

    r = run_case(CASES[name])
    assert r.status == "pass", (r.status, r.detail)


def test_vector_count() -> None:
    assert len(CASES) == 7


# ---------------------------------------------------------------------------------------------
# Random inputs against onnx.reference
# ---------------------------------------------------------------------------------------------

_KINDS = {"Adagrad": ("X", "G", "H"), "Adam": ("X", "G", "V", "H"), "Momentum": ("X", "G", "V")}
_OUT_KINDS = {"Adagrad": ("X", "H"), "Adam": ("X", "V", "H"), "Momentum": ("X", "V")}
_ELEM = {np.dtype(np.float32): TP.FLOAT, np.dtype(np.float64): TP.DOUBLE}


def _model(op: str, r: np.ndarray, t: np.ndarray, groups: list[dict[str, np.ndarray]], attrs: dict[str, Any]) -> Any:
    """A one-node model; ``groups[i][kind]`` is tensor ``i`` of each kind. Returns (bytes, feeds)."""
    kinds = _KINDS[op]
    names = ["R", "T"] + [f"{k}{i}" for k in kinds for i in range(len(groups))]
    feeds: dict[str, np.ndarray] = {"R": r, "T": t}
    for k in kinds:
        for i, g in enumerate(groups):
            feeds[f"{k}{i}"] = g[k]
    outs = [f"{k}{i}_new" for k in _OUT_KINDS[op] for i in range(len(groups))]
    node = helper.make_node(op, names, outs, domain=TRAINING, **attrs)
    ins = [helper.make_tensor_value_info(n, _ELEM.get(feeds[n].dtype, TP.INT64), feeds[n].shape) for n in names]
    # Each output: the type of the tensor it replaces, the broadcast shape of its group.
    shapes = [np.broadcast_shapes(*(g[k].shape for k in kinds)) for g in groups]
    out_vis = [
        helper.make_tensor_value_info(f"{k}{i}_new", _ELEM[g[k].dtype], shapes[i])
        for k in _OUT_KINDS[op]
        for i, g in enumerate(groups)
    ]
    g = helper.make_graph([node], "opt", ins, out_vis)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid(TRAINING, 1)], ir_version=7)
    return m.SerializeToString(), feeds


def _groups(rng: np.random.Generator, op: str, shapes: list[tuple[int, ...]], dtypes: list[Any]) -> list[dict]:
    out = []
    for shape, dt in zip(shapes, dtypes):
        g = {k: rng.standard_normal(shape).astype(dt) for k in _KINDS[op]}
        if "H" in g:
            g["H"] = np.abs(g["H"])  # accumulated squares are non-negative
        out.append(g)
    return out


def _compare(model: bytes, feeds: dict[str, np.ndarray], expect_dtypes: list[Any]) -> None:
    from onnx.reference import ReferenceEvaluator

    ours = onnxcore.Session(model).run(None, feeds)
    theirs = ReferenceEvaluator(onnx.load_from_string(model)).run(None, feeds)
    assert len(ours) == len(theirs) == len(expect_dtypes)
    for a, b, dt in zip(ours, theirs, expect_dtypes):
        # The reference's output types follow numpy promotion (Adam casts to float32); ours keep the
        # type of the tensor each output replaces, as the definitions say. Values are compared.
        assert a.dtype == np.dtype(dt)
        assert a.shape == np.shape(b)
        # Double: the reference reads FLOAT attributes as float32 scalars and so forms 1 - alpha in
        # float32 (Adam); we form it in double, a difference of about 1e-8 relative.
        tol = 1e-7 if a.dtype == np.float64 and np.asarray(b).dtype == np.float64 else 2e-6
        np.testing.assert_allclose(a.astype(np.float64), np.asarray(b, np.float64), rtol=tol, atol=tol)


_ATTRS = {
    "Adagrad": {"decay_factor": 0.25, "epsilon": 1e-3, "norm_coefficient": 0.05},
    "Adam": {"alpha": 0.8, "beta": 0.7, "epsilon": 1e-3, "norm_coefficient": 0.02, "norm_coefficient_post": 0.1},
    "Momentum": {"alpha": 0.9, "beta": 0.6, "mode": "standard", "norm_coefficient": 0.03},
}


@pytest.mark.parametrize("op", ["Adagrad", "Adam", "Momentum", "Nesterov"])
@pytest.mark.parametrize("t", [0, 5])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 3])
def test_against_reference(op: str, t: int, dtype: Any, n: int) -> None:
    rng = np.random.default_rng(t * 7 + n)
    attrs = dict(_ATTRS["Momentum" if op == "Nesterov" else op])
    if op == "Nesterov":
        op, attrs["mode"] = "Momentum", "nesterov"
    shapes = [(2, 3), (4,), ()][:n]
    groups = _groups(rng, op, shapes, [dtype] * n)
    model, feeds = _model(op, np.array(0.05, dtype), np.array(t, np.int64), groups, attrs)
    _compare(model, feeds, [dtype] * (n * len(_OUT_KINDS[op])))


@pytest.mark.parametrize("op", ["Adagrad", "Adam", "Momentum"])
def test_defaults_against_reference(op: str) -> None:
    # Only Momentum's attributes are required; the others run on the definitions' defaults.
    rng = np.random.default_rng(1)
    attrs = _ATTRS[op] if op == "Momentum" else {}
    groups = _groups(rng, op, [(3,)], [np.float32])
    model, feeds = _model(op, np.array(0.1, np.float32), np.array(2, np.int64), groups, attrs)
    from onnx.reference import ReferenceEvaluator

    ours = onnxcore.Session(model).run(None, feeds)
    theirs = ReferenceEvaluator(onnx.load_from_string(model)).run(None, feeds)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, np.asarray(b, np.float64), rtol=2e-6, atol=2e-6)


def test_mixed_types_and_double_rate() -> None:
    # T3 is heterogeneous: X0 float, X1 double; R is double while X0 is float.
    rng = np.random.default_rng(2)
    groups = _groups(rng, "Adagrad", [(2,), (3,)], [np.float32, np.float64])
    model, feeds = _model("Adagrad", np.array(0.3, np.float64), np.array(4, np.int64), groups, _ATTRS["Adagrad"])
    _compare(model, feeds, [np.float32, np.float64, np.float32, np.float64])


def test_broadcasting() -> None:
    # "element-wise arithmetic operations with numpy-style broadcasting": G and V broadcast to X.
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    g = rng.standard_normal((3,)).astype(np.float32)
    v = rng.standard_normal((1, 3)).astype(np.float32)
    model, feeds = _model(
        "Momentum", np.array(0.1, np.float32), np.array(1, np.int64), [{"X": x, "G": g, "V": v}], _ATTRS["Momentum"]
    )
    _compare(model, feeds, [np.float32, np.float32])


# ---------------------------------------------------------------------------------------------
# Refused inputs and Gradient
# ---------------------------------------------------------------------------------------------


def _run_unchecked(op: str, names_feeds: dict[str, np.ndarray], n_out: int, attrs: dict[str, Any]) -> Any:
    names = list(names_feeds)
    outs = [f"o{i}" for i in range(n_out)]
    node = helper.make_node(op, names, outs, domain=TRAINING, **attrs)
    ins = [helper.make_tensor_value_info(n, _ELEM.get(v.dtype, TP.INT64), None) for n, v in names_feeds.items()]
    g = helper.make_graph([node], "opt", ins, [helper.make_tensor_value_info(o, TP.FLOAT, None) for o in outs])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid(TRAINING, 1)], ir_version=7)
    return onnxcore.Session(m.SerializeToString(), check=False).run(None, names_feeds)


_F = np.ones(2, np.float32)
_R = np.array(0.1, np.float32)
_T = np.array(1, np.int64)


@pytest.mark.parametrize(
    ("op", "feeds", "n_out", "attrs"),
    [
        ("Momentum", {"R": _R, "T": _T, "X": _F, "G": _F, "V": _F}, 2, {**_ATTRS["Momentum"], "mode": "heavy"}),
        ("Momentum", {"R": _R, "T": _T, "X": _F, "G": _F, "V": _F}, 2, {"alpha": 0.9, "beta": 0.1, "mode": "standard"}),
        ("Adam", {"R": _R, "T": _T, "X": _F, "G": _F, "V": _F}, 2, {}),  # 3 tensors: not 4 lists
        ("Adagrad", {"R": np.ones(2, np.float32), "T": _T, "X": _F, "G": _F, "H": _F}, 2, {}),  # R not scalar
        ("Adagrad", {"R": _R, "T": _T, "X": _F, "G": np.ones(3, np.float32), "H": _F}, 2, {}),  # no broadcast
    ],
)
def test_refused(op: str, feeds: dict[str, np.ndarray], n_out: int, attrs: dict[str, Any]) -> None:
    with pytest.raises(OnnxCoreError, match=f"{op}: |broadcast"):
        _run_unchecked(op, feeds, n_out, attrs)


def test_gradient_is_bound_to_its_graph() -> None:
    assert lookup(TRAINING, "Gradient", 1) is not None
    x = helper.make_tensor_value_info("X", TP.FLOAT, [2])
    dy = helper.make_tensor_value_info("dY_dX", TP.FLOAT, [2])
    nodes = [
        helper.make_node("Mul", ["X", "X"], ["Y"]),
        helper.make_node("Gradient", ["X"], ["dY_dX"], domain=TRAINING, xs=["X"], y="Y"),
    ]
    g = helper.make_graph(nodes, "grad", [x], [dy])
    m = helper.make_model(
        g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(TRAINING, 1)], ir_version=8
    )
    (got,) = onnxcore.Session(m.SerializeToString()).run(None, {"X": np.array([1, -3], np.float32)})
    np.testing.assert_array_equal(got, np.array([2, -6], np.float32))
    # a Gradient whose y is not computed from xs is refused when the session is made
    nodes[1] = helper.make_node("Gradient", ["X"], ["dY_dX"], domain=TRAINING, xs=["X"], y="nowhere")
    m.graph.ClearField("node")
    m.graph.node.extend(nodes)
    with pytest.raises(UnsupportedOperatorError, match=r"Gradient.*'nowhere'"):
        onnxcore.Session(m.SerializeToString())
