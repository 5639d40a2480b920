"""Lowerings of the shape, indexing and scatter/gather ops (see ``ops.py`` for the rules every
lowering follows).

Shapes are static on XLA, so an op whose output shape its operands decide (Reshape, Squeeze,
Expand, Split...) needs those operands as graph constants and mostly just reshapes to its static
output type. Indices read at run time are checked as the reference checks them: one out of range
hands the island to the compiled backend (``ctx.deopt_unless``), whose error is the reference's;
XLA is never left to clamp one. Scatters without a reduction keep the last of duplicate updates,
as NumPy's assignment does; reductions widen narrow floats as the reference does.

Left to the compiled backend by design: NonZero, Unique and Compress (data-dependent shapes).
"""

from __future__ import annotations

import math
from typing import Any

import jax.numpy as jnp
import numpy as np
from jax import lax

from ...ir.graph import Node
from ...ops.common import normalize_axes
from ...ops.indexing import block_rearrangement
from ...ops.shape import slice_bounds
from ...tensor.types import TensorType, normalize_axis
from .lowering import JaxValue, LowerContext, UnlowerableError, lowers, needs_constant
from .ops import widen

Attrs = dict[str, Any]


# --- Helpers -----------------------------------------------------------------------------------


def _ints(node: Node, port: int) -> list[int] | None:
    """The constant integers at input ``port`` (None where the input is omitted)."""
    v = node.inputs[port] if port < len(node.inputs) else None
    if v is None:
        return None
    data = v.constant
    if data is None:  # the check guarantees it; a bug of ours falls back
        raise UnlowerableError(f"input #{port} is not a constant")
    return [int(d) for d in np.asarray(data).reshape(-1)]


def _shape(node: Node, k: int = 0) -> tuple[int, ...]:
    t = node.outputs[k].type
    assert isinstance(t, TensorType) and t.shape is not None
    return tuple(int(d) for d in t.shape)


def _axis(axis: int, rank: int) -> int:
    return normalize_axis(axis, rank, "axis", error=ValueError)


def _to_output(ctx: LowerContext, node: Node, attrs: Attrs, x: JaxValue, *rest: Any) -> list[Any]:
    """``x``'s elements in order, laid out as the node's static output shape."""
    return [jnp.reshape(x, _shape(node))]


def _in_range(idx: JaxValue, n: JaxValue) -> JaxValue:
    """Whether each of ``idx`` lies in [-n, n), compared exactly whatever its integer type."""
    if jnp.issubdtype(idx.dtype, jnp.unsignedinteger):
        return idx.astype(jnp.uint64) < jnp.asarray(n).astype(jnp.uint64)
    wide = idx.astype(jnp.int64)
    return (wide >= -n) & (wide < n)


def _wrapped(ctx: LowerContext, node: Node, idx: JaxValue, n: Any) -> JaxValue:
    """The indexing kernels' ``_wrapped``: ``idx`` as int64 (cast first), negatives counted from
    the end of axes of size ``n`` (an int, or one size per entry of the last axis); an index out
    of range deopts."""
    wide = jnp.asarray(idx).astype(jnp.int64)
    sizes = jnp.asarray(np.asarray(n, np.int64))
    ctx.deopt_unless(_in_range(wide, sizes), node)
    return jnp.where(wide < 0, wide + sizes, wide)


def _positions(shape: tuple[int, ...]) -> list[JaxValue]:
    """Each axis' coordinate, shaped to broadcast over ``shape`` (NumPy's sparse indices)."""
    return [
        lax.broadcasted_iota(jnp.int64, tuple(d if i == a else 1 for i, d in enumerate(shape)), a)
        for a in range(len(shape))
    ]


def _linear(coords: list[JaxValue], dims: tuple[int, ...]) -> JaxValue:
    """Row-major flat positions of the index tuple ``coords`` in an array of ``dims``."""
    flat: JaxValue = jnp.zeros((), jnp.int64)
    for c, d in zip(coords, dims, strict=True):
        flat = flat * d + c
    return flat


