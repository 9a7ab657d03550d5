"""Shape inference (Clause 9) on whole models: the light zoo and the onnx wheel's model cases.

Two oracles: every intermediate value's actual shape in a run (``intermediates=True``), and onnx's own shape
inference, which must never state a fixed extent we contradict; where onnx knows a shape fully, so must we.
"""

from __future__ import annotations

from pathlib import Path

import corpus
import numpy as np
import pytest

import onnxcore
from onnxcore.cli import main
from onnxcore.infer import annotate, infer_shapes, shape_step
from onnxcore.infer.shapes import declared_shape

onnx = pytest.importorskip("onnx")

LIGHT = sorted(corpus.onnx_data_dir().glob("light/light_*.onnx"))
# Small enough to run with every intermediate kept in a test.
RUN = ("squeezenet", "resnet50", "inception_v1", "shufflenet", "densenet121")


@pytest.fixture(autouse=True)
def _strict(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shape_step, "STRICT", True)


def _onnx_shapes(path: Path) -> dict[str, tuple[int | str | None, ...]]:
    m = onnx.shape_inference.infer_shapes(onnx.load(str(path)))
    out = {}
    for vi in [*m.graph.value_info, *m.graph.output]:
        t = vi.type.tensor_type
        if t.HasField("shape"):
            out[vi.name] = tuple(d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in t.shape.dim)
    return out


def _agree(ours: tuple | None, theirs: tuple) -> bool:
    if ours is None:
        return True
    return len(ours) == len(theirs) and all(
        not (isinstance(a, int) and isinstance(b, int)) or a == b for a, b in zip(ours, theirs)
    )


@pytest.mark.parametrize("path", LIGHT, ids=lambda p: p.stem)
def test_light_model_shapes_agree_with_onnx_and_are_as_complete(path: Path) -> None:
    result = infer_shapes(onnxcore.load(path))
    assert not result.incompatibilities and not result.mismatches and not result.unruled
    theirs = _onnx_shapes(path)
    assert theirs
    for name, shape in theirs.items():
        ours = result.shape(name)
        assert _agree(ours, shape), (name, ours, shape)
        if all(isinstance(d, int) for d in shape):
            assert ours == shape, (name, ours, shape)


@pytest.mark.parametrize("name", RUN)
def test_every_intermediate_of_a_run_has_the_inferred_shape(name: str) -> None:
    path = next(p for p in LIGHT if p.stem == f"light_{name}")
    model = onnxcore.load(path)
    result = infer_shapes(model)
    feed_name, x = corpus.light_model_input(path)
    _, values = onnxcore.Session(model).run(None, {feed_name: x}, intermediates=True)
    checked = 0
    for value_name, v in values.items():
        if isinstance(v, np.ndarray):
            assert result.shape(value_name) == v.shape, value_name
            checked += 1
    assert checked > 50


@pytest.mark.parametrize("name", RUN)
def test_a_variable_batch_is_carried_and_agrees_with_a_run(name: str) -> None:
    from onnxcore.proto.messages import TensorShapeProto

    path = next(p for p in LIGHT if p.stem == f"light_{name}")
    model = onnxcore.load(path)
    feed_name, x = corpus.light_model_input(path)
    for vi in [next(v for v in model.graph.input if v.name == feed_name), *model.graph.output]:
        assert vi.type is not None and vi.type.tensor_type is not None and vi.type.tensor_type.shape is not None
        dims = list(vi.type.tensor_type.shape.dim)
        dims[0] = TensorShapeProto.Dimension(dim_param="N")
        vi.type.tensor_type.shape = TensorShapeProto(dim=dims)
    result = infer_shapes(model)
    assert not result.incompatibilities and not result.mismatches
    carried = [n for n, s in result.shapes["graph"].items() if s and s[0] == "N"]
    assert len(carried) > 5
    # The Caffe2 conversions reshape to a fixed batch of 1 before their classifier: run at N = 1.
    _, values = onnxcore.Session(model).run(None, {feed_name: x}, intermediates=True)
    for value_name, v in values.items():
        shape = result.shape(value_name)
        if isinstance(v, np.ndarray) and shape is not None:
            assert tuple(1 if d == "N" else d for d in shape) == v.shape, value_name


@pytest.mark.parametrize("path", corpus.shipped_models(), ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}")
def test_shipped_model_shapes_never_contradict_onnx(path: Path) -> None:
    result = infer_shapes(onnxcore.load(path))
    assert not result.incompatibilities and not result.mismatches
    try:
        theirs = _onnx_shapes(path)
    except Exception:  # onnx's inference refuses a few old models; ours has nothing to compare with
        return
    for name, shape in theirs.items():
        assert _agree(result.shape(name), shape), (name, result.shape(name), shape)


def test_convert_infer_shapes_writes_what_onnx_accepts(tmp_path: Path) -> None:
    src = next(p for p in LIGHT if p.stem == "light_squeezenet")
    out = tmp_path / "annotated.onnx"
    assert main(["convert", str(src), str(out), "--infer-shapes"]) == 0
    ours = onnxcore.load(out)
    stated = {vi.name: declared_shape(vi.type) for vi in ours.graph.value_info}
    node_outputs = {o for n in ours.graph.node for o in n.output} - {vi.name for vi in ours.graph.output}
    assert set(stated) == node_outputs
    assert all(s is not None and all(isinstance(d, int) for d in s) for s in stated.values())
    theirs = onnx.load(str(out))
    onnx.checker.check_model(theirs, full_check=True)
    onnx.shape_inference.infer_shapes(theirs, strict_mode=True)  # raises on any conflict with what we stated
    assert onnxcore.check(out).ok
    assert annotate(ours).graph.value_info == ours.graph.value_info  # nothing left to add
