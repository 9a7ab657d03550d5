"""The onnxruntime façade against onnxruntime itself (issue 38, items 1-4): the same script with ``rt`` bound to
``onnxruntime`` and to ``onnxcore`` gives the same values, refuses the same things with the same exception class,
takes the same feeds, and offers the same OrtValue, IOBinding, options and module functions.

onnxruntime is the oracle: each expectation is read from it at test time, not written down.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import onnxcore
from onnxcore.capi import onnxruntime_pybind11_state as capi
from onnxcore.errors import ValidationWarning

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")
from onnx import TensorProto as T  # noqa: E402
from onnx import helper  # noqa: E402

MODULES = {"onnxruntime": ort, "onnxcore": onnxcore}
vi = helper.make_tensor_value_info


def _model(nodes: list[Any], inputs: list[Any], outputs: list[Any], inits: Any = (), opset: int = 17) -> bytes:
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
    return bytes(model.SerializeToString())


def _session(rt: ModuleType, model: Any, options: Any = None) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return rt.InferenceSession(model, options, providers=["CPUExecutionProvider"])


def _same(ours: Any, theirs: Any) -> None:
    assert type(ours) is type(theirs)
    if isinstance(theirs, np.ndarray):
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
        if theirs.dtype.kind == "f":
            np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5)
        else:
            np.testing.assert_array_equal(ours, theirs)
    elif isinstance(theirs, list):
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            _same(a, b)
    elif isinstance(theirs, dict):
        assert list(ours) == list(theirs)
        for k in theirs:
            _same(ours[k], theirs[k])
    elif isinstance(theirs, float):
        assert ours == pytest.approx(theirs, rel=1e-4, abs=1e-5)
    else:
        assert ours == theirs


# --- 1. lenient by default: what onnxruntime runs, the façade runs (with a warning) ---


def _gaussian_process() -> bytes:
    skl2onnx = pytest.importorskip("skl2onnx")
    from sklearn.gaussian_process import GaussianProcessRegressor

    # In double: in float32 the kernel matrix's solve cancels catastrophically (onnxruntime and onnxcore both give
    # values hundreds off scikit-learn's), as skl2onnx's documentation warns for this model.
    rng = np.random.default_rng(0)
    x = rng.standard_normal((30, 4))
    gpr = GaussianProcessRegressor().fit(x, x.sum(axis=1))
    options = {GaussianProcessRegressor: {"return_std": True}}
    return bytes(skl2onnx.to_onnx(gpr, x, options=options, target_opset=17).SerializeToString())


def _untyped_output() -> bytes:
    """A pipeline's last step whose output declares no type (as a hand-edited or converted model may)."""
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Relu", ["h"], ["variable"])]
    w = helper.make_tensor("w", T.FLOAT, [3, 2], [0.5, -1.0, 2.0, 0.25, -0.5, 1.0])
    return _model(nodes, [vi("x", T.FLOAT, [None, 3])], [helper.make_empty_tensor_value_info("variable")], [w])


