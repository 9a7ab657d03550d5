"""Fuzz targets for the surfaces added since the campaign was written (issue 41): each an input maker (run in
the campaign's parent, returning a picklable dict) and an executor (run in the worker's child).

``text``
    ``parse_model`` of texts from the printer, mutated character by character or by token, and of token soup.
``convert``
    ``convert_version`` of mutated models to a random operator set version, the result checked.
``compose``
    ``merge_models`` / ``add_prefix`` of (mutated) models with hostile prefixes and io maps, the result checked.
``build``
    The helper's ``make_*`` functions and the graph builder called with hostile arguments.
``ort``
    ``onnxcore.InferenceSession`` (the onnxruntime façade) with feeds as lists, dicts, NaN strings, scalars,
    wrong names and ``None``.
``batch``
    ``onnxcore batch`` (``onnxcore.dask.batch.score``, synchronous) of hostile Parquet: nulls, wrong dtypes,
    nested columns, huge strings, missing and extra columns.
``report``
    ``onnxcore.report`` of models whose names and doc strings carry markup: a failure when any comes out
    unescaped.

An input of these targets fails as any other does (see :mod:`fuzz_worker`): a foreign exception, an
``E-INTERNAL`` finding, a ``MemoryError``, a hang, a crash, a peak past the RSS bound; ``report`` adds
``injection``.
"""

from __future__ import annotations

import math
import random
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

SURFACES = ("text", "convert", "compose", "build", "ort", "batch", "report")

# -- text ---------------------------------------------------------------------------------------

_TOKENS = [
    "<",
    ">",
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    ",",
    ":",
    "=",
    ";",
    "=>",
    "ir_version",
    "opset_import",
    "domain",
    "producer_name",
    "float",
    "int64",
    "string",
    "bool",
    "float16",
    "bfloat16",
    "seq",
    "map",
    "optional",
    "sparse_tensor",
    '""',
    '"a"',
    '"\\""',
    "N",
    "x",
    "y",
    "Add",
    "Relu",
    "Constant",
    "value",
    "value_int",
    "value_ints",
    "Loop",
    "If",
    "body",
    "then_branch",
    "0",
    "1",
    "-1",
    "9223372036854775808",
    "1e309",
    "nan",
    "inf",
    "0x10",
    "\n",
    " ",
    "#",
    "@",
    "$",
    "ai.onnx",
    "com.microsoft",
    "[1,2]",
    "<float[2] w = {1,2}>",
    "agraph",
    "ref",
    "attr",
    "\u00e9",
    "\x00",
    '"\\u0000"',
    "{" * 50,
    "(" * 40,
    "[" * 40,
]


def _text_of(model_bytes: bytes) -> str | None:
    import onnxcore

    try:
        return str(onnxcore.to_text(onnxcore.decode(onnxcore.ModelProto, model_bytes), max_elements=None))
    except Exception:
        return None


def make_text(rng: random.Random, seed_bytes: bytes) -> dict[str, Any]:
    """A text from the printer, mutated, or token soup."""
    if rng.random() < 0.15:
        text = " ".join(rng.choice(_TOKENS) for _ in range(rng.randrange(1, 200)))
        return {"target": "text", "text": text}
    text = _text_of(seed_bytes) or ""
    for _ in range(rng.choice([1, 1, 2, 3, 5])):
        r = rng.random()
        pos = rng.randrange(len(text) + 1)
        if r < 0.3 and text:  # delete a span
            end = min(len(text), pos + rng.choice([1, 1, 2, 5, 20]))
            text = text[:pos] + text[end:]
        elif r < 0.55:  # insert a token
            text = text[:pos] + rng.choice(_TOKENS) + text[pos:]
        elif r < 0.7 and text:  # duplicate a span
            end = min(len(text), pos + rng.randrange(1, 200))
            text = text[:end] + text[pos:end] * rng.choice([1, 2, 50]) + text[end:]
        elif r < 0.85 and text:  # replace one character
            text = (
                text[:pos] + chr(rng.choice([0, 9, 10, 34, 39, 60, 62, 92, 123, 125, 0xE9, 0x10FFFF])) + text[pos + 1 :]
            )
        else:  # replace a number by an extreme one
            digits = [i for i, c in enumerate(text) if c.isdigit()]
            if digits:
                i = rng.choice(digits)
                text = text[:i] + rng.choice(["9" * 30, "-1", "0", str(1 << 63), "1e400"]) + text[i + 1 :]
    return {"target": "text", "text": text}


