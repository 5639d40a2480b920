"""Neural-network ops: convolutions, pooling, normalizations, dropout and the losses."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..ir.opdef import AttrSpec, InferContext, op
from ..tensor.dtypes import DType
from ..tensor.types import UNKNOWN, Dim, TensorType, Type
from .common import expect, norm_axis, reported

INTS = (tuple, list)
FLOAT = (float, int)
AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")
_EPSILON = AttrSpec(FLOAT, 1e-5)


# --- Sliding-window geometry, shared by the type rules and the kernels ---------------------------


@dataclass(frozen=True)
class Window:
    """A window sliding over the n spatial axes; ``pads`` lists n begins then n ends."""

    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    pads: tuple[int, ...]
    auto_pad: str = "NOTSET"
    ceil_mode: bool = False

    def span(self, i: int) -> int:
        """How many input positions the dilated window covers along spatial axis ``i``."""
        return (self.kernel[i] - 1) * self.dilations[i] + 1

    def along(self, i: int, size: int) -> tuple[int, int, int]:
        """(output size, pad at the begin, pad at the end) along spatial axis ``i`` of ``size``.

        SAME_* pads so that the output has ceil(size / stride) entries, the odd pad going to the
        end (UPPER) or the begin (LOWER). With ceil_mode the last, partial window is kept unless
        it would start in the end padding.
        """
        s, span = self.strides[i], self.span(i)
        if self.auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            out = -(-size // s)
            return (out, *_split(max(0, (out - 1) * s + span - size), self.auto_pad))
        n = len(self.kernel)
        begin, end = (0, 0) if self.auto_pad == "VALID" else (self.pads[i], self.pads[i + n])
        room = size + begin + end - span
        if room < 0:
            raise ValueError(
                f"spatial axis {i}: the window spans {span} positions but the padded input has "
                f"only {size + begin + end}"
            )
        if not self.ceil_mode or self.auto_pad == "VALID":
            return room // s + 1, begin, end
        out = -(-room // s) + 1
        if (out - 1) * s >= size + begin:
            out -= 1
        return out, begin, end

    def transposed(
        self, i: int, size: int, output_padding: int, output_shape: int | None
    ) -> tuple[int, int, int]:
        """ConvTranspose's (output size, begin crop, end crop) along spatial axis ``i``: the
        full result has stride * (size - 1) + output_padding + span entries, cropped by the pads
        or, given output_shape (or SAME_*), by whatever leaves that size."""
        full = self.strides[i] * (size - 1) + output_padding + self.span(i)
        same = self.auto_pad in ("SAME_UPPER", "SAME_LOWER")
        if output_shape is None and not same:
            n = len(self.kernel)
            begin, end = (0, 0) if self.auto_pad == "VALID" else (self.pads[i], self.pads[i + n])
            if full - begin - end < 0:
                raise ValueError(f"spatial axis {i}: pads {begin}+{end} exceed the {full} outputs")
            return full - begin - end, begin, end
        out = size * self.strides[i] if output_shape is None else output_shape
        total = full - out
        if total < 0:
            # SAME with a kernel narrower than the stride keeps the full result (as onnxruntime
            # does); an output_shape past the full result reads zeros after it.
            return (full, 0, 0) if output_shape is None else (out, 0, total)
        return (out, *_split(total, self.auto_pad))


def _split(total: int, auto_pad: str) -> tuple[int, int]:
    """``total`` padding as (begin, end): halves, the odd one at the end for SAME_UPPER and at
    the begin otherwise."""
    half = total // 2
    return (half, total - half) if auto_pad == "SAME_UPPER" else (total - half, half)


def _ints_attr(attrs: Mapping[str, Any], key: str, n: int, fill: int) -> tuple[int, ...]:
    value = attrs.get(key)
    if value is None:
        return (fill,) * n
    got = tuple(int(v) for v in value)
    if len(got) != n:
        raise ValueError(f"{key} {list(got)} has {len(got)} values, expected {n}")
    return got


def window(attrs: Mapping[str, Any], kernel: Sequence[int]) -> Window:
    """The Window that the resolved attributes describe for a kernel of this shape (checked)."""
    n = len(kernel)
    strides = _ints_attr(attrs, "strides", n, 1)
    dilations = _ints_attr(attrs, "dilations", n, 1)
    pads = _ints_attr(attrs, "pads", 2 * n, 0)
    auto_pad = attrs.get("auto_pad", "NOTSET")
    if auto_pad not in AUTO_PADS:
        raise ValueError(f"auto_pad must be one of {', '.join(AUTO_PADS)}, got {auto_pad!r}")
    for key, values, low in (
        ("kernel_shape", tuple(kernel), 1),
        ("strides", strides, 1),
        ("dilations", dilations, 1),
    ):
        if any(v < low for v in values):
            raise ValueError(f"{key} {list(values)} must all be at least {low}")
    if any(p < 0 for p in pads):
        raise ValueError(f"pads {list(pads)} must not be negative")
    ceil = bool(attrs.get("ceil_mode", 0))
    return Window(tuple(kernel), strides, dilations, pads, auto_pad, ceil)


# --- Shared pieces of the type rules ----------------------------------------------------------


def _spatial_rank(ctx: InferContext, x: TensorType, what: str = "X") -> int | None:
    if x.shape is None:
        return None
    if len(x.shape) < 3:
        raise ctx.error(f"{what}: expected (N, C, D1, ...) with at least one spatial axis, got {x}")
    return len(x.shape) - 2


def _kernel_shape(ctx: InferContext, w: TensorType | None, n: int | None) -> list[int] | None:
    """The kernel's spatial shape: the kernel_shape attribute, else W's trailing dims."""
    given = ctx.attr("kernel_shape")
    if given is not None:
        k = [int(v) for v in given]
        if n is not None and len(k) != n:
            raise ctx.error(f"kernel_shape {k} has {len(k)} values, expected {n} (spatial rank)")
        if w is not None and w.shape is not None:
            for a, b in zip(k, w.shape[2:], strict=False):
                if isinstance(b, int) and a != b:
                    raise ctx.error(f"kernel_shape {k} does not match W of {w}")
        return k
    if w is None or w.shape is None or not all(isinstance(d, int) for d in w.shape[2:]):
        return None
    return [int(d) for d in w.shape[2:]]


def _windowed(
    ctx: InferContext, x: TensorType, channels: Dim, kernel: list[int] | None
) -> list[Dim] | None:
    """(N, channels, *spatial out) of a sliding-window op over ``x``, or None if rank unknown."""
    n = _spatial_rank(ctx, x)
    if n is None or x.shape is None:
        return None
    if kernel is None:
        return [x.shape[0], channels, *[UNKNOWN] * n]
    if len(kernel) != n:
        raise ctx.error(f"the kernel has {len(kernel)} spatial dims but {x} has {n}")
    with reported(ctx):
        win = window(ctx.attrs, kernel)
        out = [
            win.along(i, d)[0] if isinstance(d, int) else UNKNOWN for i, d in enumerate(x.shape[2:])
        ]
    return [x.shape[0], channels, *out]


def _check_dim(ctx: InferContext, what: str, got: Dim, want: Dim) -> None:
    if isinstance(got, int) and isinstance(want, int) and got != want:
        raise ctx.error(f"{what}: expected {want}, got {got}")


def _per_channel(ctx: InferContext, index: int, channels: Dim) -> TensorType:
    """Input ``index`` as a 1-D float tensor of one entry per channel."""
    t = expect(ctx, index, "float", rank=1)
    if t.shape is not None:
        _check_dim(ctx, f"input #{index} length (one per channel)", t.shape[0], channels)
    return t


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
    return _windowed(ctx, x, m, _kernel_shape(ctx, w, n))


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
        _per_channel(ctx, 2, UNKNOWN if shape is None else shape[1])
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
    },
)
def _deform_conv(ctx: InferContext) -> list[Type]:
    """Conv whose taps sample X at positions moved by ``offset`` (N, offset_group * k1*...*kn
    * n, o1...; per group, per tap, one shift per spatial axis), read by multilinear interpolation
    with zeros outside X, and scaled by the optional ``mask`` (default ones); B is the bias."""
    x, w = expect(ctx, 0, "float"), expect(ctx, 1, "float")
    ctx.same_dtype(*[i for i in range(len(ctx)) if ctx.has(i)])
    if ctx.attr("offset_group") < 1:
        raise ctx.error(f"offset_group must be at least 1, got {ctx.attr('offset_group')}")
    shape = _conv_shape(ctx, x, w)
    if ctx.has(3):
        _per_channel(ctx, 3, UNKNOWN if shape is None else shape[1])
    return [x.with_shape(shape)]


_TRANSPOSE_ATTRS = {
    **_CONV_ATTRS,
    "output_padding": AttrSpec(INTS, None),
    "output_shape": AttrSpec(INTS, None),
}


def transpose_out_shape(
    attrs: Mapping[str, Any], kernel: Sequence[int], sizes: Sequence[int]
) -> list[tuple[int, int, int]]:
    """ConvTranspose's (output size, begin crop, end crop) per spatial axis of ``sizes``."""
    n = len(kernel)
    win = window(attrs, kernel)
    extra = _ints_attr(attrs, "output_padding", n, 0)
    given = attrs.get("output_shape")
    if given is not None:
        given = [int(v) for v in given][-n:]
        if len(given) != n:
            raise ValueError(f"output_shape {list(given)} has fewer than {n} spatial values")
    return [
        win.transposed(i, sizes[i], extra[i], None if given is None else given[i]) for i in range(n)
    ]


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
        _check_dim(ctx, "W's first dim (X's channels)", w.shape[0], x.shape[1])
    if ctx.has(2):
        _per_channel(ctx, 2, m)
    n = _spatial_rank(ctx, x)
    if n is None or x.shape is None:
        return [x.with_shape(None)]
    kernel = _kernel_shape(ctx, w, n)
    sizes = x.shape[2:]
    if kernel is None or not all(isinstance(d, int) for d in sizes):
        return [x.with_shape([x.shape[0], m, *[UNKNOWN] * n])]
    with reported(ctx):
        geo = transpose_out_shape(ctx.attrs, kernel, [int(d) for d in sizes])
    return [x.with_shape([x.shape[0], m, *[g[0] for g in geo]])]


