"""``onnxcore batch``: Parquet and .npy through Dask, equal to one Session.run over the whole input; the output
appears whole or not at all (an interrupted run leaves nothing)."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("dask", reason="the dask extra is not installed (pip install 'onnxcore[dask]')")
pytest.importorskip("distributed", reason="the dask extra (distributed) is not installed")
pd = pytest.importorskip("pandas", reason="the dask extra (pandas) is not installed")
pq = pytest.importorskip("pyarrow.parquet", reason="the dask extra (pyarrow) is not installed")

from conftest import table, whole_frame_feeds  # noqa: E402

import onnxcore  # noqa: E402
from onnxcore.cli import main  # noqa: E402
from onnxcore.dask.batch import _quiet_distributed  # noqa: E402

SRC = Path(__file__).resolve().parents[2] / "src"
RTOL, ATOL = 1e-5, 1e-6


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")])
    return env


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.startswith("."))


def test_parquet_with_zipmap_and_strings(tmp_path: Path, string_pipeline: bytes, capsys: Any) -> None:
    model = tmp_path / "pipe.onnx"
    model.write_bytes(string_pipeline)
    frame = table(50_000, seed=7)
    source = tmp_path / "in.parquet"
    pq.write_table(__import__("pyarrow").Table.from_pandas(frame), source, row_group_size=9000)
    out = tmp_path / "out.parquet"
    argv = [str(model), "--input", str(source), "--output", str(out), "--scheduler", "threads", "--batch-rows", "7000"]
    assert main(["batch", *argv]) == 0
    assert "wrote 50000 rows" in capsys.readouterr().out
    assert sorted(p.name for p in out.iterdir()) == [f"part-{i:06d}.parquet" for i in range(8)]
    got = pd.read_parquet(out)
    label, probs = onnxcore.Session(string_pipeline).run(None, whole_frame_feeds(frame))
    np.testing.assert_array_equal(got["output_label"].to_numpy(), label)
    for k in range(3):
        want = np.array([m[k] for m in probs], dtype=np.float32)
        np.testing.assert_allclose(got[f"output_probability_{k}"].to_numpy(), want, rtol=RTOL, atol=ATOL)
    assert _leftovers(tmp_path) == []
    # An existing output is refused, and left as it was.
    assert main(["batch", *argv]) == 2
    assert "exists" in capsys.readouterr().err
    assert len(list(out.iterdir())) == 8


def test_directory_of_npy_to_npy(tmp_path: Path, matrix_pipeline: bytes, capsys: Any) -> None:
    model = tmp_path / "pipe.onnx"
    model.write_bytes(matrix_pipeline)
    x = table(30_000, seed=8)[["a", "b"]].to_numpy(np.float32)
    source = tmp_path / "chunks"
    source.mkdir()
    for i, start in enumerate(range(0, len(x), 12_000)):
        np.save(source / f"x{i}.npy", x[start : start + 12_000])
    out = tmp_path / "probs.npy"
    argv = ["batch", str(model), "--input", str(source), "--output", str(out), "--scheduler", "threads"]
    assert main([*argv, "--batch-rows", "5000"]) == 2  # two outputs do not fit one .npy
    assert "--output-name" in capsys.readouterr().err
    assert main([*argv, "--batch-rows", "5000", "--output-name", "probabilities"]) == 0
    _, probs = onnxcore.Session(matrix_pipeline).run(None, {"X": x})
    np.testing.assert_allclose(np.load(out), probs, rtol=RTOL, atol=ATOL)
    assert _leftovers(tmp_path) == []


def test_npy_images_on_a_cluster_of_two_workers(
    tmp_path: Path, squeezenet: tuple[bytes, Path, str], client: Any
) -> None:
    """``--scheduler ADDRESS``: the tasks go to a running cluster (the tests' LocalCluster, 2 processes)."""
    data, path, name = squeezenet
    x = np.random.default_rng(9).standard_normal((6, 3, 224, 224)).astype(np.float32)
    np.save(tmp_path / "images.npy", x)
    out = tmp_path / "scores.npy"
    cmd = [sys.executable, "-m", "onnxcore", "batch", str(path), "--input", str(tmp_path / "images.npy")]
    cmd += ["--output", str(out), "--scheduler", client.scheduler.address, "--batch-rows", "2"]
    done = subprocess.run(cmd, capture_output=True, text=True, env=_env(), timeout=300)
    assert done.returncode == 0, done.stderr
    assert "wrote 6 rows" in done.stdout and "Traceback" not in done.stderr
    (want,) = onnxcore.Session(data).run(None, {name: x})
    np.testing.assert_allclose(np.load(out), want, rtol=RTOL, atol=ATOL)


def _default_sigint() -> None:
    # A test run started as a shell's background job passes SIGINT on ignored, and Python then installs no
    # KeyboardInterrupt handler in the child: give it the default, as at a terminal.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize(("sig", "scheduler"), [(signal.SIGINT, None), (signal.SIGTERM, "threads")])
def test_interrupted_batch_leaves_no_output(
    tmp_path: Path, squeezenet: tuple[bytes, Path, str], sig: int, scheduler: str | None
) -> None:
    _, path, _ = squeezenet
    # Long enough that the batch is still scoring when the signal comes (a few seconds per hundred rows once the
    # kernels got faster: 400 rows could finish between the test's look and its signal); zeros left unwritten, so
    # the file is sparse and costs no time to make.
    np.lib.format.open_memmap(tmp_path / "images.npy", mode="w+", dtype=np.float32, shape=(4000, 3, 224, 224)).flush()
    out = tmp_path / "scores.parquet"
    cmd = [sys.executable, "-m", "onnxcore", "batch", str(path), "--input", str(tmp_path / "images.npy")]
    cmd += ["--output", str(out), "--batch-rows", "1"]
    cmd += ["--scheduler", scheduler] if scheduler else ["--workers", "1"]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(), preexec_fn=_default_sigint
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:  # some parts written, most to come
            partial = [p for p in tmp_path.iterdir() if p.name.endswith(".partial")]
            if partial and len(list(partial[0].glob("part-*.parquet"))) >= 2:
                break
            time.sleep(0.05)
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    # The command's one line and nothing of distributed's (its scheduler logs the closed client with a traceback
    # after the cluster closes; its HTTP server warns when another cluster holds port 8787).
    assert err.split() == ["onnxcore", "batch:", "interrupted"], err
    assert not out.exists()
    assert _leftovers(tmp_path) == []


def test_distributed_logs_nothing_while_the_cluster_lives(capsys: pytest.CaptureFixture[str]) -> None:
    # An interrupted run's scheduler logs the client's connection, closed mid-send, at CRITICAL with a traceback
    # (seen once in CI): nothing of distributed's reaches stderr until the cluster has closed, then every level is
    # as it was.
    scheduler = logging.getLogger("distributed.scheduler")
    handler = logging.StreamHandler(sys.stderr)
    scheduler.addHandler(handler)
    before = scheduler.level, handler.level
    try:
        with _quiet_distributed():
            scheduler.critical("Closed comm <BatchedSend: closed> while trying to write")
        assert capsys.readouterr().err == ""
        assert (scheduler.level, handler.level) == before
        scheduler.critical("after the cluster")
        assert "after the cluster" in capsys.readouterr().err
    finally:
        scheduler.removeHandler(handler)
