"""OpenVINO If (branch) layers read as core ops: one converter per layer type, at every opset
version OpenVINO's converters write. ``write_control.py`` writes them back."""

from __future__ import annotations

__all__: list[str] = []
