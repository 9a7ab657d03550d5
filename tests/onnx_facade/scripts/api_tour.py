"""A script in the style of onnx's Python API overview (written for this test), run with onnx and with the façade."""

import numpy as np
import onnx
from onnx import TensorProto, checker, helper, numpy_helper, shape_inference

X = helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, 4])
A = numpy_helper.from_array(np.arange(8, dtype=np.float32).reshape(4, 2), name="A")
B = numpy_helper.from_array(np.array([0.5, -1.0], dtype=np.float32), name="B")
Y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [None, 2])
node1 = helper.make_node("MatMul", ["X", "A"], ["XA"], name="mm")
node2 = helper.make_node("Add", ["XA", "B"], ["Y"], name="add")
graph = helper.make_graph([node1, node2], "lr", [X], [Y], [A, B])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], producer_name="demo")
model.ir_version = 8
checker.check_model(model)
print(model)
print(helper.printable_graph(model.graph))
for node in model.graph.node:
    print(helper.printable_node(node), [helper.printable_attribute(a) for a in node.attribute])
print(model.graph.input[0].type.tensor_type.elem_type == TensorProto.FLOAT)
print(TensorProto.DataType.Name(model.graph.input[0].type.tensor_type.elem_type))
print(helper.tensor_dtype_to_np_dtype(TensorProto.FLOAT16), helper.tensor_dtype_to_string(TensorProto.INT64))
data = model.SerializeToString()
m2 = onnx.ModelProto()
m2.ParseFromString(data)
print(m2 == model, len(data) == m2.ByteSize())
m2.metadata_props.add(key="author", value="me")
m2.graph.node[0].attribute.extend([helper.make_attribute("note", "x")])
del m2.graph.node[0].attribute[0]
print(m2.HasField("graph"), [f[0].name for f in m2.ListFields()])
m3 = onnx.ModelProto()
m3.CopyFrom(m2)
m3.ClearField("metadata_props")
print(len(m3.metadata_props), len(m2.metadata_props))
inferred = shape_inference.infer_shapes(model)
for vi in inferred.graph.value_info:
    print(helper.printable_value_info(vi))
print(numpy_helper.to_array(A).sum(), numpy_helper.to_array(inferred.graph.initializer[1]).tolist())
try:
    bad = onnx.ModelProto()
    bad.CopyFrom(model)
    bad.graph.node[1].input[0] = "missing"
    checker.check_model(bad)
except checker.ValidationError:
    print("invalid model caught")
t = helper.make_tensor("t", TensorProto.INT32, [2], [1, 2])
print(t)
print(helper.make_sequence("s", onnx.SequenceProto.TENSOR, [t]))
