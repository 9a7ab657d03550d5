"""The registry of operator definitions: lazy loading of the data file and version binding.

Binding (Clause 14.3, 14.4, 5.3.2): a node of domain ``d`` in a model importing version ``m`` of ``d``
binds to the definition of its operator with the greatest ``since_version <= m``; an operator whose
first definition is newer than ``m`` is not in operator set ``(d, m)``.

Two data files, two origins (:attr:`OpSchema.origin`): ``schemas.json.gz``, ONNX 1-2 (``tools/gen_defs.py``),
and ``contrib.json.gz``, onnxruntime's own definitions (``tools/gen_contrib_defs.py``), read only when a
question needs it. onnxruntime's hold the ``com.microsoft`` domain (:func:`contrib_domains`), bound like any
domain by :func:`get_schema`, and its **extensions of the default domain** (operators or versions ONNX 1-2 does
not define there, e.g. ``SimplifiedLayerNormalization``-1, ``LayerNormalization``-1), which :func:`get_schema`
never returns -- ai.onnx is what ONNX 1-2 says it is -- and :func:`extension_schema` binds on request.
"""

from __future__ import annotations

import gzip
import json
import threading
from bisect import bisect_right
from pathlib import Path
from typing import Any

from onnxcore.defs.opschema import OpSchema, Origin, schema_from_record
from onnxcore.errors import OnnxCoreError

__all__ = [
    "CONTRIB_FILE",
    "DATA_FILE",
    "all_schemas",
    "canonical_domain",
    "contrib_domains",
    "contrib_info",
    "data_info",
    "domain_versions",
    "extension_schema",
    "extension_versions",
    "get_schema",
    "known_domains",
    "schema_versions",
]

DATA_FILE = "schemas.json.gz"
CONTRIB_FILE = "contrib.json.gz"

_lock = threading.Lock()


class _Registry:
    """Parsed data: records grouped by (domain, name), schemas built on first request."""

    __slots__ = ("built", "domains", "info", "origin", "records", "versions")

    def __init__(self, doc: dict[str, Any], origin: Origin) -> None:
        self.origin: Origin = origin
        self.info = {k: v for k, v in doc.items() if k not in ("domains", "schemas")}
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
            s = self.built.setdefault(full, schema_from_record(rec, self.origin))
        return s

    def binding(self, key: tuple[str, str], version: int) -> OpSchema | None:
        """The record of ``key`` with the greatest since_version <= ``version``, built (Clause 14.3)."""
        versions = self.versions.get(key)
        if versions is None:
            return None
        i = bisect_right(versions, version) - 1
        return self.schema(key, i) if i >= 0 else None


_registries: dict[str, _Registry] = {}


def _read(file: str, origin: Origin) -> _Registry:
    reg = _registries.get(file)
    if reg is not None:
        return reg
    with _lock:
        if file not in _registries:
            try:
                doc = json.loads(gzip.decompress(_data_bytes(file)))
            except (OSError, ValueError) as e:  # a broken installation, not a bad model
                raise OnnxCoreError(f"cannot read the operator definitions ({file}): {e}") from e
            _registries[file] = _Registry(doc, origin)
        return _registries[file]


def _data_bytes(file: str) -> bytes:
    """The octets of a data file of this package: read beside this module when it is a file on disk (importing
    importlib.resources, with zipfile and tempfile, was 5 ms of every session and check: issue 42, item 3), else
    through importlib.resources (an installation in a zip archive)."""
    beside = Path(__file__).with_name(file)
    if beside.is_file():
        return beside.read_bytes()
    # Here, not at the top: only an installation that is not a directory of files reaches this line.
    from importlib import resources

    return resources.files("onnxcore.defs").joinpath(file).read_bytes()


def _load() -> _Registry:
    """ONNX 1-2's definitions."""
    return _read(DATA_FILE, "onnx")


def _load_contrib() -> _Registry:
    """onnxruntime's definitions (com.microsoft and its default-domain extensions)."""
    return _read(CONTRIB_FILE, "onnxruntime")


def _owner(domain: str) -> _Registry:
    """The registry whose definitions a domain's nodes bind to: onnxruntime's for its domains, else ONNX's."""
    return _load_contrib() if domain in _CONTRIB_DOMAINS else _load()


# The domains onnxruntime owns (its data file's ``domains``); fixed here so that a default-domain question never
# reads that file. tests/defs/test_contrib_generated.py checks it against the data.
_CONTRIB_DOMAINS: frozenset[str] = frozenset({"com.microsoft"})


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
    dom = canonical_domain(domain)
    return _owner(dom).binding((dom, op_type), version)


def schema_versions(op_type: str, domain: str = "") -> list[int]:
    """Every ``since_version`` of an operator in its domain's definitions, ascending (empty when unknown).

    The default domain's are ONNX 1-2's only (see :func:`extension_versions`).
    """
    dom = canonical_domain(domain)
    return list(_owner(dom).versions.get((dom, op_type), ()))


def extension_schema(op_type: str, version: int, domain: str = "") -> OpSchema | None:
    """onnxruntime's definition of ``op_type`` in an ONNX domain that ONNX 1-2 does not define there, bound at
    ``version`` (Clause 14.3's rule over onnxruntime's versions), or None.

    For a node that ONNX 1-2 leaves undefined (or defines only later) and onnxruntime evaluates, e.g.
    ``SimplifiedLayerNormalization`` or ``LayerNormalization`` importing ai.onnx 13. Its ``origin`` is
    ``"onnxruntime"``.
    """
    dom = canonical_domain(domain)
    if dom in _CONTRIB_DOMAINS:
        return None
    return _load_contrib().binding((dom, op_type), version)


def extension_versions(op_type: str, domain: str = "") -> list[int]:
    """The since_versions of onnxruntime's extension definitions of ``op_type`` in an ONNX domain, ascending."""
    dom = canonical_domain(domain)
    if dom in _CONTRIB_DOMAINS:
        return []
    return list(_load_contrib().versions.get((dom, op_type), ()))


def all_schemas(*, origin: Origin = "onnx") -> list[OpSchema]:
    """Every definition of one origin, of every operator, domain and version, sorted by (domain, name, version).

    Args:
        origin: ``"onnx"`` (ONNX 1-2, the default) or ``"onnxruntime"`` (com.microsoft and onnxruntime's
            default-domain extensions).
    """
    reg = _load() if origin == "onnx" else _load_contrib()
    return [reg.schema(key, i) for key in sorted(reg.records) for i in range(len(reg.records[key]))]


def domain_versions(domain: str) -> tuple[int, int] | None:
    """The (lowest, highest) operator set version known for ``domain``, or None when unknown."""
    return _load().domains.get(canonical_domain(domain))


def known_domains() -> list[str]:
    """The domains ONNX 1-2 defines (``""`` for ai.onnx), sorted."""
    return sorted(_load().domains)


def contrib_domains() -> list[str]:
    """The domains onnxruntime defines besides ONNX's (``com.microsoft``), sorted."""
    return sorted(_CONTRIB_DOMAINS)


def data_info() -> dict[str, Any]:
    """Provenance of the data: ``format``, ``onnx_version`` it was generated from, ``default_opset_version``."""
    return dict(_load().info)


def contrib_info() -> dict[str, Any]:
    """Provenance of onnxruntime's definitions: ``format``, ``onnxruntime_version`` they were generated from."""
    return dict(_load_contrib().info)
