"""Per-node type rules: binding type variables from the inputs (Clause 9, 7.3), and the operators whose
output type is not a function of their input types alone.

The generic rule reads the operator definition: each input bound to a formal parameter whose type is a
type variable binds that variable to the input's type; an output whose formal type is a variable takes
the variable's binding, or the single type the variable admits. A heterogeneous variadic parameter
(``If``/``Loop``/``Scan`` and the training operators) binds nothing, its actuals having distinct types.

The explicit rules below cover every output type variable of ONNX 1-2 that no required input binds
(found by scanning the definitions; see ``tests/infer/test_infer_rules.py``): the type comes from an attribute
(``Cast``, ``ConstantOfShape``, the random generators, the windows, ...), from a subgraph (``If``,
``Loop``, ``Scan``, ``SequenceMap``) or from the structure of an input type (``SequenceAt``,
``OptionalGetElement``, ...). Where the rule cannot decide, the result is unknown (Clause 9.4).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from onnxcore.defs.opschema import FormalParameter, OpSchema
from onnxcore.proto.messages import AttributeProto, NodeProto
from onnxcore.types.typestr import elem_type_string, tensor_elem, type_string

__all__ = ["TYPE_RULES", "NodeView", "bind_inputs", "formal_at", "generic_outputs", "infer_outputs"]

_AT = AttributeProto.AttributeType


class _Unresolved:
    """An attribute that refers to a function parameter with no value in this context (Clause 8.4)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNRESOLVED"


UNRESOLVED = _Unresolved()


class NodeView(Protocol):
    """What a rule sees of a node (implemented by the engine)."""

    node: NodeProto
    schema: OpSchema
    in_types: tuple[str | None, ...]

    def attr(self, name: str) -> AttributeProto | _Unresolved | None:
        """The attribute (after function-parameter substitution), None if absent."""
        ...

    def subgraph(self, name: str, inputs: Sequence[str | None]) -> list[str | None] | None:
        """Infer the graph attribute ``name`` with the given input types; its output types."""
        ...


def formal_at(formals: tuple[FormalParameter, ...], k: int) -> FormalParameter | None:
    """The formal parameter matched by position ``k`` (Clause 7.3.1; a variadic last one takes the rest)."""
    if k < len(formals):
        return formals[k]
    if formals and formals[-1].option == "variadic":
        return formals[-1]
    return None


def bind_inputs(schema: OpSchema, in_types: Sequence[str | None]) -> tuple[dict[str, str], frozenset[str]]:
    """Bind type variables from the known input types.

    Returns:
        ``(bindings, conflicts)``: each variable bound by the inputs to its type, and the variables that
        two inputs bind to different types (their outputs stay unknown).
    """
    tc = schema.type_constraints
    bindings: dict[str, str] = {}
    conflicts: set[str] = set()
    for k, t in enumerate(in_types):
        if t is None:
            continue
        f = formal_at(schema.inputs, k)
        if f is None or f.type_str not in tc or (f.option == "variadic" and not f.is_homogeneous):
            continue
        prev = bindings.get(f.type_str)
        if prev is None:
            bindings[f.type_str] = t
        elif prev != t:
            conflicts.add(f.type_str)
    return bindings, frozenset(conflicts)


def generic_outputs(
    schema: OpSchema, in_types: tuple[str | None, ...], n_outputs: int
) -> tuple[list[str | None], dict[str, str], frozenset[str]]:
    """The generic rule: outputs from the bound type variables, or the single type a variable admits."""
    tc = schema.type_constraints
    bindings, conflicts = bind_inputs(schema, in_types)
    out: list[str | None] = []
    for j in range(n_outputs):
        f = formal_at(schema.outputs, j)
        t: str | None = None
        if f is not None:
            var = f.type_str
            allowed = tc.get(var)
            if allowed is None:
                t = var  # a type string, not a variable
            elif (f.option == "variadic" and not f.is_homogeneous) or var in conflicts:
                t = None
            elif var in bindings:
                t = bindings[var]
            elif len(allowed) == 1:
                t = allowed[0]
        out.append(t)
    return out, bindings, conflicts


