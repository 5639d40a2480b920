"""Convolutions: Conv, ConvInteger, QLinearConv, DeformConv, ConvTranspose, CausalConvWithState."""

from __future__ import annotations

from ..ir.opdef import AttrSpec, InferContext, op
from ..tensor.dtypes import DType
from ..tensor.types import UNKNOWN, Dim, TensorType, Type
from .common import expect, reported
from .window import (
    INTS,
    check_dim,
    kernel_shape,
    per_channel,
    spatial_rank,
    transpose_out_shape,
    windowed,
)


def _conv_shape(ctx: InferContext, x: TensorType, w: TensorType) -> list[Dim] | None:
    """Check Conv-like X and W (and group) and give the output shape."""
    group = ctx.attr("group")
    if group < 1:
        raise ctx.error(f"group must be at least 1, got {group}")
    if x.shape is not None and w.shape is not None:
        if len(w.shape) != len(x.shape):
            raise ctx.error(f"W of {w} must have the rank of X of {x}")
        c, cg = x.shape[1], w.shape[1]
        if isinstance(c, int) and isinstance(cg, int) and c != cg * group:
            raise ctx.error(f"X has {c} channels but W takes {cg} per group x {group} groups")
    m = UNKNOWN if w.shape is None else w.shape[0]
    if isinstance(m, int) and m % group:
        raise ctx.error(f"W's {m} output channels do not split into {group} groups")
    n = None if x.shape is None else len(x.shape) - 2
    return windowed(ctx, x, m, kernel_shape(ctx, w, n))


_CONV_ATTRS = {
    "auto_pad": AttrSpec(str, "NOTSET"),
    "dilations": AttrSpec(INTS, None),
    "group": AttrSpec(int, 1),
    "kernel_shape": AttrSpec(INTS, None),
    "pads": AttrSpec(INTS, None),
    "strides": AttrSpec(INTS, None),
}


@op("Conv", inputs=(2, 3), attrs=_CONV_ATTRS)
def _conv(ctx: InferContext) -> list[Type]:
    """N-D cross-correlation of X (N, C, D1...) with W (M, C/group, k1...), plus the optional
    per-output-channel bias B. Channels split into ``group`` independent groups; pads lists the
    begins then the ends of the spatial axes (auto_pad SAME_*/VALID computes them instead);
    dilations spread the kernel's taps apart."""
    x, w = expect(ctx, 0, "float"), expect(ctx, 1, "float")
    ctx.same_dtype(*[i for i in range(len(ctx)) if ctx.has(i)])
    shape = _conv_shape(ctx, x, w)
    if ctx.has(2):
        per_channel(ctx, 2, UNKNOWN if shape is None else shape[1])
    return [x.with_shape(shape)]


@op("ConvInteger", inputs=(2, 4), attrs=_CONV_ATTRS)
def _conv_integer(ctx: InferContext) -> list[Type]:
    """Conv of 8-bit integers, each shifted by its zero point first (a scalar for x; a scalar
    or one per output channel for w), accumulated exactly into int32."""
    x, w = _eight_bit(ctx, 0), _eight_bit(ctx, 1)
    for zero_point, base in ((2, 0), (3, 1)):
        if ctx.has(zero_point):
            ctx.same_dtype(zero_point, base)
    return [TensorType(DType.int32, _conv_shape(ctx, x, w))]


def _eight_bit(ctx: InferContext, index: int) -> TensorType:
    t = ctx.tensor(index)
    if t.dtype not in (DType.int8, DType.uint8):
        raise ctx.error(f"input #{index}: expected an int8 or uint8 tensor, got {t}")
    return t


@op("QLinearConv", inputs=(8, 9), attrs=_CONV_ATTRS)
def _qlinear_conv(ctx: InferContext) -> list[Type]:
    """Quantized Conv: x and w dequantize as (q - zero_point) * scale (w's scale and zero point
    may be per output channel), the int32 bias B is in units of x_scale * w_scale, and the result
    requantizes to y_scale / y_zero_point, rounding half to even and saturating."""
    x, w, yz = _eight_bit(ctx, 0), _eight_bit(ctx, 3), _eight_bit(ctx, 7)
    for i in (1, 4, 6):
        if ctx.tensor(i).dtype != DType.float32:
            raise ctx.error(f"input #{i}: a scale must be float32, got {ctx.tensor(i)}")
    for zero_point, base in ((2, 0), (5, 3)):
        ctx.same_dtype(zero_point, base)
    if ctx.has(8) and ctx.tensor(8).dtype != DType.int32:
        raise ctx.error(f"input #8: the bias must be int32, got {ctx.tensor(8)}")
    return [TensorType(yz.dtype, _conv_shape(ctx, x, w))]


