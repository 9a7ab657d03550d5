"""JPEG 2000 decoding for ImageDecoder (private): JP2 files and raw codestreams, ITU-T T.800 |
ISO/IEC 15444-1, producing what Pillow (OpenJPEG) gives after ``convert("RGB")`` / ``convert("L")``.

This module reads the JP2 boxes (Annex I) and the codestream markers (Annex A), then decodes each
tile: tier-2 (:mod:`.jp2_t2`), tier-1 (:mod:`.jp2_t1`), dequantisation (Annex E), the inverse wavelet
and component transforms (:mod:`.jp2_dwt`), and the DC level shift (G.1).

Reversible (5-3) streams decode exactly. The 9-7 path runs in float32 with OpenJPEG's order of
operations and scaling convention (see :mod:`.jp2_dwt`), which reproduces its output on every
stream tried; a different float evaluation order could still move a sample by one.

Refused with EvaluationError: palettes (pclr), channel definitions that reorder (cdef), sYCC and other
enumerated colour spaces than grey and sRGB, high-throughput (Part 15) code-blocks.
"""

from __future__ import annotations

import struct

import numpy as np

from onnxcore.errors import EvaluationError, LimitError
from onnxcore.libs.image.common import CorruptImage, check_size
from onnxcore.libs.image.jp2_dwt import idwt_level, inverse_ict, inverse_rct
from onnxcore.libs.image.jp2_t1 import decode_codeblock, segment_limits
from onnxcore.libs.image.jp2_t2 import (
    Band,
    BitReader,
    Exhausted,
    Resolution,
    build_resolutions,
    progression,
    read_packet_header,
)
from onnxcore.limits import Limits

__all__ = ["decode_jpeg2000", "JP2_SIGNATURE", "J2K_SIGNATURE"]

JP2_SIGNATURE = b"\x00\x00\x00\x0cjP  \r\n\x87\n"
J2K_SIGNATURE = b"\xff\x4f\xff\x51"

_MAX_TILES = 1 << 16
_MAX_COMPONENTS = 16384  # Csiz <= 16384 (T.800 Table A.9)


def _u16(b: bytes, i: int) -> int:
    if i + 2 > len(b):
        raise CorruptImage("JPEG 2000: truncated marker segment")
    return (b[i] << 8) | b[i + 1]


def _u32(b: bytes, i: int) -> int:
    if i + 4 > len(b):
        raise CorruptImage("JPEG 2000: truncated marker segment")
    return int.from_bytes(b[i : i + 4], "big")


# ------------------------------------------------------------------------------------------ JP2
def _parse_jp2(data: bytes) -> bytes:
    """Walk the JP2 boxes (T.800 Annex I) and return the contiguous codestream."""
    pos = 0
    codestream = None
    header_seen = False
    while pos + 8 <= len(data):
        lbox, tbox = _u32(data, pos), data[pos + 4 : pos + 8]
        hdr = 8
        if lbox == 1:
            if pos + 16 > len(data):
                raise CorruptImage("JP2: truncated box header")
            lbox, hdr = int.from_bytes(data[pos + 8 : pos + 16], "big"), 16
        elif lbox == 0:
            lbox = len(data) - pos
        if lbox < hdr:
            raise CorruptImage("JP2: box length")
        body = data[pos + hdr : pos + lbox]
        if tbox == b"jp2h":
            header_seen = True
            _check_jp2h(body)
        elif tbox == b"jp2c":
            codestream = body
            break
        pos += lbox
    if codestream is None or not header_seen:
        raise CorruptImage("JP2: no header or codestream box")
    return codestream


