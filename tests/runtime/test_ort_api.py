"""onnxcore's onnxruntime-shaped API (runtime/ort_api.py): scripts written for onnxruntime run unchanged on both.

Each script below is written the way onnxruntime users write them (dummy feeds from ``get_inputs()``,
``providers=['CPUExecutionProvider']``, ``sess.run(None, feeds)``, ``json.dumps`` of a classifier's ZipMap output)
and takes the module as ``rt``: it is run once with ``import onnxruntime as rt`` and once with
``import onnxcore as rt``, and the two results are compared: input and output names, shapes and type strings,
model metadata, and the values (tolerance rtol 1e-3, atol 1e-5 for floats, Clause 11.5; exact otherwise).
"""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path
from types import ModuleType
from typing import Any

import corpus
import numpy as np
import pytest

import onnxcore

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

MODULES = {"onnxruntime": ort, "onnxcore": onnxcore}

# The numpy dtype of a NodeArg type string, as a user script spells it.
DTYPES = {
    "tensor(float)": np.float32,
    "tensor(double)": np.float64,
    "tensor(int64)": np.int64,
    "tensor(int32)": np.int32,
    "tensor(bool)": np.bool_,
    "tensor(string)": np.str_,
}


def user_script(rt: ModuleType, model: Any, *, level: Any = None, seed: int = 0) -> dict[str, Any]:
    """An onnxruntime user's script: dummy feeds from get_inputs(), run everything, describe the session."""
    so = rt.SessionOptions()
    so.intra_op_num_threads = 1
    if level is not None:
        so.graph_optimization_level = getattr(rt.GraphOptimizationLevel, level)
    sess = rt.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(seed)
    feeds = {}
    for inp in sess.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in inp.shape]
        dtype = DTYPES[inp.type]
        if dtype is np.str_:
            feeds[inp.name] = np.array(["a"] * math.prod(shape)).reshape(shape)
        else:
            feeds[inp.name] = rng.standard_normal(shape).astype(dtype)
    outputs = sess.run(None, feeds)
    meta = sess.get_modelmeta()
    return {
        "inputs": [(i.name, i.shape, i.type) for i in sess.get_inputs()],
        "outputs": [(o.name, o.shape, o.type) for o in sess.get_outputs()],
        "overridable": [(i.name, i.shape, i.type) for i in sess.get_overridable_initializers()],
        "output_names": [o.name for o in sess.get_outputs()],
        "meta": (meta.producer_name, meta.graph_name, meta.domain, meta.description, meta.version),
        "meta_map": (meta.custom_metadata_map, meta.graph_description),
        "providers": sess.get_providers(),
        "values": outputs,
    }


def assert_same_values(ours: Any, theirs: Any, where: str = "output") -> None:
    """Same kinds, dtypes, shapes, key and element types; floats close, everything else equal."""
    assert type(ours) is type(theirs), f"{where}: {type(ours).__name__} vs {type(theirs).__name__}"
    if isinstance(theirs, np.ndarray):
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape, where
        if theirs.dtype.kind == "f":
            np.testing.assert_allclose(ours, theirs, rtol=1e-3, atol=1e-5, err_msg=where)
        else:
            if theirs.dtype == object:  # str elements (not octets) in both
                assert [type(x) for x in ours.flat] == [type(x) for x in theirs.flat], where
            np.testing.assert_array_equal(ours, theirs, err_msg=where)
    elif isinstance(theirs, list):
        assert len(ours) == len(theirs), where
        for k, (a, b) in enumerate(zip(ours, theirs)):
            assert_same_values(a, b, f"{where}[{k}]")
    elif isinstance(theirs, dict):
        assert list(ours) == list(theirs) and [type(k) for k in ours] == [type(k) for k in theirs], where
        for k in theirs:
            assert_same_values(ours[k], theirs[k], f"{where}[{k!r}]")
    elif isinstance(theirs, float):
        assert math.isclose(ours, theirs, rel_tol=1e-3, abs_tol=1e-5), f"{where}: {ours} vs {theirs}"
    else:
        assert ours == theirs, where


def assert_same_script(ours: dict[str, Any], theirs: dict[str, Any]) -> None:
    for key in theirs:
        if key != "values":
            assert ours[key] == theirs[key], key
    assert_same_values(ours["values"], theirs["values"])


# --- the light model zoo, with seeded random weights (tests/kernels/test_light_models.py) ---

