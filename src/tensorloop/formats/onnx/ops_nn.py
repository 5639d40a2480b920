"""ONNX converters: older opsets of the nn ops and the reductions, mapped onto the newest."""

from __future__ import annotations

import numpy as np

from ...ir.graph import Value
from ...tensor.dtypes import DType
from .convert import NodeContext, converter

# Ops that took ``axes`` as an attribute before the opset given here.
_AXES_BECAME_INPUT = {
    "ReduceSum": 13,
    **{
        name: 18
        for name in (
            "ReduceMean",
            "ReduceMax",
            "ReduceMin",
            "ReduceProd",
            "ReduceL1",
            "ReduceL2",
            "ReduceLogSum",
            "ReduceLogSumExp",
            "ReduceSumSquare",
        )
    },
}


def _reduce_old(ctx: NodeContext) -> list[Value]:
    """A reduction whose ``axes`` is an attribute (absent: all axes) becomes the axes input."""
    axes = ctx.attr("axes", None)
    attrs = {k: v for k, v in ctx.attrs.items() if k != "axes"}
    inputs = [ctx.input(0)] + ([ctx.ints(list(axes))] if axes else [])
    return [ctx.op1(ctx.op_type, inputs, attrs)]


for _name, _until in _AXES_BECAME_INPUT.items():
    converter(_name, until=_until)(_reduce_old)


def _without(ctx: NodeContext, *keys: str) -> dict[str, object]:
    return {k: v for k, v in ctx.attrs.items() if k not in keys}


def _scalar(ctx: NodeContext, value: float, like: Value) -> Value:
    return ctx.const(np.asarray(value, like.tensor_type.dtype.numpy))


@converter("BatchNormalization", until=14)
def _batch_norm_old(ctx: NodeContext) -> list[Value]:
    """BatchNormalization before opset 14: spatial=0 (before 9) keeps one statistic per
    activation (C, D1, ...), not per channel; asking for the running mean/var outputs means
    training; the saved_mean/saved_var training outputs are not supported."""
    x, scale, b, mean, var = (ctx.input(i) for i in range(5))
    if ctx.num_outputs > 3 and any(ctx.wants(i) for i in (3, 4)):
        raise ctx.error("the saved_mean/saved_var training outputs are not supported")
    eps = float(ctx.attr("epsilon", 1e-5))
    if not ctx.attr("spatial", 1):
        # Per-activation statistics broadcast against X directly: the formula, spelled out.
        den = ctx.op1("Sqrt", [ctx.op1("Add", [var, _scalar(ctx, eps, var)])])
        y = ctx.op1("Div", [ctx.op1("Sub", [x, mean]), den])
        return [ctx.op1("Add", [ctx.op1("Mul", [y, scale]), b])]
    training = any(ctx.wants(i) for i in (1, 2))
    attrs = {
        "epsilon": eps,
        "momentum": float(ctx.attr("momentum", 0.9)),
        "training_mode": int(training),
    }
    return ctx.op("BatchNormalization", [x, scale, b, mean, var], attrs, num_outputs=3)


@converter("Dropout", until=12)
def _dropout_old(ctx: NodeContext) -> list[Value]:
    """Dropout before opset 12: ratio is an attribute (default 0.5) and the op always runs in
    inference mode; before opset 10 the mask has the data's element type, not bool."""
    x = ctx.input(0)
    ratio = _scalar(ctx, float(ctx.attr("ratio", 0.5)), x)
    y, mask = ctx.op("Dropout", [x, ratio], num_outputs=2)
    if ctx.opset < 10:
        mask = ctx.op1("Cast", [mask], {"to": x.tensor_type.dtype})
    return [y, mask]


@converter("GroupNormalization", until=21)
def _group_norm_18(ctx: NodeContext) -> list[Value]:
    """GroupNormalization-18 took one scale and bias per group; opset 21 takes one per channel,
    so each group's entry repeats over its channels (X's channel count must be known)."""
    x = ctx.input(0)
    shape = x.tensor_type.shape
    groups = int(ctx.attr("num_groups"))
    if shape is None or len(shape) < 2 or not isinstance(shape[1], int):
        raise ctx.error(f"opset 18 GroupNormalization needs X's channel count, got {x.type}")
    per_group = shape[1] // groups

    def per_channel(v: Value) -> Value:
        column = ctx.op1("Reshape", [v, ctx.ints([groups, 1])])
        wide = ctx.op1("Expand", [column, ctx.ints([groups, per_group])])
        return ctx.op1("Reshape", [wide, ctx.ints([-1])])

    scale, bias = per_channel(ctx.input(1)), per_channel(ctx.input(2))
    # Opset 18 computed the statistics in X's own type.
    attrs = {**ctx.attrs, "stash_type": 0 if x.tensor_type.dtype != DType.float32 else 1}
    return [ctx.op1("GroupNormalization", [x, scale, bias], attrs)]
