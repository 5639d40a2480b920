"""Reference kernels for SSD's DetectionOutput and the RPN's GenerateProposals.

Both compute in f32 in the order OpenVINO's CPU plugin does: which boxes NMS keeps turns on
the rounding of their coordinates and overlaps."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...tensor.numerics import widen
from ..registry import KernelContext, kernel
from .elementwise import Array, fail

_F32 = np.float32


def _decode(ctx: KernelContext, prior: Array, loc: Array, variance: Array | None) -> Array:
    """[P, 4] boxes: ``prior`` corners moved by ``loc`` as code_type says, then clipped."""
    if not ctx.attr("normalized"):
        size = np.array([ctx.attr("input_width"), ctx.attr("input_height")] * 2, _F32)
        prior = prior / size
    if variance is not None:
        loc = variance * loc
    if ctx.attr("code_type") == "corner":
        boxes = prior + loc
    else:
        size = prior[:, 2:] - prior[:, :2]
        centre = (prior[:, :2] + prior[:, 2:]) / _F32(2)
        centre = loc[:, :2] * size + centre
        half = np.exp(loc[:, 2:]) * size / _F32(2)
        boxes = np.concatenate([centre - half, centre + half], axis=1)
    if ctx.attr("clip_before_nms"):
        boxes = np.clip(boxes, _F32(0), _F32(1))
    return np.asarray(boxes, _F32)


def _overlaps(boxes: Array, areas: Array, i: int, others: Array) -> Array:
    """IoU of box ``i`` with boxes ``others``: 0 unless they overlap with positive extent."""
    a, b = boxes[i], boxes[others]
    apart = (b[:, 0] > a[2]) | (b[:, 2] < a[0]) | (b[:, 1] > a[3]) | (b[:, 3] < a[1])
    width = np.minimum(a[2], b[:, 2]) - np.maximum(a[0], b[:, 0])
    height = np.minimum(a[3], b[:, 3]) - np.maximum(a[1], b[:, 1])
    inter = width * height
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = inter / (areas[i] + areas[others] - inter)
    return np.where(apart | (width <= 0) | (height <= 0), _F32(0), iou)


def _nms(
    boxes: Array, areas: Array, order: list[int], thresh: Any, kept_already: int = 0
) -> list[int]:
    """Greedy NMS over ``order`` (its first ``kept_already`` already kept): a box dies when its
    IoU with a kept one exceeds ``thresh``."""
    kept = order[:kept_already]
    for p in order[kept_already:]:
        if not kept or not (_overlaps(boxes, areas, p, np.array(kept)) > thresh).any():
            kept.append(p)
    return kept


def _ranked(scores: Array, candidates: list[int], top_k: int) -> list[int]:
    """``candidates`` (indices into ``scores``) best first, ties by index, cut to top_k."""
    order = sorted(candidates, key=lambda i: (-scores[i], i))
    return order if top_k < 0 else order[:top_k]


def _priors(ctx: KernelContext, priors: Array, n: int, count: int) -> tuple[Array, Array, int]:
    """Image ``n``'s prior corners [P, 4], variances [P, 4] and number of priors in use."""
    size = 4 if ctx.attr("normalized") else 5
    rows = priors[n if priors.shape[0] != 1 else 0]
    table = rows[0, : count * size].reshape(count, size)
    variance = rows[1, : count * 4].reshape(count, 4) if rows.shape[0] > 1 else np.ones(1, _F32)
    used = count
    if not ctx.attr("normalized"):
        ends = np.flatnonzero(table[:, 0] == -1)
        used = int(ends[0]) if len(ends) else count
    return table[:, size - 4 :], variance, used


