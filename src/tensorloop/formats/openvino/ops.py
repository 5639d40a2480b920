"""OpenVINO elementwise, shape, reduction and state layers, lowered to tensorloop's core ops."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...ir.emit import Emitter
from ...ir.graph import Graph, Node, Value
from ...tensor.dtypes import DType
from ...tensor.types import TensorType
from .convert import LayerContext, converter
from .reader import parse_shape

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)

# -- shared helpers -------------------------------------------------------------------------------


def _has(inputs: Sequence[Value | None], index: int) -> bool:
    return index < len(inputs) and inputs[index] is not None


def _type(ctx: LayerContext, value: Value) -> TensorType:
    if not isinstance(value.type, TensorType):
        raise ctx.error(f"expected a tensor input, got {value.type}")
    return value.type


def _rank(ctx: LayerContext, index: int, what: str) -> int:
    t = _type(ctx, ctx.input(index))
    if t.rank is None:
        raise ctx.error(f"input #{index} ({what}) needs a known rank, got {t}")
    return t.rank


def _const_ints(ctx: LayerContext, index: int, what: str) -> list[int]:
    data = ctx.const_input(index, what)
    if data.dtype.kind not in "iu":
        raise ctx.error(f"input #{index} ({what}) must hold integers, got {data.dtype}")
    return [int(v) for v in data.reshape(-1)]


def _const_int(ctx: LayerContext, index: int, what: str) -> int:
    values = _const_ints(ctx, index, what)
    if len(values) != 1:
        raise ctx.error(f"input #{index} ({what}) must hold one integer, got {values}")
    return values[0]


def _int_vector(ctx: LayerContext, index: int, what: str) -> Value:
    """Input ``index`` as a 1-D integer tensor: OpenVINO takes a scalar where ONNX wants 1-D."""
    value = ctx.input(index)
    t = _type(ctx, value)
    if not t.dtype.is_int:
        raise ctx.error(f"input #{index} ({what}) must hold integers, got {t}")
    if t.rank != 0:
        return value
    data = ctx.const(index)
    if data is not None:
        return ctx.em.ints([int(data)])
    return ctx.em.op("Unsqueeze", [value, ctx.em.ints([0])])


def _scalar(ctx: LayerContext, index: int, what: str) -> Value:
    """Input ``index`` as a scalar (a one-element 1-D tensor is reshaped)."""
    value = ctx.input(index)
    t = _type(ctx, value)
    if t.rank == 0:
        return value
    if t.shape == (1,):
        return ctx.em.op("Reshape", [value, ctx.em.ints([])])
    raise ctx.error(f"input #{index} ({what}) must be a scalar, got {t}")


def _cast(ctx: LayerContext, value: Value, to: DType) -> Value:
    return value if _type(ctx, value).dtype is to else ctx.em.op("Cast", [value], {"to": to})


def _scalar_const(ctx: LayerContext, value: Any, dt: DType) -> Value:
    return ctx.em.const(np.array(value, dtype=dt.numpy))


def _normalized(ctx: LayerContext, axes: Sequence[int], rank: int, what: str) -> list[int]:
    out = []
    for a in axes:
        if not -rank <= a < rank:
            raise ctx.error(f"{what} {list(axes)}: {a} is out of range for rank {rank}")
        out.append(a + rank if a < 0 else a)
    return out


def _check_auto_broadcast(ctx: LayerContext, values: Sequence[Value]) -> None:
    """auto_broadcast="none" demands equal shapes; "numpy" is what the core ops do anyway."""
    if ctx.choice_attr("auto_broadcast", ("numpy", "none"), "numpy") == "numpy":
        return
    shapes = [_type(ctx, v).shape for v in values]
    known = [s for s in shapes if s is not None]
    for s in known[1:]:
        if len(s) != len(known[0]) or any(
            isinstance(a, int) and isinstance(b, int) and a != b
            for a, b in zip(s, known[0], strict=True)
        ):
            listed = " vs ".join(str(_type(ctx, v)) for v in values)
            raise ctx.error(f"auto_broadcast is 'none', but the input shapes differ: {listed}")


# -- elementwise ----------------------------------------------------------------------------------

Lowering = Callable[[LayerContext, Value, Value], Value]


def _core_binary(op: str) -> Lowering:
    return lambda ctx, a, b: ctx.em.op(op, [a, b])


def _not_equal(ctx: LayerContext, a: Value, b: Value) -> Value:
    return ctx.em.op("Not", [ctx.em.op("Equal", [a, b])])


def _divide(ctx: LayerContext, a: Value, b: Value) -> Value:
    em = ctx.em
    floor = ctx.bool_attr("m_pythondiv", True)
    q = em.op("Div", [a, b])
    dt = _type(ctx, q).dtype
    # m_pythondiv floors signed integer quotients; Div truncates toward zero, so step down by
    # one where the remainder is non-zero and its sign differs from the divisor's.
    if not (floor and dt.is_int and dt.is_signed):
        return q
    zero = _scalar_const(ctx, 0, dt)
    r = em.op("Sub", [a, em.op("Mul", [q, b])])
    differ = em.op("Xor", [em.op("Less", [r, zero]), em.op("Less", [b, zero])])
    fix = em.op("And", [em.op("Not", [em.op("Equal", [r, zero])]), differ])
    return em.op("Sub", [q, em.op("Cast", [fix], {"to": dt})])


_BINARY: dict[str, Lowering] = {
    "Add": _core_binary("Add"),
    "Subtract": _core_binary("Sub"),
    "Multiply": _core_binary("Mul"),
    "Divide": _divide,
    "Power": _core_binary("Pow"),
    "Maximum": _core_binary("Max"),
    "Minimum": _core_binary("Min"),
    "Equal": _core_binary("Equal"),
    "NotEqual": _not_equal,
    "Less": _core_binary("Less"),
    "Greater": _core_binary("Greater"),
    "LessEqual": _core_binary("LessOrEqual"),
    "GreaterEqual": _core_binary("GreaterOrEqual"),
    "LogicalAnd": _core_binary("And"),
    "LogicalOr": _core_binary("Or"),
    "LogicalXor": _core_binary("Xor"),
}

_UNARY: dict[str, str] = {
    "Sigmoid": "Sigmoid",
    "Tanh": "Tanh",
    "ReLU": "Relu",
    "Exp": "Exp",
    "Log": "Log",
    "Sqrt": "Sqrt",
    "LogicalNot": "Not",
    "Abs": "Abs",
    "Negative": "Neg",
}


def _binary(lower: Lowering) -> Callable[[LayerContext, list[Value | None]], list[Value]]:
    def convert(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
        a, b = ctx.input(0), ctx.input(1)
        _check_auto_broadcast(ctx, [a, b])
        return [lower(ctx, a, b)]

    return convert


def _unary(op: str) -> Callable[[LayerContext, list[Value | None]], list[Value]]:
    def convert(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
        return [ctx.em.op(op, [ctx.input(0)])]

    return convert


for _layer_type, _lower in _BINARY.items():
    converter(_layer_type)(_binary(_lower))
for _layer_type, _op in _UNARY.items():
    converter(_layer_type)(_unary(_op))


@converter("CumSum")
def _cumsum(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    axis = _scalar(ctx, 1, "axis") if _has(inputs, 1) else ctx.em.const(np.int64(0))
    flags = {
        "exclusive": int(ctx.bool_attr("exclusive", "false")),
        "reverse": int(ctx.bool_attr("reverse", "false")),
    }
    return [ctx.em.op("CumSum", [ctx.input(0), axis], flags)]


@converter("Pad")
def _pad(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    mode = ctx.choice_attr("pad_mode", ("constant", "edge", "reflect", "symmetric"), "constant")
    if mode == "symmetric":
        raise ctx.error("attribute 'pad_mode' is 'symmetric', which tensorloop does not support")
    em = ctx.em
    begins = _cast(ctx, _int_vector(ctx, 1, "pads_begin"), DType.int64)
    ends = _cast(ctx, _int_vector(ctx, 2, "pads_end"), DType.int64)
    pads = em.op("Concat", [begins, ends], {"axis": 0})
    ins: list[Value | None] = [ctx.input(0), pads]
    if mode == "constant" and _has(inputs, 3):
        ins.append(_scalar(ctx, 3, "pad_value"))
    return [em.op("Pad", ins, {"mode": mode})]


@converter("TopK")
def _topk(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    x = ctx.input(0)
    mode = ctx.choice_attr("mode", ("max", "min"))
    sort = ctx.choice_attr("sort", ("value", "index", "none"))
    index_type = ctx.element_type("index_element_type", "i32")
    k = _int_vector(ctx, 1, "k")
    if sort == "index" and _const_ints(ctx, 1, "k") != [1]:
        raise ctx.error("TopK with sort='index' and k other than 1 is not supported yet")
    attrs = {"axis": ctx.int_attr("axis"), "largest": int(mode == "max"), "sorted": 1}
    values, index = ctx.em.ops("TopK", [x, k], attrs)
    return [values, _cast(ctx, index, index_type)]


@converter("Select")
def _select(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    values = [ctx.input(i) for i in range(3)]
    _check_auto_broadcast(ctx, values)
    return [ctx.em.op("Where", values)]


@converter("Clamp")
def _clamp(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    x = ctx.input(0)
    lo, hi = ctx.float_attr("min"), ctx.float_attr("max")
    if math.isnan(lo) or math.isnan(hi) or lo > hi:
        raise ctx.error(f"attributes 'min' and 'max' must satisfy min <= max, got {lo} and {hi}")
    dt = _type(ctx, x).dtype
    low: float | int = lo
    high: float | int = hi
    if dt.is_int:
        # The spec converts min with ceil and max with floor; bounds beyond the type (or
        # infinite) clip to its range rather than overflow.
        info = np.iinfo(dt.numpy)
        low, high = (
            int(info.min) if v <= info.min else int(info.max) if v >= info.max else int(r(v))
            for v, r in ((lo, math.ceil), (hi, math.floor))
        )
    low_v, high_v = _scalar_const(ctx, low, dt), _scalar_const(ctx, high, dt)
    return [ctx.em.op("Min", [ctx.em.op("Max", [x, low_v]), high_v])]


@converter("SoftMax")
def _softmax(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    axis = ctx.int_attr("axis", 1)
    if axis < 0 and ctx.layer.version == "opset1":
        raise ctx.error(f"attribute 'axis' is {axis}: SoftMax-1 takes a non-negative axis")
    return [ctx.em.op("Softmax", [ctx.input(0)], {"axis": axis})]


@converter("Convert")
def _convert(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    to = ctx.element_type("destination_type")
    data = ctx.const(0)
    if data is not None:
        # Fold it, so that weights saved as f16 with a decompressing Convert stay constants for
        # the converters that need constant inputs. astype is exactly what Cast computes.
        with np.errstate(all="ignore"):
            return [ctx.em.const(data.astype(to.numpy))]
    return [ctx.em.op("Cast", [ctx.input(0)], {"to": to})]


# -- matrices -------------------------------------------------------------------------------------


@converter("MatMul")
def _matmul(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    operands = []
    for i, key in enumerate(("transpose_a", "transpose_b")):
        value = ctx.input(i)
        # A 1-D operand is unsqueezed to a matrix whatever its transpose flag says.
        if ctx.bool_attr(key, False) and _type(ctx, value).rank != 1:
            rank = _rank(ctx, i, key.replace("transpose", "operand"))
            perm = [*range(rank - 2), rank - 1, rank - 2]
            value = ctx.em.op("Transpose", [value], {"perm": perm})
        operands.append(value)
    return [ctx.em.op("MatMul", operands)]


# -- shapes ---------------------------------------------------------------------------------------


@converter("Reshape")
def _reshape(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    special_zero = ctx.bool_attr("special_zero")
    shape = _int_vector(ctx, 1, "shape")
    return [ctx.em.op("Reshape", [ctx.input(0), shape], {"allowzero": 0 if special_zero else 1})]


@converter("Squeeze")
def _squeeze(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    x = ctx.input(0)
    if not _has(inputs, 1):
        return [ctx.em.op("Squeeze", [x])]
    if ctx.const(1) is None:
        return [ctx.em.op("Squeeze", [x, _int_vector(ctx, 1, "axes")])]
    listed = _const_ints(ctx, 1, "axes")
    if not listed:
        return [ctx.em.op("Squeeze", [x])]
    shape = _type(ctx, x).shape
    if shape is None:
        return [ctx.em.op("Squeeze", [x, ctx.em.ints(listed)])]
    # Since 2024.3 an axis whose size is not 1 is skipped (a dynamic one counts as squeezable).
    normalized = _normalized(ctx, listed, len(shape), "axes")
    axes = sorted({a for a in normalized if not isinstance(shape[a], int) or shape[a] == 1})
    if not axes:
        return [ctx.em.op("Identity", [x])]
    return [ctx.em.op("Squeeze", [x, ctx.em.ints(axes)])]


@converter("Unsqueeze")
def _unsqueeze(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    x = ctx.input(0)
    if ctx.const(1) is None:
        return [ctx.em.op("Unsqueeze", [x, _int_vector(ctx, 1, "axes")])]
    # OpenVINO ignores a repeated axis where ONNX rejects it.
    axes = list(dict.fromkeys(_const_ints(ctx, 1, "axes")))
    return [ctx.em.op("Unsqueeze", [x, ctx.em.ints(axes)])]


@converter("Concat")
def _concat(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    values = [ctx.input(i) for i in range(len(inputs))]
    return [ctx.em.op("Concat", values, {"axis": ctx.int_attr("axis")})]


@converter("Transpose")
def _transpose(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    order = _const_ints(ctx, 1, "order")
    # An empty order reverses the axes, as ONNX's absent perm does.
    return [ctx.em.op("Transpose", [ctx.input(0)], {"perm": order} if order else {})]


@converter("ShapeOf")
def _shape_of(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    to = ctx.element_type("output_type", "i64")
    if to not in (DType.int32, DType.int64):
        raise ctx.error(f"attribute 'output_type' is {to}, expected i32 or i64")
    return [_cast(ctx, ctx.em.op("Shape", [ctx.input(0)]), to)]


@converter("Split")
def _split(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    parts = ctx.int_attr("num_splits")
    if parts < 1:
        raise ctx.error(f"attribute 'num_splits' is {parts}, expected at least 1")
    x, axis = ctx.input(0), _const_int(ctx, 1, "axis")
    shape = _type(ctx, x).shape
    if shape is not None:
        dim = shape[_normalized(ctx, [axis], len(shape), "axis")[0]]
        # ONNX would make the last part smaller; OpenVINO requires equal parts.
        if isinstance(dim, int) and dim % parts:
            raise ctx.error(f"axis {axis} of size {dim} does not split into {parts} equal parts")
    return ctx.em.ops("Split", [x], {"axis": axis, "num_outputs": parts})


@converter("VariadicSplit")
def _variadic_split(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    em, x = ctx.em, ctx.input(0)
    rank = _rank(ctx, 0, "data")
    axis = _normalized(ctx, [_const_int(ctx, 1, "axis")], rank, "axis")[0]
    shape = _type(ctx, x).shape
    size_here = None if shape is None else shape[axis]
    dim = size_here if isinstance(size_here, int) else None
    data = ctx.const(2)
    if data is not None:
        lengths = _const_ints(ctx, 2, "split_lengths")
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
        lengths_v = _cast(ctx, _int_vector(ctx, 2, "split_lengths"), DType.int64)
        size = em.op("Shape", [x], {"start": axis, "end": axis + 1})
        others = em.op("Add", [em.op("ReduceSum", [lengths_v], {"keepdims": 1}), em.ints([1])])
        missing = em.op("Sub", [size, others])
        is_rest = em.op("Equal", [lengths_v, em.ints([-1])])
        sizes = em.op("Where", [is_rest, missing, lengths_v])
    return em.ops("Split", [x, sizes], {"axis": axis})


@converter("Slice")
def _slice(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    start, stop, step = (
        _int_vector(ctx, i, w) for i, w in ((1, "start"), (2, "stop"), (3, "step"))
    )
    axes = _int_vector(ctx, 4, "axes") if _has(inputs, 4) else None
    # Slice-8 takes (start, stop, step, axes); ONNX's Slice takes (starts, ends, axes, steps).
    return [ctx.em.op("Slice", [ctx.input(0), start, stop, axes, step])]


def _mask(ctx: LayerContext, key: str, required: bool = False) -> list[bool]:
    bits = ctx.ints_attr(key) if required else ctx.ints_attr(key, "")
    if any(b not in (0, 1) for b in bits):
        raise ctx.error(f"attribute '{key}' is {bits}, expected a list of 0s and 1s")
    return [b == 1 for b in bits]


@converter("StridedSlice")
def _strided_slice(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    em, x = ctx.em, ctx.input(0)
    rank = _rank(ctx, 0, "data")
    begin_mask, end_mask = _mask(ctx, "begin_mask", True), _mask(ctx, "end_mask", True)
    new_axis, shrink, ellipsis = (
        _mask(ctx, k) for k in ("new_axis_mask", "shrink_axis_mask", "ellipsis_mask")
    )
    lengths = set()
    for i, what in ((1, "begin"), (2, "end")):
        t = _type(ctx, ctx.input(i))
        if t.shape is None or len(t.shape) != 1 or not isinstance(t.shape[0], int):
            raise ctx.error(f"input #{i} ({what}) must be 1-D of a known length, got {t}")
        lengths.add(t.shape[0])
    strides = _const_ints(ctx, 3, "stride") if _has(inputs, 3) else None
    n = lengths.pop() if len(lengths) == 1 else -1
    if n < 0 or (strides is not None and len(strides) != n):
        raise ctx.error("begin, end and stride differ in length")
    strides = strides or [1] * n

    def bit(mask: list[bool], i: int) -> bool:
        return i < len(mask) and mask[i]

    if sum(bit(ellipsis, i) for i in range(n)) > 1:
        raise ctx.error(
            f"attribute 'ellipsis_mask' is {ctx.attr('ellipsis_mask')!r}: more than one bit"
        )
    # Each spec entry is, by precedence: an ellipsis (whole dims), a new axis, a shrink (one index
    # of one dim), or a slice of one dim. Input dims no entry reaches are kept whole.
    consumed = sum(not bit(ellipsis, i) and not bit(new_axis, i) for i in range(n))
    if consumed > rank:
        raise ctx.error(f"begin/end index {consumed} dims, but the data has rank {rank}")
    entries: list[tuple[int, int]] = []  # (spec index, input dim) of each slice or shrink
    squeezed: list[int] = []  # input dims that shrink removes
    inserted: list[int] = []  # output positions of new axes
    dim = out = 0
    for i in range(n):
        if bit(ellipsis, i):
            dim, out = dim + rank - consumed, out + rank - consumed
        elif bit(new_axis, i):
            inserted.append(out)
            out += 1
        else:
            if strides[i] == 0:
                raise ctx.error(f"stride {strides} holds a 0")
            entries.append((i, dim))
            if bit(shrink, i):
                squeezed.append(dim)
            else:
                out += 1
            dim += 1

    # Masked bounds take the whole axis in the direction of the stride (ONNX clamps these).
    def default(i: int, is_begin: bool) -> int:
        forward = strides[i] > 0 or bit(shrink, i)
        return (0 if forward else INT64_MAX) if is_begin else (INT64_MAX if forward else INT64_MIN)

    starts = _bounds(ctx, 1, entries, begin_mask, lambda i: default(i, True))
    ends = _bounds(ctx, 2, entries, end_mask, lambda i: default(i, False))
    steps = [1 if bit(shrink, i) else strides[i] for i, _ in entries]
    is_shrink = [bit(shrink, i) for i, _ in entries]
    if any(is_shrink):
        ends = _shrink_ends(ctx, starts, ends, is_shrink)
    y = x
    if entries:
        bounds = [_as_value(ctx, starts), _as_value(ctx, ends)]
        y = em.op("Slice", [y, *bounds, em.ints([d for _, d in entries]), em.ints(steps)])
    if squeezed:
        y = em.op("Squeeze", [y, em.ints(squeezed)])
    if inserted:
        y = em.op("Unsqueeze", [y, em.ints(inserted)])
    return [em.op("Identity", [y]) if y is x else y]


def _bounds(
    ctx: LayerContext,
    index: int,
    entries: list[tuple[int, int]],
    mask: list[bool],
    default: Callable[[int], int],
) -> list[int] | Value:
    """Begin or end per entry: the input's value, or the default where the mask bit is set."""
    masked = [i < len(mask) and mask[i] for i, _ in entries]
    defaults = [default(i) for i, _ in entries]
    data = ctx.const(index)
    if data is not None:
        flat = [int(v) for v in data.reshape(-1)]
        return [d if m else flat[i] for (i, _), m, d in zip(entries, masked, defaults, strict=True)]
    em = ctx.em
    picked = em.op(
        "Gather", [_cast(ctx, ctx.input(index), DType.int64), em.ints([i for i, _ in entries])]
    )
    if not any(masked):
        return picked
    return em.op("Where", [em.const(np.array(masked)), em.ints(defaults), picked])


