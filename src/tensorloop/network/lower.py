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

The spec's sequences are lazy, but a WHILE limit's X_0 and X_{i+1} are computed before the loop
knows it needs them (it does not where the COUNT limit stops it first). They are computed
speculatively: whatever would be an error there (the slice after an iterator's last, a Check in
a nested loop) is a taint carried with the values instead, and the limit's loop fails the run
only where the limit's value is needed and tainted (see ``_Env``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..ir.emit import Emitter
from ..ir.graph import Graph, Value
from ..ir.loop import ITERATION_TYPE, Loop, Sliced, Stacked
from ..model import Model
from ..passes import eliminate_dead_code, fold_constants
from ..tensor.dtypes import DType
from ..tensor.types import TensorType
from .analysis import Analysis, analyze
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
from .shape_layers import IGatherLayer, IShapeLayer

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
    """Where the tensors of one scope (the top level or a loop) become values of one graph.

    A speculative scope computes values the spec may not need: a WHILE limit's X_0, which the
    loop does not need when its count is 0, and X_{i+1}, which it does not need when the count
    stops it after iteration i, with everything they read (nested loops included). There, what
    would fail the run (an iterator read past its end, any Check) does not: it is a taint, a
    0-D bool that is true where the value is invalid, carried along with the value to whatever
    reads it. The limit's loop fails the run only where the limit's value is needed and tainted.
    """

    def __init__(
        self,
        analysis: Analysis,
        graph: Graph,
        loop: ILoop | None,
        parent: _Env | None,
        named: bool = False,
        speculative: bool = False,
    ) -> None:
        self.analysis = analysis
        self.graph = graph
        self.loop = loop
        self.parent = parent
        self.named = named
        self.speculative = speculative
        self.em = _SpeculativeEmitter(self) if speculative else Emitter(graph)
        self.memo: dict[ITensor, Value] = {}
        self.taints: dict[ITensor, Value] = {}  # the tensors that may be invalid
        # what a speculative scope's taints may stand for (shared by the scopes it encloses),
        # and the taints the layer being emitted raised
        shared = parent is not None and parent.speculative
        self.faults: list[str] = parent.faults if parent is not None and shared else []
        self.raised: list[Value] = []

    def value(self, t: ITensor) -> Value:
        v = self.memo.get(t)
        if v is not None:
            return v
        if self.analysis.scope.get(t) is not self.loop:
            v, taint = self._outside(t)
            self.memo[t] = v
            if taint is not None:
                self.taints[t] = taint
            return v
        layer = t.producer
        assert layer is not None, "network inputs are bound before lowering starts"
        if isinstance(layer, IIteratorLayer | IRecurrenceLayer):
            self.bind(t, *self._boundary(layer))
        elif isinstance(layer, ILoopOutputLayer):
            _LoopLowering(self, layer.loop).emit()
        else:
            args = [None if x is None else self.value(x) for x in layer.inputs]
            reads = [self.taints.get(x) for x in layer.inputs if x is not None]
            self.raised = []
            outs = layer.emit(self.em, args)
            taint = _any(self.em, [*reads, *self.raised])
            for out, v in zip(layer.outputs, outs, strict=True):
                self.bind(out, v, taint)
        return self.memo[t]

    def taint(self, t: ITensor) -> Value | None:
        """Where ``t``'s value is invalid (None: never)."""
        self.value(t)
        return self.taints.get(t)

    def bind(self, t: ITensor, v: Value, taint: Value | None = None) -> None:
        self.memo[t] = v
        if taint is not None:
            self.taints[t] = taint
        if self.named and v.producer is not None:  # parameters keep their own names
            self.graph.rename(v, t.name)

    def fail_if(
        self, bad: Value, values: list[Value], message: str
    ) -> tuple[list[Value], Value | None]:
        """The spec makes the run an error where ``bad``: a Check on ``values``, or in a
        speculative scope, ``values`` unchecked and ``bad`` as the taint of what they make."""
        if not self.speculative:
            ok = self.em.op("Not", [bad])
            return self.em.ops("Check", [ok, *values], {"message": message}), None
        if message not in self.faults:
            self.faults.append(message)
        return values, bad

    def _outside(self, t: ITensor) -> tuple[Value, Value | None]:
        """A tensor of an enclosing scope, and its taint."""
        assert self.parent is not None, "the top level encloses every scope"
        return self.parent.value(t), self.parent.taint(t)

    def _boundary(self, layer: IIteratorLayer | IRecurrenceLayer) -> tuple[Value, Value | None]:
        raise AssertionError(f"{layer.describe()} is bound when its loop's body is made")


