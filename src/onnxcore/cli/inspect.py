"""``onnxcore inspect``: a model field by field, like the spec's ModelProto tables, streaming.

Every field is shown with its tag, name, wire type, byte offset and length, nested to a chosen
depth. Tensors are summarised (type, dims, octets, location), never dumped, and their contents are
never read, so a multi-gigabyte file is inspected at the speed of its structure. A corrupt file is
shown up to the first bad octet, then the offset and field path where decoding failed.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any, TextIO

from onnxcore.errors import DecodeError, OnnxCoreError
from onnxcore.io import read_source
from onnxcore.proto.spec import ENUM_SPECS, MESSAGE_SPECS, MessageSpec
from onnxcore.wire.reader import Buffer, FieldRecord, iter_fields, read_key, read_varint
from onnxcore.wire.varint import to_int64

__all__ = ["Row", "inspect_rows", "run_inspect"]

_WIRE_NAMES = {0: "VARINT", 1: "I64", 2: "LEN", 5: "I32"}
_DATA_TYPES = ENUM_SPECS["TensorProto.DataType"].by_value


@dataclass
class Row:
    """One field as found in the file."""

    depth: int
    path: str
    tag: int
    name: str
    wire_type: str
    offset: int
    length: int
    value: Any = None
    summary: dict[str, Any] = field(default_factory=dict)


def _tensor_summary(buf: Buffer, start: int, end: int) -> dict[str, Any]:
    """Type, dims, octets and location of a TensorProto, from its keys and lengths only."""
    dims: list[int] = []
    out: dict[str, Any] = {}
    data_octets = 0
    storage = None
    ext: dict[str, str] = {}
    for r in iter_fields(buf, start, end):
        if r.tag == 1:
            if r.wire_type == 2:
                pos = r.value_start
                while pos < r.value_end:
                    v, pos = read_varint(buf, pos, r.value_end)
                    dims.append(to_int64(v))
            else:
                dims.append(to_int64(r.value or 0))
        elif r.tag == 2 and r.value is not None:
            out["data_type"] = _DATA_TYPES.get(to_int64(r.value), f"unknown tag {to_int64(r.value)}")
        elif r.tag == 8:
            out["name"] = str(buf[r.value_start : r.value_end], "utf-8", "replace")
        elif r.tag in (4, 5, 6, 7, 9, 10, 11):
            storage = MESSAGE_SPECS["TensorProto"].by_tag[r.tag].name
            data_octets += r.value_end - r.value_start
        elif r.tag == 13:
            key = value = ""
            for e in iter_fields(buf, r.value_start, r.value_end):
                text = str(buf[e.value_start : e.value_end], "utf-8", "replace")
                if e.tag == 1:
                    key = text
                elif e.tag == 2:
                    value = text
            ext[key] = value
        elif r.tag == 14 and r.value == 1:
            out["data_location"] = "EXTERNAL"
    out["dims"] = dims
    if storage:
        out["storage"] = storage
        out["octets"] = data_octets
    if ext:
        out["external_data"] = ext
    return out


def _walk(
    buf: Buffer, spec: MessageSpec, start: int, end: int, depth: int, max_depth: int, path: str, max_items: int
) -> Iterator[Row]:
    counts: dict[int, int] = {}
    elided: dict[int, int] = {}
    for r in _fields_named(buf, spec, start, end):
        f = spec.by_tag.get(r.tag)
        name = f.name if f else f"<unknown {r.tag}>"
        idx = counts.get(r.tag, 0)
        counts[r.tag] = idx + 1
        segment = f"{name}[{idx}]" if f is not None and f.repeated else name
        fpath = f"{path}.{segment}"
        if f is not None and f.repeated and idx >= max_items:
            elided[r.tag] = elided.get(r.tag, 0) + 1
            if f.kind == "message" and depth < max_depth:
                # Still walk it (silently) so a corrupt element is found and reported.
                try:
                    for _ in _walk(buf, _sub_spec(f.type), r.value_start, r.value_end, depth + 1, -1, fpath, 0):
                        pass
                except DecodeError as e:
                    e.add_parent(segment)
                    raise
            continue
        row = Row(
            depth, fpath, r.tag, name, _WIRE_NAMES.get(r.wire_type, str(r.wire_type)), r.offset, r.value_end - r.offset
        )
        if r.wire_type != 2:
            v = r.value
            if f is not None and f.kind == "enum" and v is not None:
                row.value = ENUM_SPECS[f.type].by_value.get(to_int64(v), to_int64(v))
            elif f is not None and f.type in ("int64", "int32") and v is not None:
                row.value = to_int64(v)
            else:
                row.value = v
            yield row
            continue
        if f is not None and f.type == "string":
            row.value = str(buf[r.value_start : r.value_end], "utf-8", "replace")
            if len(row.value) > 60:
                row.value = row.value[:57] + "..."
            yield row
        elif f is not None and f.kind == "message":
            if f.type == "TensorProto":
                try:
                    row.summary = _tensor_summary(buf, r.value_start, r.value_end)
                except DecodeError as e:
                    yield row
                    e.add_parent(segment)
                    raise
            yield row
            if f.type != "TensorProto":
                # Below the display depth the walk goes on silently, so corruption anywhere is found.
                shown = max_depth < 0 or depth + 1 <= max_depth
                try:
                    sub = _walk(
                        buf, _sub_spec(f.type), r.value_start, r.value_end, depth + 1, max_depth, fpath, max_items
                    )
                    if shown:
                        yield from sub
                    else:
                        for _ in sub:
                            pass
                except DecodeError as e:
                    e.add_parent(segment)
                    raise
        else:
            row.summary = {"octets": r.value_end - r.value_start}
            yield row
    for tag, n in elided.items():
        f = spec.by_tag[tag]
        yield Row(depth, f"{path}.{f.name}", tag, f.name, "LEN", -1, -1, summary={"elided": n})


def _fields_named(buf: Buffer, spec: MessageSpec, start: int, end: int) -> Iterator[FieldRecord]:
    """iter_fields, but a failure inside a field's value names that field in the error path."""
    it = iter_fields(buf, start, end)
    pos = start
    while True:
        try:
            r = next(it)
        except StopIteration:
            return
        except DecodeError as e:
            try:
                tag, _wt, _ = read_key(buf, pos, end)
            except DecodeError:
                raise e from None
            f = spec.by_tag.get(tag)
            if f is not None and e.offset > pos:
                e.add_parent(f.name)
            raise
        pos = r.value_end
        yield r


