"""Core ops written as OpenVINO elementwise, activation, logical, bitwise and reduction layers;
merged into ``write_ops.OP_EMITTERS``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...tensor.dtypes import DType
from ...tensor.types import UNKNOWN, TensorType
from .write_net import Call, Emitter, NetBuilder, Tensor, all_axes, broadcast, convert, scalar

_BOOL = DType.bool


def _same(type_: str, version: str = "opset1", **data: Any) -> Emitter:
    """An OpenVINO layer with the core op's inputs and meaning; a callable in ``data`` works its
    attribute out from the call."""

    def emit(net: NetBuilder, call: Call) -> list[Tensor]:
        ins = [t for t in call.ins if t is not None]
        attrs = {k: v(call) if callable(v) else v for k, v in data.items()}
        return net.layer(type_, ins, call.outs, version, **attrs)

    return emit


def _broadcasting(type_: str, version: str = "opset1") -> Emitter:
    return _same(type_, version, auto_broadcast="numpy")


def _op(net: NetBuilder, type_: str, ins: list[Tensor], like: TensorType, **data: Any) -> Tensor:
    """A NumPy-broadcasting binary layer (or a unary one) with ``like``'s element type."""
    shape = ins[0].type.shape
    for t in ins[1:]:
        shape = broadcast(shape, t.type.shape)
    out = like.with_shape(shape) if shape is not None else TensorType(like.dtype, None)
    extra = {"auto_broadcast": "numpy"} if len(ins) == 2 else {}
    return net.op(type_, ins, out, **extra, **data)


def _float_only(call: Call, what: str = "") -> None:
    dt = call.arg(0).type.dtype
    if not dt.is_float:
        raise call.error(f"OpenVINO has no {what or call.node.op} for {dt.value} here")


# -- activations with parameters ------------------------------------------------------------------
def _gelu(net: NetBuilder, call: Call) -> list[Tensor]:
    mode = "TANH" if call.attrs["approximate"] == "tanh" else "ERF"
    return net.layer("Gelu", [call.arg(0)], call.outs, "opset7", approximation_mode=mode)


def _swish(net: NetBuilder, call: Call) -> list[Tensor]:
    x = call.arg(0)
    beta = net.const(call.attrs["alpha"], x.type.dtype)
    return net.layer("Swish", [x, beta], call.outs, "opset4")


def _selu(net: NetBuilder, call: Call) -> list[Tensor]:
    x = call.arg(0)
    dt = x.type.dtype
    alpha, lam = net.const(call.attrs["alpha"], dt), net.const(call.attrs["gamma"], dt)
    return net.layer("Selu", [x, alpha, lam], call.outs)


def _hard_sigmoid(net: NetBuilder, call: Call) -> list[Tensor]:
    x = call.arg(0)
    dt = x.type.dtype
    alpha, beta = net.const(call.attrs["alpha"], dt), net.const(call.attrs["beta"], dt)
    return net.layer("HardSigmoid", [x, alpha, beta], call.outs)


def _leaky_relu(net: NetBuilder, call: Call) -> list[Tensor]:
    x = call.arg(0)
    return net.layer("PReLU", [x, net.const(call.attrs["alpha"], x.type.dtype)], call.outs)


def _prelu(net: NetBuilder, call: Call) -> list[Tensor]:
    x, slope = call.arg(0), call.arg(1)
    # OpenVINO reads a 1-D slope as long as axis 1 as per channel; the core op broadcasts it
    # NumPy-style (along the last axis): leading unit axes make that unambiguous.
    if slope.rank == 1 and (x.rank is None or x.rank > 1):
        if x.rank is None:
            raise call.error("PRelu with a 1-D slope needs data of known rank")
        lead = list(range(x.rank - 1))
        if slope.value is not None:
            slope = net.const(slope.value.reshape([1] * len(lead) + [-1]))
        else:
            assert slope.type.shape is not None
            out = slope.type.with_shape((*[1] * len(lead), *slope.type.shape))
            slope = net.op("Unsqueeze", [slope, net.ints(lead)], out)
    return net.layer("PReLU", [x, slope], call.outs)


def _elu(net: NetBuilder, call: Call) -> list[Tensor]:
    return net.layer("Elu", [call.arg(0)], call.outs, alpha=float(call.attrs["alpha"]))


def _celu(net: NetBuilder, call: Call) -> list[Tensor]:
    # max(0, x) + min(0, alpha * (exp(x / alpha) - 1))
    x = call.arg(0)
    t = x.type
    alpha = net.const(call.attrs["alpha"], t.dtype)
    zero, one = net.const(0, t.dtype), net.const(1, t.dtype)
    scaled = _op(net, "Divide", [x, alpha], t)
    grown = _op(net, "Multiply", [alpha, _op(net, "Subtract", [_exp(net, scaled), one], t)], t)
    low = _op(net, "Minimum", [zero, grown], t)
    return [_op(net, "Add", [_op(net, "Maximum", [x, zero], t), low], t)]