def _scatter(data: JaxValue, lin: JaxValue, updates: JaxValue, reduction: str) -> JaxValue:
    """The reference's ``_scattered`` over the leading axis of ``data`` (its other axes are the
    slices each update writes): ``data[lin[i]] = updates[i]`` in order (the last duplicate
    wins), or combined one by one per ``reduction``, narrow floats widened."""
    out, upd = widen(data), widen(updates)
    m, n = data.shape[0], lin.shape[0]
    if n == 0 or m == 0:  # nothing to write, or every index is out of range (deopted)
        return data
    at = out.at[lin]
    if reduction == "none":
        order = jnp.arange(n, dtype=jnp.int64)
        last = jnp.full((m,), -1, jnp.int64).at[lin].max(order, mode="drop")
        keep = last[jnp.clip(lin, 0, max(m - 1, 0))] == order
        result = out.at[jnp.where(keep, lin, m)].set(upd, mode="drop")
    elif reduction == "add":
        result = at.add(upd, mode="drop")
    elif reduction == "mul":
        result = at.multiply(upd, mode="drop")
    elif reduction == "max":
        result = at.max(upd, mode="drop")
    elif reduction == "min":
        result = at.min(upd, mode="drop")
    else:
        raise UnlowerableError(f"reduction {reduction!r}")
    return result.astype(data.dtype)


# --- Reshaping ---------------------------------------------------------------------------------

lowers("Reshape", "Squeeze", "Unsqueeze", check=needs_constant(1))(_to_output)
lowers("Flatten")(_to_output)


@lowers("Transpose")
def _transpose(ctx: LowerContext, node: Node, attrs: Attrs, x: JaxValue) -> list[Any]:
    perm = attrs["perm"]
    return [jnp.transpose(x, None if perm is None else tuple(perm))]


@lowers("Expand", check=needs_constant(1))
def _expand(ctx: LowerContext, node: Node, attrs: Attrs, x: JaxValue, shape: Any) -> list[Any]:
    return [jnp.broadcast_to(x, _shape(node))]


@lowers("Tile", check=needs_constant(1))
def _tile(ctx: LowerContext, node: Node, attrs: Attrs, x: JaxValue, repeats: Any) -> list[Any]:
    reps = _ints(node, 1)
    assert reps is not None
    return [jnp.tile(x, reps)]


@lowers("Concat")
def _concat(ctx: LowerContext, node: Node, attrs: Attrs, *xs: JaxValue) -> list[Any]:
    return [jnp.concatenate(xs, axis=_axis(attrs["axis"], xs[0].ndim))]


@lowers("Split", check=needs_constant(1))
def _split(
    ctx: LowerContext, node: Node, attrs: Attrs, x: JaxValue, sizes: Any = None
) -> list[Any]:
    axis = _axis(attrs["axis"], x.ndim)
    outs, start = [], 0
    for k in range(len(node.outputs)):
        n = _shape(node, k)[axis]
        outs.append(lax.slice_in_dim(x, start, start + n, axis=axis))
        start += n
    if start != x.shape[axis]:
        raise UnlowerableError(f"split sizes sum to {start}, not {x.shape[axis]}")
    return outs


@lowers("Slice", check=needs_constant(1, 2, 3, 4))
def _slice(ctx: LowerContext, node: Node, attrs: Attrs, x: JaxValue, *rest: Any) -> list[Any]:
    begin, end = _ints(node, 1), _ints(node, 2)
    assert begin is not None and end is not None
    listed = _ints(node, 3)
    strides = _ints(node, 4)
    axes = normalize_axes(list(range(len(begin))) if listed is None else listed, x.ndim)
    steps = [1] * len(begin) if strides is None else strides
    index = [slice(None)] * x.ndim
    for a, s, e, step in zip(axes, begin, end, steps, strict=True):
        lo, hi, _ = slice_bounds(x.shape[a], s, e, step)
        index[a] = slice(lo, None if hi < 0 else hi, step)
    return [x[tuple(index)]]


@lowers("Pad", check=needs_constant(1, 3))
def _pad(
    ctx: LowerContext, node: Node, attrs: Attrs, x: JaxValue, pads: Any, fill: Any = None, *_: Any
) -> list[Any]:
    amounts = _ints(node, 1)
    listed = _ints(node, 3)
    assert amounts is not None
    mode = attrs["mode"]
    axes = normalize_axes(list(range(x.ndim)) if listed is None else listed, x.ndim)
    widths, crop = [(0, 0)] * x.ndim, [slice(None)] * x.ndim
    for a, lo, hi in zip(axes, amounts[: len(axes)], amounts[len(axes) :], strict=True):
        if mode != "constant" and x.shape[a] == 0 and (lo > 0 or hi > 0):
            # the reference raises
            raise UnlowerableError(f"mode {mode!r} cannot pad an empty axis")
        widths[a] = (max(lo, 0), max(hi, 0))
        crop[a] = slice(max(-lo, 0), x.shape[a] + max(lo, 0) + hi)
    if mode == "constant":
        value = jnp.zeros((), x.dtype) if fill is None else jnp.reshape(fill, ()).astype(x.dtype)
        padded = jnp.pad(x, widths, mode="constant", constant_values=value)
    else:
        padded = jnp.pad(x, widths, mode=mode)
    return [padded[tuple(crop)]]


