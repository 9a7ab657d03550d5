"""Random graphs for the optimizer's fuzz campaign (issue 39), composed from the ONNX 1-3 node test cases.

Each node case of the onnx package (``onnx/backend/test/data/node/*``: a one-node model and its inputs and
outputs) is a *piece*. A graph is a few pieces of one operator set version (a node binds to the definition of
its graph's opset import, Clause 14.3, so pieces of other versions would compute something else), joined where
types and shapes allow: an input of a later piece takes the value of an earlier piece's output of the same
element type and shape (floating types only: an index or a count must stay the case's own value). Each input
that is not joined is, at random, a graph input fed the case's own value, an initializer holding that value, or
a ``Constant`` node (both foldable), and the graph is baited with what a simplifier rewrites: ``Identity``
chains, ``Mul`` by one and ``Add`` of zero, a node computed twice (common subexpressions), a ``Transpose`` and
its inverse, a ``Shape -> Reshape`` to the same shape. Every piece's outputs are graph outputs (declared with
their element type and rank only: joining can change a shape nothing declares).

The oracle is onnxruntime with its graph optimizations off: a graph it cannot load or run is not a case (the
campaign counts those), otherwise its outputs are what the optimized model must compute. Everything is
seeded: ``make_graph(pieces, seed)`` gives the same graph for the same seed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# Operators whose outputs are random, or that onnxruntime's CPU provider leaves to other builds: not pieces.
SKIP_OPS = {
    "Bernoulli",
    "RandomNormal",
    "RandomNormalLike",
    "RandomUniform",
    "RandomUniformLike",
    "Multinomial",
    "Dropout",
}
FLOATS = {TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16}
RTOL = 1e-3  # the conformance tolerances of the onnx backend tests, with atol relative to the output's size
ATOL = 1e-5


@dataclass
class Piece:
    """One node case: its node, opset imports, inputs (name -> value) and output element types."""

    name: str
    node: onnx.NodeProto
    opsets: dict[str, int]
    ir_version: int
    inputs: list[tuple[str, np.ndarray]]
    outputs: list[tuple[str, int, tuple[int, ...]]]  # (name, element type, shape of the case's output)
    expected: list[np.ndarray]  # the case's outputs


def _tensor_type(vi: onnx.ValueInfoProto) -> int | None:
    """The element type of a plain tensor value; None for sequences, maps, optionals, sparse tensors."""
    return vi.type.tensor_type.elem_type if vi.type.WhichOneof("value") == "tensor_type" else None


def load_pieces(case_dirs: list[Path]) -> list[Piece]:
    """Every node case that is one node of plain tensors with its data set (the rest are not pieces)."""
    pieces = []
    for d in case_dirs:
        data = d / "test_data_set_0"
        if not (d / "model.onnx").exists() or not data.is_dir():
            continue
        m = onnx.load(str(d / "model.onnx"))
        g = m.graph
        if len(g.node) != 1 or m.functions or g.initializer or g.node[0].op_type in SKIP_OPS:
            continue
        node = g.node[0]
        if node.domain not in ("", "ai.onnx") or any(a.type in (5, 10) for a in node.attribute):
            continue  # other domains (training, preview, ml) and control flow are left to other campaigns
        if any(_tensor_type(v) is None for v in [*g.input, *g.output]):
            continue
        ins = sorted(data.glob("input_*.pb"), key=lambda p: int(p.stem.split("_")[1]))
        outs = sorted(data.glob("output_*.pb"), key=lambda p: int(p.stem.split("_")[1]))
        if len(ins) != len(g.input) or len(outs) != len(g.output):
            continue
        try:
            values = [numpy_helper.to_array(onnx.load_tensor(str(p))) for p in ins]
            expected = [numpy_helper.to_array(onnx.load_tensor(str(p))) for p in outs]
        except Exception:  # a tensor numpy cannot hold (a float8 the installed onnx cannot convert, ...)
            continue
        if any(v.dtype.kind not in "fiub" for v in [*values, *expected]):
            continue
        pieces.append(
            Piece(
                d.name,
                node,
                {o.domain or "": o.version for o in m.opset_import},
                m.ir_version,
                [(vi.name, v) for vi, v in zip(g.input, values)],
                [(vi.name, _tensor_type(vi) or 0, tuple(e.shape)) for vi, e in zip(g.output, expected)],
                expected,
            )
        )
    return pieces


def by_opset(pieces: list[Piece]) -> dict[int, list[Piece]]:
    """Pieces grouped by their ai.onnx version (only pieces of one version share a graph)."""
    groups: dict[int, list[Piece]] = {}
    for p in pieces:
        if set(p.opsets) <= {""}:
            groups.setdefault(p.opsets.get("", 1), []).append(p)
    return groups


@dataclass
class Graph:
    """A composed graph: the model, its feeds, and what it was made of."""

    model: onnx.ModelProto
    feeds: dict[str, np.ndarray]
    pieces: list[str]
    baits: list[str] = field(default_factory=list)
    # outputs of pieces none of whose inputs were joined: the node case's own expected values
    known: dict[str, tuple[str, np.ndarray]] = field(default_factory=dict)


def make_graph(groups: dict[int, list[Piece]], seed: int, *, max_pieces: int = 4) -> Graph:
    """A random graph of 1 to ``max_pieces`` pieces of one operator set version (seeded)."""
    rng = random.Random(seed)
    versions = sorted(v for v, ps in groups.items() if ps)
    opset = rng.choice(versions)
    chosen = [rng.choice(groups[opset]) for _ in range(rng.randint(1, max_pieces))]
    nodes: list[onnx.NodeProto] = []
    inits: list[TensorProto] = []
    inputs: list[onnx.ValueInfoProto] = []
    outputs: list[onnx.ValueInfoProto] = []
    feeds: dict[str, np.ndarray] = {}
    baits: list[str] = []
    known: dict[str, tuple[str, np.ndarray]] = {}
    # values available to join: (element type, shape) -> names
    available: dict[tuple[int, tuple[int, ...]], list[str]] = {}
    ir_version = max(p.ir_version for p in chosen)

    def fresh(stem: str) -> str:
        return f"{stem}_{len(nodes)}_{len(inits)}_{len(inputs)}"

    for k, piece in enumerate(chosen):
        node = onnx.NodeProto()
        node.CopyFrom(piece.node)
        node.name = f"n{k}_{piece.node.op_type}"
        rename: dict[str, str] = {}
        joined = False
        for name, value in piece.inputs:
            etype = helper.np_dtype_to_tensor_dtype(value.dtype)
            joinable = available.get((etype, value.shape), []) if etype in FLOATS else []
            r = rng.random()
            if etype not in FLOATS and r < 0.8:
                r = 0.7 + r * 0.15 / 0.8  # indices, counts and divisors mostly constants: verifiers draw inputs
            if joinable and r < 0.5:
                rename[name] = rng.choice(joinable)
                joined = True
                continue
            new = f"p{k}_{name}"
            rename[name] = new
            if r < 0.7:
                inputs.append(helper.make_tensor_value_info(new, etype, value.shape))
                feeds[new] = value
            elif r < 0.85 or etype not in FLOATS:  # a Constant of other types is newer than some opsets
                inits.append(numpy_helper.from_array(value, new))
                baits.append("initializer")
            else:
                nodes.append(helper.make_node("Constant", [], [new], value=numpy_helper.from_array(value, new + "_v")))
                baits.append("Constant")
        node.ClearField("input")
        node.input.extend(rename.get(n, n) if n else "" for n in piece.node.input)
        node.ClearField("output")
        node.output.extend(f"p{k}_{n}" if n else "" for n in piece.node.output)
        nodes.append(node)
        if rng.random() < 0.2:  # the same node again: a common subexpression
            twin = onnx.NodeProto()
            twin.CopyFrom(node)
            twin.name = node.name + "_twin"
            twin.ClearField("output")
            twin.output.extend(f"{n}_twin" if n else "" for n in node.output)
            nodes.append(twin)
            outputs += [
                helper.make_tensor_value_info(f"{n}_twin", t, [None] * len(s))
                for (_, t, s), n in zip(piece.outputs, node.output)
                if n
            ]
            baits.append("twin")
        for i, ((_orig, etype, shape), out, want) in enumerate(zip(piece.outputs, node.output, piece.expected)):
            if not out:
                continue
            value = out
            # A training-mode BatchNormalization's running mean and variance stay plain graph outputs, neither
            # baited nor joined: when another node consumes one, onnxruntime 1.31 writes it into the buffer of
            # input_mean / input_var, which every other reader of that value then sees changed (a graph output,
            # a twin, a fed array): the oracle would be wrong, not the optimizer.
            plain = piece.node.op_type == "BatchNormalization" and i > 0
            if etype in FLOATS and rng.random() < 0.5 and not plain:
                value = _bait(nodes, inits, value, etype, shape, rng, baits, fresh)
            if not joined:
                known[value] = (piece.name, want)
            outputs.append(helper.make_tensor_value_info(value, etype, [None] * len(shape)))
            if not plain:
                available.setdefault((etype, shape), []).append(value)
    graph = helper.make_graph(nodes, f"fuzz_{seed}", inputs, outputs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="fuzz_graphs")
    model.ir_version = max(ir_version, 7)  # IR 4+ lets an initializer be no graph input
    return Graph(model, feeds, [p.name for p in chosen], baits, known)


def _bait(
    nodes: list[onnx.NodeProto],
    inits: list[TensorProto],
    value: str,
    etype: int,
    shape: tuple[int, ...],
    rng: random.Random,
    baits: list[str],
    fresh: Any,
) -> str:
    """``value`` through something a simplifier removes; the name of the result."""
    kind = rng.choice(["identity", "mul1", "add0", "transpose", "reshape"])
    out = fresh(f"{value}_{kind}")
    np_type = helper.tensor_dtype_to_np_dtype(etype)
    if kind == "identity":
        mid = fresh(f"{value}_id")
        nodes.append(helper.make_node("Identity", [value], [mid]))
        nodes.append(helper.make_node("Identity", [mid], [out]))
    elif kind in ("mul1", "add0"):
        c = fresh("one" if kind == "mul1" else "zero")
        inits.append(numpy_helper.from_array(np.array(1 if kind == "mul1" else 0, dtype=np_type), c))
        nodes.append(helper.make_node("Mul" if kind == "mul1" else "Add", [value, c], [out]))
    elif kind == "transpose" and len(shape) >= 2:
        perm = list(range(len(shape)))
        rng.shuffle(perm)
        inverse = [perm.index(i) for i in range(len(perm))]
        mid = fresh(f"{value}_t")
        nodes.append(helper.make_node("Transpose", [value], [mid], perm=perm))
        nodes.append(helper.make_node("Transpose", [mid], [out], perm=inverse))
    else:
        s = fresh(f"{value}_shape")
        nodes.append(helper.make_node("Shape", [value], [s]))
        nodes.append(helper.make_node("Reshape", [value, s], [out]))
        kind = "reshape"
    baits.append(kind)
    return out


def ort_session(model_bytes: bytes) -> Any:
    """onnxruntime, one thread, graph optimizations off (the graph as written), or an exception."""
    import onnxruntime as ort  # the oracle: a test dependency, never a package one

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.log_severity_level = 4
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model_bytes, so, providers=["CPUExecutionProvider"])


def differs(got: list[Any], expected: list[Any]) -> str:
    """'' when ``got`` equals ``expected`` under the conformance tolerances, else what differs."""
    if len(got) != len(expected):
        return f"{len(got)} outputs, expected {len(expected)}"
    for k, (g, e) in enumerate(zip(got, expected)):
        g, e = np.asarray(g), np.asarray(e)
        if g.shape != e.shape or g.dtype != e.dtype:
            return f"output {k}: {g.dtype}{list(g.shape)}, expected {e.dtype}{list(e.shape)}"
        if e.dtype.kind in "fc":
            e64, g64 = e.astype(np.float64), g.astype(np.float64)
            scale = max(1.0, float(np.nanmax(np.abs(e64[np.isfinite(e64)]))) if np.isfinite(e64).any() else 1.0)
            if not np.allclose(g64, e64, rtol=RTOL, atol=ATOL * scale, equal_nan=True):
                return f"output {k}: max difference {float(np.nanmax(np.abs(g64 - e64))):.3g}"
        elif not np.array_equal(g, e):
            return f"output {k}: values differ"
    return ""
