"""What the sequential (jpeg.py) and progressive (jpeg_prog.py) JPEG scan decoders share (private): the
zig-zag order, the bit windows the entropy decoders peek through, a frame component, and the frame's
interface that a progressive scan reads.
"""

from __future__ import annotations

from array import array
from typing import Protocol

import numpy as np

__all__ = ["NATURAL", "WINDOW_PAD", "Component", "ScanFrame", "windows"]

# Zig-zag index -> natural (row-major) index; 16 extra entries absorb a run past the end as libjpeg does.
NATURAL = (
    0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5, 12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13, 6, 7, 14, 21,
    28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51, 58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61,
    54, 47, 55, 62, 63,
) + (63,) * 16  # fmt: skip


# A block codes at most 64 coefficients of at most 16 + 16 bits.
WINDOW_PAD = 64 * 4 + 4


def windows(buf: bytes) -> list[int]:
    """The 32 bits starting at each octet of ``buf`` (big-endian), past its end zeros: one list index and a
    shift then peek at any bit position. The padding covers a whole block read past a truncated end, which
    the caller then reports."""
    b = np.frombuffer(buf + bytes(WINDOW_PAD), dtype=np.uint8).astype(np.int64)
    w = (b[:-3] << 24) | (b[1:-2] << 16) | (b[2:-1] << 8) | b[3:]
    return w.tolist()


class Component:
    """One component of a frame (its SOF entry): sampling factors, quantization table, coefficients."""

    __slots__ = ("bh", "bw", "cid", "coef", "dh", "dw", "h", "quant", "tq", "v")

    def __init__(self, cid: int, h: int, v: int, tq: int) -> None:
        self.cid, self.h, self.v, self.tq = cid, h, v, tq
        self.quant: np.ndarray | None = None
        self.coef: array[int] = array("i")
        self.bh = self.bw = self.dh = self.dw = 0


class ScanFrame(Protocol):
    """The parts of a frame that decoding one scan reads: Huffman lookup tables by table id, the restart
    interval and the MCU layout of a scan's components."""

    dc: dict[int, list[int]]
    ac: dict[int, list[int]]
    restart: int

    def scan_layout(self, comps: list[Component]) -> tuple[int, int, list[tuple[int, int, int, int]]]: ...
