"""The ``tensorloop`` command line: the group and its helpers are ``common.py``; each command is
a module that registers itself on ``main`` when imported here."""

from . import batch, bench, compare, convert, draw, inspect, run, stream, trace
from .common import body_paths, main

__all__ = [
    "batch",
    "bench",
    "body_paths",
    "compare",
    "convert",
    "draw",
    "inspect",
    "main",
    "run",
    "stream",
    "trace",
]
