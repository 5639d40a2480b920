"""OpenVINO's NonMaxSuppression layers read as the core ``NonMaxSuppression`` op, at every opset
version OpenVINO's converters write (1, 3, 4, 5 and 9).

Every version computes in f32 (``precision="f32"``), defaults an absent score_threshold to 0
(boxes must score above it) and sorts its rows by score across batches and classes unless
``sort_result_descending`` is false. Versions 1-4 give selected_indices only, at the static size
their shape rule gives (v1, v3: min(boxes, max_output_boxes_per_class * classes) rows; v4:
min(boxes, max_output_boxes_per_class) * batches * classes), which the selected rows are cut or
padded to with rows of -1. Version 5 adds Soft-NMS (``soft_nms_sigma``) with boxes above the IoU
threshold still dropped (``soft_nms_iou_cutoff=1``), version 9 Soft-NMS without that cutoff; both
add the selected scores and their count. Where the CPU plugin strays from the specification
(ties with the IoU threshold, v1-v4 sizes, v5's cutoff) this module follows the specification;
docs/openvino.md says how.

Not read yet: MulticlassNms, MatrixNms and NMSRotated (no core op with their semantics)."""

from __future__ import annotations

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
