"""Reductions along axes: the Reduce* family, ArgMax/ArgMin, CumSum, PrefixSum and Softmax."""

from __future__ import annotations

from ..ir.opdef import AttrSpec, InferContext, op
from ..tensor.dtypes import DType
from ..tensor.types import UNKNOWN, TensorType, Type
from .common import (
    expect,
    expect_one_of,
    norm_axis,
    normalize_axes,
    reported,
    scalar_int,
    static_length,
)
from .elementwise import Rule

_REDUCE_ATTRS = {"keepdims": AttrSpec(int, 1), "noop_with_empty_axes": AttrSpec(int, 0)}

# name: (element kind, meaning)
_REDUCTIONS = {
    "ReduceSum": ("numeric", "Sum over ``axes``; an empty set sums to 0."),
    "ReduceMean": ("numeric", "Mean over ``axes`` (integers truncate toward zero); NaN if empty."),
    "ReduceMax": ("any", "Maximum over ``axes``; -inf (or the lowest value) if empty."),
    "ReduceMin": ("any", "Minimum over ``axes``; +inf (or the highest value) if empty."),
    "ReduceProd": ("numeric", "Product over ``axes``; an empty set gives 1."),
    "ReduceL1": ("numeric", "Sum of absolute values over ``axes``; an empty set gives 0."),
    "ReduceL2": ("numeric", "sqrt(sum of squares) over ``axes``; an empty set gives 0."),
    "ReduceSumSquare": ("numeric", "Sum of squares over ``axes``; an empty set gives 0."),
    "ReduceLogSum": ("float", "log(sum) over ``axes``; an empty set gives -inf."),
    "ReduceLogSumExp": ("float", "log(sum(exp)) over ``axes``, computed stably; -inf if empty."),
}
_SHARED_DOC = (
    " ``axes`` (input #1) omitted or empty means all axes, or none with noop_with_empty_axes=1;"
    " keepdims=1 keeps reduced axes with size 1."
)


def _reduction(kind: str, doc: str) -> Rule:
    def rule(ctx: InferContext) -> list[Type]:
        t = expect(ctx, 0, kind)
        keep, noop = bool(ctx.attr("keepdims")), bool(ctx.attr("noop_with_empty_axes"))
        n = static_length(expect(ctx, 1, "int", rank=1)) if ctx.has(1) else 0
        axes = ctx.const_ints(1) if ctx.has(1) else []
        if t.shape is None:
            return [t]
        if axes is None:  # known only when running
            if keep:
                return [t.with_shape(1 if d == 1 else UNKNOWN for d in t.shape)]
            if n is None:
                return [t.with_shape(None)]
            if n > len(t.shape):
                raise ctx.error(f"input #1: {n} axes cannot all be distinct axes of {t}")
            if n == 0:
                return [t if noop else t.with_shape(())]
            return [t.with_shape([UNKNOWN] * (len(t.shape) - n))]
        with reported(ctx):
            axes = normalize_axes(axes, len(t.shape))
        if not axes:
            if noop:
                return [t]
            axes = list(range(len(t.shape)))
        if keep:
            return [t.with_shape(1 if i in axes else d for i, d in enumerate(t.shape))]
        return [t.with_shape(d for i, d in enumerate(t.shape) if i not in axes)]

    rule.__doc__ = doc + _SHARED_DOC
    return rule


for _name, (_kind, _doc) in _REDUCTIONS.items():
    op(_name, inputs=(1, 2), attrs=_REDUCE_ATTRS)(_reduction(_kind, _doc))


_ARGMAX_ATTRS = {
    "axis": AttrSpec(int, 0),
    "keepdims": AttrSpec(int, 1),
    "select_last_index": AttrSpec(int, 0),
}


def _arg_extreme(which: str) -> Rule:
    def rule(ctx: InferContext) -> list[Type]:
        t = expect(ctx, 0, "numeric")
        if t.shape is None:
            return [TensorType(DType.int64, None)]
        axis = norm_axis(ctx, ctx.attr("axis"), len(t.shape))
        if t.shape[axis] == 0:
            raise ctx.error(f"axis {axis} of {t} is empty, so it has no {which} entry")
        dims = list(t.shape)
        if ctx.attr("keepdims"):
            dims[axis] = 1
        else:
            del dims[axis]
        return [TensorType(DType.int64, dims)]

    rule.__doc__ = (
        f"The int64 index of the {which} entry along ``axis``; ties give the first index (the "
        "last with select_last_index=1). keepdims=1 keeps the axis with size 1."
    )
    return rule


op("ArgMax", attrs=_ARGMAX_ATTRS)(_arg_extreme("largest"))
op("ArgMin", attrs=_ARGMAX_ATTRS)(_arg_extreme("smallest"))


def running(ctx: InferContext, t: TensorType) -> list[Type]:
    """The type of CumSum and CumProd: their input ``t``, running along the axis that the integer
    scalar input #1 holds."""
    axis = scalar_int(ctx, 1)
    if axis is not None and t.shape is not None:
        norm_axis(ctx, axis, len(t.shape))
    return [t]


@op("CumSum", inputs=2, attrs={"exclusive": AttrSpec(int, 0), "reverse": AttrSpec(int, 0)})
def _cumsum(ctx: InferContext) -> list[Type]:
    """Running sums of ``x`` along the axis held by the integer scalar ``axis``; exclusive=1 leaves
    each entry out of its own sum, reverse=1 sums from the end."""
    return running(ctx, expect(ctx, 0, "numeric"))


PREFIX_SUM_DTYPES = frozenset(
    {DType.float16, DType.bfloat16, DType.float32, DType.float64}
    | {DType.int8, DType.int16, DType.int32, DType.int64}
    | {DType.uint8, DType.uint16, DType.uint32, DType.uint64}
)
"""The element types of PrefixSum: those whose one Add of two values NumPy's ``add`` in that
type gives bit for bit (one rounding per sum, or wrapping), so a running sum is the same sequence
of Adds a loop makes."""


@op("PrefixSum", attrs={"axis": AttrSpec(int, 0), "reverse": AttrSpec(int, 0)})
def _prefix_sum(ctx: InferContext) -> list[Type]:
    """Running sums of ``x`` along ``axis``, added one element at a time in ``x``'s own type,
    exactly as a Loop carrying ``acc = Add(acc, x[k])`` adds: ``y[0] = x[0]`` and
    ``y[k] = y[k-1] + x[k]``, each sum one Add (floats rounded once per step, integers
    wrapping); reverse=1 runs from the end. CumSum may accumulate in a wider type; this op never
    does. Not an ONNX op: ``loop_prefix_sums`` makes it inside the compiled backend's plans, and
    the ONNX and OpenVINO writers refuse it."""
    t = expect_one_of(ctx, 0, PREFIX_SUM_DTYPES)
    if t.shape is not None:
        norm_axis(ctx, ctx.attr("axis"), len(t.shape))
    return [t]


@op("Softmax", attrs={"axis": AttrSpec(int, -1)})
def _softmax(ctx: InferContext) -> list[Type]:
    """exp(x) / sum(exp(x)) along ``axis``."""
    t = expect(ctx, 0, "float")
    if t.shape is not None:
        norm_axis(ctx, ctx.attr("axis"), len(t.shape))
    return [t]
