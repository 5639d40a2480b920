"""Core ops written as OpenVINO signal and normalisation (DFT, STFT, Col2Im, the norm family)
layers; merged into ``write_ops.OP_EMITTERS``."""

from __future__ import annotations

import numpy as np

from ...ops.normalization import stash_dtype
from ...ops.signal import dft_axis
from ...tensor.dtypes import DType
from ...tensor.types import TensorType
from .write_net import (
    Call,
    Emitter,
    NetBuilder,
    Tensor,
    binary,
    convert,
    dim_of,
    insert_unit,
    reverse,
    scalar,
    shape_of,
)


def _const_int(call: Call, t: Tensor, what: str) -> int:
    if t.value is None or t.value.size != 1:
        raise call.error(f"{what} must be a constant scalar for OpenVINO IR")
    return int(t.value.reshape(-1)[0])


def _dft(net: NetBuilder, call: Call) -> list[Tensor]:
    """DFT along one axis as DFT/IDFT (complex in and out), RDFT (onesided forward, real in) or
    IRDFT (onesided inverse, real out); OpenVINO's complex tensors end in a dim of 2 as ours."""
    x, length, axis_in = call.arg(0), call.opt(1), call.opt(2)
    rank = x.rank
    if rank is None:
        raise call.error("DFT needs an input of known rank for OpenVINO IR")
    axis = -2 if axis_in is None else _const_int(call, axis_in, "axis")
    try:
        a = dft_axis(axis, rank)
    except ValueError as exc:
        raise call.error(str(exc)) from None
    last = None if x.type.shape is None else x.type.shape[-1]
    if not isinstance(last, int):
        raise call.error("DFT needs the input's last dim (1 real, 2 complex) known")
    inverse, onesided = bool(call.attrs["inverse"]), bool(call.attrs["onesided"])
    ins = [net.ints([a])]
    if length is not None:
        # OpenVINO's CPU plugin cannot compile an IRDFT whose signal_size is computed.
        ins.append(net.ints([_const_int(call, length, "dft_length")]))
    shape = x.type.shape
    assert shape is not None
    if onesided and not inverse:
        real = x.type.with_shape(shape[:-1])
        x = net.op("Squeeze", [x, net.ints([rank - 1])], real)
        return [net.op("RDFT", [x, *ins], call.out, "opset9")]
    if onesided:
        flat = call.out.with_shape(None if call.out.shape is None else call.out.shape[:-1])
        y = net.op("IRDFT", [x, *ins], flat, "opset9")
        return [net.op("Unsqueeze", [y, net.ints([rank - 1])], call.out)]
    if last == 1:  # real input: a zero imaginary part
        zeros = np.zeros(rank, np.int64)
        pads_end = zeros.copy()
        pads_end[-1] = 1
        x = net.op(
            "Pad",
            [x, net.const(zeros), net.const(pads_end), net.const(0, x.type.dtype)],
            x.type.with_shape((*shape[:-1], 2)),
            "opset12",
            pad_mode="constant",
        )
    return [net.op("IDFT" if inverse else "DFT", [x, *ins], call.out, "opset7")]


def _stft(net: NetBuilder, call: Call) -> list[Tensor]:
    """STFT of a real signal [B, L, 1], onesided, as STFT-15 over [B, L] (frames first)."""
    x, step, window, length = call.arg(0), call.arg(1), call.opt(2), call.opt(3)
    shape = x.type.shape
    if shape is None or shape[-1] != 1:
        raise call.error(
            "OpenVINO's STFT takes a real signal only: the input's last dim must be known as 1"
        )
    if not call.attrs["onesided"]:
        raise call.error("OpenVINO's STFT gives the one-sided spectrum only (onesided=1)")
    dt = x.type.dtype
    if length is None:
        length = dim_of(net, window, 0) if window is not None else dim_of(net, x, 1)
    frame_size = scalar(net, length)
    if window is None:
        if frame_size.value is None:
            raise call.error("STFT without a window needs a constant frame_length")
        window = net.const(np.ones(int(frame_size.value), dt.numpy))
    signal = net.op("Squeeze", [x, net.ints([2])], x.type.with_shape(shape[:-1]))
    ins = [signal, window, frame_size, scalar(net, step)]
    return [net.op("STFT", ins, call.out, "opset15", transpose_frames=False)]


