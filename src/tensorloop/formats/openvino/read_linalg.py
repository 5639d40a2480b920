"""OpenVINO linear-algebra layers read as core ops: MatMul-1, Einsum-7 and Inverse-14.

Inverse is the core ``Inverse`` (of the transposed matrices when ``adjoint``); a singular matrix,
whose result the spec leaves undefined, inverts to all NaN, as the CPU plugin gives."""

from __future__ import annotations

from ...ir.graph import Value
from .convert import LayerContext, converter
from .inputs import float_input, rank_of, type_of

__all__: list[str] = []


@converter("MatMul")
def _matmul(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    operands = []
    for i, key in enumerate(("transpose_a", "transpose_b")):
        value = ctx.input(i)
        # A 1-D operand is unsqueezed to a matrix whatever its transpose flag says.
        if ctx.bool_attr(key, False) and type_of(ctx, value).rank != 1:
            rank = rank_of(ctx, i, key.replace("transpose", "operand"))
            perm = [*range(rank - 2), rank - 1, rank - 2]
            value = ctx.em.op("Transpose", [value], {"perm": perm})
        operands.append(value)
    return [ctx.em.op("MatMul", operands)]


@converter("Einsum")
def _einsum(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    values = [ctx.input(i) for i in range(len(inputs))]
    return [ctx.em.op("Einsum", values, {"equation": ctx.attr("equation")})]


@converter("Inverse")
def _inverse(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    x = float_input(ctx, 0, "data")
    if ctx.bool_attr("adjoint", False):
        rank = type_of(ctx, x).rank
        if rank is None or rank < 2:
            raise ctx.error(
                f"adjoint needs [*, M, M] matrices of known rank, got {type_of(ctx, x)}"
            )
        perm = [*range(rank - 2), rank - 1, rank - 2]
        x = ctx.em.op("Transpose", [x], {"perm": perm})
    return [ctx.em.op("Inverse", [x])]
