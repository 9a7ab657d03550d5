"""What exporters write for one operator, evaluated as that operator (Clause 8.2; the matchers are
``onnxcore.runtime.optimize.patterns``): GELU, SiLU, LayerNorm, RMSNorm, the attention chain, ``x * HardSigmoid(x)``.

Each fused kernel here is a :class:`FusedPattern`: one call of the operator's kernel (Gelu-20,
LayerNormalization-17, RMSNormalization-23: the registered kernels themselves, looked up when the step is prepared)
for the inputs it takes, and the nodes as written (``chain``) for any other input (another element type, a weight
that does not run along the last axis). The operator computes the chain's value up to rounding (Clause 11.4). The
attention chain, ``MatMul(q, k) -> Div|Mul(scale) -> Add(mask) -> Softmax(last axis) -> [Where(IsNaN(.), 0, .)] ->
MatMul(., v)``, is one step whose score matrix is made once and updated in place (the same operations in the same
order).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from onnxcore.errors import EvaluationError, OnnxCoreError
from onnxcore.kernels._rowwise import rms_norm_compiled, row_max
from onnxcore.kernels.fused import FUSED_DOMAIN
from onnxcore.kernels.fused.common import FLOATS, Chain
from onnxcore.kernels.fused.passes import silu
from onnxcore.kernels.fused.rows import LayerNormRows, RmsNormRows, TanhGelu, attention_rows, rows_take
from onnxcore.kernels.registry import kernel, lookup

__all__ = ["ONNX_FLOAT", "FusedPattern", "RowsPattern"]

_FLOATS = FLOATS
ONNX_FLOAT = {np.dtype(np.float32).str: 1, np.dtype(np.float64).str: 11}
"""The ONNX element type of each float type a normalisation pattern runs in (its ``stash_type``)."""


class FusedPattern:
    """A chain of nodes reading some variable values, evaluated by one call when ``accepts`` the inputs, and node
    by node as written otherwise."""

    __slots__ = ("accepts", "args", "chain", "fast", "kw", "label", "x_names")

    def __init__(
        self,
        label: str,
        fast: Callable[..., Any],
        args: Sequence[np.ndarray | None],
        kw: dict[str, Any],
        accepts: Callable[..., bool],
        x_names: str | Sequence[str],
        chain: Chain,
    ) -> None:
        self.label = label
        self.fast = fast
        self.args = tuple(args)
        self.kw = kw
        self.accepts = accepts
        self.x_names = (x_names,) if isinstance(x_names, str) else tuple(x_names)
        # Per original node: its call, inputs (a name of the chain, a constant, or None), attributes, outputs.
        self.chain = list(chain)

    def __call__(self, *xs: Any) -> Any:
        for x in xs:  # a loop, not all() of a generator: this runs on every call of a transformer's layers
            if not isinstance(x, np.ndarray):
                return self.as_written(*xs)
        if self.accepts(*xs):
            try:
                r = self.fast(*xs, *self.args, **self.kw)
            except (ValueError, OnnxCoreError):
                # Extents the operator refuses (a product's inner axes that differ, say): the nodes as written
                # give the refusal that names its node, or their value.
                return self.as_written(*xs)
            return r[0] if type(r) is tuple else r
        return self.as_written(*xs)

    def as_written(self, *xs: Any) -> Any:
        """The chain evaluated node by node, as the graph writes it."""
        if not self.chain:
            # Run alone (kernels.run) without the nodes as written: only what the fused form takes is defined.
            raise EvaluationError(f"{self.label}: the fused step does not take these inputs, and no nodes as written")
        env: dict[str, Any] = dict(zip(self.x_names, xs))
        last: Any = None
        for call, ins, kw, outs in self.chain:
            r = call(*[env[n] if isinstance(n, str) else n for n in ins], **kw)
            values = r if type(r) is tuple else (r,)
            for o, v in zip(outs, values):
                if o:
                    env[o] = v
            last = values[0]
        return last

    def __repr__(self) -> str:
        return f"FusedPattern({self.label})"


class RowsPattern(FusedPattern):
    """A normalisation pattern's step (LayerNorm, RMSNorm over the last axis, constant 1-D weights of the input's
    type): a :class:`FusedPattern` that first sends an input its row step would run by the compiled loop
    (:class:`~onnxcore.runtime.optimize.rows.LayerNormRows`, ``RmsNormRows``: C-contiguous, of that type, rows of
    the weights' length, below the kernel threads' size, the accelerator on) straight to that loop, the same call
    with the same arguments those steps make, without the pattern's and the step's generic tests."""

    __slots__ = ("_d", "_dtype", "_rows")

    def __init__(self, rows: Callable[[np.ndarray], np.ndarray], d: int, dtype: np.dtype[Any], *args: Any) -> None:
        super().__init__(*args)
        self._rows, self._d, self._dtype = rows, d, dtype

    def __call__(self, *xs: Any) -> Any:
        if len(xs) == 1 and rows_take(xs[0], self._dtype, self._d):
            return self._rows(xs[0])
        return super().__call__(*xs)


def _attention(
    q: np.ndarray, k: np.ndarray, *rest: np.ndarray, scale: tuple[str, float] | None, masked: bool, guard: bool
) -> np.ndarray:
    """``softmax(q @ k (scaled) (+ mask)) @ v`` with the scores made once and updated in place."""
    mask = rest[0] if masked else None
    v = rest[-1]
    s = np.matmul(q, k)
    fast = attention_rows(s, mask, scale, guard)
    if fast is not None:
        return np.matmul(fast, v)
    if scale is not None:
        c = s.dtype.type(scale[1])
        if scale[0] == "Div":
            np.divide(s, c, out=s)
        else:
            np.multiply(s, c, out=s)
    if mask is not None:
        if np.broadcast_shapes(s.shape, mask.shape) == s.shape:
            np.add(s, mask, out=s)
        else:
            s = s + mask
    s -= row_max(s)
    np.exp(s, out=s)
    n = s.shape[-1]
    # The row sums by BLAS, as the Softmax kernel makes them (kernels._rowwise): numpy's reduction over short
    # rows costs about 25 ns a row (192 rows of 24: 5 us against 1.7).
    sums = (s.reshape(-1, n) @ np.ones(n, s.dtype)).reshape(*s.shape[:-1], 1)
    s /= sums
    # A NaN probability makes its row's sum NaN (a NaN score, or a row of -inf whose shifted scores are NaN;
    # the row's maximum gives exp(0) = 1, so no sum is 0): the small array of sums tells whether to look.
    if guard and np.isnan(sums).any():
        s[np.isnan(s)] = 0
    return np.matmul(s, v)


def _attention_accepts(*xs: np.ndarray) -> bool:
    dt = xs[0].dtype
    if dt not in _FLOATS:
        return False
    for x in xs:  # a loop, not all() of a generator: this runs on every call of a transformer's layers
        if x.dtype != dt or x.ndim < 2 or not x.size:
            return False
    return True


# ------------------------------------------------------------------------------------------------ the kernels
# ``chain``: the nodes as written (for inputs the fused form does not take); ``x_names``: the names of the step's
# inputs in the chain (the step's inputs, in order).


def _floats(v: np.ndarray) -> bool:
    return v.dtype in _FLOATS


def _kernel_fn(op_type: str, since: int) -> Callable[..., Any]:
    kdef = lookup("", op_type, since)
    if kdef is None:
        raise EvaluationError(f"{op_type}-{since}: no kernel registered")
    return kdef.fn


def _prepare_gelu(
    constants: Sequence[Any],
    *,
    approximate: str = "none",
    chain: Chain = (),
    x_names: Sequence[str] = ("x",),
) -> FusedPattern:
    fn = _kernel_fn("Gelu", 20)
    label = "GELU (tanh)" if approximate == "tanh" else "GELU (erf)"
    gelu = TanhGelu(fn) if approximate == "tanh" else fn
    return FusedPattern(label, gelu, (), {"approximate": approximate}, _floats, x_names, list(chain))


@kernel("GeluPattern", 1, domain=FUSED_DOMAIN, prepare=_prepare_gelu, prepare_constants=True)
def gelu_pattern(
    x: Any,
    *,
    approximate: str = "none",
    chain: Chain = (),
    x_names: Sequence[str] = ("x",),
) -> Any:
    """The exporters' GELU chain (erf, or ``approximate="tanh"``) as Gelu-20 for float inputs."""
    return _prepare_gelu((x,), approximate=approximate, chain=chain, x_names=x_names)(x)


