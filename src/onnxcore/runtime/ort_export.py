"""``SessionOptions.optimized_model_filepath``: the model a session runs, written as a standard ONNX model.

The model is rewritten by the model pipeline of ``onnxcore.optimize`` (:func:`onnxcore.runtime.rewrite_model.
rewrite_model`: constant folding within the file's size, no-ops, common subexpressions, duplicate initializers, dead
nodes and unused initializers, in every graph, subgraph and function body), standard operators only: plan-time
fusions are steps of the evaluator, not operators of ONNX, and are never written. Folding is the plan's (each node
evaluated by its own kernel), so the written model computes what the session computes. The written model is
validated before it is saved; at ``ORT_DISABLE_ALL`` the model is written as loaded (onnxruntime writes its
unoptimised model then).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection

from onnxcore.errors import ValidationError
from onnxcore.io import save
from onnxcore.proto import ModelProto
from onnxcore.runtime.optimize.model_passes import MODEL_REWRITE_NAMES
from onnxcore.runtime.rewrite_model import rewrite_model
from onnxcore.validate import Finding, check

__all__ = ["optimized_model", "write_optimized_model"]


def optimized_model(
    model: ModelProto,
    tolerate: Callable[[Finding], bool] | None = None,
    *,
    optimize: bool = True,
    disabled: Collection[str] = (),
    base_dir: str | None = None,
) -> ModelProto:
    """``model`` through the model rewrites (module docstring).

    Args:
        model: The model as loaded.
        tolerate: Error findings the session ran the model despite (they stay in the written model).
        optimize: False: every node as written (the session evaluates them so at ``ORT_DISABLE_ALL``).
        disabled: Names of rewrites the session leaves out; those the model pipeline has are left out here too.
        base_dir: Where external data of attribute tensors is resolved.

    Raises:
        ValidationError: the result does not conform (a defect of a rewrite; nothing is written).
    """
    if not optimize:
        return model
    off = set(disabled) & set(MODEL_REWRITE_NAMES)
    out = rewrite_model(model, disabled=off, base_dir=base_dir).model
    refused = [f for f in check(out, base_dir=base_dir).errors if tolerate is None or not tolerate(f)]
    if refused:
        raise ValidationError(f"the optimised model does not conform: {refused[0]}")
    return out


def write_optimized_model(
    model: ModelProto,
    path: str | os.PathLike[str],
    tolerate: Callable[[Finding], bool] | None = None,
    *,
    optimize: bool = True,
    disabled: Collection[str] = (),
    base_dir: str | None = None,
) -> None:
    """Write :func:`optimized_model` of ``model`` to ``path`` (atomically).

    Raises:
        ValidationError: as :func:`optimized_model`.
        OSError: the file cannot be written.
    """
    save(optimized_model(model, tolerate, optimize=optimize, disabled=disabled, base_dir=base_dir), path)