def infer_outputs(view: NodeView, n_outputs: int) -> tuple[list[str | None], dict[str, str], frozenset[str]]:
    """Output types of one node bound to ``view.schema``: the generic rule, then the explicit one."""
    schema = view.schema
    out, bindings, conflicts = generic_outputs(schema, view.in_types, n_outputs)
    rule = TYPE_RULES.get((schema.domain, schema.name))
    if rule is not None:
        for j, t in rule(view).items():
            if 0 <= j < n_outputs:
                out[j] = t
    return out, bindings, conflicts


# --- attribute reading -------------------------------------------------------------------------------

_MISSING = object()


def _int(view: NodeView, name: str, default: int | None) -> int | object | None:
    """An INT attribute; ``default`` when absent; ``_MISSING`` when unresolved or of the wrong type."""
    a = view.attr(name)
    if a is None:
        return default
    if isinstance(a, _Unresolved) or a.type not in (_AT.INT, _AT.UNDEFINED):
        return _MISSING
    return a.i


def _dtype_attr(view: NodeView, name: str, default: int | None) -> tuple[bool, str | None]:
    """``(decided, type)`` for an element-type attribute: decided False means "look elsewhere"."""
    v = _int(view, name, default)
    if v is _MISSING:
        return True, None
    if v is None:
        return False, None
    assert isinstance(v, int)
    return True, elem_type_string(v)


def _present(view: NodeView, name: str) -> bool | None:
    """Whether an attribute is given (None when that cannot be known)."""
    a = view.attr(name)
    if isinstance(a, _Unresolved):
        return None
    return a is not None


def _inner(type_str: str | None, head: str) -> str | None:
    if type_str is not None and type_str.startswith(head + "(") and type_str.endswith(")"):
        return type_str[len(head) + 1 : -1]
    return None


def _input(view: NodeView, k: int) -> str | None:
    return view.in_types[k] if k < len(view.in_types) else None


def _supplied(view: NodeView, k: int) -> bool:
    return k < len(view.node.input) and view.node.input[k] != ""


# --- attribute-typed outputs ---------------------------------------------------------------------------

TypeRule = Callable[[NodeView], dict[int, str | None]]


def _from_attr(name: str, default: int | None, fallback_input: int | None = None) -> TypeRule:
    """Output 0 has the element type of attribute ``name`` (else the default, else an input's type)."""

    def rule(view: NodeView) -> dict[int, str | None]:
        decided, t = _dtype_attr(view, name, default)
        if decided:
            return {0: t}
        if fallback_input is not None:
            return {0: _input(view, fallback_input)}
        return {0: None}

    return rule


def _constant(view: NodeView) -> dict[int, str | None]:
    simple = {
        "value_float": "tensor(float)",
        "value_floats": "tensor(float)",
        "value_int": "tensor(int64)",
        "value_ints": "tensor(int64)",
        "value_string": "tensor(string)",
        "value_strings": "tensor(string)",
    }
    for a in view.node.attribute:
        name = a.name
        got = view.attr(name)
        if isinstance(got, _Unresolved):
            return {0: simple.get(name)}
        if got is None:
            continue
        if name == "value" and got.t is not None:
            return {0: elem_type_string(got.t.data_type)}
        if name == "sparse_value" and got.sparse_tensor is not None and got.sparse_tensor.values is not None:
            # The output is the dense tensor the sparse value denotes (T admits tensors only).
            return {0: elem_type_string(got.sparse_tensor.values.data_type)}
        if name in simple:
            return {0: simple[name]}
    return {0: None}


def _constant_of_shape(view: NodeView) -> dict[int, str | None]:
    a = view.attr("value")
    if isinstance(a, _Unresolved):
        return {0: None}
    if a is None:
        return {0: "tensor(float)"}  # the definition's default: a float zero
    return {0: elem_type_string(a.t.data_type) if a.t is not None else None}


