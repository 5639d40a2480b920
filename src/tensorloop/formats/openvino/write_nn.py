"""Core neural-network ops written as OpenVINO layers: convolutions, pooling, normalisations.

Convolutions (deformable too), pooling, the normalisations, LRN and inference-time Dropout."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ops.normalization import stash_dtype
from ...ops.window import transpose_out_shape
from ...tensor.dtypes import DType
from ...tensor.types import UNKNOWN, TensorType
from .write_net import Call, Emitter, NetBuilder, Tensor, convert, ints_text, shape_of

_AUTO_PADS = {
    "NOTSET": "explicit",
    "SAME_UPPER": "same_upper",
    "SAME_LOWER": "same_lower",
    "VALID": "valid",
}


def _spatial(call: Call, x: Tensor, w: Tensor | None = None) -> int:
    """X's spatial rank: from its type, else from the (M, C, k...) weights' of a convolution."""
    if x.rank is None and w is not None and w.rank is not None and w.rank > 2:
        return w.rank - 2
    if x.rank is None or x.rank < 3:
        raise call.error(f"OpenVINO needs X of (N, C, D1, ...) with a known rank, got {x.type}")
    return x.rank - 2


def _ints(call: Call, key: str, n: int, fill: int) -> list[int]:
    value = call.attrs.get(key)
    return [fill] * n if value is None else [int(v) for v in value]


def _window(call: Call, n: int) -> dict[str, Any]:
    """strides / pads_begin / pads_end / auto_pad as OpenVINO's attributes."""
    pads = _ints(call, "pads", 2 * n, 0)
    return {
        "strides": ints_text(_ints(call, "strides", n, 1)),
        "pads_begin": ints_text(pads[:n]),
        "pads_end": ints_text(pads[n:]),
        "auto_pad": _AUTO_PADS[call.attrs.get("auto_pad", "NOTSET")],
    }


def _static_tail(call: Call, t: Tensor, what: str) -> list[int]:
    shape = t.type.shape
    if shape is None or not all(isinstance(d, int) for d in shape[1:]):
        raise call.error(f"OpenVINO's grouped layers need {what} of a static shape, got {t.type}")
    return [int(d) for d in shape[1:]]


def _reshape(net: NetBuilder, t: Tensor, dims: list[int]) -> Tensor:
    if t.value is not None:
        return net.const(np.asarray(t.value).reshape(dims))
    shape = [UNKNOWN if d == -1 else d for d in dims]
    return net.op("Reshape", [t, net.ints(dims)], t.type.with_shape(shape), special_zero=False)


def _add_bias(net: NetBuilder, y: Tensor, bias: Tensor | None, out: TensorType) -> Tensor:
    """y + bias along axis 1 (bias of one entry per channel)."""
    if bias is None:
        return y
    assert y.rank is not None
    per_channel = _reshape(net, bias, [1, -1, *[1] * (y.rank - 2)])
    return net.op("Add", [y, per_channel], out, auto_broadcast="numpy")


def _conv(net: NetBuilder, call: Call) -> list[Tensor]:
    x, w = call.arg(0), call.arg(1)
    n = _spatial(call, x, w)
    group: int = call.attrs["group"]
    data = {**_window(call, n), "dilations": ints_text(_ints(call, "dilations", n, 1))}
    if group == 1:
        y = net.op("Convolution", [x, w], call.out, **data)
    else:
        tail = _static_tail(call, w, "W")
        grouped = _reshape(net, w, [group, -1, *tail])
        y = net.op("GroupConvolution", [x, grouped], call.out, **data)
    return [_add_bias(net, y, call.opt(2), call.out)]


