"""OpenVINO elementwise layers read as core ops: arithmetic, logic, functions and activations.

Arithmetic, comparisons, logic, bits, Select, Clamp, the unary functions, rounding, predicates
and the activations; one converter per layer type, at every opset version OpenVINO's converters
write."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ...ir.graph import Value
from ...tensor.dtypes import DType
from .convert import Converter, LayerContext, converter
from .inputs import check_auto_broadcast, has_input, scalar_const, type_of

__all__: list[str] = []

Lowering = Callable[[LayerContext, Value, Value], Value]


# -- binary arithmetic, comparisons, logic and bits ------------------------------------------------
def _broadcasting(lower: Lowering) -> Converter:
    def convert(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
        a, b = ctx.input(0), ctx.input(1)
        check_auto_broadcast(ctx, [a, b])
        return [lower(ctx, a, b)]

    return convert


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


def _squared_difference(ctx: LayerContext, a: Value, b: Value) -> Value:
    d = ctx.em.op("Sub", [a, b])
    return ctx.em.op("Mul", [d, d])


def _bitwise(logical: str, bitwise: str) -> Lowering:
    """On booleans the logical op, on integers the bitwise one."""

    def lower(ctx: LayerContext, a: Value, b: Value) -> Value:
        is_bool = type_of(ctx, a).dtype is DType.bool
        return ctx.em.op(logical if is_bool else bitwise, [a, b])

    return lower


def _shift(direction: str) -> Lowering:
    # Shifts by 0 .. width-1 bits agree; OpenVINO leaves other counts undefined (the CPU plugin
    # takes them modulo the width), tensorloop's BitShift gives the sign fill.
    return lambda ctx, a, b: ctx.em.op("BitShift", [a, b], {"direction": direction})


_BINARY: dict[str, Lowering] = {
    "Add": _core_binary("Add"),
    "Subtract": _core_binary("Sub"),
    "Multiply": _core_binary("Mul"),
    "Divide": _divide,
    "Power": _core_binary("Pow"),
    "Maximum": _core_binary("Max"),
    "Minimum": _core_binary("Min"),
    "SquaredDifference": _squared_difference,
    # FloorMod takes the divisor's sign (Python's %), Mod the dividend's (C's fmod), for integers
    # and floats alike: the CPU plugin agrees.
    "FloorMod": lambda ctx, a, b: ctx.em.op("Mod", [a, b], {"fmod": 0}),
    "Mod": lambda ctx, a, b: ctx.em.op("Mod", [a, b], {"fmod": 1}),
    "Equal": _core_binary("Equal"),
    "NotEqual": _not_equal,
    "Less": _core_binary("Less"),
    "Greater": _core_binary("Greater"),
    "LessEqual": _core_binary("LessOrEqual"),
    "GreaterEqual": _core_binary("GreaterOrEqual"),
    "LogicalAnd": _core_binary("And"),
    "LogicalOr": _core_binary("Or"),
    "LogicalXor": _core_binary("Xor"),
    "BitwiseAnd": _bitwise("And", "BitwiseAnd"),
    "BitwiseOr": _bitwise("Or", "BitwiseOr"),
    "BitwiseXor": _bitwise("Xor", "BitwiseXor"),
    "BitwiseLeftShift": _shift("LEFT"),
    "BitwiseRightShift": _shift("RIGHT"),
}

for _layer_type, _lower in _BINARY.items():
    converter(_layer_type)(_broadcasting(_lower))


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


# -- unary functions -------------------------------------------------------------------------------
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
    "Sign": "Sign",
    "IsNaN": "IsNaN",
}
# Layer type -> core op, for floating-point inputs (the core ops take no integers; OpenVINO's CPU
# plugin rounds an integer Sin and the like back to integers, which no core op expresses).
_FLOAT_UNARY: dict[str, str] = {
    "Sin": "Sin",
    "Cos": "Cos",
    "Tan": "Tan",
    "Asin": "Asin",
    "Acos": "Acos",
    "Atan": "Atan",
    "Sinh": "Sinh",
    "Cosh": "Cosh",
    "Asinh": "Asinh",
    "Acosh": "Acosh",
    "Atanh": "Atanh",
    "Erf": "Erf",
    "SoftPlus": "Softplus",
    "SoftSign": "Softsign",
    "Mish": "Mish",
    "HSwish": "HardSwish",
}


def _float_input(ctx: LayerContext) -> Value:
    x = ctx.input(0)
    dt = type_of(ctx, x).dtype
    if not dt.is_float:
        raise ctx.error(f"{ctx.layer.type} is read for floating-point inputs only, got {dt.value}")
    return x


def _unary(op: str) -> Converter:
    def convert(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
        return [ctx.em.op(op, [ctx.input(0)])]

    return convert


def _float_unary(op: str) -> Converter:
    def convert(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
        return [ctx.em.op(op, [_float_input(ctx)])]

    return convert


for _layer_type, _op in _UNARY.items():
    converter(_layer_type)(_unary(_op))
for _layer_type, _op in _FLOAT_UNARY.items():
    converter(_layer_type)(_float_unary(_op))


@converter("BitwiseNot")
def _bitwise_not(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    x = ctx.input(0)
    is_bool = type_of(ctx, x).dtype is DType.bool
    return [ctx.em.op("Not" if is_bool else "BitwiseNot", [x])]


@converter("IsInf")
def _is_inf(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    attrs = {
        "detect_negative": int(ctx.bool_attr("detect_negative", True)),
        "detect_positive": int(ctx.bool_attr("detect_positive", True)),
    }
    return [ctx.em.op("IsInf", [ctx.input(0)], attrs)]


@converter("IsFinite")
def _is_finite(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    x = ctx.input(0)
    bad = ctx.em.op("Or", [ctx.em.op("IsNaN", [x]), ctx.em.op("IsInf", [x])])
    return [ctx.em.op("Not", [bad])]


# -- rounding --------------------------------------------------------------------------------------
def _rounding(op: str) -> Converter:
    """Ceiling and Floor: the core op on floats; an integer is its own ceiling and floor."""

    def convert(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
        x = ctx.input(0)
        if type_of(ctx, x).dtype.is_int:
            return [ctx.em.op("Identity", [x])]
        return [ctx.em.op(op, [x])]

    return convert


converter("Ceiling")(_rounding("Ceil"))
converter("Floor")(_rounding("Floor"))


@converter("Round")
def _round(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    x = ctx.input(0)
    mode = ctx.choice_attr("mode", ("half_to_even", "half_away_from_zero"), "half_to_even")
    dt = type_of(ctx, x).dtype
    if dt.is_int:
        return [ctx.em.op("Identity", [x])]
    if mode == "half_to_even":
        return [ctx.em.op("Round", [x])]
    # Away from zero, exactly: t = trunc(x), and |x - t| (exact in floating point) >= 1/2 steps
    # one further from zero. (floor(|x| + 1/2) would round 0.49999997 up.)
    em = ctx.em
    zero = scalar_const(ctx, 0, dt)
    t = em.op("Where", [em.op("Less", [x, zero]), em.op("Ceil", [x]), em.op("Floor", [x])])
    frac = em.op("Sub", [x, t])
    up = em.op("GreaterOrEqual", [em.op("Abs", [frac]), scalar_const(ctx, 0.5, dt)])
    step = em.op("Mul", [em.op("Sign", [x]), em.op("Cast", [up], {"to": dt})])
    return [em.op("Add", [t, step])]


# -- activations -----------------------------------------------------------------------------------
@converter("Gelu")
def _gelu(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    # Gelu-2 has no attributes and is the erf form; Gelu-7 names its approximation.
    mode = "erf"
    if ctx.layer.version != "opset2":
        mode = ctx.choice_attr("approximation_mode", ("erf", "tanh"), "erf")
    approximate = "tanh" if mode == "tanh" else "none"
    return [ctx.em.op("Gelu", [_float_input(ctx)], {"approximate": approximate})]


def _const_scalar(ctx: LayerContext, index: int, what: str) -> float | None:
    """The one value of a constant input ``index``; None where it is computed at run time."""
    data = ctx.const(index)
    if data is None:
        return None
    if data.size != 1:
        raise ctx.error(f"input #{index} ({what}) must hold one value, got shape {data.shape}")
    return float(data.reshape(()))


def _scalar_value(ctx: LayerContext, index: int, what: str) -> Value:
    value = ctx.input(index)
    t = type_of(ctx, value)
    if t.shape is not None and any(isinstance(d, int) and d != 1 for d in t.shape):
        raise ctx.error(f"input #{index} ({what}) must hold one value, got {t}")
    return value


@converter("Swish")
def _swish(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    x = _float_input(ctx)
    if not has_input(inputs, 1):
        return [ctx.em.op("Swish", [x], {"alpha": 1.0})]
    beta = _const_scalar(ctx, 1, "beta")
    if beta is not None:
        return [ctx.em.op("Swish", [x], {"alpha": beta})]
    scaled = ctx.em.op("Mul", [x, _scalar_value(ctx, 1, "beta")])
    return [ctx.em.op("Mul", [x, ctx.em.op("Sigmoid", [scaled])])]


@converter("HSigmoid")
def _hsigmoid(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    # min(max(x + 3, 0), 6) / 6
    return [ctx.em.op("HardSigmoid", [_float_input(ctx)], {"alpha": 1 / 6, "beta": 0.5})]


@converter("Elu")
def _elu(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    return [ctx.em.op("Elu", [_float_input(ctx)], {"alpha": ctx.float_attr("alpha")})]


@converter("Selu")
def _selu(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    x = _float_input(ctx)
    alpha, lam = _const_scalar(ctx, 1, "alpha"), _const_scalar(ctx, 2, "lambda")
    if alpha is not None and lam is not None:
        return [ctx.em.op("Selu", [x], {"alpha": alpha, "gamma": lam})]
    em = ctx.em
    dt = type_of(ctx, x).dtype
    negative = em.op(
        "Mul",
        [
            _scalar_value(ctx, 1, "alpha"),
            em.op("Sub", [em.op("Exp", [x]), scalar_const(ctx, 1, dt)]),
        ],
    )
    positive = em.op("Greater", [x, scalar_const(ctx, 0, dt)])
    return [
        em.op("Mul", [_scalar_value(ctx, 2, "lambda"), em.op("Where", [positive, x, negative])])
    ]


@converter("HardSigmoid")
def _hard_sigmoid(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    x = _float_input(ctx)
    alpha, beta = _const_scalar(ctx, 1, "alpha"), _const_scalar(ctx, 2, "beta")
    if alpha is not None and beta is not None:
        return [ctx.em.op("HardSigmoid", [x], {"alpha": alpha, "beta": beta})]
    em = ctx.em
    dt = type_of(ctx, x).dtype
    line = em.op(
        "Add", [em.op("Mul", [x, _scalar_value(ctx, 1, "alpha")]), _scalar_value(ctx, 2, "beta")]
    )
    low = em.op("Max", [line, scalar_const(ctx, 0, dt)])
    return [em.op("Min", [low, scalar_const(ctx, 1, dt)])]


@converter("PReLU")
def _prelu(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    x, slope = ctx.input(0), ctx.input(1)
    xt, st = type_of(ctx, x), type_of(ctx, slope)
    if xt.rank is None or st.rank is None:
        raise ctx.error(f"PRelu needs inputs of known rank, got {xt} and {st}")
    # OpenVINO's rule: a 1-D slope as long as the channel axis (axis 1, or 0 for a vector) is per
    # channel; any other slope broadcasts NumPy-style.
    if st.rank == 1 and xt.rank > 1:
        assert xt.shape is not None and st.shape is not None
        channels, length = xt.shape[1], st.shape[0]
        if not (isinstance(channels, int) and isinstance(length, int)):
            raise ctx.error(
                f"PRelu with a 1-D slope needs static channel and slope sizes, got {xt} and {st}"
            )
        if channels == length and length != 1:
            shape = [length] + [1] * (xt.rank - 2)
            slope = ctx.em.op("Reshape", [slope, ctx.em.ints(shape)])
    return [ctx.em.op("PRelu", [x, slope])]
