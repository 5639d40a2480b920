"""eliminate_dead_loop_values: drop the carried values, stacked outputs and invariants of a
Loop that nothing reads."""

from __future__ import annotations

from collections.abc import Iterable

from ..ir.graph import Graph, Value, copy_node, static_type
from ..ir.loop import Loop, StackedOutput
from .base import Pass, PassResult
from .dead_code import eliminate_dead_code, removable
from .loop_rewrite import rebuild_loop


class EliminateDeadLoopValues(Pass):
    """Remove from every Loop (nested ones included) the carried values whose final output
    nothing reads and whose body parameter is read only on the way to dead results (their own
    next value, or another dead carried value's), the stacked outputs nothing reads, and the
    invariants the body no longer reads. Sliced sources stay: their lengths bound the trip
    count. The Loop is rebuilt with ``Loop.build`` and its body swept by
    ``eliminate_dead_code``; a loop left with no outputs stays for that pass to judge.

    Every error of the reference stays: it runs each body node every iteration, read or not,
    so a body node that may fail (``dead_code.removable`` is false: a Cast from strings, a
    nested Loop) is live even where only dead values read it, and so is all it reads (a
    carried value it reads is kept). A stacked output whose per-iteration result has no static
    shape stays too: the reference fails to stack results that change shape.
    """

    name = "eliminate_dead_loop_values"

    def run(self, graph: Graph) -> PassResult:
        return PassResult(graph, _clean(graph))


def _clean(graph: Graph) -> bool:
    changed = False
    # Consumers first: pruning a later loop can leave an earlier loop's output unread.
    for node in reversed(list(graph.nodes)):
        if node.graph is not graph:
            continue
        if node.op == "Loop":
            loop, pruned = _prune(graph, Loop(node))
            changed |= pruned
            node = loop.node
        for sub in node.subgraphs.values():
            changed |= _clean(sub)
    return changed


def _live(body: Graph, roots: Iterable[Value]) -> set[Value]:
    """The values of ``body`` that ``roots`` or a node that is not ``removable`` read."""
    live = set(roots)
    for node in reversed(body.nodes):
        if not removable(node) or any(o in live for o in node.outputs):
            live.update(v for v in node.inputs if v is not None)
    return live


def _prune(graph: Graph, loop: Loop) -> tuple[Loop, bool]:
    results = set(graph.outputs)
    carried, stacked = loop.carried, loop.stacked
    dead_carried = {k for k, c in enumerate(carried) if not c.final.uses and c.final not in results}
    kept_stacked = [s for s in stacked if s.output.uses or s.output in results or _may_fail(s)]
    while True:
        roots = [loop.continue_condition, *(s.result for s in kept_stacked)]
        roots += [c.next for k, c in enumerate(carried) if k not in dead_carried]
        live = _live(loop.body, roots)
        read = {k for k in dead_carried if carried[k].param in live}
        if not read:
            break
        dead_carried -= read
    kept_carried = [c for k, c in enumerate(carried) if k not in dead_carried]
    kept_invariants = [inv for inv in loop.invariants if inv.param in live]
    if (
        not dead_carried
        and len(kept_stacked) == len(stacked)
        and (len(kept_invariants) == len(loop.invariants))
    ):
        return loop, False

    old = loop.body
    body = Graph(old.name)
    for var in old.variables.values():
        body.add_variable(var.name, var.initial, var.trainable)
    mapping: dict[Value, Value] = {}
    params = [loop.iteration, *(c.param for c in kept_carried)]
    params += [s.param for s in loop.sliced] + [inv.param for inv in kept_invariants]
    for p in params:
        mapping[p] = body.add_input(p.name, p.type)
    for node in old.nodes:
        if not removable(node) or any(o in live for o in node.outputs):
            body.append(copy_node(node, mapping))
    outputs = [loop.continue_condition, *(c.next for c in kept_carried)]
    body.set_outputs(mapping[v] for v in outputs + [s.result for s in kept_stacked])
    eliminate_dead_code.run(body)
    new = rebuild_loop(
        graph,
        loop,
        body,
        carried=kept_carried,
        invariants=[inv.value for inv in kept_invariants if inv.value is not None],
        stacked=kept_stacked,
    )
    return new, True


def _may_fail(s: StackedOutput) -> bool:
    """Whether stacking ``s`` may fail: its per-iteration result may change shape."""
    return static_type(s.result) is None


eliminate_dead_loop_values = EliminateDeadLoopValues()
