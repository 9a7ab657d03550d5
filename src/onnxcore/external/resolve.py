"""Opening external data files under the rules of Clause 15.3, and mapping them (Clause 13).

The model directory is resolved once (``realpath``), opened as a directory descriptor, and the
location is walked below it one component at a time with ``openat``: every intermediate component
is opened with ``O_DIRECTORY | O_NOFOLLOW`` relative to the previous one, and the file with
``O_NOFOLLOW | O_NONBLOCK``. Whether the file is a regular file with exactly one hard link is decided
by ``fstat`` on the descriptor that is then read, so a change of the file system between a check
and the open cannot substitute another file: a symbolic link put in its place fails the open, and
another file fails the identity comparison with the ``lstat`` made before it. The ``lstat`` calls
exist to name the rule in the error; the descriptor checks are what make the outcome hold.

Nothing is allocated or mapped for a reference before its offset and length are checked against
the size of the file (Clause 15.4). Files of at least :data:`MMAP_MIN` octets are memory-mapped
read-only and shared by every tensor that refers to them; smaller ones are read once.
"""

from __future__ import annotations

import dataclasses
import errno
import mmap
import os
import stat
from types import TracebackType

from onnxcore.errors import ExternalDataError
from onnxcore.external.reference import ExternalRef, ReferenceRule, builtin_of, make_error
from onnxcore.external.side_table import Resolution
from onnxcore.limits import DEFAULT_LIMITS, Limits

__all__ = ["MMAP_MIN", "Resolver"]

MMAP_MIN = 1 << 20
"""Files at least this large are memory-mapped; smaller files are read (saves a descriptor each)."""

_CHUNK = 1 << 22

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_BINARY = getattr(os, "O_BINARY", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)

# openat() and fstatat() relative to a directory descriptor: POSIX. Elsewhere (Windows) a
# path-based walk with lstat and an identity comparison after the open is used instead.
HAVE_DIR_FD = (
    os.open in os.supports_dir_fd and os.stat in os.supports_dir_fd and bool(_O_NOFOLLOW) and bool(_O_DIRECTORY)
)

# errno values an O_NOFOLLOW / O_DIRECTORY open gives for a symbolic link (Linux: ELOOP, BSD: EMLINK).
_LINK_ERRNOS = frozenset({errno.ELOOP, errno.EMLINK, errno.ENOTDIR})


def _open_at(dir_fd: int, name: str, flags: int) -> int:
    """``openat(dir_fd, name, flags)``. A seam: the tests swap files inside it."""
    return os.open(name, flags, dir_fd=dir_fd)


def _lstat_at(dir_fd: int, name: str) -> os.stat_result:
    """``fstatat(dir_fd, name, AT_SYMLINK_NOFOLLOW)``."""
    return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)


def _same(a: os.stat_result, b: os.stat_result) -> bool:
    return a.st_dev == b.st_dev and a.st_ino == b.st_ino


@dataclasses.dataclass(slots=True)
class _File:
    fd: int | None
    st: os.stat_result
    path: str
    buf: memoryview | None = None
    sha1: str | None = None


