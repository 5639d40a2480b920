"""Reference kernels for the image ops: Resize, GridSample, AffineGrid, Col2Im, RoiAlign, NMS..."""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...ops.image import resize_plan
from ...tensor.numerics import widen
from ..registry import KernelContext, kernel
from .elementwise import Array, axis_in, fail

# One axis's interpolation taps: source indices [out, taps] and their weights [out, taps].
Taps = tuple[Array, Array]


def _floats(x: Any) -> list[float]:
    return [float(v) for v in np.asarray(x).reshape(-1)]


def _ints(x: Any) -> list[int]:
    return [int(v) for v in np.asarray(x).reshape(-1)]


def _given(x: Any) -> bool:
    return x is not None and np.size(x) > 0


def _restored(result: Array, like: np.dtype[Any]) -> Array:
    """A float result cast back to the input's element type. Integers saturate and truncate
    toward zero as ONNX Runtime's casts do, after snapping values within rounding noise of an
    integer onto it (an interpolation that should give 45 must not give 44)."""
    if like.kind in "iu":
        info = np.iinfo(like)
        nearest = np.rint(result)
        snapped = np.where(np.abs(result - nearest) < 1e-4, nearest, result)
        return np.clip(snapped, info.min, info.max).astype(like)
    return result.astype(like)


def _cubic(a: float) -> Callable[[Array], Array]:
    """Keys' cubic convolution kernel with coefficient ``a``, support (-2, 2)."""

    def k(d: Array) -> Array:
        d = np.abs(d)
        near = ((a + 2) * d - (a + 3)) * d * d + 1
        far = ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
        return np.where(d <= 1, near, np.where(d < 2, far, 0.0))

    return k


def _triangle(d: Array) -> Array:
    return np.asarray(np.maximum(1 - np.abs(d), 0.0))


def _resize_coords(
    mode: str, out_len: int, in_len: int, scale: float, roi: tuple[float, float]
) -> Array:
    """Input coordinate of each output cell along one axis (coordinate_transformation_mode),
    in f32 and in ONNX Runtime's order of operations, so that nearest rounds ties alike. As in
    the ONNX node tests, align_corners and tf_crop_and_resize take the output length to be
    in_len * scale, which differs from out_len when a scale does not divide evenly."""
    f32 = np.float32
    x, s, n, half = np.arange(out_len, dtype=f32), f32(scale), f32(in_len), f32(0.5)
    length = s * n
    if mode == "half_pixel_symmetric":
        coords = n / 2 * (1 - f32(out_len) / length) + (x + half) / s - half
    elif mode == "pytorch_half_pixel" and out_len <= 1:
        coords = np.zeros(out_len)
    elif mode in ("half_pixel", "pytorch_half_pixel"):
        coords = (x + half) / s - half
    elif mode == "tf_half_pixel_for_nn":
        coords = (x + half) / s
    elif mode == "asymmetric":
        coords = x / s
    elif length == 1:  # align_corners or tf_crop_and_resize: the single cell's position
        middle = half * (f32(roi[0]) + f32(roi[1])) * (n - 1)
        coords = np.full(out_len, middle if mode == "tf_crop_and_resize" else 0)
    else:
        start, end = (f32(v) for v in (roi if mode == "tf_crop_and_resize" else (0.0, 1.0)))
        coords = start * (n - 1) + x * (end - start) * (n - 1) / (length - 1)
    return coords.astype(np.float64)


def _nearest(coords: Array, rule: str) -> Array:
    """The input index nearest each coordinate, ties (or all) going down or up per ``rule``."""
    if rule == "round_prefer_floor":
        rounded = np.ceil(coords - 0.5)
    elif rule == "round_prefer_ceil":
        rounded = np.floor(coords + 0.5)
    else:
        rounded = np.floor(coords) if rule == "floor" else np.ceil(coords)
    return rounded.astype(np.int64)