# --- Pooling --------------------------------------------------------------------------------------

_POOL_ATTRS = {
    "auto_pad": AttrSpec(str, "NOTSET"),
    "ceil_mode": AttrSpec(int, 0),
    "dilations": AttrSpec(INTS, None),
    "kernel_shape": AttrSpec(INTS),
    "pads": AttrSpec(INTS, None),
    "strides": AttrSpec(INTS, None),
}


def _pool(ctx: InferContext, kind: str) -> TensorType:
    x = expect(ctx, 0, kind)
    n = _spatial_rank(ctx, x)
    kernel = _kernel_shape(ctx, None, n)
    channels = UNKNOWN if x.shape is None else x.shape[1]
    return x.with_shape(_windowed(ctx, x, channels, kernel))


@op("AveragePool", attrs={**_POOL_ATTRS, "count_include_pad": AttrSpec(int, 0)})
def _average_pool(ctx: InferContext) -> list[Type]:
    """The mean of each window of X (N, C, D1...); pads count toward the divisor only with
    count_include_pad=1 (positions past the pads that ceil_mode adds never count)."""
    return [_pool(ctx, "float")]


@op("MaxPool", attrs={**_POOL_ATTRS, "storage_order": AttrSpec(int, 0)})
def _max_pool(ctx: InferContext) -> list[Type]:
    """The largest entry of each window of X (N, C, D1...), and its int64 index into X flattened
    (N, C, then the spatial axes row-major, or column-major with storage_order=1); the first
    of equal entries wins."""
    x = ctx.tensor(0)
    if not (x.dtype.is_float or x.dtype in (DType.int8, DType.uint8)):
        raise ctx.error(f"input #0: expected a floating-point, int8 or uint8 tensor, got {x}")
    y = _pool(ctx, "numeric")
    return [y, y.with_dtype(DType.int64)]


