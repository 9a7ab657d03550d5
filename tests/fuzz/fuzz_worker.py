"""Children that run one fuzz input each: a long-lived worker under a memory limit, respawned when it dies.

An *input* is a plain dict (picklable, and JSON-able once its octets are base64'd, which is how a
regression case is saved):

``target``
    ``decode`` (``onnxcore.load`` of octets), ``check`` (``onnxcore.check`` of octets), ``session``
    (``Session`` then ``run``) or ``external`` (a model file with data files laid out in a fresh
    directory, then ``load``, ``check`` and ``Session`` of its path); or one of the surfaces of
    :mod:`fuzz_surfaces` (``text``, ``convert``, ``compose``, ``build``, ``ort``, ``batch``, ``report``).
``model``
    The model's octets.
``feeds``
    For ``session``: name -> feed spec (see :func:`make_feed`).
``unchecked``
    For ``session``: build the session with ``check=False``.
``preset``
    For ``session``: ``"untrusted"`` builds the session with ``Limits.untrusted()`` and runs it without a
    ``timeout`` of its own (the preset's default deadline must stop it).
``files``
    For ``external``: relative path -> spec (``{"data": bytes}``, ``{"sparse": size}``,
    ``{"symlink": target}``, ``{"dir": True}``, ``{"fifo": True}``).

The outcome is ``(verdict, detail)``: ``accepted``, ``refused`` (an onnxcore error, or the documented
built-in it also is) or ``failure`` with a kind: ``foreign`` (an exception not ours escaped), ``internal``
(an ``E-INTERNAL`` finding), ``memory`` (a ``MemoryError`` anywhere in the chain: the address-space
limit was hit), ``rss`` (peak RSS grew past the bound), ``hang`` (past the alarm) or ``crash`` (the
child died).
"""

from __future__ import annotations

import base64
import contextlib
import multiprocessing
import multiprocessing.connection
import os
import pickle
import resource
import shutil
import signal
import tempfile
import time
import traceback
import warnings
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import fuzz_surfaces as fs
import numpy as np

GIB = 1 << 30
ADDRESS_LIMIT = 4 * GIB
RSS_GROWTH_LIMIT = 1 * GIB
# A run is given this deadline (Session.run(timeout=)): past it the evaluator must stop by itself with
# RunTimeoutError; a run that is still going at the alarm is a hang.
RUN_TIMEOUT = 4.0
ALARM = 10.0
# The alarm counts the worker's CPU time, not the clock: on a shared machine (the campaign runs niced beside
# other work) a starved worker can take minutes of wall time for an input that costs two seconds of CPU. An
# input that blocks without computing (a FIFO, a lock) is caught by the clock at WALL_FACTOR times the alarm.
WALL_FACTOR = 6.0
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


# -- feeds --------------------------------------------------------------------------------------


