"""Shape rules (Clause 9): matrix products, reductions, the softmax family, signal and text operators,
optionals and sequences, the ``ai.onnx.ml`` operators and the ``ai.onnx.preview.training`` optimizers.

Definitions are those of ONNX 1-2 (``onnx.defs``); the version noted is the since_version where the shape
behaviour changed. Where a definition leaves a shape open (the ``ai.onnx.ml`` score columns, 1-D inputs
read as one row) the rule states what the runtimes agree on, and nothing where they do not.
"""

from __future__ import annotations

from collections.abc import Sequence

from onnxcore.infer.shape_core import (
    Extent,
    ShapeContext,
    ShapeIncompatible,
    ShapeT,
    broadcast,
    dim_prod,
    norm_axis,
    same_as_input,
    shape_rule,
    unidirectional,
    unify,
)

__all__: list[str] = []

_ML = "ai.onnx.ml"
_TRAINING = "ai.onnx.preview.training"


def _scalar(ctx: ShapeContext, i: int) -> int | None:
    """The statically known value of a one-element integer input ``i`` (a size, a length, an axis)."""
    v = ctx.ints(i) if ctx.present(i) else None
    return v[0] if v is not None and len(v) == 1 else None


def _check_axis(ctx: ShapeContext, axis: int | None, x: ShapeT | None) -> None:
    """Fail on an axis outside ``[-r, r-1]`` of an input of known rank ``r``; no axis is inside for a scalar."""
    if x is None:
        return
    if not x:
        ctx.fail(f"{ctx.op_type} takes an input of rank >= 1 (its axis is in [-r, r-1])")
    if axis is not None:
        norm_axis(ctx, axis, len(x))


# --- matrix products ----------------------------------------------------------------------------


def _matmul(ctx: ShapeContext, a: ShapeT | None, b: ShapeT | None) -> ShapeT | None:
    """``numpy.matmul`` shapes: a 1-D operand is a row (A) or a column (B) whose axis is then dropped;
    the batch axes broadcast (Clause 6.6.2); the inner extents are equal."""
    if a is None or b is None:
        return None
    if not a or not b:
        ctx.fail("a matrix product operand must have rank >= 1 (numpy.matmul semantics)")
    a2 = a if len(a) > 1 else (1, *a)
    b2 = b if len(b) > 1 else (*b, 1)
    unify(ctx, a2[-1], b2[-2], "inner extents of the matrix product")
    batch = broadcast(ctx, [a2[:-2], b2[:-2]])
    assert batch is not None
    rows = a2[-2:-1] if len(a) > 1 else ()
    cols = b2[-1:] if len(b) > 1 else ()
    return (*batch, *rows, *cols)


@shape_rule("MatMul", "MatMulInteger")
def _matmul_rule(ctx: ShapeContext) -> list[ShapeT | None]:
    return [_matmul(ctx, ctx.shape(0), ctx.shape(1))]


@shape_rule("QLinearMatMul")
def _qlinear_matmul(ctx: ShapeContext) -> list[ShapeT | None]:
    return [_matmul(ctx, ctx.shape(0), ctx.shape(3))]  # inputs: a, a_scale, a_zero_point, b, ...


@shape_rule("Gemm")
def _gemm(ctx: ShapeContext) -> list[ShapeT | None]:
    return gemm_shapes(ctx, old_broadcast=ctx.since < 7)


