"""Reference kernels for the detection ops: PsRoiPool, DeformablePsRoiPool, RoiAlignRotated,
BilinearRoiPool.

RoI coordinates are computed in the RoIs' precision (f32 for f32 models) in the order OpenVINO's
CPU plugin computes them: which cells a bin covers turns on their rounding."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...tensor.numerics import widen
from ..registry import KernelContext, kernel
from .elementwise import Array, fail


def _round_half_away(v: Array) -> Array:
    """C's round(): halves away from zero, exact in any float type."""
    a = np.abs(v)
    whole = np.floor(a)
    return np.asarray(np.copysign(whole + (a - whole >= 0.5), v))


def _checked(ctx: KernelContext, data: Any, rois: Any, width: int) -> tuple[Array, Array]:
    x, boxes = widen(data).astype(np.float64), widen(rois)
    if x.ndim != 4 or boxes.ndim != 2 or boxes.shape[1] != width:
        raise fail(
            ctx,
            f"X {list(x.shape)} and rois {list(boxes.shape)} must be [N, C, H, W] and [R, {width}]",
        )
    return x, boxes


def _images(ctx: KernelContext, boxes: Array, batch: int) -> list[int]:
    """Each RoI's image, up to the first of batch -1, which ends the list."""
    images: list[int] = []
    for r, value in enumerate(boxes[:, 0]):
        image = int(value)
        if image == -1:
            break
        if not 0 <= image < batch:
            raise fail(ctx, f"RoI {r} names image {image} of a batch of {batch}")
        images.append(image)
    return images


def _average_cells(start: Any, end: Any, count: int, size: int) -> Array:
    """[count, size] mask of the cells each of ``count`` bins of [start, end) covers."""
    kind = type(start)
    step = max(end - start, kind(0.1)) / kind(count)
    p = np.arange(count + 1).astype(kind)
    low = np.clip(np.floor(p[:-1] * step + start), 0, size)
    high = np.clip(np.ceil(p[1:] * step + start), 0, size)
    cells = np.arange(size)
    return np.asarray((cells >= low[:, None]) & (cells < high[:, None]))


def _ps_average(x: Array, box: Array, group: int, out_dim: int, scale: Any) -> Array:
    kind = box.dtype.type
    x1, y1 = _round_half_away(box[1:3]) * scale
    x2, y2 = _round_half_away(box[3:5] + kind(1)) * scale
    rows = _average_cells(y1, y2, group, x.shape[1])
    cols = _average_cells(x1, x2, group, x.shape[2])
    planes = x.reshape(out_dim, group, group, *x.shape[1:])
    sums = np.einsum("cijyx,iy,jx->cij", planes, rows, cols)
    area = rows.sum(axis=1)[:, None] * cols.sum(axis=1)[None, :]
    return np.where(area > 0, sums / np.maximum(area, 1), 0.0)


def _grid_points(start: Any, extent: Any, bins: int, points: int, size: int) -> Array:
    """[bins, points] positions: per sub-box of [start, start + extent) (units of size - 1),
    ``points`` spanning it, or its centre for one."""
    kind = type(start)
    edges = start + np.arange(bins + 1).astype(kind) * (extent / kind(bins))
    low, high, last = edges[:-1], edges[1:], kind(size - 1)
    if points == 1:
        return np.asarray(kind(0.5) * (low + high) * last)[:, None]
    step = (high - low) * last / kind(points - 1)
    return np.asarray(
        np.arange(points).astype(kind)[None, :] * step[:, None] + (low * last)[:, None]
    )


