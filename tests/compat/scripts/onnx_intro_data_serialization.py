# Source: onnx/onnx, docs/docsgen/source/intro/python.md, commit f7546912001b: the `exec_code` block(s) starting at line(s) 239, 260, 280, 292
# Licence: Apache-2.0 (onnx)
# Edits: the blocks concatenated in that order, each after a `# ---- block at line N ----` marker (the
#   documentation runs them one after another in one directory: later blocks read files earlier ones write).
# ---- block at line 239 ----
import numpy
from onnx.numpy_helper import from_array

numpy_tensor = numpy.array([0, 1, 4, 5, 3], dtype=numpy.float32)
print(type(numpy_tensor))

onnx_tensor = from_array(numpy_tensor)
print(type(onnx_tensor))

serialized_tensor = onnx_tensor.SerializeToString()
print(type(serialized_tensor))

with open("saved_tensor.pb", "wb") as f:
    f.write(serialized_tensor)
# ---- block at line 260 ----
from onnx import TensorProto
from onnx.numpy_helper import to_array

with open("saved_tensor.pb", "rb") as f:
    serialized_tensor = f.read()
print(type(serialized_tensor))

onnx_tensor = TensorProto()
onnx_tensor.ParseFromString(serialized_tensor)
print(type(onnx_tensor))

numpy_tensor = to_array(onnx_tensor)
print(numpy_tensor)
# ---- block at line 280 ----
import onnx
import pprint
pprint.pprint([p for p in dir(onnx)
               if p.endswith('Proto') and p[0] != '_'])
# ---- block at line 292 ----
from onnx import load_tensor_from_string

with open("saved_tensor.pb", "rb") as f:
    serialized = f.read()
proto = load_tensor_from_string(serialized)
print(type(proto))
