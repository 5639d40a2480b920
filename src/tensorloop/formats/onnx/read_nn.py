"""ONNX converters for the nn ops: older opsets of BatchNormalization, Dropout and
GroupNormalization mapped onto the newest, and the preview-domain FlexAttention with its
subgraphs."""

from __future__ import annotations

import numpy as np

from ...ir.graph import Value
from ...tensor.dtypes import DType
from ...tensor.types import UNKNOWN, Dim, TensorType
from .convert import NodeContext, converter, onnx_dtype

PREVIEW_DOMAIN = "ai.onnx.preview"


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


@converter("FlexAttention", domain=PREVIEW_DOMAIN)
def _flex_attention(ctx: NodeContext) -> list[Value]:
    """FlexAttention-1: score_mod/prob_mod become closed graphs over [B, Hq, L, S] scores in
    the softmax precision; values they read from outside become trailing inputs."""
    q, k, v = (ctx.input(i, name) for i, name in enumerate(("Q", "K", "V")))
    attrs = {k: v for k, v in ctx.attrs.items() if k not in ("score_mod", "prob_mod")}
    precision = ctx.attr("softmax_precision", None)
    if precision is not None:
        precision = attrs["softmax_precision"] = onnx_dtype(
            precision, f"{ctx.where}: attribute 'softmax_precision'"
        )
    qt, kt = q.tensor_type, k.tensor_type
    if precision is None:
        precision = DType.float64 if qt.dtype is DType.float64 else DType.float32
    dims: list[Dim] = [UNKNOWN] * 4
    if qt.shape is not None and len(qt.shape) == 4:
        dims[:3] = qt.shape[:3]
    if kt.shape is not None and len(kt.shape) == 4:
        dims[3] = kt.shape[2]
    scores = TensorType(precision, dims)
    captured: list[Value] = []
    for key in ("score_mod", "prob_mod"):
        if key in ctx.attrs:
            attrs[key], outer = ctx.subgraph(key, [scores])
            captured += outer
            if key == "score_mod":
                attrs["score_mod_captures"] = len(outer)
    return [ctx.op1("FlexAttention", [q, k, v, *captured], attrs)]