def gemm_shapes(ctx: ShapeContext, *, old_broadcast: bool) -> list[ShapeT | None]:
    """Gemm's output shape; ``old_broadcast``: Gemm-1/6's rule for C (the ``broadcast`` attribute)."""
    a, b = ctx.shape(0), ctx.shape(1)
    # A is (M, K) and B is (K, N), transposed by transA/transB.
    for name, s in (("A", a), ("B", b)):
        if s is not None and len(s) != 2:
            ctx.fail(f"Gemm {name} must have rank 2, got rank {len(s)}")
    m, ka = (None, None) if a is None else (a[::-1] if ctx.attr("transA", 0) else a)
    kb, n = (None, None) if b is None else (b[::-1] if ctx.attr("transB", 0) else b)
    unify(ctx, ka, kb, "Gemm inner extent K of A and B")
    c = ctx.shape(2) if ctx.present(2) else None
    if c is not None:
        mn = [m, n]
        if old_broadcast and not ctx.attr("broadcast", 0):
            # Gemm-1/6 without broadcast: C has the shape (M, N) of the output.
            if len(c) != 2:
                ctx.fail(f"C of rank {len(c)} is not (M, N) (broadcast=0 before opset 7)")
            mn = [unify(ctx, mn[j], c[j], f"C and the output (M, N), axis {j}") for j in (0, 1)]
        else:
            # C is unidirectionally broadcastable to (M, N) (Clause 6.6.3): a fixed extent other than 1 is M or N.
            mn = list(unidirectional(ctx, (m, n), c) or (m, n))
        m, n = mn
    return [(m, n)]


@shape_rule("Det")
def _det(ctx: ShapeContext) -> list[ShapeT | None]:
    x = ctx.shape(0)
    if x is None:
        return [None]
    if len(x) < 2:
        ctx.fail(f"Det needs square matrices [*, M, M], got rank {len(x)}")
    unify(ctx, x[-2], x[-1], "Det: the matrices are square")
    return [x[:-2]]


# --- Einsum -------------------------------------------------------------------------------------

_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def _einsum_term(term: str) -> tuple[str, str | None] | None:
    """The letters before an ellipsis and those after it (None without one); None if malformed."""
    head, ell, tail = term.partition("...")
    if not set(head + tail) <= _LETTERS:
        return None
    return head, tail if ell else None


def _letter_extent(ctx: ShapeContext, eq: str, c: str, a: Extent, b: Extent) -> Extent:
    """Two extents of one letter: they broadcast against 1 (onnxruntime and numpy both allow it)."""
    try:
        out = broadcast(ctx, [(a,), (b,)])
    except ShapeIncompatible:
        ctx.fail(f"letter {c!r} of the equation {eq!r} has extents {a} and {b}")
    assert out is not None
    return out[0]


@shape_rule("Einsum")
def _einsum(ctx: ShapeContext) -> list[ShapeT | None]:
    eq = str(ctx.attr("equation") or "").replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    parsed = [_einsum_term(t) for t in lhs.split(",")]
    out_term = _einsum_term(rhs) if arrow else None
    terms = [p for p in parsed if p is not None]
    if len(terms) < len(parsed) or (arrow and out_term is None):
        return [None]  # a malformed equation: nothing is concluded from it
    if len(terms) != ctx.n_inputs:
        ctx.fail(f"equation {eq!r} has {len(terms)} input terms for {ctx.n_inputs} inputs")
    extent: dict[str, Extent] = {}
    ellipses: list[ShapeT | None] = []  # the dimensions each ellipsis stands for; None if unknown
    for i, (head, tail) in enumerate(terms):
        x = ctx.shape(i)
        fixed = len(head) + len(tail or "")
        if x is not None and (len(x) < fixed if tail is not None else len(x) != fixed):
            ctx.fail(f"input {i} of rank {len(x)} does not fit its term of the equation {eq!r}")
        dims: list[Extent] = [None] * fixed if x is None else [*x[: len(head)], *x[len(x) - len(tail or "") :]]
        if tail is not None:
            ellipses.append(None if x is None else x[len(head) : len(x) - len(tail)])
        for c, d in zip(head + (tail or ""), dims):
            extent[c] = _letter_extent(ctx, eq, c, extent[c], d) if c in extent else d
    known = [e for e in ellipses if e is not None]
    widths = {len(e) for e in known}
    if len(widths) > 1:
        # Every ellipsis stands for the same number of dimensions (Einsum definition).
        ctx.fail(f"the ellipses of the equation {eq!r} stand for {sorted(widths)} dimensions")
    ell: ShapeT | None = ()
    if known:
        groups = list(known)
        if len(known) < len(ellipses):
            # An ellipsis of unknown rank is as long as the others; its extents may broadcast a 1 away.
            groups.append((None,) * len(known[0]))
        ell = broadcast(ctx, groups)
    elif ellipses:
        ell = None
    if out_term is not None:
        out_head, out_tail = out_term
        if not set(out_head + (out_tail or "")) <= set(extent):
            return [None]
    else:
        # Implicit output: the ellipsis dimensions, then the letters used exactly once, in ASCII order.
        used = "".join(head + (tail or "") for head, tail in terms)
        once = "".join(sorted(c for c in set(used) if used.count(c) == 1))
        out_head, out_tail = ("", once) if ellipses else (once, None)
    if ell is None or (out_tail is None and ell):
        return [None]  # unknown ellipsis dimensions, or some the output drops (which fails at run time)
    middle = ell if out_tail is not None else ()
    return [(*(extent[c] for c in out_head), *middle, *(extent[c] for c in out_tail or ""))]


