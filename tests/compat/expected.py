"""What the corpus knows about each script: the text allowed to differ (with why) and the known gaps.

Every entry here is listed in docs/compatibility.md. A script without an entry must print the same in both
runs, up to the normalisation of ``runner.normalise`` and the number tolerance of ``runner.compare_outputs``.

A ``gap`` is a difference onnxcore should not have: the swapped run is an expected failure (strict: once the gap
is closed the test fails until the entry is removed), named with what is missing or wrong.
"""

from __future__ import annotations

from tests.compat.runner import Expected, Mask

# -- volatile: differs between any two runs ----------------------------------------------------------------------

_TIMING = Mask(r"^(Average |time with ).*$", "a timing", volatile=True)
_TIMING_BLOCKS = Mask(
    r"^(Average )?[Tt]ime with[^\n]*:\n[^\n]*$", "a timing (a heading, then the times)", volatile=True
)
_VERSIONS = Mask(
    r"^(onnx|onnxruntime):\s+\S+$",
    "the version the script prints of onnx or onnxruntime: in the swapped run, onnxcore's own `__version__`",
    volatile=True,
)

# -- real differences ---------------------------------------------------------------------------------------------

_MESSAGE = Mask(
    r"(?:^|(?<=: )|(?<=- )|(?<==))"
    r"(\[ONNXRuntimeError\][^\n]*(\n (index: |Please fix)[^\n]*)*|(input '|unknown output name)[^\n]*)$",
    "an exception's message: the class is onnxruntime's and is compared, the message is onnxcore's own (it names "
    "the input, the axis, the declared and the given value, and the clause)",
)
_MISSING_INPUT = Mask(
    r"<class '(ValueError|onnxcore\.errors\.InputError)'>",
    "a feed without a required input: onnxruntime's Python layer raises ValueError, onnxcore its InputError (a "
    "ValueError subclass); the message is the same",
)

_IR_DEFAULT = Mask(
    r"^ir_version:? (14|8)$",
    "make_model's default ir_version: onnx declares its latest (14, which onnxruntime 1.31 refuses to load), "
    "onnxcore the least the model needs (build/ir.py, Table 12)",
)

# -- known gaps (what the swapped run lacks; the lead's list) ------------------------------------------------------

_ONNXSCRIPT_EAGER = (
    "onnxscript's eager mode (a function called on numpy arrays) runs each operator with onnxruntime itself, which "
    "the swapped run has not: a library's own use of onnxruntime, which no import swap in the script reaches"
)

