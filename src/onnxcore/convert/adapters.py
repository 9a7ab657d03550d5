"""The adapter tables: one small function per changed operator definition and direction (Clause 14.3).

An adapter is registered with the explicit :func:`adapter` decorator under ``(domain, op_type, version,
direction)``, where ``version`` is the ``since_version`` of the *newer* of two consecutive definitions:
``"up"`` rewrites a node from the previous definition into this one, ``"down"`` from this one into the
previous one. It receives the :class:`~onnxcore.convert.version_step.Step` and edits its node in place (or refuses
with :class:`Refuse`); the signature differences it leaves are then reconciled by the generic step
(:mod:`onnxcore.convert.generic`), derived from the two definitions themselves.

An adapter may rename the node's operator (``Upsample`` to ``Resize``, ``ScatterElements`` to ``Scatter``):
it then leaves the node in the form of the new operator's definition in force at the step's version.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

from onnxcore.defs.binding import schema_versions
from onnxcore.errors import AdapterRegistrationError

if TYPE_CHECKING:
    from onnxcore.convert.version_step import Step

__all__ = ["ADAPTERS", "Adapter", "Direction", "Refuse", "adapter", "find_adapter"]

Direction = Literal["up", "down"]
Adapter = Callable[["Step"], None]

ADAPTERS: dict[tuple[str, str, int, Direction], Adapter] = {}


class Refuse(Exception):
    """Raised by an adapter: the node cannot be expressed in the other definition (the message says why)."""


def adapter(
    ops: str | tuple[str, ...], version: int, direction: Direction, *, domain: str = ""
) -> Callable[[Adapter], Adapter]:
    """Register the decorated function for each operator of ``ops`` at ``version`` in ``direction``.

    Args:
        ops: An operator name, or several sharing the adapter (the reductions, the elementwise operators).
        version: The ``since_version`` of the newer definition of the pair.
        direction: ``"up"`` (previous -> this) or ``"down"`` (this -> previous).
        domain: The operators' domain (``""`` is ai.onnx).

    Raises:
        AdapterRegistrationError: ``version`` is no since_version of one of ``ops`` (checked when the decorator
            is made, before any function is registered), or a key is registered twice.
    """
    names = (ops,) if isinstance(ops, str) else ops
    for op in names:
        # As a kernel lists the since_versions it implements: an adapter at a version where the operator's
        # definition does not change would never be asked (the engine steps from definition to definition).
        defined = schema_versions(op, domain)
        if version not in defined:
            raise AdapterRegistrationError(
                f"adapter {domain or 'ai.onnx'}::{op}-{version} ({direction}): {version} is no since_version of "
                f"{op}; its since_versions: {defined} (Clause 14.3)"
            )

    def register(fn: Adapter) -> Adapter:
        for op in names:
            key = (domain, op, version, direction)
            if key in ADAPTERS:
                raise AdapterRegistrationError(f"adapter {key} registered twice")
            ADAPTERS[key] = fn
        return fn

    return register


def find_adapter(domain: str, op: str, version: int, direction: Direction) -> Adapter | None:
    """The adapter registered for the pair, or None (the generic step alone then applies)."""
    return ADAPTERS.get((domain, op, version, direction))
