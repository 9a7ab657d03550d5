"""Lossy WebP ('VP8 ' key frame, RFC 6386) decoding for ImageDecoder (private).

The frame is decoded in three stages. Per macroblock row, the prediction records (first partition) and
the coefficient tokens (token partitions) are read one symbol at a time in Python, the coefficients are
dequantised on the fly, and the inverse WHT/DCT of the whole row runs in numpy (RFC 6386 section 14);
intra prediction and reconstruction follow, macroblock by macroblock (section 12). The loop filter
(section 15) then runs over the unfiltered frame, edge by edge in the order the RFC prescribes, each
edge's 16 (or 2x8) segments at once. Finally the Y'CbCr 4:2:0 frame is cropped and converted to RGB by
:mod:`onnxcore.libs.image.webp_yuv`.

Where the RFC's reference decoder and libwebp (which produced the oracle) could differ on hostile
streams, libwebp's choices are followed: 32-bit intermediates in the transforms, coefficients stored as
16-bit, the Y2 AC factor x * 155 / 100 with a floor of 8, and a stream that asks for bits past the end of
a partition being corrupt.
"""

from __future__ import annotations

import numpy as np

from onnxcore.libs.image.common import CorruptImage, check_size
from onnxcore.libs.image.webp_filter import loop_filter
from onnxcore.libs.image.webp_predict import (
    B_PRED,
    DC_PRED,
    H_PRED,
    TM_PRED,
    V_PRED,
    predict_mb,
    reconstruct_bpred,
)
from onnxcore.libs.image.webp_tables import (
    AC_QLOOKUP,
    COEFF_BANDS,
    COEFF_UPDATE_PROBS,
    DC_QLOOKUP,
    DEFAULT_COEFF_PROBS,
    KF_BMODE_PROBS,
    PCAT,
    ZIGZAG,
)
from onnxcore.libs.image.webp_yuv import yuv420_to_rgb
from onnxcore.limits import Limits

__all__ = ["decode_vp8"]

# Shift that renormalises a range below 128 (RFC 6386 section 7.3: shift until range >= 128).
_NORM = tuple(0 if r == 0 else 7 - (r.bit_length() - 1) for r in range(128))

# RFC 6386 section 11.2 trees, as (left, right) pairs of node indices (leaf: -value; B_DC_PRED is 0).
_B_DC, _B_TM, _B_VE, _B_HE, _B_LD, _B_RD, _B_VR, _B_VL, _B_HD, _B_HU = range(10)
_BMODE_TREE = (
    -_B_DC, 2, -_B_TM, 4, -_B_VE, 6, 8, 12, -_B_HE, 10, -_B_RD, -_B_VR, -_B_LD, 14, -_B_VL, 16, -_B_HD, -_B_HU,
)  # fmt: skip
# Section 11.3 item 4: the sub-block mode a 16x16 mode stands for in the contexts.
_YMODE_TO_BMODE = (_B_DC, _B_VE, _B_HE, _B_TM)
_CAT_BASE = (5, 7, 11, 19, 35, 67)


class _BoolDecoder:
    """RFC 6386 section 7 boolean decoder over data[start:end].

    ``value`` holds the 8-bit window plus ``bits`` further bits; bytes past the end read as zero and move
    ``pos`` beyond ``end``, which marks the partition as overrun (libwebp rejects such a stream).
    """

    __slots__ = ("bits", "data", "end", "pos", "rng", "value")

    def __init__(self, data: bytes, start: int, end: int) -> None:
        self.data = data
        self.end = end
        self.pos = start
        self.value = 0
        self.bits = -8
        self.rng = 255
        self._refill()

    @property
    def overrun(self) -> bool:
        return self.pos > self.end

    def _refill(self) -> None:
        pos = self.pos
        if pos + 1 < self.end:
            self.value = (self.value << 16) | (self.data[pos] << 8) | self.data[pos + 1]
            self.pos = pos + 2
            self.bits += 16
        else:
            self.value = (self.value << 8) | (self.data[pos] if pos < self.end else 0)
            self.pos = pos + 1
            self.bits += 8

    def bit(self, prob: int) -> int:
        if self.bits < 0:
            self._refill()
        rng = self.rng
        split = 1 + (((rng - 1) * prob) >> 8)
        big = split << self.bits
        if self.value >= big:
            self.value -= big
            rng -= split
            b = 1
        else:
            rng = split
            b = 0
        if rng < 128:
            s = _NORM[rng]
            rng <<= s
            self.bits -= s
        self.rng = rng
        return b

    def literal(self, n: int) -> int:
        v = 0
        for _ in range(n):
            v = (v << 1) | self.bit(128)
        return v

    def signed(self, n: int) -> int:
        # Magnitude L(n) then sign (RFC 6386 section 9.3 item 4b, 9.6).
        v = self.literal(n)
        return -v if self.bit(128) else v

    def flag_signed(self, n: int) -> int:
        return self.signed(n) if self.bit(128) else 0

    def tree(self, tree: tuple[int, ...], probs: tuple[int, ...] | list[int]) -> int:
        i = 0
        while True:
            i = tree[i + self.bit(probs[i >> 1])]
            if i <= 0:
                return -i


