"""Pooling ops: AveragePool, MaxPool, LpPool, their Global* forms and MaxUnpool."""

from __future__ import annotations

from collections.abc import Callable

from ..ir.opdef import AttrSpec, InferContext, op
from ..tensor.dtypes import DType
from ..tensor.types import UNKNOWN, TensorType, Type
from .common import expect, reported
from .window import INTS, kernel_shape, spatial_rank, window, windowed

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
    n = spatial_rank(ctx, x)
    kernel = kernel_shape(ctx, None, n)
    channels = UNKNOWN if x.shape is None else x.shape[1]
    return x.with_shape(windowed(ctx, x, channels, kernel))


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
    n = spatial_rank(ctx, x)
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
