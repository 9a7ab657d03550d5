"""One kernel selection (issue 37): models where each rule of :func:`onnxcore.kernels.select.select` decides, and
every caller held to the session's choice.

Each case is a model whose node of interest reads a constant ``c`` = [3.0] (an initializer, not a graph input) and
gives ``y``; ``z = ConstantOfShape(Cast(y, int64))`` makes ``y``'s value a shape, so that inference's folding shows
which kernel it evaluated. The kernels a case registers add a marker of their own to their input, so a value names
the kernel that computed it. The callers:

* the session: at run time (``x`` fed) and through its plan-time folding (``c`` constant);
* ``kernels.run``: the same kernel, or (a definition evaluated through its body) a refusal saying so;
* the conformance statement's ``is_supported``: supported exactly when the session evaluates the node;
* inference's folding: where it folds, the session's value.

The rules: exact since_version (Clause 14.3), an onnxruntime operator's custom-domain kernel, a custom domain
(Clause 16.1), a definition's function body and a model-local function overriding a standard operator (Clause 8.4).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import onnxcore
from onnxcore import graph as graph_layer
from onnxcore.build import helper as oh
from onnxcore.conformance.statement import is_supported
from onnxcore.errors import KernelNotFoundError
from onnxcore.infer import infer_shapes
from onnxcore.kernels import registry, run
from onnxcore.kernels.select import select, select_node
from onnxcore.proto import FunctionProto, ModelProto, TensorProto

DOMAIN = "test.onnxcore.select"
C = np.array([3.0], np.float32)


def _marked(k: float) -> Callable[..., np.ndarray]:
    def marker(x: np.ndarray, **_attributes: Any) -> np.ndarray:
        return x + np.float32(k)

    marker.__qualname__ = f"marker_{k}"  # distinct names: a re-registration is a clash, not a re-definition
    return marker


@pytest.fixture
def kernels() -> Iterator[Callable[..., None]]:
    """``kernels(op_type, version, fn, domain=...)`` registers process-wide (replacing a built-in one), or with
    ``fn=None`` removes the built-in kernel; everything is put back afterwards."""
    saved: list[tuple[str, int, str, registry.KernelDef | None]] = []

    def put(op_type: str, version: int, fn: Callable[..., Any] | None, domain: str = "") -> None:
        saved.append((op_type, version, domain, registry.lookup(domain, op_type, version)))
        if fn is None:
            registry.unregister(op_type, version, domain=domain)
        else:
            registry.kernel(op_type, version, domain=domain, replace=True)(fn)

    # The conformance statement reads each answer once (is_supported is cached): forget what was read.
    is_supported.cache_clear()
    yield put
    is_supported.cache_clear()
    for op_type, version, domain, old in reversed(saved):
        if registry.lookup(domain, op_type, version) is not None:
            registry.unregister(op_type, version, domain=domain)
        if old is not None:
            registry.kernel(op_type, version, domain=domain, context=old.context, prepare=old.prepare, replace=True)(
                old.fn
            )


def _model(
    op_type: str,
    imports: dict[str, int],
    *,
    domain: str = "",
    constant: bool,
    functions: list[FunctionProto] | None = None,
) -> ModelProto:
    nodes = [
        oh.make_node(op_type, ["c"], ["y"], domain=domain),
        oh.make_node("Cast", ["y"], ["yi"], to=TensorProto.INT64),
        oh.make_node("ConstantOfShape", ["yi"], ["z"]),
    ]
    inits = [oh.make_tensor("c", TensorProto.FLOAT, [1], C.tolist())] if constant else []
    inputs = [] if constant else [oh.make_tensor_value_info("c", TensorProto.FLOAT, [1])]
    outputs = [oh.make_tensor_value_info("y", TensorProto.FLOAT, [1])]
    g = oh.make_graph(nodes, "g", inputs, outputs, initializer=inits)
    opsets = [oh.make_opsetid(d, v) for d, v in imports.items()]
    return oh.make_model(g, opset_imports=opsets, functions=functions or [], ir_version=10)


def _session_value(op_type: str, imports: dict[str, int], **kw: Any) -> float:
    """The session's ``y``, evaluated at run time and by its plan-time folding (both must agree)."""
    (at_run,) = onnxcore.Session(_model(op_type, imports, constant=False, **kw)).run(None, {"c": C})
    (folded,) = onnxcore.Session(_model(op_type, imports, constant=True, **kw)).run(None, {})
    np.testing.assert_array_equal(at_run, folded)
    return float(at_run[0])


def _inferred_value(op_type: str, imports: dict[str, int], **kw: Any) -> float | None:
    """``y`` as inference's folding computed it (through ``z``'s shape), or None when it folded nothing."""
    shape = infer_shapes(_model(op_type, imports, constant=True, **kw)).shape("z")
    return float(shape[0]) if shape is not None and isinstance(shape[0], int) else None


