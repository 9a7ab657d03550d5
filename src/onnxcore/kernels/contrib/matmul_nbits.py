"""MatMulNBits (``com.microsoft``, since_version 1): a matrix product with a block-quantized constant weight.

``Y = A @ dequantize(B).T + bias`` where the weight, N rows of K, is quantized block-wise along K with
``block_size`` (a power of two, at least 16) and ``bits`` per value (2 to 8):

* **B** is uint8 ``[N, k_blocks, blob]`` (``k_blocks = ceil(K / block_size)``, ``blob = block_size * bits / 8``):
  the values of each block, packed from the least significant bit of the first byte on (4 bits: the first
  value in the low nibble). Positions past K in the last block are padding and ignored.
* **scales**: ``N * k_blocks`` values of A's type, row-major over (n, block).
* **zero_points** (optional): either uint8, packed with ``bits`` per value as B, each row of N padded to whole
  bytes (``N * ceil(k_blocks * bits / 8)`` bytes); or of A's type, one per (n, block). Absent, the zero point
  is ``2 ** (bits - 1)``.
* **g_idx** (optional, int32 ``[K]``): the block whose scale and zero point position k uses (act-order
  quantization); absent, position k uses block ``k // block_size``.
* **bias** (optional): ``[N]``, added to Y.

onnxruntime 1.31's CPU kernel, given both g_idx and uint8 (packed) zero points, ignores the zero points and uses
``2 ** (bits - 1)`` (with zero points of A's type it uses them). That is taken as the fact here.

``dequantize(B)[n, k] = (q[n, k] - zero_point[n, g(k)]) * scale[n, g(k)]``, computed in float32 (exact
products of the small integers), the product in float32 and rounded once to A's type.

``accuracy_level`` selects onnxruntime's internal compute type (0 or 1: float32; 2: float16; 3: bfloat16; 4:
int8, A quantized per block to int8 before the products). It is a speed hint of that runtime and does not
change the definition: we compute the float32 product for every level. onnxruntime's results for level 4 differ
from it by its int8 quantization of A (tests: relative error below 2e-2 of the output's magnitude; levels 0-3
on float32 input: below 1e-5).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from onnxcore.errors import EvaluationError, ShapeError
from onnxcore.kernels.registry import kernel

__all__: list[str] = []

Array = np.ndarray


def unpack_bits(packed: Array, bits: int, count: int) -> Array:
    """The first ``count`` ``bits``-wide unsigned values of each row of ``packed`` (uint8, last axis), least
    significant bits first; returns uint8 of shape ``packed.shape[:-1] + (count,)``."""
    packed = np.asarray(packed, dtype=np.uint8)
    if 8 % bits == 0:
        per = 8 // bits
        shifts = (np.arange(per, dtype=np.uint8) * bits).astype(np.uint8)
        vals = (packed[..., None] >> shifts) & np.uint8((1 << bits) - 1)
        vals = vals.reshape(*packed.shape[:-1], packed.shape[-1] * per)
    else:
        stream = np.unpackbits(packed, axis=-1, bitorder="little")
        n = stream.shape[-1] // bits
        groups = stream[..., : n * bits].reshape(*packed.shape[:-1], n, bits)
        vals = (groups.astype(np.uint16) << np.arange(bits, dtype=np.uint16)).sum(axis=-1).astype(np.uint8)
    if vals.shape[-1] < count:
        raise ShapeError(f"packed data holds {vals.shape[-1]} values of {bits} bits, {count} are needed")
    return vals[..., :count]


def dequantize_weight(
    B: Array,
    scales: Array,
    zero_points: Array | None,
    g_idx: Array | None,
    *,
    K: int,
    N: int,
    bits: int,
    block_size: int,
) -> Array:
    """The float32 weight ``[N, K]`` that B, scales, zero points and g_idx denote (see the module text)."""
    if not 2 <= bits <= 8:
        raise EvaluationError(f"MatMulNBits: bits must be in [2, 8], got {bits}")
    if block_size < 16 or block_size & (block_size - 1):
        raise EvaluationError(f"MatMulNBits: block_size must be a power of 2 not below 16, got {block_size}")
    if K <= 0 or N <= 0:
        raise EvaluationError(f"MatMulNBits: K and N must be positive, got K={K}, N={N}")
    k_blocks = -(-K // block_size)
    blob = block_size * bits // 8
    B = np.asarray(B)
    if B.dtype != np.uint8 or B.size != N * k_blocks * blob:
        raise ShapeError(f"MatMulNBits: B must be uint8 [{N}, {k_blocks}, {blob}], got {B.dtype} {B.shape}")
    q = unpack_bits(B.reshape(N, k_blocks * blob), bits, k_blocks * block_size)[:, :K].astype(np.float32)
    s = np.asarray(scales)
    if s.size != N * k_blocks:
        raise ShapeError(f"MatMulNBits: scales must have {N} * {k_blocks} values, got shape {s.shape}")
    s = s.reshape(N, k_blocks).astype(np.float32)
    if zero_points is None or (g_idx is not None and np.asarray(zero_points).dtype == np.uint8):
        z = np.full((N, k_blocks), float(1 << (bits - 1)), np.float32)
    else:
        zp = np.asarray(zero_points)
        if zp.dtype == np.uint8:
            row = -(-k_blocks * bits // 8)
            if zp.size != N * row:
                raise ShapeError(f"MatMulNBits: packed zero_points must have {N} * {row} bytes, got {zp.shape}")
            z = unpack_bits(zp.reshape(N, row), bits, k_blocks).astype(np.float32)
        else:
            if zp.size != N * k_blocks:
                raise ShapeError(f"MatMulNBits: zero_points must have {N} * {k_blocks} values, got {zp.shape}")
            z = zp.reshape(N, k_blocks).astype(np.float32)
    if g_idx is None:
        group = np.arange(K) // block_size
    else:
        group = np.asarray(g_idx).astype(np.int64).reshape(-1)
        if group.shape != (K,):
            raise ShapeError(f"MatMulNBits: g_idx must have {K} entries, got shape {np.shape(g_idx)}")
        if group.size and (group.min() < 0 or group.max() >= k_blocks):
            raise EvaluationError(f"MatMulNBits: g_idx entries must be in [0, {k_blocks - 1}]")
    if g_idx is None and K % block_size == 0:
        # Contiguous blocks: a broadcast per block, no gather.
        w = (q.reshape(N, k_blocks, block_size) - z[:, :, None]) * s[:, :, None]
        return w.reshape(N, K)
    return (q - z[:, group]) * s[:, group]


class _ConstantWeight:
    """A node's MatMulNBits with its weight dequantized once, when the plan is made (``prepare``, which sees the
    node's constant B, scales, zero points and g_idx): a run given those very arrays (the plan's constant slots hold
    the same objects on every run) multiplies by the kept weight; anything else is the kernel's own call."""

    __slots__ = ("arrays", "attrs", "w")

    def __init__(self, arrays: tuple[Any, ...], w: Array, attrs: dict[str, int]) -> None:
        self.arrays, self.w, self.attrs = arrays, w, attrs

    def __call__(
        self,
        A: Array,
        B: Array,
        scales: Array,
        zero_points: Array | None = None,
        g_idx: Array | None = None,
        bias: Array | None = None,
        **attributes: Any,
    ) -> Array:
        b0, s0, z0, g0 = self.arrays
        if B is b0 and scales is s0 and zero_points is z0 and g_idx is g0:
            return _product(A, scales, self.w, bias, self.attrs["K"], self.attrs["N"])
        return matmul_nbits(A, B, scales, zero_points, g_idx, bias, **attributes)