EXPECTED: dict[str, Expected] = {
    # onnxruntime's documentation
    "ort_plot_train_convert_predict": Expected(masks=[_TIMING]),
    "ort_plot_profiling": Expected(
        masks=[
            Mask(
                r"(?s)^\S*\.json$.*",
                "the profile: its file name holds the time of the run, its events their durations, and the two "
                "runtimes name their events differently (both write a JSON list of Chrome trace events)",
                volatile=True,
            )
        ]
    ),
    "ort_plot_common_errors": Expected(
        masks=[
            _MESSAGE,
            _MISSING_INPUT,
            Mask(
                r"^All outputs\n\[array\(\[0, 0, 0\]\)[^\n]*$"
                r"|^graph [^\n]*LinearClassifier[^\n]*12 coefficients do not fit 2 features[^\n]*$",
                "onnxruntime's own logreg_iris.onnx declares 2 features and holds 12 coefficients (3 classes x 4): "
                "onnxruntime returns class 0 for every row, onnxcore refuses the node and names the mismatch "
                "(`onnxcore check` reports it too)",
            ),
        ]
    ),
    "ort_plot_convert_pipeline_vectorizer": Expected(masks=[_MESSAGE]),
    "ort_plot_backend": Expected(masks=[_MESSAGE]),
    # skl2onnx's documentation
    "skl_plot_backend": Expected(masks=[_VERSIONS]),
    "skl_plot_convert_decision_function": Expected(masks=[_VERSIONS]),
    "skl_plot_convert_model": Expected(masks=[_VERSIONS]),
    "skl_plot_investigate_pipeline": Expected(masks=[_VERSIONS]),
    "skl_plot_metadata": Expected(masks=[_VERSIONS]),
    "skl_plot_convert_zipmap": Expected(masks=[_TIMING_BLOCKS, _VERSIONS]),
    "skl_plot_dbegin_options_zipmap": Expected(masks=[_TIMING_BLOCKS, _VERSIONS]),
    "skl_plot_errors_onnxruntime": Expected(masks=[_MESSAGE, _MISSING_INPUT, _VERSIONS]),
    "skl_plot_dbegin_options_list": Expected(
        masks=[Mask(r"^\d+\.\d+(e-?\d+)?$", "a timing (`print(timeit(...))`)", volatile=True)]
    ),
    "skl_plot_gexternal_lightgbm": Expected(
        masks=[
            # LightGBM times row-wise against column-wise histograms and logs its choice with advice lines that
            # depend on which won (one or two lines): the whole message is the timing.
            Mask(
                r"^\[LightGBM\] \[Info\] Auto-choosing.*(\nYou can set .*)?(\nAnd if memory is not enough.*)?$",
                "LightGBM's training log gives a timing and the advice that follows from it",
                volatile=True,
            )
        ]
    ),
    "skl_plot_gbegin_dataframe": Expected(
        masks=[
            Mask(
                r"^('numpy.ndarray' object is not callable|.*got DataFrame)$",
                "a DataFrame given as the whole feed, which both refuse: onnxruntime's message is an accident of "
                "its implementation (it calls the frame's `values` as a method), onnxcore's says the feed must be "
                "a dict of input names",
            )
        ]
    ),
    "skl_plot_gpr": Expected(
        masks=[
            Mask(
                r"(?s)^\[\d+\.\d+ +\d+\.\d+.*?(?=^min\(Y\))",
                "the float32 model's predictions and their distance to scikit-learn's: rounding noise of order 1e5 "
                "in both runtimes (the covariance is a difference of terms of that order; showing it is the "
                "script's point), of different values; scikit-learn's own predictions before them depend on the "
                "BLAS kernels its fit ran on (189.05... with OpenBLAS's SkylakeX kernels, 189.50... with its Haswell "
                "ones), so the block is matched by its form",
            ),
            Mask(
                r"^\[0\.00\d+ +0\.00[^\n]*\]$",
                "the double model's five largest distances to scikit-learn (about 0.004 in both runtimes): "
                "the rounding of two computations that each differ from scikit-learn's by that much",
            ),
            Mask(
                r"^ array\(\[[^\]]*\]\)\]$|^\[ *\d{3,}\.\d+ +\d{3,}\.\d+[^\]]*\]$",
                "the double model's standard deviations and their distance to scikit-learn's (about 1.0): noise "
                "in both runtimes (onnxruntime 345 then 0, onnxcore 0), the variance being a cancellation (the "
                "distances' line, of three digits or more, may wrap: four where BLAS's kernels make them larger)",
            ),
            _VERSIONS,
        ]
    ),
    "skl_plot_dbegin_options": Expected(
        masks=[
            Mask(
                r"(?<='decision_path'\]\n)\[\['[^\n]*\n [^\n]*\]\]$",
                "skl2onnx's decision_path of a classifier writes one vote per class at every leaf, each weighing the "
                "leaf's id: onnxcore adds a leaf's votes as TreeEnsembleClassifier's definition says (so does "
                "onnx.reference), onnxruntime keeps the first (docs/conformance.md, the tree ensembles)",
            )
        ]
    ),
    "skl_plot_jfunction_transformer": Expected(gap=_ONNXSCRIPT_EAGER),
    "skl_plot_k1_custom_converter_onnxscript": Expected(
        gap="the script hands a model built with onnx's helpers to skl2onnx's converter API, which refuses "
        "onnxcore's messages (`Unexpected type <class 'onnxcore.proto.messages.ValueInfoProto'>`): a library "
        "built on onnx needs the model as onnx's (`to_onnx()`), one more line"
    ),
    # onnx's documentation
    "onnx_intro_checker_shape_inference": Expected(
        masks=[
            Mask(
                r"^(b'\[ParseError at position[^\n]*'|line \d+, column \d+: [^\n]*)$",
                "both parsers refuse the text (`int` is not a type name); the message is onnxcore's, naming the "
                "line and column where the bad token starts",
            )
        ]
    ),
    "onnx_intro_shapes_onnxruntime": Expected(
        masks=[
            Mask(
                r"^(\[ONNXRuntimeError\] : 1 : FAIL : Node \(\) Op \(MatMul\)[^\n]*"
                r"|model does not conform: [^\n]*E-SHAPE-INCOMPATIBLE[^\n]*)$",
                "both refuse MatMul of a rank-0 operand when the session is made; the message is onnxcore's",
            ),
            Mask(
                r"^<class '[\w.]*ValidationError'> [^\n]*$",
                "both checkers refuse an input whose type has no shape; the class is onnx's checker's "
                "ValidationError in both (its module differs), the message is onnxcore's",
            ),
        ]
    ),
    "onnx_intro_functions": Expected(masks=[_IR_DEFAULT]),
    "onnx_api_load_check_convert_extract": Expected(
        masks=[
            Mask(
                r"(?<=The model after conversion:\n)ir_version: [37]$",
                "onnx's version converter keeps the model's ir_version 3, which predates operator set 13 (IR 7 is "
                "the least for it, Table 12); onnxcore's declares 7",
            )
        ]
    ),
    "onnx_intro_linear_regression": Expected(masks=[_IR_DEFAULT]),
    "onnx_intro_attributes": Expected(masks=[_IR_DEFAULT]),
    "onnx_intro_initializer": Expected(masks=[_IR_DEFAULT]),
    "onnx_intro_serialization_metadata": Expected(masks=[_IR_DEFAULT]),
    "onnx_intro_if_onnxruntime": Expected(masks=[_IR_DEFAULT]),
    "onnx_intro_scan": Expected(masks=[_IR_DEFAULT]),
}
