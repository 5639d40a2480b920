"""Reference kernels for the maths and activation ops."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ...ops.math import parse_einsum
from ...tensor.numerics import widen
from ..registry import Kernel, KernelContext, kernel
from . import portable
from .elementwise import Array, axis_in, fail, is_float
from .reduce import running

_SERIES_LIMIT = 3.0  # erf's power series below it, the continued fraction of erfc above
_FRACTION_DEPTH = 60  # ample for erfc at x >= 3: the tail is below f64 rounding by depth 40


def _erf(x: Array) -> Array:
    """erf in f64 to within a few ulp, as NumPy has none.

    Below 3 the series exp(-x^2) * sum 2^n x^(2n+1) / (1*3*...*(2n+1)) has only positive terms,
    so nothing cancels; above it erfc's continued fraction converges fast.
    """
    x = np.asarray(x, np.float64)
    a = np.abs(x)
    small = np.minimum(a, _SERIES_LIMIT)
    term, total, step = small.copy(), small.copy(), 2 * small * small
    n = 0
    while np.any(term > 1e-17 * total):
        n += 1
        term = term * step / (2 * n + 1)
        total = total + term
    series = 2 / math.sqrt(math.pi) * np.exp(-small * small) * total
    big = np.maximum(a, _SERIES_LIMIT)
    fraction = big.copy()
    for k in range(_FRACTION_DEPTH, 0, -1):
        fraction = big + (k / 2) / fraction
    tail = 1 - np.exp(-big * big) / (math.sqrt(math.pi) * fraction)
    return np.sign(x) * np.where(a < _SERIES_LIMIT, series, tail)  # type: ignore[no-any-return]


def _is_inf(x: Array, detect_negative: int, detect_positive: int) -> Array:
    x = np.asarray(x, np.float64)  # float8 types too
    return (np.isposinf(x) & bool(detect_positive)) | (np.isneginf(x) & bool(detect_negative))


# Each takes the widened inputs and the node's attributes by name; the result is cast back to
# the first input's element type (to bool for the ops in _PREDICATES). The activations are
# portable's, which the JAX lowerings share.
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "Acos": np.arccos,
    "Acosh": np.arccosh,
    "Asin": np.arcsin,
    "Asinh": np.arcsinh,
    "Atan": np.arctan,
    "Atanh": np.arctanh,
    "Cos": np.cos,
    "Cosh": np.cosh,
    "Sin": np.sin,
    "Sinh": np.sinh,
    "Tan": np.tan,
    "Erf": _erf,
    "Floor": np.floor,
    "Ceil": np.ceil,
    "Round": np.rint,  # rounds halves to even
    "Sign": np.sign,
    "Reciprocal": np.reciprocal,
    "IsNaN": lambda x: np.isnan(np.asarray(x, np.float64)),
    "IsInf": _is_inf,
    "Softplus": portable.softplus,
    "Softsign": portable.softsign,
    "Elu": portable.elu,
    "Selu": portable.selu,
    "Celu": portable.celu,
    "LeakyRelu": portable.leaky_relu,
    "ThresholdedRelu": portable.thresholded_relu,
    "HardSigmoid": portable.hard_sigmoid,
    "HardSwish": portable.hard_swish,
    "Mish": portable.mish,
    "Gelu": functools.partial(portable.gelu, erf=_erf),
    "Swish": portable.swish,
    "Shrink": portable.shrink,
    "BitwiseNot": np.invert,
    "BitwiseAnd": np.bitwise_and,
    "BitwiseOr": np.bitwise_or,
    "BitwiseXor": np.bitwise_xor,
    "BitShift": portable.bit_shift,
    "Sum": portable.total,
    "Mean": portable.mean,
}
_PREDICATES = {"IsNaN", "IsInf"}


def _function(fn: Callable[..., Any], to_bool: bool) -> Kernel:
    def run(ctx: KernelContext, *xs: Any) -> Array:
        result_type = np.dtype(bool) if to_bool else np.asarray(xs[0]).dtype
        with np.errstate(all="ignore"):  # inf and NaN are IEEE results here, not faults
            return np.asarray(fn(*map(widen, xs), **ctx.attrs)).astype(result_type)

    return run


for _name, _fn in _FUNCTIONS.items():
    kernel(_name)(_function(_fn, _name in _PREDICATES))


@kernel("Mod")
def mod(ctx: KernelContext, a: Any, b: Any) -> Array:
    result_type = np.asarray(a).dtype
    a, b = widen(a), widen(b)
    if not is_float(a.dtype) and np.any(b == 0):
        raise fail(ctx, "integer modulo by zero")
    # np.mod takes the divisor's sign and meets every IEEE special case the spec lists.
    with np.errstate(all="ignore"):
        return np.asarray((np.fmod if ctx.attr("fmod") else np.mod)(a, b)).astype(result_type)


def _bound(ctx: KernelContext, value: Any, what: str) -> Array:
    held = widen(value)
    if held.size != 1:
        raise fail(ctx, f"{what} must hold one value, got shape {list(held.shape)}")
    return held.reshape(())


@kernel("Clip")
def clip(ctx: KernelContext, data: Any, lo: Any = None, hi: Any = None) -> Array:
    x = widen(data)
    y = x
    if lo is not None:  # an array even of no dimensions (NumPy gives a scalar there)
        y = np.asarray(np.maximum(y, _bound(ctx, lo, "min")))
    if hi is not None:  # into the array the lower bound made, where it made one
        y = np.minimum(y, _bound(ctx, hi, "max"), out=None if y is x else y)
    # a new array already (unless no bound was given): no copy when its type is the data's
    return np.asarray(y).astype(np.asarray(data).dtype, copy=y is x)


@kernel("PRelu")
def prelu(ctx: KernelContext, data: Any, slope: Any) -> Array:
    x, s = widen(data), widen(slope)
    if np.broadcast_shapes(x.shape, s.shape) != x.shape:
        raise fail(ctx, f"slope of shape {list(s.shape)} does not broadcast to {list(x.shape)}")
    with np.errstate(all="ignore"):
        return np.asarray(np.where(x < 0, x * s, x)).astype(np.asarray(data).dtype)


@kernel("LogSoftmax")
def log_softmax(ctx: KernelContext, data: Any) -> Array:
    x = widen(data)
    axis = axis_in(ctx, ctx.attr("axis"), x.ndim)
    with np.errstate(all="ignore"):  # a slice of all -inf (or any NaN) gives NaN
        return np.asarray(portable.log_softmax(x, axis)).astype(np.asarray(data).dtype)


@kernel("Hardmax")
def hardmax(ctx: KernelContext, data: Any) -> Array:
    x = np.asarray(data)
    axis = axis_in(ctx, ctx.attr("axis"), x.ndim)
    out = np.zeros_like(x)
    if x.size:
        np.put_along_axis(out, np.argmax(widen(x), axis=axis, keepdims=True), 1, axis)
    return out


@kernel("CumProd")
def cumprod(ctx: KernelContext, data: Any, axis: Any) -> Array:
    return running(ctx, data, axis, product=True)


@kernel("Det")
def det(ctx: KernelContext, data: Any) -> Array:
    x = widen(data)
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise fail(ctx, f"expected [*, M, M] matrices, got shape {list(x.shape)}")
    return np.asarray(np.linalg.det(x)).astype(np.asarray(data).dtype)


@kernel("Einsum")
def einsum(ctx: KernelContext, *xs: Any) -> Array:
    terms, output = parse_einsum(ctx.attr("equation"), len(xs), lambda m: fail(ctx, m))
    try:
        # The output term is spelled out: NumPy's implicit one orders labels differently.
        y = np.einsum(",".join(terms) + "->" + output, *map(widen, xs))
    except ValueError as exc:
        raise fail(ctx, str(exc)) from None
    return np.asarray(y).astype(np.asarray(xs[0]).dtype)


@kernel("Trilu")
def trilu(ctx: KernelContext, data: Any, k: Any = None) -> Array:
    x = np.asarray(data)
    if x.ndim < 2:
        raise fail(ctx, f"expected [*, N, M] matrices, got shape {list(x.shape)}")
    diagonal = 0 if k is None else int(_bound(ctx, k, "k"))
    offset = np.arange(x.shape[-1]) - np.arange(x.shape[-2])[:, None]  # column - row
    keep = offset >= diagonal if ctx.attr("upper") else offset <= diagonal
    zero = np.array("", dtype=object) if x.dtype == object else np.zeros((), x.dtype)
    return np.where(keep, x, zero)


@kernel("EyeLike")
def eye_like(ctx: KernelContext, data: Any) -> Array:
    x = np.asarray(data)
    dt = ctx.attr("dtype")
    rows, cols = x.shape
    return np.eye(rows, cols, ctx.attr("k"), dtype=x.dtype if dt is None else dt.numpy)
