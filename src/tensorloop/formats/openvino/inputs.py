"""A layer's inputs for the OpenVINO converters, and the small steps many converters share.

Types, ranks, constants, scalars, vectors and axes of inputs; constants, casts, reshapes and
slices."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...ir.graph import Value
from ...tensor.dtypes import DType
from ...tensor.types import TensorType
from .convert import LayerContext


def has_input(inputs: Sequence[Value | None], index: int) -> bool:
    return index < len(inputs) and inputs[index] is not None


def type_of(ctx: LayerContext, value: Value) -> TensorType:
    if not isinstance(value.type, TensorType):
        raise ctx.error(f"expected a tensor input, got {value.type}")
    return value.type


def rank_of(ctx: LayerContext, index: int, what: str) -> int:
    t = type_of(ctx, ctx.input(index))
    if t.rank is None:
        raise ctx.error(f"input #{index} ({what}) needs a known rank, got {t}")
    return t.rank


def const_ints(ctx: LayerContext, index: int, what: str) -> list[int]:
    data = ctx.const_input(index, what)
    if data.dtype.kind not in "iu":
        raise ctx.error(f"input #{index} ({what}) must hold integers, got {data.dtype}")
    return [int(v) for v in data.reshape(-1)]


def const_int(ctx: LayerContext, index: int, what: str) -> int:
    values = const_ints(ctx, index, what)
    if len(values) != 1:
        raise ctx.error(f"input #{index} ({what}) must hold one integer, got {values}")
    return values[0]


def static_dims(ctx: LayerContext, value: Value, what: str) -> list[int]:
    shape = type_of(ctx, value).shape
    if shape is None or not all(isinstance(d, int) for d in shape):
        raise ctx.error(f"{what} needs a static shape, got {type_of(ctx, value)}")
    return [int(d) for d in shape]


def float_input(ctx: LayerContext, index: int, what: str) -> Value:
    x = ctx.input(index)
    if not type_of(ctx, x).dtype.is_float:
        raise ctx.error(f"input #{index} ({what}) must hold floats, got {type_of(ctx, x)}")
    return x


def int_vector(ctx: LayerContext, index: int, what: str) -> Value:
    """Input ``index`` as a 1-D integer tensor: OpenVINO takes a scalar where ONNX wants 1-D."""
    value = ctx.input(index)
    t = type_of(ctx, value)
    if not t.dtype.is_int:
        raise ctx.error(f"input #{index} ({what}) must hold integers, got {t}")
    if t.rank != 0:
        return value
    data = ctx.const(index)
    if data is not None:
        return ctx.em.ints([int(data)])
    return ctx.em.op("Unsqueeze", [value, ctx.em.ints([0])])


def scalar_input(ctx: LayerContext, index: int, what: str) -> Value:
    """Input ``index`` as a scalar (a one-element 1-D tensor is reshaped)."""
    value = ctx.input(index)
    t = type_of(ctx, value)
    if t.rank == 0:
        return value
    if t.shape == (1,):
        return ctx.em.op("Reshape", [value, ctx.em.ints([])])
    raise ctx.error(f"input #{index} ({what}) must be a scalar, got {t}")


def index_type_attr(ctx: LayerContext, key: str = "output_type", default: str = "i64") -> DType:
    """The element type attribute ``key`` of an index output: i32 or i64."""
    to = ctx.element_type(key, default)
    if to not in (DType.int32, DType.int64):
        raise ctx.error(f"attribute '{key}' is {to}, expected i32 or i64")
    return to


def cast_to(ctx: LayerContext, value: Value, to: DType) -> Value:
    return value if type_of(ctx, value).dtype is to else ctx.em.op("Cast", [value], {"to": to})


def scalar_const(ctx: LayerContext, value: Any, dt: DType) -> Value:
    return ctx.em.const(np.array(value, dtype=dt.numpy))


def reshape(ctx: LayerContext, x: Value, dims: Sequence[int]) -> Value:
    return ctx.em.op("Reshape", [x, ctx.em.ints(list(dims))])


def static_slice(
    ctx: LayerContext,
    x: Value,
    starts: Sequence[int],
    ends: Sequence[int],
    axes: Sequence[int],
    steps: Sequence[int] | None = None,
) -> Value:
    """``x`` sliced by constant bounds."""
    em = ctx.em
    args = [x, em.ints(list(starts)), em.ints(list(ends)), em.ints(list(axes))]
    if steps is not None:
        args.append(em.ints(list(steps)))
    return em.op("Slice", args)


def normalized_axes(ctx: LayerContext, axes: Sequence[int], rank: int, what: str) -> list[int]:
    out = []
    for a in axes:
        if not -rank <= a < rank:
            raise ctx.error(f"{what} {list(axes)}: {a} is out of range for rank {rank}")
        out.append(a + rank if a < 0 else a)
    return out


def check_auto_broadcast(ctx: LayerContext, values: Sequence[Value]) -> None:
    """auto_broadcast="none" demands equal shapes; "numpy" is what the core ops do anyway."""
    if ctx.choice_attr("auto_broadcast", ("numpy", "none"), "numpy") == "numpy":
        return
    shapes = [type_of(ctx, v).shape for v in values]
    known = [s for s in shapes if s is not None]
    for s in known[1:]:
        if len(s) != len(known[0]) or any(
            isinstance(a, int) and isinstance(b, int) and a != b
            for a, b in zip(s, known[0], strict=True)
        ):
            listed = " vs ".join(str(type_of(ctx, v)) for v in values)
            raise ctx.error(f"auto_broadcast is 'none', but the input shapes differ: {listed}")
