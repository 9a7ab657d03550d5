"""Generate ``onnxcore/proto/annex_b.py`` and ``onnxcore/proto/messages.py`` from Annex B of the spec (dev-only).

Usage: ``python tools/gen_proto.py [--check] [SPEC]`` (``SPEC`` defaults to ``../shared/spec/part1-core.txt``
next to the repository). With ``--check`` nothing is written: the exit status is 1 when a committed file
differs from what would be generated.

The spec's Annex B tables are normative (Annex B, B.5); transcribing them by a
program rather than by hand keeps names, tags, wire types and obligations exact.
"""

from __future__ import annotations

import argparse
import pprint
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT.parent / "shared" / "spec" / "part1-core.txt"
OUT = ROOT / "src" / "onnxcore" / "proto" / "annex_b.py"

SCALARS = {"int32", "int64", "uint64", "float", "double", "string", "bytes", "bool"}


def parse(text: str) -> tuple[list[dict], list[dict]]:
    start = text.index("B.2. Model, graph and tensor messages\n\nB.2.1.")
    end = text.index("B.5. Derivation")
    body = text[start:end]
    messages: list[dict] = []
    enums: list[dict] = []
    lines = body.splitlines()
    i = 0
    current: dict | None = None
    while i < len(lines):
        line = lines[i]
        m = re.match(r"Table B\.\d+ — Fields of `([\w.]+)`", line)
        if m:
            current = {"name": m.group(1), "fields": [], "reserved_tags": [], "reserved_names": [], "oneofs": {}}
            messages.append(current)
            i += 2
            while i < len(lines) and lines[i].startswith("`"):
                name, tag, wire, typ, obl = lines[i].split("\t")
                current["fields"].append(
                    {
                        "name": name.strip("`"),
                        "tag": int(tag),
                        "wire_type": int(wire),
                        "type": typ.strip("`"),
                        "obligation": obl,
                    }
                )
                i += 1
            continue
        m = re.match(r"Table B\.\d+ — Values of `([\w.]+)`", line)
        if m:
            enum = {"name": m.group(1), "values": []}
            enums.append(enum)
            i += 2
            while i < len(lines) and lines[i].startswith("`"):
                name, value = lines[i].split("\t")
                enum["values"].append((name.strip("`"), int(value)))
                i += 1
            continue
        m = re.match(r"Tags and names reserved in ([\w.]+), which SHALL NOT be used: (.*)\.$", line)
        if m:
            assert current is not None and current["name"] == m.group(1), line
            for part in m.group(2).replace(";", ",").split(","):
                part = part.strip()
                if part.startswith('"'):
                    current["reserved_names"].append(part.strip('"'))
                elif " to " in part:
                    a, b = part.split(" to ")
                    current["reserved_tags"].extend(range(int(a), int(b) + 1))
                else:
                    current["reserved_tags"].append(int(part))
        m = re.match(r"Exactly one of (.*) SHALL be present, being the group (\w+)\.$", line)
        if m:
            assert current is not None
            members = [x.strip() for x in m.group(1).split(",")]
            current["oneofs"][m.group(2)] = members
        i += 1
    return messages, enums


def qualify(messages: list[dict], enums: list[dict]) -> None:
    names = {m["name"] for m in messages} | {e["name"] for e in enums}
    # Enums whose table heading is unqualified but which belong to a message (Annex B headings
    # name them by their schema-local name when nested, e.g. AttributeProto.AttributeType).
    for msg in messages:
        for f in msg["fields"]:
            t = f["type"]
            obl = f["obligation"]
            f["repeated"] = obl.startswith("repeated")
            f["packed"] = obl == "repeated, packed"
            f["deprecated"] = obl == "deprecated"
            f["oneof"] = next((g for g, mem in msg["oneofs"].items() if f["name"] in mem), None)
            f["obligation"] = "one of the group" if f["oneof"] else obl.split(",")[0]
            if t in SCALARS:
                f["kind"] = "scalar"
                continue
            candidates = [f"{msg['name']}.{t}", f"{msg['name'].split('.')[0]}.{t}", t]
            for c in candidates:
                if c in names:
                    f["type"] = c
                    break
            else:
                raise SystemExit(f"unresolved type {t} in {msg['name']}")
            f["kind"] = "enum" if any(e["name"] == f["type"] for e in enums) else "message"


