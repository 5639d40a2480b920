"""Which nodes XLA runs and which the compiled backend runs, in the largest islands possible.

A top-level node runs on XLA when every op in it (bodies and branches included) has a lowering
whose check passes, every value it reads or makes has a static shape and an element type XLA
computes exactly, and its loops carry values whose shapes do not change; the one shape XLA
leaves open is the length of a while loop's stacked output, cut to length as it leaves.
Everything else (sequences, optionals, strings, data-dependent shapes, ops without a lowering)
runs on the compiled backend, and says why (``Placement``).

Islands are layers: each node's layer is the longest chain of changes of placement on any path
from the graph's inputs to it. Nodes of one placement and one layer form one island; every
island reads only values of lower layers, so islands run in layer order, and no island is cut
where a path does not leave it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ...errors import TensorloopError
from ...ir.branch import If
from ...ir.graph import Graph, Node, Value
from ...ir.loop import Loop
from ...tensor.types import TensorType
from ..base import Placement
from .lowering import JAX_DTYPES, LOWERINGS, attrs_of

XLA = "xla"
HOST = "compiled"


@dataclass(eq=False)
class Island:
    """Nodes run together: on XLA as one compiled program, or on the compiled backend."""

    device: str
    nodes: list[Node] = field(default_factory=list)
    inputs: list[Value] = field(default_factory=list)
    outputs: list[Value] = field(default_factory=list)


def _type_problem(value: Value, *, shape: bool = True) -> str | None:
    t = value.type
    if not isinstance(t, TensorType):
        kind = type(t).__name__.removesuffix("Type").lower() or "value"
        return f"%{value.name} is a {kind} ({t}); XLA computes tensors only"
    if t.dtype not in JAX_DTYPES:
        return f"%{value.name} has element type {t.dtype}, which XLA does not compute exactly"
    if shape and not t.is_static:
        return f"%{value.name}: {t} has a shape known only at run time"
    return None


def why_not(node: Node, excluded: Mapping[Node, str] | None = None) -> str | None:
    """Why ``node`` cannot run on XLA, or None if it can."""
    if excluded and node in excluded:
        return excluded[node]
    if node.op == "Constant":
        return _type_problem(node.output)
    for v in node.inputs:
        problem = None if v is None else _type_problem(v)
        if problem:
            return problem
    stacked: set[Value] = set()
    if node.op == "Loop":
        stacked = {s.output for s in Loop(node).stacked}
    for v in node.outputs:
        # A while loop's stacked output may have a length known only at run time.
        problem = _type_problem(v, shape=v not in stacked)
        if problem:
            return problem
    entry = LOWERINGS.get(node.op)
    if entry is None:
        return f"no XLA lowering for {node.op}"
    if node.op == "Loop":
        return _loop_problem(Loop(node))
    if node.op == "If":
        view = If(node)
        return _body_problem("then branch", view.then_branch) or _body_problem(
            "else branch", view.else_branch
        )
    if entry.check is not None:
        try:
            return entry.check(node, attrs_of(node))
        except TensorloopError as exc:  # an attribute the op's schema refuses: the reference
            return f"{type(exc).__name__}: {exc}"  # says so (any other exception is a bug)
    return None


def _loop_problem(view: Loop) -> str | None:
    for c, carried in enumerate(view.carried):
        t, nxt = carried.param.type, carried.next.type
        if t != nxt:
            return f"carried value #{c} changes type in the body ({t} -> {nxt})"
    for s in view.stacked:
        problem = _type_problem(s.result)
        if problem:
            return f"its stacked result {problem}"
    return _body_problem("body", view.body)


def _body_problem(what: str, body: Graph) -> str | None:
    for p in body.inputs:
        problem = _type_problem(p)
        if problem:
            return f"its {what}'s parameter {problem}"
    for inner in body.nodes:
        problem = why_not(inner)
        if problem:
            return f"its {what}'s {inner.describe()}: {problem}"
    for v in body.outputs:
        problem = _type_problem(v)
        if problem:
            return f"its {what}'s result {problem}"
    return None


def place(graph: Graph, excluded: Mapping[Node, str] | None = None) -> list[Placement]:
    """Where each top-level node of ``graph`` runs (constants are copied where they are read)."""
    out = []
    for node in graph.nodes:
        if node.op == "Constant":
            continue
        reason = why_not(node, excluded)
        device = XLA if reason is None else HOST
        out.append(Placement(node.name or node.op, node.op, device, reason or ""))
    return out


def partition(graph: Graph, excluded: Mapping[Node, str] | None = None) -> list[Island]:
    """The islands of ``graph`` in the order they run (see the module's docstring)."""
    device: dict[Node, str] = {}
    layer: dict[Node, int] = {}
    for node in graph.nodes:
        if node.op == "Constant":
            continue
        device[node] = XLA if why_not(node, excluded) is None else HOST
        depth = 0
        for v in _reads(node):
            p = v.producer
            if p is None or p not in device:
                continue
            depth = max(depth, layer[p] + (device[p] != device[node]))
        layer[node] = depth
    groups: dict[tuple[int, str], Island] = {}
    for node in graph.nodes:
        if node in device:
            key = (layer[node], device[node])
            groups.setdefault(key, Island(device[node])).nodes.append(node)
    islands = [groups[k] for k in sorted(groups)]
    _wire(graph, islands)
    return islands


def _reads(node: Node) -> Iterable[Value]:
    return (v for v in node.inputs if v is not None)


def _wire(graph: Graph, islands: list[Island]) -> None:
    home: dict[Value, Island] = {}
    for island in islands:
        for node in island.nodes:
            for v in node.outputs:
                home[v] = island
    needed: dict[Island, list[Value]] = {i: [] for i in islands}
    for island in islands:
        seen: set[Value] = set()
        for node in island.nodes:
            for v in _reads(node):
                if v in seen or v.constant is not None or home.get(v) is island:
                    continue
                seen.add(v)
                island.inputs.append(v)
                if v in home:
                    needed[home[v]].append(v)
    for v in graph.outputs:
        if v in home:
            needed[home[v]].append(v)
    for island in islands:
        island.outputs = list(dict.fromkeys(needed[island]))


__all__ = ["HOST", "XLA", "Island", "Placement", "partition", "place", "why_not"]