def run_text(inp: dict[str, Any]) -> tuple[str, str]:
    import onnxcore
    from onnxcore.text import parse_model

    model = parse_model(inp["text"])
    # What parses must be a message the rest of the package takes: encoded, decoded, checked, printed.
    data = onnxcore.encode(model)
    onnxcore.decode(onnxcore.ModelProto, data)
    report = onnxcore.check(model)
    internal = [f for f in report.findings if f.code == "E-INTERNAL"]
    if internal:
        return "failure", f"internal: {internal[0].message[:300]}"
    onnxcore.to_text(model)
    return ("refused", "report has errors") if report.errors else ("accepted", "")


# -- convert, compose ---------------------------------------------------------------------------


def make_convert(rng: random.Random, seed_bytes: bytes) -> dict[str, Any]:
    return {
        "target": "convert",
        "model": seed_bytes,
        "opset": rng.choice([1, 6, 7, 9, 11, 12, 13, 15, 17, 18, 19, 20, 21, 22, 23, 24, 25, 0, -1, 99]),
    }


def _check_clean(model: Any) -> tuple[str, str]:
    import onnxcore

    report = onnxcore.check(model)
    internal = [f for f in report.findings if f.code == "E-INTERNAL"]
    if internal:
        return "failure", f"internal: {internal[0].message[:300]}"
    return ("refused", "report has errors") if report.errors else ("accepted", "")


def run_convert(inp: dict[str, Any]) -> tuple[str, str]:
    import onnxcore

    model = onnxcore.decode(onnxcore.ModelProto, inp["model"])
    out = onnxcore.convert_version(model, inp["opset"])
    onnxcore.encode(out)
    return _check_clean(out)


_PREFIXES = ["p/", "", "a", "<script>", "\x00", "..", "x" * 300, "\u00e9/", "n0", "/", " ", "'\""]


def make_compose(rng: random.Random, first: bytes, second: bytes) -> dict[str, Any]:
    return {
        "target": "compose",
        "model": first,
        "second": second,
        "prefix1": rng.choice([*_PREFIXES, None]),
        "prefix2": rng.choice([*_PREFIXES, None]),
        "pairs": rng.choice([0, 1, 1, 2, 3]),
        "seed": rng.randrange(1 << 30),
        "mode": rng.choice(["merge", "merge", "prefix", "prefix_graph"]),
        "flags": [rng.random() < 0.8 for _ in range(7)],
    }


def run_compose(inp: dict[str, Any]) -> tuple[str, str]:
    import onnxcore
    from onnxcore.build import compose

    m1 = onnxcore.decode(onnxcore.ModelProto, inp["model"])
    if inp["mode"] == "prefix":
        keys = [
            "rename_nodes",
            "rename_edges",
            "rename_inputs",
            "rename_outputs",
            "rename_initializers",
            "rename_value_infos",
            "rename_functions",
        ]
        out = compose.add_prefix(m1, inp["prefix1"] or "", **dict(zip(keys, inp["flags"])))
        return _check_clean(out)
    if inp["mode"] == "prefix_graph":
        graph = m1.graph if m1.graph is not None else onnxcore.GraphProto()
        compose.add_prefix_graph(graph, inp["prefix1"] or "")
        return "accepted", ""
    m2 = onnxcore.decode(onnxcore.ModelProto, inp["second"])
    rng = random.Random(inp["seed"])
    outs = [o.name for o in (m1.graph.output if m1.graph is not None else [])] + ["nope", ""]
    ins = [i.name for i in (m2.graph.input if m2.graph is not None else [])] + ["nope", ""]
    io_map = [(rng.choice(outs), rng.choice(ins)) for _ in range(inp["pairs"])]
    out = compose.merge_models(m1, m2, io_map, prefix1=inp["prefix1"], prefix2=inp["prefix2"])
    return _check_clean(out)


# -- build --------------------------------------------------------------------------------------

_HOSTILE: list[Any] = [
    None,
    0,
    -1,
    1 << 63,
    -(1 << 64),
    3.5,
    math.nan,
    math.inf,
    "",
    "x",
    "\x00",
    "\ud800",
    b"\xff",
    True,
    [],
    [1, "a"],
    [[1]],
    {"a": 1},
    (1, 2),
    np.array([1.5, np.nan]),
    np.zeros((2, 0)),
    np.array(["a"], dtype=object),
    np.float16(1),
    np.int64(7),
    [1.5, 2],
    [None],
    object,
    range(3),
    {1, 2},
    10**30,
    np.zeros(3, np.complex64),
]
_ELEM_TYPES = list(range(-1, 27)) + [1 << 40]


