"""least_ir_version: each Table 12 feature, each operator set version (against onnx's table), one table with
the validator's E-IR-FEATURE rule."""

from __future__ import annotations

from collections.abc import Callable

import onnx
import onnx.helper
import pytest

import onnxcore
from onnxcore import defs
from onnxcore.build import helper as h
from onnxcore.build import least_ir_version
from onnxcore.defs.ir import FEATURE_IR_VERSION, opset_ir_version
from onnxcore.proto import (
    DeviceConfigurationProto,
    ModelProto,
    NodeDeviceConfigurationProto,
)
from onnxcore.types import ElementType

E = ElementType
F = onnxcore.TensorProto.FLOAT


def _model(elem: int = F, *, opset: int = 1, init: bool = False) -> ModelProto:
    """Identity of one tensor input, importing ai.onnx ``opset`` (IR 3 at opset 1)."""
    inputs = [h.make_tensor_value_info("x", elem, [2])]
    inits = [h.make_tensor("c", F, [1], [1.0])] if init else []
    graph = h.make_graph(
        [h.make_node("Identity", ["x"], ["y"])], "g", inputs, [h.make_tensor_value_info("y", elem, [2])], inits
    )
    return h.make_model(graph, opset_imports=[h.make_opsetid("", opset)])


def _with_function(default: bool = False, overload: str | None = None, call_overload: bool = False) -> ModelProto:
    m = _model()
    attrs = [h.make_attribute("k", 1)] if default else None
    fn = h.make_function(
        "d",
        "F",
        ["a"],
        ["b"],
        [h.make_node("Identity", ["a"], ["b"])],
        [h.make_opsetid("", 1)],
        attribute_protos=attrs,
        overload=overload,
    )
    m.functions = [fn]
    if call_overload:
        m.graph.node[0].overload = "o"
    return m


def _sparse_input() -> ModelProto:
    m = _model()
    m.graph.input.append(h.make_sparse_tensor_value_info("s", F, [2]))
    return m


def _optional_input() -> ModelProto:
    m = _model()
    m.graph.input.append(h.make_value_info("o", h.make_optional_type_proto(h.make_tensor_type_proto(F, [2]))))
    return m


def _node_metadata() -> ModelProto:
    m = _model()
    h.set_metadata_props(m.graph.node[0], {"k": "v"})
    return m


def _model_metadata() -> ModelProto:
    m = _model()
    h.set_model_props(m, {"k": "v"})
    return m


def _configuration() -> ModelProto:
    m = _model()
    m.configuration = [DeviceConfigurationProto(name="c", num_devices=2)]
    m.graph.node[0].device_configurations = [NodeDeviceConfigurationProto(configuration_id="c")]
    return m


# (model, the least IR version, whether that version comes from Table 12 as E-IR-FEATURE checks it)
FEATURES: dict[str, tuple[Callable[[], ModelProto], int, bool]] = {
    "nothing": (_model, 3, False),
    "opset 17": (lambda: _model(opset=17), 8, False),
    "initializer not an input": (
        lambda: _model(init=True),
        FEATURE_IR_VERSION["an initializer that is not a graph input"],
        False,
    ),
    "model metadata (before IR 8)": (_model_metadata, 3, False),
    "bfloat16": (lambda: _model(E.BFLOAT16), 4, False),
    "sparse tensor type": (_sparse_input, 8, True),
    "optional type": (_optional_input, 8, True),
    "model-local function": (_with_function, 8, True),
    "function attribute default": (lambda: _with_function(default=True), 9, True),
    "function overload": (lambda: _with_function(overload="o"), 10, True),
    "call of an overload": (lambda: _with_function(call_overload=True), 10, True),
    "node metadata": (_node_metadata, 10, True),
    "multi-device configuration": (_configuration, 11, True),
    **{
        et.name: (lambda et=et: _model(et), v, True)  # type: ignore[misc]
        for et, v in [
            (E.FLOAT8E4M3FN, 9),
            (E.FLOAT8E4M3FNUZ, 9),
            (E.FLOAT8E5M2, 9),
            (E.FLOAT8E5M2FNUZ, 9),
            (E.UINT4, 10),
            (E.INT4, 10),
            (E.FLOAT4E2M1, 11),
            (E.FLOAT8E8M0, 12),
            (E.UINT2, 13),
            (E.INT2, 13),
            (E.FLOAT6E2M3, 14),
            (E.FLOAT6E3M2, 14),
        ]
    },
}


@pytest.mark.parametrize("feature", sorted(FEATURES))
def test_least_ir_version_per_feature(feature: str) -> None:
    make, least, _table12 = FEATURES[feature]
    m = make()
    assert least_ir_version(m) == least


@pytest.mark.parametrize("feature", sorted(k for k, v in FEATURES.items() if v[2]))
def test_the_validator_reads_the_same_table(feature: str) -> None:
    make, least, _ = FEATURES[feature]
    m = make()
    m.ir_version = least
    assert not [f for f in onnxcore.check(m).findings if f.code == "E-IR-FEATURE"]
    m.ir_version = least - 1
    assert [f for f in onnxcore.check(m).findings if f.code == "E-IR-FEATURE"]


def test_make_model_declares_the_least() -> None:
    m = _model(E.INT4)
    assert m.ir_version == 10
    m = h.make_model(
        _with_function(default=True).graph,
        functions=_with_function(default=True).functions,
        opset_imports=[h.make_opsetid("", 1), h.make_opsetid("d", 1)],
    )
    assert m.ir_version == 9


def test_every_opset_against_onnx() -> None:
    """Each (domain, version) onnx's table knows, and each version of each domain onnxcore's definitions know."""
    pairs = set(onnx.helper.OP_SET_ID_VERSION_MAP)
    for d in defs.known_domains():
        lo, hi = defs.domain_versions(d)  # type: ignore[misc]
        pairs |= {(d or "ai.onnx", v) for v in range(lo, hi + 1)}
    checked = 0
    for domain, version in sorted(pairs):
        try:
            theirs = onnx.helper.find_min_ir_version_for([onnx.helper.make_opsetid(domain, version)])
        except ValueError:  # a version no onnx release published as its newest (ai.onnx 2 to 4)
            assert domain == "ai.onnx" and 2 <= version <= 4
            assert opset_ir_version(domain, version) == 3
            continue
        assert opset_ir_version(domain, version) == theirs, (domain, version)
        m = _model()
        m.opset_import.append(h.make_opsetid(domain, version))
        assert least_ir_version(m) == theirs
        checked += 1
    assert checked >= 28 + 5
    assert opset_ir_version("", 17) == 8 and opset_ir_version("", 23) == 11
    assert opset_ir_version("custom", 3) is None


def test_onnx_models_are_read_too() -> None:
    m = onnx.helper.make_model(
        onnx.helper.make_graph([], "g", [], []), opset_imports=[onnx.helper.make_opsetid("", 21)]
    )
    m.metadata_props.add(key="k", value="v")  # the model's own metadata predates IR 8: only the opset counts
    assert least_ir_version(m) == 10
