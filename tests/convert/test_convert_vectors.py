"""Operator set conversion proven by evaluation on the ONNX 1-3 node vectors (issue 24, Clause 14).

Every vector at a few targets: its own version's neighbours, the least version that defines all its operators,
and 28. A conversion either succeeds (the result passes ``check`` with no error and our Session gives the
vector's expected outputs within its tolerance) or is refused with a reason for every blocking node. The full
matrix (every target 1-28, and onnx.version_converter side by side) is ``tools/conversion_table.py``.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest

import onnxcore as oc
from onnxcore.conformance.compare import compare_type_and_shape, compare_values
from onnxcore.conformance.runner import load_case_values
from onnxcore.defs import schema_versions
from onnxcore.errors import ConversionError
from onnxcore.kernels.registry import NONDETERMINISTIC


def evaluate(model: Any, case: Path) -> str | None:
    """None when our Session gives the vector's expected outputs (type and shape for random operators)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        session = oc.Session(model)
        names = [o.name for o in model.graph.output]
        random = any(n.op_type in NONDETERMINISTIC for n in model.graph.node)
        for feeds, expected in load_case_values(case, model):
            for name, a, e in zip(names, session.run(names, feeds), expected):
                c = compare_type_and_shape(a, e) if random else compare_values(a, e)
                if not c.ok:
                    return f"output {name}: {c.reason}"
    return None


def source_version(model: Any) -> int | None:
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)


def least_version(model: Any) -> int:
    """The least version at which every operator of the graph is defined."""
    firsts = [schema_versions(n.op_type)[0] for n in model.graph.node if n.domain in ("", "ai.onnx")]
    return max([1, *[f for f in firsts if f]])


def passes_as_is(model: Any, case: Path) -> bool:
    try:
        return evaluate(model, case) is None
    except oc.OnnxCoreError:
        return False


def outcome(model: Any, case: Path, target: int) -> tuple[str, str]:
    """("refused" | "ok" | "check" | "wrong", detail)."""
    try:
        converted = oc.convert_version(model, target)
    except ConversionError as e:
        assert e.refusals, f"a refusal without refused nodes: {e}"
        assert all(r.reason and r.op_type for r in e.refusals)
        return "refused", e.refusals[0].reason
    try:
        wrong = evaluate(converted, case)  # the Session validates first: any error finding raises
    except oc.ValidationError as e:
        return "check", str(e)
    except oc.OnnxCoreError as e:
        wrong = f"{type(e).__name__}: {e}"
    return ("wrong", wrong) if wrong else ("ok", "")


def test_node_vectors_convert_or_refuse(node_cases: list[Path]) -> None:
    failures: list[str] = []
    counts = {"ok": 0, "refused": 0}
    for case in node_cases:
        model = oc.load(case / "model.onnx")
        src = source_version(model)
        if src is None or model.graph is None:
            continue
        targets = {src - 1, src + 1, least_version(model), 28} - {src}
        for target in sorted(t for t in targets if 1 <= t <= 28):
            status, detail = outcome(model, case, target)
            if status in counts:
                counts[status] += 1
            elif passes_as_is(model, case):  # a vector failing at its own version proves nothing converted
                failures.append(f"{case.name} -> {target}: {status}: {detail}")
    assert not failures, f"{len(failures)} conversions wrong:\n" + "\n".join(failures[:40])
    # The conversions must do real work: most targets convert.
    assert counts["ok"] > counts["refused"], counts


ROUND_TRIPS = [
    ("test_reduce_sum_keepdims_example", 11),
    ("test_reduce_mean_default_axes_keepdims_example", 12),
    ("test_unsqueeze_axis_1", 11),
    ("test_squeeze", 11),
    ("test_split_variable_parts_1d_opset13", 12),
    ("test_slice", 9),
    ("test_clip", 10),
    ("test_top_k", 9),
    ("test_softmax_axis_0", 11),
    ("test_logsoftmax_axis_1", 10),
    ("test_upsample_nearest", 28),
    ("test_resize_upsample_sizes_nearest_round_prefer_ceil_asymmetric", 13),
    ("test_constant_pad", 10),
    ("test_add_bcast", 6),
    ("test_scatter_elements_with_axis", 10),
    ("test_reshape_reordered_all_dims", 4),
]