@op("LpPool", attrs={**_POOL_ATTRS, "p": AttrSpec(int, 2)})
def _lp_pool(ctx: InferContext) -> list[Type]:
    """The p-norm (sum |x|^p) ^ (1/p) of each window of X (N, C, D1...); pads are zeros."""
    return [_pool(ctx, "float")]


def _global_rule(meaning: str) -> Callable[[InferContext], list[Type]]:
    def rule(ctx: InferContext) -> list[Type]:
        x = expect(ctx, 0, "float")
        if x.shape is None:
            return [x]
        if len(x.shape) < 2:
            raise ctx.error(f"input #0: expected (N, C, ...), got {x}")
        return [x.with_shape([*x.shape[:2], *[1] * (len(x.shape) - 2)])]

    rule.__doc__ = f"The {meaning} over all spatial axes of X (N, C, D1...), kept as size 1."
    return rule


for _name, _attrs, _meaning in (
    ("GlobalAveragePool", {}, "mean"),
    ("GlobalMaxPool", {}, "maximum"),
    ("GlobalLpPool", {"p": AttrSpec(int, 2)}, "p-norm"),
):
    op(_name, attrs=_attrs)(_global_rule(_meaning))


@op(
    "MaxUnpool",
    inputs=(2, 3),
    attrs={
        "kernel_shape": AttrSpec(INTS),
        "pads": AttrSpec(INTS, None),
        "strides": AttrSpec(INTS, None),
    },
)
def _max_unpool(ctx: InferContext) -> list[Type]:
    """Zeros of MaxPool's input shape ((D - 1) * stride + kernel - pads per spatial axis, or the
    optional ``output_shape``) with each X entry put where its index in I points in the output
    flattened (as MaxPool's Indices count)."""
    x, i = expect(ctx, 0, "float"), expect(ctx, 1, "int")
    if i.dtype != DType.int64:
        raise ctx.error(f"input #1: expected int64 indices, got {i}")
    n = _spatial_rank(ctx, x)
    if ctx.has(2):
        expect(ctx, 2, "int", rank=1)
        given = ctx.const_ints(2)
        if given is not None:
            return [x.with_shape(given)]
        return [x.with_shape(None if x.shape is None else [UNKNOWN] * len(x.shape))]
    if n is None or x.shape is None:
        return [x]
    kernel = [int(v) for v in ctx.attr("kernel_shape")]
    if len(kernel) != n:
        raise ctx.error(f"kernel_shape {kernel} has {len(kernel)} values, expected {n}")
    with reported(ctx):
        win = window(ctx.attrs, kernel)
    out = [
        (d - 1) * win.strides[k] + kernel[k] - win.pads[k] - win.pads[k + n]
        if isinstance(d, int)
        else UNKNOWN
        for k, d in enumerate(x.shape[2:])
    ]
    return [x.with_shape([*x.shape[:2], *out])]


