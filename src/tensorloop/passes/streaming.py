"""make_step: a model whose loops run over a time axis, as a step that runs one chunk per call.

LowLatency2's idea for the canonical Loop. A top-level Loop that slices a *sequence input* (or
a value computed from one a time step at a time) runs over time; split the sequence into chunks
and the loop over the whole sequence is the loop over each chunk in turn, its carried values
handed from one chunk's loop to the next. So the step graph is the model itself, where

- each carried value's initial value is a *state input*, and its final value also a *state
  output* (the next chunk's state); the *init graph* computes the first chunk's state from the
  inputs, as the model did;
- a loop whose body reads the iteration number, or whose trip count is not the sequence's
  length, carries the time step as one more state (the body reads it where it read the
  iteration; the trip count left is the count less the steps already run);
- everything outside the loops computes each time step from that step alone (elementwise
  maths, projections, transposes and reshapes that keep the time axis, reductions over other
  axes) and so runs on a chunk as on the whole sequence.

``time_axis.Analysis`` proves that last point value by value, with the time axis of each
(``Timed``): an output computed a step at a time is the chunks' outputs joined on that axis; a
value computed from a loop's final carried values only (a *read-out*, such as the last hidden
state or a classifier over it) is, after the last chunk, what the whole run gives. What cannot
be streamed is refused with ``StreamingError`` naming the value: a reduction, convolution or
attention over the time axis, a loop that slices in reverse or can stop early, a loop that
reads the whole sequence in each iteration, a value that uses the sequence's length other than
as the time dimension or a loop's trip count.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from ..errors import StreamingError, TensorloopError
from ..ir.emit import Emitter
from ..ir.graph import Graph, Node, Value, clone_graph, copy_node, upstream
from ..ir.loop import ITERATION_TYPE, Loop
from ..ir.opdef import infer_types
from ..tensor.types import TensorType, normalize_axis
from .dead_code import eliminate_dead_code
from .loop_forms import count_while_loops, pass_through_invariants, slice_indexed_reads
from .loop_rewrite import loop_roles, rebuild_roles
from .sequences import lower_sequences
from .time_axis import (
    READOUT,
    AllLength,
    Analysis,
    Dims,
    LengthDependent,
    Timed,
    TimeIndex,
    Whole,
    find_sequence_inputs,
    why_no_sequence,
)

OutputRole = Literal["sequence", "readout", "static"]


@dataclass(frozen=True)
class State:
    """One value a stream carries from chunk to chunk: the step graph's input ``name`` and its
    output ``next``; ``type`` as the model declares it (dims may be symbolic)."""

    name: str
    next: str
    type: TensorType
    origin: str
    """What it is: "carried %h of loop 'rnn'", "time step of loop 'rnn'" or "input 'state'"."""


@dataclass
class StepProgram:
    """A model made streamable: ``step`` runs one chunk (its inputs: the model's, then one per
    state; its outputs: the model's, then each state's next value), ``init`` computes the
    first chunk's state from that chunk's inputs (one output per state, named as it)."""

    step: Graph
    init: Graph
    states: list[State]
    sequence: dict[str, int]
    """Each sequence input's name and time axis; every chunk gives them one length."""
    outputs: dict[str, tuple[OutputRole, int | None]] = field(default_factory=dict)
    """Each model output's role: ("sequence", axis), ("readout", None) or ("static", None)."""


# -- the step graph -------------------------------------------------------------------------------


