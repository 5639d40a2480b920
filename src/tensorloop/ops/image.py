"""Image and detection ops: Resize, GridSample, AffineGrid, Col2Im, RoiAlign, MaxRoiPool, NMS."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..ir.opdef import AttrSpec, InferContext, op
from ..tensor.dtypes import DType
from ..tensor.types import UNKNOWN, Dim, TensorType, Type
from .common import expect, normalize_axes, reported, static_length
from .indexing import choice

RESIZE_MODES = ("nearest", "linear", "cubic")
# tf_half_pixel_for_nn left ONNX in opset 13; it is kept so that opset 11 models still import.
COORDINATE_MODES = (
    "half_pixel",
    "half_pixel_symmetric",
    "pytorch_half_pixel",
    "align_corners",
    "asymmetric",
    "tf_crop_and_resize",
    "tf_half_pixel_for_nn",
)
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
ASPECT_POLICIES = ("stretch", "not_larger", "not_smaller")
GRID_MODES = ("linear", "nearest", "cubic")
GRID_PADDINGS = ("zeros", "border", "reflection")
ROI_MODES = ("avg", "max")
ROI_MAX_OF = ("corners", "samples")
ROI_COORDINATE_MODES = ("half_pixel", "output_half_pixel")
NMS_PRECISIONS = ("f64", "f32")


def _not_string(ctx: InferContext, verb: str) -> TensorType:
    """Input #0, which the op does arithmetic on, so it must not hold strings."""
    t = ctx.tensor(0)
    if t.dtype is DType.string:
        raise ctx.error(f"input #0: cannot {verb} a string tensor {t}")
    return t


def resize_plan(
    dims: Sequence[int],
    axes: Sequence[int],
    scales: Sequence[float] | None,
    sizes: Sequence[int] | None,
    policy: str,
) -> tuple[list[int], list[float]]:
    """Resize's output dims and the scale of every axis (1 off ``axes``), from one of ``scales``
    (floor(dim · scale), in f32 as ONNX Runtime computes it) or ``sizes`` (as given, or scaled
    uniformly to fit inside / cover them under keep_aspect_ratio_policy not_larger / not_smaller).
    ValueError if the lists do not fit ``axes``."""
    out, factors = list(dims), [1.0] * len(dims)
    given = scales if sizes is None else sizes
    if given is None or len(given) != len(axes):
        raise ValueError(
            f"{'scales' if sizes is None else 'sizes'} {list(given or [])} must hold "
            f"one value per axis of {list(axes)}"
        )
    if sizes is None:
        assert scales is not None
        for a, s in zip(axes, scales, strict=True):
            if not s > 0:
                raise ValueError(f"scales {list(scales)} must be positive")
            out[a] = math.floor(np.float32(s) * np.float32(dims[a]))
            factors[a] = float(np.float32(s))
        return out, factors
    if any(s < 0 for s in sizes):
        raise ValueError(f"sizes {list(sizes)} hold a negative size")
    if any(dims[a] == 0 and s for a, s in zip(axes, sizes, strict=True)):
        raise ValueError(f"cannot resize an empty axis of {list(dims)} to sizes {list(sizes)}")
    ratios = [s / dims[a] if dims[a] else 1.0 for a, s in zip(axes, sizes, strict=True)]
    if policy == "stretch":
        for a, s, r in zip(axes, sizes, ratios, strict=True):
            out[a], factors[a] = s, r
        return out, factors
    scale = min(ratios) if policy == "not_larger" else max(ratios)
    for a in axes:
        out[a], factors[a] = math.floor(scale * dims[a] + 0.5), scale
    return out, factors