def _rule(op_type: str, imports: dict[str, int], **kw: Any) -> str:
    bound = graph_layer.bind(_model(op_type, imports, constant=True, **kw))
    main = bound.main()
    assert main is not None
    return select_node(main.nodes[0]).rule


def _check(
    op_type: str, imports: dict[str, int], rule: str, expected: float, *, domain: str = "", claimed: bool = True
) -> None:
    """The session computes ``expected`` by ``rule``; every other caller agrees (the conformance statement, which
    claims only the operators a domain defines, answers ``claimed``)."""
    version = imports[domain]
    assert _rule(op_type, imports, domain=domain) == rule
    assert _session_value(op_type, imports, domain=domain) == expected
    assert is_supported(domain, op_type, version) is claimed
    if rule == "body":
        with pytest.raises(KernelNotFoundError, match="function body"):
            run(op_type, version, C, domain=domain)
    else:
        assert float(run(op_type, version, C, domain=domain)[0][0]) == expected
    folded = _inferred_value(op_type, imports, domain=domain)
    if rule in ("exact", "onnxruntime"):
        assert folded == expected
    else:
        # Inference folds kernels of definitions only: a custom domain's node is left unfolded, and a body's values
        # are not kept across the call -- never folded differently.
        assert folded in (None, expected)


def test_the_exact_since_version_decides(kernels: Callable[..., None]) -> None:
    kernels("Relu", 13, _marked(13))
    kernels("Relu", 14, _marked(14))
    _check("Relu", {"": 13}, "exact", 16.0)
    _check("Relu", {"": 14}, "exact", 17.0)
    _check("Relu", {"": 18}, "exact", 17.0)  # ai.onnx 18 binds Relu-14 (Clause 14.3)


def test_an_onnxruntime_operator_takes_the_custom_domain_kernel(kernels: Callable[..., None]) -> None:
    # ai.onnx 12 binds onnxruntime's extension Scale-10; no kernel has exactly 10, so the kernel of the greatest
    # version not above the import does (a user's kernel for an onnxruntime operator at another version).
    kernels("Scale", 1, _marked(5))
    assert graph_layer.definition_binding("", "Scale", 12)[1] is not None
    # The statement's claim is ONNX's operators: onnxruntime's extension of ai.onnx is evaluated, but not claimed
    # (tests/kernels/contrib/test_contrib_conformance.py).
    _check("Scale", {"": 12}, "onnxruntime", 8.0, claimed=False)


def test_a_custom_domain_binds_the_greatest_kernel_not_above_the_import(kernels: Callable[..., None]) -> None:
    kernels("Tag", 1, _marked(21), domain=DOMAIN)
    kernels("Tag", 3, _marked(23), domain=DOMAIN)
    _check("Tag", {"": 18, DOMAIN: 2}, "custom", 24.0, domain=DOMAIN)
    _check("Tag", {"": 18, DOMAIN: 5}, "custom", 26.0, domain=DOMAIN)


def test_without_a_kernel_the_function_body_decides(kernels: Callable[..., None]) -> None:
    kernels("HardSwish", 14, None)
    hardswish = 3.0 * min(1.0, max(0.0, 3.0 / 6 + 0.5))
    _check("HardSwish", {"": 18}, "body", hardswish)


def test_a_local_function_overrides_a_standard_operator(kernels: Callable[..., None]) -> None:
    kernels("Relu", 14, _marked(14))
    body = [
        oh.make_node("Constant", [], ["k"], value=oh.make_tensor("k", TensorProto.FLOAT, [1], [30.0])),
        oh.make_node("Add", ["x", "k"], ["r"]),
    ]
    local = oh.make_function("", "Relu", ["x"], ["r"], body, [oh.make_opsetid("", 18)])
    imports = {"": 18}
    assert _rule("Relu", imports, functions=[local]) == "function"
    assert _session_value("Relu", imports, functions=[local]) == 33.0
    # Inference walks the local function's body (never the Relu kernel); it keeps no value across a call.
    assert _inferred_value("Relu", imports, functions=[local]) in (None, 33.0)
    # Without a model there is no local function: kernels.run and the statement see the definition's choice.
    assert float(run("Relu", 18, C)[0][0]) == 17.0


def test_nothing_evaluates_what_has_neither_kernel_nor_body(kernels: Callable[..., None]) -> None:
    kernels("Celu", 12, None)  # Celu-12 has no static function body
    status, schema = graph_layer.definition_binding("", "Celu", 18)
    assert select("", "Celu", 18, status, schema).rule == "none"
    assert not is_supported("", "Celu", 18)
    with pytest.raises(KernelNotFoundError, match="no kernel"):
        run("Celu", 18, C)
    with pytest.raises(onnxcore.UnsupportedOperatorError, match="Celu"):
        onnxcore.Session(_model("Celu", {"": 18}, constant=False))