def gen_annex_b(messages: list[dict], enums: list[dict]) -> str:
    msg_rows = []
    for m in messages:
        fields = tuple(
            (
                f["name"],
                f["tag"],
                f["wire_type"],
                f["type"],
                f["kind"],
                f["obligation"],
                f["repeated"],
                f["packed"],
                f["oneof"],
            )
            for f in m["fields"]
        )
        msg_rows.append((m["name"], fields, tuple(m["reserved_tags"]), tuple(m["reserved_names"])))
    enum_rows = [(e["name"], tuple(e["values"])) for e in enums]
    src = (
        '"""Annex B of ONNX Part 1 as data: every message, field and enumeration.\n\n'
        "Generated by ``tools/gen_proto.py`` from the spec's Annex B tables; do not edit by hand.\n"
        "A message row is ``(name, fields, reserved_tags, reserved_names)``; a field row is\n"
        "``(name, tag, wire_type, type, kind, obligation, repeated, packed, oneof)`` where ``kind`` is\n"
        '``"scalar"``, ``"enum"`` or ``"message"``. An enumeration row is ``(name, ((value_name, number), ...))``.\n'
        '"""\n\n'
        "from __future__ import annotations\n\n"
        "FieldRow = tuple[str, int, int, str, str, str, bool, bool, str | None]\n"
        "MessageRow = tuple[str, tuple[FieldRow, ...], tuple[int, ...], tuple[str, ...]]\n"
        "EnumRow = tuple[str, tuple[tuple[str, int], ...]]\n\n"
        f"MESSAGES: tuple[MessageRow, ...] = {pprint.pformat(tuple(msg_rows), width=110)}\n\n"
        f"ENUMS: tuple[EnumRow, ...] = {pprint.pformat(tuple(enum_rows), width=110)}\n"
    )
    return src


# ---------------------------------------------------------------------------------------------
# Record classes: src/onnxcore/proto/messages.py
# ---------------------------------------------------------------------------------------------

PY_TYPES = {
    "int32": "int",
    "int64": "int",
    "uint64": "int",
    "float": "float",
    "double": "float",
    "string": "str",
    "bytes": "bytes",
    "bool": "bool",
}
DEFAULTS = {"int": "0", "float": "0.0", "str": '""', "bytes": 'b""', "bool": "False"}
MESSAGES_OUT = OUT.parent / "messages.py"


def _py_type(f: dict, enum_names: set[str]) -> str:
    if f["kind"] == "scalar":
        t = PY_TYPES[f["type"]]
        if f["name"] == "raw_data":
            t = "bytes | memoryview"
        return t
    if f["kind"] == "enum":
        return "int"
    return f["type"]


