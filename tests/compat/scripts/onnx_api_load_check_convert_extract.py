# Source: onnx/onnx, docs/PythonAPIOverview.md, commit f7546912001b: the `python` blocks of "Loading an ONNX
#   Model", "Checking an ONNX Model", "Converting Version of an ONNX Model ..." and "Extracting Sub-model ..."
# Licence: Apache-2.0 (onnx)
# Edits: the blocks in that order, each after a `# ---- <section> ----` marker; every placeholder path
#   ("path/to/the/model.onnx", ...) replaced by a model of tests/compat/data through
#   `from compat_data import get_example` (added); `<int target_version>` -> 13; a print of what the
#   loading and extracting blocks produce (the page shows no output there).
from compat_data import get_example

# ---- Loading an ONNX Model ----
import onnx

# onnx_model is an in-memory ModelProto
onnx_model = onnx.load(get_example("mul_1.onnx"))
print(onnx_model.graph.node[0].op_type)

# ---- Checking an ONNX Model ----
import onnx

# Preprocessing: load the ONNX model
model_path = get_example("sigmoid.onnx")
onnx_model = onnx.load(model_path)

print(f"The model is:\n{onnx_model}")

# Check the model
try:
    onnx.checker.check_model(onnx_model)
except onnx.checker.ValidationError as e:
    print(f"The model is invalid: {e}")
else:
    print("The model is valid!")

# ---- Converting Version of an ONNX Model within Default Domain (""/"ai.onnx") ----
import onnx
from onnx import version_converter, helper

# Preprocessing: load the model to be converted.
model_path = get_example("sigmoid.onnx")
original_model = onnx.load(model_path)

print(f"The model before conversion:\n{original_model}")

# A full list of supported adapters can be found here:
# https://github.com/onnx/onnx/blob/main/onnx/version_converter.py#L21
# Apply the version conversion on the original model
converted_model = version_converter.convert_version(original_model, 13)

print(f"The model after conversion:\n{converted_model}")

# ---- Extracting Sub-model with Inputs Outputs Tensor Names ----
import onnx

input_path = get_example("extract.onnx")
output_path = "extracted.onnx"
input_names = ["input_0", "input_1", "input_2"]
output_names = ["output_0", "output_1"]

onnx.utils.extract_model(input_path, output_path, input_names, output_names)
print([n.op_type for n in onnx.load(output_path).graph.node])
