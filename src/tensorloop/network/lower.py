"""A network as canonical Loops.

Each ILoop becomes one Loop node in the graph of the loop it is nested in:

* recurrences are carried values (initial value in, ``set_input(1)`` value as the next);
* iterators are sliced inputs (axis, reverse); tensors from outer scopes become invariants;
* a COUNT limit is the max trip count;
* a WHILE limit's X_0 (its value on iteration 0, with recurrences at their initial values and
  iterators at their first slices) is the initial condition, computed before the loop, and its
  X_{i+1} is the continue condition, computed at the end of iteration i: the limit's cone of
  layers is emitted a second time with recurrences at their next values and iterators at the
  next slice;
* LAST_VALUE outputs are final carried values; CONCATENATE and REVERSE outputs are stacked
  results (REVERSE stacked last first), padded with zero rows to their length input.

Where TensorRT makes something a run-time error the model checks it with a Check node: a length
below the iterations run, and an iterator that runs out before the trip limit stops the loop
(canonical Loops stop at the shortest sliced input; TensorRT forbids reading past it).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..ir.emit import Emitter
from ..ir.graph import Graph, Value
from ..ir.loop import ITERATION_TYPE, Loop, Sliced, Stacked
from ..model import Model
from ..passes import eliminate_dead_code, fold_constants
from ..tensor.dtypes import DType
from ..tensor.types import TensorType
from .analysis import Analysis, analyze, limit_reads
from .layers import ITensor, as_int64, static_value
from .loops import (
    IIteratorLayer,
    ILoop,
    ILoopOutputLayer,
    IRecurrenceLayer,
    LoopOutput,
    TripLimit,
)
from .network import Network

COUNTER_TYPE = TensorType(DType.int64, ())
FLAG_TYPE = TensorType(DType.bool, ())


def lower(net: Network, name: str, max_iterations: int) -> Model:
    analysis = analyze(net)
    graph = Graph(name)
    top = _Env(analysis, graph, None, None, named=True)
    for t in net.inputs:
        top.memo[t] = graph.add_input(t.name, t.type)
    graph.set_outputs([top.value(t) for t in net.outputs])
    fold_constants(graph)
    eliminate_dead_code(graph)
    _name_outputs(graph, [t.name for t in net.outputs])
    return Model(graph, max_iterations=max_iterations)


def _name_outputs(graph: Graph, names: list[str]) -> None:
    """Each result under its tensor's name (``Graph.result_named``)."""
    outputs, graph.outputs = list(graph.outputs), []
    for v, name in zip(outputs, names, strict=True):
        graph.outputs.append(graph.result_named(v, name))


class _Env:
    """Where the tensors of one scope (the top level or a loop) become values of one graph."""

    def __init__(
        self,
        analysis: Analysis,
        graph: Graph,
        loop: ILoop | None,
        parent: _Env | None,
        named: bool = False,
    ) -> None:
        self.analysis = analysis
        self.graph = graph
        self.em = Emitter(graph)
        self.loop = loop
        self.parent = parent
        self.named = named
        self.memo: dict[ITensor, Value] = {}

    def value(self, t: ITensor) -> Value:
        v = self.memo.get(t)
        if v is not None:
            return v
        if self.analysis.scope.get(t) is not self.loop:
            self.memo[t] = v = self._outside(t)
            return v
        layer = t.producer
        assert layer is not None, "network inputs are bound before lowering starts"
        if isinstance(layer, IIteratorLayer | IRecurrenceLayer):
            self.bind(t, self._boundary(layer))
        elif isinstance(layer, ILoopOutputLayer):
            _LoopLowering(self, layer.loop).emit()
        else:
            args = [None if x is None else self.value(x) for x in layer.inputs]
            for out, v in zip(layer.outputs, layer.emit(self.em, args), strict=True):
                self.bind(out, v)
        return self.memo[t]

    def bind(self, t: ITensor, v: Value) -> None:
        self.memo[t] = v
        if self.named and v.producer is not None:  # parameters keep their own names
            self.graph.rename(v, t.name)

    def _outside(self, t: ITensor) -> Value:
        """A tensor of an enclosing scope."""
        assert self.parent is not None, "the top level encloses every scope"
        return self.parent.value(t)

    def _boundary(self, layer: IIteratorLayer | IRecurrenceLayer) -> Value:
        raise AssertionError(f"{layer.describe()} is bound when its loop's body is made")


class _Body(_Env):
    """A loop's body graph: tensors from enclosing scopes become invariant parameters."""

    def __init__(self, analysis: Analysis, graph: Graph, loop: ILoop, parent: _Env) -> None:
        super().__init__(analysis, graph, loop, parent, named=True)
        self.invariants: list[ITensor] = []

    def _outside(self, t: ITensor) -> Value:
        self.invariants.append(t)
        return self.graph.add_input(t.name, t.type)