def _conv_transpose(net: NetBuilder, call: Call) -> list[Tensor]:
    x, w = call.arg(0), call.arg(1)
    n = _spatial(call, x, w)
    group: int = call.attrs["group"]
    attrs = call.attrs
    strides = _ints(call, "strides", n, 1)
    dilations = _ints(call, "dilations", n, 1)
    extra = _ints(call, "output_padding", n, 0)
    auto = attrs.get("auto_pad", "NOTSET")
    if auto in ("NOTSET", "VALID") and attrs.get("output_shape") is None:
        pads = [0] * (2 * n) if auto == "VALID" else _ints(call, "pads", 2 * n, 0)
    else:
        # The output shape (given, or SAME's) sets the crops: work them out here as pads.
        shape = x.type.shape
        kernel = None if w.type.shape is None else w.type.shape[2:]
        if shape is None or not all(isinstance(d, int) for d in (*shape[2:], *(kernel or [None]))):
            raise call.error("output_shape or auto_pad SAME_* needs static spatial dims and kernel")
        assert kernel is not None
        geo = transpose_out_shape(attrs, [int(k) for k in kernel], [int(d) for d in shape[2:]])
        pads = [g[1] for g in geo] + [g[2] for g in geo]
        if any(p < 0 for p in pads):
            raise call.error(
                f"an output_shape past the full result (crops {pads}) is not supported"
            )
    data = {
        "strides": ints_text(strides),
        "dilations": ints_text(dilations),
        "pads_begin": ints_text(pads[:n]),
        "pads_end": ints_text(pads[n:]),
        "auto_pad": "explicit",
        "output_padding": ints_text(extra),
    }
    if group == 1:
        y = net.op("ConvolutionBackpropData", [x, w], call.out, **data)
    else:
        tail = _static_tail(call, w, "W")
        grouped = _reshape(net, w, [group, -1, *tail])
        y = net.op("GroupConvolutionBackpropData", [x, grouped], call.out, **data)
    return [_add_bias(net, y, call.opt(2), call.out)]


def _deform_conv(net: NetBuilder, call: Call) -> list[Tensor]:
    """DeformableConvolution-8 with the core op's bilinear_interpolation_pad (true: samples read
    zeros around X, as ONNX's do); the bias is added after."""
    x, w, offsets = call.arg(0), call.arg(1), call.arg(2)
    bias, mask = call.opt(3), call.opt(4)
    if x.rank is None or x.rank < 3:
        raise call.error(f"X needs a known rank of at least 3, got {x.type}")
    n = x.rank - 2
    pads = call.attrs["pads"] or [0] * (2 * n)
    ins = [x, offsets, w] + ([] if mask is None else [mask])
    y = net.op(
        "DeformableConvolution",
        ins,
        call.out,
        "opset8",
        strides=ints_text(call.attrs["strides"] or [1] * n),
        dilations=ints_text(call.attrs["dilations"] or [1] * n),
        pads_begin=ints_text(pads[:n]),
        pads_end=ints_text(pads[n:]),
        auto_pad="explicit",
        group=int(call.attrs["group"]),
        deformable_group=int(call.attrs["offset_group"]),
        bilinear_interpolation_pad=bool(call.attrs["bilinear_interpolation_pad"]),
    )
    if bias is None:
        return [y]
    column = bias.value.reshape([-1] + [1] * n) if bias.value is not None else None
    if column is None:
        b = net.op(
            "Reshape",
            [bias, net.ints([-1] + [1] * n)],
            bias.type.with_shape([UNKNOWN] + [1] * n),
            special_zero=False,
        )
    else:
        b = net.const(column)
    return [net.op("Add", [y, b], call.out, auto_broadcast="numpy")]


def _pool_data(call: Call, x: Tensor) -> dict[str, Any]:
    n = _spatial(call, x)
    return {
        **_window(call, n),
        "kernel": ints_text([int(k) for k in call.attrs["kernel_shape"]]),
        # OpenVINO's ceil_torch drops a last window that would start in the end pad, as ONNX's
        # ceil_mode does; its plain "ceil" would keep it.
        "rounding_type": "ceil_torch" if call.attrs["ceil_mode"] else "floor",
    }


