"""A ~2.5 GiB model for the optimizer benchmark (issue 39): one file over 2 GiB and an external-data variant.

The model is what an exporter writes around large weights, with work for a simplifier at every step:

- ``x [batch, D]`` through ``BLOCKS`` blocks, each ``Gemm(x, W_k, b_k)`` (W_k a ``D x D`` float32 weight,
  256 MiB at D = 8192), then a ``BatchNormalization`` to fold into the Gemm (every other block), a ``Relu``, and
  an ``Identity`` chain of three;
- shape arithmetic: ``Shape(x) -> Gather(0) -> Unsqueeze -> Concat([batch, -1]) -> Reshape`` after each block
  (a Reshape to the same shape, resolvable symbolically with ``batch`` kept a dimension variable);
- foldable constants: each block's output is multiplied by ``Mul(c, Sqrt(Constant 1.0))`` with c = 1 (a Mul by
  one once folded), and a ``Sub`` of a ``Constant`` minus itself is added (plus zero, computed at run time);
- a ``ConstantOfShape([BLOCKS*64, D])`` of zeros reduced by ``ReduceSum`` and added to the output: folding the
  ConstantOfShape alone would add a 16 MiB-per-block tensor to the file, so a simplifier with a size budget keeps
  it a node (folding it all the way through the ReduceSum is fine).

Nothing of 2.5 GiB is ever held in memory: the graph (small, no weight bytes) is serialized by onnx, and each
weight is generated and written in chunks of rows straight into the file, as protobuf fields appended to the
graph's (a ``GraphProto`` is a sequence of fields, and its repeated ``initializer`` field may come after the
others; Annex B, the wire format of Clause 12). The external-data variant writes the same bytes into
``<name>.data`` beside a small model file that references them (Clause 13: ``location``, ``offset``,
``length``).

Usage: ``python benchmarks/make_big_model.py [--out DIR] [--dim 8192] [--blocks 10] [--variant both|single|
external]``. Writes ``DIR/big_single.onnx`` and ``DIR/big_external.onnx`` + ``DIR/big_external.onnx.data`` and
prints their sizes.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import numpy as np
import onnx
from onnx import TensorProto, helper

OPSET = 17
CHUNK_ROWS = 512  # rows of a weight generated at a time: 512 x 8192 x 4 bytes = 16 MiB


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _key(field: int, wire_type: int) -> bytes:
    return _varint((field << 3) | wire_type)


def _length_delimited(field: int, length: int) -> bytes:
    return _key(field, 2) + _varint(length)


def _weight_chunks(seed: int, rows: int, cols: int) -> Iterator[np.ndarray]:
    """The weight of one block, ``CHUNK_ROWS`` rows at a time (He-scaled so activations keep their size)."""
    rng = np.random.default_rng(seed)
    scale = np.float32(np.sqrt(2.0 / rows))
    for start in range(0, rows, CHUNK_ROWS):
        n = min(CHUNK_ROWS, rows - start)
        yield rng.standard_normal((n, cols), dtype=np.float32) * scale


def _small(rng: np.random.Generator, name: str, dim: int, kind: str) -> TensorProto:
    if kind == "gain":
        data = rng.random(dim, dtype=np.float32) + np.float32(0.5)
    else:
        data = rng.standard_normal(dim, dtype=np.float32) * np.float32(0.1)
    return onnx.numpy_helper.from_array(data, name)


def build_graph(dim: int, blocks: int) -> tuple[onnx.ModelProto, list[str]]:
    """The model without its large weights (their names, in order, are returned); small initializers included."""
    rng = np.random.default_rng(0)
    nodes: list[onnx.NodeProto] = []
    inits: list[TensorProto] = []
    weights: list[str] = []
    x = "x"
    nodes.append(helper.make_node("Shape", ["x"], ["x_shape"]))
    nodes.append(helper.make_node("Gather", ["x_shape", "zero_i64"], ["batch"], axis=0))
    nodes.append(helper.make_node("Unsqueeze", ["batch", "axes0"], ["batch_1d"]))
    nodes.append(helper.make_node("Concat", ["batch_1d", "minus_one"], ["flat_shape"], axis=0))
    inits += [
        onnx.numpy_helper.from_array(np.array(0, np.int64), "zero_i64"),
        onnx.numpy_helper.from_array(np.array([0], np.int64), "axes0"),
        onnx.numpy_helper.from_array(np.array([-1], np.int64), "minus_one"),
    ]
    one = helper.make_tensor("v", TensorProto.FLOAT, [], [1.0])
    nodes.append(helper.make_node("Constant", [], ["one_f"], value=one))
    nodes.append(helper.make_node("Sqrt", ["one_f"], ["sqrt_one"]))
    nodes.append(helper.make_node("Sub", ["one_f", "one_f"], ["zero_f"]))
    for k in range(blocks):
        w, b = f"W{k}", f"b{k}"
        weights.append(w)
        inits.append(_small(rng, b, dim, "bias"))
        nodes.append(helper.make_node("Gemm", [x, w, b], [f"g{k}"]))
        h = f"g{k}"
        if k % 2 == 0:
            names = [f"bn{k}_{p}" for p in ("scale", "bias", "mean", "var")]
            inits += [_small(rng, names[0], dim, "gain"), _small(rng, names[1], dim, "bias")]
            inits += [_small(rng, names[2], dim, "bias"), _small(rng, names[3], dim, "gain")]
            nodes.append(helper.make_node("BatchNormalization", [h, *names], [f"bn{k}"], epsilon=1e-5))
            h = f"bn{k}"
        nodes.append(helper.make_node("Relu", [h], [f"r{k}"]))
        h = f"r{k}"
        for j in range(3):
            nodes.append(helper.make_node("Identity", [h], [f"id{k}_{j}"]))
            h = f"id{k}_{j}"
        nodes.append(helper.make_node("Reshape", [h, "flat_shape"], [f"flat{k}"]))
        inits.append(onnx.numpy_helper.from_array(np.array(1.0, np.float32), f"c{k}"))
        nodes.append(helper.make_node("Mul", [f"c{k}", "sqrt_one"], [f"scale{k}"]))
        nodes.append(helper.make_node("Mul", [f"flat{k}", f"scale{k}"], [f"scaled{k}"]))
        nodes.append(helper.make_node("Add", [f"scaled{k}", "zero_f"], [f"out{k}"]))
        x = f"out{k}"
    # A large ConstantOfShape whose folding alone would grow the file; through the ReduceSum it is a scalar.
    inits.append(onnx.numpy_helper.from_array(np.array([blocks * 64, dim], np.int64), "zeros_shape"))
    nodes.append(
        helper.make_node(
            "ConstantOfShape", ["zeros_shape"], ["zeros"], value=helper.make_tensor("v", TensorProto.FLOAT, [1], [0.0])
        )
    )
    nodes.append(helper.make_node("ReduceSum", ["zeros"], ["zero_sum"], keepdims=0))
    nodes.append(helper.make_node("Add", [x, "zero_sum"], ["y"]))
    graph = helper.make_graph(
        nodes,
        "big",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", dim])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", dim])],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="make_big_model")
    model.ir_version = 8
    return model, weights


def _weight_header(name: str, dim: int) -> bytes:
    """A TensorProto's fields other than its bytes: dims, data_type, name."""
    t = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=[dim, dim])
    return t.SerializeToString()


