"""OpenVINO neural-network layers read as core ops: convolutions, pooling, norms, attention.

Convolutions (grouped, transposed, deformable and binary), pooling (adaptive too), the
normalisations and ScaledDotProductAttention; one converter per layer type, at every opset version
OpenVINO's converters write.

DeformableConvolution (v1, v8) is DeformConv with its bilinear_interpolation_pad attribute (false:
samples off X read 0 and the others' corners are clamped onto X, which ONNX's op cannot say).

BinaryConvolution (mode xnor-popcount, weights usually a packed-bit ``u1`` constant) is a core
``Conv`` of ±1 values, whose sum over the window is the spec's 2 * popcount(xnor) - bits: a
weight bit 1 is 1, 0 is -1; an input above 0 is 1, else -1; the padding is 1 where ``pad_value``
is 1, else -1. The spec's inputs and pad values are 0 and 1; others binarize as the CPU plugin
binarizes them. The IR's bits run from the high bit of each byte down, as OpenVINO writes them
and its reference reads them (the CPU plugin reads them low to high, and leaves the padding out
of the count for pad_value 0: docs/openvino.md)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...ir.graph import Value
from ...tensor.dtypes import DType
from .convert import LayerContext, converter
from .inputs import (
    const_ints,
    float_input,
    has_input,
    int_vector,
    normalized_axes,
    scalar_const,
    static_dims,
    static_slice,
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


def _spatial_rank(ctx: LayerContext, x: Value, weights: Value | None = None, lead: int = 2) -> int:
    """The data's spatial rank: from its type, else (inside a body whose shapes the IR leaves
    open) from the weights', which have ``lead`` dims before the kernel's."""
    t = type_of(ctx, x)
    if t.rank is None and weights is not None:
        w = type_of(ctx, weights)
        if w.rank is not None and w.rank > lead:
            return w.rank - lead
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
    dims = static_dims(ctx, w, "the grouped weights")
    if len(dims) < 4:
        raise ctx.error(f"grouped weights must be (G, ..., k...), got {dims}")
    del transpose  # both layouts merge the first two dims
    merged = ctx.em.op("Reshape", [w, ctx.em.ints([dims[0] * dims[1], *dims[2:]])])
    return merged, dims[0]


def _conv(ctx: LayerContext, grouped: bool) -> list[Value]:
    x = ctx.input(0)
    n = _spatial_rank(ctx, x, ctx.input(1), 3 if grouped else 2)
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
    n = _spatial_rank(ctx, x, ctx.input(1), 3 if grouped else 2)
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
    kernel = static_dims(ctx, w, "the weights")[2:]
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


@converter("DeformableConvolution")
def _deformable_convolution(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    """DeformConv with OpenVINO's bilinear_interpolation_pad (opset 8; false in opset 1 and by
    default): true reads zeros around X, false reads 0 for samples off X and clamps the corners
    of the others onto it."""
    em = ctx.em
    x, offsets, w = ctx.input(0), ctx.input(1), ctx.input(2)
    rank = type_of(ctx, x).rank
    if rank is None or rank < 3:
        raise ctx.error(f"data must be (N, C, D1, ...), got {type_of(ctx, x)}")
    n = rank - 2
    kernel = static_dims(ctx, w, "the filters")[2:]
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
        "bilinear_interpolation_pad": int(ctx.bool_attr("bilinear_interpolation_pad", False)),
    }
    args: list[Value | None] = [x, w, offsets]
    if has_input(inputs, 3):
        args += [None, ctx.input(3)]
    return [em.op("DeformConv", args, attrs)]


def _binary_pads(
    ctx: LayerContext, x: Value, kernel: list[int], n: int
) -> tuple[list[int], list[int]]:
    """The begin and end pads of the spatial axes, worked out for auto_pad same_*/valid."""
    strides = ctx.ints_attr("strides")
    dilations = ctx.ints_attr("dilations")
    auto = ctx.choice_attr(
        "auto_pad", ("explicit", "notset", "same_upper", "same_lower", "valid"), "explicit"
    )
    if len(strides) != n or len(dilations) != n or any(v < 1 for v in strides + dilations):
        raise ctx.error(f"strides {strides} and dilations {dilations} need {n} values >= 1")
    if auto == "valid":
        return [0] * n, [0] * n
    if auto in ("explicit", "notset"):
        begin, end = ctx.ints_attr("pads_begin"), ctx.ints_attr("pads_end")
        if len(begin) != n or len(end) != n or any(p < 0 for p in begin + end):
            raise ctx.error(f"pads_begin {begin} and pads_end {end} need {n} values >= 0")
        return begin, end
    shape = type_of(ctx, x).shape
    sizes = None if shape is None else shape[2:]
    if sizes is None or not all(isinstance(d, int) for d in sizes):
        raise ctx.error(f"auto_pad {auto} needs static spatial dims, got {type_of(ctx, x)}")
    begin, end = [], []
    for size, k, s, d in zip(sizes, kernel, strides, dilations, strict=True):
        assert isinstance(size, int)
        total = max((math.ceil(size / s) - 1) * s + (k - 1) * d + 1 - size, 0)
        low = total // 2 if auto == "same_upper" else total - total // 2
        begin.append(low)
        end.append(total - low)
    return begin, end


def _signs(ctx: LayerContext, value: Value, dt: DType) -> Value:
    """1 where ``value`` is above 0 (true, for bools), else -1, as ``dt``."""
    em = ctx.em
    data = value.constant
    if data is not None:
        return em.const(np.where(np.asarray(data) > 0, 1, -1).astype(dt.numpy))
    t = type_of(ctx, value)
    above = (
        value if t.dtype is DType.bool else em.op("Greater", [value, scalar_const(ctx, 0, t.dtype)])
    )
    return em.op("Where", [above, scalar_const(ctx, 1, dt), scalar_const(ctx, -1, dt)])


@converter("BinaryConvolution")
def _binary_convolution(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    em = ctx.em
    x = float_input(ctx, 0, "data")
    t = type_of(ctx, x)
    mode = ctx.choice_attr("mode", ("xnor-popcount",))
    w = ctx.input(1)
    wt = type_of(ctx, w)
    if t.rank is None or t.rank < 3 or wt.shape is None or len(wt.shape) != t.rank:
        raise ctx.error(f"{mode} needs (N, C, D...) data and (M, C, k...) weights, got {t}, {wt}")
    if not all(isinstance(d, int) for d in wt.shape[2:]):
        raise ctx.error(f"the kernel needs static spatial dims, got {wt}")
    n = t.rank - 2
    kernel = [int(d) for d in wt.shape[2:]]
    begin, end = _binary_pads(ctx, x, kernel, n)
    signs = _signs(ctx, x, t.dtype)
    if any(begin + end):
        fill = 1 if ctx.float_attr("pad_value") == 1 else -1
        pads = em.ints([0, 0, *begin, 0, 0, *end])
        signs = em.op("Pad", [signs, pads, scalar_const(ctx, fill, t.dtype)])
    attrs = {
        "strides": ctx.ints_attr("strides"),
        "dilations": ctx.ints_attr("dilations"),
        "pads": [0] * (2 * n),
    }
    return [em.op("Conv", [signs, _signs(ctx, w, t.dtype)], attrs)]


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


def _adaptive_windows(size: int, out: int) -> list[tuple[int, int]]:
    return [((i * size) // out, -(-((i + 1) * size) // out)) for i in range(out)]


def _adaptive_setup(ctx: LayerContext) -> tuple[Value, list[int], list[int]]:
    x = ctx.input(0)
    dims = static_dims(ctx, x, "adaptive pooling")
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
            em.op(red, [static_slice(ctx, x, [b], [e], [axis]), em.ints([axis])], {"keepdims": 1})
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
        part = static_slice(
            ctx, x, [b for b, _ in bounds], [e for _, e in bounds], list(range(2, 2 + n))
        )
        part = em.op("Reshape", [part, em.ints([dims[0], dims[1], -1])])
        local = em.op("ArgMax", [part], {"axis": 2, "keepdims": 1})
        table = flat[tuple(slice(b, e) for b, e in bounds)].reshape(-1)
        picks.append(em.op("Gather", [em.const(table), local], {"axis": 0}))
    index = picks[0] if len(picks) == 1 else em.op("Concat", picks, {"axis": 2})
    index = em.op("Reshape", [index, em.ints([dims[0], dims[1], *out])])
    if to is not DType.int64:
        index = em.op("Cast", [index], {"to": to})
    return [values, index]


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
