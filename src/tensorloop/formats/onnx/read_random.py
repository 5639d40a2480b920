"""ONNX converters for the random ops: RandomUniform, RandomNormal, their Like forms, Bernoulli
and Multinomial, each its same-named core op (``ops/random_std.py``), named for its stream."""

from __future__ import annotations

from ...ir.graph import Value
from .convert import NodeContext, converter


@converter(
    "RandomUniform", "RandomNormal", "RandomUniformLike", "RandomNormalLike", "Bernoulli",
    "Multinomial",
)  # fmt: skip
def _random(ctx: NodeContext) -> list[Value]:
    """The same-named core op, named as the ONNX node or, when that has no name, as its first
    output: an unseeded op's stream derives from its name, so each draws its own (unnamed nodes
    would otherwise share one), and the stream survives passes that rename values."""
    name = ctx.node.name or ctx.node.output[0]
    return ctx.em.ops(ctx.op_type, list(ctx.inputs), dict(ctx.attrs), name=name)
