"""Reference kernels for the NMS ops of OpenVINO's: MulticlassNms and MatrixNms, computed in f32
in the order OpenVINO's CPU plugin computes them (whether an IoU passes a threshold turns on
its rounding), and NmsRotated, whose intersection polygons are computed in f64."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ...tensor.numerics import widen
from ..registry import KernelContext, kernel
from .elementwise import Array, fail

_F32 = np.float32


class _Row(NamedTuple):
    """One kept box: its score, batch, class and index among its batch's boxes."""

    score: float
    batch: int
    cls: int
    box: int


def _ious(boxes: Array, i: int, norm: Any) -> Array:
    """IoU of box ``i`` with every box of ``boxes`` [N, 4], taken as given (not reordered); 0
    where either has an area <= 0. Sides are ``norm`` longer (1 for unnormalised boxes)."""
    lo, hi = boxes[:, :2], boxes[:, 2:]
    area = (hi[:, 0] - lo[:, 0] + norm) * (hi[:, 1] - lo[:, 1] + norm)
    side = np.maximum(np.minimum(hi[i], hi) - np.maximum(lo[i], lo) + norm, _F32(0))
    inter = side[:, 0] * side[:, 1]
    good = (area > 0) & (area[i] > 0)
    with np.errstate(all="ignore"):
        return np.where(good, inter / (area[i] + area - inter), _F32(0))


def _multiclass_one(ctx: KernelContext, boxes: Array, scores: Array) -> list[int]:
    """The boxes NMS keeps for one batch and class, in the order kept: boxes [N, 4], scores
    [N]."""
    order = np.argsort(-scores, kind="stable")
    order = order[scores[order] >= _F32(ctx.attr("score_threshold"))]
    top = ctx.attr("nms_top_k")
    if top > -1:
        order = order[:top]
    threshold, eta = _F32(ctx.attr("iou_threshold")), _F32(ctx.attr("nms_eta"))
    norm = _F32(0 if ctx.attr("normalized") else 1)
    live = np.ones(len(scores), bool)
    kept: list[int] = []
    # Greedy by nature: each choice depends on the boxes chosen before it.
    for i in order:
        if not live[i]:
            continue
        kept.append(int(i))
        if eta < 1 and threshold > 0.5:
            threshold = threshold * eta
        live &= ~(_ious(boxes, int(i), norm) > threshold)
    return kept


@kernel("MulticlassNms")
def multiclass_nms(
    ctx: KernelContext, boxes: Any, scores: Any, roisnum: Any = None
) -> tuple[Array, Array, Array]:
    out_type = np.asarray(boxes).dtype
    b, s = widen(boxes).astype(_F32), widen(scores).astype(_F32)
    shared = roisnum is None
    if shared:
        if b.ndim != 3 or b.shape[2] != 4 or s.ndim != 3 or s.shape[::2] != b.shape[:2]:
            raise fail(
                ctx,
                f"boxes {list(b.shape)} and scores {list(s.shape)} must be [batches, boxes, 4] "
                "and [batches, classes, boxes]",
            )
        counts = [b.shape[1]] * b.shape[0]
        classes = s.shape[1]
    else:
        counts = [int(n) for n in np.asarray(roisnum).reshape(-1)]
        if b.ndim != 3 or b.shape[2] != 4 or s.shape != b.shape[:2]:
            raise fail(
                ctx,
                f"boxes {list(b.shape)} and scores {list(s.shape)} must be [classes, boxes, 4] "
                "and [classes, boxes]",
            )
        if sum(max(n, 0) for n in counts) > b.shape[1]:
            raise fail(ctx, f"roisnum {counts} adds up to more than the {b.shape[1]} boxes")
        classes = s.shape[0]
    rows: list[_Row] = []
    starts: list[int] = []
    start = 0
    for batch, count in enumerate(counts):
        starts.append(start)
        found: list[_Row] = []
        for cls in range(classes if count > 0 else 0):
            if cls == ctx.attr("background_class"):
                continue
            if shared:
                these, marks = b[batch], s[batch, cls]
            else:
                these, marks = b[cls, start : start + count], s[cls, start : start + count]
            for box in _multiclass_one(ctx, these, marks):
                found.append(_Row(float(marks[box]), batch, cls, box))
        rows.extend(_top(ctx, found))
        start += max(count, 0)
    rows = _sorted(ctx, rows)
    table = np.zeros((len(rows), 6), out_type)
    indices = np.zeros((len(rows), 1), np.int64)
    for k, r in enumerate(rows):
        if shared:
            indices[k, 0] = r.batch * b.shape[1] + r.box
            box = widen(boxes)[r.batch, r.box]
        else:
            indices[k, 0] = (starts[r.batch] + r.box) * classes + r.cls
            box = widen(boxes)[r.cls, starts[r.batch] + r.box]
        table[k] = (r.cls, r.score, *box)
    return table, indices, _per_batch(rows, len(counts))


