"""OpenVINO layers along an axis: ReduceSum/Mean/Max/Min/Prod, CumSum, TopK and SoftMax."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ...ir.graph import Value
from .convert import LayerContext, converter
from .inputs import (
    cast_to,
    const_ints,
    has_input,
    int_vector,
    normalized_axes,
    rank_of,
    scalar_const,
    scalar_input,
    type_of,
)

ReduceLowering = Callable[[LayerContext, Value, Value, bool], Value]


def _core_reduce(op: str) -> ReduceLowering:
    # OpenVINO reduces nothing over empty axes; ONNX needs noop_with_empty_axes to agree.
    return lambda ctx, x, axes, keep: ctx.em.op(
        op, [x, axes], {"keepdims": int(keep), "noop_with_empty_axes": 1}
    )


def _reduce_prod(ctx: LayerContext, x: Value, _axes: Value, keep: bool) -> Value:
    """No core op multiplies along axes: move the reduced axes last, fuse them into one axis of
    static size n, and halve it with pairwise Mul until one entry is left (log2(n) steps). The
    axes must be constant, so they are read from the layer's input rather than ``_axes``."""
    em = ctx.em
    rank = rank_of(ctx, 0, "data")
    axes = sorted(set(normalized_axes(ctx, const_ints(ctx, 1, "axes"), rank, "axes")))
    if not axes:
        return em.op("Identity", [x])
    shape = type_of(ctx, x).shape
    assert shape is not None
    dims = [shape[a] for a in axes]
    if not all(isinstance(d, int) for d in dims):
        raise ctx.error(f"ReduceProd needs static sizes on the reduced axes {axes}, got {shape}")
    n = math.prod(int(d) for d in dims)
    if n == 0:  # the empty product is 1: a sum over the same (empty) axes, plus 1
        total = em.op("ReduceSum", [x, em.ints(axes)], {"keepdims": int(keep)})
        return em.op("Add", [total, scalar_const(ctx, 1, type_of(ctx, x).dtype)])
    kept = [a for a in range(rank) if a not in axes]
    y = x
    if kept + axes != list(range(rank)):
        y = em.op("Transpose", [y], {"perm": kept + axes})
    y = em.op("Reshape", [y, em.ints([0] * len(kept) + [n])])  # each 0 copies a kept dim

    def part(lo: int, hi: int) -> Value:
        return em.op("Slice", [y, em.ints([lo]), em.ints([hi]), em.ints([-1])])

    while n > 1:
        half = n // 2
        product = em.op("Mul", [part(0, half), part(half, 2 * half)])
        if n % 2:
            product = em.op("Concat", [product, part(2 * half, n)], {"axis": -1})
        y, n = product, n - half
    y = em.op("Squeeze", [y, em.ints([-1])])
    return em.op("Unsqueeze", [y, em.ints(axes)]) if keep else y


_REDUCTIONS: dict[str, ReduceLowering] = {
    "ReduceSum": _core_reduce("ReduceSum"),
    "ReduceMean": _core_reduce("ReduceMean"),
    "ReduceMax": _core_reduce("ReduceMax"),
    "ReduceMin": _core_reduce("ReduceMin"),
    "ReduceProd": _reduce_prod,
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
    if sort == "index" and const_ints(ctx, 1, "k") != [1]:
        raise ctx.error("TopK with sort='index' and k other than 1 is not supported yet")
    attrs = {"axis": ctx.int_attr("axis"), "largest": int(mode == "max"), "sorted": 1}
    values, index = ctx.em.ops("TopK", [x, k], attrs)
    return [values, cast_to(ctx, index, index_type)]


@converter("SoftMax")
def _softmax(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    axis = ctx.int_attr("axis", 1)
    if axis < 0 and ctx.layer.version == "opset1":
        raise ctx.error(f"attribute 'axis' is {axis}: SoftMax-1 takes a non-negative axis")
    return [ctx.em.op("Softmax", [ctx.input(0)], {"axis": axis})]