def _documentation_example() -> bytes:
    """onnx's first documentation example: Y declared [?] where MatMul + Add compute [?, ?]."""
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["X", "A"], ["XA"]), helper.make_node("Add", ["XA", "B"], ["Y"])],
        "lr",
        [vi(n, T.FLOAT, [None, None]) for n in "XAB"],
        [vi("Y", T.FLOAT, [None])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    return bytes(model.SerializeToString())


LENIENT = {
    "gaussian_process_return_std": (_gaussian_process, "E-IO-TYPE"),
    "untyped_output": (_untyped_output, "E-IO-TYPE"),
    "documentation_example": (_documentation_example, "E-SHAPE-MISMATCH"),
}


def _feeds(sess: Any) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    return {
        i.name: rng.standard_normal([4, 3] if len(i.shape) == 2 else [4]).astype(np.float32) for i in sess.get_inputs()
    }


@pytest.mark.parametrize("name", list(LENIENT))
def test_models_onnxruntime_runs_run_with_a_warning(name: str) -> None:
    make, code = LENIENT[name]
    model = make()
    theirs = _session(ort, model)
    with pytest.warns(ValidationWarning, match=code) as record:
        ours = onnxcore.InferenceSession(model)
    (warning,) = [w for w in record if issubclass(w.category, ValidationWarning)]
    assert warning.filename == __file__  # it points at the script's line, not into onnxcore
    feeds = _feeds(theirs)
    if name == "gaussian_process_return_std":
        feeds = {"X": np.random.default_rng(2).standard_normal((5, 4))}
    elif name == "documentation_example":
        rng = np.random.default_rng(3)
        feeds = {n: rng.standard_normal(s).astype(np.float32) for n, s in (("X", (4, 3)), ("A", (3, 2)), ("B", (4, 2)))}
    _same(ours.run(None, feeds), theirs.run(None, feeds))
    described = [(o.name, o.type, o.shape) for o in ours.get_outputs()]
    if name == "documentation_example":
        # onnxruntime shows [] after its "lenient merge" of [?] and [?, ?]; the declared [?] is shown here.
        assert described == [("Y", "tensor(float)", [None])]
    else:  # what an output does not declare is described by inference, as onnxruntime describes it
        assert described == [(o.name, o.type, o.shape) for o in theirs.get_outputs()]


def test_session_tolerates_only_what_it_is_told_to() -> None:
    model = _documentation_example()
    with pytest.warns(ValidationWarning, match=r"E-SHAPE-MISMATCH\)"):
        onnxcore.Session(model, tolerate=lambda f: f.code == "E-SHAPE-MISMATCH")
    with pytest.raises(onnxcore.ValidationError, match="E-SHAPE-MISMATCH"):
        onnxcore.Session(model, tolerate=lambda f: f.code == "E-IO-TYPE")


@pytest.mark.parametrize("name", list(LENIENT))
def test_strict_session_option_refuses_them_as_session_does(name: str) -> None:
    make, code = LENIENT[name]
    so = onnxcore.SessionOptions()
    so.add_session_config_entry("onnxcore.strict", "1")
    with pytest.raises(onnxcore.ValidationError, match=code) as info:
        onnxcore.InferenceSession(make(), so)
    assert isinstance(info.value, capi.OrtError) and isinstance(info.value, RuntimeError)
    with pytest.raises(onnxcore.ValidationError, match=code):
        onnxcore.Session(make())


def test_models_that_cannot_be_evaluated_are_still_refused() -> None:
    model = _model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", T.FLOAT, [2])], [vi("y", T.DOUBLE, [2])])
    with pytest.raises(onnxcore.ValidationError, match="E-TYPE-MISMATCH"):
        onnxcore.InferenceSession(model)


def _misfit_linear_classifier() -> bytes:
    # onnxruntime's logreg_iris.onnx in small: 2 declared features, 12 coefficients for 3 classes (3 x 4).
    node = helper.make_node(
        "LinearClassifier",
        ["x"],
        ["label", "proba"],
        domain="ai.onnx.ml",
        classlabels_ints=[0, 1, 2],
        coefficients=[0.5] * 12,
        intercepts=[0.0, 0.1, 0.2],
    )
    graph = helper.make_graph(
        [node], "g", [vi("x", T.FLOAT, [None, 2])], [vi("label", T.INT64, [None]), vi("proba", T.FLOAT, [None, 3])]
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 1)]
    return bytes(helper.make_model(graph, opset_imports=opsets, ir_version=8).SerializeToString())


def test_an_attribute_misfit_the_kernel_refuses_fails_at_run_as_onnxruntime_loads_it() -> None:
    model = _misfit_linear_classifier()
    theirs = _session(ort, model)  # onnxruntime loads it (and computes class 0 for every row)
    x = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    assert theirs.run(None, {"x": x})[0].shape == (2,)
    with pytest.warns(ValidationWarning, match="E-ML-LINEAR-CLASSIFIER"):
        ours = onnxcore.InferenceSession(model)
    with pytest.raises(capi.Fail, match="12 coefficients do not fit 2 features") as info:
        ours.run(None, {"x": x})
    assert isinstance(info.value, RuntimeError)
    with pytest.raises(onnxcore.ValidationError, match="E-ML-LINEAR-CLASSIFIER"):
        onnxcore.Session(model)


