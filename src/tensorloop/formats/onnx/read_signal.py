"""ONNX converters for the signal ops' old opsets: DFT before opset 20."""

from __future__ import annotations

from ...ir.graph import Value
from .convert import NodeContext, converter


@converter("DFT", since=17, until=20)
def _dft_17(ctx: NodeContext) -> list[Value]:
    """DFT-17: ``axis`` was an attribute (default 1), not the third input (default -2)."""
    attrs = {k: v for k, v in ctx.attrs.items() if k != "axis"}
    length = ctx.inputs[1] if ctx.has(1) else None
    axis = ctx.ints(int(ctx.attr("axis", 1)))
    return [ctx.op1("DFT", [ctx.input(0, "input"), length, axis], attrs)]
