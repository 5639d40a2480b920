"""OpenVINO random layers read as core ops: RandomUniform-8 as PhiloxUniform, Multinomial-13 as
PhiloxMultinomial, every attribute kept (ops/philox.py says what each computes).

A run of the model read computes what OpenVINO's first inference of the compiled model computes:
OpenVINO keeps a RandomUniform's stream (tensorflow alignment) from one inference to the next,
where tensorloop starts every run afresh. Seeds 0/0, which OpenVINO replaces with a time-based
seed, draw one fixed stream here (docs/openvino.md)."""

from __future__ import annotations

from ...ir.graph import Value
from ...ops.philox import ALIGNMENTS, MAX_SEED, UNIFORM_TYPES
from .convert import LayerContext, converter
from .inputs import index_type_attr, type_of

__all__: list[str] = []


def _seed(ctx: LayerContext, key: str) -> int:
    seed = ctx.int_attr(key, 0)
    if not 0 <= seed <= MAX_SEED:
        raise ctx.error(f"attribute '{key}' is {seed}, expected a uint64 value")
    return seed


@converter("RandomUniform")
def _random_uniform(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    out_type, spelled = ctx.element_type("output_type"), ctx.attr("output_type")
    if out_type not in UNIFORM_TYPES:
        raise ctx.error(
            f"attribute 'output_type' is {spelled!r}, expected f16, bf16, f32, f64, i32 or i64"
        )
    bounds = [ctx.input(1), ctx.input(2)]
    for index, what, value in zip((1, 2), ("minval", "maxval"), bounds, strict=True):
        if type_of(ctx, value).dtype is not out_type:
            raise ctx.error(
                f"input #{index} ({what}) is {type_of(ctx, value)}, but output_type is {spelled}"
            )
    attrs = {
        "global_seed": _seed(ctx, "global_seed"),
        "op_seed": _seed(ctx, "op_seed"),
        "alignment": ctx.choice_attr("alignment", ALIGNMENTS, "tensorflow"),
    }
    return [ctx.em.op("PhiloxUniform", [ctx.input(0), *bounds], attrs)]


@converter("Multinomial")
def _multinomial(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    attrs = {
        "convert_type": index_type_attr(ctx, "convert_type", "i64"),
        "with_replacement": int(ctx.bool_attr("with_replacement")),
        "log_probs": int(ctx.bool_attr("log_probs")),
        "global_seed": _seed(ctx, "global_seed"),
        "op_seed": _seed(ctx, "op_seed"),
    }
    return [ctx.em.op("PhiloxMultinomial", [ctx.input(0), ctx.input(1)], attrs)]
