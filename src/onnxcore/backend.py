"""onnx's backend protocol (``onnx.backend.base.Backend``) over onnxcore: ``prepare``, ``run_model``, ``run_node``,
``supports_device``, and :class:`BackendRep` with ``run``.

onnx's own backend test runner takes this module (or :class:`OnnxCoreBackend`) as its backend::

    import onnx.backend.test
    import onnxcore.backend
    globals().update(onnx.backend.test.BackendTest(onnxcore.backend, __name__).test_cases)

It also answers as ``onnxruntime.backend`` does (``prepare``, ``run``, ``supports_device``, ``is_compatible``):
``prepare`` takes a path, the model's octets, a ``ModelProto``, an :class:`onnxcore.InferenceSession` or a
:class:`BackendRep`, and ``device=None`` is the CPU.

onnxcore does not import onnx: a model or node given as onnx's message is read through its octets
(``SerializeToString()``) into onnxcore's own. A prepared model is an :class:`onnxcore.InferenceSession`, lenient as
that façade is (error findings that leave evaluation possible warn, docs/onnxruntime.md); ``strict=True`` refuses
them as :class:`onnxcore.Session` does. Only the CPU device exists.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from onnxcore.build import helper
from onnxcore.defs.binding import domain_versions
from onnxcore.errors import InputError, MessageTypeError, ValidationWarning
from onnxcore.io import decode
from onnxcore.proto import ModelProto, NodeProto, TypeProto, ValueInfoProto
from onnxcore.runtime import InferenceSession, SessionOptions
from onnxcore.runtime.ort_options import STRICT_CONFIG_KEY
from onnxcore.types import ElementType

__all__ = [
    "BackendRep",
    "OnnxCoreBackend",
    "is_compatible",
    "prepare",
    "run",
    "run_model",
    "run_node",
    "supports_device",
]


class BackendRep:
    """A prepared model (onnx's ``BackendRep``): :meth:`run` evaluates it on the given inputs.

    Attributes:
        session: The :class:`onnxcore.InferenceSession` evaluating the model.
    """

    def __init__(self, session: InferenceSession) -> None:
        self.session = session
        self._input_names = [i.name for i in session.get_inputs()]

    def run(self, inputs: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Evaluate the model.

        Args:
            inputs: One value per input the model must be fed, in the order of its graph inputs (a list or tuple;
                a single array for a model of one input), or a dict of input name to value.
            **kwargs: Accepted, without effect (onnx's signature).

        Returns:
            The graph outputs, in order.

        Raises:
            InputError: more inputs than the model has.
            InvalidArgument, Fail: as :meth:`onnxcore.InferenceSession.run`.
        """
        if isinstance(inputs, Mapping):
            feeds = dict(inputs)
        else:
            values = [inputs] if isinstance(inputs, np.ndarray) else list(inputs)
            if len(values) > len(self._input_names):
                raise InputError(
                    f"BackendRep.run: {len(values)} inputs given, the model takes {len(self._input_names)}: "
                    f"{self._input_names}"
                )
            # A None is an absent optional input: left out, as onnx's runner means it.
            feeds = {n: v for n, v in zip(self._input_names, values) if v is not None}
        return tuple(self.session.run(None, feeds))


def _model(model: Any) -> ModelProto | str | os.PathLike[str]:
    if isinstance(model, ModelProto | str | os.PathLike):
        return model  # a path is loaded by the session (external data resolved against its directory)
    if isinstance(model, bytes | bytearray | memoryview):
        return decode(ModelProto, bytes(model))
    serialize = getattr(model, "SerializeToString", None)
    if callable(serialize):  # onnx's ModelProto (duck-typed: onnxcore does not import onnx)
        return decode(ModelProto, bytes(serialize()))
    raise MessageTypeError(f"expected a ModelProto (onnx's or onnxcore's) or its octets, got {type(model).__name__}")


def _device(device: str | None) -> None:
    if device is not None and not supports_device(device):
        raise InputError(f"device {device!r} is not available in onnxcore, which evaluates on the CPU only ('CPU')")


def supports_device(device: str) -> bool:
    """Whether onnxcore evaluates on ``device`` (``'CPU'``, or ``'CPU:0'``): only the CPU."""
    return str(device).split(":")[0].upper() == "CPU"


def is_compatible(model: Any, device: str | None = "CPU", **kwargs: Any) -> bool:
    """Whether the model may be prepared for ``device`` (onnx's protocol): any model, on the CPU."""
    return device is None or supports_device(device)


def prepare(model: Any, device: str | None = "CPU", *, strict: bool = False, **kwargs: Any) -> BackendRep:
    """Prepare a model for repeated runs.

    Args:
        model: onnx's ``ModelProto``, onnxcore's, a model's octets, a path to a model file, an
            :class:`onnxcore.InferenceSession` or a :class:`BackendRep` (returned as it is).
        device: ``'CPU'`` (the only device; None: the CPU).
        strict: Refuse a model for any error finding, as :class:`onnxcore.Session` does (the default runs what
            onnxruntime runs, with a warning).
        **kwargs: Accepted, without effect (onnx's runner passes test options such as ``rtol``).

    Raises:
        InputError: a device other than the CPU.
        InvalidGraph, InvalidProtobuf, NotImplemented, Fail: the model cannot be evaluated
            (:class:`onnxcore.InferenceSession`'s refusals).
    """
    _device(device)
    if isinstance(model, BackendRep):
        return model
    if isinstance(model, InferenceSession):
        return BackendRep(model)
    options = SessionOptions()
    options.intra_op_num_threads = 1
    if strict:
        options.add_session_config_entry(STRICT_CONFIG_KEY, "1")
    return BackendRep(InferenceSession(_model(model), options))


def run_model(model: Any, inputs: Any, device: str | None = "CPU", **kwargs: Any) -> tuple[Any, ...]:
    """Prepare ``model`` and run it once on ``inputs`` (see :func:`prepare` and :meth:`BackendRep.run`)."""
    return prepare(model, device, **kwargs).run(inputs)


run = run_model
"""onnxruntime.backend's name for :func:`run_model`."""


def _newest(domain: str) -> int:
    """The newest operator set version of ``domain`` defined here (a lone node runs at it unless told)."""
    versions = domain_versions(domain)
    if versions is None:
        raise InputError(f"run_node: domain {domain!r} is not one onnxcore defines; give opset_version=")
    return versions[1]


def _value_info(name: str, value: Any) -> ValueInfoProto:
    """A graph input declaring the type (and shape) of ``value``: a tensor, or a list of tensors (a sequence)."""
    if isinstance(value, list):
        if not value:
            raise InputError(f"run_node: input {name!r} is an empty list; its element type cannot be told")
        inner = _type(np.asarray(value[0]))
        return helper.make_value_info(name, helper.make_sequence_type_proto(inner))
    return helper.make_value_info(name, _type(np.asarray(value)))


def _type(arr: np.ndarray) -> TypeProto:
    elem = int(ElementType.STRING) if arr.dtype.kind in "OUS" else int(ElementType.from_dtype(arr.dtype))
    return helper.make_tensor_type_proto(elem, list(arr.shape))


def run_node(
    node: Any,
    inputs: Any,
    device: str | None = "CPU",
    outputs_info: Sequence[tuple[Any, tuple[int, ...]]] | None = None,
    **kwargs: Any,
) -> tuple[Any, ...]:
    """Run one node on ``inputs`` (onnx's protocol): the node is wrapped in a model whose inputs declare the types
    and shapes of ``inputs``, at ``opset_version`` (keyword) of its domain, or that domain's newest version.

    Args:
        node: onnx's ``NodeProto`` or onnxcore's.
        inputs: One value per node input (a list or tuple), or a dict of input name to value.
        device: ``'CPU'``.
        outputs_info: Accepted, without effect (the outputs' types are inferred).
        **kwargs: ``opset_version``; others accepted without effect.

    Returns:
        The node's outputs, in order.
    """
    _device(device)
    if isinstance(node, NodeProto):
        ours = node
    else:
        serialize = getattr(node, "SerializeToString", None)
        if not callable(serialize):
            raise MessageTypeError(f"run_node: expected a NodeProto (onnx's or onnxcore's), got {type(node).__name__}")
        ours = decode(NodeProto, bytes(serialize()))
    names = [n for n in ours.input if n]
    if isinstance(inputs, Mapping):
        feeds = dict(inputs)
    else:
        feeds = dict(zip(names, [inputs] if isinstance(inputs, np.ndarray) else list(inputs)))
    graph = helper.make_graph(
        [ours],
        "run_node",
        [_value_info(n, v) for n, v in feeds.items()],
        [helper.make_empty_tensor_value_info(o) for o in ours.output if o],
    )
    version = int(kwargs.get("opset_version") or _newest(ours.domain or ""))
    opsets = [helper.make_opsetid(ours.domain or "", version)]
    if ours.domain:
        opsets.append(helper.make_opsetid("", _newest("")))
    model = helper.make_model(graph, opset_imports=opsets)
    with warnings.catch_warnings():
        # The outputs are declared without types on purpose (their types are the node's to infer): not news.
        warnings.simplefilter("ignore", ValidationWarning)
        rep = prepare(model, device)
    return rep.run(feeds)


class OnnxCoreBackend:
    """This module's functions as onnx's ``Backend`` class methods, for code that takes a class."""

    prepare = staticmethod(prepare)
    run_model = staticmethod(run_model)
    run_node = staticmethod(run_node)
    supports_device = staticmethod(supports_device)
    is_compatible = staticmethod(is_compatible)
