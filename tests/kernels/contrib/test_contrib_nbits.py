"""com.microsoft MatMulNBits against onnxruntime 1.31 (CPU): bits 2, 4 and 8, block sizes 16 to 256, with and
without zero points (packed uint8 and float), g_idx, bias, accuracy levels, float and float16 A; and a
decoder-like MLP quantized by onnxruntime's MatMulNBitsQuantizer.

Tolerances: with B a graph input onnxruntime dequantizes and multiplies in float32 as we do (relative error below
1e-5 of the output's magnitude; float16: 2e-3). With B a constant, onnxruntime prepacks it and, at
accuracy_level 4, quantizes A to int8 per block: the decoder model at that level is compared with a relative
tolerance of 3e-2 of the output's magnitude.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

import onnxcore
from onnxcore import kernels
from tests.kernels.contrib.ms_node import both

F32 = np.float32


def pack(values: np.ndarray, bits: int) -> np.ndarray:
    """Unsigned ``bits``-wide values, each row of the last axis a little-endian bit stream padded to whole bytes
    (the test's own packer: the layout the MatMulNBits definition states)."""
    stream = ((values[..., None] >> np.arange(bits)) & 1).astype(np.uint8).reshape(*values.shape[:-1], -1)
    pad = (-stream.shape[-1]) % 8
    stream = np.concatenate([stream, np.zeros((*stream.shape[:-1], pad), np.uint8)], axis=-1)
    return np.packbits(stream, axis=-1, bitorder="little")


def _case(rng: np.random.Generator, *, K: int, N: int, bits: int, block: int, zp: str | None, g_idx: bool,
          bias: bool, dt: Any = F32, lead: tuple[int, ...] = (3,)) -> tuple[list[Any], dict[str, Any]]:  # fmt: skip
    kb = -(-K // block)
    q = rng.integers(0, 2**bits, (N, kb, block))
    inputs: list[Any] = [
        rng.standard_normal((*lead, K)).astype(dt),
        pack(q, bits),
        rng.uniform(0.01, 0.1, N * kb).astype(dt),
    ]
    if zp == "packed":
        inputs.append(pack(rng.integers(0, 2**bits, (N, kb)), bits).reshape(-1))
    elif zp == "float":
        inputs.append(rng.uniform(0, 2**bits - 1, N * kb).astype(dt))
    else:
        inputs.append(None)
    inputs.append(rng.integers(0, kb, K).astype(np.int32) if g_idx else None)
    inputs.append(rng.standard_normal(N).astype(dt) if bias else None)
    return inputs, {"K": K, "N": N, "bits": bits, "block_size": block}


def _both(inputs: list[Any], attrs: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    try:
        return both("MatMulNBits", inputs, attrs)
    except Exception as e:
        # onnxruntime's CPU kernel has no 8-bit path for float zero points or g_idx (B not a constant).
        if "Only 2b and 4b quantization is supported" in str(e):
            pytest.skip("onnxruntime 1.31 CPU: no 8-bit MatMulNBits with float zero points or g_idx")
        raise


def _close(expected: np.ndarray, actual: np.ndarray, rel: float) -> None:
    scale = float(np.abs(expected.astype(np.float64)).max())
    assert float(np.abs(expected.astype(np.float64) - actual).max()) <= rel * scale


@pytest.mark.parametrize("bits", [2, 4, 8])
@pytest.mark.parametrize("block", [16, 32, 64, 128, 256])
@pytest.mark.parametrize("zp", [None, "packed", "float"])
def test_matmul_nbits_blocks_and_zero_points(bits: int, block: int, zp: str | None) -> None:
    rng = np.random.default_rng(bits * 1000 + block)
    for K in (block * 3, block * 2 + 5):  # whole blocks, and a padded last block
        inputs, attrs = _case(rng, K=K, N=12, bits=bits, block=block, zp=zp, g_idx=False, bias=True)
        expected, actual = _both(inputs, attrs)
        _close(expected, actual, 1e-5)


@pytest.mark.parametrize("bits", [4, 8])
@pytest.mark.parametrize("zp", [None, "packed", "float"])
def test_matmul_nbits_g_idx(bits: int, zp: str | None) -> None:
    """With g_idx, onnxruntime ignores packed uint8 zero points (uses 2**(bits-1)); float ones apply."""
    rng = np.random.default_rng(bits)
    for K, block in ((64, 32), (128, 16), (96, 32)):
        inputs, attrs = _case(rng, K=K, N=8, bits=bits, block=block, zp=zp, g_idx=True, bias=False)
        expected, actual = _both(inputs, attrs)
        _close(expected, actual, 1e-5)


@pytest.mark.parametrize("level", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("lead", [(1,), (3,), (2, 5)])
def test_matmul_nbits_accuracy_levels(level: int, lead: tuple[int, ...]) -> None:
    rng = np.random.default_rng(level)
    inputs, attrs = _case(rng, K=256, N=32, bits=4, block=32, zp="packed", g_idx=False, bias=False, lead=lead)
    expected, actual = _both(inputs, {**attrs, "accuracy_level": level})
    _close(expected, actual, 1e-5)


@pytest.mark.parametrize("zp", [None, "packed"])
def test_matmul_nbits_float16(zp: str | None) -> None:
    rng = np.random.default_rng(16)
    inputs, attrs = _case(rng, K=128, N=16, bits=4, block=32, zp=zp, g_idx=False, bias=True, dt=np.float16)
    expected, actual = _both(inputs, attrs)
    _close(expected, actual, 2e-3)


@pytest.mark.parametrize(("bits", "block", "symmetric", "level", "rel"),
                         [(4, 32, False, None, 1e-5), (4, 128, True, None, 1e-5), (8, 32, False, None, 1e-5),
                          (4, 16, False, 4, 3e-2), (4, 64, True, 4, 3e-2)])  # fmt: skip
def test_decoder_quantized_to_matmul_nbits(tmp_path: Path, bits: int, block: int, symmetric: bool,
                                           level: int | None, rel: float) -> None:  # fmt: skip
    pytest.importorskip("torch")
    from tests.kernels.contrib import ms_models

    src = ms_models.decoder_mlp_float(tmp_path)
    path = ms_models.matmul_nbits(src, tmp_path / "q.onnx", bits=bits, block_size=block, symmetric=symmetric,
                                  accuracy_level=level)  # fmt: skip
    ops = ms_models.op_types(path)
    assert ops.count("com.microsoft::MatMulNBits") == 7, ops
    expected, actual = ms_models.run_both(path, (1, 5, 64))
    assert actual.shape == expected.shape
    _close(expected, actual, rel)


@pytest.mark.parametrize("zp_fed", [False, True])
def test_a_plan_dequantizes_a_constant_weight_once_per_node(zp_fed: bool) -> None:
    """The weight of a node whose B and scales are initializers is dequantized once, when the plan is made (the
    kernel's prepare hook sees the node's constants: the ``prepare_with_constants`` rewrite), with the kernel's own
    values bit for bit; a zero point fed at run time (not a constant) sends the run to the kernel."""
    rng = np.random.default_rng(5)
    inputs, attrs = _case(rng, K=64, N=24, bits=4, block=32, zp="float", g_idx=False, bias=True)
    a, b, scales, zp, _g, bias = inputs
    names = ["A", "B", "scales", "zp", "", "bias"]
    inits = [nh.from_array(v, n) for n, v in (("B", b), ("scales", scales), ("bias", bias))]
    graph_inputs = [h.make_tensor_value_info("A", TP.FLOAT, [3, 64])]
    if zp_fed:
        graph_inputs.append(h.make_tensor_value_info("zp", TP.FLOAT, [zp.size]))
    else:
        inits.append(nh.from_array(zp, "zp"))
    node = h.make_node("MatMulNBits", names, ["Y"], domain="com.microsoft", **attrs)
    g = h.make_graph([node], "g", graph_inputs, [h.make_tensor_value_info("Y", TP.FLOAT, [3, 24])], inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 21), h.make_opsetid("com.microsoft", 1)], ir_version=10)
    s = onnxcore.Session(m.SerializeToString())
    feeds = {"A": a, **({"zp": zp} if zp_fed else {})}
    (want,) = kernels.run("MatMulNBits", 1, a, b, scales, zp, None, bias, domain="com.microsoft", **attrs)
    for _ in range(2):
        np.testing.assert_array_equal(s.run(None, feeds)[0], want)
    assert ("prepare_with_constants" in s.fired_rewrites()) is True
    step = s._plan.info[0].call
    assert type(step).__name__ == "_ConstantWeight"
    assert (step.arrays[2] is None) is zp_fed  # a fed zero point is no constant: the identity test routes the run
