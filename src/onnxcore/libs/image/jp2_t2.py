"""JPEG 2000 tier-2 decoding (private): tile-component geometry, precincts and code-blocks (T.800
Annex B), packet headers with their tag trees, and the five progression orders with POC (B.12).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from onnxcore.libs.image.common import CorruptImage

__all__ = [
    "Band",
    "BitReader",
    "CodeBlock",
    "Exhausted",
    "PrecinctBand",
    "Resolution",
    "build_resolutions",
    "progression",
    "read_packet_header",
]


class Exhausted(Exception):
    """The packet data ran out: what was read so far is decoded, the rest is treated as absent."""


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


class BitReader:
    """Packet header bits, MSB first, with the bit stuffing of T.800 B.10.1 (after 0xFF, 7 bits)."""

    __slots__ = ("byte", "ct", "data", "end", "pos")

    def __init__(self, data: bytes, pos: int, end: int) -> None:
        self.data = data
        self.pos = pos
        self.end = end
        self.byte = 0
        self.ct = 0

    def bit(self) -> int:
        if self.ct == 0:
            if self.pos >= self.end:
                raise Exhausted
            prev = self.byte
            self.byte = self.data[self.pos]
            self.pos += 1
            self.ct = 7 if prev == 0xFF else 8
        self.ct -= 1
        return (self.byte >> self.ct) & 1

    def bits(self, n: int) -> int:
        v = 0
        for _ in range(n):
            v = (v << 1) | self.bit()
        return v

    def align(self) -> None:
        """End of a packet header: a final 0xFF octet is followed by a stuffed one (B.10.1)."""
        if self.byte == 0xFF:
            self.pos += 1
        self.byte = 0
        self.ct = 0


class _TagTree:
    """Tag tree decoder, T.800 B.10.2."""

    __slots__ = ("dims", "known", "low")

    def __init__(self, w: int, h: int) -> None:
        self.dims: list[tuple[int, int]] = []
        while True:
            self.dims.append((w, h))
            if w <= 1 and h <= 1:
                break
            w, h = (w + 1) >> 1, (h + 1) >> 1
        self.low = [[0] * (a * b) for a, b in self.dims]
        self.known = [[False] * (a * b) for a, b in self.dims]

    def below(self, x: int, y: int, threshold: int, rd: BitReader) -> int | None:
        """The leaf's value if it is below ``threshold``, else None (reading only the bits needed)."""
        low = 0
        v = 0
        for lvl in range(len(self.dims) - 1, -1, -1):
            w = self.dims[lvl][0]
            i = (y >> lvl) * w + (x >> lvl)
            lows, known = self.low[lvl], self.known[lvl]
            v = max(lows[i], low)
            while v < threshold and not known[i]:
                if rd.bit():
                    known[i] = True
                else:
                    v += 1
            lows[i] = v
            if v >= threshold:
                return None
            low = v
        return v


class CodeBlock:
    """A code-block's position in its sub-band and what the packets have delivered for it."""

    __slots__ = ("included", "lblock", "passes", "segs", "x0", "x1", "y0", "y1", "zbp")

    def __init__(self, x0: int, y0: int, x1: int, y1: int) -> None:
        self.x0, self.y0, self.x1, self.y1 = x0, y0, x1, y1
        self.included = False
        self.lblock = 3
        self.zbp = 0
        self.passes = 0
        # Codeword segments: [octets, passes so far, maximum passes].
        self.segs: list[list[object]] = []


class Band:
    """A sub-band of one tile-component: orientation, level n_b, bounds and bit-plane count M_b."""

    __slots__ = ("index", "level", "mb", "orient", "x0", "x1", "y0", "y1")

    def __init__(self, orient: int, level: int, x0: int, y0: int, x1: int, y1: int, index: int) -> None:
        self.orient, self.level = orient, level
        self.x0, self.y0, self.x1, self.y1 = x0, y0, x1, y1
        self.mb = 0
        self.index = index  # position of the sub-band in QCD/QCC order


