"""Backends run graphs; each implements the ``Backend`` protocol and registers under a name."""

from ..reference.registry import BodyRunner
from ..reference.runtime import (
    DEFAULT_MAX_ITERATIONS,
    LoopObserver,
    RunState,
    TraceEntry,
    coerce_inputs,
)
from .base import Backend, Executable, backend_names, get_backend, register_backend

__all__ = [
    "DEFAULT_MAX_ITERATIONS",
    "Backend",
    "BodyRunner",
    "Executable",
    "LoopObserver",
    "RunState",
    "TraceEntry",
    "backend_names",
    "coerce_inputs",
    "get_backend",
    "register_backend",
]