# --- reductions ---------------------------------------------------------------------------------


def _reduced(ctx: ShapeContext, x: ShapeT, axes: Sequence[int], keep: bool) -> ShapeT:
    """``x`` reduced over ``axes``, each in ``[-r, r-1]`` (none is, for a scalar)."""
    red = {norm_axis(ctx, a, len(x), "reduction axis") for a in axes}  # a repeated axis counts once
    return tuple(1 if i in red else d for i, d in enumerate(x) if keep or i not in red)


@shape_rule(
    "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin",
    "ReduceProd", "ReduceSum", "ReduceSumSquare",
)  # fmt: skip
def _reduce(ctx: ShapeContext) -> list[ShapeT | None]:
    x = ctx.shape(0)
    keep = bool(ctx.attr("keepdims", 1))
    # axes became an input (with noop_with_empty_axes) in ReduceSum-13 and in the others' version 18.
    if ctx.since < (13 if ctx.op_type == "ReduceSum" else 18):
        axes: list[int] | None = list(ctx.attr("axes") or [])
        noop = False
    else:
        noop = bool(ctx.attr("noop_with_empty_axes", 0))
        axes = ctx.ints(1) if ctx.present(1) else []
        if axes is None and ctx.shape(1) == (0,):
            axes = []
    if axes == [] and noop:
        return [x]  # reduction over no axis: the shape is unchanged, whatever keepdims says
    if x is None:
        return [None]
    if axes is None:
        # Axes not known: with keepdims every extent is kept or becomes 1; without, even the rank is open.
        return [tuple(1 if d == 1 else None for d in x)] if keep else [None]
    return [_reduced(ctx, x, axes or range(len(x)), keep)]


@shape_rule("ArgMax", "ArgMin")
def _arg_reduce(ctx: ShapeContext) -> list[ShapeT | None]:
    x = ctx.shape(0)
    return [None if x is None else _reduced(ctx, x, [ctx.attr("axis", 0)], bool(ctx.attr("keepdims", 1)))]


@shape_rule("CumSum", "CumProd")
def _cumulative(ctx: ShapeContext) -> list[ShapeT | None]:
    _check_axis(ctx, _scalar(ctx, 1), ctx.shape(0))
    return [ctx.shape(0)]


@shape_rule("Softmax", "LogSoftmax", "Hardmax")
def _softmax(ctx: ShapeContext) -> list[ShapeT | None]:
    _check_axis(ctx, ctx.attr("axis"), ctx.shape(0))
    return [ctx.shape(0)]


# --- signal -------------------------------------------------------------------------------------


def _complex_last(ctx: ShapeContext, d: Extent, what: str) -> None:
    if isinstance(d, int) and d not in (1, 2):
        ctx.fail(f"{what}: the last axis holds a real (1) or complex (2) value, got extent {d}")


