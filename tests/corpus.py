"""The ONNX 1-3 test vectors, generated from the installed onnx package into a cache directory.

The onnx wheel ships the light model zoo but not the backend node cases; these are generated
from ``onnx.backend.test.case.node`` once per onnx version and reused across runs.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import math
import os
import types
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def cache_dir() -> Path:
    """Where generated test data lives (``ONNXCORE_TEST_CACHE`` overrides)."""
    import onnx

    base = Path(os.environ.get("ONNXCORE_TEST_CACHE", ROOT / ".cache"))
    return base / f"onnx-{onnx.__version__}"


def onnx_data_dir() -> Path:
    """The test data shipped in the onnx wheel (light model zoo, pytorch-converted, simple, real)."""
    import onnx

    return Path(onnx.__file__).parent / "backend" / "test" / "data"


def node_cases_dir() -> Path:
    """Generate (once) and return the directory of the ONNX 1-3 node test cases."""
    out = cache_dir() / "node"
    marker = cache_dir() / "node.complete"
    if marker.exists():
        return out
    cache_dir().mkdir(parents=True, exist_ok=True)
    lock = cache_dir() / "node.lock"
    with open(lock, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        if marker.exists():
            return out
        import warnings

        import onnx.backend.test.case.node as node_test
        import onnx.backend.test.cmd_tools as cmd_tools

        with warnings.catch_warnings(), contextlib.redirect_stdout(None):
            warnings.simplefilter("ignore")
            cases = node_test.collect_testcases(None)
            cmd_tools.model_test = types.SimpleNamespace(collect_testcases=lambda: cases)  # type: ignore[attr-defined]
            cmd_tools.generate_data(argparse.Namespace(output=str(cache_dir())))
        marker.write_text(str(len(cases)))
    return out


def node_case_dirs() -> list[Path]:
    """Every node case directory, sorted by name."""
    return sorted(p for p in node_cases_dir().iterdir() if p.is_dir())


def shipped_models() -> list[Path]:
    """Every ``.onnx`` model shipped in the onnx wheel's test data."""
    d = onnx_data_dir()
    return sorted(d.glob("*/*.onnx")) + sorted(d.glob("*/*/model.onnx"))


def light_model_input(path: Path) -> tuple[str, Any]:
    """(name, seeded random data) of a light-zoo model's single non-initializer graph input.

    The wheel ships only the expected outputs of the original inputs, not the inputs themselves.
    """
    import numpy as np
    import onnx

    m = onnx.load(str(path), load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    (inp,) = [i for i in m.graph.input if i.name not in inits]
    shape = [d.dim_value for d in inp.type.tensor_type.shape.dim]
    return inp.name, np.random.default_rng(0).standard_normal(shape).astype(np.float32)


# Roles of a light-zoo constant, by (consumer op, input index), seen through Unsqueeze/Reshape.
_GAINS = {("BatchNormalization", 1), ("BatchNormalization", 4), ("Mul", 1)}
_WEIGHTS = {("Conv", 1), ("Gemm", 1)}


def with_random_weights(path: Path, *, seed: int = 0) -> Any:
    """The light-zoo model at ``path`` (an ``onnx.ModelProto``) with seeded random weights.

    The shipped models build every weight with ``ConstantOfShape`` of 0.02, so each class gets the
    same logit and the output is the uniform distribution whatever happens inside: comparing it
    proves the shapes only. Here each such constant becomes an initializer drawn for its role:
    He-scaled zero-mean weights for Conv and Gemm, gains and variances in [0.5, 1.5], biases and
    means N(0, 0.1); then the classifier is scaled so the output is neither one-hot nor uniform
    (:func:`_calibrate_classifier`).
    """
    import numpy as np
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(path), load_external_data=False)
    graph = model.graph
    rng = np.random.default_rng(seed)
    shapes = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    consumers: dict[str, list[Any]] = {}
    for node in graph.node:
        for k, name in enumerate(node.input):
            consumers.setdefault(name, []).append((node, k))

    def role(name: str) -> tuple[str, int, Any]:
        uses = consumers.get(name, [])
        while len(uses) == 1 and uses[0][0].op_type in ("Unsqueeze", "Reshape") and uses[0][1] == 0:
            uses = consumers.get(uses[0][0].output[0], [])
        if len(uses) != 1:
            raise ValueError(f"{path.name}: constant {name!r} has {len(uses)} consumers; no role for it")
        node, k = uses[0]
        return node.op_type, k, node

    kept = []
    added = []
    for node in graph.node:
        value = node.attribute[0].t if node.op_type == "ConstantOfShape" and node.attribute else None
        if value is None or value.data_type != onnx.TensorProto.FLOAT or node.input[0] not in shapes:
            kept.append(node)
            continue
        shape = tuple(int(d) for d in shapes[node.input[0]])
        op, k, user = role(node.output[0])
        if (op, k) in _WEIGHTS:
            trans_b = any(a.name == "transB" and a.i for a in user.attribute)
            fan_in = math.prod(shape[1:]) if op == "Conv" or trans_b else shape[0]
            data = rng.standard_normal(shape, dtype=np.float32) * np.float32(math.sqrt(2.0 / fan_in))
        elif (op, k) in _GAINS:
            data = rng.random(shape, dtype=np.float32) + np.float32(0.5)
        else:
            data = rng.standard_normal(shape, dtype=np.float32) * np.float32(0.1)
        added.append(numpy_helper.from_array(data, node.output[0]))
    del graph.node[:]
    graph.node.extend(kept)
    # IR version 3 lists every initializer among the graph inputs too: keep the two in step.
    used = {name for node in graph.node for name in node.input} | {o.name for o in graph.output}
    live = [i for i in graph.initializer if i.name in used]
    inputs = [i for i in graph.input if i.name in used]
    del graph.initializer[:], graph.input[:]
    graph.initializer.extend(live + added)
    graph.input.extend(inputs)
    if model.ir_version < 4:
        graph.input.extend(onnx.helper.make_tensor_value_info(t.name, t.data_type, t.dims) for t in added)
    _calibrate_classifier(model, path)
    return model


def _calibrate_classifier(model: Any, path: Path) -> None:
    """Scale the Gemm before a closing Softmax so its logits have a standard deviation of 2.

    BatchNormalization with drawn statistics does not normalize, so activations grow from block to
    block (10^5 at resnet50's end) and the Softmax would saturate to one-hot; LRN shrinks them
    instead (inception_v1's logits vary by 1e-3), leaving it near uniform. Either hides differences
    before it. The scale is measured with onnxruntime on the input of :func:`light_model_input`.
    """
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper

    graph = model.graph
    last = graph.node[-1]
    producer = next((n for n in graph.node if last.input and last.input[0] in n.output), None)
    if last.op_type != "Softmax" or producer is None or producer.op_type != "Gemm":
        return
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    del probe.graph.output[:]
    probe.graph.output.append(onnx.helper.make_empty_tensor_value_info(last.input[0]))
    name, x = light_model_input(path)
    (logits,) = ort.InferenceSession(probe.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {name: x})
    scale = 2.0 / float(np.std(logits))
    inits = {t.name: t for t in graph.initializer}
    producers = {o: n for n in graph.node for o in n.output}
    for name in producer.input[1:]:
        while name in producers and producers[name].op_type == "Reshape":
            name = producers[name].input[0]
        tensor = inits[name]
        tensor.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(tensor) * np.float32(scale), name))
