"""Resource limits (Clause 15.4): documented defaults, passed to load, check and run.

Exceeding a limit raises :class:`onnxcore.LimitError` (a refusal under Clause 10), never
``MemoryError``, ``RecursionError`` or a crash. The defaults are listed, with what each protects
against, in ``docs/external-data.md`` (they are part of the conformance statement, Annex A).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import gc
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

from onnxcore.errors import InputError, LimitError, RunCancelledError, RunTimeoutError

try:
    import resource
except ImportError:  # not a POSIX system: no address-space limit to read
    resource = None  # type: ignore[assignment]

__all__ = [
    "Limits",
    "DEFAULT_LIMITS",
    "UNTRUSTED_FIELDS",
    "NESTING_REFUSAL",
    "UNLIMITED_DEPTH",
    "DERIVED_DEFAULTS",
    "MACHINE_ALLOC_BYTES",
    "RunControl",
    "active_limits",
    "active_run_control",
    "checkpoint",
    "collection_paused",
    "enter_run",
    "exit_run",
    "limits_in_effect",
    "run_control_in_effect",
]

NESTING_REFUSAL = "E-LIMIT-NESTING"
"""The code under which validation, inference and evaluation alike refuse subgraphs (and function calls) nested
deeper than ``Limits.max_nesting_depth`` (Clause 15.4): the validator's finding, inference's ``refused``, the
evaluator's :class:`LimitError` message."""

UNLIMITED_DEPTH = 100_000
"""Message nesting bound used when ``max_nesting_depth`` is None.

Far beyond the interpreter stack: the decoder turns the resulting ``RecursionError`` into a
:class:`~onnxcore.DecodeLimitError`, so even "unlimited" refuses rather than crashes.
"""


def _physical_memory() -> int | None:
    """The memory this process may use: the machine's physical memory, or the process's address-space limit
    (``ulimit -v``, RLIMIT_AS) when that is lower."""
    try:
        total = int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):  # not a POSIX system, or the value is not known
        return None
    if resource is None:
        return total
    try:
        soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
    except (ValueError, OSError):
        return total
    return total if soft == resource.RLIM_INFINITY else min(total, int(soft))


