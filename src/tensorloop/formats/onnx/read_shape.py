"""ONNX converters for older opsets of the shape ops: Squeeze, Unsqueeze, Split, Slice and Pad,
whose axes, sizes or pads were attributes before they became inputs."""

from __future__ import annotations

import numpy as np

from ...ir.graph import Value
from .convert import NodeContext, converter


def _axes_input(ctx: NodeContext, key: str = "axes") -> Value | None:
    axes = ctx.attr(key, None)
    return None if axes is None else ctx.ints(list(axes))


@converter("Squeeze", until=13)
def _squeeze_old(ctx: NodeContext) -> list[Value]:
    """Squeeze before opset 13: axes is an attribute."""
    return [ctx.op1("Squeeze", [ctx.input(0), _axes_input(ctx)])]


@converter("Unsqueeze", until=13)
def _unsqueeze_old(ctx: NodeContext) -> list[Value]:
    """Unsqueeze before opset 13: axes is a required attribute."""
    return [ctx.op1("Unsqueeze", [ctx.input(0), ctx.ints(list(ctx.attr("axes")))])]


def _split(ctx: NodeContext, sizes: Value | None) -> list[Value]:
    axis = int(ctx.attr("axis", 0))
    parts = ctx.attr("num_outputs", None)
    if sizes is None and parts is None:
        parts = ctx.num_outputs  # no split given: equal parts, one per output
    attrs = {"axis": axis} if sizes is not None else {"axis": axis, "num_outputs": parts}
    return ctx.op("Split", [ctx.input(0), sizes], attrs, num_outputs=ctx.num_outputs)


@converter("Split", until=13)
def _split_old(ctx: NodeContext) -> list[Value]:
    """Split before opset 13: split sizes are an attribute."""
    sizes = ctx.attr("split", None)
    return _split(ctx, None if sizes is None else ctx.ints(list(sizes)))


@converter("Split", since=13)
def _split_13(ctx: NodeContext) -> list[Value]:
    """Split from opset 13: with neither a split input nor num_outputs, one part per output."""
    return _split(ctx, ctx.inputs[1] if ctx.has(1) else None)


@converter("Slice", until=10)
def _slice_old(ctx: NodeContext) -> list[Value]:
    """Slice before opset 10: starts, ends and axes are attributes."""
    starts, ends = list(ctx.attr("starts")), list(ctx.attr("ends"))
    return [ctx.op1("Slice", [ctx.input(0), ctx.ints(starts), ctx.ints(ends), _axes_input(ctx)])]


@converter("Pad", until=11)
def _pad_old(ctx: NodeContext) -> list[Value]:
    """Pad before opset 11: pads and value are attributes."""
    data = ctx.input(0)
    value = np.asarray(ctx.attr("value", 0.0), dtype=data.tensor_type.dtype.numpy)
    pads = ctx.ints(list(ctx.attr("pads", ctx.attr("paddings", ()))))
    return [ctx.op1("Pad", [data, pads, ctx.const(value)], {"mode": ctx.attr("mode", "constant")})]
