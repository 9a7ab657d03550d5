"""Resource limits (Clause 15.4): documented defaults, passed to load, check and run.

Exceeding a limit raises :class:`onnxcore.LimitError` (a refusal under Clause 10), never
``MemoryError``, ``RecursionError`` or a crash.
"""

from __future__ import annotations

import dataclasses

__all__ = ["Limits", "DEFAULT_LIMITS"]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    """Resource limits. Every field has a documented default; ``None`` means unlimited.

    Attributes:
        max_tensor_elements: Elements of one tensor (declared or computed).
        max_tensor_bytes: Octets of one tensor.
        max_rank: Rank of one tensor.
        max_nesting_depth: Depth of nested subgraphs (and of nested messages, times 4).
        max_loop_iterations: Iterations of one ``Loop`` or ``Scan`` evaluation.
        max_external_file_bytes: Size of one external data file.
        max_message_bytes: Size of the model file (the top-level message).
    """

    max_tensor_elements: int | None = 1 << 34
    max_tensor_bytes: int | None = 1 << 36
    max_rank: int | None = 64
    max_nesting_depth: int | None = 64
    max_loop_iterations: int | None = 1 << 31
    max_external_file_bytes: int | None = 1 << 40
    max_message_bytes: int | None = 1 << 40

    def message_depth(self) -> int:
        """Nesting limit for embedded messages while decoding.

        A subgraph level costs about four message levels (graph, node, attribute, graph), plus
        headroom for the deepest ordinary chain (model, graph, node, attribute, tensor, segment).
        """
        if self.max_nesting_depth is None:
            return 100_000
        return 4 * self.max_nesting_depth + 16


DEFAULT_LIMITS = Limits()
