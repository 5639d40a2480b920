"""The core ``NonMaxSuppression`` written as OpenVINO's NonMaxSuppression-9 (or -5, whose
Soft-NMS keeps the IoU cutoff); merged into ``write_ops.OP_EMITTERS``."""

from __future__ import annotations

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


EMITTERS: dict[str, Emitter] = {"NonMaxSuppression": _non_max_suppression}