# --- 2. onnxruntime's exception classes, raised for the same failures ---

_ADD = _model(
    [helper.make_node("Add", ["x", "y"], ["z"])],
    [vi("x", T.FLOAT, [2, 3]), vi("y", T.FLOAT, [2, 3])],
    [vi("z", T.FLOAT, [2, 3])],
)
_A = np.ones((2, 3), np.float32)


def _run(model: bytes, feeds: dict[str, Any], names: Any = None) -> Callable[[ModuleType], Any]:
    return lambda rt: _session(rt, model).run(names, feeds)


def _load(model: Any) -> Callable[[ModuleType], Any]:
    return lambda rt: _session(rt, model)


_RESHAPE = _model(
    [helper.make_node("Reshape", ["x", "s"], ["z"])],
    [vi("x", T.FLOAT, [None]), vi("s", T.INT64, [1])],
    [vi("z", T.FLOAT, [None])],
)
_MATMUL = _model(
    [helper.make_node("MatMul", ["x", "y"], ["z"])],
    [vi("x", T.FLOAT, [None, None]), vi("y", T.FLOAT, [None, None])],
    [vi("z", T.FLOAT, [None, None])],
)
_RELU_IN = [vi("x", T.FLOAT, [2])]
_RELU_OUT = [vi("z", T.FLOAT, [2])]


def _terminated(rt: ModuleType) -> Any:
    options = rt.RunOptions()
    options.terminate = True
    return _session(rt, _ADD).run(None, {"x": _A, "y": _A}, options)


def _no_opset() -> bytes:
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["z"])], "g", _RELU_IN, _RELU_OUT)
    return bytes(helper.make_model(graph, opset_imports=[]).SerializeToString())


def _init_model(elem: int, dims: list[int]) -> bytes:
    w = helper.make_tensor("w", elem, dims, [1.0] * dims[0])
    ins = [vi("x", T.FLOAT, [3]), vi("w", T.FLOAT, [3])]
    return _model([helper.make_node("Add", ["x", "w"], ["z"])], ins, [vi("z", T.FLOAT, [3])], [w])


FAILURES: dict[str, Callable[[ModuleType], Any]] = {
    "terminated run": _terminated,
    "unknown input name": _run(_ADD, {"x": _A, "y": _A, "w": _A}),
    "missing input": _run(_ADD, {"x": _A}),
    "wrong rank": _run(_ADD, {"x": _A, "y": _A[0]}),
    "wrong extent": _run(_ADD, {"x": _A, "y": np.ones((2, 4), np.float32)}),
    "wrong element type": _run(_ADD, {"x": _A, "y": _A.astype(np.float64)}),
    "string array for float": _run(_ADD, {"x": _A, "y": np.array([["a"] * 3] * 2)}),
    "unknown output name": _run(_ADD, {"x": _A, "y": _A}, ["q"]),
    "missing file": _load("/nonexistent/model.onnx"),
    "directory": _load(str(Path(__file__).parent)),
    "malformed octets": _load(b"\xff\xff\xff garbage"),
    "empty octets": _load(b""),
    "no operator set import": _load(_no_opset()),
    "initializer of another type than its input": _load(_init_model(T.DOUBLE, [3])),
    "initializer of another shape than its input": _load(_init_model(T.FLOAT, [2])),
    "undefined operator": _load(_model([helper.make_node("Foo", ["x"], ["z"])], _RELU_IN, _RELU_OUT)),
    "unknown attribute": _load(_model([helper.make_node("Relu", ["x"], ["z"], foo=1)], _RELU_IN, _RELU_OUT)),
    "undefined value": _load(_model([helper.make_node("Relu", ["q"], ["z"])], _RELU_IN, _RELU_OUT)),
    "output type contradiction": _load(
        _model([helper.make_node("Relu", ["x"], ["z"])], _RELU_IN, [vi("z", T.DOUBLE, [2])])
    ),
    "input without type": _load(
        _model([helper.make_node("Relu", ["x"], ["z"])], [helper.make_empty_tensor_value_info("x")], _RELU_OUT)
    ),
    "duplicate node names": _load(
        _model(
            [helper.make_node("Relu", ["x"], ["y"], name="n"), helper.make_node("Relu", ["y"], ["z"], name="n")],
            _RELU_IN,
            _RELU_OUT,
        )
    ),
    "kernel failure (Reshape)": _run(_RESHAPE, {"x": np.ones(6, np.float32), "s": np.array([4])}),
    "kernel failure (MatMul)": _run(_MATMUL, {"x": np.ones((2, 3), np.float32), "y": np.ones((2, 3), np.float32)}),
}


