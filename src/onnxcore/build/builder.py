"""An opset-aware graph builder in the spirit of onnxscript: ``y = b.op.Relu(b.op.Conv(x, w, strides=[2, 2]))``.

A :class:`GraphBuilder` imports operator set versions (``GraphBuilder(opset=18)``, or ``opsets={"": 18,
"ai.onnx.ml": 3}``); ``b.op.Conv`` is ``Conv`` of ``ai.onnx`` as that version defines it (Clause 14.4, read from
:mod:`onnxcore.defs`), ``b.ml.X`` or ``b.op_in("ai.onnx.ml").X`` an operator of another domain. Each call is
checked as it is made (the operator exists at that version, its arity, its attributes and their types, the
types of its inputs) and a :class:`BuildError` is raised at the caller's line: the traceback ends at the call
that made the mistake.

Every call returns :class:`Value` objects whose type and shape are inferred as the graph grows: each new node
is inferred on its own, in a small model holding the node, its inputs declared with their known types and
shapes (small constants as initializers) and the nodes computing its small integer inputs (``Shape``,
``Concat``, ... chains, so that a ``Reshape`` to a computed shape is known). That is the public inference
(:func:`onnxcore.infer.infer_both`) on a model of a few nodes: building ``N`` nodes costs ``O(N)``. The values, the
nodes and that inference are :mod:`onnxcore.build.builder_nodes`; the checks of each call
:mod:`onnxcore.build.builder_rules`.

Names are generated (nodes ``Conv_0``, values ``v3``, constants ``c0``) unless given. Constants (numpy
arrays, numpy or Python scalars, lists given as inputs) become initializers, or ``Constant`` nodes with
``constants="node"``; a Python scalar takes the element type of the other inputs of its type variable.
Subgraphs (``If``, ``Loop``, ``Scan``) are built from Python functions receiving a builder of the subgraph
(and the body's inputs); they see the values of the enclosing graphs.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from onnxcore.build.builder_nodes import BuilderNode, SubgraphAttribute, Value, infer_node
from onnxcore.build.builder_rules import (
    BuildError,
    Extent,
    Fail,
    Shared,
    as_array,
    attributes,
    check_input_types,
    check_opsets,
    constant_type,
    element_type_of,
    extent,
    output_count,
    unknown_operator,
)
from onnxcore.build.ir_version import least_ir_version
from onnxcore.defs import OpSchema, all_schemas, canonical_domain
from onnxcore.graph.bound import definition_binding
from onnxcore.proto.messages import (
    AttributeProto,
    GraphProto,
    ModelProto,
    OperatorSetIdProto,
    TypeProto,
)
from onnxcore.types import ElementType, from_array
from onnxcore.types.typestr import parse_type_string, type_string

__all__ = ["BuildError", "GraphBuilder", "OpFunction", "Opset", "Value"]

A = AttributeProto.AttributeType

# Subgraph attributes built from a function with inputs the builder declares: (domain, op, attribute).
_BODIES = {("", "Loop", "body"), ("", "Scan", "body"), ("", "SequenceMap", "body")}


def _at_caller(e: Fail) -> BuildError:
    """A :class:`BuildError` for ``e`` whose traceback ends at the first frame outside this module."""
    err = BuildError(str(e))
    frame = sys._getframe(1)
    while frame.f_back is not None and frame.f_globals.get("__name__") == __name__:
        frame = frame.f_back
    return err.with_traceback(types.TracebackType(None, frame, frame.f_lasti, frame.f_lineno))


class GraphBuilder:
    """Builds a graph node by node, checking each call against the operator definitions of its opsets.

    Example::

        b = GraphBuilder(opset=18)
        x = b.input("x", "float", ["N", 3, 224, 224])
        y = b.op.Relu(b.op.Conv(x, w, strides=[2, 2]))   # w: a numpy array, stored as an initializer
        b.output(y, "y")
        model = b.model()

    Args:
        opset: The version of the default domain (``ai.onnx``).
        opsets: Domain -> version, for several domains (``{"": 18, "ai.onnx.ml": 3}``). Operators of a domain
            onnxcore has no definitions for are not checked (give their output count with ``outputs=``).
        name: The graph's name.
        constants: ``"initializer"`` (default) stores the constants given as inputs as initializers,
            ``"node"`` as ``Constant`` nodes.

    Raises:
        BuildError: No opset, a version the domain does not have, or an unknown ``constants``.

    Attributes:
        op: The operators of ``ai.onnx`` at the imported version (``b.op.Conv(...)``).
        ml: The operators of ``ai.onnx.ml``.
    """

    def __init__(
        self,
        opset: int | None = None,
        *,
        opsets: Mapping[str, int] | None = None,
        name: str = "main",
        constants: str = "initializer",
    ) -> None:
        __tracebackhide__ = True
        try:
            if constants not in ("initializer", "node"):
                raise Fail(f"constants must be 'initializer' or 'node', got {constants!r}")
            shared = Shared(check_opsets(opset, opsets), constants)
            if constants == "node" and "" not in shared.opsets:
                raise Fail("constants='node' makes Constant nodes: import a version of ai.onnx")
        except Fail as e:
            raise _at_caller(e) from None
        self._setup(shared, None, name)

    def _setup(self, shared: Shared, parent: GraphBuilder | None, name: str) -> None:
        self._shared = shared
        self._parent = parent
        self._name = name
        self._nodes: list[BuilderNode] = []
        self._inputs: list[Value] = []
        self._initializers: list[Value] = []
        self._outputs: list[Value] = []
        self._captures: dict[int, Value] = {}
        # An array given as an input several times is one constant: id of the array -> (the array, its value).
        self._arrays: dict[int, tuple[np.ndarray, Value]] = {}
        self.op = Opset(self, "")
        self.ml = Opset(self, "ai.onnx.ml")

    def _child(self, name: str) -> GraphBuilder:
        child = GraphBuilder.__new__(GraphBuilder)
        child._setup(self._shared, self, name)
        return child

    @property
    def opsets(self) -> dict[str, int]:
        """The imported operator set versions, by domain (``""`` is ``ai.onnx``)."""
        return dict(self._shared.opsets)

    @property
    def ir_version(self) -> int:
        """The IR version the model will state: the least the imported opsets need."""
        return self._shared.ir_version

    def op_in(self, domain: str) -> Opset:
        """The operators of ``domain`` at its imported version (``b.op_in("ai.onnx.ml").Scaler(x)``)."""
        return Opset(self, canonical_domain(domain))

    # ------------------------------------------------------------------------------------------ graph values

    def input(self, name: str, dtype: Any, shape: Sequence[Extent] | None = None) -> Value:
        """Declare a graph input.

        Args:
            name: Its name.
            dtype: The element type (an :class:`ElementType`, ``TensorProto.DataType``, ``"float"``, a numpy
                dtype), or a type string for another type (``"seq(tensor(float))"``).
            shape: Its extents (int, a dimension variable as str, None for unknown); None for unknown rank.

        Raises:
            BuildError: A name already used, or an unknown element type.
        """
        __tracebackhide__ = True
        try:
            if isinstance(dtype, str) and "(" in dtype:
                type_str = type_string(self._parse_type(dtype))
            else:
                type_str = f"tensor({element_type_of(dtype).type_name})"
            if shape is not None and (isinstance(shape, str | bytes | np.ndarray) or not isinstance(shape, Iterable)):
                raise Fail(f"a shape is a list of extents or None, got {type(shape).__name__}")
            dims = None if shape is None else tuple(extent(d) for d in shape)
            self._shared.claim(name, self._shared.values, "value")
        except Fail as e:
            raise _at_caller(e) from None
        v = Value(self, name, True, type_str, dims)
        self._inputs.append(v)
        return v

    def initializer(self, name: str, array: Any) -> Value:
        """Add an initializer (a constant of the graph) holding ``array`` (numpy, or a ``TensorProto``).

        Raises:
            BuildError: A name already used, or an array of a dtype with no element type.
        """
        __tracebackhide__ = True
        try:
            self._shared.claim(name, self._shared.values, "value")
            return self._constant_value(name, True, as_array(array, None))
        except Fail as e:
            raise _at_caller(e) from None

    def constant(self, value: Any, *, dtype: Any = None, name: str | None = None) -> Value:
        """A constant (an initializer, or a ``Constant`` node with ``constants="node"``).

        Args:
            value: A numpy array or scalar, a Python number, or a list of them.
            dtype: The element type of a Python value (default: int64, float32 or bool).
            name: Its name (generated when None).
        """
        __tracebackhide__ = True
        try:
            return self._constant(as_array(value, None if dtype is None else element_type_of(dtype)), name)
        except Fail as e:
            raise _at_caller(e) from None

    def output(self, value: Value, name: str | None = None, *, dtype: Any = None, shape: Any = None) -> Value:
        """Make ``value`` a graph output, named ``name`` (the value is renamed, or an ``Identity`` added).

        Args:
            value: A value of this graph (or, in a subgraph, of an enclosing one).
            name: The output's name; the value's own when None.
            dtype: The element type to declare when inference could not tell it.
            shape: The shape to declare when inference could not tell it.

        Returns:
            The value that is the output.

        Raises:
            BuildError: A value of another graph, a name already used, or an output whose type is unknown.
        """
        __tracebackhide__ = True
        mark = self._mark()
        try:
            return self._output(value, name, dtype, shape)
        except Fail as e:
            self._rollback(mark)
            raise _at_caller(e) from None

    def graph(self) -> GraphProto:
        """The graph built so far (a new ``GraphProto`` at each call)."""
        return self._graph_proto()

    def model(self, *, value_info: bool = False, **fields: Any) -> ModelProto:
        """The model: this graph, its opset imports and the least IR version they need.

        Args:
            value_info: State the inferred type and shape of every intermediate value (``graph.value_info``).
            fields: Other ``ModelProto`` fields (``producer_name``, ``doc_string``, ``ir_version``, ...).

        Raises:
            BuildError: Called on the builder of a subgraph, or a graph without outputs.
        """
        __tracebackhide__ = True
        try:
            if self._parent is not None:
                raise Fail("model() is for the top-level builder, not the builder of a subgraph")
            if not self._outputs:
                raise Fail("the graph has no outputs: declare them with output(value, name)")
        except Fail as e:
            raise _at_caller(e) from None
        g = self._graph_proto(value_info=value_info)
        opsets = [OperatorSetIdProto(domain=d, version=v) for d, v in self._shared.opsets.items()]
        fields.setdefault("producer_name", "onnxcore")
        model = ModelProto(opset_import=opsets, graph=g, **fields)
        if "ir_version" not in fields:
            model.ir_version = least_ir_version(model)  # Table 12 and the imports: the one rule (build/ir_version.py)
        return model

    # ------------------------------------------------------------------------------------------ internals

    def _parse_type(self, text: str) -> TypeProto:
        try:
            return parse_type_string(text.replace(" ", ""))
        except ValueError as e:
            raise Fail(str(e)) from None

    def _graph_proto(self, *, value_info: bool = False) -> GraphProto:
        declared = {id(v) for v in self._inputs + self._outputs + self._initializers}
        infos = []
        if value_info:
            infos = [
                o.value_info() for n in self._nodes for o in n.outputs if id(o) not in declared and o.type is not None
            ]
        return GraphProto(
            name=self._name,
            node=[n.proto() for n in self._nodes],
            input=[v.value_info() for v in self._inputs],
            initializer=[v.tensor() for v in self._initializers],
            output=[v.value_info() for v in self._outputs],
            value_info=infos,
        )

    def _constant_value(self, name: str, named: bool, array: np.ndarray) -> Value:
        try:
            et = ElementType.from_dtype(array.dtype)
        except ValueError as e:
            raise Fail(f"constant {name!r}: {e}") from None
        v = Value(self, name, named, f"tensor({et.type_name})", array.shape)
        v.const = array
        self._initializers.append(v)
        return v

    def _constant(self, array: np.ndarray, name: str | None) -> Value:
        shared = self._shared
        if name is not None:
            shared.claim(name, shared.values, "value")
        else:
            name = shared.fresh("c", shared.values)
        if shared.constants == "initializer":
            return self._constant_value(name, True, array)
        try:
            tensor = from_array(array)
        except ValueError as e:
            raise Fail(f"constant {name!r}: {e}") from None
        attr = AttributeProto(name="value", type=int(A.TENSOR), t=tensor)
        out = self._add_node("Constant", "", [], [attr], None, [Value(self, name, True, None, None)], "Constant")
        out.const = array
        return out

    def _visible(self, v: Value, where: str) -> Value:
        """``v`` if this graph may read it (its own, or an enclosing graph's, recorded as captured)."""
        chain: list[GraphBuilder] = []
        g: GraphBuilder | None = self
        while g is not None and g is not v._graph:
            chain.append(g)
            g = g._parent
        if g is None:
            raise Fail(f"{where}: value {v.name!r} belongs to another graph (a subgraph, or another builder)")
        for b in chain:
            b._captures.setdefault(id(v), v)
        return v

    def _output(self, value: Any, name: str | None, dtype: Any, shape: Any) -> Value:
        if name is not None and not isinstance(name, str):
            raise Fail(f"an output's name is a str, got {type(name).__name__}")
        where = f"output {name!r}" if name else "output"
        if not isinstance(value, Value):
            value = self._constant(as_array(value, None, where), None)
        self._visible(value, where)
        et = None if dtype is None else element_type_of(dtype)
        dims = None if shape is None else tuple(extent(d) for d in shape)
        if value.type is None and et is None:
            raise Fail(f"{where}: the type of {value.name!r} is unknown; give it with dtype=")
        is_output = any(value is o for o in self._outputs)
        own = value._graph is self and value._producer is not None
        if name is not None and name != value.name and own and not value._named and not is_output:
            self._shared.claim(name, self._shared.values, "value")
            value._name = name
            value._named = True
        elif (name is not None and name != value.name) or not own or is_output:
            value = self._identity(value, name)
        if value.type is None and et is not None:
            value.type = f"tensor({et.type_name})"
        if value.shape is None:
            value.shape = dims
        self._outputs.append(value)
        return value

    def _identity(self, value: Value, name: str | None) -> Value:
        if "" not in self._shared.opsets:
            raise Fail(f"value {value.name!r} needs an Identity node, but the builder imports no ai.onnx opset")
        out = self._call("", "Identity", (value,), {}, None, None if name is None else [name], None)
        assert isinstance(out, Value)
        return out

    def _call(
        self,
        domain: str,
        op_type: str,
        args: Sequence[Any],
        kwargs: dict[str, Any],
        name: str | None,
        outputs: int | Sequence[str | None] | None,
        num_outputs: int | None,
    ) -> Value | tuple[Value, ...]:
        """Check and add one node (the work of :class:`OpFunction`); on failure the graph is left as it was."""
        mark = self._mark()
        try:
            return self._node(domain, op_type, args, kwargs, name, outputs, num_outputs)
        except BaseException:
            self._rollback(mark)
            raise

    def _mark(self) -> tuple[int, int, int]:
        return len(self._shared.journal), len(self._initializers), len(self._nodes)

    def _rollback(self, mark: tuple[int, int, int]) -> None:
        self._shared.give_back(mark[0])
        gone = self._initializers[mark[1] :] + [o for n in self._nodes[mark[2] :] for o in n.outputs]
        ids = {id(v) for v in gone}
        for key in [key for key, (_, v) in self._arrays.items() if id(v) in ids]:
            del self._arrays[key]
        del self._initializers[mark[1] :]
        del self._nodes[mark[2] :]

    def _node(
        self,
        domain: str,
        op_type: str,
        args: Sequence[Any],
        kwargs: dict[str, Any],
        name: str | None,
        outputs: int | Sequence[str | None] | None,
        num_outputs: int | None,
    ) -> Value | tuple[Value, ...]:
        version = self._shared.opsets.get(domain)
        dom = domain or "ai.onnx"
        if version is None:
            raise Fail(f"{op_type}: the builder imports no version of domain {dom!r} (give it in opsets=)")
        where = f"{op_type} ({dom} opset {version})"
        # The definition the node will bind to, by the graph layer's rule (ONNX 1-2's, else onnxruntime's extension
        # of the domain; com.microsoft's; a custom domain has none): the node is checked against it.
        status, schema = definition_binding(domain, op_type, version)
        if status in ("undefined", "not_in_version"):
            raise Fail(unknown_operator(op_type, domain, version))
        items = list(args)
        while items and items[-1] is None:
            items.pop()
        values = self._inputs_of(items, schema, where)
        if schema is not None and "num_outputs" in schema.attributes and num_outputs is not None:
            kwargs = {**kwargs, "num_outputs": num_outputs}
        plain, graphs = attributes(kwargs, schema, where)
        attrs: list[AttributeProto | SubgraphAttribute] = list(plain)
        shared = self._shared
        if name is None:
            node_name = shared.fresh(f"{op_type}_", shared.nodes)
        else:
            shared.claim(name, shared.nodes, f"{where}: node")
            node_name = name
        for key, (val, kind) in graphs.items():
            attrs.append(self._subgraphs(key, val, kind, domain, op_type, schema, values, kwargs, node_name, where))
        bodies = [len(b._outputs) for a in attrs if isinstance(a, SubgraphAttribute) for b in a.builders]
        n = output_count(outputs, num_outputs, schema, op_type, bodies, where)
        names: Sequence[str | None] = [None] * n if outputs is None or isinstance(outputs, int) else outputs
        out: list[Value] = []
        for given in names:
            if given is None:
                out.append(Value(self, shared.fresh("v", shared.values), False, None, None))
            else:
                shared.claim(given, shared.values, f"{where}: output")
                out.append(Value(self, given, True, None, None))
        self._add_node(op_type, domain, values, attrs, node_name, out, where)
        return out[0] if len(out) == 1 else tuple(out)

    def _add_node(
        self,
        op_type: str,
        domain: str,
        inputs: list[Value | None],
        attrs: list[AttributeProto | SubgraphAttribute],
        name: str | None,
        outputs: list[Value],
        where: str,
    ) -> Value:
        """Infer the node (raising on a contradiction it finds) and add it; its first output."""
        shared = self._shared
        if name is None:
            name = shared.fresh(f"{op_type}_", shared.nodes)
        node = BuilderNode(shared.serial, op_type, domain, name, inputs, outputs, attrs)
        shared.serial += 1
        infer_node(node, shared, where)
        for o in outputs:
            o._producer = node
        self._nodes.append(node)
        return outputs[0]

    def _inputs_of(self, items: list[Any], schema: OpSchema | None, where: str) -> list[Value | None]:
        """The node's inputs: values checked visible, constants made, arity and types checked."""
        if schema is not None:
            lo, hi = schema.input_bounds(len(items))
            if not lo <= len(items) <= hi:
                want = f"{lo}" if lo == hi else f"{lo} to {hi}" if hi < 2**31 - 1 else f"at least {lo}"
                raise Fail(f"{where}: takes {want} inputs, got {len(items)}")
            for k, formal in schema.unsupplied_required(["" if a is None else "x" for a in items]):
                raise Fail(f"{where}: input {k} ({formal.name!r}) is required, got None")
        values: list[Value | None] = [None] * len(items)
        for k, a in enumerate(items):
            if isinstance(a, Value):
                values[k] = self._visible(a, f"{where}, input {k}")
        for k, a in enumerate(items):
            if a is not None and not isinstance(a, Value):
                if isinstance(a, GraphBuilder | Opset | OpFunction) or callable(a):
                    raise Fail(f"{where}: input {k} is a {type(a).__name__}, not a value or a constant")
                known = self._arrays.get(id(a))
                if known is not None and known[0] is a:
                    values[k] = known[1]
                    continue
                et = constant_type(schema, k, [None if v is None else v.type for v in values])
                values[k] = v = self._constant(as_array(a, et, f"{where}, input {k}"), None)
                if isinstance(a, np.ndarray):
                    self._arrays[id(a)] = (a, v)
        if schema is not None:
            check_input_types(schema, [None if v is None else (v.name, v.type) for v in values], where)
        return values

    def _subgraphs(
        self,
        key: str,
        val: Any,
        kind: int,
        domain: str,
        op_type: str,
        schema: OpSchema | None,
        values: list[Value | None],
        kwargs: dict[str, Any],
        node_name: str,
        where: str,
    ) -> AttributeProto | SubgraphAttribute:
        items = list(val) if kind == A.GRAPHS else [val]
        if all(isinstance(v, GraphProto) for v in items):
            if kind == A.GRAPH:
                return AttributeProto(name=key, type=int(A.GRAPH), g=items[0])
            return AttributeProto(name=key, type=int(A.GRAPHS), graphs=items)
        builders = []
        for j, fn in enumerate(items):
            if not callable(fn):
                raise Fail(
                    f"{where}: attribute {key!r} takes a function (a builder -> values), got {type(fn).__name__}"
                )
            child = self._child(f"{node_name}_{key}" + (f"_{j}" if kind == A.GRAPHS else ""))
            params: list[Value] = []
            if (domain, op_type, key) in _BODIES:
                params = child._body_inputs(op_type, schema, values, kwargs, where)
            result = fn(child, *params)
            child._returns(result, f"{where}, {key}")
            builders.append(child)
        return SubgraphAttribute(key, kind, builders)

    def _body_inputs(
        self, op_type: str, schema: OpSchema | None, values: list[Value | None], kwargs: dict[str, Any], where: str
    ) -> list[Value]:
        """Declare the inputs of a Loop, Scan or SequenceMap body from the node's inputs."""
        specs: list[tuple[str | None, Any]] = []
        if op_type == "Loop":
            specs = [("tensor(int64)", ()), ("tensor(bool)", ())]
            # A carried value may change its extents from one iteration to the next: only its rank is declared.
            specs += [
                (v.type, None if v.shape is None else (None,) * len(v.shape)) if v else (None, None) for v in values[2:]
            ]
        elif op_type == "Scan":
            rest = values[1:] if schema is not None and schema.since_version < 9 else values
            n_scan = kwargs.get("num_scan_inputs")
            n_scan = int(n_scan) if isinstance(n_scan, np.integer) else n_scan
            if not isinstance(n_scan, int) or not 0 <= n_scan <= len(rest):
                raise Fail(f"{where}: num_scan_inputs must be an int from 0 to {len(rest)}, got {n_scan!r}")
            state, scans = rest[: len(rest) - n_scan], rest[len(rest) - n_scan :]
            specs = [(v.type, v.shape) if v else (None, None) for v in state]
            axes = list(kwargs.get("scan_input_axes") or [0] * n_scan)
            for v, ax in zip(scans, axes + [0] * (len(scans) - len(axes))):
                shp = None if v is None or v.shape is None else list(v.shape)
                if shp is not None and -len(shp) <= ax < len(shp):
                    del shp[ax]
                specs.append((None if v is None else v.type, shp))
        else:  # SequenceMap: a sequence gives its element type
            for v in values:
                t = None if v is None else v.type
                if t is not None and t.startswith("seq(") and t.endswith(")"):
                    t = t[4:-1]
                specs.append((t, None if v is None else v.shape))
        out = []
        for type_str, shape in specs:
            nm = self._shared.fresh("v", self._shared.values)
            v = Value(self, nm, False, type_str, shape)
            self._inputs.append(v)
            out.append(v)
        return out

    def _returns(self, result: Any, where: str) -> None:
        """Make what a subgraph's function returned the subgraph's outputs (None: it declared them itself)."""
        if result is None and self._outputs:
            return
        items = list(result) if isinstance(result, tuple | list) else [result]
        if not items or result is None:
            raise Fail(f"{where}: the function returned no values (return the subgraph's outputs)")
        for r in items:
            self._output(r, None, None, None)


class OpFunction:
    """One operator of one domain at the builder's version; calling it adds a node.

    ``f(*inputs, name=None, outputs=None, num_outputs=None, **attributes)``: inputs are values, constants
    (numpy arrays or scalars, Python numbers or lists) or None for an optional input left out; ``name`` names
    the node; ``outputs`` is the number of outputs or their names; ``num_outputs`` the number of a variadic
    output (also the attribute of ``Split``). A subgraph attribute takes a function ``f(g, *body_inputs)``
    returning the subgraph's outputs. Returns the output value, or a tuple of them.
    """

    __slots__ = ("_builder", "domain", "op_type")

    def __init__(self, builder: GraphBuilder, domain: str, op_type: str) -> None:
        self._builder = builder
        self.domain = domain
        self.op_type = op_type

    def __call__(
        self,
        *inputs: Any,
        name: str | None = None,
        outputs: int | Sequence[str | None] | None = None,
        num_outputs: int | None = None,
        **attributes: Any,
    ) -> Any:
        __tracebackhide__ = True
        try:
            return self._builder._call(self.domain, self.op_type, inputs, attributes, name, outputs, num_outputs)
        except Fail as e:
            raise _at_caller(e) from None

    def schema(self) -> OpSchema | None:
        """The definition this operator binds to at the builder's version (None if its domain has none here)."""
        version = self._builder._shared.opsets.get(self.domain)
        return None if version is None else definition_binding(self.domain, self.op_type, version)[1]

    def __repr__(self) -> str:
        return f"OpFunction({self.domain or 'ai.onnx'}:{self.op_type})"


class Opset:
    """The operators of one domain as attributes: ``ns.Relu(x)`` adds a ``Relu`` node."""

    __slots__ = ("_builder", "domain")

    def __init__(self, builder: GraphBuilder, domain: str) -> None:
        self._builder = builder
        self.domain = domain

    def __getattr__(self, op_type: str) -> OpFunction:
        if op_type.startswith("_"):
            raise AttributeError(op_type)
        return OpFunction(self._builder, self.domain, op_type)

    def __dir__(self) -> list[str]:
        """The operators of the domain at the imported version (for completion)."""
        version = self._builder._shared.opsets.get(self.domain, 0)
        return sorted({s.name for s in all_schemas() if s.domain == self.domain and s.since_version <= version})

    def __repr__(self) -> str:
        return f"Opset({self.domain or 'ai.onnx'})"
