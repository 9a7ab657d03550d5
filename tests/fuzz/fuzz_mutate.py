"""Mutations of models for the fuzz campaign: byte level, wire level, structural and semantic.

Everything here is driven by a ``random.Random`` so that a campaign is reproducible from its seed. The
byte and wire levels work on octets with a small wire reader of our own (independent of the decoder under
test); the structural and semantic levels edit models with the onnx package (an oracle, tests only) and
draw attribute values from the operator schemas.
"""

from __future__ import annotations

import base64
import math
import pickle
import random
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper

# -- wire level ---------------------------------------------------------------------------------


def varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    n = shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise ValueError
        b = buf[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return n, pos


def fields(buf: bytes) -> list[tuple[int, int, bytes]] | None:
    """(field number, wire type, raw octets of the whole field) of a message, or None if it does not parse."""
    out = []
    pos = 0
    try:
        while pos < len(buf):
            start = pos
            key, pos = _read_varint(buf, pos)
            num, wt = key >> 3, key & 7
            if num == 0:
                return None
            if wt == 0:
                _, pos = _read_varint(buf, pos)
            elif wt == 1:
                pos += 8
            elif wt == 5:
                pos += 4
            elif wt == 2:
                n, pos = _read_varint(buf, pos)
                pos += n
            else:
                return None
            if pos > len(buf):
                return None
            out.append((num, wt, buf[start:pos]))
    except ValueError:
        return None
    return out


def _payload(raw: bytes) -> tuple[bytes, bytes]:
    """(key and length prefix, payload) of a length-delimited field."""
    _, p = _read_varint(raw, 0)
    _, q = _read_varint(raw, p)
    return raw[:p], raw[q:]


def _key(raw: bytes) -> bytes:
    _, p = _read_varint(raw, 0)
    return raw[:p]


def wire_mutate(rng: random.Random, buf: bytes, depth: int = 0) -> bytes:
    """One structural edit at a random depth of the wire tree, lengths of the enclosing fields kept right."""
    fs = fields(buf)
    if not fs:
        return buf
    i = rng.randrange(len(fs))
    num, wt, raw = fs[i]
    if wt == 2 and depth < 12 and rng.random() < 0.7:
        key, payload = _payload(raw)
        if fields(payload) and rng.random() < 0.8:
            inner = wire_mutate(rng, payload, depth + 1)
            fs[i] = (num, wt, _key(raw) + varint(len(inner)) + inner)
            return b"".join(f[2] for f in fs)
    op = rng.randrange(7)
    parts = [f[2] for f in fs]
    if op == 0:
        del parts[i]
    elif op == 1:
        parts.insert(i, raw)
    elif op == 2:
        rng.shuffle(parts)
    elif op == 3 and wt == 2:
        # Corrupt the length: the enclosing message's own length stays as it was.
        key, payload = _payload(raw)
        n = rng.choice([0, 1, len(payload) + 1, len(payload) - 1, 1 << 31, (1 << 63) - 1, (1 << 64) - 1, 1 << 40])
        parts[i] = key + varint(max(n, 0)) + payload
    elif op == 4:
        # The same field many times (a million-entry field when it is a message: 2 octets each).
        count = rng.choice([1000, 100_000, 1_000_000]) if wt == 2 else rng.choice([10, 1000])
        entry = _key(raw) + b"\x00" if wt == 2 else raw
        parts.insert(i, entry * count)
    elif op == 5:
        # Change the wire type of the key.
        parts[i] = varint((num << 3) | rng.choice([0, 1, 2, 3, 5, 6, 7])) + raw[len(_key(raw)) :]
    else:
        # A varint value made huge (or a fixed value's octets flipped).
        k = len(_key(raw))
        if wt == 0:
            parts[i] = raw[:k] + varint(rng.choice([(1 << 63) - 1, 1 << 63, (1 << 64) - 1, 1 << 31, 1 << 32]))
        elif wt == 2:
            parts[i] = raw[:k] + b"\xff" * rng.randrange(1, 11) + b"\x01" + raw[k:]
    return b"".join(parts)


def nesting_bomb(rng: random.Random) -> bytes:
    """A model whose graph nests attribute -> graph -> node -> attribute ... thousands deep."""
    depth = rng.choice([100, 1000, 20_000, 200_000])
    # From the inside out, GraphProto.node(1) / NodeProto.attribute(5) / AttributeProto.g(6), iteratively.
    keys = [b"\x0a", b"\x2a", b"\x32"]  # node, attribute, g
    sizes = [0] * (depth + 1)
    for level in range(1, depth + 1):
        inner = sizes[level - 1]
        sizes[level] = len(keys[0]) + len(varint(inner)) + inner
    out = bytearray()
    for level in range(depth, 0, -1):
        out += keys[level % 3] + varint(sizes[level - 1])
    graph = bytes(out)
    return b"\x08\x07" + b"\x3a" + varint(len(graph)) + graph + b"\x42\x02\x10\x11"


def million_entries(rng: random.Random, model: bytes) -> bytes:
    """A model with a repeated field of many empty entries added to its graph (or the model)."""
    count = rng.choice([100_000, 1_000_000, 3_000_000])
    fs = fields(model) or []
    where = rng.choice(["node", "initializer", "value_info", "opset", "attribute"])
    entry = {"node": b"\x0a\x00", "initializer": b"\x2a\x00", "value_info": b"\x6a\x00"}
    entry["attribute"] = b"\x0a\x02\x2a\x00"
    parts = []
    grown = False
    for num, _wt, raw in fs:
        # Only the first graph field grows: after a mutation that repeated the graph field a million times, growing
        # each would ask for terabytes (it once did, in the campaign's parent).
        if num == 7 and where != "opset" and not grown:
            grown = True
            _, payload = _payload(raw)
            payload = payload + entry[where] * count
            raw = _key(raw) + varint(len(payload)) + payload
        parts.append(raw)
    if where == "opset":
        parts.append(b"\x42\x00" * count)
    return b"".join(parts)


def byte_mutate(rng: random.Random, buf: bytes) -> bytes:
    """A byte-level mutation: bit flips, truncation, insertion, splice, wire edits, bombs."""
    op = rng.randrange(9)
    b = bytearray(buf)
    if op == 0 and b:
        for _ in range(rng.randrange(1, 9)):
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
    elif op == 1 and b:
        del b[rng.randrange(len(b)) :]
    elif op == 2:
        pos = rng.randrange(len(b) + 1)
        b[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 16)))
    elif op == 3 and b:
        pos = rng.randrange(len(b))
        b[pos : pos + 1] = b"\xff" * rng.randrange(1, 12) + bytes([rng.randrange(128)])
    elif op == 4 and len(b) > 2:
        i, j = sorted(rng.randrange(len(b)) for _ in range(2))
        k = rng.randrange(len(b))
        b[k:k] = b[i:j]
    elif op in (5, 6):
        return wire_mutate(rng, buf)
    elif op == 7:
        return nesting_bomb(rng) if rng.random() < 0.3 else million_entries(rng, buf)
    else:
        return wire_mutate(rng, wire_mutate(rng, buf))
    return bytes(b)