def _large_value(br: _BoolDecoder, p: list[int]) -> int:
    # The token tree below "not DCT_0, not DCT_1" (RFC 6386 section 13.2) and the extra bits of the
    # dct_cat tokens.
    if not br.bit(p[3]):
        if not br.bit(p[4]):
            return 2
        return 3 + br.bit(p[5])
    if not br.bit(p[6]):
        cat = br.bit(p[7])
    elif not br.bit(p[8]):
        cat = 2 + br.bit(p[9])
    else:
        cat = 4 + br.bit(p[10])
    v = 0
    for prob in PCAT[cat]:
        v = (v << 1) | br.bit(prob)
    return _CAT_BASE[cat] + v


def _read_coeffs(
    br: _BoolDecoder, probs: list[list[list[int]]], ctx: int, dq0: int, dq1: int, n: int, out: list[int], base: int
) -> int:
    """Tokens of one 4x4 block from position n (RFC 6386 section 13), dequantised into out[base + i].

    Returns the position after the last token before end-of-block (16 if the block runs to the end):
    the caller derives the "has coefficients" context (> first) and the loop-filter flag from it.
    ``probs[n]`` are the three context rows of position n's band (index 16 is a sentinel).
    """
    data = br.data
    end = br.end
    value = br.value
    bits = br.bits
    rng = br.rng
    pos = br.pos
    norm = _NORM
    p = probs[n][ctx]
    try:
        while n < 16:
            # Inline boolean decodes (section 7.3) for the three common branches: EOB, DCT_0, DCT_1.
            if bits < 0:
                if pos + 1 < end:
                    value = (value << 16) | (data[pos] << 8) | data[pos + 1]
                    pos += 2
                    bits += 16
                else:
                    value = (value << 8) | (data[pos] if pos < end else 0)
                    pos += 1
                    bits += 8
            split = 1 + (((rng - 1) * p[0]) >> 8)
            big = split << bits
            if value >= big:
                value -= big
                rng -= split
                if rng < 128:
                    s = norm[rng]
                    rng <<= s
                    bits -= s
            else:
                rng = split
                if rng < 128:
                    s = norm[rng]
                    rng <<= s
                    bits -= s
                return n
            while True:  # a run of DCT_0 tokens: no end-of-block may follow a zero
                if bits < 0:
                    if pos + 1 < end:
                        value = (value << 16) | (data[pos] << 8) | data[pos + 1]
                        pos += 2
                        bits += 16
                    else:
                        value = (value << 8) | (data[pos] if pos < end else 0)
                        pos += 1
                        bits += 8
                split = 1 + (((rng - 1) * p[1]) >> 8)
                big = split << bits
                if value >= big:
                    value -= big
                    rng -= split
                    if rng < 128:
                        s = norm[rng]
                        rng <<= s
                        bits -= s
                    break
                rng = split
                if rng < 128:
                    s = norm[rng]
                    rng <<= s
                    bits -= s
                n += 1
                if n == 16:
                    return 16
                p = probs[n][0]
            if bits < 0:
                if pos + 1 < end:
                    value = (value << 16) | (data[pos] << 8) | data[pos + 1]
                    pos += 2
                    bits += 16
                else:
                    value = (value << 8) | (data[pos] if pos < end else 0)
                    pos += 1
                    bits += 8
            split = 1 + (((rng - 1) * p[2]) >> 8)
            big = split << bits
            if value >= big:
                value -= big
                rng -= split
                if rng < 128:
                    s = norm[rng]
                    rng <<= s
                    bits -= s
                br.value, br.bits, br.rng, br.pos = value, bits, rng, pos
                v = _large_value(br, p)
                sign = br.bit(128)
                value, bits, rng, pos = br.value, br.bits, br.rng, br.pos
                nctx = 2
            else:
                rng = split
                if rng < 128:
                    s = norm[rng]
                    rng <<= s
                    bits -= s
                v = 1
                nctx = 1
                # The sign: a boolean at probability 1/2.
                if bits < 0:
                    if pos + 1 < end:
                        value = (value << 16) | (data[pos] << 8) | data[pos + 1]
                        pos += 2
                        bits += 16
                    else:
                        value = (value << 8) | (data[pos] if pos < end else 0)
                        pos += 1
                        bits += 8
                split = 1 + ((rng - 1) >> 1)
                big = split << bits
                if value >= big:
                    value -= big
                    rng -= split
                    sign = 1
                else:
                    rng = split
                    sign = 0
                if rng < 128:
                    s = norm[rng]
                    rng <<= s
                    bits -= s
            c = (-v if sign else v) * (dq1 if n else dq0)
            if not -32768 <= c <= 32767:
                c = ((c + 32768) & 0xFFFF) - 32768  # stored as a 16-bit integer (section 14.1)
            out[base + ZIGZAG[n]] = c
            n += 1
            p = probs[n][nctx]
        return 16
    finally:
        br.value, br.bits, br.rng, br.pos = value, bits, rng, pos


