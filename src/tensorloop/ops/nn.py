"""Neural-network ops: Dropout and the losses; re-exports the window geometry the kernels use."""

from __future__ import annotations

from ..ir.opdef import AttrSpec, InferContext, op
from ..tensor.dtypes import DType
from ..tensor.types import UNKNOWN, TensorType, Type
from .common import expect
from .normalization import stash_dtype
from .window import Window, check_dim, per_channel, transpose_out_shape, window

__all__ = ["REDUCTIONS", "Window", "stash_dtype", "transpose_out_shape", "window"]


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
        per_channel(ctx, 2, c)
    if x.shape is not None and target.shape is not None:
        want = [x.shape[0], *x.shape[2:]]
        if len(target.shape) != len(want):
            raise ctx.error(f"target of {target} must have the shape of (N, d1, ...) of {x}")
        for got, dim in zip(target.shape, want, strict=True):
            check_dim(ctx, f"target of {target} vs input of {x}", got, dim)
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
