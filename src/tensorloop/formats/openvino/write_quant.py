"""Core element-type and quantisation ops written as OpenVINO layers: casts, dequantising.

Cast, CastLike and DequantizeLinear (QuantizeLinear refused)."""

from __future__ import annotations

from ...ops.quant import param_layout
from ...tensor.dtypes import DType
from ...tensor.types import TensorType
from .write_net import Call, Emitter, NetBuilder, Tensor, convert

# -- element types ---------------------------------------------------------------------------------
_FLOAT8 = {DType.float8e4m3fn: 448.0, DType.float8e5m2: 57344.0}


def _cast(net: NetBuilder, call: Call) -> list[Tensor]:
    """Convert; to f8 only from f16 (OpenVINO takes wider floats there through f16, rounding
    twice), clamped first where the Cast saturates (OpenVINO's Convert does not)."""
    x, to = call.arg(0), call.attrs["to"]
    if to in _FLOAT8 and x.type.dtype is not DType.bool:
        if x.type.dtype is not DType.float16:
            raise call.error(
                f"OpenVINO converts {x.type.dtype} to {to} through f16, rounding twice: "
                "cast to float16 first"
            )
        if call.attrs["saturate"]:
            x = net.op("Clamp", [x], x.type, min=-_FLOAT8[to], max=_FLOAT8[to])
    return net.layer("Convert", [x], call.outs, destination_type=to)


def _cast_like(net: NetBuilder, call: Call) -> list[Tensor]:
    return [net.op("Convert", [call.arg(0)], call.out, destination_type=call.out.dtype)]


# -- quantisation ----------------------------------------------------------------------------------
_QUANT_INTS = frozenset({DType.int8, DType.uint8, DType.int16, DType.uint16})
"""What QuantizeLinear and DequantizeLinear are written for: the integers whose every value f32
holds and whose sums with a zero point f32 computes exactly."""


def _param(net: NetBuilder, call: Call, p: Tensor, data: Tensor, dt: DType) -> Tensor:
    """A scale or zero point as ``dt``, shaped to broadcast over ``data`` (per tensor or axis)."""
    if p.type.shape is None or data.type.shape is None:
        raise call.error("the scale, zero point and data need known ranks")
    try:
        kind, axis = param_layout(
            p.type.shape, data.type.shape, call.attrs["axis"], call.attrs["block_size"]
        )
    except ValueError as exc:
        raise call.error(str(exc)) from None
    if kind == "blocked":
        raise call.error("blocked quantisation (block_size > 0) is not written to OpenVINO")
    p = convert(net, p, dt)
    rank = len(data.type.shape)
    dims = [] if kind == "tensor" else [-1 if i == axis else 1 for i in range(rank)]
    if p.value is not None:
        return net.const(p.value.reshape(dims))
    length = p.type.shape[0] if p.type.shape else 1
    shape = TensorType(
        dt, [] if kind == "tensor" else [length if i == axis else 1 for i in range(rank)]
    )
    return net.op("Reshape", [p, net.ints(dims)], shape, special_zero=False)


def _quantize_linear(net: NetBuilder, call: Call) -> list[Tensor]:
    # round(x / scale) to nearest even needs a correctly rounded quotient: OpenVINO's CPU plugin
    # divides (f32 and f64 alike) with an error of an ulp, so values at or near a tie round the
    # other way. Not written rather than written differently.
    raise call.error(
        "QuantizeLinear is not written to OpenVINO: its CPU plugin's Divide is not correctly "
        "rounded, so x / scale at or near a tie would round to another integer"
    )


def _dequantize_linear(net: NetBuilder, call: Call) -> list[Tensor]:
    x, scale, zero = call.arg(0), call.arg(1), call.opt(2)
    if x.type.dtype not in _QUANT_INTS:
        raise call.error(
            f"dequantizing {x.type.dtype} is not written to OpenVINO (int8, uint8, int16, uint16)"
        )
    f32 = DType.float32
    shifted = convert(net, x, f32)  # exact, as is the difference below
    if zero is not None:
        z = _param(net, call, zero, x, f32)
        shifted = net.op("Subtract", [shifted, z], shifted.type, auto_broadcast="numpy")
    s = _param(net, call, scale, x, f32)
    y = net.op("Multiply", [shifted, s], shifted.type, auto_broadcast="numpy")
    return [convert(net, y, call.out.dtype)]


EMITTERS: dict[str, Emitter] = {
    "Cast": _cast,
    "CastLike": _cast_like,
    "QuantizeLinear": _quantize_linear,
    "DequantizeLinear": _dequantize_linear,
}
"""Emitters of this family, by core op name."""
