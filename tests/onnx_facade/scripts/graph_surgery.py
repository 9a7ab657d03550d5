"""Graph surgery as onnx scripts do it with protobuf's methods (written for this test): remove and reconnect a node,
edit attributes and initializers, switch a dimension between a parameter and a value, metadata, sorting, save/load."""

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
w = numpy_helper.from_array(np.arange(4, dtype=np.float32), "w")
nodes = [
    helper.make_node("Add", ["x", "w"], ["a"], name="add"),
    helper.make_node("Identity", ["a"], ["b"], name="id"),
    helper.make_node("LeakyRelu", ["b"], ["y"], name="lrelu", alpha=0.1),
]
model = helper.make_model(helper.make_graph(nodes, "g", [x], [y], [w]), opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 7
graph = model.graph
# remove the Identity and reconnect
ident = next(n for n in graph.node if n.op_type == "Identity")
for n in graph.node:
    for i, name in enumerate(n.input):
        if name == ident.output[0]:
            n.input[i] = ident.input[0]
graph.node.remove(ident)
print([n.name for n in graph.node], list(graph.node[1].input))
# edit an attribute
for attr in graph.node[1].attribute:
    if attr.name == "alpha":
        attr.f = 0.2
graph.node[1].attribute.extend([helper.make_attribute("note", "x")])
del graph.node[1].attribute[-1]
print(graph.node[1])
# replace an initializer
init = graph.initializer[0]
init.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(init) * 2, init.name))
print(numpy_helper.to_array(graph.initializer[0]).tolist())
# make the batch symbolic, then fixed
graph.input[0].type.tensor_type.shape.dim[0].dim_param = "N"
print(graph.input[0])
graph.input[0].type.tensor_type.shape.dim[0].dim_value = 3
print(graph.input[0], graph.input[0].type.tensor_type.shape.dim[0].WhichOneof("value"))
graph.input[0].name = "x"
# add an intermediate output
graph.output.extend([helper.make_tensor_value_info("a", TensorProto.FLOAT, None)])
print([o.name for o in graph.output])
del graph.output[1:]
graph.ClearField("value_info")
model.opset_import[0].version = 14
helper.set_model_props(model, {"author": "me", "task": "demo"})
model.metadata_props.add(key="extra", value="1")
print(model.metadata_props)
# sort nodes
ordered = sorted(graph.node, key=lambda n: n.name)
del graph.node[:]
graph.node.extend(ordered)
graph.node.insert(0, helper.make_node("Identity", ["x"], ["x2"], name="first"))
graph.node[1].input[0] = "x2"
print([n.name for n in graph.node])
onnx.checker.check_model(model)
onnx.save(model, "m.onnx")
back = onnx.load("m.onnx")
print(back == model, back.ByteSize() == model.ByteSize(), len(back.SerializeToString()))
print(back.graph.node[0].HasField("name"), back.HasField("producer_name"), back.graph.HasField("doc_string"))
print(helper.printable_graph(back.graph))
print(back)
