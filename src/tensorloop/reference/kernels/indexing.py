"""Reference kernels for the indexing ops: gathers, scatters, Tile, TopK, Unique, OneHot..."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...ops.indexing import block_rearrangement
from ...tensor.numerics import widen
from ..registry import KernelContext, kernel
from .elementwise import Array, axis_in, fail

# ufuncs whose .at applies a scatter reduction in place, duplicates combining one by one.
_REDUCE_AT: dict[str, np.ufunc] = {
    "add": np.add,
    "mul": np.multiply,
    "max": np.maximum,
    "min": np.minimum,
}


def _ints(x: Any) -> list[int]:
    return [int(v) for v in np.asarray(x).reshape(-1)]


def _wrapped(ctx: KernelContext, indices: Any, sizes: Any) -> Array:
    """``indices`` as int64 with negatives counted from the end of axes of ``sizes`` (an int or
    one size per entry of the last axis); an index out of range is this node's error."""
    idx, n = np.asarray(indices).astype(np.int64), np.asarray(sizes, np.int64)
    bad = (idx < -n) | (idx >= n)
    if np.any(bad):
        where = np.argwhere(bad)[0]
        raise fail(
            ctx,
            f"index {idx[tuple(where)]} at {where.tolist()} is out of range for size "
            f"{np.broadcast_to(n, idx.shape)[tuple(where)]}",
        )
    return np.where(idx < 0, idx + n, idx)


def _scattered(ctx: KernelContext, data: Any, index: tuple[Any, ...], updates: Any) -> Array:
    """A copy of ``data`` with ``updates`` stored at ``index``, or combined per ``reduction``."""
    x = np.asarray(data)
    out, upd = widen(x).copy(), widen(updates)
    reduction = ctx.attr("reduction")
    if reduction == "none":
        out[index] = upd
    else:
        with np.errstate(invalid="ignore"):  # a NaN update is a NaN result, not a fault
            _REDUCE_AT[reduction].at(out, index, upd)
    return out.astype(x.dtype)


def _element_index(
    ctx: KernelContext, shape: tuple[int, ...], indices: Any, axis: int
) -> tuple[Array, ...]:
    """The index tuple GatherElements / ScatterElements address: each entry's own position,
    its ``axis`` coordinate replaced by the entry of ``indices``."""
    idx = np.asarray(indices)
    if idx.ndim != len(shape) or any(
        i != axis and m > n for i, (m, n) in enumerate(zip(idx.shape, shape, strict=True))
    ):
        raise fail(
            ctx,
            f"indices of shape {list(idx.shape)} do not fit data of shape {list(shape)} "
            f"off axis {axis}",
        )
    grid: list[Array] = list(np.indices(idx.shape, sparse=True))
    grid[axis] = _wrapped(ctx, idx, shape[axis])
    return tuple(grid)


@kernel("GatherElements")
def gather_elements(ctx: KernelContext, data: Any, indices: Any) -> Array:
    x = np.asarray(data)
    axis = axis_in(ctx, ctx.attr("axis"), x.ndim)
    return x[_element_index(ctx, x.shape, indices, axis)]


@kernel("ScatterElements")
def scatter_elements(ctx: KernelContext, data: Any, indices: Any, updates: Any) -> Array:
    x, upd = np.asarray(data), np.asarray(updates)
    if np.shape(indices) != upd.shape:
        raise fail(ctx, f"indices {list(np.shape(indices))} and updates {list(upd.shape)} differ")
    axis = axis_in(ctx, ctx.attr("axis"), x.ndim)
    return _scattered(ctx, x, _element_index(ctx, x.shape, indices, axis), upd)


def _tuple_count(ctx: KernelContext, indices: Array, limit: int) -> int:
    k = indices.shape[-1] if indices.ndim else 0
    if not 1 <= k <= limit:
        raise fail(ctx, f"indices {list(indices.shape)} must end in a dim in [1, {limit}]")
    return int(k)


