"""Reference kernels for the sequence and optional ops: lists of arrays; None or a value."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ops.sequence import split_chunks
from ..registry import KernelContext, kernel
from .elementwise import Array, axis_in, fail


def _index(ctx: KernelContext, position: Any, n: int, *, inserting: bool = False) -> int:
    """``position`` as an index into a sequence of ``n``: in [-n, n-1], or [-n, n] to insert."""
    pos = np.asarray(position)
    if pos.size != 1:
        raise fail(ctx, f"position must hold one element, got shape {list(pos.shape)}")
    p, hi = int(pos.reshape(())), n if inserting else n - 1
    if not -n <= p <= hi:
        raise fail(ctx, f"position {p} is out of range [{-n}, {hi}] for a sequence of {n}")
    return p + n if p < 0 else p


@kernel("SequenceEmpty")
def sequence_empty(ctx: KernelContext) -> list[Array]:
    return []


@kernel("SequenceConstruct")
def sequence_construct(ctx: KernelContext, *tensors: Array) -> list[Array]:
    return list(tensors)


@kernel("SequenceInsert")
def sequence_insert(
    ctx: KernelContext, seq: list[Array], tensor: Array, position: Any = None
) -> list[Array]:
    out = list(seq)
    at = len(out) if position is None else _index(ctx, position, len(out), inserting=True)
    out.insert(at, tensor)
    return out


@kernel("SequenceErase")
def sequence_erase(ctx: KernelContext, seq: list[Array], position: Any = None) -> list[Array]:
    out = list(seq)
    del out[_index(ctx, -1 if position is None else position, len(out))]
    return out


@kernel("SequenceAt")
def sequence_at(ctx: KernelContext, seq: list[Array], position: Any) -> Array:
    return seq[_index(ctx, position, len(seq))]


@kernel("SequenceLength")
def sequence_length(ctx: KernelContext, seq: list[Array]) -> Array:
    return np.array(len(seq), np.int64)


@kernel("ConcatFromSequence")
def concat_from_sequence(ctx: KernelContext, seq: list[Array]) -> Array:
    if not seq:
        raise fail(ctx, "cannot concatenate an empty sequence")
    rank = np.ndim(seq[0])
    if ctx.attr("new_axis"):
        return np.stack(seq, axis=axis_in(ctx, ctx.attr("axis"), rank + 1))
    if rank == 0:
        raise fail(ctx, "cannot concatenate scalars without new_axis")
    return np.concatenate(seq, axis=axis_in(ctx, ctx.attr("axis"), rank))


@kernel("SplitToSequence")
def split_to_sequence(ctx: KernelContext, x: Array, split: Any = None) -> list[Array]:
    if x.ndim == 0:
        raise fail(ctx, "cannot split a scalar")
    axis = axis_in(ctx, ctx.attr("axis"), x.ndim)
    try:
        sizes = split_chunks(x.shape[axis], None if split is None else np.asarray(split))
    except ValueError as exc:
        raise fail(ctx, f"split: {exc}") from None
    if sizes is None:
        if ctx.attr("keepdims"):
            return list(np.split(x, x.shape[axis], axis=axis)) if x.shape[axis] else []
        return list(np.moveaxis(x, axis, 0))
    return list(np.split(x, np.cumsum(sizes)[:-1], axis=axis)) if sizes else []


@kernel("Optional")
def optional(ctx: KernelContext, value: Any = None) -> Any:
    return value


@kernel("OptionalHasElement")
def optional_has_element(ctx: KernelContext, value: Any = None) -> Array:
    return np.array(value is not None)


@kernel("OptionalGetElement")
def optional_get_element(ctx: KernelContext, value: Any) -> Any:
    if value is None:
        raise fail(ctx, "the optional is empty")
    return value
