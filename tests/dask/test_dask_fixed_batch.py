"""onnxcore.dask.run and ``onnxcore batch`` on models that fix their batch on axis 0 (issue 41 item 1): the output
metadata comes from inference, not a sample run; rows run a batch at a time; chunks that cannot be cut into whole
batches are refused before any task runs, naming the input and the axis."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import corpus
import numpy as np
import pytest

dask = pytest.importorskip("dask", reason="the dask extra is not installed (pip install 'onnxcore[dask]')")
pd = pytest.importorskip("pandas", reason="the dask extra (pandas) is not installed")
pytest.importorskip("pyarrow", reason="the dask extra (pyarrow) is not installed")
onnx = pytest.importorskip("onnx", reason="onnx.helper builds the models")

import dask.array as da  # noqa: E402
import dask.dataframe as dd  # noqa: E402
from onnx import TensorProto as T  # noqa: E402
from onnx import helper, numpy_helper  # noqa: E402

import onnxcore  # noqa: E402
import onnxcore.dask as ocd  # noqa: E402
from onnxcore.cli import main  # noqa: E402
from onnxcore.errors import InputError, OnnxCoreError  # noqa: E402

RTOL, ATOL = 1e-5, 1e-6


@pytest.fixture(autouse=True)
def _local_scheduler() -> Any:
    with dask.config.set(scheduler="sync"):
        yield


def _linear(batch: int | str, features: int | str = 3) -> bytes:
    """x: float[batch, features] -> y = x @ w + b: float[batch, 4], z = ReduceSum(y, axis 1): float[batch]."""
    rng = np.random.default_rng(1)
    w = numpy_helper.from_array(rng.normal(size=(3, 4)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.normal(size=(4,)).astype(np.float32), "b")
    axes = numpy_helper.from_array(np.array([1], np.int64), "axes")
    g = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w"], ["m"]),
            helper.make_node("Add", ["m", "b"], ["y"]),
            helper.make_node("ReduceSum", ["y", "axes"], ["z"], keepdims=0),
        ],
        "g",
        [helper.make_tensor_value_info("x", T.FLOAT, [batch, features])],
        [helper.make_tensor_value_info("y", T.FLOAT, [batch, 4]), helper.make_tensor_value_info("z", T.FLOAT, [batch])],
        [w, b, axes],
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def _rows(model: bytes, x: np.ndarray, batch: int) -> list[np.ndarray]:
    """The reference: Session.run a batch at a time, joined."""
    s = onnxcore.Session(model)
    parts = [s.run(None, {"x": x[i : i + batch]}) for i in range(0, len(x), batch)]
    return [np.concatenate([p[k] for p in parts]) for k in range(len(parts[0]))]


@pytest.fixture(scope="module")
def fixed_squeezenet() -> tuple[bytes, str]:
    """The light-zoo squeezenet as shipped ([1, 3, 224, 224], a fixed batch of 1) with seeded random weights."""
    paths = [p for p in corpus.shipped_models() if p.stem == "light_squeezenet"]
    if not paths:
        pytest.skip("light_squeezenet is not in this onnx wheel")
    model = corpus.with_random_weights(paths[0])
    name, _ = corpus.light_model_input(paths[0])
    (inp,) = [i for i in model.graph.input if i.name == name]
    assert inp.type.tensor_type.shape.dim[0].dim_value == 1
    return model.SerializeToString(), name


@pytest.mark.parametrize("chunk", [1, 2])
def test_squeezenet_with_batch_one_over_row_chunks(fixed_squeezenet: tuple[bytes, str], chunk: int) -> None:
    # Before: "the model does not run on a two-row sample ... extent 2 on axis 0 where the input declares 1".
    data, name = fixed_squeezenet
    x = np.random.default_rng(0).standard_normal((3, 3, 224, 224)).astype(np.float32)
    (out,) = ocd.run(data, da.from_array(x, chunks=(chunk, 3, 224, 224)), client=False)
    s = onnxcore.Session(data)
    expected = np.concatenate([s.run(None, {name: x[i : i + 1]})[0] for i in range(3)])
    assert out.shape == expected.shape and out.dtype == expected.dtype
    np.testing.assert_allclose(out.compute(), expected, rtol=RTOL, atol=ATOL)


def test_fixed_batch_rechunks_to_whole_batches() -> None:
    model = _linear(2)
    x = np.random.default_rng(2).normal(size=(6, 3)).astype(np.float32)
    y, z = ocd.run(model, da.from_array(x, chunks=3), client=False)
    assert y.chunks == ((2, 2, 2), (4,)) and z.chunks == ((2, 2, 2),)
    want_y, want_z = _rows(model, x, 2)
    np.testing.assert_allclose(y.compute(), want_y, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(z.compute(), want_z, rtol=RTOL, atol=ATOL)
    # Chunks already of whole batches are kept: a chunk of 4 rows runs as two batches of 2.
    y4, _ = ocd.run(model, da.from_array(x, chunks=(4, 3)), client=False)
    assert y4.chunks[0] == (4, 2)
    np.testing.assert_allclose(y4.compute(), want_y, rtol=RTOL, atol=ATOL)


def test_rows_not_whole_batches_are_refused_before_any_task() -> None:
    x = da.from_array(np.zeros((5, 3), np.float32), chunks=2)
    with pytest.raises(InputError, match=r"input 'x' declares a fixed batch of 2 rows on axis 0.*5 rows"):
        ocd.run(_linear(2), x, client=False)


def test_fixed_extent_after_axis_zero_is_refused_naming_the_axis() -> None:
    x = da.from_array(np.zeros((4, 5), np.float32), chunks=2)
    with pytest.raises(InputError, match=r"input 'x': extent 5 on axis 1 where the model declares 3"):
        ocd.run(_linear("N"), x, client=False)


def test_metadata_from_inference_not_a_sample_run() -> None:
    # 7 / x on int64 divides by zero on a sample of zeros; inference gives the outputs' types and shapes unrun.
    seven = numpy_helper.from_array(np.array([7], np.int64), "seven")
    g = helper.make_graph(
        [helper.make_node("Div", ["seven", "x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", T.INT64, ["N", "k"])],
        [helper.make_tensor_value_info("y", T.INT64, ["N", "k"])],
        [seven],
    )
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    with pytest.raises(OnnxCoreError):
        onnxcore.Session(model).run(None, {"x": np.zeros((2, 3), np.int64)})
    x = np.arange(1, 13, dtype=np.int64).reshape(4, 3)
    (y,) = ocd.run(model, da.from_array(x, chunks=2), client=False)
    assert y.shape == (4, 3) and y.chunks == ((2, 2), (3,)) and y.dtype == np.int64  # k bound from the array
    np.testing.assert_array_equal(y.compute(), 7 // x)


def test_dynamic_batch_keeps_the_chunks() -> None:
    model = _linear("N")
    x = np.random.default_rng(3).normal(size=(5, 3)).astype(np.float32)
    y, z = ocd.run(model, da.from_array(x, chunks=2), client=False)
    assert y.chunks == ((2, 2, 1), (4,))
    np.testing.assert_allclose(y.compute(), _rows(model, x, 5)[0], rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(z.compute(), _rows(model, x, 5)[1], rtol=RTOL, atol=ATOL)


def test_output_not_one_row_per_input_row_is_refused_up_front() -> None:
    g = helper.make_graph(
        [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0)],
        "g",
        [helper.make_tensor_value_info("x", T.FLOAT, ["N", 3])],
        [helper.make_tensor_value_info("s", T.FLOAT, [])],
    )
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    with pytest.raises(OnnxCoreError, match="output 's' is a scalar"):
        ocd.run(model, da.from_array(np.zeros((4, 3), np.float32), chunks=2), client=False)


def test_data_frame_with_batch_one_and_dynamic_batch() -> None:
    x = np.random.default_rng(4).normal(size=(7, 3)).astype(np.float32)
    frame = dd.from_pandas(pd.DataFrame(x, columns=["a", "b", "c"]), npartitions=3)
    for batch in (1, "N"):
        model = _linear(batch)
        result = ocd.run(model, frame, client=False)
        assert list(result.columns) == ["y_0", "y_1", "y_2", "y_3", "z"]
        got = result.compute()
        want_y, want_z = _rows(model, x, 1)
        np.testing.assert_allclose(got[["y_0", "y_1", "y_2", "y_3"]].to_numpy(), want_y, rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(got["z"].to_numpy(), want_z, rtol=RTOL, atol=ATOL)


def test_data_frame_with_a_larger_fixed_batch_is_refused() -> None:
    frame = dd.from_pandas(pd.DataFrame(np.zeros((4, 3), np.float32), columns=["a", "b", "c"]), npartitions=2)
    with pytest.raises(InputError, match=r"input 'x' declares a fixed batch of 2 rows on axis 0"):
        ocd.run(_linear(2), frame, client=False)


def test_batch_command_with_a_fixed_batch(tmp_path: Path, capsys: Any) -> None:
    model = tmp_path / "m.onnx"
    model.write_bytes(_linear(2))
    x = np.random.default_rng(5).normal(size=(10, 3)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "y.npy"
    argv = ["batch", str(model), "--input", str(tmp_path / "x.npy"), "--output", str(out), "--scheduler", "synchronous"]
    assert main([*argv, "--batch-rows", "5", "--output-name", "y"]) == 0  # 5 rows a task: made 4, whole batches
    np.testing.assert_allclose(np.load(out), _rows(_linear(2), x, 2)[0], rtol=RTOL, atol=ATOL)
    np.save(tmp_path / "odd.npy", x[:9])
    odd = ["batch", str(model), "--input", str(tmp_path / "odd.npy"), "--output", str(tmp_path / "o.npy")]
    capsys.readouterr()
    assert main([*odd, "--scheduler", "synchronous", "--output-name", "y"]) == 2
    err = capsys.readouterr().err
    assert "9 rows" in err and "input 'x' declares a fixed batch of 2 rows on axis 0" in err
    assert not (tmp_path / "o.npy").exists()


def test_squeezenet_with_batch_one_on_a_local_cluster(fixed_squeezenet: tuple[bytes, str], client: Any) -> None:
    # The same through two worker processes (the octets shipped once by the worker plugin).
    data, name = fixed_squeezenet
    x = np.random.default_rng(6).standard_normal((2, 3, 224, 224)).astype(np.float32)
    (out,) = ocd.run(data, da.from_array(x, chunks=(1, 3, 224, 224)), client=client)
    s = onnxcore.Session(data)
    expected = np.concatenate([s.run(None, {name: x[i : i + 1]})[0] for i in range(2)])
    np.testing.assert_allclose(out.compute(scheduler=client.get), expected, rtol=RTOL, atol=ATOL)


def test_batch_command_parquet_with_batch_one(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    model = tmp_path / "m.onnx"
    model.write_bytes(_linear(1))
    x = np.random.default_rng(7).normal(size=(9, 3)).astype(np.float32)
    pd.DataFrame(x, columns=["a", "b", "c"]).to_parquet(tmp_path / "t.parquet", row_group_size=4)
    out = tmp_path / "o.parquet"
    argv = ["batch", str(model), "--input", str(tmp_path / "t.parquet"), "--output", str(out)]
    assert main([*argv, "--scheduler", "synchronous", "--batch-rows", "4"]) == 0
    got = pq.read_table(out).to_pandas()
    want_y, want_z = _rows(_linear(1), x, 1)
    np.testing.assert_allclose(got[["y_0", "y_1", "y_2", "y_3"]].to_numpy(), want_y, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(got["z"].to_numpy(), want_z, rtol=RTOL, atol=ATOL)
