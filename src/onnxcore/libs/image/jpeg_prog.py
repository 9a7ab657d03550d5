"""Progressive JPEG scans (SOF2, Huffman) for ImageDecoder (private): spectral selection and successive
approximation, DC and AC, first and refinement passes, end-of-band runs and restart intervals, with
libjpeg's handling of each (jdphuff.c semantics, written from ITU-T T.81 Annex G).
"""

from __future__ import annotations

from array import array

from onnxcore.libs.image.common import CorruptImage
from onnxcore.libs.image.jpeg_common import NATURAL, Component, ScanFrame, windows

__all__ = ["decode_progressive_scan"]


class _Bits:
    """MSB-first bit reader over one unstuffed restart interval (4 zero octets of padding), peeking through
    the 32-bit windows of :func:`~onnxcore.libs.image.jpeg_common.windows` (one list index per read)."""

    __slots__ = ("bp", "limit", "win")

    def __init__(self, buf: bytes) -> None:
        self.win = windows(buf)
        self.bp = 0
        self.limit = 8 * (len(buf) - 4)

    def bits(self, s: int) -> int:
        bp = self.bp
        if bp > self.limit:
            raise CorruptImage("entropy-coded data truncated")
        self.bp = bp + s
        return (self.win[bp >> 3] >> (32 - (bp & 7) - s)) & ((1 << s) - 1)

    def bit(self) -> int:
        bp = self.bp
        if bp > self.limit:
            raise CorruptImage("entropy-coded data truncated")
        self.bp = bp + 1
        return (self.win[bp >> 3] >> (31 - (bp & 7))) & 1

    def symbol(self, lut: list[int]) -> int:
        bp = self.bp
        if bp > self.limit:
            raise CorruptImage("entropy-coded data truncated")
        e = lut[(self.win[bp >> 3] >> (16 - (bp & 7))) & 0xFFFF]
        if not e:
            raise CorruptImage("bad Huffman code")
        self.bp = bp + (e >> 8)
        return e & 255

    def extend(self, s: int) -> int:
        v = self.bits(s)
        return v - (1 << s) + 1 if v < 1 << (s - 1) else v


def _wrap16(v: int) -> int:
    return ((v + 32768) & 0xFFFF) - 32768


def decode_progressive_scan(
    frame: ScanFrame,
    comps: list[Component],
    tables: list[tuple[int, int]],
    chunks: list[bytes],
    ss: int,
    se: int,
    ah: int,
    al: int,
) -> None:
    """Decode one progressive scan into the components' coefficient arrays."""
    natural = NATURAL

    if ss == 0:
        if se != 0:
            raise CorruptImage("progressive DC scan with Se != 0")
    elif se < ss or se > 63 or len(comps) != 1:
        raise CorruptImage("progressive AC scan parameters")
    if (ah and al != ah - 1) or al > 13:
        raise CorruptImage("successive approximation parameters")
    try:
        if ss == 0 and not ah:
            luts = [frame.dc[t[0]] for t in tables]
        elif ss:
            luts = [frame.ac[t[1]] for t in tables]
        else:
            luts = []
    except KeyError:
        raise CorruptImage("Huffman table missing") from None
    mx_n, my_n, layout = frame.scan_layout(comps)
    hv = [(1, 1)] if len(comps) == 1 else [(c.h, c.v) for c in comps]
    coefs = [c.coef for c in comps]
    interval = frame.restart
    chunk_i = 0
    rd = _Bits(chunks[0])
    pred = [0] * len(comps)
    eobrun = 0
    p1 = 1 << al
    m1 = -1 << al
    for mcu in range(mx_n * my_n):
        if interval and mcu and mcu % interval == 0:
            chunk_i += 1
            if chunk_i >= len(chunks):
                raise CorruptImage("restart marker missing")
            rd = _Bits(chunks[chunk_i])
            pred = [0] * len(comps)
            eobrun = 0
        my, mx = divmod(mcu, mx_n)
        for ci, dy, dx, bw in layout:
            h, v = hv[ci]
            base = ((my * v + dy) * bw + mx * h + dx) * 64
            co = coefs[ci]
            if ss == 0:
                if not ah:
                    s = rd.symbol(luts[ci])
                    if s > 15:
                        raise CorruptImage("bad DC category")
                    pred[ci] += rd.extend(s) if s else 0
                    co[base] = _wrap16(pred[ci] << al)
                elif rd.bit():
                    co[base] = _wrap16(co[base] | p1)
                continue
            if not ah:
                if eobrun:
                    eobrun -= 1
                    continue
                k = ss
                while k <= se:
                    rs = rd.symbol(luts[0])
                    r, s = rs >> 4, rs & 15
                    if s:
                        k += r
                        co[base + natural[k]] = _wrap16(rd.extend(s) << al)
                    elif r == 15:
                        k += 15
                    else:
                        eobrun = (1 << r) + (rd.bits(r) if r else 0) - 1
                        break
                    k += 1
                continue
            eobrun = _refine_ac(rd, co, base, ss, se, p1, m1, luts[0], natural, eobrun)
        if rd.bp > rd.limit:
            raise CorruptImage("entropy-coded data truncated")


def _refine_ac(
    rd: _Bits,
    c: array[int],
    base: int,
    ss: int,
    se: int,
    p1: int,
    m1: int,
    lut: list[int],
    natural: tuple[int, ...],
    eobrun: int,
) -> int:
    """One block of an AC refinement scan (T.81 G.1.2.3); returns the end-of-band run left.

    The hottest loop of progressive decoding: the reads are inlined on the reader's windows (a block reads
    at most ~140 octets, within their zero padding); the caller checks the position after each MCU.
    """
    win = rd.win
    bp = rd.bp
    k = ss
    if not eobrun:
        while k <= se:
            if bp > rd.limit:
                raise CorruptImage("entropy-coded data truncated")
            e = lut[(win[bp >> 3] >> (16 - (bp & 7))) & 0xFFFF]
            if not e:
                raise CorruptImage("bad Huffman code")
            bp += e >> 8
            rs = e & 255
            r, s = rs >> 4, rs & 15
            if s:
                # libjpeg only warns about a size other than 1 and reads one bit anyway.
                s = p1 if (win[bp >> 3] >> (31 - (bp & 7))) & 1 else m1
                bp += 1
            elif r != 15:
                eobrun = 1 << r
                if r:
                    eobrun += (win[bp >> 3] >> (32 - (bp & 7) - r)) & ((1 << r) - 1)
                    bp += r
                break
            while k <= se:
                pos = base + natural[k]
                cur = c[pos]
                if cur:
                    bit = (win[bp >> 3] >> (31 - (bp & 7))) & 1
                    bp += 1
                    if bit and not cur & p1:
                        c[pos] = cur + (p1 if cur >= 0 else m1)
                else:
                    r -= 1
                    if r < 0:
                        break
                k += 1
            if s:
                c[base + natural[k]] = s
            k += 1
    if eobrun:
        while k <= se:
            pos = base + natural[k]
            cur = c[pos]
            if cur:
                bit = (win[bp >> 3] >> (31 - (bp & 7))) & 1
                bp += 1
                if bit and not cur & p1:
                    c[pos] = cur + (p1 if cur >= 0 else m1)
            k += 1
        eobrun -= 1
    rd.bp = bp
    return eobrun