def _prepare_silu(
    constants: Sequence[Any],
    *,
    chain: Chain = (),
    x_names: Sequence[str] = ("x",),
) -> FusedPattern:
    return FusedPattern("SiLU", silu, (), {}, _floats, x_names, list(chain))


@kernel("SiLUPattern", 1, domain=FUSED_DOMAIN, prepare=_prepare_silu, prepare_constants=True)
def silu_pattern(x: Any, *, chain: Chain = (), x_names: Sequence[str] = ("x",)) -> Any:
    """``Mul(x, Sigmoid(x))`` as ``x / (1 + exp(-x))`` in one buffer for float inputs."""
    return _prepare_silu((x,), chain=chain, x_names=x_names)(x)


class _TimesHardSigmoid:
    """``x * HardSigmoid(x)``: the HardSigmoid node's kernel, then the product written into its fresh result (one
    array, not two). The same operations on the same operands: IEEE multiplication commutes, so ``Mul(x, h)`` and
    ``Mul(h, x)`` are both this product, bit for bit."""

    __slots__ = ("alpha", "beta", "kernel")

    def __init__(self, kernel: Callable[..., Any], alpha: float, beta: float) -> None:
        self.kernel, self.alpha, self.beta = kernel, alpha, beta

    def __call__(self, x: np.ndarray) -> np.ndarray:
        y = self.kernel(x, alpha=self.alpha, beta=self.beta)
        if type(y) is np.ndarray and y is not x and y.dtype == x.dtype and y.shape == x.shape and y.flags.writeable:
            return np.multiply(x, y, out=y)
        return np.multiply(x, y)