def _col2im(net: NetBuilder, call: Call) -> list[Tensor]:
    """Col2Im over two spatial axes as Col2Im-15; over one (as ISTFT folds frames) as Col2Im-15
    over a unit axis and that axis; OpenVINO's has no other number of axes."""
    x, image, block = call.arg(0), call.arg(1), call.arg(2)
    dims = image.type.shape
    if dims is None or dims[0] not in (1, 2):
        raise call.error("OpenVINO's Col2Im folds one or two spatial axes: image_shape must be [2]")
    n = int(dims[0])
    pads = list(call.attrs["pads"] or [0] * 2 * n)
    data = {
        "strides": list(call.attrs["strides"] or [1] * n),
        "dilations": list(call.attrs["dilations"] or [1] * n),
        "pads_begin": pads[:n],
        "pads_end": pads[n:],
    }
    if any(len(v) != n for v in data.values()):
        raise call.error(f"strides, dilations and pads must cover {n} spatial axes, got {data}")
    image, block = convert(net, image, DType.int64), convert(net, block, DType.int64)
    out = call.out
    if n == 1:
        data = {k: [1 if k in ("strides", "dilations") else 0, *v] for k, v in data.items()}
        unit = net.ints([1])
        pair = TensorType(DType.int64, [2])
        image = net.op("Concat", [unit, image], pair, axis=0)
        block = net.op("Concat", [unit, block], pair, axis=0)
        out = insert_unit(call.out, 2)
    text = {k: ",".join(map(str, v)) for k, v in data.items()}
    y = net.op("Col2Im", [x, image, block], out, "opset15", **text)
    if n == 1:
        y = net.op("Squeeze", [y, net.ints([2])], call.out)
    return [y]


def _work_dtype(call: Call, t: Tensor) -> DType:
    """The dtype the statistics are computed in (float32 when stash_type=1)."""
    return stash_dtype(t.type, call.attrs["stash_type"])


def _group_norm(net: NetBuilder, call: Call) -> list[Tensor]:
    x, scale, bias = call.arg(0), call.arg(1), call.arg(2)
    work = _work_dtype(call, x)
    ins = [convert(net, t, work) for t in (x, scale, bias)]
    y = net.op(
        "GroupNormalization",
        ins,
        call.out.with_dtype(work),
        "opset12",
        num_groups=call.attrs["num_groups"],
        epsilon=float(call.attrs["epsilon"]),
    )
    return [convert(net, y, x.type.dtype)]


def _tail_axes(net: NetBuilder, call: Call, x: Tensor) -> Tensor:
    axis = call.normalize_axis(call.attrs["axis"], x.rank)
    if x.rank is None:
        raise call.error("RMSNormalization needs an input of known rank for OpenVINO IR")
    return net.ints(list(range(axis, x.rank)))


def _rms_norm(net: NetBuilder, call: Call) -> list[Tensor]:
    """x / sqrt(mean(x^2) + epsilon) * scale, in the stash dtype up to the scaling."""
    x, scale = call.arg(0), call.arg(1)
    work = _work_dtype(call, x)
    xs = convert(net, x, work)
    t = xs.type
    square = net.op("Multiply", [xs, xs], t, auto_broadcast="numpy")
    axes = _tail_axes(net, call, x)
    assert t.shape is not None and axes.value is not None
    kept = t.with_shape([1 if a in axes.value else d for a, d in enumerate(t.shape)])
    mean = net.op("ReduceMean", [square, axes], kept, keep_dims=True)
    eps = net.const(float(call.attrs["epsilon"]), work)
    rms = net.op("Sqrt", [net.op("Add", [mean, eps], kept, auto_broadcast="numpy")], kept)
    y = net.op("Divide", [xs, rms], t, auto_broadcast="numpy", m_pythondiv=False)
    y = convert(net, y, scale.type.dtype)
    return [net.op("Multiply", [y, scale], call.out, auto_broadcast="numpy")]


def _lp_norm(net: NetBuilder, call: Call) -> list[Tensor]:
    """x / its L1 or L2 norm along the axis; a zero norm divides by one, giving zeros."""
    x = call.arg(0)
    axis = call.normalize_axis(call.attrs["axis"], x.rank)
    kept = (
        x.type
        if x.type.shape is None
        else x.type.with_shape([*x.type.shape[:axis], 1, *x.type.shape[axis + 1 :]])
    )
    reduce = "ReduceL1" if call.attrs["p"] == 1 else "ReduceL2"
    norm = net.op(reduce, [x, net.ints([axis])], kept, "opset4", keep_dims=True)
    dt = x.type.dtype
    zero = net.op(
        "Equal", [norm, net.const(0, dt)], kept.with_dtype(DType.bool), auto_broadcast="numpy"
    )
    safe = net.op("Select", [zero, net.const(1, dt), norm], kept, auto_broadcast="numpy")
    return [net.op("Divide", [x, safe], call.out, auto_broadcast="numpy", m_pythondiv=False)]


def _cast_like(net: NetBuilder, call: Call) -> list[Tensor]:
    return [net.op("Convert", [call.arg(0)], call.out, destination_type=call.out.dtype)]


def _extreme_index(net: NetBuilder, x: Tensor, axis: int, mode: str) -> Tensor:
    """The index of the first max/min along ``axis``, that axis kept as 1 (a stable TopK, as
    ArgMax is written in write_ops.py)."""
    kept = x.type.with_dtype(DType.int64)
    if x.type.shape is not None:
        kept = kept.with_shape([*x.type.shape[:axis], 1, *x.type.shape[axis + 1 :]])
    _, index = net.layer(
        "TopK",
        [x, net.ints(1)],
        [kept.with_dtype(x.type.dtype), kept],
        "opset11",
        axis=axis,
        mode=mode,
        sort="value",
        index_element_type=DType.int64,
        stable=True,
    )
    return index