def make_step(graph: Graph, sequence: Mapping[str, int] | None = None) -> StepProgram:
    """The step and init graphs of ``graph`` streamed over the time axes of ``sequence``
    (input name: axis; by default the inputs its loops slice over time, found by
    ``find_sequence_inputs``). Raises ``StreamingError`` naming what cannot be streamed."""
    if graph.variables:
        raise StreamingError(
            f"model '{graph.name}' keeps persistent tensors (variables "
            f"{', '.join(sorted(graph.variables))}): it is already a stateful step; stream it "
            "without chunking"
        )
    step = clone_graph(graph)
    init_source = clone_graph(graph)
    lower_sequences(step)  # a list a loop appends each step to is a stacked output
    pass_through_invariants(step)
    count_while_loops(step)
    indexed = slice_indexed_reads(step)
    chosen = dict(find_sequence_inputs(step) if sequence is None else sequence)
    names = {v.name for v in graph.inputs}
    unknown = sorted(set(chosen) - names)
    if unknown:
        raise StreamingError(
            f"model '{graph.name}' has no input {', '.join(map(repr, unknown))}; its inputs "
            f"are {', '.join(map(repr, sorted(names)))}"
        )
    if not chosen:
        raise StreamingError(
            f"model '{graph.name}' has no loop over a time axis of its inputs"
            f"{why_no_sequence(step)}: name its sequence inputs (sequence={{name: axis}}), or "
            "pair its state inputs and outputs (state={input: output}) if it takes and returns "
            "its state"
        )
    lengths = _relax(step, chosen)
    _relax(init_source, chosen)
    analysis = Analysis(step, chosen, lengths)
    if analysis.rewrites or analysis.time_indices:
        for node, elems in analysis.rewrites.items():
            em = Emitter(step, anchor=node)
            node.set_input(1, em.ints([int(e) for e in elems]))  # type: ignore[arg-type]
        for index, compares in analysis.time_indices.items():
            _count_steps(step, index, chosen, analysis, compares)
        _retype(step)
    for loop in analysis.loops:
        if loop.node in indexed and loop.node not in analysis.length_trips:
            raise StreamingError(
                f"cannot stream {loop.node.describe()}: it reads %{indexed[loop.node]} by its "
                "iteration number, and its trip count is not that sequence's length"
            )
    outputs: dict[str, tuple[OutputRole, int | None]] = {}
    for out in step.outputs:
        k = analysis.kind(out)
        if isinstance(k, Timed):
            outputs[out.name] = ("sequence", k.axis)
        elif k is READOUT:
            outputs[out.name] = ("readout", None)
        elif isinstance(k, Whole):
            raise StreamingError(f"{k.why} (output '{out.name}')")
        elif isinstance(k, LengthDependent | TimeIndex | AllLength) or (
            isinstance(k, Dims) and k.has_length
        ):
            raise StreamingError(
                f"cannot stream model '{graph.name}': output '{out.name}' depends on the "
                "sequence's length, which a stream does not know until it ends"
            )
        else:
            outputs[out.name] = ("static", None)
    states: list[State] = []
    initials: list[Value | np.ndarray] = []
    for loop in analysis.loops:
        _stream_loop(step, loop, analysis, init_source, states, initials)
    init = _init_graph(init_source, states, initials)
    eliminate_dead_code(step)  # what only the initial values needed
    used = {v for n in step.nodes for v in n.inputs} | set(step.outputs)
    step.inputs = [v for v in step.inputs if v in used or v.name in chosen]
    return StepProgram(step, init, states, chosen, outputs)


def _relax(graph: Graph, sequence: Mapping[str, int]) -> frozenset[int]:
    """Give each sequence input a time dim of any length (a static export declares the whole
    sequence's) and type the graph anew; returns the lengths the types had declared."""
    declared: set[int] = set()
    for v in graph.inputs:
        t = v.type
        if v.name not in sequence or not isinstance(t, TensorType) or t.shape is None:
            continue
        axis = normalize_axis(sequence[v.name], len(t.shape), f"sequence input '{v.name}'")
        if isinstance(t.shape[axis], int):
            declared.add(int(t.shape[axis]))
            shape = list(t.shape)
            shape[axis] = "time"
            v.type = t.with_shape(shape)
    if declared:
        _retype(graph)
    return frozenset(declared)


def _count_steps(
    graph: Graph,
    index: Value,
    sequence: Mapping[str, int],
    analysis: Analysis,
    compares: set[Node],
) -> None:
    """Make the comparisons that read a constant ``0 .. T-1`` as the time steps (through its
    reshapes) read ``Range(0, length)`` of the chunk in hand; its other uses keep it."""
    x = next(v for v in graph.inputs if v.name in sequence)
    em = Emitter(graph, anchor=graph.nodes[0])
    axis = normalize_axis(sequence[x.name], x.tensor_type.rank or 1)
    length = em.op("Shape", [x], {"start": axis, "end": axis + 1})
    limit = em.op("Squeeze", [length, em.ints([0])])
    steps = em.op("Range", [em.ints(0), limit, em.ints(1)])
    dtype = index.tensor_type.dtype
    if dtype != steps.tensor_type.dtype:
        steps = em.op("Cast", [steps], {"to": dtype})

    chain: set[tuple[Node, int]] = set()  # the uses on the way from the constant to a compare

    def back(node: Node) -> None:
        for port, v in enumerate(node.inputs):
            k = analysis.kind(v)
            if v is index:
                chain.add((node, port))
            elif isinstance(k, TimeIndex) and k.baked is index and v and v.producer is not None:
                chain.add((node, port))
                back(v.producer)

    for compare in compares:
        back(compare)
    for node, port in chain:
        v = node.inputs[port]
        assert v is not None
        if v is index:
            continue  # the constant itself stays where it is read as data
        off_chain = [u for u in v.uses if (u.node, u.port) not in chain]
        if off_chain:
            raise StreamingError(
                f"cannot stream {off_chain[0].node.describe()}: %{v.name} holds the time steps "
                "0 .. T-1 a static export wrote for its sequence masks, and it reads them as data"
            )
    for node, port in chain:
        if node.inputs[port] is index:
            node.set_input(port, steps)


