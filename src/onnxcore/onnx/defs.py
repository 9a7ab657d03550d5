"""``onnx.defs``: the operator definitions onnxcore binds (:mod:`onnxcore.defs`), under onnx's names.

``get_schema`` returns onnxcore's :class:`~onnxcore.defs.OpSchema` record (name, domain, since_version, inputs,
outputs, attributes, type constraints), not onnx's C++-backed class.
"""

from __future__ import annotations

from onnxcore.defs.binding import domain_versions
from onnxcore.defs.binding import get_schema as _get_schema
from onnxcore.defs.opschema import OpSchema
from onnxcore.errors import UnknownOperatorError as SchemaError

__all__ = ["ONNX_DOMAIN", "ONNX_ML_DOMAIN", "OpSchema", "SchemaError", "get_schema", "has", "onnx_opset_version"]

ONNX_DOMAIN = ""
ONNX_ML_DOMAIN = "ai.onnx.ml"


def onnx_opset_version() -> int:
    """The newest ai.onnx operator set version onnxcore knows."""
    versions = domain_versions("")
    assert versions is not None
    return versions[1]


def get_schema(op_type: str, max_inclusive_version: int | None = None, domain: str = "") -> OpSchema:
    """The definition of ``op_type`` in force at ``max_inclusive_version`` (the newest by default) (Clause 14.3).

    Raises:
        SchemaError: no definition binds (:class:`onnxcore.errors.UnknownOperatorError`, a ``LookupError``).
    """
    versions = domain_versions(domain)
    version = max_inclusive_version if max_inclusive_version is not None else (versions[1] if versions else 1)
    schema = _get_schema(op_type, version, domain)
    if schema is None:
        raise SchemaError(f"no schema registered for {op_type!r} (domain {domain!r}, version {version})")
    return schema


def has(op_type: str, domain: str = "") -> bool:
    """Whether ``op_type`` has a definition in ``domain`` at its newest version."""
    versions = domain_versions(domain)
    return versions is not None and _get_schema(op_type, versions[1], domain) is not None
