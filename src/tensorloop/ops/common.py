"""Shared pieces of type rules: broadcasting, axis handling, dims from constant inputs."""

from __future__ import annotations

from collections.abc import Sequence

from ..ir.opdef import InferContext
from ..tensor.types import UNKNOWN, Dim, TensorType, Type


def broadcast_dims(ctx: InferContext, shapes: Sequence[tuple[Dim, ...] | None]) -> tuple[Dim, ...] | None:
    """NumPy broadcasting over possibly symbolic shapes; None if some rank is unknown."""
    if any(s is None for s in shapes):
        return None
    known = [s for s in shapes if s is not None]
    rank = max((len(s) for s in known), default=0)
    out: list[Dim] = []
    for k in range(rank):
        dims = [s[len(s) - rank + k] for s in known if len(s) - rank + k >= 0]
        statics = {d for d in dims if isinstance(d, int) and d != 1}
        symbols = {d for d in dims if isinstance(d, str)}
        if len(statics) > 1:
            detail = " vs ".join(str(list(s)) for s in known)
            raise ctx.error(f"shapes do not broadcast: {detail}")
        if statics:
            out.append(statics.pop())
        elif len(symbols) == 1 and all(d == 1 or isinstance(d, str) for d in dims):
            out.append(symbols.pop())
        elif symbols:
            out.append(UNKNOWN)
        else:
            out.append(1)
    return tuple(out)


def elementwise(ctx: InferContext, *, result_dtype: object = None) -> list[Type]:
    """Type of an n-ary broadcasting op whose inputs share one dtype."""
    indices = [i for i in range(len(ctx)) if ctx.has(i)]
    dt = ctx.same_dtype(*indices)
    shape = broadcast_dims(ctx, [ctx.tensor(i).shape for i in indices])
    return [TensorType(dt if result_dtype is None else result_dtype, shape)]  # type: ignore[arg-type]


def norm_axis(ctx: InferContext, axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise ctx.error(f"axis {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis
