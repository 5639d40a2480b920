"""OpenVINO slicing and gathering layers: Slice, StridedSlice and Gather (with batch dims)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...ir.graph import Value
from ...tensor.dtypes import DType
from .convert import LayerContext, converter
from .inputs import (
    cast_to,
    const_int,
    const_ints,
    has_input,
    int_vector,
    normalized_axes,
    rank_of,
    type_of,
)

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)


@converter("Slice")
def _slice(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    start, stop, step = (int_vector(ctx, i, w) for i, w in ((1, "start"), (2, "stop"), (3, "step")))
    axes = int_vector(ctx, 4, "axes") if has_input(inputs, 4) else None
    # Slice-8 takes (start, stop, step, axes); ONNX's Slice takes (starts, ends, axes, steps).
    return [ctx.em.op("Slice", [ctx.input(0), start, stop, axes, step])]


def _mask(ctx: LayerContext, key: str, required: bool = False) -> list[bool]:
    bits = ctx.ints_attr(key) if required else ctx.ints_attr(key, "")
    if any(b not in (0, 1) for b in bits):
        raise ctx.error(f"attribute '{key}' is {bits}, expected a list of 0s and 1s")
    return [b == 1 for b in bits]


@converter("StridedSlice")
def _strided_slice(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    em, x = ctx.em, ctx.input(0)
    rank = rank_of(ctx, 0, "data")
    begin_mask, end_mask = _mask(ctx, "begin_mask", True), _mask(ctx, "end_mask", True)
    new_axis, shrink, ellipsis = (
        _mask(ctx, k) for k in ("new_axis_mask", "shrink_axis_mask", "ellipsis_mask")
    )
    lengths = set()
    for i, what in ((1, "begin"), (2, "end")):
        t = type_of(ctx, ctx.input(i))
        if t.shape is None or len(t.shape) != 1 or not isinstance(t.shape[0], int):
            raise ctx.error(f"input #{i} ({what}) must be 1-D of a known length, got {t}")
        lengths.add(t.shape[0])
    strides = const_ints(ctx, 3, "stride") if has_input(inputs, 3) else None
    n = lengths.pop() if len(lengths) == 1 else -1
    if n < 0 or (strides is not None and len(strides) != n):
        raise ctx.error("begin, end and stride differ in length")
    strides = strides or [1] * n

    def bit(mask: list[bool], i: int) -> bool:
        return i < len(mask) and mask[i]

    if sum(bit(ellipsis, i) for i in range(n)) > 1:
        raise ctx.error(
            f"attribute 'ellipsis_mask' is {ctx.attr('ellipsis_mask')!r}: more than one bit"
        )
    # Each spec entry is, by precedence: an ellipsis (whole dims), a new axis, a shrink (one index
    # of one dim), or a slice of one dim. Input dims no entry reaches are kept whole.
    consumed = sum(not bit(ellipsis, i) and not bit(new_axis, i) for i in range(n))
    if consumed > rank:
        raise ctx.error(f"begin/end index {consumed} dims, but the data has rank {rank}")
    entries: list[tuple[int, int]] = []  # (spec index, input dim) of each slice or shrink
    squeezed: list[int] = []  # input dims that shrink removes
    inserted: list[int] = []  # output positions of new axes
    dim = out = 0
    for i in range(n):
        if bit(ellipsis, i):
            dim, out = dim + rank - consumed, out + rank - consumed
        elif bit(new_axis, i):
            inserted.append(out)
            out += 1
        else:
            if strides[i] == 0:
                raise ctx.error(f"stride {strides} holds a 0")
            entries.append((i, dim))
            if bit(shrink, i):
                squeezed.append(dim)
            else:
                out += 1
            dim += 1

    # Masked bounds take the whole axis in the direction of the stride (ONNX clamps these).
    def default(i: int, is_begin: bool) -> int:
        forward = strides[i] > 0 or bit(shrink, i)
        return (0 if forward else INT64_MAX) if is_begin else (INT64_MAX if forward else INT64_MIN)

    starts = _bounds(ctx, 1, entries, begin_mask, lambda i: default(i, True))
    ends = _bounds(ctx, 2, entries, end_mask, lambda i: default(i, False))
    steps = [1 if bit(shrink, i) else strides[i] for i, _ in entries]
    is_shrink = [bit(shrink, i) for i, _ in entries]
    if any(is_shrink):
        ends = _shrink_ends(ctx, starts, ends, is_shrink)
    y = x
    if entries:
        bounds = [_as_value(ctx, starts), _as_value(ctx, ends)]
        y = em.op("Slice", [y, *bounds, em.ints([d for _, d in entries]), em.ints(steps)])
    if squeezed:
        y = em.op("Squeeze", [y, em.ints(squeezed)])
    if inserted:
        y = em.op("Unsqueeze", [y, em.ints(inserted)])
    return [em.op("Identity", [y]) if y is x else y]


def _bounds(
    ctx: LayerContext,
    index: int,
    entries: list[tuple[int, int]],
    mask: list[bool],
    default: Callable[[int], int],
) -> list[int] | Value:
    """Begin or end per entry: the input's value, or the default where the mask bit is set."""
    masked = [i < len(mask) and mask[i] for i, _ in entries]
    defaults = [default(i) for i, _ in entries]
    data = ctx.const(index)
    if data is not None:
        flat = [int(v) for v in data.reshape(-1)]
        return [d if m else flat[i] for (i, _), m, d in zip(entries, masked, defaults, strict=True)]
    em = ctx.em
    picked = em.op(
        "Gather", [cast_to(ctx, ctx.input(index), DType.int64), em.ints([i for i, _ in entries])]
    )
    if not any(masked):
        return picked
    return em.op("Where", [em.const(np.array(masked)), em.ints(defaults), picked])


