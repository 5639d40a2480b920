"""OpenVINO sparse-tensor layers read as core ops: SparseFillEmptyRows-16, the same-named op."""

from __future__ import annotations

from ...ir.graph import Value
from .convert import LayerContext, converter
from .inputs import scalar_input

__all__: list[str] = []


@converter("SparseFillEmptyRows")
def _sparse_fill_empty_rows(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    args = [ctx.input(0), ctx.input(1), ctx.input(2), scalar_input(ctx, 3, "default_value")]
    return ctx.em.ops("SparseFillEmptyRows", args)