_SLOW = {
    "light_vgg19", "light_zfnet512", "light_bvlc_alexnet", "light_densenet121", "light_inception_v1",
    "light_inception_v2", "light_resnet50",
}  # fmt: skip


def _light_models() -> list[Any]:
    models = [p for p in corpus.shipped_models() if p.name.startswith("light_")]
    return [pytest.param(p, id=p.stem, marks=pytest.mark.slow if p.stem in _SLOW else ()) for p in models]


@functools.cache
def _random_weights(path: Path) -> bytes:
    return bytes(corpus.with_random_weights(path).SerializeToString())


@pytest.mark.parametrize("path", _light_models())
def test_light_model_script_gives_what_onnxruntime_gives(path: Path) -> None:
    model = _random_weights(path)
    theirs = user_script(ort, model)
    ours = user_script(onnxcore, model)
    assert_same_script(ours, theirs)
    assert len(ours["inputs"]) == 1  # not one per initializer listed among the IR 3 inputs
    flat = np.abs(theirs["values"][0]).ravel()
    assert np.std(flat) > 0.5 * np.mean(flat) > 0, "random weights gave a near-constant output"


def test_light_model_from_a_path_as_shipped() -> None:
    # shufflenet: its constant weights give logits of about 3, which float32 holds to 1e-7. squeezenet's are about
    # 7e9, where one ulp is 512: whether its 1000 equal-in-exact-arithmetic logits come out bit-identical (and so
    # its Softmax uniform) is the BLAS's summation order per channel (tests/kernels/test_light_models.py).
    (path,) = [p for p in corpus.shipped_models() if p.stem == "light_shufflenet"]
    assert_same_script(user_script(onnxcore, str(path)), user_script(ort, str(path)))
    assert_same_script(user_script(onnxcore, path), user_script(ort, str(path)))


@pytest.mark.parametrize("level", ["ORT_DISABLE_ALL", "ORT_ENABLE_BASIC", "ORT_ENABLE_ALL"])
def test_optimization_levels_give_the_same_outputs(level: str) -> None:
    (path,) = [p for p in corpus.shipped_models() if p.stem == "light_squeezenet"]
    model = _random_weights(path)
    assert_same_script(user_script(onnxcore, model, level=level), user_script(ort, model))


# --- scikit-learn models (skl2onnx), as tests/runtime/test_sklearn_models.py builds them ---

skl2onnx = pytest.importorskip("skl2onnx")
pytest.importorskip("sklearn")

from sklearn.ensemble import GradientBoostingRegressor, RandomForestClassifier  # noqa: E402
from sklearn.linear_model import LinearRegression, LogisticRegression  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.tree import DecisionTreeRegressor  # noqa: E402

RNG = np.random.default_rng(0)
X = RNG.normal(size=(60, 4)).astype(np.float32)
Y_CLASS = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(np.int64) + (X[:, 2] > 0.8).astype(np.int64)
Y_NAMES = np.array(["low", "mid", "high"])[Y_CLASS]
Y_REG = (X @ np.array([1.0, -2.0, 0.5, 0.0]) + 0.1 * RNG.normal(size=60)).astype(np.float32)

_SKLEARN = {
    "logistic": lambda: LogisticRegression(max_iter=500).fit(X, Y_CLASS),
    "logistic-string-labels": lambda: LogisticRegression(max_iter=500).fit(X, Y_NAMES),
    "forest": lambda: RandomForestClassifier(n_estimators=5, max_depth=4, random_state=0).fit(X, Y_CLASS),
    "scaler+logistic": lambda: make_pipeline(StandardScaler(), LogisticRegression(max_iter=500)).fit(X, Y_CLASS),
    "linear": lambda: LinearRegression().fit(X, Y_REG),
    "tree": lambda: DecisionTreeRegressor(max_depth=5, random_state=0).fit(X, Y_REG),
    "gbr": lambda: GradientBoostingRegressor(n_estimators=10, max_depth=3, random_state=0).fit(X, Y_REG),
}


@functools.cache
def _sklearn_model(name: str, zipmap: bool = True) -> bytes:
    estimator = _SKLEARN[name]()
    options = None if zipmap else {id(estimator): {"zipmap": False}}
    onx = skl2onnx.to_onnx(estimator, X[:1], options=options, target_opset={"": 17, "ai.onnx.ml": 3})
    return bytes(onx.SerializeToString())


