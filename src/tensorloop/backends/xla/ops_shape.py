"""Lowerings of the shape, indexing and scatter/gather ops (see ``ops.py`` for the rules every lowering follows)."""

from __future__ import annotations

