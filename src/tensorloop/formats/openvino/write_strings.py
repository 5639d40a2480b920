"""Core string ops written as OpenVINO layers: StringTensorUnpack-15 and StringTensorPack-15.

Each the same-named layer."""

from __future__ import annotations

from .write_net import Emitter, same_layer

EMITTERS: dict[str, Emitter] = {
    "StringTensorUnpack": same_layer("StringTensorUnpack", "opset15"),
    "StringTensorPack": same_layer("StringTensorPack", "opset15"),
}
"""Emitters of this family, by core op name."""
