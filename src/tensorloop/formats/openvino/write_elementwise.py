"""Core elementwise ops written as OpenVINO layers: arithmetic, logic, functions, activations.

Arithmetic, comparisons, logic, bits, the unary functions and the activations."""

from __future__ import annotations

import numpy as np

from ...tensor.dtypes import DType
from .write_net import (
    Call,
    Emitter,
    NetBuilder,
    Tensor,
    broadcast,
    broadcast_op,
    broadcasting,
    convert,
    float_only,
    same_layer,
    scalar,
)

_BOOL = DType.bool


# -- arithmetic ------------------------------------------------------------------------------------
def _variadic(type_: str) -> Emitter:
    """ONNX Min/Max take any number of inputs; OpenVINO's Minimum/Maximum take two."""

    def emit(net: NetBuilder, call: Call) -> list[Tensor]:
        acc = call.arg(0)
        for x in call.ins[1:]:
            assert x is not None
            acc = net.op(
                type_,
                [acc, x],
                acc.type.with_shape(broadcast(acc.type.shape, x.type.shape)),
                auto_broadcast="numpy",
            )
        return [acc]

    return emit


def _pow(net: NetBuilder, call: Call) -> list[Tensor]:
    # OpenVINO's Power wants one element type; tensorloop's exponent may have another.
    x, y = call.arg(0), call.arg(1)
    if x.type.dtype.is_float or not y.type.dtype.is_float:
        y = convert(net, y, x.type.dtype)
        return [net.op("Power", [x, y], call.out, auto_broadcast="numpy")]
    # An integer base to a float power is real arithmetic, truncated back, as tensorloop does.
    wide = [convert(net, v, DType.float64) for v in (x, y)]
    real = net.op("Power", wide, call.out.with_dtype(DType.float64), auto_broadcast="numpy")
    return [convert(net, real, x.type.dtype)]


def _reciprocal(net: NetBuilder, call: Call) -> list[Tensor]:
    x = call.arg(0)
    one = net.const(1, x.type.dtype)
    return [net.op("Divide", [one, x], call.out, auto_broadcast="numpy", m_pythondiv=False)]


def _mod(net: NetBuilder, call: Call) -> list[Tensor]:
    # fmod=0 takes the divisor's sign (FloorMod), fmod=1 the dividend's (Mod).
    type_ = "Mod" if call.attrs["fmod"] else "FloorMod"
    return net.layer(type_, [call.arg(0), call.arg(1)], call.outs, auto_broadcast="numpy")


def _variadic_sum(net: NetBuilder, call: Call) -> Tensor:
    acc = call.arg(0)
    for x in call.ins[1:]:
        assert x is not None
        acc = broadcast_op(net, "Add", [acc, x], acc.type)
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


def _is_inf(net: NetBuilder, call: Call) -> list[Tensor]:
    return net.layer(
        "IsInf",
        [call.arg(0)],
        call.outs,
        "opset10",
        detect_negative=bool(call.attrs["detect_negative"]),
        detect_positive=bool(call.attrs["detect_positive"]),
    )


# -- bits ------------------------------------------------------------------------------------------
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
    inside = broadcast_op(
        net,
        "LogicalAnd",
        [
            broadcast_op(net, "GreaterEqual", [by, net.const(0, by.type.dtype)], flags),
            broadcast_op(net, "Less", [by, net.const(width, by.type.dtype)], flags),
        ],
        flags,
    )
    safe = net.op("Select", [inside, by, net.const(0, by.type.dtype)], by.type)
    shifted = net.op(type_, [x, safe], call.out, "opset15", auto_broadcast="numpy")
    fill = net.const(0, dt)
    if type_ == "BitwiseRightShift" and dt.is_signed:
        negative = broadcast_op(net, "Less", [x, fill], x.type.with_dtype(_BOOL))
        fill = net.op("Select", [negative, net.const(-1, dt), fill], x.type, auto_broadcast="numpy")
    return [net.op("Select", [inside, shifted, fill], call.out, auto_broadcast="numpy")]


# -- activations with parameters -------------------------------------------------------------------
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
    scaled = broadcast_op(net, "Divide", [x, alpha], t)
    exp = net.op("Exp", [scaled], scaled.type)
    grown = broadcast_op(net, "Multiply", [alpha, broadcast_op(net, "Subtract", [exp, one], t)], t)
    low = broadcast_op(net, "Minimum", [zero, grown], t)
    return [broadcast_op(net, "Add", [broadcast_op(net, "Maximum", [x, zero], t), low], t)]


def _thresholded_relu(net: NetBuilder, call: Call) -> list[Tensor]:
    x = call.arg(0)
    dt = x.type.dtype
    above = broadcast_op(
        net, "Greater", [x, net.const(call.attrs["alpha"], dt)], x.type.with_dtype(_BOOL)
    )
    return [net.op("Select", [above, x, net.const(0, dt)], call.out, auto_broadcast="numpy")]


def _shrink(net: NetBuilder, call: Call) -> list[Tensor]:
    float_only(call)
    x = call.arg(0)
    t = x.type
    bias, lambd = net.const(call.attrs["bias"], t.dtype), net.const(call.attrs["lambd"], t.dtype)
    flags = t.with_dtype(_BOOL)
    below = broadcast_op(net, "Less", [x, net.const(-call.attrs["lambd"], t.dtype)], flags)
    above = broadcast_op(net, "Greater", [x, lambd], flags)
    inner = net.op(
        "Select",
        [above, broadcast_op(net, "Subtract", [x, bias], t), net.const(0, t.dtype)],
        t,
        auto_broadcast="numpy",
    )
    return [
        net.op(
            "Select",
            [below, broadcast_op(net, "Add", [x, bias], t), inner],
            t,
            auto_broadcast="numpy",
        )
    ]


# -- the table -------------------------------------------------------------------------------------
_BINARY = {
    "Add": "Add", "Sub": "Subtract", "Mul": "Multiply", "Equal": "Equal", "Less": "Less",
    "Greater": "Greater", "LessOrEqual": "LessEqual", "GreaterOrEqual": "GreaterEqual",
    "And": "LogicalAnd", "Or": "LogicalOr", "Xor": "LogicalXor", "Where": "Select",
}  # fmt: skip
_UNARY: dict[str, tuple[str, str]] = {
    "Neg": ("Negative", "opset1"),
    "Abs": ("Abs", "opset1"),
    "Relu": ("ReLU", "opset1"),
    "Sqrt": ("Sqrt", "opset1"),
    "Exp": ("Exp", "opset1"),
    "Log": ("Log", "opset1"),
    "Sigmoid": ("Sigmoid", "opset1"),
    "Tanh": ("Tanh", "opset1"),
    "Not": ("LogicalNot", "opset1"),
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
    **{op: broadcasting(ov) for op, ov in _BINARY.items()},
    **{op: same_layer(ov, version) for op, (ov, version) in _UNARY.items()},
    # ONNX integer division truncates; OpenVINO's floors unless told otherwise.
    "Div": broadcasting("Divide", m_pythondiv=False),
    "Min": _variadic("Minimum"),
    "Max": _variadic("Maximum"),
    "Pow": _pow,
    "Sum": _sum,
    "Mean": _mean,
    "Reciprocal": _reciprocal,
    "Mod": _mod,
    "Clip": _clip,
    "Round": same_layer("Round", "opset5", mode="half_to_even"),
    "IsInf": _is_inf,
    **{op: broadcasting(op, "opset13") for op in ("BitwiseAnd", "BitwiseOr", "BitwiseXor")},
    "BitShift": _bit_shift,
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
}
"""Emitters of this family, by core op name."""
