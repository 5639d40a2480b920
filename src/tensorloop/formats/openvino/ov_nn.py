"""OpenVINO convolution, pooling, normalisation, resize and quantisation layers read as core ops:
one converter per layer type, at every opset version OpenVINO's converters write. The writer's
emitters for them are in ``write_nn.py``.

AdaptiveAvgPool/AdaptiveMaxPool and DeformableConvolution are read in ``ov_misc.py``,
BinaryConvolution in ``ov_numeric.py``. Interpolate's area, bilinear_pillow and bicubic_pillow
modes, and its linear mode with antialias, are errors."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...ir.graph import Value
from ...tensor.dtypes import DType
from .convert import LayerContext, converter
from .inputs import (
    check_auto_broadcast,
    const_ints,
    has_input,
    int_vector,
    normalized_axes,
    scalar_const,
    type_of,
)

__all__: list[str] = []

_AUTO_PADS = {
    "explicit": "NOTSET",
    "notset": "NOTSET",
    "same_upper": "SAME_UPPER",
    "same_lower": "SAME_LOWER",
    "valid": "VALID",
}


def _static_dims(ctx: LayerContext, value: Value, what: str) -> list[int]:
    shape = type_of(ctx, value).shape
    if shape is None or not all(isinstance(d, int) for d in shape):
        raise ctx.error(f"{what} needs a static shape, got {type_of(ctx, value)}")
    return [int(d) for d in shape]


def _spatial_rank(ctx: LayerContext, x: Value) -> int:
    t = type_of(ctx, x)
    if t.rank is None or t.rank < 3:
        raise ctx.error(f"expected data of (N, C, D1, ...) with a known rank, got {t}")
    return t.rank - 2


def _spatial_sizes(ctx: LayerContext, x: Value) -> list[int] | None:
    shape = type_of(ctx, x).shape
    if shape is None or not all(isinstance(d, int) for d in shape[2:]):
        return None
    return [int(d) for d in shape[2:]]


def _ints_n(ctx: LayerContext, key: str, n: int, fill: int | None = None) -> list[int]:
    if fill is not None and not ctx.has_attr(key):
        return [fill] * n
    values = ctx.ints_attr(key)
    if len(values) != n:
        raise ctx.error(f"attribute '{key}' is {values}: expected {n} values (spatial rank)")
    return values


def _window(ctx: LayerContext, n: int, pads_default: int | None = None) -> dict[str, Any]:
    """strides / dilations / pads / auto_pad as the core ops' attributes."""
    auto = _AUTO_PADS[ctx.choice_attr("auto_pad", tuple(_AUTO_PADS), "explicit")]
    attrs: dict[str, Any] = {"strides": _ints_n(ctx, "strides", n, 1), "auto_pad": auto}
    if auto == "NOTSET":
        begin = _ints_n(ctx, "pads_begin", n, pads_default)
        end = _ints_n(ctx, "pads_end", n, pads_default)
        if any(p < 0 for p in begin + end):
            raise ctx.error(f"negative pads {begin} / {end} are not supported")
        attrs["pads"] = begin + end
    return attrs


# -- convolutions ----------------------------------------------------------------------------------
def _grouped_weights(ctx: LayerContext, w: Value, transpose: bool) -> tuple[Value, int]:
    """OpenVINO's (G, A, B, k...) group weights as ONNX's (G*A, B, k...), and G."""
    dims = _static_dims(ctx, w, "the grouped weights")
    if len(dims) < 4:
        raise ctx.error(f"grouped weights must be (G, ..., k...), got {dims}")
    del transpose  # both layouts merge the first two dims
    merged = ctx.em.op("Reshape", [w, ctx.em.ints([dims[0] * dims[1], *dims[2:]])])
    return merged, dims[0]


def _conv(ctx: LayerContext, grouped: bool) -> list[Value]:
    x = ctx.input(0)
    n = _spatial_rank(ctx, x)
    w, group = _grouped_weights(ctx, ctx.input(1), False) if grouped else (ctx.input(1), 1)
    attrs = {**_window(ctx, n), "dilations": _ints_n(ctx, "dilations", n, 1), "group": group}
    return [ctx.em.op("Conv", [x, w], attrs)]