def _ps_bilinear(x: Array, box: Array, group: int, out_dim: int, bins: tuple[int, int]) -> Array:
    bins_y, bins_x = bins
    h, w = x.shape[1:]
    ys = _grid_points(box[2], box[4] - box[2], bins_y, group, h)  # [bins_y, group]
    xs = _grid_points(box[1], box[3] - box[1], bins_x, group, w)
    y, x_ = ys[:, None, :, None], xs[None, :, None, :]  # [by, bx, i, j]
    inside = (y >= 0) & (y <= h - 1) & (x_ >= 0) & (x_ <= w - 1)
    y, x_ = np.where(inside, y, 0), np.where(inside, x_, 0)
    top, left = np.floor(y).astype(np.int64), np.floor(x_).astype(np.int64)
    bottom, right = np.minimum(np.ceil(y), h - 1).astype(np.int64), np.minimum(np.ceil(x_), w - 1)
    right = right.astype(np.int64)
    planes = x.reshape(bins_y, bins_x, out_dim, h, w)
    by, bx = np.arange(bins_y)[:, None, None, None], np.arange(bins_x)[None, :, None, None]

    def at(rows: Array, cols: Array) -> Array:
        return np.asarray(np.moveaxis(planes[by, bx, :, rows, cols], -1, 0))  # [c, by, bx, i, j]

    fx, fy = (x_ - left).astype(np.float64), (y - top).astype(np.float64)
    upper = at(top, left) + (at(top, right) - at(top, left)) * fx
    lower = at(bottom, left) + (at(bottom, right) - at(bottom, left)) * fx
    value = np.where(inside, upper + (lower - upper) * fy, 0.0)
    return np.asarray(value.sum(axis=(1, 2)) / (bins_x * bins_y))


@kernel("PsRoiPool")
def ps_roi_pool(ctx: KernelContext, data: Any, rois: Any) -> Array:
    x, boxes = _checked(ctx, data, rois, 5)
    group, out_dim = ctx.attr("group_size"), ctx.attr("output_dim")
    bins = (ctx.attr("spatial_bins_y"), ctx.attr("spatial_bins_x"))
    average = ctx.attr("mode") == "average"
    channels = out_dim * (group * group if average else bins[0] * bins[1])
    if x.shape[1] != channels:
        raise fail(ctx, f"X {list(x.shape)} must have {channels} channels")
    scale = boxes.dtype.type(ctx.attr("spatial_scale"))
    out = np.zeros((len(boxes), out_dim, group, group))
    for r, image in enumerate(_images(ctx, boxes, x.shape[0])):
        if average:
            out[r] = _ps_average(x[image], boxes[r], group, out_dim, scale)
        else:
            out[r] = _ps_bilinear(x[image], boxes[r] * scale, group, out_dim, bins)
    return out.astype(np.asarray(data).dtype)


def _sample_bilinear(plane: Array, y: Array, x: Array) -> Array:
    """``plane`` [..., H, W] at the in-range positions ``y``, ``x`` (each [...]; floor / ceil
    corners, as DeformablePSROIPooling reads them)."""
    y0, x0 = np.floor(y).astype(np.int64), np.floor(x).astype(np.int64)
    y1, x1 = np.ceil(y).astype(np.int64), np.ceil(x).astype(np.int64)
    dy, dx = (y - y0).astype(np.float64), (x - x0).astype(np.float64)
    lead = np.indices(y.shape, sparse=True)

    def at(rows: Array, cols: Array) -> Array:
        return np.asarray(plane[(*lead, rows, cols)])

    return np.asarray(
        (1 - dx) * (1 - dy) * at(y0, x0)
        + (1 - dx) * dy * at(y1, x0)
        + dx * (1 - dy) * at(y0, x1)
        + dx * dy * at(y1, x1)
    )


