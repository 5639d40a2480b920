"""OpenVINO detection layers read as core ops: priors, YOLO regions, RoI pooling, proposals.

One converter per layer type, at every opset version OpenVINO's converters write.

Read: PriorBox (v1, v8) and PriorBoxClustered (v1) as the core ops of those names, whose
output_size and image_size inputs may be computed at run time (a feature map's ShapeOf),
ReorgYolo and RegionYolo (reshape / transpose / sigmoid / softmax compositions), ROIAlign (v3,
v9: both modes, every aligned mode) as RoiAlign, ROIPooling's max method as MaxRoiPool and its
bilinear method as BilinearRoiPool, PSROIPooling (average and
bilinear) as PsRoiPool, DeformablePSROIPooling (bilinear_deformable, with or without offsets) as
DeformablePsRoiPool, ROIAlignRotated as RoiAlignRotated, Proposal (v1, v4) as Proposal,
DetectionOutput (v1, v8; 3 or 5 inputs) as DetectionOutput, GenerateProposals (v9) as
GenerateProposals.

ROIAlign's max mode is RoiAlign's with max_of="samples": the largest of 0 and the bilinear
samples, where ONNX's max takes the largest weighted corner. The NMS layers are read in
read_nms.py."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...ir.graph import Value
from ...ops.detection import prior_box_counts
from ...tensor.dtypes import DType
from .convert import LayerContext, converter
from .inputs import cast_to, reshape, static_dims, type_of

__all__: list[str] = []


def _floats_attr(ctx: LayerContext, key: str, default: str = "") -> list[float]:
    text = ctx.attr(key, default).strip()
    if not text:
        return []
    try:
        return [float(v) for v in text.split(",")]
    except ValueError:
        raise ctx.error(f"attribute '{key}' is {text!r}, expected numbers") from None


def _variances(ctx: LayerContext, key: str) -> list[float]:
    values = _floats_attr(ctx, key)
    if len(values) not in (0, 1, 4):
        raise ctx.error(f"attribute '{key}' must hold 0, 1 or 4 values, got {len(values)}")
    return values


def _sizes(ctx: LayerContext) -> list[Value]:
    """The output_size and image_size inputs, constant or computed."""
    sizes = [ctx.input(0), ctx.input(1)]
    for index, (value, what) in enumerate(zip(sizes, ("output_size", "image_size"), strict=True)):
        t = type_of(ctx, value)
        if not (t.dtype.is_int and t.rank == 1):
            raise ctx.error(f"input #{index} ({what}) must be 1-D integers, got {t}")
    return sizes


@converter("PriorBox")
def _prior_box(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    version = ctx.layer.version or "opset1"
    if version not in ("opset1", "opset8"):
        raise ctx.error(f"PriorBox version {version!r} is not supported")
    order = version == "opset1" or ctx.bool_attr("min_max_aspect_ratios_order", "true")
    attrs: dict[str, Any] = {
        key: _floats_attr(ctx, key)
        for key in ("min_size", "max_size", "aspect_ratio", "fixed_size", "fixed_ratio", "density")
    }
    attrs |= {
        "flip": int(ctx.bool_attr("flip", "false")),
        "clip": int(ctx.bool_attr("clip", "false")),
        "step": ctx.float_attr("step", 0.0),
        "offset": ctx.float_attr("offset"),
        "variance": _variances(ctx, "variance"),
        "scale_all_sizes": int(ctx.bool_attr("scale_all_sizes", "true")),
        "min_max_aspect_ratios_order": int(order),
    }
    if attrs["density"] and len(attrs["density"]) != len(attrs["fixed_size"]):
        raise ctx.error("attributes 'density' and 'fixed_size' must have the same length")
    given, declared = prior_box_counts(attrs)
    if given != declared:
        raise ctx.error(
            f"these attributes give {given} priors a cell where OpenVINO sizes the output for "
            f"{declared}: not supported"
        )
    return [ctx.em.op("PriorBox", _sizes(ctx), attrs)]


@converter("PriorBoxClustered")
def _prior_box_clustered(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    widths, heights = _floats_attr(ctx, "width"), _floats_attr(ctx, "height")
    if len(widths) != len(heights):
        raise ctx.error(f"attributes 'width' {widths} and 'height' {heights} must pair up")
    step = ctx.float_attr("step", 0.0)
    attrs = {
        "width": widths,
        "height": heights,
        "clip": int(ctx.bool_attr("clip", "true")),
        "step_w": ctx.float_attr("step_w", 0.0) or step,
        "step_h": ctx.float_attr("step_h", 0.0) or step,
        "offset": ctx.float_attr("offset"),
        "variance": _variances(ctx, "variance"),
    }
    return [ctx.em.op("PriorBoxClustered", _sizes(ctx), attrs)]


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
        "max_of": "samples" if mode == "max" else "corners",
        "output_height": ph,
        "output_width": pw,
        "sampling_ratio": ratio,
        "spatial_scale": scale,
    }
    out = ctx.em.op("RoiAlign", [x, rois, indices], attrs)
    if aligned == "asymmetric" or ratio > 0 or mode == "max":
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
    if ctx.has_attr("output_size"):
        pooled = ctx.ints_attr("output_size")
    else:
        pooled = [ctx.int_attr("pooled_h"), ctx.int_attr("pooled_w")]
    if method == "bilinear":
        # The RoIs are in units of the image size: spatial_scale plays no part.
        given = [ctx.input(0), ctx.input(1)]
        return [ctx.em.op("BilinearRoiPool", given, {"pooled_shape": pooled})]
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
