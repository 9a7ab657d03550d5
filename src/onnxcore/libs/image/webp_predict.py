"""VP8 intra prediction and reconstruction (RFC 6386 section 12) for the WebP decoder (private)."""

from __future__ import annotations

import numpy as np

__all__ = ["B_PRED", "DC_PRED", "H_PRED", "TM_PRED", "V_PRED", "predict_mb", "reconstruct_bpred"]

# RFC 6386 section 11.2 mode numbering.
DC_PRED, V_PRED, H_PRED, TM_PRED, B_PRED = range(5)
_B_DC, _B_TM, _B_VE, _B_HE, _B_LD, _B_RD, _B_VR, _B_VL, _B_HD, _B_HU = range(10)


def predict_mb(plane: np.ndarray, r: int, c: int, size: int, mode: int, mx: int, my: int) -> np.ndarray:
    """16x16 luma or 8x8 chroma prediction (RFC 6386 sections 12.2, 12.3) at plane[r:r+size, c:c+size].

    The plane has a one-pixel border (row 0: 127, column 0: 129) that supplies the out-of-frame pixels.
    """
    if mode == DC_PRED:
        shift = size.bit_length() - 1  # log2(size)
        if mx > 0 and my > 0:
            s = int(plane[r - 1, c : c + size].sum()) + int(plane[r : r + size, c - 1].sum())
            v = (s + size) >> (shift + 1)
        elif my > 0:
            v = (int(plane[r - 1, c : c + size].sum()) + (size >> 1)) >> shift
        elif mx > 0:
            v = (int(plane[r : r + size, c - 1].sum()) + (size >> 1)) >> shift
        else:
            v = 128
        return np.full((size, size), v, dtype=np.int32)
    if mode == V_PRED:
        return np.broadcast_to(plane[r - 1, c : c + size].astype(np.int32), (size, size))
    if mode == H_PRED:
        return np.broadcast_to(plane[r : r + size, c - 1 : c].astype(np.int32), (size, size))
    above = plane[r - 1, c : c + size].astype(np.int32)
    left = plane[r : r + size, c - 1].astype(np.int32)
    out: np.ndarray = np.minimum(np.maximum(left[:, None] + above[None, :] - int(plane[r - 1, c - 1]), 0), 255)
    return out