def _check_jp2h(body: bytes) -> None:
    # Only the boxes that change what the samples mean matter: refuse those we do not apply.
    pos = 0
    while pos + 8 <= len(body):
        lbox, tbox = _u32(body, pos), body[pos + 4 : pos + 8]
        if lbox < 8:
            lbox = len(body) - pos
        sub = body[pos + 8 : pos + lbox]
        if tbox == b"pclr":
            raise EvaluationError("ImageDecoder: JPEG 2000 palette (pclr box) is not implemented")
        if tbox == b"colr" and len(sub) >= 7 and sub[0] == 1:
            enum = _u32(sub, 3)
            if enum not in (16, 17):
                raise EvaluationError(f"ImageDecoder: JPEG 2000 colour space {enum} is not implemented")
        if tbox == b"cdef" and len(sub) >= 2:
            n = _u16(sub, 0)
            for i in range(n):
                cn, typ, asoc = _u16(sub, 2 + 6 * i), _u16(sub, 4 + 6 * i), _u16(sub, 6 + 6 * i)
                if typ == 0 and asoc != cn + 1:
                    raise EvaluationError("ImageDecoder: JPEG 2000 channel reordering (cdef) is not implemented")
        pos += lbox


# ----------------------------------------------------------------------------------- codestream
class _Coding:
    """Per-component coding style (SPcod / SPcoc, T.800 A.6.1 - A.6.2)."""

    __slots__ = ("levels", "ppx", "ppy", "reversible", "style", "xcb", "ycb")

    def __init__(self, seg: bytes, i: int, precincts: bool) -> None:
        if i + 5 > len(seg):
            raise CorruptImage("JPEG 2000: COD/COC too short")
        self.levels = seg[i]
        self.xcb = (seg[i + 1] & 0xF) + 2
        self.ycb = (seg[i + 2] & 0xF) + 2
        self.style = seg[i + 3]
        self.reversible = seg[i + 4] == 1
        if self.levels > 32 or self.xcb > 10 or self.ycb > 10 or self.xcb + self.ycb > 12:
            raise CorruptImage("JPEG 2000: coding style out of range")
        if seg[i + 4] > 1 or self.style & 0x80:
            # Other transforms (and style bit 7) belong to Part 2, which OpenJPEG does not decode either.
            raise CorruptImage("JPEG 2000: wavelet or code-block style outside Part 1")
        if self.style & 0x40:
            raise EvaluationError("ImageDecoder: high-throughput JPEG 2000 (HTJ2K) code-blocks are not implemented")
        n = self.levels + 1
        if precincts:
            if i + 5 + n > len(seg):
                raise CorruptImage("JPEG 2000: precinct sizes missing")
            pp = seg[i + 5 : i + 5 + n]
            self.ppx = [b & 0xF for b in pp]
            self.ppy = [b >> 4 for b in pp]
            if any(x == 0 or y == 0 for x, y in zip(self.ppx[1:], self.ppy[1:], strict=True)):
                raise CorruptImage("JPEG 2000: precinct size 1 at a resolution above 0")
        else:
            self.ppx = [15] * n
            self.ppy = [15] * n


class _Quant:
    """Per-component quantisation (SPqcd / SPqcc, T.800 A.6.4 - A.6.5)."""

    __slots__ = ("guard", "steps", "style")

    def __init__(self, seg: bytes, i: int) -> None:
        if i >= len(seg):
            raise CorruptImage("JPEG 2000: QCD/QCC too short")
        self.style = seg[i] & 0x1F
        self.guard = seg[i] >> 5
        body = seg[i + 1 :]
        if self.style == 0:
            self.steps = [(b >> 3, 0) for b in body]
        elif self.style in (1, 2):
            self.steps = [(_u16(body, k) >> 11, _u16(body, k) & 0x7FF) for k in range(0, len(body) - 1, 2)]
        else:
            raise CorruptImage(f"JPEG 2000: quantisation style {self.style}")
        if not self.steps:
            raise CorruptImage("JPEG 2000: no quantisation step sizes")

    def step(self, index: int, levels: int, level: int) -> tuple[int, int]:
        """(exponent, mantissa) of sub-band ``index``; derived from the LL values if style 1 (E-5)."""
        if self.style == 1:
            e0, m0 = self.steps[0]
            return e0 - levels + level, m0
        if index >= len(self.steps):
            raise CorruptImage("JPEG 2000: too few quantisation step sizes")
        return self.steps[index]