def make_build(rng: random.Random) -> dict[str, Any]:
    """A sequence of helper / builder calls with hostile arguments (indexes into the tables above)."""
    calls = []
    for _ in range(rng.randrange(1, 6)):
        fn = rng.choice(
            [
                "make_tensor",
                "make_attribute",
                "make_node",
                "make_tensor_value_info",
                "make_graph",
                "make_model",
                "make_opsetid",
                "make_sparse_tensor",
                "builder",
                "make_function",
                "make_tensor_type_proto",
                "np_dtype_to_tensor_dtype",
                "tensor_dtype_to_np_dtype",
            ]
        )
        calls.append(
            [fn, [rng.randrange(len(_HOSTILE)) for _ in range(6)], rng.choice(_ELEM_TYPES), rng.randrange(1 << 30)]
        )
    return {"target": "build", "calls": calls}


def run_build(inp: dict[str, Any]) -> tuple[str, str]:
    import onnxcore
    from onnxcore import helper
    from onnxcore.build import GraphBuilder

    made: list[Any] = []
    for fn, picks, elem, seed in inp["calls"]:
        a = [_HOSTILE[k] for k in picks]
        rng = random.Random(seed)
        try:
            if fn == "make_tensor":
                dims = rng.choice([[2], [0], [-1], [1 << 40], a[0], [2, 3]])
                made.append(helper.make_tensor(rng.choice(["t", a[1]]), elem, dims, a[2], raw=rng.random() < 0.3))
            elif fn == "make_attribute":
                made.append(helper.make_attribute(rng.choice(["k", a[0]]), a[1], attr_type=rng.choice([None, elem])))
            elif fn == "make_node":
                made.append(
                    helper.make_node(
                        rng.choice(["Add", a[0]]),
                        rng.choice([["x"], a[1]]),
                        rng.choice([["y"], a[2]]),
                        name=rng.choice(["n", a[3]]),
                        k=a[4],
                    )
                )
            elif fn == "make_tensor_value_info":
                made.append(
                    helper.make_tensor_value_info(
                        rng.choice(["v", a[0]]), elem, rng.choice([None, [1, "N"], a[1], [a[2]]])
                    )
                )
            elif fn == "make_graph":
                nodes = [m for m in made if isinstance(m, onnxcore.NodeProto)] or a[0]
                made.append(
                    helper.make_graph(
                        nodes,
                        rng.choice(["g", a[1]]),
                        rng.choice([[], a[2]]),
                        rng.choice([[], a[3]]),
                        rng.choice([None, a[4]]),
                    )
                )
            elif fn == "make_model":
                graphs = [m for m in made if isinstance(m, onnxcore.GraphProto)]
                g = graphs[-1] if graphs and rng.random() < 0.8 else a[0]
                m = helper.make_model(g, opset_imports=rng.choice([None, [helper.make_opsetid("", 13)], a[1]]))
                made.append(m)
                onnxcore.check(m)
                onnxcore.encode(m)
            elif fn == "make_opsetid":
                made.append(helper.make_opsetid(rng.choice(["", a[0]]), rng.choice([13, a[1]])))
            elif fn == "make_sparse_tensor":
                tensors = [m for m in made if isinstance(m, onnxcore.TensorProto)] or [a[0], a[1]]
                made.append(
                    helper.make_sparse_tensor(rng.choice(tensors), rng.choice(tensors), rng.choice([[4], a[2]]))
                )
            elif fn == "make_function":
                nodes = [m for m in made if isinstance(m, onnxcore.NodeProto)] or a[0]
                made.append(
                    helper.make_function(
                        rng.choice(["d", a[1]]),
                        rng.choice(["f", a[2]]),
                        ["x"],
                        ["y"],
                        nodes,
                        rng.choice([[helper.make_opsetid("", 13)], a[3]]),
                    )
                )
            elif fn == "make_tensor_type_proto":
                made.append(helper.make_tensor_type_proto(elem, rng.choice([None, [2], a[0]])))
            elif fn == "np_dtype_to_tensor_dtype":
                helper.np_dtype_to_tensor_dtype(a[0])
            elif fn == "tensor_dtype_to_np_dtype":
                helper.tensor_dtype_to_np_dtype(elem)
            elif fn == "builder":
                b = GraphBuilder(opset=rng.choice([13, 18, 21, a[0]]))
                x = b.input(
                    rng.choice(["x", a[1]]),
                    rng.choice([onnxcore.ElementType.FLOAT, elem, a[2]]),
                    rng.choice([["N", 4], a[3]]),
                )
                op = rng.choice(["Add", "Reshape", "Conv", "Gather", "Cast", "Concat", "NoSuchOp", "Loop"])
                y = (
                    getattr(b.op, op)(x, rng.choice([x, a[4], np.ones(4, np.float32)]), axis=a[5])
                    if op != "Cast"
                    else b.op.Cast(x, to=a[5])
                )
                b.output(y, rng.choice(["y", a[0]]))
                made.append(b.model())
        except onnxcore.OnnxCoreError:
            continue
    return "accepted", ""


