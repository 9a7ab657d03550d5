# Source: onnx/onnx, docs/PythonAPIOverview.md, commit f7546912001b: the `python` blocks of "Loading an ONNX
#   Model with External Data", "Converting an ONNX Model to External Data", "Saving an ONNX Model",
#   "Converting and Saving an ONNX Model to External Data", "Updating Model's Inputs Outputs Dimension Sizes
#   with Variable Length" and "ONNX Inliner"
# Licence: Apache-2.0 (onnx)
# Edits: the blocks in an order that makes them one story, each after a `# ---- <section> ----` marker: the
#   model they save and load is a small linear model made in a preamble (marked) with onnx.helper, whose
#   4 KiB weight is above the blocks' size_threshold of 1024 bytes; the placeholder paths replaced by local
#   files (and models of tests/compat/data through `from compat_data import get_example`, added);
#   `onnx_model = ...` placeholders removed (the preamble's model); the inliner block's
#   `onnx.save("path/to/the/inlinedmodel.onnx")` given the model it omits (`onnx.save(inlined, ...)`); prints
#   of what each block produces (the page shows no output).
import os

import numpy
from compat_data import get_example

# ---- preamble ----
import onnx
from onnx import helper, numpy_helper, TensorProto

weight = numpy_helper.from_array(numpy.arange(1024, dtype=numpy.float32).reshape(32, 32), name="W")
graph = helper.make_graph(
    [helper.make_node("MatMul", ["X", "W"], ["Y"])],
    "linear",
    [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", 32])],
    [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N", 32])],
    [weight],
)
onnx_model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
os.makedirs("model_dir", exist_ok=True)

# ---- Converting an ONNX Model to External Data ----
from onnx.external_data_helper import convert_model_to_external_data

# onnx_model is an in-memory ModelProto
convert_model_to_external_data(onnx_model, all_tensors_to_one_file=True, location="filename", size_threshold=1024, convert_attribute=False)
# Then the onnx_model has converted raw data as external data
# Must be followed by save
print([(e.key, e.value) for e in onnx_model.graph.initializer[0].external_data])

# ---- Saving an ONNX Model ----
import onnx

# Save the ONNX model
onnx.save(onnx_model, "model_dir/model.onnx")
print(sorted(os.listdir("model_dir")), os.path.getsize("model_dir/filename"))

# ---- Loading an ONNX Model with External Data ----
import onnx

onnx_model = onnx.load("model_dir/model.onnx")
print(numpy_helper.to_array(onnx_model.graph.initializer[0]).sum())

import onnx
from onnx.external_data_helper import load_external_data_for_model

onnx_model = onnx.load("model_dir/model.onnx", load_external_data=False)
load_external_data_for_model(onnx_model, "model_dir/")
# Then the onnx_model has loaded the external data from the specific directory
print(numpy_helper.to_array(onnx_model.graph.initializer[0]).sum())

# ---- Converting and Saving an ONNX Model to External Data ----
import onnx

onnx.save_model(onnx_model, "resaved.onnx", save_as_external_data=True, all_tensors_to_one_file=True, location="filename", size_threshold=1024, convert_attribute=False)
# Then the onnx_model has converted raw data as external data and saved to specific directory
print(os.path.getsize("filename"), numpy_helper.to_array(onnx.load("resaved.onnx").graph.initializer[0]).sum())

# ---- Updating Model's Inputs Outputs Dimension Sizes with Variable Length ----
import onnx
from onnx.tools import update_model_dims

model = onnx.load(get_example("dims.onnx"))
# Here both "seq", "batch" and -1 are dynamic using dim_param.
variable_length_model = update_model_dims.update_inputs_outputs_dims(model, {"input_name": ["seq", "batch", 3, -1]}, {"output_name": ["seq", "batch", 1, -1]})
print(variable_length_model.graph.input[0].type.tensor_type.shape)
print(variable_length_model.graph.output[0].type.tensor_type.shape)

# ---- ONNX Inliner ----
import onnx
import onnx.inliner

model = onnx.load(get_example("functions.onnx"))
inlined = onnx.inliner.inline_local_functions(model)
onnx.save(inlined, "inlinedmodel.onnx")
print(len(inlined.functions), [n.op_type for n in onnx.load("inlinedmodel.onnx").graph.node])