def _quantize_linear(view: NodeView) -> dict[int, str | None]:
    if _supplied(view, 2):
        return {}  # y_zero_point binds the output variable
    if view.schema.since_version >= 21:
        v = _int(view, "output_dtype", 0)
        if v is _MISSING:
            return {0: None}
        if v:
            assert isinstance(v, int)
            return {0: elem_type_string(v)}
    return {0: "tensor(uint8)"}


def _dequantize_linear(view: NodeView) -> dict[int, str | None]:
    if view.schema.since_version < 23:
        return {}
    v = _int(view, "output_dtype", 0)
    if v is _MISSING:
        return {0: None}
    if v:
        assert isinstance(v, int)
        return {0: elem_type_string(v)}
    return {0: _input(view, 1)}  # the type of x_scale


def _layer_normalization(view: NodeView) -> dict[int, str | None]:
    decided, t = _dtype_attr(view, "stash_type", 1)
    return {1: t, 2: t} if decided else {}


def _simplified_layer_normalization(view: NodeView) -> dict[int, str | None]:
    # onnxruntime's extension of ai.onnx: inv_std_var has the stash type, as LayerNormalization's statistics.
    decided, t = _dtype_attr(view, "stash_type", 1)
    return {1: t} if decided else {}


# --- structural rules: sequences and optionals -------------------------------------------------------


def _sequence_construct(view: NodeView) -> dict[int, str | None]:
    first = _input(view, 0)
    return {0: None if first is None else f"seq({first})"}


def _sequence_empty(view: NodeView) -> dict[int, str | None]:
    decided, t = _dtype_attr(view, "dtype", 1)
    return {0: f"seq({t})" if decided and t is not None else None}


def _sequence_element(view: NodeView) -> dict[int, str | None]:
    return {0: _inner(_input(view, 0), "seq")}


def _split_to_sequence(view: NodeView) -> dict[int, str | None]:
    t = _input(view, 0)
    return {0: None if t is None else f"seq({t})"}


def _optional(view: NodeView) -> dict[int, str | None]:
    a = view.attr("type")
    if isinstance(a, _Unresolved):
        return {0: None}
    if a is not None:
        inner = type_string(a.tp)
        return {0: None if inner is None else f"optional({inner})"}
    t = _input(view, 0)
    return {0: None if t is None else f"optional({t})"}


def _optional_get_element(view: NodeView) -> dict[int, str | None]:
    t = _input(view, 0)
    if t is None:
        return {0: None}
    inner = _inner(t, "optional")
    return {0: inner if inner is not None else t}  # since version 18 a non-optional input passes through


# --- ai.onnx.ml ---------------------------------------------------------------------------------------


def _class_labels(view: NodeView) -> dict[int, str | None]:
    """Classifiers: the label output is a string tensor when the labels are strings, else int64."""
    s = _present(view, "classlabels_strings")
    if s is None:
        return {0: None}
    return {0: "tensor(string)" if s else "tensor(int64)"}


def _zip_map(view: NodeView) -> dict[int, str | None]:
    s = _present(view, "classlabels_strings")
    if s is None:
        return {0: None}
    key = "string" if s else "int64"
    return {0: f"seq(map({key},tensor(float)))"}


def _cast_map(view: NodeView) -> dict[int, str | None]:
    a = view.attr("cast_to")
    if isinstance(a, _Unresolved):
        return {0: None}
    to = bytes(a.s).decode("ascii", "replace") if a is not None else "TO_FLOAT"
    return {0: {"TO_FLOAT": "tensor(float)", "TO_STRING": "tensor(string)", "TO_INT64": "tensor(int64)"}.get(to)}


def _swap_string_int64(view: NodeView) -> dict[int, str | None]:
    t = _input(view, 0)
    return {0: {"tensor(string)": "tensor(int64)", "tensor(int64)": "tensor(string)"}.get(t or "")}