@lowers("CenterCropPad", check=needs_constant(1))
def _center_crop_pad(
    ctx: LowerContext, node: Node, attrs: Attrs, x: JaxValue, shape: Any
) -> list[Any]:
    sizes, axes = _ints(node, 1), attrs["axes"]
    assert sizes is not None
    listed = [_axis(a, x.ndim) for a in (range(x.ndim) if axes is None else axes)]
    src, widths = [slice(None)] * x.ndim, [(0, 0)] * x.ndim
    for a, size in zip(listed, sizes, strict=True):
        have = x.shape[a]
        if have > size:
            start = (have - size) // 2
            src[a] = slice(start, start + size)
        else:
            start = (size - have) // 2
            widths[a] = (start, size - have - start)
    return [jnp.pad(x[tuple(src)], widths)]


def _blocks(x: JaxValue, attrs: Attrs, to_depth: bool) -> JaxValue:
    split, perm, result = block_rearrangement(x.shape, attrs["blocksize"], attrs["mode"], to_depth)
    return x.reshape(split).transpose(perm).reshape(result)


@lowers("SpaceToDepth")
def _space_to_depth(ctx: LowerContext, node: Node, attrs: Attrs, x: JaxValue) -> list[Any]:
    return [_blocks(x, attrs, to_depth=True)]


@lowers("DepthToSpace")
def _depth_to_space(ctx: LowerContext, node: Node, attrs: Attrs, x: JaxValue) -> list[Any]:
    return [_blocks(x, attrs, to_depth=False)]


# --- Shapes and generated tensors ----------------------------------------------------------------


@lowers("Shape")
def _shape_op(ctx: LowerContext, node: Node, attrs: Attrs, x: JaxValue) -> list[Any]:
    return [jnp.asarray(np.array(x.shape[attrs["start"] : attrs["end"]], np.int64))]


@lowers("Size")
def _size(ctx: LowerContext, node: Node, attrs: Attrs, x: JaxValue) -> list[Any]:
    return [jnp.asarray(np.int64(math.prod(x.shape)))]


@lowers("ConstantOfShape", check=needs_constant(0))
def _constant_of_shape(ctx: LowerContext, node: Node, attrs: Attrs, shape: Any) -> list[Any]:
    value = np.asarray(attrs["value"])
    return [jnp.full(_shape(node), value.reshape(()), value.dtype)]


@lowers("Range", check=needs_constant(0, 1, 2))
def _range(ctx: LowerContext, node: Node, attrs: Attrs, *bounds: Any) -> list[Any]:
    """All three bounds are constants: the reference's own answer, computed once here."""
    from ...errors import TensorloopError
    from ...reference import Interpreter

    data = [v.constant for v in node.inputs if v is not None]
    try:
        (out,) = Interpreter().run_node(node, data)
    except TensorloopError as exc:  # the compiled backend raises it at run time
        raise UnlowerableError(str(exc)) from exc
    return [jnp.asarray(out)]


@lowers("EyeLike")
def _eye_like(ctx: LowerContext, node: Node, attrs: Attrs, x: JaxValue) -> list[Any]:
    rows, cols = x.shape
    return [jnp.eye(rows, cols, attrs["k"], dtype=node.outputs[0].tensor_type.dtype.numpy)]


@lowers("OneHot", check=needs_constant(1))
def _onehot(
    ctx: LowerContext, node: Node, attrs: Attrs, idx: JaxValue, depth: Any, values: JaxValue
) -> list[Any]:
    depths = _ints(node, 1)
    assert depths is not None
    n = depths[0]
    axis = _axis(attrs["axis"], idx.ndim + 1)
    if jnp.issubdtype(idx.dtype, jnp.floating):
        # NumPy casts NaN to int64's minimum (out of range: all off); XLA would give 0
        wide = jnp.where(jnp.isnan(idx), np.iinfo(np.int64).min, idx.astype(jnp.int64))
    else:
        wide = idx.astype(jnp.int64)
    wide = jnp.where(wide < 0, wide + n, wide)
    positions = jnp.arange(n, dtype=jnp.int64).reshape(
        [n if i == axis else 1 for i in range(idx.ndim + 1)]
    )
    hot = jnp.expand_dims(wide, axis) == positions
    return [jnp.where(hot, values[1], values[0])]


