"""Detection ops: position-sensitive RoI pooling (plain and deformable), rotated RoI align,
bilinear RoI pooling, prior boxes, Proposal, DetectionOutput, GenerateProposals and multi-class
NMS.

Each is an op of its own: their bins cover data-dependent cell ranges or take data-dependent
sample counts, and read a different channel per bin, which no fixed composition of Gather,
RoiAlign or GridSample reproduces; the NMS ops select a data-dependent number of rows; the
prior boxes number as many as the cells of a size that may be known only at run time."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..ir.opdef import AttrSpec, InferContext, op
from ..tensor.dtypes import DType
from ..tensor.types import UNKNOWN, Dim, TensorType, Type
from .common import expect
from .indexing import choice

PS_ROI_MODES = ("average", "bilinear")


def _roi_rows(ctx: InferContext, index: int, width: int) -> Dim:
    """The number of RoIs of input ``index``, which must be [rois, width]."""
    rois = expect(ctx, index, "float", rank=2)
    if rois.shape is None:
        return UNKNOWN
    if isinstance(rois.shape[1], int) and rois.shape[1] != width:
        raise ctx.error(f"input #{index}: rois must be [num_rois, {width}], got {rois}")
    return rois.shape[0]


def _at_least_one(ctx: InferContext, *keys: str) -> list[int]:
    values = [int(ctx.attr(k)) for k in keys]
    for key, value in zip(keys, values, strict=True):
        if value < 1:
            raise ctx.error(f"{key} must be at least 1, got {value}")
    return values


def _channels(ctx: InferContext, x: TensorType, expected: int, why: str) -> None:
    c = x.shape[1] if x.shape is not None else UNKNOWN
    if isinstance(c, int) and c != expected:
        raise ctx.error(f"X {x} must have {expected} channels ({why})")


@op(
    "PsRoiPool",
    inputs=2,
    attrs={
        "mode": AttrSpec(str, "average"),
        "output_dim": AttrSpec(int),
        "group_size": AttrSpec(int, 1),
        "spatial_scale": AttrSpec(float, 1.0),
        "spatial_bins_x": AttrSpec(int, 1),
        "spatial_bins_y": AttrSpec(int, 1),
    },
)
def _ps_roi_pool(ctx: InferContext) -> list[Type]:
    """Position-sensitive RoI pooling (R-FCN): ``X`` [N, C, H, W] and ``rois`` [R, 5] rows of
    (batch, x1, y1, x2, y2) give [R, output_dim, group_size, group_size]; output (r, c, i, j)
    reads its own input channel. average: C = output_dim·group_size², bin (i, j) of the RoI
    [round(x1), round(x2 + 1)) x [round(y1), round(y2 + 1)) (rounded half away from zero, times
    spatial_scale, at least 0.1 wide) is cut at floor / ceil, clipped to the image, and averaged
    from channel (c·group_size + i)·group_size + j (0 if empty). bilinear: C =
    output_dim·spatial_bins_x·spatial_bins_y, the RoI (times spatial_scale) is in units of the
    image size less one pixel; each of its spatial_bins_y x spatial_bins_x sub-boxes (channel
    c + (by·spatial_bins_x + bx)·output_dim) gives one bilinear sample at (i, j) of a
    group_size-point grid spanning it (its centre for one point); samples off the image count
    as 0 and the output is their mean. A RoI of batch -1 ends the list: it and every RoI after
    it give zeros."""
    mode = choice(ctx, "mode", PS_ROI_MODES)
    out_dim, group, bins_x, bins_y = _at_least_one(
        ctx, "output_dim", "group_size", "spatial_bins_x", "spatial_bins_y"
    )
    x = expect(ctx, 0, "float", rank=4)
    ctx.same_dtype(0, 1)
    rows = _roi_rows(ctx, 1, 5)
    if mode == "average":
        _channels(ctx, x, out_dim * group * group, "output_dim · group_size²")
    else:
        _channels(ctx, x, out_dim * bins_x * bins_y, "output_dim · spatial_bins_x · _y")
    return [x.with_shape([rows, out_dim, group, group])]


@op(
    "DeformablePsRoiPool",
    inputs=(2, 3),
    attrs={
        "output_dim": AttrSpec(int),
        "group_size": AttrSpec(int, 1),
        "spatial_scale": AttrSpec(float, 1.0),
        "spatial_bins_x": AttrSpec(int, 1),
        "spatial_bins_y": AttrSpec(int, 1),
        "trans_std": AttrSpec(float, 1.0),
        "part_size": AttrSpec(int, 1),
    },
)
def _deformable_ps_roi_pool(ctx: InferContext) -> list[Type]:
    """Deformable position-sensitive RoI pooling: ``X`` [N, output_dim·group_size², H, W],
    ``rois`` [R, 5] rows of (batch, x1, y1, x2, y2), optional ``offsets`` [R, 2·classes,
    part_size, part_size] give [R, output_dim, group_size, group_size]. The RoI runs from
    round(x1)·spatial_scale - 0.5 to (round(x2) + 1)·spatial_scale - 0.5 (likewise y; rounded
    half away from zero, at least 0.1 wide); bin (i, j) of output channel c moves by
    trans_std·offsets[r, 2k (x) and 2k + 1 (y), i·part_size // group_size, j·part_size //
    group_size] times the RoI's size (k = c // (output_dim / classes)), and averages the
    bilinear samples at the top-left corners of its spatial_bins_y x spatial_bins_x sub-bins
    that lie within half a pixel of the image (clamped onto it), read from channel
    (c·group_size + i)·group_size + j; 0 if none does. A RoI of batch -1 ends the list: it and
    every RoI after it give zeros."""
    out_dim, group, _, _, part = _at_least_one(
        ctx, "output_dim", "group_size", "spatial_bins_x", "spatial_bins_y", "part_size"
    )
    x = expect(ctx, 0, "float", rank=4)
    ctx.same_dtype(0, 1)
    rows = _roi_rows(ctx, 1, 5)
    _channels(ctx, x, out_dim * group * group, "output_dim · group_size²")
    if ctx.has(2):
        ctx.same_dtype(0, 2)
        offsets = expect(ctx, 2, "float", rank=4)
        if offsets.shape is not None:
            pairs, *size = offsets.shape[1:]
            if isinstance(pairs, int) and (pairs < 2 or pairs % 2 or out_dim % (pairs // 2)):
                raise ctx.error(
                    f"offsets {offsets} must be [num_rois, 2·classes, part_size, part_size] "
                    f"with classes dividing output_dim {out_dim}"
                )
            if any(isinstance(d, int) and d != part for d in size):
                raise ctx.error(f"offsets {offsets} must be part_size {part} square")
    return [x.with_shape([rows, out_dim, group, group])]


@op(
    "RoiAlignRotated",
    inputs=3,
    attrs={
        "output_height": AttrSpec(int, 1),
        "output_width": AttrSpec(int, 1),
        "sampling_ratio": AttrSpec(int, 0),
        "spatial_scale": AttrSpec(float, 1.0),
        "clockwise": AttrSpec(int, 0),
    },
)
def _roi_align_rotated(ctx: InferContext) -> list[Type]:
    """RoiAlign over rotated boxes: each RoI [cx, cy, w, h, angle] of image batch_indices[i] of
    ``X`` [N, C, H, W] (centre times spatial_scale less 0.5, size times spatial_scale, turned
    by angle radians, counterclockwise unless clockwise=1) cut into output_height x
    output_width bins, each the average of sampling_ratio² (adaptive if 0: ceil(bin size) per
    axis) bilinear samples at the centres of a regular grid in the box's frame; samples more
    than a pixel off the image count as 0. Output [rois, C, oh, ow]."""
    x = expect(ctx, 0, "float", rank=4)
    ctx.same_dtype(0, 1)
    rows = _roi_rows(ctx, 1, 5)
    indices = expect(ctx, 2, "int", rank=1)
    oh, ow = _at_least_one(ctx, "output_height", "output_width")
    if ctx.attr("sampling_ratio") < 0 or ctx.attr("clockwise") not in (0, 1):
        raise ctx.error(
            f"sampling_ratio {ctx.attr('sampling_ratio')} must not be negative and clockwise "
            f"{ctx.attr('clockwise')} must be 0 or 1"
        )
    counts = {d for d in (rows, *(indices.shape or [UNKNOWN])) if isinstance(d, int)}
    if len(counts) > 1:
        raise ctx.error(f"rois and batch_indices {indices} disagree on the number of RoIs")
    c = x.shape[1] if x.shape is not None else UNKNOWN
    n = counts.pop() if counts else rows
    return [x.with_shape([n, c, oh, ow])]


@op("BilinearRoiPool", inputs=2, attrs={"pooled_shape": AttrSpec((tuple, list))})
def _bilinear_roi_pool(ctx: InferContext) -> list[Type]:
    """RoI pooling by one bilinear sample a bin (OpenVINO's ROIPooling, method "bilinear"):
    ``X`` [N, C, H, W] and ``rois`` [R, 5] rows of (batch, x1, y1, x2, y2) in units of the
    image size less one pixel give [R, C, ph, pw] for pooled_shape (ph, pw). Bin i of ph > 1
    samples at y = i·((y2 - y1)·(H - 1) / (ph - 1)) + y1·(H - 1), the last at y2·(H - 1); of
    ph = 1 at (y1 + y2)·(H - 1) / 2 (likewise x, computed in the RoIs' precision); the sample
    reads its floor / ceil corners (top + (bottom - top)·fy of left + (right - left)·fx), 0
    when it lies off [0, H - 1] x [0, W - 1]. A RoI of batch -1 ends the list: it and every
    RoI after it give zeros."""
    x = expect(ctx, 0, "float", rank=4)
    ctx.same_dtype(0, 1)
    rows = _roi_rows(ctx, 1, 5)
    shape = [int(v) for v in ctx.attr("pooled_shape")]
    if len(shape) != 2 or min(shape) < 1:
        raise ctx.error(f"pooled_shape must be (height, width) >= 1, got {shape}")
    c = x.shape[1] if x.shape is not None else UNKNOWN
    return [x.with_shape([rows, c, *shape])]


_FLOATS = (tuple, list)

PRIOR_BOX_ATTRS = {
    "min_size": AttrSpec(_FLOATS, ()),
    "max_size": AttrSpec(_FLOATS, ()),
    "aspect_ratio": AttrSpec(_FLOATS, ()),
    "fixed_size": AttrSpec(_FLOATS, ()),
    "fixed_ratio": AttrSpec(_FLOATS, ()),
    "density": AttrSpec(_FLOATS, ()),
    "flip": AttrSpec(int, 0),
    "clip": AttrSpec(int, 0),
    "step": AttrSpec(float, 0.0),
    "offset": AttrSpec(float),
    "variance": AttrSpec(_FLOATS, ()),
    "scale_all_sizes": AttrSpec(int, 1),
    "min_max_aspect_ratios_order": AttrSpec(int, 1),
}


def prior_ratios(aspect_ratio: Sequence[float], flip: bool) -> list[np.float32]:
    """PriorBox's aspect ratios in f32: 1, then each given one not within 1e-6 of one already
    taken (and its inverse where flip)."""
    one = np.float32(1.0)
    ratios = [one]
    for r in aspect_ratio:
        if not any(abs(np.float32(r) - e) < 1e-6 for e in ratios):
            ratios.append(np.float32(r))
            if flip:
                ratios.append(one / np.float32(r))
    return ratios


def prior_box_counts(attrs: Mapping[str, Any]) -> tuple[int, int]:
    """The priors a cell PriorBox's formulas give for ``attrs``, and the number OpenVINO sizes
    its output for (PriorBox::number_of_priors); the two differ for some fixed_ratio lists."""
    others = len(prior_ratios(attrs["aspect_ratio"], bool(attrs["flip"]))) - 1
    mins, maxes = len(attrs["min_size"]), len(attrs["max_size"])
    given = 0
    for density in attrs["density"]:
        d2 = int(density) * int(density)
        given += d2 * (len(attrs["fixed_ratio"]) if attrs["fixed_ratio"] else 1 + others)
    for i in range(mins):
        given += 1 + (maxes > i) + (others if attrs["scale_all_sizes"] or i == mins - 1 else 0)
    unique = {1.0}
    for r in attrs["aspect_ratio"]:
        unique.add(round(r * 1e6) / 1e6)
        if attrs["flip"]:
            unique.add(round(1 / r * 1e6) / 1e6)
    total = len(unique)
    declared = total * mins + maxes if attrs["scale_all_sizes"] else total + mins - 1
    if attrs["fixed_size"]:
        declared = total * len(attrs["fixed_size"])
    for density in attrs["density"]:
        d2 = int(density) * int(density) - 1
        declared += (len(attrs["fixed_ratio"]) if attrs["fixed_ratio"] else total) * d2
    return given, declared


def _prior_cells(ctx: InferContext) -> Dim:
    """The cells of PriorBox's output_size (input #0; input #1 is the image size), each [2]
    integers, when known before running."""
    for index, what in ((0, "output_size"), (1, "image_size")):
        t = expect(ctx, index, "int", rank=1)
        if t.shape is not None and isinstance(t.shape[0], int) and t.shape[0] != 2:
            raise ctx.error(f"input #{index} ({what}) must hold 2 integers, got {t}")
        values = ctx.const_ints(index)
        if values is not None and (len(values) != 2 or min(values) <= 0):
            raise ctx.error(f"input #{index} ({what}) must be 2 positive integers, got {values}")
    sizes = ctx.const_ints(0)
    return UNKNOWN if sizes is None else sizes[0] * sizes[1]


def _variance(ctx: InferContext) -> None:
    if len(ctx.attr("variance")) not in (0, 1, 4):
        raise ctx.error(f"variance must hold 0, 1 or 4 values, got {list(ctx.attr('variance'))}")


@op("PriorBox", inputs=2, attrs=PRIOR_BOX_ATTRS)
def _prior_box(ctx: InferContext) -> list[Type]:
    """SSD's prior boxes (OpenVINO's PriorBox), from ``output_size`` [height, width] (a feature
    map's) and ``image_size`` [height, width], both integers that may be known only at run
    time: f32 [2, 4·height·width·priors], the boxes (x1, y1, x2, y2 in units of the image) of
    every cell row by row, then each box's variance (one value for all four, or four; 0.1 if
    none). Per cell centre ((w + 0.5)·image_w / width if step is 0, else (w + offset)·step),
    in this order: per fixed_size its density² boxes of each fixed_ratio (else of ratio 1 and
    the other aspect ratios), clipped; per min_size the square, then the square of
    sqrt(min_size·max_size) and the aspect-ratio boxes (swapped unless
    min_max_aspect_ratios_order), those of the last min_size only unless scale_all_sizes (whose
    min sizes and step are then fractions of image_h). Everything is computed in f32 in
    OpenVINO's order; clip clips every box to [0, 1]."""
    cells = _prior_cells(ctx)
    _variance(ctx)
    attrs = {key: ctx.attr(key) for key in PRIOR_BOX_ATTRS}
    if attrs["density"] and len(attrs["density"]) != len(attrs["fixed_size"]):
        raise ctx.error("density and fixed_size must have the same length")
    if attrs["fixed_size"] and not attrs["density"]:
        raise ctx.error("fixed_size needs a density per size")
    given, declared = prior_box_counts(attrs)
    if given != declared:
        raise ctx.error(
            f"these attributes give {given} priors a cell where OpenVINO sizes the output for "
            f"{declared}"
        )
    return [TensorType(DType.float32, [2, UNKNOWN if cells == UNKNOWN else 4 * cells * given])]


@op(
    "PriorBoxClustered",
    inputs=2,
    attrs={
        "width": AttrSpec(_FLOATS),
        "height": AttrSpec(_FLOATS),
        "clip": AttrSpec(int, 1),
        "step_w": AttrSpec(float, 0.0),
        "step_h": AttrSpec(float, 0.0),
        "offset": AttrSpec(float),
        "variance": AttrSpec(_FLOATS, ()),
    },
)
def _prior_box_clustered(ctx: InferContext) -> list[Type]:
    """Clustered prior boxes (OpenVINO's PriorBoxClustered): as PriorBox's layout, one box a
    (width, height) pair at every cell centre (w + offset)·step_w, (h + offset)·step_h (the
    image over the feature map where both steps are 0), divided by the image size and clipped
    to [0, 1] unless clip is 0; f32 [2, 4·height·width·len(width)]."""
    cells = _prior_cells(ctx)
    _variance(ctx)
    count = len(ctx.attr("width"))
    if count != len(ctx.attr("height")):
        raise ctx.error(
            f"width {list(ctx.attr('width'))} and height {list(ctx.attr('height'))} must pair up"
        )
    return [TensorType(DType.float32, [2, UNKNOWN if cells == UNKNOWN else 4 * cells * count])]


PROPOSAL_FRAMEWORKS = ("", "tensorflow")


@op(
    "Proposal",
    inputs=3,
    attrs={
        "base_size": AttrSpec(int),
        "pre_nms_topn": AttrSpec(int),
        "post_nms_topn": AttrSpec(int),
        "nms_thresh": AttrSpec(float),
        "feat_stride": AttrSpec(int),
        "min_size": AttrSpec(int),
        "ratio": AttrSpec((tuple, list)),
        "scale": AttrSpec((tuple, list)),
        "clip_before_nms": AttrSpec(int, 1),
        "clip_after_nms": AttrSpec(int, 0),
        "normalize": AttrSpec(int, 0),
        "box_size_scale": AttrSpec(float, 1.0),
        "box_coordinate_scale": AttrSpec(float, 1.0),
        "framework": AttrSpec(str, ""),
    },
)
def _proposal(ctx: InferContext) -> list[Type]:
    """Region proposals (Faster R-CNN's RPN, as OpenVINO's Proposal): ``class_probs``
    [N, 2A, H, W] (foreground scores in channels A..2A), ``bbox_deltas`` [N, 4A, H, W] and
    ``image_shape`` [3 or 4] (height, width, scale_h[, scale_w]) give ``rois``
    [N·post_nms_topn, 5] rows of (batch, x1, y1, x2, y2) and their ``probs`` [N·post_nms_topn].
    The A = len(ratio)·len(scale) anchors of base_size (rounded per ratio; centred, or for
    framework "tensorflow" shifted by half the base size, coordinates offset 0 instead of 1
    and x / y read transposed) sit at every feat_stride cell, are moved by the deltas (centre
    by d·size / box_coordinate_scale, size by exp(d / box_size_scale)) and clipped to the
    image (clip_before_nms); boxes narrower or lower than min_size·scale are dropped. Per
    image the pre_nms_topn best by score go through greedy NMS (a box dies when its IoU with a
    kept one, with sizes counted as x2 - x1 + offset, exceeds nms_thresh) up to
    post_nms_topn; kept boxes are optionally clipped (clip_after_nms) and divided by the image
    size (normalize). An image with fewer boxes marks the row after its last with batch -1;
    the rest of its rows and probs are 0."""
    choice(ctx, "framework", PROPOSAL_FRAMEWORKS)
    _at_least_one(ctx, "base_size", "pre_nms_topn", "post_nms_topn", "feat_stride")
    if not ctx.attr("ratio") or not ctx.attr("scale"):
        raise ctx.error("ratio and scale must each list at least one value")
    probs, deltas = expect(ctx, 0, "float", rank=4), expect(ctx, 1, "float", rank=4)
    ctx.same_dtype(0, 1)
    ctx.same_dtype(0, 2)
    info = expect(ctx, 2, "float", rank=1)
    anchors = len(ctx.attr("ratio")) * len(ctx.attr("scale"))
    for t, per in ((probs, 2), (deltas, 4)):
        c = t.shape[1] if t.shape is not None else UNKNOWN
        if isinstance(c, int) and c != per * anchors:
            raise ctx.error(f"{t} must have {per} x {anchors} anchors = {per * anchors} channels")
    length = info.shape[0] if info.shape is not None else UNKNOWN
    if isinstance(length, int) and length not in (3, 4):
        raise ctx.error(f"image_shape {info} must hold 3 or 4 values")
    n = probs.shape[0] if probs.shape is not None else UNKNOWN
    rows: Dim = n * ctx.attr("post_nms_topn") if isinstance(n, int) else UNKNOWN
    return [probs.with_shape([rows, 5]), probs.with_shape([rows])]


MULTICLASS_NMS_SORTS = ("none", "class", "score")


@op(
    "MulticlassNms",
    inputs=(2, 3),
    attrs={
        "sort_result": AttrSpec(str, "none"),
        "sort_across_batch": AttrSpec(int, 0),
        "iou_threshold": AttrSpec(float, 0.0),
        "score_threshold": AttrSpec(float, 0.0),
        "nms_top_k": AttrSpec(int, -1),
        "keep_top_k": AttrSpec(int, -1),
        "background_class": AttrSpec(int, -1),
        "nms_eta": AttrSpec(float, 1.0),
        "normalized": AttrSpec(int, 1),
    },
)
def _multiclass_nms(ctx: InferContext) -> list[Type]:
    """Multi-class NMS (OpenVINO's MulticlassNms, PaddlePaddle's multiclass_nms3), in f32::

        for batch b, class c != background_class:
            live = boxes scoring >= score_threshold, by score then index; the first nms_top_k
            threshold = iou_threshold
            while live:
                k = the first of live; keep k
                if nms_eta < 1 and threshold > 0.5: threshold *= nms_eta
                drop from live every box whose IoU with k > threshold
            per b: kept rows by score (then class, box), the first keep_top_k
        rows by batch, then: sort_result "class" by class, score, box; "score" or "none" as
        they are; with sort_across_batch=1 "score" sorts by score, batch, class, box and
        "class" by class, batch, score, box

    ``boxes`` [B, N, 4] rows of (x1, y1, x2, y2) with ``scores`` [B, C, N]; or boxes of each
    class [C, N, 4] with ``scores`` [C, N] and ``roisnum`` [B], the boxes of batch b being the
    next roisnum[b] along N. Boxes are taken as given (not reordered); a box of area <= 0 meets
    none; unless normalized, sides are one longer. A -1 for nms_top_k or keep_top_k keeps all.
    Outputs: rows (class, score, x1, y1, x2, y2) [S, 6] in the boxes' type; each row's box
    index i64 [S, 1] (b·N + n, or with roisnum (offset of b + n)·C + c); rows per batch i64
    [B]."""
    choice(ctx, "sort_result", MULTICLASS_NMS_SORTS)
    for key in ("sort_across_batch", "normalized"):
        if ctx.attr(key) not in (0, 1):
            raise ctx.error(f"{key} must be 0 or 1, got {ctx.attr(key)}")
    boxes = expect(ctx, 0, "float", rank=3)
    ctx.same_dtype(0, 1)
    shared = not ctx.has(2)
    scores = expect(ctx, 1, "float", rank=3 if shared else 2)
    if boxes.shape is not None and isinstance(boxes.shape[2], int) and boxes.shape[2] != 4:
        raise ctx.error(f"boxes must be [.., boxes, 4], got {boxes}")
    pairs = ((0, 0), (1, 2)) if shared else ((0, 0), (1, 1))
    if boxes.shape is not None and scores.shape is not None:
        for i, j in pairs:
            a, b = boxes.shape[i], scores.shape[j]
            if isinstance(a, int) and isinstance(b, int) and a != b:
                raise ctx.error(f"boxes {boxes} and scores {scores} disagree")
    batches: Dim = UNKNOWN
    if shared and boxes.shape is not None:
        batches = boxes.shape[0]
    elif not shared:
        rois = expect(ctx, 2, "int", rank=1)
        batches = rois.shape[0] if rois.shape is not None else UNKNOWN
    return [
        boxes.with_shape([UNKNOWN, 6]),
        TensorType(DType.int64, [UNKNOWN, 1]),
        TensorType(DType.int64, [batches]),
    ]


DETECTION_CODE_TYPES = ("corner", "center_size")


def _flag(ctx: InferContext, *keys: str) -> None:
    for key in keys:
        if ctx.attr(key) not in (0, 1):
            raise ctx.error(f"{key} must be 0 or 1, got {ctx.attr(key)}")


@op(
    "DetectionOutput",
    inputs=(3, 5),
    attrs={
        "background_label_id": AttrSpec(int, 0),
        "top_k": AttrSpec(int, -1),
        "variance_encoded_in_target": AttrSpec(int, 0),
        "keep_top_k": AttrSpec(int, -1),
        "code_type": AttrSpec(str, "corner"),
        "share_location": AttrSpec(int, 1),
        "nms_threshold": AttrSpec(float),
        "confidence_threshold": AttrSpec(float, 0.0),
        "clip_after_nms": AttrSpec(int, 0),
        "clip_before_nms": AttrSpec(int, 0),
        "decrease_label_id": AttrSpec(int, 0),
        "normalized": AttrSpec(int, 0),
        "input_height": AttrSpec(int, 1),
        "input_width": AttrSpec(int, 1),
        "objectness_score": AttrSpec(float, 0.0),
    },
)
def _detection_output(ctx: InferContext) -> list[Type]:
    """SSD's detection output (OpenVINO's DetectionOutput, as its CPU plugin computes it):
    ``box_logits`` [N, P·L·4] (L = 1 with share_location, else C), ``class_preds`` [N, P·C],
    ``priors`` [1 or N, 1 or 2, P·S] (S = 4, or 5 unless normalized: a leading batch, -1 ending
    the list of priors; the second row the variances, read 4 a prior, absent when
    variance_encoded_in_target) and optionally ``arm_conf`` [N, P·2] and ``arm_loc`` (as
    box_logits) give [1, 1, R, 7] rows of (image, class, score, x1, y1, x2, y2). Priors (divided
    by input_width / input_height unless normalized) are moved by the logits, as corners (prior
    + variance·logit) or centre and size (centre + variance·logit·size, size·exp(variance·logit))
    and clipped to [0, 1] with clip_before_nms; with the ARM inputs the priors are first moved by
    arm_loc, and a prior whose arm_conf[p, 1] is under objectness_score scores 1 for the
    background class and 0 for the others. Per class but background, the priors scoring above
    confidence_threshold, best first (then by index), cut to top_k, go through greedy NMS (a box
    dies when its IoU with a kept one exceeds nms_threshold). With decrease_label_id (MXNet;
    background 0) each prior instead competes only in its best class scoring at least the
    threshold, cut to top_k per image, and classes print as class - 1. Above keep_top_k
    detections an image keeps its keep_top_k best (score, then prior). Rows run image by image,
    class by class, best first (boxes clipped to [0, 1] with clip_after_nms); R is N·keep_top_k,
    else N·top_k·C, else N·P·C; the row after the last has image -1, and the rest are 0."""
    choice(ctx, "code_type", DETECTION_CODE_TYPES)
    _flag(
        ctx,
        "variance_encoded_in_target",
        "share_location",
        "clip_after_nms",
        "clip_before_nms",
        "decrease_label_id",
        "normalized",
    )
    if ctx.attr("decrease_label_id") and ctx.attr("background_label_id") != 0:
        raise ctx.error("decrease_label_id needs background_label_id 0")
    if ctx.attr("input_height") < 1 or ctx.attr("input_width") < 1:
        raise ctx.error("input_height and input_width must be at least 1")
    loc, conf, priors = (expect(ctx, i, "float", rank=r) for i, r in ((0, 2), (1, 2), (2, 3)))
    for i in range(1, 5):
        if ctx.has(i):
            ctx.same_dtype(0, i)
    if ctx.has(3) != ctx.has(4):
        raise ctx.error("arm_conf and arm_loc come together")
    size = 4 if ctx.attr("normalized") else 5
    dims = [
        d if isinstance(d, int) else None
        for d in (
            *(loc.shape or [UNKNOWN] * 2),
            *(conf.shape or [UNKNOWN] * 2),
            (priors.shape or [UNKNOWN] * 3)[2],
        )
    ]
    n, locs, _, confs, width = dims
    if width is None or confs is None:
        return [conf.with_shape([1, 1, UNKNOWN, 7])]
    priors_count = width // size
    if width % size or priors_count == 0 or confs % priors_count:
        raise ctx.error(
            f"priors {priors} must hold P boxes of {size} values and class_preds {conf} P·C scores"
        )
    classes = confs // priors_count
    per_loc = 4 * priors_count * (1 if ctx.attr("share_location") else classes)
    if locs is not None and locs != per_loc:
        raise ctx.error(f"box_logits {loc} must hold {per_loc} values an image")
    keep, top = ctx.attr("keep_top_k"), ctx.attr("top_k")
    per_image = keep if keep > 0 else top * classes if top > 0 else priors_count * classes
    rows: Dim = per_image * n if n is not None else UNKNOWN
    return [conf.with_shape([1, 1, rows, 7])]


@op(
    "GenerateProposals",
    inputs=4,
    attrs={
        "min_size": AttrSpec(float),
        "nms_threshold": AttrSpec(float),
        "pre_nms_count": AttrSpec(int),
        "post_nms_count": AttrSpec(int),
        "normalized": AttrSpec(int, 1),
        "nms_eta": AttrSpec(float, 1.0),
    },
)
def _generate_proposals(ctx: InferContext) -> list[Type]:
    """Region proposals of each image (OpenVINO's GenerateProposals): ``im_info`` [N, 3 or 4]
    (height, width, scale_h[, scale_w]), ``anchors`` [H, W, A, 4] (x1, y1, x2, y2),
    ``deltas`` [N, 4A, H, W] (dx, dy, log dw, log dh) and ``scores`` [N, A, H, W] give ``rois``
    [R, 4], their ``scores`` [R] and each image's count i64 [N]. Each anchor (sizes counted as
    x2 - x1 + offset, offset 0 if normalized else 1) moves its centre by d·size and scales its
    size by exp(min(d, log(1000 / 16))), and is clipped to the image less the offset; the
    pre_nms_count best by score stay, those narrower or lower than min_size·scale drop, and
    greedy NMS keeps a box unless its IoU with a kept one exceeds the threshold, which starts at
    nms_threshold and, while above 0.5 with nms_eta < 1, is multiplied by nms_eta after each box
    kept; at most post_nms_count a image, best first, images one after another."""
    _flag(ctx, "normalized")
    for key in ("pre_nms_count", "post_nms_count"):
        if ctx.attr(key) < 0:
            raise ctx.error(f"{key} must not be negative, got {ctx.attr(key)}")
    if not 0 <= ctx.attr("nms_eta") <= 1:
        raise ctx.error(f"nms_eta must lie in [0, 1], got {ctx.attr('nms_eta')}")
    info = expect(ctx, 0, "float", rank=2)
    expect(ctx, 1, "float", rank=4)
    expect(ctx, 2, "float", rank=4)
    scores = expect(ctx, 3, "float", rank=4)
    for i in (1, 2, 3):
        ctx.same_dtype(0, i)
    width = info.shape[1] if info.shape is not None else UNKNOWN
    if isinstance(width, int) and width not in (3, 4):
        raise ctx.error(f"im_info {info} must be [N, 3] or [N, 4]")
    n = scores.shape[0] if scores.shape is not None else UNKNOWN
    return [
        info.with_shape([UNKNOWN, 4]),
        info.with_shape([UNKNOWN]),
        TensorType(DType.int64, [n]),
    ]


MATRIX_NMS_DECAYS = ("linear", "gaussian")


@op(
    "MatrixNms",
    inputs=2,
    attrs={
        "sort_result": AttrSpec(str, "none"),
        "sort_across_batch": AttrSpec(int, 0),
        "score_threshold": AttrSpec(float, 0.0),
        "nms_top_k": AttrSpec(int, -1),
        "keep_top_k": AttrSpec(int, -1),
        "background_class": AttrSpec(int, -1),
        "decay_function": AttrSpec(str, "linear"),
        "gaussian_sigma": AttrSpec(float, 2.0),
        "post_threshold": AttrSpec(float, 0.0),
        "normalized": AttrSpec(int, 1),
    },
)
def _matrix_nms(ctx: InferContext) -> list[Type]:
    """Matrix NMS (Wang et al., SOLOv2; OpenVINO's MatrixNms, PaddlePaddle's matrix_nms), in
    f32: scores decay by their overlaps instead of boxes being dropped::

        for batch b, class c != background_class:
            live = boxes scoring > score_threshold, by score then index; the first nms_top_k
            iou[i, j] = IoU of live i and j (i < j); most[j] = max over i < j of iou[i, j]
            decay[j] = min over i < j of (1 - iou[i, j]) / (1 - most[i] + 1e-10) (linear)
                       or exp((most[i]² - iou[i, j]²) · gaussian_sigma) (gaussian); 1 for j = 0
            keep j with score[j] · decay[j] > post_threshold, scored so
            per b: kept rows by decayed score (then class, box), the first keep_top_k
        rows by batch, then sorted as MulticlassNms sorts them

    ``boxes`` [B, N, 4] rows of (x1, y1, x2, y2) with ``scores`` [B, C, N]. A box with x2 < x1
    or y2 < y1 has area 0; boxes that do not meet have IoU 0; unless normalized, sides are one
    longer. Outputs as MulticlassNms's: rows (class, decayed score, x1, y1, x2, y2) [S, 6],
    box indices b·N + n i64 [S, 1], rows per batch i64 [B]."""
    choice(ctx, "sort_result", MULTICLASS_NMS_SORTS)
    choice(ctx, "decay_function", MATRIX_NMS_DECAYS)
    for key in ("sort_across_batch", "normalized"):
        if ctx.attr(key) not in (0, 1):
            raise ctx.error(f"{key} must be 0 or 1, got {ctx.attr(key)}")
    boxes = expect(ctx, 0, "float", rank=3)
    ctx.same_dtype(0, 1)
    scores = expect(ctx, 1, "float", rank=3)
    if boxes.shape is not None and isinstance(boxes.shape[2], int) and boxes.shape[2] != 4:
        raise ctx.error(f"boxes must be [batches, boxes, 4], got {boxes}")
    if boxes.shape is not None and scores.shape is not None:
        for i, j in ((0, 0), (1, 2)):
            a, b = boxes.shape[i], scores.shape[j]
            if isinstance(a, int) and isinstance(b, int) and a != b:
                raise ctx.error(f"boxes {boxes} and scores {scores} disagree")
    batches = boxes.shape[0] if boxes.shape is not None else UNKNOWN
    return [
        boxes.with_shape([UNKNOWN, 6]),
        TensorType(DType.int64, [UNKNOWN, 1]),
        TensorType(DType.int64, [batches]),
    ]


@op(
    "NmsRotated",
    inputs=5,
    attrs={"sort_by_score": AttrSpec(int, 1), "clockwise": AttrSpec(int, 1)},
)
def _nms_rotated(ctx: InferContext) -> list[Type]:
    """Greedy NMS of rotated boxes (OpenVINO's NMSRotated), per batch and class::

        for batch, cls:                        # none at all if max_output_boxes_per_class <= 0
            live = boxes whose score > score_threshold, by score then index
            while live and fewer than max_output_boxes_per_class kept:
                b = the first of live; keep b
                drop from live every box whose rotated IoU with b > iou_threshold
        rows (batch, class, box) in that order, or by descending score (then batch, class,
        box) with sort_by_score=1

    ``boxes`` [B, N, 5] are (x_center, y_center, width, height, angle in radians), turned
    clockwise (clockwise=1: corner offset (dx, dy) goes to (dx·cos - dy·sin, dx·sin +
    dy·cos)) or counterclockwise (the angle negated); ``scores`` [B, C, N]; the other inputs
    are one-element tensors. The rotated IoU is the area of the two boxes' intersection
    polygon over the sum of their areas (width·height) less it; 0 if either area is 0.
    Outputs as NonMaxSuppression's: indices i64 [S, 3], (batch, class, score) [S, 3] in the
    scores' type, the count i64 [1]."""
    boxes = expect(ctx, 0, "float", rank=3)
    scores = expect(ctx, 1, "float", rank=3)
    expect(ctx, 2, "int")
    for i in (3, 4):
        expect(ctx, i, "float")
    for key in ("sort_by_score", "clockwise"):
        if ctx.attr(key) not in (0, 1):
            raise ctx.error(f"{key} must be 0 or 1, got {ctx.attr(key)}")
    if boxes.shape is not None and isinstance(boxes.shape[2], int) and boxes.shape[2] != 5:
        raise ctx.error(f"boxes must be [batches, boxes, 5], got {boxes}")
    return [
        TensorType(DType.int64, [UNKNOWN, 3]),
        scores.with_shape([UNKNOWN, 3]),
        TensorType(DType.int64, [1]),
    ]
