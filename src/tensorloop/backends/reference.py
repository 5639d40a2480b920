"""The reference backend: the NumPy interpreter, the oracle every other backend must match."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..ir.graph import Graph, Node
from ..reference.interpreter import Interpreter
from ..reference.runtime import RunState, host_values
from ..tensor.types import Type
from .base import register_backend


class ReferenceExecutable:
    """A graph ready for the interpreter; each run gets its own interpreter, so runs from many
    threads never share state."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph

    def run(self, args: Sequence[Any], state: RunState) -> list[Any]:
        state.start(self.graph)
        return Interpreter(state=state).run_graph(self.graph, host_values(args))


class ReferenceBackend:
    """Runs every op with the NumPy kernels of ``reference/kernels``."""

    name = "reference"

    def prepare(
        self, graph: Graph, input_types: Sequence[Type] | None = None
    ) -> ReferenceExecutable:
        return ReferenceExecutable(graph)

    def evaluate(self, node: Node, inputs: Sequence[Any]) -> list[Any]:
        return Interpreter().run_node(node, inputs)


register_backend("reference", ReferenceBackend)

__all__ = ["ReferenceBackend", "ReferenceExecutable"]
