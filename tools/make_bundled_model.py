"""Write the small model bundled in the package (``onnxcore/data/iris_mlp.onnx``) with our own producer API.

A two-layer perceptron over the four iris features with hand-set weights (no training data needed): two
hidden units measure how far the petal length is past 2.5 cm and past 4.9 cm, which separates setosa,
versicolor and virginica well enough for a demonstration:
``x[N,4] -> MatMul -> Add -> Relu -> MatMul -> Add -> Softmax -> probabilities[N,3]``, plus
``ArgMax -> label[N]``. Deterministic: running the tool twice writes the same octets.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

import onnxcore as oc

OUT = Path(__file__).resolve().parent.parent / "src" / "onnxcore" / "data" / "iris_mlp.onnx"


def _tensor(name: str, array: np.ndarray) -> oc.TensorProto:
    a = np.ascontiguousarray(array, dtype="<f4")
    return oc.TensorProto(name=name, dims=list(a.shape), data_type=oc.TensorProto.DataType.FLOAT, raw_data=a.tobytes())


def _value(name: str, elem: int, dims: list[int | str]) -> oc.ValueInfoProto:
    shape = oc.TensorShapeProto(
        dim=[
            oc.TensorShapeProto.Dimension(dim_param=d)
            if isinstance(d, str)
            else oc.TensorShapeProto.Dimension(dim_value=d)
            for d in dims
        ]
    )
    return oc.ValueInfoProto(name=name, type=oc.TypeProto(tensor_type=oc.TypeProto.Tensor(elem_type=elem, shape=shape)))


def build() -> oc.ModelProto:
    w1 = np.zeros((4, 8))
    w1[2, 0] = w1[2, 1] = 1.0  # both hidden units read the petal length
    b1 = np.zeros(8)
    b1[0], b1[1] = -2.5, -4.9
    w2 = np.zeros((8, 3))
    w2[0] = [-4.0, 4.0, 4.0]
    w2[1] = [0.0, -10.0, 20.0]
    b2 = np.array([1.0, 0.0, -1.0])
    nodes = [
        oc.NodeProto(name="dense1", op_type="MatMul", input=["x", "w1"], output=["h0"]),
        oc.NodeProto(name="bias1", op_type="Add", input=["h0", "b1"], output=["h1"]),
        oc.NodeProto(name="relu", op_type="Relu", input=["h1"], output=["h2"]),
        oc.NodeProto(name="dense2", op_type="MatMul", input=["h2", "w2"], output=["h3"]),
        oc.NodeProto(name="bias2", op_type="Add", input=["h3", "b2"], output=["logits"]),
        oc.NodeProto(
            name="softmax",
            op_type="Softmax",
            input=["logits"],
            output=["probabilities"],
            attribute=[oc.AttributeProto(name="axis", type=oc.AttributeProto.AttributeType.INT, i=-1)],
        ),
        oc.NodeProto(
            name="argmax",
            op_type="ArgMax",
            input=["probabilities"],
            output=["label"],
            attribute=[
                oc.AttributeProto(name="axis", type=oc.AttributeProto.AttributeType.INT, i=1),
                oc.AttributeProto(name="keepdims", type=oc.AttributeProto.AttributeType.INT, i=0),
            ],
        ),
    ]
    f = oc.TensorProto.DataType.FLOAT
    graph = oc.GraphProto(
        name="iris_mlp",
        node=nodes,
        initializer=[_tensor("w1", w1), _tensor("b1", b1), _tensor("w2", w2), _tensor("b2", b2)],
        input=[_value("x", f, ["N", 4])],
        output=[_value("probabilities", f, ["N", 3]), _value("label", oc.TensorProto.DataType.INT64, ["N"])],
    )
    return oc.ModelProto(
        ir_version=8,
        opset_import=[oc.OperatorSetIdProto(domain="", version=17)],
        producer_name="onnxcore",
        producer_version=oc.__version__,
        doc_string="A small classifier bundled with onnxcore for the README's main job.",
        graph=graph,
        metadata_props=[
            oc.StringStringEntryProto(key="model_license", value="Apache-2.0"),
            oc.StringStringEntryProto(key="labels", value="setosa,versicolor,virginica"),
        ],
    )


if __name__ == "__main__":
    oc.save(build(), OUT)
    print(f"wrote {OUT} ({OUT.stat().st_size} octets)")