def classifier_script(rt: ModuleType, model: bytes) -> tuple[list[Any], str]:
    """A user scoring rows with a classifier: labels and a JSON document of the ZipMap probabilities."""
    sess = rt.InferenceSession(model, providers=["CPUExecutionProvider"])
    input_name = sess.get_inputs()[0].name
    label, probabilities = sess.run(None, {input_name: X})
    return label.tolist(), json.dumps(probabilities)


@pytest.mark.parametrize("name", list(_SKLEARN))
def test_sklearn_model_script_gives_what_onnxruntime_gives(name: str) -> None:
    model = _sklearn_model(name)
    assert_same_script(user_script(onnxcore, model), user_script(ort, model))


@pytest.mark.parametrize("name", ["logistic", "logistic-string-labels", "forest"])
def test_zipmap_output_dumps_to_the_same_json(name: str) -> None:
    ours_labels, ours_json = classifier_script(onnxcore, _sklearn_model(name))
    theirs_labels, theirs_json = classifier_script(ort, _sklearn_model(name))
    assert ours_labels == theirs_labels
    ours, theirs = json.loads(ours_json), json.loads(theirs_json)
    assert len(ours) == len(theirs) == len(X)
    assert_same_values(ours, theirs, "probabilities")


def test_classifier_without_zipmap() -> None:
    model = _sklearn_model("scaler+logistic", zipmap=False)
    assert_same_script(user_script(onnxcore, model), user_script(ort, model))


def test_string_labels_are_str_here_and_octets_in_session() -> None:
    model = _sklearn_model("logistic-string-labels")
    (labels,) = onnxcore.InferenceSession(model).run(["output_label"], {"X": X})
    assert labels.dtype == object and {type(x) for x in labels} == {str}
    (octets,) = onnxcore.Session(model).run(["output_label"], {"X": X})
    assert {type(x) for x in octets} == {bytes}
    assert [x.decode() for x in octets] == labels.tolist()


# --- the API itself, on a small model, run against both modules ---


def _small_model(ir_version: int = 8) -> bytes:
    """y = x + w (w an initializer that is also an input), s = Identity(text), with metadata."""
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"]), helper.make_node("Identity", ["text"], ["s"])],
        "small",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", None, 3]),
            helper.make_tensor_value_info("w", TensorProto.FLOAT, [3]),
            helper.make_tensor_value_info("text", TensorProto.STRING, [2]),
        ],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", None, 3]),
            helper.make_tensor_value_info("s", TensorProto.STRING, [2]),
        ],
        [helper.make_tensor("w", TensorProto.FLOAT, [3], [1.0, 2.0, 3.0])],
        doc_string="a graph",
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17)],
        ir_version=ir_version,
        producer_name="tests",
        domain="org.example",
        model_version=7,
        doc_string="a model",
    )
    helper.set_model_props(model, {"author": "onnxcore"})
    return bytes(model.SerializeToString())


@pytest.fixture(params=list(MODULES))
def rt(request: pytest.FixtureRequest) -> ModuleType:
    return MODULES[request.param]


def test_small_model_script_gives_what_onnxruntime_gives() -> None:
    ours, theirs = user_script(onnxcore, _small_model()), user_script(ort, _small_model())
    assert_same_script(ours, theirs)
    assert ours["inputs"] == [("x", ["N", None, 3], "tensor(float)"), ("text", [2], "tensor(string)")]
    assert ours["overridable"] == [("w", [3], "tensor(float)")]
    assert ours["meta_map"] == ({"author": "onnxcore"}, "a graph")


def test_run_keywords_overrides_and_strings(rt: ModuleType) -> None:
    sess = rt.InferenceSession(_small_model(), providers=[("CPUExecutionProvider", {})])
    x = np.ones((2, 1, 3), np.float32)
    feeds = {"x": x, "text": np.array(["é", "b"])}
    y, s = sess.run(output_names=None, input_feed=feeds)
    np.testing.assert_array_equal(y, x + [1, 2, 3])
    assert s.dtype == object and s.tolist() == ["é", "b"]
    (y2,) = sess.run(["y"], {**feeds, "w": np.zeros(3, np.float32)}, rt.RunOptions())
    np.testing.assert_array_equal(y2, x)
    assert len(sess.run([], feeds)) == 2  # an empty list: every output
    assert sess.get_providers() == ["CPUExecutionProvider"]
    assert sess.get_provider_options()["CPUExecutionProvider"] == {}
    assert "CPUExecutionProvider" in rt.get_available_providers()
    assert rt.get_device() == "CPU"