class _Header:
    """Frame header fields of RFC 6386 section 9 / 19.2 that key-frame decoding needs."""

    def __init__(self) -> None:
        self.use_segment = False
        self.update_map = False
        self.absolute_delta = True
        self.seg_quant = [0, 0, 0, 0]
        self.seg_filter = [0, 0, 0, 0]
        self.seg_probs = [255, 255, 255]
        self.simple = False
        self.level = 0
        self.sharpness = 0
        self.use_lf_delta = False
        self.ref_lf_delta = [0, 0, 0, 0]
        self.mode_lf_delta = [0, 0, 0, 0]
        self.skip_prob: int | None = None
        self.coeff_probs: list[list[list[list[int]]]] = []


def _parse_header(br: _BoolDecoder) -> _Header:
    hd = _Header()
    br.bit(128)  # color_space (section 9.2): libwebp ignores it
    br.bit(128)  # clamping_type: reconstruction always clamps, which is exact either way
    # Section 9.3 (segment_feature_mode 1 = absolute values, as the reference decoder reads it).
    hd.use_segment = bool(br.bit(128))
    if hd.use_segment:
        hd.update_map = bool(br.bit(128))
        if br.bit(128):
            hd.absolute_delta = bool(br.bit(128))
            hd.seg_quant = [br.flag_signed(7) for _ in range(4)]
            hd.seg_filter = [br.flag_signed(6) for _ in range(4)]
        if hd.update_map:
            hd.seg_probs = [br.literal(8) if br.bit(128) else 255 for _ in range(3)]
    # Section 9.4.
    hd.simple = bool(br.bit(128))
    hd.level = br.literal(6)
    hd.sharpness = br.literal(3)
    hd.use_lf_delta = bool(br.bit(128))
    if hd.use_lf_delta and br.bit(128):
        for i in range(4):
            if br.bit(128):
                hd.ref_lf_delta[i] = br.signed(6)
        for i in range(4):
            if br.bit(128):
                hd.mode_lf_delta[i] = br.signed(6)
    if br.overrun:
        raise CorruptImage("VP8: truncated frame header")
    return hd


