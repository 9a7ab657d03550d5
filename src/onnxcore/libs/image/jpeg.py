"""JPEG decoding for ImageDecoder (private): Huffman-coded sequential (SOF0/SOF1) and progressive (SOF2)
8-bit JPEG, reproducing libjpeg-turbo's default decompression exactly.

The ImageDecoder-20 definition fixes the chroma upsampling as libjpeg-turbo's "fancy" (triangle)
filter; the test vectors were produced by libjpeg-turbo, so the rest follows it too: the accurate
integer inverse DCT ("islow": two 1-D passes of a 13-bit fixed-point butterfly, 2 extra bits between
passes), the 16-bit fixed-point YCbCr->RGB tables and the colour-space rules for JFIF/Adobe/component
ids. Because each pass of that IDCT is exact integer arithmetic up to its final rounding shift, a pass
is one integer matrix product, so all blocks are transformed at once.

Entropy decoding is sequential by nature and runs in Python, one symbol at a time, on the unstuffed
bytes of each restart interval (peeking 16 bits from a 3-octet window).
"""

from __future__ import annotations

import re
from array import array

import numpy as np

from onnxcore.errors import EvaluationError
from onnxcore.libs.image.common import CorruptImage, check_size
from onnxcore.libs.image.jpeg_common import NATURAL, Component, windows
from onnxcore.libs.image.jpeg_prog import decode_progressive_scan
from onnxcore.limits import Limits

__all__ = ["decode_jpeg"]

_SCAN_END = re.compile(rb"\xff+[^\x00\xd0-\xd7\xff]")
_RST = re.compile(rb"\xff+[\xd0-\xd7]")


# ------------------------------------------------------------------------------------------- IDCT
def _islow_1d(x: list[int]) -> list[int]:
    # One 1-D pass of libjpeg's jpeg_idct_islow before its rounding shift (CONST_BITS = 13).
    c = {
        "0_298631336": 2446, "0_390180644": 3196, "0_541196100": 4433, "0_765366865": 6270, "0_899976223": 7373,
        "1_175875602": 9633, "1_501321110": 12299, "1_847759065": 15137, "1_961570560": 16069,
        "2_053119869": 16819, "2_562915447": 20995, "3_072711026": 25172,
    }  # fmt: skip
    z2, z3 = x[2], x[6]
    z1 = (z2 + z3) * c["0_541196100"]
    tmp2 = z1 - z3 * c["1_847759065"]
    tmp3 = z1 + z2 * c["0_765366865"]
    tmp0 = (x[0] + x[4]) << 13
    tmp1 = (x[0] - x[4]) << 13
    tmp10, tmp13, tmp11, tmp12 = tmp0 + tmp3, tmp0 - tmp3, tmp1 + tmp2, tmp1 - tmp2
    t0, t1, t2, t3 = x[7], x[5], x[3], x[1]
    z1, z2, z3, z4 = t0 + t3, t1 + t2, t0 + t2, t1 + t3
    z5 = (z3 + z4) * c["1_175875602"]
    t0 *= c["0_298631336"]
    t1 *= c["2_053119869"]
    t2 *= c["3_072711026"]
    t3 *= c["1_501321110"]
    z1 *= -c["0_899976223"]
    z2 *= -c["2_562915447"]
    z3 = z3 * -c["1_961570560"] + z5
    z4 = z4 * -c["0_390180644"] + z5
    t0 += z1 + z3
    t1 += z2 + z4
    t2 += z2 + z3
    t3 += z1 + z4
    return [tmp10 + t3, tmp11 + t2, tmp12 + t1, tmp13 + t0, tmp13 - t0, tmp12 - t1, tmp11 - t2, tmp10 - t3]


# _IDCT[i, k]: weight of input k in output i (exact: the butterfly is linear with integer constants).
_IDCT = np.array([_islow_1d([int(i == k) for i in range(8)]) for k in range(8)], dtype=np.int64).T


def _idct_blocks(coef: np.ndarray) -> np.ndarray:
    """Dequantized coefficient blocks (N, 8, 8) int64 -> samples (N, 8, 8) uint8, as jpeg_idct_islow."""
    # Pass 1 on columns (down the rows of each block), descale by CONST_BITS - PASS1_BITS; the
    # workspace is C int, hence the wrap to 32 bits.
    ws = np.einsum("ik,nkj->nij", _IDCT, coef)
    ws = ((ws + (1 << 10)) >> 11).astype(np.int32).astype(np.int64)
    out = np.einsum("nik,jk->nij", ws, _IDCT)
    out = (out + (1 << 17)) >> 18
    # range_limit[x & RANGE_MASK] with the table centred at CENTERJSAMPLE: a 10-bit wrap, then clamp.
    out = ((out + 512) & 1023) - 512 + 128
    return np.clip(out, 0, 255).astype(np.uint8)


