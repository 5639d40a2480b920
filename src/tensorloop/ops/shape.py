"""Shape ops: Reshape, Transpose, (Un)Squeeze, Concat, Split, Slice, Gather, Expand, Pad, Cast..."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..ir.opdef import AttrSpec, InferContext, op
from ..tensor.dtypes import DType, dtype
from ..tensor.types import UNKNOWN, Dim, TensorType, Type
from .common import broadcast_dims, expect, norm_axis, normalize_axes, reported, static_length

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)
PAD_MODES = ("constant", "reflect", "edge", "wrap")

# Helpers shared with the reference kernels, so both sides agree on the arithmetic; they
# raise ValueError, which each side re-raises as its own kind of error.


def reshape_dims(src: Sequence[Dim] | None, shape: Sequence[int], allowzero: bool) -> list[Dim]:
    """ONNX Reshape's output dims for input dims ``src`` (None: rank unknown)."""
    if any(s < -1 for s in shape):
        raise ValueError(f"shape {list(shape)} holds a negative size other than -1")
    if shape.count(-1) > 1:
        raise ValueError(f"shape {list(shape)} holds more than one -1")
    if allowzero and 0 in shape and -1 in shape:
        raise ValueError(f"shape {list(shape)} holds both 0 and -1, which allowzero=1 forbids")
    out: list[Dim] = []
    for i, s in enumerate(shape):
        if s == 0 and not allowzero:
            if src is not None and i >= len(src):
                raise ValueError(f"shape[{i}] = 0 copies a dim the rank-{len(src)} input lacks")
            out.append(UNKNOWN if src is None else src[i])
        else:
            out.append(s)
    if src is None:
        return [UNKNOWN if d == -1 else d for d in out]
    if -1 in out and 0 in out:
        raise ValueError(f"cannot infer the -1 in {list(shape)}: the other dims hold 0 elements")
    # A copied dim is the same dim on both sides, so it cancels even when it is "?".
    copied = {i for i, s in enumerate(shape) if s == 0 and not allowzero}
    n_in, sym_in = _factor([d for i, d in enumerate(src) if i not in copied])
    n_out, sym_out = _factor([d for i, d in enumerate(out) if i not in copied and d != -1])
    # Symbols cancel when both sides name them; "?" never cancels, being no one's name.
    exact = UNKNOWN not in sym_in and UNKNOWN not in sym_out and not sym_out - sym_in
    rest = sym_in - sym_out
    if -1 not in out:
        if exact and not rest and n_in != n_out:
            raise ValueError(f"cannot reshape {_count(src)} elements into {list(shape)}")
        return out
    if exact and not rest and n_in % n_out:
        raise ValueError(f"cannot reshape {_count(src)} elements into {list(shape)}")
    inferred: Dim = UNKNOWN
    if exact and not rest:
        inferred = n_in // n_out
    elif exact and n_in == n_out and sum(rest.values()) == 1:
        inferred = next(iter(rest))
    return [inferred if d == -1 else d for d in out]


def _factor(dims: Sequence[Dim]) -> tuple[int, Counter[str]]:
    """The product of the static dims, and the symbolic dims as a multiset."""
    return math.prod(d for d in dims if isinstance(d, int)), Counter(
        d for d in dims if isinstance(d, str)
    )


def _count(dims: Sequence[Dim]) -> str:
    """The element count of ``dims``, as a product when some are symbolic."""
    n, symbols = _factor(dims)
    return "*".join([str(n), *symbols.elements()]) if symbols else str(n)


