"""OpenVINO detection layers read as core ops: priors, YOLO regions, RoI pooling, proposals.

One converter per layer type, at every opset version OpenVINO's converters write.

Read: PriorBox (v1, v8) and PriorBoxClustered (v1) as constants computed at conversion time
(their outputs depend only on the two shape inputs, which must then be constant), ReorgYolo and
RegionYolo (reshape / transpose / sigmoid / softmax compositions), ROIAlign (v3, v9: avg mode,
every aligned mode) as RoiAlign, ROIPooling's max method as MaxRoiPool, PSROIPooling (average and
bilinear) as PsRoiPool, DeformablePSROIPooling (bilinear_deformable, with or without offsets) as
DeformablePsRoiPool, ROIAlignRotated as RoiAlignRotated, Proposal (v1, v4) as Proposal,
DetectionOutput (v1, v8; 3 or 5 inputs) as DetectionOutput, GenerateProposals (v9) as
GenerateProposals.

Refused because the core ops cannot express them exactly: ROIAlign's max mode (OpenVINO takes
the largest bilinear sample, RoiAlign the largest weighted corner) and ROIPooling's bilinear
method. The NMS layers are read in read_nms.py."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...ir.graph import Value
from ...tensor.dtypes import DType
from .convert import LayerContext, converter
from .inputs import cast_to, reshape, static_dims, type_of

__all__: list[str] = []

_F = np.float32


def _floats_attr(ctx: LayerContext, key: str, default: str = "") -> list[float]:
    text = ctx.attr(key, default).strip()
    if not text:
        return []
    try:
        return [float(v) for v in text.split(",")]
    except ValueError:
        raise ctx.error(f"attribute '{key}' is {text!r}, expected numbers") from None


def _shape_pair(ctx: LayerContext, index: int, what: str) -> tuple[int, int]:
    data = ctx.const(index)
    if data is None:
        raise ctx.error(f"input #{index} ({what}) must be a constant to compute the priors")
    if data.dtype.kind not in "iu" or data.size != 2:
        raise ctx.error(f"input #{index} ({what}) must hold 2 integers, got {data!r}")
    height, width = (int(v) for v in data.reshape(-1))
    if height <= 0 or width <= 0:
        raise ctx.error(f"input #{index} ({what}) must be positive, got {[height, width]}")
    return height, width


def _variances(ctx: LayerContext, key: str) -> list[np.float32]:
    values = [_F(v) for v in _floats_attr(ctx, key)]
    if len(values) not in (0, 1, 4):
        raise ctx.error(f"attribute '{key}' must hold 0, 1 or 4 values, got {len(values)}")
    return values or [_F(0.1)]


def _priors_output(boxes: list[np.float32], variance: list[np.float32]) -> np.ndarray[Any, Any]:
    """OpenVINO's [2, 4 * priors] layout: the boxes, then each box's variances."""
    first = np.asarray(boxes, _F)
    second = np.resize(np.asarray(variance, _F), first.shape) if len(variance) == 4 else None
    if second is None:
        second = np.full(first.shape, variance[0], _F)
    return np.stack([first, second])


def _prior_count(ratios: list[float], flip: bool, attrs: dict[str, Any]) -> int:
    """OpenVINO's PriorBox::number_of_priors (the size it gives the output)."""
    unique = {1.0}
    for r in ratios:
        unique.add(round(r * 1e6) / 1e6)
        if flip:
            unique.add(round(1 / r * 1e6) / 1e6)
    total = len(unique)
    if attrs["scale_all_sizes"]:
        count = total * len(attrs["min_size"]) + len(attrs["max_size"])
    else:
        count = total + len(attrs["min_size"]) - 1
    if attrs["fixed_size"]:
        count = total * len(attrs["fixed_size"])
    for density in attrs["density"]:
        d2 = int(density) * int(density) - 1
        count += (len(attrs["fixed_ratio"]) if attrs["fixed_ratio"] else total) * d2
    return count