def _raised(rt: ModuleType, call: Callable[[ModuleType], Any]) -> BaseException:
    with pytest.raises(Exception) as info:
        call(rt)
    return info.value


@pytest.mark.parametrize("failure", list(FAILURES))
def test_the_same_failure_raises_the_same_exception_class(failure: str) -> None:
    theirs = _raised(ort, FAILURES[failure])
    ours = _raised(onnxcore, FAILURES[failure])
    assert isinstance(ours, onnxcore.OnnxCoreError)
    if type(theirs).__module__.endswith("onnxruntime_pybind11_state"):
        assert type(ours).__name__ == type(theirs).__name__, f"{failure}: {ours!r}"
        # A script importing the class from the swapped module catches ours by that name.
        assert isinstance(ours, getattr(capi, type(theirs).__name__)) and isinstance(ours, RuntimeError)
    else:
        assert isinstance(ours, type(theirs))  # a builtin: ValueError for a missing input


def test_capi_classes_are_runtime_errors_of_our_hierarchy_at_both_paths() -> None:
    names = ["Fail", "InvalidArgument", "NoSuchFile", "NoModel", "EngineError", "RuntimeException",
             "InvalidProtobuf", "ModelLoaded", "NotImplemented", "InvalidGraph", "EPFail"]  # fmt: skip
    from onnxruntime.capi import onnxruntime_pybind11_state as theirs

    for name in names:
        cls = getattr(capi, name)
        assert hasattr(theirs, name)
        assert issubclass(cls, RuntimeError) and issubclass(cls, onnxcore.OnnxCoreError)
        assert getattr(onnxcore.capi, name) is cls
    # reached as attributes, as ``onnxruntime.capi.onnxruntime_pybind11_state.Fail`` is
    assert onnxcore.capi.onnxruntime_pybind11_state.Fail is capi.Fail


def test_a_mapped_error_is_still_the_onnxcore_error_it_replaces() -> None:
    with pytest.raises(onnxcore.ModelFileNotFoundError) as info:
        onnxcore.InferenceSession("/nonexistent/model.onnx")
    assert isinstance(info.value, capi.NoSuchFile) and isinstance(info.value, FileNotFoundError)
    assert "/nonexistent/model.onnx" in str(info.value)
    with pytest.raises(onnxcore.EvaluationError) as err:
        FAILURES["kernel failure (Reshape)"](onnxcore)
    assert isinstance(err.value, capi.Fail) and err.value.op_type == "Reshape"  # type: ignore[attr-defined]


# --- 3. feeds as onnxruntime takes them ---

_TYPES = {
    "float": (T.FLOAT, np.float32),
    "double": (T.DOUBLE, np.float64),
    "int64": (T.INT64, np.int64),
    "uint8": (T.UINT8, np.uint8),
    "bool": (T.BOOL, np.bool_),
    "string": (T.STRING, np.str_),
}
_FEEDS: dict[str, Any] = {
    "list of floats": [1.5, 2.5],
    "list of ints": [1, 2],
    "list of bools": [True, False],
    "list of strings": ["a", "b"],
    "mixed list": [1, 2.5],
    "nested list": [[1.0, 2.0], [3.0, 4.0]],
    "ragged list": [[1], [1, 2]],
    "list with NaN": [float("nan"), 1.0],
    "list of numpy scalars": [np.float32(1), np.float64(2)],
    "float64 array": np.array([1.5, 2.5]),
    "float32 array": np.array([1.5, 2.5], np.float32),
    "int32 array": np.array([1, 2], np.int32),
    "str array": np.array(["a", "b"]),
    "object array with None": np.array(["a", None], dtype=object),
    "object array with NaN": np.array(["a", np.nan], dtype=object),
    "object array of ints": np.array([1, 2], dtype=object),
}


