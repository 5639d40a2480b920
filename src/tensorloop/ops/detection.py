"""Detection ops: position-sensitive RoI pooling (plain and deformable) and rotated RoI align.

Each is an op of its own: their bins cover data-dependent cell ranges or take data-dependent
sample counts, and read a different channel per bin, which no fixed composition of Gather,
RoiAlign or GridSample reproduces."""

from __future__ import annotations

from ..ir.opdef import AttrSpec, InferContext, op
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
