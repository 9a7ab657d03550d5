"""Flag attributes: the INT attributes whose definitions give them the values 0 and 1 only.

ONNX 1-2 has no Boolean attribute type, so a yes/no choice is an INT whose description names 0 and 1
("If set to 1 ...", "0 is row major, and 1 is column major", "Must be one of 0, or 1"). What another
value means is left open, and implementations answer differently: onnxruntime reads only 1 as true
(``keepdims=2`` keeps no dimension there), numpy-based evaluators read any non-zero value as true.
onnxcore does not guess: the validator warns (W-ATTR-FLAG; Clause 7.3.1 constrains an attribute's
type, not its value) and the evaluator refuses the node (Clause 4.4).

The table is read from the descriptions of ``onnx.defs`` and kept by hand, because the definitions
carry no machine-readable value set; ``tests/defs/test_flags.py`` checks every entry against them.
Left out on purpose: ``is_test`` (Dropout-1/6, BatchNormalization-1/6 say "if nonzero", so every value
is defined) and ``multi_class`` of LinearClassifier (no evaluator reads it).
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["FLAG_ATTRIBUTES", "is_flag"]

# Keyed by domain ("" is ai.onnx); a name listed here is a flag in every operator of the domain that
# defines it as an INT (checked per operator by the test).
FLAG_ATTRIBUTES: Mapping[str, frozenset[str]] = {
    "": frozenset(
        {
            "align_corners",  # AffineGrid, GridSample
            "allowzero",  # Reshape
            "antialias",  # Resize
            "broadcast",  # the legacy binary operators, Gemm
            "ceil_mode",  # AveragePool, LpPool, MaxPool
            "center_point_box",  # NonMaxSuppression: 0 corners, 1 centre and size
            "count_include_pad",  # AveragePool
            "detect_negative",  # IsInf
            "detect_positive",  # IsInf
            "exclude_outside",  # Resize
            "exclusive",  # CumSum, CumProd
            "fmod",  # Mod: 0 floor, 1 truncation
            "input_forget",  # LSTM
            "interleaved",  # RotaryEmbedding
            "inverse",  # DFT
            "is_case_sensitive",  # StringNormalizer
            "is_causal",  # Attention
            "keepdims",  # the reductions, ArgMax, ArgMin
            "largest",  # TopK
            "layout",  # RNN, GRU, LSTM: 0 sequence-major, 1 batch-major
            "linear_before_reset",  # GRU
            "new_axis",  # ConcatFromSequence
            "noop_with_empty_axes",  # the reductions
            "onesided",  # DFT, STFT
            "output_sequence",  # RNN, GRU, LSTM (opset 1)
            "periodic",  # the window operators
            "saturate",  # Cast, CastLike, QuantizeLinear
            "select_last_index",  # ArgMax, ArgMin
            "sorted",  # TopK, Unique
            "spatial",  # BatchNormalization
            "storage_order",  # MaxPool: 0 row major, 1 column major
            "training_mode",  # BatchNormalization
            "transA",  # Gemm
            "transB",  # Gemm
            "upper",  # Trilu
        }
    ),
    "ai.onnx.ml": frozenset({"one_class", "zeros"}),  # SVMRegressor, OneHotEncoder
}


def is_flag(domain: str, name: str) -> bool:
    """Whether ``name`` is a flag attribute (values 0 and 1 only) of the operators of ``domain``.

    Args:
        domain: The canonical domain ("" for ai.onnx).
        name: The attribute name.

    Returns:
        True for a flag; the caller checks that the bound definition gives the attribute the INT type.
    """
    names = FLAG_ATTRIBUTES.get(domain)
    return names is not None and name in names
