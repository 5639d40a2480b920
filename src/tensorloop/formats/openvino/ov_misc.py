"""OpenVINO remaining tensor (space/batch shuffles, adaptive pooling, grid sampling, attention,
colour conversion, segment) layers read as core ops: one converter per layer type, at every
opset version OpenVINO's converters write.

Left unregistered: DeformableConvolution without bilinear_interpolation_pad (edge samples read the
edge pixel, which DeformConv cannot; rejected with an error), RandomUniform and Multinomial
(OpenVINO's generator keeps its state from one inference to the next: ov_numeric.py). The string
layers and SparseFillEmptyRows are read in ov_strings.py, GatherTree and the CTC layers in
ov_ctc.py, Inverse, FakeConvert and BinaryConvolution in ov_numeric.py."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from ...ir.graph import Value
from ...tensor.dtypes import DType
from .convert import LayerContext, converter
from .inputs import const_ints, has_input, normalized_axes, scalar_const, type_of

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


# -- deformable convolution ------------------------------------------------------------------------
@converter("DeformableConvolution")
def _deformable_convolution(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    """DeformConv, whose samples read zeros around X: OpenVINO's bilinear_interpolation_pad=true
    (opset 8). Without it (opset 1, and opset 8's default) samples within a pixel of the far edge
    read that edge pixel, which DeformConv cannot do: left unsupported."""
    if not ctx.bool_attr("bilinear_interpolation_pad", False):
        raise ctx.error(
            "bilinear_interpolation_pad=false (edge samples read the edge pixel) is not supported"
        )
    em = ctx.em
    x, offsets, w = ctx.input(0), ctx.input(1), ctx.input(2)
    rank = type_of(ctx, x).rank
    if rank is None or rank < 3:
        raise ctx.error(f"data must be (N, C, D1, ...), got {type_of(ctx, x)}")
    n = rank - 2
    kernel = _static_dims(ctx, w, "the filters")[2:]
    auto = ctx.choice_attr("auto_pad", ("explicit", "notset", "valid"), "explicit")
    pads = [0] * (2 * n)
    if auto != "valid":
        pads = ctx.ints_attr("pads_begin", ",".join(["0"] * n)) + ctx.ints_attr(
            "pads_end", ",".join(["0"] * n)
        )
    attrs = {
        "strides": ctx.ints_attr("strides", ",".join(["1"] * n)),
        "dilations": ctx.ints_attr("dilations", ",".join(["1"] * n)),
        "pads": pads,
        "kernel_shape": kernel,
        "group": ctx.int_attr("group", 1),
        "offset_group": ctx.int_attr("deformable_group", 1),
    }
    args: list[Value | None] = [x, w, offsets]
    if has_input(inputs, 3):
        args += [None, ctx.input(3)]
    return [em.op("DeformConv", args, attrs)]


# -- attention -------------------------------------------------------------------------------------
@converter("ScaledDotProductAttention")
def _sdpa(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    """softmax(Q @ K^T * scale + bias) @ V; bias -inf above the diagonal (causal), else from the
    mask (a bool mask: 0 where true, -inf where false; a float mask as it is)."""
    em = ctx.em
    q, k, v = ctx.input(0), ctx.input(1), ctx.input(2)
    tq, tk = type_of(ctx, q), type_of(ctx, k)
    dt = tq.dtype
    if tk.rank is None or tk.rank < 2 or tq.rank is None:
        raise ctx.error(f"query and key need known ranks of at least 2, got {tq} and {tk}")
    perm = [*range(tk.rank - 2), tk.rank - 1, tk.rank - 2]
    scores = em.op("MatMul", [q, em.op("Transpose", [k], {"perm": perm})])
    if has_input(inputs, 4):
        scale = em.op("Reshape", [ctx.input(4), em.ints([])])
        if type_of(ctx, scale).dtype is not dt:
            scale = em.op("Cast", [scale], {"to": dt})
    else:
        depth = em.op("Gather", [em.op("Shape", [q]), em.ints(-1)], {"axis": 0})
        size = em.op("Cast", [depth], {"to": dt})
        scale = em.op("Div", [scalar_const(ctx, 1, dt), em.op("Sqrt", [size])])
    scores = em.op("Mul", [scores, scale])
    zero, minus_inf = scalar_const(ctx, 0, dt), scalar_const(ctx, -np.inf, dt)
    if ctx.bool_attr("causal", False):
        length = em.op("Gather", [em.op("Shape", [q]), em.ints(-2)], {"axis": 0})
        span = em.op("Gather", [em.op("Shape", [k]), em.ints(-2)], {"axis": 0})
        z, one = em.const(np.int64(0)), em.const(np.int64(1))
        rows = em.op("Unsqueeze", [em.op("Range", [z, length, one]), em.ints([1])])
        cols = em.op("Range", [z, span, one])
        keep = em.op("LessOrEqual", [cols, rows])
        scores = em.op("Add", [scores, em.op("Where", [keep, zero, minus_inf])])
    elif has_input(inputs, 3):
        mask = ctx.input(3)
        if type_of(ctx, mask).dtype is DType.bool:
            mask = em.op("Where", [mask, zero, minus_inf])
        elif type_of(ctx, mask).dtype is not dt:
            mask = em.op("Cast", [mask], {"to": dt})
        scores = em.op("Add", [scores, mask])
    weights = em.op("Softmax", [scores], {"axis": -1})
    return [em.op("MatMul", [weights, v])]


# -- adaptive pooling ------------------------------------------------------------------------------
def _adaptive_windows(size: int, out: int) -> list[tuple[int, int]]:
    return [((i * size) // out, -(-((i + 1) * size) // out)) for i in range(out)]


def _adaptive_setup(ctx: LayerContext) -> tuple[Value, list[int], list[int]]:
    x = ctx.input(0)
    dims = _static_dims(ctx, x, "adaptive pooling")
    if len(dims) < 3:
        raise ctx.error(f"data must be (N, C, D1, ...), got {dims}")
    out = const_ints(ctx, 1, "output_shape")
    if len(out) != len(dims) - 2 or any(o < 1 for o in out):
        raise ctx.error(f"output_shape {out} does not fit data of {dims}")
    return x, dims, out


def _adaptive_values(
    ctx: LayerContext, x: Value, dims: list[int], out: list[int], red: str
) -> Value:
    """Window by window along each spatial axis in turn (both reductions are separable)."""
    em = ctx.em
    for axis in range(2, len(dims)):
        parts = [
            em.op(red, [_slice(ctx, x, [b], [e], [axis]), em.ints([axis])], {"keepdims": 1})
            for b, e in _adaptive_windows(dims[axis], out[axis - 2])
        ]
        x = parts[0] if len(parts) == 1 else em.op("Concat", parts, {"axis": axis})
    return x


@converter("AdaptiveAvgPool")
def _adaptive_avg_pool(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    x, dims, out = _adaptive_setup(ctx)
    return [_adaptive_values(ctx, x, dims, out, "ReduceMean")]


@converter("AdaptiveMaxPool")
def _adaptive_max_pool(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    """The maxima separably; each window's index (flat over the spatial dims, the first of ties)
    by ArgMax over the flattened window and a table of the window's flat positions."""
    em = ctx.em
    x, dims, out = _adaptive_setup(ctx)
    values = _adaptive_values(ctx, x, dims, out, "ReduceMax")
    to = ctx.element_type("index_element_type", "i64")
    spatial = dims[2:]
    n = len(spatial)
    flat = np.arange(math.prod(spatial), dtype=np.int64).reshape(spatial)
    windows = [_adaptive_windows(s, o) for s, o in zip(spatial, out, strict=True)]
    picks = []
    for at in np.ndindex(*out):
        bounds = [windows[i][at[i]] for i in range(n)]
        part = _slice(ctx, x, [b for b, _ in bounds], [e for _, e in bounds], list(range(2, 2 + n)))
        part = em.op("Reshape", [part, em.ints([dims[0], dims[1], -1])])
        local = em.op("ArgMax", [part], {"axis": 2, "keepdims": 1})
        table = flat[tuple(slice(b, e) for b, e in bounds)].reshape(-1)
        picks.append(em.op("Gather", [em.const(table), local], {"axis": 0}))
    index = picks[0] if len(picks) == 1 else em.op("Concat", picks, {"axis": 2})
    index = em.op("Reshape", [index, em.ints([dims[0], dims[1], *out])])
    if to is not DType.int64:
        index = em.op("Cast", [index], {"to": to})
    return [values, index]


# -- patches ---------------------------------------------------------------------------------------
@converter("ExtractImagePatches")
def _extract_image_patches(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    """One strided slice of the (padded) image per patch tap, concatenated on the channel axis
    tap-major: channel (ki * kw + kj) * C + c."""
    em = ctx.em
    x = ctx.input(0)
    dims = _static_dims(ctx, x, "ExtractImagePatches")
    if len(dims) != 4:
        raise ctx.error(f"image must be (N, C, H, W), got {dims}")
    sizes, strides, rates = (ctx.ints_attr(k) for k in ("sizes", "strides", "rates"))
    if not len(sizes) == len(strides) == len(rates) == 2:
        raise ctx.error(f"sizes {sizes}, strides {strides} and rates {rates} need 2 values each")
    auto = ctx.choice_attr("auto_pad", ("valid", "same_upper", "same_lower"), "valid")
    outs, begins, ends = [], [], []
    for i in range(2):
        span = (sizes[i] - 1) * rates[i] + 1
        if auto == "valid":
            o = max(0, (dims[2 + i] - span) // strides[i] + 1)
            total = 0
        else:
            o = -(-dims[2 + i] // strides[i])
            total = max(0, (o - 1) * strides[i] + span - dims[2 + i])
        begin = total // 2 if auto == "same_upper" else total - total // 2
        outs.append(o)
        begins.append(begin)
        ends.append(total - begin)
    if min(outs) < 1:
        return [em.op("Reshape", [x, em.ints([dims[0], dims[1] * math.prod(sizes), *outs])])]
    padded = x
    if any(begins + ends):
        padded = em.op("Pad", [x, em.ints([0, 0, *begins, 0, 0, *ends])])
    parts = []
    for ki in range(sizes[0]):
        for kj in range(sizes[1]):
            starts = [ki * rates[0], kj * rates[1]]
            stops = [s + (o - 1) * st + 1 for s, o, st in zip(starts, outs, strides, strict=True)]
            parts.append(_slice(ctx, padded, starts, stops, [2, 3], strides))
    return [parts[0] if len(parts) == 1 else em.op("Concat", parts, {"axis": 1})]


# -- segments --------------------------------------------------------------------------------------
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
    rest = _slice(ctx, em.op("Shape", [data]), [1], [t.rank], [0])
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


# -- colour conversion -----------------------------------------------------------------------------
def _upsample2(ctx: LayerContext, plane: Value, dims: list[int]) -> Value:
    """[N, h, w, c] -> [N, 2h, 2w, c], each value repeated over its 2 x 2 block."""
    em = ctx.em
    n, h, w, c = dims
    grown = em.op("Expand", [_reshape(ctx, plane, [n, h, 1, w, 1, c]), em.ints([1, 1, 2, 1, 2, 1])])
    return _reshape(ctx, grown, [n, 2 * h, 2 * w, c])


def _yuv_to_rgb(ctx: LayerContext, y: Value, u: Value, v: Value, bgr: bool) -> Value:
    em = ctx.em
    dt = type_of(ctx, y).dtype
    f32 = DType.float32

    def f(value: float) -> Value:
        return scalar_const(ctx, value, f32)

    c = em.op("Sub", [em.op("Cast", [y], {"to": f32}), f(16.0)])
    d = em.op("Sub", [em.op("Cast", [u], {"to": f32}), f(128.0)])
    e = em.op("Sub", [em.op("Cast", [v], {"to": f32}), f(128.0)])
    yc = em.op("Mul", [f(1.164), c])
    r = em.op("Add", [yc, em.op("Mul", [f(1.596), e])])
    g = em.op("Sub", [em.op("Sub", [yc, em.op("Mul", [f(0.391), d])]), em.op("Mul", [f(0.813), e])])
    b = em.op("Add", [yc, em.op("Mul", [f(2.018), d])])
    parts = []
    for ch in (b, g, r) if bgr else (r, g, b):
        ch = em.op("Clip", [ch, f(0.0), f(255.0)])
        if not dt.is_float:  # the CPU plugin rounds halves to even
            ch = em.op("Round", [ch])
        parts.append(ch if dt is f32 else em.op("Cast", [ch], {"to": dt}))
    return em.op("Concat", parts, {"axis": 3})


def _colour(ctx: LayerContext, inputs: list[Value | None], planar: str, bgr: bool) -> list[Value]:
    """NV12 (Y then interleaved UV at half resolution) or I420 (Y, U, V planes) images of
    [N, H, W, 1] planes, or one [N, H * 3 / 2, W, 1] plane, to [N, H, W, 3] RGB or BGR."""
    first = _static_dims(ctx, ctx.input(0), "the image")
    if len(first) != 4 or first[3] != 1:
        raise ctx.error(f"planes must be (N, H, W, 1), got {first}")
    n, rows, w = first[:3]
    if ctx.num_inputs() == 1:
        if rows % 3 or (rows // 3 * 2) % 2 or w % 2:
            raise ctx.error(f"a single-plane image needs H * 3/2 rows and even H and W: {first}")
        h = rows // 3 * 2
        x = ctx.input(0)
        y = _slice(ctx, x, [0], [h], [1])
        if planar == "nv12":
            uv = _reshape(ctx, _slice(ctx, x, [h], [rows], [1]), [n, h // 2, w // 2, 2])
            planes = [_slice(ctx, uv, [i], [i + 1], [3]) for i in (0, 1)]
        else:
            quarter = h // 2 * w // 2
            flat = _reshape(ctx, _slice(ctx, x, [h], [rows], [1]), [n, 2 * quarter])
            planes = [
                _reshape(ctx, _slice(ctx, flat, [i * quarter], [(i + 1) * quarter], [1]),
                         [n, h // 2, w // 2, 1])
                for i in (0, 1)
            ]  # fmt: skip
    else:
        h = rows
        y = ctx.input(0)
        if planar == "nv12":
            uv = ctx.input(1)
            planes = [_slice(ctx, uv, [i], [i + 1], [3]) for i in (0, 1)]
        else:
            planes = [ctx.input(1), ctx.input(2)]
    if h % 2 or w % 2:
        raise ctx.error(f"the image's height {h} and width {w} must be even")
    u, v = (_upsample2(ctx, p, [n, h // 2, w // 2, 1]) for p in planes)
    return [_yuv_to_rgb(ctx, y, u, v, bgr)]


def _colour_converter(
    layout: str, bgr: bool
) -> Callable[[LayerContext, list[Value | None]], list[Value]]:
    return lambda ctx, inputs: _colour(ctx, inputs, layout, bgr=bgr)


for _type, (_layout, _bgr) in {
    "NV12toRGB": ("nv12", False),
    "NV12toBGR": ("nv12", True),
    "I420toRGB": ("i420", False),
    "I420toBGR": ("i420", True),
}.items():
    converter(_type)(_colour_converter(_layout, _bgr))
