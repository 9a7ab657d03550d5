"""Known divergences from ONNX Part 1: every position onnxcore takes on an Annex C gap or an inconsistency.

Annex A requires a conformance statement to list them. Each entry names the clause, the question the spec leaves
open (or the contradiction), and what onnxcore does; the documents in ``docs/`` give the reasoning.
"""

from __future__ import annotations

__all__ = ["DIVERGENCES"]

# (clause, gap or inconsistency, position taken)
DIVERGENCES: tuple[tuple[str, str, str], ...] = (
    (
        "10.3, 9",
        "How far shape checking is obliged to go is left to be decided together with Clause 9 (editorial note).",
        "Shapes are inferred (onnxcore.infer.infer_shapes) and two contradictions are errors: a node whose fixed "
        "input extents contradict its definition (E-SHAPE-INCOMPATIBLE) and an inferred fixed extent or rank that "
        "contradicts a declared one (E-SHAPE-MISMATCH). Unknown extents and dimension variables are checked "
        "against nothing.",
    ),
    (
        "7.2, 9",
        "An initializer that is also a graph input is a default the caller may override, so its value is not "
        "entailed; yet before IR version 4 every initializer had to be declared an input, constants included.",
        "Shape inference uses the value of such an initializer (a Reshape's shape, say) only in models before IR "
        "version 4; from IR 4 on only its declared type and shape count.",
    ),
    (
        "6.6.4, 9.4",
        "A dimension variable is 'not known to be equal to 1', so a shape holding one is not broadcastable by the "
        "letter of 6.6.4, while 9.4 forbids treating what inference cannot decide as a failure.",
        "Broadcasting a variable against a fixed extent k is not an error and gives k (the only extent an evaluation "
        "can produce); against another variable or an unknown extent it gives unknown. A variable is never "
        "concluded equal to an integer or to another variable (9.3).",
    ),
    (
        "12.8",
        "No canonical serialization is defined.",
        "onnxcore defines one (docs/canonical.md): the ordinary writer's output with unknown fields sorted by tag; "
        "presence and the order of repeated elements are kept.",
    ),
    (
        "12.3.1, 12.4",
        "A field whose tag is known but whose wire type is not the one Annex B gives is not addressed.",
        "Rejected as malformed (DecodeError), not skipped as unknown: the tag is recognised, so Clause 12.4 does "
        "not apply.",
    ),
    (
        "12.3.2, Annex B",
        "Annex B says exactly one member of a oneof group is present but not what a decoder does when several are.",
        "A later member replaces an earlier one, as a later occurrence of one field replaces an earlier one.",
    ),
    (
        "12.5, 15.4",
        "No maximum message size or nesting depth is stated.",
        "Implementation-defined and documented: see the resource limits below; exceeding one is a refusal "
        "(LimitError).",
    ),
    (
        "12.2.5",
        "Strings are UTF-8, but the handling of invalid UTF-8 by a consumer is not stated.",
        "A string field that is not valid UTF-8 is rejected (DecodeError with its offset and field path).",
    ),
    (
        "6.4",
        "Whether STRING elements are UTF-8 text or octet strings is unsettled.",
        "STRING elements are octet strings: tensors of them are numpy object arrays of bytes; str given by a caller "
        "is encoded as UTF-8.",
    ),
    (
        "6.3.3",
        "The result of converting an out-of-range value to a narrow integer type is unstated.",
        "As the ONNX 1-3 Cast vectors show: round to nearest even, then keep the low bits (wrap), so -9.0 to INT4 "
        "gives 7 (docs/types.md).",
    ),
    (
        "6.3.2",
        "Saturation of narrow float conversion is a property of the operator (Cast's saturate), not of the type.",
        "Followed as stated: Cast/CastLike honour saturate; other conversions saturate.",
    ),
    (
        "6.3.2 (Table 6)",
        "FLOAT4E2M1 and the FLOAT6 types encode no NaN, yet a conversion of NaN to them needs a result.",
        "NaN converts to -0, as the ONNX 1-3 Cast vectors expect (docs/types.md).",
    ),
    (
        "5.3.2, Table 2",
        "Table 2 makes operator set imports mandatory while 5.3.2 says the default domain is imported implicitly.",
        "A model importing nothing at all is an error; one that imports other domains but not the default one "
        "is accepted, the default domain being implicit.",
    ),
    (
        "5.3.2",
        "Importing one domain twice is not addressed.",
        "Twice at different versions is an error (which one binds is ambiguous); twice at one version, as skl2onnx "
        "writes, is a warning.",
    ),
    (
        "Annex B",
        "AttributeProto.tp is marked deprecated, yet it is the field that carries every TYPE_PROTO attribute "
        "(e.g. Optional's type).",
        "Not reported as deprecated; it is read and written as an ordinary field.",
    ),
    (
        "11.3",
        "NaN, infinity and signed-zero behaviour of Max/Min (maxNum or maximum) is unstated.",
        "Max and Min propagate NaN (IEEE 754-2019 maximum/minimum), as the ONNX 1-3 vectors and onnxruntime do.",
    ),
    (
        "8.2, 11.4",
        "Clause 8.2 lets an evaluator 'fuse or reassociate computations' within the tolerances of Clause 11; "
        "Clause 11.4 names only reassociation and wider accumulation, and leaves the permitted reassociation "
        "unwritten.",
        "Clause 8.2 read as admitting algebraically exact rewrites whose float error stays far inside the stated "
        "tolerance: large float32 3x3 stride-1 Conv layers run as Winograd F(4x4, 3x3) (error about 1e-5 of the "
        "layer's largest output, against 5e-7 for the direct product), a BatchNormalization and Relu before an "
        "unpadded Conv as a clamp with the scale folded into the weights, an AveragePool then a narrowing 1x1 Conv "
        "as the projection then the pool. A Winograd result with an infinity or NaN is computed directly again, "
        "so special values spread exactly as in the direct convolution; intermediates=True runs every node as "
        "written. The elementwise chains exporters write for GELU (erf and tanh), SiLU, LayerNorm and RMSNorm "
        "run as the operator (the Gelu, LayerNormalization, RMSNormalization kernels; SiLU as x / (1 + exp(-x))), "
        "and the attention chain (MatMul, scale, mask, Softmax, NaN guard, MatMul) as one step on one score "
        "buffer: the same function, rounded differently within a few float32 ulps. A plan made for a run's input "
        "shapes takes the Shape values those shapes decide (a conservative table of operators whose output "
        "shapes follow from their input shapes) as constants, so the shape arithmetic fed by them is folded: "
        "the same values, computed once per input shape.",
    ),
    (
        "7.3.1, 4.4",
        "A node's attributes must satisfy the operator's signature, which gives their types, not their values; "
        "ONNX 1-2 has no Boolean attribute, and a flag (an INT the definition gives the values 0 and 1, such as "
        "keepdims or ceil_mode) with another value has no stated meaning: onnxruntime reads only 1 as true, "
        "numpy-based evaluators any non-zero value.",
        "Validation warns (W-ATTR-FLAG: the model conforms but relies on behaviour left open); the evaluator refuses "
        "the node rather than pick a reading. The flags are listed in onnxcore.defs.flags.",
    ),
    (
        "11.3",
        "Special values of float attributes (alpha, beta, gamma, epsilon, bias, lambd, momentum, scale, "
        "spatial_scale, cubic_coeff_a, extrapolation_value, clip, ...) are not addressed: NaN or an infinity in an "
        "attribute is neither refused nor given a meaning.",
        "Per family. Where the attribute enters a formula (activations such as LeakyRelu, Elu, Selu, HardSigmoid, "
        "Celu, Shrink, ThresholdedRelu; normalizations' epsilon and momentum, LRN's alpha/beta/bias; Gemm's "
        "alpha/beta; attention scales; RNN activation parameters and clip; the training operators; Resize's "
        "cubic_coeff_a and extrapolation_value; RoiAlign and MaxRoiPool's spatial_scale; RandomNormal's mean and "
        "scale, RandomUniform's bounds as far as they stay a finite interval) the node is evaluated and the value "
        "spreads as IEEE 754 says (a NaN alpha gives NaN where it is used). Where a float sizes an output or a "
        "count (Resize/Upsample scales, Range's limits and delta, a non-finite RandomUniform interval) and "
        "where the definition gives a range (Dropout's ratio in [0, 1), used or not, as onnxruntime has it) "
        "a non-finite or out-of-domain value is refused with an EvaluationError naming the node, before "
        "anything is allocated; so is a negative RandomNormal scale (no distribution). A seed is the float's bits, "
        "so NaN and infinities are seeds like any other.",
    ),
    (
        "11.3",
        "Integer division and modulo by zero are not defined by Div and Mod.",
        "Refused with an EvaluationError when the divisor holds a zero (numpy would give 0; onnxruntime refuses).",
    ),
    (
        "11.5",
        "No numerical tolerance is specified.",
        "The tolerance achieved per element type is measured on the ONNX 1-3 vectors and stated below; the pass "
        "criterion is the harness convention rtol 1e-3, atol 1e-7.",
    ),
    (
        "Annex B vs Table 2, Clause 5.3",
        "Annex B marks some fields mandatory or optional contrary to the clauses (e.g. AttributeProto.f mandatory; "
        "ModelProto.ir_version optional while Table 2 requires it; OperatorSetIdProto.domain mandatory though "
        "producers omit it for the default domain).",
        "The clause governs; a field every producer omits is not an error (docs/validation.md).",
    ),
    (
        "6.5.2",
        "Its NOTE reads a dimension variable in a sequence's element type as one extent for every element, yet "
        "the ONNX 1-3 vectors (test_sequence_map_*) feed sequences whose elements differ there.",
        "Feeds are admitted: each sequence element binds the element type's dimension variables afresh (element "
        "type and rank are still checked).",
    ),
    (
        "7.2",
        "A sparse initializer is an initializer (a named tensor value), but whether an operator reads it as a "
        "sparse or as a dense tensor is not stated; onnx's checker types it sparse, onnxruntime evaluates it dense.",
        "It denotes the dense tensor: operators (evaluation and inference alike) read the tensor with zeros where "
        "no value is given; the validator types it as the dense tensor too.",
    ),
    (
        "7.2",
        "Whether models before IR 4 may use one name as both subgraph input and initializer is unsettled.",
        "Admitted for IR < 4, an error from IR 4 on.",
    ),
    (
        "13.3",
        "Only SHA-1 over the whole file is defined as a checksum.",
        "SHA-1 of the whole file is verified before use when present; no other digest is accepted.",
    ),
    (
        "14.4",
        "Backward compatibility is an obligation that runtimes do not universally meet.",
        "Stated per operator set version below: every operator not supported at a version is listed.",
    ),
    (
        "ONNX 1-2 (Add, Sub, Mul, Div, Pow, And, Or, Xor, Equal, Greater, Less before opset 7)",
        "With broadcast=1 the definitions require B's shape to equal a contiguous run of A's and say '1-dim "
        "expansion doesn't work yet'; the onnx project's own vectors (pytorch-operator test_operator_add_size1_*) "
        "expect an extent of 1 in B to stretch.",
        "An extent of 1 in B stretches to A's extent at its position, as those vectors, onnx's reference evaluator "
        "and onnx's shape inference have it; any other mismatch is refused (ShapeError).",
    ),
    (
        "8.4",
        "A function is identified by (domain, name, overload) alone, so a model-local function may carry the identity "
        "of an operator ONNX 1-2 defines (a function ai.onnx.ml Scaler, say); which of the two a node invokes is not "
        "stated.",
        "The model-local function takes precedence over the operator definition and over any kernel, in validation, "
        "inference and evaluation alike (one binding, onnxcore.graph.bind): the model states what the operator means "
        "for it. Its body's nodes bind at the versions the model imports; the function's own imports only supply "
        "domains the model does not import (8.4: a function carries no operator set version of its own).",
    ),
    (
        "8.4",
        "Context-dependent function bodies (built by onnx per node) cannot be stored as data.",
        "Only static function bodies serve as fallbacks; an operator whose only body is context-dependent and that "
        "has no kernel is reported unsupported.",
    ),
    (
        "4.4, 10.2, 16.1",
        "Operators onnxruntime defines outside ONNX 1-2: its com.microsoft domain, and operators or versions it adds "
        "to ai.onnx (SimplifiedLayerNormalization-1, LayerNormalization-1, ScaledTanh...) that models saved by "
        "onnxruntime contain. Part 1 makes the latter undefined operators (10.2).",
        "onnxruntime's definitions (onnxruntime 1.31.1, tools/gen_contrib_defs.py) are held beside ONNX 1-2's and "
        "never change what ai.onnx means (defs.get_schema is ONNX's). A node ONNX 1-2 leaves undefined that "
        "onnxruntime defines binds to onnxruntime's definition, is validated against it and evaluated, with the "
        "warning W-ORT-EXTENSION instead of E-OP-UNDEFINED / E-OP-VERSION. A com.microsoft node binds to "
        "onnxruntime's definition and is checked like a standard one (no W-CUSTOM-DOMAIN); an operator of "
        "com.microsoft onnxruntime does not define is the warning W-ORT-UNDEFINED (the domain is not ONNX's, so the "
        "model stays valid, 16.1) and is evaluated only by a custom kernel. See 'onnxruntime's operators' below.",
    ),
)
