"""OpenVINO layers along an axis read as core ops: Reduce*, CumSum, TopK, SoftMax, LogSoftmax.

One converter per layer type, at every opset version OpenVINO's converters write."""

from __future__ import annotations

import numpy as np

from ...ir.graph import Value
from ...tensor.dtypes import DType
from .convert import Converter, LayerContext, converter
from .inputs import cast_to, has_input, int_vector, scalar_input, type_of

__all__: list[str] = []


def _reduce(op: str, bool_only: bool = False) -> Converter:
    def convert(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
        x = ctx.input(0)
        if bool_only and type_of(ctx, x).dtype is not DType.bool:
            raise ctx.error(f"{ctx.layer.type} takes booleans, got {type_of(ctx, x)}")
        keep = ctx.bool_attr("keep_dims", False)
        axes = int_vector(ctx, 1, "axes")
        # OpenVINO reduces nothing over empty axes; noop_with_empty_axes says the same.
        attrs = {"keepdims": int(keep), "noop_with_empty_axes": 1}
        return [ctx.em.op(op, [x, axes], attrs)]

    return convert


for _op in (
    "ReduceSum",
    "ReduceMean",
    "ReduceMax",
    "ReduceMin",
    "ReduceProd",
    "ReduceL1",
    "ReduceL2",
):
    converter(_op)(_reduce(_op))
# On booleans, all is the minimum and any the maximum.
converter("ReduceLogicalAnd")(_reduce("ReduceMin", bool_only=True))
converter("ReduceLogicalOr")(_reduce("ReduceMax", bool_only=True))


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
    """The k largest (smallest) by value; sort="index" puts them in the order of their indices.
    sort="none" leaves the order open in the spec: read as by value, the order the CPU plugin
    gives."""
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


@converter("LogSoftmax")
def _log_softmax(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    return [ctx.em.op("LogSoftmax", [ctx.input(0)], {"axis": ctx.int_attr("axis")})]
