"""Custom operators per session (``custom_ops``, a KernelSet) and deliberate replacement in the process-wide
kernel registry (issue 22): what a session binds, what another session of the same model binds, and the rules of
a second registration."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import onnxcore
from onnxcore import UnsupportedOperatorError
from onnxcore.errors import KernelRegistrationError, UnknownOperatorError
from onnxcore.kernels import KernelSet, registry
from onnxcore.kernels.registry import KernelContext

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as TP  # noqa: E402
from onnx import helper as h  # noqa: E402

# Custom domains no production kernel uses (Clause 16.1): one for per-session kernels, one for the tests that
# register process-wide (each removes what it registered).
ME = "test.onnxcore.customops"
GLOBAL = "test.onnxcore.customops.global"
X = np.array([-1.0, 0.5, 2.0], np.float32)


def _vi(name: str, elem: int = TP.FLOAT, shape: list[Any] | None = None) -> Any:
    return h.make_tensor_value_info(name, elem, [3] if shape is None else shape)


def _model(
    nodes: list[Any], *, domain: str = ME, opset: int = 18, version: int = 1, functions: list[Any] | None = None
) -> bytes:
    g = h.make_graph(nodes, "g", [_vi("x")], [_vi("y")])
    imports = [h.make_opsetid("", opset), h.make_opsetid(domain, version)]
    m = h.make_model(g, opset_imports=imports, functions=functions or [], ir_version=10)
    return bytes(m.SerializeToString())


def _scale_set() -> KernelSet:
    ops = KernelSet()

    @ops.kernel("Scale", 1, domain=ME)
    def scale(x: np.ndarray, *, factor: float = 2.0) -> np.ndarray:
        return x * np.asarray(factor, x.dtype)

    return ops


@pytest.fixture
def cleanup() -> Iterator[list[tuple[str, int, str]]]:
    """Keys (op_type, version, domain) a test registers process-wide, removed afterwards."""
    keys: list[tuple[str, int, str]] = []
    yield keys
    for op, v, dom in keys:
        if registry.lookup(dom, op, v) is not None:
            registry.unregister(op, v, domain=dom)


def test_custom_domain_op_runs_in_the_session_given_it_only() -> None:
    model = _model([h.make_node("Scale", ["x"], ["y"], domain=ME, factor=3.0)])
    (y,) = onnxcore.Session(model, custom_ops=_scale_set()).run(None, {"x": X})
    np.testing.assert_array_equal(y, X * 3)
    # Another session of the same model does not see it: refused up front, naming the operator (Clause 4.4).
    with pytest.raises(UnsupportedOperatorError, match=f"{ME}::Scale-1") as ei:
        onnxcore.Session(model)
    assert ei.value.operators == [(ME, "Scale", 1)]
    assert registry.lookup(ME, "Scale", 1) is None


def test_the_validator_still_warns_of_the_custom_domain() -> None:
    model = _model([h.make_node("Scale", ["x"], ["y"], domain=ME)])
    codes = {f.code for f in onnxcore.check(model).findings}
    assert "W-CUSTOM-DOMAIN" in codes


def test_custom_domain_binds_the_greatest_version_not_above_the_import() -> None:
    ops = KernelSet()
    ops.kernel("Tag", 1, domain=ME)(lambda x: x + 1)
    ops.kernel("Tag", 3, domain=ME)(lambda x: x + 3)
    node = h.make_node("Tag", ["x"], ["y"], domain=ME)
    assert onnxcore.Session(_model([node], version=2), custom_ops=ops).run(None, {"x": X})[0].tolist() == [0, 1.5, 3]
    assert onnxcore.Session(_model([node], version=5), custom_ops=ops).run(None, {"x": X})[0].tolist() == [2, 3.5, 5]
    assert ops.versions(ME, "Tag") == [1, 3] and len(ops) == 2


def test_a_standard_operator_overridden_in_one_session_only() -> None:
    ops = KernelSet()

    @ops.kernel("Relu", 14)  # the since_version Relu binds to at opset 18
    def shifted(x: np.ndarray) -> np.ndarray:
        return x + np.float32(100)

    model = _model([h.make_node("Relu", ["x"], ["y"])])
    np.testing.assert_array_equal(onnxcore.Session(model, custom_ops=ops).run(None, {"x": X})[0], X + 100)
    np.testing.assert_array_equal(onnxcore.Session(model).run(None, {"x": X})[0], np.maximum(X, 0))
    assert registry.lookup("", "Relu", 14) is not ops.lookup("", "Relu", 14)


def test_a_kernel_set_refuses_what_would_never_bind() -> None:
    ops = KernelSet()
    with pytest.raises(KernelRegistrationError, match=r"since_versions: \[1, 6, 13, 14\]"):
        ops.kernel("Relu", 15)
    with pytest.raises(KernelRegistrationError, match="domain of its own"):
        ops.kernel("MyOp", 1)
    with pytest.raises(KernelRegistrationError, match="at least one"):
        ops.kernel("MyOp", domain=ME)
    assert len(ops) == 0
    with pytest.raises(TypeError, match="KernelSet"):
        onnxcore.Session(_model([h.make_node("Relu", ["x"], ["y"])]), custom_ops=[lambda x: x])  # type: ignore[arg-type]


def test_the_session_kernel_wins_over_the_registry_at_the_same_key(cleanup: list[tuple[str, int, str]]) -> None:
    registry.kernel("Scale", 1, domain=ME)(lambda x, *, factor=2.0: x - 1)
    cleanup.append(("Scale", 1, ME))
    model = _model([h.make_node("Scale", ["x"], ["y"], domain=ME)])
    np.testing.assert_array_equal(onnxcore.Session(model, custom_ops=_scale_set()).run(None, {"x": X})[0], X * 2)
    np.testing.assert_array_equal(onnxcore.Session(model).run(None, {"x": X})[0], X - 1)


def test_a_second_registration_is_refused_with_the_way_out(cleanup: list[tuple[str, int, str]]) -> None:
    def first(x: np.ndarray) -> np.ndarray:
        return x

    def second(x: np.ndarray) -> np.ndarray:
        return -x

    registry.kernel("Dup", 1, 2, domain=GLOBAL)(first)
    cleanup.extend([("Dup", 1, GLOBAL), ("Dup", 2, GLOBAL)])
    with pytest.raises(
        KernelRegistrationError, match=r"Dup-1 is already registered .*first\); pass replace=True"
    ) as ei:
        registry.kernel("Dup", 1, 3, domain=GLOBAL)(second)
    assert isinstance(ei.value, ValueError) and isinstance(ei.value, onnxcore.OnnxCoreError)
    # All or nothing: the refused registration added no version 3.
    assert registry.kernel_versions(GLOBAL, "Dup") == [1, 2]
    # The same in a KernelSet.
    ops = KernelSet()
    ops.kernel("Dup", 1, domain=ME)(first)
    with pytest.raises(KernelRegistrationError, match="replace=True"):
        ops.kernel("Dup", 1, domain=ME)(second)


def test_replace_is_deliberate_and_seen_by_new_sessions(cleanup: list[tuple[str, int, str]]) -> None:
    registry.kernel("Swap", 1, domain=GLOBAL)(lambda x: x + 1)
    cleanup.append(("Swap", 1, GLOBAL))
    model = _model([h.make_node("Swap", ["x"], ["y"], domain=GLOBAL)], domain=GLOBAL)
    before = onnxcore.Session(model)

    @registry.kernel("Swap", 1, domain=GLOBAL, replace=True)
    def doubled(x: np.ndarray) -> np.ndarray:
        return x * 2

    assert registry.lookup(GLOBAL, "Swap", 1).fn is doubled  # type: ignore[union-attr]
    np.testing.assert_array_equal(onnxcore.Session(model).run(None, {"x": X})[0], X * 2)
    # A session already created keeps what it was bound to.
    np.testing.assert_array_equal(before.run(None, {"x": X})[0], X + 1)


def test_replacing_and_restoring_a_built_in_kernel() -> None:
    model = _model([h.make_node("Relu", ["x"], ["y"])])
    (original,) = registry.unregister("Relu", 14)
    try:
        assert registry.lookup("", "Relu", 14) is None
        registry.kernel("Relu", 14, replace=True)(lambda x: np.abs(x))
        np.testing.assert_array_equal(onnxcore.Session(model).run(None, {"x": X})[0], np.abs(X))
    finally:
        registry.kernel("Relu", 14, context=original.context, replace=True)(original.fn)
    np.testing.assert_array_equal(onnxcore.Session(model).run(None, {"x": X})[0], np.maximum(X, 0))
    with pytest.raises(KernelRegistrationError, match="no kernel"):
        registry.unregister("NoSuchOp", 1, domain=GLOBAL)


def _cell() -> Callable[..., Any]:
    # A notebook cell run again: a new function object of the same module and qualified name.
    def halve(x: np.ndarray) -> np.ndarray:
        return x / 2

    return halve


def test_re_registering_the_same_function_is_a_re_definition(cleanup: list[tuple[str, int, str]]) -> None:
    first, again = _cell(), _cell()
    assert first is not again
    registry.kernel("Halve", 1, domain=GLOBAL)(first)
    cleanup.append(("Halve", 1, GLOBAL))
    registry.kernel("Halve", 1, domain=GLOBAL)(again)  # no replace=True needed
    registry.kernel("Halve", 1, domain=GLOBAL)(again)  # nor for the very same object
    assert registry.lookup(GLOBAL, "Halve", 1).fn is again  # type: ignore[union-attr]
    ops = KernelSet()
    ops.kernel("Halve", 1, domain=ME)(first)
    ops.kernel("Halve", 1, domain=ME)(again)
    assert ops.lookup(ME, "Halve", 1).fn is again  # type: ignore[union-attr]


def test_kernels_run_with_custom_ops() -> None:
    ops = _scale_set()
    (y,) = onnxcore.kernels.run("Scale", 1, X, domain=ME, custom_ops=ops, factor=4.0)
    np.testing.assert_array_equal(y, X * 4)
    with pytest.raises(UnknownOperatorError, match="Scale"):
        onnxcore.kernels.run("Scale", 1, X, domain=ME)
    ops.kernel("Relu", 14)(lambda x: x * 0)
    assert onnxcore.kernels.run("Relu", 18, X, custom_ops=ops)[0].tolist() == [0, 0, 0]
    assert onnxcore.kernels.run("Relu", 18, X)[0].tolist() == [0, 0.5, 2]


def _context_set(seen: list[KernelContext]) -> KernelSet:
    ops = KernelSet()

    @ops.kernel("Fan", 1, 2, domain=ME, context=True)
    def fan(ctx: KernelContext, x: np.ndarray) -> tuple[np.ndarray, ...]:
        seen.append(ctx)
        return tuple(x * (j + 1) for j in range(ctx.num_outputs))

    return ops


def test_a_context_kernel_as_a_custom_op() -> None:
    seen: list[KernelContext] = []
    nodes = [h.make_node("Fan", ["x"], ["a", "b"], domain=ME), h.make_node("Add", ["a", "b"], ["y"])]
    (y,) = onnxcore.Session(_model(nodes, version=3), custom_ops=_context_set(seen)).run(None, {"x": X})
    np.testing.assert_array_equal(y, X * 3)
    ctx = seen[-1]
    assert (ctx.since_version, ctx.opset_version, ctx.num_outputs) == (2, 3, 2)
    assert ctx.node.op_type == "Fan" and ctx.rng is not None
    outs = onnxcore.kernels.run("Fan", 1, X, domain=ME, outputs=3, custom_ops=_context_set(seen))
    assert len(outs) == 3 and seen[-1].since_version == 1


def test_custom_ops_inside_if_and_loop_bodies() -> None:
    def branch(name: str, factor: float) -> Any:
        node = h.make_node("Scale", ["x"], [f"{name}_y"], domain=ME, factor=factor)
        return h.make_graph([node], name, [], [_vi(f"{name}_y")])

    cond = h.make_node("ReduceMax", ["x"], ["m"], keepdims=0)
    pos = h.make_node("Greater", ["m", "zero"], ["c"])
    zero = h.make_node("Constant", [], ["zero"], value=h.make_tensor("z", TP.FLOAT, [], [0.0]))
    if_node = h.make_node("If", ["c"], ["y"], then_branch=branch("then", 10.0), else_branch=branch("else", -1.0))
    if_model = _model([zero, cond, pos, if_node])
    np.testing.assert_array_equal(onnxcore.Session(if_model, custom_ops=_scale_set()).run(None, {"x": X})[0], X * 10)
    with pytest.raises(UnsupportedOperatorError, match="Scale"):
        onnxcore.Session(if_model)

    body = h.make_graph(
        [
            h.make_node("Scale", ["acc_in"], ["acc_out"], domain=ME),
            h.make_node("Identity", ["cond_in"], ["cond_out"]),
        ],
        "body",
        [_vi("i", TP.INT64, []), _vi("cond_in", TP.BOOL, []), _vi("acc_in")],
        [_vi("cond_out", TP.BOOL, []), _vi("acc_out")],
    )
    trips = h.make_node("Constant", [], ["n"], value=h.make_tensor("n", TP.INT64, [], [3]))
    loop = h.make_node("Loop", ["n", "", "x"], ["y"], body=body)
    loop_model = _model([trips, loop])
    np.testing.assert_array_equal(onnxcore.Session(loop_model, custom_ops=_scale_set()).run(None, {"x": X})[0], X * 8)
    with pytest.raises(UnsupportedOperatorError, match="Scale"):
        onnxcore.Session(loop_model)


def test_custom_ops_inside_a_model_local_function_body() -> None:
    local = "local.fn"
    fn = h.make_function(
        local,
        "ScaleThenRelu",
        ["a"],
        ["b"],
        [h.make_node("Scale", ["a"], ["s"], domain=ME, factor=5.0), h.make_node("Relu", ["s"], ["b"])],
        [h.make_opsetid("", 18), h.make_opsetid(ME, 1)],
    )
    g = h.make_graph([h.make_node("ScaleThenRelu", ["x"], ["y"], domain=local)], "g", [_vi("x")], [_vi("y")])
    imports = [h.make_opsetid("", 18), h.make_opsetid(ME, 1), h.make_opsetid(local, 1)]
    model = bytes(h.make_model(g, opset_imports=imports, functions=[fn], ir_version=10).SerializeToString())
    (y,) = onnxcore.Session(model, custom_ops=_scale_set()).run(None, {"x": X})
    np.testing.assert_array_equal(y, np.maximum(X * 5, 0))
    with pytest.raises(UnsupportedOperatorError, match=f"{ME}::Scale-1"):
        onnxcore.Session(model)
