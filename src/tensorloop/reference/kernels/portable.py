"""Kernel maths written once over an array namespace ``xp`` (``numpy`` or ``jax.numpy``): the
reference kernels call these with NumPy, and the JAX lowerings (``backends/jax``) with
``jax.numpy``, so both compute one algorithm, operation for operation.

Each function computes on arrays already in the type they compute in (``numerics.widen``) and
leaves the cast back to the caller, with what else differs between the backends: checking
arguments and reporting errors, NumPy's ``errstate``, XLA's deoptimizations. One thing the
functions take besides ``xp``: ``rounded``, applied to each float product that is then added
to something. NumPy rounds every operation on its own (``exact``, the default); XLA may fuse a
multiply and an add into one fused multiply-add, so the JAX lowerings pass
``LowerContext.round_product``, which keeps the product's own rounding.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ...tensor.numerics import accumulator_dtype, widen
from .elementwise import is_float

Array = Any
"""An array of the namespace in use."""
Rounding = Callable[[Array], Array]
Axes = tuple[int, ...]


def exact(product: Array) -> Array:
    """A product as it is: NumPy rounds it on its own already."""
    return product


# -- activations ------------------------------------------------------------------------------
def elu(x: Array, alpha: float, xp: Any = np) -> Array:
    return xp.where(x > 0, x, alpha * xp.expm1(x))


def selu(x: Array, alpha: float, gamma: float, xp: Any = np) -> Array:
    return gamma * elu(x, alpha, xp)


def celu(x: Array, alpha: float, xp: Any = np, rounded: Rounding = exact) -> Array:
    return xp.maximum(x, 0) + xp.minimum(0, rounded(alpha * xp.expm1(x / alpha)))


def leaky_relu(x: Array, alpha: float, xp: Any = np) -> Array:
    return xp.where(x >= 0, x, alpha * x)


def thresholded_relu(x: Array, alpha: float, xp: Any = np) -> Array:
    return xp.where(x > alpha, x, xp.zeros((), x.dtype))


def hard_sigmoid(
    x: Array, alpha: float, beta: float, xp: Any = np, rounded: Rounding = exact
) -> Array:
    return xp.clip(rounded(alpha * x) + beta, 0, 1)


def hard_swish(x: Array, xp: Any = np, rounded: Rounding = exact) -> Array:
    return x * hard_sigmoid(x, 1 / 6, 0.5, xp, rounded)


def softplus(x: Array, xp: Any = np) -> Array:
    """log(1 + exp(x)), as log(exp(0) + exp(x)) without overflow."""
    return xp.logaddexp(xp.zeros((), x.dtype), x)


def softsign(x: Array, xp: Any = np) -> Array:
    return x / (1 + xp.abs(x))


def mish(x: Array, xp: Any = np) -> Array:
    return x * xp.tanh(softplus(x, xp))


def swish(x: Array, alpha: float, xp: Any = np) -> Array:
    return x / (1 + xp.exp(-alpha * x))


def shrink(x: Array, bias: float, lambd: float, xp: Any = np) -> Array:
    """x + bias below -lambd, x - bias above lambd, else 0 (an integer ``x`` against the float
    attributes computes in float64, as NumPy promotes it)."""
    zero = xp.zeros((), x.dtype)
    return xp.where(x < -lambd, x + bias, xp.where(x > lambd, x - bias, zero))


def gelu(
    x: Array,
    approximate: str,
    erf: Callable[[Array], Array],
    xp: Any = np,
    rounded: Rounding = exact,
) -> Array:
    """x * Phi(x): with the tanh approximation, or exactly through ``erf`` (computed in float64
    by each backend's own erf)."""
    if approximate == "tanh":
        inner = math.sqrt(2 / math.pi) * (x + rounded(0.044715 * x**3))
        return 0.5 * x * (1 + xp.tanh(inner))
    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


def bit_shift(x: Array, y: Array, direction: str, xp: Any = np) -> Array:
    """x shifted by y bits. Shifts by the type's width or more are undefined in NumPy (as in C),
    so such shifts and negative ones are masked to 0 and given the fill the spec says is all
    that is left: 0, or for a right shift of a negative x, -1."""
    inside = (y >= 0) & (y < x.dtype.itemsize * 8)
    by = xp.where(inside, y, 0).astype(x.dtype)
    if direction == "LEFT":
        return xp.where(inside, xp.left_shift(x, by), xp.zeros((), x.dtype))
    sign_fill = -(x < 0).astype(x.dtype)  # -1 for a negative x, else 0, in x's own type
    return xp.where(inside, xp.right_shift(x, by), sign_fill)


def total(*xs: Array, xp: Any = np) -> Array:
    """The variadic Sum: the inputs added left to right, broadcast."""
    return functools.reduce(xp.add, xs)


def mean(*xs: Array, xp: Any = np) -> Array:
    """The variadic Mean: their total divided by their count."""
    return total(*xs, xp=xp) / len(xs)


# -- along one axis ---------------------------------------------------------------------------
def _shifted(x: Array, axis: int, xp: Any) -> Array:
    """``x`` less its maximum along ``axis`` (NaN where all are -inf), so exp cannot overflow."""
    return x - xp.max(x, axis=axis, keepdims=True, initial=-xp.inf)


def softmax(x: Array, axis: int, xp: Any = np) -> Array:
    e = xp.exp(_shifted(x, axis, xp))
    return e / xp.sum(e, axis=axis, keepdims=True)


def log_softmax(x: Array, axis: int, xp: Any = np) -> Array:
    shifted = _shifted(x, axis, xp)
    return shifted - xp.log(xp.sum(xp.exp(shifted), axis=axis, keepdims=True))


def running_totals(
    x: Array, axis: int, product: bool, exclusive: bool, reverse: bool, xp: Any = np
) -> Array:
    """CumSum (or CumProd, ``product``) of ``x`` along ``axis``, in ``x``'s accumulator type
    (``numerics.accumulator_dtype``): exclusive leaves each entry out of its own total (the
    identity stands first), reverse runs from the end."""
    accumulate = xp.cumprod if product else xp.cumsum
    y = xp.moveaxis(x, axis, -1)  # along the last axis, the shifts below are plain slices
    if reverse:
        y = xp.flip(y, -1)
    totals = accumulate(y, axis=-1, dtype=accumulator_dtype(x.dtype))
    if exclusive:
        first = xp.full_like(totals[..., :1], 1 if product else 0)
        totals = xp.concatenate([first, totals[..., :-1]], axis=-1)
    if reverse:
        totals = xp.flip(totals, -1)
    return xp.moveaxis(totals, -1, axis)


# -- the Reduce* family (all but ReduceMean, whose integer division each backend writes) -------
def extreme(x: Array, lowest: bool) -> Array:
    """The identity of max (``lowest``) or min: what an empty reduction yields, in x's type."""
    if is_float(x.dtype):
        value: Any = -np.inf if lowest else np.inf
    elif x.dtype.kind == "b":
        value = not lowest
    else:
        info = np.iinfo(x.dtype)
        value = info.min if lowest else info.max
    return np.asarray(value, x.dtype)


def _sum_square(x: Array, axes: Axes, xp: Any, rounded: Rounding) -> Array:
    # Integer squares may wrap in the narrow type: the sum wraps to the same value either way;
    # a float square past the type's range is inf, as in the type's own arithmetic.
    return xp.sum(rounded(x * x), axes, accumulator_dtype(x.dtype), keepdims=True)


def _log_sum_exp(x: Array, axes: Axes, xp: Any) -> Array:
    top = xp.max(x, axes, keepdims=True, initial=-xp.inf)
    # Shift by the largest entry so exp cannot overflow; an infinite one needs no shift.
    shift = xp.where(xp.isfinite(top), top, xp.zeros((), top.dtype))
    return xp.log(xp.sum(xp.exp(x - shift), axes, np.float64, keepdims=True)) + shift


Reducer = Callable[[Array, Axes, Any, Rounding], Array]
"""``(x, axes, xp, rounded)``: the reduction over ``axes``, kept as size-1 dims, of ``x`` in the
type the reductions take it in (``numerics.lift``: the narrow floats in float64), in its
accumulator type; the caller rounds it back once (``numerics.round_to``)."""

REDUCERS: dict[str, Reducer] = {
    "ReduceSum": lambda x, axes, xp, r: xp.sum(x, axes, accumulator_dtype(x.dtype), keepdims=True),
    "ReduceMax": lambda x, axes, xp, r: xp.max(x, axes, keepdims=True, initial=extreme(x, True)),
    "ReduceMin": lambda x, axes, xp, r: xp.min(x, axes, keepdims=True, initial=extreme(x, False)),
    "ReduceProd": lambda x, axes, xp, r: xp.prod(
        x, axes, accumulator_dtype(x.dtype), keepdims=True
    ),
    "ReduceL1": lambda x, axes, xp, r: xp.sum(
        xp.abs(x), axes, accumulator_dtype(x.dtype), keepdims=True
    ),
    "ReduceL2": lambda x, axes, xp, r: xp.sqrt(_sum_square(x, axes, xp, r).astype(np.float64)),
    "ReduceSumSquare": _sum_square,
    "ReduceLogSum": lambda x, axes, xp, r: xp.log(xp.sum(x, axes, np.float64, keepdims=True)),
    "ReduceLogSumExp": lambda x, axes, xp, r: _log_sum_exp(x, axes, xp),
}


# -- normalizations ---------------------------------------------------------------------------
def per_channel(v: Array, rank: int, xp: Any = np) -> Array:
    """A length-C vector shaped to broadcast along axis 1 of a rank-``rank`` tensor."""
    return xp.reshape(v, (-1, *[1] * (rank - 2)))


def normalized(
    x: Array, axes: Axes, epsilon: float, xp: Any = np, rounded: Rounding = exact
) -> tuple[Array, Array, Array]:
    """(x - mean) / sqrt(var + epsilon) over ``axes``, with the mean and 1/sqrt(var + eps)."""
    mu = xp.mean(x, axes, keepdims=True)
    centered = x - mu
    var = xp.mean(rounded(centered * centered), axes, keepdims=True)
    inv = 1 / xp.sqrt(var + x.dtype.type(epsilon))
    return centered * inv, mu, inv


def affine(y: Array, scale: Array, b: Array | None, rounded: Rounding = exact) -> Array:
    """y * scale + b (b may be absent), the product rounded on its own."""
    out = rounded(y * scale)
    return out if b is None else out + b


def instance_norm(
    x: Array, scale: Array, b: Array, epsilon: float, xp: Any = np, rounded: Rounding = exact
) -> Array:
    """InstanceNormalization of widened (N, C, D1, ...) ``x``, in x's type."""
    y, _, _ = normalized(x, tuple(range(2, x.ndim)), epsilon, xp, rounded)
    channel = per_channel(widen(scale, xp), x.ndim, xp)
    return affine(y, channel, per_channel(widen(b, xp), x.ndim, xp), rounded)


def layer_norm(
    x: Array,
    scale: Array,
    b: Array | None,
    axis: int,
    epsilon: float,
    stash: Any,
    xp: Any = np,
    rounded: Rounding = exact,
) -> tuple[Array, Array, Array]:
    """LayerNormalization of ``x`` (not widened) over the axes from ``axis`` (in range) on, its
    statistics computed in ``stash``: (Y in x's type, Mean, InvStdDev)."""
    axes = tuple(range(axis, x.ndim))
    y, mu, inv = normalized(widen(x.astype(stash), xp), axes, epsilon, xp, rounded)
    # The normalized values round to X's type before the affine step, as the ONNX function does.
    bias = None if b is None else widen(b, xp)
    y = affine(widen(y.astype(x.dtype), xp), widen(scale, xp), bias, rounded)
    return y.astype(x.dtype), mu.astype(stash), inv.astype(stash)


def group_norm(
    x: Array,
    scale: Array,
    b: Array,
    groups: int,
    epsilon: float,
    stash: Any,
    xp: Any = np,
    rounded: Rounding = exact,
) -> Array:
    """GroupNormalization of ``x`` (not widened; its C channels split into ``groups``), its
    statistics computed in ``stash``, in x's type."""
    grouped = widen(x.astype(stash), xp).reshape(x.shape[0], groups, -1)
    y, _, _ = normalized(grouped, (2,), epsilon, xp, rounded)
    y = widen(y.reshape(x.shape).astype(x.dtype), xp)
    channel = per_channel(widen(scale, xp), x.ndim, xp)
    y = affine(y, channel, per_channel(widen(b, xp), x.ndim, xp), rounded)
    return y.astype(x.dtype)


def rms_norm(
    x: Array,
    scale: Array,
    axis: int,
    epsilon: float,
    stash: Any,
    xp: Any = np,
    rounded: Rounding = exact,
) -> Array:
    """RMSNormalization of ``x`` (not widened) over the axes from ``axis`` (in range) on, its
    statistics computed in ``stash``, in the scale's type."""
    xs = widen(x.astype(stash), xp)
    axes = tuple(range(axis, x.ndim))
    ms = xp.mean(rounded(xs * xs), axes, keepdims=True)
    y = xs / xp.sqrt(ms + xs.dtype.type(epsilon))
    return (widen(y.astype(scale.dtype), xp) * widen(scale, xp)).astype(scale.dtype)


def mean_variance_norm(x: Array, axes: Axes, xp: Any = np, rounded: Rounding = exact) -> Array:
    """MeanVarianceNormalization of widened ``x`` over ``axes``: (x - mean) / (std + 1e-9)."""
    centered = x - xp.mean(x, axes, keepdims=True)
    std = xp.sqrt(xp.mean(rounded(centered * centered), axes, keepdims=True))
    return centered / (std + x.dtype.type(1e-9))