def _retype(graph: Graph) -> None:
    """Type every top-level node anew from its inputs' types (bodies keep theirs)."""
    for node in graph.nodes:
        try:
            types = infer_types(node.op, node.inputs, node.attrs, node.name)
        except TensorloopError as exc:
            raise StreamingError(
                f"cannot stream {node.describe()}: with a chunk of any length, {exc}"
            ) from None
        for out, t in zip(node.outputs, types, strict=True):
            out.type = t


def _state_input(graph: Graph, loop: Loop, what: str, t: TensorType) -> Value:
    """A new input of ``graph`` for a state of ``loop``: named ``<loop>.<what>`` if free."""
    return graph.add_input(f"{loop.name or 'loop'}.{what}", t)


def _stream_loop(
    step: Graph,
    loop: Loop,
    analysis: Analysis,
    init_source: Graph,
    states: list[State],
    initials: list[Value | np.ndarray],
) -> None:
    """Make ``loop``'s carried values (and, where needed, its time step) state of ``step``."""
    where = f"loop '{loop.name}'" if loop.name else "a loop"
    node = loop.node
    for index, c in enumerate(loop.carried):
        assert c.initial is not None
        initials.append(init_source.find(c.initial.name))
        t = c.param.type
        if not isinstance(t, TensorType):
            raise StreamingError(
                f"cannot stream {node.describe()}: its carried %{c.param.name} is {t}, and a "
                "stream's state is tensors"
            )
        s_in = _state_input(step, loop, c.param.name, t)
        name = s_in.name
        node.set_input(2 + index, s_in)
        nxt = step.result_named(c.final, f"{name}.next") if c.final not in step.outputs else None
        if nxt is None:
            nxt = step.add_node("Identity", [c.final], output_names=[f"{name}.next"]).output
        step.outputs.append(nxt)
        states.append(State(name, nxt.name, t, f"carried %{c.param.name} of {where}"))
    trip = loop.trip_count
    if trip is not None and loop.node in analysis.length_trips:
        node.set_input(0, None)  # the chunk's length bounds each chunk's loop
        trip = None
    if trip is None and not loop.iteration.uses and loop.iteration not in loop.body.outputs:
        return
    # The time step is state: the body reads it for the iteration number, and a trip count
    # other than the length bounds the steps of the whole stream.
    t0 = _state_input(step, loop, "time", ITERATION_TYPE)
    name = t0.name
    initials.append(np.array(0, np.int64))
    body = loop.body
    roles = loop_roles(loop)
    param = Value(body.unique_name("time"), ITERATION_TYPE, graph=body)
    for use in list(loop.iteration.uses):  # the body reads the global step instead
        use.node.set_input(use.port, param)

    def global_step(v: Value) -> Value:  # ... where a body result is the iteration number
        return param if v is loop.iteration else v

    roles.carried = [(i, p, global_step(n), f) for i, p, n, f in roles.carried]
    roles.stacked = [(global_step(r), spec, out) for r, spec, out in roles.stacked]
    one = body.add_node("Constant", [], {"value": np.array(1, np.int64)}).output
    roles.carried.append((t0, param, body.add_node("Add", [param, one]).output, None))
    if trip is not None:
        em = Emitter(step, anchor=node)
        dtype = trip.tensor_type.dtype
        done = t0 if dtype == ITERATION_TYPE.dtype else em.op("Cast", [t0], {"to": dtype})
        left = em.op("Sub", [trip, done])
        roles.trip = em.op("Max", [left, em.const(np.array(0, dtype.numpy))])
    new = rebuild_roles(step, loop, roles, {})
    time_next = step.add_node(
        "Identity", [new.outputs[len(roles.carried) - 1]], output_names=[f"{name}.next"]
    ).output
    step.outputs.append(time_next)
    states.append(State(name, time_next.name, ITERATION_TYPE, f"time step of {where}"))


def _init_graph(
    source: Graph, states: Sequence[State], initials: Sequence[Value | np.ndarray]
) -> Graph:
    """A graph computing each state's first value from the model's inputs: the nodes of
    ``source`` those values need, and the inputs they read."""
    init = Graph(f"{source.name}.init")
    roots = [v for v in initials if isinstance(v, Value)]
    needed = upstream(roots)
    read = {v for n in needed for v in n.inputs if v is not None and v.is_parameter}
    read |= {v for v in roots if v.is_parameter}
    mapping: dict[Value, Value] = {}
    for v in source.inputs:
        if v in read:
            mapping[v] = init.add_input(v.name, v.type)
    read_names = {v.name for v in read}
    init.input_aliases = {k: n for k, n in source.input_aliases.items() if n in read_names}
    for n in source.nodes:
        if n in needed:
            init.append(copy_node(n, mapping))
    em = Emitter(init)
    for s, initial in zip(states, initials, strict=True):
        value = em.const(initial) if isinstance(initial, np.ndarray) else mapping[initial]
        init.outputs.append(init.result_named(value, s.name))
    return init


__all__ = ["State", "StepProgram", "make_step"]
