"""Flows in the style of onnx's Python API overview (written for this test): tensors and arrays, a Pad model, shape
and function type inference, version conversion, compose, update_model_dims, the parser and extract_model."""

import numpy
import onnx
import onnx.compose
import onnx.inliner
import onnx.parser
import onnx.shape_inference
import onnx.utils
from onnx import TensorProto, helper, numpy_helper, shape_inference, version_converter
from onnx.tools import update_model_dims

a = numpy.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=float)
t = numpy_helper.from_array(a)
print(t)
print(numpy_helper.to_array(t))
with open("t.pb", "wb") as f:
    f.write(t.SerializeToString())
t2 = onnx.TensorProto()
with open("t.pb", "rb") as f:
    t2.ParseFromString(f.read())
print(t2)
npd = helper.tensor_dtype_to_np_dtype(TensorProto.FLOAT)
print(
    npd,
    helper.tensor_dtype_to_string(helper.tensor_dtype_to_storage_tensor_dtype(TensorProto.FLOAT16)),
    helper.tensor_dtype_to_field(TensorProto.BFLOAT16),
    helper.np_dtype_to_tensor_dtype(npd),
)
print(sorted(helper.tensor_dtype_to_string(d) for d in helper.get_all_tensor_dtypes()))
X = helper.make_tensor_value_info("X", TensorProto.FLOAT, [3, 2])
pads = helper.make_tensor_value_info("pads", TensorProto.INT64, [4])
Y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [5, 4])
n = helper.make_node("Pad", inputs=["X", "pads"], outputs=["Y"], mode="constant", value=0.0)
g = helper.make_graph([n], "pad", [X, pads], [Y])
m = helper.make_model(g, producer_name="ex", opset_imports=[helper.make_opsetid("", 10)])
try:
    onnx.checker.check_model(m)
    print("valid")
except onnx.checker.ValidationError:
    print("invalid")
n1 = helper.make_node("Transpose", ["X"], ["Y"], perm=[1, 0, 2])
n2 = helper.make_node("Transpose", ["Y"], ["Z"], perm=[1, 0, 2])
g = helper.make_graph(
    [n1, n2],
    "tt",
    [helper.make_tensor_value_info("X", TensorProto.FLOAT, (2, 3, 4))],
    [helper.make_tensor_value_info("Z", TensorProto.FLOAT, (2, 3, 4))],
)
om = helper.make_model(g, producer_name="ex", opset_imports=[helper.make_opsetid("", 18)])
onnx.checker.check_model(om)
print("before", om.graph.value_info)
im = shape_inference.infer_shapes(om)
onnx.checker.check_model(im)
print("after", im.graph.value_info)
fn = onnx.parser.parse_function(
    '<opset_import: [ "" : 18 ], domain: "local"> CastTo <dtype> (x) => (y) { y = Cast <to : int = @dtype> (x) }'
)
print(
    onnx.shape_inference.infer_function_output_types(
        fn, [helper.make_tensor_type_proto(1, None)], [helper.make_attribute("dtype", 6)]
    )
)
cm = version_converter.convert_version(om, 13)
print(cm.opset_import)
m1 = onnx.parser.parse_model(
    '<ir_version: 8, opset_import: ["" : 18]> agraph (float[N] A, float[N] B) => (float[N] C, float[N] D)'
    " { C = Add(A, B) D = Sub(A, B) }"
)
m2 = onnx.parser.parse_model(
    '<ir_version: 8, opset_import: ["" : 18]> agraph (float[N] X, float[N] Y) => (float[N] Z) { Z = Mul(X, Y) }'
)
c = onnx.compose.merge_models(m1, m2, io_map=[("C", "X"), ("D", "Y")])
print([o.name for o in c.graph.output], [n.op_type for n in c.graph.node])
c = onnx.compose.merge_models(m1, m2, io_map=[("C", "X"), ("C", "Y")], outputs=["Z"])
print([o.name for o in c.graph.output], [n.op_type for n in c.graph.node])
nm = onnx.compose.add_prefix(m1, prefix="m1/")
print([i.name for i in nm.graph.input], [o.name for o in nm.graph.output])
onnx.compose.add_prefix(m1, prefix="m1/", inplace=True)
print([i.name for i in m1.graph.input])
e = onnx.compose.expand_out_dim(m2, dim_idx=0)
print([o.name for o in e.graph.output], [n.op_type for n in e.graph.node])
vm = update_model_dims.update_inputs_outputs_dims(m2, {"X": ["seq"], "Y": [-1]}, {"Z": ["seq"]})
print(vm.graph.input, vm.graph.output)
graph = onnx.parser.parse_graph(
    "agraph (float[N, 128] X, float[128, 10] W, float[10] B) => (float[N, 10] C)"
    " { T = MatMul(X, W) S = Add(T, B) C = Softmax(S) }"
)
print(graph)
onnx.save(m2, "m2.onnx")
onnx.utils.extract_model("m2.onnx", "m2x.onnx", ["X", "Y"], ["Z"])
print(onnx.load("m2x.onnx").graph)
