"""Core ops along an axis written as OpenVINO layers: reductions, arg-extremes, scans, softmax.

The reductions, ArgMax/ArgMin, TopK, Hardmax, the cumulative sums and products, Softmax and
LogSoftmax."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from ...tensor.dtypes import DType
from ...tensor.types import UNKNOWN, TensorType
from .write_net import (
    Call,
    Emitter,
    NetBuilder,
    Tensor,
    all_axes,
    attr,
    binary,
    broadcast_op,
    const_int,
    convert,
    dim_of,
    float_only,
    reverse,
    same_layer,
    scalar,
    shape_of,
)

_BOOL = DType.bool

# -- reductions ------------------------------------------------------------------------------------
Reduce = Callable[[NetBuilder, Call, Tensor, Tensor, bool], Tensor]
_LOGICAL = {"ReduceMax": "ReduceLogicalOr", "ReduceMin": "ReduceLogicalAnd"}
"""On booleans, the maximum is any and the minimum all (the arithmetic layers refuse booleans)."""


def _reduction(lower: Reduce, floats_only: bool = False, passes_through: bool = False) -> Emitter:
    """A reduction over the call's axes; ``passes_through``: over no axes it is its input."""

    def emit(net: NetBuilder, call: Call) -> list[Tensor]:
        if floats_only:
            float_only(call)
        x, axes = call.arg(0), call.opt(1)
        keep = bool(call.attrs["keepdims"])
        # ONNX reduces over all axes when none are listed; OpenVINO then reduces over none,
        # which is noop_with_empty_axes: the elementwise part is left (|x| for ReduceL1).
        if axes is None or (axes.value is not None and axes.value.size == 0):
            if call.attrs["noop_with_empty_axes"]:
                if passes_through:
                    return [x]
                # The CPU plugin compiles empty axes only with keep_dims, which keeps the shape.
                return [lower(net, call, x, net.const(np.zeros(0, np.int64)), True)]
            axes = all_axes(net, x)
        elif axes.value is None:
            noop = bool(call.attrs["noop_with_empty_axes"])
            return [_axes_at_run_time(net, call, lower, x, axes, keep, noop)]
        return [lower(net, call, x, axes, keep)]

    return emit


def _axes_at_run_time(
    net: NetBuilder, call: Call, lower: Reduce, x: Tensor, axes: Tensor, keep: bool, noop: bool
) -> Tensor:
    """A reduction over axes known only at run time, which may be none: the gradient of a
    broadcast whose dims are known only at run time sums over the axes it finds then
    (``ReduceSum(..., noop_with_empty_axes=1)``), none where nothing was broadcast. The CPU
    plugin (2026.4) fails on empty axes given at run time ("ptr is Null"), so ``x`` gets a unit
    axis at the end and the reduction also runs over it, which changes nothing: the axes are
    never empty. No axes mean every axis, unless noop_with_empty_axes."""
    vector = TensorType(DType.int64, [UNKNOWN])
    listed = net.op(
        "Reshape", [convert(net, axes, DType.int64), net.ints([-1])], vector, special_zero=False
    )
    if not noop:  # none listed: 0..rank-1 (the first rank * (count == 0) of them)
        every = all_axes(net, x)
        count = shape_of(net, listed)
        none = net.op("Equal", [count, net.ints([0])], count.type.with_dtype(_BOOL))
        size = shape_of(net, every)
        stop = net.op(
            "Multiply",
            [size, net.op("Convert", [none], count.type, destination_type=DType.int64)],
            count.type,
            auto_broadcast="numpy",
        )
        added = net.op("Slice", [every, net.ints([0]), stop, net.ints([1])], vector, "opset8")
        listed = net.op("Concat", [listed, added], vector, axis=0)
    # counted from the end, an axis is one further from it once x has its unit axis there
    back = net.op("Less", [listed, net.ints(0)], vector.with_dtype(_BOOL), auto_broadcast="numpy")
    moved = net.op("Subtract", [listed, net.ints(1)], vector, auto_broadcast="numpy")
    shifted = net.op("Select", [back, moved, listed], vector, auto_broadcast="numpy")
    every_axis = net.op("Concat", [shifted, net.ints([-1])], vector, axis=0)
    unit = TensorType(x.type.dtype, None if x.type.shape is None else (*x.type.shape, 1))
    extended = net.op("Unsqueeze", [x, net.ints([-1])], unit)
    if not keep:
        return lower(net, call, extended, every_axis, False)
    out = call.out
    kept = TensorType(out.dtype, None if out.shape is None else (*out.shape, 1))
    reduced = lower(net, replace(call, outs=[kept, *call.outs[1:]]), extended, every_axis, True)
    return net.op("Squeeze", [reduced, net.ints([-1])], out)


def _layer_reduce(type_: str, version: str = "opset1") -> Reduce:
    def lower(net: NetBuilder, call: Call, x: Tensor, axes: Tensor, keep: bool) -> Tensor:
        layer = type_
        if x.type.dtype is _BOOL:
            layer = _LOGICAL.get(type_, "")
            if not layer:
                raise call.error(f"{type_} of booleans has no OpenVINO layer")
        return net.op(layer, [x, axes], call.out, version, keep_dims=keep)

    return lower


def _sum_square(net: NetBuilder, call: Call, x: Tensor, axes: Tensor, keep: bool) -> Tensor:
    squares = net.op("Multiply", [x, x], x.type, auto_broadcast="numpy")
    return net.op("ReduceSum", [squares, axes], call.out, keep_dims=keep)