# -- the onnxruntime façade --------------------------------------------------------------------


def _hostile_feed(rng: random.Random, value: Any) -> Any:
    arr = np.asarray(value) if isinstance(value, np.ndarray) else None
    r = rng.random()
    if arr is None:
        return value
    if r < 0.2:
        return arr.tolist()  # a nested list, as onnxruntime takes (and refuses) them
    if r < 0.3:
        return {"a": 1}
    if r < 0.4:
        return np.array(["nan", "NaN", "inf", "-inf", "1e999"] * max(1, arr.size // 5 + 1), dtype=object)[: arr.size]
    if r < 0.5:
        return None
    if r < 0.6:
        return float("nan") if rng.random() < 0.5 else 3
    if r < 0.7:
        return arr.astype(rng.choice(["float64", "int8", "object", "U3", "bool", "complex64"]), copy=True)
    if r < 0.8:
        return [arr, arr]
    if r < 0.9:
        return arr.reshape(-1)[::-1] if arr.size else arr
    return arr


def make_ort(rng: random.Random, seed_bytes: bytes, feeds: dict[str, Any]) -> dict[str, Any]:
    import fuzz_mutate as fm

    specs = {k: fm.value_spec(_hostile_feed(rng, v)) for k, v in feeds.items()}
    if rng.random() < 0.1:
        specs[rng.choice(["", "nope", "\x00"])] = fm.value_spec(np.zeros(2, np.float32))
    if rng.random() < 0.1 and specs:
        specs.pop(rng.choice(sorted(specs)))
    names = rng.choice([None, None, ["nope"], [""], [], [None]])
    return {"target": "ort", "model": seed_bytes, "feeds": specs, "names": names, "as_dict_list": rng.random() < 0.05}


def run_ort(inp: dict[str, Any], feeds: dict[str, Any]) -> tuple[str, str]:
    import onnxcore

    sess = onnxcore.InferenceSession(inp["model"])
    if inp.get("as_dict_list"):
        sess.run(inp["names"], [feeds])  # type: ignore[arg-type]
    else:
        sess.run(inp["names"], feeds)
    return "accepted", ""


# -- batch --------------------------------------------------------------------------------------

_COLUMN_KINDS = [
    "f32",
    "f64",
    "i64",
    "i8",
    "bool",
    "str",
    "null_f64",
    "null_str",
    "all_null",
    "list_f32",
    "struct",
    "huge_str",
    "nan_str",
    "dict_str",
    "date",
    "decimal",
    "binary",
    "map",
    "u64_big",
]


def make_batch(rng: random.Random) -> dict[str, Any]:
    model = rng.choice(["matrix", "named", "int", "string_matrix"])
    names = {"matrix": ["c0", "c1", "c2"], "named": ["a", "s"], "int": ["i"], "string_matrix": ["t"]}[model]
    cols = []
    for name in names:
        if rng.random() < 0.1:
            continue  # a missing column
        cols.append([name, rng.choice(_COLUMN_KINDS)])
    if rng.random() < 0.2:
        cols.append([rng.choice(["extra", "", "__index_level_0__", "a"]), rng.choice(_COLUMN_KINDS)])
    return {
        "target": "batch",
        "table": {
            "model": model,
            "rows": rng.choice([0, 1, 3, 17, 200]),
            "columns": cols,
            "seed": rng.randrange(1 << 30),
            "row_group": rng.choice([1, 4, 64]),
            "batch_rows": rng.choice([1, 2, 50, 65536]),
        },
        "output": rng.choice(["out.parquet", "out.npy", "out.csv"]),
    }


def _batch_model(kind: str) -> bytes:
    import onnxcore
    from onnxcore import helper
    from onnxcore.types import ElementType

    f, s, i = int(ElementType.FLOAT), int(ElementType.STRING), int(ElementType.INT64)
    vi = helper.make_tensor_value_info
    if kind == "matrix":
        nodes = [helper.make_node("Mul", ["X", "two"], ["Y"])]
        ins, outs = [vi("X", f, ["N", 3])], [vi("Y", f, ["N", 3])]
        inits = [helper.make_tensor("two", f, [], [2.0])]
    elif kind == "named":
        nodes = [
            helper.make_node("Identity", ["a"], ["ya"]),
            helper.make_node("StringNormalizer", ["s"], ["ys"], case_change_action="UPPER"),
        ]
        ins, outs, inits = [vi("a", f, ["N"]), vi("s", s, ["N"])], [vi("ya", f, ["N"]), vi("ys", s, ["N"])], []
    elif kind == "int":
        nodes = [helper.make_node("Neg", ["i"], ["y"])]
        ins, outs, inits = [vi("i", i, ["N", 1])], [vi("y", i, ["N", 1])], []
    else:
        nodes = [helper.make_node("Identity", ["t"], ["y"])]
        ins, outs, inits = [vi("t", s, ["N", 1])], [vi("y", s, ["N", 1])], []
    g = helper.make_graph(nodes, "batch", ins, outs, inits)
    return bytes(onnxcore.encode(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])))


