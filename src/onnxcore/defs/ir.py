"""The IR version each feature needs (Table 12, Clause 14.1.2) and each operator set version needs.

One table, read by the validator (``E-IR-FEATURE``) and by :func:`onnxcore.build.least_ir_version`. The
element types carry their own IR version (:attr:`onnxcore.types.ElementType.ir_version`, the same table's
rows for types); :func:`element_ir_version` reads it by wire tag.

The operator set rows are the upstream release history (onnx's ``helper.VERSION_TABLE``): the IR version of
the first release that published each version of each domain. ``ai.onnx.preview`` follows ``ai.onnx`` and
``ai.onnx.preview.training`` follows ``ai.onnx.training`` there, and do so here.
"""

from __future__ import annotations

from bisect import bisect_right

from onnxcore.defs.binding import canonical_domain
from onnxcore.types.elements import ElementType, ElementTypeError

__all__ = [
    "BASE_IR_VERSION",
    "FEATURE_IR_VERSION",
    "LATEST_IR_VERSION",
    "element_ir_version",
    "opset_ir_version",
]

# The IR version this edition specifies (Clause 14.1.2).
LATEST_IR_VERSION = 14

# The least IR version a model with operator set imports can declare: IR 3 introduced ``opset_import``.
BASE_IR_VERSION = 3

# Table 12, the features other than element types: feature -> the IR version that introduced it. Keys are
# the phrases the validator's messages use. "initializer not a graph input" is Clause 7.2's rule for IR 4.
FEATURE_IR_VERSION: dict[str, int] = {
    "an initializer that is not a graph input": 4,
    "the sparse tensor type": 8,
    "the optional type": 8,
    "a model-local function": 8,
    "an attribute default value in a function": 9,
    "a function overload": 10,
    "a call of a function overload": 10,
    "metadata properties on this item": 10,
    "a multi-device configuration": 11,
}

# Per domain, ascending (first operator set version, IR version of the release that published it).
_AI_ONNX: tuple[tuple[int, int], ...] = (
    (1, 3),
    (9, 4),
    (10, 5),
    (11, 6),
    (12, 7),
    (15, 8),
    (19, 9),
    (21, 10),
    (23, 11),
    (24, 12),
    (25, 13),
    (28, 14),
)
_TRAINING: tuple[tuple[int, int], ...] = ((1, 7),)
_OPSET_IR: dict[str, tuple[tuple[int, int], ...]] = {
    "": _AI_ONNX,
    "ai.onnx.preview": _AI_ONNX,
    "ai.onnx.ml": ((1, 3), (2, 6), (3, 8), (4, 9), (5, 10)),
    "ai.onnx.training": _TRAINING,
    "ai.onnx.preview.training": _TRAINING,
}


def opset_ir_version(domain: str, version: int) -> int | None:
    """The least IR version of a model importing ``version`` of ``domain``.

    Args:
        domain: The operator set's domain (``""`` and ``"ai.onnx"`` name the default one).
        version: The imported version.

    Returns:
        The IR version of the first release that published that version (a version newer than any known gives
        the latest known row's); None for a domain ONNX 1-2 does not define (a custom domain sets no bound)
        or a version below 1.
    """
    rows = _OPSET_IR.get(canonical_domain(domain))
    if rows is None or version < 1:
        return None
    i = bisect_right(rows, (version, LATEST_IR_VERSION + 1)) - 1
    return rows[max(i, 0)][1]


def element_ir_version(tag: int) -> int | None:
    """The IR version that introduced element type ``tag`` (Table 12), None for 0 or an unlisted tag."""
    try:
        return int(ElementType(tag).ir_version)
    except ElementTypeError:
        return None
