"""inline_constant_branches: an If whose condition is known before running becomes its branch."""

from __future__ import annotations

import numpy as np

from ..ir.branch import If
from ..ir.graph import Graph, Value, copy_node
from .base import Pass, PassResult


class InlineConstantBranches(Pass):
    """Replace each If whose condition is a one-element constant by the nodes of the branch it
    takes, reading the captured values where the branch read its parameters.

    Exact by construction: the reference runs exactly those nodes on exactly those values. What
    the branch computes then sits in the enclosing graph, where specialisation types it and
    folding sees it (a voice-activity model picks its 16 kHz or 8 kHz branch from an ``sr``
    input that a plan guards on: ``passes.specialize.control_inputs``). A condition of another
    size is left for the run to report."""

    name = "inline_constant_branches"

    def run(self, graph: Graph) -> PassResult:
        return PassResult(graph, _inline_in(graph))


def _inline_in(graph: Graph) -> bool:
    changed = False
    for node in list(graph.nodes):
        for sub in node.subgraphs.values():
            changed |= _inline_in(sub)
        if node.op != "If":
            continue
        view = If(node)
        cond = None if view.condition is None else view.condition.constant
        if cond is None or np.size(cond) != 1:
            continue
        taken = view.branch(bool(np.asarray(cond).reshape(())))
        mapping: dict[Value, Value] = {}
        for param, value in zip(taken.inputs, view.captured, strict=True):
            if value is None:
                break
            mapping[param] = value
        else:
            for inner in taken.nodes:
                graph.insert_before(node, copy_node(inner, mapping))
            for out, result in zip(node.outputs, taken.outputs, strict=True):
                graph.replace(out, mapping[result])
            graph.erase(node)
            changed = True
    return changed


inline_constant_branches = InlineConstantBranches()
