"""Lowerings of the maths, activation, reduction and cast ops (see ``ops.py`` for the rules every lowering follows)."""

from __future__ import annotations