def _prepare_matmul_nbits(
    constants: Sequence[Any],
    *,
    K: int,
    N: int,
    accuracy_level: int = 0,
    bits: int = 4,
    block_size: int,
    weight_prepacked: int = 0,
) -> Any:
    """The node's call: with B and scales constant (and zero points and g_idx constant or left out), its weight
    dequantized once (:class:`_ConstantWeight`); otherwise the kernel itself."""
    del accuracy_level  # a speed hint of onnxruntime's (module text)
    b, scales, zero_points, g_idx = (*constants[1:5], None, None, None, None)[:4]
    if weight_prepacked or not isinstance(b, np.ndarray) or not isinstance(scales, np.ndarray):
        return matmul_nbits
    attrs = {"K": K, "N": N, "bits": bits, "block_size": block_size}
    w = dequantize_weight(b, scales, zero_points, g_idx, **attrs)
    w.flags.writeable = False
    # A zero point or g_idx that varies from run to run is None here too: the identity test of the call sends such
    # a run to the kernel.
    return _ConstantWeight((b, scales, zero_points, g_idx), w, attrs)


def _product(A: Array, scales: Array, w: Array, bias: Array | None, K: int, N: int) -> Array:
    """``A @ w.T (+ bias)`` in float32, rounded once to A's type, with the kernel's checks of A, scales and bias."""
    A = np.asarray(A)
    if A.ndim < 1 or A.shape[-1] != K:
        raise ShapeError(f"MatMulNBits: A's last axis must be K={K}, got shape {A.shape}")
    if np.asarray(scales).dtype != A.dtype:
        raise EvaluationError(f"MatMulNBits: scales have type {np.asarray(scales).dtype}, A {A.dtype}")
    y = np.matmul(A.astype(np.float32, copy=False), w.T)
    if bias is not None:
        b = np.asarray(bias)
        if b.shape != (N,):
            raise ShapeError(f"MatMulNBits: bias must have shape ({N},), got {b.shape}")
        y = y + b.astype(np.float32)
    return y.astype(A.dtype, copy=False)


@kernel("MatMulNBits", 1, domain="com.microsoft", prepare=_prepare_matmul_nbits, prepare_constants=True)
def matmul_nbits(
    A: Array,
    B: Array,
    scales: Array,
    zero_points: Array | None = None,
    g_idx: Array | None = None,
    bias: Array | None = None,
    *,
    K: int,
    N: int,
    accuracy_level: int = 0,
    bits: int = 4,
    block_size: int,
    weight_prepacked: int = 0,
) -> Array:
    """MatMulNBits: ``A @ dequantize(B).T + bias`` (see the module text). A plan dequantizes a node's constant
    weight once (``prepare``); called alone, the kernel dequantizes on each call."""
    if weight_prepacked:
        raise EvaluationError("MatMulNBits: weight_prepacked=1 (a runtime's private layout) is not supported")
    A = np.asarray(A)
    if A.ndim < 1 or A.shape[-1] != K:
        raise ShapeError(f"MatMulNBits: A's last axis must be K={K}, got shape {A.shape}")
    if np.asarray(scales).dtype != A.dtype:
        raise EvaluationError(f"MatMulNBits: scales have type {np.asarray(scales).dtype}, A {A.dtype}")
    w = dequantize_weight(B, scales, zero_points, g_idx, K=K, N=N, bits=bits, block_size=block_size)
    return _product(A, scales, w, bias, K, N)
