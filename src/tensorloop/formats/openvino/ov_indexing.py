"""OpenVINO gather, scatter, index-generating and shape layers read as core ops: one converter per
layer type, at every opset version OpenVINO's converters write. The writer's emitters for them
are in ``write_indexing.py``."""

from __future__ import annotations

__all__: list[str] = []