@kernel("GatherND")
def gather_nd(ctx: KernelContext, data: Any, indices: Any) -> Array:
    x, idx, b = np.asarray(data), np.asarray(indices), ctx.attr("batch_dims")
    if not 0 <= b < min(x.ndim, idx.ndim) or x.shape[:b] != idx.shape[:b]:
        raise fail(
            ctx,
            f"batch_dims {b}: data {list(x.shape)} and indices {list(idx.shape)} must "
            "share their leading batch dims",
        )
    k = _tuple_count(ctx, idx, x.ndim - b)
    coords = _wrapped(ctx, idx, x.shape[b : b + k])
    batches = math.prod(x.shape[:b])
    flat = x.reshape((batches, *x.shape[b:]))
    tuples = coords.reshape(batches, -1, k)
    which = np.arange(batches).reshape(batches, 1)
    picked: Array = flat[(which, *np.moveaxis(tuples, -1, 0))]
    return picked.reshape(idx.shape[:-1] + x.shape[b + k :])


@kernel("ScatterND")
def scatter_nd(ctx: KernelContext, data: Any, indices: Any, updates: Any) -> Array:
    x, idx, upd = np.asarray(data), np.asarray(indices), np.asarray(updates)
    k = _tuple_count(ctx, idx, x.ndim)
    want = idx.shape[:-1] + x.shape[k:]
    if upd.shape != want:
        raise fail(ctx, f"updates of shape {list(upd.shape)} must have shape {list(want)}")
    coords = _wrapped(ctx, idx, x.shape[:k]).reshape(-1, k)
    return _scattered(ctx, x, tuple(coords.T), upd.reshape((-1, *x.shape[k:])))


@kernel("TensorScatter")
def tensor_scatter(
    ctx: KernelContext, past_cache: Any, update: Any, write_indices: Any = None
) -> Array:
    past, upd = np.asarray(past_cache), np.asarray(update)
    axis = axis_in(ctx, ctx.attr("axis"), past.ndim)
    off_axis = [d for i, d in enumerate(past.shape) if i != axis]
    if (
        axis == 0
        or upd.ndim != past.ndim
        or off_axis != [d for i, d in enumerate(upd.shape) if i != axis]
    ):
        raise fail(
            ctx,
            f"update {list(upd.shape)} must match past_cache {list(past.shape)} off the "
            f"sequence axis {axis} (which must not be 0)",
        )
    batch, length, steps = past.shape[0], past.shape[axis], upd.shape[axis]
    starts = np.zeros(batch, np.int64) if write_indices is None else np.asarray(write_indices)
    if starts.shape != (batch,):
        raise fail(ctx, f"write_indices {list(starts.shape)} must have shape [{batch}]")
    ones = [1] * past.ndim
    pos = starts.astype(np.int64).reshape([batch, *ones[1:]]) + np.arange(steps).reshape(
        [*ones[:axis], steps, *ones[axis + 1 :]]
    )
    if ctx.attr("mode") == "circular" and length:
        pos = pos % length
    elif pos.size and (pos.min() < 0 or pos.max() >= length):
        raise fail(ctx, f"writes reach positions {pos.min()}..{pos.max()} of a cache of {length}")
    grid: list[Array] = list(np.indices(upd.shape, sparse=True))
    grid[axis] = pos
    out = past.copy()
    out[tuple(grid)] = upd
    return out


@kernel("Tile")
def tile(ctx: KernelContext, data: Any, repeats: Any) -> Array:
    x, reps = np.asarray(data), _ints(repeats)
    if len(reps) != x.ndim or any(r < 0 for r in reps):
        raise fail(ctx, f"repeats {reps} must hold one count >= 0 per axis of {list(x.shape)}")
    return np.tile(x, reps)


@kernel("NonZero")
def nonzero(ctx: KernelContext, data: Any) -> Array:
    mask = np.asarray(data).astype(bool)
    if mask.ndim == 0:
        return np.zeros((0, int(mask)), np.int64)
    return np.array(np.nonzero(mask), np.int64).reshape(mask.ndim, -1)