# --- Normalizations -----------------------------------------------------------------------------


@op(
    "BatchNormalization",
    inputs=5,
    attrs={
        "epsilon": _EPSILON,
        "momentum": AttrSpec(FLOAT, 0.9),
        "training_mode": AttrSpec(int, 0),
    },
)
def _batch_norm(ctx: InferContext) -> list[Type]:
    """(X - mean) / sqrt(var + epsilon) * scale + B per channel (axis 1). With training_mode=0
    mean/var are the inputs, passed through as running_mean/running_var; with training_mode=1
    they are X's own (population) statistics, and the running outputs are
    input * momentum + batch statistic * (1 - momentum)."""
    x = expect(ctx, 0, "float")
    if x.shape is not None and len(x.shape) < 2:
        raise ctx.error(f"input #0: expected (N, C, ...), got {x}")
    c = UNKNOWN if x.shape is None else x.shape[1]
    for i in range(1, 5):
        _per_channel(ctx, i, c)
    ctx.same_dtype(1, 2)
    stats = ctx.same_dtype(3, 4)
    return [x, TensorType(stats, [c]), TensorType(stats, [c])]


@op("InstanceNormalization", inputs=3, attrs={"epsilon": _EPSILON})
def _instance_norm(ctx: InferContext) -> list[Type]:
    """Each (n, c) slice of X normalized over its spatial axes to zero mean and unit variance
    (epsilon added to the variance), then scaled by scale[c] and shifted by B[c]."""
    x = expect(ctx, 0, "float")
    ctx.same_dtype(0, 1, 2)
    if x.shape is not None and len(x.shape) < 3:
        raise ctx.error(f"input #0: expected (N, C, D1, ...), got {x}")
    c = UNKNOWN if x.shape is None else x.shape[1]
    _per_channel(ctx, 1, c)
    _per_channel(ctx, 2, c)
    return [x]


def stash_dtype(x: TensorType, stash_type: int) -> DType:
    """The element type statistics are computed in: float32 for stash_type=1, else X's."""
    return DType.float32 if stash_type == 1 else x.dtype


_STASHED = {"axis": AttrSpec(int, -1), "epsilon": _EPSILON, "stash_type": AttrSpec(int, 1)}


