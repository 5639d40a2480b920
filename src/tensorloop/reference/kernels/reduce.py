"""Reference kernels for the reductions: the Reduce* family, ArgMax/ArgMin, CumSum, Softmax."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...ops.common import normalize_axes
from ..registry import Kernel, KernelContext, kernel
from .elementwise import Array, axis_in, fail, is_float, widen


def _accumulator(x: Array) -> Any:
    """Floats sum in f64 (then round once); integers in NumPy's 64-bit default, which wraps to
    the same result as summing in the narrow type."""
    return np.float64 if is_float(x.dtype) else None


def _extreme(x: Array, lowest: bool) -> Any:
    """The identity of max (lowest) or min (highest): what an empty reduction yields."""
    if is_float(x.dtype):
        return -np.inf if lowest else np.inf
    if x.dtype.kind == "b":
        return not lowest
    info = np.iinfo(x.dtype)
    return info.min if lowest else info.max


def _mean(ctx: KernelContext, x: Array, axes: tuple[int, ...]) -> Array:
    count = int(np.prod([x.shape[a] for a in axes]))
    total = np.asarray(np.sum(x, axis=axes, keepdims=True, dtype=_accumulator(x)))
    if is_float(x.dtype):
        with np.errstate(all="ignore"):  # an empty mean is 0/0 = NaN
            return total / count
    if count == 0:
        if total.size == 0:
            return total
        raise fail(ctx, "ReduceMean over an empty set of integers has no value")
    return (total - np.fmod(total, count)) // count  # type: ignore[no-any-return]


def _log_sum_exp(ctx: KernelContext, x: Array, axes: tuple[int, ...]) -> Array:
    top = np.max(x, axes, keepdims=True, initial=-np.inf)
    # Shift by the largest entry so exp cannot overflow; an infinite one needs no shift.
    shift = np.where(np.isfinite(top), top, 0)
    return np.log(np.sum(np.exp(x - shift), axes, np.float64, keepdims=True)) + shift


def _sum_square(x: Array, axes: tuple[int, ...]) -> Array:
    # Integer squares may wrap in the narrow type: the sum wraps to the same value either way;
    # a float square past the type's range is inf, as in the type's own arithmetic.
    with np.errstate(over="ignore"):
        squares = x * x
    return np.sum(squares, axes, _accumulator(x), keepdims=True)  # type: ignore[no-any-return]


_REDUCERS: dict[str, Callable[[KernelContext, Array, tuple[int, ...]], Array]] = {
    "ReduceSum": lambda ctx, x, axes: np.sum(x, axes, _accumulator(x), keepdims=True),
    "ReduceMean": _mean,
    "ReduceMax": lambda ctx, x, axes: np.max(x, axes, keepdims=True, initial=_extreme(x, True)),
    "ReduceMin": lambda ctx, x, axes: np.min(x, axes, keepdims=True, initial=_extreme(x, False)),
    "ReduceProd": lambda ctx, x, axes: np.prod(x, axes, _accumulator(x), keepdims=True),
    "ReduceL1": lambda ctx, x, axes: np.sum(np.abs(x), axes, _accumulator(x), keepdims=True),
    "ReduceL2": lambda ctx, x, axes: np.sqrt(_sum_square(x, axes).astype(np.float64)),
    "ReduceSumSquare": lambda ctx, x, axes: _sum_square(x, axes),
    "ReduceLogSum": lambda ctx, x, axes: np.log(np.sum(x, axes, np.float64, keepdims=True)),
    "ReduceLogSumExp": _log_sum_exp,
}


def _reduction(fn: Callable[[KernelContext, Array, tuple[int, ...]], Array]) -> Kernel:
    def run(ctx: KernelContext, data: Any, axes: Any = None) -> Array:
        x = widen(data)
        listed = [] if axes is None else [int(a) for a in np.asarray(axes).reshape(-1)]
        # With no axes and noop_with_empty_axes=1 the reduction is over no axes: what is left
        # is the elementwise part (|x| for ReduceL1, log x for ReduceLogSum, x for ReduceSum).
        everything = () if ctx.attr("noop_with_empty_axes") else range(x.ndim)
        try:
            chosen = tuple(normalize_axes(listed, x.ndim) if listed else everything)
        except ValueError as exc:
            raise fail(ctx, str(exc)) from None
        with np.errstate(divide="ignore", invalid="ignore"):  # log(0) = -inf is the answer
            y = np.asarray(fn(ctx, x, chosen))
        if not ctx.attr("keepdims"):
            y = y.reshape([d for i, d in enumerate(y.shape) if i not in chosen])
        with np.errstate(over="ignore"):  # an f64 sum past the narrow type's range is inf
            return y.astype(np.asarray(data).dtype)

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


def running(
    ctx: KernelContext, data: Any, axis: Any, accumulate: Callable[..., Array], identity: int
) -> Array:
    """Running sums or products (``accumulate``: np.cumsum or np.cumprod) of ``data`` along the
    axis held by the one-integer tensor ``axis``; exclusive=1 leaves each entry out of its own
    total (``identity`` stands first), reverse=1 runs from the end. Floats accumulate in f64 and
    round once; integers wrap as they would in their own type."""
    x, held = np.asarray(data), np.asarray(axis)
    if held.size != 1:
        raise fail(ctx, f"axis must hold one integer, got shape {list(held.shape)}")
    ax = axis_in(ctx, int(held.reshape(())), x.ndim)
    # Work along the last axis so the shifts below read as plain slices.
    y = np.moveaxis(x, ax, -1)
    if ctx.attr("reverse"):
        y = y[..., ::-1]
    with np.errstate(over="ignore"):  # an f64 total past the range is inf, as is a narrow one's
        totals = accumulate(y, axis=-1, dtype=_accumulator(x))
        if ctx.attr("exclusive"):
            first = np.full_like(totals[..., :1], identity)
            totals = np.concatenate([first, totals[..., :-1]], axis=-1)
        if ctx.attr("reverse"):
            totals = totals[..., ::-1]
        return np.moveaxis(totals, -1, ax).astype(x.dtype)


@kernel("CumSum")
def cumsum(ctx: KernelContext, data: Any, axis: Any) -> Array:
    return running(ctx, data, axis, np.cumsum, 0)


@kernel("Softmax")
def softmax(ctx: KernelContext, data: Any) -> Array:
    x = widen(data)
    axis = axis_in(ctx, ctx.attr("axis"), x.ndim)
    with np.errstate(all="ignore"):  # a slice of all -inf (or any NaN) gives NaN
        e = np.exp(x - np.max(x, axis=axis, keepdims=True, initial=-np.inf))
        return np.asarray(e / np.sum(e, axis=axis, keepdims=True)).astype(np.asarray(data).dtype)
