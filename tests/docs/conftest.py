"""The files the documentation's examples name, made small with ``onnxcore.build.helper``.

- ``model.onnx``: ``x`` float [N, 4] -> Gemm (64) -> Relu -> Gemm (3) -> Softmax -> ``y`` float [N, 3]; its
  first weight is 1 KiB, so saving with external data moves it out;
- ``custom.onnx``: ``y = com.example::Scale(x)``, an operator of a custom domain;
- ``bad.onnx``: a model with an error (a node reads a value nothing produces);
- ``x.npy``: two rows for ``model.onnx``;
- ``table.parquet`` (where pandas and pyarrow are installed): four columns ``f0``..``f3`` for ``model.onnx``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import onnxcore as oc
from onnxcore.build import helper

FLOAT = oc.TensorProto.FLOAT


def small_model() -> oc.ModelProto:
    """The examples' ``model.onnx``: a two-layer classifier of four features into three classes."""
    rng = np.random.default_rng(0)
    w1 = helper.make_tensor("W1", FLOAT, [64, 4], rng.standard_normal((64, 4)).astype(np.float32).ravel())
    b1 = helper.make_tensor("B1", FLOAT, [64], np.zeros(64, np.float32))
    w2 = helper.make_tensor("W2", FLOAT, [3, 64], rng.standard_normal((3, 64)).astype(np.float32).ravel())
    nodes = [
        helper.make_node("Gemm", ["x", "W1", "B1"], ["h"], transB=1, name="fc1"),
        helper.make_node("Relu", ["h"], ["r"], name="relu"),
        helper.make_node("Gemm", ["r", "W2"], ["logits"], transB=1, name="fc2"),
        helper.make_node("Softmax", ["logits"], ["y"], axis=-1, name="softmax"),
    ]
    graph = helper.make_graph(
        nodes,
        "classifier",
        [helper.make_tensor_value_info("x", FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", FLOAT, ["N", 3])],
        [w1, b1, w2],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def custom_model() -> oc.ModelProto:
    """The examples' ``custom.onnx``: one node of operator ``Scale`` in domain ``com.example``."""
    graph = helper.make_graph(
        [helper.make_node("Scale", ["x"], ["y"], domain="com.example", factor=3.0)],
        "scaled",
        [helper.make_tensor_value_info("x", FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", FLOAT, ["N", 4])],
    )
    opsets = [helper.make_opsetid("", 18), helper.make_opsetid("com.example", 1)]
    return helper.make_model(graph, opset_imports=opsets)


def bad_model() -> oc.ModelProto:
    """The examples' ``bad.onnx``: ``Add`` reads ``missing``, which nothing produces (an error of Clause 7.5)."""
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Add", ["r", "missing"], ["y"])],
        "bad",
        [helper.make_tensor_value_info("x", FLOAT, [2])],
        [helper.make_tensor_value_info("y", FLOAT, [2])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def write_example_files(directory: Path) -> None:
    """Every file the examples read, into ``directory``."""
    oc.save(small_model(), directory / "model.onnx")
    oc.save(custom_model(), directory / "custom.onnx")
    oc.save(bad_model(), directory / "bad.onnx")
    x = np.array([[5.1, 3.5, 1.4, 0.2], [6.7, 3.0, 5.2, 2.3]], np.float32)
    np.save(directory / "x.npy", x)
    try:
        import pandas as pd  # the dask extra; the Dask examples are marked as requiring it
    except ImportError:
        return
    rng = np.random.default_rng(1)
    frame = pd.DataFrame(rng.standard_normal((1000, 4)).astype(np.float32), columns=[f"f{i}" for i in range(4)])
    try:
        frame.to_parquet(directory / "table.parquet")
    except ImportError:  # pandas without pyarrow
        pass


@pytest.fixture(scope="session")
def example_files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding the examples' files, made once."""
    directory = tmp_path_factory.mktemp("example-files")
    write_example_files(directory)
    return directory


@pytest.fixture
def example_dir(example_files: Path, tmp_path: Path) -> Iterator[Path]:
    """A fresh copy of the examples' files as the current directory (examples write files beside them)."""
    for f in example_files.iterdir():
        (tmp_path / f.name).write_bytes(f.read_bytes())
    old = Path.cwd()
    os.chdir(tmp_path)
    try:
        yield tmp_path
    finally:
        os.chdir(old)
