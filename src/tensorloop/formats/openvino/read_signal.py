"""OpenVINO signal layers read as core ops: DFT-7, IDFT-7, RDFT-9, IRDFT-9, STFT-15, ISTFT-16.

Read here: DFT-7, IDFT-7, RDFT-9, IRDFT-9 (any axes, negative ones included, with or without
``signal_size``, whose -1 keeps an axis's length), STFT-15 and ISTFT-16.

OpenVINO holds a complex tensor as real and imaginary parts in a trailing dimension of 2, as the
core ``DFT`` op does, so the DFT family maps onto one core ``DFT`` per transformed axis (the
transform is separable): IDFT's 1/N per axis is the core inverse transform's; RDFT is a one-sided
forward transform along its last axis followed by complex ones along the others; IRDFT is complex
inverse transforms along all but its last axis, then a one-sided inverse along the last (what
OpenVINO's Hermitian extension of that axis computes). An axis of OpenVINO's DFT, IDFT and IRDFT
counts over the complex dims (a negative one adds rank - 1); RDFT's over its real input's dims.

STFT-15 is the core ``STFT`` (one-sided) on ``[batch, length, 1]`` with the window zero-padded
to ``frame_size`` about its centre, as OpenVINO pads it; ``transpose_frames`` transposes frames
and bins. ISTFT-16 is, per frame, the one-sided inverse ``DFT`` of length ``frame_size`` times
the padded window, overlap-added by ``Col2Im``, divided by the overlap-added squared window
(0 where that is 0; times sqrt(frame_size) first when ``normalized``), then cropped by
``frame_size // 2`` at the start when ``center``, and cut or zero-padded at the end to
``signal_length`` (default: the overlap-added length, less ``frame_size`` rounded down to even
when ``center``). STFT and ISTFT need a constant ``frame_size`` and ``frame_step`` and a window
of known length (Col2Im takes its strides as attributes)."""

from __future__ import annotations

import numpy as np

from ...ir.graph import Value
from ...tensor.dtypes import DType
from .convert import LayerContext, converter
from .inputs import const_int, const_ints, has_input, rank_of, type_of

__all__: list[str] = []


def _float_input(ctx: LayerContext, index: int, what: str) -> Value:
    x = ctx.input(index)
    dt = type_of(ctx, x).dtype
    if not dt.is_float:
        raise ctx.error(f"input #{index} ({what}) must be floating-point, got {dt.value}")
    return x


def _complex_input(ctx: LayerContext) -> tuple[Value, int]:
    """Input 0 as [..., 2] (real, imaginary) and its rank."""
    x = _float_input(ctx, 0, "data")
    rank = rank_of(ctx, 0, "data")
    shape = type_of(ctx, x).shape
    last = shape[-1] if shape else None
    if rank < 2 or (isinstance(last, int) and last != 2):
        raise ctx.error(
            f"input #0 (data) must be complex: at least 2 dims, the last 2, got {type_of(ctx, x)}"
        )
    if not isinstance(last, int):  # say it is 2 (a Reshape that checks it at run time)
        x = ctx.em.op("Reshape", [x, ctx.em.ints([0] * (rank - 1) + [2])])
    return x, rank


def _axes(ctx: LayerContext, rank: int) -> list[int]:
    """The constant ``axes`` input (port 1) over ``rank`` signal dims, negatives adding rank."""
    axes = const_ints(ctx, 1, "axes")
    out = []
    for a in axes:
        if not -rank <= a < rank:
            raise ctx.error(f"axes {axes}: {a} is out of range for {rank} signal dims")
        out.append(a + rank if a < 0 else a)
    if not out:
        raise ctx.error("axes is empty")
    if len(set(out)) != len(out):
        raise ctx.error(f"axes {axes} repeat an axis")
    return out


def _signal_sizes(ctx: LayerContext, inputs: list[Value | None], count: int) -> list[int]:
    """The constant ``signal_size`` input (port 2), -1 for each axis when it is absent."""
    if not has_input(inputs, 2):
        return [-1] * count
    sizes = const_ints(ctx, 2, "signal_size")
    if len(sizes) != count:
        raise ctx.error(f"signal_size {sizes} must hold one size per axis ({count})")
    if any(s < 1 and s != -1 for s in sizes):
        raise ctx.error(f"signal_size {sizes}: each size must be positive or -1")
    return sizes