def _parse_quant(br: _BoolDecoder, hd: _Header) -> list[tuple[int, int, int, int, int, int]]:
    """Section 9.6 indices -> per segment (y_dc, y_ac, y2_dc, y2_ac, uv_dc, uv_ac) factors (section 14.1)."""
    base = br.literal(7)
    d = [br.flag_signed(4) for _ in range(5)]  # ydc, y2dc, y2ac, uvdc, uvac
    out = []
    for s in range(4):
        if hd.use_segment:
            q = hd.seg_quant[s] + (0 if hd.absolute_delta else base)
        else:
            q = base

        def idx(v: int, hi: int = 127) -> int:
            return 0 if v < 0 else hi if v > hi else v

        y2ac = AC_QLOOKUP[idx(q + d[2])] * 155 // 100
        out.append(
            (
                DC_QLOOKUP[idx(q + d[0])],
                AC_QLOOKUP[idx(q)],
                DC_QLOOKUP[idx(q + d[1])] * 2,
                max(y2ac, 8),
                DC_QLOOKUP[idx(q + d[3], 117)],  # the chroma DC factor is capped at 132
                AC_QLOOKUP[idx(q + d[4])],
            )
        )
    return out


def _filter_params(hd: _Header) -> list[list[tuple[int, int, int]]]:
    """(edge limit, interior limit, hev threshold) per [segment][is B_PRED] (sections 9.3, 9.4, 15.4).

    An edge limit of 0 means the macroblock is not filtered.
    """
    out = []
    for s in range(4):
        if hd.use_segment:
            base = hd.seg_filter[s] + (0 if hd.absolute_delta else hd.level)
        else:
            base = hd.level
        row = []
        for i4 in (0, 1):
            level = base
            if hd.use_lf_delta:
                level += hd.ref_lf_delta[0]  # intra frame
                if i4:
                    level += hd.mode_lf_delta[0]  # B_PRED
            level = 0 if level < 0 else 63 if level > 63 else level
            if level == 0:
                row.append((0, 0, 0))
                continue
            ilevel = level
            if hd.sharpness:
                ilevel >>= 2 if hd.sharpness > 4 else 1
                ilevel = min(ilevel, 9 - hd.sharpness)
            ilevel = max(ilevel, 1)
            hev = 2 if level >= 40 else 1 if level >= 15 else 0
            row.append((2 * level + ilevel, ilevel, hev))
        out.append(row)
    return out


# ----------------------------------------------------------------------------------------- transforms
def _iwht(dc: np.ndarray) -> np.ndarray:
    """Inverse WHT of (N, 16) Y2 blocks -> (N, 16) DC values of the 16 Y blocks (section 14.3)."""
    x = dc.reshape(-1, 4, 4).astype(np.int64)
    a1 = x[:, 0] + x[:, 3]
    b1 = x[:, 1] + x[:, 2]
    c1 = x[:, 1] - x[:, 2]
    d1 = x[:, 0] - x[:, 3]
    t = np.stack([a1 + b1, c1 + d1, a1 - b1, d1 - c1], axis=1)
    a1 = t[:, :, 0] + t[:, :, 3]
    b1 = t[:, :, 1] + t[:, :, 2]
    c1 = t[:, :, 1] - t[:, :, 2]
    d1 = t[:, :, 0] - t[:, :, 3]
    o = np.stack([a1 + b1, c1 + d1, a1 - b1, d1 - c1], axis=2)
    o = (o + 3) >> 3
    return o.reshape(-1, 16).astype(np.int16).astype(np.int64)


def _idct(coef: np.ndarray) -> np.ndarray:
    """Inverse DCT of (N, 16) blocks -> (N, 4, 4) residues (section 14.4), 32-bit intermediates."""
    x = coef.reshape(-1, 4, 4).astype(np.int64)

    def pass1d(i0: np.ndarray, i1: np.ndarray, i2: np.ndarray, i3: np.ndarray) -> list[np.ndarray]:
        a1 = i0 + i2
        b1 = i0 - i2
        c1 = ((i1 * 35468) >> 16) - (i3 + ((i3 * 20091) >> 16))
        d1 = (i1 + ((i1 * 20091) >> 16)) + ((i3 * 35468) >> 16)
        return [a1 + d1, b1 + c1, b1 - c1, a1 - d1]

    t = np.stack(pass1d(x[:, 0], x[:, 1], x[:, 2], x[:, 3]), axis=1)  # vertical pass
    o = np.stack(pass1d(t[:, :, 0], t[:, :, 1], t[:, :, 2], t[:, :, 3]), axis=2)
    return (o + 4) >> 3


