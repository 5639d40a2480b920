"""OpenVINO image layers read as core ops: Interpolate, GridSample, Col2Im, patches, colours.

Interpolate (as Resize), GridSample, Col2Im, ExtractImagePatches and the NV12/I420 colour
conversions; one converter per layer type, at every opset version OpenVINO's converters write.

Interpolate's Pillow modes are Resize with half_pixel coordinates, antialias and
exclude_outside (the filter widened by the shrink factor, its weights renormalized over the
taps on the input), at the scale input / output; an image of 8- or 16-bit integers is
resampled one axis at a time in f32, each pass rounded half away from zero and saturated, as
Pillow does. Linear mode with antialias is Resize with antialias and exclude_outside where some
axis shrinks and none grows, and plain Resize where none shrinks; the other modes ignore
antialias, as the spec's algorithm and OpenVINO's reference and CPU plugin do (the Pillow modes
antialias anyway). Interpolate-1's area mode is an error: no spec defines it and the CPU plugin
does not run it."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...ir.graph import Value
from ...tensor.dtypes import DType
from .convert import Converter, LayerContext, converter
from .inputs import (
    const_ints,
    has_input,
    int_vector,
    normalized_axes,
    reshape,
    scalar_const,
    static_dims,
    static_slice,
    type_of,
)

__all__: list[str] = []

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
            raise ctx.error(
                "mode 'area' is not supported: OpenVINO's spec defines no algorithm for it and "
                "its CPU plugin does not run Interpolate-1 in that mode"
            )
        calc, values_at, coeff = "sizes", 1, -0.75
        nearest = "simple" if mode == "nearest" else "round_prefer_floor"
        axes = normalized_axes(ctx, ctx.ints_attr("axes"), rank, "axes")
        ctm = "asymmetric"
        if ctx.bool_attr("align_corners", False):
            ctm = "align_corners"
        elif mode == "linear" and not (rank in (4, 5) and axes == list(range(2, rank))):
            ctm = "half_pixel"  # OpenVINO's linear is asymmetric over all spatial axes only
    else:
        modes: tuple[str, ...] = ("nearest", "linear", "linear_onnx", "cubic")
        if ctx.layer.version != "opset4":
            modes += tuple(_PILLOW_MODES)
        mode = ctx.choice_attr("mode", modes)
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
    if mode in _PILLOW_MODES:
        return [_pillow(ctx, x, mode, calc, values_at, axes, coeff)]
    attrs: dict[str, Any] = {
        "mode": _INTERPOLATE_MODES[mode],
        "coordinate_transformation_mode": ctm,
        "nearest_mode": nearest,
        "cubic_coeff_a": coeff,
        "axes": axes,
    }
    if mode == "linear" and ctx.bool_attr("antialias", False):
        attrs.update(_linear_antialias(ctx, x, calc, values_at, axes, ctm))
    simple = mode == "nearest" and nearest == "simple"
    if calc == "scales" and not simple and ctm != "align_corners":
        given = ctx.const(values_at)
        scales = (
            ctx.em.op("Cast", [ctx.input(values_at)], {"to": DType.float32})
            if given is None
            else ctx.em.const(given.astype(np.float32).reshape(-1))
        )
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


_PILLOW_MODES = {"bilinear_pillow": "linear", "bicubic_pillow": "cubic"}


def _axis_scales(
    ctx: LayerContext, x: Value, calc: str, values_at: int, axes: list[int]
) -> list[float] | None:
    """The scale of each axis (output / input dim), or None where it is known only when running."""
    given, dims = ctx.const(values_at), type_of(ctx, x).shape
    if given is None:
        return None
    values = given.reshape(-1).tolist()
    if len(values) != len(axes):
        raise ctx.error(f"{calc} {values} must hold one value per axis of {axes}")
    if calc == "scales":
        return [float(np.float32(v)) for v in values]
    if dims is None or not all(isinstance(dims[a], int) and dims[a] for a in axes):
        return None
    return [int(v) / int(dims[a]) for a, v in zip(axes, values, strict=True)]


def _linear_antialias(
    ctx: LayerContext, x: Value, calc: str, values_at: int, axes: list[int], ctm: str
) -> dict[str, Any]:
    """Resize's attributes for OpenVINO's linear mode with antialias. Where any axis shrinks,
    OpenVINO widens every axis's triangle to 1 / scale and renormalizes its weights over the
    taps on the input: Resize's antialias with exclude_outside, unless an axis also grows (its
    triangle OpenVINO narrows, which no Resize computes)."""
    scales = _axis_scales(ctx, x, calc, values_at, axes)
    if scales is None:
        raise ctx.error(
            "mode 'linear' with antialias needs constant scales, or constant sizes over static "
            "dims, to tell which axes shrink"
        )
    if not any(s < 1 for s in scales):
        return {}
    if any(s > 1 for s in scales):
        raise ctx.error(
            f"mode 'linear' with antialias and scales {scales}: OpenVINO narrows the filter of "
            "the growing axes to 1 / scale, which no core op computes"
        )
    dims = list(type_of(ctx, x).shape or [])
    if ctm == "align_corners" and calc == "scales":
        # Corners align on floor(dim * scale) cells while the filter widens by 1 / scale: one
        # Resize says both only where the scale divides evenly.
        for a, s in zip(axes, scales, strict=True):
            d = dims[a] if a < len(dims) else None
            if not isinstance(d, int) or not float(np.float32(s) * np.float32(d)).is_integer():
                raise ctx.error(
                    f"mode 'linear' with antialias, align_corners and scale {s} on axis {a} of "
                    f"{type_of(ctx, x)}: the scale must divide the axis evenly"
                )
    return {"antialias": 1, "exclude_outside": 1}


def _pillow_sizes(
    ctx: LayerContext, x: Value, calc: str, values_at: int, axes: list[int]
) -> list[int] | Value:
    """The output dims along ``axes``: the sizes, or floor(scale * dim) in f32; a list where
    constants and static dims tell them."""
    em, dims = ctx.em, type_of(ctx, x).shape
    given = ctx.const(values_at)
    if given is not None and len(given.reshape(-1)) != len(axes):
        raise ctx.error(
            f"{calc} {given.reshape(-1).tolist()} must hold one value per axis of {axes}"
        )
    if calc == "sizes":
        if given is not None:
            return [int(v) for v in given.reshape(-1)]
        return em.op("Cast", [int_vector(ctx, values_at, "sizes")], {"to": DType.int64})
    if given is not None and dims is not None and all(isinstance(dims[a], int) for a in axes):
        scales = given.reshape(-1).tolist()
        return [
            math.floor(np.float32(s) * np.float32(dims[a]))
            for a, s in zip(axes, scales, strict=True)
        ]
    shape = em.op("Cast", [em.op("Shape", [x])], {"to": DType.float32})
    picked = em.op("Gather", [shape, em.ints(axes)], {"axis": 0})
    scales_v = em.op("Cast", [ctx.input(values_at)], {"to": DType.float32})
    product = em.op("Floor", [em.op("Mul", [picked, scales_v])])
    return em.op("Cast", [product], {"to": DType.int64})


def _pillow(
    ctx: LayerContext,
    x: Value,
    mode: str,
    calc: str,
    values_at: int,
    axes: list[int],
    coeff: float,
) -> Value:
    """bilinear_pillow / bicubic_pillow over the (H, W) ``axes``: Pillow's separable resampling
    at scale input / output (whatever the scales say), the filter widened by that factor when
    shrinking, its weights renormalized over the taps on the input. A float image is one
    Resize; an integer image is resampled W first, then H, in f32 (as the CPU plugin; ONNX
    Runtime has no f64 Resize), each pass rounded half away from zero and saturated to the
    image's type, as OpenVINO's reference and CPU plugin do."""
    em = ctx.em
    if not 1 <= len(axes) <= 2 or len(set(axes)) != len(axes):
        raise ctx.error(f"mode '{mode}' resamples the (H, W) axes only, got axes {axes}")
    dt = type_of(ctx, x).dtype
    if not (dt.is_float or (dt.is_int and dt.numpy.itemsize <= 2)):
        # The passes run in f32: within rounding of the spec's f64 for values of up to 16
        # bits, not for wider integers.
        raise ctx.error(f"mode '{mode}' resamples floats and integers of 8 or 16 bits, got {dt}")
    sizes = _pillow_sizes(ctx, x, calc, values_at, axes)
    attrs: dict[str, Any] = {
        "mode": _PILLOW_MODES[mode],
        "coordinate_transformation_mode": "half_pixel",
        "cubic_coeff_a": coeff,
        "antialias": 1,
        "exclude_outside": 1,
    }
    if dt.is_float:
        given = em.ints(sizes) if isinstance(sizes, list) else sizes
        return em.op("Resize", [x, None, None, given], {**attrs, "axes": axes})
    info = np.iinfo(dt.numpy)
    lo, hi = (scalar_const(ctx, v, DType.float32) for v in (info.min, info.max))
    half = scalar_const(ctx, 0.5, DType.float32)
    y = em.op("Cast", [x], {"to": DType.float32})
    for i in reversed(range(len(axes))):
        if isinstance(sizes, list):
            size = em.ints([sizes[i]])
        else:
            size = em.op("Gather", [sizes, em.ints([i])], {"axis": 0})
        y = em.op("Resize", [y, None, None, size], {**attrs, "axes": [axes[i]]})
        away = em.op("Floor", [em.op("Add", [em.op("Abs", [y]), half])])
        y = em.op("Clip", [em.op("Mul", [em.op("Sign", [y]), away]), lo, hi])
    return em.op("Cast", [y], {"to": dt})


# -- sampling --------------------------------------------------------------------------------------
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


# -- patches ---------------------------------------------------------------------------------------
@converter("ExtractImagePatches")
def _extract_image_patches(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    """One strided slice of the (padded) image per patch tap, concatenated on the channel axis
    tap-major: channel (ki * kw + kj) * C + c."""
    em = ctx.em
    x = ctx.input(0)
    dims = static_dims(ctx, x, "ExtractImagePatches")
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
            parts.append(static_slice(ctx, padded, starts, stops, [2, 3], strides))
    return [parts[0] if len(parts) == 1 else em.op("Concat", parts, {"axis": 1})]


# -- colour conversion -----------------------------------------------------------------------------
def _upsample2(ctx: LayerContext, plane: Value, dims: list[int]) -> Value:
    """[N, h, w, c] -> [N, 2h, 2w, c], each value repeated over its 2 x 2 block."""
    em = ctx.em
    n, h, w, c = dims
    grown = em.op("Expand", [reshape(ctx, plane, [n, h, 1, w, 1, c]), em.ints([1, 1, 2, 1, 2, 1])])
    return reshape(ctx, grown, [n, 2 * h, 2 * w, c])


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
    first = static_dims(ctx, ctx.input(0), "the image")
    if len(first) != 4 or first[3] != 1:
        raise ctx.error(f"planes must be (N, H, W, 1), got {first}")
    n, rows, w = first[:3]
    if ctx.num_inputs() == 1:
        if rows % 3 or (rows // 3 * 2) % 2 or w % 2:
            raise ctx.error(f"a single-plane image needs H * 3/2 rows and even H and W: {first}")
        h = rows // 3 * 2
        x = ctx.input(0)
        y = static_slice(ctx, x, [0], [h], [1])
        if planar == "nv12":
            uv = reshape(ctx, static_slice(ctx, x, [h], [rows], [1]), [n, h // 2, w // 2, 2])
            planes = [static_slice(ctx, uv, [i], [i + 1], [3]) for i in (0, 1)]
        else:
            quarter = h // 2 * w // 2
            flat = reshape(ctx, static_slice(ctx, x, [h], [rows], [1]), [n, 2 * quarter])
            planes = [
                reshape(ctx, static_slice(ctx, flat, [i * quarter], [(i + 1) * quarter], [1]),
                         [n, h // 2, w // 2, 1])
                for i in (0, 1)
            ]  # fmt: skip
    else:
        h = rows
        y = ctx.input(0)
        if planar == "nv12":
            uv = ctx.input(1)
            planes = [static_slice(ctx, uv, [i], [i + 1], [3]) for i in (0, 1)]
        else:
            planes = [ctx.input(1), ctx.input(2)]
    if h % 2 or w % 2:
        raise ctx.error(f"the image's height {h} and width {w} must be even")
    u, v = (_upsample2(ctx, p, [n, h // 2, w // 2, 1]) for p in planes)
    return [_yuv_to_rgb(ctx, y, u, v, bgr)]


def _colour_converter(layout: str, bgr: bool) -> Converter:
    return lambda ctx, inputs: _colour(ctx, inputs, layout, bgr=bgr)


for _type, (_layout, _bgr) in {
    "NV12toRGB": ("nv12", False),
    "NV12toBGR": ("nv12", True),
    "I420toRGB": ("i420", False),
    "I420toBGR": ("i420", True),
}.items():
    converter(_type)(_colour_converter(_layout, _bgr))
