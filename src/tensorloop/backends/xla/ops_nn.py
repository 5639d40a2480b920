"""Lowerings of the neural-network ops: convolution, pooling, normalisation (see ``ops.py`` for the rules every lowering follows)."""

from __future__ import annotations