def _resize_taps(ctx: KernelContext, coords: Array, in_len: int, scale: float) -> Taps:
    """The taps of linear or cubic interpolation at ``coords``; antialias stretches the filter by
    1 / scale when shrinking. Taps off the input read its edge, or with exclude_outside are
    dropped and the rest renormalized."""
    cubic = ctx.attr("mode") == "cubic"
    kernel_fn = _cubic(ctx.attr("cubic_coeff_a")) if cubic else _triangle
    stretch = 1 / scale if ctx.attr("antialias") and scale < 1 else 1.0
    radius = math.ceil((2 if cubic else 1) * stretch)
    base = np.floor(coords).astype(np.int64)
    index = base[:, None] + np.arange(-radius, radius + 2)
    weights = kernel_fn((index - coords[:, None]) / stretch)
    if ctx.attr("exclude_outside"):
        weights = np.where((index < 0) | (index >= in_len), 0.0, weights)
    if stretch != 1 or ctx.attr("exclude_outside"):
        total = weights.sum(axis=1, keepdims=True)
        weights = weights / np.where(total == 0, 1, total)
    return np.clip(index, 0, in_len - 1), weights


@kernel("Resize")
def resize(
    ctx: KernelContext, data: Any, roi: Any = None, scales: Any = None, sizes: Any = None
) -> Array:
    x = np.asarray(data)
    axes = ctx.attr("axes")
    listed = [axis_in(ctx, a, x.ndim) for a in (range(x.ndim) if axes is None else axes)]
    if _given(scales) == _given(sizes):
        raise fail(ctx, "give exactly one of scales and sizes (a non-empty tensor)")
    try:
        out_dims, factors = resize_plan(
            x.shape,
            listed,
            _floats(scales) if _given(scales) else None,
            _ints(sizes) if _given(sizes) else None,
            ctx.attr("keep_aspect_ratio_policy"),
        )
    except ValueError as exc:
        raise fail(ctx, str(exc)) from None
    ctm, mode = ctx.attr("coordinate_transformation_mode"), ctx.attr("mode")
    crop = ctm == "tf_crop_and_resize"
    bounds = _floats(roi) if crop and _given(roi) else [0.0] * len(listed) + [1.0] * len(listed)
    if len(bounds) != 2 * len(listed):
        raise fail(ctx, f"roi {bounds} must hold a start and an end per axis of {listed}")
    result = x if mode == "nearest" else widen(x).astype(np.float64)
    outside = np.zeros(out_dims, bool) if crop else None
    for k, a in enumerate(listed):
        n, m, s = x.shape[a], out_dims[a], factors[a]
        if m == n and s == 1 and not crop:
            continue
        if n == 0:
            raise fail(ctx, f"cannot resize axis {a} of shape {list(x.shape)}: it is empty")
        coords = _resize_coords(ctm, m, n, s, (bounds[k], bounds[k + len(listed)]))
        shape = [1] * x.ndim
        shape[a] = m
        if outside is not None:
            outside |= ((coords < 0) | (coords > n - 1)).reshape(shape)
        if mode == "nearest":
            index = np.clip(_nearest(coords, ctx.attr("nearest_mode")), 0, n - 1)
            result = np.take(result, index, axis=a)
            continue
        index, weights = _resize_taps(ctx, coords, n, s)
        picked = np.take(result, index, axis=a)  # the taps become axis a + 1
        result = (picked * weights.reshape([*shape[: a + 1], -1, *shape[a + 1 :]])).sum(a + 1)
    if outside is not None and outside.any():
        fill = np.asarray(ctx.attr("extrapolation_value")).astype(result.dtype)
        result = np.where(outside, fill, result)
    return _restored(np.asarray(result), x.dtype)


def _unnormalize(g: Array, size: int, align: bool) -> Array:
    return (g + 1) / 2 * (size - 1) if align else ((g + 1) * size - 1) / 2


def _reflect(p: Array, low: float, high: float) -> Array:
    """``p`` mirrored back and forth into [low, high]."""
    span = high - low
    if span <= 0:
        return np.zeros_like(p)
    d = np.abs(p - low)
    flips, extra = np.floor(d / span), np.fmod(d, span)
    return np.where(flips % 2 == 0, low + extra, high - extra)


def _grid_padded(p: Array, size: int, padding: str, align: bool) -> Array:
    """A coordinate moved on the input per padding mode (zeros leaves it where it is)."""
    if padding == "zeros":
        return p
    if padding == "reflection":
        p = _reflect(p, 0, size - 1) if align else _reflect(p, -0.5, size - 0.5)
    return np.clip(p, 0, size - 1)