def _prepare_hard_sigmoid_mul(
    constants: Sequence[Any],
    *,
    alpha: float = 0.20000000298023224,
    beta: float = 0.5,
    kernel: Callable[..., Any] | None = None,
    chain: Chain = (),
    x_names: Sequence[str] = ("x",),
) -> FusedPattern:
    step = _TimesHardSigmoid(kernel or _kernel_fn("HardSigmoid", 22), alpha, beta)
    return FusedPattern("HardSigmoid * x", step, (), {}, _floats, x_names, list(chain))


@kernel("HardSigmoidMul", 1, domain=FUSED_DOMAIN, prepare=_prepare_hard_sigmoid_mul, prepare_constants=True)
def hard_sigmoid_mul(
    x: Any,
    *,
    alpha: float = 0.20000000298023224,
    beta: float = 0.5,
    kernel: Callable[..., Any] | None = None,
    chain: Chain = (),
    x_names: Sequence[str] = ("x",),
) -> Any:
    """``Mul(x, HardSigmoid(x; alpha, beta))`` (what exporters write for HardSwish before opset 14, MobileNetV3's
    activation) for float inputs, the product written into the HardSigmoid's result."""
    step = _prepare_hard_sigmoid_mul((x,), alpha=alpha, beta=beta, kernel=kernel, chain=chain, x_names=x_names)
    return step(x)


def _last_axis_ok(w: np.ndarray | None, x: np.ndarray) -> bool:
    return w is None or w.size == 1 or (x.ndim >= 1 and w.shape[-1] == x.shape[-1])


def _prepare_rms_norm(
    constants: Sequence[Any],
    *,
    epsilon: float,
    dtype: np.dtype[Any],
    scale: np.ndarray | None = None,
    chain: Chain = (),
    x_names: Sequence[str] = ("x",),
) -> FusedPattern:
    w = scale
    ones = np.ones((), dtype) if w is None else w
    rows_of = w is not None and w.ndim == 1 and w.dtype == dtype and dtype in _FLOATS and w.flags.c_contiguous
    args = (
        "RMSNorm",
        RmsNormRows(_kernel_fn("RMSNormalization", 23)),
        (ones,),
        {"axis": -1, "epsilon": epsilon, "stash_type": ONNX_FLOAT[dtype.str]},
        lambda v: v.dtype == dtype and v.ndim >= 1 and _last_axis_ok(w, v),
        x_names,
        list(chain),
    )
    if rows_of and w is not None and w.size:
        d = int(w.shape[0])
        return RowsPattern(lambda v: rms_norm_compiled(v, w, d, epsilon), d, dtype, *args)
    return FusedPattern(*args)