@kernel("TopK")
def topk(ctx: KernelContext, data: Any, k_: Any) -> tuple[Array, Array]:
    x, ks = np.asarray(data), _ints(k_)
    axis = axis_in(ctx, ctx.attr("axis"), x.ndim)
    n = x.shape[axis]
    if len(ks) != 1 or not 0 <= ks[0] <= n:
        raise fail(ctx, f"K = {ks} must be one value in [0, {n}] for axis {axis}")
    w = widen(x)
    if ctx.attr("largest"):
        # A stable ascending sort of the reversed axis, read backwards, is descending with
        # equal values in ascending index order.
        order = np.flip(n - 1 - np.argsort(np.flip(w, axis), axis=axis, kind="stable"), axis)
    else:
        order = np.argsort(w, axis=axis, kind="stable")
    order = np.take(order, np.arange(ks[0]), axis=axis).astype(np.int64)
    return np.take_along_axis(x, order, axis=axis), order


@kernel("OneHot")
def onehot(ctx: KernelContext, indices: Any, depth: Any, values: Any) -> Array:
    idx, vals = np.asarray(indices), np.asarray(values)
    sizes = np.asarray(depth).reshape(-1)
    if sizes.size != 1 or vals.shape != (2,) or int(sizes[0]) < 1:
        raise fail(ctx, f"depth {sizes.tolist()} must be one value >= 1, values [off, on]")
    n = int(sizes[0])
    axis = axis_in(ctx, ctx.attr("axis"), idx.ndim + 1)
    with np.errstate(invalid="ignore"):  # NaN indices: out of range, all off
        wide = idx.astype(np.int64)
    wide = np.where(wide < 0, wide + n, wide)
    positions = np.arange(n).reshape([n if i == axis else 1 for i in range(idx.ndim + 1)])
    hot: Array = np.expand_dims(wide, axis) == positions
    out: Array = np.where(hot, vals[1], vals[0])
    return out.astype(vals.dtype)


@kernel("Compress")
def compress(ctx: KernelContext, data: Any, condition: Any) -> Array:
    x, cond = np.asarray(data), np.asarray(condition).reshape(-1)
    axis = ctx.attr("axis")
    if axis is None:
        x, axis = x.reshape(-1), 0
    axis = axis_in(ctx, axis, x.ndim)
    n = x.shape[axis]
    if np.any(cond[n:]):
        raise fail(ctx, f"condition selects position {n + np.argmax(cond[n:])} of an axis of {n}")
    return np.compress(cond[:n], x, axis=axis)


@kernel("Unique")
def unique(ctx: KernelContext, data: Any) -> tuple[Array, Array, Array, Array]:
    x, axis = np.asarray(data), ctx.attr("axis")
    if axis is not None:
        axis = axis_in(ctx, axis, x.ndim)
        rows = np.moveaxis(x, axis, 0).reshape(x.shape[axis], -1)
    else:
        rows = x.reshape(-1, 1)
    keys, n = widen(rows), rows.shape[0]
    # Sort rows lexicographically (lexsort's last key is the primary one); being stable, the
    # first row of each run of equal rows is that value's first occurrence.
    order = np.lexsort(keys.T[::-1]) if keys.shape[1] else np.arange(n)
    ranked = keys[order]
    starts = np.ones(n, bool)
    starts[1:] = np.any(ranked[1:] != ranked[:-1], axis=1)
    first = order[starts].astype(np.int64)
    counts = np.diff(np.flatnonzero(np.append(starts, True))).astype(np.int64)
    inverse = np.empty(n, np.int64)
    inverse[order] = np.cumsum(starts) - 1
    if not ctx.attr("sorted"):
        perm = np.argsort(first, kind="stable")
        position = np.empty_like(perm)
        position[perm] = np.arange(len(perm))
        first, counts, inverse = first[perm], counts[perm], position[inverse].astype(np.int64)
    values = x.reshape(-1)[first] if axis is None else np.take(x, first, axis=axis)
    return values, first, inverse, counts


