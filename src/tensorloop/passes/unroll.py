"""unroll_loops: replace loops with a trip count known before running by copies of their body."""

from __future__ import annotations

import numpy as np

from ..ir.control_flow import LoopLayout, Sliced, Stacked, loop_trip_count, normalize_axis
from ..ir.emit import Emitter
from ..ir.graph import Graph, Node, Value, copy_node
from ..tensor.types import TensorType
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
                trips = static_trip_count(node)
                if trips is not None and trips <= self.max_trips and _can_stack(node, trips):
                    _unroll(graph, node, trips)
                    changed = True
        return changed


def static_trip_count(node: Node) -> int | None:
    """How many times ``node`` runs, if that is known without running it."""
    return loop_trip_count(node.inputs, node.attrs)


def _can_stack(node: Node, trips: int) -> bool:
    """Zero-trip loops with stacked outputs unroll only if those outputs have a static type."""
    if trips > 0:
        return True
    layout = LoopLayout.of(node)
    return all(
        isinstance(node.outputs[layout.num_carried + j].type, TensorType)
        and node.outputs[layout.num_carried + j].tensor_type.is_static
        for j in range(layout.num_stacked)
    )


def _unroll(graph: Graph, loop: Node, trips: int) -> None:
    body: Graph = loop.attrs["body"]
    sliced: tuple[Sliced, ...] = loop.attrs.get("sliced", ())
    stacked: tuple[Stacked, ...] = loop.attrs.get("stacked", ())
    layout = LoopLayout.of(loop)
    inputs = list(loop.inputs)
    carried = [inputs[i] for i in layout.carried_inputs()]
    sources = [inputs[i] for i in layout.sliced_inputs()]
    invariants = [inputs[i] for i in layout.invariant_inputs()]

    em = Emitter(graph, anchor=loop, prefix=loop.name)
    add, const = em.op, em.const

    per_iteration: list[list[Value]] = [[] for _ in stacked]
    for i in range(trips):
        args: list[Value | None] = [const(np.int64(i)), *carried]
        for src, s in zip(sources, sliced, strict=True):
            assert src is not None
            t = src.tensor_type
            assert t.shape is not None
            axis = normalize_axis(s.axis, len(t.shape), loop.describe())
            n = t.shape[axis]
            assert isinstance(n, int)
            args.append(
                add("Gather", [src, const(np.int64(n - 1 - i if s.reverse else i))], {"axis": axis})
            )
        args += invariants
        results = _inline(graph, body, args, loop)
        carried = list(results[1 : 1 + layout.num_carried])
        for acc, y in zip(per_iteration, results[1 + layout.num_carried :], strict=True):
            acc.append(y)
    finals: list[Value] = [v for v in carried if v is not None]
    for j, (acc, st) in enumerate(zip(per_iteration, stacked, strict=True)):
        out = loop.outputs[layout.num_carried + j]
        if not acc:
            t = out.tensor_type
            finals.append(const(np.zeros(t.static_shape, t.dtype.numpy)))
            continue
        rank = acc[0].tensor_type.rank
        axis = normalize_axis(st.axis, (rank or 0) + 1, loop.describe())
        items = acc[::-1] if st.reverse else acc
        ups = [add("Unsqueeze", [y, const(np.array([axis], np.int64))]) for y in items]
        finals.append(ups[0] if len(ups) == 1 else add("Concat", list(ups), {"axis": axis}))
    for old, new in zip(loop.outputs, finals, strict=True):
        old.replace_all_uses_with(new)
    graph.erase(loop)


def _inline(graph: Graph, body: Graph, args: list[Value | None], anchor: Node) -> list[Value]:
    """Copy ``body``'s nodes into ``graph`` before ``anchor``; returns the copied results."""
    mapping: dict[Value, Value] = {}
    for p, a in zip(body.inputs, args, strict=True):
        assert a is not None
        mapping[p] = a
    for node in body.nodes:
        graph.insert_before(anchor, copy_node(node, mapping))
    return [mapping[o] for o in body.outputs]


unroll_loops = UnrollLoops()
