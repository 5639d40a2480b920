"""Reference kernels for the reductions: the Reduce* family, ArgMax/ArgMin, CumSum, PrefixSum,
Softmax."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...ops.common import normalize_axes
from ...ops.reduce import PREFIX_SUM_DTYPES
from ...tensor.dtypes import dtype as element_type
from ...tensor.numerics import accumulator_dtype, lift, round_to, widen
from ..registry import Kernel, KernelContext, kernel
from . import portable
from .elementwise import Array, axis_in, fail, is_float


def _mean(ctx: KernelContext, x: Array, axes: tuple[int, ...]) -> Array:
    count = int(np.prod([x.shape[a] for a in axes]))
    total = np.asarray(np.sum(x, axis=axes, keepdims=True, dtype=accumulator_dtype(x.dtype)))
    if is_float(x.dtype):
        with np.errstate(all="ignore"):  # an empty mean is 0/0 = NaN
            return total / count
    if count == 0:
        if total.size == 0:
            return total
        raise fail(ctx, "ReduceMean over an empty set of integers has no value")
    return (total - np.fmod(total, count)) // count  # type: ignore[no-any-return]


def _shared(reduce: portable.Reducer) -> Callable[[KernelContext, Array, tuple[int, ...]], Array]:
    return lambda ctx, x, axes: reduce(x, axes, np, portable.exact)


# ReduceMean here; the others are portable's, which the JAX lowerings share.
_REDUCERS: dict[str, Callable[[KernelContext, Array, tuple[int, ...]], Array]] = {
    "ReduceMean": _mean,
    **{name: _shared(fn) for name, fn in portable.REDUCERS.items()},
}


def _reduction(fn: Callable[[KernelContext, Array, tuple[int, ...]], Array]) -> Kernel:
    def run(ctx: KernelContext, data: Any, axes: Any = None) -> Array:
        x = lift(data)  # the narrow floats in float64, their accumulator (numerics.lift)
        listed = [] if axes is None else [int(a) for a in np.asarray(axes).reshape(-1)]
        # With no axes and noop_with_empty_axes=1 the reduction is over no axes: what is left
        # is the elementwise part (|x| for ReduceL1, log x for ReduceLogSum, x for ReduceSum).
        everything = () if ctx.attr("noop_with_empty_axes") else range(x.ndim)
        try:
            chosen = tuple(normalize_axes(listed, x.ndim) if listed else everything)
        except ValueError as exc:
            raise fail(ctx, str(exc)) from None
        # log(0) = -inf is the answer; an integer square may wrap, a float one be inf.
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            y = np.asarray(fn(ctx, x, chosen))
        if not ctx.attr("keepdims"):
            y = y.reshape([d for i, d in enumerate(y.shape) if i not in chosen])
        # Rounded once (numerics.round_to); an f64 sum past the narrow type's range is inf (NaN
        # for the float8s that have no inf).
        return np.asarray(round_to(y, np.asarray(data).dtype))

    return run


for _name, _fn in _REDUCERS.items():
    kernel(_name)(_reduction(_fn))


@kernel("ArgMax", "ArgMin")
def arg_extreme(ctx: KernelContext, data: Any) -> Array:
    x = widen(data)
    find = np.argmax if ctx.node.op == "ArgMax" else np.argmin
    axis = axis_in(ctx, ctx.attr("axis"), x.ndim)
    n = x.shape[axis]
    if n == 0:
        raise fail(ctx, f"axis {axis} of shape {list(x.shape)} is empty: it has no such entry")
    if ctx.attr("select_last_index"):
        index = n - 1 - find(np.flip(x, axis), axis=axis, keepdims=True)
    else:
        index = find(x, axis=axis, keepdims=True)
    return np.asarray(index if ctx.attr("keepdims") else np.squeeze(index, axis)).astype(np.int64)


def running(ctx: KernelContext, data: Any, axis: Any, product: bool) -> Array:
    """Running sums (or products, ``product``) of ``data`` along the axis held by the
    one-integer tensor ``axis`` (``portable.running_totals``); exclusive=1 leaves each entry out
    of its own total, reverse=1 runs from the end. Floats accumulate in f64 and round once
    (``numerics.round_to``); integers wrap as they would in their own type
    (``numerics.accumulator_dtype``)."""
    x, held = np.asarray(data), np.asarray(axis)
    if held.size != 1:
        raise fail(ctx, f"axis must hold one integer, got shape {list(held.shape)}")
    ax = axis_in(ctx, int(held.reshape(())), x.ndim)
    exclusive, reverse = bool(ctx.attr("exclusive")), bool(ctx.attr("reverse"))
    with np.errstate(over="ignore"):  # an f64 total past the range is inf, as is a narrow one's
        totals: Array = portable.running_totals(x, ax, product, exclusive, reverse)
    return np.asarray(round_to(totals, x.dtype))


@kernel("CumSum")
def cumsum(ctx: KernelContext, data: Any, axis: Any) -> Array:
    return running(ctx, data, axis, product=False)


@kernel("PrefixSum")
def prefix_sum(ctx: KernelContext, data: Any) -> Array:
    """``np.cumsum`` in ``x``'s own type is ``np.add.accumulate`` in it: one ``add`` per element,
    in order, each rounded (or wrapped) as the Add kernel's sum of the two (float16 and bfloat16
    included: their ``add`` rounds the float32 sum once, as the Add kernel does)."""
    x = np.asarray(data)
    if element_type(x.dtype) not in PREFIX_SUM_DTYPES:
        raise fail(ctx, f"PrefixSum does not add elements of type {element_type(x.dtype)}")
    ax = axis_in(ctx, ctx.attr("axis"), x.ndim)
    with np.errstate(all="ignore"):  # inf and NaN are IEEE results here, not faults
        if ctx.attr("reverse"):
            return np.flip(np.cumsum(np.flip(x, ax), axis=ax, dtype=x.dtype), ax)
        return np.cumsum(x, axis=ax, dtype=x.dtype)


@kernel("Softmax")
def softmax(ctx: KernelContext, data: Any) -> Array:
    x = widen(data)
    axis = axis_in(ctx, ctx.attr("axis"), x.ndim)
    with np.errstate(all="ignore"):  # a slice of all -inf (or any NaN) gives NaN
        return np.asarray(portable.softmax(x, axis)).astype(np.asarray(data).dtype)