def _blocks_to_plane(res: np.ndarray, n: int) -> np.ndarray:
    """(M, n*n, 4, 4) residue blocks in raster order -> (M, 4n, 4n)."""
    m = res.shape[0]
    return res.reshape(m, n, n, 4, 4).transpose(0, 1, 3, 2, 4).reshape(m, 4 * n, 4 * n)


# ---------------------------------------------------------------------------------------------- frame
def _partitions(data: bytes, start: int, nparts: int) -> list[_BoolDecoder]:
    """Section 9.5: 3-octet sizes of all partitions but the last, then the partitions back to back."""
    n = len(data)
    left = n - start - 3 * (nparts - 1)
    if left < 0:
        raise CorruptImage("VP8: truncated partition sizes")
    pos = start + 3 * (nparts - 1)
    parts = []
    for i in range(nparts - 1):
        j = start + 3 * i
        size = min(data[j] | (data[j + 1] << 8) | (data[j + 2] << 16), left)
        parts.append(_BoolDecoder(data, pos, pos + size))
        pos += size
        left -= size
    if left <= 0:
        raise CorruptImage("VP8: the last token partition is empty")
    parts.append(_BoolDecoder(data, pos, n))
    return parts


_Modes = tuple[int, int, int, "list[int] | None", int]


def _parse_modes(br: _BoolDecoder, hd: _Header, mbw: int, top: list[int], left: list[int]) -> list[_Modes]:
    """Prediction records of one macroblock row (RFC 6386 sections 10, 11, 19.3).

    Returns per macroblock (segment, skip flag, luma mode, 16 sub-block modes or None, chroma mode).
    """
    out: list[_Modes] = []
    sp = hd.seg_probs
    skip_prob = hd.skip_prob
    bit = br.bit
    for mx in range(mbw):
        seg = ((2 + bit(sp[2])) if bit(sp[0]) else bit(sp[1])) if hd.update_map else 0
        skip = bit(skip_prob) if skip_prob is not None else 0
        bmodes: list[int] | None = None
        if bit(145):
            ymode = (TM_PRED if bit(128) else H_PRED) if bit(156) else (V_PRED if bit(163) else DC_PRED)
            bm = _YMODE_TO_BMODE[ymode]
            top[4 * mx : 4 * mx + 4] = [bm] * 4
            left[:] = [bm] * 4
        else:
            ymode = B_PRED
            bmodes = []
            for sy in range(4):
                m = left[sy]
                for sx in range(4):
                    m = br.tree(_BMODE_TREE, KF_BMODE_PROBS[top[4 * mx + sx]][m])
                    top[4 * mx + sx] = m
                    bmodes.append(m)
                left[sy] = m
        uvmode = DC_PRED if not bit(142) else V_PRED if not bit(114) else TM_PRED if bit(183) else H_PRED
        out.append((seg, skip, ymode, bmodes, uvmode))
    return out