def _grid_taps(ctx: KernelContext, p: Array, size: int) -> list[tuple[Array, Array]]:
    """(index, weight) taps along one spatial axis for sample coordinates ``p``; an index off
    the input reads 0."""
    mode, padding, align = (
        ctx.attr("mode"),
        ctx.attr("padding_mode"),
        bool(ctx.attr("align_corners")),
    )
    if mode == "nearest":
        return [(np.rint(_grid_padded(p, size, padding, align)), np.ones_like(p))]
    if mode == "linear":
        p = _grid_padded(p, size, padding, align)
        base = np.floor(p)
        return [(base, 1 - (p - base)), (base + 1, p - base)]
    # Cubic reads the 4 taps around the raw coordinate, each moved by the padding mode.
    base, kernel_fn = np.floor(p), _cubic(-0.75)
    return [
        (np.trunc(_grid_padded(base + o, size, padding, align)), kernel_fn(p - base - o))
        for o in (-1, 0, 1, 2)
    ]


@kernel("GridSample")
def grid_sample(ctx: KernelContext, data: Any, grid: Any) -> Array:
    x, g = np.asarray(data), widen(grid)  # positions in f32 as ONNX Runtime, so ties agree
    r = x.ndim - 2
    if r < 1 or g.ndim != r + 2 or g.shape[-1] != r or g.shape[0] != x.shape[0]:
        raise fail(
            ctx,
            f"X {list(x.shape)} [N, C, D1..Dr] and grid {list(g.shape)} "
            "[N, O1..Or, r] do not agree",
        )
    spatial, align = x.shape[2:], bool(ctx.attr("align_corners"))
    channels_last = np.moveaxis(widen(x).astype(np.float64), 1, -1)
    batch = np.arange(x.shape[0]).reshape((-1,) + (1,) * r)
    # grid lists coordinates innermost axis first.
    taps = [
        _grid_taps(ctx, _unnormalize(g[..., r - 1 - d], spatial[d], align), spatial[d])
        for d in range(r)
    ]
    out = np.zeros((*g.shape[:-1], x.shape[1]))
    for combo in itertools.product(*taps):
        weight, inside, index = np.ones(g.shape[:-1]), np.ones(g.shape[:-1], bool), []
        for (where, w), size in zip(combo, spatial, strict=True):
            weight = weight * w
            inside &= (where >= 0) & (where <= size - 1)
            index.append(np.clip(where, 0, size - 1).astype(np.int64))
        out += (weight * inside)[..., None] * channels_last[(batch, *index)]
    return _restored(np.moveaxis(out, -1, 1), x.dtype)


def _affine_base(size: int, align: bool) -> Array:
    """Evenly spaced positions in [-1, 1]: the pixel centres, or with align_corners=1 the
    corners; a single pixel then sits at -1, as ONNX's function body puts a depth of 1."""
    steps = np.linspace(-1, 1, size)
    return steps if align else steps * (size - 1) / size


@kernel("AffineGrid")
def affine_grid(ctx: KernelContext, theta: Any, size: Any) -> Array:
    t, dims = np.asarray(theta), _ints(size)
    r = len(dims) - 2
    if r not in (2, 3) or t.shape != (dims[0], r, r + 1):
        raise fail(
            ctx,
            f"theta {list(t.shape)} and size {dims} must be [N, r, r + 1] and "
            "[N, C, (D,) H, W] with r = 2 or 3",
        )
    align = bool(ctx.attr("align_corners"))
    # Homogeneous positions [..., (x, y, (z,) 1)], x running along the innermost axis.
    axes = np.meshgrid(*(_affine_base(n, align) for n in dims[2:]), indexing="ij")
    base = np.stack([*axes[::-1], np.ones(dims[2:])], axis=-1)
    grid: Array = np.einsum("...k,njk->n...j", base, widen(t).astype(np.float64))
    return grid.astype(t.dtype)