@op(
    "Resize",
    inputs=(1, 4),
    attrs={
        "mode": AttrSpec(str, "nearest"),
        "coordinate_transformation_mode": AttrSpec(str, "half_pixel"),
        "nearest_mode": AttrSpec(str, "round_prefer_floor"),
        "cubic_coeff_a": AttrSpec(float, -0.75),
        "exclude_outside": AttrSpec(int, 0),
        "extrapolation_value": AttrSpec(float, 0.0),
        "antialias": AttrSpec(int, 0),
        "axes": AttrSpec((tuple, list), None),
        "keep_aspect_ratio_policy": AttrSpec(str, "stretch"),
    },
)
def _resize(ctx: InferContext) -> list[Type]:
    """``X`` resampled along ``axes`` (default all) to the dims set by exactly one of ``scales``
    and ``sizes`` (an empty tensor counts as absent). Output cell x of an axis reads input
    coordinate f(x) per coordinate_transformation_mode (``roi`` = [starts, ends] serves
    tf_crop_and_resize, whose out-of-range cells get extrapolation_value), then mode: nearest
    (rounded per nearest_mode), linear or cubic (cubic_coeff_a; exclude_outside drops and
    renormalizes taps off the input); antialias widens the linear / cubic filter by 1 / scale
    when shrinking. As in ONNX's node tests, align_corners and tf_crop_and_resize measure the
    output length as dim * scale, fractional when a scale does not divide evenly."""
    for key, allowed in (
        ("mode", RESIZE_MODES),
        ("coordinate_transformation_mode", COORDINATE_MODES),
        ("nearest_mode", NEAREST_MODES),
        ("keep_aspect_ratio_policy", ASPECT_POLICIES),
    ):
        choice(ctx, key, allowed)
    t = ctx.tensor(0) if ctx.attr("mode") == "nearest" else _not_string(ctx, "interpolate")
    if ctx.has(1):
        expect(ctx, 1, "float", rank=1)
    lengths = [
        static_length(expect(ctx, i, kind, rank=1)) if ctx.has(i) else 0
        for i, kind in ((2, "float"), (3, "int"))
    ]
    if lengths[0] and lengths[1]:
        raise ctx.error("give only one of scales and sizes")
    if lengths == [0, 0]:
        raise ctx.error("give one of scales and sizes")
    if t.shape is None:
        return [t]
    rank, axes = len(t.shape), ctx.attr("axes")
    with reported(ctx):
        listed = normalize_axes(range(rank) if axes is None else axes, rank)
    unknown = [UNKNOWN if i in listed else d for i, d in enumerate(t.shape)]
    use_sizes = lengths[1] != 0 and (lengths[0] == 0 or lengths[1] is None)
    values = ctx.const(3 if use_sizes else 2)
    if None in lengths or values is None:
        return [t.with_shape(unknown)]
    policy, flat = ctx.attr("keep_aspect_ratio_policy"), values.reshape(-1).tolist()
    sizes = [int(v) for v in flat] if use_sizes else None
    exact = use_sizes and policy == "stretch"  # sizes as given: no input dim is needed
    if use_sizes and not exact and not all(isinstance(t.shape[a], int) for a in listed):
        return [t.with_shape(unknown)]
    with reported(ctx):
        out, factors = resize_plan(
            [d if isinstance(d, int) else 1 for d in t.shape],
            listed,
            None if use_sizes else flat,
            sizes,
            policy,
        )

    def dim(i: int, d: Dim) -> Dim:
        if i not in listed:
            return d
        if isinstance(d, int) or exact:
            return out[i]
        return d if not use_sizes and factors[i] == 1 else UNKNOWN  # only a scale of 1 keeps it

    return [t.with_shape(dim(i, d) for i, d in enumerate(t.shape))]


@op(
    "GridSample",
    inputs=2,
    attrs={
        "mode": AttrSpec(str, "linear"),
        "padding_mode": AttrSpec(str, "zeros"),
        "align_corners": AttrSpec(int, 0),
    },
)
def _grid_sample(ctx: InferContext) -> list[Type]:
    """``X`` [N, C, D1..Dr] sampled at the normalized positions of ``grid`` [N, O1..Or, r]
    (coordinates listed innermost axis first, -1 and 1 the corner pixels' centres with
    align_corners=1, else their outer edges) by nearest (ties to even), linear or cubic
    interpolation; positions off the input read zeros, the border, or the reflection."""
    choice(ctx, "mode", GRID_MODES)
    choice(ctx, "padding_mode", GRID_PADDINGS)
    x, grid = _not_string(ctx, "interpolate"), expect(ctx, 1, "float")
    if x.shape is None or grid.shape is None:
        rank = x.rank if x.rank is not None else grid.rank
        return [x.with_shape(None if rank is None else [UNKNOWN] * rank)]
    r = len(x.shape) - 2
    last = grid.shape[-1] if grid.shape else r
    if r < 1 or len(grid.shape) != r + 2 or (isinstance(last, int) and last != r):
        raise ctx.error(f"X {x} [N, C, D1..Dr] and grid {grid} [N, O1..Or, r] do not agree")
    n = x.shape[0] if isinstance(x.shape[0], int) else grid.shape[0]
    return [x.with_shape([n, x.shape[1], *grid.shape[1:-1]])]


