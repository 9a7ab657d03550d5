"""Operator families: the colour of a node in the report's drawing."""

from __future__ import annotations

__all__ = ["FAMILY_COLOURS", "family"]

_FAMILIES: dict[str, tuple[str, ...]] = {
    "conv": tuple("Conv ConvTranspose ConvInteger QLinearConv DeformConv Col2Im".split()),
    "linalg": tuple("Gemm MatMul MatMulInteger QLinearMatMul Einsum Det Attention".split()),
    "activation": tuple(
        "Relu LeakyRelu PRelu Sigmoid HardSigmoid Tanh Elu Selu Celu Gelu Softplus Softsign HardSwish "
        "Mish ThresholdedRelu Softmax LogSoftmax Hardmax Swish".split()
    ),
    "norm": tuple(
        "BatchNormalization InstanceNormalization LayerNormalization GroupNormalization LRN "
        "MeanVarianceNormalization LpNormalization RMSNormalization Dropout".split()
    ),
    "pool": tuple(
        "MaxPool AveragePool GlobalAveragePool GlobalMaxPool LpPool GlobalLpPool MaxRoiPool RoiAlign MaxUnpool".split()
    ),
    "shape": tuple(
        "Reshape Transpose Flatten Squeeze Unsqueeze Concat Split Slice Gather GatherElements GatherND "
        "Scatter ScatterElements ScatterND Expand Tile Pad Shape Size Identity DepthToSpace SpaceToDepth "
        "Resize Upsample Cast CastLike Compress OneHot Range Trilu ReverseSequence SplitToSequence "
        "ConcatFromSequence NonZero Where".split()
    ),
    "reduce": tuple(
        "ReduceSum ReduceMean ReduceMax ReduceMin ReduceProd ReduceL1 ReduceL2 ReduceLogSum "
        "ReduceLogSumExp ReduceSumSquare ArgMax ArgMin TopK CumSum".split()
    ),
    "control": tuple("If Loop Scan SequenceMap".split()),
    "recurrent": tuple("LSTM GRU RNN".split()),
    "constant": tuple(
        "Constant ConstantOfShape EyeLike RandomNormal RandomUniform RandomNormalLike RandomUniformLike "
        "Multinomial Bernoulli".split()
    ),
    "quant": tuple("QuantizeLinear DequantizeLinear DynamicQuantizeLinear".split()),
}
_BY_OP = {op: fam for fam, ops in _FAMILIES.items() for op in ops}

# Fill colours (light, so black text reads on each); "math" is every other ai.onnx operator.
FAMILY_COLOURS: dict[str, str] = {
    "conv": "#9ec5ee",
    "linalg": "#b7a6e8",
    "activation": "#f6c28b",
    "norm": "#a8dcc0",
    "pool": "#8fd3d9",
    "shape": "#d9d9d9",
    "reduce": "#e6b8d6",
    "control": "#f3e48a",
    "recurrent": "#c9b38f",
    "constant": "#eeeeee",
    "quant": "#c8e29a",
    "math": "#f2d0c4",
    "ml": "#b5d39a",
    "function": "#ffe0a3",
    "other": "#f0f0f0",
}


def family(op_type: str, domain: str, status: str) -> str:
    """The family of an operator, by its name, its (canonical) domain and how it is bound."""
    if status == "function":
        return "function"
    if domain == "ai.onnx.ml":
        return "ml"
    if domain not in ("", "ai.onnx", "ai.onnx.preview.training"):
        return "other"
    return _BY_OP.get(op_type, "math")
