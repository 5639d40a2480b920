"""Shared pieces of type rules: broadcasting, axis handling, dims from constant inputs."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager

from ..ir.opdef import InferContext
from ..tensor.dtypes import DType
from ..tensor.types import UNKNOWN, Dim, TensorType, Type, normalize_axis


def broadcast_dims(
    ctx: InferContext, shapes: Sequence[tuple[Dim, ...] | None]
) -> tuple[Dim, ...] | None:
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
    """``normalize_axis`` with this type rule's error."""
    return normalize_axis(axis, rank, error=ctx.error)


# Each kind: the words naming it in errors, and which element types it admits.
_KINDS: dict[str, tuple[str, Callable[[DType], bool]]] = {
    "any": ("", lambda d: True),
    "numeric": ("numeric", lambda d: d.is_numeric),
    "signed": ("signed numeric", lambda d: d.is_signed),
    "float": ("floating-point", lambda d: d.is_float),
    "int": ("integer", lambda d: d.is_int),
    "bool": ("bool", lambda d: d is DType.bool),
}


def expect(ctx: InferContext, index: int, kind: str = "any", rank: int | None = None) -> TensorType:
    """Input ``index`` as a tensor of element ``kind`` (and ``rank``, when its rank is known)."""
    t = ctx.tensor(index)
    words, admits = _KINDS[kind]
    bad_rank = rank is not None and t.rank is not None and t.rank != rank
    if not admits(t.dtype) or bad_rank:
        phrase = " ".join(w for w in (words, "scalar" if rank == 0 else "tensor") if w)
        if rank:
            phrase = f"{rank}-D {phrase}"
        article = "an" if phrase[0] in "aeiou" else "a"
        raise ctx.error(f"input #{index}: expected {article} {phrase}, got {t}")
    return t


def scalar_int(ctx: InferContext, index: int, what: str = "") -> int | None:
    """Input ``index`` as an integer scalar (or 1-D of length 1): its value when a constant."""
    t = expect(ctx, index, "int")
    if t.shape not in (None, (), (1,), (UNKNOWN,)):
        label = f" ({what})" if what else ""
        raise ctx.error(f"input #{index}{label}: expected an integer scalar, got {t}")
    values = ctx.const_ints(index)
    return None if values is None else values[0]


def expect_one_of(
    ctx: InferContext, index: int, allowed: Collection[DType], what: str = ""
) -> TensorType:
    """Input ``index`` as a tensor whose element type is one of ``allowed``."""
    t = ctx.tensor(index)
    if t.dtype not in allowed:
        names = ", ".join(sorted(str(d) for d in allowed))
        label = f" ({what})" if what else ""
        raise ctx.error(f"input #{index}{label}: expected one of {names}, got {t}")
    return t


def static_length(t: TensorType) -> int | None:
    """The length of a 1-D tensor when it is known before running."""
    if t.shape is None or len(t.shape) != 1 or not isinstance(t.shape[0], int):
        return None
    return t.shape[0]


def normalize_axes(axes: Sequence[int], rank: int, what: str = "axes") -> list[int]:
    """``axes`` mapped into [0, rank); ValueError if one is out of range or repeated."""
    out: list[int] = []
    for a in axes:
        if not -rank <= a < rank:
            raise ValueError(f"{what} {list(axes)}: {a} is out of range for rank {rank}")
        out.append(a + rank if a < 0 else a)
    if len(set(out)) != len(out):
        raise ValueError(f"{what} {list(axes)} name an axis twice")
    return out


@contextmanager
def reported(ctx: InferContext) -> Iterator[None]:
    """Re-raise a shared helper's ValueError as this node's shape-inference error."""
    try:
        yield
    except ValueError as exc:
        raise ctx.error(str(exc)) from None
