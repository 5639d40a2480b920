"""Lowerings of the maths, activation, reduction and cast ops (see ``ops.py`` for the rules every
lowering follows). Each mirrors its reference kernel (``kernels/math.py``, ``reduce.py``,
``elementwise.py``, ``quant.py``): the same widening of narrow floats, the same float64
accumulators, the same integer wrapping. Where NumPy's answer is undefined behaviour of C (a
float out of an integer type's range, NaN to an integer), the island deoptimizes to the
compiled backend, which computes the reference's answer."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
import jax.scipy.special as jsp
import numpy as np
from jax import lax

from ...ir.graph import Node
from ...ops.common import normalize_axes
from ...ops.math import parse_einsum
from ...reference.kernels import portable
from ...tensor.numerics import (
    accumulator_dtype,
    f32_round_to_odd,
    is_widened,
    lift,
    round_to,
)
from ...tensor.types import normalize_axis
from .lowering import JaxValue, LowerContext, UnlowerableError, lowers, needs_constant
from .ops import deopt_on_subnormal, is_float, widen

Attrs = dict[str, Any]


# -- helpers ----------------------------------------------------------------------------------
def _out_dtype(node: Node, k: int = 0) -> Any:
    return node.outputs[k].tensor_type.dtype.numpy


def _is_int(dtype: Any) -> bool:
    return bool(jnp.issubdtype(dtype, jnp.integer))


def _float_to_int(ctx: LowerContext, node: Node, y: JaxValue, dtype: Any) -> JaxValue:
    """Float ``y`` truncated to integer ``dtype``; NumPy's answer for NaN, inf or a value out of
    the type's range is C's undefined behaviour, so those deoptimize (XLA would saturate)."""
    info = np.iinfo(dtype)
    lo = float(info.min)  # 0 or -2**(bits-1): exact in every float type
    hi = float(info.max) + 1.0  # 2**bits or 2**(bits-1): exact, and the first value past max
    t = jnp.trunc(jnp.asarray(y).astype(jnp.float64))
    ctx.deopt_unless(jnp.isfinite(t) & (t >= lo) & (t < hi), node)
    return jnp.where(jnp.isfinite(t), t, 0).astype(dtype)


def _result(ctx: LowerContext, node: Node, y: JaxValue, k: int = 0) -> JaxValue:
    """``y`` cast to output ``k``'s type as NumPy's ``astype`` casts it."""
    dtype = _out_dtype(node, k)
    y = jnp.asarray(y)
    if is_float(y) and _is_int(dtype):
        return _float_to_int(ctx, node, y, dtype)
    return y.astype(dtype)


def _axis(axis: int, rank: int) -> int:
    return normalize_axis(
        axis, rank, error=ValueError
    )  # out of range: the compiled backend says so


def _constant(node: Node, port: int) -> np.ndarray[Any, Any]:
    """The data of input ``port``, a constant of the graph (the op's check is needs_constant)."""
    value = node.inputs[port]
    data = None if value is None else value.constant
    assert data is not None
    return data


def _scalar_constant(node: Node, port: int, what: str) -> int:
    data = _constant(node, port)
    if data.size != 1:
        raise UnlowerableError(f"{what} must hold one value, got shape {list(data.shape)}")
    return int(data.reshape(()))


def _one(x: JaxValue, what: str) -> JaxValue:
    """A one-element operand (Clip's bounds, Trilu's k) as a scalar."""
    if x.size != 1:
        raise UnlowerableError(f"{what} must hold one value, got shape {list(x.shape)}")
    return x.reshape(())


# -- Cast and CastLike ------------------------------------------------------------------------
_WIDE = frozenset(np.dtype(t) for t in (np.float64, np.int32, np.uint32, np.int64, np.uint64))


def _convert(ctx: LowerContext, node: Node, x: JaxValue) -> JaxValue:
    to = _out_dtype(node)
    if x.dtype == to:
        return x
    deopt_on_subnormal(ctx, node, widen(x))
    if to == np.bool_:
        return x != 0  # NaN is nonzero
    if _is_int(to):
        return _result(ctx, node, x)  # ints wrap, floats truncate (deopt outside the range)
    if is_widened(to):  # as ml_dtypes rounds: once, from float32 or a rounded-to-odd float64
        if x.dtype in _WIDE:
            return f32_round_to_odd(x.astype(jnp.float64), jnp).astype(to)
        return x.astype(jnp.float32).astype(to)
    return x.astype(to)


@lowers("Cast")
def _cast(ctx: LowerContext, node: Node, attrs: Attrs, x: JaxValue) -> list[JaxValue]:
    return [_convert(ctx, node, x)]


@lowers("CastLike")
def _cast_like(
    ctx: LowerContext, node: Node, attrs: Attrs, x: JaxValue, target: JaxValue
) -> list[JaxValue]:
    return [_convert(ctx, node, x)]


# -- elementwise functions --------------------------------------------------------------------
def _cosh_sinh(x: JaxValue, sinh: bool) -> JaxValue:
    """cosh or sinh within a few ULPs of NumPy's. XLA's own shift the argument,
    exp(|x| + log(1/2)), and that rounding costs up to half an ULP of x relatively: 496 ULPs of
    float64 at 709, 25 of float32 at 70. Here exp(|x|) is taken unshifted while it is finite,
    and 0.5 exp(|x|/2)**2 past that, where cosh and sinh are one term; sinh of |x| < 1 stays
    XLA's (expm1: no cancellation, the sign of zero kept)."""
    a = jnp.abs(x)
    big = math.log(float(np.finfo(x.dtype).max))  # about exp's largest finite argument
    e, h = jnp.exp(jnp.minimum(a, big)), jnp.exp(a / 2)
    if not sinh:
        return jnp.where(a < big, 0.5 * e + 0.5 / e, (0.5 * h) * h)
    far = jnp.sign(x) * jnp.where(a < big, 0.5 * e - 0.5 / e, (0.5 * h) * h)
    return jnp.where(a < 1, jnp.sinh(x), far)


def _erf64(x: JaxValue) -> JaxValue:
    """erf in float64, as the reference computes it."""
    return jsp.erf(jnp.asarray(x).astype(jnp.float64))


def _is_inf(x: JaxValue, detect_negative: int, detect_positive: int) -> JaxValue:
    return (jnp.isposinf(x) & bool(detect_positive)) | (jnp.isneginf(x) & bool(detect_negative))


def _shrink(x: JaxValue, bias: float, lambd: float) -> JaxValue:
    if not is_float(x):  # NumPy computes an integer x against float attributes in float64
        x = x.astype(jnp.float64)
    return portable.shrink(x, bias, lambd, jnp)


# Each takes ctx, the widened inputs and the node's attributes by name (as the reference's
# _FUNCTIONS do); the result is cast to the output type by _result. The activations are the
# reference's own functions (``portable``) over jax.numpy.
_FUNCTIONS: dict[str, Callable[..., JaxValue]] = {
    "Acos": lambda c, x: jnp.arccos(x),
    "Acosh": lambda c, x: jnp.arccosh(x),
    "Asin": lambda c, x: jnp.arcsin(x),
    "Asinh": lambda c, x: jnp.arcsinh(x),
    "Atan": lambda c, x: jnp.arctan(x),
    "Atanh": lambda c, x: jnp.arctanh(x),
    "Cos": lambda c, x: jnp.cos(x),
    "Cosh": lambda c, x: _cosh_sinh(x, sinh=False),
    "Sin": lambda c, x: jnp.sin(x),
    "Sinh": lambda c, x: _cosh_sinh(x, sinh=True),
    "Tan": lambda c, x: jnp.tan(x),
    "Erf": lambda c, x: _erf64(x),
    "Floor": lambda c, x: jnp.floor(x),
    "Ceil": lambda c, x: jnp.ceil(x),
    "Round": lambda c, x: jnp.round(x),  # halves to even
    "Sign": lambda c, x: jnp.sign(x),
    "Reciprocal": lambda c, x: 1 / x,
    "IsNaN": lambda c, x: jnp.isnan(x),
    "IsInf": lambda c, x, **a: _is_inf(x, **a),
    "Softplus": lambda c, x: portable.softplus(x, jnp),
    "Softsign": lambda c, x: portable.softsign(x, jnp),
    "Elu": lambda c, x, alpha: portable.elu(x, alpha, jnp),
    "Selu": lambda c, x, alpha, gamma: portable.selu(x, alpha, gamma, jnp),
    "Celu": lambda c, x, alpha: portable.celu(x, alpha, jnp, c.round_product),
    "LeakyRelu": lambda c, x, alpha: portable.leaky_relu(x, alpha, jnp),
    "ThresholdedRelu": lambda c, x, alpha: portable.thresholded_relu(x, alpha, jnp),
    "HardSigmoid": lambda c, x, alpha, beta: portable.hard_sigmoid(
        x, alpha, beta, jnp, c.round_product
    ),
    "HardSwish": lambda c, x: portable.hard_swish(x, jnp, c.round_product),
    "Mish": lambda c, x: portable.mish(x, jnp),
    "Gelu": lambda c, x, approximate: _gelu(c, x, approximate),
    "Swish": lambda c, x, alpha: portable.swish(x, alpha, jnp),
    "Shrink": lambda c, x, bias, lambd: _shrink(x, bias, lambd),
    "BitwiseNot": lambda c, x: jnp.invert(x),
    "BitwiseAnd": lambda c, a, b: jnp.bitwise_and(a, b),
    "BitwiseOr": lambda c, a, b: jnp.bitwise_or(a, b),
    "BitwiseXor": lambda c, a, b: jnp.bitwise_xor(a, b),
    "BitShift": lambda c, x, y, direction: portable.bit_shift(x, y, direction, jnp),
    "Sum": lambda c, *xs: portable.total(*xs, xp=jnp),
    "Mean": lambda c, *xs: portable.mean(*xs, xp=jnp),
}


def _gelu(ctx: LowerContext, x: JaxValue, approximate: str) -> JaxValue:
    if approximate not in ("none", "tanh"):
        raise UnlowerableError(f"approximate={approximate!r}")
    # erf in float64, as the reference's erf
    return portable.gelu(x, approximate, _erf64, jnp, ctx.round_product)


# Ops whose answer on a subnormal input differs from the answer on zero by more than rounding.
_NEAR_ZERO = frozenset({"Floor", "Ceil", "Sign", "Reciprocal", "Shrink"})


def _function(fn: Callable[..., JaxValue], name: str) -> Callable[..., list[JaxValue]]:
    def lower(ctx: LowerContext, node: Node, attrs: Attrs, *xs: JaxValue) -> list[JaxValue]:
        wide = [widen(x) for x in xs]
        if name in _NEAR_ZERO:
            deopt_on_subnormal(ctx, node, *wide)
        return [_result(ctx, node, fn(ctx, *wide, **attrs))]

    return lower


for _name, _fn in _FUNCTIONS.items():
    lowers(_name)(_function(_fn, _name))


@lowers("Mod")
def _mod(ctx: LowerContext, node: Node, attrs: Attrs, a: JaxValue, b: JaxValue) -> list[JaxValue]:
    a, b = jnp.broadcast_arrays(widen(a), widen(b))
    deopt_on_subnormal(ctx, node, a, b)
    if not is_float(a):
        ctx.deopt_unless(b != 0, node)  # the reference names the modulo by zero
        b = jnp.where(b == 0, jnp.ones((), b.dtype), b)
    if attrs["fmod"]:
        return [_result(ctx, node, lax.rem(a, b))]  # C's fmod and %: the dividend's sign
    y = jnp.remainder(a, b)  # the divisor's sign, as np.mod
    if is_float(a):  # NumPy gives a zero remainder the divisor's sign too
        y = jnp.where(y == 0, jnp.copysign(jnp.zeros((), y.dtype), b), y)
    return [_result(ctx, node, y)]


@lowers("Pow")
def _pow(ctx: LowerContext, node: Node, attrs: Attrs, x: JaxValue, y: JaxValue) -> list[JaxValue]:
    if is_float(x) or is_float(y):
        deopt_on_subnormal(ctx, node, widen(x), widen(y))
        real = jnp.power(x.astype(jnp.float64), y.astype(jnp.float64))
        if is_float(x):  # rounded once, as the reference rounds it (numerics.round_to)
            return [round_to(real, x.dtype, jnp)]
        ctx.deopt_unless(jnp.isfinite(real), node)  # the reference fails on a non-finite result
        return [_result(ctx, node, real)]
    # Integer ** integer: exact (wrapping) for exponents >= 0; below 0 only |x| = 1 is non-zero.
    wide = jnp.int64 if jnp.issubdtype(x.dtype, jnp.signedinteger) else jnp.uint64
    negative = y < 0
    ctx.deopt_unless(~(negative & (x == 0)), node)  # 0 to a negative power fails
    exponent = jnp.where(negative, jnp.zeros((), y.dtype), y).astype(wide)
    if wide == jnp.int64:  # a uint64 exponent past int64's range: NumPy refuses it
        ctx.deopt_unless(exponent >= 0, node)
    powered = jnp.power(x.astype(wide), jnp.maximum(exponent, 0))
    odd = (y % 2) != 0
    one = jnp.ones((), wide)
    minus = jnp.where(odd, -one, one)
    reciprocal = jnp.where(x == 1, one, jnp.where(x == -1, minus, jnp.zeros((), wide)))
    return [jnp.where(negative, reciprocal, powered)]


@lowers("Clip")
def _clip(
    ctx: LowerContext,
    node: Node,
    attrs: Attrs,
    x: JaxValue,
    lo: JaxValue = None,
    hi: JaxValue = None,
) -> list[JaxValue]:
    y = widen(x)
    if lo is not None:
        y = jnp.maximum(y, _one(widen(lo), "min"))
    if hi is not None:
        y = jnp.minimum(y, _one(widen(hi), "max"))
    return [y]


@lowers("PRelu")
def _prelu(
    ctx: LowerContext, node: Node, attrs: Attrs, data: JaxValue, slope: JaxValue
) -> list[JaxValue]:
    x, s = widen(data), widen(slope)
    if np.broadcast_shapes(x.shape, s.shape) != x.shape:
        raise UnlowerableError(
            f"slope of shape {list(s.shape)} does not broadcast to {list(x.shape)}"
        )
    return [jnp.where(x < 0, x * s, x)]


# -- along one axis ---------------------------------------------------------------------------
@lowers("Softmax")
def _softmax(ctx: LowerContext, node: Node, attrs: Attrs, data: JaxValue) -> list[JaxValue]:
    x = widen(data)
    return [portable.softmax(x, _axis(attrs["axis"], x.ndim), jnp)]


@lowers("LogSoftmax")
def _log_softmax(ctx: LowerContext, node: Node, attrs: Attrs, data: JaxValue) -> list[JaxValue]:
    x = widen(data)
    return [portable.log_softmax(x, _axis(attrs["axis"], x.ndim), jnp)]


@lowers("Hardmax")
def _hardmax(ctx: LowerContext, node: Node, attrs: Attrs, data: JaxValue) -> list[JaxValue]:
    x = widen(data)
    axis = _axis(attrs["axis"], x.ndim)
    deopt_on_subnormal(ctx, node, x)  # flushed to zero, they would tie
    if x.size == 0:
        return [jnp.zeros(x.shape, data.dtype)]
    first = jnp.argmax(x, axis=axis, keepdims=True)
    positions = lax.broadcasted_iota(first.dtype, x.shape, axis)
    return [(positions == first).astype(data.dtype)]


@lowers("ArgMax", "ArgMin")
def _arg_extreme(ctx: LowerContext, node: Node, attrs: Attrs, data: JaxValue) -> list[JaxValue]:
    x = widen(data)
    deopt_on_subnormal(ctx, node, x)  # flushed to zero, they would tie
    find = jnp.argmax if node.op == "ArgMax" else jnp.argmin
    axis = _axis(attrs["axis"], x.ndim)
    n = x.shape[axis]
    if n == 0:
        raise UnlowerableError(f"axis {axis} of shape {list(x.shape)} is empty")
    if attrs["select_last_index"]:
        index = n - 1 - find(jnp.flip(x, axis), axis=axis, keepdims=True)
    else:
        index = find(x, axis=axis, keepdims=True)
    return [(index if attrs["keepdims"] else jnp.squeeze(index, axis)).astype(jnp.int64)]


def _running(product: bool) -> Callable[..., list[JaxValue]]:
    """CumSum or CumProd (``product``) along the constant axis input, as the reference's
    ``portable.running_totals``: floats accumulate in float64 and round once
    (``numerics.round_to``), integers wrap as in their own type."""

    def lower(
        ctx: LowerContext, node: Node, attrs: Attrs, x: JaxValue, axis: JaxValue
    ) -> list[JaxValue]:
        ax = _axis(_scalar_constant(node, 1, "axis"), x.ndim)
        exclusive, reverse = bool(attrs["exclusive"]), bool(attrs["reverse"])
        totals = portable.running_totals(x, ax, product, exclusive, reverse, jnp)
        return [round_to(totals, x.dtype, jnp)]

    return lower


lowers("CumSum", check=needs_constant(1))(_running(product=False))
lowers("CumProd", check=needs_constant(1))(_running(product=True))


# -- the Reduce* family -----------------------------------------------------------------------
Axes = tuple[int, ...]


def _mean(ctx: LowerContext, x: JaxValue, axes: Axes) -> JaxValue:
    count = math.prod(x.shape[a] for a in axes)
    total = jnp.sum(x, axes, dtype=accumulator_dtype(x.dtype), keepdims=True)
    if is_float(x):
        return total / count  # an empty mean is 0/0 = NaN
    if count == 0:
        if total.size == 0:
            return total
        raise UnlowerableError("ReduceMean over an empty set of integers has no value")
    return lax.div(total, jnp.full_like(total, count))  # truncates toward zero


def _shared(reduce: portable.Reducer) -> Callable[[LowerContext, JaxValue, Axes], JaxValue]:
    return lambda c, x, axes: reduce(x, axes, jnp, c.round_product)


# ReduceMean here; the others are the reference's own (``portable.REDUCERS``) over jax.numpy.
_REDUCERS: dict[str, Callable[[LowerContext, JaxValue, Axes], JaxValue]] = {
    "ReduceMean": _mean,
    **{name: _shared(fn) for name, fn in portable.REDUCERS.items()},
}


def _reduction(
    fn: Callable[[LowerContext, JaxValue, Axes], JaxValue],
) -> Callable[..., list[JaxValue]]:
    def lower(
        ctx: LowerContext, node: Node, attrs: Attrs, data: JaxValue, axes: JaxValue = None
    ) -> list[JaxValue]:
        x = lift(data, jnp)  # the narrow floats in float64, as the reference takes them
        listed = [] if axes is None else [int(a) for a in _constant(node, 1).reshape(-1)]
        everything = () if attrs["noop_with_empty_axes"] else tuple(range(x.ndim))
        chosen = tuple(normalize_axes(listed, x.ndim)) if listed else everything
        y = fn(ctx, x, chosen)
        if not attrs["keepdims"]:
            y = y.reshape([d for i, d in enumerate(y.shape) if i not in chosen])
        return [_result(ctx, node, round_to(y, data.dtype, jnp))]  # rounded once, as the reference

    return lower


for _name, _fn in _REDUCERS.items():
    lowers(_name, check=needs_constant(1))(_reduction(_fn))


# -- matrices ---------------------------------------------------------------------------------
@lowers("Einsum")
def _einsum(ctx: LowerContext, node: Node, attrs: Attrs, *xs: JaxValue) -> list[JaxValue]:
    def error(message: str) -> ValueError:
        return ValueError(message)

    terms, output = parse_einsum(attrs["equation"], len(xs), error)
    operands = [widen(x) for x in xs]
    dtype = operands[0].dtype
    spec = ",".join(terms) + "->" + output
    if _is_int(dtype):
        return [jnp.einsum(spec, *operands, preferred_element_type=dtype)]
    return [jnp.einsum(spec, *operands, precision=lax.Precision.HIGHEST)]


@lowers("Trilu")
def _trilu(
    ctx: LowerContext, node: Node, attrs: Attrs, x: JaxValue, k: JaxValue = None
) -> list[JaxValue]:
    if x.ndim < 2:
        raise UnlowerableError(f"expected [*, N, M] matrices, got shape {list(x.shape)}")
    diagonal = jnp.int64(0) if k is None else _one(k, "k").astype(jnp.int64)
    rows, cols = x.shape[-2:]
    offset = jnp.arange(cols, dtype=jnp.int64) - jnp.arange(rows, dtype=jnp.int64)[:, None]
    keep = offset >= diagonal if attrs["upper"] else offset <= diagonal
    return [jnp.where(keep, x, jnp.zeros((), x.dtype))]


@lowers("Det")
def _det(ctx: LowerContext, node: Node, attrs: Attrs, data: JaxValue) -> list[JaxValue]:
    x = widen(data)
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise UnlowerableError(f"expected [*, M, M] matrices, got shape {list(x.shape)}")
    if x.shape[-1] == 0:  # the empty product
        return [jnp.ones(x.shape[:-2], x.dtype)]
    return [jnp.linalg.det(x)]


@lowers("Inverse")
def _inverse(ctx: LowerContext, node: Node, attrs: Attrs, data: JaxValue) -> list[JaxValue]:
    x = jnp.asarray(data)
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise UnlowerableError(f"expected [*, M, M] matrices, got shape {list(x.shape)}")
    if x.shape[-1] == 0 or x.size == 0:
        return [x]
    wide = x.astype(jnp.float64)
    # Singular exactly where LAPACK's LU (NumPy's inv) meets a zero pivot: all NaN, as the
    # reference kernel gives.
    lu = lax.linalg.lu(wide)[0]
    singular = jnp.any(jnp.diagonal(lu, axis1=-2, axis2=-1) == 0, axis=-1)
    y = jnp.where(singular[..., None, None], jnp.nan, jnp.linalg.inv(wide))
    return [y.astype(x.dtype)]


__all__: list[str] = []
