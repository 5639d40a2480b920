"""Signal ops: DFT, STFT, the Hann/Hamming/Blackman windows and MelWeightMatrix."""

from __future__ import annotations

from ..ir.opdef import AttrSpec, InferContext, op
from ..tensor.dtypes import DType
from ..tensor.types import UNKNOWN, Dim, TensorType, Type
from .common import expect, scalar_int

# name: (a0, a1, a2) of w[n] = a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N)
WINDOWS: dict[str, tuple[float, float, float]] = {
    "HannWindow": (0.5, 0.5, 0.0),
    "HammingWindow": (25 / 46, 21 / 46, 0.0),
    "BlackmanWindow": (0.42, 0.5, 0.08),
}


def output_dtype(ctx: InferContext) -> DType:
    dt: DType = ctx.attr("output_datatype")
    if dt is DType.bool:
        raise ctx.error(f"output_datatype: expected a numeric type, got {dt}")
    return dt


def dft_axis(axis: int, rank: int) -> int:
    """DFT's axis (counted on the input, whose last dim holds re/im) mapped into [0, rank-2]."""
    if not (-rank <= axis <= -2 or 0 <= axis <= rank - 2):
        raise ValueError(f"axis {axis} is outside [-{rank}, -2] and [0, {rank - 2}]")
    return axis + rank if axis < 0 else axis


def dft_length(inverse: int, onesided: int, dim: Dim, given: Dim | None) -> tuple[Dim, Dim]:
    """(transform length, output length) along the axis of input length ``dim``."""
    irfft = onesided and inverse
    if given is not None:
        n = given
    elif irfft:
        n = 2 * (dim - 1) if isinstance(dim, int) else UNKNOWN
    else:
        n = dim
    if onesided and not inverse:
        return n, n // 2 + 1 if isinstance(n, int) else UNKNOWN
    return n, n


@op("DFT", inputs=(1, 3), attrs={"inverse": AttrSpec(int, 0), "onesided": AttrSpec(int, 0)})
def _dft(ctx: InferContext) -> list[Type]:
    """Discrete Fourier transform along one axis (ONNX DFT-20).

    Inputs ``(input, dft_length?, axis?)``; the input's last dim is 1 (real) or 2 (re, im).
    The signal is cut or zero-padded to ``dft_length`` (default: its length, or
    ``2 * (length - 1)`` for the inverse one-sided transform) along ``axis`` (default -2)::

        y[k] = sum_n x[n] exp(-2 pi i k n / N)            # inverse: +i, times 1/N

    ``onesided`` with a forward transform takes real input and keeps bins ``0..N//2``; with
    ``inverse`` it takes those bins of a conjugate-symmetric spectrum and gives a real signal
    (last dim 1). Otherwise the output is complex (last dim 2).
    """
    x = expect(ctx, 0, "float")
    inverse, onesided = ctx.attr("inverse"), ctx.attr("onesided")
    given: Dim | None = None
    if ctx.has(1):
        n = scalar_int(ctx, 1, "dft_length")
        if n is not None and n < 1:
            raise ctx.error(f"input #1 (dft_length): expected a positive length, got {n}")
        given = UNKNOWN if n is None else n
    axis = scalar_int(ctx, 2, "axis") if ctx.has(2) else -2
    if x.shape is None:
        return [TensorType(x.dtype, None)]
    rank = len(x.shape)
    if rank < 2:
        raise ctx.error(f"input #0: expected at least 2 dims (signal, re/im), got {x}")
    last = x.shape[-1]
    if isinstance(last, int) and last not in (1, 2):
        raise ctx.error(f"input #0: the last dim must be 1 (real) or 2 (complex), got {x}")
    if onesided and not inverse and last == 2:
        raise ctx.error("onesided=1 with inverse=0 needs real input (last dim 1), got complex")
    if onesided and inverse and last == 1:
        raise ctx.error("onesided=1 with inverse=1 needs complex input (last dim 2), got real")
    out: list[Dim] = [*x.shape[:-1], 1 if onesided and inverse else 2]
    if axis is None:
        keeps_length = not onesided and given is None
        if not keeps_length:
            out[:-1] = [UNKNOWN] * (rank - 1)
        return [TensorType(x.dtype, out)]
    try:
        a = dft_axis(axis, rank)
    except ValueError as exc:
        raise ctx.error(f"input #2: {exc}") from None
    out[a] = dft_length(inverse, onesided, x.shape[a], given)[1]
    return [TensorType(x.dtype, out)]