def slice_bounds(dim: int, start: int, end: int, step: int) -> tuple[int, int, int]:
    """ONNX Slice along one axis of size ``dim``: clamped (start, end, count); end -1 means
    "past index 0" for a negative step."""
    if step == 0:
        raise ValueError("steps must be non-zero")
    start, end = start + dim if start < 0 else start, end + dim if end < 0 else end
    if step > 0:
        start, end = min(max(start, 0), dim), min(max(end, 0), dim)
    else:
        start, end = min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)
    return start, end, max(0, -((start - end) // step))


def _whole_axis(start: int, end: int, step: int) -> bool:
    """True if the slice keeps an axis of any size whole (so a symbolic dim survives it)."""
    if step == 1:
        return (start == 0 or start <= INT64_MIN) and end >= INT64_MAX
    return step == -1 and (start == -1 or start >= INT64_MAX) and end <= INT64_MIN


def split_sizes(dim: int, parts: int) -> list[int]:
    """ONNX Split into ``parts`` outputs: ceil(dim / parts) each, the last one smaller."""
    size = -(-dim // parts)
    last = dim - size * (parts - 1)
    if last < 0:
        raise ValueError(f"cannot split {dim} into {parts} parts of {size} but a smaller last")
    return [size] * (parts - 1) + [last]


# Range's stash_type (ONNX opset 27): the ONNX element-type codes of the types a float16 or
# bfloat16 range may be computed in.
RANGE_STASH_TYPES = {1: DType.float32, 11: DType.float64}
_STASHED_RANGE_TYPES = (DType.float16, DType.bfloat16)


def range_stash(dt: DType, stash_type: int) -> DType:
    """The element type ONNX Range computes a range of ``dt`` bounds in: for float16 and
    bfloat16 the type stash_type names (1: float32, the default; 11: float64), else ``dt``
    itself, which stash_type does not affect."""
    if dt not in _STASHED_RANGE_TYPES:
        return dt
    if stash_type not in RANGE_STASH_TYPES:
        raise ValueError(
            f"stash_type must be 1 (float32) or 11 (float64) for {dt} bounds, got {stash_type}"
        )
    return RANGE_STASH_TYPES[stash_type]


def range_length(
    start: np.ndarray[Any, Any], limit: np.ndarray[Any, Any], delta: np.ndarray[Any, Any]
) -> int:
    """ONNX Range's element count, max(ceil((limit - start) / delta), 0), in the inputs' type
    (for float16 and bfloat16, pass the bounds cast to their ``range_stash`` type)."""
    if delta == 0:
        raise ValueError("delta is 0, so the range never reaches its limit")
    if not dtype(start.dtype).is_float:
        return max(-((int(start) - int(limit)) // int(delta)), 0)
    if start.dtype.itemsize < 2:  # NumPy's float8 scalar maths is partial; f32 is exact enough
        start, limit, delta = (v.astype(np.float32) for v in (start, limit, delta))
    with np.errstate(all="ignore"):
        steps = (limit - start) / delta
    if not np.isfinite(steps):
        raise ValueError(f"start {start}, limit {limit}, delta {delta} give no finite length")
    return max(math.ceil(float(steps)), 0)


def _unknown(t: TensorType, rank: int | None) -> list[Type]:
    return [t.with_shape(None if rank is None else [UNKNOWN] * rank)]


@op("Reshape", inputs=2, attrs={"allowzero": AttrSpec(int, 0)})
def _reshape(ctx: InferContext) -> list[Type]:
    """``data``'s elements in the order they have, laid out as ``shape``: a 0 copies the input's
    dim at that place (unless allowzero=1, where 0 means 0) and one -1 is inferred."""
    data, spec = ctx.tensor(0), expect(ctx, 1, "int", rank=1)
    target = ctx.const_ints(1)
    if target is None:
        return _unknown(data, static_length(spec))
    with reported(ctx):
        return [data.with_shape(reshape_dims(data.shape, target, bool(ctx.attr("allowzero"))))]


@op("Transpose", attrs={"perm": AttrSpec((tuple, list), None)})
def _transpose(ctx: InferContext) -> list[Type]:
    """``data`` with axes permuted: output axis i is input axis perm[i] (default: reversed)."""
    t, perm = ctx.tensor(0), ctx.attr("perm")
    if t.shape is None:
        return _unknown(t, None if perm is None else len(perm))
    rank = len(t.shape)
    p = list(range(rank))[::-1] if perm is None else list(perm)
    if any(type(i) is not int for i in p) or sorted(p) != list(range(rank)):
        raise ctx.error(f"perm {p} is not a permutation of rank {rank}")
    return [t.with_shape(t.shape[i] for i in p)]


def _axes_length(ctx: InferContext, index: int) -> int | None:
    """How many axes a 1-D (or, as onnxruntime also takes, 0-D) axes input lists."""
    spec = ctx.tensor(index)
    if not spec.dtype.is_int or spec.rank not in (None, 0, 1):
        raise ctx.error(f"input #{index}: expected a 1-D integer tensor, got {spec}")
    return 1 if spec.rank == 0 else static_length(spec)


@op("Squeeze", inputs=(1, 2))
def _squeeze(ctx: InferContext) -> list[Type]:
    """``data`` without the size-1 axes listed in ``axes`` (every size-1 axis if it is omitted or
    empty); listing an axis whose size is not 1 is an error."""
    t = ctx.tensor(0)
    axes = ctx.const_ints(1)
    if ctx.has(1):
        n = _axes_length(ctx, 1)
        if axes is None and t.shape is not None and n:
            return _unknown(t, len(t.shape) - n)
    if t.shape is None or (ctx.has(1) and axes is None):
        return _unknown(t, None)
    if not axes:
        if not all(isinstance(d, int) for d in t.shape):
            return _unknown(t, None)
        return [t.with_shape(d for d in t.shape if d != 1)]
    with reported(ctx):
        axes = normalize_axes(axes, len(t.shape))
    for a in axes:
        if isinstance(t.shape[a], int) and t.shape[a] != 1:
            raise ctx.error(f"cannot squeeze axis {a} of {t}: its size is {t.shape[a]}, not 1")
    return [t.with_shape(d for i, d in enumerate(t.shape) if i not in axes)]


@op("Unsqueeze", inputs=2)
def _unsqueeze(ctx: InferContext) -> list[Type]:
    """``data`` with size-1 axes inserted where ``axes`` (positions in the output) say."""
    t = ctx.tensor(0)
    axes, n = ctx.const_ints(1), _axes_length(ctx, 1)
    if t.shape is None or axes is None:
        return _unknown(t, None if t.shape is None or n is None else len(t.shape) + n)
    rank = len(t.shape) + len(axes)
    with reported(ctx):
        axes = normalize_axes(axes, rank)
    dims = iter(t.shape)
    return [t.with_shape(1 if i in axes else next(dims) for i in range(rank))]


@op("Concat", inputs=(1, None), attrs={"axis": AttrSpec(int)})
def _concat(ctx: InferContext) -> list[Type]:
    """The inputs joined along ``axis``; all other dims must agree."""
    dt = ctx.same_dtype(*range(len(ctx)))
    shapes = [ctx.tensor(i).shape for i in range(len(ctx))]
    known = [s for s in shapes if s is not None]
    if not known:
        return [TensorType(dt, None)]
    rank = len(known[0])
    if any(len(s) != rank for s in known):
        listed = ", ".join(str(ctx.tensor(i)) for i in range(len(ctx)))
        raise ctx.error(f"inputs differ in rank: {listed}")
    axis = norm_axis(ctx, ctx.attr("axis"), rank)
    out: list[Dim] = []
    for k in range(rank):
        dims = [s[k] for s in known]
        if k == axis:
            total = sum(d for d in dims if isinstance(d, int))
            symbolic = [d for d in dims if isinstance(d, str)]
            if len(known) < len(shapes) or len(symbolic) > 1 or (symbolic and total):
                out.append(UNKNOWN)
            else:
                out.append(symbolic[0] if symbolic else total)
            continue
        statics = {d for d in dims if isinstance(d, int)}
        if len(statics) > 1:
            raise ctx.error(
                f"inputs differ off the concat axis {axis}: "
                f"{' vs '.join(str(list(s)) for s in known)}"
            )
        names = set(dims)
        out.append(statics.pop() if statics else names.pop() if len(names) == 1 else UNKNOWN)
    return [TensorType(dt, out)]


@op("Split", inputs=(1, 2), attrs={"axis": AttrSpec(int, 0), "num_outputs": AttrSpec(int, None)})
def _split(ctx: InferContext) -> list[Type]:
    """``input`` cut along ``axis`` into consecutive parts: of the sizes in ``split``, or into
    ``num_outputs`` parts of ceil(size / num_outputs), the last one smaller."""
    t, parts = ctx.tensor(0), ctx.attr("num_outputs")
    sizes = ctx.const_ints(1)
    if ctx.has(1) == (parts is not None):
        raise ctx.error("give exactly one of the split input and the num_outputs attribute")
    if ctx.has(1):
        parts = static_length(expect(ctx, 1, "int", rank=1))
        if parts is None:
            raise ctx.error("the split input needs a static length to fix the number of outputs")
    assert parts is not None
    if parts < 1:
        raise ctx.error(f"num_outputs must be at least 1, got {parts}")
    if t.shape is None:
        return [t.with_shape(None)] * parts
    axis = norm_axis(ctx, ctx.attr("axis"), len(t.shape))
    dim = t.shape[axis]
    if sizes is not None:
        if any(s < 0 for s in sizes):
            raise ctx.error(f"split sizes {sizes} hold a negative size")
        if isinstance(dim, int) and sum(sizes) != dim:
            raise ctx.error(
                f"split sizes {sizes} sum to {sum(sizes)}, but axis {axis} of {t} is {dim}"
            )
        lengths: list[Dim] = list(sizes)
    elif isinstance(dim, int) and not ctx.has(1):
        with reported(ctx):
            lengths = list(split_sizes(dim, parts))
    else:
        lengths = [UNKNOWN] * parts
    return [t.with_shape((*t.shape[:axis], n, *t.shape[axis + 1 :])) for n in lengths]


@op("Slice", inputs=(3, 5))
def _slice(ctx: InferContext) -> list[Type]:
    """``data[starts:ends:steps]`` along ``axes`` (default 0, 1, ...; steps default 1), bounds
    clamped as ONNX does: negatives count from the end, then clip to the axis."""
    t = ctx.tensor(0)
    specs = [expect(ctx, i, "int", rank=1) for i in range(1, 5) if ctx.has(i)]
    lengths = {n for n in map(static_length, specs) if n is not None}
    if len(lengths) > 1:
        raise ctx.error(f"starts, ends, axes and steps differ in length: {sorted(lengths)}")
    if t.shape is None:
        return [t]
    rank, length = len(t.shape), next(iter(lengths), None)
    starts, ends = ctx.const_ints(1), ctx.const_ints(2)
    length = len(starts) if starts is not None else len(ends) if ends is not None else length
    axes = ctx.const_ints(3) if ctx.has(3) else None if length is None else list(range(length))
    steps = ctx.const_ints(4) if ctx.has(4) else None if length is None else [1] * length
    if axes is None:
        return _unknown(t, rank)
    dims = list(t.shape)
    with reported(ctx):
        axes = normalize_axes(axes, rank)
        if steps is not None and 0 in steps:
            raise ValueError(f"steps {steps} hold a 0")
        for k, a in enumerate(axes):
            if starts is None or ends is None or steps is None:
                dims[a] = UNKNOWN
            elif isinstance(dims[a], int):
                dims[a] = slice_bounds(int(dims[a]), starts[k], ends[k], steps[k])[2]
            elif not _whole_axis(starts[k], ends[k], steps[k]):
                dims[a] = UNKNOWN
    return [t.with_shape(dims)]


@op("Gather", inputs=2, attrs={"axis": AttrSpec(int, 0)})
def _gather(ctx: InferContext) -> list[Type]:
    """Entries of ``data`` along ``axis`` picked by integer ``indices`` (negatives count from the
    end); the output's shape is data[:axis] + indices + data[axis + 1:]."""
    data, indices = ctx.tensor(0), expect(ctx, 1, "int")
    if data.shape is None or indices.shape is None:
        return [data.with_shape(None)]
    axis = norm_axis(ctx, ctx.attr("axis"), len(data.shape))
    return [data.with_shape((*data.shape[:axis], *indices.shape, *data.shape[axis + 1 :]))]


@op("Expand", inputs=2)
def _expand(ctx: InferContext) -> list[Type]:
    """``data`` broadcast (both ways, NumPy-style) against the dims listed in ``shape``."""
    data, spec = ctx.tensor(0), expect(ctx, 1, "int", rank=1)
    target = ctx.const_ints(1)
    if target is not None:
        if any(d < 0 for d in target):
            raise ctx.error(f"shape {target} holds a negative size")
        return [data.with_shape(broadcast_dims(ctx, [data.shape, tuple(target)]))]
    n = static_length(spec)
    if data.shape is None or n is None:
        return [data.with_shape(None)]
    # A static dim other than 1 survives any valid shape; a symbol might be 1, so it need not.
    padded = [1] * (n - len(data.shape)) + list(data.shape)
    return [data.with_shape(d if isinstance(d, int) and d != 1 else UNKNOWN for d in padded)]


@op("Shape", attrs={"start": AttrSpec(int, 0), "end": AttrSpec(int, None)})
def _shape(ctx: InferContext) -> list[Type]:
    """``data``'s dims data.shape[start:end] (Python slice clamping) as a 1-D int64 tensor."""
    t = ctx.tensor(0)
    n = None if t.rank is None else len(range(t.rank)[ctx.attr("start") : ctx.attr("end")])
    return [TensorType(DType.int64, [UNKNOWN if n is None else n])]


@op("Size")
def _size(ctx: InferContext) -> list[Type]:
    """The number of elements of ``data``, as an int64 scalar."""
    ctx.tensor(0)
    return [TensorType(DType.int64, ())]


_ZERO_F32 = np.zeros(1, np.float32)
_ZERO_F32.setflags(write=False)


@op("ConstantOfShape", attrs={"value": AttrSpec(np.ndarray, _ZERO_F32)})
def _constant_of_shape(ctx: InferContext) -> list[Type]:
    """A tensor of the dims in ``shape``, every element ``value`` (one element; default f32 0)."""
    spec, value = expect(ctx, 0, "int", rank=1), ctx.attr("value")
    if value.size != 1:
        raise ctx.error(f"value must hold one element, got shape {list(value.shape)}")
    dt, dims = dtype(value.dtype), ctx.const_ints(0)
    if dims is None:
        n = static_length(spec)
        return [TensorType(dt, None if n is None else [UNKNOWN] * n)]
    if any(d < 0 for d in dims):
        raise ctx.error(f"shape {dims} holds a negative size")
    return [TensorType(dt, dims)]


@op("Range", inputs=3, attrs={"stash_type": AttrSpec(int, 1)})
def _range(ctx: InferContext) -> list[Type]:
    """1-D [start, start + delta, ...] up to but excluding ``limit``, of
    max(ceil((limit - start) / delta), 0) elements; the three scalars share one type. (A
    one-element 1-D tensor is taken as its scalar, as onnxruntime and ONNX's own function
    bodies do.) float16 and bfloat16 bounds are computed in the type stash_type names, 1
    (float32, the default) or 11 (float64), as ONNX's function body does: the bounds cast to it,
    the count taken there, each element the one before plus delta, the result cast back."""
    for i in range(3):
        t = expect(ctx, i, "numeric")
        if t.shape is not None and (len(t.shape) > 1 or t.shape not in ((), (1,), (UNKNOWN,))):
            raise ctx.error(f"input #{i}: expected a numeric scalar, got {t}")
    dt = ctx.same_dtype(0, 1, 2)
    with reported(ctx):
        stash = range_stash(dt, ctx.attr("stash_type"))
    bounds = [b.reshape(()) for i in range(3) if (b := ctx.const(i)) is not None]
    if len(bounds) < 3:
        return [TensorType(dt, [UNKNOWN])]
    start, limit, delta = (b.astype(stash.numpy) for b in bounds)
    with reported(ctx):
        return [TensorType(dt, [range_length(start, limit, delta)])]


ROUND_MODES = ("up", "down", "nearest")
_CAST_ATTRS = {"saturate": AttrSpec(int, 1), "round_mode": AttrSpec(str, "up")}


def _cast_to(ctx: InferContext, to: DType) -> list[Type]:
    if ctx.attr("round_mode") not in ROUND_MODES:
        raise ctx.error(
            f"round_mode must be one of {', '.join(ROUND_MODES)}, got {ctx.attr('round_mode')!r}"
        )
    return [ctx.tensor(0).with_dtype(to)]


@op("Cast", attrs={"to": AttrSpec(DType), **_CAST_ATTRS})
def _cast(ctx: InferContext) -> list[Type]:
    """``input`` converted to element type ``to`` by ONNX's rules. Floats to integers truncate
    (NaN, inf and out-of-range are undefined); integers wrap to narrower ones; nonzero is True.
    Float to a float rounds to nearest even, out of range is ±inf; to float8 with ``saturate``
    (the default) inf and out-of-range clamp to ±max, without it they are NaN (inf for e5m2).
    float8e8m0 rounds per ``round_mode`` (up, down or nearest); with ``saturate`` what falls
    outside its range clamps, else it is NaN. Strings parse as decimal or scientific numbers,
    INF, -INF and NaN (any case), truncated toward zero for integers (other text fails); numbers
    print as C's %.8g (INF, -INF and NaN), integers exactly, bools as 1 and 0."""
    return _cast_to(ctx, ctx.attr("to"))


@op("CastLike", inputs=2, attrs=_CAST_ATTRS)
def _cast_like(ctx: InferContext) -> list[Type]:
    """Cast of ``input`` to the element type of ``target_type`` (whose values are unused)."""
    return _cast_to(ctx, ctx.tensor(1).dtype)


@op("Pad", inputs=(2, 4), attrs={"mode": AttrSpec(str, "constant")})
def _pad(ctx: InferContext) -> list[Type]:
    """``data`` grown by pads = [begin per axis..., end per axis...] over ``axes`` (default all);
    negative pads crop. New cells hold constant_value (default 0), or copy data per mode:
    reflect (mirror without the edge), edge (repeat it) or wrap (continue cyclically)."""
    t = ctx.tensor(0)
    if ctx.attr("mode") not in PAD_MODES:
        raise ctx.error(f"mode must be one of {', '.join(PAD_MODES)}, got {ctx.attr('mode')!r}")
    expect(ctx, 1, "int", rank=1)
    if ctx.has(2):
        c = ctx.tensor(2)
        if c.dtype != t.dtype or c.shape not in (None, (), (1,), (UNKNOWN,)):
            raise ctx.error(f"input #2: expected a {t.dtype} scalar like data, got {c}")
    if ctx.has(3):
        expect(ctx, 3, "int", rank=1)
    if t.shape is None:
        return [t]
    rank, pads = len(t.shape), ctx.const_ints(1)
    axes = ctx.const_ints(3) if ctx.has(3) else list(range(rank))
    if axes is None:
        return _unknown(t, rank)
    with reported(ctx):
        axes = normalize_axes(axes, rank)
    if pads is None:
        return [t.with_shape(UNKNOWN if i in axes else d for i, d in enumerate(t.shape))]
    if len(pads) != 2 * len(axes):
        raise ctx.error(f"pads {pads} has {len(pads)} values, expected 2 per axis: {2 * len(axes)}")
    dims = list(t.shape)
    for a, begin, end in zip(axes, pads[: len(axes)], pads[len(axes) :], strict=True):
        d = dims[a]
        if isinstance(d, int):
            if d + begin + end < 0:
                raise ctx.error(f"pads {pads} crop axis {a} of {t} below size 0")
            dims[a] = d + begin + end
        elif begin or end:
            dims[a] = UNKNOWN
    return [t.with_shape(dims)]
