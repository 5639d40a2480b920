"""OpenVINO's NMS layers read as core ops: NonMaxSuppression, MulticlassNms, MatrixNms, NMSRotated.

NonMaxSuppression reads as the core ``NonMaxSuppression`` op, at every opset version OpenVINO's
converters write (1, 3, 4, 5 and 9). Every version computes in f32 (``precision="f32"``), defaults
an absent score_threshold to 0 (boxes must score above it) and sorts its rows by score across
batches and classes unless ``sort_result_descending`` is false. Versions 1-4 give selected_indices
only, at the static size their shape rule gives (v1, v3: min(boxes, max_output_boxes_per_class *
classes) rows; v4: min(boxes, max_output_boxes_per_class) * batches * classes), which the selected
rows are cut or padded to with rows of -1. Version 5 adds Soft-NMS (``soft_nms_sigma``) with boxes
above the IoU threshold still dropped (``soft_nms_iou_cutoff=1``), version 9 Soft-NMS without that
cutoff; both add the selected scores and their count. Where the CPU plugin strays from the
specification (ties with the IoU threshold, v1-v4 sizes, v5's cutoff) this module follows the
specification; docs/openvino.md says how.

MulticlassNms (v8; v9 adds per-class boxes with roisnum) reads as the core ``MulticlassNms``.
Where the CPU plugin strays from its specification (boxes whose IoU equals the threshold,
nms_eta's adaptive threshold) the specification holds; docs/openvino.md says how.

MatrixNms (v8) reads as the core ``MatrixNms``, NMSRotated (v13) as the core ``NmsRotated``."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ir.graph import Value
from ...tensor.dtypes import DType
from .convert import LayerContext, converter
from .inputs import cast_to, has_input, scalar_const, type_of

__all__: list[str] = []

_INDEX_TYPES = {"i64": DType.int64, "i32": DType.int32}


def _version(ctx: LayerContext) -> int:
    digits = ctx.layer.version.removeprefix("opset")
    if not digits.isdigit() or int(digits) not in (1, 3, 4, 5, 9):
        raise ctx.error(f"NonMaxSuppression of version {ctx.layer.version!r} is not known")
    return int(digits)


def _padded_size(ctx: LayerContext, inputs: list[Value | None], version: int) -> int:
    """The static row count of selected_indices in versions 1-4: the IR's, else their rule's."""
    declared = ctx.layer.outputs[0].dims if ctx.layer.outputs else None
    if declared and isinstance(declared[0], int):
        return declared[0]
    boxes, scores = (type_of(ctx, ctx.input(i)).shape for i in (0, 1))
    limit = ctx.const(2) if has_input(inputs, 2) else np.zeros(1, np.int64)
    dims = [*(boxes or ()), *(scores or ())]
    if limit is None or len(dims) != 6 or not all(isinstance(d, int) for d in dims):
        raise ctx.error(
            "versions 1-4 pad selected_indices to a static size: boxes and scores need static "
            "shapes and max_output_boxes_per_class a constant"
        )
    batches, count, _, _, classes, _ = (int(d) for d in dims)
    most = max(int(np.asarray(limit).reshape(-1)[0]), 0)
    if version == 4:
        return min(count, most) * batches * classes
    return min(count, most * classes)


@converter("NonMaxSuppression")
def _non_max_suppression(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    version = _version(ctx)
    boxes, scores = ctx.input(0), ctx.input(1)
    for index, what in ((0, "boxes"), (1, "scores")):
        if not type_of(ctx, ctx.input(index)).dtype.is_float:
            raise ctx.error(f"input #{index} ({what}) must be floating-point")
    count = 6 if version >= 5 else 5
    if len(inputs) > count:
        raise ctx.error(f"NonMaxSuppression-{version} takes at most {count} inputs")
    limit = ctx.input(2) if has_input(inputs, 2) else ctx.em.ints(0)
    zero = scalar_const(ctx, 0.0, DType.float32)
    thresholds = [ctx.input(i) if has_input(inputs, i) else zero for i in (3, 4)]
    sigma = ctx.const(5) if has_input(inputs, 5) else np.zeros(1)
    if sigma is None or np.any(sigma != 0):  # a constant 0 is plain NMS: left out
        thresholds.append(ctx.input(5))
    encoding = ctx.choice_attr("box_encoding", ("corner", "center"), "corner")
    index_type = DType.int64
    if version >= 3:
        index_type = _INDEX_TYPES[ctx.choice_attr("output_type", tuple(_INDEX_TYPES), "i64")]
    attrs = {
        "center_point_box": int(encoding == "center"),
        "precision": "f32",
        "sort_by_score": int(ctx.bool_attr("sort_result_descending", True)),
        "soft_nms_iou_cutoff": int(version == 5),
    }
    selected, picked, valid = ctx.em.ops(
        "NonMaxSuppression", [boxes, scores, limit, *thresholds], attrs
    )
    if version >= 5:
        return [cast_to(ctx, selected, index_type), picked, cast_to(ctx, valid, index_type)]
    size = _padded_size(ctx, inputs, version)
    fill = ctx.em.const(np.full((size, 3), -1, np.int64))
    joined = ctx.em.op("Concat", [selected, fill], {"axis": 0})
    rows = ctx.em.op("Slice", [joined, ctx.em.ints([0]), ctx.em.ints([size]), ctx.em.ints([0])])
    return [cast_to(ctx, rows, index_type)]


_MULTICLASS_SORTS = {"classid": "class", "class": "class", "score": "score", "none": "none"}


def _selection_attrs(ctx: LayerContext) -> dict[str, Any]:
    """The attributes MulticlassNms and MatrixNms share."""
    sort = ctx.choice_attr("sort_result_type", tuple(_MULTICLASS_SORTS), "none")
    return {
        "sort_result": _MULTICLASS_SORTS[sort],
        "sort_across_batch": int(ctx.bool_attr("sort_result_across_batch", "false")),
        "score_threshold": ctx.float_attr("score_threshold", 0.0),
        "nms_top_k": ctx.int_attr("nms_top_k", -1),
        "keep_top_k": ctx.int_attr("keep_top_k", -1),
        "background_class": ctx.int_attr("background_class", -1),
        "normalized": int(ctx.bool_attr("normalized", "true")),
    }


def _selections(ctx: LayerContext, op: str, args: list[Value], attrs: Any) -> list[Value]:
    for index, what in ((0, "boxes"), (1, "scores")):
        if not type_of(ctx, args[index]).dtype.is_float:
            raise ctx.error(f"input #{index} ({what}) must be floating-point")
    index_type = _INDEX_TYPES[ctx.choice_attr("output_type", tuple(_INDEX_TYPES), "i64")]
    table, indices, counts = ctx.em.ops(op, args, attrs)
    return [table, cast_to(ctx, indices, index_type), cast_to(ctx, counts, index_type)]


@converter("MulticlassNms")
def _multiclass_nms(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    version = ctx.layer.version
    if version not in ("opset8", "opset9"):
        raise ctx.error(f"MulticlassNms of version {version!r} is not known")
    most = 3 if version == "opset9" else 2
    if len(inputs) > most or len(inputs) < 2:
        raise ctx.error(f"MulticlassNms-{version.removeprefix('opset')} takes 2 to {most} inputs")
    attrs = _selection_attrs(ctx) | {
        "iou_threshold": ctx.float_attr("iou_threshold", 0.0),
        "nms_eta": ctx.float_attr("nms_eta", 1.0),
    }
    args = [ctx.input(i) for i in range(len(inputs))]
    return _selections(ctx, "MulticlassNms", args, attrs)


@converter("MatrixNms")
def _matrix_nms(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    if ctx.layer.version != "opset8":
        raise ctx.error(f"MatrixNms of version {ctx.layer.version!r} is not known")
    if len(inputs) != 2:
        raise ctx.error("MatrixNms-8 takes 2 inputs")
    attrs = _selection_attrs(ctx) | {
        "decay_function": ctx.choice_attr("decay_function", ("linear", "gaussian"), "linear"),
        "gaussian_sigma": ctx.float_attr("gaussian_sigma", 2.0),
        "post_threshold": ctx.float_attr("post_threshold", 0.0),
    }
    return _selections(ctx, "MatrixNms", [ctx.input(0), ctx.input(1)], attrs)


@converter("NMSRotated")
def _nms_rotated(ctx: LayerContext, inputs: list[Value | None]) -> list[Value]:
    if ctx.layer.version != "opset13":
        raise ctx.error(f"NMSRotated of version {ctx.layer.version!r} is not known")
    if len(inputs) != 5 or not all(has_input(inputs, i) for i in range(5)):
        raise ctx.error("NMSRotated-13 takes 5 inputs")
    for index, what in ((0, "boxes"), (1, "scores"), (3, "iou_threshold"), (4, "score_threshold")):
        if not type_of(ctx, ctx.input(index)).dtype.is_float:
            raise ctx.error(f"input #{index} ({what}) must be floating-point")
    attrs = {
        "sort_by_score": int(ctx.bool_attr("sort_result_descending", "true")),
        "clockwise": int(ctx.bool_attr("clockwise", "true")),
    }
    index_type = _INDEX_TYPES[ctx.choice_attr("output_type", tuple(_INDEX_TYPES), "i64")]
    selected, picked, valid = ctx.em.ops("NmsRotated", [ctx.input(i) for i in range(5)], attrs)
    return [cast_to(ctx, selected, index_type), picked, cast_to(ctx, valid, index_type)]
