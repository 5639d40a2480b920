"""OpenVINO gather, scatter, index-generating and shape layers read as core ops: one converter per
layer type, at every opset version OpenVINO's converters write. The writer's emitters for them
are in ``write_indexing.py``.

Gather, ShapeOf, Broadcast, Range, Squeeze, Unsqueeze, Concat, Split, VariadicSplit, TopK and
CumSum are read by the older ``indexing.py``, ``shapes.py`` and ``reductions.py``."""

from __future__ import annotations

import numpy as np

from ...ir.graph import Value
from ...tensor.dtypes import DType
from .convert import LayerContext, converter
from .inputs import (
    cast_to,
    const_ints,
    has_input,
    int_vector,
    normalized_axes,
    rank_of,
    scalar_const,
    scalar_input,
    type_of,
)

__all__: list[str] = []

# -- scatters ------------------------------------------------------------------------------------

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


# -- gathers -------------------------------------------------------------------------------------


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


@converter("Identity")
def _identity(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    return [ctx.em.op("Identity", [ctx.input(0)])]


# -- index-generating layers ---------------------------------------------------------------------


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
    to = ctx.element_type("output_type", "i64")
    if to not in (DType.int32, DType.int64):
        raise ctx.error(f"attribute 'output_type' is {to}, expected i32 or i64")
    return [cast_to(ctx, ctx.em.op("NonZero", [ctx.input(0)]), to)]


@converter("Tile")
def _tile(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    """Tile pads the shorter of the data's shape and repeats with leading ones."""
    em = ctx.em
    x = ctx.input(0)
    r = rank_of(ctx, 0, "data")
    repeats = cast_to(ctx, int_vector(ctx, 1, "repeats"), DType.int64)
    t = type_of(ctx, repeats)
    n = t.shape[0] if t.shape is not None and len(t.shape) == 1 else None
    if not isinstance(n, int):
        raise ctx.error(f"input #1 (repeats) must be 1-D of a known length, got {t}")
    if n < r:
        repeats = em.op("Concat", [em.ints([1] * (r - n)), repeats], {"axis": 0})
    elif n > r:
        x = em.op("Unsqueeze", [x, em.ints(list(range(n - r)))])
    return [em.op("Tile", [x, repeats])]


@converter("Einsum")
def _einsum(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    values = [ctx.input(i) for i in range(len(inputs))]
    return [ctx.em.op("Einsum", values, {"equation": ctx.attr("equation")})]


@converter("Unique")
def _unique(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    attrs: dict[str, int] = {"sorted": int(ctx.bool_attr("sorted", "true"))}
    if has_input(inputs, 1):
        axes = const_ints(ctx, 1, "axis")
        if len(axes) != 1:
            raise ctx.error(f"input #1 (axis) must hold one integer, got {axes}")
        attrs["axis"] = axes[0]
    values, first, inverse, counts = ctx.em.ops("Unique", [ctx.input(0)], attrs)
    index_type = ctx.element_type("index_element_type", "i64")
    count_type = ctx.element_type("count_element_type", "i64")
    for dt, key in ((index_type, "index_element_type"), (count_type, "count_element_type")):
        if dt not in (DType.int32, DType.int64):
            raise ctx.error(f"attribute '{key}' is {dt}, expected i32 or i64")
    return [
        values,
        cast_to(ctx, first, index_type),
        cast_to(ctx, inverse, index_type),
        cast_to(ctx, counts, count_type),
    ]


# -- reordering layers ---------------------------------------------------------------------------


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
    ins = [x, em.ints([-1] * n), em.ints([-(2**63)] * n), em.ints(axes), em.ints([-1] * n)]
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


# -- searching layers ----------------------------------------------------------------------------


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
    to = ctx.element_type("output_type", "i64")
    if to not in (DType.int32, DType.int64):
        raise ctx.error(f"attribute 'output_type' is {to}, expected i32 or i64")
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
    to = ctx.element_type("output_type", "i64")
    if to not in (DType.int32, DType.int64):
        raise ctx.error(f"attribute 'output_type' is {to}, expected i32 or i64")
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


# -- embeddings -----------------------------------------------------------------------------------


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
