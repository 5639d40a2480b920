"""Reference kernels for the prior boxes: PriorBox and PriorBoxClustered.

Every coordinate is computed in f32 in the order OpenVINO's CPU plugin computes it, one f32
operation at a time over the grid of cells (each the same rounding as the plugin's scalar)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ops.detection import prior_box_counts, prior_ratios
from ..registry import KernelContext, kernel
from .elementwise import Array, fail

_F = np.float32


def _pair(ctx: KernelContext, data: Any, what: str) -> tuple[int, int]:
    values = np.asarray(data)
    if values.dtype.kind not in "iu" or values.shape != (2,) or (values <= 0).any():
        raise fail(ctx, f"{what} must be 2 positive integers, got {values.tolist()}")
    return int(values[0]), int(values[1])


def _priors_output(boxes: Array, variance: list[Any], clip: bool) -> Array:
    """OpenVINO's [2, 4·priors] layout: the boxes (clipped to [0, 1] for ``clip``), then each
    box's variances (0.1 where none is given)."""
    first = boxes.reshape(-1).astype(_F)
    if clip:
        first = np.clip(first, _F(0), _F(1))
    values = np.asarray([_F(v) for v in variance] or [_F(0.1)], _F)
    second = np.resize(values, first.shape) if len(values) == 4 else np.full_like(first, values[0])
    return np.stack([first, second])


def _box(cx: Array, cy: Array, bw: Any, bh: Any, iw: Any, ih: Any, clip: bool) -> Array:
    """[H, W, 4] corners of boxes of half sizes ``bw``, ``bh`` at centres ``cx``, ``cy``."""
    corners = [(cx - bw) * iw, (cy - bh) * ih, (cx + bw) * iw, (cy + bh) * ih]
    if clip:
        corners = [
            np.maximum(corners[0], _F(0)),
            np.maximum(corners[1], _F(0)),
            np.minimum(corners[2], _F(1)),
            np.minimum(corners[3], _F(1)),
        ]
    return np.stack(corners, axis=-1)


@kernel("PriorBox")
def prior_box(ctx: KernelContext, output_size: Any, image_size: Any) -> Array:
    height, width = _pair(ctx, output_size, "output_size")
    img_h, img_w = _pair(ctx, image_size, "image_size")
    a = ctx.attrs
    given, _ = prior_box_counts(a)
    ratios = prior_ratios(a["aspect_ratio"], bool(a["flip"]))
    others = [r for r in ratios if abs(r - _F(1.0)) >= 1e-6]
    step, offset = _F(a["step"]), _F(a["offset"])
    min_size = [_F(s) for s in a["min_size"]]
    if not a["scale_all_sizes"]:
        step = _F(img_h) / _F(height) if step == -1 else step * _F(img_h)
        min_size = [s * _F(img_h) for s in min_size]
    iw, ih = _F(1.0) / _F(img_w), _F(1.0) / _F(img_h)
    cols = np.broadcast_to(np.arange(width, dtype=_F)[None, :], (height, width))
    rows = np.broadcast_to(np.arange(height, dtype=_F)[:, None], (height, width))
    if step == 0:
        cx = (cols + _F(0.5)) * (_F(img_w) / _F(width))
        cy = (rows + _F(0.5)) * (_F(img_h) / _F(height))
    else:
        cx, cy = (offset + cols) * step, (offset + rows) * step
    boxes: list[Array] = []

    def dense(s: int, bw: Any, bh: Any) -> None:
        fixed = a["fixed_size"][s]
        density = int(a["density"][s])
        shift = int(fixed / density)
        half_size, half_shift = _F(int(fixed) // 2), _F(shift) / _F(2)
        for r in range(density):
            for c in range(density):
                x = cx - half_size + half_shift + _F(c * shift)
                y = cy - half_size + half_shift + _F(r * shift)
                boxes.append(_box(x, y, bw, bh, iw, ih, True))

    for s, fixed in enumerate(a["fixed_size"]):
        if a["fixed_ratio"]:
            for ar in a["fixed_ratio"]:
                root = np.sqrt(_F(ar))
                dense(s, _F(fixed) * _F(0.5) * root, _F(fixed) * _F(0.5) / root)
            continue
        half = _F(int(fixed)) * _F(0.5)
        dense(s, half, half)
        for ar in others:
            root = np.sqrt(ar)
            dense(s, _F(fixed) * _F(0.5) * root, _F(fixed) * _F(0.5) / root)
    for i, size in enumerate(min_size):
        boxes.append(_box(cx, cy, size * _F(0.5), size * _F(0.5), iw, ih, False))
        base = min_size[i if a["scale_all_sizes"] else 0]
        maxed: list[tuple[Any, Any]] = []
        if len(a["max_size"]) > i:
            half = np.sqrt(size * _F(a["max_size"][i])) * _F(0.5)
            maxed.append((half, half))
        ratioed: list[tuple[Any, Any]] = []
        if a["scale_all_sizes"] or i == len(min_size) - 1:
            for ar in others:
                root = np.sqrt(ar)
                ratioed.append((base * _F(0.5) * root, base * _F(0.5) / root))
        ordered = maxed + ratioed if a["min_max_aspect_ratios_order"] else ratioed + maxed
        boxes.extend(_box(cx, cy, bw, bh, iw, ih, False) for bw, bh in ordered)
    if len(boxes) != given:
        raise fail(ctx, f"{len(boxes)} priors a cell where the attributes count {given}")
    grid = np.stack(boxes, axis=2) if boxes else np.zeros((height, width, 0, 4), _F)
    return _priors_output(grid, list(a["variance"]), bool(a["clip"]))


@kernel("PriorBoxClustered")
def prior_box_clustered(ctx: KernelContext, output_size: Any, image_size: Any) -> Array:
    height, width = _pair(ctx, output_size, "output_size")
    img_h, img_w = _pair(ctx, image_size, "image_size")
    a = ctx.attrs
    step_w, step_h, offset = _F(a["step_w"]), _F(a["step_h"]), _F(a["offset"])
    if step_w == 0 and step_h == 0:
        step_w, step_h = _F(img_w) / _F(width), _F(img_h) / _F(height)
    cols = np.broadcast_to(np.arange(width, dtype=_F)[None, :], (height, width))
    rows = np.broadcast_to(np.arange(height, dtype=_F)[:, None], (height, width))
    cx, cy = (cols + offset) * step_w, (rows + offset) * step_h
    boxes = []
    for bw, bh in zip(a["width"], a["height"], strict=True):
        hw, hh = _F(bw) / _F(2), _F(bh) / _F(2)
        corners = [
            (cx - hw) / _F(img_w),
            (cy - hh) / _F(img_h),
            (cx + hw) / _F(img_w),
            (cy + hh) / _F(img_h),
        ]
        boxes.append(np.stack(corners, axis=-1))
    grid = np.stack(boxes, axis=2) if boxes else np.zeros((height, width, 0, 4), _F)
    return _priors_output(grid, list(a["variance"]), bool(a["clip"]))
