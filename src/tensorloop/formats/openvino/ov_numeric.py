"""OpenVINO numeric layers read as core ops: Inverse-14, FakeConvert-13 and BinaryConvolution-1.

Inverse is the core ``Inverse`` (of the transposed matrices when ``adjoint``); a singular matrix,
whose result the spec leaves undefined, inverts to all NaN, as the CPU plugin gives.

FakeConvert computes ``(Convert(data * scale - shift) + shift) / scale`` through the 8-bit float
type, as OpenVINO's CPU plugin computes it: f32 and bf16 data round to f16 first (to nearest even,
beyond f16's range to ±inf, as OpenVINO's Convert to f8 does too), then saturate to the type's
largest finite value (±448 for f8e4m3, ±57344 for f8e5m2; infinities too) and round to nearest
even. NaN stays NaN, as the spec's Convert keeps it (the CPU plugin gives -max).

BinaryConvolution (mode xnor-popcount, weights usually a packed-bit ``u1`` constant) is a core
``Conv`` of ±1 values, whose sum over the window is the spec's 2 * popcount(xnor) - bits: a
weight bit 1 is 1, 0 is -1; an input above 0 is 1, else -1; the padding is 1 where ``pad_value``
is 1, else -1. The spec's inputs and pad values are 0 and 1; others binarize as the CPU plugin
binarizes them. The IR's bits run from the high bit of each byte down, as OpenVINO writes them
and its reference reads them (the CPU plugin reads them low to high, and leaves the padding out
of the count for pad_value 0: docs/openvino.md).

Left unregistered: RandomUniform-8 and Multinomial-13, whose values cannot be reproduced by a core
op, a function of its inputs: OpenVINO's converters write them with seeds 0 and 0, which the
spec makes non-deterministic, and with RandomUniform's ``alignment="tensorflow"`` (the default)
the CPU plugin's Philox generator carries its state from one inference to the next (a compiled
model's second run continues the sequence of its first)."""

from __future__ import annotations

import math

import numpy as np

from ...ir.graph import Value
from ...tensor.dtypes import DType
from .convert import LayerContext, converter
from .inputs import has_input, scalar_const, type_of

__all__: list[str] = []


def _float_input(ctx: LayerContext, index: int, what: str) -> Value:
    x = ctx.input(index)
    if not type_of(ctx, x).dtype.is_float:
        raise ctx.error(f"input #{index} ({what}) must hold floats, got {type_of(ctx, x)}")
    return x