def _exp(net: NetBuilder, x: Tensor) -> Tensor:
    return net.op("Exp", [x], x.type)


def _thresholded_relu(net: NetBuilder, call: Call) -> list[Tensor]:
    x = call.arg(0)
    dt = x.type.dtype
    above = _op(net, "Greater", [x, net.const(call.attrs["alpha"], dt)], x.type.with_dtype(_BOOL))
    return [net.op("Select", [above, x, net.const(0, dt)], call.out, auto_broadcast="numpy")]


def _shrink(net: NetBuilder, call: Call) -> list[Tensor]:
    _float_only(call)
    x = call.arg(0)
    t = x.type
    bias, lambd = net.const(call.attrs["bias"], t.dtype), net.const(call.attrs["lambd"], t.dtype)
    flags = t.with_dtype(_BOOL)
    below = _op(net, "Less", [x, net.const(-call.attrs["lambd"], t.dtype)], flags)
    above = _op(net, "Greater", [x, lambd], flags)
    inner = net.op(
        "Select",
        [above, _op(net, "Subtract", [x, bias], t), net.const(0, t.dtype)],
        t,
        auto_broadcast="numpy",
    )
    return [
        net.op("Select", [below, _op(net, "Add", [x, bias], t), inner], t, auto_broadcast="numpy")
    ]


def _reciprocal(net: NetBuilder, call: Call) -> list[Tensor]:
    x = call.arg(0)
    one = net.const(1, x.type.dtype)
    return [net.op("Divide", [one, x], call.out, auto_broadcast="numpy", m_pythondiv=False)]


def _is_inf(net: NetBuilder, call: Call) -> list[Tensor]:
    return net.layer(
        "IsInf",
        [call.arg(0)],
        call.outs,
        "opset10",
        detect_negative=bool(call.attrs["detect_negative"]),
        detect_positive=bool(call.attrs["detect_positive"]),
    )


# -- binary ---------------------------------------------------------------------------------------
def _mod(net: NetBuilder, call: Call) -> list[Tensor]:
    # fmod=0 takes the divisor's sign (FloorMod), fmod=1 the dividend's (Mod).
    type_ = "Mod" if call.attrs["fmod"] else "FloorMod"
    return net.layer(type_, [call.arg(0), call.arg(1)], call.outs, auto_broadcast="numpy")


def _bit_shift(net: NetBuilder, call: Call) -> list[Tensor]:
    x, by = call.arg(0), call.arg(1)
    dt = x.type.dtype
    type_ = "BitwiseLeftShift" if call.attrs["direction"] == "LEFT" else "BitwiseRightShift"
    width = dt.bits
    if by.value is not None and bool(np.all((by.value >= 0) & (by.value < width))):
        return net.layer(type_, [x, by], call.outs, "opset15", auto_broadcast="numpy")
    # Shifts below 0 or by the width or more leave only the sign fill (0, or -1 for a right
    # shift of a negative x); OpenVINO leaves them undefined, so they are masked here.
    flags = by.type.with_dtype(_BOOL)
    inside = _op(
        net,
        "LogicalAnd",
        [
            _op(net, "GreaterEqual", [by, net.const(0, by.type.dtype)], flags),
            _op(net, "Less", [by, net.const(width, by.type.dtype)], flags),
        ],
        flags,
    )
    safe = net.op("Select", [inside, by, net.const(0, by.type.dtype)], by.type)
    shifted = net.op(type_, [x, safe], call.out, "opset15", auto_broadcast="numpy")
    fill = net.const(0, dt)
    if type_ == "BitwiseRightShift" and dt.is_signed:
        negative = _op(net, "Less", [x, fill], x.type.with_dtype(_BOOL))
        fill = net.op("Select", [negative, net.const(-1, dt), fill], x.type, auto_broadcast="numpy")
    return [net.op("Select", [inside, shifted, fill], call.out, auto_broadcast="numpy")]


def _variadic_sum(net: NetBuilder, call: Call) -> Tensor:
    acc = call.arg(0)
    for x in call.ins[1:]:
        assert x is not None
        acc = _op(net, "Add", [acc, x], acc.type)
    return acc


def _sum(net: NetBuilder, call: Call) -> list[Tensor]:
    if len(call.ins) == 1:
        return [call.arg(0)]
    return [_variadic_sum(net, call)]


def _mean(net: NetBuilder, call: Call) -> list[Tensor]:
    total = _variadic_sum(net, call)
    if len(call.ins) == 1:
        return [total]
    n = net.const(len(call.ins), total.type.dtype)
    return [net.op("Divide", [total, n], call.out, auto_broadcast="numpy", m_pythondiv=False)]


