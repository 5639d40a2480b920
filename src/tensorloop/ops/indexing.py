"""Indexing and data-movement ops: gathers, scatters, Tile, TopK, Unique, OneHot, DepthToSpace..."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..ir.opdef import AttrSpec, InferContext, op
from ..tensor.dtypes import DType
from ..tensor.types import UNKNOWN, Dim, TensorType, Type, normalize_axis
from .common import expect, norm_axis, normalize_axes, reported, static_length

SCATTER_REDUCTIONS = ("none", "add", "mul", "max", "min")
BLOCK_MODES = ("DCR", "CRD")
TENSOR_SCATTER_MODES = ("linear", "circular")


def _merge(ctx: InferContext, a: Dim, b: Dim, what: str) -> Dim:
    """One dim that two inputs must share: the static one if either is, else a shared name."""
    if isinstance(a, int) and isinstance(b, int) and a != b:
        raise ctx.error(f"{what}: {a} vs {b}")
    if isinstance(a, int):
        return a
    return b if isinstance(b, int) or a == b else UNKNOWN


def choice(ctx: InferContext, key: str, allowed: Sequence[str]) -> str:
    """String attribute ``key``, which must be one of ``allowed``."""
    value: str = ctx.attr(key)
    if value not in allowed:
        raise ctx.error(f"{key} must be one of {', '.join(allowed)}, got {value!r}")
    return value


def product(dims: Sequence[Dim]) -> Dim:
    """The product of ``dims``: an int if all are static, a lone symbol times 1s, else "?"."""
    symbols = [d for d in dims if isinstance(d, str)]
    n = math.prod(d for d in dims if isinstance(d, int))
    if not symbols or n == 0:
        return n
    return symbols[0] if len(symbols) == 1 and symbols[0] != UNKNOWN and n == 1 else UNKNOWN


def block_rearrangement(
    shape: Sequence[int], blocksize: int, mode: str, to_depth: bool
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """SpaceToDepth (``to_depth``) or DepthToSpace of an [N, C, H, W] tensor as reshape,
    transpose, reshape: (the split shape, the permutation, the result's shape). Every kernel of
    the two ops computes ``x.reshape(split).transpose(perm).reshape(result)``."""
    bs, crd = blocksize, mode == "CRD"
    n, c, h, w = shape
    if to_depth:
        perm = (0, 1, 3, 5, 2, 4) if crd else (0, 3, 5, 1, 2, 4)
        return (n, c, h // bs, bs, w // bs, bs), perm, (n, c * bs * bs, h // bs, w // bs)
    depth = c // (bs * bs)
    if crd:
        return (n, depth, bs, bs, h, w), (0, 1, 4, 2, 5, 3), (n, depth, h * bs, w * bs)
    return (n, bs, bs, depth, h, w), (0, 3, 4, 1, 5, 2), (n, depth, h * bs, w * bs)


@op("GatherElements", inputs=2, attrs={"axis": AttrSpec(int, 0)})
def _gather_elements(ctx: InferContext) -> list[Type]:
    """out[i][j][k] = data[index[i][j][k]][j][k] (for axis 0; likewise for others): ``indices``
    (negatives count from the end) has data's rank and gives the output its shape."""
    data, indices = ctx.tensor(0), expect(ctx, 1, "int")
    if data.rank is not None and indices.rank is not None:
        if data.rank != indices.rank or data.rank == 0:
            raise ctx.error(f"data {data} and indices {indices} must share one rank >= 1")
        norm_axis(ctx, ctx.attr("axis"), data.rank)
    return [data.with_shape(indices.shape)]


@op("GatherND", inputs=2, attrs={"batch_dims": AttrSpec(int, 0)})
def _gather_nd(ctx: InferContext) -> list[Type]:
    """Slices of ``data`` picked by index tuples: ``indices``' last axis (length k) indexes
    data's axes b..b+k-1 after the first b = batch_dims axes, which both share; the output is
    indices.shape[:-1] + data.shape[b + k:]."""
    data, indices, b = ctx.tensor(0), expect(ctx, 1, "int"), ctx.attr("batch_dims")
    if data.shape is None or indices.shape is None:
        return [data.with_shape(None)]
    r, q = len(data.shape), len(indices.shape)
    if r < 1 or q < 1 or not 0 <= b < min(r, q):
        raise ctx.error(f"batch_dims {b} must be in [0, min(rank {r}, rank {q})) of {data}")
    k = indices.shape[-1]
    if not isinstance(k, int):
        return [data.with_shape(None)]
    if not 1 <= k <= r - b:
        raise ctx.error(f"indices' last dim {k} must be in [1, {r - b}] for data {data}")
    batch = [
        _merge(ctx, x, y, "batch dims differ")
        for x, y in zip(data.shape[:b], indices.shape[:b], strict=True)
    ]
    return [data.with_shape([*batch, *indices.shape[b:-1], *data.shape[b + k :]])]


def _scatter_common(ctx: InferContext) -> TensorType:
    choice(ctx, "reduction", SCATTER_REDUCTIONS)
    data = ctx.tensor(0)
    expect(ctx, 1, "int")
    ctx.same_dtype(0, 2)
    return data


@op(
    "ScatterElements",
    inputs=3,
    attrs={"axis": AttrSpec(int, 0), "reduction": AttrSpec(str, "none")},
)
def _scatter_elements(ctx: InferContext) -> list[Type]:
    """A copy of ``data`` where, for each entry of ``updates``, the element at that entry's own
    index with the axis coordinate replaced by the matching ``indices`` entry is set (or combined
    by reduction add / mul / max / min) to the update; the inverse of GatherElements."""
    data = _scatter_common(ctx)
    indices, updates = ctx.tensor(1), ctx.tensor(2)
    ranks = {t.rank for t in (data, indices, updates) if t.rank is not None}
    if len(ranks) > 1:
        raise ctx.error(f"data {data}, indices {indices} and updates {updates} differ in rank")
    if indices.shape is not None and updates.shape is not None:
        for x, y in zip(indices.shape, updates.shape, strict=True):
            _merge(ctx, x, y, f"indices {indices} and updates {updates} differ in shape")
    if data.rank is not None:
        norm_axis(ctx, ctx.attr("axis"), data.rank)
    return [data]


@op("ScatterND", inputs=3, attrs={"reduction": AttrSpec(str, "none")})
def _scatter_nd(ctx: InferContext) -> list[Type]:
    """A copy of ``data`` with the slice at each index tuple of ``indices`` (its last axis, of
    length k) set to (or combined by reduction add / mul / max / min with) the matching slice of
    ``updates``, whose shape is indices.shape[:-1] + data.shape[k:]; the inverse of GatherND."""
    data = _scatter_common(ctx)
    indices, updates = ctx.tensor(1), ctx.tensor(2)
    if data.shape is None or indices.shape is None or updates.shape is None:
        return [data]
    k = indices.shape[-1] if indices.shape else 0
    if not indices.shape or (isinstance(k, int) and not 1 <= k <= len(data.shape)):
        raise ctx.error(f"indices {indices} must end in a dim in [1, rank] of data {data}")
    if isinstance(k, int):
        want = [*indices.shape[:-1], *data.shape[k:]]
        if len(want) != len(updates.shape):
            raise ctx.error(f"updates {updates} must have shape {want}")
        for x, y in zip(want, updates.shape, strict=True):
            _merge(ctx, x, y, f"updates {updates} must have shape {want}")
    return [data]


@op(
    "TensorScatter",
    inputs=(2, 3),
    attrs={"axis": AttrSpec(int, -2), "mode": AttrSpec(str, "linear")},
)
def _tensor_scatter(ctx: InferContext) -> list[Type]:
    """A copy of ``past_cache`` with ``update`` written along the sequence ``axis`` (not 0, the
    batch axis) starting at write_indices[b] for each batch b (default 0); mode circular wraps
    positions modulo the cache length, linear requires them to fit."""
    choice(ctx, "mode", TENSOR_SCATTER_MODES)
    past, update = ctx.tensor(0), ctx.tensor(1)
    ctx.same_dtype(0, 1)
    if ctx.has(2):
        expect(ctx, 2, "int", rank=1)
    if past.shape is None or update.shape is None:
        return [past]
    if len(past.shape) != len(update.shape):
        raise ctx.error(f"past_cache {past} and update {update} differ in rank")
    axis = norm_axis(ctx, ctx.attr("axis"), len(past.shape))
    if axis == 0:
        raise ctx.error("axis must not be 0, the batch axis")
    for i, (x, y) in enumerate(zip(past.shape, update.shape, strict=True)):
        if i != axis:
            _merge(ctx, x, y, f"past_cache {past} and update {update} differ off axis {axis}")
        elif isinstance(x, int) and isinstance(y, int) and y > x:
            raise ctx.error(f"update {update} is longer than past_cache {past} on axis {axis}")
    return [past]


@op("Tile", inputs=2)
def _tile(ctx: InferContext) -> list[Type]:
    """``input`` repeated repeats[i] times along each axis i (NumPy's tile, no broadcasting)."""
    t, spec = ctx.tensor(0), expect(ctx, 1, "int", rank=1)
    n, repeats = static_length(spec), ctx.const_ints(1)
    if t.shape is not None and n is not None and n != len(t.shape):
        raise ctx.error(f"repeats has {n} values for the rank-{len(t.shape)} input {t}")
    if t.shape is None:
        return [t.with_shape(None if n is None else [UNKNOWN] * n)]
    if repeats is None:
        return [t.with_shape(d if d == 0 else UNKNOWN for d in t.shape)]
    if any(r < 0 for r in repeats):
        raise ctx.error(f"repeats {repeats} holds a negative count")
    return [t.with_shape(product([d, r]) for d, r in zip(t.shape, repeats, strict=True))]


@op("NonZero")
def _nonzero(ctx: InferContext) -> list[Type]:
    """The coordinates of the non-zero elements of ``X`` in row-major order, as an int64
    [rank, count] tensor (for a scalar: [0, count])."""
    t = ctx.tensor(0)
    return [TensorType(DType.int64, [UNKNOWN if t.rank is None else t.rank, UNKNOWN])]


@op(
    "TopK",
    inputs=2,
    attrs={"axis": AttrSpec(int, -1), "largest": AttrSpec(int, 1), "sorted": AttrSpec(int, 1)},
)
def _topk(ctx: InferContext) -> list[Type]:
    """The k largest (or, with largest=0, smallest) elements of ``X`` along ``axis``, k from the
    one-element input ``K``: values and their int64 indices, best first; equal values keep the
    lower index first."""
    t = expect(ctx, 0, "numeric")
    spec = expect(ctx, 1, "int")
    if spec.rank is not None and (spec.rank > 1 or static_length(spec) not in (None, 1)):
        raise ctx.error(f"input #1: K must hold one value, got {spec}")
    k = ctx.const_ints(1)
    if t.shape is None:
        return [t, TensorType(DType.int64, None)]
    axis = norm_axis(ctx, ctx.attr("axis"), len(t.shape))
    dim: Dim = UNKNOWN
    if k is not None:
        dim = k[0]
        size = t.shape[axis]
        if dim < 0 or (isinstance(size, int) and dim > size):
            raise ctx.error(f"k = {dim} is out of range for axis {axis} of {t}")
    shape = [dim if i == axis else d for i, d in enumerate(t.shape)]
    return [t.with_shape(shape), TensorType(DType.int64, shape)]


@op("OneHot", inputs=3, attrs={"axis": AttrSpec(int, -1)})
def _onehot(ctx: InferContext) -> list[Type]:
    """A new axis of size ``depth`` inserted at ``axis``, holding values[1] (on) where its
    position equals the index (negatives count from the end) and values[0] (off) elsewhere;
    out-of-range indices give all off."""
    t = expect(ctx, 0, "numeric")
    expect(ctx, 1, "numeric")
    values = expect(ctx, 2, rank=1)
    if static_length(values) not in (None, 2):
        raise ctx.error(f"values must hold [off, on], got {values}")
    depth = ctx.const(1)
    dim: Dim = UNKNOWN
    if depth is not None:
        if depth.size != 1:
            raise ctx.error(f"depth must hold one value, got shape {list(depth.shape)}")
        dim = int(depth.reshape(()))
        if dim < 1:
            raise ctx.error(f"depth must be at least 1, got {dim}")
    if t.shape is None:
        return [values.with_shape(None)]
    axis = norm_axis(ctx, ctx.attr("axis"), len(t.shape) + 1)
    return [values.with_shape([*t.shape[:axis], dim, *t.shape[axis:]])]


@op("Compress", inputs=2, attrs={"axis": AttrSpec(int, None)})
def _compress(ctx: InferContext) -> list[Type]:
    """The slices of ``input`` along ``axis`` (its flattened elements if axis is None) whose
    entry in the 1-D bool ``condition`` is true; positions past the condition's end are dropped."""
    t = ctx.tensor(0)
    expect(ctx, 1, "bool", rank=1)
    axis = ctx.attr("axis")
    if axis is None:
        return [t.with_shape([UNKNOWN])]
    if t.shape is None:
        return [t]
    a = norm_axis(ctx, axis, len(t.shape))
    return [t.with_shape(UNKNOWN if i == a else d for i, d in enumerate(t.shape))]


@op("Unique", attrs={"axis": AttrSpec(int, None), "sorted": AttrSpec(int, 1)})
def _unique(ctx: InferContext) -> list[Type]:
    """The distinct elements of flattened ``X`` (or distinct slices along ``axis``), ascending
    (lexicographically for slices) or, with sorted=0, in order of first occurrence; also the
    index of each one's first occurrence, each input's position in the result, and counts."""
    t, axis = ctx.tensor(0), ctx.attr("axis")
    index = TensorType(DType.int64, [UNKNOWN])
    if axis is None:
        n: Dim = UNKNOWN if t.shape is None else product(t.shape)
        return [t.with_shape([UNKNOWN]), index, TensorType(DType.int64, [n]), index]
    if t.shape is None:
        return [t, index, index, index]
    a = norm_axis(ctx, axis, len(t.shape))
    y = t.with_shape(UNKNOWN if i == a else d for i, d in enumerate(t.shape))
    return [y, index, TensorType(DType.int64, [t.shape[a]]), index]


@op(
    "ReverseSequence",
    inputs=2,
    attrs={"batch_axis": AttrSpec(int, 1), "time_axis": AttrSpec(int, 0)},
)
def _reverse_sequence(ctx: InferContext) -> list[Type]:
    """For each batch b, the first sequence_lens[b] steps along ``time_axis`` reversed and the
    rest copied; batch_axis and time_axis are 0 and 1 in some order."""
    t = ctx.tensor(0)
    lens = expect(ctx, 1, "int", rank=1)
    b, a = ctx.attr("batch_axis"), ctx.attr("time_axis")
    if {a, b} != {0, 1}:
        raise ctx.error(f"batch_axis {b} and time_axis {a} must be 0 and 1 in some order")
    if t.shape is not None:
        if len(t.shape) < 2:
            raise ctx.error(f"input {t} must have rank >= 2")
        _merge(ctx, t.shape[b], lens.shape[0] if lens.shape else UNKNOWN, "batch size differs")
    return [t]


def _block_dims(ctx: InferContext, to_depth: bool) -> list[Type]:
    t, bs = ctx.tensor(0), ctx.attr("blocksize")
    choice(ctx, "mode", BLOCK_MODES)
    if bs < 1:
        raise ctx.error(f"blocksize must be at least 1, got {bs}")
    if t.shape is None:
        return [t.with_shape([UNKNOWN] * 4)]
    if len(t.shape) != 4:
        raise ctx.error(f"input must be 4-D [N, C, H, W], got {t}")
    n, c, h, w = t.shape
    if to_depth:
        for d in (h, w):
            if isinstance(d, int) and d % bs:
                raise ctx.error(f"H and W of {t} must be multiples of blocksize {bs}")
        dims = [
            n,
            product([c, bs * bs]),
            *(d // bs if isinstance(d, int) else UNKNOWN for d in (h, w)),
        ]
    else:
        if isinstance(c, int) and c % (bs * bs):
            raise ctx.error(f"C of {t} must be a multiple of blocksize² = {bs * bs}")
        dims = [
            n,
            c // (bs * bs) if isinstance(c, int) else UNKNOWN,
            product([h, bs]),
            product([w, bs]),
        ]
    return [t.with_shape(dims)]


_BLOCK_ATTRS = {"blocksize": AttrSpec(int), "mode": AttrSpec(str, "DCR")}


@op("SpaceToDepth", attrs=_BLOCK_ATTRS)
def _space_to_depth(ctx: InferContext) -> list[Type]:
    """[N, C, H, W] to [N, C·bs², H/bs, W/bs]: each bs x bs block moves into channels, ordered
    block row, block column, then channel (DCR) or channel, block row, block column (CRD)."""
    return _block_dims(ctx, to_depth=True)


@op("DepthToSpace", attrs=_BLOCK_ATTRS)
def _depth_to_space(ctx: InferContext) -> list[Type]:
    """[N, C, H, W] to [N, C/bs², H·bs, W·bs], the inverse of SpaceToDepth in the same mode:
    channels are read as (block row, block column, channel) for DCR or (channel, row, column)
    for CRD."""
    return _block_dims(ctx, to_depth=False)


@op("CenterCropPad", inputs=2, attrs={"axes": AttrSpec((tuple, list), None)})
def _center_crop_pad(ctx: InferContext) -> list[Type]:
    """``input`` cropped or zero-padded about its centre to ``shape`` along ``axes`` (default
    all): a crop starts at floor((in - out) / 2); a pad puts the odd extra cell at the end."""
    t, spec = ctx.tensor(0), expect(ctx, 1, "int", rank=1)
    if t.shape is None:
        return [t]
    rank, axes = len(t.shape), ctx.attr("axes")
    with reported(ctx):
        listed = normalize_axes(range(rank) if axes is None else axes, rank)
    n, sizes = static_length(spec), ctx.const_ints(1)
    if n is not None and n != len(listed):
        raise ctx.error(f"shape has {n} values for the {len(listed)} axes {listed}")
    if sizes is None:
        return [t.with_shape(UNKNOWN if i in listed else d for i, d in enumerate(t.shape))]
    if len(sizes) != len(listed) or any(s < 0 for s in sizes):
        raise ctx.error(f"shape {sizes} must hold one size >= 0 per axis of {listed}")
    dims = list(t.shape)
    for a, s in zip(listed, sizes, strict=True):
        dims[a] = s
    return [t.with_shape(dims)]


@op("Flatten", attrs={"axis": AttrSpec(int, 1)})
def _flatten(ctx: InferContext) -> list[Type]:
    """``input`` as a matrix [d_0·…·d_(axis-1), d_axis·…·d_n]; axis is in [-rank, rank]."""
    t = ctx.tensor(0)
    if t.shape is None:
        return [t.with_shape([UNKNOWN, UNKNOWN])]
    rank, axis = len(t.shape), ctx.attr("axis")
    axis = normalize_axis(axis, rank, f"{t}", error=ctx.error, allow_end=True)
    return [t.with_shape([product(t.shape[:axis]), product(t.shape[axis:])])]