def _shrink_ends(
    ctx: LayerContext, starts: list[int] | Value, ends: list[int] | Value, is_shrink: list[bool]
) -> list[int] | Value:
    """A shrunk axis keeps [start, start + 1); for start -1 that end is "past the last"."""
    if isinstance(starts, list) and isinstance(ends, list):
        return [
            (INT64_MAX if s == -1 else s + 1) if k else e
            for s, e, k in zip(starts, ends, is_shrink, strict=True)
        ]
    em = ctx.em
    s = _as_value(ctx, starts)
    last = em.op("Equal", [s, em.ints([-1])])
    one_past = em.op("Where", [last, em.ints([INT64_MAX]), em.op("Add", [s, em.ints([1])])])
    return em.op("Where", [em.const(np.array(is_shrink)), one_past, _as_value(ctx, ends)])


def _as_value(ctx: LayerContext, values: list[int] | Value) -> Value:
    return ctx.em.ints(values) if isinstance(values, list) else values


@converter("Gather")
def _gather(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    data, indices = ctx.input(0), ctx.input(1)
    axis = const_int(ctx, 2, "axis")
    batch_dims = ctx.int_attr("batch_dims", 0)
    if batch_dims == 0:
        # Negative indices count from the end (Gather-8's rule; earlier versions leave them
        # undefined), as the core Gather does.
        return [ctx.em.op("Gather", [data, indices], {"axis": axis})]
    r, q = rank_of(ctx, 0, "data"), rank_of(ctx, 1, "indices")
    axis = normalized_axes(ctx, [axis], r, "axis")[0]
    b = batch_dims + q if batch_dims < 0 else batch_dims
    if not 0 <= b <= min(axis, q):
        raise ctx.error(
            f"attribute 'batch_dims' is {batch_dims}, expected at most axis {axis} and the "
            f"indices' rank {q}"
        )
    return [_batched_gather(ctx, data, indices, axis, b, r, q)]


def _batched_gather(
    ctx: LayerContext, data: Value, indices: Value, axis: int, b: int, r: int, q: int
) -> Value:
    """Gather with b batch dims as one plain Gather: fuse the batch dims into one, B, put B beside
    the gathered axis A and fuse them, and offset each batch's indices by its batch number * A."""
    em = ctx.em
    lead = em.ints([-1])

    def fuse_batch(v: Value) -> Value:
        shape = em.op("Concat", [lead, em.op("Shape", [v], {"start": b})], {"axis": 0})
        return em.op("Reshape", [v, shape])

    flat, idx = fuse_batch(data), fuse_batch(cast_to(ctx, indices, DType.int64))
    m = axis - b  # dims between the batch dims and the gathered axis
    rank = r - b + 1
    perm = [*range(1, m + 1), 0, *range(m + 1, rank)]
    moved = em.op("Transpose", [flat], {"perm": perm}) if m else flat
    fused_shape = em.op(
        "Concat",
        [em.op("Shape", [moved], {"end": m}), lead, em.op("Shape", [moved], {"start": m + 2})],
        {"axis": 0},
    )
    fused = em.op("Reshape", [moved, fused_shape])
    size = em.op("Shape", [data], {"start": axis, "end": axis + 1})
    idx = em.op("Where", [em.op("Less", [idx, em.ints([0])]), em.op("Add", [idx, size]), idx])
    batches = em.op("Squeeze", [em.op("Shape", [idx], {"end": 1}), em.ints([0])])
    offsets = em.op("Mul", [em.op("Range", [em.ints(0), batches, em.ints(1)]), size])
    if q > b:
        offsets = em.op("Unsqueeze", [offsets, em.ints(list(range(1, q - b + 1)))])
    picked = em.op("Gather", [fused, em.op("Add", [idx, offsets])], {"axis": m})
    if m:
        out_rank = type_of(ctx, picked).rank
        assert out_rank is not None
        picked = em.op("Transpose", [picked], {"perm": [m, *range(m), *range(m + 1, out_rank)]})
    out_shape = em.op(
        "Concat",
        [em.op("Shape", [data], {"end": b}), em.op("Shape", [picked], {"start": 1})],
        {"axis": 0},
    )
    return em.op("Reshape", [picked, out_shape])