def _shrink_ends(
    ctx: LayerContext, starts: list[int] | Value, ends: list[int] | Value, is_shrink: list[bool]
) -> list[int] | Value:
    """A shrunk axis keeps [start, start + 1); for start -1 that end is "past the last"."""
    if isinstance(starts, list) and isinstance(ends, list):
        return [
            (INT64_MAX if s == -1 else s + 1) if k else e
            for s, e, k in zip(starts, ends, is_shrink, strict=True)
        ]
    em = ctx.em
    s = _as_value(ctx, starts)
    last = em.op("Equal", [s, em.ints([-1])])
    one_past = em.op("Where", [last, em.ints([INT64_MAX]), em.op("Add", [s, em.ints([1])])])
    return em.op("Where", [em.const(np.array(is_shrink)), one_past, _as_value(ctx, ends)])


def _as_value(ctx: LayerContext, values: list[int] | Value) -> Value:
    return ctx.em.ints(values) if isinstance(values, list) else values


@converter("Gather")
def _gather(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    data, indices = ctx.input(0), ctx.input(1)
    axis = _const_int(ctx, 2, "axis")
    batch_dims = ctx.int_attr("batch_dims", 0)
    if batch_dims == 0:
        # Negative indices count from the end (Gather-8's rule; earlier versions leave them
        # undefined), as the core Gather does.
        return [ctx.em.op("Gather", [data, indices], {"axis": axis})]
    r, q = _rank(ctx, 0, "data"), _rank(ctx, 1, "indices")
    axis = _normalized(ctx, [axis], r, "axis")[0]
    b = batch_dims + q if batch_dims < 0 else batch_dims
    if not 0 <= b <= min(axis, q):
        raise ctx.error(
            f"attribute 'batch_dims' is {batch_dims}, expected at most axis {axis} and the "
            f"indices' rank {q}"
        )
    return [_batched_gather(ctx, data, indices, axis, b, r, q)]


def _batched_gather(
    ctx: LayerContext, data: Value, indices: Value, axis: int, b: int, r: int, q: int
) -> Value:
    """Gather with b batch dims as one plain Gather: fuse the batch dims into one, B, put B beside
    the gathered axis A and fuse them, and offset each batch's indices by its batch number * A."""
    em = ctx.em
    lead = em.ints([-1])

    def fuse_batch(v: Value) -> Value:
        shape = em.op("Concat", [lead, em.op("Shape", [v], {"start": b})], {"axis": 0})
        return em.op("Reshape", [v, shape])

    flat, idx = fuse_batch(data), fuse_batch(_cast(ctx, indices, DType.int64))
    m = axis - b  # dims between the batch dims and the gathered axis
    rank = r - b + 1
    perm = [*range(1, m + 1), 0, *range(m + 1, rank)]
    moved = em.op("Transpose", [flat], {"perm": perm}) if m else flat
    fused_shape = em.op(
        "Concat",
        [em.op("Shape", [moved], {"end": m}), lead, em.op("Shape", [moved], {"start": m + 2})],
        {"axis": 0},
    )
    fused = em.op("Reshape", [moved, fused_shape])
    size = em.op("Shape", [data], {"start": axis, "end": axis + 1})
    idx = em.op("Where", [em.op("Less", [idx, em.ints([0])]), em.op("Add", [idx, size]), idx])
    batches = em.op("Squeeze", [em.op("Shape", [idx], {"end": 1}), em.ints([0])])
    offsets = em.op("Mul", [em.op("Range", [em.ints(0), batches, em.ints(1)]), size])
    if q > b:
        offsets = em.op("Unsqueeze", [offsets, em.ints(list(range(1, q - b + 1)))])
    picked = em.op("Gather", [fused, em.op("Add", [idx, offsets])], {"axis": m})
    if m:
        out_rank = _type(ctx, picked).rank
        assert out_rank is not None
        picked = em.op("Transpose", [picked], {"perm": [m, *range(m), *range(m + 1, out_rank)]})
    out_shape = em.op(
        "Concat",
        [em.op("Shape", [data], {"end": b}), em.op("Shape", [picked], {"start": 1})],
        {"axis": 0},
    )
    return em.op("Reshape", [picked, out_shape])


@converter("Broadcast")
def _broadcast(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    em, x = ctx.em, ctx.input(0)
    # Broadcast-1 writes its explicit mode as "none" (the spec says "explicit").
    mode = ctx.choice_attr("mode", ("numpy", "bidirectional", "explicit", "none"), "numpy")
    target = _int_vector(ctx, 1, "target_shape")
    # numpy mode broadcasts one way only; for the inputs it admits, that agrees with Expand.
    if mode in ("explicit", "none"):
        if not _has(inputs, 2):
            raise ctx.error("mode 'explicit' needs input #2 (axes_mapping)")
        mapping = _const_ints(ctx, 2, "axes_mapping")
        t = _type(ctx, target)
        n = t.shape[0] if t.shape is not None and len(t.shape) == 1 else None
        if not isinstance(n, int):
            raise ctx.error(f"mode 'explicit' needs target_shape of a known length, got {t}")
        if len(mapping) != _rank(ctx, 0, "data"):
            raise ctx.error(f"axes_mapping {mapping} does not name one axis per data dim")
        if mapping != sorted(set(mapping)) or any(not 0 <= a < n for a in mapping):
            raise ctx.error(
                f"axes_mapping {mapping} must be increasing axes of the rank-{n} output"
            )
        missing = [k for k in range(n) if k not in mapping]
        if missing:
            x = em.op("Unsqueeze", [x, em.ints(missing)])
    return [em.op("Expand", [x, target])]


# -- reductions -----------------------------------------------------------------------------------

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
    rank = _rank(ctx, 0, "data")
    axes = sorted(set(_normalized(ctx, _const_ints(ctx, 1, "axes"), rank, "axes")))
    if not axes:
        return em.op("Identity", [x])
    shape = _type(ctx, x).shape
    assert shape is not None
    dims = [shape[a] for a in axes]
    if not all(isinstance(d, int) for d in dims):
        raise ctx.error(f"ReduceProd needs static sizes on the reduced axes {axes}, got {shape}")
    n = math.prod(int(d) for d in dims)
    if n == 0:  # the empty product is 1: a sum over the same (empty) axes, plus 1
        total = em.op("ReduceSum", [x, em.ints(axes)], {"keepdims": int(keep)})
        return em.op("Add", [total, _scalar_const(ctx, 1, _type(ctx, x).dtype)])
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
        return [lower(ctx, ctx.input(0), _int_vector(ctx, 1, "axes"), keep)]

    return convert


for _layer_type, _reduce in _REDUCTIONS.items():
    converter(_layer_type)(_reduction(_reduce))


# -- generation -----------------------------------------------------------------------------------


@converter("Range")
def _range(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    bounds = [_scalar(ctx, i, w) for i, w in enumerate(("start", "stop", "step"))]
    if ctx.has_attr("output_type"):
        # Range-4 casts start, stop and step to output_type before it counts or steps.
        to = ctx.element_type("output_type")
        if to is DType.bool:
            raise ctx.error("attribute 'output_type' is boolean, expected a numeric type")
        bounds = [_cast(ctx, v, to) for v in bounds]
    return [ctx.em.op("Range", bounds)]


# -- state: ReadValue and Assign ------------------------------------------------------------------


def _state_graph(ctx: LayerContext) -> Graph:
    if ctx.source.scope:
        raise ctx.error(
            f"{ctx.layer.type} inside a loop body is not supported: tensorloop keeps variables "
            "on the top-level graph only"
        )
    return ctx.em.graph


def _variable_id(ctx: LayerContext) -> str:
    name = ctx.attr("variable_id").strip()
    if not name:
        raise ctx.error("attribute 'variable_id' is empty")
    return name


def _flag_name(name: str) -> str:
    """The bool variable telling whether ``name`` has been assigned since the last reset."""
    return f"{name}/initialized"


def _nodes_of(graph: Graph, op: str, variable: str) -> list[Node]:
    return [n for n in graph.nodes if n.op == op and n.attrs.get("variable") == variable]


def _read(ctx: LayerContext, graph: Graph, name: str) -> Value:
    """ReadVariable of ``name`` placed before any Assign to it, so that it sees the value from
    before this run, as OpenVINO's ReadValue does, whichever layer the file lists first."""
    assigns = _nodes_of(graph, "Assign", name)
    em = Emitter(graph, anchor=assigns[0] if assigns else None, prefix=ctx.em.prefix)
    var_type = graph.variables[name].type
    return em.op("ReadVariable", [], {"variable": name, "type": var_type})


def _declared_type(ctx: LayerContext, init: Value | None) -> TensorType:
    """The variable's type: variable_type/variable_shape where static, else the init input's,
    else the output port's."""
    port = ctx.port_type(ctx.layer.outputs[0]) if ctx.layer.outputs else None
    init_t = _type(ctx, init) if init is not None else None
    dtypes = [t.dtype for t in (init_t, port) if t is not None]
    type_text = ctx.attr("variable_type", "").strip().lower()
    if type_text not in ("", "dynamic", "undefined"):
        dtypes.insert(0, ctx.element_type("variable_type"))
    shape_text = ctx.attr("variable_shape", "...")
    shapes = [
        parse_shape(shape_text, ctx.where),
        *(t.shape for t in (init_t, port) if t is not None),
    ]
    static = [s for s in shapes if s is not None and all(isinstance(d, int) for d in s)]
    if not dtypes or not static:
        raise ctx.error(
            f"variable '{ctx.attr('variable_id')}' needs a static type: variable_type is "
            f"{type_text or 'absent'!r}, variable_shape {shape_text!r}"
        )
    declared = TensorType(dtypes[0], static[0])
    if init_t is not None and not declared.compatible(init_t):
        raise ctx.error(f"the init input is {init_t}, but the variable is {declared}")
    return declared


@converter("ReadValue")
def _read_value(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    graph, name = _state_graph(ctx), _variable_id(ctx)
    if _nodes_of(graph, "ReadVariable", name):
        raise ctx.error(f"variable '{name}' is read by a second ReadValue layer")
    init = ctx.input(0) if _has(inputs, 0) else None
    declared = _declared_type(ctx, init)
    init_data = ctx.const(0) if init is not None else None
    existing = graph.variables.get(name)  # made by an Assign converted before this layer
    if existing is not None and not existing.type.compatible(declared):
        raise ctx.error(f"variable '{name}' is assigned {existing.type}, but read as {declared}")
    # A constant init is the variable's initial value, so a reset restores it; a computed one is
    # chosen at run time until the first Assign, tracked by a bool "initialized" variable.
    initial = (
        np.zeros(declared.static_shape, declared.dtype.numpy)
        if init_data is None
        else init_data.astype(declared.dtype.numpy).reshape(declared.static_shape)
    )
    graph.variables.pop(name, None)
    graph.add_variable(name, initial)
    value = _read(ctx, graph, name)
    if init is None or init_data is not None:
        return [value]
    flag = _flag_name(name)
    if flag in graph.variables:
        raise ctx.error(f"variable name '{flag}' is taken; tensorloop needs it for '{name}'")
    graph.add_variable(flag, np.array(False))
    assigned = _read(ctx, graph, flag)
    if _nodes_of(graph, "Assign", name):
        ctx.em.ops("Assign", [ctx.em.const(np.array(True))], {"variable": flag})
    return [ctx.em.op("Where", [assigned, value, init])]


@converter("Assign")
def _assign(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    graph, name = _state_graph(ctx), _variable_id(ctx)
    x = ctx.input(0)
    t = _type(ctx, x)
    var = graph.variables.get(name)
    if var is None:  # its ReadValue comes later; that layer fixes the initial value
        if not t.is_static:
            raise ctx.error(f"variable '{name}' needs a static shape, its Assign gets {t}")
        graph.add_variable(name, np.zeros(t.static_shape, t.dtype.numpy))
    elif not var.type.compatible(t):
        raise ctx.error(f"assigns {t} to variable '{name}', which holds {var.type}")
    ctx.em.ops("Assign", [x], {"variable": name})
    if _flag_name(name) in graph.variables:
        ctx.em.ops("Assign", [ctx.em.const(np.array(True))], {"variable": _flag_name(name)})
    # Assign passes its input through its output port; a new value keeps the input's name.
    return [ctx.em.op("Identity", [x])]
