"""Core ops written as OpenVINO signal and normalisation (DFT, STFT, Col2Im, the norm family)
layers; merged into ``write_ops.OP_EMITTERS``."""

from __future__ import annotations

from .write_net import Emitter

EMITTERS: dict[str, Emitter] = {}
"""Emitters of this family, by core op name."""
