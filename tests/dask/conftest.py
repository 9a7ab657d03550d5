"""Models and a two-worker cluster for the Dask tests (onnxcore.dask, ``onnxcore batch``).

Nothing here imports dask at module level: the test modules skip with a reason when the extra is missing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import corpus
import numpy as np
import pytest

ROWS = 1_000_000
CITIES = np.array(["paris", "oslo", "lima", "quito", "accra"])


@pytest.fixture(scope="session")
def client() -> Iterator[Any]:
    """A ``dask.distributed`` LocalCluster of 2 worker processes (one thread each) and its client."""
    distributed = pytest.importorskip("distributed", reason="the dask extra (distributed) is not installed")
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40
        ) as cluster,
        distributed.Client(cluster) as c,
    ):
        yield c


@pytest.fixture(scope="session")
def squeezenet(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, Path, str]:
    """(octets, a file holding them, input name) of the light-zoo squeezenet with random weights and a
    symbolic batch (the shipped model fixes it at 1)."""
    pytest.importorskip("onnx", reason="onnx builds the light-zoo model")
    paths = [p for p in corpus.shipped_models() if p.stem == "light_squeezenet"]
    if not paths:
        pytest.skip("light_squeezenet is not in this onnx wheel")
    model = corpus.with_random_weights(paths[0])
    name, _ = corpus.light_model_input(paths[0])
    (inp,) = [i for i in model.graph.input if i.name == name]
    inp.type.tensor_type.shape.dim[0].dim_param = "N"
    for out in model.graph.output:
        out.type.tensor_type.shape.dim[0].dim_param = "N"
    data = model.SerializeToString()
    path = tmp_path_factory.mktemp("squeezenet") / "squeezenet.onnx"
    path.write_bytes(data)
    return data, path, name


def table(rows: int, seed: int = 0) -> Any:
    """A pandas frame: two float columns, a string column, the scikit-learn target."""
    pd = pytest.importorskip("pandas", reason="the dask extra (pandas) is not installed")
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "a": rng.normal(size=rows),
            "b": rng.normal(size=rows),
            "city": rng.choice(CITIES, rows),
        }
    )
    return frame


@pytest.fixture(scope="session")
def string_pipeline() -> bytes:
    """skl2onnx: (scaler on a, b; one-hot on the string column city) then logistic regression, three
    classes, with ZipMap (the probabilities a sequence of maps). One input per column, each [N, 1]."""
    skl2onnx = pytest.importorskip("skl2onnx")
    pytest.importorskip("sklearn")
    from skl2onnx.common.data_types import FloatTensorType, StringTensorType
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    train = table(3000, seed=1)
    y = (train.a + (train.city == "oslo") > 0.3).astype(np.int64) + (train.b > 1.0).astype(np.int64)
    pipe = make_pipeline(
        ColumnTransformer(
            [("num", StandardScaler(), ["a", "b"]), ("cat", OneHotEncoder(handle_unknown="ignore"), ["city"])]
        ),
        LogisticRegression(max_iter=500),
    ).fit(train, y)
    types = [
        ("a", FloatTensorType([None, 1])),
        ("b", FloatTensorType([None, 1])),
        ("city", StringTensorType([None, 1])),
    ]
    onx = skl2onnx.to_onnx(pipe, initial_types=types, target_opset={"": 17, "ai.onnx.ml": 3})
    return bytes(onx.SerializeToString())


WORDS = "red green blue fast slow cheap dear new old big small good bad city river hill".split()


def texts(rows: int, seed: int = 0) -> Any:
    """A pandas frame with one text column of a few words each."""
    pd = pytest.importorskip("pandas", reason="the dask extra (pandas) is not installed")
    rng = np.random.default_rng(seed)
    lengths = rng.integers(2, 9, rows)
    words = rng.choice(WORDS, int(lengths.sum()))
    ends = np.cumsum(lengths)
    return pd.DataFrame({"text": [" ".join(words[e - n : e]) for e, n in zip(ends, lengths)]})


@pytest.fixture(scope="session")
def text_pipeline() -> bytes:
    """skl2onnx: TfidfVectorizer (words, 1-2 grams; com.microsoft::Tokenizer in the graph) then logistic
    regression with ZipMap, on one string input [N, 1]."""
    skl2onnx = pytest.importorskip("skl2onnx")
    pytest.importorskip("sklearn")
    from skl2onnx.common.data_types import StringTensorType
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    train = texts(2000, seed=1)["text"]
    y = train.str.contains("red").astype(np.int64) + train.str.contains("fast").astype(np.int64)
    pipe = make_pipeline(TfidfVectorizer(ngram_range=(1, 2)), LogisticRegression(max_iter=500)).fit(train, y)
    onx = skl2onnx.to_onnx(pipe, initial_types=[("text", StringTensorType([None, 1]))])
    return bytes(onx.SerializeToString())


@pytest.fixture(scope="session")
def matrix_pipeline() -> bytes:
    """skl2onnx: scaler then logistic regression on a matrix X [N, 2] (columns a, b stacked), no ZipMap."""
    skl2onnx = pytest.importorskip("skl2onnx")
    pytest.importorskip("sklearn")
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    train = table(3000, seed=2)
    x = train[["a", "b"]].to_numpy(np.float32)
    y = (x[:, 0] - x[:, 1] > 0.2).astype(np.int64)
    pipe = make_pipeline(StandardScaler(), LogisticRegression(max_iter=500)).fit(x, y)
    onx = skl2onnx.to_onnx(pipe, x[:1], options={id(pipe): {"zipmap": False}}, target_opset={"": 17, "ai.onnx.ml": 3})
    return bytes(onx.SerializeToString())


def whole_frame_feeds(frame: Any) -> dict[str, np.ndarray]:
    """The string pipeline's feeds for a whole frame in one process (the reference run)."""
    return {
        "a": frame[["a"]].to_numpy(np.float32),
        "b": frame[["b"]].to_numpy(np.float32),
        "city": frame[["city"]].to_numpy(object).astype(str).astype(object),
    }
