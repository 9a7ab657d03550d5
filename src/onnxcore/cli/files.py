"""Files the command line reads and writes: input arrays, output directories, reports.

Every file is written atomically (a temporary file in the same directory, renamed into place once
complete), so a failure never leaves a partial file. Output file names come from graph output names,
which are untrusted text (``/tmp/x``, ``../up``, ``gpu_0/softmax_1``): each is encoded into a single
safe file name component and the mapping is written to ``names.json``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np

from onnxcore.errors import OnnxCoreError

__all__ = [
    "CliError",
    "NAMES_FILE",
    "check_writable",
    "require_readable",
    "encode_name",
    "load_npy",
    "sniff",
    "string_array",
    "to_json_value",
    "write_outputs",
    "write_text",
]

NAMES_FILE = "names.json"
# The characters an output name keeps as is in its file name; everything else is %XX-escaped (UTF-8).
_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.")
# File systems refuse components over 255 bytes; leave room for a suffix and the temporary's affixes.
_MAX_STEM = 180


class CliError(OnnxCoreError):
    """A failure the command line reports in one line, with its exit code (1 or 2)."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


def encode_name(name: str) -> str:
    """One file name component for a value name: ``%XX`` escapes, never a separator, ``.`` or ``..``.

    The encoding is reversible (``urllib.parse.unquote``) unless the name is very long, when it is cut
    and a digest of the whole name appended; ``names.json`` is the authoritative mapping either way.
    """
    out = "".join(c if c in _SAFE else "".join(f"%{b:02X}" for b in c.encode("utf-8", "surrogatepass")) for c in name)
    if out.startswith("."):  # no hidden file, no "." or ".."
        out = "%2E" + out[1:]
    if not out:
        out = "%"  # the empty name: a lone '%' is what no other name encodes to
    if len(out) > _MAX_STEM:
        out = out[: _MAX_STEM - 17] + "~" + hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return out


def require_readable(path: str) -> None:
    """Refuse (exit code 2) a model file that cannot be opened for reading."""
    try:
        with open(path, "rb"):
            pass
    except OSError as e:
        raise CliError(f"cannot read {path}: {e.strerror or e}") from None


def check_writable(path: str) -> None:
    """Refuse early (before long work) a file that cannot be written: its directory is missing or not one.

    ``-`` (standard output) is always writable.
    """
    if path == "-":
        return
    target = Path(path)
    parent = target.parent
    if target.is_dir():
        raise CliError(f"cannot write {path}: is a directory")
    if not parent.is_dir():
        raise CliError(f"cannot write {path}: no such directory {str(parent)!r}")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise CliError(f"cannot write {path}: directory {str(parent)!r} is not writable")


def write_text(path: str, text: str) -> None:
    """Write ``text`` to ``path`` atomically; ``-`` is standard output."""
    if path == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    target = Path(path)
    try:
        dfd = os.open(target.parent if str(target.parent) else ".", os.O_RDONLY | os.O_DIRECTORY)
    except OSError as e:
        raise CliError(f"cannot write {path}: {e.strerror or e}") from None
    try:
        with _atomic(dfd, target.name) as fh:
            fh.write(text.encode("utf-8"))
    except OSError as e:
        raise CliError(f"cannot write {path}: {e.strerror or e}") from None
    finally:
        os.close(dfd)


