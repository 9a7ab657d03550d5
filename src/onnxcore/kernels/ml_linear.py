"""Linear models and support vector machines of ``ai.onnx.ml``: LinearClassifier, LinearRegressor,
SVMClassifier, SVMRegressor (version 1 each).

The definitions state the formulas loosely; where they are silent (the two-column scores of a binary
classifier holding a single score, labels of a one-score classifier, the pairwise SVM scores) these
kernels follow onnxruntime, the reference consumer of these operators, and the tests compare with it.
Scores are computed in float64 and returned as float32 (the Z/Y outputs are tensor(float)).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from onnxcore.errors import EvaluationError
from onnxcore.kernels import accel
from onnxcore.kernels._ml_common import again_rows
from onnxcore.kernels.ml import (
    ML,
    as_rows,
    check_post_transform,
    encode_strings,
    post_transform_rows,
    sigmoid,
    string_array,
)
from onnxcore.kernels.registry import kernel

__all__: list[str] = []


def _labels(ints: list[int] | None, strings: list[str] | None) -> np.ndarray | None:
    """The class labels as an int64 array or an object array of bytes (None when neither is given)."""
    if strings:
        return string_array(encode_strings(strings))
    if ints:
        return np.asarray(ints, dtype=np.int64)
    return None


def _binary_labels(labels: np.ndarray | None, strings: bool) -> tuple[Any, Any]:
    """(negative, positive) labels of a classifier producing one score: the two labels if there are two,
    else 0/1 (or "0"/"1")."""
    if labels is not None and labels.size == 2:
        return labels[0], labels[1]
    return (b"0", b"1") if strings else (np.int64(0), np.int64(1))


def _pick(labels: np.ndarray | None, idx: np.ndarray, strings: bool) -> np.ndarray:
    if labels is None:
        return idx.astype(np.int64)
    if idx.size and (idx.max() >= labels.size):
        raise EvaluationError(f"class index {int(idx.max())} has no label ({labels.size} labels)")
    return labels[idx] if not strings else string_array(list(labels[idx]))


def _two_columns(s: np.ndarray, post_transform: str) -> np.ndarray:
    """Scores ``[N, 2]`` of a binary classifier that computed one score per row: the complement and the
    score itself. With NONE the complement is ``1 - s`` as onnxruntime writes it; a transform is applied to
    the score first, and the complement of a probability ``p`` is ``1 - p``."""
    if post_transform in ("SOFTMAX", "SOFTMAX_ZERO"):
        return post_transform_rows(np.concatenate([-s, s], axis=1), post_transform)
    t = post_transform_rows(s, post_transform)
    return np.concatenate([1.0 - t, t], axis=1)


# ---------------------------------------------------------------------------------------------
# Linear models
# ---------------------------------------------------------------------------------------------


# The linear models on a few rows (at most _COMPILED_ROWS), where numpy's dozen calls (conversion, product,
# intercepts, each step of the transform, argmax, the float32 copy) cost more than the arithmetic: the
# accelerator's one loop (_jit_ml.linear_rows) for a product of at most _COMPILED_MACS multiply-adds, else BLAS's
# product and one compiled loop for the rest (_jit_ml.linear_finish) when there is a transform (without one numpy's
# four calls after the product cost no more). On more rows numpy's vectorised exp and passes win (measured with
# numpy 2 on 10-300 features, 1-5 classes).
_COMPILED_MACS = 1 << 10
_COMPILED_ROWS = 64
_COMPILED_X = (np.dtype(np.float32), np.dtype(np.float64))
_POSTS = {"NONE": 0, "SOFTMAX": 1, "LOGISTIC": 2}  # the transforms the loop applies (others: numpy)
_NO_INTERCEPTS = np.empty(0)
_NO_BEST = np.empty(0, np.intp)


def _compiled(x: np.ndarray, targets: int, post_transform: str) -> bool:
    """Whether a linear model's rows ``x`` (2-D) take the compiled loop."""
    return (
        x.shape[0] <= _COMPILED_ROWS
        and (post_transform != "NONE" or x.size * targets <= _COMPILED_MACS)
        and x.dtype in _COMPILED_X
        and post_transform in _POSTS
        and x.flags.c_contiguous
        and accel.enabled()
    )