def test_ir3_initializers_are_constants(rt: ModuleType) -> None:
    sess = rt.InferenceSession(_small_model(ir_version=3), providers=["CPUExecutionProvider"])
    assert [i.name for i in sess.get_inputs()] == ["x", "text"]
    assert sess.get_overridable_initializers() == []
    feeds = {"x": np.ones((1, 1, 3), np.float32), "text": np.array(["a", "b"])}
    with pytest.raises(Exception, match=r"[Ii]nvalid input name"):
        sess.run(None, {**feeds, "w": np.zeros(3, np.float32)})


def test_a_string_as_output_names_is_refused(rt: ModuleType) -> None:
    sess = rt.InferenceSession(_small_model(), providers=["CPUExecutionProvider"])
    with pytest.raises(TypeError):
        sess.run("y", {"x": np.ones((1, 1, 3), np.float32), "text": np.array(["a", "b"])})


def test_a_string_as_output_names_is_named_in_the_message() -> None:
    sess = onnxcore.InferenceSession(_small_model())
    with pytest.raises(TypeError, match=r"output_names .* the string 'y' \(write \['y'\]\)"):
        sess.run("y", {"x": np.ones((1, 1, 3), np.float32), "text": np.array(["a", "b"])})


def test_a_missing_input_is_a_value_error(rt: ModuleType) -> None:
    sess = rt.InferenceSession(_small_model(), providers=["CPUExecutionProvider"])
    with pytest.raises(ValueError, match="text"):
        sess.run(None, {"x": np.ones((1, 1, 3), np.float32)})


@pytest.mark.parametrize(
    "providers",
    [
        ["CUDAExecutionProvider"],
        ["CUDAExecutionProvider", "CPUExecutionProvider"],
        [("TensorrtExecutionProvider", {}), "CPUExecutionProvider"],
        ["CPUExecutionProvider", "BogusExecutionProvider"],
    ],
)
def test_unavailable_providers_fall_back_to_the_cpu_with_onnxruntimes_warning(providers: list[Any]) -> None:
    """onnxruntime's CPU package leaves out a provider it does not have, with a UserWarning naming it."""
    seen = {}
    for name, rt in MODULES.items():
        with pytest.warns(UserWarning, match="is not in available provider names") as record:
            sess = rt.InferenceSession(_small_model(), providers=providers)
        assert sess.get_providers() == ["CPUExecutionProvider"]
        seen[name] = [str(w.message).split(".Available")[0] for w in record if "provider names" in str(w.message)]
    assert seen["onnxcore"] == seen["onnxruntime"]


def test_optimized_model_filepath_writes_a_model_onnxruntime_runs(tmp_path: Path) -> None:
    so = onnxcore.SessionOptions()
    so.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    feeds = {"x": np.ones((1, 1, 3), np.float32), "text": np.array(["a", "b"])}
    ours = onnxcore.InferenceSession(_small_model(), so).run(None, feeds)
    written = ort.InferenceSession(so.optimized_model_filepath, providers=["CPUExecutionProvider"])
    assert_same_values(ours, written.run(None, feeds))
    assert onnxcore.check(so.optimized_model_filepath).ok


def test_session_options_read_back(rt: ModuleType) -> None:
    so = rt.SessionOptions()
    assert so.graph_optimization_level == rt.GraphOptimizationLevel.ORT_ENABLE_ALL
    assert so.execution_mode == rt.ExecutionMode.ORT_SEQUENTIAL
    assert (so.intra_op_num_threads, so.inter_op_num_threads, so.enable_profiling) == (0, 0, False)
    assert so.profile_file_prefix == "onnxruntime_profile_" and so.optimized_model_filepath == ""
    so.add_session_config_entry("session.key", "value")
    so.intra_op_num_threads = 2
    so.execution_mode = rt.ExecutionMode.ORT_PARALLEL
    assert so.get_session_config_entry("session.key") == "value"
    sess = rt.InferenceSession(_small_model(), so, providers=["CPUExecutionProvider"])
    got = sess.get_session_options()
    assert got.intra_op_num_threads == 2 and got.get_session_config_entry("session.key") == "value"
    (y,) = sess.run(["y"], {"x": np.ones((1, 2, 3), np.float32), "text": np.array(["a", "b"])})
    np.testing.assert_array_equal(y, np.ones((1, 2, 3), np.float32) + [1, 2, 3])


