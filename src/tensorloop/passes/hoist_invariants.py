"""hoist_loop_invariants: move loop-body work that reads only invariants out of the loop."""

from __future__ import annotations

from ..ir.graph import Graph, Node, Value, copy_node
from ..ir.loop import Loop
from ..ops.random import RANDOM_OPS
from .base import Pass, PassResult, cannot_fail
from .dead_code import has_side_effects
from .loop_rewrite import rebuild_loop

# Ops whose result is not a function of their inputs alone: never moved, never merged.
IMPURE = frozenset({"ReadVariable", "Assign", "Dropout"}) | RANDOM_OPS
# Ops that stay in the body (cheap, and moving them alone gains nothing); a moved node that
# reads one reads a copy made in front of the loop.
STAY = frozenset({"Constant", "Identity"})


class HoistLoopInvariants(Pass):
    """Move the nodes of a Loop body that compute the same value on every iteration in front
    of the Loop; their results enter the body as new invariants.

    A body node is invariant when each input is an invariant parameter, a Constant, or the
    result of another invariant node. It moves unless it is a Constant or an Identity (those
    stay where they are read, and a moved node reads a copy of them), reads variables or
    randomness, has side effects or holds a body that does.

    A moved node runs even where the loop would not (a loop that runs zero times, or stops
    early), and before the loop's own checks (the iteration limit) and the body's other nodes,
    so it moves only when it cannot fail (``base.cannot_fail``: an op in ``base.TOTAL`` with
    static input and output shapes, which type inference checked, whose shape, axes and index
    operands are constants, its indices in range, and no Cast that may fail or differ by
    platform: from strings, a string that is no number fails; from floats to integers). Even a
    loop certain to run does not let a failing op move: the reference might stop first (the
    iteration limit, an earlier node's error) and report that instead. Results are bit for bit
    the loop's: a moved node computes the same op on the same values. Nested bodies are hoisted
    first, so work can leave several loops.
    """

    name = "hoist_loop_invariants"

    def run(self, graph: Graph) -> PassResult:
        return PassResult(graph, _hoist_in(graph))


def _hoist_in(graph: Graph) -> bool:
    changed = False
    for node in list(graph.nodes):
        for sub in node.subgraphs.values():
            changed |= _hoist_in(sub)
        if node.op == "Loop":
            changed |= _hoist(graph, Loop(node))
    return changed


def _hoist(graph: Graph, loop: Loop) -> bool:
    body = loop.body
    available: set[Value] = {inv.param for inv in loop.invariants}
    moved: list[Node] = []
    for node in body.nodes:
        ready = all(v is None or v in available for v in node.inputs)
        if ready and node.op in STAY:
            available.update(node.outputs)
        elif ready and _movable(node):
            moved.append(node)
            available.update(node.outputs)
    if not moved:
        return False

    # body value -> the outer value it stands for; copy_node adds each copy's outputs
    outer = {inv.param: inv.value for inv in loop.invariants if inv.value is not None}
    copied: list[Node] = []

    def copy_out(node: Node) -> None:
        for v in node.inputs:
            if v is not None and v not in outer and v.producer is not None:
                copied.append(v.producer)
                copy_out(v.producer)
        graph.insert_before(loop.node, copy_node(node, outer))

    for node in moved:
        copy_out(node)

    invariants = [inv.value for inv in loop.invariants if inv.value is not None]
    gone = set(moved)
    for node in moved:
        for out in node.outputs:
            if out in body.outputs or any(u.node not in gone for u in out.uses):
                name = out.name
                param = body.add_input(name, out.type)
                body.replace(out, param)
                body.rename(param, name)
                invariants.append(outer[out])
    for node in reversed(moved):
        body.erase(node)
    for node in reversed(list(body.nodes)):
        if node in copied and not any(o.uses or o in body.outputs for o in node.outputs):
            body.erase(node)
    rebuild_loop(
        graph, loop, body, carried=loop.carried, invariants=invariants, stacked=loop.stacked
    )
    return True


def is_pure(node: Node) -> bool:
    """True if ``node``'s outputs depend on its inputs alone (bodies included) and running it
    changes nothing else."""
    if node.op in IMPURE or has_side_effects(node):
        return False
    return not any(n.op in IMPURE for sub in node.subgraphs.values() for _, n in sub.walk())


def _movable(node: Node) -> bool:
    return is_pure(node) and cannot_fail(node)


hoist_loop_invariants = HoistLoopInvariants()
