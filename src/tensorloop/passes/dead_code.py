"""eliminate_dead_code: drop nodes whose outputs nothing uses, in every (sub)graph."""

from __future__ import annotations

from ..ir.graph import Graph, Node
from .base import Pass, PassResult, cannot_fail

SIDE_EFFECTS = frozenset({"Assign"})


class EliminateDeadCode(Pass):
    """Remove nodes whose outputs nothing uses and that running could change nothing by:
    no side effects, and no way to fail (``removable``); bodies are cleaned too.

    The reference interpreter runs every node of a graph, read or not, at the top level as in
    bodies (a Model built with the tl.* API holds only what its outputs need; a parsed or
    imported graph holds what it was given), so a dead node that may fail, such as a Cast from
    strings or a Loop (which may pass the iteration limit), stays: removing it would turn the
    reference's error into a result."""

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
        if not used and removable(node):
            graph.erase(node)
            changed = True
    return changed


def removable(node: Node) -> bool:
    """True if running ``node`` for nothing changes nothing: it has no side effects and cannot
    fail (``base.cannot_fail``), so dropping an unread one keeps every result and every error."""
    return not has_side_effects(node) and cannot_fail(node)


def has_side_effects(node: Node) -> bool:
    """True for an Assign, or a control-flow node whose bodies hold one."""
    return node.op in SIDE_EFFECTS or any(
        n.op in SIDE_EFFECTS for sub in node.subgraphs.values() for _, n in sub.walk()
    )


eliminate_dead_code = EliminateDeadCode()