def decode_vp8(data: bytes, limits: Limits | None) -> np.ndarray:
    """Decode a VP8 key frame (the payload of a 'VP8 ' chunk) to uint8 (H, W, 3) RGB.

    Raises:
        CorruptImage: the frame is not a decodable key frame.
        LimitError: the frame is larger than the limits allow.
    """
    n = len(data)
    if n < 10:
        raise CorruptImage("VP8: truncated frame header")
    tag = data[0] | (data[1] << 8) | (data[2] << 16)  # section 9.1
    if tag & 1:
        raise CorruptImage("VP8: not a key frame")
    if (tag >> 1) & 7 > 3 or not (tag >> 4) & 1:
        raise CorruptImage("VP8: bad version or frame not shown")
    part0 = tag >> 5
    if data[3:6] != b"\x9d\x01\x2a":
        raise CorruptImage("VP8: bad start code")
    width = (data[6] | (data[7] << 8)) & 0x3FFF  # the 2 scaling bits only advise the display
    height = (data[8] | (data[9] << 8)) & 0x3FFF
    check_size(height, width, 3, limits)
    if part0 > n - 10:
        raise CorruptImage("VP8: truncated first partition")
    # Every macroblock's luma and chroma modes cost at least 1.6 bits of the first partition (its
    # cheapest tree paths under the fixed key-frame probabilities of section 11), so a partition that
    # cannot hold them is bound to run out: refuse it before allocating the frame.
    if 8 * part0 + 64 < 1.2 * ((width + 15) >> 4) * ((height + 15) >> 4):
        raise CorruptImage("VP8: first partition too short for the frame size")
    br = _BoolDecoder(data, 10, 10 + part0)
    hd = _parse_header(br)
    parts = _partitions(data, 10 + part0, 1 << br.literal(2))
    quant = _parse_quant(br, hd)
    br.bit(128)  # refresh_entropy_probs: meaningless for a single frame
    probs = [
        [
            [
                [br.literal(8) if br.bit(u) else d for u, d in zip(urow, drow, strict=True)]
                for urow, drow in zip(ub, db, strict=True)
            ]
            for ub, db in zip(ut, dt, strict=True)
        ]
        for ut, dt in zip(COEFF_UPDATE_PROBS, DEFAULT_COEFF_PROBS, strict=True)
    ]
    hd.skip_prob = br.literal(8) if br.bit(128) else None
    # Probabilities per coefficient position (a band per position), with a sentinel for position 16.
    bp = [[probs[t][COEFF_BANDS[i]] for i in range(16)] + [probs[t][0]] for t in range(4)]
    fparams = _filter_params(hd) if hd.level else None

    mbw, mbh = (width + 15) >> 4, (height + 15) >> 4
    w16 = 16 * mbw
    # Reconstruction buffers with the out-of-frame border of section 12.2 (127 above, 129 to the left)
    # and, for luma, 4 columns right of the frame for the above-right pixels of section 12.3.
    yb = np.empty((16 * mbh + 1, w16 + 5), dtype=np.uint8)
    ubuf = np.empty((8 * mbh + 1, 8 * mbw + 1), dtype=np.uint8)
    vbuf = np.empty((8 * mbh + 1, 8 * mbw + 1), dtype=np.uint8)
    for b in (yb, ubuf, vbuf):
        b[1:, 0] = 129
        b[0, :] = 127
    limit = np.zeros((mbh, mbw), dtype=np.int32)
    ilimit = np.zeros((mbh, mbw), dtype=np.int32)
    hev_t = np.zeros((mbh, mbw), dtype=np.int32)
    inner = np.zeros((mbh, mbw), dtype=bool)

    top_modes = [0] * (4 * mbw)
    top_nz = [0] * (4 * mbw)
    top_u = [0] * (2 * mbw)
    top_v = [0] * (2 * mbw)
    top_dc = [0] * mbw
    for my in range(mbh):
        modes = _parse_modes(br, hd, mbw, top_modes, [0, 0, 0, 0])
        if br.overrun:
            raise CorruptImage("VP8: truncated first partition")
        tb = parts[my % len(parts)]
        coefs = [0] * (400 * mbw)
        left_nz = [0, 0, 0, 0]
        left_u = [0, 0]
        left_v = [0, 0]
        left_dc = 0
        big = [False] * mbw
        for mx in range(mbw):
            seg, skip, ymode, _, _ = modes[mx]
            base = 400 * mx
            if skip:
                left_nz[:] = [0, 0, 0, 0]
                top_nz[4 * mx : 4 * mx + 4] = [0, 0, 0, 0]
                left_u[:] = left_v[:] = [0, 0]
                top_u[2 * mx : 2 * mx + 2] = top_v[2 * mx : 2 * mx + 2] = [0, 0]
                if ymode != B_PRED:
                    top_dc[mx] = left_dc = 0
                continue
            ydc, yac, y2dc, y2ac, uvdc, uvac = quant[seg]
            many = False
            if ymode != B_PRED:
                nz = _read_coeffs(tb, bp[1], top_dc[mx] + left_dc, y2dc, y2ac, 0, coefs, base + 384)
                top_dc[mx] = left_dc = 1 if nz > 0 else 0
                first = 1
                yp = bp[0]
            else:
                first = 0
                yp = bp[3]
            for sy in range(4):
                lctx = left_nz[sy]
                for sx in range(4):
                    j = 4 * mx + sx
                    nz = _read_coeffs(tb, yp, lctx + top_nz[j], ydc, yac, first, coefs, base + 64 * sy + 16 * sx)
                    lctx = top_nz[j] = 1 if nz > first else 0
                    many = many or nz > 1
                left_nz[sy] = lctx
            for topc, leftc, off in ((top_u, left_u, 256), (top_v, left_v, 320)):
                for sy in range(2):
                    lctx = leftc[sy]
                    for sx in range(2):
                        j = 2 * mx + sx
                        nz = _read_coeffs(
                            tb, bp[2], lctx + topc[j], uvdc, uvac, 0, coefs, base + off + 32 * sy + 16 * sx
                        )
                        lctx = topc[j] = 1 if nz > 0 else 0
                        many = many or nz > 1
                    leftc[sy] = lctx
            big[mx] = many
        if tb.overrun:
            raise CorruptImage("VP8: truncated token partition")

        # Section 14: dequantised coefficients -> residues, for the whole row at once.
        coef = np.array(coefs, dtype=np.int64).reshape(mbw, 25, 16)
        i16 = np.array([m[2] != B_PRED for m in modes])
        if i16.any():
            coef[i16, :16, 0] = _iwht(coef[i16, 24])
        res = _idct(coef[:, :24].reshape(-1, 16)).reshape(mbw, 24, 4, 4)
        ry = _blocks_to_plane(res[:, :16], 4)
        ru = _blocks_to_plane(res[:, 16:20], 2)
        rv = _blocks_to_plane(res[:, 20:24], 2)
        dc_nz = (coef[:, :24, 0] != 0).any(axis=1).tolist()

        r = 1 + 16 * my
        rc = 1 + 8 * my
        for mx in range(mbw):
            seg, skip, ymode, bmodes, uvmode = modes[mx]
            c = 1 + 16 * mx
            if bmodes is None:
                pred = predict_mb(yb, r, c, 16, ymode, mx, my)
                yb[r : r + 16, c : c + 16] = np.minimum(np.maximum(pred + ry[mx], 0), 255)
            else:
                reconstruct_bpred(yb, r, c, bmodes, ry[mx])
            cc = 1 + 8 * mx
            for buf, rr in ((ubuf, ru), (vbuf, rv)):
                pred = predict_mb(buf, rc, cc, 8, uvmode, mx, my)
                buf[rc : rc + 8, cc : cc + 8] = np.minimum(np.maximum(pred + rr[mx], 0), 255)
            if fparams is not None:
                lim, il, ht = fparams[seg][bmodes is not None]
                limit[my, mx], ilimit[my, mx], hev_t[my, mx] = lim, il, ht
                inner[my, mx] = bmodes is not None or (not skip and (big[mx] or dc_nz[mx]))
        # Above-right pixels of the rightmost macroblock of the next row (section 12.3).
        yb[r + 15, w16 + 1 :] = yb[r + 15, w16]

    y: np.ndarray = yb[1:, 1 : w16 + 1]
    u: np.ndarray = ubuf[1:, 1:]
    v: np.ndarray = vbuf[1:, 1:]
    if fparams is not None:
        y = y.astype(np.int16)  # the filter's working copy
        uv = None if hd.simple else np.concatenate([u, v], axis=1).astype(np.int16)
        loop_filter(y, uv, limit, ilimit, hev_t, inner)
        if uv is not None:
            u, v = uv[:, : 8 * mbw], uv[:, 8 * mbw :]
    ch, cw = (height + 1) >> 1, (width + 1) >> 1
    return yuv420_to_rgb(y[:height, :width], u[:ch, :cw], v[:ch, :cw])
