"""Generate ``onnxcore/defs/contrib.json.gz`` from the installed ``onnxruntime`` package (dev-only).

Usage: ``python tools/gen_contrib_defs.py [--check]``

onnxruntime defines operators of its own, stated as C++ schemas it exposes at run time
(``onnxruntime.capi.onnxruntime_pybind11_state.get_all_operator_schema()``). This tool writes, in the one
record format of ``tools/gen_defs.py`` (its ``schema_record``, through an adapter from onnxruntime's
binding of a schema to the attribute names onnx's binding uses):

- every schema of the ``com.microsoft`` domain (onnxruntime registers one version of each);
- the **default-domain extensions**: every (name, since_version) onnxruntime registers in the default
  domain that ONNX 1-2 (the installed ``onnx``) does not define. These are the operators onnxruntime
  writes into the graphs it saves (``SimplifiedLayerNormalization``), the old experimental operators
  ONNX dropped (``Affine``, ``Crop``, ``ImageScaler``...), and versions older than ONNX's first of a
  name (``LayerNormalization``-1, which onnxruntime's fusions write into models importing ai.onnx
  below 17). The generator refuses an extension version that falls between ONNX's own versions of a
  name (binding could then not tell the two apart).

Facts onnxruntime's binding does not expose are filled as onnx's defaults and listed here: the
minimum arity of a variadic parameter is 1; no function bodies are stored.

The document carries ``onnxruntime_version`` (provenance) and is written as deterministically as
``schemas.json.gz``. ``--check`` compares instead of writing (exit 1 when the committed file is stale);
``tests/defs/test_contrib_generated.py`` does the same comparison.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen_defs import gzip_json, schema_record, write_or_check

OUT = Path(__file__).resolve().parent.parent / "src" / "onnxcore" / "defs" / "contrib.json.gz"

FORMAT = 1

CONTRIB_DOMAIN = "com.microsoft"


class _Named:
    """An enum-like value with a ``name`` (onnx's ``option.name``)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


class _Default:
    """onnx's ``default_value`` (an AttributeProto) from onnxruntime's serialized bytes."""

    __slots__ = ("_raw",)

    def __init__(self, raw: bytes) -> None:
        self._raw = raw

    def SerializeToString(self) -> bytes:
        return self._raw


class _Param:
    __slots__ = ("is_homogeneous", "min_arity", "name", "option", "type_str", "types")

    def __init__(self, p: Any) -> None:
        self.name = p.name
        self.type_str = p.typeStr
        self.types = set(p.types)
        self.option = _Named(p.option.name)
        self.is_homogeneous = bool(p.isHomogeneous)
        self.min_arity = 1  # not exposed by onnxruntime; onnx's default


class _Attr:
    __slots__ = ("default_value", "name", "required", "type")

    def __init__(self, a: Any) -> None:
        self.name = a.name
        self.type = int(a.type)
        self.required = bool(a.required)
        raw = a._default_value
        self.default_value = _Default(bytes(raw)) if raw else None


class _Schema:
    """onnxruntime's schema binding seen with onnx's attribute names (what ``schema_record`` reads)."""

    def __init__(self, s: Any) -> None:
        self.name = s.name
        self.domain = s.domain
        self.since_version = int(s.since_version)
        self.deprecated = bool(s.deprecated)
        self.inputs = [_Param(p) for p in s.inputs]
        self.outputs = [_Param(p) for p in s.outputs]
        self.attributes = {k: _Attr(a) for k, a in s.attributes.items()}
        self.type_constraints = s.type_constraints
        self.min_input, self.max_input = int(s.min_input), int(s.max_input)
        self.min_output, self.max_output = int(s.min_output), int(s.max_output)
        self.function_opset_versions: list[int] = []
        self.context_dependent_function_opset_versions: list[int] = []


def selected() -> list[Any]:
    """The onnxruntime schemas stored: com.microsoft, and the default-domain ones ONNX does not define."""
    import onnx.defs
    from onnxruntime.capi import onnxruntime_pybind11_state as ort_c

    onnx_versions: dict[str, list[int]] = {}
    for s in onnx.defs.get_all_schemas_with_history():
        if s.domain == "":
            onnx_versions.setdefault(s.name, []).append(int(s.since_version))
    out = []
    for s in ort_c.get_all_operator_schema():
        if s.domain == CONTRIB_DOMAIN:
            out.append(s)
        elif s.domain == "":
            theirs = onnx_versions.get(s.name, [])
            v = int(s.since_version)
            if v in theirs:
                continue
            if theirs and v > min(theirs):
                raise SystemExit(f"onnxruntime's {s.name}-{v} falls between ONNX's versions {sorted(theirs)}")
            out.append(s)
    return sorted(out, key=lambda s: (s.domain, s.name, int(s.since_version)))


def build() -> bytes:
    """The gzip-compressed JSON document for the installed onnxruntime (deterministic)."""
    import onnxruntime

    schemas = selected()
    contrib = [s for s in schemas if s.domain == CONTRIB_DOMAIN]
    doc = {
        "format": FORMAT,
        "onnxruntime_version": onnxruntime.__version__,
        "domains": {CONTRIB_DOMAIN: [1, max(int(s.since_version) for s in contrib)]},
        "schemas": [schema_record(_Schema(s)) for s in schemas],
    }
    return gzip_json(doc)


def main(argv: list[str] | None = None) -> int:
    return write_or_check(argv, build, OUT, "gen_contrib_defs.py")


if __name__ == "__main__":
    sys.exit(main())
