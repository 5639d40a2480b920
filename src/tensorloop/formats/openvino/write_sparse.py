"""Core sparse-tensor ops written as OpenVINO layers: SparseFillEmptyRows as its opset-16 layer."""

from __future__ import annotations

from .write_net import Emitter, same_layer

EMITTERS: dict[str, Emitter] = {
    "SparseFillEmptyRows": same_layer("SparseFillEmptyRows", "opset16"),
}
"""Emitters of this family, by core op name."""
