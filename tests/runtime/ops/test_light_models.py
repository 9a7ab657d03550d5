"""The light model zoo in the onnx wheel runs in our Session and matches onnxruntime.

Each model has one graph input; it is fed seeded random data of the declared shape (the wheel ships
only the expected outputs of the original inputs, which it does not ship). The shipped
``_output_0.pb`` still fixes the output's shape and type. Tolerance: rtol 1e-3, atol 1e-5.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import corpus
import numpy as np
import pytest


def _light_models() -> list[Any]:
    try:
        models = [p for p in corpus.shipped_models() if p.name.startswith("light_")]
    except ImportError:
        return []
    return [pytest.param(p, id=p.stem, marks=pytest.mark.slow if p.stem in _SLOW else ()) for p in models]


# All but the two smallest models take seconds each on a shared 2-core machine (run with -m slow).
_SLOW = {
    "light_vgg19", "light_zfnet512", "light_bvlc_alexnet", "light_densenet121", "light_inception_v1",
    "light_inception_v2", "light_resnet50",
}  # fmt: skip


def _session_cls() -> Any:
    try:
        from onnxcore.runtime.session import Session
    except ImportError:
        pytest.skip("onnxcore.Session is not available yet")
    return Session


def model_input(path: Path) -> tuple[str, np.ndarray]:
    """(name, seeded random data) of the model's single non-initializer graph input."""
    import onnx

    m = onnx.load(str(path), load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    (inp,) = [i for i in m.graph.input if i.name not in inits]
    shape = [d.dim_value for d in inp.type.tensor_type.shape.dim]
    return inp.name, np.random.default_rng(0).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("path", _light_models())
def test_light_model_matches_onnxruntime(path: Path) -> None:
    ort = pytest.importorskip("onnxruntime")
    import onnx
    from onnx import numpy_helper

    session_cls = _session_cls()
    name, x = model_input(path)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    expected = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"]).run(None, {name: x})[0]
    (actual,) = session_cls(str(path)).run(None, {name: x})
    shipped = path.with_name(path.stem + "_output_0.pb")
    ref = numpy_helper.to_array(onnx.load_tensor(str(shipped)))
    assert actual.shape == ref.shape == expected.shape
    assert actual.dtype == ref.dtype == expected.dtype
    np.testing.assert_allclose(actual, expected, rtol=1e-3, atol=1e-5)
