"""``onnx.reference.ReferenceEvaluator`` over :class:`onnxcore.Session`.

onnx's evaluator takes a model, a graph (with its operator sets), a function or a single node, runs it node by node
and, with ``verbose``, prints each node as it runs (``verbose`` 2 and more) and a summary of each value (3: its
dtype, shape and range; 4: its first values). Here the session evaluates (no second evaluator): a model or a graph
is compiled once; a node or a function, whose inputs declare no type, is wrapped in a model typed from each run's
feeds. The printout is made from the run's values (``Session.run(..., intermediates=True)``, every node evaluated
as written) in the node order onnx's evaluator follows, the graph's.

onnx's evaluator does not validate a model first: the session here runs leniently, as the onnxruntime façade does
(:func:`onnxcore.runtime.ort_errors.runs_anyway`; a node of a custom domain is a warning finding, W-CUSTOM-DOMAIN),
and does not warn about it.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from onnxcore.build.helper import (
    make_attribute,
    make_graph,
    make_model,
    make_opsetid,
    make_tensor_value_info,
    np_dtype_to_tensor_dtype,
)
from onnxcore.errors import OnnxCoreWarning
from onnxcore.io import load
from onnxcore.kernels.registry import KernelSet
from onnxcore.onnx.defs import onnx_opset_version
from onnxcore.onnx.reference.op_run import OpRun
from onnxcore.proto.bridge import is_onnx_message
from onnxcore.proto.message import Message
from onnxcore.proto.messages import FunctionProto, GraphProto, ModelProto, NodeProto, ValueInfoProto
from onnxcore.runtime.ort_errors import runs_anyway
from onnxcore.runtime.session import Session
from onnxcore.types.tensors import to_array

__all__ = ["ReferenceEvaluator"]


def _as_proto(proto: Any) -> Any:
    if isinstance(proto, str | os.PathLike):
        return load(os.fspath(proto))
    if isinstance(proto, bytes | bytearray):
        return load(bytes(proto))
    if is_onnx_message(proto):
        # onnx's message: converted by its octets to ours, of the same class name.
        kinds: dict[str, type[Message]] = {
            "ModelProto": ModelProto,
            "GraphProto": GraphProto,
            "FunctionProto": FunctionProto,
            "NodeProto": NodeProto,
        }
        cls = kinds.get(type(proto).__name__)
        if cls is not None:
            return cls.FromString(proto.SerializeToString())
    return proto


def _kernels(new_ops: Sequence[type[OpRun]] | None) -> KernelSet | None:
    if not new_ops:
        return None
    kernels = KernelSet()
    seen: set[tuple[str, str]] = set()
    for cls in new_ops:
        if not hasattr(cls, "op_domain"):
            raise AttributeError(f"Class {cls} must define attribute 'op_domain'.")
        if not (isinstance(cls, type) and issubclass(cls, OpRun)):
            raise TypeError(f"Class {cls} must inherit from OpRun (in new_ops).")
        key = (cls.op_domain, cls.__name__)
        if key in seen:  # as onnx: the first implementation given is used
            continue
        seen.add(key)
        kernels.kernel(cls.__name__, 1, domain=cls.op_domain)(_kernel_of(cls))
    return kernels


def _kernel_of(cls: type[OpRun]) -> Any:
    def run_op(*inputs: Any, **attributes: Any) -> Any:
        op = cls()
        for name, value in attributes.items():  # onnx's OpRun holds its node's attributes as its own
            setattr(op, name, value)
        out = op.run(*inputs, **attributes)
        return out[0] if len(out) == 1 else out

    run_op.__name__ = run_op.__qualname__ = f"{cls.__name__}._run"
    return run_op


class ReferenceEvaluator:
    """Evaluate a model, a graph, a function or a node as ``onnx.reference.ReferenceEvaluator`` does.

    Args:
        proto: A ``ModelProto`` (onnxcore's or onnx's), a model's path or octets, a ``GraphProto`` (give
            ``opsets``), a ``FunctionProto`` or a ``NodeProto``.
        opsets: The operator sets of a graph (``{domain: version}``).
        functions: Model-local functions for a graph (``FunctionProto``).
        verbose: 0 prints nothing; 2 each node as it runs; 3 also each value's dtype, shape and range; 4 its first
            values instead of the range.
        new_ops: ``OpRun`` subclasses: the operators of custom domains (type: the class's name).
        **kwargs: onnx's other options (``check_shape_annotations``), accepted and not used.

    Raises:
        TypeError: an object of another kind, or a graph without ``opsets``.
        ValueError: ``opsets`` or ``functions`` given with a model.
    """

    def __init__(
        self,
        proto: Any,
        opsets: Mapping[str, int] | None = None,
        functions: Sequence[FunctionProto] | None = None,
        verbose: int = 0,
        new_ops: Sequence[type[OpRun]] | None = None,
        **kwargs: Any,
    ) -> None:
        proto = _as_proto(proto)
        self.proto_ = proto
        self.verbose = verbose
        self._kernels = _kernels(new_ops)
        self._functions = list(functions or ())
        self._session: Session | None = None
        self._sessions: dict[tuple[Any, ...], Session] = {}
        if isinstance(proto, ModelProto):
            if opsets is not None:
                raise ValueError("opsets must be None if proto is ModelProto.")
            if functions is not None:
                raise ValueError("functions must be None if proto is ModelProto.")
            self.opsets_ = {o.domain: int(o.version) for o in proto.opset_import}
            self._graph: GraphProto | None = proto.graph
            self._session = self._make_session(proto)
        elif isinstance(proto, GraphProto):
            if not isinstance(opsets, Mapping):
                raise TypeError("opsets must be a dictionary if proto is GraphProto.")
            self.opsets_ = dict(opsets)
            self._graph = proto
            self._session = self._make_session(self._model_of(proto))
        elif isinstance(proto, FunctionProto):
            if opsets is not None:
                raise ValueError("opsets must be None if proto is FunctionProto.")
            self.opsets_ = {o.domain: int(o.version) for o in proto.opset_import}
            self._graph = None
        elif isinstance(proto, NodeProto):
            self.opsets_ = {proto.domain: 1 if proto.domain else onnx_opset_version()}
            self._graph = None
        else:
            raise TypeError(f"Unexpected type {type(proto)} for proto.")
        if self._graph is not None:
            self.input_names_ = [i.name for i in self._graph.input]
            self.output_names_ = [o.name for o in self._graph.output]
            self.input_types_: list[Any] | None = [i.type for i in self._graph.input]
            self.output_types_: list[Any] | None = [o.type for o in self._graph.output]
        else:
            self.input_names_ = list(proto.input)
            self.output_names_ = list(proto.output)
            self.input_types_ = self.output_types_ = None

    # -- onnx's properties ------------------------------------------------------------------------------------------

    @property
    def input_names(self) -> list[str]:
        """The inputs' names."""
        return self.input_names_

    @property
    def output_names(self) -> list[str]:
        """The outputs' names."""
        return self.output_names_

    @property
    def input_types(self) -> list[Any] | None:
        """The inputs' declared types (a model's or a graph's), else None."""
        return self.input_types_

    @property
    def output_types(self) -> list[Any] | None:
        """The outputs' declared types (a model's or a graph's), else None."""
        return self.output_types_

    @property
    def opsets(self) -> dict[str, int]:
        """The operator sets: ``{domain: version}``."""
        return self.opsets_

    def __str__(self) -> str:
        return f"{type(self).__name__}({', '.join(self.input_names)}) -> {', '.join(self.output_names)}"

    # -- building the session ---------------------------------------------------------------------------------------

    def _make_session(self, model: ModelProto) -> Session:
        with warnings.catch_warnings():
            # onnx's evaluator does not validate; what the lenient session tolerates is not news to its user.
            warnings.simplefilter("ignore", OnnxCoreWarning)
            return Session(model, custom_ops=self._kernels, tolerate=runs_anyway)

    def _model_of(self, graph: GraphProto, functions: Sequence[FunctionProto] = ()) -> ModelProto:
        imports = [make_opsetid(d, v) for d, v in self.opsets_.items()]
        return make_model(
            graph,
            opset_imports=imports,
            functions=[*self._functions, *functions],
        )

    def _session_for(self, feeds: Mapping[str, Any], attributes: Mapping[str, Any] | None) -> Session:
        if self._session is not None:
            return self._session
        # A node or a function declares no types: a model typed from the feeds (their element types and ranks).
        arrays = {n: np.asarray(feeds[n]) for n in self.input_names_ if n and n in feeds}
        key = tuple((n, a.dtype.str, a.ndim) for n, a in arrays.items()) + tuple(sorted((attributes or {}).items()))
        session = self._sessions.get(key)
        if session is None:
            inputs = [
                make_tensor_value_info(n, np_dtype_to_tensor_dtype(a.dtype), [None] * a.ndim) for n, a in arrays.items()
            ]
            outputs = [ValueInfoProto(name=n) for n in self.output_names_ if n]
            proto = self.proto_
            if isinstance(proto, NodeProto):
                graph = make_graph([proto], "node", inputs, outputs)
                session = self._make_session(self._model_of(graph))
            else:
                assert isinstance(proto, FunctionProto)
                call = NodeProto(
                    op_type=proto.name, domain=proto.domain, input=list(proto.input), output=list(proto.output)
                )
                if attributes:
                    call.attribute.extend(make_attribute(k, v) for k, v in attributes.items())
                graph = make_graph([call], "function", inputs, outputs)
                if proto.domain not in self.opsets_:
                    self.opsets_ = {**self.opsets_, proto.domain: 1}
                session = self._make_session(self._model_of(graph, [proto]))
            self._sessions[key] = session
        return session

    # -- running ----------------------------------------------------------------------------------------------------

    def run(
        self,
        output_names: Sequence[str] | None,
        feed_inputs: Mapping[str, Any],
        attributes: Mapping[str, Any] | None = None,
        intermediate: bool = False,
        **kwargs: Any,
    ) -> Any:
        """Evaluate.

        Args:
            output_names: The outputs to return, in this order; None for all.
            feed_inputs: ``{input name: value}``.
            attributes: The attributes' values when the evaluator runs a function.
            intermediate: Return every value (initializers, inputs and every node's outputs) by name, in a dict.
            **kwargs: onnx's other options (``check_shape_annotations``), accepted and not used.

        Returns:
            The outputs' values as a list, or with ``intermediate=True`` a dict of every value.

        Raises:
            InputError, EvaluationError: as :meth:`onnxcore.Session.run`.
        """
        if isinstance(self.proto_, FunctionProto) and attributes is None:
            raise TypeError("a function's evaluator needs its attributes")
        session = self._session_for(feed_inputs, attributes)
        names = list(self.output_names_ if output_names is None else output_names)
        traced = self.verbose > 1 or intermediate
        if not traced:
            return session.run(names, dict(feed_inputs))
        outs, values = session.run(names, dict(feed_inputs), intermediates=True)
        inits = self._initializers()
        if self.verbose > 2:
            for name, value in inits.items():
                self._log(" +C %s: %s", name, value)
            for name, value in feed_inputs.items():
                self._log(" +I %s: %s", name, value)
        for node in self._nodes():
            if self.verbose > 1:
                self._log("%s(%s) -> %s", node.op_type, list(node.input), list(node.output))
            if self.verbose > 2:
                for name in node.output:
                    if name in values:
                        self._log(" + %s: %s", name, values[name])
        if intermediate:
            return {**inits, **feed_inputs, **values}
        return list(outs)

    def _nodes(self) -> list[NodeProto]:
        if self._graph is not None:
            return list(self._graph.node)
        if isinstance(self.proto_, NodeProto):
            return [self.proto_]
        return list(self.proto_.node)

    def _initializers(self) -> dict[str, Any]:
        if self._graph is None:
            return {}
        return {t.name: to_array(t) for t in self._graph.initializer}

    # -- the printout -----------------------------------------------------------------------------------------------

    def _summary(self, value: Any) -> Any:
        # onnx's summary of a value: a tensor's dtype and shape, then its range (verbose 3) or first values (4).
        if isinstance(value, str | int | float):
            return value
        if isinstance(value, np.ndarray):
            if self.verbose < 4:
                if value.size == 0:
                    return f"{value.dtype}:{value.shape} (empty)"
                return f"{value.dtype}:{value.shape} in [{value.min()}, {value.max()}]"
            elements = value.ravel().tolist()
            if len(elements) > 5:
                return f"{value.dtype}:{value.shape}:{','.join(map(str, elements[:5]))}..."
            return f"{value.dtype}:{value.shape}:{elements}"
        if isinstance(value, list):
            return ", ".join(map(str, map(self._summary, value)))
        return value

    def _log(self, pattern: str, *args: Any) -> None:
        print(pattern % tuple(self._summary(a) for a in args))  # the verbose printout is the point
