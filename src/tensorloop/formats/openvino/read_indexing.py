"""OpenVINO indexing layers read as core ops: slices, gathers, scatters, searches, embeddings.

Slices (Slice, StridedSlice, SliceScatter), gathers (with batch dims), scatters, index-generating
layers (Eye, OneHot, NonZero, Unique), reordering (ReverseSequence, Reverse, Roll), searching
(Bucketize, SearchSorted), embedding bags and segments; one converter per layer type, at every
opset version OpenVINO's converters write."""

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
    index_type_attr,
    int_vector,
    normalized_axes,
    rank_of,
    scalar_const,
    scalar_input,
    static_slice,
    type_of,
)

__all__: list[str] = []

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)


# -- slices ----------------------------------------------------------------------------------------
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


@converter("SliceScatter")
def _slice_scatter(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    """The positions Slice would read, found by slicing a tensor of flat indices, written with
    ScatterElements on the flattened data."""
    em = ctx.em
    data, updates = ctx.input(0), ctx.input(1)
    shape = em.op("Shape", [data])
    count = em.op("ReduceProd", [shape], {"keepdims": 0})
    zero, one = em.const(np.int64(0)), em.const(np.int64(1))
    flat_ids = em.op("Reshape", [em.op("Range", [zero, count, one]), shape])
    args: list[Value] = [flat_ids]
    for i in (2, 3):
        args.append(em.op("Cast", [ctx.input(i)], {"to": DType.int64}))
    if has_input(inputs, 5):
        args.append(em.op("Cast", [ctx.input(5)], {"to": DType.int64}))
    else:
        n = type_of(ctx, args[1]).shape
        if n is None or not isinstance(n[0], int):
            raise ctx.error("without axes, start needs a static length")
        args.append(em.ints(list(range(int(n[0])))))
    args.append(em.op("Cast", [ctx.input(4)], {"to": DType.int64}))
    picked = em.op("Reshape", [em.op("Slice", args), em.ints([-1])])
    flat_data = em.op("Reshape", [data, em.ints([-1])])
    flat_updates = em.op("Reshape", [updates, em.ints([-1])])
    out = em.op("ScatterElements", [flat_data, picked, flat_updates], {"axis": 0})
    return [em.op("Reshape", [out, shape])]


# -- gathers ---------------------------------------------------------------------------------------
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


@converter("GatherND")
def _gather_nd(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    em = ctx.em
    data, indices = ctx.input(0), cast_to(ctx, ctx.input(1), DType.int64)
    b = ctx.int_attr("batch_dims", 0)
    out = em.op("GatherND", [data, indices], {"batch_dims": b})
    if b <= 1 or ctx.layer.version != "opset5":
        return [out]
    # GatherND-5 fuses the batch dims into one; -8 keeps them.
    rest = em.op("Shape", [out], {"start": b})
    return [em.op("Reshape", [out, em.op("Concat", [em.ints([-1]), rest], {"axis": 0})])]


@converter("GatherElements")
def _gather_elements(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    indices = cast_to(ctx, ctx.input(1), DType.int64)
    return [ctx.em.op("GatherElements", [ctx.input(0), indices], {"axis": ctx.int_attr("axis")})]


# -- scatters --------------------------------------------------------------------------------------
_ND_REDUCTIONS = {"none": "none", "sum": "add", "prod": "mul", "min": "min", "max": "max"}


@converter("ScatterNDUpdate")
def _scatter_nd_update(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    data, indices, updates = ctx.input(0), ctx.input(1), ctx.input(2)
    # ScatterNDUpdate-3 has no reduction; -15 adds none, sum, sub, prod, min and max.
    reduction = ctx.choice_attr("reduction", (*_ND_REDUCTIONS, "sub"), "none")
    reduction, updates = _subtracting(ctx, reduction, data, updates)
    return [
        ctx.em.op(
            "ScatterND",
            [data, cast_to(ctx, indices, DType.int64), updates],
            {"reduction": _ND_REDUCTIONS[reduction]},
        )
    ]


def _subtracting(
    ctx: LayerContext, reduction: str, data: Value, updates: Value
) -> tuple[str, Value]:
    """Reduction "sub" as "sum" of negated updates: a - b is a + (-b) exactly, in floats too."""
    if reduction != "sub":
        return reduction, updates
    dt = type_of(ctx, data).dtype
    if dt is DType.bool or (dt.is_int and not dt.is_signed):
        raise ctx.error(f"reduction 'sub' on {dt} data is not supported")
    return "sum", ctx.em.op("Neg", [updates])


@converter("ScatterUpdate")
def _scatter_update(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    """data[..., indices[j...], ...] = updates[..., j..., ...] along ``axis``: ScatterND on the
    data with the axis moved first, indices as 1-tuples and the updates' index dims fused."""
    em = ctx.em
    data, indices, updates = ctx.input(0), ctx.input(1), ctx.input(2)
    r = rank_of(ctx, 0, "data")
    q = rank_of(ctx, 1, "indices")
    axis = normalized_axes(ctx, const_ints(ctx, 3, "axis")[:1] or [0], r, "axis")[0]
    if len(const_ints(ctx, 3, "axis")) != 1:
        raise ctx.error("input #3 (axis) must hold one integer")
    perm = [axis, *range(axis), *range(axis + 1, r)]
    moved = em.op("Transpose", [data], {"perm": perm}) if axis else data
    # updates: data.shape[:axis] + indices.shape + data.shape[axis + 1:]
    u_perm = [*range(axis, axis + q), *range(axis), *range(axis + q, r - 1 + q)]
    upd = em.op("Transpose", [updates], {"perm": u_perm}) if axis and q else updates
    idx = em.op("Reshape", [cast_to(ctx, indices, DType.int64), em.ints([-1, 1])])
    rest = em.op("Shape", [moved], {"start": 1})
    upd = em.op("Reshape", [upd, em.op("Concat", [em.ints([-1]), rest], {"axis": 0})])
    out = em.op("ScatterND", [moved, idx, upd])
    if not axis:
        return [out]
    back = [perm.index(i) for i in range(r)]
    return [em.op("Transpose", [out], {"perm": back})]


_ELEMENT_REDUCTIONS = ("none", "sum", "prod", "min", "max", "mean")


@converter("ScatterElementsUpdate")
def _scatter_elements_update(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    em = ctx.em
    data, updates = ctx.input(0), ctx.input(2)
    indices = cast_to(ctx, ctx.input(1), DType.int64)
    axes = const_ints(ctx, 3, "axis")
    if len(axes) != 1:
        raise ctx.error(f"input #3 (axis) must hold one integer, got {axes}")
    axis = axes[0]
    # Version 3 has neither attribute; version 12 adds reduction and use_init_val.
    reduction = ctx.choice_attr("reduction", _ELEMENT_REDUCTIONS, "none")
    use_init = ctx.bool_attr("use_init_val", "true")
    dt = type_of(ctx, data).dtype
    if reduction == "none":
        return [em.op("ScatterElements", [data, indices, updates], {"axis": axis})]
    if reduction == "mean":
        if not dt.is_float:
            raise ctx.error(f"reduction 'mean' on {dt} data is not supported")
        return [_scatter_mean(ctx, data, indices, updates, axis, use_init)]
    if dt is DType.bool:
        raise ctx.error(f"reduction '{reduction}' on boolean data is not supported")
    start = data
    if not use_init:  # the scattered positions start at the reduction's identity
        start = _at_identity(ctx, data, indices, axis, reduction, dt)
    core = _ND_REDUCTIONS[reduction]
    return [em.op("ScatterElements", [start, indices, updates], {"axis": axis, "reduction": core})]


def _at_identity(
    ctx: LayerContext, data: Value, indices: Value, axis: int, reduction: str, dt: DType
) -> Value:
    if reduction in ("sum", "sub"):
        fill: float | int = 0
    elif reduction == "prod":
        fill = 1
    elif dt.is_float:
        fill = np.inf if reduction == "min" else -np.inf
    else:
        info = np.iinfo(dt.numpy)
        fill = int(info.max) if reduction == "min" else int(info.min)
    fills = ctx.em.op("Expand", [scalar_const(ctx, fill, dt), ctx.em.op("Shape", [indices])])
    return ctx.em.op("ScatterElements", [data, indices, fills], {"axis": axis})


def _scatter_mean(
    ctx: LayerContext, data: Value, indices: Value, updates: Value, axis: int, use_init: bool
) -> Value:
    """The mean over the updates reaching each position (and its old value if use_init_val)."""
    em = ctx.em
    dt = type_of(ctx, data).dtype
    shape = em.op("Shape", [indices])
    zero, one = scalar_const(ctx, 0, dt), scalar_const(ctx, 1, dt)
    start = data if use_init else _at_identity(ctx, data, indices, axis, "sum", dt)
    total = em.op("ScatterElements", [start, indices, updates], {"axis": axis, "reduction": "add"})
    base = em.op("Expand", [one if use_init else zero, em.op("Shape", [data])])
    ones = em.op("Expand", [one, shape])
    count = em.op("ScatterElements", [base, indices, ones], {"axis": axis, "reduction": "add"})
    # Untouched positions keep their value (count 1 with use_init, or 0: divide by 1 instead).
    count = em.op("Max", [count, one])
    return em.op("Div", [total, count])


# -- index-generating layers -----------------------------------------------------------------------


@converter("Eye")
def _eye(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    """Ones where column - row == diagonal_index, over [*batch_shape, rows, columns]."""
    em = ctx.em
    to = ctx.element_type("output_type")
    rows, cols, diag = (
        cast_to(ctx, scalar_input(ctx, i, w), DType.int64)
        for i, w in enumerate(("num_rows", "num_columns", "diagonal_index"))
    )
    zero, one = em.const(np.int64(0)), em.const(np.int64(1))
    r = em.op("Unsqueeze", [em.op("Range", [zero, rows, one]), em.ints([1])])
    c = em.op("Range", [zero, cols, one])
    eye = em.op("Cast", [em.op("Equal", [em.op("Sub", [c, r]), diag])], {"to": to})
    if not has_input(inputs, 3):
        return [eye]
    batch = cast_to(ctx, int_vector(ctx, 3, "batch_shape"), DType.int64)
    shape = em.op("Concat", [batch, em.op("Shape", [eye])], {"axis": 0})
    return [em.op("Expand", [eye, shape])]


@converter("OneHot")
def _one_hot(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    em = ctx.em
    indices = ctx.input(0)
    depth = cast_to(ctx, scalar_input(ctx, 1, "depth"), DType.int64)
    on, off = scalar_input(ctx, 2, "on_value"), scalar_input(ctx, 3, "off_value")
    values = em.op(
        "Concat",
        [em.op("Unsqueeze", [v, em.ints([0])]) for v in (off, on)],
        {"axis": 0},
    )
    # OneHot-1 (and -16's default ignore_negative) turns a negative index into all off_value;
    # the core op counts it from the end, as -16's normalize mode does.
    mode = ctx.choice_attr(
        "negative_indices_mode", ("ignore_negative", "normalize"), "ignore_negative"
    )
    idx = cast_to(ctx, indices, DType.int64)
    if mode == "ignore_negative":
        idx = em.op("Where", [em.op("Less", [idx, em.ints(0)]), depth, idx])
    return [em.op("OneHot", [idx, depth, values], {"axis": ctx.int_attr("axis")})]


@converter("NonZero")
def _non_zero(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    to = index_type_attr(ctx)
    return [cast_to(ctx, ctx.em.op("NonZero", [ctx.input(0)]), to)]


@converter("Unique")
def _unique(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    attrs: dict[str, int] = {"sorted": int(ctx.bool_attr("sorted", "true"))}
    if has_input(inputs, 1):
        axes = const_ints(ctx, 1, "axis")
        if len(axes) != 1:
            raise ctx.error(f"input #1 (axis) must hold one integer, got {axes}")
        attrs["axis"] = axes[0]
    values, first, inverse, counts = ctx.em.ops("Unique", [ctx.input(0)], attrs)
    index_type = index_type_attr(ctx, "index_element_type")
    count_type = index_type_attr(ctx, "count_element_type")
    return [
        values,
        cast_to(ctx, first, index_type),
        cast_to(ctx, inverse, index_type),
        cast_to(ctx, counts, count_type),
    ]


# -- reordering layers -----------------------------------------------------------------------------


@converter("ReverseSequence")
def _reverse_sequence(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    em = ctx.em
    x = ctx.input(0)
    r = rank_of(ctx, 0, "data")
    b, s = normalized_axes(
        ctx, [ctx.int_attr("batch_axis", 0), ctx.int_attr("seq_axis", 1)], r, "batch/seq axis"
    )
    if b == s:
        raise ctx.error(f"batch_axis and seq_axis are both {b}")
    lens = cast_to(ctx, ctx.input(1), DType.int64)
    if {b, s} == {0, 1}:
        return [em.op("ReverseSequence", [x, lens], {"batch_axis": b, "time_axis": s})]
    # Move the batch and sequence axes first, reverse there, and move them back.
    perm = [b, s, *(i for i in range(r) if i not in (b, s))]
    moved = em.op("Transpose", [x], {"perm": perm})
    out = em.op("ReverseSequence", [moved, lens], {"batch_axis": 0, "time_axis": 1})
    return [em.op("Transpose", [out], {"perm": [perm.index(i) for i in range(r)]})]


@converter("Reverse")
def _reverse(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    em = ctx.em
    x = ctx.input(0)
    mode = ctx.choice_attr("mode", ("index", "mask"))
    r = rank_of(ctx, 0, "data")
    if mode == "mask":
        mask = ctx.const_input(1, "axes mask").reshape(-1)
        if mask.size != r:
            raise ctx.error(f"the axes mask has {mask.size} entries for rank {r}")
        axes = [i for i, m in enumerate(mask.tolist()) if m]
    else:
        axes = sorted(set(normalized_axes(ctx, const_ints(ctx, 1, "axes"), r, "axes")))
    if not axes:
        return [em.op("Identity", [x])]
    n = len(axes)
    ins = [x, em.ints([-1] * n), em.ints([INT64_MIN] * n), em.ints(axes), em.ints([-1] * n)]
    return [em.op("Slice", ins)]


@converter("Roll")
def _roll(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    """Each (shift, axis) pair gathers positions (i - shift) mod n along its axis."""
    em = ctx.em
    x = ctx.input(0)
    r = rank_of(ctx, 0, "data")
    axes = normalized_axes(ctx, const_ints(ctx, 2, "axes"), r, "axes")
    shift_data = ctx.const(1)
    shifts: list[Value]
    if shift_data is not None:
        flat = const_ints(ctx, 1, "shift")
        if len(flat) not in (1, len(axes)):
            raise ctx.error(f"shift {flat} must hold one value or one per axis {axes}")
        shifts = [em.ints(s) for s in (flat * len(axes) if len(flat) == 1 else flat)]
    else:
        vec = cast_to(ctx, int_vector(ctx, 1, "shift"), DType.int64)
        t = type_of(ctx, vec)
        n = t.shape[0] if t.shape is not None and len(t.shape) == 1 else None
        if n not in (1, len(axes)):
            raise ctx.error(f"input #1 (shift) must hold one value or one per axis, got {t}")
        shifts = [em.op("Gather", [vec, em.ints(i if n != 1 else 0)]) for i in range(len(axes))]
    zero, one = em.const(np.int64(0)), em.const(np.int64(1))
    for a, s in zip(axes, shifts, strict=True):
        size = em.op("Squeeze", [em.op("Shape", [x], {"start": a, "end": a + 1}), em.ints([0])])
        # max(size, 1): an empty axis has nothing to roll, and Mod must not divide by 0.
        pos = em.op("Sub", [em.op("Range", [zero, size, one]), s])
        idx = em.op("Mod", [pos, em.op("Max", [size, one])])
        x = em.op("Gather", [x, idx], {"axis": a})
    return [x if axes else em.op("Identity", [x])]


# -- searching layers ------------------------------------------------------------------------------


def _count_below(ctx: LayerContext, seq: Value, values: Value, inclusive: bool) -> Value:
    """How many of ``seq``'s last-axis entries are below each value (at most, if inclusive);
    ``values`` has one more axis, the last, of size 1."""
    em = ctx.em
    below = em.op("LessOrEqual" if inclusive else "Less", [seq, values])
    return em.op(
        "ReduceSum", [em.op("Cast", [below], {"to": DType.int64}), em.ints([-1])], {"keepdims": 0}
    )


@converter("Bucketize")
def _bucketize(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    em = ctx.em
    to = index_type_attr(ctx)
    right = ctx.bool_attr("with_right_bound", "true")
    x, buckets = ctx.input(0), ctx.input(1)
    if type_of(ctx, buckets).rank != 1:
        raise ctx.error(f"input #1 (buckets) must be 1-D, got {type_of(ctx, buckets)}")
    work = _common_type(ctx, x, buckets)
    values = em.op("Unsqueeze", [cast_to(ctx, x, work), em.ints([-1])])
    # with_right_bound: bucket i is (b[i-1], b[i]], so x's bucket counts the bounds below x.
    count = _count_below(ctx, cast_to(ctx, buckets, work), values, inclusive=not right)
    return [cast_to(ctx, count, to)]


def _common_type(ctx: LayerContext, a: Value, b: Value) -> DType:
    da, db = type_of(ctx, a).dtype, type_of(ctx, b).dtype
    if da is db:
        return da
    return DType.float64 if da.is_float or db.is_float else DType.int64


@converter("SearchSorted")
def _search_sorted(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    em = ctx.em
    seq, values = ctx.input(0), ctx.input(1)
    to = index_type_attr(ctx)
    right = ctx.bool_attr("right_mode", "false")
    sr, vr = rank_of(ctx, 0, "sorted_sequence"), rank_of(ctx, 1, "values")
    if sr != 1 and sr != vr:
        raise ctx.error(f"sorted_sequence of rank {sr} needs values of the same rank, not {vr}")
    work = _common_type(ctx, seq, values)
    seq, values = cast_to(ctx, seq, work), cast_to(ctx, values, work)
    if sr > 1:
        seq = em.op("Unsqueeze", [seq, em.ints([-2])])
    vals = em.op("Unsqueeze", [values, em.ints([-1])])
    # left: the first i with seq[i] >= v, the count of entries < v; right: entries <= v.
    return [cast_to(ctx, _count_below(ctx, seq, vals, inclusive=right), to)]


# -- embeddings and segments -----------------------------------------------------------------------


@converter("EmbeddingBagPackedSum", "EmbeddingBagPacked")
def _embedding_bag_packed(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    em = ctx.em
    table, indices = ctx.input(0), cast_to(ctx, ctx.input(1), DType.int64)
    reduction = ctx.choice_attr("reduction", ("sum", "mean"), "sum")
    if rank_of(ctx, 1, "indices") != 2:
        raise ctx.error(f"input #1 (indices) must be 2-D, got {type_of(ctx, ctx.input(1))}")
    rows = em.op("Gather", [table, indices], {"axis": 0})  # [batch, bag, ...]
    if has_input(inputs, 2):
        weights = ctx.input(2)
        tr = rank_of(ctx, 0, "emb_table")
        w = em.op("Unsqueeze", [weights, em.ints(list(range(2, tr + 1)))]) if tr > 1 else weights
        rows = em.op("Mul", [rows, w])
    op = "ReduceMean" if reduction == "mean" else "ReduceSum"
    return [em.op(op, [rows, em.ints([1])], {"keepdims": 0})]


@converter("EmbeddingSegmentsSum")
def _embedding_segments_sum(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    segments = cast_to(ctx, ctx.input(2), DType.int64)
    count = _vector(ctx, cast_to(ctx, scalar_input(ctx, 3, "num_segments"), DType.int64))
    default = 4 if has_input(inputs, 4) else None
    weights = 5 if has_input(inputs, 5) else None
    return [_bags(ctx, segments, count, default, weights, "sum")]


@converter("EmbeddingBagOffsetsSum", "EmbeddingBagOffsets")
def _embedding_bag_offsets(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    """Index k belongs to bag (the number of offsets <= k) - 1: offsets never decrease."""
    em = ctx.em
    reduction = ctx.choice_attr("reduction", ("sum", "mean"), "sum")
    offsets = cast_to(ctx, ctx.input(2), DType.int64)
    k = em.op("Shape", [ctx.input(1)], {"end": 1})
    zero, one = em.const(np.int64(0)), em.const(np.int64(1))
    positions = em.op("Range", [zero, em.op("Squeeze", [k, em.ints([0])]), one])
    at_or_before = em.op("LessOrEqual", [offsets, em.op("Unsqueeze", [positions, em.ints([1])])])
    seen = em.op(
        "ReduceSum",
        [em.op("Cast", [at_or_before], {"to": DType.int64}), em.ints([1])],
        {"keepdims": 0},
    )
    segments = em.op("Sub", [seen, one])
    count = em.op("Shape", [offsets])
    default = 3 if has_input(inputs, 3) else None
    weights = 4 if has_input(inputs, 4) else None
    return [_bags(ctx, segments, count, default, weights, reduction)]


def _vector(ctx: LayerContext, v: Value) -> Value:
    return ctx.em.op("Unsqueeze", [v, ctx.em.ints([0])])


def _bags(
    ctx: LayerContext,
    segments: Value,
    count: Value,
    default: int | None,
    weights: int | None,
    reduction: str,
) -> Value:
    """Table rows of input #1's indices summed (or averaged) per bag ``segments`` names, into
    ``count`` (a 1-element vector) bags; an empty bag is the row at input ``default``, or zeros."""
    em = ctx.em
    table = ctx.input(0)
    dt = type_of(ctx, table).dtype
    tr = rank_of(ctx, 0, "emb_table")
    rows = em.op("Gather", [table, cast_to(ctx, ctx.input(1), DType.int64)], {"axis": 0})
    if weights is not None:
        w = ctx.input(weights)
        rows = em.op("Mul", [rows, em.op("Unsqueeze", [w, em.ints(list(range(1, tr)))])])
    where = em.op("Unsqueeze", [segments, em.ints([1])])
    shape = em.op("Concat", [count, em.op("Shape", [table], {"start": 1})], {"axis": 0})
    zeros = em.op("Expand", [scalar_const(ctx, 0, dt), shape])
    out = em.op("ScatterND", [zeros, where, rows], {"reduction": "add"})
    ones = em.op("Expand", [em.const(np.int64(1)), em.op("Shape", [segments])])
    sizes = em.op(
        "ScatterND",
        [em.op("Expand", [em.const(np.int64(0)), count]), where, ones],
        {"reduction": "add"},
    )
    if reduction == "mean":
        divisor = em.op("Cast", [em.op("Max", [sizes, em.const(np.int64(1))])], {"to": dt})
        out = em.op("Div", [out, em.op("Unsqueeze", [divisor, em.ints(list(range(1, tr)))])])
    if default is None:
        return out
    empty = em.op("Equal", [sizes, em.const(np.int64(0))])
    if tr > 1:
        empty = em.op("Unsqueeze", [empty, em.ints(list(range(1, tr)))])
    index = cast_to(ctx, scalar_input(ctx, default, "default_index"), DType.int64)
    fallback = em.op("Gather", [table, index], {"axis": 0})
    return em.op("Where", [empty, fallback, out])


@converter("SegmentMax")
def _segment_max(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    """ScatterND with max into a tensor of the type's lowest value; with fill_mode ZERO the
    segments no row falls in (counted by a second, adding scatter) read 0."""
    em = ctx.em
    data, ids = ctx.input(0), ctx.input(1)
    t = type_of(ctx, data)
    if t.rank is None or t.rank < 1:
        raise ctx.error(f"data needs a known rank of at least 1, got {t}")
    dt = t.dtype
    fill = ctx.choice_attr("fill_mode", ("zero", "lowest"))
    ids = em.op("Cast", [ids], {"to": DType.int64})
    if has_input(inputs, 2):
        count = em.op("Reshape", [em.op("Cast", [ctx.input(2)], {"to": DType.int64}), em.ints([1])])
    else:
        top = em.op("ReduceMax", [ids, em.ints([0])], {"keepdims": 1})
        count = em.op("Add", [top, em.ints([1])])
    rest = static_slice(ctx, em.op("Shape", [data]), [1], [t.rank], [0])
    shape = em.op("Concat", [count, rest], {"axis": 0})
    npdt = np.dtype(dt.numpy)
    lowest = np.finfo(npdt).min if npdt.kind == "f" else np.iinfo(npdt).min
    at = em.op("Unsqueeze", [ids, em.ints([1])])
    init = em.op("Expand", [scalar_const(ctx, lowest, dt), shape])
    out = em.op("ScatterND", [init, at, data], {"reduction": "max"})
    if fill == "lowest":
        return [out]
    ones = em.op("Expand", [em.const(np.int64(1)), em.op("Shape", [ids])])
    zeros = em.op("Expand", [em.const(np.int64(0)), count])
    hits = em.op("ScatterND", [zeros, at, ones], {"reduction": "add"})
    seen = em.op("Greater", [hits, em.const(np.int64(0))])
    seen = em.op("Reshape", [seen, em.ints([-1] + [1] * (t.rank - 1))])
    return [em.op("Where", [seen, out, scalar_const(ctx, 0, dt)])]
