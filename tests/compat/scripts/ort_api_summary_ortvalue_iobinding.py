# Source: microsoft/onnxruntime, docs/python/api_summary.rst (sections OrtValue and IOBinding), commit 00b9de073afa
# Licence: MIT (onnxruntime)
# Edits: the page's code blocks, in order, as one script, with
#   - a preamble (marked below) that defines what the page assumes: `import numpy as np`, `import onnxruntime`,
#     the array X and a file model.onnx (onnxruntime's mul_1.onnx, Y = X * X, copied
#     twice: once with its names X/Y as the OrtValue block uses them, once renamed input/output as the IOBinding
#     blocks do);
#   - the device 'cuda' -> 'cpu' (the corpus runs on CPU; onnxruntime's CPU build has no CUDA device);
#   - the first block's `ses = ...` / `sess.run` typo made one name (`sess`);
#   - a print of each result, so that the two runs can be compared.
# ---- preamble ----
import shutil

import numpy as np
import onnx
import onnxruntime
from compat_data import get_example

X = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], dtype=np.float32)
shutil.copy(get_example("mul_1.onnx"), "model_xy.onnx")
renamed = onnx.load(get_example("mul_1.onnx"))
renamed.graph.input[0].name = "input"
renamed.graph.output[0].name = "output"
renamed.graph.node[0].input[0] = "input"
renamed.graph.node[0].output[0] = "output"
onnx.save(renamed, "model.onnx")
# ---- OrtValue ----
#X is numpy array on cpu, create an OrtValue and place it on cuda device id = 0
ortvalue = onnxruntime.OrtValue.ortvalue_from_numpy(X, 'cpu', 0)
print(ortvalue.device_name())  # 'cuda'
print(ortvalue.shape())  # shape of the numpy array X
print(ortvalue.data_type())  # 'tensor(float)'
print(ortvalue.is_tensor())  # 'True'
print(np.array_equal(ortvalue.numpy(), X))  # 'True'

#ortvalue can be provided as part of the input feed to a model
sess = onnxruntime.InferenceSession('model_xy.onnx')
res = sess.run(["Y"], {"X": ortvalue})
print(res)
# ---- IOBinding, scenario 1 ----
#X is numpy array on cpu
session = onnxruntime.InferenceSession('model.onnx')
io_binding = session.io_binding()
# OnnxRuntime will copy the data over to the CUDA device if 'input' is consumed by nodes on the CUDA device
io_binding.bind_cpu_input('input', X)
io_binding.bind_output('output')
session.run_with_iobinding(io_binding)
Y = io_binding.copy_outputs_to_cpu()[0]
print(Y)
# ---- IOBinding, scenario 2 ----
#X is numpy array on cpu
X_ortvalue = onnxruntime.OrtValue.ortvalue_from_numpy(X, 'cpu', 0)
session = onnxruntime.InferenceSession('model.onnx')
io_binding = session.io_binding()
io_binding.bind_input(name='input', device_type=X_ortvalue.device_name(), device_id=0, element_type=np.float32, shape=X_ortvalue.shape(), buffer_ptr=X_ortvalue.data_ptr())
io_binding.bind_output('output')
session.run_with_iobinding(io_binding)
Y = io_binding.copy_outputs_to_cpu()[0]
print(Y)
# ---- IOBinding, scenario 3 ----
#X is numpy array on cpu
X_ortvalue = onnxruntime.OrtValue.ortvalue_from_numpy(X, 'cpu', 0)
Y_ortvalue = onnxruntime.OrtValue.ortvalue_from_shape_and_type([3, 2], np.float32, 'cpu', 0)  # Change the shape to the actual shape of the output being bound
session = onnxruntime.InferenceSession('model.onnx')
io_binding = session.io_binding()
io_binding.bind_input(name='input', device_type=X_ortvalue.device_name(), device_id=0, element_type=np.float32, shape=X_ortvalue.shape(), buffer_ptr=X_ortvalue.data_ptr())
io_binding.bind_output(name='output', device_type=Y_ortvalue.device_name(), device_id=0, element_type=np.float32, shape=Y_ortvalue.shape(), buffer_ptr=Y_ortvalue.data_ptr())
session.run_with_iobinding(io_binding)
print(Y_ortvalue.numpy())
# ---- IOBinding, scenario 4 ----
#X is numpy array on cpu
X_ortvalue = onnxruntime.OrtValue.ortvalue_from_numpy(X, 'cpu', 0)
session = onnxruntime.InferenceSession('model.onnx')
io_binding = session.io_binding()
io_binding.bind_input(name='input', device_type=X_ortvalue.device_name(), device_id=0, element_type=np.float32, shape=X_ortvalue.shape(), buffer_ptr=X_ortvalue.data_ptr())
#Request ONNX Runtime to bind and allocate memory on CUDA for 'output'
io_binding.bind_output('output', 'cpu')
session.run_with_iobinding(io_binding)
# The following call returns an OrtValue which has data allocated by ONNX Runtime on CUDA
ort_output = io_binding.get_outputs()[0]
print(ort_output.numpy())
# ---- IOBinding, scenario 5 ----
#X is numpy array on cpu
#X is numpy array on cpu
X_ortvalue = onnxruntime.OrtValue.ortvalue_from_numpy(X, 'cpu', 0)
Y_ortvalue = onnxruntime.OrtValue.ortvalue_from_shape_and_type([3, 2], np.float32, 'cpu', 0)  # Change the shape to the actual shape of the output being bound
session = onnxruntime.InferenceSession('model.onnx')
io_binding = session.io_binding()
io_binding.bind_ortvalue_input('input', X_ortvalue)
io_binding.bind_ortvalue_output('output', Y_ortvalue)
session.run_with_iobinding(io_binding)
print(Y_ortvalue.numpy())
# ---- Device ----
print(onnxruntime.get_device())