@op(
    "DeformConv",
    inputs=(3, 5),
    attrs={
        "dilations": AttrSpec(INTS, None),
        "group": AttrSpec(int, 1),
        "kernel_shape": AttrSpec(INTS, None),
        "offset_group": AttrSpec(int, 1),
        "pads": AttrSpec(INTS, None),
        "strides": AttrSpec(INTS, None),
        "bilinear_interpolation_pad": AttrSpec(int, 1),
    },
)
def _deform_conv(ctx: InferContext) -> list[Type]:
    """Conv whose taps sample X at positions moved by ``offset`` (N, offset_group * k1*...*kn
    * n, o1...; per group, per tap, one shift per spatial axis), read by multilinear interpolation
    and scaled by the optional ``mask`` (default ones); B is the bias. bilinear_interpolation_pad
    1 (ONNX's op): the corners outside X read zeros. 0 (OpenVINO's default, which ONNX lacks): a
    sample outside [0, size) on any axis reads 0; one inside reads its corners clamped onto X,
    so a sample past the last pixel of an axis reads that pixel."""
    x, w = expect(ctx, 0, "float"), expect(ctx, 1, "float")
    ctx.same_dtype(*[i for i in range(len(ctx)) if ctx.has(i)])
    if ctx.attr("offset_group") < 1:
        raise ctx.error(f"offset_group must be at least 1, got {ctx.attr('offset_group')}")
    if ctx.attr("bilinear_interpolation_pad") not in (0, 1):
        pad = ctx.attr("bilinear_interpolation_pad")
        raise ctx.error(f"bilinear_interpolation_pad must be 0 or 1, got {pad}")
    shape = _conv_shape(ctx, x, w)
    if ctx.has(3):
        per_channel(ctx, 3, UNKNOWN if shape is None else shape[1])
    return [x.with_shape(shape)]


_TRANSPOSE_ATTRS = {
    **_CONV_ATTRS,
    "output_padding": AttrSpec(INTS, None),
    "output_shape": AttrSpec(INTS, None),
}


@op("ConvTranspose", inputs=(2, 3), attrs=_TRANSPOSE_ATTRS)
def _conv_transpose(ctx: InferContext) -> list[Type]:
    """The gradient of Conv with respect to its input: X (N, C, D1...) with W (C, M/group, k1...)
    gives (N, M, ...) of stride * (D - 1) + output_padding + dilated kernel span - pads along each
    axis; output_shape (or auto_pad SAME_*: D * stride) fixes the size and implies the pads."""
    x, w = expect(ctx, 0, "float"), expect(ctx, 1, "float")
    ctx.same_dtype(*[i for i in range(len(ctx)) if ctx.has(i)])
    group = ctx.attr("group")
    if group < 1:
        raise ctx.error(f"group must be at least 1, got {group}")
    m: Dim = UNKNOWN
    if w.shape is not None:
        m = w.shape[1] * group if isinstance(w.shape[1], int) else UNKNOWN
    if x.shape is not None and w.shape is not None:
        if len(w.shape) != len(x.shape):
            raise ctx.error(f"W of {w} must have the rank of X of {x}")
        check_dim(ctx, "W's first dim (X's channels)", w.shape[0], x.shape[1])
    if ctx.has(2):
        per_channel(ctx, 2, m)
    n = spatial_rank(ctx, x)
    if n is None or x.shape is None:
        return [x.with_shape(None)]
    kernel = kernel_shape(ctx, w, n)
    sizes = x.shape[2:]
    if kernel is None or not all(isinstance(d, int) for d in sizes):
        return [x.with_shape([x.shape[0], m, *[UNKNOWN] * n])]
    with reported(ctx):
        geo = transpose_out_shape(ctx.attrs, kernel, [int(d) for d in sizes])
    return [x.with_shape([x.shape[0], m, *[g[0] for g in geo]])]


@op("CausalConvWithState", inputs=(2, 4), attrs={"activation": AttrSpec(str, "none")})
def _causal_conv(ctx: InferContext) -> list[Type]:
    """Depthwise causal 1-D convolution of input (B, C, L) with weight (C, 1, k): the input is
    prefixed by past_state (B, C, k-1; zeros if absent), each output position sees itself and
    the k-1 before it, plus the optional bias (C), then activation 'silu'/'swish' (x * sigmoid(x))
    or 'none'. present_state is the last k-1 positions of the prefixed input."""
    x, w = expect(ctx, 0, "float", rank=3), expect(ctx, 1, "float", rank=3)
    ctx.same_dtype(*[i for i in range(len(ctx)) if ctx.has(i)])
    if ctx.attr("activation") not in ("none", "silu", "swish"):
        raise ctx.error(f"activation must be none, silu or swish, got {ctx.attr('activation')!r}")
    b, c = (UNKNOWN, UNKNOWN) if x.shape is None else x.shape[:2]
    k: Dim = UNKNOWN
    if w.shape is not None:
        check_dim(ctx, "weight's first dim (channels)", w.shape[0], c)
        check_dim(ctx, "weight's second dim", w.shape[1], 1)
        k = w.shape[2]
        if isinstance(k, int) and k < 1:
            raise ctx.error(f"weight of {w}: the kernel size must be at least 1")
    state: list[Dim] = [b, c, k - 1 if isinstance(k, int) else UNKNOWN]
    if ctx.has(2):
        per_channel(ctx, 2, c)
    if ctx.has(3):
        past = expect(ctx, 3, "float", rank=3)
        if past.shape is not None:
            for got, want in zip(past.shape, state, strict=True):
                check_dim(ctx, f"past_state of {past} vs (B, C, k-1)", got, want)
            state = [s if isinstance(s, int) else p for s, p in zip(state, past.shape, strict=True)]
    return [x, x.with_shape(state)]
