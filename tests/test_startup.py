"""Time to first result: what `import onnxcore` and a first session load (issue 42, item 3).

ml_dtypes 0.7 takes about half a second to import; onnxcore loads it only when a model uses one of the types
numpy lacks (bfloat16, float8, float6, float4, int4, int2, ...). ``import onnxcore`` loads the codec alone (its
decoders made per class on first use); a command loads what it runs; numba and each family of compiled loops load
with the first kernel that asks. Each check runs in a fresh interpreter, since the test process has loaded
everything already.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import onnxcore
import onnxcore.runtime as rt
from onnxcore.kernels._util import distinct

BUNDLED = sorted((Path(onnxcore.__file__).resolve().parent / "data").glob("*.onnx"))[0]


def _fresh(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_float_model_runs_without_importing_ml_dtypes():
    out = _fresh(
        "import sys, numpy as np, onnxcore as oc\n"
        f"s = oc.InferenceSession({str(BUNDLED)!r})\n"
        "i = s.get_inputs()[0]\n"
        "shape = [1 if not isinstance(d, int) else d for d in i.shape]\n"
        "s.run(None, {i.name: np.zeros(shape, np.float32)})\n"
        "oc.check(" + repr(str(BUNDLED)) + ")\n"
        "print('ml_dtypes' in sys.modules)"
    )
    assert out == "False"


def test_a_narrow_type_loads_ml_dtypes_on_first_use():
    out = _fresh(
        "import sys, numpy as np\n"
        "from onnxcore.types.elements import ElementType\n"
        "before = 'ml_dtypes' in sys.modules\n"
        "dt = ElementType.BFLOAT16.np_dtype\n"
        "import ml_dtypes\n"
        "print(before, dt == np.dtype(ml_dtypes.bfloat16), ElementType.from_dtype(ml_dtypes.float8_e4m3fn).name)"
    )
    assert out == "False True FLOAT8E4M3FN"


def test_from_dtype_finds_a_narrow_type_before_any_lookup():
    # A caller holding an ml_dtypes array has imported ml_dtypes; the reverse lookup must still find its type
    # although no ElementType asked for its dtype yet.
    out = _fresh(
        "import ml_dtypes, numpy as np\n"
        "from onnxcore.types.elements import ElementType\n"
        "from onnxcore.kernels._util import is_narrow_float\n"
        "print(ElementType.from_dtype(np.dtype(ml_dtypes.int4)).name, is_narrow_float(ml_dtypes.bfloat16),"
        " is_narrow_float(np.float32))"
    )
    assert out == "INT4 True False"


def test_the_check_command_loads_no_evaluator():
    # `onnxcore check` from a cold process imports the validator alone: not the runtime, the kernels' operator
    # families, conversion or the report (the evaluator's import is most of a cold command's time).
    out = _fresh(
        "import sys\n"
        "from onnxcore.cli import main\n"
        "try:\n"
        f"    main(['check', {str(BUNDLED)!r}])\n"
        "except SystemExit as e:\n"
        "    assert e.code in (0, None), e.code\n"
        "loaded = [m for m in ('onnxcore.runtime', 'onnxcore.convert', 'onnxcore.reporting', 'ml_dtypes', 'numba',"
        " 'onnxcore.kernels.conv', 'onnxcore.kernels.ml_tree', 'onnxcore.kernels.elementwise',"
        " 'onnxcore.kernels.fused.pattern')"
        " if m in sys.modules]\n"
        "print(loaded)"
    )
    assert out.splitlines()[-1] == "[]"


# What `import onnxcore` must not load: the evaluator, inference, the validator and its rule tables, the operator
# definitions, the kernels (every family), conversion, the report, numba and ml_dtypes (issue 42, item 3); nor
# numpy.random, tempfile and hashlib (10, 5 and 3 ms), which only a random draw, a write and a checksum need.
_NOT_AT_IMPORT = (
    "onnxcore.runtime",
    "onnxcore.infer",
    "onnxcore.validate",
    "onnxcore.defs",
    "onnxcore.graph",
    "onnxcore.kernels",
    "onnxcore.convert",
    "onnxcore.reporting",
    "onnxcore.text",
    "numba",
    "ml_dtypes",
    "scipy",
    "numpy.random",
    "tempfile",
    "hashlib",
)


def test_import_onnxcore_loads_the_codec_alone():
    out = _fresh(
        "import sys, onnxcore\n"
        f"banned = {_NOT_AT_IMPORT!r}\n"
        "print(sorted(m for m in sys.modules if m.startswith(banned)))"
    )
    assert out == "[]"


def test_the_codec_makes_a_decoder_on_its_class_first_message():
    # The decoders are generated code; import makes none of them, a load makes those of the classes it meets.
    out = _fresh(
        "import onnxcore\n"
        "from onnxcore.proto import decoder\n"
        "from onnxcore.proto.messages import ModelProto, SparseTensorProto\n"
        "def made(c): return '_deferred_decoder' not in decoder._DECODERS[c].__qualname__\n"
        "before = sum(made(c) for c in decoder._DECODERS)\n"
        f"m = onnxcore.load({str(BUNDLED)!r})\n"
        "print(before, made(ModelProto), made(SparseTensorProto), m.graph.node[0].op_type != '')"
    )
    assert out == "0 True False True"


def test_a_float_model_runs_without_the_accelerator_loaded():
    # The bundled MLP (MatMul, Add, Relu, Softmax) has no kernel with a compiled loop: numba stays unloaded even where
    # it is installed, and with it the accelerator's loop modules.
    out = _fresh(
        "import sys, numpy as np, onnxcore as oc\n"
        f"s = oc.Session({str(BUNDLED)!r})\n"
        "s.run(None, {'x': np.zeros((2, 4), np.float32)})\n"
        "print(sorted(m for m in sys.modules if m.startswith(('numba', 'llvmlite', 'onnxcore.kernels.accel._'))))"
    )
    assert out == "[]"


def test_each_family_of_compiled_loops_loads_when_its_kernels_ask():
    pytest.importorskip("numba")
    out = _fresh(
        "import os, sys\n"
        "os.environ.pop('ONNXCORE_ACCEL', None)\n"
        "from onnxcore.kernels import accel\n"
        "state = accel.status()[0]\n"
        "def loaded(): return [m[len('onnxcore.kernels.accel.'):] for m in sorted(sys.modules)"
        " if m.startswith('onnxcore.kernels.accel._')]\n"
        "accel.available()\n"
        "first = loaded()\n"
        "accel.jit_ml()\n"
        "ml = loaded()\n"
        "accel.jit_tree()\n"
        "print(state, first, ml, loaded(), accel.status()[0], accel.status()[1] is not None)"
    )
    assert out == "installed ['_jit'] ['_jit', '_jit_ml'] ['_jit', '_jit_ml', '_jit_tree'] loaded True"


def test_the_accelerator_turned_off_loads_no_numba():
    out = _fresh(
        "import os, sys\n"
        "os.environ['ONNXCORE_ACCEL'] = '0'\n"
        "from onnxcore.kernels import accel\n"
        "print(accel.status(), accel.available(), 'numba' in sys.modules)"
    )
    assert out == "('off', None) False False"


def test_a_session_imports_the_kernel_and_rule_families_of_its_operators_only():
    # A model of one Add: its kernel family and its shape rules (the element-wise binary family); not the trees,
    # the linear models, text, pooling, recurrent layers, attention or normalizations, kernels nor rules (the
    # operator -> module indexes, tests/kernels/test_kernel_index.py). numpy.random is not loaded either: the session
    # makes its generator on the first draw.
    out = _fresh(
        "import sys, numpy as np, onnxcore as oc\n"
        "from onnxcore.build import helper as h\n"
        "vi = [h.make_tensor_value_info(n, 1, [2]) for n in 'xyz']\n"
        "g = h.make_graph([h.make_node('Add', ['x', 'y'], ['z'])], 'g', vi[:2], vi[2:])\n"
        "s = oc.Session(h.make_model(g, opset_imports=[h.make_opsetid('', 17)]))\n"
        "z = s.run(None, {'x': np.ones(2, np.float32), 'y': np.full(2, 2, np.float32)})[0]\n"
        "fams = ('ml_tree', 'ml_linear', 'text', 'pool', 'recurrent', 'attention', 'normalization', 'signal')\n"
        "k = [f for f in fams if 'onnxcore.kernels.' + f in sys.modules]\n"
        "r = [f for f in fams + ('conv', 'ml') if 'onnxcore.infer.shape_ops.' + f in sys.modules]\n"
        "print(z.tolist(), 'onnxcore.kernels.elementwise_binary' in sys.modules,"
        " 'onnxcore.infer.shape_ops.elementwise_binary' in sys.modules, k, r, 'numpy.random' in sys.modules)"
    )
    assert out == "[3.0, 3.0] True True [] [] False"


def test_the_session_generator_is_made_on_the_first_draw_from_the_seed_in_force_at_creation():
    # Deferring the generator keeps onnxruntime's set_seed semantics: two sessions made after the same seed draw the
    # same numbers, and a seed set after a session was made does not change its draws.
    out = _fresh(
        "import sys, numpy as np, onnxcore as oc\n"
        "from onnxcore.build import helper as h\n"
        "from onnxcore.runtime.seeding import set_seed\n"
        "g = h.make_graph([h.make_node('RandomUniform', [], ['y'], shape=[4], dtype=1)], 'g', [],"
        " [h.make_tensor_value_info('y', 1, [4])])\n"
        "m = h.make_model(g, opset_imports=[h.make_opsetid('', 17)])\n"
        "set_seed(7)\n"
        "a, b = oc.Session(m), oc.Session(m)\n"
        "loaded = 'numpy.random' in sys.modules\n"
        "set_seed(8)\n"
        "ya, yb = a.run(None, {})[0], b.run(None, {})[0]\n"
        "set_seed(7)\n"
        "yc = oc.Session(m).run(None, {})[0]\n"
        "print(loaded, ya.tolist() == yb.tolist() == yc.tolist(), len(set(ya.tolist())))"
    )
    assert out == "False True 4"


def test_collection_paused_restores_the_collector_as_it_found_it():
    import gc

    from onnxcore.limits import collection_paused

    assert gc.isenabled()
    with collection_paused():
        assert not gc.isenabled()
        with collection_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # an inner pause leaves the outer one in place
    assert gc.isenabled()
    gc.disable()
    try:
        with collection_paused():
            pass
        assert not gc.isenabled()  # a caller that turned the collector off keeps it off
    finally:
        gc.enable()
    try:
        with collection_paused():
            raise ValueError("inside")
    except ValueError:
        pass
    assert gc.isenabled()


def test_collection_paused_moves_what_a_large_walk_leaves_to_the_oldest_generation():
    import gc

    from onnxcore.limits import _PROMOTE_AFTER, collection_paused

    with collection_paused():
        kept = [[] for _ in range(_PROMOTE_AFTER + 1000)]
    assert gc.isenabled() and gc.get_freeze_count() == 0
    assert gc.get_count()[0] < 1000  # nothing young left to scan at the next allocation
    tracked = {id(x) for x in gc.get_objects(generation=2)}
    assert all(id(x) in tracked for x in kept[::1000])
    # A caller's frozen objects stay frozen: then the collector's own policy is left alone.
    marker: list[int] = []
    gc.freeze()
    try:
        with collection_paused():
            more = [[] for _ in range(_PROMOTE_AFTER + 1000)]
        assert len(more) > _PROMOTE_AFTER
        assert not any(x is marker for x in gc.get_objects())  # still in the permanent generation
    finally:
        gc.unfreeze()
    assert len(kept) > _PROMOTE_AFTER


def test_a_session_and_a_check_load_none_of_the_standard_modules_they_do_not_use():
    # The operator definitions are read beside their module (importlib.resources, zipfile and tempfile: 5 ms);
    # hashlib (3 ms), the thread pool (concurrent.futures and logging: 3 ms) and difflib are imported where a
    # checksum, a second thread or a "did you mean" needs them.
    out = _fresh(
        "import sys, numpy as np, onnxcore as oc\n"
        f"s = oc.Session({str(BUNDLED)!r})\n"
        "s.run(None, {'x': np.zeros((2, 4), np.float32)})\n"
        f"assert oc.check({str(BUNDLED)!r}).ok\n"
        "print([m for m in ('importlib.resources', 'zipfile', 'tempfile', 'shutil', 'hashlib', 'concurrent.futures',"
        " 'logging', 'difflib') if m in sys.modules])"
    )
    assert out == "[]"


def test_a_tree_ensemble_session_does_not_import_numpy_ma(tmp_path: Path):
    # np.unique without return_* asks numpy.ma whether its array is masked (7-14 ms of a forest's first session);
    # the trees' preparation finds distinct ids with kernels._util.distinct instead. (numba's typeof imports
    # numpy.ma itself, so this holds on the numpy path.)
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    h, T = onnx.helper, onnx.TensorProto
    node = h.make_node(
        "TreeEnsembleClassifier", ["x"], ["label", "p"], domain="ai.onnx.ml",
        nodes_treeids=[0, 0, 0, 1, 1, 1], nodes_nodeids=[0, 1, 2, 0, 1, 2], nodes_featureids=[0, 0, 0, 1, 0, 0],
        nodes_values=[0.5, 0, 0, 0.2, 0, 0], nodes_modes=["BRANCH_LEQ", "LEAF", "LEAF"] * 2,
        nodes_truenodeids=[1, 0, 0, 1, 0, 0], nodes_falsenodeids=[2, 0, 0, 2, 0, 0],
        class_treeids=[0, 0, 1, 1, 0], class_nodeids=[1, 2, 1, 2, 2], class_ids=[0, 1, 0, 1, 2],
        class_weights=[1.0, 0.0, 0.5, 0.5, 0.25], classlabels_int64s=[0, 1, 2],
    )  # fmt: skip
    g = h.make_graph([node], "g", [h.make_tensor_value_info("x", T.FLOAT, ["N", 2])],
                     [h.make_tensor_value_info("label", T.INT64, ["N"]),
                      h.make_tensor_value_info("p", T.FLOAT, ["N", 3])])  # fmt: skip
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17), h.make_opsetid("ai.onnx.ml", 3)])
    m.ir_version = 8
    path = tmp_path / "forest.onnx"
    path.write_bytes(m.SerializeToString())
    x = [[0.1, 0.9], [0.9, 0.1], [0.7, 0.0]]
    out = _fresh(
        "import os, sys\n"
        "os.environ['ONNXCORE_ACCEL'] = '0'\n"
        "import numpy as np, onnxcore as oc\n"
        f"label, p = oc.Session({str(path)!r}).run(None, {{'x': np.array({x}, np.float32)}})\n"
        "print('numpy.ma' in sys.modules, label.tolist(), p.tolist(), sep=';')"
    )
    want_label, want_p = ort.InferenceSession(str(path)).run(None, {"x": np.array(x, np.float32)})
    assert out == f"False;{want_label.tolist()};{want_p.tolist()}"


def test_distinct_is_numpy_unique_without_numpy_ma():
    rng = np.random.default_rng(5)
    cases = [rng.integers(0, 5, 200), rng.integers(-3, 3, (4, 6)), np.array([], np.int64), np.array([7]),
             np.array([b"LEAF", b"BRANCH_LEQ", b"LEAF"], dtype=object), rng.standard_normal(50).round(1)]  # fmt: skip
    for a in cases:
        want = np.unique(a)
        got = distinct(a)
        assert got.dtype == want.dtype and got.tolist() == want.tolist()


def test_a_session_does_not_load_the_onnxruntime_facade_nor_the_model_optimizer():
    # onnxcore.runtime names its members lazily (PEP 562): a script that makes a Session does not import the
    # façade's modules and the model rewrites they reach (40-50 ms of its start); the façade's names still resolve.
    out = _fresh(
        "import sys, numpy as np, onnxcore as oc\n"
        f"s = oc.Session({str(BUNDLED)!r})\n"
        "s.run(None, {'x': np.zeros((2, 4), np.float32)})\n"
        "print([m for m in ('onnxcore.runtime.ort_api', 'onnxcore.runtime.ort_export', 'onnxcore.optimizer',"
        " 'onnxcore.runtime.optimize.standard', 'onnxcore.runtime.rewrite_model') if m in sys.modules])\n"
        "import onnxcore.runtime as rt\n"
        "print(rt.InferenceSession is oc.InferenceSession, sorted(set(rt.__all__) - set(dir(rt))))"
    )
    assert out.splitlines() == ["[]", "True []"]


def test_an_unknown_runtime_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'Sesion'"):
        rt.Sesion  # noqa: B018