@op("STFT", inputs=(2, 4), attrs={"onesided": AttrSpec(int, 1)})
def _stft(ctx: InferContext) -> list[Type]:
    """Short-time Fourier transform (ONNX STFT-17).

    Inputs ``(signal [B, L, 1|2], frame_step, window? [W], frame_length?)``; frame f is
    ``signal[:, f*frame_step : f*frame_step + frame_length] * window`` for
    ``f < (L - frame_length) // frame_step + 1``, and its DFT is row f of the output
    ``[B, frames, bins, 2]``. ``frame_length`` defaults to W, else L; the window to ones.
    ``onesided`` keeps ``bins = frame_length // 2 + 1`` (of a complex signal's spectrum too,
    which is not symmetric, as onnxruntime does; the spec calls that case impossible).
    """
    x = expect(ctx, 0, "float", rank=3)
    step = scalar_int(ctx, 1, "frame_step")
    if step is not None and step < 1:
        raise ctx.error(f"input #1 (frame_step): expected a positive step, got {step}")
    dims: list[Dim] = list(x.shape) if x.shape is not None else [UNKNOWN] * 3
    length: Dim = dims[1]
    if ctx.has(3):
        fl = scalar_int(ctx, 3, "frame_length")
        length = UNKNOWN if fl is None else fl
    if ctx.has(2):
        window = expect(ctx, 2, "float", rank=1)
        ctx.same_dtype(0, 2)
        w = window.shape[0] if window.shape is not None else UNKNOWN
        if isinstance(w, int) and isinstance(length, int) and ctx.has(3) and w != length:
            raise ctx.error(f"window length {w} differs from frame_length {length}")
        if not ctx.has(3):
            length = w
    onesided = ctx.attr("onesided")
    if isinstance(dims[2], int) and dims[2] not in (1, 2):
        raise ctx.error(f"input #0: the last dim must be 1 (real) or 2 (complex), got {x}")
    frames: Dim = UNKNOWN
    if isinstance(dims[1], int) and isinstance(length, int) and step is not None:
        if length > dims[1] or length < 1:
            raise ctx.error(f"frame_length {length} does not fit the signal length {dims[1]}")
        frames = (dims[1] - length) // step + 1
    bins: Dim = length
    if onesided:
        bins = length // 2 + 1 if isinstance(length, int) else UNKNOWN
    return [TensorType(x.dtype, [dims[0], frames, bins, 2])]


def _window_rule(name: str) -> None:
    a0, a1, a2 = WINDOWS[name]

    def rule(ctx: InferContext) -> list[Type]:
        size = scalar_int(ctx, 0, "size")
        if size is not None and size < 0:
            raise ctx.error(f"input #0 (size): expected a length >= 0, got {size}")
        return [TensorType(output_dtype(ctx), [UNKNOWN if size is None else size])]

    rule.__doc__ = (
        f"The {name[: -len('Window')]} window of ``size`` points (ONNX {name}-17): "
        f"``w[n] = {a0:.6g} - {a1:.6g} cos(2 pi n / N)"
        + (f" + {a2:.6g} cos(4 pi n / N)" if a2 else "")
        + "`` with N = size if ``periodic`` else size - 1 (one symmetric point is [1]), "
        "cast to ``output_datatype``."
    )
    attrs = {"periodic": AttrSpec(int, 1), "output_datatype": AttrSpec(DType, DType.float32)}
    op(name, inputs=1, attrs=attrs)(rule)


for _name in WINDOWS:
    _window_rule(_name)


_MEL_INTS = ("num_mel_bins", "dft_length", "sample_rate")


@op("MelWeightMatrix", inputs=5, attrs={"output_datatype": AttrSpec(DType, DType.float32)})
def _mel_weight_matrix(ctx: InferContext) -> list[Type]:
    """Triangular mel filterbank [dft_length // 2 + 1, num_mel_bins] (ONNX MelWeightMatrix-17).

    Inputs ``(num_mel_bins, dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz)``.
    With ``mel(f) = 2595 log10(1 + f / 700)``, ``num_mel_bins + 2`` points step from
    ``mel(lower)`` by ``(mel(upper) - mel(lower)) / (num_mel_bins + 2)``; each, mapped back to
    hertz ``h``, gives the bin ``floor((dft_length + 1) * h / sample_rate)``. Filter m rises
    linearly from 0 at edge m to 1 at edge m+1 and falls back to 0 at edge m+2.
    """
    mels, length, _ = (scalar_int(ctx, i, name) for i, name in enumerate(_MEL_INTS))
    ctx.same_dtype(0, 1, 2)
    for i in (3, 4):
        expect(ctx, i, "float")
    ctx.same_dtype(3, 4)
    rows: Dim = UNKNOWN if length is None else length // 2 + 1
    return [TensorType(output_dtype(ctx), [rows, UNKNOWN if mels is None else mels])]
