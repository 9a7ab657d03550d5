# Source: onnx/onnx, docs/docsgen/source/intro/python.md, commit f7546912001b: the `exec_code` block(s) starting at line(s) 1151, 1184
# Licence: Apache-2.0 (onnx)
# Edits: the blocks concatenated in that order, each after a `# ---- block at line N ----` marker (the
#   documentation runs them one after another in one directory: later blocks read files earlier ones write).
# ---- block at line 1151 ----
import onnx.parser
import onnx.checker

input = '''
    <
        ir_version: 8,
        opset_import: [ "" : 15]
    >
    agraph (float[I,4] X, float[4,2] A, int[4] B) => (float[I] Y) {
        XA = MatMul(X, A)
        Y = Add(XA, B)
    }
    '''
try:
    onnx_model = onnx.parser.parse_model(input)
    onnx.checker.check_model(onnx_model)
except Exception as e:
    print(e)
# ---- block at line 1184 ----
import onnx.parser
from onnx import helper, shape_inference

input = '''
    <
        ir_version: 8,
        opset_import: [ "" : 15]
    >
    agraph (float[I,4] X, float[4,2] A, float[4] B) => (float[I] Y) {
        XA = MatMul(X, A)
        Y = Add(XA, B)
    }
    '''
onnx_model = onnx.parser.parse_model(input)
inferred_model = shape_inference.infer_shapes(onnx_model)

print(inferred_model)
