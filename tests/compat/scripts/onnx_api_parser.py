# Source: onnx/onnx, docs/PythonAPIOverview.md, commit f7546912001b: the `exec_code` block(s) starting at line(s) 455
# Licence: Apache-2.0 (onnx)
# Edits: none (the block as a script).
# ---- block at line 455 ----
import onnx

input = """
   agraph (float[N, 128] X, float[128, 10] W, float[10] B) => (float[N, 10] C)
   {
        T = MatMul(X, W)
        S = Add(T, B)
        C = Softmax(S)
   }
"""
graph = onnx.parser.parse_graph(input)
print(f"Graph name: {graph.name}")
print(f"Graph nodes: {[n.op_type for n in graph.node]}")

input = """
   <
     ir_version: 7,
     opset_import: ["" : 10]
   >
   agraph (float[N, 128] X, float[128, 10] W, float[10] B) => (float[N, 10] C)
   {
      T = MatMul(X, W)
      S = Add(T, B)
      C = Softmax(S)
   }
"""
model = onnx.parser.parse_model(input)
print(f"Model IR version: {model.ir_version}")
print(f"Model graph: {model.graph.name}")