@kernel("Col2Im")
def col2im(ctx: KernelContext, data: Any, image_shape: Any, block_shape: Any) -> Array:
    x, image, block = np.asarray(data), _ints(image_shape), _ints(block_shape)
    r, k = len(image), math.prod(block)
    dil = list(ctx.attr("dilations") or [1] * r)
    pads = list(ctx.attr("pads") or [0] * 2 * r)
    strides = list(ctx.attr("strides") or [1] * r)
    if len(block) != r or len(dil) != r or len(strides) != r or len(pads) != 2 * r:
        raise fail(
            ctx,
            f"image_shape {image}, block_shape {block}, dilations {dil}, strides "
            f"{strides} and pads {pads} disagree on the number of spatial axes",
        )
    if x.ndim != 3 or k == 0 or x.shape[1] % k:
        raise fail(ctx, f"input {list(x.shape)} must be [N, C·{k}, L]")
    counts = [
        (image[d] + pads[d] + pads[d + r] - dil[d] * (block[d] - 1) - 1) // strides[d] + 1
        for d in range(r)
    ]
    if min(counts) < 1 or math.prod(counts) != x.shape[2]:
        raise fail(
            ctx,
            f"input {list(x.shape)} must hold {max(math.prod(counts), 0)} "
            f"blocks for image {image}, found {x.shape[2]}",
        )
    offsets = np.indices(block).reshape(r, -1, 1)  # [r, K, 1]
    starts = np.indices(counts).reshape(r, 1, -1)  # [r, 1, L]
    step, low, dilation = (np.asarray(v).reshape(r, 1, 1) for v in (strides, pads[:r], dil))
    pos = starts * step - low + offsets * dilation  # [r, K, L]
    inside = np.all((pos >= 0) & (pos < np.asarray(image).reshape(r, 1, 1)), axis=0)
    flat = np.ravel_multi_index(tuple(np.clip(pos, 0, None)), image, mode="clip")
    n, c = x.shape[0], x.shape[1] // k
    # Cells first, so that one index array addresses them; overlapping blocks add up.
    values = widen(x)
    out = np.zeros((math.prod(image), n, c), values.dtype)
    np.add.at(out, flat[inside], np.moveaxis(values.reshape(n, c, k, -1)[..., inside], -1, 0))
    return np.moveaxis(out, 0, -1).reshape(n, c, *image).astype(x.dtype)


def _corners(boxes: Array, center: bool) -> tuple[Array, Array]:
    """Boxes as (low corner [.., 2], high corner [.., 2]) in (y, x) order."""
    if center:
        mid, half = boxes[..., 1::-1], boxes[..., 3:1:-1] / 2
        return mid - half, mid + half
    a, b = boxes[..., :2], boxes[..., 2:]
    return np.minimum(a, b), np.maximum(a, b)


def _iou(low: Array, high: Array, i: int) -> Array:
    """Intersection over union of box ``i`` with every box (corners [S, 2]); 0 where a box is
    empty or the boxes do not meet."""
    area = np.prod(high - low, axis=-1)
    overlap = np.clip(np.minimum(high[i], high) - np.maximum(low[i], low), 0, None)
    inter = np.prod(overlap, axis=-1)
    union = area[i] + area - inter
    good = (inter > 0) & (area[i] > 0) & (area > 0) & (union > 0)
    with np.errstate(all="ignore"):
        return np.where(good, inter / np.where(good, union, 1), 0.0)


def _scalar(x: Any, default: float) -> float:
    return default if not _given(x) else float(np.asarray(x).reshape(-1)[0])


@kernel("NonMaxSuppression")
def non_max_suppression(
    ctx: KernelContext,
    boxes: Any,
    scores: Any,
    max_output_boxes_per_class: Any = None,
    iou_threshold: Any = None,
    score_threshold: Any = None,
    soft_nms_sigma: Any = None,
) -> tuple[Array, Array, Array]:
    real = np.float32 if ctx.attr("precision") == "f32" else np.float64
    b, s = widen(boxes).astype(real), widen(scores).astype(real)
    if b.ndim != 3 or b.shape[2] != 4 or s.ndim != 3 or s.shape[::2] != b.shape[:2]:
        raise fail(
            ctx,
            f"boxes {list(b.shape)} and scores {list(s.shape)} must be "
            "[batches, boxes, 4] and [batches, classes, boxes]",
        )
    limit = int(_scalar(max_output_boxes_per_class, 0))
    rule = _Suppression(
        real(_scalar(iou_threshold, 0.0)),
        None if not _given(score_threshold) else real(_scalar(score_threshold, 0.0)),
        real(_scalar(soft_nms_sigma, 0.0)),
        bool(ctx.attr("soft_nms_iou_cutoff")),
    )
    low, high = _corners(b, bool(ctx.attr("center_point_box")))
    rows: list[tuple[int, int, int, Any]] = []
    for batch, cls in itertools.product(range(s.shape[0]), range(s.shape[1])):
        if limit <= 0:
            break
        kept = rule.select(low[batch], high[batch], s[batch, cls], limit)
        rows.extend((batch, cls, box, score) for box, score in kept)
    if ctx.attr("sort_by_score"):
        rows.sort(key=lambda r: (-r[3], r[0], r[1], r[2]))
    indices = np.array([r[:3] for r in rows], np.int64).reshape(-1, 3)
    picked = np.array([(r[0], r[1], r[3]) for r in rows], real).reshape(-1, 3)
    return indices, picked, np.array([len(rows)], np.int64)