class PrecinctBand:
    """The code-blocks of one sub-band inside one precinct, with the precinct's two tag trees."""

    __slots__ = ("band", "cbs", "incl", "ncbx", "zbp")

    def __init__(self, band: Band, cbs: list[CodeBlock], ncbx: int, ncby: int) -> None:
        self.band = band
        self.cbs = cbs
        self.ncbx = ncbx
        self.incl = _TagTree(ncbx, ncby)
        self.zbp = _TagTree(ncbx, ncby)


class Resolution:
    """One resolution level of a tile-component with its precinct partition (B.6)."""

    __slots__ = ("bands", "prec_x", "prec_y", "precincts", "x0", "x1", "y0", "y1")

    def __init__(self, x0: int, y0: int, x1: int, y1: int) -> None:
        self.x0, self.y0, self.x1, self.y1 = x0, y0, x1, y1
        self.bands: list[Band] = []
        self.precincts: list[list[PrecinctBand]] = []
        # Reference-grid coordinates of each precinct column / row, used by position progressions.
        self.prec_x: list[int] = []
        self.prec_y: list[int] = []


def build_resolutions(
    tcx0: int,
    tcy0: int,
    tcx1: int,
    tcy1: int,
    levels: int,
    xcb: int,
    ycb: int,
    ppx: list[int],
    ppy: list[int],
    dx: int,
    dy: int,
    tx0: int,
    ty0: int,
    budget: list[int],
) -> list[Resolution]:
    """Partition a tile-component into resolutions, sub-bands, precincts and code-blocks (B.5 - B.7).

    Args:
        tcx0: Tile-component bounds (B-12): left.
        tcy0: Top.
        tcx1: Right (exclusive).
        tcy1: Bottom (exclusive).
        levels: Number of decomposition levels N_L.
        xcb: Code-block width exponent.
        ycb: Code-block height exponent.
        ppx: Precinct width exponent of each resolution.
        ppy: Precinct height exponent of each resolution.
        dx: Component sub-sampling XRsiz.
        dy: Component sub-sampling YRsiz.
        tx0: Tile's left edge on the reference grid (where position progressions start).
        ty0: Tile's top edge on the reference grid.
        budget: One-element list: how many more code-blocks may be created; exceeding it is a
            corrupt stream (a sane encoder never makes more code-blocks than samples).

    Returns:
        The N_L + 1 resolutions, lowest first.
    """
    out = []
    for r in range(levels + 1):
        sh = levels - r
        rx0, ry0 = _ceil_div(tcx0, 1 << sh), _ceil_div(tcy0, 1 << sh)
        rx1, ry1 = _ceil_div(tcx1, 1 << sh), _ceil_div(tcy1, 1 << sh)
        res = Resolution(rx0, ry0, rx1, ry1)
        if r == 0:
            res.bands.append(Band(0, levels, rx0, ry0, rx1, ry1, 0))
        else:
            nb = levels - r + 1
            for orient, xob, yob in ((1, 1, 0), (2, 0, 1), (3, 1, 1)):
                # B-15: sub-band bounds from the tile-component bounds.
                bx0 = _ceil_div(tcx0 - (xob << (nb - 1)), 1 << nb)
                by0 = _ceil_div(tcy0 - (yob << (nb - 1)), 1 << nb)
                bx1 = _ceil_div(tcx1 - (xob << (nb - 1)), 1 << nb)
                by1 = _ceil_div(tcy1 - (yob << (nb - 1)), 1 << nb)
                res.bands.append(Band(orient, nb, bx0, by0, bx1, by1, 3 * r - 3 + orient))
        px, py = ppx[r], ppy[r]
        npx = (_ceil_div(rx1, 1 << px) - (rx0 >> px)) if rx1 > rx0 else 0
        npy = (_ceil_div(ry1, 1 << py) - (ry0 >> py)) if ry1 > ry0 else 0
        # B.6: a sub-band of resolution r > 0 sees precincts of half the size; code-blocks never
        # straddle a precinct (B.7).
        bpx, bpy = (px, py) if r == 0 else (px - 1, py - 1)
        cbw, cbh = min(xcb, bpx), min(ycb, bpy)
        for j in range(npy):
            for i in range(npx):
                pbands = []
                for band in res.bands:
                    qx0 = max(band.x0, ((rx0 >> px) + i) << bpx)
                    qy0 = max(band.y0, ((ry0 >> py) + j) << bpy)
                    qx1 = min(band.x1, ((rx0 >> px) + i + 1) << bpx)
                    qy1 = min(band.y1, ((ry0 >> py) + j + 1) << bpy)
                    cbs: list[CodeBlock] = []
                    ncbx = ncby = 0
                    if qx1 > qx0 and qy1 > qy0:
                        cx0, cy0 = qx0 >> cbw, qy0 >> cbh
                        ncbx = _ceil_div(qx1, 1 << cbw) - cx0
                        ncby = _ceil_div(qy1, 1 << cbh) - cy0
                        budget[0] -= ncbx * ncby
                        if budget[0] < 0:
                            raise CorruptImage("JPEG 2000: more code-blocks than samples")
                        for cy in range(cy0, cy0 + ncby):
                            for cx in range(cx0, cx0 + ncbx):
                                cbs.append(
                                    CodeBlock(
                                        max(qx0, cx << cbw),
                                        max(qy0, cy << cbh),
                                        min(qx1, (cx + 1) << cbw),
                                        min(qy1, (cy + 1) << cbh),
                                    )
                                )
                    pbands.append(PrecinctBand(band, cbs, ncbx, ncby))
                res.precincts.append(pbands)
        res.prec_x = [max(tx0, (((rx0 >> px) + i) << (px + sh)) * dx) for i in range(npx)]
        res.prec_y = [max(ty0, (((ry0 >> py) + j) << (py + sh)) * dy) for j in range(npy)]
        out.append(res)
    return out


