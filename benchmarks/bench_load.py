"""Load/save benchmark against ``onnx.load`` (issue 2), in one run, as ratios.

Models (generated into a temporary directory):
- weights-heavy: about 1 GiB of float32 initializers in one file;
- graph-heavy: 50,000 nodes.

Each load runs in a fresh subprocess so peak RSS is the loader's own (VmHWM, reset after the
imports, minus VmRSS before loading). Usage: ``python benchmarks/bench_load.py [--gib 1.0]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from bench_json import Recorder

import onnxcore as oc

_CHILD = r"""
import json, sys, time
which, path = sys.argv[1], sys.argv[2]
if which == "onnx":
    import onnx
    load = lambda p: onnx.load(p)
else:
    import onnxcore
    load = lambda p: onnxcore.load(p)
def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
with open("/proc/self/clear_refs", "w") as fh:
    fh.write("5")  # reset the peak (VmHWM) so it measures the load alone
base = status("VmRSS")
t = time.perf_counter()
m = load(path)
dt = time.perf_counter() - t
peak = status("VmHWM")
print(json.dumps({"seconds": dt, "rss_bytes": peak - base}))
"""


_INSPECT = r"""
import io, sys, time
from onnxcore.cli.inspect import run_inspect
t = time.perf_counter()
code = run_inspect(sys.argv[1], depth=3, max_items=20, as_json=False, out=io.StringIO())
print(time.perf_counter() - t)
assert code == 0
for line in open("/proc/self/status"):
    if line.startswith("VmHWM:"):
        print(int(line.split()[1]) * 1024)
"""


def _measure(which: str, path: Path, repeat: int) -> dict[str, float]:
    runs = []
    for _ in range(repeat):
        out = subprocess.run(
            [sys.executable, "-c", _CHILD, which, str(path)], capture_output=True, text=True, check=True
        )
        runs.append(json.loads(out.stdout))
    best = min(runs, key=lambda r: r["seconds"])
    return best


def weights_heavy(path: Path, gib: float) -> None:
    n_tensors = 16
    per = int(gib * (1 << 30)) // n_tensors // 4
    rng = np.random.default_rng(0)
    block = rng.standard_normal(per, dtype=np.float32)
    inits = [
        oc.TensorProto(name=f"w{i}", dims=[per], data_type=oc.TensorProto.DataType.FLOAT, raw_data=memoryview(block))
        for i in range(n_tensors)
    ]
    nodes = [oc.NodeProto(op_type="Identity", input=[f"w{i}"], output=[f"y{i}"]) for i in range(n_tensors)]
    vi = [
        oc.ValueInfoProto(
            name=f"y{i}",
            type=oc.TypeProto(
                tensor_type=oc.TypeProto.Tensor(
                    elem_type=1, shape=oc.TensorShapeProto(dim=[oc.TensorShapeProto.Dimension(dim_value=per)])
                )
            ),
        )
        for i in range(n_tensors)
    ]
    g = oc.GraphProto(name="weights", node=nodes, initializer=inits, output=vi)
    oc.save(oc.ModelProto(ir_version=8, opset_import=[oc.OperatorSetIdProto(domain="", version=17)], graph=g), path)


def graph_heavy(path: Path, n: int = 50_000) -> None:
    f = oc.TensorProto.DataType.FLOAT
    nodes = []
    prev = "x"
    for i in range(n):
        op = ("Add", "Relu", "Mul", "Transpose")[i % 4]
        inputs = [prev, "c"] if op in ("Add", "Mul") else [prev]
        attrs = [oc.AttributeProto(name="perm", type=7, ints=[0, 1])] if op == "Transpose" else []
        nodes.append(oc.NodeProto(name=f"n{i}", op_type=op, input=inputs, output=[f"v{i}"], attribute=attrs))
        prev = f"v{i}"

    def vi(name: str) -> oc.ValueInfoProto:
        dims = [oc.TensorShapeProto.Dimension(dim_value=2), oc.TensorShapeProto.Dimension(dim_value=2)]
        t = oc.TypeProto.Tensor(elem_type=f, shape=oc.TensorShapeProto(dim=dims))
        return oc.ValueInfoProto(name=name, type=oc.TypeProto(tensor_type=t))

    c = oc.TensorProto(name="c", dims=[1], data_type=f, float_data=[1.0])
    g = oc.GraphProto(name="big", node=nodes, initializer=[c], input=[vi("x")], output=[vi(prev)])
    oc.save(oc.ModelProto(ir_version=8, opset_import=[oc.OperatorSetIdProto(domain="", version=17)], graph=g), path)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gib", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path, help="also write the table here (benchmarks/bench_json.py)")
    args = ap.parse_args()
    rec = Recorder(args.json, "bench_load.py")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        wpath = Path(tmp) / "weights.onnx"
        weights_heavy(wpath, args.gib)
        gpath = Path(tmp) / "graph.onnx"
        graph_heavy(gpath)
        for label, path in (("weights-heavy", wpath), ("graph-heavy (50k nodes)", gpath)):
            size = path.stat().st_size
            theirs = _measure("onnx", path, args.repeat)
            ours = _measure("onnxcore", path, args.repeat)
            rows.append((label, size, ours, theirs))
        # inspect: structure only, weights never read (issue 7: under a second, memory well below the file).
        t = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", _INSPECT, str(wpath)], capture_output=True, text=True, check=True)
        inspect_s = time.perf_counter() - t
        inspect_in, inspect_rss_s = proc.stdout.strip().splitlines()[-2:]
        inspect_rss = int(inspect_rss_s)
        # Save: ours streams views out of the map.
        model = oc.load(wpath)
        t = time.perf_counter()
        oc.save(model, Path(tmp) / "copy.onnx")
        save_s = time.perf_counter() - t
    columns = ["model", "file", "onnx.load", "onnxcore.load", "speed-up", "onnxcore peak RSS"]
    print(rec.table(columns, ["---", *["---:"] * 5]))
    for label, size, ours, theirs in rows:
        cells = [label, f"{size / 2**20:,.0f} MiB", f"{theirs['seconds']:.3f} s", f"{ours['seconds']:.3f} s"]
        cells.append(f"{theirs['seconds'] / ours['seconds']:.1f}x")
        cells.append(f"{ours['rss_bytes'] / 2**20:,.1f} MiB ({100 * ours['rss_bytes'] / size:.2f}% of file)")
        print(rec.row(cells))
    rate = rows[0][1] / 2**20 / save_s
    print("\n" + rec.note(f"save of the weights-heavy model: {save_s:.2f} s ({rate:,.0f} MiB/s)"))
    print(
        rec.note(
            f"onnxcore inspect of the weights-heavy model: {float(inspect_in):.3f} s "
            f"({inspect_s:.2f} s with interpreter start), "
            f"peak RSS {inspect_rss / 2**20:,.1f} MiB"
        )
    )
    rec.write()


if __name__ == "__main__":
    main()
