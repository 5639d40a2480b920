"""Sparse-tensor ops: SparseFillEmptyRows (OpenVINO opset 16, TensorFlow's op for 2-D tensors)."""

from __future__ import annotations

from ..ir.opdef import InferContext, op
from ..tensor.dtypes import DType
from ..tensor.types import UNKNOWN, Dim, TensorType, Type
from .common import expect, expect_one_of, static_length


@op("SparseFillEmptyRows", inputs=4)
def _sparse_fill_empty_rows(ctx: InferContext) -> list[Type]:
    """A 2-D sparse tensor (``values`` [M] at ``indices`` [M, 2], of shape ``dense_shape`` [2])
    with ``default_value`` (a scalar of the values' type) added at [row, 0] of every row that
    holds no value. Returns the entries sorted by (row, column), entries at the same position
    in input order (``output_indices`` [M', 2], ``output_values`` [M']), and which rows were
    empty (``empty_row_indicator``, bool [dense_shape[0]]). ``indices`` and ``dense_shape`` are
    i32 or i64 alike; every index must lie inside ``dense_shape``. As Python:

        rows, cols = dense_shape
        empty = [r for r in range(rows) if r not in indices[:, 0]]
        entries = [*zip(map(tuple, indices), values), *(((r, 0), default_value) for r in empty)]
        entries.sort(key=lambda e: e[0])  # stable
        return [i for i, _ in entries], [v for _, v in entries], [r in empty for r in range(rows)]
    """
    values = expect(ctx, 0, "any", rank=1)
    if values.dtype is DType.string:
        raise ctx.error(f"input #0 (values): expected numbers or bools, got {values}")
    shape = expect_one_of(ctx, 1, {DType.int32, DType.int64}, "dense_shape")
    indices = expect(ctx, 2, "int", rank=2)
    default = expect(ctx, 3, "any", rank=0)
    if indices.dtype is not shape.dtype:
        raise ctx.error(
            f"input #2 (indices): expected {shape.dtype} like dense_shape, got {indices}"
        )
    if default.dtype is not values.dtype:
        raise ctx.error(
            f"input #3 (default_value): expected {values.dtype} like values, got {default}"
        )
    if shape.rank not in (None, 1) or static_length(shape) not in (None, 2):
        raise ctx.error(f"input #1 (dense_shape): expected 2 integers, got {shape}")
    if indices.shape is not None and isinstance(indices.shape[1], int) and indices.shape[1] != 2:
        raise ctx.error(f"input #2 (indices): expected [M, 2] indices, got {indices}")
    m = None if indices.shape is None else indices.shape[0]
    count = static_length(values)
    if isinstance(m, int) and count not in (None, m):
        raise ctx.error(f"{count} values, but indices {indices} place {m}")
    known = ctx.const_ints(1)
    rows: Dim = known[0] if known is not None and len(known) == 2 else UNKNOWN
    return [
        TensorType(shape.dtype, [UNKNOWN, 2]),
        TensorType(values.dtype, [UNKNOWN]),
        TensorType(DType.bool, [rows]),
    ]