def _sub_spec(name: str) -> MessageSpec:
    return MESSAGE_SPECS[name]


def inspect_rows(buf: Buffer, *, depth: int = 2, max_items: int = 20, root: str = "ModelProto") -> Iterator[Row]:
    """Yield the rows of ``buf`` decoded as ``root``; raises DecodeError where the file is corrupt."""
    try:
        yield from _walk(buf, MESSAGE_SPECS[root], 0, len(buf), 0, depth, "", max_items)
    except DecodeError as e:
        e.add_parent(root)
        raise


def _format(row: Row) -> str:
    ind = "  " * row.depth
    if row.offset < 0:
        return f"{ind}... {row.summary['elided']} more {row.name}"
    label = row.path.rsplit(".", 1)[-1]
    head = f"{ind}{row.tag:>3} {label:<24} {row.wire_type:<6} @{row.offset:<12} {row.length:>12} B"
    if row.summary:
        return f"{head}  {json.dumps(row.summary, separators=(',', ':'))}"
    if row.value is not None:
        return f"{head}  {row.value!r}"
    return head


def run_inspect(path: str, *, depth: int, max_items: int, as_json: bool, out: TextIO | None = None) -> int:
    """Print the rows of ``path``; return the exit code (0 ok, 1 corrupt, 2 unreadable)."""

    if out is None:
        out = sys.stdout
    try:
        buf, _ = read_source(path)
    except (OnnxCoreError, OSError) as e:
        print(f"onnxcore inspect: {e}", file=sys.stderr)
        return 2
    rows: list[dict[str, Any]] = []
    try:
        for row in inspect_rows(buf, depth=depth, max_items=max_items):
            if as_json:
                rows.append(asdict(row))
            else:
                print(_format(row), file=out)
    except DecodeError as e:
        if as_json:
            json.dump(
                {"fields": rows, "error": {"offset": e.offset, "path": e.path, "reason": e.reason}}, out, indent=1
            )
            print(file=out)
        # The rows decoded so far stay on standard output; what stopped the decoding is the one line on stderr.
        where = f"byte offset {e.offset}, field {e.path}"
        print(f"onnxcore inspect: decoding failed at {where}: {e.reason}", file=sys.stderr)
        return 1
    if as_json:
        json.dump({"fields": rows, "error": None}, out, indent=1)
        print(file=out)
    return 0