def _sorted(ctx: KernelContext, rows: list[_Row]) -> list[_Row]:
    """Rows (by batch, then score) in the order sort_result and sort_across_batch ask for."""
    sort, across = ctx.attr("sort_result"), ctx.attr("sort_across_batch")
    if sort == "class":
        if across:
            return sorted(rows, key=lambda r: (r.cls, r.batch, -r.score, r.box))
        return sorted(rows, key=lambda r: (r.batch, r.cls, -r.score, r.box))
    if sort == "score" and across:
        return sorted(rows, key=lambda r: (-r.score, r.batch, r.cls, r.box))
    return rows


def _per_batch(rows: list[_Row], batches: int) -> Array:
    counts = np.zeros(batches, np.int64)
    np.add.at(counts, [r.batch for r in rows], 1)
    return counts


def _top(ctx: KernelContext, found: list[_Row]) -> list[_Row]:
    """One batch's rows by score (then class, box), the first keep_top_k."""
    found = sorted(found, key=lambda r: (-r.score, r.cls, r.box))
    keep = ctx.attr("keep_top_k")
    return found if keep < 0 else found[:keep]


def _matrix_ious(boxes: Array, norm: Any) -> Array:
    """IoU [n, n] of boxes [n, 4]: area 0 for a box with x2 < x1 or y2 < y1, 0 for boxes that
    do not meet."""
    lo, hi = boxes[:, :2], boxes[:, 2:]
    side = hi - lo
    area = np.where(np.any(side < 0, -1), _F32(0), (side[:, 0] + norm) * (side[:, 1] + norm))
    apart = np.any((lo[None] > hi[:, None]) | (hi[None] < lo[:, None]), -1)
    meet = np.minimum(hi[None], hi[:, None]) - np.maximum(lo[None], lo[:, None]) + norm
    inter = meet[..., 0] * meet[..., 1]
    with np.errstate(all="ignore"):
        iou = inter / (area[:, None] + area[None] - inter)
    return np.where(apart, _F32(0), iou).astype(_F32)


def _matrix_one(ctx: KernelContext, boxes: Array, scores: Array) -> list[tuple[int, Any]]:
    """(box, decayed score) pairs Matrix NMS keeps for one batch and class."""
    order = np.argsort(-scores, kind="stable")
    order = order[scores[order] > _F32(ctx.attr("score_threshold"))]
    if ctx.attr("nms_top_k") > -1:
        order = order[: ctx.attr("nms_top_k")]
    n = len(order)
    if n == 0:
        return []
    norm = _F32(0 if ctx.attr("normalized") else 1)
    iou = np.triu(_matrix_ious(boxes[order], norm), 1)  # iou[i, j] for i < j
    most = iou.max(axis=0)
    if ctx.attr("decay_function") == "gaussian":
        sigma = _F32(ctx.attr("gaussian_sigma"))
        with np.errstate(over="ignore"):
            decay = np.exp((most[:, None] * most[:, None] - iou * iou) * sigma)
    else:  # OpenVINO divides in f64, its 1e-10 keeping a duplicate box's divisor above 0
        wide = iou.astype(np.float64)
        decay = (
            (1 - wide) / (1 - most[:, None].astype(np.float64) + np.float64(_F32(1e-10)))
        ).astype(_F32)
    lower = np.tril(np.ones((n, n), bool))  # i >= j: not a box above j
    least = np.minimum(np.where(lower, _F32(1), decay).min(axis=0), _F32(1))
    decayed = least * scores[order]
    post = _F32(ctx.attr("post_threshold"))
    return [(int(order[j]), decayed[j]) for j in range(n) if decayed[j] > post]


@kernel("MatrixNms")
def matrix_nms(ctx: KernelContext, boxes: Any, scores: Any) -> tuple[Array, Array, Array]:
    out_type = np.asarray(boxes).dtype
    b, s = widen(boxes).astype(_F32), widen(scores).astype(_F32)
    if b.ndim != 3 or b.shape[2] != 4 or s.ndim != 3 or s.shape[::2] != b.shape[:2]:
        raise fail(
            ctx,
            f"boxes {list(b.shape)} and scores {list(s.shape)} must be [batches, boxes, 4] "
            "and [batches, classes, boxes]",
        )
    rows: list[_Row] = []
    for batch in range(b.shape[0]):
        found = [
            _Row(float(score), batch, cls, box)
            for cls in range(s.shape[1])
            if cls != ctx.attr("background_class")
            for box, score in _matrix_one(ctx, b[batch], s[batch, cls])
        ]
        rows.extend(_top(ctx, found))
    rows = _sorted(ctx, rows)
    table = np.zeros((len(rows), 6), out_type)
    indices = np.array([[r.batch * b.shape[1] + r.box] for r in rows], np.int64).reshape(-1, 1)
    for k, r in enumerate(rows):
        table[k] = (r.cls, r.score, *widen(boxes)[r.batch, r.box])
    return table, indices, _per_batch(rows, b.shape[0])