def _log_sum(net: NetBuilder, call: Call, x: Tensor, axes: Tensor, keep: bool) -> Tensor:
    total = net.op("ReduceSum", [x, axes], call.out, keep_dims=keep)
    return net.op("Log", [total], call.out)


def _with_unit_axes(t: TensorType, axes: Tensor) -> TensorType:
    """``t`` with ``axes`` reduced to size 1, as far as it is known here."""
    if t.shape is None:
        return t
    if axes.value is None:
        return t.with_shape([UNKNOWN] * len(t.shape))
    reduced = {int(a) % len(t.shape) for a in axes.value.reshape(-1)}
    return t.with_shape([1 if i in reduced else d for i, d in enumerate(t.shape)])


def _log_sum_exp(net: NetBuilder, call: Call, x: Tensor, axes: Tensor, keep: bool) -> Tensor:
    # Shifted by the largest entry so that exp cannot overflow; an infinite one is not shifted.
    def shift(kept: bool, out: TensorType) -> Tensor:
        top = net.op("ReduceMax", [x, axes], out, keep_dims=kept)
        finite = net.op("IsFinite", [top], out.with_dtype(_BOOL), "opset10")
        zero = net.const(0, out.dtype)
        return net.op("Select", [finite, top, zero], out, auto_broadcast="numpy")

    kept_type = call.out if keep else _with_unit_axes(x.type, axes)
    near = shift(True, kept_type)
    powers = net.op("Exp", [broadcast_op(net, "Subtract", [x, near], x.type)], x.type)
    total = net.op("ReduceSum", [powers, axes], call.out, keep_dims=keep)
    far = near if keep else shift(False, call.out)
    return broadcast_op(net, "Add", [net.op("Log", [total], call.out), far], call.out)


# -- the index of the largest or smallest entry ----------------------------------------------------
def _extreme_index(net: NetBuilder, x: Tensor, axis: int, mode: str) -> Tensor:
    """The index of the first max/min along ``axis``, that axis kept as 1: a stable TopK keeps
    the first of equal values, which is ArgMax's and ArgMin's tie rule."""
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


def _arg_extreme(mode: str) -> Emitter:
    """ArgMax (``mode`` "max") or ArgMin ("min"); the last of equal values reverses the axis
    first and counts back from its end."""

    def emit(net: NetBuilder, call: Call) -> list[Tensor]:
        x = call.arg(0)
        axis = call.normalize_axis(call.attrs["axis"], x.rank)
        last = bool(call.attrs["select_last_index"])
        if last:
            x = reverse(net, x, axis)
        index = _extreme_index(net, x, axis, mode)
        if last:
            end = binary(net, "Subtract", dim_of(net, x, axis), net.ints(1), np.subtract)
            index = net.op("Subtract", [end, index], index.type, auto_broadcast="numpy")
        if not call.attrs["keepdims"]:
            index = net.op("Squeeze", [index, net.ints([axis])], call.out)
        return [index]

    return emit


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


def _topk(net: NetBuilder, call: Call) -> list[Tensor]:
    x = call.arg(0)
    values, index = net.layer(
        "TopK",
        [x, scalar(net, call.arg(1))],
        call.outs,
        "opset11",
        axis=call.normalize_axis(call.attrs["axis"], x.rank),
        mode="max" if call.attrs["largest"] else "min",
        sort="value" if call.attrs["sorted"] else "none",
        index_element_type=DType.int64,
        stable=True,  # equal values keep the lower index first, as the core op says
    )
    return [values, index]


# -- running sums and products ---------------------------------------------------------------------
def _cumsum(net: NetBuilder, call: Call) -> list[Tensor]:
    flags = {k: bool(call.attrs[k]) for k in ("exclusive", "reverse")}
    return [net.op("CumSum", [call.arg(0), scalar(net, call.arg(1))], call.out, "opset3", **flags)]


_MAX_CUMPROD = 256


def _cumprod(net: NetBuilder, call: Call) -> list[Tensor]:
    """Running products as a chain of Multiply over the axis' slices (OpenVINO has no
    CumProd), in the core op's order and precision (floats in f64, rounded once; integers
    wrapping in their own type), so the IR means exactly what the core op computes. Needs the
    axis constant and its length known. (OpenVINO's CPU plugin runs f64 as f32.)"""
    x, axis_in = call.arg(0), call.arg(1)
    axis = call.normalize_axis(const_int(call, axis_in, "axis"), x.rank)
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


EMITTERS: dict[str, Emitter] = {
    **{
        op: _reduction(_layer_reduce(op), passes_through=True)
        for op in ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin")
    },
    "ReduceProd": _reduction(_layer_reduce("ReduceProd")),
    "ReduceL1": _reduction(_layer_reduce("ReduceL1", "opset4")),
    "ReduceL2": _reduction(_layer_reduce("ReduceL2", "opset4")),
    "ReduceSumSquare": _reduction(_sum_square),
    "ReduceLogSum": _reduction(_log_sum, floats_only=True),
    "ReduceLogSumExp": _reduction(_log_sum_exp, floats_only=True),
    "ArgMax": _arg_extreme("max"),
    "ArgMin": _arg_extreme("min"),
    "Hardmax": _hardmax,
    "TopK": _topk,
    "CumSum": _cumsum,
    "CumProd": _cumprod,
    "Softmax": same_layer("SoftMax", "opset8", axis=attr("axis")),
    "LogSoftmax": same_layer("LogSoftmax", "opset5", axis=attr("axis")),
}
"""Emitters of this family, by core op name."""
