"""The registry of operator definitions: lazy loading of the data file and version binding.

Binding (Clause 14.3, 14.4, 5.3.2): a node of domain ``d`` in a model importing version ``m`` of ``d``
binds to the definition of its operator with the greatest ``since_version <= m``; an operator whose
first definition is newer than ``m`` is not in operator set ``(d, m)``.
"""

from __future__ import annotations

import gzip
import json
import threading
from bisect import bisect_right
from importlib import resources
from typing import Any

from onnxcore.defs.opschema import OpSchema, schema_from_record
from onnxcore.errors import OnnxCoreError

__all__ = [
    "DATA_FILE",
    "all_schemas",
    "canonical_domain",
    "data_info",
    "domain_versions",
    "get_schema",
    "known_domains",
    "schema_versions",
]

DATA_FILE = "schemas.json.gz"

_lock = threading.Lock()


class _Registry:
    """Parsed data: records grouped by (domain, name), schemas built on first request."""

    __slots__ = ("built", "domains", "info", "records", "versions")

    def __init__(self, doc: dict[str, Any]) -> None:
        self.info = {k: doc[k] for k in ("format", "onnx_version", "default_opset_version")}
        self.domains: dict[str, tuple[int, int]] = {d: (int(lo), int(hi)) for d, (lo, hi) in doc["domains"].items()}
        self.records: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for rec in doc["schemas"]:  # sorted by (domain, name, since_version) by the generator
            self.records.setdefault((rec["d"], rec["n"]), []).append(rec)
        self.versions: dict[tuple[str, str], list[int]] = {
            k: [int(r["v"]) for r in recs] for k, recs in self.records.items()
        }
        self.built: dict[tuple[str, str, int], OpSchema] = {}

    def schema(self, key: tuple[str, str], index: int) -> OpSchema:
        rec = self.records[key][index]
        full = (key[0], key[1], int(rec["v"]))
        s = self.built.get(full)
        if s is None:
            # setdefault: under a race both threads end up with the same object
            s = self.built.setdefault(full, schema_from_record(rec))
        return s


_registry: _Registry | None = None


def _load() -> _Registry:
    global _registry
    reg = _registry
    if reg is not None:
        return reg
    with _lock:
        if _registry is None:
            try:
                raw = resources.files("onnxcore.defs").joinpath(DATA_FILE).read_bytes()
                doc = json.loads(gzip.decompress(raw))
            except (OSError, ValueError) as e:  # a broken installation, not a bad model
                raise OnnxCoreError(f"cannot read the operator definitions ({DATA_FILE}): {e}") from e
            _registry = _Registry(doc)
        return _registry


def canonical_domain(domain: str) -> str:
    """``"ai.onnx"`` and ``""`` both name the default domain (Annex B ``OperatorSetIdProto``)."""
    return "" if domain == "ai.onnx" else domain


def get_schema(op_type: str, version: int, domain: str = "") -> OpSchema | None:
    """The definition a node binds to in operator set ``(domain, version)`` (Clause 14.3, 14.4).

    Args:
        op_type: The operator name.
        version: The version of ``domain`` the model imports.
        domain: The node's domain; ``"ai.onnx"`` is the same as ``""``.

    Returns:
        The definition with the greatest ``since_version <= version``; None when the operator or the
        domain is unknown, or when the operator's first definition is newer than ``version``. A
        version above the newest known one of the domain binds to the newest definition (the
        validator reports such an import separately).
    """
    reg = _load()
    key = (canonical_domain(domain), op_type)
    versions = reg.versions.get(key)
    if versions is None:
        return None
    i = bisect_right(versions, version) - 1
    if i < 0:
        return None
    return reg.schema(key, i)


def schema_versions(op_type: str, domain: str = "") -> list[int]:
    """Every ``since_version`` of an operator, ascending (empty when unknown)."""
    return list(_load().versions.get((canonical_domain(domain), op_type), ()))


def all_schemas() -> list[OpSchema]:
    """Every definition of every operator of every domain and version, sorted by (domain, name, version)."""
    reg = _load()
    return [reg.schema(key, i) for key in sorted(reg.records) for i in range(len(reg.records[key]))]


def domain_versions(domain: str) -> tuple[int, int] | None:
    """The (lowest, highest) operator set version known for ``domain``, or None when unknown."""
    return _load().domains.get(canonical_domain(domain))


def known_domains() -> list[str]:
    """The domains ONNX 1-2 defines (``""`` for ai.onnx), sorted."""
    return sorted(_load().domains)


def data_info() -> dict[str, Any]:
    """Provenance of the data: ``format``, ``onnx_version`` it was generated from, ``default_opset_version``."""
    return dict(_load().info)
