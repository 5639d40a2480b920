"""Reference kernels for the signal ops."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ops.signal import WINDOWS, dft_axis, dft_length
from ..registry import KernelContext, kernel
from .elementwise import fail

Array = np.ndarray[Any, Any]


def as_complex(x: Array) -> Array:
    """[..., 1 or 2] real/imaginary parts as a complex array [...]: complex128 for f64 input,
    else complex64 (NumPy's FFTs keep that precision)."""
    wide = x.dtype == np.float64
    parts = np.ascontiguousarray(x, np.float64 if wide else np.float32)
    complex_type = np.complex128 if wide else np.complex64
    if x.shape[-1] == 1:
        return parts[..., 0].astype(complex_type)
    return parts.view(complex_type)[..., 0]


def as_parts(y: Array, dtype: np.dtype[Any]) -> Array:
    """A complex array [...] as [..., 2] real/imaginary parts of ``dtype``."""
    return np.stack([y.real, y.imag], axis=-1).astype(dtype)


def check_parts(ctx: KernelContext, x: Array) -> None:
    if x.ndim < 2 or x.shape[-1] not in (1, 2):
        raise fail(ctx, f"expected a last dim of 1 (real) or 2 (complex), got {list(x.shape)}")


def scalar(ctx: KernelContext, x: Array, what: str) -> int:
    if np.size(x) != 1:
        raise fail(ctx, f"{what}: expected a scalar, got shape {list(np.shape(x))}")
    return int(np.asarray(x).reshape(-1)[0])


@kernel("DFT")
def dft(
    ctx: KernelContext, x: Array, length: Array | None = None, axis: Array | None = None
) -> Array:
    check_parts(ctx, x)
    inverse, onesided = ctx.attr("inverse"), ctx.attr("onesided")
    a = dft_axis(-2 if axis is None else scalar(ctx, axis, "axis"), x.ndim)
    given = None if length is None else scalar(ctx, length, "dft_length")
    n, _ = dft_length(inverse, onesided, x.shape[a], given)
    if not isinstance(n, int) or n < 1:
        raise fail(ctx, f"the transform length must be positive, got {n}")
    signal = as_complex(x)
    if onesided and inverse:
        if x.shape[-1] != 2:
            raise fail(ctx, "onesided=1 with inverse=1 needs complex input (last dim 2)")
        return np.fft.irfft(signal, n, axis=a)[..., None].astype(x.dtype)
    if onesided:
        if x.shape[-1] != 1:
            raise fail(ctx, "onesided=1 with inverse=0 needs real input (last dim 1)")
        return as_parts(np.fft.rfft(signal.real, n, axis=a), x.dtype)
    transform = np.fft.ifft if inverse else np.fft.fft
    return as_parts(transform(signal, n, axis=a), x.dtype)


@kernel("STFT")
def stft(
    ctx: KernelContext,
    x: Array,
    step: Array,
    window: Array | None = None,
    frame_length: Array | None = None,
) -> Array:
    check_parts(ctx, x)
    hop = scalar(ctx, step, "frame_step")
    if frame_length is not None:
        size = scalar(ctx, frame_length, "frame_length")
    else:
        size = x.shape[1] if window is None else window.shape[0]
    if window is not None and window.shape != (size,):
        raise fail(ctx, f"window shape {list(window.shape)} differs from frame_length {size}")
    if hop < 1 or not 1 <= size <= x.shape[1]:
        raise fail(ctx, f"frame_step {hop} and frame_length {size} do not fit {x.shape[1]} samples")
    frames = (x.shape[1] - size) // hop + 1
    starts = np.arange(frames)[:, None] * hop + np.arange(size)
    chunks = as_complex(x)[:, starts]
    if window is not None:
        chunks = chunks * window.astype(chunks.real.dtype)
    if ctx.attr("onesided") and x.shape[-1] == 1:
        return as_parts(np.fft.rfft(chunks.real, axis=-1), x.dtype)
    spectrum = np.fft.fft(chunks, axis=-1)
    return as_parts(spectrum[..., : size // 2 + 1] if ctx.attr("onesided") else spectrum, x.dtype)


def _window_kernel(name: str) -> None:
    a0, a1, a2 = WINDOWS[name]

    def run(ctx: KernelContext, size: Array) -> Array:
        n = scalar(ctx, size, "size")
        if n < 0:
            raise fail(ctx, f"size must be >= 0, got {n}")
        period = n if ctx.attr("periodic") else n - 1
        # A symmetric window of one point is its centre, phase pi, where every window is 1.
        phase = 2 * np.pi * np.arange(n) / period if period else np.full(n, np.pi)
        # Summed in this order each window's peak is exactly 1, which integer types truncate.
        w = (a0 + a2 * np.cos(2 * phase)) - a1 * np.cos(phase)
        return w.astype(ctx.attr("output_datatype").numpy)

    kernel(name)(run)


for _name in WINDOWS:
    _window_kernel(_name)


@kernel("MelWeightMatrix")
def mel_weight_matrix(
    ctx: KernelContext, mels: Array, length: Array, rate: Array, lower: Array, upper: Array
) -> Array:
    m = scalar(ctx, mels, "num_mel_bins")
    n = scalar(ctx, length, "dft_length")
    sample_rate = scalar(ctx, rate, "sample_rate")
    if m < 0 or n < 1 or sample_rate < 1:
        raise fail(ctx, f"bad sizes: num_mel_bins {m}, dft_length {n}, sample_rate {sample_rate}")
    lo, hi = (2595 * np.log10(1 + float(np.asarray(f)) / 700) for f in (lower, upper))
    points = lo + np.arange(m + 2) * ((hi - lo) / (m + 2))
    hertz = 700 * (10 ** (points / 2595) - 1)
    edges = np.floor((n + 1) * hertz / sample_rate).astype(np.int64)
    left, center, right = edges[:-2], edges[1:-1], edges[2:]
    j = np.arange(n // 2 + 1)[:, None]
    rising = (j - left) / np.maximum(center - left, 1)
    falling = (right - j) / np.maximum(right - center, 1)
    w = np.where((left <= j) & (j <= center), rising, 0.0)
    w = np.where((center <= j) & (j < right), falling, w)
    w = np.where(j == center, 1.0, w)
    return w.astype(ctx.attr("output_datatype").numpy)
