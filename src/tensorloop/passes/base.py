"""Passes: named graph transformations returning PassResult(graph, changed), verified after."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ir.graph import Graph
from ..ir.verify import verify


@dataclass(frozen=True)
class PassResult:
    graph: Graph
    changed: bool


class Pass:
    """A named transformation; calling it runs ``run`` then the verifier."""

    name: ClassVar[str] = ""

    def run(self, graph: Graph) -> PassResult:
        raise NotImplementedError

    def __call__(self, graph: Graph) -> PassResult:
        result = self.run(graph)
        if result.changed:
            verify(result.graph)
        return result


def run_passes(graph: Graph, passes: list[Pass]) -> PassResult:
    """Run passes in order; ``changed`` if any of them changed the graph."""
    changed = False
    for p in passes:
        result = p(graph)
        graph, changed = result.graph, changed or result.changed
    return PassResult(graph, changed)
