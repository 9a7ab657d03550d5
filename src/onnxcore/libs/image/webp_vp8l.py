"""Lossless WebP ('VP8L') decoding for ImageDecoder (private), per the WebP Lossless Bitstream
Specification (RFC 9649 section 3; section numbers below are that document's).

The entropy-coded pixels are decoded one symbol at a time in Python from a little-endian bit buffer,
through two-level prefix-code lookup tables; the inverse transforms (section 4) run in numpy over the
whole image, except the predictor modes that depend on the pixel to the left, which run pixel by pixel
within each row.
"""

from __future__ import annotations

from array import array

import numpy as np

from onnxcore.libs.image.common import CorruptImage, check_size
from onnxcore.limits import Limits

__all__ = ["decode_vp8l"]

# Section 3.7.2.1.2: order in which the code lengths of the code-length code are transmitted.
_CODE_LENGTH_ORDER = (17, 18, 0, 1, 2, 3, 4, 5, 16, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)
# Section 3.5.2.2 (distance mapping): (xi, yi) for distance codes 1..120.
_DIST_MAP = (
    (0, 1), (1, 0), (1, 1), (-1, 1), (0, 2), (2, 0), (1, 2), (-1, 2),
    (2, 1), (-2, 1), (2, 2), (-2, 2), (0, 3), (3, 0), (1, 3), (-1, 3),
    (3, 1), (-3, 1), (2, 3), (-2, 3), (3, 2), (-3, 2), (0, 4), (4, 0),
    (1, 4), (-1, 4), (4, 1), (-4, 1), (3, 3), (-3, 3), (2, 4), (-2, 4),
    (4, 2), (-4, 2), (0, 5), (3, 4), (-3, 4), (4, 3), (-4, 3), (5, 0),
    (1, 5), (-1, 5), (5, 1), (-5, 1), (2, 5), (-2, 5), (5, 2), (-5, 2),
    (4, 4), (-4, 4), (3, 5), (-3, 5), (5, 3), (-5, 3), (0, 6), (6, 0),
    (1, 6), (-1, 6), (6, 1), (-6, 1), (2, 6), (-2, 6), (6, 2), (-6, 2),
    (4, 5), (-4, 5), (5, 4), (-5, 4), (3, 6), (-3, 6), (6, 3), (-6, 3),
    (0, 7), (7, 0), (1, 7), (-1, 7), (5, 5), (-5, 5), (7, 1), (-7, 1),
    (4, 6), (-4, 6), (6, 4), (-6, 4), (2, 7), (-2, 7), (7, 2), (-7, 2),
    (3, 7), (-3, 7), (7, 3), (-7, 3), (5, 6), (-5, 6), (6, 5), (-6, 5),
    (8, 0), (4, 7), (-4, 7), (7, 4), (-7, 4), (8, 1), (8, 2), (6, 6),
    (-6, 6), (8, 3), (5, 7), (-5, 7), (7, 5), (-7, 5), (8, 4), (6, 7),
    (-6, 7), (7, 6), (-7, 6), (8, 5), (7, 7), (-7, 7), (8, 6), (8, 7),
)  # fmt: skip
assert len(_DIST_MAP) == 120
_ROOT_BITS = 9
_PREDICTOR, _CROSS_COLOR, _SUBTRACT_GREEN, _COLOR_INDEXING = range(4)


class _Bits:
    """Little-endian bit reader (section 3.2): the first bit read is the least significant."""

    __slots__ = ("buf", "data", "n", "nbits", "pos")

    def __init__(self, data: bytes, pos: int) -> None:
        self.data = data
        self.n = len(data)
        self.pos = pos
        self.buf = 0
        self.nbits = 0

    def fill(self) -> None:
        # Octets past the end read as zero; overrun() tells whether any was consumed.
        pos = self.pos
        self.buf |= int.from_bytes(self.data[pos : pos + 6], "little") << self.nbits
        self.nbits += 48
        self.pos = pos + 6

    def read(self, k: int) -> int:
        if self.nbits < k:
            self.fill()
        v = self.buf & ((1 << k) - 1)
        self.buf >>= k
        self.nbits -= k
        return v

    def overrun(self) -> bool:
        # More bits consumed than the data holds.
        return (self.pos - self.n) * 8 > self.nbits