@op("AffineGrid", inputs=2, attrs={"align_corners": AttrSpec(int, 0)})
def _affine_grid(ctx: InferContext) -> list[Type]:
    """The sampling grid [N, (D,) H, W, r] for GridSample: each affine matrix of ``theta``
    [N, r, r + 1] applied to the evenly spaced normalized positions of an image of ``size``
    [N, C, (D,) H, W] (centres of the corner pixels at ±1 with align_corners=1, else edges)."""
    theta, spec = expect(ctx, 0, "float"), expect(ctx, 1, "int", rank=1)
    n, size = static_length(spec), ctx.const_ints(1)
    r: int | None = None
    if theta.shape is not None:
        if len(theta.shape) != 3:
            raise ctx.error(f"theta must be [N, 2, 3] or [N, 3, 4], got {theta}")
        r = theta.shape[1] if isinstance(theta.shape[1], int) else None
    if n is not None:
        if n not in (4, 5) or (r is not None and r != n - 2):
            raise ctx.error(f"size must hold [N, C, H, W] or [N, C, D, H, W] for theta {theta}")
        r = n - 2
    if r is None:
        return [theta.with_shape(None)]
    if size is not None:
        return [theta.with_shape([size[0], *size[2:], r])]
    batch = theta.shape[0] if theta.shape is not None else UNKNOWN
    return [theta.with_shape([batch, *[UNKNOWN] * r, r])]


@op(
    "Col2Im",
    inputs=3,
    attrs={
        "dilations": AttrSpec((tuple, list), None),
        "pads": AttrSpec((tuple, list), None),
        "strides": AttrSpec((tuple, list), None),
    },
)
def _col2im(ctx: InferContext) -> list[Type]:
    """The inverse of im2col, summing overlaps: ``input`` [N, C·prod(block_shape), L] holds one
    column of block values for each of the L sliding positions (strides, pads, dilations) over
    an image of ``image_shape``; the output is [N, C, *image_shape]."""
    t = _not_string(ctx, "sum")
    image, block = (expect(ctx, i, "int", rank=1) for i in (1, 2))
    r = static_length(image) or static_length(block)
    dims, kernel = ctx.const_ints(1), ctx.const_ints(2)
    if t.shape is not None and len(t.shape) != 3:
        raise ctx.error(f"input must be [N, C·prod(block_shape), L], got {t}")
    n, cols = (t.shape[0], t.shape[1]) if t.shape is not None else (UNKNOWN, UNKNOWN)
    channels: Dim = UNKNOWN
    if kernel is not None and isinstance(cols, int):
        k = math.prod(kernel)
        if k == 0 or cols % k:
            raise ctx.error(f"input {t}: dim 1 must be a multiple of prod(block_shape {kernel})")
        channels = cols // k
    if dims is not None:
        return [t.with_shape([n, channels, *dims])]
    return [t.with_shape(None if r is None else [n, channels, *[UNKNOWN] * r])]


@op(
    "NonMaxSuppression",
    inputs=(2, 6),
    attrs={
        "center_point_box": AttrSpec(int, 0),
        "precision": AttrSpec(str, "f64"),
        "sort_by_score": AttrSpec(int, 0),
        "soft_nms_iou_cutoff": AttrSpec(int, 0),
    },
)
def _nms(ctx: InferContext) -> list[Type]:
    """Per batch and class, greedy non-maximum suppression (ONNX's NonMaxSuppression with the
    defaults; OpenVINO's every version with the other attributes)::

        for batch, cls:                        # none at all if max_output_boxes_per_class <= 0
            live = boxes whose score > score_threshold (all if it is absent), by score then index
            while live and fewer than max_output_boxes_per_class kept:
                b = the first of live; keep b
                drop from live every box whose IoU with b > iou_threshold
        rows (batch, class, box) in that order, or by descending score (then batch, class,
        box) with sort_by_score=1

    Boxes are [y1, x1, y2, x2] corners, or [x_center, y_center, width, height] with
    center_point_box=1. IoU and scores are computed in ``precision`` (f64, or f32 as OpenVINO
    does). A soft_nms_sigma (input #5) above 0 turns on Soft-NMS: instead of being dropped, a
    box's score is multiplied by exp(-0.5 * iou² / sigma) for each box kept, live boxes are
    re-ranked by their decayed scores, and a box drops once its score is not above
    score_threshold; with soft_nms_iou_cutoff=1 a box whose IoU exceeds iou_threshold still
    drops (NonMaxSuppression-5). Outputs: selected indices i64 [selected, 3]; selected scores
    [selected, 3] of (batch, class, decayed score) in ``precision``; their count i64 [1]."""
    boxes = expect(ctx, 0, "float", rank=3)
    expect(ctx, 1, "float", rank=3)
    if ctx.has(2):
        expect(ctx, 2, "int")
    for i in (3, 4, 5):
        if ctx.has(i):
            expect(ctx, i, "float")
    for key in ("center_point_box", "sort_by_score", "soft_nms_iou_cutoff"):
        if ctx.attr(key) not in (0, 1):
            raise ctx.error(f"{key} must be 0 or 1, got {ctx.attr(key)}")
    precision = choice(ctx, "precision", NMS_PRECISIONS)
    if boxes.shape is not None and isinstance(boxes.shape[2], int) and boxes.shape[2] != 4:
        raise ctx.error(f"boxes must be [batches, boxes, 4], got {boxes}")
    score_type = DType.float32 if precision == "f32" else DType.float64
    return [
        TensorType(DType.int64, [UNKNOWN, 3]),
        TensorType(score_type, [UNKNOWN, 3]),
        TensorType(DType.int64, [1]),
    ]


