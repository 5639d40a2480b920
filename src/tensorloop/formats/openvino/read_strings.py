"""OpenVINO string layers read as core ops: StringTensorUnpack-15 and StringTensorPack-15.

A string tensor to and from its UTF-8 bytes with begin and end offsets, each the same-named core
op."""

from __future__ import annotations

from ...ir.graph import Value
from .convert import LayerContext, converter

__all__: list[str] = []


@converter("StringTensorUnpack")
def _string_tensor_unpack(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    return ctx.em.ops("StringTensorUnpack", [ctx.input(0)])


@converter("StringTensorPack")
def _string_tensor_pack(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    return [ctx.em.op("StringTensorPack", [ctx.input(0), ctx.input(1), ctx.input(2)])]