class _Code:
    """A canonical prefix code (section 3.7.2) as a root table of _ROOT_BITS bits plus sub-tables.

    Root entry >= 0: (symbol << 4) | length; < 0: -(index of the sub-table << 4 | its bits) - 1.
    Sub-table entries are (symbol << 4) | full length.
    """

    __slots__ = ("root", "root_bits", "subs")

    def __init__(self, lengths: list[int]) -> None:
        used = [(ln, s) for s, ln in enumerate(lengths) if ln]
        if not used:
            raise CorruptImage("VP8L: empty prefix code")
        if len(used) == 1:  # a single symbol takes no bits
            self.root_bits = 0
            self.root = [used[0][1] << 4]
            self.subs: list[list[int]] = []
            return
        used.sort()
        maxlen = used[-1][0]
        counts = [0] * 16
        for ln, _ in used:
            counts[ln] += 1
        left = 1
        for ln in range(1, 16):
            left = 2 * left - counts[ln]
            if left < 0:
                raise CorruptImage("VP8L: over-subscribed prefix code")
        if left:
            raise CorruptImage("VP8L: incomplete prefix code")
        rb = min(maxlen, _ROOT_BITS)
        self.root_bits = rb
        root = [0] * (1 << rb)
        long_codes: dict[int, list[tuple[int, int, int]]] = {}
        code = 0
        prev_len = used[0][0]
        for ln, sym in used:
            code <<= ln - prev_len
            prev_len = ln
            rev = int(format(code, f"0{ln}b")[::-1], 2)  # codes are read first bit first, LSB-first
            if ln <= rb:
                entry = (sym << 4) | ln
                for i in range(rev, 1 << rb, 1 << ln):
                    root[i] = entry
            else:
                long_codes.setdefault(rev & ((1 << rb) - 1), []).append((rev >> rb, ln, sym))
            code += 1
        self.subs = []
        for low, items in long_codes.items():
            sb = max(ln for _, ln, _ in items) - rb
            sub = [0] * (1 << sb)
            for hi, ln, sym in items:
                for i in range(hi, 1 << sb, 1 << (ln - rb)):
                    sub[i] = (sym << 4) | ln
            root[low] = -((len(self.subs) << 4) | sb) - 1
            self.subs.append(sub)
        self.root = root

    def read(self, br: _Bits) -> int:
        if br.nbits < 15:
            br.fill()
        e = self.root[br.buf & ((1 << self.root_bits) - 1)]
        if e < 0:
            e = -e - 1
            e = self.subs[e >> 4][(br.buf >> self.root_bits) & ((1 << (e & 15)) - 1)]
        ln = e & 15
        br.buf >>= ln
        br.nbits -= ln
        return e >> 4


def _read_code(br: _Bits, alphabet: int) -> _Code:
    """Section 3.7.2.1: a simple or a normal code-length code."""
    lengths = [0] * alphabet
    if br.read(1):
        nsym = br.read(1) + 1
        syms = [br.read(8 if br.read(1) else 1)]
        if nsym == 2:
            syms.append(br.read(8))
        for s in syms:
            if s < alphabet:  # a symbol outside the alphabet is dropped, as libwebp does
                lengths[s] = 1
        return _Code(lengths)
    cl = [0] * 19
    for i in range(4 + br.read(4)):
        cl[_CODE_LENGTH_ORDER[i]] = br.read(3)
    clcode = _Code(cl)
    if br.read(1):
        max_symbol = 2 + br.read(2 + 2 * br.read(3))
        if max_symbol > alphabet:
            raise CorruptImage("VP8L: max_symbol beyond the alphabet")
    else:
        max_symbol = alphabet
    prev = 8
    s = 0
    while s < alphabet and max_symbol > 0:
        max_symbol -= 1
        c = clcode.read(br)
        if c < 16:
            lengths[s] = c
            s += 1
            if c:
                prev = c
            continue
        if c == 16:
            rep, val = 3 + br.read(2), prev
        elif c == 17:
            rep, val = 3 + br.read(3), 0
        else:
            rep, val = 11 + br.read(7), 0
        if s + rep > alphabet:
            raise CorruptImage("VP8L: code length repeat past the alphabet")
        lengths[s : s + rep] = [val] * rep
        s += rep
    if br.overrun():
        raise CorruptImage("VP8L: truncated stream")
    return _Code(lengths)