def _predict_sub(a: list[int], lf: list[int], mode: int) -> list[int]:
    """4x4 sub-block prediction (RFC 6386 section 12.3), row-major.

    a = [P, A0..A7] (the pixel above-left, then the 8 above), lf = [L0..L3].
    """
    p = a[0]
    A = a[1:]
    L = lf
    if mode == _B_DC:
        v = (sum(A[:4]) + sum(L) + 4) >> 3
        return [v] * 16
    if mode == _B_TM:
        return [min(max(L[r] + A[cc] - p, 0), 255) for r in range(4) for cc in range(4)]
    if mode == _B_VE:
        row = [(a[i] + 2 * a[i + 1] + a[i + 2] + 2) >> 2 for i in range(4)]
        return row * 4
    if mode == _B_HE:
        col = [
            (p + 2 * L[0] + L[1] + 2) >> 2,
            (L[0] + 2 * L[1] + L[2] + 2) >> 2,
            (L[1] + 2 * L[2] + L[3] + 2) >> 2,
            (L[2] + 3 * L[3] + 2) >> 2,
        ]
        return [col[r] for r in range(4) for _ in range(4)]
    # E: edge pixels from the bottom of the left column up to P and along the above row.
    E = [L[3], L[2], L[1], L[0], p, A[0], A[1], A[2], A[3]]

    def av3(x: int, y: int, z: int) -> int:
        return (x + 2 * y + z + 2) >> 2

    def av2(x: int, y: int) -> int:
        return (x + y + 1) >> 1

    B = [0] * 16
    if mode == _B_LD:
        s = [av3(A[i], A[i + 1], A[i + 2]) for i in range(6)] + [av3(A[6], A[7], A[7])]
        for r in range(4):
            for cc in range(4):
                B[4 * r + cc] = s[r + cc]
        return B
    if mode == _B_RD:
        s = [av3(E[i - 1], E[i], E[i + 1]) for i in range(1, 8)]  # s[k] = avg3p(E + k + 1)
        for r in range(4):
            for cc in range(4):
                B[4 * r + cc] = s[3 - r + cc]
        return B
    if mode == _B_VR:
        B[12] = av3(E[1], E[2], E[3])
        B[8] = av3(E[2], E[3], E[4])
        B[13] = B[4] = av3(E[3], E[4], E[5])
        B[9] = B[0] = av2(E[4], E[5])
        B[14] = B[5] = av3(E[4], E[5], E[6])
        B[10] = B[1] = av2(E[5], E[6])
        B[15] = B[6] = av3(E[5], E[6], E[7])
        B[11] = B[2] = av2(E[6], E[7])
        B[7] = av3(E[6], E[7], E[8])
        B[3] = av2(E[7], E[8])
        return B
    if mode == _B_VL:
        B[0] = av2(A[0], A[1])
        B[4] = av3(A[0], A[1], A[2])
        B[8] = B[1] = av2(A[1], A[2])
        B[5] = B[12] = av3(A[1], A[2], A[3])
        B[9] = B[2] = av2(A[2], A[3])
        B[13] = B[6] = av3(A[2], A[3], A[4])
        B[10] = B[3] = av2(A[3], A[4])
        B[14] = B[7] = av3(A[3], A[4], A[5])
        B[11] = av3(A[4], A[5], A[6])
        B[15] = av3(A[5], A[6], A[7])
        return B
    if mode == _B_HD:
        B[12] = av2(E[0], E[1])
        B[13] = av3(E[0], E[1], E[2])
        B[8] = B[14] = av2(E[1], E[2])
        B[9] = B[15] = av3(E[1], E[2], E[3])
        B[10] = B[4] = av2(E[2], E[3])
        B[11] = B[5] = av3(E[2], E[3], E[4])
        B[6] = B[0] = av2(E[3], E[4])
        B[7] = B[1] = av3(E[3], E[4], E[5])
        B[2] = av3(E[4], E[5], E[6])
        B[3] = av3(E[5], E[6], E[7])
        return B
    # B_HU
    B[0] = av2(L[0], L[1])
    B[1] = av3(L[0], L[1], L[2])
    B[2] = B[4] = av2(L[1], L[2])
    B[3] = B[5] = av3(L[1], L[2], L[3])
    B[6] = B[8] = av2(L[2], L[3])
    B[7] = B[9] = av3(L[2], L[3], L[3])
    B[10] = B[11] = B[12] = B[13] = B[14] = B[15] = L[3]
    return B


# clamp255(p + r) for a predicted pixel p and a residue r clamped to [-255, 255], indexed by p + r + 255.
_CLAMP = tuple(min(max(v - 255, 0), 255) for v in range(766))


def reconstruct_bpred(yb: np.ndarray, r: int, c: int, bmodes: list[int], resid: np.ndarray) -> None:
    """The 16 sub-blocks of a B_PRED macroblock, each predicted from the reconstruction so far.

    resid is the macroblock's 16x16 residue; clamping it to [-255, 255] leaves every clamped sum
    (section 14.5) unchanged and lets a table do the clamping.
    """
    res = (np.minimum(np.maximum(resid, -255), 255) + 255).tolist()
    clamp = _CLAMP
    above_right = yb[r - 1, c + 16 : c + 20].tolist()
    for i in range(16):
        sy, sx = divmod(i, 4)
        rr = r + 4 * sy
        cc = c + 4 * sx
        if sx == 3 and sy > 0:
            # Section 12.3: the right column reuses the pixels above-right of the macroblock.
            a = yb[rr - 1, cc - 1 : cc + 4].tolist() + above_right
        else:
            a = yb[rr - 1, cc - 1 : cc + 8].tolist()
        pr = _predict_sub(a, yb[rr : rr + 4, cc - 1].tolist(), bmodes[i])
        blk = []
        for j in range(4):
            rw = res[4 * sy + j]
            k = 4 * j
            x = 4 * sx
            blk.append(
                [
                    clamp[pr[k] + rw[x]],
                    clamp[pr[k + 1] + rw[x + 1]],
                    clamp[pr[k + 2] + rw[x + 2]],
                    clamp[pr[k + 3] + rw[x + 3]],
                ]
            )
        yb[rr : rr + 4, cc : cc + 4] = blk