def gen_messages(messages: list[dict], enums: list[dict]) -> str:
    enum_names = {e["name"] for e in enums}
    by_parent: dict[str, list[str]] = {}
    all_names = [m["name"] for m in messages] + [e["name"] for e in enums]
    for n in all_names:
        if "." in n:
            by_parent.setdefault(n.rsplit(".", 1)[0], []).append(n)
    msg_by_name = {m["name"]: m for m in messages}
    enum_by_name = {e["name"]: e for e in enums}

    def emit_enum(e: dict, indent: str) -> list[str]:
        short = e["name"].rsplit(".", 1)[-1]
        out = [f"{indent}class {short}(ProtoEnum):", f'{indent}    """Values of ``{e["name"]}`` (Annex B)."""', ""]
        for vname, val in e["values"]:
            out.append(f"{indent}    {vname} = {val}")
        out.append("")
        return out

    def emit_message(m: dict, indent: str) -> list[str]:
        short = m["name"].rsplit(".", 1)[-1]
        fields = m["fields"]
        out = [f"{indent}class {short}(Message):", f'{indent}    """Fields of ``{m["name"]}`` (Annex B)."""', ""]
        slots = ", ".join(f'"{f["name"]}"' for f in fields)
        out.append(f"{indent}    __slots__ = ({slots},)")
        out.append("")
        children = by_parent.get(m["name"], [])
        for child in children:
            if child in enum_by_name:
                out.extend(emit_enum(enum_by_name[child], indent + "    "))
            else:
                out.extend(emit_message(msg_by_name[child], indent + "    "))
        # The values of every nested enum also as class attributes, as protobuf's generated
        # classes (and so onnx's) have them: ``TensorProto.FLOAT is TensorProto.DataType.FLOAT``.
        # Upper-case value names never meet the lower-case field names, but refuse any clash.
        taken = {f["name"] for f in fields} | {c.rsplit(".", 1)[-1] for c in children}
        aliases = []
        for child in children:
            if child not in enum_by_name:
                continue
            enum_short = child.rsplit(".", 1)[-1]
            for vname, _val in enum_by_name[child]["values"]:
                if vname in taken:
                    raise SystemExit(f"{m['name']}: enum value {vname} of {child} clashes with another name")
                taken.add(vname)
                aliases.append(f"{indent}    {vname} = {enum_short}.{vname}")
        if aliases:
            out.extend(aliases)
            out.append("")
        for f in fields:
            t = _py_type(f, enum_names)
            if f["repeated"]:
                ann = f"list[{t}]"
            elif f["kind"] == "message":
                ann = f"{t} | None"
            else:
                ann = t
            out.append(f"{indent}    {f['name']}: {ann}")
        out.append("")
        params = []
        for f in fields:
            t = _py_type(f, enum_names)
            if f["repeated"]:
                params.append(f"{f['name']}: Iterable[{t}] | None = None")
            else:
                params.append(f"{f['name']}: {t} | None = None")
        out.append(f"{indent}    def __init__(")
        out.append(f"{indent}        self,")
        out.append(f"{indent}        *,")
        for p in params:
            out.append(f"{indent}        {p},")
        out.append(f"{indent}    ) -> None:")
        out.append(f"{indent}        present = 0")
        for idx, f in enumerate(fields):
            n = f["name"]
            if f["repeated"]:
                if f["kind"] == "message":
                    # The list class with protobuf's add() (onnxcore.proto.message.RepeatedMessages).
                    lst = f"{f['type']}._List"
                    out.append(f"{indent}        self.{n} = {lst}() if {n} is None else {lst}({n})")
                else:
                    out.append(f"{indent}        self.{n} = [] if {n} is None else list({n})")
            elif f["kind"] == "message":
                out.append(f"{indent}        self.{n} = {n}")
            else:
                t = PY_TYPES.get(f["type"], "int") if f["kind"] == "scalar" else "int"
                out.append(f"{indent}        if {n} is None:")
                out.append(f"{indent}            self.{n} = {DEFAULTS[t]}")
                out.append(f"{indent}        else:")
                out.append(f"{indent}            self.{n} = {n}")
                out.append(f"{indent}            present |= {1 << idx}")
        out.append(f"{indent}        self._present = present")
        out.append(f"{indent}        self._unknown = None")
        out.append("")
        return out

    lines = [
        '"""The messages of Annex B as slotted record classes, named exactly as in Annex B.',
        "",
        "Generated by ``tools/gen_proto.py`` from the spec; do not edit by hand. Every field reads as its",
        'default when absent (0, ``""``, ``b""``, an empty list, ``None`` for an embedded message);',
        "``msg.has(name)`` tells presence (Annex B, Clause 12.3.2). A repeated embedded-message field is its",
        "element class's ``_List`` (a list with protobuf's ``add``); enumerations answer protobuf's ``Name`` and",
        "``Value``.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from collections.abc import Iterable",
        "from onnxcore.proto.message import Message, ProtoEnum",
        "",
        "__all__ = [",
    ]
    top = [n for n in all_names if "." not in n]
    for n in top:
        lines.append(f'    "{n}",')
    lines.append("]")
    lines.append("")
    for n in top:
        lines.append("")
        if n in enum_by_name:
            lines.extend(emit_enum(enum_by_name[n], ""))
        else:
            lines.extend(emit_message(msg_by_name[n], ""))
    return "\n".join(lines).rstrip() + "\n"


def build(text: str) -> dict[Path, str]:
    """Every generated file (path -> text) from the spec's text."""
    messages, enums = parse(text)
    qualify(messages, enums)
    return {OUT: gen_annex_b(messages, enums), MESSAGES_OUT: gen_messages(messages, enums)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("spec", nargs="?", type=Path, default=SPEC, help="the text of ONNX Part 1")
    ap.add_argument("--check", action="store_true", help="compare with the committed files instead of writing")
    args = ap.parse_args(argv)
    outputs = build(args.spec.read_text(encoding="utf-8"))
    if args.check:
        stale = [path for path, src in outputs.items() if not path.exists() or path.read_text(encoding="utf-8") != src]
        for path in stale:
            print(f"{path} is stale; run python tools/gen_proto.py", file=sys.stderr)
        if stale:
            return 1
        print(f"{len(outputs)} generated files are up to date")
        return 0
    for path, src in outputs.items():
        path.write_text(src, encoding="utf-8")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
