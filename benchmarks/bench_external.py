"""Benchmark: a model with 1 GiB of external float32 data, loaded by onnxcore and by onnx, and saved.

Run once (it writes about 3 GiB to a temporary directory and removes it afterwards)::

    .venv/bin/python benchmarks/bench_external.py [--gib 1.0] [--dir /tmp]

Reported:

* load time of ``onnxcore.load(path)`` (references resolved and checked, contents memory-mapped)
  against ``onnx.load(path, load_external_data=True)``, each in a fresh subprocess, imports not
  counted; the ratio (target: at least 20);
* the peak RSS of each loading process (``ru_maxrss``; target for ours: under 10 % of the data);
* the save rate of ``onnxcore.save(..., external_data=True)`` in MB/s, for a model built in memory
  and for a loaded model (views of the mapped file, copied file to file in the kernel), beside a
  plain ``write`` of the same octets from memory and a plain file copy (``shutil.copyfile``), all
  including ``fsync``.

The data file is in the page cache for both loaders (it was just written), which favours the one
that reads it: onnx. Not a test: it needs onnx and a few GiB of disk and memory.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import onnxcore
from onnxcore import GraphProto, ModelProto, NodeProto, OperatorSetIdProto, TensorProto

MiB = 1 << 20

_PEAK = """
def peak_kib():
    # VmHWM is the high-water mark of this process image; ru_maxrss is carried over from the
    # parent across fork+exec on Linux and would count the benchmark's own arrays.
    try:
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
"""

_OURS = (
    _PEAK
    + """
import json, resource, sys, time
import numpy as np
import onnxcore
import onnxcore.external  # imported lazily by load; counted with the imports, as onnx's are
t0 = time.perf_counter()
m = onnxcore.load(sys.argv[1])
dt = time.perf_counter() - t0
t = m.graph.initializer[-1]
tail = np.frombuffer(t.raw_data, "<f4")[-4:].tolist()
print(json.dumps({"seconds": dt, "maxrss_kib": peak_kib(), "tail": tail}))
"""
)

_ONNX = (
    _PEAK
    + """
import json, resource, sys, time
import onnx
from onnx import numpy_helper
t0 = time.perf_counter()
m = onnx.load(sys.argv[1], load_external_data=True)
dt = time.perf_counter() - t0
tail = numpy_helper.to_array(m.graph.initializer[-1])[-4:].tolist()
print(json.dumps({"seconds": dt, "maxrss_kib": peak_kib(), "tail": tail}))
"""
)

_BASELINE = (
    _PEAK
    + """
import json, resource
import numpy, onnxcore
print(json.dumps({"maxrss_kib": peak_kib()}))
"""
)


def _run(code: str, *args: str) -> dict[str, object]:
    out = subprocess.run([sys.executable, "-c", code, *args], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _model(total_bytes: int, pieces: int) -> tuple[ModelProto, list[np.ndarray]]:
    n = total_bytes // 4 // pieces
    arrays = []
    inits = []
    for i in range(pieces):
        a = np.arange(i * n, (i + 1) * n, dtype=np.float32)
        arrays.append(a)
        inits.append(
            TensorProto(name=f"w{i}", data_type=TensorProto.DataType.FLOAT, dims=[n], raw_data=memoryview(a).cast("B"))
        )
    nodes = [NodeProto(op_type="Identity", input=[f"w{i}"], output=[f"y{i}"]) for i in range(pieces)]
    graph = GraphProto(name="bench", node=nodes, initializer=inits)
    return ModelProto(ir_version=10, opset_import=[OperatorSetIdProto(domain="", version=17)], graph=graph), arrays


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gib", type=float, default=1.0, help="size of the external data in GiB")
    ap.add_argument("--pieces", type=int, default=16, help="number of tensors the data is split into")
    ap.add_argument("--dir", default=None, help="where the temporary directory goes")
    args = ap.parse_args()
    total = int(args.gib * (1 << 30))
    work = Path(tempfile.mkdtemp(prefix="bench-external-", dir=args.dir))
    try:
        model, arrays = _model(total, args.pieces)
        data_bytes = sum(a.nbytes for a in arrays)
        path = work / "model.onnx"

        t0 = time.perf_counter()
        onnxcore.save(model, path, external_data=True)
        save_s = time.perf_counter() - t0
        data_path = work / "model.onnx.data"

        t0 = time.perf_counter()
        shutil.copyfile(data_path, work / "copy.data")
        with open(work / "copy.data", "rb+") as fh:
            os.fsync(fh.fileno())
        copy_s = time.perf_counter() - t0
        os.unlink(work / "copy.data")

        # The floor for octets held in memory: one write() per tensor, then fsync.
        t0 = time.perf_counter()
        with open(work / "plain.data", "wb") as fh:
            for a in arrays:
                fh.write(memoryview(a).cast("B"))
            fh.flush()
            os.fsync(fh.fileno())
        write_s = time.perf_counter() - t0
        os.unlink(work / "plain.data")
        del model, arrays

        # Re-saving a loaded model: its tensors are views of the mapped file (copied in the kernel).
        loaded = onnxcore.load(path)
        t0 = time.perf_counter()
        onnxcore.save(loaded, work / "resave.onnx", external_data=True)
        resave_s = time.perf_counter() - t0
        del loaded
        os.unlink(work / "resave.onnx.data")

        baseline = _run(_BASELINE)
        ours = _run(_OURS, str(path))
        theirs = _run(_ONNX, str(path))
        assert ours["tail"] == theirs["tail"], (ours["tail"], theirs["tail"])

        ratio = float(theirs["seconds"]) / float(ours["seconds"])  # type: ignore[arg-type]
        rss_ours = int(ours["maxrss_kib"]) * 1024  # type: ignore[call-overload]
        rss_theirs = int(theirs["maxrss_kib"]) * 1024  # type: ignore[call-overload]
        rss_base = int(baseline["maxrss_kib"]) * 1024  # type: ignore[call-overload]
        report = {
            "data_bytes": data_bytes,
            "tensors": args.pieces,
            "load_onnxcore_s": round(float(ours["seconds"]), 4),  # type: ignore[arg-type]
            "load_onnx_s": round(float(theirs["seconds"]), 4),  # type: ignore[arg-type]
            "load_speedup": round(ratio, 1),
            "peak_rss_onnxcore_MiB": round(rss_ours / MiB, 1),
            "peak_rss_onnxcore_pct_of_data": round(100 * rss_ours / data_bytes, 2),
            "peak_rss_python_numpy_onnxcore_import_MiB": round(rss_base / MiB, 1),
            "peak_rss_onnx_MiB": round(rss_theirs / MiB, 1),
            "save_onnxcore_MB_per_s": round(data_bytes / 1e6 / save_s, 1),
            "resave_loaded_onnxcore_MB_per_s": round(data_bytes / 1e6 / resave_s, 1),
            "plain_write_from_memory_MB_per_s": round(data_bytes / 1e6 / write_s, 1),
            "plain_copy_MB_per_s": round(data_bytes / 1e6 / copy_s, 1),
        }
        print(json.dumps(report, indent=2))
        ok = ratio >= 20 and rss_ours < 0.10 * data_bytes
        print("targets (>= 20x faster, RSS < 10 % of data):", "met" if ok else "NOT met")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