def _dict_vectorizer(view: NodeView) -> dict[int, str | None]:
    m = _inner(_input(view, 0), "map")
    if m is None or "," not in m:
        return {0: None}
    value = m.split(",", 1)[1]
    return {0: value if tensor_elem(value) is not None else None}


def _label_encoder(view: NodeView) -> dict[int, str | None]:
    if view.schema.since_version < 2:
        return _swap_string_int64(view)
    vt = view.attr("values_tensor")
    if isinstance(vt, _Unresolved):
        return {0: None}
    if vt is not None and vt.t is not None:
        return {0: elem_type_string(vt.t.data_type)}
    for name, t in (
        ("values_strings", "tensor(string)"),
        ("values_int64s", "tensor(int64)"),
        ("values_floats", "tensor(float)"),
    ):
        p = _present(view, name)
        if p is None:
            return {0: None}
        if p:
            return {0: t}
    return {0: None}


# --- control flow: outputs from subgraphs (Clause 7.6) ----------------------------------------------


def _if(view: NodeView) -> dict[int, str | None]:
    then_out = view.subgraph("then_branch", ()) or []
    else_out = view.subgraph("else_branch", ()) or []
    result: dict[int, str | None] = {}
    for j in range(len(view.node.output)):
        a = then_out[j] if j < len(then_out) else None
        b = else_out[j] if j < len(else_out) else None
        # The branches must agree; where they do not, nothing is entailed.
        result[j] = a if b is None else (b if a is None or a == b else None)
    return result


def _scan_output(t: str | None) -> str | None:
    # A scan output stacks the per-iteration tensors: same element type, one more axis.
    return t if tensor_elem(t) is not None else None


def _loop(view: NodeView) -> dict[int, str | None]:
    carried = list(view.in_types[2:])
    body_out = view.subgraph("body", ["tensor(int64)", "tensor(bool)", *carried]) or []
    n = len(carried)
    result: dict[int, str | None] = {}
    for j in range(len(view.node.output)):
        b = body_out[1 + j] if 1 + j < len(body_out) else None
        if j < n:
            result[j] = b if b is not None else carried[j]
        else:
            result[j] = _scan_output(b)
    return result


def _scan(view: NodeView) -> dict[int, str | None]:
    args = list(view.in_types[1:] if view.schema.since_version < 9 else view.in_types)
    m = _int(view, "num_scan_inputs", None)
    if not isinstance(m, int) or isinstance(m, bool) or m < 0 or m > len(args):
        view.subgraph("body", [])
        return {}
    n = len(args) - m
    # A scan input is sliced along its scan axis: the body sees the same element type.
    body_in = args[:n] + [_scan_output(t) for t in args[n:]]
    body_out = view.subgraph("body", body_in) or []
    result: dict[int, str | None] = {}
    for j in range(len(view.node.output)):
        b = body_out[j] if j < len(body_out) else None
        if j < n:
            result[j] = b if b is not None else args[j]
        else:
            result[j] = _scan_output(b)
    return result


def _sequence_map(view: NodeView) -> dict[int, str | None]:
    body_in: list[str | None] = [_inner(_input(view, 0), "seq")]
    for t in view.in_types[1:]:
        inner = _inner(t, "seq")
        body_in.append(inner if inner is not None else t)
    body_out = view.subgraph("body", body_in) or []
    return {
        j: (f"seq({body_out[j]})" if j < len(body_out) and body_out[j] is not None else None)
        for j in range(len(view.node.output))
    }


def _optimizer(groups: int, produced: tuple[int, ...]) -> TypeRule:
    """Training optimizers: inputs R, T, then ``groups`` runs of n tensors; outputs copy some runs' types."""

    def rule(view: NodeView) -> dict[int, str | None]:
        rest = view.in_types[2:]
        if len(rest) % groups:
            return {}
        n = len(rest) // groups
        result: dict[int, str | None] = {}
        for j in range(len(view.node.output)):
            run, pos = divmod(j, n) if n else (len(produced), 0)
            result[j] = rest[produced[run] * n + pos] if run < len(produced) else None
        return result

    return rule