def _clip(net: NetBuilder, call: Call) -> list[Tensor]:
    y = call.arg(0)
    dt = y.type.dtype
    for index, type_ in ((1, "Maximum"), (2, "Minimum")):
        bound = call.opt(index)
        if bound is not None:
            y = net.op(
                type_, [y, scalar(net, convert(net, bound, dt))], y.type, auto_broadcast="numpy"
            )
    return [y]


# -- reductions -----------------------------------------------------------------------------------
Reduce = Callable[[NetBuilder, Call, Tensor, Tensor, bool], Tensor]


def _reduction(lower: Reduce, floats_only: bool = False) -> Emitter:
    def emit(net: NetBuilder, call: Call) -> list[Tensor]:
        if floats_only:
            _float_only(call)
        x, axes = call.arg(0), call.opt(1)
        keep = bool(call.attrs["keepdims"])
        # ONNX reduces over all axes when none are listed; OpenVINO then reduces over none,
        # which is noop_with_empty_axes: the elementwise part is left (|x| for ReduceL1).
        if axes is None or (axes.value is not None and axes.value.size == 0):
            if call.attrs["noop_with_empty_axes"]:
                # The CPU plugin compiles empty axes only with keep_dims, which keeps the shape.
                return [lower(net, call, x, net.const(np.zeros(0, np.int64)), True)]
            axes = all_axes(net, x)
        return [lower(net, call, x, axes, keep)]

    return emit


def _layer_reduce(type_: str, version: str = "opset1") -> Reduce:
    def lower(net: NetBuilder, call: Call, x: Tensor, axes: Tensor, keep: bool) -> Tensor:
        return net.op(type_, [x, axes], call.out, version, keep_dims=keep)

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
    powers = net.op("Exp", [_op(net, "Subtract", [x, near], x.type)], x.type)
    total = net.op("ReduceSum", [powers, axes], call.out, keep_dims=keep)
    far = near if keep else shift(False, call.out)
    return _op(net, "Add", [net.op("Log", [total], call.out), far], call.out)


# -- the table ------------------------------------------------------------------------------------
_UNARY: dict[str, tuple[str, str]] = {
    "Sin": ("Sin", "opset1"),
    "Cos": ("Cos", "opset1"),
    "Tan": ("Tan", "opset1"),
    "Asin": ("Asin", "opset1"),
    "Acos": ("Acos", "opset1"),
    "Atan": ("Atan", "opset1"),
    "Sinh": ("Sinh", "opset1"),
    "Cosh": ("Cosh", "opset1"),
    "Asinh": ("Asinh", "opset4"),
    "Acosh": ("Acosh", "opset4"),
    "Atanh": ("Atanh", "opset4"),
    "Erf": ("Erf", "opset1"),
    "Floor": ("Floor", "opset1"),
    "Ceil": ("Ceiling", "opset1"),
    "Sign": ("Sign", "opset1"),
    "Softplus": ("SoftPlus", "opset4"),
    "Softsign": ("SoftSign", "opset9"),
    "HardSwish": ("HSwish", "opset4"),
    "Mish": ("Mish", "opset4"),
    "IsNaN": ("IsNaN", "opset10"),
    "BitwiseNot": ("BitwiseNot", "opset13"),
}

EMITTERS: dict[str, Emitter] = {
    **{op: _same(ov, version) for op, (ov, version) in _UNARY.items()},
    "Round": _same("Round", "opset5", mode="half_to_even"),
    "Reciprocal": _reciprocal,
    "IsInf": _is_inf,
    "Gelu": _gelu,
    "Swish": _swish,
    "Elu": _elu,
    "Selu": _selu,
    "Celu": _celu,
    "HardSigmoid": _hard_sigmoid,
    "LeakyRelu": _leaky_relu,
    "PRelu": _prelu,
    "ThresholdedRelu": _thresholded_relu,
    "Shrink": _shrink,
    "Mod": _mod,
    **{op: _broadcasting(op, "opset13") for op in ("BitwiseAnd", "BitwiseOr", "BitwiseXor")},
    "BitShift": _bit_shift,
    "Sum": _sum,
    "Mean": _mean,
    "Clip": _clip,
    "LogSoftmax": _same("LogSoftmax", "opset5", axis=lambda call: call.attrs["axis"]),
    "ReduceProd": _reduction(_layer_reduce("ReduceProd")),
    "ReduceL1": _reduction(_layer_reduce("ReduceL1", "opset4")),
    "ReduceL2": _reduction(_layer_reduce("ReduceL2", "opset4")),
    "ReduceSumSquare": _reduction(_sum_square),
    "ReduceLogSum": _reduction(_log_sum, floats_only=True),
    "ReduceLogSumExp": _reduction(_log_sum_exp, floats_only=True),
    "Inverse": _same("Inverse", "opset14", adjoint=False),
}
"""Emitters of this family, by core op name."""
