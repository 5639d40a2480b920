"""Whole-network checks, and where each tensor lives: which loop, nested in which.

Nesting is inferred from data flow, as TensorRT does. For every tensor we compute the set of
loops whose iterations it varies with: an iterator's or recurrence's output varies with its own
loop and with everything that loop depends on; an interior layer's output with the union of its
inputs'; a loop output with everything its loop depends on. A loop B depends on loop A (B is
nested in A) when B's boundary layers consume a tensor that varies with A. The sets grow to a
fixed point through the recurrences' back edges. The network is cleanly nested when no two
loops depend on each other and every tensor's loops form one chain; a tensor then lives in the
innermost loop of its set.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import NetworkError
from .layers import ILayer, ITensor, static_value
from .loops import (
    IIteratorLayer,
    ILoop,
    ILoopOutputLayer,
    IRecurrenceLayer,
    TripLimit,
)

if TYPE_CHECKING:
    from .network import Network

Loops = frozenset[ILoop]


@dataclass
class Analysis:
    """What lowering needs: a layer order, each loop's parent and each tensor's loop."""

    order: list[ILayer]
    parent: dict[ILoop, ILoop | None]
    scope: dict[ITensor, ILoop | None]
    varies: dict[ITensor, Loops] = field(default_factory=dict)

    def static_trip_count(self, loop: ILoop) -> int | None:
        """n when the loop has a constant COUNT limit and no WHILE limit."""
        if TripLimit.WHILE in loop.trip_limits or TripLimit.COUNT not in loop.trip_limits:
            return None
        value = static_value(loop.trip_limits[TripLimit.COUNT].tensor)
        return None if value is None else max(int(value), 0)


def analyze(net: Network) -> Analysis:
    problems: list[str] = []
    _check_layers(net, problems)
    if problems:
        raise _error(net, problems)
    order = _forward_order(net, problems)
    if problems:
        raise _error(net, problems)
    varies, uses, witness = _fixed_point(net, order)
    depth = {loop: len(uses[loop]) for loop in net.loops}
    _check_nesting(net, varies, uses, witness, problems)
    if problems:
        raise _error(net, problems)
    problems = _check_loop_cycles(net, order, uses)
    if problems:
        raise _error(net, problems)
    parent = {loop: max(uses[loop], key=depth.__getitem__, default=None) for loop in net.loops}
    scope = {t: max(s, key=depth.__getitem__, default=None) for t, s in varies.items()}
    analysis = Analysis(order, parent, scope, varies)
    _check_placement(net, analysis, problems)
    if problems:
        raise _error(net, problems)
    return analysis


def _error(net: Network, problems: list[str]) -> NetworkError:
    if len(problems) == 1:
        return NetworkError(f"network '{net.name}': {problems[0]}")
    listed = "\n".join(f"  - {p}" for p in problems)
    return NetworkError(f"network '{net.name}' breaks {len(problems)} rules:\n{listed}")


def _check_layers(net: Network, problems: list[str]) -> None:
    """Each loop complete, each layer typable with its current inputs and settings."""
    for loop in net.loops:
        if not loop.trip_limits:
            problems.append(
                f"loop '{loop.name}' has no trip limit; add one with "
                "add_trip_limit(t, TripLimit.COUNT) or add_trip_limit(t, TripLimit.WHILE)"
            )
        for rec in loop.recurrences:
            if rec.num_inputs < 2 or rec.get_input(1) is None:
                problems.append(
                    f"{rec.describe()} has no second input; set the next value with "
                    "set_input(1, tensor)"
                )
        for out in loop.outputs:
            if out.stacked and (out.num_inputs < 2 or out.get_input(1) is None):
                problems.append(
                    f"{out.describe()} is {out.kind.name} but has no length; set a 0-D int32 "
                    "length with set_input(1, tensor)"
                )
    net.clear_types()
    for layer in net.layers:
        try:
            net.output_types(layer)
            if isinstance(layer, IRecurrenceLayer) and layer.num_inputs == 2:
                layer.check_next()
        except NetworkError as exc:
            problems.append(str(exc))


def _inputs(layer: ILayer, back_edges: bool = False) -> list[tuple[int, ITensor]]:
    return [
        (i, t)
        for i, t in enumerate(layer.inputs)
        if t is not None and (back_edges or i not in layer.back_edge_inputs)
    ]


def _forward_order(net: Network, problems: list[str]) -> list[ILayer]:
    """The layers in an order where each comes after what it reads, back edges left out."""
    layers = net.layers
    pending = {layer: len(_inputs(layer)) for layer in layers}
    readers: dict[ILayer, list[ILayer]] = defaultdict(list)
    for layer in layers:
        for _, t in _inputs(layer):
            if t.producer is None:
                pending[layer] -= 1
            else:
                readers[t.producer].append(layer)
    ready = [layer for layer in layers if pending[layer] == 0]
    order: list[ILayer] = []
    while ready:
        layer = ready.pop()
        order.append(layer)
        for reader in readers[layer]:
            pending[reader] -= 1
            if pending[reader] == 0:
                ready.append(reader)
    if len(order) < len(layers):
        stuck = [layer.name for layer in layers if pending[layer] > 0]
        problems.append(
            f"layers {stuck} form a cycle; the only back edge TensorRT allows is a recurrence "
            "layer's second input"
        )
    return order


def _boundary_reads(loop: ILoop) -> list[tuple[ITensor, ILayer]]:
    """Every tensor the boundary layers of ``loop`` read, back edges included."""
    return [(t, layer) for layer in loop.boundary_layers for _, t in _inputs(layer, True)]


def _check_loop_cycles(net: Network, order: list[ILayer], uses: dict[ILoop, Loops]) -> list[str]:
    """A loop's outputs exist once it has finished, so nothing the loop reads may depend on
    one. For each tensor: the loops whose outputs it depends on, grown to a fixed point. A
    recurrence's next value is read on the iteration after, so the loops nested in its loop,
    which ran on the iteration before, drop out there."""
    loops = net.loops
    inner = {p: {q for q in loops if p in uses[q]} for p in loops}
    after: dict[ITensor, Loops] = {t: frozenset() for t in net.inputs}

    def reads(layer: ILayer) -> Loops:
        found: set[ILoop] = set()
        for i, x in _inputs(layer, True):
            deps = after.get(x, frozenset())
            if i in layer.back_edge_inputs and isinstance(layer, IRecurrenceLayer):
                deps = deps - inner[layer.loop]
            found |= deps
        return frozenset(found)

    changed = True
    while changed:
        changed = False
        for layer in order:
            found = reads(layer)
            if isinstance(layer, ILoopOutputLayer):
                boundary = layer.loop.boundary_layers
                found = found.union({layer.loop}, *(reads(b) for b in boundary))
            for t in layer.outputs:
                if after.get(t) != found:
                    after[t], changed = found, True
    problems = []
    for loop in loops:
        for t, layer in _boundary_reads(loop):
            if loop in after.get(t, frozenset()):
                problems.append(
                    f"{layer.describe()} reads tensor '{t.name}', which depends on an output of "
                    f"loop '{loop.name}' itself; a loop's outputs exist only once it has finished"
                )
                break
    return problems


Witness = tuple[ITensor, ILayer]


def _fixed_point(
    net: Network, order: list[ILayer]
) -> tuple[dict[ITensor, Loops], dict[ILoop, Loops], dict[tuple[ILoop, ILoop], Witness]]:
    loops = net.loops
    varies: dict[ITensor, Loops] = {t: frozenset() for t in net.inputs}
    uses: dict[ILoop, Loops] = {loop: frozenset() for loop in loops}
    witness: dict[tuple[ILoop, ILoop], Witness] = {}
    consumed = {loop: _boundary_reads(loop) for loop in loops}
    changed = True
    while changed:
        changed = False
        for layer in order:
            for t in layer.outputs:
                if isinstance(layer, IIteratorLayer | IRecurrenceLayer):
                    new = varies[layer.required_input(0)] | uses[layer.loop] | {layer.loop}
                elif isinstance(layer, ILoopOutputLayer):
                    new = uses[layer.loop]
                else:
                    new = frozenset().union(*(varies[x] for _, x in _inputs(layer)))
                if varies.get(t) != new:
                    varies[t], changed = new, True
        for loop in loops:
            found: set[ILoop] = set()
            for t, layer in consumed[loop]:
                for other in varies.get(t, frozenset()) - {loop}:
                    witness.setdefault((loop, other), (t, layer))
                    found.add(other)
            if frozenset(found) != uses[loop]:
                uses[loop], changed = frozenset(found), True
    return varies, uses, witness


def _check_nesting(
    net: Network,
    varies: dict[ITensor, Loops],
    uses: dict[ILoop, Loops],
    witness: dict[tuple[ILoop, ILoop], Witness],
    problems: list[str],
) -> None:
    def why(a: ILoop, b: ILoop) -> str:
        t, layer = witness[(a, b)]
        where = layer.describe()
        return f"'{a.name}' reads tensor '{t.name}' (at {where}), defined inside '{b.name}'"

    loops = net.loops
    for i, a in enumerate(loops):
        for b in loops[i + 1 :]:
            if b in uses[a] and a in uses[b]:
                problems.append(
                    f"loops '{a.name}' and '{b.name}' are not cleanly nested: {why(a, b)}, and "
                    f"{why(b, a)}; values leave a loop only through its loop output layers"
                )
    for loop in loops:
        for a, b in _unrelated(uses[loop], uses):
            problems.append(
                f"loop '{loop.name}' is inside both '{a.name}' and '{b.name}', which are not "
                f"nested in one another ({why(loop, a)}; {why(loop, b)})"
            )
    if problems:
        return
    for layer in net.layers:
        for t in layer.outputs:
            for a, b in _unrelated(varies.get(t, frozenset()), uses):
                problems.append(
                    f"{layer.describe()} mixes values from loops '{a.name}' and '{b.name}', "
                    "which are not nested in one another"
                )


def _unrelated(loops: Loops, uses: dict[ILoop, Loops]) -> Iterator[tuple[ILoop, ILoop]]:
    """The pairs of ``loops`` neither of which is nested in the other."""
    ordered = sorted(loops, key=lambda x: x.name)
    for j, a in enumerate(ordered):
        for b in ordered[j + 1 :]:
            if a not in uses[b] and b not in uses[a]:
                yield a, b


def _check_placement(net: Network, analysis: Analysis, problems: list[str]) -> None:
    """What must come from outside a loop does; outputs are outside every loop; iterators stay
    in bounds where that is known before running."""
    varies = analysis.varies
    for loop in net.loops:
        outside: list[tuple[ILayer, int, str]] = []
        for it in loop.iterators:
            outside.append((it, 0, "the tensor an iterator reads"))
        for rec in loop.recurrences:
            outside.append((rec, 0, "a recurrence's initial value"))
        for kind, limit in loop.trip_limits.items():
            if kind is TripLimit.COUNT:
                outside.append((limit, 0, "a COUNT limit"))
        for out in loop.outputs:
            if out.stacked:
                outside.append((out, 1, "a loop output's length"))
        for layer, index, role in outside:
            t = layer.get_input(index) if index < layer.num_inputs else None
            if t is not None and loop in varies[t]:
                problems.append(
                    f"{layer.describe()}: input {index} (tensor '{t.name}') is computed inside "
                    f"loop '{loop.name}', but {role} must come from outside the loop"
                )
        _check_static_bounds(loop, analysis, problems)
    outputs = net.outputs
    for t in outputs:
        inner = analysis.scope.get(t) if t.producer is not None else None
        if inner is not None:
            problems.append(
                f"network output '{t.name}' is computed inside loop '{inner.name}'; values "
                "leave a loop only through a loop output layer"
            )
    names = [t.name for t in outputs]
    clashes = {n for n in names if names.count(n) > 1} | (
        set(names) & {t.name for t in net.inputs if not t.is_network_output}
    )
    if clashes:
        problems.append(f"network outputs need names of their own; {sorted(clashes)} are shared")


def _check_static_bounds(loop: ILoop, analysis: Analysis, problems: list[str]) -> None:
    limit = loop.trip_limits.get(TripLimit.COUNT)
    value = None if limit is None else static_value(limit.tensor)
    if TripLimit.WHILE in loop.trip_limits:
        value = None  # the WHILE limit may stop the loop first: the run checks it
    count = None if value is None else int(value)
    for it in loop.iterators if count is not None else ():
        length = it.source_length
        if isinstance(length, int) and count is not None and count > length:
            problems.append(
                f"{it.describe()} would read {count} slices along axis {it.axis} of "
                f"tensor '{it.source.name}', which has {length}; iterating past a tensor's "
                "bounds is invalid"
            )
    trips = analysis.static_trip_count(loop)
    for out in loop.outputs:
        length_t = out.get_input(1) if out.stacked and out.num_inputs > 1 else None
        value = None if length_t is None else static_value(length_t)
        if trips is not None and value is not None and int(value) < trips:
            problems.append(
                f"{out.describe()} has length {int(value)}, less than the loop's {trips} iterations"
            )
