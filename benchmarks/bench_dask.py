"""onnxcore on Dask: rows per second with 1 and 2 worker processes, against onnxruntime in a plain loop over the
same batches (run: ``python benchmarks/bench_dask.py``; needs the ``dask`` and ``test`` extras).

Two workloads:

* a scikit-learn pipeline (skl2onnx: scaler on two float columns, one-hot on a string column, logistic
  regression, ZipMap), over a Dask data frame of ``--rows`` rows in ``--parts`` partitions;
* the light-zoo squeezenet (random weights, symbolic batch) over ``--images`` images in chunks of ``--chunk``.

Each worker process has one thread and BLAS at one thread (set here, inherited by the workers). The input is
persisted on the cluster before timing, and the sessions are built by a first run that is not timed, so the
time is scoring (results persisted on the workers, not gathered). onnxruntime runs in this process, one thread
(``intra_op_num_threads=1``) and then its default threads, over the same batches in a ``for`` loop. Reported:
rows/s (best of ``--repeat``), the speedup of 2 workers over 1 (target >= 1.7 on a 2-core machine) next to a
control (16 plain numpy tasks: its speedup says whether two cores were free for the workers at all), and the
bytes the model cost to move: the model's octets go to each worker once in a worker plugin, every task carries
only a reference (its pickled size is printed), and the octets the workers send (to one another; results to
the client in the untimed run) are counted from their transfer logs, the model's key apart.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402 (after the BLAS settings)
import pickle  # noqa: E402 (after the BLAS settings)
import sys  # noqa: E402 (after the BLAS settings)
import time  # noqa: E402 (after the BLAS settings)
from collections.abc import Callable  # noqa: E402 (after the BLAS settings)
from pathlib import Path  # noqa: E402 (after the BLAS settings)
from typing import Any  # noqa: E402 (after the BLAS settings)

import numpy as np  # noqa: E402 (after the BLAS settings)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))


def _best(fn: Callable[[], object], repeat: int, setup: Callable[[], object] | None = None) -> float:
    best = float("inf")
    for _ in range(repeat):
        if setup is not None:
            setup()
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def _frame(rows: int, seed: int) -> Any:
    import pandas as pd

    rng = np.random.default_rng(seed)
    cities = np.array(["paris", "oslo", "lima", "quito", "accra"])
    return pd.DataFrame({"a": rng.normal(size=rows), "b": rng.normal(size=rows), "city": rng.choice(cities, rows)})


def sklearn_model() -> bytes:
    import skl2onnx
    from skl2onnx.common.data_types import FloatTensorType, StringTensorType
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    train = _frame(3000, 1)
    y = (train.a + (train.city == "oslo") > 0.3).astype(np.int64) + (train.b > 1.0).astype(np.int64)
    pipe = make_pipeline(
        ColumnTransformer(
            [("num", StandardScaler(), ["a", "b"]), ("cat", OneHotEncoder(handle_unknown="ignore"), ["city"])]
        ),
        LogisticRegression(max_iter=500),
    ).fit(train, y)
    types = [
        ("a", FloatTensorType([None, 1])),
        ("b", FloatTensorType([None, 1])),
        ("city", StringTensorType([None, 1])),
    ]
    return bytes(
        skl2onnx.to_onnx(pipe, initial_types=types, target_opset={"": 17, "ai.onnx.ml": 3}).SerializeToString()
    )


def squeezenet_model() -> tuple[bytes, str]:
    import corpus

    (path,) = [p for p in corpus.shipped_models() if p.stem == "light_squeezenet"]
    model = corpus.with_random_weights(path)
    name, _ = corpus.light_model_input(path)
    (inp,) = [i for i in model.graph.input if i.name == name]
    inp.type.tensor_type.shape.dim[0].dim_param = "N"
    for out in model.graph.output:
        out.type.tensor_type.shape.dim[0].dim_param = "N"
    return model.SerializeToString(), name


def _ort(data: bytes, threads: int | None) -> Any:
    import onnxruntime as ort

    so = ort.SessionOptions()
    if threads:
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
    return ort.InferenceSession(data, so, providers=["CPUExecutionProvider"])


def _sent(client: Any) -> tuple[int, int]:
    """(model octets, all octets) the workers have sent so far (to one another, and results to the client):
    the scattered model is the key ``bytes-...``; the rest are inputs, partial results and results."""

    def logs(dask_worker: Any) -> tuple[int, int]:
        entries = list(dask_worker.transfer_outgoing_log)
        model = sum(n for e in entries for k, n in e["keys"].items() if str(k).startswith("bytes-"))
        return model, sum(e["total"] for e in entries)

    model = total = 0
    for m, t in client.run(logs).values():
        model += m
        total += t
    return model, total


def _settle(client: Any, keep: int) -> None:
    """Wait until the scheduler holds only the ``keep`` persisted inputs: a run right after another must
    not find the previous run's results still in memory (same keys) and skip the work."""
    for _ in range(600):
        if client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks)) <= keep:
            return
        time.sleep(0.01)


def _task_bytes(collection: Any) -> int:
    graph = dict(collection.__dask_graph__())
    ours = [v for k, v in graph.items() if any(s in str(k) for s in ("onnxcore-run", "_run_partition", "_pick"))]
    return max(len(pickle.dumps(t)) for t in ours)