_PHYSICAL = _physical_memory()
MACHINE_ALLOC_BYTES: int = min(1 << 36, _PHYSICAL // 2) if _PHYSICAL else 1 << 36
"""The default of ``Limits.max_alloc_bytes`` here: half the physical memory (or of the process's address-space
limit when that is lower), at most 2**36."""

DERIVED_DEFAULTS: dict[str, str] = {
    "max_alloc_bytes": "half the physical memory (or of the address-space limit, when lower), at most 2**36 (64 GiB)"
}
"""How the defaults that depend on the machine are stated (the conformance statement prints this text)."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    """Resource limits. Every field has a documented default; ``None`` means unlimited.

    Use ``dataclasses.replace(DEFAULT_LIMITS, max_rank=8)`` to change one.

    Attributes:
        max_tensor_elements: Elements of one tensor, declared (dims) or computed. Default 2**34.
        max_tensor_bytes: Octets of one tensor, including the length of one external data
            reference. Default 2**36 (64 GiB).
        max_rank: Rank of one tensor. Default 64.
        max_nesting_depth: Depth of nested subgraphs (and of nested messages, times 4, see
            :meth:`message_depth`). Default 64.
        max_loop_iterations: Iterations of one ``Loop`` or ``Scan`` evaluation. Default 2**31.
        max_external_file_bytes: Size of one external data file. Default 2**40 (1 TiB).
        max_message_bytes: Size of the model file (the top-level message). Default 2**40.
        max_image_pixels: Pixels (height times width) of one image an ``ImageDecoder`` node decodes. A stream of
            a few hundred octets can declare a huge image (a decompression bomb), so this is checked against the
            header before any pixel is decoded. Default 2**27 (about 134 million, 11,585 x 11,585).
        max_inference_nodes: Node visits of one type or shape inference walk (Clause 9). A function body is
            walked once per distinct call and a subgraph once per reference, so a model built in code that shares
            one subgraph object between the branches of every level would otherwise be walked exponentially
            often; past the budget what is left stays unknown (Clause 9.4). Default 2,000,000.
        max_repeated_messages: Embedded messages in one repeated field while decoding (``GraphProto.node``,
            ``NodeProto.attribute``, ...). Default 2**19 (524,288; the largest real graphs have a few hundred
            thousand nodes). Decoding memory is bounded besides, at 64 x the input octets + 32 MiB (an empty
            entry, two octets on the wire, decodes to one object of 56 to 424 octets, its lists included; see
            ``onnxcore.proto.decoder.DECODE_BYTES_PER_OCTET``), refused with ``DecodeLimitError``.
        max_messages: Embedded messages in repeated fields in all, while decoding (nodes, attributes,
            value infos and their dimensions together). Default 2**21 (2,097,152). None lifts the decoding
            memory bound (64 x input octets + 32 MiB) too.
        max_alloc_bytes: Octets of one tensor a kernel allocates while evaluating when its size comes from data
            or attributes (ConstantOfShape, Expand, Tile, Pad, RandomUniform, ...), checked before allocating.
            Default: half of this machine's physical memory, at most 2**36 (:data:`MACHINE_ALLOC_BYTES`), so an
            untrusted model is refused rather than swapping the machine. A machine-dependent default is kept
            out of validation: ``check`` reads only the other limits, so its findings do not depend on the
            machine.
        max_checksum_bytes: Size of a file whose ``checksum`` (Clause 13.3, a digest of the whole file) is verified.
            Hashing reads every octet, and a sparse file of a terabyte costs nothing to make: past this a
            reference with a checksum is refused rather than hashed for minutes. Default 2**32 (4 GiB).
        run_timeout: Seconds one :meth:`onnxcore.Session.run` may take when the call gives no ``timeout`` of its
            own (past them the run stops with :class:`onnxcore.RunTimeoutError`). Default None: no deadline;
            :meth:`untrusted` sets one.
    """

    max_tensor_elements: int | None = 1 << 34
    max_tensor_bytes: int | None = 1 << 36
    max_rank: int | None = 64
    max_nesting_depth: int | None = 64
    max_loop_iterations: int | None = 1 << 31
    max_external_file_bytes: int | None = 1 << 40
    max_message_bytes: int | None = 1 << 40
    max_image_pixels: int | None = 1 << 27
    max_inference_nodes: int | None = 2_000_000
    max_repeated_messages: int | None = 1 << 19
    max_messages: int | None = 1 << 21
    max_alloc_bytes: int | None = MACHINE_ALLOC_BYTES
    max_checksum_bytes: int | None = 1 << 32
    run_timeout: float | None = None

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if f.name == "run_timeout":
                if v is not None and (isinstance(v, bool) or not isinstance(v, int | float) or not v > 0):
                    raise ValueError(f"Limits.run_timeout must be a positive number of seconds or None, not {v!r}")
            elif v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
                raise ValueError(f"Limits.{f.name} must be a non-negative int or None, not {v!r}")

    @classmethod
    def unlimited(cls) -> Limits:
        """Limits with every field None (the decoder's stack bound still applies)."""
        return cls(**{f.name: None for f in dataclasses.fields(cls)})

    @classmethod
    def untrusted(cls) -> Limits:
        """The preset for a model one does not trust: small budgets and a default run deadline.

        Every bound of :data:`UNTRUSTED_FIELDS`, the lower of it and the default where the default depends on the
        machine: one tensor a kernel sizes from data or attributes at most 256 MiB, a loop at most 2**20
        iterations, a run at most 60 s unless the call gives its own ``timeout``. Models whose weights or working
        tensors are larger need their own :class:`Limits` (``dataclasses.replace(Limits.untrusted(), ...)``).
        """
        fields: dict[str, Any] = dict(UNTRUSTED_FIELDS)
        fields["max_alloc_bytes"] = min(fields["max_alloc_bytes"], MACHINE_ALLOC_BYTES)
        return cls(**fields)

    def message_depth(self) -> int:
        """Nesting limit for embedded messages while decoding.

        A subgraph level costs about four message levels (graph, node, attribute, graph), plus
        headroom for the deepest ordinary chain (model, graph, node, attribute, tensor, segment).
        """
        if self.max_nesting_depth is None:
            return UNLIMITED_DEPTH
        return 4 * self.max_nesting_depth + 16

    def _exceeds(self, name: str, value: int, what: str) -> None:
        limit: int | None = getattr(self, name)
        if limit is not None and value > limit:
            raise LimitError(f"{what}: {value} exceeds {name} ({limit}) (Clause 15.4)")

    def check_elements(self, count: int, what: str = "tensor") -> None:
        """Raise :class:`LimitError` when ``count`` elements exceed ``max_tensor_elements``."""
        self._exceeds("max_tensor_elements", count, what)

    def check_bytes(self, nbytes: int, what: str = "tensor") -> None:
        """Raise :class:`LimitError` when ``nbytes`` octets exceed ``max_tensor_bytes``."""
        self._exceeds("max_tensor_bytes", nbytes, what)

    def check_rank(self, rank: int, what: str = "tensor") -> None:
        """Raise :class:`LimitError` when ``rank`` exceeds ``max_rank``."""
        self._exceeds("max_rank", rank, what)

    def check_depth(self, depth: int, what: str = "subgraph") -> None:
        """Raise :class:`LimitError` when a nesting ``depth`` exceeds ``max_nesting_depth``."""
        self._exceeds("max_nesting_depth", depth, what)

    def check_iterations(self, count: int, what: str = "loop") -> None:
        """Raise :class:`LimitError` when ``count`` iterations exceed ``max_loop_iterations``."""
        self._exceeds("max_loop_iterations", count, what)

    def check_pixels(self, height: int, width: int, what: str = "image") -> None:
        """Raise :class:`LimitError` when a ``height`` x ``width`` image exceeds ``max_image_pixels``."""
        self._exceeds("max_image_pixels", height * width, f"{what} of {height}x{width} pixels")

    def check_tensor(self, dims: list[int] | tuple[int, ...], bits: int, what: str = "tensor") -> None:
        """Check a tensor's rank, element count and size before anything is allocated for it.

        Args:
            dims: The extents (each non-negative).
            bits: Width of one element in bits (0 for STRING, whose size is not known here).
            what: How the message names the tensor.
        """
        self.check_rank(len(dims), what)
        count = 1
        for d in dims:
            count *= d
        self.check_elements(count, what)
        self.check_bytes((count * bits + 7) // 8, what)


DEFAULT_LIMITS = Limits()

UNTRUSTED_FIELDS: dict[str, int | float] = {
    "max_tensor_elements": 1 << 28,
    "max_tensor_bytes": 1 << 30,
    "max_rank": 32,
    "max_nesting_depth": 32,
    "max_loop_iterations": 1 << 20,
    "max_external_file_bytes": 1 << 32,
    "max_message_bytes": 1 << 31,
    "max_image_pixels": 1 << 25,
    "max_inference_nodes": 500_000,
    "max_repeated_messages": 1 << 18,
    "max_messages": 1 << 20,
    "max_alloc_bytes": 1 << 28,
    "max_checksum_bytes": 1 << 30,
    "run_timeout": 60.0,
}
"""The values of :meth:`Limits.untrusted` (``max_alloc_bytes`` also at most :data:`MACHINE_ALLOC_BYTES`)."""


# The limits of the evaluation running in this context: kernels that size a tensor from data (ConstantOfShape,
# Expand, Resize, ...) check against the session's limits without each receiving them as an argument.
_ACTIVE: contextvars.ContextVar[Limits] = contextvars.ContextVar("onnxcore_limits")


def active_limits() -> Limits:
    """The limits in effect: those of the :class:`onnxcore.Session` evaluating in this context (its run,
    and the constant folding when it is made), else :data:`DEFAULT_LIMITS`."""
    return _ACTIVE.get(DEFAULT_LIMITS)


@contextlib.contextmanager
def limits_in_effect(limits: Limits) -> Iterator[None]:
    """Make ``limits`` the :func:`active_limits` of this context (thread, task) inside the ``with`` block."""
    token = _ACTIVE.set(limits)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


class RunControl:
    """A deadline and a cancellation test for one run, checked at checkpoints (between plan steps, at every
    iteration of ``Loop``, ``Scan`` and ``SequenceMap``, at every subgraph evaluation).

    A kernel call in progress is not interrupted: one call's work is bounded by :class:`Limits` instead, so the
    run stops at most one kernel call after the deadline or the cancellation.

    Args:
        timeout: Seconds from now; None for no deadline.
        cancel: A callable polled at each checkpoint; the run stops when it returns true (onnxruntime's
            ``RunOptions.terminate`` is read this way). None for none.
    """

    __slots__ = ("cancel", "deadline", "timeout")

    def __init__(self, *, timeout: float | None = None, cancel: Callable[[], bool] | None = None) -> None:
        if timeout is not None and not timeout >= 0:  # also refuses NaN
            raise InputError(f"timeout must be a non-negative number of seconds, got {timeout!r}")
        self.timeout = timeout
        self.deadline = None if timeout is None else time.monotonic() + timeout
        self.cancel = cancel

    def check(self, where: str) -> None:
        """Raise when the run must stop.

        Raises:
            RunCancelledError: ``cancel()`` returned true.
            RunTimeoutError: the deadline has passed.
        """
        if self.cancel is not None and self.cancel():
            raise RunCancelledError(f"{where}: the run was cancelled")
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise RunTimeoutError(f"{where}: the run exceeded its timeout of {self.timeout} s (Clause 15.4)")


_RUN_CONTROL: contextvars.ContextVar[RunControl | None] = contextvars.ContextVar("onnxcore_run_control", default=None)


def active_run_control() -> RunControl | None:
    """The :class:`RunControl` of the run evaluating in this context, or None (no deadline, no cancellation)."""
    return _RUN_CONTROL.get()


def checkpoint(where: str) -> None:
    """Stop the run here if its deadline has passed or it was cancelled (a no-op without a run control)."""
    control = _RUN_CONTROL.get()
    if control is not None:
        control.check(where)


@contextlib.contextmanager
def run_control_in_effect(control: RunControl | None) -> Iterator[None]:
    """Make ``control`` the :func:`active_run_control` of this context inside the ``with`` block."""
    token = _RUN_CONTROL.set(control)
    try:
        yield
    finally:
        _RUN_CONTROL.reset(token)


RunTokens = tuple["contextvars.Token[Limits] | None", "contextvars.Token[RunControl | None] | None"]


def enter_run(limits: Limits, control: RunControl | None) -> RunTokens:
    """Make ``limits`` and ``control`` those of this context until :func:`exit_run` of what this returns.

    The two context managers above in one call without their generators: a run of a small model pays for this on
    every call (``Session.run``), so it is kept to two ``ContextVar.get``, and a ``set`` only for a value that is
    not in effect already (a session of the default limits run with no control, the common case, sets nothing).
    Always pair it with :func:`exit_run` in a ``finally``.
    """
    return (
        None if _ACTIVE.get(DEFAULT_LIMITS) is limits else _ACTIVE.set(limits),
        None if _RUN_CONTROL.get() is control else _RUN_CONTROL.set(control),
    )


def exit_run(tokens: RunTokens) -> None:
    """Restore what :func:`enter_run` replaced (in the reverse order)."""
    if tokens[1] is not None:
        _RUN_CONTROL.reset(tokens[1])
    if tokens[0] is not None:
        _ACTIVE.reset(tokens[0])


# Objects left by a paused walk (allocations less deallocations of containers) from which collection_paused moves
# them to the oldest generation: fewer cost a scan of a few milliseconds at most, and the collector's own policy stays.
_PROMOTE_AFTER = 50_000


@contextlib.contextmanager
def collection_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for a walk that allocates many objects and frees few: decoding a graph,
    binding, checking and planning it (issue 42, item 3). Each allocation of a container counts towards a
    collection, and a 50,000-node graph triggered collections that re-scanned everything made so far: 14 % of a
    load and 22 % of a check. Reference counting still frees what the walk drops; a cycle it makes waits for the next
    collection after. The collector is enabled again on leaving only if it was on when entering, so a caller that
    turned it off keeps it off, and an inner pause leaves the outer one in place.

    When the walk leaves many more objects than it found (a decoded model: 300,000 containers for 50,000 nodes), the
    first allocation after the pause would start a collection of the youngest generation that scans them all (12 %
    of such a load), and they would be scanned once more on their way to the oldest generation, where a long-lived
    model ends up. They are moved there at once instead (``gc.freeze`` then ``gc.unfreeze``: two list splices, no
    scan), with what else is young; the next full collection finds any cycle among them as it would have. Not done
    when anything is frozen already: the caller's frozen objects (a server's pre-fork heap) stay frozen.
    """
    was_on = gc.isenabled()
    if was_on:
        gc.disable()
    try:
        yield
    finally:
        if was_on:
            if gc.get_count()[0] >= _PROMOTE_AFTER and gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()