# --- Gathers -------------------------------------------------------------------------------------


@lowers("Gather")
def _gather(ctx: LowerContext, node: Node, attrs: Attrs, x: JaxValue, idx: JaxValue) -> list[Any]:
    axis = _axis(attrs["axis"], x.ndim)
    n = x.shape[axis]
    # The reference checks the indices in their own type, then casts to int64.
    ctx.deopt_unless(_in_range(idx, n), node)
    if n == 0:  # nothing to pick from: any index at all deopts
        return [jnp.zeros(_shape(node), x.dtype)]
    wide = idx.astype(jnp.int64)
    wide = jnp.where(wide < 0, wide + n, wide)
    return [jnp.take(x, wide, axis=axis, mode="clip")]


def _element_coords(
    ctx: LowerContext, node: Node, shape: tuple[int, ...], idx: JaxValue, axis: int
) -> list[JaxValue]:
    """The index tuple GatherElements / ScatterElements address (as the reference's
    ``_element_index``): each entry's own position, its ``axis`` coordinate from ``idx``."""
    if idx.ndim != len(shape) or any(
        i != axis and m > n for i, (m, n) in enumerate(zip(idx.shape, shape, strict=True))
    ):
        # the reference raises
        raise UnlowerableError(f"indices {idx.shape} do not fit data {shape}")
    coords = _positions(idx.shape)
    coords[axis] = _wrapped(ctx, node, idx, shape[axis])
    return [jnp.broadcast_to(c, idx.shape) for c in coords]


@lowers("GatherElements")
def _gather_elements(
    ctx: LowerContext, node: Node, attrs: Attrs, x: JaxValue, idx: JaxValue
) -> list[Any]:
    axis = _axis(attrs["axis"], x.ndim)
    coords = _element_coords(ctx, node, x.shape, idx, axis)
    if idx.size == 0 or x.size == 0:  # nothing to pick, or every index deopted
        return [jnp.zeros(idx.shape, x.dtype)]
    flat = _linear(coords, x.shape)
    return [jnp.take(x.reshape(-1), flat, mode="clip")]


@lowers("ScatterElements")
def _scatter_elements(
    ctx: LowerContext, node: Node, attrs: Attrs, x: JaxValue, idx: JaxValue, upd: JaxValue
) -> list[Any]:
    if idx.shape != upd.shape:
        raise UnlowerableError(f"indices {idx.shape} and updates {upd.shape} differ")
    axis = _axis(attrs["axis"], x.ndim)
    coords = _element_coords(ctx, node, x.shape, idx, axis)
    flat = _linear(coords, x.shape).reshape(-1)
    out = _scatter(x.reshape(-1), flat, upd.reshape(-1), attrs["reduction"])
    return [out.reshape(x.shape)]


def _tuple_count(idx: JaxValue, limit: int) -> int:
    k = idx.shape[-1] if idx.ndim else 0
    if not 1 <= k <= limit:
        raise UnlowerableError(f"indices {idx.shape} must end in a dim in [1, {limit}]")
    return int(k)


@lowers("GatherND")
def _gather_nd(
    ctx: LowerContext, node: Node, attrs: Attrs, x: JaxValue, idx: JaxValue
) -> list[Any]:
    b = attrs["batch_dims"]
    if not 0 <= b < min(x.ndim, idx.ndim) or x.shape[:b] != idx.shape[:b]:
        raise UnlowerableError(f"batch_dims {b}: data {x.shape} and indices {idx.shape} differ")
    k = _tuple_count(idx, x.ndim - b)
    coords = _wrapped(ctx, node, idx, x.shape[b : b + k])
    batches = math.prod(x.shape[:b])
    inner = math.prod(x.shape[b : b + k])
    if inner == 0 or batches == 0 or idx.size == 0:
        return [jnp.zeros(_shape(node), x.dtype)]  # nothing picked, or every index deopted
    tail = x.shape[b + k :]
    flat = x.reshape((batches * inner, *tail))
    tuples = coords.reshape(batches, -1, k)
    lin = _linear([tuples[..., j] for j in range(k)], x.shape[b : b + k])
    lin = lin + jnp.arange(batches, dtype=jnp.int64).reshape(batches, 1) * inner
    picked = jnp.take(flat, lin.reshape(-1), axis=0, mode="clip")
    return [picked.reshape(_shape(node))]