def _write_weight(f: BinaryIO, seed: int, dim: int) -> None:
    for chunk in _weight_chunks(seed, dim, dim):
        f.write(chunk.astype("<f4", copy=False).tobytes())


def write_single(path: Path, dim: int, blocks: int) -> int:
    """One file holding every weight (over 2 GiB at the default size); the file's size."""
    model, weights = build_graph(dim, blocks)
    graph = model.graph
    model.ClearField("graph")
    head = model.SerializeToString()
    graph_bytes = graph.SerializeToString()
    nbytes = dim * dim * 4
    tensors = []
    for name in weights:
        header = _weight_header(name, dim)
        raw_key = _length_delimited(9, nbytes)  # TensorProto.raw_data = 9
        tensors.append((header + raw_key, len(header) + len(raw_key) + nbytes))
    initializer_fields = sum(len(_length_delimited(5, n)) + n for _, n in tensors)  # GraphProto.initializer = 5
    graph_len = len(graph_bytes) + initializer_fields
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "wb") as f:
        f.write(head)
        f.write(_length_delimited(7, graph_len))  # ModelProto.graph = 7
        f.write(graph_bytes)
        for k, ((prefix, n), _name) in enumerate(zip(tensors, weights)):
            f.write(_length_delimited(5, n))
            f.write(prefix)
            _write_weight(f, 1000 + k, dim)
    os.replace(tmp, path)
    return path.stat().st_size


def write_external(path: Path, dim: int, blocks: int) -> int:
    """A small model file and ``<file>.data`` beside it holding the weights; the two sizes summed."""
    model, weights = build_graph(dim, blocks)
    data_name = path.name + ".data"
    nbytes = dim * dim * 4
    with open(path.parent / data_name, "wb") as f:
        for k, name in enumerate(weights):
            offset = f.tell()
            _write_weight(f, 1000 + k, dim)
            t = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=[dim, dim])
            t.data_location = TensorProto.EXTERNAL
            for key, value in (("location", data_name), ("offset", str(offset)), ("length", str(nbytes))):
                entry = t.external_data.add()
                entry.key, entry.value = key, value
            model.graph.initializer.append(t)
    path.write_bytes(model.SerializeToString())
    return path.stat().st_size + (path.parent / data_name).stat().st_size


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--out", type=Path, default=Path("big-model"))
    ap.add_argument("--dim", type=int, default=8192)
    ap.add_argument("--blocks", type=int, default=10)
    ap.add_argument("--variant", choices=["both", "single", "external"], default="both")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.variant in ("both", "single"):
        size = write_single(args.out / "big_single.onnx", args.dim, args.blocks)
        print(f"{args.out / 'big_single.onnx'}: {size / 2**30:.2f} GiB", file=sys.stderr)
    if args.variant in ("both", "external"):
        size = write_external(args.out / "big_external.onnx", args.dim, args.blocks)
        print(f"{args.out / 'big_external.onnx'} (+ .data): {size / 2**30:.2f} GiB", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