def _npasses(rd: BitReader) -> int:
    # Number of coding passes, T.800 Table B.4.
    if not rd.bit():
        return 1
    if not rd.bit():
        return 2
    v = rd.bits(2)
    if v < 3:
        return 3 + v
    v = rd.bits(5)
    if v < 31:
        return 6 + v
    return 37 + rd.bits(7)


def read_packet_header(
    rd: BitReader, pbands: list[PrecinctBand], layer: int, seg_limit: Callable[[int], int]
) -> list[tuple[CodeBlock, list[tuple[int, int]]]]:
    """Read one packet header (B.10), updating the code-blocks' inclusion, bit-planes and segments.

    Args:
        rd: The header bits (in the packet, or in PPM/PPT packed headers).
        pbands: The precinct's code-blocks, per sub-band.
        layer: The packet's layer.
        seg_limit: Capacity of a codeword segment from its first pass index (D.4).

    Returns:
        Per contributing code-block, its (segment index, length) chunks in body order: each chunk
        either continues the code-block's last unfinished codeword segment or starts a new one.

    Raises:
        Exhausted: The header runs past the end of the data.
    """
    contrib: list[tuple[CodeBlock, list[tuple[int, int]]]] = []
    if not rd.bit():
        return contrib  # zero-length packet
    for pb in pbands:
        ncbx = pb.ncbx
        for k, cb in enumerate(pb.cbs):
            x, y = k % ncbx, k // ncbx
            if cb.included:
                if not rd.bit():
                    continue
            else:
                if pb.incl.below(x, y, layer + 1, rd) is None:
                    continue
                # Missing most significant bit-planes: decode the tag tree to the end (bounded so a
                # hostile stream cannot loop; 80 is above any M_b the syntax allows).
                t = 1
                while (z := pb.zbp.below(x, y, t, rd)) is None:
                    t += 1
                    if t > 80:
                        raise CorruptImage("JPEG 2000: zero bit-plane count out of range")
                cb.zbp = z
                cb.included = True
            n = _npasses(rd)
            while rd.bit():
                cb.lblock += 1
            chunks = []
            first = cb.passes
            segs = cb.segs
            room = (segs[-1][2] - segs[-1][1]) if segs else 0  # type: ignore[operator]
            while n > 0:
                if room <= 0:
                    room = seg_limit(first)
                    segs.append([b"", 0, room])
                take = min(n, room)
                length = rd.bits(cb.lblock + take.bit_length() - 1)
                chunks.append((len(segs) - 1, length))
                segs[-1][1] += take  # type: ignore[operator]
                room -= take
                first += take
                n -= take
            cb.passes = first
            contrib.append((cb, chunks))
    return contrib