class Resolver:
    """Resolves references against one model directory; caches each file it opened.

    Use as a context manager (or call :meth:`close`): descriptors are closed on exit, while
    views already handed out keep their mapping alive on their own.

    Args:
        base_dir: The directory holding the model file, or None when there is none (a model
            read from octets): then only an absolute location allowed outside resolves.
        allow_outside: The explicit opt-in of Clause 15.3: locations may be absolute, contain
            ``..`` and pass through symbolic links, and the file may have several hard links.
            Files must still be regular files, and offset, length and checksum are still checked.
        limits: Resource limits (``max_external_file_bytes``, ``max_tensor_bytes``).
        keep_open: Keep each file's descriptor until it is mapped or the resolver closes. False
            for checking only: a descriptor is closed as soon as its reference is checked (and the
            file reopened, identity compared, if a later reference needs its checksum), so a model
            with thousands of files does not hold thousands of descriptors.
    """

    def __init__(
        self,
        base_dir: str | os.PathLike[str] | None,
        *,
        allow_outside: bool = False,
        limits: Limits | None = None,
        keep_open: bool = True,
    ) -> None:
        self.keep_open = keep_open
        self.base = None if base_dir is None else os.path.realpath(os.fspath(base_dir))
        self.allow_outside = allow_outside
        self.limits = limits if limits is not None else DEFAULT_LIMITS
        self._dir_fd: int | None = None
        self._by_location: dict[tuple[bool, tuple[str, ...]], _File] = {}
        self._by_identity: dict[tuple[int, int], _File] = {}

    def __enter__(self) -> Resolver:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Close every descriptor this resolver holds."""
        for f in self._by_identity.values():
            if f.fd is not None:
                os.close(f.fd)
                f.fd = None
        if self._dir_fd is not None:
            os.close(self._dir_fd)
            self._dir_fd = None

    # -- public steps -------------------------------------------------------------------------

    def check(self, label: str, ref: ExternalRef) -> tuple[_File, int]:
        """Open the file (once), check the range and the checksum; map nothing.

        Returns:
            The file record and the length of the contents.

        Raises:
            ExternalDataError: the rule the reference breaks.
        """
        f = self._file(label, ref)
        size = f.st.st_size
        if ref.offset > size:
            raise make_error(
                label,
                ref.location,
                ReferenceRule.OUT_OF_BOUNDS,
                f"offset {ref.offset} is beyond the end of the file ({size} octets)",
            )
        length = size - ref.offset if ref.length is None else ref.length
        if ref.offset + length > size:
            raise make_error(
                label,
                ref.location,
                ReferenceRule.OUT_OF_BOUNDS,
                f"offset {ref.offset} plus length {length} exceeds the file size ({size} octets)",
            )
        lim = self.limits.max_tensor_bytes
        if lim is not None and length > lim:
            raise make_error(
                label,
                ref.location,
                ReferenceRule.TENSOR_SIZE_LIMIT,
                f"length {length} exceeds max_tensor_bytes ({lim})",
            )
        if ref.checksum is not None:
            digest = self._sha1(label, ref, f)
            if digest != ref.checksum:
                raise make_error(
                    label,
                    ref.location,
                    ReferenceRule.CHECKSUM_MISMATCH,
                    f"the file's SHA-1 is {digest}, the reference declares {ref.checksum}",
                )
        if not self.keep_open and f.fd is not None:
            os.close(f.fd)
            f.fd = None
        return f, length

    def resolve(self, label: str, ref: ExternalRef) -> tuple[memoryview, Resolution]:
        """Check the reference and return a read-only view of its contents and the record."""
        f, length = self.check(label, ref)
        buf = self._contents(label, ref, f)
        view = buf[ref.offset : ref.offset + length]
        record = Resolution(
            location=ref.location,
            offset=ref.offset,
            length=length,
            path=f.path,
            base_dir=self.base,
            device=f.st.st_dev,
            inode=f.st.st_ino,
            checksum=ref.checksum,
        )
        return view, record

    # -- opening ------------------------------------------------------------------------------

    def _file(self, label: str, ref: ExternalRef) -> _File:
        key = (ref.absolute, ref.components)
        f = self._by_location.get(key)
        if f is not None:
            return f
        fd, st, path = self._open(label, ref)
        lim = self.limits.max_external_file_bytes
        if lim is not None and st.st_size > lim:
            os.close(fd)
            raise make_error(
                label,
                ref.location,
                ReferenceRule.FILE_SIZE_LIMIT,
                f"the file has {st.st_size} octets, more than max_external_file_bytes ({lim})",
            )
        ident = (st.st_dev, st.st_ino)
        f = self._by_identity.get(ident)
        if f is None:
            f = _File(fd, st, path)
            self._by_identity[ident] = f
        else:
            os.close(fd)
        self._by_location[key] = f
        return f

    def _open(self, label: str, ref: ExternalRef) -> tuple[int, os.stat_result, str]:
        if ref.absolute:
            # Only reachable with allow_outside (split_location refuses it otherwise). A form that
            # is not absolute here (``C:\\x`` on POSIX) would be opened relative to the working
            # directory: refused.
            if not os.path.isabs(ref.location):
                raise make_error(
                    label,
                    ref.location,
                    ReferenceRule.LOCATION_ABSOLUTE,
                    "the location is another platform's absolute path",
                )
            return self._open_by_path(label, ref, ref.location, contained=False)
        if self.base is None:
            raise make_error(
                label,
                ref.location,
                ReferenceRule.NO_BASE_DIR,
                "the model was not loaded from a file and no base_dir was given; nothing is resolved "
                "relative to the working directory",
            )
        path = os.path.join(self.base, *ref.components)
        if self.allow_outside:
            return self._open_by_path(label, ref, path, contained=False)
        if not HAVE_DIR_FD:
            return self._open_by_path(label, ref, path, contained=True)
        return self._open_below(label, ref, path)

    def _base_fd(self, label: str, ref: ExternalRef) -> int:
        if self._dir_fd is None:
            assert self.base is not None
            try:
                self._dir_fd = os.open(self.base, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
            except OSError as e:
                raise make_error(
                    label,
                    ref.location,
                    ReferenceRule.NOT_FOUND,
                    f"the model directory {self.base!r} cannot be opened ({e.strerror})",
                    builtin_of(e),
                ) from None
        return self._dir_fd

    def _lstat(self, dir_fd: int, name: str, shown: str, label: str, ref: ExternalRef) -> os.stat_result:
        try:
            return _lstat_at(dir_fd, name)
        except OSError as e:
            raise self._os_error(e, shown, label, ref) from None
        except ValueError as e:  # e.g. an embedded NUL the caller let through
            raise make_error(label, ref.location, ReferenceRule.LOCATION_INVALID, str(e)) from None

    def _os_error(self, e: OSError, shown: str, label: str, ref: ExternalRef) -> ExternalDataError:
        if e.errno == errno.ENOENT:
            return make_error(label, ref.location, ReferenceRule.NOT_FOUND, f"{shown!r} does not exist", builtin_of(e))
        if e.errno == errno.ENOTDIR:
            return make_error(
                label, ref.location, ReferenceRule.NOT_DIRECTORY, f"a component of {shown!r} is not a directory"
            )
        return make_error(
            label, ref.location, ReferenceRule.UNREADABLE, f"{shown!r} cannot be read ({e.strerror})", builtin_of(e)
        )

    def _open_checked(
        self, dir_fd: int, name: str, flags: int, before: os.stat_result, shown: str, label: str, ref: ExternalRef
    ) -> int:
        try:
            fd = _open_at(dir_fd, name, flags)
        except OSError as e:
            if e.errno in _LINK_ERRNOS:
                try:
                    now = _lstat_at(dir_fd, name)
                except OSError:
                    now = None
                if now is not None and stat.S_ISLNK(now.st_mode):
                    raise make_error(
                        label,
                        ref.location,
                        ReferenceRule.SYMLINK,
                        f"{shown!r} is a symbolic link (it became one between the check and the open)",
                    ) from None
                raise make_error(
                    label, ref.location, ReferenceRule.IDENTITY, f"{shown!r} changed between the check and the open"
                ) from None
            raise self._os_error(e, shown, label, ref) from None
        try:
            st = os.fstat(fd)
        except OSError as e:
            os.close(fd)
            raise self._os_error(e, shown, label, ref) from None
        if not _same(st, before):
            os.close(fd)
            raise make_error(
                label,
                ref.location,
                ReferenceRule.IDENTITY,
                f"the file opened as {shown!r} is not the file checked "
                "(it was replaced between the check and the open)",
            )
        return fd

    def _open_below(self, label: str, ref: ExternalRef, path: str) -> tuple[int, os.stat_result, str]:
        """The constrained open: every component relative to its parent's descriptor."""
        cur = self._base_fd(label, ref)
        comps = ref.components
        opened: list[int] = []
        try:
            for i, name in enumerate(comps[:-1]):
                shown = "/".join(comps[: i + 1])
                st = self._lstat(cur, name, shown, label, ref)
                if stat.S_ISLNK(st.st_mode):
                    raise make_error(
                        label, ref.location, ReferenceRule.SYMLINK, f"directory component {shown!r} is a symbolic link"
                    )
                if not stat.S_ISDIR(st.st_mode):
                    raise make_error(
                        label, ref.location, ReferenceRule.NOT_DIRECTORY, f"component {shown!r} is not a directory"
                    )
                flags = os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC
                nfd = self._open_checked(cur, name, flags, st, shown, label, ref)
                opened.append(nfd)
                cur = nfd
            shown = "/".join(comps)
            st = self._lstat(cur, comps[-1], shown, label, ref)
            self._check_file(st, shown, label, ref, links=True)
            flags = os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC
            fd = self._open_checked(cur, comps[-1], flags, st, shown, label, ref)
        finally:
            for x in opened:
                os.close(x)
        # The checks that matter, on the descriptor that will be read.
        try:
            fst = os.fstat(fd)
            self._check_file(fst, shown, label, ref, links=True)
        except BaseException:
            os.close(fd)
            raise
        return fd, fst, path

    def _check_file(self, st: os.stat_result, shown: str, label: str, ref: ExternalRef, *, links: bool) -> None:
        if stat.S_ISLNK(st.st_mode):
            raise make_error(label, ref.location, ReferenceRule.SYMLINK, f"{shown!r} is a symbolic link")
        if not stat.S_ISREG(st.st_mode):
            kind = IsADirectoryError if stat.S_ISDIR(st.st_mode) else None
            raise make_error(label, ref.location, ReferenceRule.NOT_REGULAR, f"{shown!r} is not a regular file", kind)
        if links and st.st_nlink != 1:
            raise make_error(
                label,
                ref.location,
                ReferenceRule.HARDLINK,
                f"{shown!r} has {st.st_nlink} hard links (exactly one is required)",
            )

    def _open_by_path(
        self, label: str, ref: ExternalRef, path: str, *, contained: bool
    ) -> tuple[int, os.stat_result, str]:
        """Open by path: the allowed-outside mode, and the fallback where openat is missing."""
        before: os.stat_result | None = None
        if contained:
            assert self.base is not None
            prefix = self.base
            for i, name in enumerate(ref.components):
                prefix = os.path.join(prefix, name)
                shown = "/".join(ref.components[: i + 1])
                try:
                    before = os.lstat(prefix)
                except OSError as e:
                    raise self._os_error(e, shown, label, ref) from None
                if stat.S_ISLNK(before.st_mode):
                    raise make_error(label, ref.location, ReferenceRule.SYMLINK, f"{shown!r} is a symbolic link")
            real = os.path.realpath(path)
            if os.path.commonpath([real, self.base]) != self.base:
                raise make_error(
                    label, ref.location, ReferenceRule.OUTSIDE, "the location resolves outside the model directory"
                )
        flags = os.O_RDONLY | _O_NONBLOCK | _O_CLOEXEC | _O_BINARY | (_O_NOFOLLOW if contained else 0)
        try:
            fd = os.open(path, flags)
        except OSError as e:
            raise self._os_error(e, ref.location, label, ref) from None
        except ValueError as e:
            raise make_error(label, ref.location, ReferenceRule.LOCATION_INVALID, str(e)) from None
        try:
            st = os.fstat(fd)
            if before is not None and not _same(st, before):
                raise make_error(label, ref.location, ReferenceRule.IDENTITY, "the file opened is not the file checked")
            self._check_file(st, ref.location, label, ref, links=contained)
        except BaseException:
            os.close(fd)
            raise
        return fd, st, path

    # -- reading ------------------------------------------------------------------------------

    def _sha1(self, label: str, ref: ExternalRef, f: _File) -> str:
        """SHA-1 of the whole file (Clause 13.3), read through the descriptor, computed once."""
        if f.sha1 is None:
            lim = self.limits.max_checksum_bytes
            if lim is not None and f.st.st_size > lim:
                # Checked before the first octet is read: hashing a (sparse) terabyte takes minutes (Clause 15.4).
                raise make_error(
                    label,
                    ref.location,
                    ReferenceRule.FILE_SIZE_LIMIT,
                    f"its checksum covers the whole file, {f.st.st_size} octets, more than max_checksum_bytes ({lim})",
                )
            import hashlib  # here, not at the top: 3 ms of every `import onnxcore`, for a checksum

            h = hashlib.sha1(usedforsecurity=False)
            if f.buf is not None:
                h.update(f.buf)
            else:
                fd = f.fd if f.fd is not None else self._reopen(label, ref, f)
                pos = 0
                try:
                    while True:
                        chunk = os.pread(fd, _CHUNK, pos)
                        if not chunk:
                            break
                        h.update(chunk)
                        pos += len(chunk)
                except OSError as e:
                    raise self._os_error(e, ref.location, label, ref) from None
                finally:
                    if f.fd is None:
                        os.close(fd)
                if pos != f.st.st_size:
                    raise make_error(
                        label, ref.location, ReferenceRule.IDENTITY, "the file changed size while it was read"
                    )
            f.sha1 = h.hexdigest()
        return f.sha1

    def _reopen(self, label: str, ref: ExternalRef, f: _File) -> int:
        """Open a file checked earlier again, under the same rules; it must be the same file."""
        fd, st, _path = self._open(label, ref)
        if not _same(st, f.st) or st.st_size != f.st.st_size:
            os.close(fd)
            raise make_error(label, ref.location, ReferenceRule.IDENTITY, "the file changed since it was checked")
        return fd

    def _contents(self, label: str, ref: ExternalRef, f: _File) -> memoryview:
        if f.buf is not None:
            return f.buf
        if f.fd is None:
            f.fd = self._reopen(label, ref, f)
        size = f.st.st_size
        try:
            if size == 0:
                buf = memoryview(b"")
            elif size < MMAP_MIN:
                data = bytearray()
                while len(data) < size:
                    chunk = os.pread(f.fd, size - len(data), len(data))
                    if not chunk:
                        break
                    data += chunk
                buf = memoryview(bytes(data))
            else:
                # The whole file, read-only; views into it keep it mapped (and close on last use).
                buf = memoryview(mmap.mmap(f.fd, 0, access=mmap.ACCESS_READ))
        except (OSError, ValueError) as e:
            raise make_error(
                label, ref.location, ReferenceRule.UNREADABLE, f"the file cannot be mapped ({e})"
            ) from None
        if len(buf) < size:
            raise make_error(label, ref.location, ReferenceRule.IDENTITY, "the file shrank after it was checked")
        os.close(f.fd)
        f.fd = None
        f.buf = buf
        return buf
