"""Vector-Jacobian rules of the shape and indexing ops (reshape, transpose, concat, slice,
gather, pad, where, cast, ...).

These ops move elements without arithmetic, so each cotangent goes back the way its element
came: a permutation by its inverse (Transpose, DepthToSpace, ReverseSequence), a crop by a pad
(Slice with unit steps, Pad), a copy by a sum (Expand, Tile, Gather's repeated indices). Where no
op undoes the move directly, the rule replays the node on an ``iota`` (each element of the input
holding its own flat index) to learn where each output element came from, and scatter-adds the
cotangent there (``_by_source``): exact for any steps, bounds, indices or pad mode. Shapes come
from constants when the types are static, else from ``Shape`` at run time; the cotangents of
shapes, axes, indices and conditions are None."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import GradientError
from ..ir.graph import Node, Value, constant_ints
from ..ops.common import normalize_axes
from ..ops.shape import slice_bounds
from ..tensor.types import TensorType
from .core import Builder, differentiable, vjp


def _ct(cts: list[Value | None]) -> Value:
    ct = cts[0]
    assert ct is not None
    return ct


def _in(node: Node, index: int) -> Value:
    value = node.inputs[index]
    assert value is not None
    return value


def _opt(node: Node, index: int) -> Value | None:
    """Optional input ``index`` of ``node``; None when omitted."""
    return node.inputs[index] if index < len(node.inputs) else None


def _trimmed(inputs: Sequence[Value | None]) -> list[Value | None]:
    """``inputs`` without trailing omitted ones."""
    out = list(inputs)
    while out and out[-1] is None:
        out.pop()
    return out


def _axis(b: Builder, node: Node, x: Value, axis: int) -> int:
    rank = b.rank(x, node.describe())
    return axis + rank if axis < 0 else axis


def _static_dims(x: Value, start: int = 0, end: int | None = None) -> list[int] | None:
    """``x``'s dims[start:end] if they are all static, else None."""
    t = x.type
    if not isinstance(t, TensorType) or t.shape is None:
        return None
    dims = list(t.shape)[start:end]
    if all(isinstance(d, int) for d in dims):
        return [int(d) for d in dims]
    return None


def _dims(b: Builder, x: Value, start: int = 0, end: int | None = None) -> Value:
    """``x``'s dims[start:end] as an int64 vector: a constant when static, else ``Shape``."""
    static = _static_dims(x, start, end)
    if static is not None:
        return b.ints(static)
    attrs = {"start": start} if end is None else {"start": start, "end": end}
    return b.op("Shape", [x], **attrs)


def _reshape_to(b: Builder, ct: Value, x: Value) -> Value:
    """``ct`` (holding ``x``'s element count) laid out as ``x``."""
    if ct.type == x.type:
        return ct
    return b.op("Reshape", [ct, _dims(b, x)], allowzero=1)


def _flat(b: Builder, x: Value) -> Value:
    return b.op("Reshape", [x, b.ints([-1])])


def _iota(b: Builder, x: Value) -> Value:
    """An int64 tensor of ``x``'s shape holding each element's row-major flat index."""
    static = _static_dims(x)
    count = b.ints(int(np.prod(static, dtype=np.int64))) if static is not None else None
    if count is None:
        count = b.op("Size", [x])
    flat = b.op("Range", [b.ints(0), count, b.ints(1)])
    return b.op("Reshape", [flat, _dims(b, x)], allowzero=1)


def _scatter_back(b: Builder, x: Value, ct: Value, source: Value, reduction: str) -> Value:
    """Zeros like ``x`` with each element of ``ct`` stored at (``reduction="add"``: added to)
    the flat index of ``x`` that ``source`` holds in its place."""
    zeros = _flat(b, b.zeros_like(x))
    flat = b.op(
        "ScatterElements",
        [zeros, _flat(b, source), _flat(b, ct)],
        axis=0,
        reduction=reduction,
    )
    return _reshape_to(b, flat, x)


def _by_source(
    b: Builder,
    node: Node,
    ct: Value,
    rest: Sequence[Value | None],
    reduction: str = "add",
) -> Value:
    """The cotangent of input #0 of a node whose every output element copies one element of
    it: the node replayed on an iota (with inputs ``rest`` after the data) says which, and the
    cotangent is scattered back there; ``reduction`` "none" where no element is read twice."""
    x = _in(node, 0)
    source = b.op(node.op, _trimmed([_iota(b, x), *rest]), **node.attrs)
    return _scatter_back(b, x, ct, source, reduction)


# -- reshapes and permutations ---------------------------------------------------------------