def _identity(elem: int, shape: list[int] | None = None) -> bytes:
    return _model([helper.make_node("Identity", ["x"], ["z"])], [vi("x", elem, shape)], [vi("z", elem, shape)])


@pytest.mark.parametrize("feed", list(_FEEDS))
@pytest.mark.parametrize("dtype", list(_TYPES))
def test_feeds_onnxruntime_takes_are_taken_alike(dtype: str, feed: str) -> None:
    """Where onnxruntime takes a feed we give the same output; where it refuses, we refuse with a RuntimeError
    (onnxruntime's own refusals of a feed are RuntimeErrors or its InvalidArgument)."""
    model = _identity(_TYPES[dtype][0])
    value = _FEEDS[feed]
    try:
        with np.errstate(all="ignore"):
            theirs = _session(ort, model).run(None, {"x": value})
    except Exception as exc:
        with pytest.raises(RuntimeError) as info:
            _session(onnxcore, model).run(None, {"x": value})
        assert isinstance(info.value, onnxcore.OnnxCoreError), f"onnxruntime: {exc!r}"
        if type(exc).__name__ == "InvalidArgument":
            assert isinstance(info.value, capi.InvalidArgument)
        return
    _same(_session(onnxcore, model).run(None, {"x": value}), theirs)


@pytest.mark.parametrize("value", [1.5, 3, np.float64(1.5), np.float32(2.0), np.int64(4)])
def test_scalars_are_0d_tensors_where_onnxruntime_refuses_them(value: Any) -> None:
    """A documented difference: onnxruntime 1.31 refuses a scalar feed (``Unable to handle object``)."""
    model = _identity(T.FLOAT)
    with pytest.raises(RuntimeError, match="Unable to handle"):
        _session(ort, model).run(None, {"x": value})
    (out,) = _session(onnxcore, model).run(None, {"x": value})
    assert out.dtype == np.float32 and out.shape == () and out == np.float32(value)


def _dict_vectorizer_pipeline() -> bytes:
    skl2onnx = pytest.importorskip("skl2onnx")
    from skl2onnx.common.data_types import DictionaryType, FloatTensorType, StringTensorType
    from sklearn.feature_extraction import DictVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    rows = [{"a": 1.0, "b": 2.0}, {"a": 3.0, "c": 1.0}, {"b": 5.0}, {"a": 0.5, "c": 2.0}]
    pipe = make_pipeline(DictVectorizer(sparse=False), LogisticRegression()).fit(rows, [0, 1, 0, 1])
    types = [("input", DictionaryType(StringTensorType([1]), FloatTensorType([1])))]
    return bytes(skl2onnx.to_onnx(pipe, initial_types=types, target_opset=17).SerializeToString())


@pytest.mark.parametrize(
    "feed",
    [{"a": 1.0, "b": 2.0}, {"a": 1, "c": 2}, {"b": np.float32(1), "a": np.float64(2)}, [{"a": 1.0}], {1: 1.0}],
    ids=["floats", "ints", "numpy scalars", "list of dicts", "int keys"],
)
def test_dict_feeds_of_a_dict_vectorizer_pipeline(feed: Any) -> None:
    model = _dict_vectorizer_pipeline()
    try:
        theirs = _session(ort, model).run(None, {"input": feed})
    except Exception:
        with pytest.raises(RuntimeError):
            _session(onnxcore, model).run(None, {"input": feed})
        return
    _same(_session(onnxcore, model).run(None, {"input": feed}), theirs)


def test_nan_and_none_in_a_string_column_read_as_onnxruntime_reads_them() -> None:
    model = _identity(T.STRING)
    column = np.array([["x", None], [np.nan, "y"]], dtype=object)
    (ours,) = _session(onnxcore, model).run(None, {"x": column})
    (theirs,) = _session(ort, model).run(None, {"x": column})
    assert ours.tolist() == theirs.tolist() == [["x", "None"], ["nan", "y"]]


def test_a_bad_feed_is_an_input_error_in_session() -> None:
    with pytest.raises(onnxcore.InputError):
        onnxcore.Session(_identity(T.FLOAT, [2])).run(None, {"x": [1.0, 2.0]})


# --- 4. the rest of the API a CPU user touches ---


def test_ortvalue_as_onnxruntime_gives_it() -> None:
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    for rt in MODULES.values():
        v = rt.OrtValue.ortvalue_from_numpy(a.copy())
        assert (v.data_type(), v.element_type(), v.device_name(), v.shape(), v.is_tensor()) == (
            "tensor(float)", 1, "cpu", [2, 3], True
        )  # fmt: skip
        assert (v.has_value(), v.is_tensor_sequence(), v.tensor_size_in_bytes()) == (True, False, 24)
        view = v.numpy()
        view[0, 0] = 100  # onnxruntime's CPU value shares the array's memory
        assert v.numpy()[0, 0] == 100
        w = rt.OrtValue.ortvalue_from_shape_and_type([2, 3], np.int64, "cpu", 0)
        assert (w.shape(), w.data_type()) == ([2, 3], "tensor(int64)")
        with pytest.raises(RuntimeError):
            rt.OrtValue.ortvalue_from_numpy(a, "cuda", 0)


def test_run_with_ort_values_and_io_binding_give_what_onnxruntime_gives() -> None:
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    results: dict[str, list[Any]] = {}
    for name, rt in MODULES.items():
        sess = _session(rt, _ADD)
        v = rt.OrtValue.ortvalue_from_numpy(a)
        got_run = sess.run(["z"], {"x": v, "y": a})  # run() takes OrtValues among its feeds too
        out = sess.run_with_ort_values(None, {"x": v, "y": v})
        got = [got_run, out[0].numpy().copy(), sess.run_with_ort_values(["z"], {"x": v, "y": v})[0].data_type()]
        binding = sess.io_binding()
        binding.bind_cpu_input("x", a)
        binding.bind_ortvalue_input("y", v)
        binding.bind_output("z")
        sess.run_with_iobinding(binding)
        got += [binding.copy_outputs_to_cpu()[0], binding.get_outputs()[0].numpy().copy()]
        into = np.zeros((2, 3), np.float32)
        binding.clear_binding_outputs()
        binding.bind_output("z", "cpu", 0, np.float32, [2, 3], into.ctypes.data)
        sess.run_with_iobinding(binding)
        got.append(into.copy())
        second = sess.io_binding()
        second.bind_input("x", "cpu", 0, np.float32, [2, 3], a.ctypes.data)
        second.bind_input("y", "cpu", 0, np.float32, [2, 3], a.ctypes.data)
        target = rt.OrtValue.ortvalue_from_shape_and_type([2, 3], np.float32)
        second.bind_ortvalue_output("z", target)
        sess.run_with_iobinding(second)
        got.append(target.numpy().copy())
        with pytest.raises(RuntimeError):
            second.bind_cpu_input("q", a)
        with pytest.raises(RuntimeError):
            second.bind_input("x", "cuda", 0, np.float32, [2, 3], a.ctypes.data)
        results[name] = got
    _same(results["onnxcore"], results["onnxruntime"])


def test_options_have_onnxruntimes_fields_and_defaults() -> None:
    for cls in ("SessionOptions", "RunOptions"):
        ours, theirs = getattr(onnxcore, cls)(), getattr(ort, cls)()
        fields = [n for n in dir(theirs) if not n.startswith("_") and not callable(getattr(theirs, n))]
        assert fields
        for field in fields:
            a, b = getattr(ours, field), getattr(theirs, field)
            # onnxruntime's enumerations are pybind enums: compared by name
            assert getattr(a, "name", a) == getattr(b, "name", b), f"{cls}.{field}"
        for obj in (ours, theirs):
            with pytest.raises(AttributeError, match="no attribute 'not_an_option'"):
                obj.not_an_option = 1
    for enum in ("ExecutionOrder", "ExecutionMode", "GraphOptimizationLevel"):
        theirs = getattr(ort, enum).__members__
        assert {k: int(v) for k, v in getattr(onnxcore, enum).__members__.items()} == {
            k: int(v.value) for k, v in theirs.items()
        }