# -- schema-driven values -----------------------------------------------------------------------

HUGE_INTS = [0, -1, 1, 2, 3, -2, 7, 1 << 31, (1 << 31) - 1, (1 << 31) + 1, 1 << 32, (1 << 32) - 1, 10**6, 10**9]
HUGE_INTS += [10**12, (1 << 62), (1 << 63) - 1, -(1 << 63), -(10**9)]
SPECIAL_FLOATS = [math.nan, math.inf, -math.inf, 0.0, -0.0, 1e38, -1e38, 1e-45, 1e6, -1.0, 0.5, 3.0]


def _dims_only(data_type: int, dims: list[int]) -> onnx.TensorProto:
    """A tensor that declares dims and holds no contents (onnx's helper refuses to make one)."""
    t = onnx.TensorProto()
    t.name, t.data_type = "t", data_type
    t.dims.extend(dims)
    return t


def attr_value(rng: random.Random, name: str, atype: int) -> onnx.AttributeProto:
    A = onnx.AttributeProto
    if atype == A.INT:
        return helper.make_attribute(name, rng.choice(HUGE_INTS))
    if atype == A.FLOAT:
        return helper.make_attribute(name, rng.choice(SPECIAL_FLOATS))
    if atype == A.INTS:
        n = rng.choice([0, 1, 2, 3, 4, 8, 100])
        return helper.make_attribute(name, [rng.choice(HUGE_INTS) for _ in range(n)], attr_type=A.INTS)
    if atype == A.FLOATS:
        n = rng.choice([0, 1, 3, 10])
        return helper.make_attribute(name, [rng.choice(SPECIAL_FLOATS) for _ in range(n)], attr_type=A.FLOATS)
    if atype == A.STRING:
        return helper.make_attribute(name, rng.choice(["", "x", "\xff\x00", "(a+)+$", "NOTSET", "a" * 1000]))
    if atype == A.STRINGS:
        return helper.make_attribute(name, [rng.choice(["", "a", "b"]) for _ in range(rng.randrange(4))], A.STRINGS)
    if atype == A.TENSOR:
        t = rng.choice(
            [
                helper.make_tensor("t", TensorProto.FLOAT, [], [math.nan]),
                helper.make_tensor("t", TensorProto.FLOAT, [0], []),
                helper.make_tensor("t", TensorProto.INT64, [1], [(1 << 63) - 1]),
                _dims_only(TensorProto.FLOAT, [1 << 20, 1 << 20]),
                helper.make_tensor("t", TensorProto.DOUBLE, [2], [math.inf, -math.inf]),
            ]
        )
        return helper.make_attribute(name, t)
    if atype == A.GRAPH:
        return helper.make_attribute(name, helper.make_graph([], "g", [], []))
    a = onnx.AttributeProto()
    a.name = name
    a.type = atype
    return a


