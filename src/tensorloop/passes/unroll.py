"""unroll_loops: replace loops with a trip count known before running by copies of their body."""

from __future__ import annotations

import numpy as np

from ..ir.emit import Emitter
from ..ir.graph import Graph, Node, Value, copy_node
from ..ir.loop import Loop
from ..ops.random import RANDOM_OPS
from ..tensor.types import TensorType, normalize_axis
from .base import Pass, PassResult


class UnrollLoops(Pass):
    """Unroll every Loop whose trip count is static and at most ``max_trips``.

    A loop qualifies when its condition cannot stop it (no ``initial_condition``, and the body's
    ``continue_condition`` is a constant true) and its bounds are constants or static sliced
    lengths. Slices become ``Gather`` with a constant index; stacked outputs become ``Unsqueeze``
    and ``Concat``. Nested loops are unrolled from the inside out.
    """

    name = "unroll_loops"

    def __init__(self, max_trips: int = 64) -> None:
        self.max_trips = max_trips

    def run(self, graph: Graph) -> PassResult:
        return PassResult(graph, self._unroll_in(graph))

    def _unroll_in(self, graph: Graph) -> bool:
        changed = False
        for node in list(graph.nodes):
            for sub in node.subgraphs.values():
                changed |= self._unroll_in(sub)
            if node.op == "Loop":
                loop = Loop(node)
                trips = loop.static_trip_count
                if (
                    trips is not None
                    and trips <= self.max_trips
                    and _can_stack(loop, trips)
                    and not _draws(loop.body)
                ):
                    _unroll(graph, loop, trips)
                    changed = True
        return changed


def static_trip_count(node: Node) -> int | None:
    """How many times ``node`` runs, if that is known without running it."""
    return Loop(node).static_trip_count


def _draws(body: Graph) -> bool:
    """Whether ``body`` holds a random op: each copy of it would draw a stream of its own, where
    the loop's trips continue one stream (ops/random.py)."""
    return any(n.op in RANDOM_OPS for _, n in body.walk())


def _can_stack(loop: Loop, trips: int) -> bool:
    """Zero-trip loops with stacked outputs unroll only if those outputs have a static type."""
    return trips > 0 or all(
        isinstance(s.output.type, TensorType) and s.output.tensor_type.is_static
        for s in loop.stacked
    )


def _unroll(graph: Graph, loop: Loop, trips: int) -> None:
    node = loop.node
    em = Emitter(graph, anchor=node, prefix=loop.name)
    add, const = em.op, em.const

    carried: list[Value] = [c.initial for c in loop.carried if c.initial is not None]
    per_iteration: list[list[Value]] = [[] for _ in loop.stacked]
    for i in range(trips):
        args: list[Value] = [const(np.int64(i)), *carried]
        for s in loop.sliced:
            assert s.source is not None
            t = s.source.tensor_type
            assert t.shape is not None
            axis = normalize_axis(s.spec.axis, len(t.shape), node.describe())
            n = t.shape[axis]
            assert isinstance(n, int)
            index = const(np.int64(n - 1 - i if s.spec.reverse else i))
            args.append(add("Gather", [s.source, index], {"axis": axis}))
        args += [v.value for v in loop.invariants if v.value is not None]
        step = loop.counts.split_results(_inline(graph, loop.body, args, node))
        carried = step.carried
        for acc, y in zip(per_iteration, step.per_iteration, strict=True):
            acc.append(y)
    finals: list[Value] = list(carried)
    for acc, st in zip(per_iteration, loop.stacked, strict=True):
        if not acc:
            t = st.output.tensor_type
            finals.append(const(np.zeros(t.static_shape, t.dtype.numpy)))
            continue
        rank = acc[0].tensor_type.rank
        axis = normalize_axis(st.spec.axis, (rank or 0) + 1, node.describe())
        items = acc[::-1] if st.spec.reverse else acc
        ups = [add("Unsqueeze", [y, const(np.array([axis], np.int64))]) for y in items]
        finals.append(ups[0] if len(ups) == 1 else add("Concat", list(ups), {"axis": axis}))
    for old, new in zip(loop.outputs, finals, strict=True):
        graph.replace(old, new)
    graph.erase(node)


def _inline(graph: Graph, body: Graph, args: list[Value], anchor: Node) -> list[Value]:
    """Copy ``body``'s nodes into ``graph`` before ``anchor``; returns the copied results."""
    mapping: dict[Value, Value] = dict(zip(body.inputs, args, strict=True))
    for node in body.nodes:
        graph.insert_before(anchor, copy_node(node, mapping))
    return [mapping[o] for o in body.outputs]


unroll_loops = UnrollLoops()
