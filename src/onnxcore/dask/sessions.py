"""One session per worker process: the model's reference that travels with the tasks, and the cache it keys.

A task never carries the model itself. It carries a :class:`ModelRef` (a few hundred octets: the model's
canonical hash, and either a path every worker can read or nothing) and, for a model held in memory under a
local scheduler, the path of a file written once. On a distributed cluster the octets reach each worker once,
in a worker plugin (:mod:`onnxcore.dask.plugin`) that installs them here (:func:`install`).
In each worker process the first task builds the :class:`~onnxcore.Session` and every later task, on any
thread, reuses it: :func:`session_for` keys the process-wide cache by the canonical hash (docs/canonical.md),
so equal models share one session whatever file or octets they came from.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import tempfile
import threading
from pathlib import Path
from typing import Any

import onnxcore
from onnxcore.errors import OnnxCoreError
from onnxcore.io import canonical_digest
from onnxcore.proto import ModelProto

__all__ = [
    "ModelRef",
    "built_sessions",
    "clear_sessions",
    "install",
    "model_hash",
    "prepare_model",
    "session_for",
    "spill",
]


class ModelRef:
    """What a task knows of its model: the canonical hash, a path (or None), and the session options.

    Attributes:
        key: SHA-256 (hex) of the canonical encoding, external contents inlined.
        path: A model file every worker can read (its weights stay memory-mapped), or None when the
            octets come with the task's payload argument.
        check: Validate the model when the session is built (``Session(check=...)``).
        allow_outside: Let the model's external data lie outside its directory (Clause 15.3).
    """

    __slots__ = ("allow_outside", "check", "key", "path")

    def __init__(self, key: str, path: str | None, *, check: bool = True, allow_outside: bool = False) -> None:
        self.key = key
        self.path = path
        self.check = check
        self.allow_outside = allow_outside

    def __getstate__(self) -> tuple[str, str | None, bool, bool]:
        return (self.key, self.path, self.check, self.allow_outside)

    def __setstate__(self, state: tuple[str, str | None, bool, bool]) -> None:
        self.key, self.path, self.check, self.allow_outside = state

    def __repr__(self) -> str:
        return f"ModelRef(key={self.key[:12]}..., path={self.path!r})"


def model_hash(model: ModelProto) -> str:
    """The key of a model's sessions: :func:`onnxcore.io.canonical_digest` (what ``onnxcore hash`` prints)."""
    return canonical_digest(model)


def prepare_model(
    model: Any, *, check: bool = True, allow_outside: bool = False
) -> tuple[ModelRef, bytes | None, ModelProto]:
    """The reference, the octets to ship (None for a path) and the loaded model, for the client side.

    Args:
        model: A path to a model file, the model's octets, an onnxcore ``ModelProto`` or any object with
            ``SerializeToString()`` (such as ``onnx.ModelProto``).
        check: Validate the model when each worker builds its session.
        allow_outside: For a path: let external data lie outside the model's directory.

    Raises:
        TypeError: ``model`` is none of these.
    """
    if isinstance(model, str | os.PathLike):
        path = os.path.abspath(os.fspath(model))
        loaded = onnxcore.load(path, allow_outside=allow_outside)
        return ModelRef(model_hash(loaded), path, check=check, allow_outside=allow_outside), None, loaded
    if isinstance(model, bytes | bytearray | memoryview):
        data = bytes(model)
        loaded = onnxcore.load(data)
    elif isinstance(model, ModelProto):
        loaded = model
        data = onnxcore.encode(onnxcore.internalize(model))
    elif callable(getattr(model, "SerializeToString", None)):
        data = bytes(model.SerializeToString())
        loaded = onnxcore.load(data)
    else:
        raise TypeError(f"expected a model path, octets or a ModelProto, got {type(model).__name__}")
    return ModelRef(model_hash(loaded), None, check=check), data, loaded


# Octets installed in this process by a worker plugin (onnxcore.dask.plugin), by model hash.
_INSTALLED: dict[str, bytes] = {}


def install(key: str, data: bytes) -> None:
    """Keep a model's octets in this process, for :func:`session_for` to build its session from."""
    _INSTALLED[key] = data


# The process-wide cache: (hash, check) -> Session. A lock per key, so two threads of one worker build it once.
_SESSIONS: dict[tuple[str, bool], onnxcore.Session] = {}
_BUILT: dict[str, int] = {}
_LOCK = threading.Lock()
_KEY_LOCKS: dict[tuple[str, bool], threading.Lock] = {}


def session_for(ref: ModelRef, payload: bytes | str | None = None) -> onnxcore.Session:
    """The session of ``ref``'s model in this process, built on first use.

    Args:
        ref: The model's reference.
        payload: The model when ``ref.path`` is None: its octets, or the path of a file holding them; None:
            the octets a worker plugin installed (:func:`install`).

    Raises:
        OnnxCoreError: no path and no payload, or the model cannot be loaded here.
    """
    key = (ref.key, ref.check)
    session = _SESSIONS.get(key)
    if session is not None:
        return session
    with _LOCK:
        lock = _KEY_LOCKS.setdefault(key, threading.Lock())
    with lock:
        session = _SESSIONS.get(key)
        if session is None:
            source: Any = ref.path if ref.path is not None else payload
            if source is None:
                source = _INSTALLED.get(ref.key)
            if source is None:
                raise OnnxCoreError(f"model {ref.key[:12]}: no path and no octets reached this worker")
            if isinstance(source, str) and ref.allow_outside:
                source = onnxcore.load(source, allow_outside=True)
            session = onnxcore.Session(source, check=ref.check)
            _SESSIONS[key] = session
            _BUILT[ref.key] = _BUILT.get(ref.key, 0) + 1
    return session


def built_sessions() -> dict[str, int]:
    """How many sessions this process has built, per model hash (one each, unless cleared in between)."""
    return dict(_BUILT)


def clear_sessions() -> None:
    """Drop this process's cached sessions (their memory-mapped models with them)."""
    with _LOCK:
        _SESSIONS.clear()
        _KEY_LOCKS.clear()


_SPILLED: list[Path] = []


def spill(ref: ModelRef, data: bytes) -> str:
    """Write the model's octets once to a file named by its hash, for the local schedulers' workers.

    The processes scheduler pickles each task's arguments into the pool: a path there costs nothing, the
    octets would travel with every task. The file is private to this user (mode 0700 directory), written
    through a temporary and renamed, and removed when this process exits.
    """
    directory = Path(tempfile.gettempdir()) / f"onnxcore-dask-{os.getuid() if hasattr(os, 'getuid') else 0}"
    directory.mkdir(mode=0o700, exist_ok=True)
    target = directory / f"{ref.key}.onnx"
    if not target.exists():
        fd, tmp = tempfile.mkstemp(prefix=f".{ref.key[:16]}.", suffix=".tmp", dir=directory)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        _SPILLED.append(target)
    return str(target)


@atexit.register
def _remove_spilled() -> None:
    for path in _SPILLED:
        with contextlib.suppress(OSError):
            path.unlink()