@dataclass(frozen=True)
class _Suppression:
    """How NonMaxSuppression chooses the boxes of one batch and class."""

    iou: Any
    floor: Any
    sigma: Any
    cutoff: bool

    def select(self, low: Array, high: Array, score: Array, limit: int) -> list[tuple[int, Any]]:
        """The (box, score) pairs kept, in the order they are kept."""
        order = np.argsort(-score, kind="stable")
        if self.floor is not None:
            order = order[score[order] > self.floor]
        if self.sigma > 0:
            return self._soft(low, high, score, order, limit)
        # Greedy by nature: each choice depends on the boxes chosen before it.
        suppressed = np.zeros(len(score), bool)
        kept: list[tuple[int, Any]] = []
        for i in order:
            if suppressed[i]:
                continue
            kept.append((int(i), score[i]))
            if len(kept) == limit:
                break
            suppressed |= _iou(low, high, int(i)) > self.iou
        return kept

    def _soft(
        self, low: Array, high: Array, score: Array, order: Array, limit: int
    ) -> list[tuple[int, Any]]:
        """Soft-NMS, lazily: a box taken from the heap is decayed by the boxes kept since it
        was last decayed; kept if that changes nothing, else pushed back with its new score."""
        scale = score.dtype.type(-0.5) / self.sigma
        heap = [(-score[i], int(i), 0) for i in order]
        heapq.heapify(heap)
        kept: list[tuple[int, Any]] = []
        overlaps: list[Array] = []  # IoU of each kept box with every box
        while heap and len(kept) < limit:
            top, i, begin = heapq.heappop(heap)
            value = -top
            for iou in (overlaps[j][i] for j in range(len(kept) - 1, begin - 1, -1)):
                if self.cutoff and iou > self.iou:
                    break
                value = value * np.exp(scale * iou * iou)
                if self.floor is not None and value <= self.floor:
                    break
            else:
                if value == -top:
                    kept.append((i, value))
                    overlaps.append(_iou(low, high, i))
                else:
                    heapq.heappush(heap, (-value, i, len(kept)))
        return kept


def _bilinear_axis(p: Array, size: int) -> tuple[Array, Array, Array, Array, Array]:
    """RoiAlign's sampling along one axis (as Caffe2 and ONNX Runtime do it): whether each
    coordinate is usable, and its low / high indices with their weights."""
    usable = (p >= -1) & (p <= size)
    p = np.maximum(p, 0)
    low = np.floor(p).astype(np.int64)
    edge = low >= size - 1
    low = np.where(edge, size - 1, low)
    high = np.where(edge, size - 1, low + 1)
    frac = np.where(edge, 0.0, p - low)
    return usable, low, high, 1 - frac, frac


def _scaled(rois: Any, scale: float, shift: float = 0.0) -> Array:
    """RoI coordinates times spatial_scale, less ``shift``, computed in the RoIs' precision (as
    ONNX Runtime does: the rounding decides which cells a RoI covers), then widened to f64."""
    boxes = widen(rois)
    kind = boxes.dtype.type
    return (boxes * kind(scale) - kind(shift)).astype(np.float64)  # type: ignore[no-any-return]


