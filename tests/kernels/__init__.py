"""Kernel tests, one module per operator family.

Shared helpers (tests only; the oracles onnx and onnxruntime are imported lazily):

- :func:`single_node_cases` lists the single-node ONNX 1-3 cases of a set of operators;
- :func:`run_ours` evaluates one node through our kernel registry at a given opset;
- :func:`run_ort` evaluates the same node with onnxruntime;
- :func:`make_node_model` builds the one-node model both use.
"""

from __future__ import annotations

import functools
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np

_HERE = Path(__file__).resolve().parent
for _p in (_HERE.parent / "runtime", _HERE.parent):  # tests/runtime (node_harness), tests (corpus)
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))


@functools.lru_cache(maxsize=1)
def _case_index() -> tuple[tuple[str, str, Path, bool], ...]:
    """(case name, op_type, dir, is an "_expanded" case) of every single-node default-domain ONNX 1-3 case."""
    import corpus
    import onnx

    out = []
    for d in corpus.node_case_dirs():
        m = onnx.load(str(d / "model.onnx"), load_external_data=False)
        if len(m.graph.node) != 1 or m.graph.node[0].domain not in ("", "ai.onnx"):
            continue
        expanded = d.name.endswith("_expanded") or "_expanded_" in d.name
        out.append((d.name, m.graph.node[0].op_type, d, expanded))
    return tuple(out)


def single_node_cases(ops: set[str] | frozenset[str], *, include_expanded: bool = False) -> list[Any]:
    """pytest params (id = case name) of the single-node cases of ``ops``; empty if onnx is missing.

    ``include_expanded`` adds the "_expanded" cases whose function body is itself one node of ``ops``.
    """
    import pytest

    try:
        index = _case_index()
    except ImportError:
        return []
    return [pytest.param(d, id=name) for name, op, d, exp in index if op in ops and (include_expanded or not exp)]


def make_node_model(
    op: str,
    inputs: list[np.ndarray | None],
    n_outputs: int,
    opset: int,
    attrs: dict[str, Any] | None = None,
) -> Any:
    """A one-node ``onnx.ModelProto`` with graph inputs typed from ``inputs`` (None: unsupplied)."""
    from onnx import helper

    names = []
    vis = []
    for i, a in enumerate(inputs):
        if a is None:
            names.append("")
            continue
        names.append(f"x{i}")
        elem = helper.np_dtype_to_tensor_dtype(a.dtype) if a.dtype != object else 8
        vis.append(helper.make_tensor_value_info(f"x{i}", elem, list(a.shape)))
    outs = [f"y{i}" for i in range(n_outputs)]
    import onnx

    node = helper.make_node(op, names, outs)
    for key, value in (attrs or {}).items():
        if isinstance(value, list) and not value:  # an empty INTS list has no inferable type
            node.attribute.append(helper.make_attribute(key, value, attr_type=onnx.AttributeProto.INTS))
        else:
            node.attribute.append(helper.make_attribute(key, value))
    graph = helper.make_graph([node], "g", vis, [helper.make_value_info(o, onnx.TypeProto()) for o in outs])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def run_ort(
    op: str, inputs: list[np.ndarray | None], n_outputs: int, opset: int, attrs: dict[str, Any] | None = None
) -> list[np.ndarray]:
    """Evaluate the node with onnxruntime (CPU, one thread)."""
    import onnxruntime as ort

    model = make_node_model(op, inputs, n_outputs, opset, attrs)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    feeds = {f"x{i}": a for i, a in enumerate(inputs) if a is not None}
    return list(sess.run(None, feeds))


def run_ours(
    op: str, inputs: list[np.ndarray | None], opset: int, attrs: dict[str, Any] | None = None
) -> list[np.ndarray]:
    """Evaluate the node with our kernel bound per Clause 14.3 (greatest since_version <= opset)."""
    import onnx

    from onnxcore.kernels.registry import lookup

    schema = onnx.defs.get_schema(op, opset, "")
    k = lookup("", op, schema.since_version)
    assert k is not None, f"no kernel for {op}-{schema.since_version}"
    args = list(inputs)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        out = k.fn(*args, **(attrs or {}))
    return list(out) if isinstance(out, tuple) else [out]


