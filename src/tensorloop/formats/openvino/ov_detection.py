"""OpenVINO detection (NMS family, ROI pooling, priors, proposals, YOLO regions) layers read as
core ops: one converter per layer type, at every opset version OpenVINO's converters write."""

from __future__ import annotations

__all__: list[str] = []