def _column(kind: str, n: int, rng: np.random.Generator) -> Any:
    import datetime
    import decimal

    import pyarrow as pa

    if kind == "f32":
        return pa.array(rng.standard_normal(n).astype(np.float32))
    if kind == "f64":
        return pa.array(rng.standard_normal(n))
    if kind == "i64":
        return pa.array(rng.integers(-(1 << 62), 1 << 62, n))
    if kind == "i8":
        return pa.array(rng.integers(-128, 127, n).astype(np.int8))
    if kind == "u64_big":
        return pa.array(np.full(n, (1 << 64) - 1, dtype=np.uint64))
    if kind == "bool":
        return pa.array(rng.random(n) < 0.5)
    if kind == "str":
        return pa.array([f"r{k}\u00e9" for k in range(n)])
    if kind == "null_f64":
        return pa.array([None if k % 3 == 0 else float(k) for k in range(n)], type=pa.float64())
    if kind == "null_str":
        return pa.array([None if k % 2 else "x" for k in range(n)], type=pa.string())
    if kind == "all_null":
        return pa.nulls(n)
    if kind == "list_f32":
        return pa.array([[1.0, 2.0][: k % 3] for k in range(n)], type=pa.list_(pa.float32()))
    if kind == "struct":
        return pa.array([{"u": k, "v": "w"} for k in range(n)])
    if kind == "huge_str":
        return pa.array(["z" * (1 << 20) if k < 4 else "" for k in range(n)])
    if kind == "nan_str":
        return pa.array(["nan", "NaN", "inf", "-1e999", ""] * (n // 5) + ["nan"] * (n % 5))
    if kind == "dict_str":
        return pa.array([f"c{k % 3}" for k in range(n)]).dictionary_encode()
    if kind == "date":
        return pa.array([datetime.date(2020, 1, 1 + k % 28) for k in range(n)])
    if kind == "decimal":
        return pa.array([decimal.Decimal(k) / 8 for k in range(n)], type=pa.decimal128(20, 5))  # exact in 5 places
    if kind == "binary":
        return pa.array([bytes([k % 256, 255]) for k in range(n)])
    return pa.array([[("k", k)] for k in range(n)], type=pa.map_(pa.string(), pa.int64()))


def run_batch(inp: dict[str, Any]) -> tuple[str, str]:
    # lazy: the batch target needs the dask extra (pyarrow, pandas, dask); the other targets do not
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq

        from onnxcore.dask.batch import score
    except ImportError as e:  # without the extra the input is not run, and not counted
        return "skipped", f"the batch target needs the dask extra: {e}"

    spec = inp["table"]
    root = Path(tempfile.mkdtemp(prefix="fuzz-batch-"))
    try:
        rng = np.random.default_rng(spec["seed"])
        n = spec["rows"]
        names = [c[0] for c in spec["columns"]]
        arrays = [_column(kind, n, rng) for _, kind in spec["columns"]]
        if len(set(names)) != len(names):  # a table cannot hold two columns of one name
            names = [f"{c}{k}" if names.count(c) > 1 else c for k, c in enumerate(names)]
        table = pa.table(dict(zip(names, arrays))) if names else pa.table({"empty": pa.nulls(n)})
        pq.write_table(table, root / "in.parquet", row_group_size=spec["row_group"])
        (root / "model.onnx").write_bytes(_batch_model(spec["model"]))
        score(
            str(root / "model.onnx"),
            str(root / "in.parquet"),
            str(root / inp["output"]),
            scheduler="synchronous",
            batch_rows=spec["batch_rows"],
        )
        return "accepted", ""
    finally:
        shutil.rmtree(root, ignore_errors=True)


# -- report -------------------------------------------------------------------------------------

_MARK = "fz41"
_MARKUP = [
    f"<script>alert('{_MARK}')</script>",
    f'"><img src=x onerror={_MARK}>',
    f"</title><script>{_MARK}</script>",
    f"<svg onload={_MARK}>",
    f"javascript:{_MARK}",
    f"]]><script>{_MARK}</script>",
    f"<!--{_MARK}-->",
    f"<style>{_MARK}</style>",
    f"'{_MARK}'\"",
    f"\u202e{_MARK}",
    f"{_MARK}\x00\x01",
    f"<{_MARK}" * 500,
]


def make_report(rng: random.Random, seed_bytes: bytes) -> dict[str, Any]:
    return {
        "target": "report",
        "model": seed_bytes,
        "seed": rng.randrange(1 << 30),
        "format": rng.choice(["html", "html", "svg"]),
        "profile": rng.random() < 0.1,
    }


def _hostile_names(model: Any, rng: random.Random) -> None:
    g = model.graph
    if g is None:
        return
    renames: dict[str, str] = {}
    for v in [*g.input, *g.output, *g.value_info]:
        if rng.random() < 0.5:
            renames.setdefault(v.name, v.name + rng.choice(_MARKUP))
    for n in g.node:
        if rng.random() < 0.5:
            n.name = rng.choice(_MARKUP)
        if rng.random() < 0.3:
            n.doc_string = rng.choice(_MARKUP)
        n.input[:] = [renames.get(x, x) for x in n.input]
        n.output[:] = [renames.get(x, x) for x in n.output]
    for v in [*g.input, *g.output, *g.value_info]:
        v.name = renames.get(v.name, v.name)
    for t in g.initializer:
        t.name = renames.get(t.name, t.name)
    g.name = rng.choice(_MARKUP)
    g.doc_string = rng.choice(_MARKUP)
    model.doc_string = rng.choice(_MARKUP)
    model.producer_name = rng.choice(_MARKUP)


def run_report(inp: dict[str, Any]) -> tuple[str, str]:
    import onnxcore

    model = onnxcore.decode(onnxcore.ModelProto, inp["model"])
    _hostile_names(model, random.Random(inp["seed"]))
    page = onnxcore.report(model, format=inp["format"], profile=1 if inp["profile"] else None)
    lowered = page.lower()
    # The page's data is JSON in a <script type="application/json"> element: there a '<' is text, and only the
    # sequences that end or re-enter script parsing are dangerous; the rest of the page is checked for tags.
    kept, pos = [], 0
    while (start := lowered.find('<script type="application/json"', pos)) >= 0:
        body = lowered.find(">", start) + 1
        end = lowered.find("</script", body)
        if end < 0:
            return "failure", "injection: a data script element is not closed"
        data = lowered[body:end]
        if "<!--" in data or "<script" in data:
            return "failure", "injection: markup that re-enters script parsing inside the page's data"
        kept.append(lowered[pos:start])
        pos = end
    lowered = "".join(kept) + lowered[pos:]
    for bad in (
        f"<script>alert('{_MARK}')",
        f"<img src=x onerror={_MARK}",
        f"<svg onload={_MARK}",
        f"<script>{_MARK}",
        f"<style>{_MARK}",
        f"<{_MARK}",
        f"<!--{_MARK}",
    ):
        if bad.lower() in lowered:
            return "failure", f"injection: {bad!r} came out unescaped"
    return "accepted", ""