def make_feed(spec: Any) -> Any:
    """Build one feed from its spec.

    ``["value", b64 pickle]``: a value as pickled (a real input of a test case);
    ``["array", dtype, shape, fill, seed]``: fill in ``zeros``, ``random``, ``nan``, ``inf``, ``-inf``, ``big``;
    ``["broadcast", inner spec, shape]``: ``np.broadcast_to`` of the inner value (a view, no copy).
    """
    kind = spec[0]
    if kind == "value":
        return pickle.loads(base64.b64decode(spec[1]))
    if kind == "array":
        _, dtype, shape, fill, seed = spec
        dt = np.dtype(dtype)
        shape = tuple(shape)
        n = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if n > 1 << 22:
            # Keep the feed itself small: a large one is only ever made as a broadcast view.
            shape, n = (n % 7,), n % 7
        rng = np.random.default_rng(seed)
        if dt.kind in "fc":
            special = {"nan": np.nan, "inf": np.inf, "-inf": -np.inf, "big": 3e38, "zeros": 0.0}
            if fill in special:
                return np.full(shape, special[fill], dtype=dt)
            return (rng.standard_normal(n) * 4).astype(dt).reshape(shape)
        if dt.kind in "iu":
            if fill == "big":
                return np.full(shape, np.iinfo(dt).max, dtype=dt)
            if fill == "zeros":
                return np.zeros(shape, dtype=dt)
            info = np.iinfo(dt)
            lo, hi = max(int(info.min), -1000), min(int(info.max), 1000)
            return rng.integers(lo, hi, n, endpoint=True).astype(dt).reshape(shape)
        if dt.kind == "b":
            return (rng.random(n) < 0.5).reshape(shape)
        if dt.kind in "OUS":
            return np.array(["", "a", "\u00e9\u00e9", "x" * 40, "0"] * (n // 5 + 1), dtype=object)[:n].reshape(shape)
        return np.zeros(shape, dtype=dt)
    if kind == "broadcast":
        inner = np.asarray(make_feed(spec[1]))
        base = inner.reshape(-1)[:1] if inner.size else np.zeros(1, dtype=inner.dtype)
        shape = [int(d) for d in spec[2]]
        while shape and int(np.prod(shape, dtype=object)) * inner.dtype.itemsize > 1 << 56:  # numpy's own bound
            shape.pop()
        return np.broadcast_to(base.reshape((1,) * len(shape)), tuple(shape))
    raise ValueError(f"unknown feed spec {kind!r}")


# -- one input ----------------------------------------------------------------------------------


def _chain(e: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    cur: BaseException | None = e
    while cur is not None and cur not in out and len(out) < 20:
        out.append(cur)
        cur = cur.__cause__ or cur.__context__
    return out


def classify(e: BaseException) -> tuple[str, str]:
    """The verdict for an exception that escaped our API."""
    import onnxcore

    chain = _chain(e)
    where = "".join(traceback.format_exception_only(type(e), e)).strip()[:400]
    if any(isinstance(x, MemoryError) for x in chain):
        return "failure", f"memory: {where}"
    if isinstance(e, onnxcore.OnnxCoreError):
        return "refused", type(e).__name__
    tb = traceback.extract_tb(e.__traceback__)
    site = f" at {tb[-1].filename.rsplit('/', 2)[-1]}:{tb[-1].lineno}" if tb else ""
    return "failure", f"foreign: {where}{site}"


def _materialise(root: Path, files: dict[str, Any]) -> None:
    for rel, spec in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if "data" in spec:
            p.write_bytes(spec["data"])
        elif "sparse" in spec:
            with open(p, "wb") as fh:
                fh.truncate(spec["sparse"])
        elif "symlink" in spec:
            with contextlib.suppress(FileExistsError):
                os.symlink(spec["symlink"], p)
        elif "dir" in spec:
            p.mkdir(exist_ok=True)
        elif "fifo" in spec:
            with contextlib.suppress(FileExistsError):
                os.mkfifo(p)


def _check_report(report: Any) -> tuple[str, str]:
    codes = [f.code for f in report.findings]
    if "E-INTERNAL" in codes:
        msg = next(f.message for f in report.findings if f.code == "E-INTERNAL")
        return "failure", f"internal: {msg[:300]}"
    return ("refused", "report has errors") if report.errors else ("accepted", "")


def execute(inp: dict[str, Any]) -> tuple[str, str]:
    """Run one input in this process; never raises."""
    import onnxcore
    from onnxcore.runtime import Session

    target = inp["target"]
    try:
        feeds = {k: make_feed(v) for k, v in inp.get("feeds", {}).items()}
    except Exception as e:  # numpy cannot make the feed (a view too large even for its iterator): not an input
        return "skipped", f"feed not made: {type(e).__name__}: {e}"[:200]
    try:
        if target == "decode":
            onnxcore.load(inp["model"], external_data=False)
            return "accepted", ""
        if target == "check":
            return _check_report(onnxcore.check(inp["model"]))
        if target == "session":
            if inp.get("preset") == "untrusted":
                # A model one does not trust: Limits.untrusted(), whose own deadline the run must apply.
                sess = Session(inp["model"], check=not inp.get("unchecked", False), limits=onnxcore.Limits.untrusted())
                sess.run(None, feeds)
                return "accepted", ""
            sess = Session(inp["model"], check=not inp.get("unchecked", False))
            sess.run(None, feeds, timeout=RUN_TIMEOUT)
            return "accepted", ""
        if target == "external":
            root = Path(tempfile.mkdtemp(prefix="fuzz-ext-"))
            try:
                (root / "m").mkdir()
                _materialise(root, inp.get("files", {}))
                path = root / "m" / "model.onnx"
                path.write_bytes(inp["model"])
                verdict = _check_report(onnxcore.check(path))
                if verdict[0] == "failure":
                    return verdict
                onnxcore.load(path)
                sess = Session(path)
                sess.run(None, feeds, timeout=RUN_TIMEOUT)
                return "accepted", ""
            finally:
                shutil.rmtree(root, ignore_errors=True)
        if target in fs.SURFACES:
            if target == "ort":
                return fs.run_ort(inp, feeds)
            return getattr(fs, f"run_{target}")(inp)  # type: ignore[no-any-return]
        if target == "_selftest":  # the harness's own test: each way an input can fail
            action = inp["action"]
            if action == "hang":
                time.sleep(3600)
            elif action == "spin":
                while True:
                    pass
            elif action == "crash":
                os._exit(3)
            elif action == "alloc":
                np.ones(ADDRESS_LIMIT // 8 + 1)
            elif action == "rss":
                block = np.ones((RSS_GROWTH_LIMIT + (64 << 20)) // 8)
                del block
            elif action == "foreign":
                raise KeyError("x")
            elif action == "ours":
                raise onnxcore.EvaluationError("refused")
            return "accepted", ""
        raise ValueError(f"unknown target {target!r}")
    except RecursionError as e:
        return "failure", f"foreign: RecursionError {str(e)[:200]}"
    except Exception as e:
        return classify(e)


# -- the child ----------------------------------------------------------------------------------


def _cpu_seconds(pid: int) -> float | None:
    """CPU time (user + system) process ``pid`` has used, from /proc; None where that cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / _TICK


def _peak_rss() -> int:
    """This process's peak RSS in octets: Linux's VmHWM (which :func:`_reset_peak` can lower), else ru_maxrss
    (which a process started by fork and exec inherits from its parent: gigabytes when the test suite has loaded
    torch, hiding an input's growth)."""
    with contextlib.suppress(OSError, ValueError):
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _reset_peak() -> None:
    # Linux: writing 5 to clear_refs resets the peak to the current RSS, so growth is measured per input.
    with contextlib.suppress(OSError), open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
        fh.write("5")


def _child(conn: multiprocessing.connection.Connection, other: multiprocessing.connection.Connection) -> None:
    # The parent's end was passed along: closed, so that the child sees EOF (and exits) when the parent dies.
    other.close()
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_LIMIT, ADDRESS_LIMIT))
    with contextlib.suppress(OSError):
        os.nice(5)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    warnings.simplefilter("ignore")
    import onnxcore.runtime  # noqa: F401  (imported once, before the first input is timed)

    conn.send("ready")
    while True:
        try:
            inp = conn.recv()
        except EOFError:
            return
        if inp is None:
            return
        _reset_peak()
        before = _peak_rss()
        verdict = execute(inp)
        grown = _peak_rss() - before
        if verdict[0] != "failure" and grown > RSS_GROWTH_LIMIT:
            verdict = ("failure", f"rss: peak RSS grew by {grown >> 20} MiB")
        conn.send((verdict, grown))


class Worker:
    """One long-lived child; :meth:`run` sends it an input and waits at most the alarm."""

    __slots__ = ("conn", "proc")

    def __init__(self) -> None:
        # A fresh interpreter, not a fork: a forked child would carry whatever the parent has loaded (in the test
        # suite, torch and the exporters: gigabytes of address space) into the address-space limit it works under.
        ctx = multiprocessing.get_context("spawn")
        parent, child = ctx.Pipe()
        self.proc = ctx.Process(target=_child, args=(child, parent), daemon=True)
        self.proc.start()
        child.close()
        self.conn = parent
        # The alarm counts from here: starting the child (importing onnxcore) is not the input's time.
        if not parent.poll(300) or parent.recv() != "ready":
            raise RuntimeError("the fuzz worker did not start")

    def stop(self) -> None:
        with contextlib.suppress(OSError, BrokenPipeError):
            self.conn.send(None)
        self.proc.join(2)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()
        self.conn.close()

    def kill(self) -> None:
        self.proc.kill()
        self.proc.join()
        self.conn.close()


class Pool:
    """A single worker (the machine is shared), respawned after a hang, a crash or a large peak."""

    def __init__(self, *, alarm: float = ALARM) -> None:
        self.alarm = alarm
        self.worker: Worker | None = None

    def run(self, inp: dict[str, Any]) -> tuple[str, str]:
        if self.worker is None:
            self.worker = Worker()
        w = self.worker
        try:
            w.conn.send(inp)
        except (BrokenPipeError, OSError):
            self._drop()
            return "failure", "crash: the worker died before the input was sent"
        if not self._answered(w):
            self._drop()
            return "failure", f"hang: no answer within {self.alarm:g} s of CPU time ({self.alarm * WALL_FACTOR:g} s)"
        try:
            verdict, grown = w.conn.recv()
        except (EOFError, OSError):
            code = w.proc.exitcode
            self._drop()
            return "failure", f"crash: the worker died (exit code {code})"
        if verdict[0] == "failure" or grown > 256 << 20:
            # A peak is only measured as growth: start a fresh child so the next input is measured alone.
            self._drop(gently=True)
        return verdict

    def _answered(self, w: Worker) -> bool:
        # Wait for the answer until the worker has used ``alarm`` seconds of CPU on this input, or the clock
        # has passed WALL_FACTOR times that; where /proc cannot be read, the clock at ``alarm`` decides.
        start = _cpu_seconds(w.proc.pid)
        if start is None:
            return w.conn.poll(self.alarm)
        deadline = time.monotonic() + self.alarm * WALL_FACTOR
        while not w.conn.poll(min(1.0, self.alarm)):
            used = _cpu_seconds(w.proc.pid)
            if used is None or used - start >= self.alarm or time.monotonic() >= deadline:
                return w.conn.poll(0)
        return True

    def _drop(self, *, gently: bool = False) -> None:
        if self.worker is not None:
            if gently:
                self.worker.stop()
            else:
                self.worker.kill()
            self.worker = None

    def close(self) -> None:
        self._drop(gently=True)
