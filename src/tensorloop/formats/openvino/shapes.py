"""OpenVINO shape layers: Reshape, (Un)Squeeze, Concat, Transpose, Split, Pad, Broadcast, Range."""

from __future__ import annotations

from ...ir.graph import Value
from ...tensor.dtypes import DType
from .convert import LayerContext, converter
from .inputs import (
    cast_to,
    const_int,
    const_ints,
    has_input,
    int_vector,
    normalized_axes,
    rank_of,
    scalar_input,
    type_of,
)


@converter("Reshape")
def _reshape(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    special_zero = ctx.bool_attr("special_zero")
    shape = int_vector(ctx, 1, "shape")
    return [ctx.em.op("Reshape", [ctx.input(0), shape], {"allowzero": 0 if special_zero else 1})]


@converter("Squeeze")
def _squeeze(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    x = ctx.input(0)
    if not has_input(inputs, 1):
        return [ctx.em.op("Squeeze", [x])]
    if ctx.const(1) is None:
        return [ctx.em.op("Squeeze", [x, int_vector(ctx, 1, "axes")])]
    listed = const_ints(ctx, 1, "axes")
    if not listed:
        return [ctx.em.op("Squeeze", [x])]
    shape = type_of(ctx, x).shape
    if shape is None:
        return [ctx.em.op("Squeeze", [x, ctx.em.ints(listed)])]
    # Since 2024.3 an axis whose size is not 1 is skipped (a dynamic one counts as squeezable).
    normalized = normalized_axes(ctx, listed, len(shape), "axes")
    axes = sorted({a for a in normalized if not isinstance(shape[a], int) or shape[a] == 1})
    if not axes:
        return [ctx.em.op("Identity", [x])]
    return [ctx.em.op("Squeeze", [x, ctx.em.ints(axes)])]


@converter("Unsqueeze")
def _unsqueeze(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    x = ctx.input(0)
    if ctx.const(1) is None:
        return [ctx.em.op("Unsqueeze", [x, int_vector(ctx, 1, "axes")])]
    # OpenVINO ignores a repeated axis where ONNX rejects it.
    axes = list(dict.fromkeys(const_ints(ctx, 1, "axes")))
    return [ctx.em.op("Unsqueeze", [x, ctx.em.ints(axes)])]


@converter("Concat")
def _concat(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    values = [ctx.input(i) for i in range(len(inputs))]
    return [ctx.em.op("Concat", values, {"axis": ctx.int_attr("axis")})]


@converter("Transpose")
def _transpose(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    order = const_ints(ctx, 1, "order")
    # An empty order reverses the axes, as ONNX's absent perm does.
    return [ctx.em.op("Transpose", [ctx.input(0)], {"perm": order} if order else {})]


@converter("ShapeOf")
def _shape_of(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    to = ctx.element_type("output_type", "i64")
    if to not in (DType.int32, DType.int64):
        raise ctx.error(f"attribute 'output_type' is {to}, expected i32 or i64")
    return [cast_to(ctx, ctx.em.op("Shape", [ctx.input(0)]), to)]


@converter("Split")
def _split(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    parts = ctx.int_attr("num_splits")
    if parts < 1:
        raise ctx.error(f"attribute 'num_splits' is {parts}, expected at least 1")
    x, axis = ctx.input(0), const_int(ctx, 1, "axis")
    shape = type_of(ctx, x).shape
    if shape is not None:
        dim = shape[normalized_axes(ctx, [axis], len(shape), "axis")[0]]
        # ONNX would make the last part smaller; OpenVINO requires equal parts.
        if isinstance(dim, int) and dim % parts:
            raise ctx.error(f"axis {axis} of size {dim} does not split into {parts} equal parts")
    return ctx.em.ops("Split", [x], {"axis": axis, "num_outputs": parts})


@converter("VariadicSplit")
def _variadic_split(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    em, x = ctx.em, ctx.input(0)
    rank = rank_of(ctx, 0, "data")
    axis = normalized_axes(ctx, [const_int(ctx, 1, "axis")], rank, "axis")[0]
    shape = type_of(ctx, x).shape
    size_here = None if shape is None else shape[axis]
    dim = size_here if isinstance(size_here, int) else None
    data = ctx.const(2)
    if data is not None:
        lengths = const_ints(ctx, 2, "split_lengths")
        if lengths.count(-1) > 1 or any(n < -1 for n in lengths):
            raise ctx.error(f"split_lengths {lengths} may hold one -1 and no other negative")
        if -1 not in lengths:
            sizes = em.ints(lengths)
        else:
            i, rest = lengths.index(-1), sum(n for n in lengths if n != -1)
            if dim is not None:
                if dim < rest:
                    raise ctx.error(f"split_lengths {lengths} exceed axis {axis} of size {dim}")
                sizes = em.ints([dim - rest if n == -1 else n for n in lengths])
            else:  # the -1 part's size is known only when running
                size = em.op("Shape", [x], {"start": axis, "end": axis + 1})
                part = em.op("Sub", [size, em.ints([rest])])
                sizes = em.op(
                    "Concat", [em.ints(lengths[:i]), part, em.ints(lengths[i + 1 :])], {"axis": 0}
                )
    else:
        # Computed lengths: the (at most one) -1 becomes the axis size minus the other lengths,
        # whose sum is the total plus one.
        lengths_v = cast_to(ctx, int_vector(ctx, 2, "split_lengths"), DType.int64)
        size = em.op("Shape", [x], {"start": axis, "end": axis + 1})
        others = em.op("Add", [em.op("ReduceSum", [lengths_v], {"keepdims": 1}), em.ints([1])])
        missing = em.op("Sub", [size, others])
        is_rest = em.op("Equal", [lengths_v, em.ints([-1])])
        sizes = em.op("Where", [is_rest, missing, lengths_v])
    return em.ops("Split", [x, sizes], {"axis": axis})


@converter("Pad")
def _pad(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    mode = ctx.choice_attr("pad_mode", ("constant", "edge", "reflect", "symmetric"), "constant")
    if mode == "symmetric":
        raise ctx.error("attribute 'pad_mode' is 'symmetric', which tensorloop does not support")
    em = ctx.em
    begins = cast_to(ctx, int_vector(ctx, 1, "pads_begin"), DType.int64)
    ends = cast_to(ctx, int_vector(ctx, 2, "pads_end"), DType.int64)
    if ctx.const(1) is not None and ctx.const(2) is not None:  # the output shape stays known
        pads = em.ints(const_ints(ctx, 1, "pads_begin") + const_ints(ctx, 2, "pads_end"))
    else:
        pads = em.op("Concat", [begins, ends], {"axis": 0})
    ins: list[Value | None] = [ctx.input(0), pads]
    if mode == "constant" and has_input(inputs, 3):
        ins.append(scalar_input(ctx, 3, "pad_value"))
    return [em.op("Pad", ins, {"mode": mode})]


@converter("Broadcast")
def _broadcast(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    em, x = ctx.em, ctx.input(0)
    # Broadcast-1 writes its explicit mode as "none" (the spec says "explicit").
    mode = ctx.choice_attr("mode", ("numpy", "bidirectional", "explicit", "none"), "numpy")
    target = int_vector(ctx, 1, "target_shape")
    # numpy mode broadcasts one way only; for the inputs it admits, that agrees with Expand.
    if mode in ("explicit", "none"):
        if not has_input(inputs, 2):
            raise ctx.error("mode 'explicit' needs input #2 (axes_mapping)")
        mapping = const_ints(ctx, 2, "axes_mapping")
        t = type_of(ctx, target)
        n = t.shape[0] if t.shape is not None and len(t.shape) == 1 else None
        if not isinstance(n, int):
            raise ctx.error(f"mode 'explicit' needs target_shape of a known length, got {t}")
        if len(mapping) != rank_of(ctx, 0, "data"):
            raise ctx.error(f"axes_mapping {mapping} does not name one axis per data dim")
        if mapping != sorted(set(mapping)) or any(not 0 <= a < n for a in mapping):
            raise ctx.error(
                f"axes_mapping {mapping} must be increasing axes of the rank-{n} output"
            )
        missing = [k for k in range(n) if k not in mapping]
        if missing:
            x = em.op("Unsqueeze", [x, em.ints(missing)])
    return [em.op("Expand", [x, target])]


@converter("Range")
def _range(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    bounds = [scalar_input(ctx, i, w) for i, w in enumerate(("start", "stop", "step"))]
    if ctx.has_attr("output_type"):
        # Range-4 casts start, stop and step to output_type before it counts or steps.
        to = ctx.element_type("output_type")
        if to is DType.bool:
            raise ctx.error("attribute 'output_type' is boolean, expected a numeric type")
        bounds = [cast_to(ctx, v, to) for v in bounds]
    return [ctx.em.op("Range", bounds)]
