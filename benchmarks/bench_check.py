"""Validator speed against onnx's checker, as ratios (run: ``python benchmarks/bench_check.py``).

Two models are generated into a temporary directory:

* a 50,000-node graph (alternating Add and Relu on a small tensor): ``onnxcore.check`` should stay
  within 3 times ``onnx.checker.check_model(full_check=True)``;
* a weights-heavy model (one large initializer, 256 MiB by default, ``--weights-mib`` to change):
  ``check`` reads no weight byte, so it should take a small fraction of onnx's checker.

Shape inference (Clause 9) is timed against ``onnx.shape_inference.infer_shapes`` on the chain and on three
models of the light zoo (from the onnx wheel).

Each measurement is the best of ``--repeat`` runs, onnx and onnxcore interleaved, because the
machine is shared and timings are noisy; the ratio is what is reported.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench_json import Recorder


def _best(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def build_chain(path: Path, n: int) -> None:
    from onnx import TensorProto, helper, save

    nodes = []
    prev = "x"
    for i in range(n):
        if i % 2:
            nodes.append(helper.make_node("Relu", [prev], [f"v{i}"], name=f"n{i}"))
        else:
            nodes.append(helper.make_node("Add", [prev, "b"], [f"v{i}"], name=f"n{i}"))
        prev = f"v{i}"
    g = helper.make_graph(
        nodes,
        "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor("b", TensorProto.FLOAT, [4], [1.0, 2.0, 3.0, 4.0])],
    )
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)]), str(path))


def build_weights(path: Path, mib: int) -> None:
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper, save

    n = mib * (1 << 20) // 4
    w = numpy_helper.from_array(np.ones((n // 1024, 1024), dtype=np.float32), "w")
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
        "weights",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, n // 1024])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1024])],
        [w],
    )
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)]), str(path))


def _light(name: str) -> Path | None:
    import onnx

    p = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / f"light_{name}.onnx"
    return p if p.exists() else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=50_000)
    ap.add_argument("--weights-mib", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path, help="also write a table of the measurements here (benchmarks/bench_json.py)")
    args = ap.parse_args()
    rec = Recorder(args.json, "bench_check.py")
    rec.table(["measurement", "onnx", "onnxcore", "ratio"], ["---", "---:", "---:", "---:"])

    import onnx

    import onnxcore

    with tempfile.TemporaryDirectory() as tmp:
        chain = Path(tmp) / "chain.onnx"
        build_chain(chain, args.nodes)
        onnx_model = onnx.load(str(chain))
        ours = onnxcore.load(chain)
        report = onnxcore.check(ours)
        assert report.ok, str(report)
        t_onnx = _best(lambda: onnx.checker.check_model(onnx_model, full_check=True), args.repeat)
        t_full = _best(lambda: onnxcore.check(ours), args.repeat)
        t_fast = _best(lambda: onnxcore.check(ours, full=False), args.repeat)
        t_path = _best(lambda: onnxcore.check(chain), args.repeat)
        t_onnx_path = _best(lambda: onnx.checker.check_model(str(chain), full_check=True), args.repeat)
        print(f"{args.nodes}-node graph: onnx.checker(full_check=True) {t_onnx:.3f} s")
        print(f"  onnxcore.check(model)             {t_full:.3f} s  ratio {t_full / t_onnx:.2f} (target <= 1.5)")
        print(f"  onnxcore.check(model, full=False) {t_fast:.3f} s  ratio {t_fast / t_onnx:.2f}")
        print(f"  onnxcore.check(path) incl. load   {t_path:.3f} s  ratio {t_path / t_onnx:.2f}")
        print(
            f"  against onnx.checker(path): {t_onnx_path:.3f} s; onnxcore.check(path) ratio {t_path / t_onnx_path:.2f}"
        )

        from onnxcore.infer import infer_shapes

        t_onnx_si = _best(lambda: onnx.shape_inference.infer_shapes(onnx_model), args.repeat)
        t_ours_si = _best(lambda: infer_shapes(ours), args.repeat)
        print(f"  shape inference: onnx.shape_inference.infer_shapes {t_onnx_si:.3f} s")
        print(f"  onnxcore.infer.infer_shapes       {t_ours_si:.3f} s  ratio {t_ours_si / t_onnx_si:.2f}")
        graph = f"{args.nodes:,}-node graph"
        for what, theirs, ours in (
            (f"`check(model)` / `onnx.checker.check_model(full_check=True)`, {graph} (target: 1.5)", t_onnx, t_full),
            (f"`check(model, full=False)` / the same, {graph}", t_onnx, t_fast),
            (f"`check(path)` / `check_model(path, full_check=True)`, decoding included, {graph}", t_onnx_path, t_path),
            (f"`infer_shapes` / `onnx.shape_inference.infer_shapes`, {graph}", t_onnx_si, t_ours_si),
        ):
            rec.row([what, f"{theirs:.3f} s", f"{ours:.3f} s", f"{ours / theirs:.2f}"])
        for name in ("resnet50", "inception_v2", "vgg19"):
            light = _light(name)
            if light is None:
                continue
            theirs, mine = onnx.load(str(light), load_external_data=False), onnxcore.load(light)
            t_a = _best(lambda theirs=theirs: onnx.shape_inference.infer_shapes(theirs), args.repeat)
            t_b = _best(lambda mine=mine: infer_shapes(mine), args.repeat)
            print(f"  light {name}: onnx {t_a * 1e3:.1f} ms, onnxcore {t_b * 1e3:.1f} ms, ratio {t_b / t_a:.2f}")

        heavy = Path(tmp) / "weights.onnx"
        build_weights(heavy, args.weights_mib)
        t_onnx_w = _best(lambda: onnx.checker.check_model(str(heavy), full_check=True), args.repeat)
        t_ours_w = _best(lambda: onnxcore.check(heavy), args.repeat)
        print(f"{args.weights_mib} MiB weights model: onnx.checker(path, full_check=True) {t_onnx_w:.3f} s")
        print(f"  onnxcore.check(path)              {t_ours_w:.4f} s  ratio {t_ours_w / t_onnx_w:.4f} (target < 0.02)")
        what = f"`check(path)` / `check_model(path, full_check=True)`, {args.weights_mib} MiB weights (target: 0.02)"
        rec.row([what, f"{t_onnx_w:.3f} s", f"{t_ours_w:.4f} s", f"{t_ours_w / t_onnx_w:.4f}"])
    rec.write()


if __name__ == "__main__":
    main()