@shape_rule("DFT")
def _dft(ctx: ShapeContext) -> list[ShapeT | None]:
    x = ctx.shape(0)
    if x is None or len(x) < 2:
        return [None]
    r = len(x)
    _complex_last(ctx, x[-1], "DFT input")
    inverse, onesided = bool(ctx.attr("inverse", 0)), bool(ctx.attr("onesided", 0))
    irfft = inverse and onesided
    if onesided and x[-1] == (1 if inverse else 2):
        # A one-sided forward transform takes real input only, a one-sided inverse complex input only.
        ctx.fail(f"DFT with onesided=1, inverse={int(inverse)} cannot take a last axis of extent {x[-1]}")
    # DFT-17: axis attribute (default 1); DFT-20: axis input 2 (default -2).
    axis = ctx.attr("axis", 1) if ctx.since < 20 else (_scalar(ctx, 2) if ctx.present(2) else -2)
    out = [*x[:-1], 1 if irfft else 2]
    length = _scalar(ctx, 1)
    if axis is None:
        # Unknown axis: only a full-length two-sided transform keeps every extent.
        return [tuple(out) if not ctx.present(1) and not onesided else (None,) * (r - 1) + (out[-1],)]
    a = axis + r if axis < 0 else axis
    if not 0 <= a <= r - 2:
        ctx.fail(f"DFT axis {axis} is out of range for rank {r} (the last axis holds the complex parts)")
    d = x[a]
    n: Extent
    if ctx.present(1):
        n = length
    elif irfft:
        n = 2 * (d - 1) if isinstance(d, int) else None  # the IRFFT default dft_length
    else:
        n = d
    out[a] = (n // 2 + 1 if isinstance(n, int) else None) if onesided and not inverse else n
    return [tuple(out)]


@shape_rule("STFT")
def _stft(ctx: ShapeContext) -> list[ShapeT | None]:
    s = ctx.shape(0)
    # signal: [batch, length, 1 or 2]; onnxruntime also reads a rank-2 signal as real.
    if s is None or len(s) not in (2, 3):
        return [None]
    if len(s) == 3:
        _complex_last(ctx, s[2], "STFT signal")
    batch, length = s[0], s[1]
    w = ctx.shape(2) if ctx.present(2) else None
    wlen = w[0] if w is not None and len(w) == 1 else None
    fl: Extent
    if ctx.present(3):
        fl = _scalar(ctx, 3)
        if ctx.present(2):
            fl = unify(ctx, fl, wlen, "STFT frame_length and the window length")
    else:
        fl = wlen if ctx.present(2) else length  # the definition's defaults
    step = _scalar(ctx, 1)
    frames: Extent = None
    if fl == length and fl is not None:
        frames = 1
    elif isinstance(length, int) and isinstance(fl, int) and step is not None and step > 0 and length >= fl:
        frames = (length - fl) // step + 1
    bins = (fl // 2 + 1 if isinstance(fl, int) else None) if ctx.attr("onesided", 1) else fl
    return [(batch, frames, bins, 2)]


@shape_rule("BlackmanWindow", "HammingWindow", "HannWindow")
def _window(ctx: ShapeContext) -> list[ShapeT | None]:
    size = _scalar(ctx, 0)
    return [(size if size is not None and size >= 0 else None,)]


@shape_rule("MelWeightMatrix")
def _mel_weight_matrix(ctx: ShapeContext) -> list[ShapeT | None]:
    bins, length = _scalar(ctx, 0), _scalar(ctx, 1)
    return [(None if length is None else length // 2 + 1, bins)]


# --- text ---------------------------------------------------------------------------------------


@shape_rule("StringConcat")
def _string_concat(ctx: ShapeContext) -> list[ShapeT | None]:
    return [broadcast(ctx, [ctx.shape(0), ctx.shape(1)])]


shape_rule("RegexFullMatch")(same_as_input)


@shape_rule("StringNormalizer")
def _string_normalizer(ctx: ShapeContext) -> list[ShapeT | None]:
    x = ctx.shape(0)
    if x is None:
        return [None]
    # X is [C] or [1, C]; stop words remove an unknown number of elements.
    if len(x) not in (1, 2) or (len(x) == 2 and isinstance(x[0], int) and x[0] != 1):
        ctx.fail(f"StringNormalizer accepts [C] and [1, C] inputs, got {list(x)}")
    if not ctx.attr("stopwords"):
        return [x]
    return [(None,) if len(x) == 1 else (1, None)]


@shape_rule("StringSplit")
def _string_split(ctx: ShapeContext) -> list[ShapeT | None]:
    x = ctx.shape(0)
    return [None if x is None else (*x, None), x]


@shape_rule("TfIdfVectorizer")
def _tfidf(ctx: ShapeContext) -> list[ShapeT | None]:
    x = ctx.shape(0)
    idx = ctx.attr("ngram_indexes") or []
    width = max(idx) + 1 if idx else None
    if x is None:
        return [None]
    if len(x) not in (1, 2):
        ctx.fail(f"TfIdfVectorizer accepts [C] and [N, C] inputs, got rank {len(x)}")
    return [(width,) if len(x) == 1 else (x[0], width)]


# --- optionals and sequences (the other sequence operators: shape_ops/sequence.py) ----------------


@shape_rule("OptionalGetElement")
def _optional_get_element(ctx: ShapeContext) -> list[ShapeT | None]:
    # Since version 18 a tensor input is returned as is; an optional input has no tensor shape here.
    return [ctx.shape(0)]


@shape_rule("OptionalHasElement", "SequenceLength")
def _scalar_output(ctx: ShapeContext) -> list[ShapeT | None]:
    return [()]


# --- ai.onnx.ml ---------------------------------------------------------------------------------


def _batch(x: ShapeT | None) -> Extent:
    """N of an ``[N, F]`` input; a 1-D input is one sample (what the runtimes do)."""
    if x is None or len(x) not in (1, 2):
        return None
    return 1 if len(x) == 1 else x[0]


def _count(ctx: ShapeContext, *names: str) -> int | None:
    """The length of the one list attribute of ``names`` that is set (None if none or several disagree)."""
    lengths = {len(ctx.attr(n)) for n in names if ctx.attr(n)}
    return lengths.pop() if len(lengths) == 1 else None


shape_rule("Binarizer", "CategoryMapper", "Imputer", "LabelEncoder", "Normalizer", "Scaler", domain=_ML)(same_as_input)


@shape_rule("ArrayFeatureExtractor", domain=_ML)
def _array_feature_extractor(ctx: ShapeContext) -> list[ShapeT | None]:
    x, y = ctx.shape(0), ctx.shape(1)
    if x is None or not x:
        return [None]
    k = None if y is None else dim_prod(y)  # every index of Y selects one element of the last axis
    return [(1, k) if len(x) == 1 else (*x[:-1], k)]


@shape_rule("LinearClassifier", domain=_ML)
def _linear_classifier(ctx: ShapeContext) -> list[ShapeT | None]:
    x = ctx.shape(0)
    n = _batch(x)
    coef = ctx.attr("coefficients") or []
    intercepts = ctx.attr("intercepts")
    rows: int | None = len(intercepts) if intercepts else None
    f = x[-1] if x else None
    if rows is None and isinstance(f, int) and f > 0 and len(coef) % f == 0:
        rows = len(coef) // f
    # One row of coefficients with two labels is a binary classifier scoring both classes.
    scores = 2 if rows == 1 and _count(ctx, "classlabels_ints", "classlabels_strings") == 2 else rows
    return [(n,), (n, scores)]


@shape_rule("LinearRegressor", domain=_ML)
def _linear_regressor(ctx: ShapeContext) -> list[ShapeT | None]:
    return [(_batch(ctx.shape(0)), int(ctx.attr("targets", 1)))]


@shape_rule("SVMClassifier", domain=_ML)
def _svm_classifier(ctx: ShapeContext) -> list[ShapeT | None]:
    n = _batch(ctx.shape(0))
    k = _count(ctx, "classlabels_ints", "classlabels_strings")
    scores = k
    if k is not None and k > 2 and sum(ctx.attr("vectors_per_class") or []) > 0 and not ctx.attr("prob_a"):
        scores = k * (k - 1) // 2  # support vectors without probabilities: one decision value per class pair
    return [(n,), (n, scores)]


@shape_rule("SVMRegressor", domain=_ML)
def _svm_regressor(ctx: ShapeContext) -> list[ShapeT | None]:
    return [(_batch(ctx.shape(0)), 1)]


@shape_rule("TreeEnsembleClassifier", domain=_ML)
def _tree_ensemble_classifier(ctx: ShapeContext) -> list[ShapeT | None]:
    n = _batch(ctx.shape(0))
    return [(n,), (n, _count(ctx, "classlabels_int64s", "classlabels_strings"))]


@shape_rule("TreeEnsembleRegressor", "TreeEnsemble", domain=_ML)
def _tree_ensemble(ctx: ShapeContext) -> list[ShapeT | None]:
    return [(_batch(ctx.shape(0)), ctx.attr("n_targets"))]


@shape_rule("OneHotEncoder", domain=_ML)
def _one_hot_encoder(ctx: ShapeContext) -> list[ShapeT | None]:
    x = ctx.shape(0)
    return [None if x is None else (*x, _count(ctx, "cats_int64s", "cats_strings"))]


@shape_rule("FeatureVectorizer", domain=_ML)
def _feature_vectorizer(ctx: ShapeContext) -> list[ShapeT | None]:
    x = ctx.shape(0)
    n = None if x is None else (1 if len(x) <= 1 else x[0])
    dims = ctx.attr("inputdimensions")
    return [(n, sum(dims) if dims else None)]


@shape_rule("DictVectorizer", domain=_ML)
def _dict_vectorizer(ctx: ShapeContext) -> list[ShapeT | None]:
    # The definition says "1-D"; onnxruntime and this runtime both give one row [1, V].
    return [(1, _count(ctx, "int64_vocabulary", "string_vocabulary"))]


@shape_rule("CastMap", domain=_ML)
def _cast_map(ctx: ShapeContext) -> list[ShapeT | None]:
    dense = ctx.attr("map_form", "DENSE") == "DENSE"
    return [(1, None if dense else int(ctx.attr("max_map", 1)))]


@shape_rule("ZipMap", domain=_ML)
def _zip_map(ctx: ShapeContext) -> list[ShapeT | None]:
    return [None]  # a sequence of maps


# --- ai.onnx.preview.training -------------------------------------------------------------------

# Per optimizer: the number of input kinds (X, G, then the states), and for each output kind the input
# kinds its pseudo code combines element-wise (with broadcasting), e.g. Adam's V_new = alpha*V + (1-alpha)*(X, G).
_OPTIMIZERS: dict[str, tuple[int, tuple[tuple[int, ...], ...]]] = {
    "Adagrad": (3, ((0, 1, 2), (0, 1, 2))),  # X, G, H -> X_new, H_new
    "Adam": (4, ((0, 1, 2, 3), (0, 1, 2), (0, 1, 3))),  # X, G, V, H -> X_new, V_new, H_new
    "Momentum": (3, ((0, 1, 2), (0, 1, 2))),  # X, G, V -> X_new, V_new
}


@shape_rule("Adagrad", "Adam", "Momentum", domain=_TRAINING)
def _optimizer(ctx: ShapeContext) -> list[ShapeT | None]:
    kinds, outs = _OPTIMIZERS[ctx.op_type]
    count, rest = divmod(ctx.n_inputs - 2, kinds)  # inputs: R, T, then the tensors kind after kind
    if rest or count < 1:
        return [None] * ctx.n_outputs
    return [broadcast(ctx, [ctx.shape(2 + kind * count + i) for kind in uses]) for uses in outs for i in range(count)]


@shape_rule("Gradient", domain=_TRAINING)
def _gradient(ctx: ShapeContext) -> list[ShapeT | None]:
    return [None] * ctx.n_outputs  # the shapes of the xs tensors, named by attribute, not seen here