def _roi_count(ctx: InferContext, rois: TensorType, *others: TensorType) -> Dim:
    dims = [t.shape[0] for t in (rois, *others) if t.shape is not None]
    statics = {d for d in dims if isinstance(d, int)}
    if len(statics) > 1:
        raise ctx.error(f"rois {rois} and batch_indices disagree on the number of RoIs")
    return statics.pop() if statics else dims[0] if dims else UNKNOWN


@op(
    "RoiAlign",
    inputs=3,
    attrs={
        "coordinate_transformation_mode": AttrSpec(str, "half_pixel"),
        "mode": AttrSpec(str, "avg"),
        "output_height": AttrSpec(int, 1),
        "output_width": AttrSpec(int, 1),
        "sampling_ratio": AttrSpec(int, 0),
        "spatial_scale": AttrSpec(float, 1.0),
        "max_of": AttrSpec(str, "corners"),
    },
)
def _roi_align(ctx: InferContext) -> list[Type]:
    """Each RoI [x1, y1, x2, y2] (times spatial_scale, shifted by -0.5 for half_pixel) of image
    batch_indices[i] of ``X`` [N, C, H, W] cut into output_height x output_width bins, each the
    average (or max) of sampling_ratio² (adaptive if 0) bilinear samples: [rois, C, oh, ow].
    The max mode's max_of: "corners" (ONNX's op, as ONNX Runtime and ONNX's reference compute
    it) takes the largest of the samples' four weighted corner terms, or 0 for a bin without
    samples; "samples" (OpenVINO's ROIAlign, which ONNX lacks) the largest of 0 and the
    samples' bilinear values."""
    mode = choice(ctx, "mode", ROI_MODES)
    choice(ctx, "coordinate_transformation_mode", ROI_COORDINATE_MODES)
    if choice(ctx, "max_of", ROI_MAX_OF) != "corners" and mode != "max":
        raise ctx.error(f"max_of {ctx.attr('max_of')!r} is for the max mode, not {mode!r}")
    x, rois = expect(ctx, 0, "float", rank=4), expect(ctx, 1, "float", rank=2)
    ctx.same_dtype(0, 1)
    indices = expect(ctx, 2, "int", rank=1)
    if rois.shape is not None and isinstance(rois.shape[1], int) and rois.shape[1] != 4:
        raise ctx.error(f"rois must be [num_rois, 4], got {rois}")
    oh, ow = ctx.attr("output_height"), ctx.attr("output_width")
    if oh < 1 or ow < 1:
        raise ctx.error(f"output_height {oh} and output_width {ow} must be at least 1")
    c = x.shape[1] if x.shape is not None else UNKNOWN
    return [x.with_shape([_roi_count(ctx, rois, indices), c, oh, ow])]


@op(
    "MaxRoiPool",
    inputs=2,
    attrs={"pooled_shape": AttrSpec((tuple, list)), "spatial_scale": AttrSpec(float, 1.0)},
)
def _max_roi_pool(ctx: InferContext) -> list[Type]:
    """Each RoI [batch, x1, y1, x2, y2] (times spatial_scale, rounded) of ``X`` [N, C, H, W]
    cut into pooled_shape = (ph, pw) bins, each the maximum of its cells (0 if empty):
    [rois, C, ph, pw]."""
    x, rois = expect(ctx, 0, "float", rank=4), expect(ctx, 1, "float", rank=2)
    ctx.same_dtype(0, 1)
    shape = list(ctx.attr("pooled_shape"))
    if len(shape) != 2 or min(shape) < 1:
        raise ctx.error(f"pooled_shape must be (height, width) >= 1, got {shape}")
    if rois.shape is not None and isinstance(rois.shape[1], int) and rois.shape[1] != 5:
        raise ctx.error(f"rois must be [num_rois, 5], got {rois}")
    c = x.shape[1] if x.shape is not None else UNKNOWN
    return [x.with_shape([_roi_count(ctx, rois), c, *shape])]