@kernel("ReverseSequence")
def reverse_sequence(ctx: KernelContext, data: Any, sequence_lens: Any) -> Array:
    x, lens = np.asarray(data), np.asarray(sequence_lens).astype(np.int64)
    b, t = ctx.attr("batch_axis"), ctx.attr("time_axis")
    if x.ndim < 2 or lens.shape != (x.shape[b],):
        raise fail(
            ctx,
            f"sequence_lens {list(lens.shape)} must hold one length per batch of {list(x.shape)}",
        )
    steps = x.shape[t]
    if np.any((lens < 0) | (lens > steps)):
        raise fail(ctx, f"sequence_lens {lens.tolist()} must lie in [0, {steps}]")
    pos, lens2 = np.arange(steps)[None, :], lens[:, None]
    source = np.where(pos < lens2, lens2 - 1 - pos, pos)  # [batch, time]
    if t < b:
        source = source.T
    source = source.reshape(source.shape + (1,) * (x.ndim - 2))
    return np.take_along_axis(x, np.broadcast_to(source, x.shape), axis=t)


def _blocks(ctx: KernelContext, x: Array, to_depth: bool) -> Array:
    bs = ctx.attr("blocksize")
    if x.ndim != 4:
        raise fail(ctx, f"input must be 4-D [N, C, H, W], got shape {list(x.shape)}")
    _, c, h, w = x.shape
    if to_depth and (h % bs or w % bs):
        raise fail(ctx, f"H and W of {list(x.shape)} must be multiples of blocksize {bs}")
    if not to_depth and c % (bs * bs):
        raise fail(ctx, f"C of {list(x.shape)} must be a multiple of blocksize² = {bs * bs}")
    split, perm, result = block_rearrangement(x.shape, bs, ctx.attr("mode"), to_depth)
    return x.reshape(split).transpose(perm).reshape(result)


@kernel("SpaceToDepth")
def space_to_depth(ctx: KernelContext, data: Any) -> Array:
    return _blocks(ctx, np.asarray(data), to_depth=True)


@kernel("DepthToSpace")
def depth_to_space(ctx: KernelContext, data: Any) -> Array:
    return _blocks(ctx, np.asarray(data), to_depth=False)


@kernel("CenterCropPad")
def center_crop_pad(ctx: KernelContext, data: Any, shape: Any) -> Array:
    x, sizes, axes = np.asarray(data), _ints(shape), ctx.attr("axes")
    listed = [axis_in(ctx, a, x.ndim) for a in (range(x.ndim) if axes is None else axes)]
    if len(sizes) != len(listed) or any(s < 0 for s in sizes):
        raise fail(ctx, f"shape {sizes} must hold one size >= 0 per axis of {listed}")
    dims, src, dst = list(x.shape), [slice(None)] * x.ndim, [slice(None)] * x.ndim
    for a, size in zip(listed, sizes, strict=True):
        have = x.shape[a]
        if have > size:
            start = (have - size) // 2
            src[a] = slice(start, start + size)
        else:
            start = (size - have) // 2
            dst[a] = slice(start, start + have)
        dims[a] = size
    out = np.full(dims, "" if x.dtype == object else 0, x.dtype)  # strings pad with ""
    out[tuple(dst)] = x[tuple(src)]
    return out


@kernel("Flatten")
def flatten(ctx: KernelContext, data: Any) -> Array:
    x, axis = np.asarray(data), ctx.attr("axis")
    if not -x.ndim <= axis <= x.ndim:
        raise fail(ctx, f"axis {axis} is out of range [-{x.ndim}, {x.ndim}]")
    axis = axis + x.ndim if axis < 0 else axis
    return x.reshape(math.prod(x.shape[:axis]), math.prod(x.shape[axis:]))
