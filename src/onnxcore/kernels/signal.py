"""Signal operators, every version of the default domain (ONNX 1-2): DFT, STFT, MelWeightMatrix, and the window
generators HannWindow, HammingWindow and BlackmanWindow.

Complex values are carried as a trailing axis of extent 2 (real, imaginary); a real
signal has a trailing axis of extent 1. Transforms run numpy's FFT in the input's precision: float32
signals in complex64 (as onnxruntime and the reference evaluator do; the ONNX 1-3 vectors hold that
arithmetic's rounding, e.g. 2e-7 where an exact result is 0), float64 in complex128; float16 and
bfloat16 compute in complex128 and round once. (numpy before 2.0 computes every FFT in double precision;
with it float32 results are the double-precision ones rounded once.)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from onnxcore.errors import EvaluationError
from onnxcore.kernels._util import check_elements, scalar_of
from onnxcore.kernels.registry import kernel
from onnxcore.kernels.tensor import cast_6
from onnxcore.types.elements import ElementType

__all__: list[str] = []


def _complex(x: np.ndarray, what: str) -> tuple[np.ndarray, bool]:
    """The signal as complex64 (float32 input) or complex128 without the trailing axis, and whether it was
    real."""
    if x.ndim < 2 or x.shape[-1] not in (1, 2):
        raise EvaluationError(f"{what}: the last axis must have extent 1 (real) or 2 (complex), got shape {x.shape}")
    real_dt = np.float32 if x.dtype == np.float32 else np.float64
    v = x.astype(real_dt)
    z = np.empty(x.shape[:-1], dtype=np.complex64 if real_dt is np.float32 else np.complex128)
    z.real = v[..., 0]
    z.imag = 0 if x.shape[-1] == 1 else v[..., 1]
    return z, x.shape[-1] == 1


def _pack(z: np.ndarray, dtype: np.dtype[Any], *, real: bool = False) -> np.ndarray:
    if real:
        out = np.real(z)[..., None]
    else:
        out = np.stack([np.real(z), np.imag(z)], axis=-1)
    return np.ascontiguousarray(out).astype(dtype)


def _int_scalar(v: Any, what: str) -> int:
    arr = np.asarray(v)
    if arr.dtype.kind not in "iu":
        raise EvaluationError(f"{what} must be an integer tensor, got {arr.dtype}")
    return int(scalar_of(arr, name=what))


def _dft(x: np.ndarray, dft_length: Any, axis: int, inverse: int, onesided: int) -> np.ndarray:
    x = np.asarray(x)
    r = x.ndim
    if r < 2:
        raise EvaluationError(f"DFT: input must have rank at least 2, got shape {x.shape}")
    # Accepted range [-r, -2] U [0, r-2]: the last axis holds the complex parts.
    if not (-r <= axis <= -2 or 0 <= axis <= r - 2):
        raise EvaluationError(f"DFT: axis {axis} is outside [-{r}, -2] U [0, {r - 2}] for rank {r}")
    ax = axis + r if axis < 0 else axis
    if onesided and x.shape[-1] != (2 if inverse else 1):
        # DFT-17/20 onesided: a forward transform of a real signal (RFFT), an inverse one of a complex
        # spectrum (IRFFT); the other pairings are not defined.
        need = "a complex spectrum (last axis 2)" if inverse else "a real signal (last axis 1)"
        raise EvaluationError(f"DFT: onesided with inverse={inverse} needs {need}, got shape {x.shape}")
    z, _ = _complex(x, "DFT")
    extent = x.shape[ax]
    if dft_length is not None:
        n = _int_scalar(dft_length, "DFT: dft_length")
    elif onesided and inverse:
        n = 2 * (extent - 1)
    else:
        n = extent
    if n < 1:
        raise EvaluationError(f"DFT: dft_length must be positive, got {n}")
    # dft_length comes from data: refuse a huge request before allocating (Clause 15.2).
    check_elements([*x.shape[:ax], n, *x.shape[ax + 1 :]], "DFT")
    if onesided and inverse:
        # IRFFT: the input holds bins 0..n//2 of a Hermitian spectrum; the output is real.
        return _pack(np.fft.irfft(z, n=n, axis=ax), x.dtype, real=True)
    y = np.fft.ifft(z, n=n, axis=ax) if inverse else np.fft.fft(z, n=n, axis=ax)
    if onesided:
        y = y[(slice(None),) * ax + (slice(0, n // 2 + 1),)]
    return _pack(y, x.dtype)


@kernel("DFT", 17)
def dft_17(
    input: np.ndarray, dft_length: np.ndarray | None = None, *, axis: int = 1, inverse: int = 0, onesided: int = 0
) -> np.ndarray:
    """DFT-17: ``axis`` as an attribute (default 1, the first axis after the batch axis)."""
    return _dft(input, dft_length, axis, inverse, onesided)


@kernel("DFT", 20)
def dft_20(
    input: np.ndarray,
    dft_length: np.ndarray | None = None,
    axis: np.ndarray | None = None,
    *,
    inverse: int = 0,
    onesided: int = 0,
) -> np.ndarray:
    """DFT-20: ``axis`` as an optional scalar input (default -2, the last signal axis).

    Forward: ``y[k] = sum_n x[n] exp(-2 pi j k n / N)``; inverse adds ``1/N`` and flips the sign.
    ``onesided`` returns bins ``0..N//2`` (forward, RFFT) or takes them and returns a real signal
    (inverse, IRFFT, ``N`` defaulting to ``2 (extent - 1)``). ``dft_length`` zero-pads or crops.
    """
    ax = -2 if axis is None else _int_scalar(axis, "DFT: axis")
    return _dft(input, dft_length, ax, inverse, onesided)


@kernel("STFT", 17)
def stft(
    signal: np.ndarray,
    frame_step: np.ndarray,
    window: np.ndarray | None = None,
    frame_length: np.ndarray | None = None,
    *,
    onesided: int = 1,
) -> np.ndarray:
    """STFT: the DFT of each windowed frame, ``[batch, frames, bins, 2]``.

    ``frames = (signal_length - frame_length) // frame_step + 1``; ``frame_length`` defaults to
    the window's length, else to the signal length; the window defaults to all ones. With
    ``onesided`` (only for real signals) the bins are ``0..frame_length//2``.
    """
    x = np.asarray(signal)
    if x.ndim != 3:
        raise EvaluationError(f"STFT: signal must have rank 3 [batch, length, 1|2], got shape {x.shape}")
    z, real = _complex(x, "STFT")
    length = x.shape[1]
    step = _int_scalar(frame_step, "STFT: frame_step")
    if step < 1:
        raise EvaluationError(f"STFT: frame_step must be positive, got {step}")
    win = None if window is None else np.asarray(window)
    if win is not None and win.ndim != 1:
        raise EvaluationError(f"STFT: window must be 1-D, got shape {win.shape}")
    if frame_length is not None:
        fl = _int_scalar(frame_length, "STFT: frame_length")
        if win is not None and win.shape[0] != fl:
            raise EvaluationError(f"STFT: window length {win.shape[0]} differs from frame_length {fl}")
    elif win is not None:
        fl = win.shape[0]
    else:
        fl = length
    if not 1 <= fl <= length:
        raise EvaluationError(f"STFT: frame_length {fl} is outside [1, {length}]")
    if onesided and not real:
        raise EvaluationError("STFT: onesided output needs a real signal")
    frames = (length - fl) // step + 1
    # Frames overlap: frames x frame_length grows as the square of the signal (a step of 1 and a frame of half
    # the signal), so the framed copy and its transform (complex, 16 octets) are checked first (Clause 15.4).
    check_elements([z.shape[0], frames, fl], "STFT frames", itemsize=16)
    starts = np.arange(frames) * step
    idx = starts[:, None] + np.arange(fl)[None, :]
    framed = z[:, idx]  # [batch, frames, fl]
    if win is not None:
        framed = framed * win.astype(framed.real.dtype)
    y = np.fft.fft(framed, n=fl, axis=-1)
    if onesided:
        y = y[..., : fl // 2 + 1]
    return _pack(y, x.dtype)


@kernel("MelWeightMatrix", 17)
def mel_weight_matrix(
    num_mel_bins: np.ndarray,
    dft_length: np.ndarray,
    sample_rate: np.ndarray,
    lower_edge_hertz: np.ndarray,
    upper_edge_hertz: np.ndarray,
    *,
    output_datatype: int = 1,
) -> np.ndarray:
    """MelWeightMatrix: triangular filters, peak 1, evenly spaced on ``mel(f) = 2595 log10(1 + f/700)``.

    The ``num_mel_bins + 2`` band edges are spaced by ``(mel(upper) - mel(lower)) / (num_mel_bins
    + 2)`` from ``mel(lower)``, mapped back to hertz and then to spectrogram bins
    ``floor((dft_length + 1) * f / sample_rate)`` (the rule of onnxruntime and the ONNX test
    vectors). Band ``i`` rises linearly from its left edge bin to 1 at its centre bin and falls to
    0 at its right edge bin; a band whose left and centre bins coincide is 1 at that bin. Output
    ``[dft_length // 2 + 1, num_mel_bins]`` of ``output_datatype``.
    """
    n_mel = _int_scalar(num_mel_bins, "MelWeightMatrix: num_mel_bins")
    n_dft = _int_scalar(dft_length, "MelWeightMatrix: dft_length")
    rate = _int_scalar(sample_rate, "MelWeightMatrix: sample_rate")
    if n_mel < 1 or n_dft < 1 or rate < 1:
        raise EvaluationError("MelWeightMatrix: num_mel_bins, dft_length and sample_rate must be positive")
    lo_hz = float(scalar_of(np.asarray(lower_edge_hertz).astype(np.float64), name="lower_edge_hertz"))
    hi_hz = float(scalar_of(np.asarray(upper_edge_hertz).astype(np.float64), name="upper_edge_hertz"))
    if not 0 <= lo_hz < hi_hz:
        raise EvaluationError(f"MelWeightMatrix: edges [{lo_hz}, {hi_hz}] are not increasing from 0")
    bins = n_dft // 2 + 1
    check_elements([bins, n_mel], "MelWeightMatrix")
    lo_mel = 2595.0 * np.log10(1.0 + lo_hz / 700.0)
    hi_mel = 2595.0 * np.log10(1.0 + hi_hz / 700.0)
    # The step divides the mel range by num_mel_bins + 2 (so the last edge falls short of
    # upper_edge_hertz): the rule of onnxruntime and the ONNX test vectors.
    mels = lo_mel + np.arange(n_mel + 2) * ((hi_mel - lo_mel) / (n_mel + 2))
    hz = 700.0 * (np.power(10.0, mels / 2595.0) - 1.0)
    edges = np.floor((n_dft + 1) * hz / rate).astype(np.int64)
    left, centre, right = edges[:-2], edges[1:-1], edges[2:]
    j = np.arange(bins, dtype=np.int64)[:, None]
    rise_w = np.maximum(centre - left, 1)
    rise = np.where((j >= left) & (j <= centre), (j - left) / rise_w, 0.0)
    rise = np.where(centre == left, (j == centre).astype(np.float64), rise)
    fall_w = np.maximum(right - centre, 1)
    in_fall = (j >= centre) & (j < right)
    out = np.where(in_fall, (right - j) / fall_w, rise)
    try:
        et = ElementType(output_datatype)
    except ValueError:
        raise EvaluationError(f"MelWeightMatrix: output_datatype {output_datatype} is not an element type") from None
    return out.astype(et.np_dtype)


# The generalised cosine windows ``y[n] = a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N)`` of the paper the
# definitions cite (Harris 1978): the coefficients exactly (Hamming's are 25/46 and 21/46; the function bodies
# write them as float32 constants).
_COSINE_WINDOWS: dict[str, tuple[float, float, float]] = {
    "HannWindow": (0.5, 0.5, 0.0),
    "HammingWindow": (25 / 46, 21 / 46, 0.0),
    "BlackmanWindow": (0.42, 0.5, 0.08),
}


def _cosine_window(op: str, size: Any, periodic: int, output_datatype: int) -> np.ndarray:
    """The window ``op`` of ``size`` elements, cast to ``output_datatype``: ``N`` is ``size`` when ``periodic``,
    ``size - 1`` otherwise, ``n`` runs over ``0 .. size - 1``.

    The definitions describe the paper's window; their function bodies compute it in float32 and ``Cast`` the
    result, which is a fallback, not the operator's numerics (Clause 8.4). Evaluated literally, the body's float32
    rounding leaves 0.99999994 where the window is exactly 1 (the middle of a symmetric window of odd size, the
    second element of a periodic window of size 2), and ``Cast`` to an integer type truncates that to 0; onnxruntime
    and the reference evaluator give 1. So the window is computed in float64, summed as ``(a2 cos 2t - a1 cos t) +
    a0`` (exactly 0 at ``t = 0`` and exactly 1 at ``t = pi``), and rounded once: to a float output type directly,
    to the other types through the body's float32 value before its ``Cast``."""
    a0, a1, a2 = _COSINE_WINDOWS[op]
    n = _int_scalar(size, f"{op}: size")
    count = max(n, 0)  # Range(0, size, 1): size elements
    check_elements([count], op, itemsize=8)
    # N = 0 (a symmetric window of size 1) makes its one element 0/0 = NaN, as the body's division does.
    big_n = float(n) if periodic else float(n - 1)
    with np.errstate(all="ignore"):
        t = np.arange(count, dtype=np.float64) * (2 * np.pi) / big_n
        y = (a2 * np.cos(2 * t) - a1 * np.cos(t)) + a0
    try:
        is_float = ElementType(output_datatype).is_float
    except ValueError:
        is_float = False  # cast_6 names the bad output_datatype
    return cast_6(y if is_float else y.astype(np.float32), to=output_datatype)


@kernel("HannWindow", 17)
def hann_window(size: np.ndarray, *, output_datatype: int = 1, periodic: int = 1) -> np.ndarray:
    """HannWindow-17: ``0.5 - 0.5 cos(2 pi n / N)`` (see :func:`_cosine_window`)."""
    return _cosine_window("HannWindow", size, periodic, output_datatype)


@kernel("HammingWindow", 17)
def hamming_window(size: np.ndarray, *, output_datatype: int = 1, periodic: int = 1) -> np.ndarray:
    """HammingWindow-17: ``25/46 - 21/46 cos(2 pi n / N)`` (see :func:`_cosine_window`)."""
    return _cosine_window("HammingWindow", size, periodic, output_datatype)


@kernel("BlackmanWindow", 17)
def blackman_window(size: np.ndarray, *, output_datatype: int = 1, periodic: int = 1) -> np.ndarray:
    """BlackmanWindow-17: ``0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N)`` (see :func:`_cosine_window`)."""
    return _cosine_window("BlackmanWindow", size, periodic, output_datatype)