# --------------------------------------------------------------------------------------- upsampling
def _rows_shift(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    up = np.concatenate([a[:1], a[:-1]], axis=0)
    down = np.concatenate([a[1:], a[-1:]], axis=0)
    return up, down


def _cols_shift(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    left = np.concatenate([a[:, :1], a[:, :-1]], axis=1)
    right = np.concatenate([a[:, 1:], a[:, -1:]], axis=1)
    return left, right


def _interleave(a: np.ndarray, b: np.ndarray, axis: int) -> np.ndarray:
    return np.stack([a, b], axis=axis + 1).reshape(a.shape[:axis] + (a.shape[axis] * 2,) + a.shape[axis + 1 :])


def _upsample(plane: np.ndarray, fh: int, fv: int) -> np.ndarray:
    """libjpeg-turbo jdsample.c: fancy h2v1/h1v2/h2v2 (edge rows and columns replicated), else box."""
    a = plane.astype(np.int32)
    dw = a.shape[1]
    if fh == 2 and fv == 1 and dw > 2:
        left, right = _cols_shift(a)
        out = _interleave((3 * a + left + 1) >> 2, (3 * a + right + 2) >> 2, 1)
    elif fh == 1 and fv == 2:
        up, down = _rows_shift(a)
        out = _interleave((3 * a + up + 1) >> 2, (3 * a + down + 2) >> 2, 0)
    elif fh == 2 and fv == 2 and dw > 2:
        up, down = _rows_shift(a)
        rows = []
        for cs in (3 * a + up, 3 * a + down):
            left, right = _cols_shift(cs)
            rows.append(_interleave((3 * cs + left + 8) >> 4, (3 * cs + right + 7) >> 4, 1))
        out = _interleave(rows[0], rows[1], 0)
    else:
        out = np.repeat(np.repeat(a, fv, axis=0), fh, axis=1)
    return out.astype(np.uint8)


def _ycc_to_rgb(y: np.ndarray, cb: np.ndarray, cr: np.ndarray) -> np.ndarray:
    # jdcolor.c tables: SCALEBITS = 16, FIX(x) = round(x * 2**16); arithmetic right shifts.
    x = np.arange(256, dtype=np.int64) - 128
    half = 1 << 15
    cr_r = (91881 * x + half) >> 16
    cb_b = (116130 * x + half) >> 16
    cr_g = -46802 * x
    cb_g = -22554 * x + half
    yi = y.astype(np.int64)
    r = yi + cr_r[cr]
    g = yi + ((cb_g[cb] + cr_g[cr]) >> 16)
    b = yi + cb_b[cb]
    return np.clip(np.stack([r, g, b], axis=2), 0, 255).astype(np.uint8)


# ------------------------------------------------------------------------------------------ Huffman
def _huff_lut(counts: bytes, symbols: bytes) -> list[int]:
    """16-bit-peek lookup: entry (length << 8) | symbol, 0 for a bit pattern that is no code."""
    lut = [0] * 65536
    code = 0
    k = 0
    for length in range(1, 17):
        for _ in range(counts[length - 1]):
            if code >= 1 << length:
                raise CorruptImage("bad Huffman table")
            lo = code << (16 - length)
            hi = (code + 1) << (16 - length)
            lut[lo:hi] = [(length << 8) | symbols[k]] * (hi - lo)
            k += 1
            code += 1
        code <<= 1
    return lut


def _fast_ac(lut: list[int]) -> list[int]:
    """AC lookup decoding a whole coefficient from a 16-bit peek where its code and its value bits fit in it:
    entry ``(value << 16) | (run << 8) | bits consumed`` (value 0: end of block, or a run of 16 zeros when
    the run is 15), 0 where the slow path must decode (longer codes, or no code)."""
    e = np.array(lut, dtype=np.int64)
    length, r, size = e >> 8, (e >> 4) & 15, e & 15
    peek = np.arange(65536, dtype=np.int64)
    total = length + size
    fits = (e != 0) & (total <= 16)
    extra = (peek >> np.maximum(16 - total, 0)) & ((1 << size) - 1)
    value = np.where(extra < (1 << size) >> 1, extra - (1 << size) + 1, extra)  # F.2.2.1 EXTEND
    value = np.where(size == 0, 0, value)
    fast = (value << 16) | (r << 8) | total
    return np.where(fits, fast, 0).tolist()


class _Frame:
    def __init__(self, data: bytes, limits: Limits | None) -> None:
        self.data = data
        self.limits = limits
        self.qt: dict[int, np.ndarray] = {}
        self.dc: dict[int, list[int]] = {}
        self.ac: dict[int, list[int]] = {}
        self.restart = 0
        self.comps: list[Component] = []
        self.progressive = False
        self.width = self.height = 0
        self.hmax = self.vmax = 1
        self.mcux = self.mcuy = 0
        self.jfif = False
        self.adobe: int | None = None
        self.eobrun = 0

    # ----------------------------------------------------------------------------------- markers
    def parse(self) -> None:
        data = self.data
        pos = 2
        n = len(data)
        scans = 0
        while True:
            while pos < n and data[pos] != 0xFF:
                pos += 1  # libjpeg skips garbage before a marker (with a warning)
            while pos < n and data[pos] == 0xFF:
                pos += 1
            if pos >= n:
                break
            m = data[pos]
            pos += 1
            if m == 0xD9:
                break
            if 0xD0 <= m <= 0xD7 or m == 0x01:
                continue
            if pos + 2 > n:
                raise CorruptImage("JPEG marker truncated")
            length = (data[pos] << 8) | data[pos + 1]
            seg = data[pos + 2 : pos + length]
            if length < 2 or len(seg) < length - 2:
                raise CorruptImage("JPEG segment truncated")
            pos += length
            if m in (0xC0, 0xC1, 0xC2):
                self._sof(seg, m == 0xC2)
            elif 0xC3 <= m <= 0xCF and m not in (0xC4, 0xC8, 0xCC):
                kind = "arithmetic-coded" if m >= 0xC9 else ("lossless" if m in (0xC3, 0xC7, 0xCB) else "hierarchical")
                raise EvaluationError(f"{kind} JPEG decoding is not implemented")
            elif m == 0xC4:
                self._dht(seg)
            elif m == 0xDB:
                self._dqt(seg)
            elif m == 0xDD:
                if len(seg) < 2:
                    raise CorruptImage("DRI")
                self.restart = (seg[0] << 8) | seg[1]
            elif m == 0xDA:
                if not self.comps:
                    raise CorruptImage("SOS before SOF")
                pos = self._sos(seg, pos)
                scans += 1
            elif m == 0xE0 and seg[:5] == b"JFIF\x00":
                self.jfif = True
            elif m == 0xEE and seg[:5] == b"Adobe" and len(seg) >= 12:
                self.adobe = seg[11]
            elif m == 0xDC:
                raise EvaluationError("JPEG with a DNL marker: decoding is not implemented")
        if not scans:
            raise CorruptImage("JPEG without a scan")

    def _sof(self, seg: bytes, progressive: bool) -> None:
        if self.comps or len(seg) < 6:
            raise CorruptImage("SOF")
        p, y, x, nf = seg[0], (seg[1] << 8) | seg[2], (seg[3] << 8) | seg[4], seg[5]
        if p not in (8, 12):
            raise CorruptImage(f"sample precision {p} (T.81 B.2.2: 8 or 12 for DCT-based frames)")
        if p != 8:
            raise EvaluationError(f"{p}-bit JPEG decoding is not implemented")
        if y == 0:
            raise EvaluationError("JPEG with a DNL-defined height: decoding is not implemented")
        if nf == 4:
            raise EvaluationError("CMYK/YCCK JPEG decoding is not implemented")
        if nf not in (1, 3) or len(seg) < 6 + 3 * nf:
            raise CorruptImage("SOF component count")
        self.progressive = progressive
        self.width, self.height = x, y
        check_size(y, x, nf, self.limits)
        for i in range(nf):
            cid, hv, tq = seg[6 + 3 * i : 9 + 3 * i]
            h, v = hv >> 4, hv & 15
            if not (1 <= h <= 4 and 1 <= v <= 4 and tq <= 3):
                raise CorruptImage("SOF sampling factors")
            self.comps.append(Component(cid, h, v, tq))
        self.hmax = max(c.h for c in self.comps)
        self.vmax = max(c.v for c in self.comps)
        self.mcux = -(-x // (8 * self.hmax))
        self.mcuy = -(-y // (8 * self.vmax))
        total = sum(self.mcux * c.h * self.mcuy * c.v for c in self.comps)
        # Every block costs at least two bits of entropy-coded data (sequential) or one (progressive
        # DC scan): refuse frames the stream cannot possibly fill before allocating their blocks.
        if total > 8 * len(self.data):
            raise CorruptImage("JPEG frame larger than its data")
        for c in self.comps:
            c.bw, c.bh = self.mcux * c.h, self.mcuy * c.v
            c.dw = -(-x * c.h // self.hmax)
            c.dh = -(-y * c.v // self.vmax)
            c.coef = array("i", bytes(4 * 64 * c.bw * c.bh))

    def _dht(self, seg: bytes) -> None:
        pos = 0
        while pos < len(seg):
            if pos + 17 > len(seg):
                raise CorruptImage("DHT")
            tc, th = seg[pos] >> 4, seg[pos] & 15
            counts = seg[pos + 1 : pos + 17]
            total = sum(counts)
            syms = seg[pos + 17 : pos + 17 + total]
            if tc > 1 or th > 3 or len(syms) < total or total > 256:
                raise CorruptImage("DHT")
            (self.ac if tc else self.dc)[th] = _huff_lut(counts, syms)
            pos += 17 + total

    def _dqt(self, seg: bytes) -> None:
        pos = 0
        while pos < len(seg):
            pq, tq = seg[pos] >> 4, seg[pos] & 15
            size = 128 if pq else 64
            raw = seg[pos + 1 : pos + 1 + size]
            if pq > 1 or tq > 3 or len(raw) < size:
                raise CorruptImage("DQT")
            vals = np.frombuffer(raw, dtype=">u2" if pq else np.uint8).astype(np.int64)
            table = np.zeros(64, dtype=np.int64)
            table[np.array(NATURAL[:64])] = vals
            self.qt[tq] = table
            pos += 1 + size

    # -------------------------------------------------------------------------------------- scans
    def _sos(self, seg: bytes, pos: int) -> int:
        ns = seg[0] if seg else 0
        if not 1 <= ns <= 4 or len(seg) < 4 + 2 * ns:
            raise CorruptImage("SOS")
        by_id = {c.cid: c for c in self.comps}
        comps = []
        tables = []
        for i in range(ns):
            c = by_id.get(seg[1 + 2 * i])
            if c is None or c in comps:
                raise CorruptImage("SOS component")
            comps.append(c)
            tables.append((seg[2 + 2 * i] >> 4, seg[2 + 2 * i] & 15))
            if c.quant is None:
                q = self.qt.get(c.tq)
                if q is None:
                    raise CorruptImage("quantization table missing")
                c.quant = q  # latched at the component's first scan, as libjpeg does
        ss, se, ah, al = seg[1 + 2 * ns], seg[2 + 2 * ns], seg[3 + 2 * ns] >> 4, seg[3 + 2 * ns] & 15
        m = _SCAN_END.search(self.data, pos)
        end = m.start() if m else len(self.data)
        chunks = [c.replace(b"\xff\x00", b"\xff") + b"\x00\x00\x00\x00" for c in _RST.split(self.data[pos:end])]
        if self.progressive:
            decode_progressive_scan(self, comps, tables, chunks, ss, se, ah, al)
        else:
            if ss != 0 or se != 63 or ah or al:
                raise CorruptImage("sequential scan parameters")
            self._sequential_scan(comps, tables, chunks)
        return end

    def scan_layout(self, comps: list[Component]) -> tuple[int, int, list[tuple[int, int, int, int]]]:
        """MCUs across, MCUs down, and per block of an MCU: (component index, dy, dx, bw) in blocks."""
        if len(comps) == 1:
            c = comps[0]
            return -(-c.dw // 8), -(-c.dh // 8), [(0, 0, 0, c.bw)]
        layout = []
        for i, c in enumerate(comps):
            for v in range(c.v):
                for h in range(c.h):
                    layout.append((i, v, h, c.bw))
        return self.mcux, self.mcuy, layout

    def _sequential_scan(self, comps: list[Component], tables: list[tuple[int, int]], chunks: list[bytes]) -> None:
        try:
            dcs = [self.dc[t[0]] for t in tables]
            acs = [self.ac[t[1]] for t in tables]
        except KeyError:
            raise CorruptImage("Huffman table missing") from None
        fasts = [_fast_ac(lut) for lut in acs]
        mx_n, my_n, layout = self.scan_layout(comps)
        single = len(comps) == 1
        hv = [(1, 1)] if single else [(c.h, c.v) for c in comps]
        coefs = [c.coef for c in comps]
        natural = NATURAL
        interval = self.restart
        total = mx_n * my_n
        chunk_i = 0
        win = windows(chunks[0])
        limit = 8 * (len(chunks[0]) - 4)
        bp = 0
        pred = [0] * len(comps)
        for mcu in range(total):
            if interval and mcu and mcu % interval == 0:
                if bp > limit:
                    raise CorruptImage("entropy-coded data truncated")
                chunk_i += 1
                if chunk_i >= len(chunks):
                    raise CorruptImage("restart marker missing")
                win = windows(chunks[chunk_i])
                limit = 8 * (len(chunks[chunk_i]) - 4)
                bp = 0
                pred = [0] * len(comps)
            my, mx = divmod(mcu, mx_n)
            for ci, dy, dx, bw in layout:
                h, v = hv[ci]
                base = ((my * v + dy) * bw + mx * h + dx) * 64
                co = coefs[ci]
                aclut = acs[ci]
                fast = fasts[ci]
                # DC
                e = dcs[ci][(win[bp >> 3] >> (16 - (bp & 7))) & 0xFFFF]
                if not e:
                    raise CorruptImage("bad Huffman code")
                bp += e >> 8
                s = e & 255
                diff = 0
                if s:
                    if s > 16 or bp > limit:
                        raise CorruptImage("bad DC category")
                    diff = (win[bp >> 3] >> (32 - (bp & 7) - s)) & ((1 << s) - 1)
                    bp += s
                    if diff < 1 << (s - 1):
                        diff -= (1 << s) - 1
                pred[ci] += diff
                # JCOEF is 16-bit: the DC value wraps on store.
                co[base] = ((pred[ci] + 32768) & 0xFFFF) - 32768
                # AC: one lookup per coefficient whose code and value fit in 16 bits, else code then value.
                k = 1
                while k < 64:
                    peek = (win[bp >> 3] >> (16 - (bp & 7))) & 0xFFFF
                    f = fast[peek]
                    if f:
                        bp += f & 255
                        val = f >> 16
                        if val:
                            k += (f >> 8) & 255
                            co[base + natural[k]] = val
                            k += 1
                        elif (f >> 8) & 255 == 15:
                            k += 16
                        else:
                            break
                        continue
                    e = aclut[peek]
                    if not e:
                        raise CorruptImage("bad Huffman code")
                    bp += e >> 8
                    rs = e & 255
                    r, s = rs >> 4, rs & 15
                    if s:
                        k += r
                        val = (win[bp >> 3] >> (32 - (bp & 7) - s)) & ((1 << s) - 1)
                        bp += s
                        if val < 1 << (s - 1):
                            val -= (1 << s) - 1
                        co[base + natural[k]] = val
                        k += 1
                    elif r == 15:
                        k += 16
                    else:
                        break
                if bp > limit:
                    raise CorruptImage("entropy-coded data truncated")

    # ------------------------------------------------------------------------------------- output
    def component_plane(self, c: Component) -> np.ndarray:
        """Dequantize, inverse-DCT and assemble one component's samples (dh, dw)."""
        if c.quant is None:
            raise CorruptImage("component without a scan")
        blocks = np.frombuffer(c.coef, dtype=np.int32).astype(np.int64).reshape(-1, 64) * c.quant
        samples = _idct_blocks(blocks.reshape(-1, 8, 8))
        plane = samples.reshape(c.bh, c.bw, 8, 8).transpose(0, 2, 1, 3).reshape(c.bh * 8, c.bw * 8)
        return plane[: c.dh, : c.dw]

    def output(self) -> np.ndarray:
        x, y = self.width, self.height
        planes = []
        for c in self.comps:
            p = self.component_plane(c)
            if self.hmax % c.h or self.vmax % c.v:
                raise EvaluationError("JPEG with fractional sampling ratios: decoding is not implemented")
            fh, fv = self.hmax // c.h, self.vmax // c.v
            if fh != 1 or fv != 1:
                p = _upsample(p, fh, fv)
            planes.append(p[:y, :x])
        if len(planes) == 1:
            return planes[0][:, :, None]
        ids = tuple(c.cid for c in self.comps)
        if self.jfif:
            rgb = False
        elif self.adobe is not None:
            rgb = self.adobe == 0
        else:
            rgb = ids == (82, 71, 66)
        if rgb:
            return np.stack(planes, axis=2)
        return _ycc_to_rgb(planes[0], planes[1], planes[2])


def decode_jpeg(data: bytes, limits: Limits | None) -> np.ndarray:
    """Decode a JPEG stream to uint8 (H, W, 1) or (H, W, 3)."""
    frame = _Frame(data, limits)
    frame.parse()
    return frame.output()
