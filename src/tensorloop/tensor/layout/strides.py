"""Stride arithmetic: row/column-major strides, a layout's linear span, copy-free reshapes."""

from __future__ import annotations

from collections.abc import Sequence


def row_major_strides(sizes: Sequence[int]) -> tuple[int, ...]:
    strides = [1] * len(sizes)
    for k in range(len(sizes) - 2, -1, -1):
        strides[k] = strides[k + 1] * sizes[k + 1]
    return tuple(strides)


def column_major_strides(sizes: Sequence[int]) -> tuple[int, ...]:
    strides = [1] * len(sizes)
    for k in range(1, len(sizes)):
        strides[k] = strides[k - 1] * sizes[k - 1]
    return tuple(strides)


def linear_extent(shape: Sequence[int], strides: Sequence[int], offset: int) -> tuple[int, int]:
    lo = hi = offset
    for n, s in zip(shape, strides, strict=True):
        if s < 0:
            lo += s * (n - 1)
        else:
            hi += s * (n - 1)
    return lo, hi + 1


def nocopy_reshape_strides(
    shape: tuple[int, ...], strides: tuple[int, ...], target: tuple[int, ...]
) -> tuple[int, ...] | None:
    """Strides that express ``target`` over the same row-major elements, or None.

    Follows NumPy's ``_attempt_nocopy_reshape``: split both shapes into runs with equal
    products; each run of old axes must be contiguous with respect to itself.
    """
    old = [(n, s) for n, s in zip(shape, strides, strict=True) if n != 1]
    out = [0] * len(target)
    oi, oj, ni, nj = 0, 1, 0, 1
    while ni < len(target) and oi < len(old):
        np_, op = target[ni], old[oi][0]
        while np_ != op:
            if np_ < op:
                np_ *= target[nj]
                nj += 1
            else:
                op *= old[oj][0]
                oj += 1
        for ok in range(oi, oj - 1):
            if old[ok][1] != old[ok + 1][0] * old[ok + 1][1]:
                return None
        out[nj - 1] = old[oj - 1][1]
        for nk in range(nj - 1, ni, -1):
            out[nk - 1] = out[nk] * target[nk]
        ni, nj, oi, oj = nj, nj + 1, oj, oj + 1
    last = out[ni - 1] if ni >= 1 else 1
    for nk in range(ni, len(target)):
        out[nk] = last
    return tuple(out)