class _Shifted(_Env):
    """A loop's tensors on another iteration than the body's, for its WHILE limit: iteration 0
    (emitted before the loop) or the next one (emitted at the end of the body)."""

    def __init__(
        self,
        parent: _Env,
        loop: ILoop,
        element: Callable[[IIteratorLayer | IRecurrenceLayer], Value],
    ) -> None:
        super().__init__(parent.analysis, parent.graph, loop, parent)
        self.element = element

    def _boundary(self, layer: IIteratorLayer | IRecurrenceLayer) -> Value:
        return self.element(layer)


def _int64(env: _Env, t: ITensor) -> Value:
    """A count or length as the int64 scalar canonical Loops take (a constant stays one)."""
    static = static_value(t)  # a constant read in a body would otherwise be an invariant
    if static is not None:
        return env.em.ints(int(static))
    return as_int64(env.em, env.value(t))


def _axis_length(em: Emitter, src: Value, axis: int) -> Value:
    shape = src.tensor_type.shape
    assert shape is not None
    if isinstance(shape[axis], int):
        return em.ints(int(shape[axis]))
    return em.op("Gather", [em.op("Shape", [src]), em.ints(axis)])


class _LoopLowering:
    """One ILoop as a Loop node in ``outer``'s graph; binds its outputs in ``outer``."""

    def __init__(self, outer: _Env, loop: ILoop) -> None:
        self.outer = outer
        self.loop = loop
        self.count = loop.trip_limits.get(TripLimit.COUNT)
        self.limit = loop.trip_limits.get(TripLimit.WHILE)
        self.guarded = self._needs_guard()

    def _needs_guard(self) -> bool:
        """Whether an iterator might run out before the trip limit stops the loop."""
        if not self.loop.iterators:
            return False
        count = None if self.count is None else static_value(self.count.tensor)
        if count is None:
            return True
        for it in self.loop.iterators:
            length = it.source_length
            if not isinstance(length, int) or length < int(count):
                return True
        return False

    def emit(self) -> None:
        loop, outer = self.loop, self.outer
        graph = Graph(loop.name)
        body = _Body(outer.analysis, graph, loop, outer)
        iteration = graph.add_input("iteration", ITERATION_TYPE)
        for rec in loop.recurrences:
            out = rec.get_output(0)
            body.memo[out] = graph.add_input(out.name, out.type)
        trips = graph.add_input("trips", COUNTER_TYPE) if self.guarded else None
        if self.guarded and self.limit is not None:
            graph.add_input("running", FLAG_TYPE)
        for it in loop.iterators:
            out = it.get_output(0)
            body.memo[out] = graph.add_input(out.name, out.type)

        if self.limit is not None:
            following = _Shifted(body, loop, lambda b: self._next(b, body, iteration))
            cond = following.value(self.limit.tensor)
        else:
            cond = body.em.const(np.bool_(True))
        carried = [body.value(rec.next_value) for rec in loop.recurrences]
        if trips is not None:
            carried.append(body.em.op("Add", [trips, body.em.ints(1)]))
            if self.limit is not None:
                carried.append(cond)
        stacked = [o for o in loop.outputs if o.stacked]
        graph.set_outputs([cond, *carried, *(body.value(o.value) for o in stacked)])

        em = outer.em
        trip = None if self.count is None else _int64(outer, self.count.tensor)
        first_cond = None
        if self.limit is not None:
            first = _Shifted(outer, loop, self._first)
            first_cond = first.value(self.limit.tensor)
        inits = [outer.value(rec.initial) for rec in loop.recurrences]
        if self.guarded:
            inits.append(em.ints(0))
            if first_cond is not None:
                inits.append(first_cond)
        sources = [outer.value(it.source) for it in loop.iterators]
        invariants = [outer.value(t) for t in body.invariants]
        outs = Loop.build(
            em,
            graph,
            max_trip_count=trip,
            initial_condition=first_cond,
            carried=inits,
            sliced=[
                (src, Sliced(it.source_axis, it.reverse))
                for src, it in zip(sources, loop.iterators, strict=True)
            ],
            invariants=invariants,
            stacked=[Stacked(o.axis, reverse=o.kind is LoopOutput.REVERSE) for o in stacked],
            name=loop.name,
        ).outputs
        k = len(loop.recurrences)
        results = [*outs[:k], *outs[len(inits) :]]
        if self.guarded:
            running = outs[k + 1] if first_cond is not None else None
            results = self._guard(outs[k], running, trip, results)
        finals, stacked_values = results[:k], results[k:]
        for o in loop.outputs:
            if o.stacked:
                v = self._pad(o, stacked_values[stacked.index(o)])
            else:
                producer = o.value.producer
                assert isinstance(producer, IRecurrenceLayer)
                v = finals[loop.recurrences.index(producer)]
            outer.bind(o.get_output(0), v)

    def _next(self, layer: IIteratorLayer | IRecurrenceLayer, body: _Body, i: Value) -> Value:
        """Iteration i+1's value, inside the body of iteration i."""
        if isinstance(layer, IRecurrenceLayer):
            return body.value(layer.next_value)
        em, src = body.em, body.value(layer.source)
        axis = layer.source_axis
        last = em.op("Sub", [_axis_length(em, src, axis), em.ints(1)])
        # clamped: on the last slice the loop stops whatever this says, and the guard reports
        # a limit that would have read past the end
        k = em.op("Min", [em.op("Add", [i, em.ints(1)]), last])
        if layer.reverse:
            k = em.op("Sub", [last, k])
        return em.op("Gather", [src, k], {"axis": axis})

    def _first(self, layer: IIteratorLayer | IRecurrenceLayer) -> Value:
        """Iteration 0's value, before the loop."""
        if isinstance(layer, IRecurrenceLayer):
            return self.outer.value(layer.initial)
        em, src = self.outer.em, self.outer.value(layer.source)
        axis = layer.source_axis
        length = _axis_length(em, src, axis)
        if length.constant is None or int(length.constant) == 0:
            message = (
                f"{layer.describe()}: the WHILE limit reads its first slice, but tensor "
                f"'{layer.source.name}' has length 0 along axis {axis}"
            )
            ok = em.op("Greater", [length, em.ints(0)])
            src = em.op("Check", [ok, src], {"message": message})
        k = em.op("Sub", [length, em.ints(1)]) if layer.reverse else em.ints(0)
        return em.op("Gather", [src, k], {"axis": axis})

    def _guard(
        self, trips: Value, running: Value | None, trip: Value | None, values: list[Value]
    ) -> list[Value]:
        """Fail the run where an iterator ran out while the trip limit would go on."""
        em, reads = self.outer.em, limit_reads(self.loop, self.outer.analysis)
        for it in self.loop.iterators:
            axis = it.source_axis
            length = _axis_length(em, self.outer.value(it.source), axis)
            bad = em.op("Equal", [trips, length])
            if trip is not None:
                bad = em.op("And", [bad, em.op("Less", [trips, trip])])
            if running is not None and it not in reads:
                bad = em.op("And", [bad, running])
            message = (
                f"{it.describe()}: tensor '{it.source.name}' ran out of slices along axis "
                f"{axis} before the trip limit stopped the loop; iterating past a tensor's "
                "bounds is invalid"
            )
            values = em.ops("Check", [em.op("Not", [bad]), *values], {"message": message})
        return values

    def _pad(self, o: ILoopOutputLayer, s: Value) -> Value:
        """The stacked rows, then zero rows up to the length (REVERSE: the zero rows first)."""
        em, length_t = self.outer.em, o.length
        shape = s.tensor_type.shape
        assert shape is not None
        zero = np.zeros(1, s.tensor_type.dtype.numpy)
        static = static_value(length_t)
        if static is not None and all(isinstance(d, int) for d in shape):
            rows = [int(d) for d in shape]
            if rows[o.axis] == int(static):
                return s
            rows[o.axis] = int(static) - rows[o.axis]  # not negative: analyze() checks that
            zeros = em.op("ConstantOfShape", [em.ints(rows)], {"value": zero})
            pieces = [zeros, s] if o.kind is LoopOutput.REVERSE else [s, zeros]
            return em.op("Concat", pieces, {"axis": o.axis})
        length = _int64(self.outer, length_t)
        extra = em.op("Sub", [length, _axis_length(em, s, o.axis)])
        message = (
            f"{o.describe()}: its length (tensor '{length_t.name}') is less than the number "
            "of iterations the loop ran"
        )
        extra = em.op(
            "Check", [em.op("GreaterOrEqual", [extra, em.ints(0)]), extra], {"message": message}
        )
        parts = [
            em.op("Shape", [s], {"end": o.axis}),
            em.op("Unsqueeze", [extra, em.ints([0])]),
            em.op("Shape", [s], {"start": o.axis + 1}),
        ]
        zeros = em.op("ConstantOfShape", [em.op("Concat", parts, {"axis": 0})], {"value": zero})
        pieces = [zeros, s] if o.kind is LoopOutput.REVERSE else [s, zeros]
        padded = em.op("Concat", pieces, {"axis": o.axis})
        if static is None:
            return padded
        # a constant length is known whatever the trips: say so in the type (0 copies a dim)
        pinned = [0] * len(shape)
        pinned[o.axis] = int(static)
        return em.op("Reshape", [padded, em.ints(pinned)])
