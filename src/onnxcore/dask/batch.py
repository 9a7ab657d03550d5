"""``onnxcore batch``: score a Parquet table or ``.npy`` arrays into one output that appears only when complete.

The input is cut into pieces of at most ``batch_rows`` rows, planned on the client from the files' metadata
(Parquet row-group counts, ``.npy`` headers), so no data passes through the client. One task per piece reads
its rows (memory-mapped for ``.npy``), runs the worker's session (:mod:`onnxcore.dask.sessions`) and writes
its part file into a hidden temporary directory beside the output, itself through a temporary name and a
rename: a task that Dask reruns after a worker died rewrites its part whole. Once every part is there, a
Parquet output is that directory renamed into place (a dataset of ``part-NNNNNN.parquet`` files, in input
order); a ``.npy`` output is the parts joined into one file, renamed into place. Interrupted (SIGINT or
SIGTERM, see the command), the temporary directory is removed and nothing appears at the output path.
The output must be on a file system every worker can write (always so for local workers).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dask
import dask.callbacks
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from onnxcore.dask.frames import ColumnPlan, feeds_from_frame, input_dtype, outputs_to_frame, plan_columns
from onnxcore.dask.meta import check_fixed_axes, fixed_batch, run_rows
from onnxcore.dask.sessions import ModelRef, prepare_model, session_for
from onnxcore.errors import InputError, OnnxCoreError
from onnxcore.runtime import Session

__all__ = ["Piece", "BatchResult", "plan_pieces", "score"]

LOCAL_SCHEDULERS = ("threads", "processes", "synchronous")


@dataclass(frozen=True, slots=True)
class Piece:
    """Rows ``[start, stop)`` of one input file (``kind``: ``"parquet"`` or ``"npy"``)."""

    kind: str
    path: str
    start: int
    stop: int


@dataclass(frozen=True, slots=True)
class BatchResult:
    """What a batch run wrote."""

    output: str
    rows: int
    parts: int
    seconds: float


def _files(path: Path) -> tuple[str, list[Path]]:
    if not path.exists():
        raise InputError(f"--input {path}: no such file or directory")
    if path.is_dir():
        parquet = sorted(p for p in path.iterdir() if p.suffix == ".parquet" and not p.name.startswith("."))
        npy = sorted(p for p in path.iterdir() if p.suffix == ".npy" and not p.name.startswith("."))
        if parquet and npy:
            raise InputError(f"--input {path}: holds both .parquet and .npy files; keep one kind")
        if not parquet and not npy:
            raise InputError(f"--input {path}: no .parquet or .npy files in this directory")
        return ("parquet", parquet) if parquet else ("npy", npy)
    if path.suffix == ".parquet":
        return "parquet", [path]
    if path.suffix == ".npy":
        return "npy", [path]
    raise InputError(f"--input {path}: expected a .parquet or .npy file, or a directory of them")


def _rows(kind: str, path: Path) -> int:
    if kind == "parquet":
        return int(pq.ParquetFile(path).metadata.num_rows)
    arr = np.load(path, mmap_mode="r", allow_pickle=False)
    if arr.ndim == 0:
        raise InputError(f"--input {path}: a scalar array has no rows")
    return int(arr.shape[0])


def plan_pieces(source: str | os.PathLike[str], batch_rows: int) -> list[Piece]:
    """Cut the input into pieces of at most ``batch_rows`` rows, file by file, in order.

    Raises:
        InputError: not a .parquet or .npy file, nor a directory of one kind of them.
    """
    kind, files = _files(Path(source))
    pieces: list[Piece] = []
    for f in files:
        n = _rows(kind, f)
        for start in range(0, n, batch_rows):
            pieces.append(Piece(kind, str(f.resolve()), start, min(n, start + batch_rows)))
    return pieces


def _read(piece: Piece) -> Any:
    if piece.kind == "npy":
        return np.asarray(np.load(piece.path, mmap_mode="r", allow_pickle=False)[piece.start : piece.stop])
    pf = pq.ParquetFile(piece.path)
    groups, first, seen = [], None, 0
    for g in range(pf.metadata.num_row_groups):
        n = pf.metadata.row_group(g).num_rows
        if seen + n > piece.start and seen < piece.stop:
            groups.append(g)
            first = seen if first is None else first
        seen += n
    table = pf.read_row_groups(groups)
    offset = piece.start - (first or 0)
    return table.slice(offset, piece.stop - piece.start).to_pandas().reset_index(drop=True)


def _write_part(directory: str, name: str, write: Callable[[str], None]) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory)
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, os.path.join(directory, name))
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _save_npy(path: str, value: np.ndarray) -> None:
    with open(path, "wb") as fh:  # a file object: np.save would add ".npy" to the temporary's name
        np.save(fh, value, allow_pickle=False)


def _score_piece(
    ref: ModelRef,
    payload: Any,
    piece: Piece,
    index: int,
    plan: ColumnPlan | None,
    names: list[str],
    directory: str,
    fmt: str,
    batch: int | None = None,
) -> int:
    session = session_for(ref, payload)
    try:
        data = _read(piece)
    except (pa.ArrowException, UnicodeError) as e:  # a column Arrow cannot give as values (a decimal past float)
        raise InputError(f"--input {piece.path}: rows {piece.start}-{piece.stop} cannot be read: {e}") from None
    if plan is not None:
        feeds = feeds_from_frame(session, data, plan)
    else:
        (name,) = [d.name for d in session.inputs if not d.has_default]
        feeds = {name: data}
    outputs = run_rows(session, names, feeds, batch)
    rows = piece.stop - piece.start
    part = f"part-{index:06d}.{fmt}"
    if fmt == "npy":
        value = outputs[0]
        if not isinstance(value, np.ndarray) or value.dtype == object:
            raise InputError(f"output {names[0]!r}: a .npy output holds numbers; this output is not (write .parquet)")
        _write_part(directory, part, lambda p: _save_npy(p, value))
    else:
        try:
            frame = outputs_to_frame(names, outputs, pd.RangeIndex(rows))
            table = pa.Table.from_pandas(frame, preserve_index=False)
        except (pa.ArrowException, UnicodeError) as e:  # a string output that is not UTF-8 text, say
            raise InputError(f"outputs {names}: cannot be written as Parquet columns: {e}") from None
        _write_part(directory, part, lambda p: pq.write_table(table, p))
    return rows


def _join_npy(directory: Path, parts: int, target: Path) -> None:
    """The parts as one ``.npy`` in ``directory``, then renamed to ``target`` (same file system)."""
    arrays = [np.load(directory / f"part-{i:06d}.npy", mmap_mode="r", allow_pickle=False) for i in range(parts)]
    total = sum(a.shape[0] for a in arrays)
    joined = directory / "joined.npy.tmp"
    out = np.lib.format.open_memmap(joined, mode="w+", dtype=arrays[0].dtype, shape=(total, *arrays[0].shape[1:]))
    at = 0
    for a in arrays:
        out[at : at + a.shape[0]] = a
        at += a.shape[0]
    out.flush()
    del out
    with open(joined, "rb+") as fh:
        os.fsync(fh.fileno())
    os.replace(joined, target)


def _check_npy_input(session: Session, pieces: Sequence[Piece]) -> None:
    needed = [d.name for d in session.inputs if not d.has_default]
    if len(needed) != 1:
        raise InputError(f".npy input feeds one model input; the model has {len(needed)} to feed: {needed}")
    want = input_dtype(session, needed[0])
    for path in dict.fromkeys(p.path for p in pieces):
        arr = np.load(path, mmap_mode="r", allow_pickle=False)
        if want is not None and want.kind != "O" and arr.dtype != want:
            raise InputError(f"--input {path}: dtype {arr.dtype} where the model's input {needed[0]!r} declares {want}")
        try:
            check_fixed_axes(session, needed[0], arr.shape)
        except InputError as e:
            raise InputError(f"--input {path}: {e}") from None


def _batch_of(session: Session, plan: ColumnPlan | None, source: str, batch_rows: int) -> tuple[int | None, int]:
    """The model's fixed batch (None when its inputs leave axis 0 free) and the rows per task, a multiple of it.

    Raises:
        InputError: a file whose rows are not a whole number of the fixed batch, naming the input and axis 0.
    """
    fed = list(plan) if plan is not None else [d.name for d in session.inputs if not d.has_default]
    batch = fixed_batch(session, fed)
    if batch is None:
        return None, batch_rows
    kind, files = _files(Path(source))
    for f in files:
        n = _rows(kind, f)
        if n % batch:
            name = next(x for x in fed if fixed_batch(session, [x]) is not None)
            raise InputError(
                f"--input {f}: {n} rows, and the model's input {name!r} declares a fixed batch of {batch} rows on "
                f"axis 0: not a whole number of batches"
            )
    return batch, max(batch, batch_rows - batch_rows % batch)


@contextlib.contextmanager
def _quiet_distributed() -> Iterator[None]:
    """Keep ``distributed``'s own logs and warnings off stderr from the cluster's start until it has closed.

    The command's failure is its one line (its error, raised here). ``LocalCluster(silence_logs=...)`` quiets
    the handlers only until ``close()``, and an interrupted run's scheduler still logs the client's closed
    connection with a traceback after that; its HTTP server (started even with the dashboard off) warns when
    another cluster holds port 8787 and then takes another port. Both are noise to a user of this command.
    """
    # distributed's configuration gives some child loggers their own level (distributed.client: warning) and
    # its stream handler its own: each is raised for the run and put back after.
    names = [n for n in logging.root.manager.loggerDict if n.split(".")[0] in ("distributed", "tornado")]
    loggers = [logging.getLogger(n) for n in ("distributed", "tornado", *names)]
    items: dict[int, logging.Logger | logging.Handler] = {id(lg): lg for lg in loggers}
    items.update({id(h): h for lg in loggers for h in lg.handlers})
    saved = [(item, item.level) for item in items.values()]
    for item, _ in saved:
        # Above CRITICAL: the scheduler logs a client's connection closed mid-send at CRITICAL, with a traceback.
        item.setLevel(logging.CRITICAL + 1)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r"Port \d+ is already in use", category=UserWarning)
            yield
    finally:
        for item, level in saved:
            item.setLevel(level)


def score(
    model: str,
    source: str,
    output: str,
    *,
    scheduler: str | None = None,
    workers: int | None = None,
    batch_rows: int = 65536,
    output_names: Sequence[str] | None = None,
    check: bool = True,
    progress: Callable[[int, int, int], None] | None = None,
) -> BatchResult:
    """Score ``source`` with ``model`` into ``output`` (module docstring).

    Args:
        model: Path of the model file (every worker reads it; weights memory-mapped).
        source: A ``.parquet`` or ``.npy`` file, or a directory of either.
        output: ``*.parquet`` (a dataset directory of part files) or ``*.npy`` (one output, one file).
        scheduler: A ``dask.distributed`` scheduler address, or ``threads``/``processes``/``synchronous`` for
            a local scheduler; None starts a local cluster of ``workers`` processes, one thread each.
        workers: Worker processes of that local cluster (default: the CPU count).
        batch_rows: Rows per task at most.
        output_names: The outputs to write (default all; a ``.npy`` output takes exactly one).
        check: Validate the model first.
        progress: Called as ``progress(parts_done, parts, rows_done)`` as parts complete.

    Raises:
        InputError: inputs that do not fit the model or the output format.
        OnnxCoreError: the output exists, or a task failed.
    """
    started = time.perf_counter()
    target = Path(output)
    fmt = target.suffix[1:]
    if fmt not in ("parquet", "npy"):
        raise InputError(f"--output {output}: expected a .parquet or .npy name")
    if target.exists() or target.is_symlink():
        raise OnnxCoreError(f"--output {output}: exists; remove it or choose another name")
    ref, _data, loaded = prepare_model(model, check=check)
    local = Session(loaded, check=check)
    names = list(output_names) if output_names else [d.name for d in local.outputs]
    if fmt == "npy" and len(names) != 1:
        raise InputError(f"--output {output}: a .npy holds one output; choose one of {names} with --output-name")
    pieces = plan_pieces(source, batch_rows)
    plan: ColumnPlan | None = None
    if pieces and pieces[0].kind == "parquet":
        # pandas stores a frame's index as columns __index_level_N__: they go back to the index, never to inputs.
        names_in = [n for n in pq.ParquetFile(pieces[0].path).schema_arrow.names if not n.startswith("__index_level_")]
        plan = plan_columns(local, names_in)
    elif pieces:
        _check_npy_input(local, pieces)
    # A model fixing its batch on axis 0 runs that many rows at a time; every task gets whole batches.
    batch, per_task = _batch_of(local, plan, source, batch_rows) if pieces else (None, batch_rows)
    if per_task != batch_rows:
        pieces = plan_pieces(source, per_task)
    parent = target.parent if str(target.parent) else Path(".")
    directory = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".partial", dir=parent))
    client = cluster = None
    quiet = _quiet_distributed() if scheduler not in LOCAL_SCHEDULERS else contextlib.nullcontext()
    with quiet:
        try:
            if scheduler is not None and scheduler not in LOCAL_SCHEDULERS:
                from distributed import Client  # lazy: only a distributed run needs it

                client = Client(scheduler)
            elif scheduler is None:
                from distributed import Client, LocalCluster  # lazy: only a distributed run needs it

                # silence_logs: a task that fails is the command's one line on stderr (its error, raised here), not
                # also the worker's "Compute Failed" log with its traceback.
                cluster = LocalCluster(
                    n_workers=workers or os.cpu_count() or 1,
                    threads_per_worker=1,
                    dashboard_address=None,
                    silence_logs=logging.CRITICAL,
                )
                client = Client(cluster)
            payload = None  # a path: every worker reads the file itself
            args = (plan, names, str(directory), fmt, batch)
            rows = _run_tasks(ref, payload, pieces, args, client, scheduler, progress)
            if fmt == "npy":
                if pieces:
                    _join_npy(directory, len(pieces), target)
                else:
                    raise InputError(f"--input {source}: no rows to score")
            if client is not None:
                client.close()
                client = None
            if cluster is not None:
                cluster.close()
                cluster = None
            if fmt == "parquet":
                os.rename(directory, target)
            else:
                _remove(directory)
        finally:
            if client is not None:
                with contextlib.suppress(Exception):
                    client.close()
            if cluster is not None:
                with contextlib.suppress(Exception):
                    cluster.close()
            _remove(directory)
    return BatchResult(str(target), rows, len(pieces), time.perf_counter() - started)


def _remove(directory: Path) -> None:
    """Remove the parts directory; a task still finishing on a worker may add a file meanwhile: try again."""
    for _ in range(50):
        if not directory.exists():
            return
        shutil.rmtree(directory, ignore_errors=True)
        if directory.exists():
            time.sleep(0.1)


def _run_tasks(
    ref: ModelRef,
    payload: Any,
    pieces: Sequence[Piece],
    args: tuple[Any, ...],
    client: Any,
    scheduler: str | None,
    progress: Callable[[int, int, int], None] | None,
) -> int:
    total = len(pieces)
    if client is not None:
        from distributed import as_completed  # lazy: only a distributed run needs it

        futures = [
            # pure=False: fresh keys, never a task of an earlier (interrupted) run writing into its own directory
            client.submit(_score_piece, ref, payload, p, i, *args, pure=False)
            for i, p in enumerate(pieces)
        ]
        done = rows = 0
        try:
            for fut in as_completed(futures):
                rows += int(fut.result())
                done += 1
                if progress is not None:
                    progress(done, total, rows)
        except BaseException:
            client.cancel(futures)
            raise
        return rows
    tasks = [dask.delayed(_score_piece, pure=False)(ref, payload, p, i, *args) for i, p in enumerate(pieces)]
    counter = _Progress(total, progress)
    with counter:
        results = dask.compute(*tasks, scheduler=scheduler)
    return int(sum(results))


class _Progress(dask.callbacks.Callback):
    """Counts finished scoring tasks of a local scheduler run."""

    def __init__(self, total: int, report: Callable[[int, int, int], None] | None) -> None:
        super().__init__()
        self._total = total
        self._report = report
        self._done = 0
        self._rows = 0

    def _posttask(self, key: Any, result: Any, dsk: Any, state: Any, worker_id: Any) -> None:
        if isinstance(result, int | np.integer):
            self._done += 1
            self._rows += int(result)
            if self._report is not None:
                self._report(self._done, self._total, self._rows)