@lowers("ScatterND")
def _scatter_nd(
    ctx: LowerContext, node: Node, attrs: Attrs, x: JaxValue, idx: JaxValue, upd: JaxValue
) -> list[Any]:
    k = _tuple_count(idx, x.ndim)
    if upd.shape != idx.shape[:-1] + x.shape[k:]:
        raise UnlowerableError(f"updates {upd.shape} do not fit")  # the reference raises
    coords = _wrapped(ctx, node, idx, x.shape[:k]).reshape(-1, k)
    lin = _linear([coords[:, j] for j in range(k)], x.shape[:k])
    tail = x.shape[k:]
    flat = x.reshape((math.prod(x.shape[:k]), *tail))
    out = _scatter(flat, lin, upd.reshape((-1, *tail)), attrs["reduction"])
    return [out.reshape(x.shape)]


@lowers("TensorScatter")
def _tensor_scatter(
    ctx: LowerContext,
    node: Node,
    attrs: Attrs,
    past: JaxValue,
    upd: JaxValue,
    starts: JaxValue = None,
) -> list[Any]:
    axis = _axis(attrs["axis"], past.ndim)
    batch, length, steps = past.shape[0], past.shape[axis], upd.shape[axis]
    if axis == 0 or [d for i, d in enumerate(past.shape) if i != axis] != [
        d for i, d in enumerate(upd.shape) if i != axis
    ]:
        raise UnlowerableError("update does not fit past_cache")  # the reference raises
    first = jnp.zeros(batch, jnp.int64) if starts is None else starts.astype(jnp.int64)
    ones = [1] * past.ndim
    pos = first.reshape([batch, *ones[1:]]) + jnp.arange(steps, dtype=jnp.int64).reshape(
        [*ones[:axis], steps, *ones[axis + 1 :]]
    )
    if attrs["mode"] == "circular" and length:
        pos = pos % length
    elif upd.size:
        ctx.deopt_unless((pos >= 0) & (pos < length), node)
    if upd.size == 0:
        return [past]
    coords = [jnp.broadcast_to(c, upd.shape) for c in _positions(upd.shape)]
    coords[axis] = jnp.broadcast_to(pos, upd.shape)
    lin = _linear(coords, past.shape).reshape(-1)
    # Positions are distinct (an update is no longer than the cache): no duplicates to order.
    out = past.reshape(-1).at[lin].set(upd.reshape(-1), mode="drop")
    return [out.reshape(past.shape)]


@lowers("ReverseSequence")
def _reverse_sequence(
    ctx: LowerContext, node: Node, attrs: Attrs, x: JaxValue, lens: JaxValue
) -> list[Any]:
    b, t = attrs["batch_axis"], attrs["time_axis"]
    if x.ndim < 2 or lens.shape != (x.shape[b],):
        raise UnlowerableError(f"sequence_lens {lens.shape} do not fit {x.shape}")
    steps = x.shape[t]
    wide = lens.astype(jnp.int64)
    ctx.deopt_unless((wide >= 0) & (wide <= steps), node)
    pos, lens2 = jnp.arange(steps, dtype=jnp.int64)[None, :], wide[:, None]
    source = jnp.where(pos < lens2, lens2 - 1 - pos, pos)  # [batch, time]
    if t < b:
        source = source.T
    source = source.reshape(source.shape + (1,) * (x.ndim - 2))
    source = jnp.broadcast_to(source, x.shape)
    return [jnp.take_along_axis(x, source, axis=t, mode="clip")]


@lowers("TopK", check=needs_constant(1))
def _topk(ctx: LowerContext, node: Node, attrs: Attrs, x: JaxValue, k_: Any) -> list[Any]:
    ks = _ints(node, 1)
    assert ks is not None
    axis = _axis(attrs["axis"], x.ndim)
    n = x.shape[axis]
    if len(ks) != 1 or not 0 <= ks[0] <= n:
        raise UnlowerableError(f"K = {ks} is out of range")  # the reference raises
    w = widen(x)
    if attrs["largest"]:
        # As the reference: a stable ascending sort of the reversed axis, read backwards, is
        # descending with equal values (and NaNs, first) in ascending index order.
        flipped = jnp.argsort(jnp.flip(w, axis), axis=axis, stable=True)
        order = jnp.flip(n - 1 - flipped, axis)
    else:
        order = jnp.argsort(w, axis=axis, stable=True)
    order = lax.slice_in_dim(order, 0, ks[0], axis=axis).astype(jnp.int64)
    return [jnp.take_along_axis(x, order, axis=axis), order]


__all__: list[str] = []
