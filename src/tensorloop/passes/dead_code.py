"""eliminate_dead_code: drop nodes whose outputs nothing uses, in every (sub)graph."""

from __future__ import annotations

from ..ir.graph import Graph, Node
from .base import Pass, PassResult

SIDE_EFFECTS = frozenset({"Assign"})


class EliminateDeadCode(Pass):
    """Remove nodes with no used outputs and no side effects; bodies are cleaned too."""

    name = "eliminate_dead_code"

    def run(self, graph: Graph) -> PassResult:
        return PassResult(graph, _sweep(graph))


def _sweep(graph: Graph) -> bool:
    changed = False
    for node in graph.nodes:
        for sub in node.subgraphs.values():
            changed |= _sweep(sub)
    results = set(graph.outputs)
    for node in reversed(list(graph.nodes)):
        used = any(o.uses or o in results for o in node.outputs)
        if not used and not has_side_effects(node):
            graph.erase(node)
            changed = True
    return changed


def has_side_effects(node: Node) -> bool:
    """True for an Assign, or a control-flow node whose bodies hold one."""
    return node.op in SIDE_EFFECTS or any(
        n.op in SIDE_EFFECTS for sub in node.subgraphs.values() for _, n in sub.walk()
    )


eliminate_dead_code = EliminateDeadCode()
