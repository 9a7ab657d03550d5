"""Regenerate the small models the onnx documentation fragments of the corpus load (``python make_models.py``).

onnx's Python API overview shows fragments that load ``path/to/model1.onnx`` and the like, describing each
model in a comment (names, shapes, nodes). These are those models, written from the descriptions with
``onnx.parser`` and saved beside this file; the three onnxruntime models (``logreg_iris.onnx``, ``mul_1.onnx``,
``sigmoid.onnx``) are copies from the onnxruntime 1.31.1 wheel's ``onnxruntime/datasets`` (MIT licence).
"""

from __future__ import annotations

import os

import onnx
import onnx.parser

HERE = os.path.dirname(os.path.abspath(__file__))
HEADER = '<ir_version: 8, opset_import: ["" : 13]>\n'

MODELS = {
    # The compose section: model1 computes C = A + B and D = A - B, model2 Z = X * Y.
    "model1.onnx": "agraph (float[N] A, float[N] B) => (float[N] C, float[N] D) { C = Add(A, B)\n D = Sub(A, B) }",
    "model2.onnx": "agraph (float[N] X, float[N] Y) => (float[N] Z) { Z = Mul(X, Y) }",
    # add_prefix: outputs out0, out1, inputs in0, in1.
    "prefix.onnx": "agraph (float[N] in0, float[N] in1) => (float[N] out0, float[N] out1) "
    "{ out0 = Add(in0, in1)\n out1 = Sub(in0, in1) }",
    # expand_out_dim: one model produces out0 [200, 200, 3], the other takes in0 [N, 200, 200, 3].
    "samples.onnx": "agraph (float[200, 200, 3] x) => (float[200, 200, 3] out0) { out0 = Relu(x) }",
    "batches.onnx": "agraph (float[N, 200, 200, 3] in0) => (float[N, 200, 200, 3] y) { y = Neg(in0) }",
    # extract_model: inputs input_0..2, outputs output_0, output_1 (and one more, dropped by the extraction).
    "extract.onnx": "agraph (float[N] input_0, float[N] input_1, float[N] input_2) => "
    "(float[N] output_0, float[N] output_1, float[N] output_2) "
    "{ output_0 = Add(input_0, input_1)\n output_1 = Mul(output_0, input_2)\n output_2 = Sub(input_0, input_2) }",
    # update_inputs_outputs_dims: a 4-D input input_name, a 4-D output output_name of extent 1 on axis 2.
    "dims.onnx": "agraph (float[2, 3, 3, 5] input_name) => (float[2, 3, 1, 5] output_name) "
    "{ output_name = ReduceMax<axes = [2]>(input_name) }",
}

# The inliner fragment: a model calling a model-local function.
FUNCTIONS = """
<ir_version: 8, opset_import: ["" : 13, "local" : 1]>
agraph (float[N] x) => (float[N] y) {
    y = local.Square(x)
}
<opset_import: ["" : 13], domain: "local">
Square (a) => (b) {
    b = Mul(a, a)
}
"""


def main() -> None:
    """Write every model beside this file."""
    for name, text in MODELS.items():
        onnx.save(onnx.parser.parse_model(HEADER + text), os.path.join(HERE, name))
    onnx.save(onnx.parser.parse_model(FUNCTIONS), os.path.join(HERE, "functions.onnx"))


if __name__ == "__main__":
    main()