def _argmin(net: NetBuilder, call: Call) -> list[Tensor]:
    x = call.arg(0)
    axis = call.normalize_axis(call.attrs["axis"], x.rank)
    last = bool(call.attrs["select_last_index"])
    if last:
        x = reverse(net, x, axis)
    index = _extreme_index(net, x, axis, "min")
    if last:
        end = binary(net, "Subtract", dim_of(net, x, axis), net.ints(1), np.subtract)
        index = net.op("Subtract", [end, index], index.type, auto_broadcast="numpy")
    if not call.attrs["keepdims"]:
        index = net.op("Squeeze", [index, net.ints([axis])], call.out)
    return [index]


def _hardmax(net: NetBuilder, call: Call) -> list[Tensor]:
    """A one-hot of the first largest entry along the axis: TopK, then OneHot."""
    x = call.arg(0)
    axis = call.normalize_axis(call.attrs["axis"], x.rank)
    index = _extreme_index(net, x, axis, "max")
    shape = (
        None
        if index.type.shape is None
        else [*index.type.shape[:axis], *index.type.shape[axis + 1 :]]
    )
    flat = net.op("Squeeze", [index, net.ints([axis])], index.type.with_shape(shape))
    dt = x.type.dtype
    ins = [flat, dim_of(net, x, axis), net.const(1, dt), net.const(0, dt)]
    return [net.op("OneHot", ins, call.out, axis=axis)]


def _dropout(net: NetBuilder, call: Call) -> list[Tensor]:
    """Inference: the data unchanged and an all-true mask (OpenVINO has no random dropout)."""
    x, ratio, training = call.arg(0), call.opt(1), call.opt(2)
    if training is not None:
        off = training.value is not None and not bool(training.value.reshape(-1)[0])
        no_drop = (
            ratio is not None and ratio.value is not None and float(ratio.value.reshape(-1)[0]) == 0
        )
        if not (off or no_drop):
            raise call.error(
                "OpenVINO has no random dropout: training_mode must be a constant false "
                "(or ratio a constant 0)"
            )
    outs = [x]
    if len(call.outs) > 1:
        mask = net.op(
            "Broadcast", [net.const(True), shape_of(net, x)], call.outs[1], "opset3", mode="numpy"
        )
        outs.append(mask)
    return outs


def _cumprod(net: NetBuilder, call: Call) -> list[Tensor]:
    """Running products as a chain of Multiply over the axis' slices (OpenVINO has no
    CumProd), in the core op's order and precision (floats in f64, rounded once; integers
    wrapping in their own type), so the IR means exactly what the core op computes. Needs the
    axis constant and its length known. (OpenVINO's CPU plugin runs f64 as f32.)"""
    x, axis_in = call.arg(0), call.arg(1)
    axis = call.normalize_axis(_const_int(call, axis_in, "axis"), x.rank)
    shape = x.type.shape
    n = None if shape is None else shape[axis]
    if shape is None or not isinstance(n, int):
        raise call.error("OpenVINO has no CumProd: writing it needs the axis' length known")
    if n > _MAX_CUMPROD:
        raise call.error(f"OpenVINO has no CumProd: an axis of {n} > {_MAX_CUMPROD} entries")
    if n == 0:
        return [x]
    dt = x.type.dtype
    if dt.is_float:  # the core op multiplies floats in f64 and rounds once
        x = convert(net, x, DType.float64)
    one = x.type.with_shape([*shape[:axis], 1, *shape[axis + 1 :]])
    parts = [
        net.op(
            "Slice",
            [x, net.ints([i]), net.ints([i + 1]), net.ints([1]), net.ints([axis])],
            one,
            "opset8",
        )
        for i in range(n)
    ]
    order = list(range(n))[::-1] if call.attrs["reverse"] else list(range(n))
    results: dict[int, Tensor] = {}
    acc: Tensor | None = None
    for i in order:
        if call.attrs["exclusive"]:
            if acc is None:
                ones = net.const(1, x.type.dtype)
                acc = net.op("Broadcast", [ones, shape_of(net, parts[i])], one, "opset3")
            results[i] = acc
            acc = net.op("Multiply", [acc, parts[i]], one, auto_broadcast="numpy")
        else:
            acc = (
                parts[i]
                if acc is None
                else net.op("Multiply", [acc, parts[i]], one, auto_broadcast="numpy")
            )
            results[i] = acc
    y = net.op(
        "Concat", [results[i] for i in range(n)], call.out.with_dtype(x.type.dtype), axis=axis
    )
    return [convert(net, y, dt)]


_MAX_CUMPROD = 256

EMITTERS: dict[str, Emitter] = {
    "Col2Im": _col2im,
    "GroupNormalization": _group_norm,
    "RMSNormalization": _rms_norm,
    "LpNormalization": _lp_norm,
    "CastLike": _cast_like,
    "ArgMin": _argmin,
    "Hardmax": _hardmax,
    "Dropout": _dropout,
    "CumProd": _cumprod,
    "DFT": _dft,
    "STFT": _stft,
}
"""Emitters of this family, by core op name."""