@kernel("DetectionOutput")
def detection_output(
    ctx: KernelContext,
    box_logits: Any,
    class_preds: Any,
    priors: Any,
    arm_conf: Any = None,
    arm_loc: Any = None,
) -> Array:
    loc, conf = widen(box_logits).astype(_F32), widen(class_preds).astype(_F32)
    table = widen(priors).astype(_F32)
    size = 4 if ctx.attr("normalized") else 5
    n_img = conf.shape[0]
    count = table.shape[2] // size
    classes = conf.shape[1] // max(count, 1)
    share = bool(ctx.attr("share_location"))
    locs = 1 if share else classes
    encoded = bool(ctx.attr("variance_encoded_in_target"))
    arm = arm_conf is not None
    if (
        count == 0
        or conf.shape[1] != count * classes
        or loc.shape != (n_img, count * locs * 4)
        or table.shape[0] not in (1, n_img)
        or table.shape[1] != (1 if encoded else 2)
        or (arm and widen(arm_conf).shape != (n_img, 2 * count))
        or (arm and widen(arm_loc).shape != loc.shape)
    ):
        raise fail(
            ctx,
            f"box_logits {list(loc.shape)}, class_preds {list(conf.shape)} and priors "
            f"{list(table.shape)} do not fit {count} priors of {classes} classes",
        )
    background, decrease = ctx.attr("background_label_id"), bool(ctx.attr("decrease_label_id"))
    thresh, nms_thresh = _F32(ctx.attr("confidence_threshold")), _F32(ctx.attr("nms_threshold"))
    top_k, keep_top_k = ctx.attr("top_k"), ctx.attr("keep_top_k")
    rows = keep_top_k if keep_top_k > 0 else top_k * classes if top_k > 0 else count * classes
    out = np.zeros((n_img * rows, 7), _F32)
    written = 0
    for n in range(n_img):
        prior, variance, used = _priors(ctx, table, n, count)
        var = None if encoded else variance
        # scores [C, P], boxes per class [L, P, 4]
        scores = conf[n].reshape(count, classes).T.copy()
        if arm:
            weak = widen(arm_conf).astype(_F32)[n].reshape(count, 2)[:, 1] < _F32(
                ctx.attr("objectness_score")
            )
            scores[:, weak] = 0
            if 0 <= background < classes:
                scores[background, weak] = 1
        deltas = loc[n].reshape(count, locs, 4)
        moves = None if not arm else widen(arm_loc).astype(_F32)[n].reshape(count, locs, 4)
        boxes = np.zeros((locs, count, 4), _F32)
        for c in range(locs):
            if not share and c == background:
                continue
            start = prior if moves is None else _decode(ctx, prior, moves[:, c], var)
            boxes[c] = _decode(ctx, start, deltas[:, c], var)
        areas = (boxes[..., 2] - boxes[..., 0]) * (boxes[..., 3] - boxes[..., 1])
        kept: dict[int, list[int]] = {}
        if not decrease:
            for c in range(classes):
                if c == background:
                    continue
                live = [p for p in range(used) if scores[c, p] > thresh]
                b = 0 if share else c
                kept[c] = _nms(boxes[b], areas[b], _ranked(scores[c], live, top_k), nms_thresh)
        else:
            flat = scores.reshape(-1)
            best: list[int] = []
            for p in range(used):
                high, pick = _F32(-1), 0
                for c in range(1, classes):
                    if scores[c, p] >= thresh and scores[c, p] > high:
                        high, pick = scores[c, p], c
                if pick > 0:
                    best.append(pick * count + p)
            for idx in _ranked(flat, best, top_k):
                c, p = divmod(idx, count)
                b = 0 if share else c
                mine = kept.setdefault(c, [])
                kept[c] = _nms(boxes[b], areas[b], [*mine, p], nms_thresh, len(mine))
        found = [(c, p) for c in sorted(kept) for p in kept[c]]
        if keep_top_k > -1 and len(found) > keep_top_k:
            found = sorted(found, key=lambda cp: (-scores[cp], cp[1], cp[0]))[:keep_top_k]
            found = sorted(found, key=lambda cp: cp[0])  # stable: best first within a class
        for c, p in found:
            box = boxes[0 if share else c, p]
            if ctx.attr("clip_after_nms"):
                box = np.clip(box, _F32(0), _F32(1))
            out[written] = [n, c - 1 if decrease else c, scores[c, p], *box]
            written += 1
    if written < len(out):
        out[written, 0] = -1
    return out.reshape(1, 1, -1, 7)


_MAX_LOG_SIZE = _F32(np.log(1000.0 / 16.0))
"""The CPU plugin caps log dw and log dh here (Detectron's bbox_xform_clip)."""