def frozen(model: Any, case: Path) -> tuple[Any, dict[str, Any], list[Any]]:
    """The model with every graph input but the first made an initializer holding the first data set's value
    (as an exporter writes axes, pads, scales: constants), and that data set's remaining feed and outputs."""
    feeds, expected = load_case_values(case, model)[0]
    out = oc.decode(oc.ModelProto, oc.encode(model))
    first = out.graph.input[0].name
    frozen_inputs = [vi for vi in out.graph.input if vi.name != first and vi.name in feeds]
    out.graph.initializer = [*out.graph.initializer, *(oc.from_array(feeds[vi.name], vi.name) for vi in frozen_inputs)]
    out.graph.input = [vi for vi in out.graph.input if vi not in frozen_inputs]
    return out, {first: feeds[first]}, expected


def run_frozen(model: Any, feeds: dict[str, Any], expected: list[Any]) -> str | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        names = [o.name for o in model.graph.output]
        for name, a, e in zip(names, oc.Session(model).run(names, feeds), expected):
            c = compare_values(a, e)
            if not c.ok:
                return f"output {name}: {c.reason}"
    return None


@pytest.mark.parametrize(("name", "other"), ROUND_TRIPS)
def test_round_trip(node_cases: list[Path], name: str, other: int) -> None:
    """To ``other`` and back to the vector's version (axes, pads, scales... as constants): each model passes
    check and evaluates as the vector expects."""
    case = next((c for c in node_cases if c.name == name), None)
    if case is None:
        pytest.skip(f"{name} is not among the installed onnx's vectors")
    model, feeds, expected = frozen(oc.load(case / "model.onnx"), case)
    src = source_version(model)
    assert src is not None and src != other
    there = oc.convert_version(model, other)
    assert source_version(there) == other
    assert not oc.check(there).errors
    assert run_frozen(there, feeds, expected) is None
    back = oc.convert_version(there, src)
    assert source_version(back) == src
    assert not oc.check(back).errors
    assert run_frozen(back, feeds, expected) is None


def test_ml_vectors_convert_up(node_cases: list[Path]) -> None:
    """The ai.onnx.ml vectors move up to ai.onnx.ml 5 and evaluate the same."""
    done = 0
    for case in node_cases:
        model = oc.load(case / "model.onnx")
        ml = next((o.version for o in model.opset_import if o.domain == "ai.onnx.ml"), None)
        if ml is None or ml == 5 or evaluate(model, case) is not None:
            continue
        converted = oc.convert_version(model, 5, domain="ai.onnx.ml")
        assert next(o.version for o in converted.opset_import if o.domain == "ai.onnx.ml") == 5
        assert not oc.check(converted).errors, case.name
        assert evaluate(converted, case) is None, case.name
        done += 1
    assert done


def test_function_expansion_fallback(node_cases: list[Path]) -> None:
    """Mish (18) has a function body: below 18 it is refused, or replaced by its body on request."""
    case = next((c for c in node_cases if c.name == "test_mish"), None)
    if case is None:
        pytest.skip("test_mish is not among the vectors")
    model = oc.load(case / "model.onnx")
    with pytest.raises(ConversionError) as info:
        oc.convert_version(model, 17)
    assert info.value.refusals[0].op_type == "Mish"
    expanded = oc.convert_version(model, 17, expand_functions=True)
    assert "Mish" not in {n.op_type for n in expanded.graph.node}
    assert not oc.check(expanded).errors
    assert evaluate(expanded, case) is None
