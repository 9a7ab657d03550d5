"""onnxcore.dask.run on a real LocalCluster (2 worker processes) and the local schedulers: outputs equal to one
Session.run over the whole input in one process; one session per worker; the model shipped once; a worker
killed mid-run costs only its tasks."""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import time
from typing import Any

import numpy as np
import pytest

dask = pytest.importorskip("dask", reason="the dask extra is not installed (pip install 'onnxcore[dask]')")
pytest.importorskip("distributed", reason="the dask extra (distributed) is not installed")
pytest.importorskip("pandas", reason="the dask extra (pandas) is not installed")
pytest.importorskip("pyarrow", reason="the dask extra (pyarrow) is not installed")

import dask.array as da  # noqa: E402
import dask.dataframe as dd  # noqa: E402
import pandas as pd  # noqa: E402
from conftest import ROWS, table, texts, whole_frame_feeds  # noqa: E402

import onnxcore  # noqa: E402
import onnxcore.dask as ocd  # noqa: E402

# Per-batch and whole-input runs of a float model differ only by BLAS blocking: float32 rounding.
RTOL, ATOL = 1e-5, 1e-6


def test_import_onnxcore_does_not_import_dask() -> None:
    code = (
        "import sys, onnxcore\n"
        "onnxcore.Session; onnxcore.check\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed', 'pandas', 'pyarrow')"
        " or m.startswith('onnxcore.dask')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_squeezenet_over_chunked_images_on_local_cluster(client: Any, squeezenet: tuple[bytes, Any, str]) -> None:
    data, path, name = squeezenet
    x = np.random.default_rng(0).standard_normal((6, 3, 224, 224)).astype(np.float32)
    images = da.from_array(x, chunks=(2, 3, 224, 224))
    expected = onnxcore.Session(data).run(None, {name: x})
    for model in (path, data):  # a path every worker reads; the octets, scattered once
        outs = ocd.run(model, images)
        assert len(outs) == len(expected)
        for out, want in zip(outs, expected):
            assert isinstance(out, da.Array)
            assert out.chunks[0] == (2, 2, 2) and out.shape == want.shape and out.dtype == want.dtype
            assert out._meta.dtype == want.dtype and out._meta.ndim == want.ndim
            got = out.compute()
            np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
    # One session per worker process for this model, whatever the number of tasks and runs.
    key = ocd.model_hash(onnxcore.load(data))
    built = client.run(lambda: ocd.built_sessions().get(key, 0))
    assert set(built.values()) <= {0, 1} and sum(built.values()) >= 1


@pytest.mark.filterwarnings("ignore:Sending large graph:UserWarning")  # the frame comes from pandas, 27 MiB
def test_zipmap_string_pipeline_over_a_million_rows_on_local_cluster(client: Any, string_pipeline: bytes) -> None:
    frame = table(ROWS)
    parts = dd.from_pandas(frame, npartitions=8)
    result = ocd.run(string_pipeline, parts)
    assert isinstance(result, dd.DataFrame)
    assert list(result.columns) == [
        "output_label",
        "output_probability_0",
        "output_probability_1",
        "output_probability_2",
    ]
    assert result.dtypes["output_label"] == np.int64 and result.dtypes["output_probability_0"] == np.float32
    assert result.npartitions == 8
    got = result.compute()
    label, probs = onnxcore.Session(string_pipeline).run(None, whole_frame_feeds(frame))
    assert len(got) == ROWS and got.index.equals(frame.index)
    np.testing.assert_array_equal(got["output_label"].to_numpy(), label)
    for k in range(3):
        want = np.array([m[k] for m in probs], dtype=np.float32)
        np.testing.assert_allclose(got[f"output_probability_{k}"].to_numpy(), want, rtol=RTOL, atol=ATOL)


@pytest.mark.filterwarnings("ignore:Sending large graph:UserWarning")
def test_text_pipeline_over_a_data_frame_on_local_cluster(client: Any, text_pipeline: bytes) -> None:
    """TF-IDF (com.microsoft::Tokenizer) then logistic regression with ZipMap, a string column per row."""
    frame = texts(100_000, seed=5)
    result = ocd.run(text_pipeline, dd.from_pandas(frame, npartitions=4))
    got = result.compute()
    label, probs = onnxcore.Session(text_pipeline).run(None, {"text": frame["text"].to_numpy(object).reshape(-1, 1)})
    assert len(got) == len(frame) and got.index.equals(frame.index)
    np.testing.assert_array_equal(got["output_label"].to_numpy(), label)
    for k in range(3):
        want = np.array([m[k] for m in probs], dtype=np.float32)
        np.testing.assert_allclose(got[f"output_probability_{k}"].to_numpy(), want, rtol=RTOL, atol=ATOL)


@pytest.mark.filterwarnings("ignore:Computing mixed collections:UserWarning")
@pytest.mark.parametrize("scheduler", ["threads", "processes"])
def test_stacked_columns_on_local_schedulers(matrix_pipeline: bytes, scheduler: str) -> None:
    """Columns a, b stacked to the [N, 2] input X, as skl2onnx lays out a matrix; also as a dask array."""
    frame = table(20_000, seed=3)
    x = frame[["a", "b"]].to_numpy(np.float32)
    label, probs = onnxcore.Session(matrix_pipeline).run(None, {"X": x})
    with dask.config.set(scheduler=scheduler):  # a local scheduler, even with the session's cluster around
        _stacked(matrix_pipeline, frame, x, label, probs)


def _stacked(matrix_pipeline: bytes, frame: Any, x: np.ndarray, label: np.ndarray, probs: np.ndarray) -> None:
    result = ocd.run(matrix_pipeline, dd.from_pandas(frame[["a", "b"]], npartitions=4))
    arrays = ocd.run(matrix_pipeline, {"X": da.from_array(x, chunks=(3000, 1))})
    assert arrays[1].chunks == ((3000,) * 6 + (2000,), (2,))
    got, got_label, got_probs = dask.compute(result, *arrays)  # one compute: one process pool
    assert list(got.columns) == ["label", "probabilities_0", "probabilities_1"]
    np.testing.assert_array_equal(got["label"].to_numpy(), label)
    np.testing.assert_allclose(got[["probabilities_0", "probabilities_1"]].to_numpy(), probs, rtol=RTOL, atol=ATOL)
    np.testing.assert_array_equal(got_label, label)
    np.testing.assert_allclose(got_probs, probs, rtol=RTOL, atol=ATOL)


def test_string_column_to_input_by_name_threads(string_pipeline: bytes) -> None:
    """A column per input by name, each fed as [N, 1]; pandas' string dtype and object columns alike."""
    frame = table(5000, seed=4)
    frame["city"] = frame["city"].astype(object)
    label, _ = onnxcore.Session(string_pipeline).run(None, whole_frame_feeds(frame))
    shuffled = dd.from_pandas(frame[["city", "b", "a"]], npartitions=3)
    result = ocd.run(string_pipeline, shuffled, output_names=["output_label"], client=False)
    tasks = _tasks(result, "_run_partition")
    assert len(tasks) == 3 and not any(string_pipeline in t for t in tasks)  # a local file's path instead
    got = result.compute(scheduler="threads")
    assert list(got.columns) == ["output_label"]
    np.testing.assert_array_equal(got["output_label"].to_numpy(), label)


def _tasks(collection: Any, prefix: str) -> list[bytes]:
    """The pickled tasks of ``collection``'s graph whose key starts with ``prefix``: what the scheduler sends."""
    graph = dict(collection.__dask_graph__())
    keys = [k for k in graph if str(k[0] if isinstance(k, tuple) else k).startswith(prefix)]
    return [pickle.dumps(graph[k]) for k in keys]


def test_model_travels_once(client: Any, squeezenet: tuple[bytes, Any, str]) -> None:
    """The tasks carry a reference (about a kilobyte), never the 5 MB model: the octets reach each worker once,
    in a worker plugin (a path: not at all), and never pass between workers, whatever the tasks and runs."""
    data, path, _ = squeezenet
    images = da.zeros((8, 3, 224, 224), dtype=np.float32, chunks=(1, 3, 224, 224))
    before = sum(client.run(lambda dask_worker: dask_worker.transfer_outgoing_bytes_total).values())
    for model in (data, path, data):
        (out,) = ocd.run(model, images)
        tasks = _tasks(out, "onnxcore-run-")
        assert len(tasks) == 8
        assert max(map(len, tasks)) < 4096  # the model is len(data) ~ 5e6 octets
        assert not any(data[:4096] in t for t in tasks)
        out.compute()
    moved = sum(client.run(lambda dask_worker: dask_worker.transfer_outgoing_bytes_total).values()) - before
    assert moved < len(data) / 4  # 24 tasks' outputs (1000 floats each) gathered; no model octets
    key = ocd.model_hash(onnxcore.load(data))
    installed = client.run(lambda: key in __import__("onnxcore.dask.sessions").dask.sessions._INSTALLED)
    assert all(installed.values()) and len(installed) == 2
    built = client.run(lambda: ocd.built_sessions().get(key, 0))
    assert all(n == 1 for n in built.values()), built  # one session per worker process, built once


def test_data_frame_tasks_do_not_embed_the_model(client: Any, string_pipeline: bytes) -> None:
    parts = dd.from_pandas(table(1000), npartitions=4)
    result = ocd.run(string_pipeline, parts)
    tasks = _tasks(result, "_run_partition")
    assert len(tasks) == 4
    assert not any(string_pipeline in t for t in tasks)


def test_inputs_that_do_not_fit_are_refused_at_once(matrix_pipeline: bytes, string_pipeline: bytes) -> None:
    with pytest.raises(onnxcore.InputError, match="float64"):
        ocd.run(matrix_pipeline, da.zeros((10, 2), chunks=5))
    with pytest.raises(onnxcore.InputError, match="no columns"):
        ocd.run(string_pipeline, dd.from_pandas(pd.DataFrame({"a": [1.0], "b": [2.0]}), npartitions=1))
    with pytest.raises(onnxcore.InputError, match="declares 2 features"):
        ocd.run(matrix_pipeline, dd.from_pandas(table(10)[["a", "b"]].assign(c=1.0), npartitions=1))


@pytest.mark.filterwarnings("ignore:Sending large graph:UserWarning")  # the images come from numpy, 14 MiB
def test_worker_killed_mid_run_loses_only_its_tasks(client: Any, squeezenet: tuple[bytes, Any, str]) -> None:
    """os.kill of one worker process while the run goes on: Dask reruns its tasks; the result is complete
    and equal to one process's."""
    data, _, name = squeezenet
    x = np.random.default_rng(5).standard_normal((24, 3, 224, 224)).astype(np.float32)
    expected = onnxcore.Session(data).run(None, {name: x})[0]
    # The octets (not a path): the worker the nanny starts in place of the dead one gets them from the plugin.
    (out,) = ocd.run(data, da.from_array(x, chunks=(1, 3, 224, 224)))
    pids = client.run(os.getpid)
    future = client.compute(out)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # both workers busy, a few blocks done
        processing = client.processing()
        done = sum(1 for k in client.who_has() if "pick" in str(k) or "onnxcore-run" in str(k))
        if all(processing.get(w) for w in pids) and done >= 2:
            break
        time.sleep(0.05)
    victim = sorted(pids)[0]
    assert not future.done()
    os.kill(pids[victim], signal.SIGKILL)
    got = future.result(timeout=180)
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL)
    client.wait_for_workers(2, timeout=60)  # the nanny brought a new one up
    assert pids[victim] not in client.run(os.getpid).values()