def _most_rows(f: int, targets: int, post_transform: str) -> int:
    """The most rows of ``f`` features :func:`_compiled` takes for a model of ``targets`` (the other tests of it
    depend on the array, which :func:`~onnxcore.kernels._ml_common.again_rows` makes again)."""
    return _COMPILED_ROWS if post_transform != "NONE" else min(_COMPILED_ROWS, _COMPILED_MACS // max(1, f * targets))


def _linear_loop(
    x: np.ndarray, wt: np.ndarray, b: np.ndarray, post: int, mode: int, z: np.ndarray, best: np.ndarray
) -> None:
    """The compiled linear model (see _COMPILED_MACS): the whole of it in one loop, or after BLAS's product."""
    if x.size * wt.shape[1] <= _COMPILED_MACS:
        accel.jit_ml().linear_rows(x, wt, b, post, mode, z, best)
    else:
        accel.jit_ml().linear_finish(np.dot(x.astype(np.float64), wt), b, post, mode, z, best)


def _many_rows(
    scores: np.ndarray, b: np.ndarray, post_transform: str, z: np.ndarray, best: np.ndarray, binary: bool = False
) -> None:
    """A classifier's rows past the compiled loop's (``scores`` BLAS's float64 products, overwritten): the
    intercepts, each row's first largest score into ``best`` and the transformed scores into ``z`` (float32), by
    compiled passes and numpy's exp: the values of the numpy steps (``+=``, ``argmax``, ``post_transform_rows``,
    ``astype``) bit for bit. ``binary``: one score per row of a two-class classifier (NONE or LOGISTIC), ``best``
    whether it is positive and ``z`` its two columns (``_two_columns``)."""
    fns = accel.jit_ml()
    post = _POSTS[post_transform]
    e = np.empty_like(scores) if post else scores  # (no exp without a transform: the first pass finishes)
    fns.linear_scores_pass(scores, b, post, e, z, best, binary)
    if post:
        np.exp(e, out=e)
        fns.linear_exp_finish(scores, e, post, z, binary)


class _LinearClassifier:
    """A LinearClassifier's coefficients, intercepts and labels converted once (a session prepares one per node,
    see ``prepare``; a direct call makes one per call).

    The coefficients are kept transposed and contiguous per feature count (``[F, targets]``, made on the first
    call with that count): a batch's scores are one product, with no per-call reshape or transposed view.
    """

    __slots__ = ("_by_features", "_loop", "coef", "intercepts", "labels", "post", "strings")

    def __init__(
        self,
        *,
        coefficients: list[float],
        classlabels_ints: list[int] | None = None,
        classlabels_strings: list[str] | None = None,
        intercepts: list[float] | None = None,
        multi_class: int = 0,
        post_transform: str = "NONE",
    ) -> None:
        self.post = check_post_transform(post_transform)
        self.coef = np.asarray(coefficients, dtype=np.float32).astype(np.float64)
        self.intercepts = np.asarray(intercepts, dtype=np.float32).astype(np.float64) if intercepts else None
        self.strings = bool(classlabels_strings)
        self.labels = _labels(classlabels_ints, classlabels_strings)
        self._by_features: dict[int, tuple[int, np.ndarray]] = {}
        # What the compiled loop took on an earlier call: (features, most rows, the loop's arguments); a later
        # call of rows like those goes straight to it (again_rows).
        self._loop: tuple[Any, ...] = (-1, 0)

    def _weights(self, f: int) -> tuple[int, np.ndarray]:
        """(targets, ``W^T`` as a contiguous ``[F, targets]`` array) for ``f`` features; EvaluationError when the
        coefficients do not fit."""
        got = self._by_features.get(f)
        if got is None:
            coef, b, labels = self.coef, self.intercepts, self.labels
            targets = b.size if b is not None else (coef.size // f if f else 0)
            if targets == 0 or coef.size != targets * f:
                raise EvaluationError(f"LinearClassifier: {coef.size} coefficients do not fit {f} features")
            if targets > 1 and labels is not None and labels.size < targets:
                raise EvaluationError(f"LinearClassifier: {targets} classes but {labels.size} labels")
            got = (targets, np.ascontiguousarray(coef.reshape(targets, f).T))
            if len(self._by_features) < 8:
                self._by_features[f] = got
        return got

    def __call__(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        loop = self._loop
        if again_rows(x, loop[0]) and x.shape[0] <= loop[1]:
            return self._compiled_call(x, loop)
        x = as_rows(np.asarray(x))
        f = x.shape[1]
        targets, wt = self._weights(f)
        labels, strings, post_transform = self.labels, self.strings, self.post
        binary = targets == 1 and labels is not None and labels.size == 2
        if (targets > 1 or binary) and _compiled(x, targets, post_transform):
            b = _NO_INTERCEPTS if self.intercepts is None else self.intercepts
            self._loop = loop = (
                f, _most_rows(f, targets, post_transform), wt, b, _POSTS[post_transform], int(targets == 1),
                2 if binary else targets, binary,
            )  # fmt: skip
            return self._compiled_call(x, loop)
        rows = x.astype(np.float64)
        # (a new array: the intercepts are added in place; np.dot: kernels/linalg.py's docstring, small products)
        scores = np.dot(rows, wt)
        binary = targets == 1 and labels is not None and labels.size == 2 and post_transform in ("NONE", "LOGISTIC")
        if (targets > 1 or binary) and post_transform in _POSTS and accel.enabled():
            # Many rows (more than the compiled loop takes): the passes numpy makes per step of a few columns each
            # (intercepts, argmax, the transform's shift and sums, the float32 copy) as two compiled passes around
            # numpy's own exp, so the values are this path's below bit for bit (an LDA's 1,000 rows of three
            # classes: 34 -> 22 us).
            z = np.empty((scores.shape[0], 2 if binary else targets), np.float32)
            best = np.empty(scores.shape[0], np.intp)
            b = _NO_INTERCEPTS if self.intercepts is None else self.intercepts
            _many_rows(scores, b, post_transform, z, best, binary)
            return self._labels_of(best, binary), z
        if self.intercepts is not None:
            scores += self.intercepts
        if targets == 1:
            neg, pos = _binary_labels(labels, strings)
            pick = scores[:, 0] > 0
            y = np.where(pick, pos, neg)
            y = string_array(list(y)) if strings else y.astype(np.int64)
            if labels is not None and labels.size == 2:
                z = _two_columns(scores, post_transform)
            else:
                z = post_transform_rows(scores, post_transform)
        else:
            # (ndarray.argmax: np.argmax's own loop without its Python wrapper; the labels were checked to cover
            # every class index when the weights were made)
            best = scores.argmax(axis=1)
            if labels is None:
                y = best
            elif strings:
                y = string_array(labels[best].tolist())
            else:
                y = labels[best]
            z = post_transform_rows(scores, post_transform)
        return y, z.astype(np.float32)

    def _compiled_call(self, x: np.ndarray, loop: tuple[Any, ...]) -> tuple[np.ndarray, np.ndarray]:
        """The labels and scores of the rows ``x`` (2-D) by the compiled loop (:func:`_compiled` said it takes
        them), ``loop`` the arguments it keeps in ``_loop``: the tuple itself rather than its items as arguments, and
        integer labels picked first (a 1-row classifier: 2.6 -> 2.1 us)."""
        _f, _rows, wt, b, post, mode, cols, binary = loop
        n = x.shape[0]
        z = np.empty((n, cols), np.float32)
        best = np.empty(n, np.intp)
        _linear_loop(x, wt, b, post, mode, z, best)
        labels, strings = self.labels, self.strings
        if not binary and labels is not None and not strings:
            return labels[best], z
        return self._labels_of(best, binary), z

    def _labels_of(self, best: np.ndarray, binary: bool) -> np.ndarray:
        """The labels of the classes ``best`` (indices, which the labels were checked to cover); the indices as
        int64 when there are no labels. ``binary``: ``best`` says whether each row's one score is positive (the
        second label, else the first: ``_binary_labels``)."""
        labels, strings = self.labels, self.strings
        if binary:
            neg, pos = _binary_labels(labels, strings)
            y = np.where(best.astype(bool), pos, neg)
            return string_array(list(y)) if strings else y.astype(np.int64)
        if labels is None:
            return best.astype(np.int64)
        if strings:
            return string_array(labels[best].tolist())
        return labels[best]


def _prepare_linear_classifier(**attrs: Any) -> _LinearClassifier:
    return _LinearClassifier(**attrs)


@kernel("LinearClassifier", 1, domain=ML, prepare=_prepare_linear_classifier)
def linear_classifier(
    x: np.ndarray,
    *,
    coefficients: list[float],
    classlabels_ints: list[int] | None = None,
    classlabels_strings: list[str] | None = None,
    intercepts: list[float] | None = None,
    multi_class: int = 0,
    post_transform: str = "NONE",
) -> tuple[np.ndarray, np.ndarray]:
    """Scores ``X @ W^T + intercepts`` (one row of ``W`` per class) and the top class of each row.

    A single row of coefficients with two labels is a binary classifier: the label is the second when
    the score is positive, and Z holds two columns. ``multi_class`` does not change the evaluation.
    """
    return _LinearClassifier(
        coefficients=coefficients,
        classlabels_ints=classlabels_ints,
        classlabels_strings=classlabels_strings,
        intercepts=intercepts,
        multi_class=multi_class,
        post_transform=post_transform,
    )(x)


class _LinearRegressor:
    """A LinearRegressor's coefficients and intercepts converted once (prepared once per node), the coefficients
    transposed and contiguous per feature count as :class:`_LinearClassifier` keeps them."""

    __slots__ = ("_by_features", "_loop", "coef", "intercepts", "post", "targets")

    def __init__(
        self,
        *,
        coefficients: list[float] | None = None,
        intercepts: list[float] | None = None,
        post_transform: str = "NONE",
        targets: int = 1,
    ) -> None:
        self.post = check_post_transform(post_transform)
        self.coef = np.asarray(coefficients or [], dtype=np.float32).astype(np.float64)
        self.intercepts = np.asarray(intercepts, dtype=np.float32).astype(np.float64) if intercepts else None
        self.targets = targets
        self._by_features: dict[int, np.ndarray] = {}
        self._loop: tuple[Any, ...] = (-1, 0)  # as _LinearClassifier's

    def _weights(self, f: int) -> np.ndarray:
        wt = self._by_features.get(f)
        if wt is None:
            coef, targets, b = self.coef, self.targets, self.intercepts
            if targets < 1 or coef.size != targets * f:
                raise EvaluationError(f"LinearRegressor: {coef.size} coefficients for {targets} targets x {f} features")
            if b is not None and b.size not in (1, targets):
                raise EvaluationError(f"LinearRegressor: {b.size} intercepts for {targets} targets")
            wt = np.ascontiguousarray(coef.reshape(targets, f).T)
            if len(self._by_features) < 8:
                self._by_features[f] = wt
        return wt

    def __call__(self, x: np.ndarray) -> np.ndarray:
        loop = self._loop
        if again_rows(x, loop[0]) and x.shape[0] <= loop[1]:
            _f, _rows, wt, b, post = loop
        else:
            x = as_rows(np.asarray(x))
            wt = self._weights(x.shape[1])
            b = self.intercepts
            if not (_compiled(x, wt.shape[1], self.post) and (b is None or b.size == wt.shape[1])):
                return self._numpy_call(x, wt)
            b, post = _NO_INTERCEPTS if b is None else b, _POSTS[self.post]
            self._loop = (x.shape[1], _most_rows(x.shape[1], wt.shape[1], self.post), wt, b, post)
        out = np.empty((x.shape[0], wt.shape[1]), np.float32)
        _linear_loop(x, wt, b, post, 0, out, _NO_BEST)
        return out

    def _numpy_call(self, x: np.ndarray, wt: np.ndarray) -> np.ndarray:
        rows = x.astype(np.float64)
        y = np.dot(rows, wt)  # (np.dot: kernels/linalg.py's docstring, small products)
        b = self.intercepts
        many = self.post != "NONE" or (b is not None and y.shape[1] > 1)  # (else numpy's two calls cost no more)
        if many and self.post in _POSTS and (b is None or b.size == y.shape[1]) and accel.enabled():
            # (the classifier's passes on many rows, _many_rows: these steps' values bit for bit)
            out = np.empty(y.shape, np.float32)
            _many_rows(y, _NO_INTERCEPTS if b is None else b, self.post, out, _NO_BEST)
            return out
        if self.intercepts is not None:
            y += self.intercepts
        if self.post != "NONE":
            y = post_transform_rows(y, self.post)
        return y.astype(np.float32)


def _prepare_linear_regressor(**attrs: Any) -> _LinearRegressor:
    return _LinearRegressor(**attrs)


@kernel("LinearRegressor", 1, domain=ML, prepare=_prepare_linear_regressor)
def linear_regressor(
    x: np.ndarray,
    *,
    coefficients: list[float] | None = None,
    intercepts: list[float] | None = None,
    post_transform: str = "NONE",
    targets: int = 1,
) -> np.ndarray:
    """``X @ W^T + intercepts`` with ``targets`` rows of coefficients, then the post transform."""
    return _LinearRegressor(
        coefficients=coefficients, intercepts=intercepts, post_transform=post_transform, targets=targets
    )(x)


# ---------------------------------------------------------------------------------------------
# Support vector machines
# ---------------------------------------------------------------------------------------------


def _params(kernel_params: list[float] | None) -> tuple[float, float, float]:
    """gamma, coef0 and degree (0 where not given), each rounded to float32 as a FLOATS attribute is."""
    gamma, coef0, degree = (list(kernel_params or []) + [0.0, 0.0, 0.0])[:3]
    return float(np.float32(gamma)), float(np.float32(coef0)), float(np.float32(degree))


def _kernel_matrix(
    rows: np.ndarray,
    vectors: np.ndarray,
    kernel_type: str,
    kernel_params: list[float] | tuple[float, float, float] | None,
    vectors_sq: np.ndarray | None = None,
) -> np.ndarray:
    """``K[n, v] = k(x_n, sv_v)`` for the LINEAR, POLY, RBF and SIGMOID kernels (params: gamma, coef0, degree, or
    those of :func:`_params` already converted); ``vectors_sq``: the support vectors' squared norms, when known."""
    gamma, coef0, degree = kernel_params if isinstance(kernel_params, tuple) else _params(kernel_params)
    if kernel_type == "LINEAR":
        return rows @ vectors.T
    if kernel_type == "POLY":
        return np.power(gamma * (rows @ vectors.T) + coef0, degree)
    if kernel_type == "RBF":
        sq = np.square(vectors).sum(axis=1) if vectors_sq is None else vectors_sq
        # exp(-gamma * max(|x|^2 + |v|^2 - 2 x.v, 0)): the operations in this order, into two buffers (the same
        # results as the whole-array expression, without an allocation per step).
        g = rows @ vectors.T
        if rows.dtype == np.float64 and sq.dtype == np.float64 and g.flags.c_contiguous and accel.enabled():
            # The six passes below in one compiled loop (the same steps in the same order), then numpy's exp
            accel.jit_ml().rbf_exponents(g, np.ascontiguousarray(rows), sq, -gamma)
            return np.exp(g, out=g)
        np.multiply(2.0, g, out=g)
        d2 = np.add(np.add.reduce(np.square(rows), axis=1)[:, None], sq[None, :])
        np.subtract(d2, g, out=d2)
        np.maximum(d2, 0.0, out=d2)
        np.multiply(-gamma, d2, out=d2)
        return np.exp(d2, out=d2)
    if kernel_type == "SIGMOID":
        return np.tanh(gamma * (rows @ vectors.T) + coef0)
    raise EvaluationError(f"unknown kernel_type {kernel_type!r} (LINEAR, POLY, RBF or SIGMOID)")


def _f32(values: list[float] | None) -> np.ndarray:
    return np.asarray(values or [], dtype=np.float32).astype(np.float64)


_SCALAR_ROWS = 4
# Batches up to this many rows (one) count SVMClassifier's votes on Python ints, or with the accelerator by its one-row
# passes (_SVC._one_row_compiled); 0: neither, the batch path (for the tests).
_ONE_ROW = 1
_COUPLING_ITERATIONS = 100  # libsvm's and onnxruntime's bound on the coupling's fixed-point iterations
_PAIR_MATRIX_MAX = 1 << 22  # at most this many elements (32 MiB) in SVMClassifier's [vectors, pairs] matrix


def _couple_row(r: list[list[float]], iters: int) -> list[float]:
    """:func:`_couple_probabilities` of one row (``r[i][j]``), step for step."""
    k = len(r)
    q = [[-r[j][t] * r[t][j] for j in range(k)] for t in range(k)]
    for t in range(k):
        q[t][t] = sum(r[j][t] * r[j][t] for j in range(k) if j != t)
    p = [1.0 / k] * k
    eps = 0.005 / k
    for _ in range(iters):
        qp = [sum(q[i][j] * p[j] for j in range(k)) for i in range(k)]
        pqp = sum(p[i] * qp[i] for i in range(k))
        err = 0.0
        for v in qp:
            err = max(err, abs(v - pqp))  # a NaN error is passed over, as onnxruntime's loop does
        if err < eps:
            break
        for t in range(k):
            qtt = q[t][t]
            diff = (-qp[t] + pqp) / qtt
            p[t] += diff
            pqp = (pqp + diff * (diff * qtt + 2 * qp[t])) / (1 + diff) / (1 + diff)
            qp = [(qp[j] + diff * q[t][j]) / (1 + diff) for j in range(k)]
            p = [v / (1 + diff) for v in p]
    return p


def _ordered_sum(terms: list[np.ndarray]) -> np.ndarray:
    """``0.0 + terms[0] + terms[1] + ...`` in that order (the compiled loop's and Python's, so the same bits)."""
    out = terms[0] + 0.0
    for t in terms[1:]:
        out += t
    return out


def _couple_probabilities(r: np.ndarray, iters: int = _COUPLING_ITERATIONS) -> np.ndarray:
    """Class probabilities from pairwise ones (Wu, Lin and Weng 2004, method 2, as in libsvm).

    ``r[n, i, j]`` estimates P(class i | i or j). Solved per row by the fixed-point iteration of libsvm and
    onnxruntime: compiled row by row when the accelerator is on, else vectorised over the rows (a row stops
    changing once it has converged), or on Python floats for a few rows; the three give the same bits (every sum
    in index order).
    """
    n, k, _ = r.shape
    if accel.enabled():
        out = np.empty((n, k))
        accel.jit_ml().couple_rows(np.ascontiguousarray(r, dtype=np.float64), iters, np.empty((k, k)), np.empty(k), out)
        return out
    if n <= _SCALAR_ROWS:
        # A few rows (a request of one): the same iteration on Python floats, without numpy's per-call cost.
        return np.array([_couple_row(r[i].tolist(), iters) for i in range(n)], dtype=np.float64).reshape(n, k)
    rt = np.swapaxes(r, 1, 2)
    # Q[t,t] = sum_{j != t} r[j,t]^2 ; Q[t,j] = -r[j,t] * r[t,j]
    q = -rt * r
    sq = np.square(rt)
    for t in range(k):
        q[:, t, t] = _ordered_sum([sq[:, t, j] for j in range(k) if j != t]) if k > 1 else 0.0
    p = np.full((n, k), 1.0 / k)
    eps = 0.005 / k
    active = np.ones(n, dtype=bool)
    for _ in range(iters):
        qp = _ordered_sum([q[:, :, j] * p[:, j, None] for j in range(k)])
        pqp = _ordered_sum([p[:, i] * qp[:, i] for i in range(k)])
        # The largest error of a row, NaN passed over (fmax), from 0 as onnxruntime's loop starts.
        err = np.fmax.reduce(np.abs(qp - pqp[:, None]), axis=1, initial=0.0)
        active &= err >= eps
        if not active.any():
            break
        a = active
        for t in range(k):
            qtt = q[a, t, t]
            diff = (-qp[a, t] + pqp[a]) / qtt
            p_a = p[a]
            p_a[:, t] += diff
            pqp[a] = (pqp[a] + diff * (diff * qtt + 2 * qp[a, t])) / (1 + diff) / (1 + diff)
            qp[a] = (qp[a] + diff[:, None] * q[a, t, :]) / (1 + diff)[:, None]
            p[a] = p_a / (1 + diff)[:, None]
    return p


class _SVC:
    """An SVMClassifier's attributes converted once (a session prepares them once per node, see ``prepare``)."""

    __slots__ = ("coef", "iu", "ju", "k", "kernel_params", "kernel_type", "labels", "n_vec", "pa", "pair_matrix",
                 "pairs", "params", "pb", "post", "rho", "strings", "sv", "sv_sq", "vote_first", "vote_second",
                 "vpc")  # fmt: skip

    def __init__(
        self,
        *,
        classlabels_ints: list[int] | None = None,
        classlabels_strings: list[str] | None = None,
        coefficients: list[float] | None = None,
        kernel_params: list[float] | None = None,
        kernel_type: str = "LINEAR",
        post_transform: str = "NONE",
        prob_a: list[float] | None = None,
        prob_b: list[float] | None = None,
        rho: list[float] | None = None,
        support_vectors: list[float] | None = None,
        vectors_per_class: list[int] | None = None,
    ) -> None:
        self.post = check_post_transform(post_transform)
        self.strings = bool(classlabels_strings)
        labels = _labels(classlabels_ints, classlabels_strings)
        if labels is None:
            raise EvaluationError("SVMClassifier: one of classlabels_ints and classlabels_strings is required")
        self.labels = labels
        self.k = labels.size
        self.iu, self.ju = np.triu_indices(self.k, 1)  # where the pairwise probabilities go, made once
        self.coef = _f32(coefficients)
        self.rho = _f32(rho)
        self.pa, self.pb = _f32(prob_a), _f32(prob_b)
        if self.pa.size != self.pb.size:
            raise EvaluationError("SVMClassifier: prob_a and prob_b must have the same size")
        self.vpc = [int(v) for v in (vectors_per_class or [])]
        # Per pair of classes (i < j, libsvm's order): i, j and the slices of their support vectors.
        starts = [0]
        for v in self.vpc:
            starts.append(starts[-1] + v)
        k = len(self.vpc)
        self.pairs = [
            (i, j, slice(starts[i], starts[i + 1]), slice(starts[j], starts[j + 1]))
            for i in range(k - 1)
            for j in range(i + 1, k)
        ]
        # [pairs, K] indicators of each pair's first and second class (the votes as two integer products).
        self.vote_first = np.zeros((len(self.pairs), len(self.vpc)), np.int64)
        self.vote_second = np.zeros((len(self.pairs), len(self.vpc)), np.int64)
        for idx, (i, j, _, _) in enumerate(self.pairs):
            self.vote_first[idx, i] = 1
            self.vote_second[idx, j] = 1
        self.sv = _f32(support_vectors)
        self.pair_matrix: np.ndarray | None = None  # made by _decisions on the first call
        self.kernel_type, self.kernel_params = kernel_type, kernel_params
        self.params = _params(kernel_params)
        n_vec = self.n_vec = sum(self.vpc)
        self.sv_sq: np.ndarray | None = None
        if n_vec and self.sv.size % n_vec == 0 and kernel_type == "RBF":
            self.sv_sq = np.square(self.sv.reshape(n_vec, -1)).sum(axis=1)

    def __call__(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        k, labels, strings, post_transform = self.k, self.labels, self.strings, self.post
        rows = as_rows(np.asarray(x))
        # Read as float32 (the type the operator takes), computed in float64.
        rows = rows.astype(np.float64) if rows.dtype == np.float32 else rows.astype(np.float32).astype(np.float64)
        n, f = rows.shape
        coef, rho_v, pa, pb, vpc = self.coef, self.rho, self.pa, self.pb, self.vpc
        n_vec = self.n_vec
        if n_vec == 0:
            # liblinear layout: one row of coefficients per class; kernel_type does not apply.
            if f == 0 or coef.size != k * f or rho_v.size < 1:
                raise EvaluationError(f"SVMClassifier: {coef.size} coefficients do not fit {k} classes x {f} features")
            scores = rows @ coef.reshape(k, f).T + rho_v[0]
            best = np.argmax(scores, axis=1) if n else np.zeros(0, np.int64)
            if k == 2 and pa.size == 0:
                mx = scores.max(axis=1) if n else np.zeros(0)
                if (coef >= 0).all():
                    best = np.where(mx >= 0.5, 1, best)
                else:
                    best = np.where(mx > 0, 1, best)
            z = post_transform_rows(scores, post_transform) if k > 1 else scores
            return _pick(labels, best, strings), z.astype(np.float32)
        if len(vpc) != k:
            raise EvaluationError(f"SVMClassifier: {len(vpc)} vectors_per_class for {k} classes")
        sv = self.sv
        if sv.size != n_vec * f:
            raise EvaluationError(f"SVMClassifier: {sv.size} support vector values for {n_vec} vectors x {f} features")
        pairs = k * (k - 1) // 2
        if coef.size < (k - 1) * n_vec or rho_v.size < pairs:
            raise EvaluationError("SVMClassifier: coefficients or rho too short for the classes and vectors")
        if pa.size and pa.size < pairs:
            raise EvaluationError("SVMClassifier: prob_a/prob_b too short for the classes")
        kern = _kernel_matrix(rows, sv.reshape(n_vec, f), self.kernel_type, self.params, self.sv_sq)
        dec = self._decisions(kern, n, pairs)
        if n <= _ONE_ROW and n and pairs and accel.enabled():
            return self._one_row_compiled(dec, pairs)
        if n <= _ONE_ROW and n and k > 2:
            best = self._one_row_vote(dec)
        else:
            # Votes of all pairs at once (exact integer products): pair (i, j) votes i when its decision is positive.
            win = (dec > 0).astype(np.int64)
            votes = win @ self.vote_first + (1 - win) @ self.vote_second
            best = votes.argmax(axis=1) if n else np.zeros(0, np.int64)
        y = _pick(labels, best, strings)
        if pa.size:
            if n == 1:
                r = self._one_row_pairwise(dec, pairs)
            else:
                # Pairwise probability 1 - sigmoid(s * A + B), kept inside [1e-7, 1 - 1e-7] (libsvm's Platt
                # scaling). (np.clip's bounds as two ufuncs: the same values, without clip's Python wrapper)
                pr = np.minimum(np.maximum(1.0 - sigmoid(dec * pa[:pairs] + pb[:pairs]), 1e-7), 1 - 1e-7)
                r = np.zeros((n, k, k))
                iu, ju = self.iu, self.ju
                r[:, iu, ju] = pr
                r[:, ju, iu] = 1.0 - pr
            z = post_transform_rows(_couple_probabilities(r), post_transform) if n else np.zeros((0, k))
        else:
            z = self._decision_scores(dec)
        return y, z.astype(np.float32)

    def _decision_scores(self, dec: np.ndarray) -> np.ndarray:
        """Z of a classifier without probabilities: its pairwise decisions ``[N, pairs]`` transformed (two columns
        for two classes)."""
        if self.k == 2:
            s = dec[:, :1]
            return np.concatenate([-s, s], axis=1) if self.post == "NONE" else np.concatenate([1.0 - s, s], axis=1)
        return post_transform_rows(dec, self.post)

    def _one_row_compiled(self, dec: np.ndarray, pairs: int) -> tuple[np.ndarray, np.ndarray]:
        """The label and Z of one row from its decisions ``[1, pairs]`` by the accelerator: the votes and the Platt
        arguments in one pass, numpy's exp, then the pairwise probabilities and their coupling in a second pass
        (``accel.jit_ml().svc_row_votes`` and ``svc_row_couple``), where the one-row path below makes some twenty
        numpy calls and Python loops over the pairs: the same operations in the same order, so the same bits (the
        tests compare it with the batch path). A model without probabilities takes the first pass's votes only."""
        fns, k, pa = accel.jit_ml(), self.k, self.pa
        first, second = self.iu, self.ju  # (the pairs' classes in libsvm's order: vpc has k entries, checked)
        t, e = np.empty(pairs), np.empty(pairs)
        best = fns.svc_row_votes(dec[0], pa, self.pb, first, second, np.empty(k, np.int64), t, e)
        labels = self.labels
        y = string_array([labels[best]]) if self.strings else labels[best : best + 1].copy()
        if not pa.size:
            return y, self._decision_scores(dec).astype(np.float32)
        np.exp(e, out=e)
        p = np.empty((1, k))
        fns.svc_row_couple(t, e, first, second, _COUPLING_ITERATIONS, np.empty((1, k, k)), np.empty((k, k)),
                           np.empty(k), p)  # fmt: skip
        return y, post_transform_rows(p, self.post).astype(np.float32)

    def _decisions(self, kern: np.ndarray, n: int, pairs: int) -> np.ndarray:
        """The pairwise decision values ``[N, pairs]``: ``kern[:, si] @ coef_j[si] + kern[:, sj] @ coef_i[sj] + rho``
        of each pair (i, j), as one product with a ``[vectors, pairs]`` matrix holding each pair's coefficients on
        its two classes' vectors and zeros elsewhere (made once; a model whose matrix would be too large keeps one
        pair at a time)."""
        rho = self.rho
        pm = self.pair_matrix
        if pm is None and self.n_vec * pairs <= _PAIR_MATRIX_MAX:
            n_vec = self.n_vec
            coefm = self.coef[: (self.k - 1) * n_vec].reshape(self.k - 1, n_vec)
            pm = np.zeros((n_vec, pairs))
            for idx, (i, j, si, sj) in enumerate(self.pairs):
                pm[si, idx] = coefm[j - 1, si]
                pm[sj, idx] = coefm[i, sj]
            self.pair_matrix = pm
        if pm is not None:
            dec = kern @ pm
            np.add(dec, rho[:pairs], out=dec)
            return dec
        coefm = self.coef[: (self.k - 1) * self.n_vec].reshape(self.k - 1, self.n_vec)
        dec = np.zeros((n, pairs))
        for idx, (i, j, si, sj) in enumerate(self.pairs):  # made once (len(vpc) == k was checked by the caller)
            dec[:, idx] = kern[:, si] @ coefm[j - 1, si] + kern[:, sj] @ coefm[i, sj] + rho[idx]
        return dec

    def _one_row_pairwise(self, dec: np.ndarray, pairs: int) -> np.ndarray:
        """The ``[1, k, k]`` pairwise probabilities of one row's decisions (``[1, pairs]``): the batch path's
        values, its exponentials by numpy's ``exp`` and every other step (products, sums, quotients, comparisons,
        the clip to [1e-7, 1 - 1e-7], NaN kept) on Python floats, which round each operation as numpy's ufuncs do;
        no array indexing per pair."""
        t = dec[0] * self.pa[:pairs] + self.pb[:pairs]
        ts = t.tolist()
        es = np.exp(-np.abs(t)).tolist()
        k = self.k
        r = [[0.0] * k for _ in range(k)]
        for (i, j, _si, _sj), v, e in zip(self.pairs, ts, es):
            sig = 1.0 / (1.0 + e) if v >= 0 else e / (1.0 + e)  # sigmoid's two branches, as np.where picks them
            p = min(max(1.0 - sig, 1e-7), 1 - 1e-7)  # (max and min keep a NaN first argument, as the ufuncs do)
            r[i][j] = p
            r[j][i] = 1.0 - p
        return np.array(r, dtype=np.float64).reshape(1, k, k)

    def _one_row_vote(self, dec: np.ndarray) -> np.ndarray:
        """The class with the most votes of one row's decisions (``[1, pairs]``), counted on Python ints (exact, the
        first class of a tie: what the vectorised votes' argmax gives), as a ``[1]`` index array."""
        votes = [0] * self.k
        for (i, j, _si, _sj), d in zip(self.pairs, dec[0].tolist()):
            votes[i if d > 0 else j] += 1
        return np.array([votes.index(max(votes))], np.int64)


def _prepare_svc(**attrs: Any) -> Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]:
    return _SVC(**attrs)


@kernel("SVMClassifier", 1, domain=ML, prepare=_prepare_svc)
def svm_classifier(
    x: np.ndarray,
    *,
    classlabels_ints: list[int] | None = None,
    classlabels_strings: list[str] | None = None,
    coefficients: list[float] | None = None,
    kernel_params: list[float] | None = None,
    kernel_type: str = "LINEAR",
    post_transform: str = "NONE",
    prob_a: list[float] | None = None,
    prob_b: list[float] | None = None,
    rho: list[float] | None = None,
    support_vectors: list[float] | None = None,
    vectors_per_class: list[int] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """A support vector classifier: one-vs-one voting over support vectors (libsvm layout), or a linear
    model (liblinear layout) when no support vectors are given.

    With support vectors, Z holds the pairwise decision values (two columns for two classes), or class
    probabilities coupled from ``prob_a``/``prob_b`` when those are given; the label is the class with the
    most votes. Without, Z holds one score per class and the label is the best scoring class.
    """
    return _SVC(
        classlabels_ints=classlabels_ints,
        classlabels_strings=classlabels_strings,
        coefficients=coefficients,
        kernel_params=kernel_params,
        kernel_type=kernel_type,
        post_transform=post_transform,
        prob_a=prob_a,
        prob_b=prob_b,
        rho=rho,
        support_vectors=support_vectors,
        vectors_per_class=vectors_per_class,
    )(x)


def _prepare_svr(
    *,
    coefficients: list[float] | None = None,
    kernel_params: list[float] | None = None,
    kernel_type: str = "LINEAR",
    n_supports: int = 0,
    one_class: int = 0,
    post_transform: str = "NONE",
    rho: list[float] | None = None,
    support_vectors: list[float] | None = None,
) -> Callable[[np.ndarray], np.ndarray]:
    """An SVMRegressor's attributes converted once; the returned function evaluates a batch."""
    check_post_transform(post_transform)
    coef = _f32(coefficients)
    rho_v = _f32(rho)
    r0 = rho_v[0] if rho_v.size else 0.0
    sv = _f32(support_vectors)
    sv_sq = None
    if n_supports > 0 and sv.size % n_supports == 0 and kernel_type == "RBF":
        sv_sq = np.square(sv.reshape(n_supports, -1)).sum(axis=1)

    def regress(x: np.ndarray) -> np.ndarray:
        rows = as_rows(np.asarray(x)).astype(np.float32).astype(np.float64)
        f = rows.shape[1]
        if n_supports > 0:
            if sv.size != n_supports * f or coef.size < n_supports:
                raise EvaluationError(f"SVMRegressor: {sv.size} support vector values for {n_supports} vectors x {f}")
            kern = _kernel_matrix(rows, sv.reshape(n_supports, f), kernel_type, kernel_params, sv_sq)
            y = kern @ coef[:n_supports] + r0
        else:
            if coef.size != f:
                raise EvaluationError(f"SVMRegressor: {coef.size} coefficients for {f} features")
            y = rows @ coef + r0
        y = y.reshape(-1, 1)
        if one_class:
            y = np.where(y > 0, 1.0, -1.0)
        return post_transform_rows(y, post_transform).astype(np.float32)

    return regress


@kernel("SVMRegressor", 1, domain=ML, prepare=_prepare_svr)
def svm_regressor(
    x: np.ndarray,
    *,
    coefficients: list[float] | None = None,
    kernel_params: list[float] | None = None,
    kernel_type: str = "LINEAR",
    n_supports: int = 0,
    one_class: int = 0,
    post_transform: str = "NONE",
    rho: list[float] | None = None,
    support_vectors: list[float] | None = None,
) -> np.ndarray:
    """``sum_v coef_v k(x, sv_v) + rho`` (or ``x . coef + rho`` without support vectors), shape ``[N, 1]``.

    A one-class SVM (``one_class=1``) outputs 1 for a positive decision value and -1 otherwise.
    """
    return _prepare_svr(
        coefficients=coefficients,
        kernel_params=kernel_params,
        kernel_type=kernel_type,
        n_supports=n_supports,
        one_class=one_class,
        post_transform=post_transform,
        rho=rho,
        support_vectors=support_vectors,
    )(x)