@kernel("DeformablePsRoiPool")
def deformable_ps_roi_pool(ctx: KernelContext, data: Any, rois: Any, offsets: Any = None) -> Array:
    x, boxes = _checked(ctx, data, rois, 5)
    group, out_dim, part = (ctx.attr(k) for k in ("group_size", "output_dim", "part_size"))
    bins_y, bins_x = ctx.attr("spatial_bins_y"), ctx.attr("spatial_bins_x")
    n, channels, h, w = x.shape
    if channels != out_dim * group * group:
        raise fail(ctx, f"X {list(x.shape)} must have output_dim · group_size² channels")
    kind = boxes.dtype.type
    scale, std = kind(ctx.attr("spatial_scale")), kind(ctx.attr("trans_std"))
    moves = None if offsets is None else widen(offsets).astype(kind)
    if moves is not None and (
        moves.ndim != 4
        or moves.shape[0] != len(boxes)
        or moves.shape[1] < 2
        or moves.shape[1] % 2
        or out_dim % (moves.shape[1] // 2)
        or moves.shape[2] < part
        or moves.shape[3] < part
    ):
        raise fail(ctx, f"offsets {list(moves.shape)} must be [R, 2·classes, part, part]")
    per_class = out_dim // (1 if moves is None else moves.shape[1] // 2)
    i, j = np.arange(group), np.arange(group)
    parts_i, parts_j = i * part // group, j * part // group
    c = np.arange(out_dim)
    sub_y, sub_x = np.arange(bins_y).astype(kind), np.arange(bins_x).astype(kind)
    source = (c[:, None, None] * group + i[:, None]) * group + j  # [c, i, j]
    out = np.zeros((len(boxes), out_dim, group, group))
    for r, image in enumerate(_images(ctx, boxes, n)):
        low = _round_half_away(boxes[r, 1:3]) * scale - kind(0.5)  # (x, y)
        high = (_round_half_away(boxes[r, 3:5]) + kind(1)) * scale - kind(0.5)
        size = np.maximum(high - low, kind(0.1))
        bin_w, bin_h = size[0] / kind(group), size[1] / kind(group)
        start_x = (j.astype(kind) * bin_w + low[0])[None, None, :]  # [c, i, j]
        start_y = (i.astype(kind) * bin_h + low[1])[None, :, None]
        if moves is not None:
            k = (c // per_class)[:, None, None]
            pi, pj = parts_i[None, :, None], parts_j[None, None, :]
            start_x = start_x + moves[r, 2 * k, pi, pj] * std * size[0]
            start_y = start_y + moves[r, 2 * k + 1, pi, pj] * std * size[1]
        start_x = np.broadcast_to(start_x, source.shape)
        start_y = np.broadcast_to(start_y, source.shape)
        # Sub-bin corners [c, i, j, by, bx].
        ys = start_y[..., None, None] + (sub_y * (bin_h / kind(bins_y)))[:, None]
        xs = start_x[..., None, None] + (sub_x * (bin_w / kind(bins_x)))[None, :]
        inside = (ys >= -0.5) & (ys <= h - 0.5) & (xs >= -0.5) & (xs <= w - 0.5)
        ys, xs = np.clip(ys, 0, h - 1), np.clip(xs, 0, w - 1)
        planes = x[image][source][:, :, :, None, None]  # [c, i, j, 1, 1, H, W]
        planes = np.broadcast_to(planes, (*ys.shape, h, w))
        values = np.where(inside, _sample_bilinear(planes, ys, xs), 0.0).sum(axis=(3, 4))
        count = inside.sum(axis=(3, 4))
        out[r] = np.where(count > 0, values / np.maximum(count, 1), 0.0)
    return out.astype(np.asarray(data).dtype)


def _bilinear_pool_points(start: Any, end: Any, count: int, size: int) -> Array:
    """Where each of ``count`` bins samples along an axis of ``size`` (start, end in units of
    size - 1), in the RoIs' precision as OpenVINO computes it."""
    kind = type(start)
    span = kind(size - 1)
    if count == 1:
        return np.asarray([(start + end) * kind(0.5) * span])
    step = (end - start) * span / kind(count - 1)
    points = np.arange(count).astype(kind) * step + start * span
    points[-1] = end * span  # the last bin is the RoI's end, however the steps add up
    return np.asarray(points)


@kernel("BilinearRoiPool")
def bilinear_roi_pool(ctx: KernelContext, data: Any, rois: Any) -> Array:
    x, boxes = _checked(ctx, data, rois, 5)
    x = widen(data)
    ph, pw = (int(v) for v in ctx.attr("pooled_shape"))
    h, w = x.shape[2:]
    out = np.zeros((len(boxes), x.shape[1], ph, pw), x.dtype)
    for r, image in enumerate(_images(ctx, boxes, x.shape[0])):
        _, x1, y1, x2, y2 = boxes[r]
        ys, xs = _bilinear_pool_points(y1, y2, ph, h), _bilinear_pool_points(x1, x2, pw, w)
        ok_y, ok_x = (ys >= 0) & (ys <= h - 1), (xs >= 0) & (xs <= w - 1)
        ys, xs = np.where(ok_y, ys, 0), np.where(ok_x, xs, 0)
        top, left = np.floor(ys).astype(np.int64), np.floor(xs).astype(np.int64)
        bottom = np.minimum(np.ceil(ys).astype(np.int64), h - 1)
        right = np.minimum(np.ceil(xs).astype(np.int64), w - 1)
        fy = (ys - top).astype(x.dtype)[:, None]
        fx = (xs - left).astype(x.dtype)[None, :]
        plane = x[image]

        def at(rows: Array, cols: Array, plane: Array = plane) -> Array:
            return np.asarray(plane[:, rows[:, None], cols[None, :]])

        upper = at(top, left) + (at(top, right) - at(top, left)) * fx
        lower = at(bottom, left) + (at(bottom, right) - at(bottom, left)) * fx
        value = upper + (lower - upper) * fy
        out[r] = np.where(ok_y[:, None] & ok_x[None, :], value, x.dtype.type(0))
    return out.astype(np.asarray(data).dtype)


def _rotated_corners(p: Array, size: int) -> tuple[Array, Array, Array, Array]:
    """RoiAlign's sampling along one axis: low / high indices and their weights (positions off
    the image by more than a pixel are dealt with by the caller)."""
    p = np.maximum(p, 0)
    low = p.astype(np.int64)
    edge = low >= size - 1
    low = np.where(edge, size - 1, low)
    high = np.where(edge, size - 1, low + 1)
    frac = np.where(edge, 0, p - low).astype(np.float64)
    return low, high, 1 - frac, frac


@kernel("RoiAlignRotated")
def roi_align_rotated(ctx: KernelContext, data: Any, rois: Any, batch_indices: Any) -> Array:
    x, boxes = _checked(ctx, data, rois, 5)
    which = [int(v) for v in np.asarray(batch_indices).reshape(-1)]
    if len(which) != len(boxes):
        raise fail(ctx, f"rois {list(boxes.shape)} and batch_indices {len(which)} disagree")
    if any(not 0 <= i < x.shape[0] for i in which):
        raise fail(ctx, f"batch_indices {which} must lie in [0, {x.shape[0]})")
    oh, ow, ratio = (ctx.attr(k) for k in ("output_height", "output_width", "sampling_ratio"))
    kind = boxes.dtype.type
    scale, half = kind(ctx.attr("spatial_scale")), kind(0.5)
    sign = kind(-1 if ctx.attr("clockwise") else 1)
    h, w = x.shape[2:]
    out = np.zeros((len(boxes), x.shape[1], oh, ow))
    # The number of samples per bin varies per RoI, so RoIs go one at a time.
    for r, (box, image) in enumerate(zip(boxes, which, strict=True)):
        cx, cy = box[0] * scale - half, box[1] * scale - half
        width, height = box[2] * scale, box[3] * scale
        angle = box[4] * sign
        cos, sin = np.cos(angle), np.sin(angle)
        bin_w, bin_h = width / kind(ow), height / kind(oh)
        grid_x = ratio if ratio > 0 else int(np.ceil(bin_w))
        grid_y = ratio if ratio > 0 else int(np.ceil(bin_h))
        if grid_x < 0 or grid_y < 0:
            raise fail(ctx, f"RoI {r} {box.tolist()} has a negative size")
        if grid_x == 0 or grid_y == 0:
            continue
        step_x, step_y = bin_w / kind(grid_x), bin_h / kind(grid_y)
        # Positions in the box's frame [oh, gy, 1, 1] and [1, 1, ow, gx].
        py = -height / kind(2) + np.arange(oh).astype(kind)[:, None] * bin_h
        py = (py + step_y * (np.arange(grid_y).astype(kind) + half))[:, :, None, None]
        px = -width / kind(2) + np.arange(ow).astype(kind)[:, None] * bin_w
        px = (px + step_x * (np.arange(grid_x).astype(kind) + half))[None, None]
        ys = py * cos - px * sin + cy
        xs = py * sin + px * cos + cx
        usable = ((xs >= -1) & (xs <= w) & (ys >= -1) & (ys <= h)).astype(np.float64)
        y0, y1, wy0, wy1 = _rotated_corners(ys, h)
        x0, x1, wx0, wx1 = _rotated_corners(xs, w)
        plane = x[image]
        value = sum(
            plane[:, yi, xi] * (wy * wx * usable)
            for yi, wy in ((y0, wy0), (y1, wy1))
            for xi, wx in ((x0, wx0), (x1, wx1))
        )
        out[r] = np.asarray(value).sum(axis=(2, 4)) / (grid_x * grid_y)
    return out.astype(np.asarray(data).dtype)


_F32 = np.float32


def _proposal_anchors(ctx: KernelContext, offset: Any, tensorflow: bool) -> Array:
    """[A, 4] anchors (x1, y1, x2, y2), ratio-major, computed in f32 as OpenVINO does."""
    base = _F32(ctx.attr("base_size"))
    area, half, centre = base * base, base * _F32(0.5), _F32(0.5) * (base - offset)
    rows = []
    for ratio in (_F32(r) for r in ctx.attr("ratio")):
        width = np.sqrt(area / ratio)
        if not tensorflow:
            width = _round_half_away(width)
        height = width * ratio
        if not tensorflow:
            height = _round_half_away(height)
        for scale in (_F32(s) for s in ctx.attr("scale")):
            sw = _F32(0.5) * (width * scale - offset)
            sh = _F32(0.5) * (height * scale - offset)
            box = [centre - sw, centre - sh, centre + sw, centre + sh]
            rows.append([v - half if tensorflow else v for v in box])
    return np.array(rows, _F32)


def _proposal_nms(boxes: Array, thresh: Any, limit: int, offset: Any) -> list[int]:
    """Greedy NMS over score-sorted ``boxes`` [n, 4] in f32: a box dies when its IoU with a
    kept one exceeds ``thresh``."""
    x0, y0, x1, y1 = boxes.T
    areas = (x1 - x0 + offset) * (y1 - y0 + offset)
    dead = np.zeros(len(boxes), bool)
    kept: list[int] = []
    for i in range(len(boxes)):
        if dead[i]:
            continue
        kept.append(i)
        if len(kept) == limit:
            break
        t = slice(i + 1, None)
        overlap = (x0[i] <= x1[t]) & (y0[i] <= y1[t]) & (x0[t] <= x1[i]) & (y0[t] <= y1[i])
        width = np.maximum(_F32(0), np.minimum(x1[i], x1[t]) - np.maximum(x0[i], x0[t]) + offset)
        height = np.maximum(_F32(0), np.minimum(y1[i], y1[t]) - np.maximum(y0[i], y0[t]) + offset)
        inter = width * height
        with np.errstate(divide="ignore", invalid="ignore"):
            iou = np.where(overlap, inter / (areas[i] + areas[t] - inter), _F32(0))
        dead[t] |= thresh < iou
    return kept


@kernel("Proposal")
def proposal(
    ctx: KernelContext, class_probs: Any, bbox_deltas: Any, image_shape: Any
) -> tuple[Array, Array]:
    scores, deltas = widen(class_probs).astype(_F32), widen(bbox_deltas).astype(_F32)
    info = widen(image_shape).astype(_F32).reshape(-1)
    tensorflow = ctx.attr("framework") == "tensorflow"
    offset = _F32(0 if tensorflow else 1)
    anchors = _proposal_anchors(ctx, offset, tensorflow)
    a = len(anchors)
    if (
        scores.ndim != 4
        or scores.shape[1] != 2 * a
        or deltas.shape
        != (
            scores.shape[0],
            4 * a,
            *scores.shape[2:],
        )
    ):
        raise fail(
            ctx,
            f"class_probs {list(scores.shape)} and bbox_deltas {list(deltas.shape)} must be "
            f"[N, 2A, H, W] and [N, 4A, H, W] for A = {a} anchors",
        )
    if len(info) not in (3, 4):
        raise fail(ctx, f"image_shape must hold 3 or 4 values, got {len(info)}")
    if not (np.isfinite(info[:2]).all() and (info[:2] > 0).all()):
        raise fail(ctx, f"image_shape {info.tolist()} must give a positive height and width")
    if not (np.isfinite(info[2:]).all() and (info[2:] >= 0).all()):
        raise fail(ctx, f"image_shape {info.tolist()} must give non-negative scales")
    img_h, img_w = (info[1], info[0]) if tensorflow else (info[0], info[1])
    scale_h, scale_w = info[2], info[-1]
    min_h, min_w = _F32(ctx.attr("min_size")) * scale_h, _F32(ctx.attr("min_size")) * scale_w
    n, _, h, w = scores.shape
    stride, post = ctx.attr("feat_stride"), ctx.attr("post_nms_topn")
    pre = min(a * h * w, ctx.attr("pre_nms_topn"))
    coord_scale, size_scale = (
        _F32(ctx.attr("box_coordinate_scale")),
        _F32(ctx.attr("box_size_scale")),
    )
    # Cell positions [H, W, 1]; tensorflow reads x from the row and y from the column.
    rows_at = (np.arange(h) * stride).astype(_F32)[:, None, None]
    cols_at = (np.arange(w) * stride).astype(_F32)[None, :, None]
    xs, ys = (rows_at, cols_at) if tensorflow else (cols_at, rows_at)
    rois, probs = np.zeros((n, post, 5), _F32), np.zeros((n, post), _F32)
    for b in range(n):
        # [H, W, A] per quantity: proposals run cell-major, anchor-minor.
        d = deltas[b].reshape(a, 4, h, w).transpose(1, 2, 3, 0)
        dx, dy = d[0] / coord_scale, d[1] / coord_scale
        dw, dh = d[2] / size_scale, d[3] / size_scale
        score = scores[b, a:].transpose(1, 2, 0)
        x0, y0 = xs + anchors[:, 0], ys + anchors[:, 1]
        x1, y1 = xs + anchors[:, 2], ys + anchors[:, 3]
        if tensorflow:
            x0, x1 = np.clip(x0, _F32(0), img_w), np.clip(x1, _F32(0), img_w)
            y0, y1 = np.clip(y0, _F32(0), img_h), np.clip(y1, _F32(0), img_h)
        ww, hh = x1 - x0 + offset, y1 - y0 + offset
        cx, cy = dx * ww + (x0 + _F32(0.5) * ww), dy * hh + (y0 + _F32(0.5) * hh)
        pw, ph = np.exp(dw) * ww, np.exp(dh) * hh
        x0, y0 = cx - _F32(0.5) * pw, cy - _F32(0.5) * ph
        x1, y1 = cx + _F32(0.5) * pw, cy + _F32(0.5) * ph
        if ctx.attr("clip_before_nms"):
            x0, x1 = (np.maximum(_F32(0), np.minimum(v, img_w - offset)) for v in (x0, x1))
            y0, y1 = (np.maximum(_F32(0), np.minimum(v, img_h - offset)) for v in (y0, y1))
        # The spec drops boxes under min_size; the CPU plugin keeps them with score 0.
        big = ((min_w <= x1 - x0 + offset) & (min_h <= y1 - y0 + offset)).reshape(-1)
        boxes = np.stack([x0, y0, x1, y1], axis=-1).reshape(-1, 4)[big]
        score = score.reshape(-1)[big]
        order = np.argsort(-score, kind="stable")[:pre]
        boxes, ranked = boxes[order], score[order]
        kept = _proposal_nms(boxes, _F32(ctx.attr("nms_thresh")), post, offset)
        out = boxes[kept]
        if ctx.attr("clip_after_nms"):
            limits = np.array([img_w, img_h, img_w, img_h], _F32)
            out = np.maximum(_F32(0), np.minimum(out, limits))
        if ctx.attr("normalize"):
            out = out / np.array([img_w, img_h, img_w, img_h], _F32)
        rois[b, : len(kept), 0] = b
        rois[b, : len(kept), 1:] = out
        probs[b, : len(kept)] = ranked[kept]
        if len(kept) < post:
            rois[b, len(kept), 0] = -1
    dt = np.asarray(class_probs).dtype
    return rois.reshape(-1, 5).astype(dt), probs.reshape(-1).astype(dt)
