"""Models the report is tested and measured on, built with onnx's helper (the oracle's own builder).

- :func:`if_loop_model`: an ``If`` (two branches) and a ``Loop`` (a body), with dimension variables.
- :func:`findings_model`: a model the validator finds errors in, at named nodes.
- :func:`transformer_model`: a transformer encoder of exactly ``nodes`` nodes (1,000 by default).
- :func:`chain_model`: a chain of ``n`` nodes (50,000 for the node-budget case).
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

FLOAT = TensorProto.FLOAT


def if_loop_model() -> onnx.ModelProto:
    """``y = If(c, x + x, x * x)``, then ``z = Loop(M, y)`` adding ``x`` each iteration."""
    vi = helper.make_tensor_value_info
    add = helper.make_node("Add", ["x", "x"], ["t"], name="then_add")
    mul = helper.make_node("Mul", ["x", "x"], ["e"], name="else_mul")
    then = helper.make_graph([add], "then", [], [vi("t", FLOAT, ["N", 4])])
    els = helper.make_graph([mul], "else", [], [vi("e", FLOAT, ["N", 4])])
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"], name="body_cond"),
            helper.make_node("Add", ["acc", "x"], ["acc_out"], name="body_add"),
        ],
        "body",
        [vi("i", TensorProto.INT64, []), vi("cond_in", TensorProto.BOOL, []), vi("acc", FLOAT, ["N", 4])],
        [vi("cond_out", TensorProto.BOOL, []), vi("acc_out", FLOAT, ["N", 4])],
    )
    graph = helper.make_graph(
        [
            helper.make_node("If", ["c"], ["y"], name="branch", then_branch=then, else_branch=els),
            helper.make_node("Loop", ["M", "", "y"], ["z"], name="repeat", body=body),
        ],
        "if_loop",
        [vi("x", FLOAT, ["N", 4]), vi("c", TensorProto.BOOL, []), vi("M", TensorProto.INT64, [])],
        [vi("z", FLOAT, ["N", 4])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def findings_model() -> onnx.ModelProto:
    """Errors at named nodes: an Add of float and int64 (homogeneity), and a Relu reading an undefined value."""
    vi = helper.make_tensor_value_info
    graph = helper.make_graph(
        [
            helper.make_node("Relu", ["x"], ["r"], name="fine_relu"),
            helper.make_node("Add", ["r", "k"], ["s"], name="mixed_add"),
            helper.make_node("Relu", ["nowhere"], ["u"], name="orphan_relu"),
            helper.make_node("Add", ["s", "u"], ["y"], name="last_add"),
        ],
        "findings",
        [vi("x", FLOAT, [2, 3]), vi("k", TensorProto.INT64, [2, 3])],
        [vi("y", FLOAT, [2, 3])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def transformer_model(nodes: int = 1000, *, d: int = 32, heads: int = 4) -> onnx.ModelProto:
    """A pre-norm transformer encoder (attention, MLP, residuals) with exactly ``nodes`` nodes; batch and
    sequence length are dimension variables (``B``, ``S``)."""
    rng = np.random.default_rng(0)
    inits: list[TensorProto] = []
    out: list[onnx.NodeProto] = []

    def w(name: str, *shape: int) -> str:
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * 0.1).astype(np.float32), name))
        return name

    def node(op: str, ins: list[str], **attrs: object) -> str:
        name = f"{op.lower()}_{len(out)}"
        out.append(helper.make_node(op, ins, [name + "_out"], name=name, **attrs))
        return name + "_out"

    hd = d // heads
    inits.append(numpy_helper.from_array(np.array([0, 0, heads, hd], dtype=np.int64), "split_heads"))
    inits.append(numpy_helper.from_array(np.array([0, 0, d], dtype=np.int64), "merge_heads"))
    inits.append(numpy_helper.from_array(np.array(np.sqrt(hd), dtype=np.float32), "scale"))
    x = "tokens"
    per_layer = 26
    layers = (nodes - 1) // per_layer
    for i in range(layers):
        h = node("LayerNormalization", [x, w(f"ln1_g{i}", d), w(f"ln1_b{i}", d)], axis=-1)
        qkv = []
        for t in "qkv":
            p = node("MatMul", [h, w(f"w{t}{i}", d, d)])
            p = node("Reshape", [p, "split_heads"])
            qkv.append(node("Transpose", [p], perm=[0, 2, 1, 3]))
        kt = node("Transpose", [qkv[1]], perm=[0, 1, 3, 2])
        s = node("MatMul", [qkv[0], kt])
        s = node("Div", [s, "scale"])
        s = node("Softmax", [s], axis=-1)
        a = node("MatMul", [s, qkv[2]])
        a = node("Transpose", [a], perm=[0, 2, 1, 3])
        a = node("Reshape", [a, "merge_heads"])
        a = node("MatMul", [a, w(f"wo{i}", d, d)])
        x = node("Add", [x, a])
        h = node("LayerNormalization", [x, w(f"ln2_g{i}", d), w(f"ln2_b{i}", d)], axis=-1)
        h = node("MatMul", [h, w(f"w1_{i}", d, 4 * d)])
        h = node("Add", [h, w(f"b1_{i}", 4 * d)])
        h = node("Relu", [h])
        h = node("MatMul", [h, w(f"w2_{i}", 4 * d, d)])
        h = node("Add", [h, w(f"b2_{i}", d)])
        x = node("Add", [x, h])
    while len(out) < nodes - 1:
        x = node("Identity", [x])
    x = node("LayerNormalization", [x, w("lnf_g", d), w("lnf_b", d)], axis=-1)
    assert len(out) == nodes
    vi = helper.make_tensor_value_info
    graph = helper.make_graph(
        out, "transformer", [vi("tokens", FLOAT, ["B", "S", d])], [vi(x, FLOAT, ["B", "S", d])], initializer=inits
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def chain_model(n: int) -> onnx.ModelProto:
    """``n`` nodes in one chain, alternating ``Relu`` and ``Add`` of an initializer (the 50,000-node graph of
    benchmarks/bench_check.py)."""
    nodes = []
    for i in range(n):
        prev = f"v{i}"
        if i % 2 == 0:
            nodes.append(helper.make_node("Relu", [prev], [f"v{i + 1}"], name=f"n{i}"))
        else:
            nodes.append(helper.make_node("Add", [prev, "b"], [f"v{i + 1}"], name=f"n{i}"))
    vi = helper.make_tensor_value_info
    b = numpy_helper.from_array(np.full(4, 0.5, dtype=np.float32), "b")
    graph = helper.make_graph(nodes, "chain", [vi("v0", FLOAT, [4])], [vi(f"v{n}", FLOAT, [4])], initializer=[b])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def scan_function_model() -> onnx.ModelProto:
    """A ``Scan`` (a running sum over the rows of ``xs``) whose result goes through a model-local function
    ``local.Double`` called twice."""
    vi = helper.make_tensor_value_info
    body = helper.make_graph(
        [
            helper.make_node("Add", ["s", "row"], ["s_next"], name="scan_add"),
            helper.make_node("Identity", ["s_next"], ["out_row"], name="scan_emit"),
        ],
        "scan_body",
        [vi("s", FLOAT, [4]), vi("row", FLOAT, [4])],
        [vi("s_next", FLOAT, [4]), vi("out_row", FLOAT, [4])],
    )
    double = helper.make_function(
        "local",
        "Double",
        ["x"],
        ["y"],
        [helper.make_node("Add", ["x", "x"], ["y"], name="double_add")],
        opset_imports=[helper.make_opsetid("", 17)],
    )
    graph = helper.make_graph(
        [
            helper.make_node(
                "Scan", ["init", "xs"], ["total", "rows"], name="running_sum", body=body, num_scan_inputs=1
            ),
            helper.make_node("Double", ["rows"], ["twice"], name="call_one", domain="local"),
            helper.make_node("Double", ["twice"], ["four_times"], name="call_two", domain="local"),
        ],
        "scan_function",
        [vi("init", FLOAT, [4]), vi("xs", FLOAT, ["T", 4])],
        [vi("total", FLOAT, [4]), vi("four_times", FLOAT, ["T", 4])],
    )
    return helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)],
        functions=[double],
    )


def nested_model() -> onnx.ModelProto:
    """A ``Loop`` whose body holds an ``If`` (subgraphs two deep), with a node beside and after the loop."""
    vi = helper.make_tensor_value_info
    then = helper.make_graph(
        [helper.make_node("Add", ["acc", "x"], ["t"], name="inner_then")], "then", [], [vi("t", FLOAT, [3])]
    )
    els = helper.make_graph(
        [
            helper.make_node("Sub", ["acc", "x"], ["e0"], name="inner_else_sub"),
            helper.make_node("Abs", ["e0"], ["e"], name="inner_else_abs"),
        ],
        "else",
        [],
        [vi("e", FLOAT, [3])],
    )
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"], name="body_cond"),
            helper.make_node("If", ["cond_in"], ["acc_out"], name="inner_if", then_branch=then, else_branch=els),
        ],
        "body",
        [vi("i", TensorProto.INT64, []), vi("cond_in", TensorProto.BOOL, []), vi("acc", FLOAT, [3])],
        [vi("cond_out", TensorProto.BOOL, []), vi("acc_out", FLOAT, [3])],
    )
    graph = helper.make_graph(
        [
            helper.make_node("Relu", ["x"], ["r"], name="before"),
            helper.make_node("Loop", ["M", "c", "r"], ["z"], name="outer_loop", body=body),
            helper.make_node("Neg", ["r"], ["side"], name="beside"),
            helper.make_node("Add", ["z", "side"], ["y"], name="after"),
        ],
        "nested",
        [vi("x", FLOAT, [3]), vi("c", TensorProto.BOOL, []), vi("M", TensorProto.INT64, [])],
        [vi("y", FLOAT, [3])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