def _schema(node: onnx.NodeProto, opset: dict[str, int]) -> Any:
    try:
        return onnx.defs.get_schema(node.op_type, opset.get(node.domain, 1), node.domain)
    except Exception:
        return None


def structural_mutate(rng: random.Random, model: onnx.ModelProto) -> onnx.ModelProto:
    """Edit a copy of the model: nodes, inputs, attributes, types, versions."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    opset = {o.domain: o.version for o in m.opset_import}
    ops = rng.randrange(14)
    nodes = g.node
    if ops == 0 and nodes:
        del nodes[rng.randrange(len(nodes))]
    elif ops == 1 and nodes:
        nodes.append(nodes[rng.randrange(len(nodes))])
    elif ops == 2 and len(nodes) > 1:
        order = list(nodes)
        rng.shuffle(order)
        del nodes[:]
        nodes.extend(order)
    elif ops == 3:
        seq = rng.choice([g.input, g.output, g.initializer])
        if len(seq):
            i = rng.randrange(len(seq))
            if rng.random() < 0.5:
                del seq[i]
            else:
                seq.append(seq[i])
    elif ops in (4, 5, 6, 7) and nodes:
        node = nodes[rng.randrange(len(nodes))]
        schema = _schema(node, opset)
        if ops == 4 and node.attribute:
            del node.attribute[rng.randrange(len(node.attribute))]
        elif ops == 5 and node.attribute:
            node.attribute.append(node.attribute[rng.randrange(len(node.attribute))])
        elif schema is not None and schema.attributes:
            name = rng.choice(sorted(schema.attributes))
            atype = int(schema.attributes[name].type)
            if ops == 7:
                atype = rng.choice([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 14])
            for k in range(len(node.attribute) - 1, -1, -1):
                if node.attribute[k].name == name:
                    del node.attribute[k]
            node.attribute.append(attr_value(rng, name, atype))
        elif node.attribute:
            a = node.attribute[rng.randrange(len(node.attribute))]
            a.type = rng.randrange(16)
    elif ops == 8 and nodes:
        node = nodes[rng.randrange(len(nodes))]
        if node.input and rng.random() < 0.5:
            node.input[rng.randrange(len(node.input))] = rng.choice(["", "nope", node.output[0] if node.output else ""])
        elif rng.random() < 0.5:
            node.input.append(rng.choice([""] + [i.name for i in g.input]))
        else:
            node.op_type = rng.choice(["Loop", "If", "Add", "Constant", "Resize", "NoSuchOp", "", node.op_type])
    elif ops == 9 and m.opset_import:
        m.opset_import[0].version = rng.choice([0, 1, 6, 13, 18, 21, 23, 24, 25, 1000, -1])
    elif ops == 10:
        m.ir_version = rng.choice([0, 1, 3, 4, 7, 10, 11, 12, 1 << 40, -1])
    elif ops == 11:
        vis = list(g.input) + list(g.output) + list(g.value_info)
        if vis:
            vi = rng.choice(vis)
            tt = vi.type.tensor_type
            if rng.random() < 0.4:
                tt.elem_type = rng.randrange(-1, 26)
            elif tt.HasField("shape"):
                d = tt.shape.dim.add()
                d.dim_value = rng.choice([0, 1, (1 << 40), (1 << 63) - 1, -5])
            else:
                vi.type.Clear()
    elif ops == 12 and g.initializer:
        t = g.initializer[rng.randrange(len(g.initializer))]
        t.dims.append(rng.choice([0, 2, 1 << 20, (1 << 62)]))
    elif nodes:
        node = nodes[rng.randrange(len(nodes))]
        node.domain = rng.choice(["", "ai.onnx", "ai.onnx.ml", "com.microsoft", "x.y"])
    return m


# -- semantic: feeds ----------------------------------------------------------------------------

DTYPES = ["float32", "float64", "float16", "int64", "int32", "int8", "uint8", "bool", "object"]


def value_spec(value: Any) -> list[Any]:
    return ["value", base64.b64encode(pickle.dumps(value)).decode()]


def feed_mutations(rng: random.Random, feeds: dict[str, Any]) -> dict[str, Any]:
    """Feed specs for a session input: the real values, or wrong dtype/shape, specials, huge broadcast views."""
    out: dict[str, Any] = {}
    for name, value in feeds.items():
        arr = value if isinstance(value, np.ndarray) else None
        r = rng.random()
        if arr is None or r < 0.45:
            out[name] = value_spec(value)
            continue
        dtype = str(arr.dtype) if arr.dtype.kind != "U" else "object"
        shape = list(arr.shape)
        seed = rng.randrange(1 << 30)
        k = rng.randrange(6)
        if k == 0:
            out[name] = ["array", rng.choice(DTYPES), shape, "random", seed]
        elif k == 1:
            out[name] = ["array", dtype, shape, rng.choice(["nan", "inf", "-inf", "big", "zeros"]), seed]
        elif k == 2:
            shape = shape + [rng.choice([0, 1, 2])] if rng.random() < 0.5 else shape[:-1]
            out[name] = ["array", dtype, shape, "random", seed]
        elif k == 3:
            shape = [rng.choice([0, 1, 3, d]) for d in shape]
            out[name] = ["array", dtype, shape, "random", seed]
        elif k == 4:
            big = [rng.choice([1 << 40, 1 << 20, 1 << 31, d]) for d in shape] or [1 << 40]
            out[name] = ["broadcast", ["array", dtype, [1], "random", seed], big]
        else:
            out[name] = ["array", dtype, shape, "random", seed]
    if feeds and rng.random() < 0.05:
        out.pop(rng.choice(sorted(out)))
    if rng.random() < 0.03:
        out["not_an_input"] = ["array", "float32", [1], "random", 0]
    return out
