"""ONNX converters for the reductions' old opsets: ``axes`` as an attribute, and Softmax,
LogSoftmax and Hardmax on a 2-D view before opset 13."""

from __future__ import annotations

import math

from ...ir.graph import Value
from ...tensor.types import normalize_axis
from .convert import NodeContext, converter

# Ops that took ``axes`` as an attribute before the opset given here.
_AXES_BECAME_INPUT = {
    "ReduceSum": 13,
    **{
        name: 18
        for name in (
            "ReduceMean",
            "ReduceMax",
            "ReduceMin",
            "ReduceProd",
            "ReduceL1",
            "ReduceL2",
            "ReduceLogSum",
            "ReduceLogSumExp",
            "ReduceSumSquare",
        )
    },
}


def _reduce_old(ctx: NodeContext) -> list[Value]:
    """A reduction whose ``axes`` is an attribute (absent: all axes) becomes the axes input."""
    axes = ctx.attr("axes", None)
    attrs = {k: v for k, v in ctx.attrs.items() if k != "axes"}
    inputs = [ctx.input(0)] + ([ctx.ints(list(axes))] if axes else [])
    return [ctx.op1(ctx.op_type, inputs, attrs)]


for _name, _until in _AXES_BECAME_INPUT.items():
    converter(_name, until=_until)(_reduce_old)


@converter("Softmax", "LogSoftmax", "Hardmax", until=13)
def _on_matrix(ctx: NodeContext) -> list[Value]:
    """Before opset 13 these ops see the input as a matrix whose rows join the axes from ``axis``
    on (default 1), and normalize each row; the result takes back the input's shape."""
    x = ctx.input(0)
    t = x.tensor_type
    if t.shape is None:
        raise ctx.error(f"opset {ctx.opset} {ctx.op_type} needs an input of known rank, got {t}")
    rank = len(t.shape)
    axis = ctx.attr("axis", 1)
    axis = normalize_axis(axis, rank, error=ctx.error, allow_end=True)
    if axis == rank - 1:  # the rows are already the last axis
        return [ctx.op1(ctx.op_type, [x], {"axis": -1})]
    rows = ctx.op1("Reshape", [x, _matrix_shape(ctx, x, axis)])
    y = ctx.op1(ctx.op_type, [rows], {"axis": 1})
    shape = ctx.ints(list(t.static_shape)) if t.is_static else ctx.op1("Shape", [x])
    return [ctx.op1("Reshape", [y, shape])]


def _matrix_shape(ctx: NodeContext, x: Value, axis: int) -> Value:
    """[outer, inner]: the products of x's dims before ``axis`` and from it on; what is known
    before running is a constant, -1 stands for the other."""
    dims = x.tensor_type.shape
    assert dims is not None
    outer, inner = dims[:axis], dims[axis:]
    known = [math.prod(int(d) for d in part) for part in (outer, inner) if _static(part)]
    if len(known) == 2:
        return ctx.ints(known)
    if _static(inner):
        return ctx.ints([-1, *known])
    if _static(outer):
        return ctx.ints([*known, -1])
    # Neither product is known yet: the inner one is the first running product from the end.
    tail = ctx.op1("Shape", [x], {"start": axis})
    products = ctx.op1("CumProd", [tail, ctx.ints(0)], {"reverse": 1})
    row = ctx.op1("Slice", [products, ctx.ints([0]), ctx.ints([1])])
    return ctx.op1("Concat", [ctx.ints([-1]), row], {"axis": 0})


def _static(dims: tuple[int | str, ...]) -> bool:
    return all(isinstance(d, int) for d in dims)