# --- profiling ---

TRACE_KEYS = {"cat", "name", "ph", "ts", "dur", "pid", "tid", "args"}


def profile_script(rt: ModuleType, model: bytes, prefix: Path, level: str = "ORT_ENABLE_ALL") -> list[dict[str, Any]]:
    so = rt.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = str(prefix)
    so.graph_optimization_level = getattr(rt.GraphOptimizationLevel, level)
    sess = rt.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    sess.run(None, {name: np.zeros([d if isinstance(d, int) else 1 for d in sess.get_inputs()[0].shape], np.float32)})
    path = sess.end_profiling()
    assert sess.end_profiling() == ""
    assert Path(path).name.startswith(prefix.name) and path.endswith(".json")
    with open(path, encoding="utf-8") as fh:
        events: list[dict[str, Any]] = json.load(fh)
    return events


def test_profiling_writes_a_chrome_trace(rt: ModuleType, tmp_path: Path) -> None:
    (path,) = [p for p in corpus.shipped_models() if p.stem == "light_squeezenet"]
    events = profile_script(rt, path.read_bytes(), tmp_path / "trace")
    assert isinstance(events, list) and events
    for e in events:
        assert TRACE_KEYS <= set(e), e
        assert e["ph"] == "X" and isinstance(e["ts"], int) and isinstance(e["dur"], int) and e["dur"] >= 0
        assert isinstance(e["args"], dict)
    names = {e["name"] for e in events if e["cat"] == "Session"}
    assert {"session_initialization", "model_run"} <= names
    nodes = [e for e in events if e["cat"] == "Node"]
    assert nodes and all(e["name"].endswith("_kernel_time") for e in nodes)
    assert {e["args"]["op_name"] for e in nodes} >= {"Conv"}
    assert {e["args"]["provider"] for e in nodes} == {"CPUExecutionProvider"}
    (run,) = [e for e in events if e["name"] == "model_run"]
    for e in nodes:
        assert run["ts"] <= e["ts"] and e["ts"] + e["dur"] <= run["ts"] + run["dur"] + 1


def test_profiling_disable_all_times_every_node_as_written(tmp_path: Path) -> None:
    (path,) = [p for p in corpus.shipped_models() if p.stem == "light_squeezenet"]
    model = _random_weights(path)
    graph = onnx.load_from_string(model).graph
    as_written = [e for e in profile_script(onnxcore, model, tmp_path / "a", "ORT_DISABLE_ALL") if e["cat"] == "Node"]
    optimised = [e for e in profile_script(onnxcore, model, tmp_path / "b") if e["cat"] == "Node"]
    assert [e["args"]["op_name"] for e in as_written] == [n.op_type for n in graph.node]
    assert not any("fused_nodes" in e["args"] for e in as_written)
    assert len(optimised) < len(as_written) and any("fused_nodes" in e["args"] for e in optimised)


def test_not_profiling_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    sess = onnxcore.InferenceSession(_small_model())
    sess.run(None, {"x": np.ones((1, 1, 3), np.float32), "text": np.array(["a", "b"])})
    assert sess.end_profiling() == ""
    assert list(tmp_path.iterdir()) == []


def test_intra_op_num_threads_caps_the_blas_threads_during_a_run(monkeypatch: pytest.MonkeyPatch) -> None:
    threadpoolctl = pytest.importorskip("threadpoolctl")

    def blas_threads() -> set[int]:
        return {i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"}

    if not blas_threads():
        pytest.skip("numpy's BLAS is not visible to threadpoolctl")
    before = blas_threads()
    wanted = max(before) + 1
    so = onnxcore.SessionOptions()
    so.intra_op_num_threads = wanted
    sess = onnxcore.InferenceSession(_small_model(), so)
    seen: list[set[int]] = []
    run = sess.session.run

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(blas_threads())
        return run(*args, **kwargs)

    monkeypatch.setattr(sess.session, "run", spy)
    sess.run(None, {"x": np.ones((1, 1, 3), np.float32), "text": np.array(["a", "b"])})
    assert seen == [{wanted}]
    assert blas_threads() == before
