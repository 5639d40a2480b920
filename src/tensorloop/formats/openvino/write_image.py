"""Core ops written as OpenVINO image and detection (GridSample, DeformConv, RoiAlign, MaxRoiPool,
quantisation) layers; merged into ``write_ops.OP_EMITTERS``."""

from __future__ import annotations

from .write_net import Emitter

EMITTERS: dict[str, Emitter] = {}
"""Emitters of this family, by core op name."""