class _SpeculativeEmitter(Emitter):
    """A speculative scope's emitter: a layer's Check becomes a taint on its outputs."""

    def __init__(self, env: _Env) -> None:
        super().__init__(env.graph)
        self.env = env

    def ops(
        self,
        op: str,
        inputs: Sequence[Value | None],
        attrs: Mapping[str, Any] | None = None,
        name: str = "",
        output_names: Sequence[str] | None = None,
    ) -> list[Value]:
        if op != "Check":
            return super().ops(op, inputs, attrs, name, output_names)
        ok, *values = inputs
        assert ok is not None and attrs is not None and all(v is not None for v in values)
        checked = [v for v in values if v is not None]
        passed, bad = self.env.fail_if(self.op("Not", [ok]), checked, str(attrs["message"]))
        assert bad is not None
        self.env.raised.append(bad)
        return passed


def _any(em: Emitter, flags: Sequence[Value | None]) -> Value | None:
    """Whether any of ``flags`` is true (None: no flag can be)."""
    found = [f for f in flags if f is not None]
    if not found:
        return None
    out = found[0]
    for f in found[1:]:
        out = em.op("Or", [out, f])
    return out


def _flag(em: Emitter, flag: Value | None) -> Value:
    """``flag`` as a value (None: false)."""
    return em.const(np.bool_(False)) if flag is None else flag


def _both(em: Emitter, flag: Value | None, also: Value | None) -> Value | None:
    """``flag`` and ``also`` (None for ``also``: always true)."""
    if flag is None or also is None:
        return flag
    return em.op("And", [flag, also])


class _Body(_Env):
    """A loop's body graph: tensors from enclosing scopes become invariant parameters (with a
    second parameter for the taint of one that may be invalid)."""

    def __init__(self, analysis: Analysis, graph: Graph, loop: ILoop, parent: _Env) -> None:
        super().__init__(analysis, graph, loop, parent, True, parent.speculative)
        self.invariants: list[Value] = []

    def _outside(self, t: ITensor) -> tuple[Value, Value | None]:
        assert self.parent is not None
        self.invariants.append(self.parent.value(t))
        param = self.graph.add_input(t.name, t.type)
        taint = self.parent.taint(t)
        if taint is None:
            return param, None
        self.invariants.append(taint)
        return param, self.graph.add_input(f"{t.name}_invalid", FLAG_TYPE)


Element = tuple[Value, Value | None]


class _Shifted(_Env):
    """A loop's tensors on another iteration than the body's, for its WHILE limit: iteration 0
    (emitted before the loop) or the next one (emitted at the end of the body). Speculative."""

    def __init__(
        self,
        parent: _Env,
        loop: ILoop,
        element: Callable[[_Shifted, IIteratorLayer | IRecurrenceLayer], Element],
    ) -> None:
        super().__init__(parent.analysis, parent.graph, loop, parent, speculative=True)
        self.element = element

    def _boundary(self, layer: IIteratorLayer | IRecurrenceLayer) -> Element:
        return self.element(self, layer)


def _int64(env: _Env, t: ITensor) -> Value:
    """A count or length as the int64 scalar canonical Loops take (a constant stays one)."""
    static = static_value(t)  # a constant read in a body would otherwise be an invariant
    if static is not None:
        return env.em.ints(int(static))
    return as_int64(env.em, env.value(t))


def _is_length(t: ITensor, source: ITensor, axis: int) -> bool:
    """Whether ``t`` is the length of ``source`` along ``axis``: a gather of that entry of its
    shape."""
    layer = t.producer
    if not isinstance(layer, IGatherLayer) or layer.axis != 0:
        return False
    shape, index = layer.get_input(0), layer.get_input(1)
    picked = None if index is None else static_value(index)
    if shape is None or picked is None or picked.size != 1:
        return False
    of = shape.producer
    rank = len(source.shape)
    return (
        isinstance(of, IShapeLayer)
        and of.get_input(0) is source
        and rank > 0
        and int(picked.reshape(-1)[0]) % rank == axis
    )


def _same_count(length: ITensor, count: ITensor) -> bool:
    """Whether a CONCATENATE output's length is the loop's COUNT limit itself."""
    return length is count


