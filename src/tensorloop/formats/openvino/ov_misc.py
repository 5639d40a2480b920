"""OpenVINO remaining tensor (space/batch shuffles, adaptive pooling, grid sampling, attention,
colour conversion, CTC, segment) layers read as core ops: one converter per layer type, at every
opset version OpenVINO's converters write."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ...ir.graph import Value
from ...tensor.dtypes import DType
from .convert import LayerContext, converter
from .inputs import const_ints, has_input, normalized_axes, type_of

__all__: list[str] = []


def _static_dims(ctx: LayerContext, value: Value, what: str) -> list[int]:
    shape = type_of(ctx, value).shape
    if shape is None or not all(isinstance(d, int) for d in shape):
        raise ctx.error(f"{what} needs a static shape, got {type_of(ctx, value)}")
    return [int(d) for d in shape]


def _reshape(ctx: LayerContext, x: Value, dims: Sequence[int]) -> Value:
    return ctx.em.op("Reshape", [x, ctx.em.ints(list(dims))])


def _slice(
    ctx: LayerContext,
    x: Value,
    starts: Sequence[int],
    ends: Sequence[int],
    axes: Sequence[int],
    steps: Sequence[int] | None = None,
) -> Value:
    em = ctx.em
    args = [x, em.ints(list(starts)), em.ints(list(ends)), em.ints(list(axes))]
    if steps is not None:
        args.append(em.ints(list(steps)))
    return em.op("Slice", args)


# -- channel and space/batch shuffles --------------------------------------------------------------
@converter("ShuffleChannels")
def _shuffle_channels(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    x = ctx.input(0)
    dims = _static_dims(ctx, x, "ShuffleChannels")
    (axis,) = normalized_axes(ctx, [ctx.int_attr("axis", 1)], len(dims), "axis")
    group = ctx.int_attr("group", 1)
    if group < 1 or dims[axis] % group:
        raise ctx.error(f"group {group} does not divide dim {dims[axis]} of axis {axis}")
    split = [*dims[:axis], group, dims[axis] // group, *dims[axis + 1 :]]
    perm = list(range(len(split)))
    perm[axis], perm[axis + 1] = axis + 1, axis
    shuffled = ctx.em.op("Transpose", [_reshape(ctx, x, split)], {"perm": perm})
    return [_reshape(ctx, shuffled, dims)]


def _block_spec(ctx: LayerContext, rank: int) -> list[list[int]]:
    specs = [const_ints(ctx, i, what) for i, what in ((1, "block_shape"), (2, "begin"), (3, "end"))]
    if any(len(s) != rank for s in specs):
        raise ctx.error(f"block_shape, begin and end must hold {rank} values, got {specs}")
    if any(b < 1 for b in specs[0]) or any(p < 0 for p in specs[1] + specs[2]):
        raise ctx.error(f"invalid block_shape {specs[0]} or pads/crops {specs[1]} {specs[2]}")
    return specs


@converter("SpaceToBatch")
def _space_to_batch(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    x = ctx.input(0)
    dims = _static_dims(ctx, x, "SpaceToBatch")
    rank = len(dims)
    block, begin, end = _block_spec(ctx, rank)
    padded = ctx.em.op("Pad", [x, ctx.em.ints(begin + end)])
    sizes = [d + b + e for d, b, e in zip(dims, begin, end, strict=True)]
    if any(s % b for s, b in zip(sizes, block, strict=True)):
        raise ctx.error(f"block_shape {block} does not divide the padded shape {sizes}")
    split: list[int] = [sizes[0]]
    for i in range(1, rank):
        split += [sizes[i] // block[i], block[i]]
    # [N, D1/b1, b1, ...] -> [b1, b2, ..., N, D1/b1, D2/b2, ...]
    perm = [2 * i for i in range(1, rank)] + [0] + [2 * i - 1 for i in range(1, rank)]
    moved = ctx.em.op("Transpose", [_reshape(ctx, padded, split)], {"perm": perm})
    out = [sizes[0] * math.prod(block)] + [sizes[i] // block[i] for i in range(1, rank)]
    return [_reshape(ctx, moved, out)]


@converter("BatchToSpace")
def _batch_to_space(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    x = ctx.input(0)
    dims = _static_dims(ctx, x, "BatchToSpace")
    rank = len(dims)
    block, begin, end = _block_spec(ctx, rank)
    total = math.prod(block)
    if dims[0] % total:
        raise ctx.error(f"the batch {dims[0]} is not a multiple of prod(block_shape {block})")
    split = [*block[1:], dims[0] // total, *dims[1:]]
    # [b1, ..., bn, N', D1, ..., Dn] -> [N', D1, b1, D2, b2, ...]
    k = rank - 1
    perm = [k]
    for i in range(1, rank):
        perm += [k + i, i - 1]
    moved = ctx.em.op("Transpose", [_reshape(ctx, x, split)], {"perm": perm})
    sizes = [dims[0] // total] + [dims[i] * block[i] for i in range(1, rank)]
    merged = _reshape(ctx, moved, sizes)
    if any(b + e > s for b, e, s in zip(begin, end, sizes, strict=True)):
        raise ctx.error(f"crops {begin} / {end} exceed the shape {sizes}")
    ends = [s - e for s, e in zip(sizes, end, strict=True)]
    return [_slice(ctx, merged, begin, ends, list(range(rank)))]


# -- element types ---------------------------------------------------------------------------------
@converter("ConvertPromoteTypes")
def _convert_promote_types(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    """Both inputs cast to their common type: the one OpenVINO's shape inference settled on and
    wrote as the output ports' precision (its promotion rules, pytorch_scalar_promotion and
    promote_unsafe included, are applied when the IR is made)."""
    if len(ctx.layer.outputs) != 2:
        raise ctx.error(f"expected 2 output ports, got {len(ctx.layer.outputs)}")
    outs = []
    for i, port in enumerate(ctx.layer.outputs):
        v, to = ctx.input(i), ctx.port_type(port).dtype
        outs.append(v if type_of(ctx, v).dtype is to else ctx.em.op("Cast", [v], {"to": to}))
    return outs


# -- slices ----------------------------------------------------------------------------------------
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


# -- image ops -------------------------------------------------------------------------------------
@converter("GridSample")
def _grid_sample(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    mode = {"bilinear": "linear", "bicubic": "cubic", "nearest": "nearest"}[
        ctx.choice_attr("mode", ("bilinear", "bicubic", "nearest"), "bilinear")
    ]
    padding = ctx.choice_attr("padding_mode", ("zeros", "border", "reflection"), "zeros")
    attrs = {
        "mode": mode,
        "padding_mode": padding,
        "align_corners": int(ctx.bool_attr("align_corners", False)),
    }
    grid = ctx.input(1)
    if type_of(ctx, grid).dtype is not type_of(ctx, ctx.input(0)).dtype:
        grid = ctx.em.op("Cast", [grid], {"to": type_of(ctx, ctx.input(0)).dtype})
    return [ctx.em.op("GridSample", [ctx.input(0), grid], attrs)]


@converter("Col2Im")
def _col2im(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    em = ctx.em
    x = ctx.input(0)
    rank = type_of(ctx, x).rank
    if rank not in (2, 3):
        raise ctx.error(f"data must be [(N,) C*k, L], got {type_of(ctx, x)}")
    batched = x if rank == 3 else em.op("Unsqueeze", [x, em.ints([0])])
    attrs = {
        "strides": ctx.ints_attr("strides", "1,1"),
        "dilations": ctx.ints_attr("dilations", "1,1"),
        "pads": ctx.ints_attr("pads_begin", "0,0") + ctx.ints_attr("pads_end", "0,0"),
    }
    size = em.op("Cast", [ctx.input(1)], {"to": DType.int64})
    kernel = em.op("Cast", [ctx.input(2)], {"to": DType.int64})
    if ctx.const(1) is not None:
        size = em.ints(const_ints(ctx, 1, "output_size"))
    if ctx.const(2) is not None:
        kernel = em.ints(const_ints(ctx, 2, "kernel_size"))
    out = em.op("Col2Im", [batched, size, kernel], attrs)
    return [out if rank == 3 else em.op("Squeeze", [out, em.ints([0])])]
