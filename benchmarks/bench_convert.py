"""Benchmark: operator set conversion of a model with 1 GiB of external data (issue 24), onnxcore against
onnx.version_converter on the same model.

Run once (it writes about 1 GiB, plus onnx's copy when it inlines the data, to a temporary directory and
removes it afterwards; it checks the free space first)::

    .venv/bin/python benchmarks/bench_convert.py [--gib 1.0] [--dir /tmp] [--target 13]

The model (ai.onnx 11): 16 weights of equal size in one external data file, each read by a MatMul whose
result goes through ReduceSum (``axes`` an attribute in 11, an input from 13) and Unsqueeze (the same).

Reported, each step timed on its own:

* onnxcore: ``load(path, external_data=False)`` (references kept, nothing read), ``convert_version``, and
  ``save`` of the converted model beside the original (its tensors still referencing the same data file);
  the data file's SHA-256 and modification time before and after (byte-identical, untouched);
* onnx: ``onnx.load(path, load_external_data=False)`` + ``version_converter.convert_version`` + ``onnx.save``,
  and whether the result still references the data file; then the same with the data loaded
  (``onnx.load(path)``, which reads the 1 GiB) and saved back as external data, as a user must do when the
  references do not survive.

Not a test: it needs onnx and a GiB of disk.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import onnxcore
from onnxcore import helper
from onnxcore.proto import TensorProto

MiB = 1 << 20
N_WEIGHTS = 16


def _sha(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(16 * MiB):
            h.update(chunk)
    return h.hexdigest()


def build(directory: Path, gib: float) -> Path:
    """The model with ``gib`` GiB of float32 weights in one external data file; returns the model path."""
    per = int(gib * 1024 * MiB / N_WEIGHTS / 4)
    cols = 256
    rows = per // cols
    rng = np.random.default_rng(0)
    block = rng.standard_normal((rows, cols), dtype=np.float32)
    x = helper.make_tensor_value_info("x", TensorProto.DataType.FLOAT, [1, rows])
    nodes = []
    outputs = []
    inits = []
    for i in range(N_WEIGHTS):
        inits.append(onnxcore.from_array(block, f"w{i}"))
        nodes.append(helper.make_node("MatMul", ["x", f"w{i}"], [f"m{i}"]))
        nodes.append(helper.make_node("ReduceSum", [f"m{i}"], [f"r{i}"], axes=[1], keepdims=0))
        nodes.append(helper.make_node("Unsqueeze", [f"r{i}"], [f"y{i}"], axes=[0]))
        outputs.append(helper.make_tensor_value_info(f"y{i}", TensorProto.DataType.FLOAT, [1, 1]))
    graph = helper.make_graph(nodes, "big", [x], outputs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    path = directory / "big.onnx"
    onnxcore.save(model, path, external_data=True)
    return path


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gib", type=float, default=1.0)
    p.add_argument("--dir", default=tempfile.gettempdir())
    p.add_argument("--target", type=int, default=13)
    args = p.parse_args()
    need = int(args.gib * 2.2 * 1024 * MiB)
    free = shutil.disk_usage(args.dir).free
    if free < need:
        print(f"needs {need / MiB:.0f} MiB free in {args.dir}, has {free / MiB:.0f} MiB", file=sys.stderr)
        return 2
    import onnx  # lazy: the comparison needs it, building the model does not
    import onnx.version_converter

    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        d = Path(tmp)
        t = time.perf_counter()
        path = build(d, args.gib)
        data = next(q for q in d.iterdir() if q != path)
        print(f"model: {path.stat().st_size} B, data file {data.stat().st_size / MiB:.0f} MiB "
              f"(written in {time.perf_counter() - t:.1f} s)")  # fmt: skip
        digest, mtime = _sha(data), data.stat().st_mtime_ns

        t0 = time.perf_counter()
        model = onnxcore.load(path, external_data=False)
        t1 = time.perf_counter()
        converted = onnxcore.convert_version(model, args.target)
        t2 = time.perf_counter()
        onnxcore.save(converted, d / "ours.onnx")
        t3 = time.perf_counter()
        ok = _sha(data) == digest and data.stat().st_mtime_ns == mtime
        refs = sum(
            1
            for i in onnxcore.load(d / "ours.onnx", external_data=False).graph.initializer
            if i.data_location == TensorProto.DataLocation.EXTERNAL
        )
        print(
            f"onnxcore: load {1e3 * (t1 - t0):.1f} ms, convert {1e3 * (t2 - t1):.1f} ms, save {1e3 * (t3 - t2):.1f} ms"
            f" = {1e3 * (t3 - t0):.1f} ms; data file byte-identical and untouched: {ok}; "
            f"{refs}/{N_WEIGHTS} tensors still reference it"
        )
        # A check of the converted model's result, on a small input (reads the weights, after the timing).
        sess = onnxcore.Session(onnxcore.load(d / "ours.onnx"))
        xin = np.ones((1, int(converted.graph.input[0].type.tensor_type.shape.dim[1].dim_value)), np.float32)
        first = sess.run(["y0"], {"x": xin})[0]
        print(f"onnxcore: converted model runs, y0 = {float(first.reshape(-1)[0]):.3f}")

        t0 = time.perf_counter()
        theirs = onnx.load(str(path), load_external_data=False)
        t1 = time.perf_counter()
        try:
            conv = onnx.version_converter.convert_version(theirs, args.target)
            t2 = time.perf_counter()
            onnx.save(conv, str(d / "onnx_refs.onnx"))
            t3 = time.perf_counter()
            kept = sum(1 for i in conv.graph.initializer if i.data_location == onnx.TensorProto.EXTERNAL)
            print(
                f"onnx (references): load {1e3 * (t1 - t0):.1f} ms, convert {1e3 * (t2 - t1):.1f} ms, save "
                f"{1e3 * (t3 - t2):.1f} ms = {1e3 * (t3 - t0):.1f} ms; {kept}/{N_WEIGHTS} tensors still reference "
                "the data file"
            )
        except Exception as e:
            print(f"onnx (references): convert_version failed: {type(e).__name__}: {str(e).splitlines()[0]}")
        t0 = time.perf_counter()
        theirs = onnx.load(str(path))
        t1 = time.perf_counter()
        conv = onnx.version_converter.convert_version(theirs, args.target)
        t2 = time.perf_counter()
        onnx.save(conv, str(d / "onnx_data.onnx"), save_as_external_data=True, location="onnx_data.bin")
        t3 = time.perf_counter()
        print(
            f"onnx (data loaded): load {1e3 * (t1 - t0):.1f} ms, convert {1e3 * (t2 - t1):.1f} ms, save "
            f"{1e3 * (t3 - t2):.1f} ms = {1e3 * (t3 - t0):.1f} ms (a second copy of the data written)"
        )
        print(f"data file byte-identical after both: {_sha(data) == digest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