@contextlib.contextmanager
def _atomic(dfd: int, name: str) -> Iterator[IO[bytes]]:
    """A new file ``name`` in the directory ``dfd``: written to a temporary, renamed into place on success.

    The temporary is created with O_EXCL | O_NOFOLLOW, and rename replaces a symbolic link at ``name``
    rather than writing through it, so nothing outside the directory is ever written.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    for attempt in range(100):
        tmp = f".{name[:40]}.{os.getpid()}.{attempt}.tmp"
        try:
            fd = os.open(tmp, flags, 0o666, dir_fd=dfd)
            break
        except FileExistsError:
            continue
    else:
        raise FileExistsError(f"no free temporary name beside {name}")
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dfd)
        raise


def _open_output_dir(directory: str) -> int:
    """Create ``directory`` if needed and open it; a CliError (exit 2) when it is not a usable directory."""
    path = Path(directory)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise CliError(f"--output-dir {directory}: exists and is not a directory") from None
    except OSError as e:
        raise CliError(f"--output-dir {directory}: cannot create: {e.strerror or e}") from None
    try:
        return os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as e:
        raise CliError(f"--output-dir {directory}: cannot open: {e.strerror or e}") from None


def _unique(stem: str, taken: set[str]) -> str:
    """``stem``, or ``stem~N`` when another output already took it (a cut name, a case-folding file system)."""
    candidate, n = stem, 1
    while candidate.lower() in taken or candidate.lower() == "names":
        n += 1
        candidate = f"{stem}~{n}"
    taken.add(candidate.lower())
    return candidate


def string_array(value: np.ndarray) -> np.ndarray:
    """A string tensor (object array of UTF-8 octets) as a unicode array, which loads without pickle."""
    flat = [x.decode("utf-8", "surrogateescape") if isinstance(x, bytes) else str(x) for x in value.ravel()]
    return np.array(flat, dtype=np.str_).reshape(value.shape) if flat else np.zeros(value.shape, dtype="<U1")


def write_outputs(directory: str, values: dict[str, Any]) -> dict[str, str]:
    """Write each output into ``directory``: tensors as ``.npy``, other values (sequences, maps,
    optionals) as ``.json``; then ``names.json``, mapping each output name to its file.

    Returns:
        The mapping written to ``names.json``.

    Raises:
        CliError: the directory cannot be created or a file cannot be written (exit code 2).
    """
    dfd = _open_output_dir(directory)
    files: dict[str, str] = {}
    taken: set[str] = set()
    try:
        for name, value in values.items():
            stem = _unique(encode_name(name), taken)
            if isinstance(value, np.ndarray):
                arr = string_array(value) if value.dtype == object else value
                files[name] = stem + ".npy"
                with _atomic(dfd, files[name]) as fh:
                    np.save(fh, arr, allow_pickle=False)
            else:
                files[name] = stem + ".json"
                with _atomic(dfd, files[name]) as fh:
                    fh.write(json.dumps(to_json_value(value), indent=1).encode("utf-8"))
        with _atomic(dfd, NAMES_FILE) as fh:
            fh.write(json.dumps(files, indent=1, ensure_ascii=False).encode("utf-8"))
    except OSError as e:
        raise CliError(f"--output-dir {directory}: cannot write: {e.strerror or e}") from None
    finally:
        os.close(dfd)
    return files


def to_json_value(value: Any) -> Any:
    """A runtime value as plain JSON data: tensors as ``{"dtype", "shape", "data"}``, sequences as
    ``{"sequence": [...]}``, maps as ``{"map": [[key, value], ...]}``, an empty optional as ``{"optional": null}``."""
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            data: Any = string_array(value).tolist()
        elif value.dtype.kind == "c":
            data = np.stack([value.real, value.imag], axis=-1).tolist()
        elif value.dtype.kind not in "biuf":  # bfloat16, float8, int4 (ml_dtypes): their values as floats
            data = value.astype(np.float64).tolist()
        else:
            data = value.tolist()
        return {"dtype": str(value.dtype), "shape": list(value.shape), "data": data}
    if isinstance(value, list):
        return {"sequence": [to_json_value(v) for v in value]}
    if isinstance(value, dict):
        return {
            "map": [
                [k.decode("utf-8", "replace") if isinstance(k, bytes) else k, to_json_value(v)]
                for k, v in value.items()
            ]
        }
    if value is None:
        return {"optional": None}
    return {"value": repr(value)}


def load_npy(path: str) -> np.ndarray:
    """A ``.npy`` input, refusing (exit code 2) what is not a plain array file: truncated, garbage, pickled objects."""
    try:
        with open(path, "rb") as fh:
            if fh.read(6) != b"\x93NUMPY":
                raise CliError(f"--input {path}: not a .npy file (no NumPy header)")
            fh.seek(0)
            value = np.load(fh, allow_pickle=False)
    except OSError as e:
        raise CliError(f"--input {path}: cannot read: {e.strerror or e}") from None
    except ValueError as e:
        if "allow_pickle" in str(e):
            raise CliError(
                f"--input {path}: an object array (pickled Python objects) is refused; save strings as a "
                "unicode array (numpy dtype '<U') instead"
            ) from None
        raise CliError(f"--input {path}: not a valid .npy file: {e}") from None
    except EOFError:
        raise CliError(f"--input {path}: not a valid .npy file: truncated") from None
    return value


def sniff(path: str) -> str | None:
    """What a file that failed to decode as a model looks like, from its first octets (None: no idea)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(512)
    except OSError:
        return None
    if not head:
        return "an empty file"
    known = (
        (b"\x93NUMPY", "a NumPy array file (.npy)"),
        (b"\x89PNG\r\n\x1a\n", "a PNG image"),
        (b"\xff\xd8\xff", "a JPEG image"),
        (b"GIF8", "a GIF image"),
        (b"PK\x03\x04", "a zip archive (.npz, a PyTorch checkpoint, ...)"),
        (b"\x1f\x8b", "a gzip archive"),
        (b"\x7fELF", "an executable (ELF)"),
        (b"GGUF", "a GGUF model"),
        (b"\x89HDF", "an HDF5 file (a Keras model?)"),
        (b"%PDF", "a PDF document"),
    )
    for magic, what in known:
        if head.startswith(magic):
            return what
    if head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        return "a Python pickle (a PyTorch or scikit-learn file?)"
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as e:
        if e.start < len(head) - 4:  # not merely a character cut at the 512th octet
            return None
        text = head[: e.start].decode("utf-8")
    if all(c.isprintable() or c in "\t\n\r" for c in text):
        return "text"
    return None