@vjp("Reshape", "Flatten", "Squeeze", "Unsqueeze")
def _reshape(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    return [_reshape_to(b, _ct(cts), _in(node, 0)), None]


@vjp("Transpose")
def _transpose(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    perm = node.attrs.get("perm")
    if perm is None:  # reversed axes: their own inverse
        return [b.op("Transpose", [_ct(cts)])]
    inverse = [int(i) for i in np.argsort(list(perm))]
    return [b.op("Transpose", [_ct(cts)], perm=inverse)]


@vjp("DepthToSpace")
def _depth_to_space(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    attrs = {"blocksize": node.attrs["blocksize"], "mode": node.attrs.get("mode", "DCR")}
    return [b.op("SpaceToDepth", [_ct(cts)], **attrs)]


@vjp("SpaceToDepth")
def _space_to_depth(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    attrs = {"blocksize": node.attrs["blocksize"], "mode": node.attrs.get("mode", "DCR")}
    return [b.op("DepthToSpace", [_ct(cts)], **attrs)]


@vjp("ReverseSequence")
def _reverse_sequence(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    # Reversing the first len steps is its own inverse, and a permutation's transpose.
    return [b.op("ReverseSequence", [_ct(cts), _in(node, 1)], **node.attrs), None]


@vjp("Trilu")
def _trilu(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    # A mask: its own transpose.
    return [b.op("Trilu", _trimmed([_ct(cts), _opt(node, 1)]), **node.attrs), None]


# -- joins and cuts --------------------------------------------------------------------------


@vjp("Concat")
def _concat(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    ct, xs = _ct(cts), [v for v in node.inputs if v is not None]
    if len(xs) == 1:
        return [ct]
    axis = _axis(b, node, ct, node.attrs["axis"])
    static = [_static_dims(x, axis, axis + 1) for x in xs]
    if all(s is not None for s in static):
        sizes = b.ints([s[0] for s in static if s is not None])
    else:
        sizes = b.op("Concat", [_dims(b, x, axis, axis + 1) for x in xs], axis=0)
    return list(b.ops("Split", [ct, sizes], axis=axis))


@vjp("Split")
def _split(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    parts = [
        b.zeros_like(out) if ct is None else ct for ct, out in zip(cts, node.outputs, strict=True)
    ]
    if len(parts) == 1:
        return [parts[0], None]
    x = _in(node, 0)
    axis = _axis(b, node, x, node.attrs.get("axis", 0))
    return [_reshape_to(b, b.op("Concat", parts, axis=axis), x), None]


def _slice_pads(node: Node) -> list[int] | None:
    """The pads that undo a Slice of unit steps with constant bounds on a static input, or
    None when the Slice is another kind."""
    x = _in(node, 0)
    dims = _static_dims(x)
    starts, ends = constant_ints(_in(node, 1)), constant_ints(_in(node, 2))
    if dims is None or starts is None or ends is None:
        return None
    axes_in, steps_in = _opt(node, 3), _opt(node, 4)
    axes = list(range(len(starts))) if axes_in is None else constant_ints(axes_in)
    steps = [1] * len(starts) if steps_in is None else constant_ints(steps_in)
    if axes is None or steps is None or any(s != 1 for s in steps):
        return None
    begin, end = [0] * len(dims), [0] * len(dims)
    for a, s, e in zip(normalize_axes(axes, len(dims)), starts, ends, strict=True):
        lo, _, count = slice_bounds(dims[a], s, e, 1)
        begin[a], end[a] = lo, dims[a] - lo - count
    return begin + end


@vjp("Slice")
def _slice(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    ct, pads = _ct(cts), _slice_pads(node)
    if pads is not None:
        dx = _reshape_to(b, b.op("Pad", [ct, b.ints(pads)]), _in(node, 0))
    else:  # any steps, bounds known at run time only: scatter back to where each came from
        dx = _by_source(b, node, ct, node.inputs[1:], reduction="none")
    return [dx, None, None, None, None]


@vjp("Pad")
def _pad(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    ct, x, pads = _ct(cts), _in(node, 0), _in(node, 1)
    value, axes = _opt(node, 2), _opt(node, 3)
    if node.attrs.get("mode", "constant") != "constant":
        # reflect, edge, wrap: cells copy data cells, so their cotangents add up there
        return [_by_source(b, node, ct, [pads, None, axes]), None, None, None]
    # The adjoint of a constant pad is the opposite pad: it crops what was padded and pads with
    # zeros what was cropped.
    static = constant_ints(pads)
    undo = b.ints([-p for p in static]) if static is not None else b.neg(pads)
    dx = _reshape_to(b, b.op("Pad", _trimmed([ct, undo, None, axes])), x)
    dvalue = None
    if value is not None and differentiable(value):
        # Every cell not copied from data holds the value.
        total = b.op("ReduceSum", [ct], keepdims=0)
        kept = b.op("ReduceSum", [dx], keepdims=0)
        dvalue = _reshape_to(b, b.op("Sub", [total, kept]), value)
    return [dx, None, dvalue, None]


@vjp("CenterCropPad")
def _center_crop_pad(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    # Crop and pad start at floor(|in - out| / 2) both ways, so cropping or padding back to the
    # input's dims is the adjoint.
    x, axes = _in(node, 0), node.attrs.get("axes")
    rank = b.rank(x, node.describe())
    listed = normalize_axes(range(rank) if axes is None else axes, rank)
    dims = _static_dims(x)
    if dims is not None:
        shape = b.ints([dims[a] for a in listed])
    else:
        shape = b.op("Gather", [b.op("Shape", [x]), b.ints(listed)], axis=0)
    return [_reshape_to(b, b.op("CenterCropPad", [_ct(cts), shape], **node.attrs), x), None]


@vjp("Compress")
def _compress(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    return [_by_source(b, node, _ct(cts), [_in(node, 1)], reduction="none"), None]


# -- broadcasts and repeats ------------------------------------------------------------------


@vjp("Expand")
def _expand(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    return [b.sum_to(_ct(cts), _in(node, 0), node.describe()), None]


@vjp("Tile")
def _tile(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    ct, x, repeats = _ct(cts), _in(node, 0), _in(node, 1)
    rank = b.rank(x, node.describe())
    if rank == 0:
        return [ct, None]
    # Output axis i is repeats[i] copies of input axis i: split it into [repeats[i], dim[i]]
    # and sum over the copies.
    dims, reps = _static_dims(x), constant_ints(repeats)
    if dims is not None and reps is not None:
        pairs = b.ints([n for pair in zip(reps, dims, strict=True) for n in pair])
    else:
        column = b.ints([1])
        both = [b.op("Unsqueeze", [repeats, column]), b.op("Unsqueeze", [_dims(b, x), column])]
        pairs = _flat(b, b.op("Concat", both, axis=1))
    split = b.op("Reshape", [ct, pairs], allowzero=1)
    summed = b.op("ReduceSum", [split, b.ints(list(range(0, 2 * rank, 2)))], keepdims=0)
    return [_reshape_to(b, summed, x), None]


@vjp("Where")
def _where(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    ct, where = _ct(cts), node.describe()
    cond, x, y = _in(node, 0), _in(node, 1), _in(node, 2)
    zero = b.const(0, ct)
    dx = b.sum_to(b.op("Where", [cond, ct, zero]), x, where) if differentiable(x) else None
    dy = b.sum_to(b.op("Where", [cond, zero, ct]), y, where) if differentiable(y) else None
    return [None, dx, dy]


@vjp("Cast", "CastLike")
def _cast(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    # CastLike's target gives only its element type: no gradient.
    ct, x = _ct(cts), _in(node, 0)
    if not differentiable(x):
        return [None, None]
    to = x.tensor_type.dtype
    if ct.tensor_type.dtype == to:
        return [ct, None]
    return [b.op("Cast", [ct], to=to), None]


# -- gathers and scatters --------------------------------------------------------------------


@vjp("Gather")
def _gather(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    ct, x, indices = _ct(cts), _in(node, 0), _in(node, 1)
    if _axis(b, node, x, node.attrs.get("axis", 0)) != 0:
        return [_by_source(b, node, ct, [indices]), None]
    # Along axis 0 each index picks a slice: ScatterND adds the slices back (repeats add up).
    where = b.op("Unsqueeze", [indices, b.ints([-1])])
    return [b.op("ScatterND", [b.zeros_like(x), where, ct], reduction="add"), None]


@vjp("GatherElements")
def _gather_elements(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    x, indices, axis = _in(node, 0), _in(node, 1), node.attrs.get("axis", 0)
    dx = b.op(
        "ScatterElements",
        [b.zeros_like(x), indices, _ct(cts)],
        axis=axis,
        reduction="add",
    )
    return [dx, None]


@vjp("GatherND")
def _gather_nd(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    ct, x, indices = _ct(cts), _in(node, 0), _in(node, 1)
    if node.attrs.get("batch_dims", 0):
        return [_by_source(b, node, ct, [indices]), None]
    return [b.op("ScatterND", [b.zeros_like(x), indices, ct], reduction="add"), None]


def _scatter_reduction(node: Node) -> str:
    reduction: str = node.attrs.get("reduction", "none")
    if reduction not in ("none", "add"):
        raise GradientError(
            f"{node.describe()}: no gradient for reduction '{reduction}' (only none and add)"
        )
    return reduction


@vjp("ScatterElements")
def _scatter_elements(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    # With reduction none the indices are taken to be distinct, as ONNX requires.
    ct, indices, updates = _ct(cts), _in(node, 1), _in(node, 2)
    axis = node.attrs.get("axis", 0)
    ddata = ct
    if _scatter_reduction(node) == "none":  # overwritten cells take nothing back to data
        zeros = b.zeros_like(updates)
        ddata = b.op("ScatterElements", [ct, indices, zeros], axis=axis)
    dupdates = b.op("GatherElements", [ct, indices], axis=axis)
    return [ddata, None, dupdates]


@vjp("ScatterND")
def _scatter_nd(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    # With reduction none the index tuples are taken to be distinct, as ONNX requires.
    ct, indices, updates = _ct(cts), _in(node, 1), _in(node, 2)
    ddata = ct
    if _scatter_reduction(node) == "none":
        ddata = b.op("ScatterND", [ct, indices, b.zeros_like(updates)])
    dupdates = b.op("GatherND", [ct, indices])
    return [ddata, None, dupdates]


# -- resampling ------------------------------------------------------------------------------


def _length(value: Value | None) -> int | None:
    """The static length of an optional 1-D input: 0 when omitted, None when unknown."""
    if value is None:
        return 0
    t = value.type
    if isinstance(t, TensorType) and t.shape is not None and isinstance(t.shape[0], int):
        return t.shape[0]
    return None


@vjp("Resize")
def _resize(b: Builder, node: Node, cts: list[Value | None]) -> list[Value | None]:
    ct, x, where = _ct(cts), _in(node, 0), node.describe()
    attrs = node.attrs
    crop = attrs.get("coordinate_transformation_mode") == "tf_crop_and_resize"
    if attrs.get("mode", "nearest") == "nearest" and not crop:
        # Every output cell copies one input cell.
        return [_by_source(b, node, ct, node.inputs[1:]), None, None, None]
    # Linear, cubic (or cropping): a linear map along each resized axis in turn, whose
    # matrices commute; each one's transpose takes the cotangent back along its axis.
    scales, sizes = _opt(node, 2), _opt(node, 3)
    n_scales, n_sizes = _length(scales), _length(sizes)
    if n_scales is None or n_sizes is None:
        raise GradientError(f"{where}: the gradient needs to know whether scales or sizes is set")
    if n_sizes and attrs.get("keep_aspect_ratio_policy", "stretch") != "stretch":
        raise GradientError(f"{where}: no gradient for keep_aspect_ratio_policy other than stretch")
    rank = b.rank(x, where)
    listed = normalize_axes(range(rank) if attrs.get("axes") is None else attrs["axes"], rank)
    dx = ct
    for k, a in enumerate(listed):
        matrix = _resize_matrix(b, node, x, a, k, len(listed), n_scales == 0)
        perm = [*(i for i in range(rank) if i != a), a]
        moved = b.op("MatMul", [b.op("Transpose", [dx], perm=perm), matrix])
        dx = b.op("Transpose", [moved], perm=[int(i) for i in np.argsort(perm)])
    return [_reshape_to(b, dx, x), None, None, None]


def _resize_matrix(
    b: Builder, node: Node, x: Value, axis: int, k: int, count: int, use_sizes: bool
) -> Value:
    """The [m, n] matrix by which ``node`` (a Resize) maps axis ``axis`` (its ``k``-th of
    ``count``) of ``x``: the same Resize of an n x n identity along its first axis, with what
    falls outside a crop set to 0."""
    n = _dims(b, x, axis, axis + 1)
    zero = np.zeros(1, x.tensor_type.dtype.numpy)
    square = b.op("ConstantOfShape", [b.op("Concat", [n, n], axis=0)], value=zero)
    eye = b.op("EyeLike", [square])

    def part(v: Value, i: int) -> Value:
        return b.op("Slice", [v, b.ints([i]), b.ints([i + 1])])

    roi = _opt(node, 1)
    if roi is not None:
        roi = b.op("Concat", [part(roi, k), part(roi, k + count)], axis=0)
    scales = None if use_sizes else part(_in(node, 2), k)
    sizes = part(_in(node, 3), k) if use_sizes else None
    attrs = {**node.attrs, "axes": [0], "extrapolation_value": 0.0}
    return b.op("Resize", _trimmed([eye, roi, scales, sizes]), **attrs)