def compare(
    op: str,
    inputs: list[np.ndarray | None],
    opset: int,
    attrs: dict[str, Any] | None = None,
    *,
    n_outputs: int = 1,
    rtol: float = 1e-5,
    atol: float = 1e-6,
) -> list[np.ndarray]:
    """Assert our kernel agrees with onnxruntime (values, shapes and dtypes); return ours."""
    import pytest

    ours = run_ours(op, inputs, opset, attrs)
    try:
        theirs = run_ort(op, inputs, n_outputs, opset, attrs)
    except Exception as e:  # onnxruntime lacks a kernel for this (op, version, type)
        if "NOT_IMPLEMENTED" in str(e) or "Could not find an implementation" in str(e):
            pytest.skip(f"onnxruntime has no kernel: {str(e)[:120]}")
        if "InsertedPrecisionFreeCast" in str(e) or ("INVALID_GRAPH" in str(e) and "Type Error" in str(e)):
            # onnxruntime refuses a type the schema admits, or breaks its own float16 fallback.
            pytest.skip(f"onnxruntime cannot run this type: {str(e)[:120]}")
        raise
    assert len(ours) >= len(theirs)
    for a, e in zip(ours, theirs):
        assert_same(a, e, rtol=rtol, atol=atol)
    return ours


def assert_same(actual: Any, expected: Any, *, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    """Same shape and dtype; floats within tolerance (NaN equal to NaN); others exactly equal."""
    assert isinstance(actual, np.ndarray), type(actual)
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, f"shape {actual.shape} != {expected.shape}"
    assert actual.dtype == expected.dtype, f"dtype {actual.dtype} != {expected.dtype}"
    if expected.dtype.kind in "fV":
        np.testing.assert_allclose(
            actual.astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True
        )
    else:
        np.testing.assert_array_equal(actual, expected)


def sweep_versions(op: str, build: Any, *, rtol: float = 2e-6, atol: float = 1e-6, n_outputs: int = 1) -> int:
    """Compare with onnxruntime at every since_version of ``op`` it implements (opset <= 26).

    ``build(version)`` returns ``(inputs, attrs)`` for that version, or ``None`` to leave it out.
    Returns how many versions were compared.
    """
    from onnxcore.defs import schema_versions

    compared = 0
    for v in schema_versions(op):
        if v > 26:  # onnxruntime 1.31 loads models up to opset 26
            continue
        spec = build(v)
        if spec is None:
            continue
        inputs, attrs = spec
        try:
            theirs = run_ort(op, inputs, n_outputs, v, attrs)
        except Exception as e:
            msg = str(e)
            if "NOT_IMPLEMENTED" in msg or "INVALID_GRAPH" in msg:
                continue
            raise
        ours = run_ours(op, inputs, v, attrs)
        for a, t in zip(ours, theirs):
            assert_same(a, t, rtol=rtol, atol=atol)
        compared += 1
    return compared


def assert_every_version_has_a_kernel(op: str, domain: str = "") -> None:
    """Clause 14.3: a kernel is registered for every since_version of the operator's definition."""
    import onnx

    from onnxcore.kernels.registry import kernel_versions

    versions = sorted(
        {s.since_version for s in onnx.defs.get_all_schemas_with_history() if s.domain == domain and s.name == op}
    )
    assert versions and kernel_versions(domain, op) == versions, op


def assert_node_case(case_dir: Path) -> None:
    """One ONNX 1-3 single-node case passes (rtol 1e-3, atol 1e-7; Clause 11.5)."""
    from node_harness import assert_close, run_single_node_case

    result = run_single_node_case(case_dir)
    assert result is not None, f"no kernel for {case_dir.name}"
    actual, expected = result
    assert len(actual) == len(expected), case_dir.name
    for a, e in zip(actual, expected):
        assert_close(a, e)