def _rotated_corners(boxes: Array, clockwise: bool) -> Array:
    """The corners [N, 4, 2] of boxes [N, 5] (cx, cy, w, h, angle), counterclockwise in x-y."""
    angle = boxes[:, 4] if clockwise else -boxes[:, 4]
    cos, sin = np.cos(angle), np.sin(angle)
    dx = np.array([-0.5, 0.5, 0.5, -0.5])[None] * boxes[:, 2:3]
    dy = np.array([-0.5, -0.5, 0.5, 0.5])[None] * boxes[:, 3:4]
    x = boxes[:, :1] + dx * cos[:, None] - dy * sin[:, None]
    y = boxes[:, 1:2] + dx * sin[:, None] + dy * cos[:, None]
    corners = np.stack([x, y], -1)
    flip = (boxes[:, 2] * boxes[:, 3]) < 0  # a negative side reverses the winding
    corners[flip] = corners[flip, ::-1]
    return corners


def _cross(o: Array, a: Array, b: Array) -> float:
    return float((a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0]))


def _clipped_area(subject: Array, clip: Array) -> float:
    """The area of convex polygon ``subject`` cut by convex polygon ``clip`` (both
    counterclockwise): Sutherland-Hodgman, then the shoelace formula."""
    points = list(subject)
    for k in range(len(clip)):
        a, b = clip[k], clip[(k + 1) % len(clip)]
        inside = [_cross(a, b, p) >= 0 for p in points]
        cut: list[Array] = []
        for i, p in enumerate(points):
            q = points[(i + 1) % len(points)]
            if inside[i]:
                cut.append(p)
            if inside[i] != inside[(i + 1) % len(points)]:
                dp, dq = _cross(a, b, p), _cross(a, b, q)
                cut.append(p + (q - p) * (dp / (dp - dq)))
        points = cut
        if len(points) < 3:
            return 0.0
    xy = np.array(points)
    return float(
        0.5 * abs(np.dot(xy[:, 0], np.roll(xy[:, 1], -1)) - np.dot(xy[:, 1], np.roll(xy[:, 0], -1)))
    )


def _rotated_ious(boxes: Array, corners: Array, i: int, live: Array) -> Array:
    """Rotated IoU of box ``i`` with each box where ``live`` (0 elsewhere)."""
    area = np.abs(boxes[:, 2] * boxes[:, 3])
    out = np.zeros(len(boxes))
    for j in np.flatnonzero(live):
        if area[i] <= 0 or area[j] <= 0:
            continue
        inter = _clipped_area(corners[i], corners[j])
        out[j] = inter / (area[i] + area[j] - inter)
    return out


@kernel("NmsRotated")
def nms_rotated(
    ctx: KernelContext,
    boxes: Any,
    scores: Any,
    max_output_boxes_per_class: Any,
    iou_threshold: Any,
    score_threshold: Any,
) -> tuple[Array, Array, Array]:
    b, s = widen(boxes).astype(np.float64), widen(scores).astype(_F32)
    if b.ndim != 3 or b.shape[2] != 5 or s.ndim != 3 or s.shape[::2] != b.shape[:2]:
        raise fail(
            ctx,
            f"boxes {list(b.shape)} and scores {list(s.shape)} must be [batches, boxes, 5] "
            "and [batches, classes, boxes]",
        )
    limit = int(np.asarray(max_output_boxes_per_class).reshape(-1)[0])
    iou_cap = float(_F32(np.asarray(iou_threshold).reshape(-1)[0]))
    floor = _F32(np.asarray(score_threshold).reshape(-1)[0])
    rows: list[tuple[int, int, int, Any]] = []
    for batch in range(b.shape[0] if limit > 0 else 0):
        corners = _rotated_corners(b[batch], bool(ctx.attr("clockwise")))
        for cls in range(s.shape[1]):
            score = s[batch, cls]
            order = np.argsort(-score, kind="stable")
            order = order[score[order] > floor]
            live = np.zeros(len(score), bool)
            live[order] = True
            kept = 0
            # Greedy by nature: each choice depends on the boxes chosen before it.
            for i in order:
                if not live[i]:
                    continue
                rows.append((batch, cls, int(i), score[i]))
                kept += 1
                if kept == limit:
                    break
                live[i] = False
                live &= ~(_rotated_ious(b[batch], corners, int(i), live) > iou_cap)
    if ctx.attr("sort_by_score"):
        rows.sort(key=lambda r: (-r[3], r[0], r[1], r[2]))
    indices = np.array([r[:3] for r in rows], np.int64).reshape(-1, 3)
    picked = np.array([(r[0], r[1], r[3]) for r in rows], np.asarray(scores).dtype).reshape(-1, 3)
    return indices, picked, np.array([len(rows)], np.int64)
