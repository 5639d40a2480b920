"""ONNX converters for older opsets of the indexing ops: Scatter, and TopK with k an attribute."""

from __future__ import annotations

from collections.abc import Sequence

from ...ir.graph import Value
from .convert import NodeContext, converter

Outputs = Sequence[Value | None]


@converter("TopK", since=10)
def _newest(ctx: NodeContext) -> Outputs:
    """Opsets whose meaning the core op has: the node as it is."""
    return ctx.same_default()


@converter("Scatter", since=1)
def _scatter(ctx: NodeContext) -> Outputs:
    """Scatter (opsets 9-10) is ScatterElements without a reduction."""
    return [ctx.op1("ScatterElements", ctx.inputs[:3], {"axis": ctx.attr("axis", 0)})]


@converter("TopK", since=1)
def _topk_attr(ctx: NodeContext) -> Outputs:
    """TopK before opset 10 takes k as an attribute (and always finds the largest, sorted)."""
    k = ctx.ints([ctx.attr("k")])
    return ctx.op("TopK", [ctx.input(0), k], {"axis": ctx.attr("axis", -1)}, num_outputs=2)