@kernel("RMSNormPattern", 1, domain=FUSED_DOMAIN, prepare=_prepare_rms_norm, prepare_constants=True)
def rms_norm_pattern(
    x: Any,
    *,
    epsilon: float,
    dtype: np.dtype[Any],
    scale: np.ndarray | None = None,
    chain: Chain = (),
    x_names: Sequence[str] = ("x",),
) -> Any:
    """The exporters' RMSNorm chain over the last axis (then ``Mul(scale)``) as RMSNormalization-23 for inputs of
    ``dtype``."""
    return _prepare_rms_norm((x,), epsilon=epsilon, dtype=dtype, scale=scale, chain=chain, x_names=x_names)(x)


def _prepare_layer_norm(
    constants: Sequence[Any],
    *,
    epsilon: float,
    dtype: np.dtype[Any],
    scale: np.ndarray | None = None,
    bias: np.ndarray | None = None,
    chain: Chain = (),
    x_names: Sequence[str] = ("x",),
) -> FusedPattern:
    w, b = scale, bias
    ones = np.ones((), dtype) if w is None else w
    rows_of = w is not None and w.ndim == 1 and w.dtype == dtype and dtype in _FLOATS and w.flags.c_contiguous
    fn: Callable[..., Any] = _kernel_fn("LayerNormalization", 17)
    rows_step: LayerNormRows | None = None
    if w is not None and w.ndim == 1 and w.dtype == dtype and (b is None or (b.shape == w.shape and b.dtype == dtype)):
        contiguous_b = None if b is None else np.ascontiguousarray(b)
        fn = rows_step = LayerNormRows(fn, np.ascontiguousarray(w), contiguous_b, epsilon)
    ln_args = (
        "LayerNorm",
        fn,
        (ones, b),
        {"axis": -1, "epsilon": epsilon, "stash_type": ONNX_FLOAT[dtype.str]},
        lambda v: v.dtype == dtype and v.ndim >= 1 and _last_axis_ok(w, v) and _last_axis_ok(b, v),
        x_names,
        list(chain),
    )
    if rows_step is not None and rows_of and rows_step.d:
        ln = rows_step

        def layer_norm(v: np.ndarray) -> np.ndarray:
            return ln.rows(v)[0]  # (RowsPattern sends only what rows_take accepts)

        return RowsPattern(layer_norm, ln.d, dtype, *ln_args)
    return FusedPattern(*ln_args)


@kernel("LayerNormPattern", 1, domain=FUSED_DOMAIN, prepare=_prepare_layer_norm, prepare_constants=True)
def layer_norm_pattern(
    x: Any,
    *,
    epsilon: float,
    dtype: np.dtype[Any],
    scale: np.ndarray | None = None,
    bias: np.ndarray | None = None,
    chain: Chain = (),
    x_names: Sequence[str] = ("x",),
) -> Any:
    """The exporters' LayerNorm chain over the last axis (then ``Mul(scale)``, ``Add(bias)``) as
    LayerNormalization-17 for inputs of ``dtype``."""
    step = _prepare_layer_norm((x,), epsilon=epsilon, dtype=dtype, scale=scale, bias=bias, chain=chain, x_names=x_names)
    return step(x)


def _prepare_attention(
    constants: Sequence[Any],
    *,
    scale: tuple[str, float] | None = None,
    masked: bool = False,
    guard: bool = False,
    chain: Chain = (),
    x_names: Sequence[str] = ("q", "k", "v"),
) -> FusedPattern:
    kw = {"scale": scale, "masked": masked, "guard": guard}
    return FusedPattern("Attention", _attention, (), kw, _attention_accepts, x_names, list(chain))


@kernel("AttentionPattern", 1, domain=FUSED_DOMAIN, prepare=_prepare_attention, prepare_constants=True)
def attention_pattern(
    q: Any,
    k: Any,
    *rest: Any,
    scale: tuple[str, float] | None = None,
    masked: bool = False,
    guard: bool = False,
    chain: Chain = (),
    x_names: Sequence[str] = ("q", "k", "v"),
) -> Any:
    """``softmax(q @ k (Div|Mul by scale) (+ mask)) [NaN -> 0 when guard] @ v``; the inputs are ``q, k, [mask,] v``."""
    step = _prepare_attention((q, k, *rest), scale=scale, masked=masked, guard=guard, chain=chain, x_names=x_names)
    return step(q, k, *rest)
