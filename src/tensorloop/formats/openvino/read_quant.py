"""OpenVINO element-type and quantisation layers read as core ops: Converts and fake quantising.

Convert-1, ConvertLike-1, ConvertPromoteTypes-14, FakeQuantize-1 and FakeConvert-13.

Convert folds a constant input (so that weights saved as f16 with a decompressing Convert stay
constants), converts wider floats to an 8-bit float through f16 and does not saturate, as
OpenVINO's Convert does.

FakeConvert computes ``(Convert(data * scale - shift) + shift) / scale`` through the 8-bit float
type, as OpenVINO's CPU plugin computes it: f32 and bf16 data round to f16 first (to nearest even,
beyond f16's range to ±inf, as OpenVINO's Convert to f8 does too), then saturate to the type's
largest finite value (±448 for f8e4m3, ±57344 for f8e5m2; infinities too) and round to nearest
even. NaN stays NaN, as the spec's Convert keeps it (the CPU plugin gives -max)."""

from __future__ import annotations

import numpy as np

from ...ir.graph import Value
from ...tensor.dtypes import DType
from .convert import LayerContext, converter
from .inputs import check_auto_broadcast, float_input, has_input, scalar_const, type_of

__all__: list[str] = []

_FLOAT8 = {DType.float8e4m3fn: 448.0, DType.float8e5m2: 57344.0}
"""The 8-bit float types, each with its largest finite value."""
_WIDER_THAN_F16 = frozenset({DType.float32, DType.float64, DType.bfloat16})


# -- element types ---------------------------------------------------------------------------------
@converter("Convert")
def _convert(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    to = ctx.element_type("destination_type")
    x = ctx.input(0)
    # OpenVINO converts wider floats to f8 through f16 (rounding twice), and does not saturate.
    through_f16 = to in _FLOAT8 and type_of(ctx, x).dtype in _WIDER_THAN_F16
    data = ctx.const(0)
    if data is not None:
        # Fold it, so that weights saved as f16 with a decompressing Convert stay constants for
        # the converters that need constant inputs. astype is exactly what Cast computes.
        with np.errstate(all="ignore"):
            narrow = data.astype(np.float16) if through_f16 else data
            return [ctx.em.const(narrow.astype(to.numpy))]
    if through_f16:
        x = ctx.em.op("Cast", [x], {"to": DType.float16})
    attrs = {"saturate": 0} if to in _FLOAT8 else {}
    return [ctx.em.op("Cast", [x], {"to": to, **attrs})]


@converter("ConvertLike")
def _convert_like(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    """Convert to the element type of input #1, as Convert does (constants folded the same)."""
    to = type_of(ctx, ctx.input(1)).dtype
    data = ctx.const(0)
    if data is not None:
        with np.errstate(all="ignore"):
            return [ctx.em.const(data.astype(to.numpy))]
    return [ctx.em.op("Cast", [ctx.input(0)], {"to": to})]


@converter("ConvertPromoteTypes")
def _convert_promote_types(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    """Both inputs cast to their common type: the one OpenVINO's shape inference settled on and
    wrote as the output ports' precision (its promotion rules, pytorch_scalar_promotion and
    promote_unsafe included, are applied when the IR is made)."""
    if len(ctx.layer.outputs) != 2:
        raise ctx.error(f"expected 2 output ports, got {len(ctx.layer.outputs)}")
    outs = []
    for i, port in enumerate(ctx.layer.outputs):
        v, to = ctx.input(i), ctx.port_type(port).dtype
        outs.append(v if type_of(ctx, v).dtype is to else ctx.em.op("Cast", [v], {"to": to}))
    return outs


# -- quantisation ----------------------------------------------------------------------------------
@converter("FakeQuantize")
def _fake_quantize(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    em = ctx.em
    x, il, ih, ol, oh = (ctx.input(i) for i in range(5))
    check_auto_broadcast(ctx, [x, il, ih, ol, oh])
    dt = type_of(ctx, x).dtype
    if not dt.is_float:
        raise ctx.error(f"FakeQuantize of {type_of(ctx, x)} is not supported")
    levels = ctx.int_attr("levels")
    if levels < 2:
        raise ctx.error(f"attribute 'levels' is {levels}, expected at least 2")
    steps = scalar_const(ctx, levels - 1, dt)
    q = em.op("Div", [em.op("Sub", [x, il]), em.op("Sub", [ih, il])])
    q = em.op("Round", [em.op("Mul", [q, steps])])
    y = em.op("Add", [em.op("Mul", [em.op("Div", [q, steps]), em.op("Sub", [oh, ol])]), ol])
    low = em.op("LessOrEqual", [x, em.op("Min", [il, ih])])
    high = em.op("Greater", [x, em.op("Max", [il, ih])])
    y = em.op("Where", [high, oh, y])
    return [em.op("Where", [low, ol, y])]


_FAKE_CONVERT_TYPES = {"f8e4m3": DType.float8e4m3fn, "f8e5m2": DType.float8e5m2}
"""FakeConvert's destination_type values."""


@converter("FakeConvert")
def _fake_convert(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    em = ctx.em
    data = float_input(ctx, 0, "data")
    dt = type_of(ctx, data).dtype
    if dt not in (DType.float32, DType.float16, DType.bfloat16):
        raise ctx.error(f"data must be f32, f16 or bf16, got {type_of(ctx, data)}")
    key = ctx.choice_attr("destination_type", tuple(_FAKE_CONVERT_TYPES), "f8e4m3")
    to = _FAKE_CONVERT_TYPES[key]
    limit = _FLOAT8[to]
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
