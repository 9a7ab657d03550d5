# Source: onnx/onnx, docs/PythonAPIOverview.md, commit f7546912001b: the `python` blocks of "ONNX Compose"
# Licence: Apache-2.0 (onnx)
# Edits: the blocks in order, each after a `# ---- block N ----` marker; the placeholder paths replaced by
#   models of tests/compat/data (written from the page's comments by data/make_models.py) through
#   `from compat_data import get_example` (added); the page's `onnx.compose.expand_out_dims` ->
#   `expand_out_dim` (onnx has only the latter: the block fails as published); a print of the names and
#   shapes each block produces (the page shows them in comments).
from compat_data import get_example


def show(model):
    g = model.graph
    print([i.name for i in g.input], "->", [o.name for o in g.output], [n.op_type for n in g.node])


# ---- block 1 ----
import onnx

model1 = onnx.load(get_example("model1.onnx"))
# agraph (float[N] A, float[N] B) => (float[N] C, float[N] D)
#   {
#      C = Add(A, B)
#      D = Sub(A, B)
#   }

model2 = onnx.load(get_example("model2.onnx"))
#   agraph (float[N] X, float[N] Y) => (float[N] Z)
#   {
#      Z = Mul(X, Y)
#   }

combined_model = onnx.compose.merge_models(
    model1, model2,
    io_map=[("C", "X"), ("D", "Y")]
)
show(combined_model)

# ---- block 2 ----
import onnx

# Default case. Include all outputs in the combined model
combined_model = onnx.compose.merge_models(
    model1, model2,
    io_map=[("C", "X"), ("C", "Y")],
)  # outputs: "D", "Z"
show(combined_model)

# Explicit outputs. "Y" output and the Sub node are not present in the combined model
combined_model = onnx.compose.merge_models(
    model1, model2,
    io_map=[("C", "X"), ("C", "Y")],
    outputs=["Z"],
)  # outputs: "Z"
show(combined_model)

# ---- block 3 ----
import onnx

model = onnx.load(get_example("prefix.onnx"))
# model - outputs: ["out0", "out1"], inputs: ["in0", "in1"]

new_model = onnx.compose.add_prefix(model, prefix="m1/")
# new_model - outputs: ["m1/out0", "m1/out1"], inputs: ["m1/in0", "m1/in1"]
show(new_model)

# Can also be run in-place
onnx.compose.add_prefix(model, prefix="m1/", inplace=True)
show(model)

# ---- block 4 ----
import onnx

# outputs: "out0", shape=[200, 200, 3]
model1 = onnx.load(get_example("samples.onnx"))

# outputs: "in0", shape=[N, 200, 200, 3]
model2 = onnx.load(get_example("batches.onnx"))

# outputs: "out0", shape=[1, 200, 200, 3]
new_model1 = onnx.compose.expand_out_dim(model1, dim_idx=0)
print([d.dim_value for d in new_model1.graph.output[0].type.tensor_type.shape.dim])

# Models can now be merged
combined_model = onnx.compose.merge_models(
    new_model1, model2, io_map=[("out0", "in0")]
)
show(combined_model)

# Can also be run in-place
onnx.compose.expand_out_dim(model1, dim_idx=0, inplace=True)
print([d.dim_value for d in model1.graph.output[0].type.tensor_type.shape.dim])