@converter("PriorBox")
def _prior_box(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    version = ctx.layer.version or "opset1"
    if version not in ("opset1", "opset8"):
        raise ctx.error(f"PriorBox version {version!r} is not supported")
    height, width = _shape_pair(ctx, 0, "output_size")
    img_h, img_w = _shape_pair(ctx, 1, "image_size")
    attrs: dict[str, Any] = {
        "min_size": _floats_attr(ctx, "min_size"),
        "max_size": _floats_attr(ctx, "max_size"),
        "fixed_size": _floats_attr(ctx, "fixed_size"),
        "fixed_ratio": _floats_attr(ctx, "fixed_ratio"),
        "density": _floats_attr(ctx, "density"),
        "scale_all_sizes": ctx.bool_attr("scale_all_sizes", "true"),
    }
    ratios_given = _floats_attr(ctx, "aspect_ratio")
    flip, clip = ctx.bool_attr("flip", "false"), ctx.bool_attr("clip", "false")
    order = version == "opset8" and ctx.bool_attr("min_max_aspect_ratios_order", "true")
    if version == "opset1":
        order = True
    step, offset = _F(ctx.float_attr("step", 0.0)), _F(ctx.float_attr("offset"))
    variance = _variances(ctx, "variance")
    if attrs["density"] and len(attrs["density"]) != len(attrs["fixed_size"]):
        raise ctx.error("attributes 'density' and 'fixed_size' must have the same length")

    ratios = [_F(1.0)]
    for r in ratios_given:
        if not any(abs(_F(r) - e) < 1e-6 for e in ratios):
            ratios.append(_F(r))
            if flip:
                ratios.append(_F(1.0) / _F(r))
    others = [r for r in ratios if abs(r - _F(1.0)) >= 1e-6]

    min_size = [_F(s) for s in attrs["min_size"]]
    if not attrs["scale_all_sizes"]:
        step = _F(img_h) / _F(height) if step == -1 else step * _F(img_h)
        min_size = [s * _F(img_h) for s in min_size]
    iwi, ihi = _F(1.0) / _F(img_w), _F(1.0) / _F(img_h)
    if step == 0:
        step_x, step_y = _F(img_w) / _F(width), _F(img_h) / _F(height)
    else:
        step_x = step_y = step
    boxes: list[np.float32] = []

    def emit(cx: Any, cy: Any, bw: Any, bh: Any, clip_box: bool) -> None:
        vals = [(cx - bw) * iwi, (cy - bh) * ihi, (cx + bw) * iwi, (cy + bh) * ihi]
        if clip_box:
            vals = [
                max(vals[0], _F(0)),
                max(vals[1], _F(0)),
                min(vals[2], _F(1)),
                min(vals[3], _F(1)),
            ]
        boxes.extend(_F(v) for v in vals)

    def dense(cx: Any, cy: Any, s: int, bw: Any, bh: Any) -> None:
        fixed = attrs["fixed_size"][s]
        size_int = int(fixed)
        density = int(attrs["density"][s])
        shift = int(fixed / density)
        for r in range(density):
            for c in range(density):
                x = cx - _F(size_int // 2) + _F(shift) / _F(2) + _F(c * shift)
                y = cy - _F(size_int // 2) + _F(shift) / _F(2) + _F(r * shift)
                emit(_F(x), _F(y), bw, bh, True)

    for h in range(height):
        for w in range(width):
            if step == 0:
                cx, cy = (_F(w) + _F(0.5)) * step_x, (_F(h) + _F(0.5)) * step_y
            else:
                cx, cy = (offset + _F(w)) * step, (offset + _F(h)) * step
            for s, fixed in enumerate(attrs["fixed_size"]):
                half = _F(int(fixed)) * _F(0.5)
                if attrs["fixed_ratio"]:
                    for ar in attrs["fixed_ratio"]:
                        root = np.sqrt(_F(ar))
                        dense(cx, cy, s, _F(fixed) * _F(0.5) * root, _F(fixed) * _F(0.5) / root)
                    continue
                if attrs["density"]:
                    dense(cx, cy, s, half, half)
                for ar in others:
                    root = np.sqrt(ar)
                    dense(cx, cy, s, _F(fixed) * _F(0.5) * root, _F(fixed) * _F(0.5) / root)
            for i, size in enumerate(min_size):
                emit(cx, cy, size * _F(0.5), size * _F(0.5), False)
                with_ratios = attrs["scale_all_sizes"] or i == len(min_size) - 1
                base = min_size[i if attrs["scale_all_sizes"] else 0]
                maxed: list[tuple[Any, Any]] = []
                if len(attrs["max_size"]) > i:
                    half = np.sqrt(size * _F(attrs["max_size"][i])) * _F(0.5)
                    maxed.append((half, half))
                ratioed: list[tuple[Any, Any]] = []
                if with_ratios:
                    for ar in others:
                        root = np.sqrt(ar)
                        ratioed.append((base * _F(0.5) * root, base * _F(0.5) / root))
                for bw, bh in maxed + ratioed if order else ratioed + maxed:
                    emit(cx, cy, bw, bh, False)
    expected = height * width * _prior_count(ratios_given, flip, attrs) * 4
    if len(boxes) != expected:
        raise ctx.error(
            f"these attributes give {len(boxes) // 4} priors where OpenVINO sizes the output for "
            f"{expected // 4}: not supported"
        )
    out = _priors_output(boxes, variance)
    if clip:
        out[0] = np.clip(out[0], 0, 1)
    return [ctx.em.const(out)]


@converter("PriorBoxClustered")
def _prior_box_clustered(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    height, width = _shape_pair(ctx, 0, "output_size")
    img_h, img_w = _shape_pair(ctx, 1, "image_size")
    widths, heights = _floats_attr(ctx, "width"), _floats_attr(ctx, "height")
    if len(widths) != len(heights):
        raise ctx.error(f"attributes 'width' {widths} and 'height' {heights} must pair up")
    clip = ctx.bool_attr("clip", "true")
    step = _F(ctx.float_attr("step", 0.0))
    step_w = _F(ctx.float_attr("step_w", 0.0)) or step
    step_h = _F(ctx.float_attr("step_h", 0.0)) or step
    offset = _F(ctx.float_attr("offset"))
    variance = _variances(ctx, "variance")
    if step_w == 0 and step_h == 0:
        step_w, step_h = _F(img_w) / _F(width), _F(img_h) / _F(height)
    boxes: list[np.float32] = []
    for h in range(height):
        for w in range(width):
            cx, cy = (_F(w) + offset) * step_w, (_F(h) + offset) * step_h
            for bw, bh in zip(widths, heights, strict=True):
                hw, hh = _F(bw) / _F(2), _F(bh) / _F(2)
                vals = [
                    (cx - hw) / _F(img_w),
                    (cy - hh) / _F(img_h),
                    (cx + hw) / _F(img_w),
                    (cy + hh) / _F(img_h),
                ]
                if clip:
                    vals = [min(max(v, _F(0)), _F(1)) for v in vals]
                boxes.extend(_F(v) for v in vals)
    return [ctx.em.const(_priors_output(boxes, variance))]


@converter("ReorgYolo")
def _reorg_yolo(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    x = ctx.input(0)
    shape = static_dims(ctx, x, "ReorgYolo's input")
    strides = ctx.ints_attr("stride")
    if len(shape) != 4 or (len(strides) != 1 and len(set(strides)) != 1):
        raise ctx.error(f"expected a [N, C, H, W] input and one stride, got {shape}, {strides}")
    s = strides[0]
    n, c, h, w = shape
    if s < 1 or c % (s * s) or h % s or w % s or c < s * s:
        raise ctx.error(f"input {shape} does not divide by stride {s}")
    # OpenVINO reads the input as [N, C/s², H*s, W*s] and writes its blocks out as
    # [N, s, s, C/s², H, W].
    parts = reshape(ctx, x, [n, c // (s * s), h, s, w, s])
    moved = ctx.em.op("Transpose", [parts], {"perm": [0, 3, 5, 1, 2, 4]})
    return [reshape(ctx, moved, [n, c * s * s, h // s, w // s])]


@converter("RegionYolo")
def _region_yolo(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    x = ctx.input(0)
    t = type_of(ctx, x)
    shape = static_dims(ctx, x, "RegionYolo's input")
    if len(shape) != 4:
        raise ctx.error(f"expected a [N, C, H, W] input, got {t}")
    coords, classes = ctx.int_attr("coords"), ctx.int_attr("classes")
    regions = ctx.int_attr("num")
    softmax = ctx.bool_attr("do_softmax", "true")
    mask = ctx.ints_attr("mask", "")
    count = regions if softmax else len(mask)
    entry = coords + 1 + classes
    n, c, h, w = shape
    if coords < 2 or classes < 0 or count * entry != c:
        raise ctx.error(
            f"input channels {c} must be regions {count} x (coords {coords} + 1 + classes "
            f"{classes}), with at least 2 coords"
        )
    parts = reshape(ctx, x, [n, count, entry, h, w])
    xy, wh, conf, cls = ctx.em.ops(
        "Split", [parts, ctx.em.ints([2, coords - 2, 1, classes])], {"axis": 2}
    )
    cls = ctx.em.op("Softmax", [cls], {"axis": 2}) if softmax else ctx.em.op("Sigmoid", [cls])
    pieces = [ctx.em.op("Sigmoid", [xy]), wh, ctx.em.op("Sigmoid", [conf]), cls]
    joined = ctx.em.op("Concat", pieces, {"axis": 2})
    if not softmax:
        return [reshape(ctx, joined, shape)]
    axis, end = ctx.int_attr("axis", 1), ctx.int_attr("end_axis", 3)
    axis, end = axis % 4, end % 4
    if axis > end:
        raise ctx.error(f"axis {axis} must not come after end_axis {end}")
    out = [*shape[:axis], math.prod(shape[axis : end + 1]), *shape[end + 1 :]]
    return [reshape(ctx, joined, out)]


_ALIGNED_MODES = ("asymmetric", "half_pixel_for_nn", "half_pixel")


@converter("ROIAlign")
def _roi_align(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    version = ctx.layer.version or "opset3"
    if version not in ("opset3", "opset9"):
        raise ctx.error(f"ROIAlign version {version!r} is not supported")
    x, rois, indices = ctx.input(0), ctx.input(1), ctx.input(2)
    mode = ctx.choice_attr("mode", ("avg", "max"))
    if mode == "max":
        # OpenVINO takes the largest bilinear sample; the core op the largest weighted corner.
        raise ctx.error("ROIAlign's max mode has no core op: not supported")
    aligned = "asymmetric"
    if version == "opset9":
        aligned = ctx.choice_attr("aligned_mode", _ALIGNED_MODES, "asymmetric")
    scale = ctx.float_attr("spatial_scale")
    if aligned == "half_pixel":
        # OpenVINO shifts by half a source pixel before scaling: (x + 0.5) * scale - 0.5.
        dt = type_of(ctx, rois).dtype
        rois = ctx.em.op("Add", [rois, ctx.em.const(np.array(0.5, dt.numpy))])
    ph, pw, ratio = (
        ctx.int_attr("pooled_h"),
        ctx.int_attr("pooled_w"),
        ctx.int_attr("sampling_ratio"),
    )
    attrs = {
        "coordinate_transformation_mode": (
            "output_half_pixel" if aligned == "asymmetric" else "half_pixel"
        ),
        "mode": mode,
        "output_height": ph,
        "output_width": pw,
        "sampling_ratio": ratio,
        "spatial_scale": scale,
    }
    out = ctx.em.op("RoiAlign", [x, rois, indices], attrs)
    if aligned == "asymmetric" or ratio > 0:
        return [out]
    # Adaptive sampling takes ceil(bin size) samples a bin: none for an empty RoI, whose bins
    # OpenVINO then averages to 0 / 0 = NaN.
    em, dt = ctx.em, type_of(ctx, rois).dtype
    scaled = em.op(
        "Sub",
        [
            em.op("Mul", [rois, em.const(np.array(scale, dt.numpy))]),
            em.const(np.array(0.5, dt.numpy)),
        ],
    )
    low, high = em.ops("Split", [scaled, em.ints([2, 2])], {"axis": 1})
    pooled = em.const(np.array([pw, ph], dt.numpy))
    bins = em.op("Ceil", [em.op("Div", [em.op("Sub", [high, low]), pooled])])
    empty = em.op("Equal", [bins, em.const(np.zeros((), dt.numpy))])
    none = em.op("ReduceMax", [em.op("Cast", [empty], {"to": DType.int32}), em.ints([1])])
    none = em.op("Reshape", [em.op("Cast", [none], {"to": DType.bool}), em.ints([-1, 1, 1, 1])])
    return [em.op("Where", [none, em.const(np.array(np.nan, dt.numpy)), out])]


@converter("ROIPooling")
def _roi_pooling(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    method = ctx.choice_attr("method", ("max", "bilinear"), "max")
    if method != "max":
        raise ctx.error("ROIPooling's bilinear method has no core op: not supported")
    if ctx.has_attr("output_size"):
        pooled = ctx.ints_attr("output_size")
    else:
        pooled = [ctx.int_attr("pooled_h"), ctx.int_attr("pooled_w")]
    attrs = {"pooled_shape": pooled, "spatial_scale": ctx.float_attr("spatial_scale")}
    return [ctx.em.op("MaxRoiPool", [ctx.input(0), ctx.input(1)], attrs)]


@converter("PSROIPooling")
def _ps_roi_pooling(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    attrs = {
        "mode": ctx.choice_attr("mode", ("average", "bilinear")),
        "output_dim": ctx.int_attr("output_dim"),
        "group_size": ctx.int_attr("group_size", 1),
        "spatial_scale": ctx.float_attr("spatial_scale"),
        "spatial_bins_x": ctx.int_attr("spatial_bins_x", 1),
        "spatial_bins_y": ctx.int_attr("spatial_bins_y", 1),
    }
    return [ctx.em.op("PsRoiPool", [ctx.input(0), ctx.input(1)], attrs)]


@converter("DeformablePSROIPooling")
def _deformable_ps_roi_pooling(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    mode = ctx.attr("mode", "bilinear_deformable").strip().lower()
    if mode != "bilinear_deformable":
        # The CPU plugin runs only this mode; the spec leaves the others undefined.
        raise ctx.error(f"DeformablePSROIPooling's mode {mode!r} is not supported")
    attrs = {
        "output_dim": ctx.int_attr("output_dim"),
        "group_size": ctx.int_attr("group_size", 1),
        "spatial_scale": ctx.float_attr("spatial_scale"),
        "spatial_bins_x": ctx.int_attr("spatial_bins_x", 1),
        "spatial_bins_y": ctx.int_attr("spatial_bins_y", 1),
        "trans_std": ctx.float_attr("trans_std", 1.0),
        "part_size": ctx.int_attr("part_size", 1),
    }
    given = [ctx.input(0), ctx.input(1)]
    if len(inputs) > 2 and inputs[2] is not None:
        given.append(ctx.input(2))
    return [ctx.em.op("DeformablePsRoiPool", given, attrs)]


@converter("ROIAlignRotated")
def _roi_align_rotated(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    attrs = {
        "output_height": ctx.int_attr("pooled_h"),
        "output_width": ctx.int_attr("pooled_w"),
        "sampling_ratio": ctx.int_attr("sampling_ratio"),
        "spatial_scale": ctx.float_attr("spatial_scale"),
        "clockwise": int(ctx.bool_attr("clockwise_mode", "false")),
    }
    return [ctx.em.op("RoiAlignRotated", [ctx.input(0), ctx.input(1), ctx.input(2)], attrs)]


@converter("Proposal")
def _proposal(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    version = ctx.layer.version or "opset1"
    if version not in ("opset1", "opset4"):
        raise ctx.error(f"Proposal version {version!r} is not supported")
    framework = ctx.attr("framework", "").strip().lower()
    if framework not in ("", "tensorflow"):
        raise ctx.error(f"Proposal's framework {framework!r} is not supported")
    attrs: dict[str, Any] = {
        key: ctx.int_attr(key)
        for key in ("base_size", "pre_nms_topn", "post_nms_topn", "feat_stride", "min_size")
    }
    attrs |= {
        "nms_thresh": ctx.float_attr("nms_thresh"),
        "ratio": _floats_attr(ctx, "ratio"),
        "scale": _floats_attr(ctx, "scale"),
        "clip_before_nms": int(ctx.bool_attr("clip_before_nms", "true")),
        "clip_after_nms": int(ctx.bool_attr("clip_after_nms", "false")),
        "normalize": int(ctx.bool_attr("normalize", "false")),
        "box_size_scale": ctx.float_attr("box_size_scale", 1.0),
        "box_coordinate_scale": ctx.float_attr("box_coordinate_scale", 1.0),
        "framework": framework,
    }
    rois, probs = ctx.em.ops("Proposal", [ctx.input(0), ctx.input(1), ctx.input(2)], attrs)
    return [rois] if version == "opset1" else [rois, probs]


_CODE_TYPES = {
    "caffe.priorboxparameter.corner": "corner",
    "caffe.priorboxparameter.center_size": "center_size",
}


@converter("DetectionOutput")
def _detection_output(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    version = ctx.layer.version or "opset1"
    if version not in ("opset1", "opset8"):
        raise ctx.error(f"DetectionOutput version {version!r} is not supported")
    if len(inputs) not in (3, 5):
        raise ctx.error(f"DetectionOutput takes 3 or 5 inputs, got {len(inputs)}")
    code = ctx.attr("code_type", "caffe.PriorBoxParameter.CORNER").strip().lower()
    if code not in _CODE_TYPES:
        raise ctx.error(f"DetectionOutput's code_type {code!r} is not supported")
    keep = ctx.ints_attr("keep_top_k")
    if not keep:
        raise ctx.error("attribute 'keep_top_k' must hold at least one value")
    flags = (
        ("variance_encoded_in_target", "false"),
        ("share_location", "true"),
        ("clip_after_nms", "false"),
        ("clip_before_nms", "false"),
        ("decrease_label_id", "false"),
        ("normalized", "false"),
    )
    attrs: dict[str, Any] = {key: int(ctx.bool_attr(key, default)) for key, default in flags}
    attrs |= {
        "background_label_id": ctx.int_attr("background_label_id", 0),
        "top_k": ctx.int_attr("top_k", -1),
        "keep_top_k": keep[0],  # OpenVINO reads only the first
        "code_type": _CODE_TYPES[code],
        "nms_threshold": ctx.float_attr("nms_threshold"),
        "confidence_threshold": ctx.float_attr("confidence_threshold", 0.0),
        "input_height": ctx.int_attr("input_height", 1),
        "input_width": ctx.int_attr("input_width", 1),
        "objectness_score": ctx.float_attr("objectness_score", 0.0),
    }
    given = [ctx.input(i) for i in range(len(inputs))]
    if version == "opset1":
        _check_classes(ctx, given, ctx.int_attr("num_classes"), attrs["normalized"])
    return [ctx.em.op("DetectionOutput", given, attrs)]


def _check_classes(ctx: LayerContext, given: list[Value], classes: int, normalized: int) -> None:
    """DetectionOutput-1's num_classes must be what the class predictions hold a prior."""
    conf, priors = type_of(ctx, given[1]).shape, type_of(ctx, given[2]).shape
    if conf is None or priors is None or len(conf) != 2 or len(priors) != 3:
        return
    width, scores = priors[2], conf[1]
    if isinstance(width, int) and isinstance(scores, int):
        count = width // (4 if normalized else 5)
        if count and scores != count * classes:
            raise ctx.error(
                f"num_classes {classes} does not fit {scores} class predictions of {count} priors"
            )


@converter("GenerateProposals")
def _generate_proposals(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    version = ctx.layer.version or "opset9"
    if version != "opset9":
        raise ctx.error(f"GenerateProposals version {version!r} is not supported")
    index_type = ctx.choice_attr("roi_num_type", ("i32", "i64"), "i64")
    attrs = {
        "min_size": ctx.float_attr("min_size"),
        "nms_threshold": ctx.float_attr("nms_threshold"),
        "pre_nms_count": ctx.int_attr("pre_nms_count"),
        "post_nms_count": ctx.int_attr("post_nms_count"),
        "normalized": int(ctx.bool_attr("normalized", "true")),
        "nms_eta": ctx.float_attr("nms_eta", 1.0),
    }
    rois, scores, counts = ctx.em.ops("GenerateProposals", [ctx.input(i) for i in range(4)], attrs)
    dtype = DType.int32 if index_type == "i32" else DType.int64
    return [rois, scores, cast_to(ctx, counts, dtype)]