def _busy(seed: int) -> float:
    """A fixed CPU-bound numpy task (the control): 60 products of 300 x 300 matrices."""
    a = np.random.default_rng(seed).standard_normal((300, 300))
    for _ in range(60):
        a = np.tanh(a @ a.T / 300)
    return float(a[0, 0])


def bench(args: argparse.Namespace) -> None:
    import dask.array as da
    import dask.dataframe as dd
    from distributed import Client, LocalCluster, wait

    import onnxcore.dask as ocd

    skl = sklearn_model()
    sq, sq_input = squeezenet_model()
    frame = _frame(args.rows, 0)
    images = np.random.default_rng(0).standard_normal((args.images, 3, 224, 224)).astype(np.float32)
    batches = np.array_split(np.arange(args.rows), args.parts)

    def skl_feeds(rows: np.ndarray) -> dict[str, np.ndarray]:
        part = frame.iloc[rows]
        return {
            "a": part[["a"]].to_numpy(np.float32),
            "b": part[["b"]].to_numpy(np.float32),
            "city": part[["city"]].to_numpy(object).astype(str),
        }

    skl_batches = [skl_feeds(b) for b in batches]
    img_batches = [images[i : i + args.chunk] for i in range(0, args.images, args.chunk)]
    results: dict[str, dict[str, float]] = {"sklearn": {}, "squeezenet": {}, "control": {}}
    for threads, label in ((1, "onnxruntime loop, 1 thread"), (None, "onnxruntime loop, default threads")):
        s1, s2 = _ort(skl, threads), _ort(sq, threads)
        results["sklearn"][label] = args.rows / _best(lambda s1=s1: [s1.run(None, f) for f in skl_batches], args.repeat)
        results["squeezenet"][label] = args.images / _best(
            lambda s2=s2: [s2.run(None, {sq_input: x}) for x in img_batches], args.repeat
        )
    moved: dict[str, Any] = {}
    for workers in (1, 2):
        label = f"onnxcore.dask, {workers} worker{'s' * (workers > 1)}"
        with (
            LocalCluster(n_workers=workers, threads_per_worker=1, dashboard_address=None, silence_logs=40) as cluster,
            Client(cluster) as client,
        ):
            parts = dd.from_pandas(frame, npartitions=args.parts).persist()
            imgs = da.from_array(images, chunks=(args.chunk, 3, 224, 224)).persist()
            keep = parts.npartitions + imgs.npartitions
            before = _sent(client)
            scored = ocd.run(skl, parts)
            (logits,) = ocd.run(sq, imgs)
            scored.compute()
            logits.compute()  # first run: each worker builds its sessions (not timed)

            def settle(keep: int = keep, client: Any = client) -> None:
                _settle(client, keep)

            def score(collection: Any, client: Any = client) -> None:
                # persisted and waited for: the results stay on the workers, as when they write them out
                # (onnxcore batch); gathering them to this process would time the client, not the workers.
                wait(client.persist(collection))

            # The control: the same 16 numpy tasks on 1 and 2 workers. Below ~1.9x, the machine did not have two
            # free cores for the workers (other jobs), whatever onnxcore does.
            results["control"][label] = 16 / _best(
                lambda: client.gather(client.map(_busy, range(16), pure=False)), args.repeat
            )
            results["sklearn"][label] = args.rows / _best(lambda s=scored: score(s), args.repeat, settle)
            results["squeezenet"][label] = args.images / _best(lambda g=logits: score(g), args.repeat, settle)
            moved[label] = {
                "model octets sent by workers": _sent(client)[0] - before[0],
                "all octets sent by workers": _sent(client)[1] - before[1],
                "largest task, pickled (bytes)": max(_task_bytes(scored), _task_bytes(logits)),
                "tasks per run": args.parts + len(img_batches),
                "runs": 1 + args.repeat,
            }
    sizes = f"sklearn pipeline {len(skl):,}, squeezenet {len(sq):,}"
    print(f"model octets: {sizes} (sent once to each worker, in a plugin)")
    for workload, rows in results.items():
        unit, count = {"sklearn": ("rows", args.rows), "squeezenet": ("images", args.images)}.get(
            workload, ("tasks", 16)
        )
        print(f"\n{workload} ({count} {unit}):")
        for label, rate in rows.items():
            print(f"  {label:<36} {rate:>12,.1f} {unit}/s")
        one, two = rows["onnxcore.dask, 1 worker"], rows["onnxcore.dask, 2 workers"]
        print(f"  2 workers / 1 worker: {two / one:.2f}x" + (" (target >= 1.7)" if workload != "control" else ""))
        if "onnxruntime loop, 1 thread" in rows:
            print(f"  onnxcore.dask 1 worker / onnxruntime 1 thread: {one / rows['onnxruntime loop, 1 thread']:.2f}x")
    print("\nbytes moved:")
    for label, info in moved.items():
        print(f"  {label}: " + ", ".join(f"{k} {v:,}" for k, v in info.items()))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=400_000)
    p.add_argument("--parts", type=int, default=16)
    p.add_argument("--images", type=int, default=48)
    p.add_argument("--chunk", type=int, default=4)
    p.add_argument("--repeat", type=int, default=3)
    bench(p.parse_args())


if __name__ == "__main__":
    main()
