"""Element types (Clause 6.2, Table 5) and their IR versions (Table 12)."""

from __future__ import annotations

import numpy as np
import pytest

import onnxcore
from onnxcore import TensorError
from onnxcore.proto import TensorProto
from onnxcore.types import ElementType, element_type

E = ElementType

# Table 5 of the spec, transcribed: tag -> name.
TABLE5 = {
    1: "FLOAT", 2: "UINT8", 3: "INT8", 4: "UINT16", 5: "INT16", 6: "INT32", 7: "INT64", 8: "STRING",
    9: "BOOL", 10: "FLOAT16", 11: "DOUBLE", 12: "UINT32", 13: "UINT64", 14: "COMPLEX64", 15: "COMPLEX128",
    16: "BFLOAT16", 17: "FLOAT8E4M3FN", 18: "FLOAT8E4M3FNUZ", 19: "FLOAT8E5M2", 20: "FLOAT8E5M2FNUZ",
    21: "UINT4", 22: "INT4", 23: "FLOAT4E2M1", 24: "FLOAT8E8M0", 25: "UINT2", 26: "INT2",
    27: "FLOAT6E2M3", 28: "FLOAT6E3M2",
}  # fmt: skip

# Table 12 (IR 8 onwards).
TABLE12 = {
    "FLOAT8E4M3FN": 9, "FLOAT8E4M3FNUZ": 9, "FLOAT8E5M2": 9, "FLOAT8E5M2FNUZ": 9, "UINT4": 10, "INT4": 10,
    "FLOAT4E2M1": 11, "FLOAT8E8M0": 12, "UINT2": 13, "INT2": 13, "FLOAT6E2M3": 14, "FLOAT6E3M2": 14,
}  # fmt: skip


def test_table5_names_and_tags() -> None:
    assert {e.value: e.name for e in ElementType} == TABLE5
    assert all(int(TensorProto.DataType[e.name]) == e.value for e in ElementType)
    assert onnxcore.ElementType is ElementType


@pytest.mark.parametrize("tag", [0, 29, 255, -3])
def test_undefined_and_unknown_tags_raise(tag: int) -> None:
    with pytest.raises(TensorError):
        ElementType(tag)
    with pytest.raises(ValueError):
        element_type(tag)


def test_ir_versions() -> None:
    for e in ElementType:
        if e.name in TABLE12:
            assert e.ir_version == TABLE12[e.name]
        elif e is E.BFLOAT16:
            assert e.ir_version == 4  # upstream IR_VERSION_2019_1_22 "Add type BFLOAT16"
        else:
            assert e.ir_version == 1


def test_bits_and_dtypes_against_onnx() -> None:
    helper = pytest.importorskip("onnx.helper")
    for e in ElementType:
        assert e.np_dtype == helper.tensor_dtype_to_np_dtype(e.value), e
        if e is not E.STRING:
            assert ElementType.from_dtype(e.np_dtype) is e
    widths = {E.INT4: 4, E.UINT4: 4, E.FLOAT4E2M1: 4, E.INT2: 2, E.UINT2: 2, E.FLOAT6E2M3: 6, E.FLOAT6E3M2: 6}
    for e in ElementType:
        if e in widths:
            assert e.bits == widths[e] and e.is_narrow
        elif e is not E.STRING:
            assert e.bits == 8 * e.np_dtype.itemsize and not e.is_narrow


def test_type_names_are_onnx_type_strings() -> None:
    """type_name is what operator type constraints say: every tensor(...) string in onnx.defs maps back."""
    defs = pytest.importorskip("onnx.defs")
    seen = set()
    for s in defs.get_all_schemas_with_history():
        for c in s.type_constraints:
            for ts in c.allowed_type_strs:
                if ts.startswith("tensor(") and ts.count("(") == 1:
                    seen.add(ts[len("tensor(") : -1])
    names = {e.type_name for e in ElementType}
    assert seen <= names
    assert len(seen) >= 25


def test_from_dtype() -> None:
    assert ElementType.from_dtype(np.float32) is E.FLOAT
    assert ElementType.from_dtype(">f4") is E.FLOAT
    assert ElementType.from_dtype(np.str_) is E.STRING
    assert ElementType.from_dtype(object) is E.STRING
    with pytest.raises(TensorError):
        ElementType.from_dtype("M8[s]")
