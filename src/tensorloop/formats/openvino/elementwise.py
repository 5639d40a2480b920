"""OpenVINO elementwise layers (arithmetic, logic, unary, Select, Clamp, Convert) and MatMul."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ...ir.graph import Value
from ...tensor.dtypes import DType
from .convert import LayerContext, converter
from .inputs import check_auto_broadcast, rank_of, scalar_const, type_of

Lowering = Callable[[LayerContext, Value, Value], Value]
_WIDER_THAN_F16 = frozenset({DType.float32, DType.float64, DType.bfloat16})


def _core_binary(op: str) -> Lowering:
    return lambda ctx, a, b: ctx.em.op(op, [a, b])


def _not_equal(ctx: LayerContext, a: Value, b: Value) -> Value:
    return ctx.em.op("Not", [ctx.em.op("Equal", [a, b])])


def _divide(ctx: LayerContext, a: Value, b: Value) -> Value:
    em = ctx.em
    floor = ctx.bool_attr("m_pythondiv", True)
    q = em.op("Div", [a, b])
    dt = type_of(ctx, q).dtype
    # m_pythondiv floors signed integer quotients; Div truncates toward zero, so step down by
    # one where the remainder is non-zero and its sign differs from the divisor's.
    if not (floor and dt.is_int and dt.is_signed):
        return q
    zero = scalar_const(ctx, 0, dt)
    r = em.op("Sub", [a, em.op("Mul", [q, b])])
    differ = em.op("Xor", [em.op("Less", [r, zero]), em.op("Less", [b, zero])])
    fix = em.op("And", [em.op("Not", [em.op("Equal", [r, zero])]), differ])
    return em.op("Sub", [q, em.op("Cast", [fix], {"to": dt})])


_BINARY: dict[str, Lowering] = {
    "Add": _core_binary("Add"),
    "Subtract": _core_binary("Sub"),
    "Multiply": _core_binary("Mul"),
    "Divide": _divide,
    "Power": _core_binary("Pow"),
    "Maximum": _core_binary("Max"),
    "Minimum": _core_binary("Min"),
    "Equal": _core_binary("Equal"),
    "NotEqual": _not_equal,
    "Less": _core_binary("Less"),
    "Greater": _core_binary("Greater"),
    "LessEqual": _core_binary("LessOrEqual"),
    "GreaterEqual": _core_binary("GreaterOrEqual"),
    "LogicalAnd": _core_binary("And"),
    "LogicalOr": _core_binary("Or"),
    "LogicalXor": _core_binary("Xor"),
}

_UNARY: dict[str, str] = {
    "Sigmoid": "Sigmoid",
    "Tanh": "Tanh",
    "ReLU": "Relu",
    "Exp": "Exp",
    "Log": "Log",
    "Sqrt": "Sqrt",
    "LogicalNot": "Not",
    "Abs": "Abs",
    "Negative": "Neg",
}


def _binary(lower: Lowering) -> Callable[[LayerContext, list[Value | None]], list[Value]]:
    def convert(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
        a, b = ctx.input(0), ctx.input(1)
        check_auto_broadcast(ctx, [a, b])
        return [lower(ctx, a, b)]

    return convert


def _unary(op: str) -> Callable[[LayerContext, list[Value | None]], list[Value]]:
    def convert(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
        return [ctx.em.op(op, [ctx.input(0)])]

    return convert


for _layer_type, _lower in _BINARY.items():
    converter(_layer_type)(_binary(_lower))
for _layer_type, _op in _UNARY.items():
    converter(_layer_type)(_unary(_op))


@converter("Select")
def _select(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    values = [ctx.input(i) for i in range(3)]
    check_auto_broadcast(ctx, values)
    return [ctx.em.op("Where", values)]


@converter("Clamp")
def _clamp(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    x = ctx.input(0)
    lo, hi = ctx.float_attr("min"), ctx.float_attr("max")
    if math.isnan(lo) or math.isnan(hi) or lo > hi:
        raise ctx.error(f"attributes 'min' and 'max' must satisfy min <= max, got {lo} and {hi}")
    dt = type_of(ctx, x).dtype
    low: float | int = lo
    high: float | int = hi
    if dt.is_int:
        # The spec converts min with ceil and max with floor; bounds beyond the type (or
        # infinite) clip to its range rather than overflow.
        info = np.iinfo(dt.numpy)
        low, high = (
            int(info.min) if v <= info.min else int(info.max) if v >= info.max else int(r(v))
            for v, r in ((lo, math.ceil), (hi, math.floor))
        )
    low_v, high_v = scalar_const(ctx, low, dt), scalar_const(ctx, high, dt)
    return [ctx.em.op("Min", [ctx.em.op("Max", [x, low_v]), high_v])]


_FLOAT8 = (DType.float8e4m3fn, DType.float8e5m2)


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


@converter("MatMul")
def _matmul(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    operands = []
    for i, key in enumerate(("transpose_a", "transpose_b")):
        value = ctx.input(i)
        # A 1-D operand is unsqueezed to a matrix whatever its transpose flag says.
        if ctx.bool_attr(key, False) and type_of(ctx, value).rank != 1:
            rank = rank_of(ctx, i, key.replace("transpose", "operand"))
            perm = [*range(rank - 2), rank - 1, rank - 2]
            value = ctx.em.op("Transpose", [value], {"perm": perm})
        operands.append(value)
    return [ctx.em.op("MatMul", operands)]
