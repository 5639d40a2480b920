"""Core NMS ops written as OpenVINO layers: NonMaxSuppression, MulticlassNms, MatrixNms, NmsRotated.

``NonMaxSuppression`` as NonMaxSuppression-9 (or -5, whose Soft-NMS keeps the IoU cutoff),
``MulticlassNms`` as MulticlassNms-9, ``MatrixNms`` as MatrixNms-8 and ``NmsRotated`` as
NMSRotated-13."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...tensor.dtypes import DType
from .write_net import Call, Emitter, NetBuilder, Tensor, convert


def _non_max_suppression(net: NetBuilder, call: Call) -> list[Tensor]:
    # OpenVINO computes in f32 whatever the precision: an ONNX-made op (f64) may then decide an
    # IoU within f32 rounding of the threshold the other way.
    f32 = DType.float32
    boxes, scores = (convert(net, call.arg(i), f32) for i in (0, 1))
    limit = call.opt(2) or net.ints(0)
    defaults = {3: 0.0, 4: -np.inf, 5: 0.0}  # an absent score_threshold filters nothing
    thresholds = []
    for i, default in defaults.items():
        given = call.opt(i)
        thresholds.append(net.const(np.float32(default)) if given is None else given)
    indices, picked, count = call.outs
    selected, chosen, valid = net.layer(
        "NonMaxSuppression",
        [boxes, scores, limit, *(convert(net, t, f32) for t in thresholds)],
        [indices, picked.with_dtype(f32), count],
        "opset5" if call.attrs["soft_nms_iou_cutoff"] else "opset9",
        box_encoding="center" if call.attrs["center_point_box"] else "corner",
        sort_result_descending=bool(call.attrs["sort_by_score"]),
        output_type=DType.int64,
    )
    return [selected, convert(net, chosen, picked.dtype), valid]


def _selections(
    net: NetBuilder, call: Call, layer: str, version: str, **attrs: Any
) -> list[Tensor]:
    """MulticlassNms or MatrixNms with the attributes they share. The plugin computes in f32 and
    keeps the boxes' type; an f64 graph is converted around it."""
    f32 = DType.float32
    a = call.attrs
    args = [convert(net, call.arg(i), f32) for i in (0, 1)]
    if call.opt(2) is not None:
        args.append(convert(net, call.arg(2), DType.int64))
    table, indices, counts = call.outs
    rows, chosen, selected = net.layer(
        layer,
        args,
        [table.with_dtype(f32), indices, counts],
        version,
        sort_result_type={"class": "classid"}.get(a["sort_result"], a["sort_result"]),
        sort_result_across_batch=bool(a["sort_across_batch"]),
        output_type=DType.int64,
        score_threshold=float(a["score_threshold"]),
        nms_top_k=int(a["nms_top_k"]),
        keep_top_k=int(a["keep_top_k"]),
        background_class=int(a["background_class"]),
        normalized=bool(a["normalized"]),
        **attrs,
    )
    return [convert(net, rows, table.dtype), chosen, selected]


def _multiclass_nms(net: NetBuilder, call: Call) -> list[Tensor]:
    a = call.attrs
    return _selections(
        net,
        call,
        "MulticlassNms",
        "opset9",
        iou_threshold=float(a["iou_threshold"]),
        nms_eta=float(a["nms_eta"]),
    )


def _matrix_nms(net: NetBuilder, call: Call) -> list[Tensor]:
    a = call.attrs
    return _selections(
        net,
        call,
        "MatrixNms",
        "opset8",
        decay_function=a["decay_function"],
        gaussian_sigma=float(a["gaussian_sigma"]),
        post_threshold=float(a["post_threshold"]),
    )


def _nms_rotated(net: NetBuilder, call: Call) -> list[Tensor]:
    return net.layer(
        "NMSRotated",
        [call.arg(i) for i in range(5)],
        call.outs,
        "opset13",
        sort_result_descending=bool(call.attrs["sort_by_score"]),
        output_type=DType.int64,
        clockwise=bool(call.attrs["clockwise"]),
    )


EMITTERS: dict[str, Emitter] = {
    "NonMaxSuppression": _non_max_suppression,
    "MulticlassNms": _multiclass_nms,
    "MatrixNms": _matrix_nms,
    "NmsRotated": _nms_rotated,
}