def _decode_image(br: _Bits, w: int, h: int, main: bool, limits: Limits | None) -> array[int]:
    """An entropy-coded image (section 3.7): w * h ARGB values, row-major."""
    cache_bits = 0
    if br.read(1):
        cache_bits = br.read(4)
        if not 1 <= cache_bits <= 11:
            raise CorruptImage("VP8L: bad color cache size")
    meta_bits = 0
    meta: list[int] | None = None
    meta_w = 1
    if main and br.read(1):
        meta_bits = br.read(3) + 2
        meta_w = -(-w // (1 << meta_bits))
        meta_h = -(-h // (1 << meta_bits))
        meta = [(p >> 8) & 0xFFFF for p in _decode_image(br, meta_w, meta_h, False, limits)]
    ngroups = max(meta) + 1 if meta else 1
    cache_size = (1 << cache_bits) if cache_bits else 0
    groups = []
    for _ in range(ngroups):
        groups.append([_read_code(br, a) for a in (280 + cache_size, 256, 256, 256, 40)])
    total = w * h
    # Grown as pixels are decoded, so a corrupt stream claiming a huge image fails before its memory
    # is taken (len(px) == pos throughout).
    px: array[int] = array("I")
    cache = [0] * cache_size
    cache_shift = 32 - cache_bits
    mask = (1 << meta_bits) - 1 if meta is not None else -1
    # Each code as (root table, root mask, root bits, sub-tables), for the inlined lookups below.
    tables = [tuple((c.root, (1 << c.root_bits) - 1, c.root_bits, c.subs) for c in grp) for grp in groups]
    data = br.data
    n = br.n
    buf, nb, bpos = br.buf, br.nbits, br.pos
    pos = 0
    x = y = 0
    gt, rt, bt, at, dt = tables[0]
    try:
        while pos < total:
            if meta is not None and (x & mask) == 0:
                gt, rt, bt, at, dt = tables[meta[(y >> meta_bits) * meta_w + (x >> meta_bits)]]
            # One refill covers a whole step: four 15-bit codes, or two codes and two extra-bit fields.
            if nb < 64:
                buf |= int.from_bytes(data[bpos : bpos + 8], "little") << nb
                nb += 64
                bpos += 8
            e = gt[0][buf & gt[1]]
            if e < 0:
                e = -e - 1
                e = gt[3][e >> 4][(buf >> gt[2]) & ((1 << (e & 15)) - 1)]
            buf >>= e & 15
            nb -= e & 15
            g = e >> 4
            if g < 256:
                e = rt[0][buf & rt[1]]
                if e < 0:
                    e = -e - 1
                    e = rt[3][e >> 4][(buf >> rt[2]) & ((1 << (e & 15)) - 1)]
                buf >>= e & 15
                nb -= e & 15
                argb = (e >> 4) << 16 | (g << 8)
                e = bt[0][buf & bt[1]]
                if e < 0:
                    e = -e - 1
                    e = bt[3][e >> 4][(buf >> bt[2]) & ((1 << (e & 15)) - 1)]
                buf >>= e & 15
                nb -= e & 15
                argb |= e >> 4
                e = at[0][buf & at[1]]
                if e < 0:
                    e = -e - 1
                    e = at[3][e >> 4][(buf >> at[2]) & ((1 << (e & 15)) - 1)]
                buf >>= e & 15
                nb -= e & 15
                argb |= (e >> 4) << 24
                px.append(argb)
                if cache_size:
                    cache[((argb * 0x1E35A7BD) & 0xFFFFFFFF) >> cache_shift] = argb
                pos += 1
                x += 1
                if x == w:
                    x = 0
                    y += 1
                    if bpos > n + 64:
                        raise CorruptImage("VP8L: truncated stream")
            elif g < 280:
                # Section 3.5.2.2: length and distance prefix codes with their extra bits.
                sym = g - 256
                if sym < 4:
                    length = sym + 1
                else:
                    k = (sym - 2) >> 1
                    length = ((2 + (sym & 1)) << k) + (buf & ((1 << k) - 1)) + 1
                    buf >>= k
                    nb -= k
                e = dt[0][buf & dt[1]]
                if e < 0:
                    e = -e - 1
                    e = dt[3][e >> 4][(buf >> dt[2]) & ((1 << (e & 15)) - 1)]
                buf >>= e & 15
                nb -= e & 15
                sym = e >> 4
                if sym < 4:
                    dcode = sym + 1
                else:
                    k = (sym - 2) >> 1
                    dcode = ((2 + (sym & 1)) << k) + (buf & ((1 << k) - 1)) + 1
                    buf >>= k
                    nb -= k
                if dcode > 120:
                    d = dcode - 120
                else:
                    xi, yi = _DIST_MAP[dcode - 1]
                    d = max(xi + yi * w, 1)
                if d > pos or length > total - pos:
                    raise CorruptImage("VP8L: backward reference outside the image")
                src = pos - d
                if d >= length:
                    px.extend(px[src : src + length])
                else:
                    px.extend((px[src:pos] * (length // d + 1))[:length])
                if cache_size:
                    for argb in px[pos : pos + length]:
                        cache[((argb * 0x1E35A7BD) & 0xFFFFFFFF) >> cache_shift] = argb
                pos += length
                x += length
                if x >= w:
                    y += x // w
                    x %= w
                    if bpos > n + 64:
                        raise CorruptImage("VP8L: truncated stream")
                if meta is not None and pos < total:
                    gt, rt, bt, at, dt = tables[meta[(y >> meta_bits) * meta_w + (x >> meta_bits)]]
            else:
                idx = g - 280
                if idx >= cache_size:
                    raise CorruptImage("VP8L: color cache index out of range")
                px.append(cache[idx])
                pos += 1
                x += 1
                if x == w:
                    x = 0
                    y += 1
                    if bpos > n + 64:
                        raise CorruptImage("VP8L: truncated stream")
    finally:
        br.buf, br.nbits, br.pos = buf, nb, bpos
    if br.overrun():
        raise CorruptImage("VP8L: truncated stream")
    return px


# ----------------------------------------------------------------------------------- inverse transforms
def _to_channels(px: array[int], h: int, w: int) -> np.ndarray:
    """ARGB values -> (h, w, 4) int32 in the order A, R, G, B."""
    a = np.frombuffer(px, dtype=np.uint32).reshape(h, w)
    return np.stack([(a >> 24) & 255, (a >> 16) & 255, (a >> 8) & 255, a & 255], axis=2).astype(np.int32)


def _clamp(v: int) -> int:
    return v if 0 <= v <= 255 else (0 if v < 0 else 255)


def _half(d: int) -> int:
    # C's d / 2 (truncation towards zero), as ClampAddSubtractHalf is specified.
    return (d + (d < 0)) >> 1


def _run_left_modes(
    m: int, res: list[list[int]], top: list[list[int]], tl: list[list[int]], tr: list[list[int]], left: list[int]
) -> list[list[int]]:
    """Section 4.1 predictors 1, 5, 6, 7, 10-13 (those using the left pixel) along one row segment.

    Channels are (A, R, G, B); each output pixel is the residue plus the prediction, modulo 256.
    """
    out = []
    la, lr, lg, lb = left
    if m == 1:
        for ra, rr, rg, rb in res:
            la, lr, lg, lb = (ra + la) & 255, (rr + lr) & 255, (rg + lg) & 255, (rb + lb) & 255
            out.append([la, lr, lg, lb])
    elif m in (5, 6, 7, 10):
        # Average2 of two pixels, of which one or both are averages involving L.
        other = tr if m == 5 else tl if m in (6, 10) else top
        for i, (ra, rr, rg, rb) in enumerate(res):
            oa, orr, og, ob = other[i]
            pa, pr, pg, pb = (la + oa) >> 1, (lr + orr) >> 1, (lg + og) >> 1, (lb + ob) >> 1
            if m == 5:
                ta, tr_, tg, tb = top[i]
                pa, pr, pg, pb = (pa + ta) >> 1, (pr + tr_) >> 1, (pg + tg) >> 1, (pb + tb) >> 1
            elif m == 10:
                ta, tr_, tg, tb = top[i]
                qa, qr, qg, qb = tr[i]
                pa = (pa + ((ta + qa) >> 1)) >> 1
                pr = (pr + ((tr_ + qr) >> 1)) >> 1
                pg = (pg + ((tg + qg) >> 1)) >> 1
                pb = (pb + ((tb + qb) >> 1)) >> 1
            la, lr, lg, lb = (ra + pa) & 255, (rr + pr) & 255, (rg + pg) & 255, (rb + pb) & 255
            out.append([la, lr, lg, lb])
    elif m == 11:  # Select: the one of L and T nearer (Manhattan) to the gradient estimate L + T - TL
        for i, (ra, rr, rg, rb) in enumerate(res):
            ta, tr_, tg, tb = top[i]
            ca, cr, cg, cb = tl[i]
            p_left = abs(ta - ca) + abs(tr_ - cr) + abs(tg - cg) + abs(tb - cb)
            p_top = abs(la - ca) + abs(lr - cr) + abs(lg - cg) + abs(lb - cb)
            if p_left < p_top:
                la, lr, lg, lb = (ra + la) & 255, (rr + lr) & 255, (rg + lg) & 255, (rb + lb) & 255
            else:
                la, lr, lg, lb = (ra + ta) & 255, (rr + tr_) & 255, (rg + tg) & 255, (rb + tb) & 255
            out.append([la, lr, lg, lb])
    elif m == 12:  # ClampAddSubtractFull(L, T, TL)
        for i, (ra, rr, rg, rb) in enumerate(res):
            ta, tr_, tg, tb = top[i]
            ca, cr, cg, cb = tl[i]
            la = (ra + _clamp(la + ta - ca)) & 255
            lr = (rr + _clamp(lr + tr_ - cr)) & 255
            lg = (rg + _clamp(lg + tg - cg)) & 255
            lb = (rb + _clamp(lb + tb - cb)) & 255
            out.append([la, lr, lg, lb])
    else:  # 13: ClampAddSubtractHalf(Average2(L, T), TL)
        for i, (ra, rr, rg, rb) in enumerate(res):
            ta, tr_, tg, tb = top[i]
            ca, cr, cg, cb = tl[i]
            aa, ar, ag, ab = (la + ta) >> 1, (lr + tr_) >> 1, (lg + tg) >> 1, (lb + tb) >> 1
            la = (ra + _clamp(aa + _half(aa - ca))) & 255
            lr = (rr + _clamp(ar + _half(ar - cr))) & 255
            lg = (rg + _clamp(ag + _half(ag - cg))) & 255
            lb = (rb + _clamp(ab + _half(ab - cb))) & 255
            out.append([la, lr, lg, lb])
    return out


def _inverse_predictor(img: np.ndarray, bits: int, data: np.ndarray) -> np.ndarray:
    """Section 4.1. img (h, w, 4) residues -> pixels; data (bh, bw, 4) holds the modes in green."""
    h, w, _ = img.shape
    out = np.empty_like(img)
    black = np.array([255, 0, 0, 0], dtype=np.int32)
    # Row 0: the first pixel predicts opaque black, the rest predict from the left.
    row = img[0].copy()
    row[0] += black
    out[0] = np.cumsum(row, axis=0) & 255
    modes = data[:, :, 2] & 15
    bs = 1 << bits
    for yy in range(1, h):
        top = out[yy - 1]
        res = img[yy]
        cur = out[yy]
        cur[0] = (res[0] + top[0]) & 255  # the first column predicts from above
        mrow = modes[yy >> bits]
        # Above-right of the last pixel is the first pixel of the current row.
        tr_all = np.concatenate([top[1:], cur[:1]], axis=0)
        tl_all = np.concatenate([top[:1], top[:-1]], axis=0)
        x = 1
        while x < w:
            x1 = min(((x >> bits) + 1) * bs, w)
            m = int(mrow[x >> bits])
            if m in (0, 2, 3, 4, 8, 9, 14, 15):
                t = top[x:x1]
                if m == 2:
                    pred = t
                elif m == 3:
                    pred = tr_all[x:x1]
                    if x1 == w:
                        pred = pred.copy()
                        pred[-1] = cur[0]
                elif m == 4:
                    pred = tl_all[x:x1]
                elif m == 8:
                    pred = (tl_all[x:x1] + t) >> 1
                elif m == 9:
                    tr = tr_all[x:x1].copy()
                    if x1 == w:
                        tr[-1] = cur[0]
                    pred = (t + tr) >> 1
                else:  # 0, and 14/15 which libwebp treats as 0
                    pred = black
                cur[x:x1] = (res[x:x1] + pred) & 255
            else:
                rl = res[x:x1].tolist()
                tl = top[x - 1 : x1 - 1].tolist()
                tp = top[x:x1].tolist()
                tr = tr_all[x:x1].tolist()
                if x1 == w:
                    tr[-1] = cur[0].tolist()
                cur[x:x1] = _run_left_modes(m, rl, tp, tl, tr, cur[x - 1].tolist())
            x = x1
    return out


def _expand(data: np.ndarray, bits: int, h: int, w: int) -> np.ndarray:
    return np.repeat(np.repeat(data, 1 << bits, axis=0), 1 << bits, axis=1)[:h, :w]


def _inverse_cross_color(img: np.ndarray, bits: int, data: np.ndarray) -> np.ndarray:
    """Section 4.2: red += g2r * green >> 5; blue += g2b * green >> 5 + r2b * red >> 5 (int8 operands)."""
    h, w, _ = img.shape
    e = _expand(data, bits, h, w)

    def s8(v: np.ndarray) -> np.ndarray:
        return ((v + 128) & 255) - 128

    g2r, g2b, r2b = s8(e[:, :, 3]), s8(e[:, :, 2]), s8(e[:, :, 1])
    g = s8(img[:, :, 2])
    red = (img[:, :, 1] + ((g2r * g) >> 5)) & 255
    blue = (img[:, :, 3] + ((g2b * g) >> 5) + ((r2b * s8(red)) >> 5)) & 255
    out = img.copy()
    out[:, :, 1] = red
    out[:, :, 3] = blue
    return out


def _inverse_indexing(img: np.ndarray, bits: int, palette: np.ndarray, w: int) -> np.ndarray:
    """Section 4.4: packed indices (in green) -> palette colours; indices past the palette give 0."""
    h = img.shape[0]
    idx = img[:, :, 2]
    if bits:
        per = 1 << bits
        bpp = 8 >> bits
        shifts = (np.arange(w) & (per - 1)) * bpp
        idx = (idx[:, np.arange(w) >> bits] >> shifts) & ((1 << bpp) - 1)
    table = np.zeros((256, 4), dtype=np.int32)
    table[: len(palette)] = palette
    return table[idx[:h, :w]]


def decode_vp8l(data: bytes, limits: Limits | None) -> np.ndarray:
    """Decode a VP8L bitstream (the payload of a 'VP8L' chunk) to uint8 (H, W, 3) RGB, alpha dropped.

    Raises:
        CorruptImage: the stream cannot be decoded.
        LimitError: the image is larger than the limits allow.
    """
    if len(data) < 5 or data[0] != 0x2F:
        raise CorruptImage("VP8L: bad signature")
    br = _Bits(data, 1)
    w = br.read(14) + 1
    h = br.read(14) + 1
    br.read(1)  # alpha_is_used: a hint only
    if br.read(3) != 0:
        raise CorruptImage("VP8L: unknown version")
    check_size(h, w, 3, limits)
    transforms: list[tuple[int, int, np.ndarray, int]] = []
    seen = set()
    xs = w
    while br.read(1):
        t = br.read(2)
        if t in seen:
            raise CorruptImage("VP8L: repeated transform")
        seen.add(t)
        if t in (_PREDICTOR, _CROSS_COLOR):
            bits = br.read(3) + 2
            bw, bh = -(-xs // (1 << bits)), -(-h // (1 << bits))
            sub = _to_channels(_decode_image(br, bw, bh, False, limits), bh, bw)
            transforms.append((t, bits, sub, xs))
        elif t == _SUBTRACT_GREEN:
            transforms.append((t, 0, np.zeros(0, np.int32), xs))
        else:
            n = br.read(8) + 1
            bits = 3 if n <= 2 else 2 if n <= 4 else 1 if n <= 16 else 0
            pal = _to_channels(_decode_image(br, n, 1, False, limits), 1, n)[0]
            pal = np.cumsum(pal, axis=0) & 255  # section 4.4: the table is delta-coded
            transforms.append((t, bits, pal, xs))
            xs = -(-xs // (1 << bits))
    img = _to_channels(_decode_image(br, xs, h, True, limits), h, xs)
    for t, bits, tdata, width in reversed(transforms):
        if t == _PREDICTOR:
            img = _inverse_predictor(img, bits, tdata)
        elif t == _CROSS_COLOR:
            img = _inverse_cross_color(img, bits, tdata)
        elif t == _SUBTRACT_GREEN:
            img = img.copy()
            img[:, :, 1] = (img[:, :, 1] + img[:, :, 2]) & 255
            img[:, :, 3] = (img[:, :, 3] + img[:, :, 2]) & 255
        else:
            img = _inverse_indexing(img, bits, tdata, width)
    return img[:, :, 1:4].astype(np.uint8)
