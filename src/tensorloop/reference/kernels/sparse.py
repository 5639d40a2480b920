"""Reference kernel of the sparse-tensor op SparseFillEmptyRows."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..registry import KernelContext, kernel
from .elementwise import Array, fail


@kernel("SparseFillEmptyRows")
def sparse_fill_empty_rows(
    ctx: KernelContext, values: Any, dense_shape: Any, indices: Any, default_value: Any
) -> tuple[Array, Array, Array]:
    values, indices = np.asarray(values), np.asarray(indices)
    shape = np.asarray(dense_shape).reshape(-1)
    if shape.size != 2 or indices.ndim != 2 or indices.shape[1] != 2:
        got = f"dense_shape {shape.tolist()} and indices of shape {list(indices.shape)}"
        raise fail(ctx, f"expected a dense_shape of 2 and [M, 2] indices, got {got}")
    if values.shape != indices.shape[:1]:
        raise fail(ctx, f"{values.size} values, but {indices.shape[0]} indices")
    rows, cols = (int(d) for d in shape)
    if rows < 0 or cols < 0:
        raise fail(ctx, f"dense_shape {[rows, cols]} is negative")
    outside = (indices < 0) | (indices >= np.array([rows, cols]))
    if outside.any():
        at = int(np.argwhere(outside)[0][0])
        raise fail(ctx, f"index {indices[at].tolist()} lies outside dense_shape {[rows, cols]}")
    empty = np.ones(rows, dtype=bool)
    empty[indices[:, 0]] = False
    filled = np.flatnonzero(empty).astype(indices.dtype)
    all_indices = np.concatenate([indices, np.stack([filled, np.zeros_like(filled)], axis=1)])
    fill = np.full(filled.size, np.asarray(default_value), dtype=values.dtype)
    all_values = np.concatenate([values, fill])
    order = np.lexsort((all_indices[:, 1], all_indices[:, 0]))  # stable: ties keep input order
    return all_indices[order], all_values[order], empty
