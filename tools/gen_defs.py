"""Generate ``onnxcore/defs/schemas.json.gz`` from the installed ``onnx`` package (dev-only).

Usage: ``python tools/gen_defs.py [--check]``

The operator definitions of ONNX 1-2 are facts the ``onnx`` package states as C++ schemas; this
tool writes every schema of every domain and every version as data, so that ``onnxcore.defs``
answers Clause 14.3/14.4 binding questions without importing onnx at run time.

What is stored per schema (one JSON object, short keys to keep the file small):

- ``n`` name, ``d`` domain, ``v`` since_version, ``x`` deprecated (1 when deprecated, omitted otherwise);
- ``i`` / ``o`` formal inputs / outputs: ``[name, type_str, option, homogeneous, min_arity]`` with
  option 0 single, 1 optional, 2 variadic;
- ``a`` attributes: ``[name, type, required, default]`` where ``default`` is the base64 of our own
  encoding (``onnxcore.encode``) of the default ``AttributeProto``, or null when there is none;
- ``t`` type constraints: ``[type_var, [type strings]]`` with the type strings in the canonical form
  onnx uses for a formal parameter's ``types`` (``map(string,tensor(float))``, no spaces);
- ``c`` counts ``[min_input, max_input, min_output, max_output]``;
- ``f`` static function bodies: ``{opset_version: base64 of the onnx FunctionProto bytes}``;
- ``fc`` the opset versions for which the schema has a *context-dependent* function body. Such a
  body is built by onnx from the types and attributes of one particular node, so it cannot be
  stored statically; only the flag is recorded (``OpSchema.context_dependent_function_versions``).

Doc strings are left out (they are half the size and not needed to validate or evaluate).
The output is deterministic: schemas sorted by (domain, name, since_version), JSON with sorted keys
and no whitespace, gzip with a zero timestamp. ``--check`` compares instead of writing (exit 1 when
the committed file is stale); ``tests/defs/test_generated.py`` does the same comparison.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import io
import json
import sys
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent.parent / "src" / "onnxcore" / "defs" / "schemas.json.gz"

FORMAT = 1

_OPTION = {"Single": 0, "Optional": 1, "Variadic": 2}


def normalize_type_str(text: str) -> str:
    """The canonical form of a type string, as onnx gives it for ``FormalParameter.types``.

    Spaces are removed and the value type of a map written as a bare element type (``map(string,
    float)``) is read as a tensor of that element type.
    """
    s = text.replace(" ", "")
    return _norm(s, top=True)


def _norm(s: str, *, top: bool) -> str:
    if "(" not in s:
        # A bare element type in a composite position denotes a tensor of it.
        return s if top else f"tensor({s})"
    head, rest = s.split("(", 1)
    inner = rest[:-1]
    if head in ("tensor", "sparse_tensor"):
        return f"{head}({inner})"
    if head in ("seq", "optional"):
        return f"{head}({_norm(inner, top=False)})"
    if head == "map":
        key, value = inner.split(",", 1)
        return f"map({key},{_norm(value, top=False)})"
    return s


def _attribute_default(attr: Any) -> str | None:
    import onnxcore

    dv = attr.default_value
    if dv is None or not dv.SerializeToString():
        return None
    ours = onnxcore.decode(onnxcore.AttributeProto, dv.SerializeToString())
    return base64.b64encode(onnxcore.encode(ours)).decode("ascii")


def schema_record(schema: Any) -> dict[str, Any]:
    """One schema as a JSON-ready object (see the module docstring for the keys)."""
    tc = [[c.type_param_str, [normalize_type_str(t) for t in c.allowed_type_strs]] for c in schema.type_constraints]
    by_var = {var: set(types) for var, types in tc}

    def params(ps: Any) -> list[list[Any]]:
        out = []
        for p in ps:
            expected = by_var.get(p.type_str, {p.type_str})
            if expected != set(p.types):
                raise SystemExit(f"{schema.domain}:{schema.name}-{schema.since_version} {p.name}: cannot derive types")
            out.append([p.name, p.type_str, _OPTION[p.option.name], int(p.is_homogeneous), int(p.min_arity)])
        return out

    rec: dict[str, Any] = {
        "n": schema.name,
        "d": schema.domain,
        "v": int(schema.since_version),
        "i": params(schema.inputs),
        "o": params(schema.outputs),
        "a": [
            [a.name, int(a.type), int(a.required), _attribute_default(a)]
            for a in sorted(schema.attributes.values(), key=lambda a: a.name)
        ],
        "t": tc,
        "c": [int(schema.min_input), int(schema.max_input), int(schema.min_output), int(schema.max_output)],
    }
    if schema.deprecated:
        rec["x"] = 1
    funcs = {}
    for v in sorted(schema.function_opset_versions):
        body = schema.get_function_with_opset_version(v)
        if isinstance(body, str):
            body = body.encode("latin-1")
        if not isinstance(body, bytes):
            body = body.SerializeToString()
        funcs[str(v)] = base64.b64encode(body).decode("ascii")
    if funcs:
        rec["f"] = funcs
    ctx = sorted(int(v) for v in schema.context_dependent_function_opset_versions)
    if ctx:
        rec["fc"] = ctx
    return rec


def build() -> bytes:
    """The gzip-compressed JSON document for the installed onnx (deterministic)."""
    import onnx
    import onnx.defs

    schemas = sorted(onnx.defs.get_all_schemas_with_history(), key=lambda s: (s.domain, s.name, s.since_version))
    domains = {d: [int(lo), int(hi)] for d, (lo, hi) in onnx.defs.C.schema_version_map().items()}
    for s in schemas:  # every domain that has a schema is listed
        domains.setdefault(s.domain, [1, int(s.since_version)])
    doc = {
        "format": FORMAT,
        "onnx_version": onnx.__version__,
        "default_opset_version": int(onnx.defs.onnx_opset_version()),
        "domains": dict(sorted(domains.items())),
        "schemas": [schema_record(s) for s in schemas],
    }
    return gzip_json(doc)


def gzip_json(doc: dict[str, Any]) -> bytes:
    """``doc`` as deterministic gzipped JSON (sorted keys, no whitespace, a zero timestamp)."""
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, compresslevel=9, mtime=0) as gz:
        gz.write(text)
    return buf.getvalue()


def write_or_check(argv: list[str] | None, build_data: Any, out: Path, tool: str) -> int:
    """The command line of a generator: write ``build_data()`` to ``--out`` (through a temporary file), or with
    ``--check`` compare it with the committed file (exit 1 when stale)."""
    ap = argparse.ArgumentParser(description=f"generate {out.name}")
    ap.add_argument("--check", action="store_true", help="compare with the committed file instead of writing")
    ap.add_argument("--out", type=Path, default=out)
    args = ap.parse_args(argv)
    data = build_data()
    if args.check:
        current = args.out.read_bytes() if args.out.exists() else b""
        if current != data:
            print(f"{args.out} is stale; run python tools/{tool}", file=sys.stderr)
            return 1
        print(f"{args.out} is up to date ({len(data)} bytes)")
        return 0
    tmp = args.out.with_suffix(".tmp")
    tmp.write_bytes(data)
    tmp.replace(args.out)
    print(f"wrote {args.out} ({len(data)} bytes)")
    return 0


def main(argv: list[str] | None = None) -> int:
    return write_or_check(argv, build, OUT, "gen_defs.py")


if __name__ == "__main__":
    sys.exit(main())
