"""LaneAffine (kernels/fused/affine.py; Clause 8.2): the affine chains of single-value constants of a group of lanes
applied to their stacked operand give each lane what its own chain gives it, bit for bit, for float32 and float64
(the stacked coefficients, a lane without a factor included) and for any other type (each lane's own chain, by its
nodes' kernels); written into the operand by ``into`` the same; chains of different forms, and an operand without
one lane per chain, are refused."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from onnxcore.errors import EvaluationError
from onnxcore.kernels.fused.affine import AffineChain, LaneAffine
from onnxcore.kernels.fused.common import default_kernel

RNG = np.random.default_rng(11)


def _chain(a: float, b: float, relu: bool, dtype: Any, a_shape: tuple[int, ...] = (1, 1)) -> AffineChain:
    """``x * a + b`` (then Relu) as the affine matcher makes it: the constants of the model's type (``a`` of
    ``a_shape``), and the nodes' kernels as its fallback."""
    ca, cb = np.full(a_shape, a, dtype), np.asarray(b, dtype)
    fallback = [(default_kernel("Mul"), [None, ca], {}), (default_kernel("Add"), [None, cb], {})]
    if relu:
        fallback.append((default_kernel("Relu"), [None], {}))
    return AffineChain(None, [("mul", ca), ("add", cb)], relu, fallback)


def _bits(a: np.ndarray) -> bytes:
    return a.dtype.str.encode() + str(a.shape).encode() + a.tobytes()


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("lane", [(), (1,), (3,), (2, 5), (1, 1)])
@pytest.mark.parametrize("a_shape", [(), (1, 1)])
def test_each_lane_gets_its_own_chains_bits(
    dtype: Any, relu: bool, lane: tuple[int, ...], a_shape: tuple[int, ...]
) -> None:
    k = 5
    # (lane 2 multiplies by a single 1: that chain composes no factor, the stacked one multiplies its lane by 1)
    factors = [float(v) for v in RNG.standard_normal(k) * 3]
    factors[2] = 1.0
    chains = [_chain(f, float(RNG.standard_normal()), relu, dtype, a_shape) for f in factors]
    x = (RNG.standard_normal((k, *lane)) * 4).astype(dtype)
    if x.size >= 3:
        x.reshape(-1)[:3] = [np.nan, np.inf, -0.0]
    want = np.stack([np.asarray(c(x[i])) for i, c in enumerate(chains)])
    stacked = LaneAffine(chains)
    assert _bits(stacked(x)) == _bits(want)
    assert _bits(stacked(x)) == _bits(want)  # (the coefficients kept from the previous run)
    y = x.copy()
    if stacked.into(y):
        assert _bits(y) == _bits(want)
    else:
        # (never written: an operand of one element, a type the stacked coefficients do not take, or lanes of a lower
        # rank than the chains' (1, 1) constants, which grow each lane: then each lane's own chain, above)
        assert y.size == 1 or y.dtype == np.float16 or len(lane) < len(a_shape)
        assert _bits(y) == _bits(x)


def test_refusals() -> None:
    one, other = _chain(2.0, 1.0, False, np.float32), _chain(3.0, 1.0, True, np.float32)
    with pytest.raises(EvaluationError, match="one form"):
        LaneAffine([one, other])  # (a closing Relu in one chain only)
    with pytest.raises(EvaluationError, match="AffineChain"):
        LaneAffine([one, lambda v: v])
    with pytest.raises(EvaluationError, match="2 lanes"):
        LaneAffine([one, _chain(5.0, 0.0, False, np.float32)])(np.zeros((3, 4), np.float32))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_rank_0_input_on_the_first_run(dtype: Any) -> None:
    # Regression: AffineChain's placeholder of the previous run had shape () and dtype None, which numpy compares
    # equal to float64, so a rank-0 float64 input was given the placeholder's coefficients (x + 0).
    chain = _chain(2.0, 1.0, False, dtype, ())
    for v in (3.0, -0.5):
        assert float(chain(np.asarray(v, dtype))) == 2.0 * v + 1.0
    chains = [_chain(2.0, 1.0, False, dtype, ()), _chain(-3.0, 0.5, False, dtype, ())]
    got = LaneAffine(chains)(np.asarray([3.0, 2.0], dtype))
    assert got.tolist() == [7.0, -5.5]
