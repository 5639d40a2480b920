"""Sequence and optional ops (ONNX): build, index, concatenate and split tensor sequences."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ir.opdef import AttrSpec, InferContext, op
from ..tensor.dtypes import DType
from ..tensor.types import UNKNOWN, Dim, OptionalType, SequenceType, TensorType, Type
from .common import norm_axis, static_length

INDEX_DTYPES = (DType.int32, DType.int64)


def split_chunks(dim: int, split: np.ndarray[Any, Any] | None) -> list[int] | None:
    """SplitToSequence's chunk lengths along an axis of size ``dim``; None means ``split`` is
    absent (one chunk per index, its axis dropped unless keepdims). onnxruntime reads an empty
    1-D ``split`` as absent too. Shared with the kernel; raises ValueError on a bad ``split``."""
    if split is None or (split.ndim == 1 and split.size == 0):
        return None
    if split.ndim == 0:
        size = int(split)
        if size <= 0:
            raise ValueError(f"a scalar split must be positive, got {size}")
        return [size] * (dim // size) + ([dim % size] if dim % size else [])
    if split.ndim != 1:
        raise ValueError(f"split must be a scalar or 1-D, got shape {list(split.shape)}")
    sizes = [int(s) for s in split]
    if any(s < 0 for s in sizes):
        raise ValueError(f"split {sizes} holds a negative length")
    if sum(sizes) != dim:
        raise ValueError(f"split {sizes} sums to {sum(sizes)}, but the axis has length {dim}")
    return sizes


def _sequence(ctx: InferContext, index: int) -> SequenceType:
    t = ctx.types[index] if ctx.has(index) else None
    if not isinstance(t, SequenceType):
        raise ctx.error(f"input #{index}: expected a sequence, got {t or 'nothing'}")
    return t


def _element(ctx: InferContext, index: int) -> TensorType:
    """The element type of sequence input ``index``, which must be a tensor type."""
    t = _sequence(ctx, index)
    if not isinstance(t.element, TensorType):
        raise ctx.error(f"input #{index}: expected a sequence of tensors, got {t}")
    return t.element


def _position(ctx: InferContext, index: int) -> None:
    """Check the optional ``position`` input: an int32/int64 scalar (or one-element 1-D tensor,
    which onnxruntime also takes)."""
    if not ctx.has(index):
        return
    t = ctx.tensor(index)
    dims = t.shape
    one = (
        dims is None
        or dims == ()
        or (len(dims) == 1 and (dims[0] == 1 or isinstance(dims[0], str)))
    )
    if t.dtype not in INDEX_DTYPES or not one:
        raise ctx.error(f"input #{index} (position): expected an int32 or int64 scalar, got {t}")


def _join(ctx: InferContext, types: list[TensorType], what: str) -> Type:
    """The one type covering tensors of one element type (dims that differ become "?")."""
    if len({t.dtype for t in types}) > 1:
        listed = ", ".join(str(t) for t in types)
        raise ctx.error(f"{what} must share one element type, got {listed}")
    joined: Type = types[0]
    for t in types[1:]:
        joined = joined.join(t)
    return joined


@op("SequenceEmpty", inputs=0, attrs={"dtype": AttrSpec(DType, DType.float32)})
def _sequence_empty(ctx: InferContext) -> list[Type]:
    """An empty sequence of ``dtype`` tensors (of any shape)."""
    return [SequenceType(TensorType(ctx.attr("dtype"), None))]


@op("SequenceConstruct", inputs=(1, None))
def _sequence_construct(ctx: InferContext) -> list[Type]:
    """The sequence of the input tensors, in order; they share one element type."""
    return [SequenceType(_join(ctx, [ctx.tensor(i) for i in range(len(ctx))], "the inputs"))]


@op("SequenceInsert", inputs=(2, 3))
def _sequence_insert(ctx: InferContext) -> list[Type]:
    """``input_sequence`` with ``tensor`` inserted before index ``position`` (in [-n, n] for
    n elements, negative counting from the back); appended when position is omitted."""
    elem = _element(ctx, 0)
    _position(ctx, 2)
    return [SequenceType(_join(ctx, [elem, ctx.tensor(1)], "the sequence and the tensor"))]


@op("SequenceErase", inputs=(1, 2))
def _sequence_erase(ctx: InferContext) -> list[Type]:
    """``input_sequence`` without its element at ``position`` (in [-n, n-1]; default -1)."""
    t = _sequence(ctx, 0)
    _position(ctx, 1)
    return [t]


@op("SequenceAt", inputs=2)
def _sequence_at(ctx: InferContext) -> list[Type]:
    """Element ``position`` of ``input_sequence`` (in [-n, n-1], negative from the back)."""
    t = _sequence(ctx, 0)
    if not ctx.has(1):
        raise ctx.error("input #1 (position) is required")
    _position(ctx, 1)
    return [t.element]


@op("SequenceLength", inputs=1)
def _sequence_length(ctx: InferContext) -> list[Type]:
    """The number of elements of ``input_sequence``, as an int64 scalar."""
    _sequence(ctx, 0)
    return [TensorType(DType.int64, ())]


@op(
    "ConcatFromSequence",
    attrs={"axis": AttrSpec(int), "new_axis": AttrSpec(int, 0)},
)
def _concat_from_sequence(ctx: InferContext) -> list[Type]:
    """The elements of a non-empty sequence concatenated along ``axis`` (in [-r, r-1] for rank
    r), or with new_axis=1 stacked on a new ``axis`` (in [-r-1, r]) like numpy.stack."""
    elem = _element(ctx, 0)
    new_axis = ctx.attr("new_axis")
    if new_axis not in (0, 1):
        raise ctx.error(f"new_axis must be 0 or 1, got {new_axis}")
    if elem.shape is None:
        return [elem]
    if not new_axis and not elem.shape:
        raise ctx.error(f"cannot concatenate scalars ({elem}) without new_axis")
    dims: list[Dim] = list(elem.shape)
    axis = norm_axis(ctx, ctx.attr("axis"), len(dims) + new_axis)
    if new_axis:
        dims.insert(axis, UNKNOWN)
    else:
        dims[axis] = UNKNOWN
    return [elem.with_shape(dims)]


@op(
    "SplitToSequence", inputs=(1, 2), attrs={"axis": AttrSpec(int, 0), "keepdims": AttrSpec(int, 1)}
)
def _split_to_sequence(ctx: InferContext) -> list[Type]:
    """``input`` split along ``axis`` into a sequence. ``split`` (input #1) is a positive scalar
    chunk length (the last chunk may be shorter) or 1-D lengths summing to the axis length.
    Without it (or with it empty, as onnxruntime reads it), each index is one chunk of length 1,
    and keepdims=0 drops the split axis from each."""
    t = ctx.tensor(0)
    keep = bool(ctx.attr("keepdims"))
    split = None
    absent = not ctx.has(1)
    maybe_absent = absent  # an empty split is known only when running
    if ctx.has(1):
        s = ctx.tensor(1)
        if s.dtype not in INDEX_DTYPES or (s.rank is not None and s.rank > 1):
            raise ctx.error(f"input #1 (split): expected an int32 or int64 scalar or 1-D, got {s}")
        split = ctx.const(1)
        if split is not None:
            absent = maybe_absent = split.ndim == 1 and split.size == 0
        else:
            maybe_absent = s.rank != 0 and static_length(s) in (None, 0)
    if t.shape is None:
        return [SequenceType(t)]
    dims: list[Dim] = list(t.shape)
    if not dims:
        raise ctx.error(f"cannot split a scalar ({t})")
    axis = norm_axis(ctx, ctx.attr("axis"), len(dims))
    if absent:
        dims[axis] = 1
    elif maybe_absent and not keep:  # the axis is dropped or kept only at run time
        return [SequenceType(t.with_shape(None))]
    elif split is None:
        dims[axis] = UNKNOWN
    else:
        dims[axis] = _chunk_length(ctx, dims[axis], split)
    if absent and not keep:
        del dims[axis]
    return [SequenceType(t.with_shape(dims))]


def _chunk_length(ctx: InferContext, dim: Dim, split: np.ndarray[Any, Any]) -> Dim:
    """The length every chunk has on the split axis, or "?" when they differ."""
    if isinstance(dim, int):
        try:
            sizes = split_chunks(dim, split) or []
        except ValueError as exc:
            raise ctx.error(f"input #1 (split): {exc}") from None
    elif split.ndim == 1:
        sizes = [int(s) for s in split]
    else:
        return UNKNOWN
    return sizes[0] if len(set(sizes)) == 1 else UNKNOWN


@op("Optional", inputs=(0, 1), attrs={"type": AttrSpec(Type, None)})
def _optional(ctx: InferContext) -> list[Type]:
    """An optional holding ``input``, or an empty optional of element ``type`` without one."""
    declared: Type | None = ctx.attr("type")
    if not ctx.has(0):
        if declared is None:
            raise ctx.error("an empty Optional needs the 'type' attribute")
        return [OptionalType(declared)]
    t = ctx.types[0]
    assert t is not None
    if isinstance(t, OptionalType):
        raise ctx.error(f"input #0: expected a tensor or a sequence, got {t}")
    if declared is not None and not declared.compatible(t):
        raise ctx.error(f"input #0 is {t}, but the 'type' attribute says {declared}")
    return [OptionalType(t)]


@op("OptionalHasElement", inputs=(0, 1))
def _optional_has_element(ctx: InferContext) -> list[Type]:
    """True if ``input`` is a tensor, a sequence or a non-empty optional; false if it is an
    empty optional or omitted."""
    return [TensorType(DType.bool, ())]


@op("OptionalGetElement", inputs=1)
def _optional_get_element(ctx: InferContext) -> list[Type]:
    """The value held by an optional (an error if it is empty); a tensor or sequence input is
    returned as it is."""
    t = ctx.types[0]
    if t is None:
        raise ctx.error("input #0 is required")
    return [t.element if isinstance(t, OptionalType) else t]
