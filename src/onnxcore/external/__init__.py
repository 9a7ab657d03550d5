"""External data (Clause 13) under the security rules of Clause 15.3, and the limits of 15.4.

Reading: :func:`load_external_data` resolves the references of a loaded model in place (the
contents become zero-copy views of the memory-mapped files); :func:`verify_references` lists the
refused ones without changing anything; :func:`read_external_tensor_bytes` gives one tensor's
octets. Writing: :func:`externalize` and :func:`internalize` convert in memory, and
:func:`onnxcore.save` writes the data file. Policy and limits: ``docs/external-data.md``.
"""

from __future__ import annotations

from onnxcore.external.read import (
    base_dir_of,
    has_external_tensors,
    load_external_data,
    read_external_tensor_bytes,
    verify_references,
)
from onnxcore.external.reference import ExternalRef, ReferenceRule, parse_reference, split_location
from onnxcore.external.side_table import Resolution, is_resolved, resolution
from onnxcore.external.write import externalize, internalize, save_model

__all__ = [
    "ExternalRef",
    "Resolution",
    "ReferenceRule",
    "base_dir_of",
    "externalize",
    "has_external_tensors",
    "internalize",
    "is_resolved",
    "load_external_data",
    "parse_reference",
    "read_external_tensor_bytes",
    "resolution",
    "save_model",
    "split_location",
    "verify_references",
]