def _linear_attention(view: NodeView) -> dict[int, str | None]:
    # present_state has the type of past_state when given, else the type of the query (the type
    # onnx's inference function for the definition states).
    return {1: _input(view, 3) if _supplied(view, 3) else _input(view, 0)}


def _group_query_attention(view: NodeView) -> dict[int, str | None]:
    # present_key/present_value (T_CACHE) have past_key's type when given, else the query's (onnxruntime 1.31).
    cache = _input(view, 3) if _supplied(view, 3) else _input(view, 0)
    return {1: cache, 2: cache}


def _multi_head_attention(view: NodeView) -> dict[int, str | None]:
    # qk (QK) is bound by no input: the query's type (onnxruntime 1.31 leaves it unbound and refuses the node).
    return {3: _input(view, 0)}


TYPE_RULES: dict[tuple[str, str], TypeRule] = {
    ("", "Cast"): _from_attr("to", None),
    ("", "BitCast"): _from_attr("to", None),
    ("", "Constant"): _constant,
    ("", "ConstantOfShape"): _constant_of_shape,
    ("", "EyeLike"): _from_attr("dtype", None, fallback_input=0),
    ("", "RandomNormal"): _from_attr("dtype", 1),
    ("", "RandomUniform"): _from_attr("dtype", 1),
    ("", "RandomNormalLike"): _from_attr("dtype", None, fallback_input=0),
    ("", "RandomUniformLike"): _from_attr("dtype", None, fallback_input=0),
    ("", "Multinomial"): _from_attr("dtype", 6),
    ("", "Bernoulli"): _from_attr("dtype", None, fallback_input=0),
    ("", "BlackmanWindow"): _from_attr("output_datatype", 1),
    ("", "HammingWindow"): _from_attr("output_datatype", 1),
    ("", "HannWindow"): _from_attr("output_datatype", 1),
    ("", "MelWeightMatrix"): _from_attr("output_datatype", 1),
    ("", "QuantizeLinear"): _quantize_linear,
    ("", "DequantizeLinear"): _dequantize_linear,
    ("", "LayerNormalization"): _layer_normalization,
    ("", "SimplifiedLayerNormalization"): _simplified_layer_normalization,
    ("", "SequenceConstruct"): _sequence_construct,
    ("", "SequenceEmpty"): _sequence_empty,
    ("", "SequenceAt"): _sequence_element,
    ("", "ConcatFromSequence"): _sequence_element,
    ("", "SplitToSequence"): _split_to_sequence,
    ("", "Optional"): _optional,
    ("", "OptionalGetElement"): _optional_get_element,
    ("", "If"): _if,
    ("", "Loop"): _loop,
    ("", "Scan"): _scan,
    ("", "SequenceMap"): _sequence_map,
    ("", "LinearAttention"): _linear_attention,
    ("com.microsoft", "GroupQueryAttention"): _group_query_attention,
    ("com.microsoft", "MultiHeadAttention"): _multi_head_attention,
    ("ai.onnx.preview.training", "Adagrad"): _optimizer(3, (0, 2)),
    ("ai.onnx.preview.training", "Momentum"): _optimizer(3, (0, 2)),
    ("ai.onnx.preview.training", "Adam"): _optimizer(4, (0, 2, 3)),
    ("ai.onnx.ml", "CastMap"): _cast_map,
    ("ai.onnx.ml", "CategoryMapper"): _swap_string_int64,
    ("ai.onnx.ml", "DictVectorizer"): _dict_vectorizer,
    ("ai.onnx.ml", "LabelEncoder"): _label_encoder,
    ("ai.onnx.ml", "LinearClassifier"): _class_labels,
    ("ai.onnx.ml", "SVMClassifier"): _class_labels,
    ("ai.onnx.ml", "TreeEnsembleClassifier"): _class_labels,
    ("ai.onnx.ml", "ZipMap"): _zip_map,
}
