"""Linear algebra: MatMul (NumPy matmul semantics), Gemm and Inverse."""

from __future__ import annotations

from ..ir.opdef import AttrSpec, InferContext, op
from ..tensor.dtypes import DType
from ..tensor.types import Dim, TensorType, Type
from .common import broadcast_dims, expect, expect_one_of


@op("MatMul", inputs=2)
def _matmul(ctx: InferContext) -> list[Type]:
    """NumPy's matmul: a 1-D operand gains a unit axis (dropped from the result), and the axes
    before the last two broadcast as batch axes."""
    a, b = expect(ctx, 0, "numeric"), expect(ctx, 1, "numeric")
    return [TensorType(ctx.same_dtype(0, 1), matmul_dims(ctx, a, b))]


def matmul_dims(
    ctx: InferContext, a: TensorType, b: TensorType, inputs: tuple[int, int] = (0, 1)
) -> tuple[Dim, ...] | None:
    """The dims of NumPy's ``a @ b`` (None if a rank is unknown), the operands being inputs
    ``inputs`` of ``ctx``'s node."""
    if a.shape is None or b.shape is None:
        return None
    for i, t in zip(inputs, (a, b), strict=True):
        if t.rank == 0:
            raise ctx.error(f"input #{i}: expected at least 1 dim, got {t}")
    sa = [1, *a.shape] if len(a.shape) == 1 else list(a.shape)
    sb = [*b.shape, 1] if len(b.shape) == 1 else list(b.shape)
    ka, kb = sa[-1], sb[-2]
    if isinstance(ka, int) and isinstance(kb, int) and ka != kb:
        raise ctx.error(f"inner dims do not match: {a} @ {b} ({ka} vs {kb})")
    batch = broadcast_dims(ctx, [tuple(sa[:-2]), tuple(sb[:-2])])
    assert batch is not None
    rows = [sa[-2]] if len(a.shape) > 1 else []
    cols = [sb[-1]] if len(b.shape) > 1 else []
    return (*batch, *rows, *cols)


_GEMM_ATTRS = {
    "alpha": AttrSpec((float, int), 1.0),
    "beta": AttrSpec((float, int), 1.0),
    "transA": AttrSpec(int, 0),
    "transB": AttrSpec(int, 0),
}


@op("Gemm", inputs=(2, 3), attrs=_GEMM_ATTRS)
def _gemm(ctx: InferContext) -> list[Type]:
    """alpha * A' @ B' + beta * C, where A' is the 2-D A (transposed if transA), likewise B'; the
    optional C broadcasts one way to the [M, N] result."""
    a, b = expect(ctx, 0, "numeric", rank=2), expect(ctx, 1, "numeric", rank=2)
    dt = ctx.same_dtype(*[i for i in range(len(ctx)) if ctx.has(i)])
    if a.shape is None or b.shape is None:
        return [TensorType(dt, None)]
    m, ka = a.shape[::-1] if ctx.attr("transA") else a.shape
    kb, n = b.shape[::-1] if ctx.attr("transB") else b.shape
    if isinstance(ka, int) and isinstance(kb, int) and ka != kb:
        raise ctx.error(f"inner dims do not match: A' is [{m},{ka}], B' is [{kb},{n}]")
    out: list[Dim] = [m, n]
    c = ctx.tensor(2) if ctx.has(2) else None
    if c is not None and c.shape is not None:
        fits = len(c.shape) <= 2 and all(
            not isinstance(cd, int) or cd == 1 or not isinstance(od, int) or cd == od
            for cd, od in zip(c.shape[::-1], out[::-1], strict=False)
        )
        if not fits:
            raise ctx.error(f"input #2: C of {c} does not broadcast to the result [{m},{n}]")
    return [TensorType(dt, out)]


_INVERTIBLE = frozenset({DType.float16, DType.bfloat16, DType.float32, DType.float64})


@op("Inverse")
def _inverse(ctx: InferContext) -> list[Type]:
    """The inverse of each square matrix in the last two axes of a [*, M, M] tensor. A matrix
    that has none (singular to working precision) inverts to all NaN; others in the batch are
    unaffected."""
    t = expect_one_of(ctx, 0, _INVERTIBLE, "matrices")
    if t.shape is None:
        return [t]
    if len(t.shape) < 2:
        raise ctx.error(f"input #0: expected [*, M, M] matrices, got {t}")
    m, n = t.shape[-2:]
    if isinstance(m, int) and isinstance(n, int) and m != n:
        raise ctx.error(f"input #0: matrices must be square, got {t}")
    return [t]
