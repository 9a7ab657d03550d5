# Source: onnx/onnx, docs/PythonAPIOverview.md, commit f7546912001b: the `exec_code` block(s) starting at line(s) 128, 167
# Licence: Apache-2.0 (onnx)
# Edits: the blocks concatenated in that order, each after a `# ---- block at line N ----` marker (the
#   documentation runs them one after another in one directory: later blocks read files earlier ones write).
# ---- block at line 128 ----
import onnx
from onnx import helper, TensorProto

# Create inputs and output value info
X = helper.make_tensor_value_info("X", TensorProto.FLOAT, [3, 2])
pads = helper.make_tensor_value_info("pads", TensorProto.INT64, [4])
Y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [5, 4])

# Create Pad node
node_def = helper.make_node(
    "Pad",
    inputs=["X", "pads"],
    outputs=["Y"],
    mode="constant",
)

# Build graph and model
graph_def = helper.make_graph(
    [node_def],
    "test-model",
    [X, pads],
    [Y],
)
model_def = helper.make_model(
    graph_def,
    producer_name="onnx-example",
    opset_imports=[helper.make_opsetid("", 11)]
)

# Validate the model
onnx.checker.check_model(model_def)
print("Model is valid!")
# ---- block at line 167 ----
from onnx import TensorProto, helper

np_dtype = helper.tensor_dtype_to_np_dtype(TensorProto.FLOAT)
print(f"The converted numpy dtype for {helper.tensor_dtype_to_string(TensorProto.FLOAT)} is {np_dtype}.")

field_name = helper.tensor_dtype_to_field(TensorProto.FLOAT)
print(f"The field name for {helper.tensor_dtype_to_string(TensorProto.FLOAT)} is {field_name}.")

# There are other useful conversion utilities. Please check onnx.helper