@op("LayerNormalization", inputs=(2, 3), attrs=_STASHED)
def _layer_norm(ctx: InferContext) -> list[Type]:
    """X normalized over the axes from ``axis`` on (mean 0, variance 1, epsilon added to the
    variance), times Scale plus the optional B (both broadcast to those axes). Statistics are
    computed in float32 when stash_type=1; Mean and InvStdDev hold them with the normalized axes
    kept as size 1."""
    x = expect(ctx, 0, "float")
    ctx.same_dtype(*[i for i in range(len(ctx)) if ctx.has(i)])
    stats = stash_dtype(x, ctx.attr("stash_type"))
    if x.shape is None:
        return [x, TensorType(stats, None), TensorType(stats, None)]
    axis = norm_axis(ctx, ctx.attr("axis"), len(x.shape))
    kept = [*x.shape[:axis], *[1] * (len(x.shape) - axis)]
    return [x, TensorType(stats, kept), TensorType(stats, kept)]


@op(
    "GroupNormalization",
    inputs=3,
    attrs={"epsilon": _EPSILON, "num_groups": AttrSpec(int), "stash_type": AttrSpec(int, 1)},
)
def _group_norm(ctx: InferContext) -> list[Type]:
    """X (N, C, ...) with its channels split into num_groups groups, each group of each sample
    normalized over its channels and spatial axes, then per-channel scale and bias (shape C)."""
    x = expect(ctx, 0, "float")
    ctx.same_dtype(0, 1, 2)
    g = ctx.attr("num_groups")
    if g < 1:
        raise ctx.error(f"num_groups must be at least 1, got {g}")
    if x.shape is not None and len(x.shape) < 2:
        raise ctx.error(f"input #0: expected (N, C, ...), got {x}")
    c = UNKNOWN if x.shape is None else x.shape[1]
    if isinstance(c, int) and c % g:
        raise ctx.error(f"X's {c} channels do not split into {g} groups")
    _per_channel(ctx, 1, c)
    _per_channel(ctx, 2, c)
    return [x]


@op("RMSNormalization", inputs=2, attrs=_STASHED)
def _rms_norm(ctx: InferContext) -> list[Type]:
    """X / sqrt(mean(X^2 over the axes from ``axis`` on) + epsilon) * scale, computed in float32
    when stash_type=1; the result has scale's element type."""
    x, scale = expect(ctx, 0, "float"), expect(ctx, 1, "float")
    if x.shape is not None:
        norm_axis(ctx, ctx.attr("axis"), len(x.shape))
    return [x.with_dtype(scale.dtype)]


@op("LpNormalization", attrs={"axis": AttrSpec(int, -1), "p": AttrSpec(int, 2)})
def _lp_norm(ctx: InferContext) -> list[Type]:
    """X / its p-norm along ``axis`` (p is 1 or 2); a zero norm gives zeros."""
    x = expect(ctx, 0, "float")
    if ctx.attr("p") not in (1, 2):
        raise ctx.error(f"p must be 1 or 2, got {ctx.attr('p')}")
    if x.shape is not None:
        norm_axis(ctx, ctx.attr("axis"), len(x.shape))
    return [x]


@op("MeanVarianceNormalization", attrs={"axes": AttrSpec(INTS, (0, 2, 3))})
def _mvn(ctx: InferContext) -> list[Type]:
    """(X - mean) / (standard deviation + 1e-9), the statistics taken over ``axes``."""
    x = expect(ctx, 0, "float")
    if x.shape is not None:
        for a in ctx.attr("axes"):
            norm_axis(ctx, int(a), len(x.shape))
    return [x]


@op(
    "LRN",
    attrs={
        "alpha": AttrSpec(FLOAT, 1e-4),
        "beta": AttrSpec(FLOAT, 0.75),
        "bias": AttrSpec(FLOAT, 1.0),
        "size": AttrSpec(int),
    },
)
def _lrn(ctx: InferContext) -> list[Type]:
    """Local response normalization across channels: X / (bias + alpha / size * sum of X^2 over
    the ``size`` channels around each one, floor((size-1)/2) before) ^ beta."""
    x = expect(ctx, 0, "float")
    if ctx.attr("size") < 1:
        raise ctx.error(f"size must be at least 1, got {ctx.attr('size')}")
    if x.shape is not None and len(x.shape) < 2:
        raise ctx.error(f"input #0: expected (N, C, ...), got {x}")
    return [x]