def _axis_length(em: Emitter, src: Value, axis: int) -> Value:
    shape = src.tensor_type.shape
    assert shape is not None
    if isinstance(shape[axis], int):
        return em.ints(int(shape[axis]))
    return em.op("Gather", [em.op("Shape", [src]), em.ints(axis)])


def _zeros_like_slice(em: Emitter, src: Value, axis: int, rows: Value) -> Value:
    """Zeros shaped like ``src`` but with ``rows`` (a 0-D int64) along ``axis``."""
    parts = [
        em.op("Shape", [src], {"end": axis}),
        em.op("Unsqueeze", [rows, em.ints([0])]),
        em.op("Shape", [src], {"start": axis + 1}),
    ]
    zero = np.zeros(1, src.tensor_type.dtype.numpy)
    return em.op("ConstantOfShape", [em.op("Concat", parts, {"axis": 0})], {"value": zero})


class _LoopLowering:
    """One ILoop as a Loop node in ``outer``'s graph; binds its outputs in ``outer``.

    In a speculative scope the Loop also carries the taints: one per recurrence, one for the
    WHILE limit's values so far (they decide n, so every output depends on them) and one per
    stacked output (any of X_0 .. X_{n-1} invalid)."""

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
        if (
            self.count is not None
            and self.limit is None
            and all(
                _is_length(self.count.tensor, it.source, it.source_axis)
                for it in self.loop.iterators
            )
        ):
            return False  # counted by the iterators' own length: none runs out
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
        speculative = outer.speculative
        graph = Graph(loop.name)
        body = _Body(outer.analysis, graph, loop, outer)
        iteration = graph.add_input("iteration", ITERATION_TYPE)
        for rec in loop.recurrences:
            out = rec.get_output(0)
            body.memo[out] = graph.add_input(out.name, out.type)
        if speculative:
            for rec in loop.recurrences:
                out = rec.get_output(0)
                body.taints[out] = graph.add_input(f"{out.name}_invalid", FLAG_TYPE)
        trips = graph.add_input("trips", COUNTER_TYPE) if self.guarded else None
        if self.guarded and self.limit is not None:
            graph.add_input("running", FLAG_TYPE)
        stacked = [o for o in loop.outputs if o.stacked]
        limit_bad = None
        stacked_bad: list[Value] = []
        if speculative:
            if self.limit is not None:
                limit_bad = graph.add_input("limit_invalid", FLAG_TYPE)
            stacked_bad = [graph.add_input(f"{o.name}_invalid", FLAG_TYPE) for o in stacked]
        for it in loop.iterators:
            out = it.get_output(0)
            body.memo[out] = graph.add_input(out.name, out.type)

        em = body.em
        if self.limit is not None:
            following = _Shifted(body, loop, lambda env, b: self._next(env, b, body, iteration))
            cond = following.value(self.limit.tensor)
            bad = following.taint(self.limit.tensor)
            if bad is not None and self.count is not None:  # X_{i+1} is needed: i+1 < count
                more = em.op("Less", [em.op("Add", [iteration, em.ints(1)]), self._trip(body)])
                bad = _both(em, bad, more)
            if bad is not None and speculative:
                assert limit_bad is not None
                limit_bad = em.op("Or", [limit_bad, bad])
            elif bad is not None:
                what = "whether the next iteration runs"
                (cond,), _ = body.fail_if(bad, [cond], self._limit_message(what, following))
        else:
            cond = em.const(np.bool_(True))
        carried = [body.value(rec.next_value) for rec in loop.recurrences]
        if speculative:
            carried += [_flag(em, body.taint(rec.next_value)) for rec in loop.recurrences]
        if trips is not None:
            carried.append(em.op("Add", [trips, em.ints(1)]))
            if self.limit is not None:
                carried.append(cond)
        if limit_bad is not None:
            carried.append(limit_bad)
        for o, acc in zip(stacked, stacked_bad, strict=False):  # none unless speculative
            grown = body.taint(o.value)
            carried.append(acc if grown is None else em.op("Or", [acc, grown]))
        graph.set_outputs([cond, *carried, *(body.value(o.value) for o in stacked)])

        em = outer.em
        trip = None if self.count is None else self._trip(outer)
        first_cond = first_bad = None
        if self.limit is not None:
            first = _Shifted(outer, loop, self._first)
            first_cond = first.value(self.limit.tensor)
            bad = first.taint(self.limit.tensor)
            if bad is not None and trip is not None:  # X_0 is needed: the count is above 0
                bad = _both(em, bad, em.op("Greater", [trip, em.ints(0)]))
            if bad is not None:
                what = "whether the first iteration runs"
                message = self._limit_message(what, first)
                (first_cond,), first_bad = outer.fail_if(bad, [first_cond], message)
        inits = [outer.value(rec.initial) for rec in loop.recurrences]
        if speculative:
            inits += [_flag(em, outer.taint(rec.initial)) for rec in loop.recurrences]
        if self.guarded:
            inits.append(em.ints(0))
            if first_cond is not None:
                inits.append(first_cond)
        if speculative:
            if self.limit is not None:
                inits.append(_flag(em, first_bad))
            inits += [_flag(em, None) for _ in stacked]
        sources = [outer.value(it.source) for it in loop.iterators]
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
            invariants=body.invariants,
            stacked=[Stacked(o.axis, reverse=o.kind is LoopOutput.REVERSE) for o in stacked],
            name=loop.name,
        ).outputs
        finals = list(outs[: len(loop.recurrences)])
        rest = list(outs[len(finals) : len(inits)])
        stacked_values = list(outs[len(inits) :])
        rec_bad: list[Value | None] = [None] * len(finals)
        if speculative:
            rec_bad, rest = list(rest[: len(finals)]), rest[len(finals) :]
        # what decides n, so every output: the count, the sources, the limit's values, the guard
        common = [None if self.count is None else outer.taint(self.count.tensor)]
        common += [outer.taint(it.source) for it in loop.iterators]
        if self.guarded:
            running = rest[1] if self.limit is not None else None
            guarded, guard_bad = self._guard(rest[0], running, trip, [*finals, *stacked_values])
            finals, stacked_values = guarded[: len(finals)], guarded[len(finals) :]
            common += guard_bad
            rest = rest[1 + (self.limit is not None) :]
        if speculative and self.limit is not None:
            common.append(rest.pop(0))
        every = _any(em, common)
        for o in loop.outputs:
            if o.stacked:
                i = stacked.index(o)
                v, pad_bad = self._pad(o, stacked_values[i])
                bad = rest[i] if speculative else None
                taint = _any(em, [every, bad, outer.taint(o.length), pad_bad])
            else:
                producer = o.value.producer
                assert isinstance(producer, IRecurrenceLayer)
                i = loop.recurrences.index(producer)
                v, taint = finals[i], _any(em, [every, rec_bad[i]])
            outer.bind(o.get_output(0), v, taint)

    def _trip(self, env: _Env) -> Value:
        assert self.count is not None
        return _int64(env, self.count.tensor)

    def _limit_message(self, what: str, env: _Env) -> str:
        assert self.limit is not None
        return f"{self.limit.describe()}: its value deciding {what} is invalid: " + "; or ".join(
            env.faults
        )

    def _next(
        self, env: _Env, layer: IIteratorLayer | IRecurrenceLayer, body: _Body, i: Value
    ) -> Element:
        """Iteration i+1's value, inside the body of iteration i."""
        if isinstance(layer, IRecurrenceLayer):
            return body.value(layer.next_value), body.taint(layer.next_value)
        em, src = env.em, body.value(layer.source)
        axis = layer.source_axis
        length = _axis_length(em, src, axis)
        after = em.op("Add", [i, em.ints(1)])
        message = (
            f"{layer.describe()}: tensor '{layer.source.name}' ran out of slices along axis "
            f"{axis}, and the WHILE limit reads the slice after its last; iterating past a "
            "tensor's bounds is invalid"
        )
        _, past = env.fail_if(em.op("GreaterOrEqual", [after, length]), [], message)
        # clamped: a taint marks the slice past the end, and the loop stops on the last slice
        last = em.op("Sub", [length, em.ints(1)])
        k = em.op("Min", [after, last])
        if layer.reverse:
            k = em.op("Sub", [last, k])
        taint = _any(em, [body.taint(layer.source), past])
        return em.op("Gather", [src, k], {"axis": axis}), taint

    def _first(self, env: _Env, layer: IIteratorLayer | IRecurrenceLayer) -> Element:
        """Iteration 0's value, before the loop."""
        if isinstance(layer, IRecurrenceLayer):
            return env.value(layer.initial), env.taint(layer.initial)
        em, src = env.em, env.value(layer.source)
        taint = env.taint(layer.source)
        axis = layer.source_axis
        length = _axis_length(em, src, axis)
        k = em.op("Sub", [length, em.ints(1)]) if layer.reverse else em.ints(0)
        if length.constant is None or int(length.constant) == 0:
            message = (
                f"{layer.describe()}: the WHILE limit reads its first slice, but tensor "
                f"'{layer.source.name}' has length 0 along axis {axis}"
            )
            _, empty = env.fail_if(em.op("Equal", [length, em.ints(0)]), [], message)
            taint = _any(em, [taint, empty])
            # the slice (none where the tensor is empty), then a slice of zeros: read the first
            k = em.op("Max", [k, em.ints(0)])
            ends = em.op("Add", [k, em.ints(1)])
            unsqueeze = [em.ints([0])]
            starts, ends = (em.op("Unsqueeze", [x, *unsqueeze]) for x in (k, ends))
            piece = em.op("Slice", [src, starts, ends, em.ints([axis])])
            padding = _zeros_like_slice(em, src, axis, em.ints(1))
            src, k = em.op("Concat", [piece, padding], {"axis": axis}), em.ints(0)
        return em.op("Gather", [src, k], {"axis": axis}), taint

    def _guard(
        self, trips: Value, running: Value | None, trip: Value | None, values: list[Value]
    ) -> tuple[list[Value], list[Value | None]]:
        """Fail the run where an iterator ran out while the trip limit would go on (in a
        speculative scope: the taints saying so)."""
        outer = self.outer
        em, found = outer.em, list[Value | None]()
        for it in self.loop.iterators:
            axis = it.source_axis
            length = _axis_length(em, outer.value(it.source), axis)
            bad = em.op("Equal", [trips, length])
            if trip is not None:
                bad = em.op("And", [bad, em.op("Less", [trips, trip])])
            if running is not None:
                bad = em.op("And", [bad, running])
            message = (
                f"{it.describe()}: tensor '{it.source.name}' ran out of slices along axis "
                f"{axis} before the trip limit stopped the loop; iterating past a tensor's "
                "bounds is invalid"
            )
            values, taint = outer.fail_if(bad, values, message)
            found.append(taint)
        return values, found

    def _pad(self, o: ILoopOutputLayer, s: Value) -> tuple[Value, Value | None]:
        """The stacked rows, then zero rows up to the length (REVERSE: the zero rows first),
        and the taint of a length below the iterations run in a speculative scope."""
        outer, length_t = self.outer, o.length
        em = outer.em
        shape = s.tensor_type.shape
        assert shape is not None
        zero = np.zeros(1, s.tensor_type.dtype.numpy)
        static = static_value(length_t)
        if (
            self.count is not None
            and self.limit is None
            and not self.guarded
            and _same_count(length_t, self.count.tensor)
        ):
            return s, None  # the loop runs exactly its length: nothing to pad
        if static is not None and all(isinstance(d, int) for d in shape):
            rows = [int(d) for d in shape]
            if rows[o.axis] == int(static):
                return s, None
            rows[o.axis] = int(static) - rows[o.axis]  # not negative: analyze() checks that
            zeros = em.op("ConstantOfShape", [em.ints(rows)], {"value": zero})
            pieces = [zeros, s] if o.kind is LoopOutput.REVERSE else [s, zeros]
            return em.op("Concat", pieces, {"axis": o.axis}), None
        length = _int64(outer, length_t)
        extra = em.op("Sub", [length, _axis_length(em, s, o.axis)])
        message = (
            f"{o.describe()}: its length (tensor '{length_t.name}') is less than the number "
            "of iterations the loop ran"
        )
        short = em.op("Less", [extra, em.ints(0)])
        (extra,), bad = outer.fail_if(short, [extra], message)
        if bad is not None:  # invalid, but shaped as a valid one would be
            extra = em.op("Max", [extra, em.ints(0)])
        zeros = _zeros_like_slice(em, s, o.axis, extra)
        pieces = [zeros, s] if o.kind is LoopOutput.REVERSE else [s, zeros]
        padded = em.op("Concat", pieces, {"axis": o.axis})
        if bad is not None:
            ends = em.op("Unsqueeze", [length, em.ints([0])])
            padded = em.op("Slice", [padded, em.ints([0]), ends, em.ints([o.axis])])
        if static is None:
            return padded, bad
        # a constant length is known whatever the trips: say so in the type (0 copies a dim)
        pinned = [0] * len(shape)
        pinned[o.axis] = int(static)
        return em.op("Reshape", [padded, em.ints(pinned)]), bad
