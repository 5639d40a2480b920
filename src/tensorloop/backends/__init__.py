"""Backends run graphs; each implements the ``Backend`` protocol and registers under a name."""

from .base import Backend, BodyRunner, Executable, backend_names, get_backend, register_backend
from .runtime import DEFAULT_MAX_ITERATIONS, RunState, TraceEntry, coerce_inputs

__all__ = [
    "DEFAULT_MAX_ITERATIONS",
    "Backend",
    "BodyRunner",
    "Executable",
    "RunState",
    "TraceEntry",
    "backend_names",
    "coerce_inputs",
    "get_backend",
    "register_backend",
]
