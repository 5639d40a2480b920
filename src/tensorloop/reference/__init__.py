"""The reference semantics: one NumPy kernel per op, the interpreter that runs graphs with them,
and the run-time state every backend shares. Passes and backends build on this layer; the
reference *backend* (``backends/reference.py``) is a thin wrapper over ``Interpreter``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..ir.graph import Node
from . import kernels  # noqa: F401  (registers the built-in kernels)
from .interpreter import Interpreter
from .registry import BodyRunner, Kernel, KernelContext, get_kernel, kernel, kernel_ops
from .runtime import LoopObserver, RunState, coerce_inputs
from .trace import Trace, TraceEntry


def evaluate(node: Node, inputs: Sequence[Any]) -> list[Any]:
    """``node``'s outputs for ``inputs``, computed by its reference kernel (constant folding's
    evaluator; a fresh run state, so nothing is shared)."""
    return Interpreter().run_node(node, inputs)


__all__ = [
    "BodyRunner",
    "Interpreter",
    "Kernel",
    "KernelContext",
    "LoopObserver",
    "RunState",
    "Trace",
    "TraceEntry",
    "coerce_inputs",
    "evaluate",
    "get_kernel",
    "kernel",
    "kernel_ops",
]