@converter("Convolution")
def _convolution(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    return _conv(ctx, grouped=False)


@converter("GroupConvolution")
def _group_convolution(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    return _conv(ctx, grouped=True)


def _backprop(ctx: LayerContext, inputs: list[Value | None], grouped: bool) -> list[Value]:
    x = ctx.input(0)
    n = _spatial_rank(ctx, x)
    w, group = _grouped_weights(ctx, ctx.input(1), True) if grouped else (ctx.input(1), 1)
    strides = _ints_n(ctx, "strides", n, 1)
    dilations = _ints_n(ctx, "dilations", n, 1)
    extra = _ints_n(ctx, "output_padding", n, 0)
    auto = _AUTO_PADS[ctx.choice_attr("auto_pad", tuple(_AUTO_PADS), "explicit")]
    attrs: dict[str, Any] = {
        "strides": strides,
        "dilations": dilations,
        "group": group,
        "output_padding": extra,
    }
    given = has_input(inputs, 2)
    if not given:  # the full result cropped by the pads; same_* crops nothing without a shape
        pads = _window(ctx, n)["pads"] if auto == "NOTSET" else [0] * (2 * n)
        return [ctx.em.op("ConvTranspose", [x, w], {**attrs, "pads": pads})]
    # The output shape sets the crops: the begin one is pads_begin (explicit), 0 (valid) or half
    # the total (same_*, the odd one at the begin for same_upper); the end one takes the rest.
    sizes = _spatial_sizes(ctx, x)
    kernel = _static_dims(ctx, w, "the weights")[2:]
    if sizes is None:
        raise ctx.error("an output shape needs static spatial input dims")
    out = const_ints(ctx, 2, "output_shape")
    if len(out) != n:
        raise ctx.error(f"output_shape {out} has {len(out)} values, expected {n}")
    explicit = _window(ctx, n)["pads"][:n] if auto == "NOTSET" else [0] * n
    begins, ends = [], []
    for i in range(n):
        full = strides[i] * (sizes[i] - 1) + (kernel[i] - 1) * dilations[i] + 1 + extra[i]
        total = full - out[i]
        begin = {"SAME_UPPER": total - total // 2, "SAME_LOWER": total // 2}.get(auto, explicit[i])
        if total < 0 or begin > total:
            raise ctx.error(
                f"output_shape {out} does not fit the full result of {full} on spatial axis {i}"
            )
        begins.append(begin)
        ends.append(total - begin)
    return [ctx.em.op("ConvTranspose", [x, w], {**attrs, "pads": begins + ends})]


@converter("ConvolutionBackpropData")
def _convolution_backprop(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    return _backprop(ctx, inputs, grouped=False)


@converter("GroupConvolutionBackpropData")
def _group_convolution_backprop(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    return _backprop(ctx, inputs, grouped=True)


# -- pooling ---------------------------------------------------------------------------------------
def _pool_attrs(
    ctx: LayerContext, x: Value, n: int, dilated: bool, average: bool
) -> dict[str, Any]:
    kernel = _ints_n(ctx, "kernel", n)
    attrs: dict[str, Any] = {**_window(ctx, n, 0), "kernel_shape": kernel}
    dilations = _ints_n(ctx, "dilations", n, 1) if dilated else [1] * n
    attrs["dilations"] = dilations
    rounding = ctx.choice_attr("rounding_type", ("floor", "ceil", "ceil_torch"), "floor")
    if rounding == "floor" or attrs["auto_pad"] != "NOTSET":
        return attrs
    attrs["ceil_mode"] = 1
    if rounding == "ceil_torch":
        return attrs  # the core ops' ceil_mode drops a last window that starts in the end pad
    # OpenVINO's "ceil" keeps that window: where it would be dropped, grow the end pad instead.
    sizes = _spatial_sizes(ctx, x)
    if sizes is None:
        raise ctx.error("rounding_type 'ceil' needs static spatial input dims")
    pads = list(attrs["pads"])
    strides = attrs["strides"]
    grown, extended = False, list(pads)
    for i in range(n):
        span = (kernel[i] - 1) * dilations[i] + 1
        room = sizes[i] + pads[i] + pads[i + n] - span
        if room < 0:
            raise ctx.error(f"the window does not fit the padded input on spatial axis {i}")
        out = -(-room // strides[i]) + 1
        grown = grown or (out - 1) * strides[i] >= sizes[i] + pads[i]
        extended[i + n] += max(
            0, (out - 1) * strides[i] + span - (sizes[i] + pads[i] + pads[i + n])
        )
    if grown:
        attrs["pads"], attrs["ceil_mode"] = extended, 0
        attrs["grown"] = True
    return attrs


def _plane_starts(ctx: LayerContext, x: Value, n: int) -> Value:
    """(N, C, 1...) int64: where each (n, c) plane of ``x`` starts in ``x`` flattened."""
    dims = type_of(ctx, x).shape
    assert dims is not None
    if not all(isinstance(d, int) for d in dims):
        raise ctx.error(f"rounding_type 'ceil' with indices needs a static data shape, got {dims}")
    plane = math.prod(int(d) for d in dims[2:])
    starts = np.arange(int(dims[0]) * int(dims[1]), dtype=np.int64) * plane
    return ctx.em.const(starts.reshape(int(dims[0]), int(dims[1]), *[1] * n))


@converter("MaxPool")
def _max_pool(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    x = ctx.input(0)
    n = _spatial_rank(ctx, x)
    v1 = ctx.layer.version == "opset1"
    attrs = _pool_attrs(ctx, x, n, not v1, False)
    grown = attrs.pop("grown", False)
    values, index = ctx.em.ops("MaxPool", [x], attrs)
    dt = type_of(ctx, x).dtype
    if grown and dt.is_float:
        # A window wholly in the end pad gives the lowest finite value, as OpenVINO's does.
        # A window wholly in the end pad gives the lowest finite value and index 0, as
        # OpenVINO's does.
        lowest = scalar_const(ctx, np.finfo(dt.numpy).min, dt)
        empty = ctx.em.op("Less", [values, lowest])
        values = ctx.em.op("Max", [values, lowest])
        # OpenVINO's index there is the first of the window's (n, c) plane.
        index = ctx.em.op("Where", [empty, _plane_starts(ctx, x, n), index])
    if v1:
        return [values]
    rank = n + 2
    axis = ctx.int_attr("axis", 0)
    axis = normalized_axes(ctx, [axis], rank, "axis")[0]
    if axis > 0:  # the index counts from this axis on: drop the part of the axes before it
        dims = type_of(ctx, x).shape
        assert dims is not None
        tail = dims[axis:]
        if not all(isinstance(d, int) for d in tail):
            raise ctx.error(f"axis {axis} needs static dims from that axis on, got {dims}")
        size = math.prod(int(d) for d in tail)
        index = ctx.em.op("Mod", [index, ctx.em.ints(size)])
    to = ctx.element_type("index_element_type", "i64")
    if to is not DType.int64:
        index = ctx.em.op("Cast", [index], {"to": to})
    return [values, index]


@converter("AvgPool")
def _avg_pool(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    x = ctx.input(0)
    n = _spatial_rank(ctx, x)
    attrs = _pool_attrs(ctx, x, n, False, True)
    del attrs["dilations"]
    attrs.pop("grown", None)
    attrs["count_include_pad"] = int(not ctx.bool_attr("exclude-pad", False))
    return [ctx.em.op("AveragePool", [x], attrs)]


# -- normalisations --------------------------------------------------------------------------------
def _eps(ctx: LayerContext, x: Value, key: str = "eps") -> Value:
    return scalar_const(ctx, ctx.float_attr(key), type_of(ctx, x).dtype)


def _mvn(ctx: LayerContext, x: Value, axes: Value, variance: bool, inside: bool) -> Value:
    em = ctx.em
    keep = {"keepdims": 1, "noop_with_empty_axes": 1}
    centered = em.op("Sub", [x, em.op("ReduceMean", [x, axes], keep)])
    if not variance:
        return centered
    var = em.op("ReduceMean", [em.op("Mul", [centered, centered]), axes], keep)
    eps = _eps(ctx, x)
    if inside:
        std = em.op("Sqrt", [em.op("Add", [var, eps])])
    else:
        std = em.op("Add", [em.op("Sqrt", [var]), eps])
    return em.op("Div", [centered, std])


@converter("MVN")
def _mvn_layer(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    x = ctx.input(0)
    variance = ctx.bool_attr("normalize_variance", True)
    if ctx.layer.version != "opset6":  # MVN-1, which OpenVINO files under opset2
        rank = type_of(ctx, x).rank
        if ctx.has_attr("reduction_axes"):
            axes = ctx.ints_attr("reduction_axes")
        else:
            if rank is None:
                raise ctx.error("MVN-1 needs data of a known rank")
            axes = list(range(1 if ctx.bool_attr("across_channels", False) else 2, rank))
        return [_mvn(ctx, x, ctx.em.ints(axes), variance, inside=True)]
    mode = ctx.choice_attr("eps_mode", ("inside_sqrt", "outside_sqrt"))
    axes_v = int_vector(ctx, 1, "axes")
    return [_mvn(ctx, x, axes_v, variance, inside=mode == "inside_sqrt")]


@converter("NormalizeL2")
def _normalize_l2(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    em = ctx.em
    x = ctx.input(0)
    mode = ctx.choice_attr("eps_mode", ("add", "max"))
    keep = {"keepdims": 1, "noop_with_empty_axes": 1}
    total = em.op("ReduceSum", [em.op("Mul", [x, x]), int_vector(ctx, 1, "axes")], keep)
    total = em.op("Add" if mode == "add" else "Max", [total, _eps(ctx, x)])
    return [em.op("Div", [x, em.op("Sqrt", [total])])]


@converter("GRN")
def _grn(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    em = ctx.em
    x = ctx.input(0)
    total = em.op("ReduceSum", [em.op("Mul", [x, x]), em.ints([1])], {"keepdims": 1})
    norm = em.op("Sqrt", [em.op("Add", [total, _eps(ctx, x, "bias")])])
    return [em.op("Div", [x, norm])]


@converter("LRN")
def _lrn(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    em = ctx.em
    x = ctx.input(0)
    t = type_of(ctx, x)
    if t.rank is None:
        raise ctx.error(f"LRN needs data of a known rank, got {t}")
    axes = sorted(set(normalized_axes(ctx, const_ints(ctx, 1, "axes"), t.rank, "axes")))
    size = ctx.int_attr("size")
    alpha, beta, bias = (ctx.float_attr(k) for k in ("alpha", "beta", "bias"))
    if axes == [1] and t.rank >= 3 and size % 2:
        return [em.op("LRN", [x], {"size": size, "alpha": alpha, "beta": beta, "bias": bias})]
    if not axes:
        raise ctx.error("LRN with no axes is not supported")
    # The window reaches (size - 1) // 2 either side (an even size is one short of it, where the
    # core LRN would reach one further after). Sum the squares over it along each listed axis:
    # an AveragePool that counts its pads, over x² with the other axes moved in front (and unit
    # axes before them, to two) as its batch and channel axes, so that OpenVINO's pools (at most
    # three spatial axes) can run it; alpha / size^len(axes) * sum == alpha * (k / size)^len *
    # mean.
    half = (size - 1) // 2
    k = 2 * half + 1
    others = [a for a in range(t.rank) if a not in axes]
    perm = others + axes
    lead = list(range(max(0, 2 - len(others))))
    spatial = t.rank + len(lead) - 2
    kernel = [1] * (spatial - len(axes)) + [k] * len(axes)
    pads = ([0] * (spatial - len(axes)) + [half] * len(axes)) * 2
    squares = em.op("Mul", [x, x])
    if perm != sorted(perm):
        squares = em.op("Transpose", [squares], {"perm": perm})
    if lead:
        squares = em.op("Unsqueeze", [squares, em.ints(lead)])
    mean = em.op(
        "AveragePool", [squares], {"kernel_shape": kernel, "pads": pads, "count_include_pad": 1}
    )
    if lead:
        mean = em.op("Squeeze", [mean, em.ints(lead)])
    if perm != sorted(perm):
        mean = em.op("Transpose", [mean], {"perm": [perm.index(a) for a in range(t.rank)]})
    dt = t.dtype
    factor = scalar_const(ctx, alpha * (k / size) ** len(axes), dt)
    scale = em.op("Add", [scalar_const(ctx, bias, dt), em.op("Mul", [mean, factor])])
    return [em.op("Div", [x, em.op("Pow", [scale, scalar_const(ctx, beta, dt)])])]


@converter("BatchNormInference")
def _batch_norm(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    order = (2, 0, 1, 3, 4) if ctx.layer.version == "opset1" else (0, 1, 2, 3, 4)
    values = [ctx.input(i) for i in order]
    outs = ctx.em.ops("BatchNormalization", values, {"epsilon": ctx.float_attr("epsilon")})
    return [outs[0]]


@converter("GroupNormalization")
def _group_norm(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    attrs = {"num_groups": ctx.int_attr("num_groups"), "epsilon": ctx.float_attr("epsilon")}
    return [ctx.em.op("GroupNormalization", [ctx.input(i) for i in range(3)], attrs)]


# -- quantisation and data movement ----------------------------------------------------------------
@converter("FakeQuantize")
def _fake_quantize(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    em = ctx.em
    x, il, ih, ol, oh = (ctx.input(i) for i in range(5))
    check_auto_broadcast(ctx, [x, il, ih, ol, oh])
    dt = type_of(ctx, x).dtype
    if not dt.is_float:
        raise ctx.error(f"FakeQuantize of {type_of(ctx, x)} is not supported")
    levels = ctx.int_attr("levels")
    if levels < 2:
        raise ctx.error(f"attribute 'levels' is {levels}, expected at least 2")
    steps = scalar_const(ctx, levels - 1, dt)
    q = em.op("Div", [em.op("Sub", [x, il]), em.op("Sub", [ih, il])])
    q = em.op("Round", [em.op("Mul", [q, steps])])
    y = em.op("Add", [em.op("Mul", [em.op("Div", [q, steps]), em.op("Sub", [oh, ol])]), ol])
    low = em.op("LessOrEqual", [x, em.op("Min", [il, ih])])
    high = em.op("Greater", [x, em.op("Max", [il, ih])])
    y = em.op("Where", [high, oh, y])
    return [em.op("Where", [low, ol, y])]


def _block_mode(ctx: LayerContext) -> str:
    mode = ctx.choice_attr("mode", ("blocks_first", "depth_first"))
    return "DCR" if mode == "blocks_first" else "CRD"


def _blocks(op: str) -> Any:
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


# -- resize ----------------------------------------------------------------------------------------
_INTERPOLATE_MODES = {
    "nearest": "nearest",
    "linear_onnx": "linear",
    "cubic": "cubic",
    "linear": "linear",
}
_COORDINATE_MODES = (
    "half_pixel",
    "pytorch_half_pixel",
    "asymmetric",
    "tf_half_pixel_for_nn",
    "align_corners",
)
_NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


@converter("Interpolate")
def _interpolate(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    x = ctx.input(0)
    t = type_of(ctx, x)
    if t.rank is None:
        raise ctx.error(f"Interpolate needs data of a known rank, got {t}")
    rank = t.rank
    if ctx.layer.version == "opset1":
        # As OpenVINO reads Interpolate-1: target sizes, nearest_mode 'simple', and asymmetric
        # coordinates unless align_corners (or linear over other axes than the spatial ones).
        mode = ctx.choice_attr("mode", ("nearest", "linear", "cubic", "area"))
        if mode == "area":
            raise ctx.error("mode 'area' is not supported (no core op computes it exactly)")
        if ctx.bool_attr("antialias", False):
            raise ctx.error("Interpolate-1 with antialias is not supported")
        calc, values_at, coeff = "sizes", 1, -0.75
        nearest = "simple" if mode == "nearest" else "round_prefer_floor"
        axes = normalized_axes(ctx, ctx.ints_attr("axes"), rank, "axes")
        ctm = "asymmetric"
        if ctx.bool_attr("align_corners", False):
            ctm = "align_corners"
        elif mode == "linear" and not (rank in (4, 5) and axes == list(range(2, rank))):
            ctm = "half_pixel"  # OpenVINO's linear is asymmetric over all spatial axes only
    else:
        mode = ctx.choice_attr(
            "mode",
            ("nearest", "linear", "linear_onnx", "cubic", "bilinear_pillow", "bicubic_pillow"),
        )
        if mode not in _INTERPOLATE_MODES:
            raise ctx.error(f"mode '{mode}' is not supported (no core op computes it exactly)")
        if mode == "linear" and ctx.bool_attr("antialias", False):
            raise ctx.error("mode 'linear' with antialias is not supported (its filter differs)")
        calc = ctx.choice_attr("shape_calculation_mode", ("sizes", "scales"))
        ctm = ctx.choice_attr("coordinate_transformation_mode", _COORDINATE_MODES, "half_pixel")
        nearest = ctx.choice_attr("nearest_mode", (*_NEAREST_MODES, "simple"), "round_prefer_floor")
        coeff = ctx.float_attr("cube_coeff", -0.75)
        v4 = ctx.layer.version == "opset4"
        values_at = (1 if calc == "sizes" else 2) if v4 else 1
        axes_at = 3 if v4 else 2
        axes = (
            normalized_axes(ctx, const_ints(ctx, axes_at, "axes"), rank, "axes")
            if has_input(inputs, axes_at)
            else list(range(rank))
        )
    begin = ctx.ints_attr("pads_begin", "")
    end = ctx.ints_attr("pads_end", "")
    pads = [*(begin + [0] * rank)[:rank], *(end + [0] * rank)[:rank]]
    if any(pads):
        if any(p < 0 for p in pads):
            raise ctx.error(f"negative pads {begin} / {end} are not supported")
        x = ctx.em.op("Pad", [x, ctx.em.ints(pads)])
    attrs: dict[str, Any] = {
        "mode": _INTERPOLATE_MODES[mode],
        "coordinate_transformation_mode": ctm,
        "nearest_mode": nearest,
        "cubic_coeff_a": coeff,
        "axes": axes,
    }
    simple = mode == "nearest" and nearest == "simple"
    if calc == "scales" and not simple and ctm != "align_corners":
        scales = ctx.em.op("Cast", [ctx.input(values_at)], {"to": DType.float32})
        return [ctx.em.op("Resize", [x, None, scales], attrs)]
    if calc == "sizes" and not simple:
        sizes = ctx.em.op("Cast", [int_vector(ctx, values_at, "sizes")], {"to": DType.int64})
        return [ctx.em.op("Resize", [x, None, None, sizes], attrs)]
    return [_static_resize(ctx, x, calc, values_at, attrs, simple)]


def _static_resize(
    ctx: LayerContext, x: Value, calc: str, values_at: int, attrs: dict[str, Any], simple: bool
) -> Value:
    """Resize by constant scales or sizes over static dims. OpenVINO aligns the corners of the
    output it computes, floor(dim * scale) long, where Resize would align those of dim * scale:
    sizes say the same to both. Nearest mode 'simple' rounds up along the axes it shrinks and
    down along the others: one Resize for each (nearest is separable)."""
    axes: list[int] = attrs["axes"]
    dims = type_of(ctx, x).shape
    given = ctx.const(values_at)
    if given is None or dims is None or not all(isinstance(dims[a], int) for a in axes):
        raise ctx.error(
            "nearest_mode 'simple' and align_corners with scales need constant scales or sizes "
            "and static dims"
        )
    values = given.reshape(-1).tolist()
    if len(values) != len(axes):
        raise ctx.error(f"{calc} {values} must hold one value per axis of {axes}")
    sizes = [int(v) for v in values]
    scales = [float(np.float32(v)) for v in values]
    if calc == "scales":
        sizes = [
            math.floor(np.float32(f) * np.float32(dims[a]))
            for a, f in zip(axes, values, strict=True)
        ]
    else:
        scales = [v / int(dims[a]) if dims[a] else 1.0 for a, v in zip(axes, sizes, strict=True)]
    groups = [(list(range(len(axes))), attrs["nearest_mode"])]
    if simple:
        groups = [
            ([i for i, s in enumerate(scales) if s < 1], "ceil"),
            ([i for i, s in enumerate(scales) if s >= 1], "floor"),
        ]
    y = x
    keep_scales = calc == "scales" and attrs["coordinate_transformation_mode"] != "align_corners"
    for picked, rounding in groups:
        if not picked:
            continue
        part = {**attrs, "axes": [axes[i] for i in picked], "nearest_mode": rounding}
        if keep_scales:
            factors = ctx.em.const(np.array([scales[i] for i in picked], np.float32))
            y = ctx.em.op("Resize", [y, None, factors], part)
        else:
            y = ctx.em.op("Resize", [y, None, None, ctx.em.ints([sizes[i] for i in picked])], part)
    return y