def _max_pool(net: NetBuilder, call: Call) -> list[Tensor]:
    x = call.arg(0)
    if call.attrs["storage_order"]:
        raise call.error("MaxPool with storage_order=1 (column-major indices) is not supported")
    n = _spatial(call, x)
    data = {**_pool_data(call, x), "dilations": ints_text(_ints(call, "dilations", n, 1))}
    values, index = net.layer(
        "MaxPool",
        [x],
        call.outs,
        "opset14",
        **data,
        index_element_type=DType.int64,
        axis=0,
    )
    return [values, index]


def _average_pool(net: NetBuilder, call: Call) -> list[Tensor]:
    x = call.arg(0)
    n = _spatial(call, x)
    if any(d != 1 for d in _ints(call, "dilations", n, 1)):
        raise call.error("OpenVINO's AvgPool has no dilations")
    exclude = not call.attrs["count_include_pad"]
    data = {**_pool_data(call, x), "exclude-pad": exclude}
    if exclude and not call.attrs["ceil_mode"]:
        data.update(_windows_in_the_end_pad(call, x, n))
    return [net.op("AvgPool", [x], call.out, "opset14", **data)]


def _windows_in_the_end_pad(call: Call, x: Tensor, n: int) -> dict[str, str]:
    """OpenVINO refuses an AvgPool that excludes pads whose end pad is as wide as the kernel (as
    the reader writes OpenVINO's "ceil" rounding, whose last window may lie in the pad): the same
    windows as "ceil" with a narrower end pad, or nothing to change."""
    kernel = [int(k) for k in call.attrs["kernel_shape"]]
    pads = _ints(call, "pads", 2 * n, 0)
    if call.attrs["auto_pad"] not in ("NOTSET", "VALID") or all(
        e < k for e, k in zip(pads[n:], kernel, strict=True)
    ):
        return {}
    strides = _ints(call, "strides", n, 1)
    dims = x.type.shape[2:] if x.type.shape is not None else []
    ends = []
    for d, k, s, b, e in zip(dims, kernel, strides, pads[:n], pads[n:], strict=True):
        if not isinstance(d, int):
            raise call.error("AvgPool with an end pad as wide as its kernel needs static dims")
        count = (d + b + e - k) // s + 1
        fits = [p for p in range(k) if d + b + p >= k and -(-(d + b + p - k) // s) + 1 == count]
        if not fits:
            raise call.error(f"OpenVINO's AvgPool cannot exclude an end pad of {e} >= kernel {k}")
        ends.append(fits[-1])
    return {"pads_end": ints_text(ends), "rounding_type": "ceil"}


def _global(type_: str) -> Emitter:
    def emit(net: NetBuilder, call: Call) -> list[Tensor]:
        x = call.arg(0)
        if x.rank is None:
            raise call.error(f"OpenVINO needs X of a known rank, got {x.type}")
        axes = net.ints(list(range(2, x.rank)))
        return [net.op(type_, [x, axes], call.out, keep_dims=True)]

    return emit


def _batch_norm(net: NetBuilder, call: Call) -> list[Tensor]:
    if call.attrs["training_mode"]:
        raise call.error("BatchNormalization with training_mode=1 is not supported")
    x = call.arg(0)
    dt = x.type.dtype
    stats = [convert(net, call.arg(i), dt) for i in range(1, 5)]
    y = net.op(
        "BatchNormInference", [x, *stats], call.out, "opset5", epsilon=float(call.attrs["epsilon"])
    )
    return [y, call.arg(3), call.arg(4)]


def _lrn(net: NetBuilder, call: Call) -> list[Tensor]:
    size: int = call.attrs["size"]
    if size % 2 == 0:
        # OpenVINO reaches (size - 1) // 2 channels either side; ONNX one further after.
        raise call.error(f"LRN of even size {size} is not supported (OpenVINO's window differs)")
    return [
        net.op(
            "LRN",
            [call.arg(0), net.ints([1])],
            call.out,
            alpha=float(call.attrs["alpha"]),
            beta=float(call.attrs["beta"]),
            bias=float(call.attrs["bias"]),
            size=size,
        )
    ]


def _mvn(net: NetBuilder, x: Tensor, axes: list[int], eps: float, inside: bool) -> Tensor:
    return net.op(
        "MVN",
        [x, net.ints(axes)],
        x.type,
        "opset6",
        normalize_variance=True,
        eps=eps,
        eps_mode="inside_sqrt" if inside else "outside_sqrt",
    )


def _instance_norm(net: NetBuilder, call: Call) -> list[Tensor]:
    x = call.arg(0)
    n = _spatial(call, x)
    y = _mvn(net, x, list(range(2, n + 2)), float(call.attrs["epsilon"]), True)
    assert x.rank is not None
    scale = _reshape(net, call.arg(1), [1, -1, *[1] * n])
    y = net.op("Multiply", [y, scale], call.out, auto_broadcast="numpy")
    return [_add_bias(net, y, call.arg(2), call.out)]


def _layer_norm(net: NetBuilder, call: Call) -> list[Tensor]:
    x = call.arg(0)
    if x.rank is None:
        raise call.error(f"OpenVINO needs X of a known rank, got {x.type}")
    axis = call.normalize_axis(call.attrs["axis"], x.rank)
    axes = list(range(axis, x.rank))
    eps = float(call.attrs["epsilon"])
    y_type, mean_type, inv_type = call.outs
    stash = mean_type.dtype
    xs = convert(net, x, stash)
    y = convert(net, _mvn(net, xs, axes, eps, True), x.type.dtype)
    y = net.op("Multiply", [y, call.arg(1)], y_type, auto_broadcast="numpy")
    bias = call.opt(2)
    if bias is not None:
        y = net.op("Add", [y, bias], y_type, auto_broadcast="numpy")
    # The statistics, as the op's second and third outputs.
    axes_t = net.ints(axes)
    mean = net.op("ReduceMean", [xs, axes_t], mean_type, keep_dims=True)
    centered = net.op("Subtract", [xs, mean], xs.type, auto_broadcast="numpy")
    square = net.op("Multiply", [centered, centered], xs.type, auto_broadcast="numpy")
    var = net.op("ReduceMean", [square, axes_t], inv_type, keep_dims=True)
    var = net.op("Add", [var, net.const(eps, stash)], inv_type, auto_broadcast="numpy")
    inv = net.op(
        "Divide",
        [net.const(1.0, stash), net.op("Sqrt", [var], inv_type)],
        inv_type,
        auto_broadcast="numpy",
    )
    return [y, mean, inv]


def _mean_variance(net: NetBuilder, call: Call) -> list[Tensor]:
    x = call.arg(0)
    axes = [call.normalize_axis(int(a), x.rank, "axes") for a in call.attrs["axes"]]
    return [_mvn(net, x, axes, 1e-9, False)]


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


EMITTERS: dict[str, Emitter] = {
    "Conv": _conv,
    "ConvTranspose": _conv_transpose,
    "DeformConv": _deform_conv,
    "MaxPool": _max_pool,
    "AveragePool": _average_pool,
    "GlobalAveragePool": _global("ReduceMean"),
    "GlobalMaxPool": _global("ReduceMax"),
    "BatchNormalization": _batch_norm,
    "InstanceNormalization": _instance_norm,
    "LayerNormalization": _layer_norm,
    "GroupNormalization": _group_norm,
    "RMSNormalization": _rms_norm,
    "LpNormalization": _lp_norm,
    "MeanVarianceNormalization": _mean_variance,
    "LRN": _lrn,
    "Dropout": _dropout,
}
"""Emitters of this family, by core op name."""