# -- Inverse ---------------------------------------------------------------------------------
@converter("Inverse")
def _inverse(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    x = _float_input(ctx, 0, "data")
    if ctx.bool_attr("adjoint", False):
        rank = type_of(ctx, x).rank
        if rank is None or rank < 2:
            raise ctx.error(
                f"adjoint needs [*, M, M] matrices of known rank, got {type_of(ctx, x)}"
            )
        perm = [*range(rank - 2), rank - 1, rank - 2]
        x = ctx.em.op("Transpose", [x], {"perm": perm})
    return [ctx.em.op("Inverse", [x])]


# -- FakeConvert -----------------------------------------------------------------------------
# destination_type: the 8-bit type and its largest finite value
_FLOAT8 = {"f8e4m3": (DType.float8e4m3fn, 448.0), "f8e5m2": (DType.float8e5m2, 57344.0)}


@converter("FakeConvert")
def _fake_convert(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    em = ctx.em
    data = _float_input(ctx, 0, "data")
    dt = type_of(ctx, data).dtype
    if dt not in (DType.float32, DType.float16, DType.bfloat16):
        raise ctx.error(f"data must be f32, f16 or bf16, got {type_of(ctx, data)}")
    to, limit = _FLOAT8[ctx.choice_attr("destination_type", tuple(_FLOAT8), "f8e4m3")]
    scale = ctx.input(1)
    shift = ctx.input(2) if has_input(inputs, 2) else None
    for v, what in ((scale, "scale"), (shift, "shift")):
        if v is not None and type_of(ctx, v).dtype is not dt:
            raise ctx.error(f"{what} must be {dt} like data, got {type_of(ctx, v)}")
    x = em.op("Mul", [data, scale])
    if shift is not None:
        x = em.op("Sub", [x, shift])
    if dt is not DType.float16:
        x = em.op("Cast", [x], {"to": DType.float16})
    bounds = [scalar_const(ctx, v, DType.float16) for v in (-limit, limit)]
    x = em.op("Clip", [x, *bounds])
    x = em.op("Cast", [em.op("Cast", [x], {"to": to, "saturate": 0})], {"to": dt})
    if shift is not None:
        x = em.op("Add", [x, shift])
    return [em.op("Div", [x, scale])]


# -- BinaryConvolution -----------------------------------------------------------------------
def _pads(ctx: LayerContext, x: Value, kernel: list[int], n: int) -> tuple[list[int], list[int]]:
    """The begin and end pads of the spatial axes, worked out for auto_pad same_*/valid."""
    strides = ctx.ints_attr("strides")
    dilations = ctx.ints_attr("dilations")
    auto = ctx.choice_attr(
        "auto_pad", ("explicit", "notset", "same_upper", "same_lower", "valid"), "explicit"
    )
    if len(strides) != n or len(dilations) != n or any(v < 1 for v in strides + dilations):
        raise ctx.error(f"strides {strides} and dilations {dilations} need {n} values >= 1")
    if auto == "valid":
        return [0] * n, [0] * n
    if auto in ("explicit", "notset"):
        begin, end = ctx.ints_attr("pads_begin"), ctx.ints_attr("pads_end")
        if len(begin) != n or len(end) != n or any(p < 0 for p in begin + end):
            raise ctx.error(f"pads_begin {begin} and pads_end {end} need {n} values >= 0")
        return begin, end
    shape = type_of(ctx, x).shape
    sizes = None if shape is None else shape[2:]
    if sizes is None or not all(isinstance(d, int) for d in sizes):
        raise ctx.error(f"auto_pad {auto} needs static spatial dims, got {type_of(ctx, x)}")
    begin, end = [], []
    for size, k, s, d in zip(sizes, kernel, strides, dilations, strict=True):
        assert isinstance(size, int)
        total = max((math.ceil(size / s) - 1) * s + (k - 1) * d + 1 - size, 0)
        low = total // 2 if auto == "same_upper" else total - total // 2
        begin.append(low)
        end.append(total - low)
    return begin, end


def _signs(ctx: LayerContext, value: Value, dt: DType) -> Value:
    """1 where ``value`` is above 0 (true, for bools), else -1, as ``dt``."""
    em = ctx.em
    data = value.constant
    if data is not None:
        return em.const(np.where(np.asarray(data) > 0, 1, -1).astype(dt.numpy))
    t = type_of(ctx, value)
    above = (
        value if t.dtype is DType.bool else em.op("Greater", [value, scalar_const(ctx, 0, t.dtype)])
    )
    return em.op("Where", [above, scalar_const(ctx, 1, dt), scalar_const(ctx, -1, dt)])


@converter("BinaryConvolution")
def _binary_convolution(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    em = ctx.em
    x = _float_input(ctx, 0, "data")
    t = type_of(ctx, x)
    mode = ctx.choice_attr("mode", ("xnor-popcount",))
    w = ctx.input(1)
    wt = type_of(ctx, w)
    if t.rank is None or t.rank < 3 or wt.shape is None or len(wt.shape) != t.rank:
        raise ctx.error(f"{mode} needs (N, C, D...) data and (M, C, k...) weights, got {t}, {wt}")
    if not all(isinstance(d, int) for d in wt.shape[2:]):
        raise ctx.error(f"the kernel needs static spatial dims, got {wt}")
    n = t.rank - 2
    kernel = [int(d) for d in wt.shape[2:]]
    begin, end = _pads(ctx, x, kernel, n)
    signs = _signs(ctx, x, t.dtype)
    if any(begin + end):
        fill = 1 if ctx.float_attr("pad_value") == 1 else -1
        pads = em.ints([0, 0, *begin, 0, 0, *end])
        signs = em.op("Pad", [signs, pads, scalar_const(ctx, fill, t.dtype)])
    attrs = {
        "strides": ctx.ints_attr("strides"),
        "dilations": ctx.ints_attr("dilations"),
        "pads": [0] * (2 * n),
    }
    return [em.op("Conv", [signs, _signs(ctx, w, t.dtype)], attrs)]