class _Params:
    """Coding parameters in force (main header, overridden by a tile's first tile-part header)."""

    def __init__(self, ncomp: int) -> None:
        self.order = 0
        self.layers = 1
        self.mct = 0
        self.sop = False
        self.eph = False
        self.coding: list[_Coding | None] = [None] * ncomp
        self.quant: list[_Quant | None] = [None] * ncomp
        self.roi = [0] * ncomp
        self.pocs: list[tuple[int, int, int, int, int, int]] = []
        self.coc_set = [False] * ncomp
        self.qcc_set = [False] * ncomp

    def copy(self) -> _Params:
        p = _Params(len(self.coding))
        p.order, p.layers, p.mct, p.sop, p.eph = self.order, self.layers, self.mct, self.sop, self.eph
        p.coding, p.quant, p.roi = list(self.coding), list(self.quant), list(self.roi)
        p.pocs = list(self.pocs)
        return p

    def apply(self, marker: int, seg: bytes, ncomp: int) -> None:
        """Apply one COD/COC/QCD/QCC/RGN/POC segment (body without the length field)."""
        cbytes = 2 if ncomp >= 257 else 1

        def comp(i: int) -> int:
            c = _u16(seg, i) if cbytes == 2 else seg[i]
            if c >= ncomp:
                raise CorruptImage("JPEG 2000: component index out of range")
            return c

        if marker == 0xFF52:  # COD, A.6.1
            if len(seg) < 5:
                raise CorruptImage("JPEG 2000: COD too short")
            scod = seg[0]
            self.sop, self.eph = bool(scod & 2), bool(scod & 4)
            self.order, self.layers, self.mct = seg[1], _u16(seg, 2), seg[4]
            if self.layers == 0:
                raise CorruptImage("JPEG 2000: zero layers")
            if self.order > 4:
                raise CorruptImage("JPEG 2000: progression order")
            cod = _Coding(seg, 5, bool(scod & 1))
            # A COD does not override a COC of the same header level (A.6.2 precedence).
            for c in range(ncomp):
                if not self.coc_set[c]:
                    self.coding[c] = cod
        elif marker == 0xFF53:  # COC, A.6.2
            c = comp(0)
            if len(seg) < cbytes + 1:
                raise CorruptImage("JPEG 2000: COC too short")
            self.coding[c] = _Coding(seg, cbytes + 1, bool(seg[cbytes] & 1))
            self.coc_set[c] = True
        elif marker == 0xFF5C:  # QCD, A.6.4
            q = _Quant(seg, 0)
            for c in range(ncomp):
                if not self.qcc_set[c]:
                    self.quant[c] = q
        elif marker == 0xFF5D:  # QCC, A.6.5
            c = comp(0)
            self.quant[c] = _Quant(seg, cbytes)
            self.qcc_set[c] = True
        elif marker == 0xFF5E:  # RGN, A.6.3: only the implicit (max-shift) method exists in Part 1
            c = comp(0)
            if len(seg) < cbytes + 2 or seg[cbytes] != 0:
                raise CorruptImage("JPEG 2000: RGN style")
            self.roi[c] = seg[cbytes + 1]
        elif marker == 0xFF5F:  # POC, A.6.6
            step = 5 + 2 * cbytes
            for k in range(0, len(seg) - step + 1, step):
                rs = seg[k]
                cs = _u16(seg, k + 1) if cbytes == 2 else seg[k + 1]
                lye = _u16(seg, k + 1 + cbytes)
                re_ = seg[k + 3 + cbytes]
                ce = _u16(seg, k + 4 + cbytes) if cbytes == 2 else seg[k + 4 + cbytes]
                prog = seg[k + 4 + 2 * cbytes]
                if prog > 4:
                    raise CorruptImage("JPEG 2000: POC progression order")
                self.pocs.append((rs, cs, lye, re_, ce if ce else 256, prog))


class _Tile:
    __slots__ = ("headers", "params", "parts", "ppt")

    def __init__(self, params: _Params) -> None:
        self.params = params
        self.parts: list[bytes] = []
        self.ppt: list[tuple[int, bytes]] = []
        self.headers: list[bytes] = []  # PPM chunks of this tile's tile-parts


