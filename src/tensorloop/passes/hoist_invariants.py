"""hoist_loop_invariants: move loop-body work that reads only invariants out of the loop."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ir.graph import Graph, Node, Value, copy_node
from ..ir.loop import Loop
from ..tensor.types import TensorType
from .base import Pass, PassResult
from .dead_code import has_side_effects
from .loop_rewrite import rebuild_loop

# Ops whose result is not a function of their inputs alone: never moved, never merged.
IMPURE = frozenset(
    {"ReadVariable", "Assign", "Dropout", "Multinomial", "Bernoulli"}
    | {"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike"}
)
# Ops that stay in the body (cheap, and moving them alone gains nothing); a moved node that
# reads one reads a copy made in front of the loop.
STAY = frozenset({"Constant", "Identity"})
# Ops that cannot fail on inputs of the static shapes type inference checked (IEEE faults give
# inf or NaN): they may run before a loop that runs zero times.
TOTAL = frozenset(
    {"Add", "Sub", "Mul", "Neg", "Abs", "Relu", "Tanh", "Sigmoid", "Max", "Min", "Where"}
    | {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Not"}
    | {"Identity", "MatMul", "Gemm", "Transpose", "Concat", "Shape", "Size", "Cast"}
    | {"Reshape", "Unsqueeze", "Squeeze", "Gather"}
)


class HoistLoopInvariants(Pass):
    """Move the nodes of a Loop body that compute the same value on every iteration in front
    of the Loop; their results enter the body as new invariants.

    A body node is invariant when each input is an invariant parameter, a Constant, or the
    result of another invariant node. It moves unless it is a Constant or an Identity (those
    stay where they are read, and a moved node reads a copy of them), reads variables or
    randomness, has side effects or holds a body that does.

    A moved node runs even where the loop would not, so it moves only when the loop certainly
    runs at least once (no ``initial_condition`` or a constant true one, a constant positive
    ``max_trip_count`` if given, non-empty static sliced lengths), or when it cannot fail: an
    op in ``TOTAL`` with static input and output shapes (which type inference checked), whose
    shape, axes and index operands are constants, its indices in range, and no Cast from
    floats to integers. Nested bodies are hoisted first, so work can leave several loops.
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
    certain = runs_at_least_once(loop)
    available: set[Value] = {inv.param for inv in loop.invariants}
    moved: list[Node] = []
    for node in body.nodes:
        ready = all(v is None or v in available for v in node.inputs)
        if ready and node.op in STAY:
            available.update(node.outputs)
        elif ready and _movable(node, certain):
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


def runs_at_least_once(loop: Loop) -> bool:
    """True if the body of ``loop`` certainly runs: nothing can stop it before its first trip."""
    cond = loop.condition
    if cond is not None:
        data = cond.constant
        if data is None or data.size != 1 or not bool(data.reshape(())):
            return False
    trip = loop.trip_count
    if trip is not None:
        data = trip.constant
        if data is None or data.size != 1 or int(data.reshape(())) <= 0:
            return False
    for s in loop.sliced:
        t = None if s.source is None else s.source.type
        if not isinstance(t, TensorType) or t.shape is None:
            return False
        length = t.shape[s.spec.axis % len(t.shape)] if t.shape else 0
        if not isinstance(length, int) or length <= 0:
            return False
    return True


def is_pure(node: Node) -> bool:
    """True if ``node``'s outputs depend on its inputs alone (bodies included) and running it
    changes nothing else."""
    if node.op in IMPURE or has_side_effects(node):
        return False
    return not any(n.op in IMPURE for sub in node.subgraphs.values() for _, n in sub.walk())


def _movable(node: Node, certain: bool) -> bool:
    if not is_pure(node):
        return False
    return certain or _is_total(node)


def _static(v: Value | None) -> bool:
    return v is None or (isinstance(v.type, TensorType) and v.type.is_static)


def _is_total(node: Node) -> bool:
    if node.op not in TOTAL or node.subgraphs:
        return False
    if not all(_static(v) for v in [*node.inputs, *node.outputs]):
        return False
    operands = node.inputs[1:]
    if node.op in ("Reshape", "Unsqueeze", "Squeeze"):
        return all(v is None or v.constant is not None for v in operands)
    if node.op == "Cast":
        src = node.inputs[0]
        out = node.outputs[0].type
        assert src is not None and isinstance(src.type, TensorType)
        return not (src.type.dtype.is_float and isinstance(out, TensorType) and out.dtype.is_int)
    if node.op == "Gather":
        return _indices_in_range(node)
    return True


def _indices_in_range(node: Node) -> bool:
    data, indices = node.inputs[0], node.inputs[1]
    if data is None or indices is None or not isinstance(data.type, TensorType):
        return False
    shape = data.type.shape
    idx: np.ndarray[Any, Any] | None = indices.constant
    if idx is None or shape is None or not shape:
        return False
    axis = int(node.attrs.get("axis", 0))
    if not -len(shape) <= axis < len(shape):
        return False
    n = shape[axis]
    assert isinstance(n, int)
    return idx.size == 0 or bool(idx.min() >= -n and idx.max() < n)


hoist_loop_invariants = HoistLoopInvariants()
