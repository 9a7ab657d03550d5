"""A float64 re-computation of a model whose outputs are narrow floats (Clause 11.5 measurement).

The expected outputs of the ONNX 1-3 vectors in float16, bfloat16 and the float8 types are themselves rounded,
often after intermediate roundings, so an error measured against them mixes ours with theirs. To state the
tolerance we achieve, the model is also evaluated with every narrow floating-point type widened to DOUBLE
(inputs, initializers, declared types, Constant values and Cast targets, subgraphs included); our narrow result
is then compared with that near-exact value. Models whose meaning *is* a conversion (Cast, CastLike, the
quantization operators) or that draw random numbers are not re-computed: widening would change what they compute.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import onnxcore
from onnxcore.kernels.registry import NONDETERMINISTIC
from onnxcore.proto import GraphProto, ModelProto, TensorProto, TypeProto
from onnxcore.proto.message import copy_message
from onnxcore.types import ElementType, from_array, to_array

__all__ = ["NARROW_FLOATS", "widened_model", "recompute_float64"]

_T = TensorProto.DataType
NARROW_FLOATS = frozenset(
    int(t)
    for t in (
        _T.FLOAT16,
        _T.BFLOAT16,
        _T.FLOAT8E4M3FN,
        _T.FLOAT8E4M3FNUZ,
        _T.FLOAT8E5M2,
        _T.FLOAT8E5M2FNUZ,
        _T.FLOAT4E2M1,
        _T.FLOAT6E2M3,
        _T.FLOAT6E3M2,
    )
)
_CONVERSIONS = (
    frozenset({"Cast", "CastLike", "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "BitCast"})
    | NONDETERMINISTIC
)
_DTYPE_ATTRIBUTES = frozenset({"to", "dtype", "output_dtype"})


def _widen_type(tp: TypeProto | None) -> None:
    if tp is None:
        return
    for t in (tp.tensor_type, tp.sparse_tensor_type):
        if t is not None and t.elem_type in NARROW_FLOATS:
            t.elem_type = int(_T.DOUBLE)
    if tp.sequence_type is not None:
        _widen_type(tp.sequence_type.elem_type)
    if tp.optional_type is not None:
        _widen_type(tp.optional_type.elem_type)
    if tp.map_type is not None:
        _widen_type(tp.map_type.value_type)


def _widen_tensor(t: TensorProto) -> TensorProto:
    if t.data_type not in NARROW_FLOATS:
        return t

    return from_array(to_array(t).astype(np.float64), t.name)


def _widen_graph(g: GraphProto) -> bool:
    """Widen ``g`` in place; False when it holds a node whose meaning is a conversion."""
    for vi in (*g.input, *g.output, *g.value_info):
        _widen_type(vi.type)
    g.initializer = [_widen_tensor(t) for t in g.initializer]
    for node in g.node:
        if node.op_type in _CONVERSIONS:
            return False
        for a in node.attribute:
            if a.name in _DTYPE_ATTRIBUTES and a.i in NARROW_FLOATS:
                a.i = int(_T.DOUBLE)
            if a.t is not None:
                a.t = _widen_tensor(a.t)
            a.tensors = [_widen_tensor(t) for t in a.tensors]
            if a.tp is not None:
                _widen_type(a.tp)
            for sub in ([a.g] if a.g is not None else []) + list(a.graphs):
                if not _widen_graph(sub):
                    return False
    return True


def widened_model(model: ModelProto) -> ModelProto | None:
    """A copy of ``model`` with every narrow float type widened to DOUBLE, or None when that would change
    what the model computes (conversions, random operators, model-local functions)."""
    if model.graph is None or model.functions:
        return None
    out = copy_message(model)
    assert out.graph is not None
    return out if _widen_graph(out.graph) else None


def recompute_float64(model: ModelProto, feeds: dict[str, Any], names: Sequence[str]) -> list[Any] | None:
    """The outputs ``names`` of ``model`` evaluated in float64, or None when it cannot be re-computed."""

    wide = widened_model(model)
    if wide is None:
        return None
    wide_feeds = {k: v.astype(np.float64) if _is_narrow(v) else v for k, v in feeds.items()}
    try:
        return list(onnxcore.Session(wide, check=False).run(list(names), wide_feeds))
    except onnxcore.OnnxCoreError:
        return None  # a type constraint admits no double here, for instance


def _is_narrow(v: Any) -> bool:
    if not isinstance(v, np.ndarray):
        return False

    try:
        return int(ElementType.from_dtype(v.dtype)) in NARROW_FLOATS
    except (ValueError, TypeError):
        return False