def decode_jpeg2000(data: bytes, limits: Limits | None) -> np.ndarray:
    """Decode a JP2 file or a raw JPEG 2000 codestream to uint8 (H, W, 1) grey or (H, W, 3) RGB.

    Args:
        data: The encoded stream (JP2 signature box first, or the SOC + SIZ markers).
        limits: Resource limits for the decoded image size.

    Returns:
        The image as Pillow/OpenJPEG decode it: more than 8 bits per sample are shifted down (RGB) or
        clipped (single component, as Pillow's I;16 to L), fewer are shifted up; alpha is dropped.

    Raises:
        CorruptImage: The stream cannot be decoded.
        EvaluationError: A valid stream uses a feature that is not implemented.
    """
    try:
        return _decode(data, limits)
    except (CorruptImage, EvaluationError, LimitError):
        raise
    except (IndexError, ValueError, KeyError, ZeroDivisionError, OverflowError, struct.error) as e:
        raise CorruptImage(f"JPEG 2000: {type(e).__name__}: {e}") from None
    except MemoryError:
        # Within max_tensor_elements but beyond this machine: still a limit, never a MemoryError.
        raise LimitError("ImageDecoder: JPEG 2000 image too large for the available memory") from None


def _decode(data: bytes, limits: Limits | None) -> np.ndarray:
    cs = _parse_jp2(data) if data.startswith(JP2_SIGNATURE) else data
    if not cs.startswith(J2K_SIGNATURE):
        raise CorruptImage("JPEG 2000: codestream does not start with SOC, SIZ")
    # SIZ, A.5.1
    lsiz = _u16(cs, 4)
    siz = cs[6 : 4 + lsiz]
    if len(siz) < 36 or lsiz < 41:
        raise CorruptImage("JPEG 2000: SIZ too short")
    xsiz, ysiz, xo, yo, xt, yt, xto, yto = (_u32(siz, 2 + 4 * k) for k in range(8))
    ncomp = _u16(siz, 34)
    if ncomp == 0 or ncomp > _MAX_COMPONENTS or len(siz) < 36 + 3 * ncomp:
        raise CorruptImage("JPEG 2000: component count")
    # Signedness (bit 7 of Ssiz) needs no handling: Pillow offsets a signed component by the same
    # 2**(prec - 1) that the DC level shift adds to an unsigned one.
    prec, dxs, dys = [], [], []
    for c in range(ncomp):
        prec.append((siz[36 + 3 * c] & 0x7F) + 1)
        dxs.append(siz[37 + 3 * c])
        dys.append(siz[38 + 3 * c])
    if (
        xsiz <= xo
        or ysiz <= yo
        or xt == 0
        or yt == 0
        or xto > xo
        or yto > yo
        or xto + xt <= xo
        or yto + yt <= yo
        or any(p > 38 for p in prec)
        or 0 in dxs
        or 0 in dys
    ):
        raise CorruptImage("JPEG 2000: SIZ geometry")
    width, height = xsiz - xo, ysiz - yo
    nch = 1 if ncomp < 3 else 3
    check_size(height, width, max(nch, ncomp), limits)  # every component is decoded
    used = list(range(nch))
    ntx, nty = -(-(xsiz - xto) // xt), -(-(ysiz - yto) // yt)
    if ntx * nty > _MAX_TILES:
        raise CorruptImage("JPEG 2000: too many tiles")

    main = _Params(ncomp)
    pos = 4 + lsiz
    ppm: list[tuple[int, bytes]] = []
    # Main header up to the first SOT (A.4).
    while True:
        marker = _u16(cs, pos)
        if marker == 0xFF90:
            break
        if marker >> 8 != 0xFF or marker < 0xFF30:
            raise CorruptImage(f"JPEG 2000: bad marker {marker:#06x} in main header")
        length = _u16(cs, pos + 2)
        if length < 2 or pos + 2 + length > len(cs):
            raise CorruptImage("JPEG 2000: marker segment length")
        seg = cs[pos + 4 : pos + 2 + length]
        if marker == 0xFF60:  # PPM, A.7.4
            ppm.append((seg[0], seg[1:]))
        elif marker in (0xFF52, 0xFF53, 0xFF5C, 0xFF5D, 0xFF5E, 0xFF5F):
            main.apply(marker, seg, ncomp)
        elif marker == 0xFF51:
            raise CorruptImage("JPEG 2000: second SIZ")
        # TLM, PLM, CRG, COM and unknown segments carry nothing needed for decoding.
        pos += 2 + length
    if any(main.coding[c] is None or main.quant[c] is None for c in range(ncomp)):
        raise CorruptImage("JPEG 2000: COD or QCD missing")

    ppm_chunks: list[bytes] = []
    if ppm:
        packed = b"".join(b for _z, b in sorted(ppm, key=lambda t: t[0]))
        k = 0
        while k + 4 <= len(packed):
            n = _u32(packed, k)
            ppm_chunks.append(packed[k + 4 : k + 4 + n])
            k += 4 + n

    tiles: dict[int, _Tile] = {}
    part_no = 0
    # Tile-parts (A.4.2): SOT, tile-part header markers, SOD, then the packet data.
    while pos + 2 <= len(cs):
        marker = _u16(cs, pos)
        if marker == 0xFFD9:
            break
        if marker != 0xFF90:
            raise CorruptImage(f"JPEG 2000: expected SOT, found {marker:#06x}")
        sot = pos
        if _u16(cs, pos + 2) != 10:
            raise CorruptImage("JPEG 2000: SOT length")
        isot, psot = _u16(cs, pos + 4), _u32(cs, pos + 6)
        if isot >= ntx * nty:
            raise CorruptImage("JPEG 2000: tile index out of range")
        tile = tiles.get(isot)
        if tile is None:
            tile = tiles[isot] = _Tile(main.copy())
        tparams = tile.params
        pos += 12
        while True:
            marker = _u16(cs, pos)
            if marker == 0xFF93:
                pos += 2
                break
            length = _u16(cs, pos + 2)
            if marker >> 8 != 0xFF or length < 2 or pos + 2 + length > len(cs):
                raise CorruptImage("JPEG 2000: tile-part header")
            seg = cs[pos + 4 : pos + 2 + length]
            if marker == 0xFF5F and not tile.parts and tparams.pocs == main.pocs and main.pocs:
                tparams.pocs = []  # a tile POC replaces the main one (A.6.6)
            if marker in (0xFF52, 0xFF53, 0xFF5C, 0xFF5D, 0xFF5E, 0xFF5F):
                tparams.apply(marker, seg, ncomp)
            elif marker == 0xFF61:  # PPT, A.7.5
                tile.ppt.append((seg[0], seg[1:]))
            pos += 2 + length
        end = len(cs) if psot == 0 else min(sot + psot, len(cs))
        if psot == 0 and cs.endswith(b"\xff\xd9"):
            end = len(cs) - 2
        if end < pos:
            raise CorruptImage("JPEG 2000: tile-part length")
        tile.parts.append(cs[pos:end])
        if ppm_chunks:
            tile.headers.append(ppm_chunks[part_no] if part_no < len(ppm_chunks) else b"")
        part_no += 1
        pos = end
        if psot == 0:
            break

    out = np.zeros((height, width, nch), dtype=np.uint8)
    for t in range(ntx * nty):
        p, q = t % ntx, t // ntx
        tx0, ty0 = max(xto + p * xt, xo), max(yto + q * yt, yo)
        tx1, ty1 = min(xto + (p + 1) * xt, xsiz), min(yto + (q + 1) * yt, ysiz)
        tile = tiles.get(t)
        if tile is None or not tile.parts:
            continue  # a tile without data stays black (only in a corrupt stream)
        comps = _decode_tile(tile, tile.params, ncomp, prec, dxs, dys, (tx0, ty0, tx1, ty1), bool(ppm_chunks))
        conv = [_to_8bit(comps[c], prec[c], ncomp == 1) for c in range(ncomp)]
        subsampled = any(dxs[c] != 1 or dys[c] != 1 for c in range(ncomp))
        for c in used:
            v = _upsample(conv, c, ty1 - ty0, tx1 - tx0, dys, dxs) if subsampled else conv[c]
            out[ty0 - yo : ty1 - yo, tx0 - xo : tx1 - xo, c] = v
    return out


def _upsample(comps: list[np.ndarray], c: int, h: int, w: int, dys: list[int], dxs: list[int]) -> np.ndarray:
    # Sub-sampled components are replicated over the tile the way Pillow's unpackers do it: output
    # (y, x) takes sample (y // dy, x // dx) of component c, Pillow addressing the tile's decoded
    # components as one buffer of consecutive components, each taken to hold rows of floor(w / dx)
    # samples, floor(h / dy) rows. When the tile size is not a multiple of the sub-sampling, that is
    # not the real layout and the samples read are shifted; we read the same ones (zero past the end).
    flat = np.concatenate([v.ravel() for v in comps] + [np.zeros(1, dtype=np.uint8)])
    start = sum((w // dxs[k]) * (h // dys[k]) for k in range(c))
    idx = start + (np.arange(h)[:, None] // dys[c]) * (w // dxs[c]) + np.arange(w)[None, :] // dxs[c]
    return flat[np.minimum(idx, flat.size - 1)]


def _to_8bit(v: np.ndarray, prec: int, single: bool) -> np.ndarray:
    # DC level shift (G.1.2) and clamping to the component's range; a signed component gets the same
    # offset from Pillow, so both end in [0, 2**prec). Then Pillow's conversion to 8 bits: fewer bits
    # are shifted up; more bits are, for a single component, widened to 16 bits (its I;16 mode) and
    # clipped at 255 by convert("L"), otherwise rounded down to 8 bits, where the top values wrap to 0
    # (Pillow stores (v + 2**(prec - 9)) >> (prec - 8) in an octet).
    if v.dtype == np.float32:
        v = np.rint(v).astype(np.int64)
    v = np.clip(v + (1 << (prec - 1)), 0, (1 << prec) - 1)
    if prec < 8:
        return (v << (8 - prec)).astype(np.uint8)
    if prec > 8:
        if single:
            return np.minimum(v << (16 - prec) if prec <= 16 else v >> (prec - 16), 255).astype(np.uint8)
        return (((v + (1 << (prec - 9))) >> (prec - 8)) & 0xFF).astype(np.uint8)
    return v.astype(np.uint8)


def _decode_tile(
    tile: _Tile,
    params: _Params,
    ncomp: int,
    prec: list[int],
    dxs: list[int],
    dys: list[int],
    bounds: tuple[int, int, int, int],
    use_ppm: bool,
) -> list[np.ndarray]:
    tx0, ty0, tx1, ty1 = bounds
    budget = [max(64, 4 * (tx1 - tx0) * (ty1 - ty0) * ncomp)]
    comps: list[list[Resolution]] = []
    for c in range(ncomp):
        cod = params.coding[c]
        qnt = params.quant[c]
        assert cod is not None and qnt is not None
        tcx0, tcy0 = -(-tx0 // dxs[c]), -(-ty0 // dys[c])
        tcx1, tcy1 = -(-tx1 // dxs[c]), -(-ty1 // dys[c])
        res = build_resolutions(
            tcx0, tcy0, tcx1, tcy1, cod.levels, cod.xcb, cod.ycb, cod.ppx, cod.ppy, dxs[c], dys[c], tx0, ty0, budget
        )
        for r in res:
            for band in r.bands:
                eps, _mu = qnt.step(band.index, cod.levels, band.level)
                band.mb = qnt.guard + eps - 1 + params.roi[c]
        comps.append(res)

    _read_packets(tile, params, comps, use_ppm)

    result = []
    for c in range(ncomp):
        cod = params.coding[c]
        qnt = params.quant[c]
        assert cod is not None and qnt is not None
        arrays = []
        for r in comps[c]:
            for band in r.bands:
                arrays.append(_band_samples(band, r, cod, qnt, prec[c], params.roi[c]))
        a = arrays[0]
        for lvl in range(1, cod.levels + 1):
            r = comps[c][lvl]
            hl, lh, hh = arrays[3 * lvl - 2], arrays[3 * lvl - 1], arrays[3 * lvl]
            a = idwt_level(a, hl, lh, hh, r.x0, r.y0, r.x1, r.y1, cod.reversible)
        result.append(a)

    if params.mct and ncomp >= 3:
        c0, c1, c2 = params.coding[0], params.coding[1], params.coding[2]
        assert c0 is not None and c1 is not None and c2 is not None
        if not (result[0].shape == result[1].shape == result[2].shape):
            raise CorruptImage("JPEG 2000: component transform on components of different sizes")
        if c0.reversible != c1.reversible or c0.reversible != c2.reversible:
            raise CorruptImage("JPEG 2000: component transform on mixed wavelets")
        if c0.reversible:
            result[0], result[1], result[2] = inverse_rct(result[0], result[1], result[2])
        else:
            f = [x.astype(np.float32) for x in result[:3]]
            result[0], result[1], result[2] = inverse_ict(f[0], f[1], f[2])
    return result


def _read_packets(tile: _Tile, params: _Params, comps: list[list[Resolution]], use_ppm: bool) -> None:
    data = b"".join(tile.parts)
    end = len(data)
    pos = 0
    packed: BitReader | None = None
    if use_ppm or tile.ppt:
        hdr = b"".join(tile.headers) if use_ppm else b"".join(b for _z, b in sorted(tile.ppt, key=lambda t: t[0]))
        packed = BitReader(hdr, 0, len(hdr))
    limits = []
    for c in range(len(comps)):
        cod = params.coding[c]
        assert cod is not None
        limits.append(segment_limits(cod.style))
    try:
        for layer, r, c, p in progression(params.order, params.pocs, comps, params.layers):
            if params.sop and data[pos : pos + 2] == b"\xff\x91":
                pos += 6  # SOP marker segment, A.8.1
            rd = packed if packed is not None else BitReader(data, pos, end)
            contrib = read_packet_header(rd, comps[c][r].precincts[p], layer, limits[c])
            rd.align()
            if params.eph and rd.data[rd.pos : rd.pos + 2] == b"\xff\x92":
                rd.pos += 2  # EPH marker, A.8.2
            if packed is None:
                pos = rd.pos
            for cb, chunks in contrib:
                for seg_index, length in chunks:
                    seg = cb.segs[seg_index]
                    seg[0] = seg[0] + data[pos : pos + length]  # type: ignore[operator]
                    pos += length
            if pos > end:
                raise Exhausted
    except Exhausted:
        pass


def _band_samples(band: Band, res: Resolution, cod: _Coding, qnt: _Quant, prec: int, roi: int) -> np.ndarray:
    h, w = band.y1 - band.y0, band.x1 - band.x0
    reversible = cod.reversible
    a = np.zeros((max(h, 0), max(w, 0)), dtype=np.int64)
    if h <= 0 or w <= 0:
        return a
    for pbands in res.precincts:
        for pb in pbands:
            if pb.band is not band:
                continue
            for cb in pb.cbs:
                if not cb.segs:
                    continue
                segs = [(bytes(s[0]), int(s[1])) for s in cb.segs]  # type: ignore[call-overload]
                cw, ch = cb.x1 - cb.x0, cb.y1 - cb.y0
                vals = decode_codeblock(segs, cw, ch, band.orient, band.mb - cb.zbp, cod.style)
                if vals is None:
                    continue
                v = np.array(vals, dtype=np.int64).reshape(ch, cw)
                if roi:
                    # Max-shift ROI (H.2): coefficients at or above 2**roi are the shifted-up region.
                    m = np.abs(v)
                    big = m >= (2 << roi)
                    v = np.where(big, np.sign(v) * (m >> roi), v)
                a[cb.y0 - band.y0 : cb.y1 - band.y0, cb.x0 - band.x0 : cb.x1 - band.x0] = (
                    np.sign(v) * (np.abs(v) >> 1) if reversible else v
                )
    if reversible:
        return a
    # Scalar dequantisation, E.1.1.1: step = 2**(R_b - eps_b) * (1 + mu_b / 2**11), where R_b would
    # add the sub-band's log2 gain to the precision; the 9-7 synthesis here scales high-pass samples
    # by 2/K rather than 1/K, which takes that gain in. The values carry one extra bit, hence the half.
    if qnt.style == 0:
        return a.astype(np.float32) * np.float32(0.5)
    eps, mu = qnt.step(band.index, cod.levels, band.level)
    step = np.float32((1.0 + mu / 2048.0) * 2.0 ** (prec - eps))
    return a.astype(np.float32) * (np.float32(0.5) * step)