@kernel("RoiAlign")
def roi_align(ctx: KernelContext, data: Any, rois: Any, batch_indices: Any) -> Array:
    x, boxes = widen(data).astype(np.float64), np.asarray(rois)
    which = _ints(batch_indices)
    if x.ndim != 4 or boxes.shape != (len(which), 4):
        raise fail(
            ctx,
            f"X {list(x.shape)}, rois {list(boxes.shape)} and batch_indices "
            f"{len(which)} must be [N, C, H, W], [R, 4] and [R]",
        )
    if any(not 0 <= i < x.shape[0] for i in which):
        raise fail(ctx, f"batch_indices {which} must lie in [0, {x.shape[0]})")
    oh, ow = ctx.attr("output_height"), ctx.attr("output_width")
    ratio, half = ctx.attr("sampling_ratio"), ctx.attr("coordinate_transformation_mode")
    shift = 0.5 if half == "half_pixel" else 0.0
    use_max = ctx.attr("mode") == "max"
    of_samples = ctx.attr("max_of") == "samples"
    out = np.zeros((len(which), x.shape[1], oh, ow))
    # The number of samples per bin varies per RoI, so RoIs go one at a time.
    for r, (box, image) in enumerate(
        zip(_scaled(boxes, ctx.attr("spatial_scale"), shift), which, strict=True)
    ):
        start, extent = box[1::-1], box[3:1:-1] - box[1::-1]  # (y, x)
        if shift == 0:
            extent = np.maximum(extent, 1.0)
        bins = extent / (oh, ow)
        grid = [
            ratio if ratio > 0 else math.ceil(e / o) for e, o in zip(extent, (oh, ow), strict=True)
        ]
        axes = []
        for d, (count, size) in enumerate(zip((oh, ow), x.shape[2:], strict=True)):
            p = (
                start[d]
                + np.arange(count)[:, None] * bins[d]
                + (np.arange(grid[d]) + 0.5) * bins[d] / max(grid[d], 1)
            )
            axes.append(_bilinear_axis(p, size))  # each [bins, samples]
        (uy, y0, y1, wy0, wy1), (ux, x0, x1, wx0, wx1) = axes
        plane = x[image]
        rows = [(y0, wy0), (y1, wy1)]
        cols = [(x0, wx0), (x1, wx1)]
        # Terms [C, oh, gy, ow, gx] of the four corners; unusable samples weigh 0.
        usable = (uy[:, :, None, None] & ux[None, None]).astype(np.float64)
        terms = [
            plane[:, yi[:, :, None, None], xi[None, None]]
            * (wyi[:, :, None, None] * wxi[None, None] * usable)
            for (yi, wyi), (xi, wxi) in itertools.product(rows, cols)
        ]
        if use_max and of_samples:
            out[r] = sum(terms).max(axis=(2, 4), initial=0.0)
        elif use_max:
            sample = np.maximum.reduce(terms)
            out[r] = sample.max(axis=(2, 4), initial=-np.inf) if sample.size else 0.0
        else:
            out[r] = sum(terms).sum(axis=(2, 4)) / max(grid[0] * grid[1], 1)
    return out.astype(np.asarray(data).dtype)


def _round_half_away(v: Array) -> Array:
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


def _pool_bins(start: float, end: float, count: int, size: int) -> Array:
    """[count, size] mask of the cells of each of ``count`` bins over the RoI [start, end]."""
    extent = max(end - start + 1, 1)
    step = extent / count
    p = np.arange(count)
    low = np.clip(np.floor(p * step) + start, 0, size)
    high = np.clip(np.ceil((p + 1) * step) + start, 0, size)
    cells = np.arange(size)
    return np.asarray((cells >= low[:, None]) & (cells < high[:, None]))


@kernel("MaxRoiPool")
def max_roi_pool(ctx: KernelContext, data: Any, rois: Any) -> Array:
    x, boxes = widen(data).astype(np.float64), np.asarray(rois)
    if x.ndim != 4 or boxes.ndim != 2 or boxes.shape[1] != 5:
        raise fail(
            ctx, f"X {list(x.shape)} and rois {list(boxes.shape)} must be [N, C, H, W] and [R, 5]"
        )
    ph, pw = ctx.attr("pooled_shape")
    out = np.zeros((len(boxes), x.shape[1], ph, pw))
    for r, (image, box) in enumerate(
        zip(_ints(boxes[:, 0]), _scaled(boxes[:, 1:], ctx.attr("spatial_scale")), strict=True)
    ):
        if not 0 <= image < x.shape[0]:
            raise fail(ctx, f"RoI {r} names image {image} of a batch of {x.shape[0]}")
        x1, y1, x2, y2 = _round_half_away(box)
        rows, cols = _pool_bins(y1, y2, ph, x.shape[2]), _pool_bins(x1, x2, pw, x.shape[3])
        # A rectangle's maximum is the maximum over its rows of the maxima over its columns.
        by_col = np.where(cols[None, None], x[image][:, :, None, :], -np.inf).max(axis=3)
        best = np.where(rows[None, :, :, None], by_col[:, None], -np.inf).max(axis=2)
        used_rows = np.asarray(rows.any(axis=1))
        used_cols = np.asarray(cols.any(axis=1))
        empty = ~used_rows[:, None] | ~used_cols[None, :]
        out[r] = np.where(empty, 0.0, best)
    return out.astype(np.asarray(data).dtype)