@kernel("GenerateProposals")
def generate_proposals(
    ctx: KernelContext, im_info: Any, anchors: Any, deltas: Any, scores: Any
) -> tuple[Array, Array, Array]:
    info, base = widen(im_info).astype(_F32), widen(anchors).astype(_F32)
    moves, ranks = widen(deltas).astype(_F32), widen(scores).astype(_F32)
    n_img, a, h, w = ranks.shape
    if (
        base.shape != (h, w, a, 4)
        or moves.shape != (n_img, 4 * a, h, w)
        or info.shape not in ((n_img, 3), (n_img, 4))
    ):
        raise fail(
            ctx,
            f"im_info {list(info.shape)}, anchors {list(base.shape)}, deltas "
            f"{list(moves.shape)} and scores {list(ranks.shape)} must be [N, 3 or 4], "
            "[H, W, A, 4], [N, 4A, H, W] and [N, A, H, W]",
        )
    offset = _F32(0 if ctx.attr("normalized") else 1)
    pre, post = ctx.attr("pre_nms_count"), ctx.attr("post_nms_count")
    eta = _F32(ctx.attr("nms_eta"))
    all_rois, all_scores, counts = [], [], np.zeros(n_img, np.int64)
    x0, y0, x1, y1 = (base[..., i] for i in range(4))
    ww, hh = x1 - x0 + offset, y1 - y0 + offset
    cx, cy = x0 + _F32(0.5) * ww, y0 + _F32(0.5) * hh
    for n in range(n_img):
        img_h, img_w, scale_h, scale_w = info[n, 0], info[n, 1], info[n, 2], info[n, -1]
        min_size = _F32(ctx.attr("min_size"))
        d = moves[n].reshape(a, 4, h, w).transpose(2, 3, 0, 1)  # [H, W, A, 4]
        px, py = d[..., 0] * ww + cx, d[..., 1] * hh + cy
        pw = np.exp(np.minimum(d[..., 2], _MAX_LOG_SIZE)) * ww
        ph = np.exp(np.minimum(d[..., 3], _MAX_LOG_SIZE)) * hh
        bx0, by0 = px - _F32(0.5) * pw, py - _F32(0.5) * ph
        bx1, by1 = px + _F32(0.5) * pw - offset, py + _F32(0.5) * ph - offset
        bx0, bx1 = (np.maximum(_F32(0), np.minimum(v, img_w - offset)) for v in (bx0, bx1))
        by0, by1 = (np.maximum(_F32(0), np.minimum(v, img_h - offset)) for v in (by0, by1))
        big = (min_size * scale_w <= bx1 - bx0 + offset) & (
            min_size * scale_h <= by1 - by0 + offset
        )
        boxes = np.stack([bx0, by0, bx1, by1], axis=-1).reshape(-1, 4)
        score = ranks[n].transpose(1, 2, 0).reshape(-1)
        order = np.argsort(-score, kind="stable")[:pre]
        order = order[big.reshape(-1)[order]]
        boxes, score = boxes[order], score[order]
        # NMS with sizes counted as x2 - x1 + offset
        areas = (boxes[:, 2] - boxes[:, 0] + offset) * (boxes[:, 3] - boxes[:, 1] + offset)
        thresh, kept = _F32(ctx.attr("nms_threshold")), list[int]()
        for i in range(len(boxes)):
            if len(kept) == post:
                break
            if kept:
                k = np.array(kept)
                a_, b = boxes[i], boxes[k]
                touch = (
                    (a_[0] <= b[:, 2])
                    & (a_[1] <= b[:, 3])
                    & (b[:, 0] <= a_[2])
                    & (b[:, 1] <= a_[3])
                )
                iw = np.maximum(
                    _F32(0), np.minimum(a_[2], b[:, 2]) - np.maximum(a_[0], b[:, 0]) + offset
                )
                ih = np.maximum(
                    _F32(0), np.minimum(a_[3], b[:, 3]) - np.maximum(a_[1], b[:, 1]) + offset
                )
                inter = iw * ih
                with np.errstate(divide="ignore", invalid="ignore"):
                    iou = np.where(touch, inter / (areas[i] + areas[k] - inter), _F32(0))
                if (thresh < iou).any():
                    continue
            kept.append(i)
            if eta < 1 and thresh > _F32(0.5):
                thresh = _F32(thresh * eta)
        all_rois.append(boxes[kept])
        all_scores.append(score[kept])
        counts[n] = len(kept)
    return np.concatenate(all_rois).reshape(-1, 4), np.concatenate(all_scores), counts
