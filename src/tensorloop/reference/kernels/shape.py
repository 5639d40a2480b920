"""Reference kernels for the shape ops: Reshape, Transpose, Slice, Gather, Pad, Cast, Range..."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np

from ...ops.common import normalize_axes
from ...ops.shape import range_length, range_stash, reshape_dims, slice_bounds, split_sizes
from ...tensor.dtypes import DType, from_numpy
from ..registry import KernelContext, kernel
from .elementwise import Array, axis_in, fail, is_float
from .quant import convert

T = TypeVar("T")


def _ints(x: Any) -> list[int]:
    return [int(v) for v in np.asarray(x).reshape(-1)]


def _checked(ctx: KernelContext, fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)``, its ValueError re-raised as this node's ExecutionError."""
    try:
        return fn(*args)
    except ValueError as exc:
        raise fail(ctx, str(exc)) from None


def _axes(ctx: KernelContext, axes: Sequence[int], rank: int) -> list[int]:
    return _checked(ctx, normalize_axes, axes, rank)


@kernel("Reshape")
def reshape(ctx: KernelContext, data: Any, shape: Any) -> Array:
    x = np.asarray(data)
    dims = _checked(ctx, reshape_dims, x.shape, _ints(shape), bool(ctx.attr("allowzero")))
    return x.reshape([int(d) for d in dims])


@kernel("Transpose")
def transpose(ctx: KernelContext, data: Any) -> Array:
    perm = ctx.attr("perm")
    return np.transpose(data, None if perm is None else list(perm))


@kernel("Squeeze")
def squeeze(ctx: KernelContext, data: Any, axes: Any = None) -> Array:
    x = np.asarray(data)
    listed = [] if axes is None else _axes(ctx, _ints(axes), x.ndim)
    if not listed:
        return x.reshape([d for d in x.shape if d != 1])
    for a in listed:
        if x.shape[a] != 1:
            raise fail(ctx, f"cannot squeeze axis {a} of shape {list(x.shape)}: its size is not 1")
    return np.squeeze(x, tuple(listed))


@kernel("Unsqueeze")
def unsqueeze(ctx: KernelContext, data: Any, axes: Any) -> Array:
    x, listed = np.asarray(data), _ints(axes)
    return np.expand_dims(x, tuple(_axes(ctx, listed, x.ndim + len(listed))))


@kernel("Concat")
def concat(ctx: KernelContext, *inputs: Any) -> Array:
    xs = [np.asarray(x) for x in inputs]
    axis = axis_in(ctx, ctx.attr("axis"), xs[0].ndim)
    rests = {x.shape[:axis] + x.shape[axis + 1 :] for x in xs}
    if len(rests) > 1 or len({x.ndim for x in xs}) > 1:
        shapes = " vs ".join(str(list(x.shape)) for x in xs)
        raise fail(ctx, f"inputs differ in rank or off the concat axis {axis}: {shapes}")
    return np.concatenate(xs, axis=axis)


@kernel("Split")
def split(ctx: KernelContext, data: Any, sizes: Any = None) -> tuple[Array, ...]:
    x = np.asarray(data)
    axis = axis_in(ctx, ctx.attr("axis"), x.ndim)
    dim = x.shape[axis]
    if sizes is None:
        lengths = _checked(ctx, split_sizes, dim, ctx.attr("num_outputs"))
    else:
        lengths = _ints(sizes)
        if any(n < 0 for n in lengths) or sum(lengths) != dim:
            raise fail(ctx, f"split sizes {lengths} do not cut axis {axis} of size {dim}")
    # A tuple, as the interpreter reads a tuple (not a list) as one value per output.
    return tuple(np.split(x, np.cumsum(lengths)[:-1], axis=axis))


@kernel("Slice")
def slice_(
    ctx: KernelContext, data: Any, starts: Any, ends: Any, axes: Any = None, steps: Any = None
) -> Array:
    x, begin, end = np.asarray(data), _ints(starts), _ints(ends)
    listed = list(range(len(begin))) if axes is None else _ints(axes)
    strides = [1] * len(begin) if steps is None else _ints(steps)
    if not len(begin) == len(end) == len(listed) == len(strides):
        raise fail(
            ctx, f"starts {begin}, ends {end}, axes {listed}, steps {strides} differ in length"
        )
    index = [slice(None)] * x.ndim
    for a, s, e, step in zip(_axes(ctx, listed, x.ndim), begin, end, strides, strict=True):
        lo, hi, _ = _checked(ctx, slice_bounds, x.shape[a], s, e, step)
        index[a] = slice(lo, None if hi < 0 else hi, step)
    return x[tuple(index)]


@kernel("Gather")
def gather(ctx: KernelContext, data: Any, indices: Any) -> Array:
    x, idx = np.asarray(data), np.asarray(indices)
    axis = axis_in(ctx, ctx.attr("axis"), x.ndim)
    n = x.shape[axis]
    bad = idx[(idx < -n) | (idx >= n)]
    if bad.size:
        raise fail(ctx, f"index {bad.flat[0]} is out of range for axis {axis} of size {n}")
    wide = idx.astype(np.int64)
    return np.take(x, np.where(wide < 0, wide + n, wide), axis=axis)


