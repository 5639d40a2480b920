"""Core ops written as OpenVINO convolution, pooling, normalisation, resize and quantisation
layers; merged into ``write_ops.OP_EMITTERS``."""

from __future__ import annotations

from .write_net import Emitter

EMITTERS: dict[str, Emitter] = {}
"""Emitters of this family, by core op name."""