def _dft(
    ctx: LayerContext, x: Value, axis: int, size: int, inverse: bool, onesided: bool = False
) -> Value:
    """One core DFT along ``axis``; ``size`` -1 keeps the core op's default length."""
    length = None if size == -1 else ctx.em.ints(size)
    attrs = {"inverse": int(inverse), "onesided": int(onesided)}
    return ctx.em.op("DFT", [x, length, ctx.em.ints(axis)], attrs)


@converter("DFT", "IDFT")
def _dft_layer(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    x, rank = _complex_input(ctx)
    axes = _axes(ctx, rank - 1)
    inverse = ctx.layer.type == "IDFT"
    for axis, size in zip(axes, _signal_sizes(ctx, inputs, len(axes)), strict=True):
        x = _dft(ctx, x, axis, size, inverse)
    return [x]


@converter("RDFT")
def _rdft(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    x = _float_input(ctx, 0, "data")
    rank = rank_of(ctx, 0, "data")
    axes = _axes(ctx, rank)
    sizes = _signal_sizes(ctx, inputs, len(axes))
    y = ctx.em.op("Unsqueeze", [x, ctx.em.ints([rank])])
    y = _dft(ctx, y, axes[-1], sizes[-1], inverse=False, onesided=True)
    for axis, size in zip(axes[:-1], sizes[:-1], strict=True):
        y = _dft(ctx, y, axis, size, inverse=False)
    return [y]


@converter("IRDFT")
def _irdft(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    x, rank = _complex_input(ctx)
    axes = _axes(ctx, rank - 1)
    sizes = _signal_sizes(ctx, inputs, len(axes))
    for axis, size in zip(axes[:-1], sizes[:-1], strict=True):
        x = _dft(ctx, x, axis, size, inverse=True)
    y = _dft(ctx, x, axes[-1], sizes[-1], inverse=True, onesided=True)
    return [ctx.em.op("Squeeze", [y, ctx.em.ints([rank - 1])])]


# -- STFT / ISTFT ----------------------------------------------------------------------------------
def _frame_params(ctx: LayerContext, size_port: int, step_port: int) -> tuple[int, int]:
    frame_size = const_int(ctx, size_port, "frame_size")
    frame_step = const_int(ctx, step_port, "frame_step")
    if frame_size < 1 or frame_step < 1:
        raise ctx.error(f"frame_size {frame_size} and frame_step {frame_step} must be positive")
    return frame_size, frame_step


def _padded_window(ctx: LayerContext, frame_size: int, dt: DType) -> Value:
    """The window (port 1) zero-padded to ``frame_size`` about its centre, as OpenVINO pads it."""
    window = _float_input(ctx, 1, "window")
    t = type_of(ctx, window)
    if t.shape is None or len(t.shape) != 1 or not isinstance(t.shape[0], int):
        raise ctx.error(f"input #1 (window) must be 1-D of known length, got {t}")
    length = t.shape[0]
    if not 1 <= length <= frame_size:
        raise ctx.error(f"window length {length} must be in [1, frame_size {frame_size}]")
    if t.dtype is not dt:
        window = ctx.em.op("Cast", [window], {"to": dt})
    if length == frame_size:
        return window
    before = (frame_size - length) // 2
    return ctx.em.op("Pad", [window, ctx.em.ints([before, frame_size - length - before])])


@converter("STFT")
def _stft(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    x = _float_input(ctx, 0, "signal")
    rank = rank_of(ctx, 0, "signal")
    if rank not in (1, 2):
        raise ctx.error(f"input #0 (signal) must be [length] or [batch, length], got rank {rank}")
    frame_size, frame_step = _frame_params(ctx, 2, 3)
    window = _padded_window(ctx, frame_size, type_of(ctx, x).dtype)
    em = ctx.em
    batched = em.op("Unsqueeze", [x, em.ints([0, 2] if rank == 1 else [2])])
    y = em.op(
        "STFT", [batched, em.ints(frame_step), window, em.ints(frame_size)], {"onesided": 1}
    )  # [batch, frames, bins, 2]
    if ctx.bool_attr("transpose_frames"):
        y = em.op("Transpose", [y], {"perm": [0, 2, 1, 3]})
    if rank == 1:
        y = em.op("Squeeze", [y, em.ints([0])])
    return [y]


@converter("ISTFT")
def _istft(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    x, rank = _complex_input(ctx)
    if rank not in (3, 4):
        raise ctx.error(
            f"input #0 (data) must be [bins, frames, 2] or [batch, bins, frames, 2]: rank {rank}"
        )
    frame_size, frame_step = _frame_params(ctx, 2, 3)
    center, normalized = ctx.bool_attr("center"), ctx.bool_attr("normalized")
    dt = type_of(ctx, x).dtype
    em = ctx.em
    shape = type_of(ctx, x).shape
    assert shape is not None
    bins = shape[-3]
    if isinstance(bins, int) and bins != frame_size // 2 + 1:
        raise ctx.error(
            f"input #0 has {bins} bins, frame_size {frame_size} gives {frame_size // 2 + 1}"
        )
    window = _padded_window(ctx, frame_size, dt)
    if rank == 3:
        x = em.op("Unsqueeze", [x, em.ints([0])])
    frames_first = em.op("Transpose", [x], {"perm": [0, 2, 1, 3]})  # [batch, frames, bins, 2]
    signal = _dft(ctx, frames_first, 2, frame_size, inverse=True, onesided=True)
    signal = em.op("Squeeze", [signal, em.ints([3])])  # [batch, frames, frame_size]
    cols = em.op("Transpose", [em.op("Mul", [signal, window])], {"perm": [0, 2, 1]})
    # The overlap-added length (frames - 1) * frame_step + frame_size, computed at run time.
    frames = em.op("Gather", [em.op("Shape", [cols]), em.ints([2])], {"axis": 0})
    full = em.op(
        "Add",
        [
            em.op("Mul", [em.op("Sub", [frames, em.ints([1])]), em.ints([frame_step])]),
            em.ints([frame_size]),
        ],
    )  # [1]
    col2im = {"strides": [frame_step]}
    summed = em.op("Col2Im", [cols, full, em.ints([frame_size])], col2im)  # [batch, 1, full]
    squares = em.op("Reshape", [em.op("Mul", [window, window]), em.ints([1, frame_size, 1])])
    square_cols = em.op(
        "Expand", [squares, em.op("Concat", [em.ints([1, frame_size]), frames], {"axis": 0})]
    )
    envelope = em.op("Col2Im", [square_cols, full, em.ints([frame_size])], col2im)  # [1, 1, full]
    if normalized:
        root = np.float32(np.sqrt(frame_size)).astype(dt.numpy)
        summed = em.op("Mul", [summed, em.const(root)])
    zero, one = em.const(np.array(0, dt.numpy)), em.const(np.array(1, dt.numpy))
    empty = em.op("Equal", [envelope, zero])
    divided = em.op("Div", [summed, em.op("Where", [empty, one, envelope])])
    out = em.op("Where", [empty, zero, divided])
    margin = frame_size // 2 if center else 0
    default = em.op("Sub", [full, em.ints([frame_size & ~1])]) if center else full
    if has_input(inputs, 4):
        given = ctx.input(4)
        if not type_of(ctx, given).dtype.is_int:
            raise ctx.error(
                f"input #4 (signal_length) must hold integers, got {type_of(ctx, given)}"
            )
        given = em.op("Reshape", [em.op("Cast", [given], {"to": DType.int64}), em.ints([1])])
        positive = em.op("Greater", [given, em.ints([0])])
        length = em.op("Where", [positive, given, default])
    else:
        length = default
    # out[margin:] cut or zero-padded to length: Pad crops where its pads are negative.
    end = em.op("Sub", [length, em.op("Sub", [full, em.ints([margin])])])
    pads = em.op("Concat", [em.ints([-margin]), end], {"axis": 0})
    out = em.op("Pad", [out, pads, None, em.ints([2])])
    out = em.op("Squeeze", [out, em.ints([1])])
    if rank == 3:
        out = em.op("Squeeze", [out, em.ints([0])])
    return [out]