def test_module_functions_answer_as_onnxruntime() -> None:
    assert onnxcore.get_all_providers() == ort.get_all_providers()
    assert onnxcore.get_available_providers() == ["CPUExecutionProvider"]
    assert onnxcore.get_device() == ort.get_device() == "CPU"
    assert onnxcore.get_version_string() == ort.get_version_string()
    for rt in MODULES.values():
        rt.set_default_logger_severity(3)
        rt.set_default_logger_verbosity(0)


def test_set_seed_seeds_the_random_operators() -> None:
    model = _model([helper.make_node("RandomNormal", [], ["z"], shape=[4])], [], [vi("z", T.FLOAT, [4])])
    onnxcore.set_seed(7)
    first = _session(onnxcore, model).run(None, {})[0]
    onnxcore.set_seed(7)
    again = _session(onnxcore, model).run(None, {})[0]
    onnxcore.set_seed(8)
    other = _session(onnxcore, model).run(None, {})[0]
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)


def test_optimized_model_filepath_folds_constants_and_drops_dead_nodes(tmp_path: Path) -> None:
    """The written model: the constant branch folded into one initializer, the dead node gone; onnxruntime runs it
    and gives what the session gives."""
    nodes = [
        helper.make_node("Add", ["a", "b"], ["ab"]),
        helper.make_node("Sqrt", ["ab"], ["k"]),
        helper.make_node("Mul", ["x", "k"], ["y"]),
        helper.make_node("Neg", ["x"], ["unused"]),
    ]
    inits = [helper.make_tensor("a", T.FLOAT, [3], [1, 2, 3]), helper.make_tensor("b", T.FLOAT, [3], [3, 2, 6])]
    model = _model(nodes, [vi("x", T.FLOAT, [None, 3])], [vi("y", T.FLOAT, [None, 3])], inits)
    path = tmp_path / "optimized.onnx"
    so = onnxcore.SessionOptions()
    so.optimized_model_filepath = str(path)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    ours = onnxcore.InferenceSession(model, so).run(None, {"x": x})
    written = onnx.load(str(path))
    assert [n.op_type for n in written.graph.node] == ["Mul"]
    assert [t.name for t in written.graph.initializer] == ["k"]
    _same(ours, _session(ort, str(path)).run(None, {"x": x}))
    _same(ours, _session(ort, model).run(None, {"x": x}))
    assert onnxcore.check(str(path)).ok
    # At ORT_DISABLE_ALL the session evaluates every node as written, and that is the model written (as
    # onnxruntime writes its unoptimised model at that level).
    so.graph_optimization_level = onnxcore.GraphOptimizationLevel.ORT_DISABLE_ALL
    _same(onnxcore.InferenceSession(model, so).run(None, {"x": x}), ours)
    written = onnx.load(str(path))
    assert [n.op_type for n in written.graph.node] == ["Add", "Sqrt", "Mul", "Neg"]
    assert [t.name for t in written.graph.initializer] == ["a", "b"]
    _same(ours, _session(ort, str(path)).run(None, {"x": x}))


def test_a_list_of_dicts_feeds_a_sequence_of_maps() -> None:
    """onnxruntime 1.31 refuses any feed of a seq(map) input (``tensor type 0 is not supported``); the façade
    converts each dict as a map feed."""
    seq_map = helper.make_sequence_type_proto(
        helper.make_map_type_proto(T.STRING, helper.make_tensor_type_proto(T.FLOAT, []))
    )
    graph = helper.make_graph([], "g", [helper.make_value_info("s", seq_map)], [helper.make_value_info("s", seq_map)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8).SerializeToString()
    with pytest.raises(RuntimeError):
        _session(ort, model).run(None, {"s": [{"a": 1.0}]})
    (out,) = _session(onnxcore, model).run(None, {"s": [{"a": 1.0, "b": 2}, {"c": np.float64(3)}]})
    assert out == [{"a": 1.0, "b": 2.0}, {"c": 3.0}]
    assert all(type(v) is float for row in out for v in row.values())
