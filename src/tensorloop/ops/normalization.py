"""Normalization ops: Batch/Instance/Layer/Group/RMS/Lp/MeanVariance norms, LRN; stash_dtype."""

from __future__ import annotations

from ..ir.opdef import AttrSpec, InferContext, op
from ..tensor.dtypes import DType
from ..tensor.types import UNKNOWN, TensorType, Type
from .common import expect, norm_axis
from .window import EPSILON, FLOAT, INTS, per_channel


@op(
    "BatchNormalization",
    inputs=5,
    attrs={
        "epsilon": EPSILON,
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
        per_channel(ctx, i, c)
    ctx.same_dtype(1, 2)
    stats = ctx.same_dtype(3, 4)
    return [x, TensorType(stats, [c]), TensorType(stats, [c])]


@op("InstanceNormalization", inputs=3, attrs={"epsilon": EPSILON})
def _instance_norm(ctx: InferContext) -> list[Type]:
    """Each (n, c) slice of X normalized over its spatial axes to zero mean and unit variance
    (epsilon added to the variance), then scaled by scale[c] and shifted by B[c]."""
    x = expect(ctx, 0, "float")
    ctx.same_dtype(0, 1, 2)
    if x.shape is not None and len(x.shape) < 3:
        raise ctx.error(f"input #0: expected (N, C, D1, ...), got {x}")
    c = UNKNOWN if x.shape is None else x.shape[1]
    per_channel(ctx, 1, c)
    per_channel(ctx, 2, c)
    return [x]


def stash_dtype(x: TensorType, stash_type: int) -> DType:
    """The element type statistics are computed in: float32 for stash_type=1, else X's."""
    return DType.float32 if stash_type == 1 else x.dtype


_STASHED = {"axis": AttrSpec(int, -1), "epsilon": EPSILON, "stash_type": AttrSpec(int, 1)}


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
    attrs={"epsilon": EPSILON, "num_groups": AttrSpec(int), "stash_type": AttrSpec(int, 1)},
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
    per_channel(ctx, 1, c)
    per_channel(ctx, 2, c)
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