@op("Dropout", inputs=(1, 3), attrs={"seed": AttrSpec(int, None)})
def _dropout(ctx: InferContext) -> list[Type]:
    """Without training_mode (a bool scalar, default false) or with ratio 0: the data unchanged
    and an all-true mask. In training, each entry is kept (mask true) with probability 1 - ratio
    (ratio: a float scalar, default 0.5) and scaled by 1 / (1 - ratio); others become 0."""
    x = expect(ctx, 0, "float")
    if ctx.has(1):
        expect(ctx, 1, "float")
    if ctx.has(2):
        expect(ctx, 2, "bool")
    return [x, x.with_dtype(DType.bool)]


# --- Losses -------------------------------------------------------------------------------------

_LOSS_ATTRS = {"ignore_index": AttrSpec(int, None), "reduction": AttrSpec(str, "mean")}
REDUCTIONS = ("none", "sum", "mean")


def _loss(ctx: InferContext) -> tuple[TensorType, TensorType]:
    """The loss output's type and the checked input (N, C, d...)."""
    x, target = expect(ctx, 0, "float"), expect(ctx, 1, "int")
    if target.dtype not in (DType.int32, DType.int64):
        raise ctx.error(f"input #1: expected int32 or int64 class indices, got {target}")
    if ctx.attr("reduction") not in REDUCTIONS:
        raise ctx.error(f"reduction must be none, sum or mean, got {ctx.attr('reduction')!r}")
    if x.shape is not None and len(x.shape) < 2:
        raise ctx.error(f"input #0: expected (N, C, d1, ...), got {x}")
    c = UNKNOWN if x.shape is None else x.shape[1]
    if ctx.has(2):
        ctx.same_dtype(0, 2)
        _per_channel(ctx, 2, c)
    if x.shape is not None and target.shape is not None:
        want = [x.shape[0], *x.shape[2:]]
        if len(target.shape) != len(want):
            raise ctx.error(f"target of {target} must have the shape of (N, d1, ...) of {x}")
        for got, dim in zip(target.shape, want, strict=True):
            _check_dim(ctx, f"target of {target} vs input of {x}", got, dim)
    if ctx.attr("reduction") != "none":
        return x.with_shape(()), x
    shape = target.shape
    if shape is None and x.shape is not None:
        shape = (x.shape[0], *x.shape[2:])
    return x.with_shape(shape), x


@op("NegativeLogLikelihoodLoss", inputs=(2, 3), attrs=_LOSS_ATTRS)
def _nll_loss(ctx: InferContext) -> list[Type]:
    """loss[n, d...] = -input[n, target[n, d...], d...] * weight[target] (weight defaults to
    ones; entries whose target is ignore_index give 0 and weigh 0). reduction 'none' keeps that
    shape, 'sum' adds it up, 'mean' divides the sum by the total weight of the kept entries."""
    return [_loss(ctx)[0]]


@op("SoftmaxCrossEntropyLoss", inputs=(2, 3), attrs=_LOSS_ATTRS)
def _softmax_cross_entropy(ctx: InferContext) -> list[Type]:
    """NegativeLogLikelihoodLoss of log_prob = log(softmax(scores)) along axis 1, with the same
    labels, weights, ignore_index and reduction; log_prob is the second output."""
    loss, x = _loss(ctx)
    return [loss, x]


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
        _check_dim(ctx, "weight's first dim (channels)", w.shape[0], c)
        _check_dim(ctx, "weight's second dim", w.shape[1], 1)
        k = w.shape[2]
        if isinstance(k, int) and k < 1:
            raise ctx.error(f"weight of {w}: the kernel size must be at least 1")
    state: list[Dim] = [b, c, k - 1 if isinstance(k, int) else UNKNOWN]
    if ctx.has(2):
        _per_channel(ctx, 2, c)
    if ctx.has(3):
        past = expect(ctx, 3, "float", rank=3)
        if past.shape is not None:
            for got, want in zip(past.shape, state, strict=True):
                _check_dim(ctx, f"past_state of {past} vs (B, C, k-1)", got, want)
            state = [s if isinstance(s, int) else p for s, p in zip(state, past.shape, strict=True)]
    return [x, x.with_shape(state)]
