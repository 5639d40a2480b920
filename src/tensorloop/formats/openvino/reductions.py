"""OpenVINO layers along an axis: ReduceSum/Mean/Max/Min/Prod, CumSum, TopK and SoftMax."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...ir.graph import Value
from .convert import LayerContext, converter
from .inputs import (
    cast_to,
    has_input,
    int_vector,
    scalar_input,
)

ReduceLowering = Callable[[LayerContext, Value, Value, bool], Value]


def _core_reduce(op: str) -> ReduceLowering:
    # OpenVINO reduces nothing over empty axes; ONNX needs noop_with_empty_axes to agree.
    return lambda ctx, x, axes, keep: ctx.em.op(
        op, [x, axes], {"keepdims": int(keep), "noop_with_empty_axes": 1}
    )


_REDUCTIONS: dict[str, ReduceLowering] = {
    "ReduceSum": _core_reduce("ReduceSum"),
    "ReduceMean": _core_reduce("ReduceMean"),
    "ReduceMax": _core_reduce("ReduceMax"),
    "ReduceMin": _core_reduce("ReduceMin"),
    "ReduceProd": _core_reduce("ReduceProd"),
}


def _reduction(lower: ReduceLowering) -> Callable[[LayerContext, list[Value | None]], list[Value]]:
    def convert(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
        keep = ctx.bool_attr("keep_dims", False)
        return [lower(ctx, ctx.input(0), int_vector(ctx, 1, "axes"), keep)]

    return convert


for _layer_type, _reduce in _REDUCTIONS.items():
    converter(_layer_type)(_reduction(_reduce))


@converter("CumSum")
def _cumsum(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    axis = scalar_input(ctx, 1, "axis") if has_input(inputs, 1) else ctx.em.const(np.int64(0))
    flags = {
        "exclusive": int(ctx.bool_attr("exclusive", "false")),
        "reverse": int(ctx.bool_attr("reverse", "false")),
    }
    return [ctx.em.op("CumSum", [ctx.input(0), axis], flags)]


@converter("TopK")
def _topk(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    x = ctx.input(0)
    mode = ctx.choice_attr("mode", ("max", "min"))
    sort = ctx.choice_attr("sort", ("value", "index", "none"))
    index_type = ctx.element_type("index_element_type", "i32")
    k = int_vector(ctx, 1, "k")
    axis = ctx.int_attr("axis")
    attrs = {"axis": axis, "largest": int(mode == "max"), "sorted": 1}
    values, index = ctx.em.ops("TopK", [x, k], attrs)
    if sort == "index":  # the k chosen, in the order of their indices
        _, order = ctx.em.ops("TopK", [index, k], {"axis": axis, "largest": 0, "sorted": 1})
        values = ctx.em.op("GatherElements", [values, order], {"axis": axis})
        index = ctx.em.op("GatherElements", [index, order], {"axis": axis})
    return [values, cast_to(ctx, index, index_type)]


@converter("SoftMax")
def _softmax(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    axis = ctx.int_attr("axis", 1)
    if axis < 0 and ctx.layer.version == "opset1":
        raise ctx.error(f"attribute 'axis' is {axis}: SoftMax-1 takes a non-negative axis")
    return [ctx.em.op("Softmax", [ctx.input(0)], {"axis": axis})]
