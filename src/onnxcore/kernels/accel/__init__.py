"""The optional compiled accelerator (the ``accel`` extra, numba): a few kernels compiled to machine code.

Pure numpy is the reference path and the default: the accelerator is used only when numba can be imported and
the environment variable ``ONNXCORE_ACCEL`` is not ``"0"``. It is decided once, on the first kernel call that
asks (:func:`enabled`): importing onnxcore never imports numba. numba is imported in this package only
(:mod:`onnxcore.kernels.accel._jit`, loaded lazily), never in another module of onnxcore.

What it accelerates (each numpy kernel keeps its own path and calls these only when :func:`enabled`):

- float32 ``erf`` and the erf GELU (ai.onnx Erf and Gelu, the plan's erf-GELU fusion, which runs Gelu-20's kernel,
  com.microsoft Gelu and BiasGelu), and the tanh GELU (Gelu-20 with ``approximate="tanh"``, the plan's tanh-GELU
  fusion, com.microsoft FastGelu): the rational approximations of :mod:`onnxcore.kernels._rational_coef`
  evaluated element by element in float64 registers, one pass over memory, operation for operation as the numpy
  kernel (:mod:`onnxcore.kernels._rational`) does, so the float32 results equal the numpy path's bit for bit
  (within 0.54 ulp of the true erf, 0.501 ulp of the true tanh: ``tools/rational_ulp.py`` checks every float32
  value of [0, 4] and [0, 9.125]). float64 ``erf`` stays on numpy: without a vectorised ``exp`` a compiled loop is
  no faster. BiasGelu (float32) adds its bias in the same pass.
- HardSwish (float32, float64): one pass, the numpy kernel's operations in its order (the same results).
- Swish / SiLU in float32 (ai.onnx Swish-24 and the plan's SiLU fusion of ``x * Sigmoid(x)``): one vectorised pass
  with its own float32 ``exp`` (range reduction and a polynomial; numba has no vectorised ``exp``), multiply-adds
  fused: within 4 ulp of the value in double (``tools/swish_accel_ulp.py``: at most 3.87 ulp over every float32 of
  [-104, 104], subnormal results within 2.2e-45), where numpy's ``x / (1 + exp(-x))`` is the reference the tests
  compare with (itself within a few ulp, but -0 from x = -88.7 on, where it is up to 2.7e-37 away).
- A Conv's bias with the SiLU, erf GELU or HardSwish that follows it (the plan's ``ConvActivation``), one pass
  (``swish32``, ``gelu32_rows``, ``hard_swish_rows``; GELU and HardSwish bit for bit as the two steps unfused), in
  place on the Conv's fresh output (``_jit_cnn``'s ``*_inplace`` loops); with the Relu or Clip after it, one pass
  too (``add_row_bias_relu``, ``add_row_bias_clip``: the two steps' values bit for bit).
- AveragePool in 2-D with stride 1 whose output has the input's extents (EfficientFormer's pooling mixer): the
  separable box sums on the flattened planes, long vectorised loops however small the image (the numpy path sums
  the same terms in another order).
- MaxPool in 1-D and 2-D without the Indices output (float32, float64; float16 through float32 as the numpy kernel): the
  separable maxima per output row (the tap rows' maximum into a row buffer padded with -inf, then the column taps
  with the stride, the CNNs' 3x3 and 2x2 stride-2 windows in one step), no padded copy, no strided numpy pass;
  each step numpy's ``np.maximum`` (a NaN wins, of equal values the later tap): the numpy path's values.
- GlobalAveragePool over images of up to 256 places (float32, float64; the squeeze-and-excitation blocks' 7 x 7 and
  14 x 14): numpy's pairwise sum of each row (one or two leaves of its eight running sums) and its division, step
  for step: numpy's ``mean`` bit for bit, without its per-row reduction machinery.
- LayerNormalization and RMSNormalization over trailing axes in the input's own type (float32 with the default
  stash type, float64): one pass per row, in the cache; the row sums in vector registers (the one place where
  reassociation is allowed, so that they vectorise; the numpy path sums with BLAS and ``einsum``: the two agree
  within the type's rounding of a row's sums).
- the fused attention's probabilities (scale, mask, shift by the row maximum in one pass; numpy's ``exp``; the
  division by the row sums and the exporters' NaN guard in another) and the tanh GELU's two passes around numpy's
  ``tanh`` (the kernel's operations in its order: the same results), for the plan's steps of
  :mod:`onnxcore.runtime.optimize.rows`.
- the rotary position embedding ``x * cos + rotate_half(x) * sin`` (the plan's
  :class:`~onnxcore.runtime.optimize.rotary.Rotary` step), row by row, both halves of a row in one loop: each product
  and the sum rounded in the element type, no fused multiply-add, so the graph's two Mul and its Add bit for bit.
- Attention-23/24/25's softmax (``_jit_tx``: the shift by the row maximum in one pass, numpy's ``exp``, the
  division by the row sums in another; a row of -inf gives zeros, as the numpy kernel's; the sums in vector
  registers, within the type's rounding of numpy's) and RotaryEmbedding-23 (each head's row in one loop, the
  numpy kernel's products and sums in its order: the same results), on the kernel's own path.
- elementwise graphs of the plan's fused ElementwiseGraph kernel (``_jit_ew``) made of correctly rounded IEEE
  operations (add, subtract, multiply, divide, negate, absolute value, square root, Relu) on float32 or float64:
  one loop generated per graph, each node's value in the element type in the graph's order (the numpy kernels'
  values bit for bit); each generated source is written under ``$XDG_CACHE_HOME/onnxcore/elementwise``, so numba
  caches its compiled loop on disk like the others.
- depthwise 2-D convolution (one input and one output channel per group, any kernel, stride, padding and
  dilation; float32 and float64): direct loops over a zero-padded copy of each plane (with a stride, split into
  its phases), the innermost over the output positions (vectorised; a tile of 1,024 outputs through every tap at a
  time, in the L1 cache), the taps accumulated in the element type one after the other and the bias last
  (the numpy path sums with ``einsum``: the two agree within the type's rounding of a sum of ``kh * kw``
  products; the tests allow 1e-5 relative in float32, 1e-12 in float64).
- 2-D convolutions of few taps per output plane (an RGB stem, 16 channels per group; ``conv2d_planar``): each
  output plane sums every tap of its group's input planes (copied once into their stride phases) over long
  vectorised runs, nine taps per pass, the weight a scalar; a candidate of the measured choice of a path, the sums
  in another order than im2col's product (within the type's rounding; 1e-12 relative in float64 in the tests).
- tree ensembles (``_jit_tree``): the traversal of every (tree, row) pair over node records (feature, threshold,
  both children) made from the tables of :class:`onnxcore.kernels._tree_eval.CompiledForest`, sixteen rows at a time
  through a tree, or for a few rows sixteen trees at a time in scalar lanes (a strict comparison compiled as the
  other kind on thresholds moved to the next value of their type), every index validated before the first call
  (numba does not check bounds); the leaves reached are the numpy path's, so the scores are the same bit for bit.
- the SVM classifier's coupling of pairwise probabilities (``_jit_ml.couple_rows``): libsvm's iteration row by
  row, every sum in index order, as the numpy path computes it (the same bits).
- the SVM's RBF kernel (``_jit_ml.rbf_exponents``): after BLAS's products, the six passes to the exponents
  (``-gamma * max(|x|^2 + |v|^2 - 2 x.v, 0)``) as one loop in the numpy kernel's order, then numpy's ``exp``: the
  same bits.
- Imputer, Scaler, Normalizer, LinearClassifier and LinearRegressor (``_jit_ml``), where numpy's per-call cost
  outweighs the arithmetic: Imputer's replacement, Scaler's float32 steps and Normalizer's rows in one pass at any
  size (the Normalizer's sums in numpy's pairwise order), the linear models on up to 64 rows in one loop (the
  product, the intercepts, SOFTMAX or LOGISTIC, the top class), or after BLAS's product for a wide model: the numpy
  path's values bit for bit (the product's sums in index order, BLAS's in its own: float64 scores returned as
  float32).
- TopK of a few (up to 16) of many along float32/float64 rows without NaN (``_jit_ml.top_k_rows``: the nearest
  neighbours of the converters' k-nearest-neighbour models): one pass per row keeping the best k in order by
  insertion, the stable sort's choice and order (ties by ascending index), where the numpy path partitions.

The convolution and pooling kernels are in ``_jit_cnn`` (:func:`jit_cnn`; it takes its decorator from ``_jit``), the
dense convolutions' im2col in ``_jit_im2col`` (:func:`jit_im2col`), the ML ones in ``_jit_ml`` (:func:`jit_ml`), the
tree ensembles' in ``_jit_tree`` (:func:`jit_tree`), the transformer operators' in ``_jit_tx`` (:func:`jit_tx`), the
generated elementwise graphs in ``_jit_ew`` (:func:`jit_ew`); each family is imported with the first kernel that
asks for it, so a plan loads only the families its kernels use
(issue 42, item 3).
Compiled functions are cached on disk by numba (``cache=True``) and release the GIL (``nogil=True``): they run
on the kernel threads (:mod:`onnxcore.kernels.threads`) as numpy's loops do.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import threading
import time
from collections.abc import Iterator
from types import ModuleType

__all__ = [
    "available",
    "enabled",
    "jit",
    "jit_cnn",
    "jit_ew",
    "jit_im2col",
    "jit_ml",
    "jit_tree",
    "jit_tx",
    "loaded",
    "status",
    "use",
]

_lock = threading.RLock()  # available() runs inside _family()
_available: bool | None = None  # numba importable and ONNXCORE_ACCEL not "0"; decided once
_forced: bool | None = None  # set by use(): on or off regardless of the environment (tests, benchmarks)
_jit_module: ModuleType | None = None
_families: dict[str, ModuleType] = {}  # the families of compiled loops loaded so far, by module name


def available() -> bool:
    """Whether the accelerator can run here: numba is installed and ``ONNXCORE_ACCEL`` is not ``"0"``."""
    global _available, _jit_module
    if _available is None:
        with _lock:
            if _available is None:
                ok = os.environ.get("ONNXCORE_ACCEL", "1") != "0"
                if ok:
                    try:
                        ok = importlib.util.find_spec("numba") is not None
                        if ok:
                            started = time.perf_counter()
                            # Lazy: numba is an optional extra, heavy to import; only this package imports it.
                            # The other families' loops load with their first kernel (jit_cnn, jit_ml, jit_tree, jit_tx,
                            # jit_ew).
                            from onnxcore.kernels.accel import _jit

                            _jit_module = _jit
                            # Here, not at the top: logging is 2 ms of every session's imports, said once.
                            import logging

                            logging.getLogger("onnxcore.accel").info(
                                "numba loaded in %.2f s; the first call of each compiled loop loads it from numba's "
                                "cache, or compiles it (seconds) when the cache does not hold it for this machine "
                                "('onnxcore warmup MODEL' fills the cache ahead)",
                                time.perf_counter() - started,
                            )
                    except Exception:
                        # numba installed but unusable (an incompatible numpy, no writable cache directory, ...):
                        # the pure-numpy kernels run, as without numba.
                        ok = False
                _available = ok
    return _available


def _family(name: str) -> ModuleType:
    """The compiled loops of one family (``_jit_cnn``, ``_jit_im2col``, ``_jit_ml``, ``_jit_tree``, ``_jit_tx``,
    ``_jit_ew``), imported on the first kernel that asks: a plan loads only the families its kernels use."""
    assert available(), f"accel.{name.lstrip('_')}() called while the accelerator is not available"
    with _lock:
        if name not in _families:
            # Lazy: the family's loops, once one of its kernels asks for them (numba compiles or loads each).
            if name == "_jit_cnn":
                from onnxcore.kernels.accel import _jit_cnn

                _families[name] = _jit_cnn
            elif name == "_jit_ml":
                from onnxcore.kernels.accel import _jit_ml

                _families[name] = _jit_ml
            elif name == "_jit_tree":
                from onnxcore.kernels.accel import _jit_tree

                _families[name] = _jit_tree
            elif name == "_jit_tx":
                from onnxcore.kernels.accel import _jit_tx

                _families[name] = _jit_tx
            elif name == "_jit_im2col":
                from onnxcore.kernels.accel import _jit_im2col

                _families[name] = _jit_im2col
            else:
                from onnxcore.kernels.accel import _jit_ew

                _families[name] = _jit_ew
        return _families[name]


def enabled() -> bool:
    """Whether kernels take the compiled path now (:func:`available`, unless :func:`use` says otherwise)."""
    if _forced is not None:
        return _forced and available()
    return available()


def loaded() -> bool:
    """Whether the compiled path is on and numba already imported (an earlier kernel asked :func:`enabled`): a kernel
    may then take a compiled loop for an array too small to be worth numba's import, at no import cost. Never
    imports numba itself."""
    return _available is True and _forced is not False


def jit() -> ModuleType:
    """The module of compiled kernels (:mod:`onnxcore.kernels.accel._jit`); call only when :func:`enabled`."""
    assert _jit_module is not None, "accel.jit() called while the accelerator is not available"
    return _jit_module


def jit_cnn() -> ModuleType:
    """The module of compiled convolution and pooling kernels (:mod:`onnxcore.kernels.accel._jit_cnn`), imported on
    the first call; call only when :func:`enabled`."""
    return _families.get("_jit_cnn") or _family("_jit_cnn")


def jit_im2col() -> ModuleType:
    """The module of the compiled im2col of dense 2-D convolutions (:mod:`onnxcore.kernels.accel._jit_im2col`),
    imported on the first call; call only when :func:`enabled`."""
    return _families.get("_jit_im2col") or _family("_jit_im2col")


def jit_ml() -> ModuleType:
    """The module of compiled loops of the ``ai.onnx.ml`` kernels (:mod:`onnxcore.kernels.accel._jit_ml`), imported
    on the first call; call only when :func:`enabled`."""
    return _families.get("_jit_ml") or _family("_jit_ml")


def jit_tree() -> ModuleType:
    """The module of compiled loops of the tree ensembles (:mod:`onnxcore.kernels.accel._jit_tree`: the walks to the
    leaves, the sums per target, a one-row softmax's steps), imported on the first call; call only when
    :func:`enabled`."""
    return _families.get("_jit_tree") or _family("_jit_tree")


def status() -> tuple[str, str | None]:
    """The accelerator's state in this process, without loading it: ``"loaded"`` (numba imported, a kernel asked),
    ``"installed"`` (numba importable, no kernel asked yet) or ``"off"`` (no numba, or ``ONNXCORE_ACCEL=0``); and
    once loaded, the directory where numba caches the compiled loops (None before, or if numba does not say)."""
    if _available is not None:
        state = "loaded" if _available and _jit_module is not None else "off"
    elif os.environ.get("ONNXCORE_ACCEL", "1") == "0" or importlib.util.find_spec("numba") is None:
        state = "off"
    else:
        state = "installed"
    where = None
    if state == "loaded":
        # numba's dispatcher keeps its cache object private: read defensively, a later numba may name it otherwise.
        cache = getattr(getattr(_jit_module, "erf32", None), "_cache", None)
        where = getattr(cache, "_cache_path", None)
    return state, str(where) if where is not None else None


def jit_tx() -> ModuleType:
    """The module of compiled loops of the transformer operators (:mod:`onnxcore.kernels.accel._jit_tx`:
    Attention's softmax, RotaryEmbedding), imported on the first call; call only when :func:`enabled`."""
    return _families.get("_jit_tx") or _family("_jit_tx")


def jit_ew() -> ModuleType:
    """The module of compiled elementwise graphs (:mod:`onnxcore.kernels.accel._jit_ew`: loops generated per graph
    of the fused ElementwiseGraph kernel), imported on the first call; call only when :func:`enabled`."""
    return _families.get("_jit_ew") or _family("_jit_ew")


@contextlib.contextmanager
def use(on: bool) -> Iterator[None]:
    """Turn the accelerator on (when :func:`available`) or off inside the ``with`` block, for the whole process
    (kernel threads included); tests run a kernel on both paths with it."""
    global _forced
    before = _forced
    _forced = bool(on)
    try:
        yield
    finally:
        _forced = before
