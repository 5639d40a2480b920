"""OpenVINO shape layers read as core ops: reshapes, splits, broadcasts, pads, block moves.

Reshape, (Un)Squeeze, Concat, Transpose, ShapeOf, Split, VariadicSplit, Pad, Broadcast, Tile,
Range, Identity and the block rearrangements (DepthToSpace, SpaceToDepth, ShuffleChannels,
SpaceToBatch, BatchToSpace); one converter per layer type, at every opset version OpenVINO's
converters write."""

from __future__ import annotations

import math

from ...ir.graph import Value
from ...tensor.dtypes import DType
from .convert import Converter, LayerContext, converter
from .inputs import (
    cast_to,
    const_int,
    const_ints,
    has_input,
    index_type_attr,
    int_vector,
    normalized_axes,
    rank_of,
    reshape,
    scalar_input,
    static_dims,
    static_slice,
    type_of,
)

__all__: list[str] = []


@converter("Reshape")
def _reshape(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    special_zero = ctx.bool_attr("special_zero")
    shape = int_vector(ctx, 1, "shape")
    return [ctx.em.op("Reshape", [ctx.input(0), shape], {"allowzero": 0 if special_zero else 1})]


@converter("Squeeze")
def _squeeze(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    x = ctx.input(0)
    if not has_input(inputs, 1):
        return [ctx.em.op("Squeeze", [x])]
    if ctx.const(1) is None:
        return [ctx.em.op("Squeeze", [x, int_vector(ctx, 1, "axes")])]
    listed = const_ints(ctx, 1, "axes")
    if not listed:
        return [ctx.em.op("Squeeze", [x])]
    shape = type_of(ctx, x).shape
    if shape is None:
        return [ctx.em.op("Squeeze", [x, ctx.em.ints(listed)])]
    # Since 2024.3 an axis whose size is not 1 is skipped (a dynamic one counts as squeezable).
    normalized = normalized_axes(ctx, listed, len(shape), "axes")
    axes = sorted({a for a in normalized if not isinstance(shape[a], int) or shape[a] == 1})
    if not axes:
        return [ctx.em.op("Identity", [x])]
    return [ctx.em.op("Squeeze", [x, ctx.em.ints(axes)])]


@converter("Unsqueeze")
def _unsqueeze(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    x = ctx.input(0)
    if ctx.const(1) is None:
        return [ctx.em.op("Unsqueeze", [x, int_vector(ctx, 1, "axes")])]
    # OpenVINO ignores a repeated axis where ONNX rejects it.
    axes = list(dict.fromkeys(const_ints(ctx, 1, "axes")))
    return [ctx.em.op("Unsqueeze", [x, ctx.em.ints(axes)])]


@converter("Concat")
def _concat(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    values = [ctx.input(i) for i in range(len(inputs))]
    return [ctx.em.op("Concat", values, {"axis": ctx.int_attr("axis")})]


@converter("Transpose")
def _transpose(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    order = const_ints(ctx, 1, "order")
    # An empty order reverses the axes, as ONNX's absent perm does.
    return [ctx.em.op("Transpose", [ctx.input(0)], {"perm": order} if order else {})]


@converter("ShapeOf")
def _shape_of(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    to = index_type_attr(ctx)
    return [cast_to(ctx, ctx.em.op("Shape", [ctx.input(0)]), to)]


@converter("Split")
def _split(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    parts = ctx.int_attr("num_splits")
    if parts < 1:
        raise ctx.error(f"attribute 'num_splits' is {parts}, expected at least 1")
    x, axis = ctx.input(0), const_int(ctx, 1, "axis")
    shape = type_of(ctx, x).shape
    if shape is not None:
        dim = shape[normalized_axes(ctx, [axis], len(shape), "axis")[0]]
        # ONNX would make the last part smaller; OpenVINO requires equal parts.
        if isinstance(dim, int) and dim % parts:
            raise ctx.error(f"axis {axis} of size {dim} does not split into {parts} equal parts")
    return ctx.em.ops("Split", [x], {"axis": axis, "num_outputs": parts})


@converter("VariadicSplit")
def _variadic_split(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    em, x = ctx.em, ctx.input(0)
    rank = rank_of(ctx, 0, "data")
    axis = normalized_axes(ctx, [const_int(ctx, 1, "axis")], rank, "axis")[0]
    shape = type_of(ctx, x).shape
    size_here = None if shape is None else shape[axis]
    dim = size_here if isinstance(size_here, int) else None
    data = ctx.const(2)
    if data is not None:
        lengths = const_ints(ctx, 2, "split_lengths")
        if lengths.count(-1) > 1 or any(n < -1 for n in lengths):
            raise ctx.error(f"split_lengths {lengths} may hold one -1 and no other negative")
        if -1 not in lengths:
            sizes = em.ints(lengths)
        else:
            i, rest = lengths.index(-1), sum(n for n in lengths if n != -1)
            if dim is not None:
                if dim < rest:
                    raise ctx.error(f"split_lengths {lengths} exceed axis {axis} of size {dim}")
                sizes = em.ints([dim - rest if n == -1 else n for n in lengths])
            else:  # the -1 part's size is known only when running
                size = em.op("Shape", [x], {"start": axis, "end": axis + 1})
                part = em.op("Sub", [size, em.ints([rest])])
                sizes = em.op(
                    "Concat", [em.ints(lengths[:i]), part, em.ints(lengths[i + 1 :])], {"axis": 0}
                )
    else:
        # Computed lengths: the (at most one) -1 becomes the axis size minus the other lengths,
        # whose sum is the total plus one.
        lengths_v = cast_to(ctx, int_vector(ctx, 2, "split_lengths"), DType.int64)
        size = em.op("Shape", [x], {"start": axis, "end": axis + 1})
        others = em.op("Add", [em.op("ReduceSum", [lengths_v], {"keepdims": 1}), em.ints([1])])
        missing = em.op("Sub", [size, others])
        is_rest = em.op("Equal", [lengths_v, em.ints([-1])])
        sizes = em.op("Where", [is_rest, missing, lengths_v])
    return em.ops("Split", [x, sizes], {"axis": axis})


@converter("Pad")
def _pad(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    mode = ctx.choice_attr("pad_mode", ("constant", "edge", "reflect", "symmetric"), "constant")
    if mode == "symmetric":
        return [_symmetric_pad(ctx)]
    em = ctx.em
    begins = cast_to(ctx, int_vector(ctx, 1, "pads_begin"), DType.int64)
    ends = cast_to(ctx, int_vector(ctx, 2, "pads_end"), DType.int64)
    if ctx.const(1) is not None and ctx.const(2) is not None:  # the output shape stays known
        pads = em.ints(const_ints(ctx, 1, "pads_begin") + const_ints(ctx, 2, "pads_end"))
    else:
        pads = em.op("Concat", [begins, ends], {"axis": 0})
    ins: list[Value | None] = [ctx.input(0), pads]
    if mode == "constant" and has_input(inputs, 3):
        ins.append(scalar_input(ctx, 3, "pad_value"))
    return [em.op("Pad", ins, {"mode": mode})]


_BEFORE_START = -(2**63) + 1  # a Slice end before index 0 when stepping backwards


def _symmetric_pad(ctx: LayerContext) -> Value:
    """Pad mode "symmetric" (the edge element repeated: [3, 2, 1 | 1, 2, 3, 4 | 4, 3]), which core
    Pad lacks, as Slice and Concat per axis: the first ``begin`` elements reversed, the data, the
    last ``end`` reversed; a negative pad crops that side instead, the other side still mirroring
    the uncropped data, as OpenVINO does. A pad may not exceed its axis (OpenVINO's rule)."""
    em, x = ctx.em, ctx.input(0)
    t = type_of(ctx, x)
    begins, ends = const_ints(ctx, 1, "pads_begin"), const_ints(ctx, 2, "pads_end")
    if t.rank is None or len(begins) != t.rank or len(ends) != t.rank:
        raise ctx.error(f"pads_begin {begins} and pads_end {ends} must cover data {t}")
    dims = list(t.shape or [])
    y = x
    for axis, (b, e) in enumerate(zip(begins, ends, strict=True)):
        if not (b or e):
            continue
        d = dims[axis]
        if max(b, e) > 0 and not isinstance(d, int):
            raise ctx.error(f"pad_mode 'symmetric' needs axis {axis} of {t} to be static")
        if isinstance(d, int) and max(b, e) > d:
            raise ctx.error(f"pad_mode 'symmetric': pads {b} / {e} exceed axis {axis} of {t}")
        kept = static_slice(ctx, y, [max(-b, 0)], [e if e < 0 else 2**63 - 1], [axis])
        parts = [kept]
        if b > 0:
            parts.insert(0, static_slice(ctx, y, [b - 1], [_BEFORE_START], [axis], [-1]))
        if e > 0:
            parts.append(static_slice(ctx, y, [-1], [-e - 1], [axis], [-1]))
        y = parts[0] if len(parts) == 1 else em.op("Concat", parts, {"axis": axis})
    return y


@converter("Broadcast")
def _broadcast(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    em, x = ctx.em, ctx.input(0)
    # Broadcast-1 writes its explicit mode as "none" (the spec says "explicit").
    mode = ctx.choice_attr("mode", ("numpy", "bidirectional", "explicit", "none"), "numpy")
    target = int_vector(ctx, 1, "target_shape")
    # numpy mode broadcasts one way only; for the inputs it admits, that agrees with Expand.
    if mode in ("explicit", "none"):
        if not has_input(inputs, 2):
            raise ctx.error("mode 'explicit' needs input #2 (axes_mapping)")
        mapping = const_ints(ctx, 2, "axes_mapping")
        t = type_of(ctx, target)
        n = t.shape[0] if t.shape is not None and len(t.shape) == 1 else None
        if not isinstance(n, int):
            raise ctx.error(f"mode 'explicit' needs target_shape of a known length, got {t}")
        if len(mapping) != rank_of(ctx, 0, "data"):
            raise ctx.error(f"axes_mapping {mapping} does not name one axis per data dim")
        if mapping != sorted(set(mapping)) or any(not 0 <= a < n for a in mapping):
            raise ctx.error(
                f"axes_mapping {mapping} must be increasing axes of the rank-{n} output"
            )
        missing = [k for k in range(n) if k not in mapping]
        if missing:
            x = em.op("Unsqueeze", [x, em.ints(missing)])
    return [em.op("Expand", [x, target])]


@converter("Range")
def _range(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    bounds = [scalar_input(ctx, i, w) for i, w in enumerate(("start", "stop", "step"))]
    if ctx.has_attr("output_type"):
        # Range-4 casts start, stop and step to output_type before it counts or steps.
        to = ctx.element_type("output_type")
        if to is DType.bool:
            raise ctx.error("attribute 'output_type' is boolean, expected a numeric type")
        bounds = [cast_to(ctx, v, to) for v in bounds]
    return [ctx.em.op("Range", bounds)]


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


@converter("Identity")
def _identity(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    return [ctx.em.op("Identity", [ctx.input(0)])]


# -- block rearrangements --------------------------------------------------------------------------
def _block_mode(ctx: LayerContext) -> str:
    mode = ctx.choice_attr("mode", ("blocks_first", "depth_first"))
    return "DCR" if mode == "blocks_first" else "CRD"


def _blocks(op: str) -> Converter:
    def convert(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
        x = ctx.input(0)
        bs = ctx.int_attr("block_size", 1)
        if bs < 1:
            raise ctx.error(f"attribute 'block_size' is {bs}, expected at least 1")
        mode = _block_mode(ctx)
        if type_of(ctx, x).rank == 4:
            return [ctx.em.op(op, [x], {"blocksize": bs, "mode": mode})]
        return [_blocks_nd(ctx, x, bs, mode == "DCR", op == "SpaceToDepth")]

    return convert


def _blocks_nd(ctx: LayerContext, x: Value, bs: int, blocks_first: bool, to_depth: bool) -> Value:
    """DepthToSpace / SpaceToDepth over any number K of spatial axes: a Reshape that splits the
    blocks out, a Transpose that moves them, and a Reshape that merges them back."""
    em = ctx.em
    t = type_of(ctx, x)
    shape = t.shape
    if shape is None or len(shape) < 3 or not all(isinstance(d, int) for d in shape[1:]):
        raise ctx.error(f"data of {t} needs a known rank of at least 3 and static dims after N")
    c, dims = int(shape[1]), [int(d) for d in shape[2:]]
    k = len(dims)
    if to_depth:
        if any(d % bs for d in dims):
            raise ctx.error(f"the spatial dims {dims} must be multiples of block_size {bs}")
        split = [0, c] + [v for d in dims for v in (d // bs, bs)]
        blocks = [3 + 2 * i for i in range(k)]
        grid = [2 + 2 * i for i in range(k)]
        perm = [0, *blocks, 1, *grid] if blocks_first else [0, 1, *blocks, *grid]
        merged = [0, c * bs**k, *[d // bs for d in dims]]
    else:
        if c % bs**k:
            raise ctx.error(f"the {c} channels must be a multiple of block_size^{k} = {bs**k}")
        depth = c // bs**k
        if blocks_first:
            split = [0, *[bs] * k, depth, *dims]
            perm = [0, k + 1, *[v for i in range(k) for v in (k + 2 + i, 1 + i)]]
        else:
            split = [0, depth, *[bs] * k, *dims]
            perm = [0, 1, *[v for i in range(k) for v in (k + 2 + i, 2 + i)]]
        merged = [0, depth, *[d * bs for d in dims]]
    y = em.op("Reshape", [x, em.ints(split)])
    y = em.op("Transpose", [y], {"perm": perm})
    return em.op("Reshape", [y, em.ints(merged)])


converter("DepthToSpace")(_blocks("DepthToSpace"))
converter("SpaceToDepth")(_blocks("SpaceToDepth"))


@converter("ShuffleChannels")
def _shuffle_channels(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    x = ctx.input(0)
    dims = static_dims(ctx, x, "ShuffleChannels")
    (axis,) = normalized_axes(ctx, [ctx.int_attr("axis", 1)], len(dims), "axis")
    group = ctx.int_attr("group", 1)
    if group < 1 or dims[axis] % group:
        raise ctx.error(f"group {group} does not divide dim {dims[axis]} of axis {axis}")
    split = [*dims[:axis], group, dims[axis] // group, *dims[axis + 1 :]]
    perm = list(range(len(split)))
    perm[axis], perm[axis + 1] = axis + 1, axis
    shuffled = ctx.em.op("Transpose", [reshape(ctx, x, split)], {"perm": perm})
    return [reshape(ctx, shuffled, dims)]


def _block_spec(ctx: LayerContext, layer: str) -> tuple[Value, list[int], list[list[int]]]:
    """The data (input #0, of a static shape), its dims, and block_shape, begin and end (inputs
    #1 to #3, one value per dim each)."""
    x = ctx.input(0)
    dims = static_dims(ctx, x, layer)
    rank = len(dims)
    specs = [const_ints(ctx, i, what) for i, what in ((1, "block_shape"), (2, "begin"), (3, "end"))]
    if any(len(s) != rank for s in specs):
        raise ctx.error(f"block_shape, begin and end must hold {rank} values, got {specs}")
    if any(b < 1 for b in specs[0]) or any(p < 0 for p in specs[1] + specs[2]):
        raise ctx.error(f"invalid block_shape {specs[0]} or pads/crops {specs[1]} {specs[2]}")
    return x, dims, specs


@converter("SpaceToBatch")
def _space_to_batch(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    x, dims, (block, begin, end) = _block_spec(ctx, "SpaceToBatch")
    rank = len(dims)
    padded = ctx.em.op("Pad", [x, ctx.em.ints(begin + end)])
    sizes = [d + b + e for d, b, e in zip(dims, begin, end, strict=True)]
    if any(s % b for s, b in zip(sizes, block, strict=True)):
        raise ctx.error(f"block_shape {block} does not divide the padded shape {sizes}")
    split: list[int] = [sizes[0]]
    for i in range(1, rank):
        split += [sizes[i] // block[i], block[i]]
    # [N, D1/b1, b1, ...] -> [b1, b2, ..., N, D1/b1, D2/b2, ...]
    perm = [2 * i for i in range(1, rank)] + [0] + [2 * i - 1 for i in range(1, rank)]
    moved = ctx.em.op("Transpose", [reshape(ctx, padded, split)], {"perm": perm})
    out = [sizes[0] * math.prod(block)] + [sizes[i] // block[i] for i in range(1, rank)]
    return [reshape(ctx, moved, out)]


@converter("BatchToSpace")
def _batch_to_space(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    x, dims, (block, begin, end) = _block_spec(ctx, "BatchToSpace")
    rank = len(dims)
    total = math.prod(block)
    if dims[0] % total:
        raise ctx.error(f"the batch {dims[0]} is not a multiple of prod(block_shape {block})")
    split = [*block[1:], dims[0] // total, *dims[1:]]
    # [b1, ..., bn, N', D1, ..., Dn] -> [N', D1, b1, D2, b2, ...]
    k = rank - 1
    perm = [k]
    for i in range(1, rank):
        perm += [k + i, i - 1]
    moved = ctx.em.op("Transpose", [reshape(ctx, x, split)], {"perm": perm})
    sizes = [dims[0] // total] + [dims[i] * block[i] for i in range(1, rank)]
    merged = reshape(ctx, moved, sizes)
    if any(b + e > s for b, e, s in zip(begin, end, sizes, strict=True)):
        raise ctx.error(f"crops {begin} / {end} exceed the shape {sizes}")
    ends = [s - e for s, e in zip(sizes, end, strict=True)]
    return [static_slice(ctx, merged, begin, ends, list(range(rank)))]
