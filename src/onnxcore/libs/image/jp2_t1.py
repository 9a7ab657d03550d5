"""JPEG 2000 tier-1 decoding (private): the MQ arithmetic decoder (T.800 Annex C) and the code-block
coding passes (Annex D).

Everything here runs one symbol at a time in Python, so the loops use plain ints and flat lists.
Each sample of a code-block has a state word (padded by one sample on every side so neighbours never
need bounds checks) holding its neighbours' significance and signs plus its own flags; a sample that
becomes significant updates its eight neighbours' words once, after which every context of Annex D
is one table lookup.

Magnitudes are kept with one extra fractional bit: a coefficient first found significant in bit-plane
``b`` is reconstructed at 1.5 * 2**b and each refinement moves it by half of the refined plane, which
is the mid-point reconstruction (r = 1/2) of T.800 E.1.1.2 for whatever planes were decoded.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = [
    "STYLE_BYPASS",
    "STYLE_RESET",
    "STYLE_TERMALL",
    "STYLE_VCAUSAL",
    "STYLE_PTERM",
    "STYLE_SEGMARK",
    "decode_codeblock",
    "segment_limits",
]

# Code-block style bits of SPcod/SPcoc (T.800 A.6.1, Table A.19).
STYLE_BYPASS = 0x01
STYLE_RESET = 0x02
STYLE_TERMALL = 0x04
STYLE_VCAUSAL = 0x08
STYLE_PTERM = 0x10
STYLE_SEGMARK = 0x20

# Qe value, NMPS, NLPS and SWITCH of each probability state: T.800 Table C.2 (normative data).
_QE_TABLE = (
    (0x5601, 1, 1, 1), (0x3401, 2, 6, 0), (0x1801, 3, 9, 0), (0x0AC1, 4, 12, 0), (0x0521, 5, 29, 0),
    (0x0221, 38, 33, 0), (0x5601, 7, 6, 1), (0x5401, 8, 14, 0), (0x4801, 9, 14, 0), (0x3801, 10, 14, 0),
    (0x3001, 11, 17, 0), (0x2401, 12, 18, 0), (0x1C01, 13, 20, 0), (0x1601, 29, 21, 0), (0x5601, 15, 14, 1),
    (0x5401, 16, 14, 0), (0x5101, 17, 15, 0), (0x4801, 18, 16, 0), (0x3801, 19, 17, 0), (0x3401, 20, 18, 0),
    (0x3001, 21, 19, 0), (0x2801, 22, 19, 0), (0x2401, 23, 20, 0), (0x2201, 24, 21, 0), (0x1C01, 25, 22, 0),
    (0x1801, 26, 23, 0), (0x1601, 27, 24, 0), (0x1401, 28, 25, 0), (0x1201, 29, 26, 0), (0x1101, 30, 27, 0),
    (0x0AC1, 31, 28, 0), (0x09C1, 32, 29, 0), (0x08A1, 33, 30, 0), (0x0521, 34, 31, 0), (0x0441, 35, 32, 0),
    (0x02A1, 36, 33, 0), (0x0221, 37, 34, 0), (0x0141, 38, 35, 0), (0x0111, 39, 36, 0), (0x0085, 40, 37, 0),
    (0x0049, 41, 38, 0), (0x0025, 42, 39, 0), (0x0015, 43, 40, 0), (0x0009, 44, 41, 0), (0x0005, 45, 42, 0),
    (0x0001, 45, 43, 0), (0x5601, 46, 46, 0),
)  # fmt: skip
_QE = [t[0] for t in _QE_TABLE]
_NMPS = [t[1] for t in _QE_TABLE]
_NLPS = [t[2] for t in _QE_TABLE]
_SWITCH = [t[3] for t in _QE_TABLE]

# Context labels (T.800 D.3): 0-8 significance, 9-13 sign, 14-16 refinement, 17 run-length, 18 uniform.
_CX_RL = 17
_CX_UNI = 18
# Initial states, T.800 Table D.7: uniform at 46, run-length at 3, all-zero significance context at 4.
_INIT_STATES = [4] + [0] * 16 + [3, 46]

# State word bits: neighbour significance (W, E, N, S, NW, NE, SW, SE), neighbour signs (W, E, N, S),
# then the sample's own flags.
_W, _E, _N, _S, _NW, _NE, _SW, _SE = 1, 2, 4, 8, 16, 32, 64, 128
_WNEG, _ENEG, _NNEG, _SNEG = 256, 512, 1024, 2048
_SIG = 4096
_VISIT = 8192  # coded by the significance propagation pass of the current bit-plane
_REFINED = 16384  # refined at least once (T.800 Table D.4)
_NEG = 32768


def _zc_table(orient: int) -> list[int]:
    # Significance contexts, T.800 Table D.1; orient 0 = LL, 1 = HL, 2 = LH, 3 = HH.
    out = []
    for word in range(256):
        h = (word & _W > 0) + (word & _E > 0)
        v = (word & _N > 0) + (word & _S > 0)
        d = (word & _NW > 0) + (word & _NE > 0) + (word & _SW > 0) + (word & _SE > 0)
        if orient == 1:  # HL: the table of LL/LH with horizontal and vertical exchanged
            h, v = v, h
        if orient == 3:
            hv = h + v
            if d >= 3:
                cx = 8
            elif d == 2:
                cx = 7 if hv >= 1 else 6
            elif d == 1:
                cx = 5 if hv >= 2 else (4 if hv == 1 else 3)
            else:
                cx = 2 if hv >= 2 else hv
        elif h == 2:
            cx = 8
        elif h == 1:
            cx = 7 if v >= 1 else (6 if d >= 1 else 5)
        elif v == 2:
            cx = 4
        elif v == 1:
            cx = 3
        else:
            cx = 2 if d >= 2 else d
        out.append(cx)
    return out


_ZC = [_zc_table(o) for o in range(4)]


def _contrib(idx: int, sig: int, neg: int) -> int:
    # A neighbour's sign contribution: 0 insignificant, 1 positive, -1 negative (T.800 Table D.2).
    return 0 if not idx & sig else (-1 if idx & neg else 1)


def _sc_table() -> list[int]:
    # Sign contexts and XOR bits, T.800 Tables D.2 and D.3, indexed by the significance bits of the
    # four direct neighbours (W, E, N, S) plus their sign bits shifted to bits 4-7. Entry: cx | xor << 5.
    out = []
    for idx in range(256):
        hc = max(-1, min(1, _contrib(idx, 1, 16) + _contrib(idx, 2, 32)))
        vc = max(-1, min(1, _contrib(idx, 4, 64) + _contrib(idx, 8, 128)))
        if hc == 0:
            cx, xor = (9, 0) if vc == 0 else (10, int(vc < 0))
        else:
            cx, xor = {1: 13, 0: 12, -1: 11}[vc * hc], int(hc < 0)
        out.append(cx | xor << 5)
    return out


_SC = _sc_table()


def segment_limits(style: int) -> Callable[[int], int]:
    """How many coding passes the codeword segment starting at a given pass index may hold.

    T.800 D.4 and Table D.9: one segment for the whole code-block by default; one per pass with
    termination on each pass; with the arithmetic coding bypass, the first ten passes then alternately
    two raw passes (significance and refinement) and one arithmetic (cleanup) pass.
    """
    if style & STYLE_TERMALL:
        return lambda first: 1
    if style & STYLE_BYPASS:
        return lambda first: 10 - first if first < 10 else (2 if (first - 10) % 3 == 0 else 1)
    return lambda first: 1 << 30


def _mq_decoder(data: bytes, st: list[int], mps: list[int]) -> Callable[[int], int]:
    # The MQ decoder of T.800 C.3 (INITDEC, DECODE, RENORMD, BYTEIN). Past the end of the segment the
    # two appended 0xFF octets act as a marker, so BYTEIN keeps feeding 1-bits without advancing (C.3.4).
    buf = data + b"\xff\xff"
    bp = 0
    c = buf[0] << 16
    if buf[0] == 0xFF:
        if buf[1] > 0x8F:
            c += 0xFF00
            ct = 8
        else:
            bp = 1
            c += buf[1] << 9
            ct = 7
    else:
        bp = 1
        c += buf[1] << 8
        ct = 8
    c <<= 7
    ct -= 7
    a = 0x8000
    qet, nmps, nlps, switch = _QE, _NMPS, _NLPS, _SWITCH

    def dec(cx: int) -> int:
        nonlocal a, c, ct, bp
        s = st[cx]
        qe = qet[s]
        a -= qe
        if (c >> 16) < qe:
            if a < qe:
                d = mps[cx]
                st[cx] = nmps[s]
            else:
                d = 1 - mps[cx]
                if switch[s]:
                    mps[cx] = d
                st[cx] = nlps[s]
            a = qe
        else:
            c -= qe << 16
            if a & 0x8000:
                return mps[cx]
            if a < qe:
                d = 1 - mps[cx]
                if switch[s]:
                    mps[cx] = d
                st[cx] = nlps[s]
            else:
                d = mps[cx]
                st[cx] = nmps[s]
        while True:
            if ct == 0:
                if buf[bp] == 0xFF:
                    if buf[bp + 1] > 0x8F:
                        c += 0xFF00
                        ct = 8
                    else:
                        bp += 1
                        c += buf[bp] << 9
                        ct = 7
                else:
                    bp += 1
                    c += buf[bp] << 8
                    ct = 8
                c &= 0xFFFFFFFF  # the C register is 32 bits: bounds garbage from corrupt data
            a <<= 1
            c <<= 1
            ct -= 1
            if a & 0x8000:
                return d

    return dec


def _raw_decoder(data: bytes) -> Callable[[int], int]:
    # Raw (bypass) segments, T.800 D.6: bits MSB first, the bit after an 0xFF octet is a stuffed 0.
    n = len(data)
    bp = 0
    byte = 0
    ct = 0

    def dec(cx: int) -> int:
        nonlocal bp, byte, ct
        if ct == 0:
            prev = byte
            byte = data[bp] if bp < n else 0xFF
            bp += 1
            ct = 7 if prev == 0xFF else 8
        ct -= 1
        return (byte >> ct) & 1

    return dec


def decode_codeblock(
    segments: list[tuple[bytes, int]], width: int, height: int, orient: int, nbps: int, style: int
) -> list[int] | None:
    """Decode one code-block's coding passes (T.800 Annex D).

    Args:
        segments: The codeword segments in order, each as (octets, number of coding passes).
        width: Code-block width.
        height: Code-block height.
        orient: Sub-band orientation: 0 LL, 1 HL, 2 LH, 3 HH.
        nbps: Number of magnitude bit-planes coded (Mb minus the missing most significant ones).
        style: Code-block style bits.

    Returns:
        Row-major signed coefficients in units of half the least significant bit-plane (with the
        mid-point reconstruction offset), or None when nothing was decoded.
    """
    max_passes = 3 * nbps - 2
    if nbps <= 0 or not segments:
        return None
    stride = width + 2
    flags = [0] * (stride * (height + 2))
    mag = [0] * (stride * (height + 2))
    st = list(_INIT_STATES)
    mps = [0] * 19
    zc = _ZC[orient]
    sc = _SC
    vcausal = bool(style & STYLE_VCAUSAL)
    # Scan order of T.800 D.1: stripes of four rows, each stripe column by column, top to bottom.
    order: list[int] = []
    cols: list[tuple[int, int]] = []
    for y0 in range(0, height, 4):
        ny = min(4, height - y0)
        for x in range(width):
            p0 = (y0 + 1) * stride + x + 1
            cols.append((p0, ny))
            order.extend(range(p0, p0 + ny * stride, stride))
    # With vertically causal contexts (D.7) a stripe's top row does not tell the stripe above.
    top = bytearray(len(flags))
    if vcausal:
        for y0 in range(0, height, 4):
            top[(y0 + 1) * stride : (y0 + 2) * stride] = b"\x01" * stride
    s3 = 3 * stride
    pass_no = 0

    def set_sig(p: int, neg: int, one: int) -> None:
        # Record significance in the eight neighbours' state words.
        mag[p] = one
        if neg:
            flags[p] |= _SIG | _NEG
            flags[p - 1] |= _E | _ENEG
            flags[p + 1] |= _W | _WNEG
            flags[p + stride] |= _N | _NNEG
            if not top[p]:
                flags[p - stride] |= _S | _SNEG
        else:
            flags[p] |= _SIG
            flags[p - 1] |= _E
            flags[p + 1] |= _W
            flags[p + stride] |= _N
            if not top[p]:
                flags[p - stride] |= _S
        flags[p + stride - 1] |= _NE
        flags[p + stride + 1] |= _NW
        if not top[p]:
            flags[p - stride - 1] |= _SE
            flags[p - stride + 1] |= _SW

    for data, npasses in segments:
        if pass_no >= max_passes:
            break
        raw = bool(style & STYLE_BYPASS) and pass_no >= 10 and pass_no % 3 != 0
        dec = _raw_decoder(data) if raw else _mq_decoder(data, st, mps)
        for _ in range(npasses):
            if pass_no >= max_passes:
                break
            kind = (pass_no + 2) % 3  # 0 significance propagation, 1 refinement, 2 cleanup
            plane = nbps - 1 - (pass_no + 2) // 3
            one = 2 << plane
            half = one >> 1
            oneplushalf = one | half
            if kind == 0:
                for p in order:
                    f = flags[p]
                    if f & _SIG or not f & 0xFF:
                        continue
                    if dec(zc[f & 0xFF]):
                        if raw:
                            neg = dec(0)
                        else:
                            s = sc[(f & 15) | ((f >> 4) & 0xF0)]
                            neg = dec(s & 31) ^ (s >> 5)
                        set_sig(p, neg, oneplushalf)
                    flags[p] |= _VISIT
            elif kind == 1:
                for p in order:
                    f = flags[p]
                    if f & (_SIG | _VISIT) == _SIG:
                        if dec(16 if f & _REFINED else (15 if f & 0xFF else 14)):
                            mag[p] += half
                        else:
                            mag[p] -= half
                        flags[p] = f | _REFINED
            else:
                for p, ny in cols:
                    k = 0
                    if ny == 4 and not (
                        (flags[p] | flags[p + stride] | flags[p + 2 * stride] | flags[p + s3]) & (_SIG | _VISIT | 0xFF)
                    ):
                        # Run-length coding of an all-insignificant column (T.800 D.3.4).
                        if not dec(_CX_RL):
                            continue
                        k = dec(_CX_UNI) << 1
                        k |= dec(_CX_UNI)
                        q = p + k * stride
                        f = flags[q]
                        s = sc[(f & 15) | ((f >> 4) & 0xF0)]
                        set_sig(q, dec(s & 31) ^ (s >> 5), oneplushalf)
                        k += 1
                        p = q + stride
                    for _yy in range(k, ny):
                        f = flags[p]
                        if not f & (_SIG | _VISIT):
                            if dec(zc[f & 0xFF]):
                                s = sc[(f & 15) | ((f >> 4) & 0xF0)]
                                set_sig(p, dec(s & 31) ^ (s >> 5), oneplushalf)
                        else:
                            flags[p] = f & ~_VISIT
                        p += stride
                if style & STYLE_SEGMARK:
                    # Segmentation symbol 1010 on the uniform context (T.800 D.5): read and ignored.
                    for _k in range(4):
                        dec(_CX_UNI)
            if style & STYLE_RESET:
                st[:] = _INIT_STATES
                mps[:] = [0] * 19
            pass_no += 1

    out = []
    for y in range(height):
        row = (y + 1) * stride + 1
        for i in range(row, row + width):
            m = mag[i]
            out.append(-m if flags[i] & _NEG else m)
    return out