@kernel("Expand")
def expand(ctx: KernelContext, data: Any, shape: Any) -> Array:
    x, dims = np.asarray(data), _ints(shape)
    try:
        out = np.broadcast_shapes(x.shape, tuple(dims))
    except ValueError:
        raise fail(ctx, f"cannot expand shape {list(x.shape)} to {dims}") from None
    return np.broadcast_to(x, out).copy()


@kernel("Shape")
def shape(ctx: KernelContext, data: Any) -> Array:
    return np.array(np.shape(data)[ctx.attr("start") : ctx.attr("end")], np.int64)


@kernel("Size")
def size(ctx: KernelContext, data: Any) -> Array:
    return np.array(np.size(data), np.int64)


@kernel("ConstantOfShape")
def constant_of_shape(ctx: KernelContext, shape: Any) -> Array:
    dims, value = _ints(shape), np.asarray(ctx.attr("value"))
    if any(d < 0 for d in dims):
        raise fail(ctx, f"shape {dims} holds a negative size")
    return np.full(dims, value.reshape(()), value.dtype)


@kernel("Range")
def range_(ctx: KernelContext, start: Any, limit: Any, delta: Any) -> Array:
    for name, v in (("start", start), ("limit", limit), ("delta", delta)):
        if np.size(v) != 1:
            raise fail(ctx, f"{name} must hold one value, got shape {list(np.shape(v))}")
    s, stop, d = (np.asarray(v).reshape(()) for v in (start, limit, delta))
    stash = _checked(ctx, range_stash, from_numpy(s), ctx.attr("stash_type")).numpy
    if stash != s.dtype:
        # float16/bfloat16, as ONNX's function body has it: the bounds cast to the stash type,
        # the count taken there, each element the one before plus delta (a running sum, as the
        # body's Loop adds), the result cast back
        bounds = [v.astype(stash) for v in (s, stop, d)]
        n = _checked(ctx, range_length, *bounds)
        steps = np.full(n, bounds[2], stash)
        steps[:1] = bounds[0]
        with np.errstate(over="ignore"):  # past f16's range: inf, as a cast gives
            return np.cumsum(steps, dtype=stash).astype(s.dtype)
    n = _checked(ctx, range_length, s, stop, d)
    if is_float(s.dtype):
        values = s.astype(np.float64) + np.arange(n) * d.astype(np.float64)
        with np.errstate(over="ignore"):  # the last step may round past a float8's range
            return values.astype(s.dtype)
    return (int(s) + np.arange(n, dtype=np.int64) * int(d)).astype(s.dtype)


def _cast(ctx: KernelContext, data: Any, to: DType) -> Array:
    saturate, round_mode = bool(ctx.attr("saturate")), ctx.attr("round_mode")
    return _checked(ctx, convert, np.asarray(data), to, saturate, round_mode)


@kernel("Cast")
def cast(ctx: KernelContext, data: Any) -> Array:
    return _cast(ctx, data, ctx.attr("to"))


@kernel("CastLike")
def cast_like(ctx: KernelContext, data: Any, target: Any) -> Array:
    return _cast(ctx, data, from_numpy(np.asarray(target)))


@kernel("Pad")
def pad(
    ctx: KernelContext, data: Any, pads: Any, constant_value: Any = None, axes: Any = None
) -> Array:
    x, amounts, mode = np.asarray(data), _ints(pads), ctx.attr("mode")
    listed = _axes(ctx, list(range(x.ndim)) if axes is None else _ints(axes), x.ndim)
    if len(amounts) != 2 * len(listed):
        raise fail(ctx, f"pads {amounts} has {len(amounts)} values, expected {2 * len(listed)}")
    # Pad by the positive amounts, then crop by the negative ones, so that each axis ends up
    # size + begin + end even where one side crops more than the input had.
    widths, crop = [(0, 0)] * x.ndim, [slice(None)] * x.ndim
    for a, begin, end in zip(listed, amounts[: len(listed)], amounts[len(listed) :], strict=True):
        if x.shape[a] + begin + end < 0:
            raise fail(ctx, f"pads {amounts} crop axis {a} of size {x.shape[a]} below 0")
        if mode != "constant" and x.shape[a] == 0 and (begin > 0 or end > 0):
            raise fail(ctx, f"mode {mode!r} cannot pad axis {a}, which is empty")
        widths[a] = (max(begin, 0), max(end, 0))
        crop[a] = slice(max(-begin, 0), x.shape[a] + max(begin, 0) + end)
    if mode == "constant":
        fill = 0 if constant_value is None else np.asarray(constant_value).reshape(())
        return np.pad(x, widths, mode="constant", constant_values=fill)[tuple(crop)]
    return np.pad(x, widths, mode=mode)[tuple(crop)]