def progression(
    order: int,
    pocs: list[tuple[int, int, int, int, int, int]],
    comps: list[list[Resolution]],
    layers: int,
) -> Iterator[tuple[int, int, int, int]]:
    """Yield (layer, resolution, component, precinct) in packet order (B.12), honouring POC entries.

    A packet is never yielded twice: each precinct resumes at its next layer (B.12.1). The position
    orders sort precincts by where the loops of B.12.1.3 - B.12.1.5 first meet them on the reference
    grid (a precinct's corner, or the tile's edge for the first row or column).

    Args:
        order: Progression order of COD: 0 LRCP, 1 RLCP, 2 RPCL, 3 PCRL, 4 CPRL.
        pocs: POC entries (RSpoc, CSpoc, LYEpoc, REpoc, CEpoc, Ppoc); none: the whole tile in ``order``.
        comps: Each component's resolutions.
        layers: Number of layers.

    Yields:
        (layer, resolution, component, precinct index) of each packet.
    """
    nextl = [[[0] * len(res.precincts) for res in c] for c in comps]
    if not pocs:
        pocs = [(0, 0, layers, 33, len(comps), order)]
    for rs, cs, lye, re_, ce, prog in pocs:
        lye = min(lye, layers)
        ce = min(ce, len(comps))
        cidx = range(cs, ce)
        maxr = min(re_, max((len(c) for c in comps), default=0))
        if prog in (0, 1):
            # Only (r, c) pairs that have precincts, and only layers some precinct still needs: every
            # layer iterated then yields a packet, so a hostile layer count cannot spin without reading.
            work = [(r, c) for r in range(rs, maxr) for c in cidx if r < len(comps[c]) and nextl[c][r]]
            if prog == 0:
                first = min((min(nextl[c][r]) for r, c in work), default=lye)
                seq = ((lay, r, c) for lay in range(first, lye) for r, c in work)
            else:
                seq = (
                    (lay, r, c)
                    for r in range(rs, maxr)
                    for lay in range(min((min(nextl[c][r2]) for r2, c in work if r2 == r), default=lye), lye)
                    for r2, c in work
                    if r2 == r
                )
            for lay, r, c in seq:
                nl = nextl[c][r]
                for p in range(len(nl)):
                    if nl[p] == lay:
                        nl[p] = lay + 1
                        yield lay, r, c, p
        elif prog in (2, 3, 4):
            keyed = []
            for c in cidx:
                for r in range(rs, min(maxr, len(comps[c]))):
                    res = comps[c][r]
                    npx = len(res.prec_x)
                    for p in range(len(res.precincts)):
                        x, y = res.prec_x[p % npx], res.prec_y[p // npx]
                        key = (r, y, x, c) if prog == 2 else ((y, x, c, r) if prog == 3 else (c, y, x, r))
                        keyed.append((key, c, r, p))
            keyed.sort(key=lambda t: t[0])
            for _key, c, r, p in keyed:
                nl = nextl[c][r]
                while nl[p] < lye:
                    lay = nl[p]
                    nl[p] = lay + 1
                    yield lay, r, c, p
        else:
            raise CorruptImage(f"JPEG 2000: progression order {prog}")
