"""Stream: a model run chunk by chunk, its recurrent state carried from one call to the next."""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..backends.base import Backend, Executable
from ..errors import InputError, StreamingError
from ..ir.emit import Emitter
from ..ir.graph import Graph, Value, clone_graph, copy_node
from ..ops.core import initialized_flag
from ..passes.streaming import State, StepProgram, make_step
from ..reference.runtime import RunState, by_input_name, coerce_value
from ..tensor.types import UNKNOWN, TensorType
from . import Model, Outputs, Session

_AFFIXES = re.compile(
    r"^(?:next_|new_|initial_|init_|prev_|last_|in_|out_)?(.*?)"
    r"(?:[._]?(?:next|new|prev|in|out|init|initial|final)|N|n|_?0)?$"
)


def _stem(name: str) -> str:
    """``name`` without its state affixes, stripped until none is left (``h_in.next``: ``h``)."""
    while True:
        match = _AFFIXES.match(name)
        stem = match.group(1) if match and match.group(1) else name
        if stem == name:
            return name
        name = stem


def pair_states(graph: Graph) -> dict[str, str]:
    """The state inputs of a model that takes and returns its state, each paired with the
    output that returns it: the same element type and shape, and one name with affixes such as
    ``N``, ``n``, ``0``, ``_in``/``_out``, ``_next``, ``new_`` on the same stem (Silero VAD's
    ``state``/``stateN``, PyTorch's ``h0``/``hn``). Only pairs that no other name could take."""
    pairs: dict[str, str] = {}
    for i in graph.inputs:
        candidates = [
            o.name
            for o in graph.outputs
            if o.name != i.name and _stem(o.name) == _stem(i.name) and o.type.compatible(i.type)
        ]
        exact = f"{i.name}.next"  # what Stream.step_model writes
        if exact in candidates:
            candidates = [exact]
        if len(candidates) == 1:
            pairs[i.name] = candidates[0]
    taken = list(pairs.values())
    return {i: o for i, o in pairs.items() if taken.count(o) == 1}


def _explicit_program(graph: Graph, pairs: Mapping[str, str]) -> StepProgram:
    """The step program of a model that takes and returns its state: itself."""
    inputs = {v.name: v for v in graph.inputs}
    outputs = {v.name: v for v in graph.outputs}
    states: list[State] = []
    for i, o in pairs.items():
        if i not in inputs:
            raise StreamingError(f"model '{graph.name}' has no input '{i}' to hold state")
        if o not in outputs:
            raise StreamingError(f"model '{graph.name}' has no output '{o}' to return state")
        t, u = inputs[i].type, outputs[o].type
        if not isinstance(t, TensorType) or not t.compatible(u):
            raise StreamingError(
                f"state input '{i}' of model '{graph.name}' is {t}, but output '{o}' is {u}"
            )
        states.append(State(i, o, t, f"input '{i}'"))
    roles = {o.name: ("readout", None) for o in graph.outputs if o.name not in set(pairs.values())}
    return StepProgram(graph, Graph(f"{graph.name}.init"), states, {}, roles)  # type: ignore[arg-type]


def _variables_program(graph: Graph) -> StepProgram:
    """The step program of a model that keeps its state in persistent tensors: itself."""
    states = [
        State(name, name, var.type, f"persistent tensor '{name}'")
        for name, var in graph.variables.items()
    ]
    roles = {o.name: ("readout", None) for o in graph.outputs}
    return StepProgram(graph, Graph(f"{graph.name}.init"), states, {}, roles)  # type: ignore[arg-type]


@dataclass(frozen=True)
class StepParts:
    """What every stream of one model streamed one way shares: the step program, the model
    that runs its step (the model itself where its graph is the step) and the one that makes
    the first state, if the state is computed."""

    program: StepProgram
    step: Model
    init: Model | None


def stream_parts(
    model: Model, sequence: Mapping[str, int] | None, state: Mapping[str, str] | str | None
) -> tuple[StepParts, str]:
    """The parts of ``model`` streamed this way, made on the first ask and kept on the model,
    and the way: "loops" (``make_step``), "explicit" (state inputs paired with outputs) or
    "variables" (state in persistent tensors)."""
    if state is not None:
        pairs = pair_states(model.graph) if state == "auto" else state
        if isinstance(pairs, str):
            raise InputError(
                f"state must be a mapping of input to output names or 'auto', got {pairs!r}"
            )
        if not pairs:
            raise StreamingError(
                f"model '{model.graph.name}' has no input and output whose names and types "
                "pair them as state; name the pairs with state={input: output}"
            )
        mode = "explicit"
        key: Any = (mode, tuple(pairs.items()), tuple((sequence or {}).items()))
    elif model.graph.variables:
        mode, key = "variables", ("variables",)
    else:
        mode, key = "loops", ("loops", None if sequence is None else tuple(sequence.items()))
    with model._stream_lock:
        found: StepParts | None = model._stream_parts.get(key)
    if found is not None:
        return found, mode
    if mode == "explicit":
        program = _explicit_program(model.graph, pairs)  # type: ignore[arg-type]
        program.sequence = dict(sequence or {})
    elif mode == "variables":
        program = _variables_program(model.graph)
    else:
        program = make_step(model.graph, sequence)
    step = (
        model
        if mode != "loops"
        else Model(program.step, backend=model.backend, limits=model.limits)
    )
    init = (
        Model(program.init, backend="reference", limits=model.limits)
        if program.init.outputs
        else None
    )
    with model._stream_lock:
        made: StepParts = model._stream_parts.setdefault(key, StepParts(program, step, init))
    return made, mode


class Stream:
    """A model run over a sequence chunk by chunk, each call carrying the recurrent state on.

    Made by ``Model.stream``. ``push(inputs)`` runs the next chunk (split into ``chunk`` time
    steps per call where longer) and returns its outputs: each sequence output for the chunk's
    time steps, each read-out (a value of the final state, such as the last hidden state) as
    it stands after the chunk. Joined on their time axes, the outputs of the chunks of a
    sequence are the outputs of one run over it. ``state`` reads and sets the carried state;
    ``reset()`` starts a new sequence. Streams of one model each hold their own state and may
    run at once from many threads, sharing the step's plans; one stream serialises its own
    pushes."""

    def __init__(
        self,
        model: Model,
        parts: StepParts,
        *,
        mode: str,
        chunk: int | None,
        backend: str | Backend | None,
        state_init: Mapping[str, Any] | None = None,
    ) -> None:
        if chunk is not None and (isinstance(chunk, bool) or not isinstance(chunk, int)):
            raise InputError(f"chunk must be a positive int, got {chunk!r}")
        if chunk is not None and chunk < 1:
            raise InputError(f"chunk must be at least 1 time step, got {chunk}")
        program = parts.program
        self.model = model
        self.program = program
        self.chunk = chunk
        self.mode = mode
        self.backend = backend
        self._lock = threading.Lock()
        self._state: dict[str, np.ndarray[Any, Any]] | None = None
        self._session: Session | None = model.session() if mode == "variables" else None
        self._step = parts.step
        self._executable: Executable | None = None
        self._where = f"stream of model '{model.graph.name}': "
        names = self._step.output_names
        self._next = (
            []
            if mode == "variables"
            else [(st.name, names.index(st.next)) for st in program.states]
        )
        self._kept = [(n, names.index(n)) for n in names if n in program.outputs]
        self._init = parts.init
        self._state_init = dict(state_init or {})
        if self._state_init:
            self.state = self._state_init

    # -- what it is --------------------------------------------------------------------------
    @property
    def states(self) -> list[State]:
        """Each carried state: name, type and what it carries."""
        return list(self.program.states)

    @property
    def sequence_inputs(self) -> dict[str, int]:
        """Each sequence input and its time axis."""
        return dict(self.program.sequence)

    @property
    def output_roles(self) -> dict[str, tuple[str, int | None]]:
        """Each output's role: ("sequence", time axis), ("readout", None) or ("static", None)."""
        return dict(self.program.outputs)

    def step_model(self) -> Model:
        """The step as a model with explicit state: the model's inputs and one input per state,
        its outputs and each state's next value (``State.next``); what an ONNX file holds."""
        if self.mode == "variables":
            return self.model
        return Model(clone_graph(self.program.step), backend=self.model.backend)

    def init_model(self) -> Model:
        """The model that computes the first chunk's state from that chunk's inputs."""
        return Model(clone_graph(self.program.init), backend=self.model.backend)

    def stateful_model(self, inputs: Mapping[str, Any] | None = None) -> Model:
        """The step as a model whose state lives in persistent tensors (variables): each run
        reads the state, runs one chunk and assigns the next state, as OpenVINO's
        ReadValue/Assign do. The state's shape is fixed to the current state's, or to the
        first state of ``inputs`` (a first chunk); a state computed from the inputs is
        computed so by the first run after a reset."""
        if self.mode == "variables":
            return self.model
        current: dict[str, np.ndarray[Any, Any]] | None
        if inputs is not None:
            current = self._initial(self._args(inputs))
        else:
            with self._lock:
                current = None if self._state is None else dict(self._state)
        if current is None:
            raise StreamingError(
                "stateful_model needs the state's shapes: push a chunk, set the state, or give "
                "a first chunk's inputs"
            )
        return Model(_stateful_graph(self.program, current), backend=self.model.backend)

    # -- the state ---------------------------------------------------------------------------
    @property
    def state(self) -> dict[str, np.ndarray[Any, Any]]:
        """A copy of the state carried into the next chunk ({} before the first chunk)."""
        with self._lock:
            if self._session is not None:
                return {k: np.array(v) for k, v in self._session.state.items()}
            return {} if self._state is None else {k: v.copy() for k, v in self._state.items()}

    @state.setter
    def state(self, values: Mapping[str, Any]) -> None:
        with self._lock:
            if self._session is not None:
                self._set_variables(values)
                return
            self._state = self._checked(values)

    def _checked(self, values: Mapping[str, Any]) -> dict[str, np.ndarray[Any, Any]]:
        known = {s.name: s for s in self.program.states}
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise InputError(
                f"no state named {', '.join(map(repr, unknown))}; the stream's states are "
                f"{', '.join(map(repr, known)) or 'none'}"
            )
        missing = [n for n in known if n not in values and (self._state is None)]
        if missing:
            raise InputError(f"setting the state needs every state; missing {', '.join(missing)}")
        state = dict(self._state or {})
        for name, value in values.items():
            t = known[name].type
            array = np.asarray(value)
            if array.dtype != t.dtype.numpy:
                raise InputError(f"state '{name}' holds {t}, got an array of {array.dtype}")
            if not t.accepts(array):
                raise InputError(f"state '{name}' holds {t}, got shape {list(array.shape)}")
            state[name] = np.array(array, copy=True)
        return state

    def _set_variables(self, values: Mapping[str, Any]) -> None:
        assert self._session is not None
        variables = self.model.graph.variables
        for name, value in values.items():
            if name not in variables:
                raise InputError(
                    f"no state named '{name}'; the model's persistent tensors are "
                    f"{', '.join(map(repr, variables))}"
                )
            t = variables[name].type
            array = np.asarray(value)
            if array.dtype != t.dtype.numpy or array.shape != t.static_shape:
                raise InputError(f"state '{name}' holds {t}, got {array.dtype}{list(array.shape)}")
            frozen = np.array(array, copy=True)
            frozen.setflags(write=False)
            self._session.state[name] = frozen

    def reset(self) -> None:
        """Start a new sequence: the next chunk begins from the initial state (``state_init``,
        where given, else as the model computes it)."""
        with self._lock:
            if self._session is not None:
                self._session.reset()
                if self._state_init:
                    self._set_variables(self._state_init)
                return
            self._state = None
        if self._state_init:
            self.state = self._state_init

    # -- running -----------------------------------------------------------------------------
    def _args(self, inputs: Mapping[str, Any] | Sequence[Any]) -> dict[str, Any]:
        names = (
            [v.name for v in self.model.graph.inputs if v.name not in {s.name for s in self.states}]
            if self.mode == "explicit"
            else self.model.input_names
        )
        if not isinstance(inputs, Mapping):
            inputs = list(inputs)
            if len(inputs) != len(names):
                raise InputError(
                    f"expected {len(names)} inputs ({', '.join(names)}), got {len(inputs)}"
                )
            inputs = dict(zip(names, inputs, strict=True))
        elif self.model.graph.input_aliases:  # another name of an input's port (OpenVINO IR)
            inputs = by_input_name(self.model.graph, inputs, self._where)
        unknown = sorted(set(inputs) - set(names))
        if unknown:
            raise InputError(
                f"no input named {', '.join(map(repr, unknown))}; the stream takes "
                f"{', '.join(map(repr, names))}"
            )
        missing = [n for n in names if n not in inputs]
        if missing:
            raise InputError(f"missing input(s) {', '.join(map(repr, missing))}")
        return dict(inputs)

    def _initial(self, args: Mapping[str, Any]) -> dict[str, np.ndarray[Any, Any]]:
        if self.mode == "explicit":
            return self._explicit_zeros(args)
        if self._init is None:
            return {}
        wanted = {v.name: args[v.name] for v in self._init.graph.inputs}
        out = self._init.run(wanted)
        return {s.name: np.asarray(out[s.name]) for s in self.program.states}

    def _explicit_zeros(self, args: Mapping[str, Any]) -> dict[str, np.ndarray[Any, Any]]:
        """Zeros of each state's declared type, a symbolic dim taken from the input that
        declares the same symbol."""
        sizes: dict[str, int] = {}
        for v in self.model.graph.inputs:
            t = v.type
            if v.name not in args or not isinstance(t, TensorType) or t.shape is None:
                continue
            shape = np.shape(args[v.name])
            if len(shape) != len(t.shape):
                continue
            for d, n in zip(t.shape, shape, strict=True):
                if isinstance(d, str) and d != UNKNOWN:
                    sizes.setdefault(d, int(n))
        state: dict[str, np.ndarray[Any, Any]] = {}
        for s in self.program.states:
            shape = s.type.shape
            dims = (
                []
                if shape is None
                else [sizes.get(d, d) if isinstance(d, str) else d for d in shape]
            )
            if shape is None or not all(isinstance(d, int) for d in dims):
                raise StreamingError(
                    f"state '{s.name}' is {s.type}: its first value cannot be made from the "
                    "inputs; give it with state_init= or set stream.state"
                )
            state[s.name] = np.zeros(dims, s.type.dtype.numpy)
        return state

    def push(self, inputs: Mapping[str, Any] | Sequence[Any]) -> Outputs:
        """Run the next chunk of the sequence; ``inputs`` by name or in order (the model's,
        without the state). A chunk longer than ``chunk`` time steps runs as several calls."""
        args = self._args(inputs)
        pieces = self._pieces(args)
        with self._lock:
            results = [self._run(piece) for piece in pieces]
        return self._joined(results)

    def _pieces(self, args: dict[str, Any]) -> list[dict[str, Any]]:
        seq = self.program.sequence
        types = {v.name: v.type for v in self._step.graph.inputs}
        args.update({n: coerce_value(n, types[n], args[n], self._where) for n in seq})
        return cut_chunks(args, seq, self.chunk)

    def _run(self, args: dict[str, Any]) -> Outputs:
        if self._session is not None:
            return self._session.run(args, backend=self.backend)
        if self._state is None:
            self._state = self._initial(args)
        # The step runs on its executable directly: the state the stream made needs no second
        # look, and a push pays for little more than the plan's own run.
        state = self._state
        values = [  # the user's inputs checked, the stream's own state not
            state[v.name]
            if v.name in state
            else coerce_value(v.name, v.type, args[v.name], self._where)
            for v in self._step.graph.inputs
        ]
        limits = self.model.limits
        run = RunState(max_iterations=limits.max_iterations, limits=limits, timeout=limits.timeout)
        if self._executable is None:
            self._executable = self._step.prepared(self.backend)
        results = self._executable.run(values, run)
        self._state = {name: np.asarray(results[k]) for name, k in self._next}
        return Outputs({name: results[k] for name, k in self._kept}, {}, run.handoffs)

    def _joined(self, results: list[Outputs]) -> Outputs:
        if len(results) == 1:
            return results[0]
        values = join_outputs(results, self.program.outputs)
        return Outputs(values, {}, [h for r in results for h in r.handoffs])


def cut_chunks(
    inputs: Mapping[str, Any],
    sequence: Mapping[str, int],
    chunk: int | None,
    *,
    one_step: bool = False,
) -> list[dict[str, Any]]:
    """``inputs`` cut into chunks of ``chunk`` time steps (all of them at once where None)
    along each sequence input's time axis, the other inputs whole in every chunk; with
    ``one_step``, one step a chunk with its time axis taken away. The sequence inputs must be
    arrays of one length, at least 1: else an ``InputError``."""
    if not sequence:
        return [dict(inputs)]
    lengths = {}
    for name, axis in sequence.items():
        shape = np.shape(inputs[name])
        if axis >= len(shape):
            raise InputError(
                f"sequence input '{name}' is given with shape {list(shape)}, which has no axis "
                f"{axis} to cut along"
            )
        lengths[name] = shape[axis]
    if len(set(lengths.values())) > 1:
        described = ", ".join(f"'{n}' {k} steps" for n, k in lengths.items())
        raise InputError(f"the sequence inputs of one chunk have different lengths: {described}")
    length = next(iter(lengths.values()))
    if length == 0:
        given = ", ".join(map(repr, lengths))
        raise InputError(f"a chunk needs at least one time step; got 0 in {given}")
    step = 1 if one_step else length if chunk is None else chunk
    if step >= length and not one_step:
        return [dict(inputs)]
    pieces = []
    for start in range(0, length, step):
        piece = dict(inputs)
        for name, axis in sequence.items():
            a = np.asarray(inputs[name])
            if one_step:
                piece[name] = np.take(a, start, axis=axis)
            else:
                index: list[slice] = [slice(None)] * a.ndim
                index[axis] = slice(start, start + step)
                piece[name] = a[tuple(index)]
        pieces.append(piece)
    return pieces


def join_outputs(
    results: Sequence[Mapping[str, Any]],
    roles: Mapping[str, tuple[str, int | None]],
    *,
    stacked: bool = False,
) -> dict[str, Any]:
    """The outputs of chunks as one run's: each sequence output joined along its time axis
    (stacked along it where each chunk was one step), any other output as the last chunk left
    it."""
    out: dict[str, Any] = {}
    for name, last in results[-1].items():
        role, axis = roles.get(name, ("readout", None))
        if role != "sequence" or axis is None:
            out[name] = last
            continue
        parts = [np.asarray(r[name]) for r in results]
        if stacked:
            out[name] = np.stack(parts, axis=min(axis, parts[0].ndim))
        else:
            out[name] = np.concatenate(parts, axis=axis)
    return out


def _stateful_graph(program: StepProgram, first: Mapping[str, np.ndarray[Any, Any]]) -> Graph:
    """``program.step`` with its state in variables: read at the start of each run, assigned
    its next value at the end. A state the init graph computes from inputs is chosen, until
    the first run assigns it, by a bool variable ``<name>/initialized``, as tensorloop reads
    OpenVINO's ReadValue with an init input."""
    step = clone_graph(program.step)
    constant_init = not program.init.inputs
    em = Emitter(step, anchor=step.nodes[0] if step.nodes else None)
    init_values: dict[str, Value] = {}
    if not constant_init:
        mapping = {
            p: step.holder(p.name) or step.add_input(p.name, p.type) for p in program.init.inputs
        }
        for node in program.init.nodes:
            copy = copy_node(node, mapping)
            if em.anchor is None:
                step.append(copy)
            else:
                step.insert_before(em.anchor, copy)
        init_values = {o.name: mapping[o] for o in program.init.outputs}
    states = {s.name: s for s in program.states}
    for name, s in states.items():
        param = step.find(name)
        shaped = np.zeros(first[name].shape, s.type.dtype.numpy)
        step.add_variable(name, first[name] if constant_init else shaped)
        read = em.op(
            "ReadVariable", [], {"variable": name, "type": TensorType(s.type.dtype, shaped.shape)}
        )
        if not constant_init:
            flag = initialized_flag(name)
            step.add_variable(flag, np.array(False))
            ready = em.op("ReadVariable", [], {"variable": flag, "type": TensorType("bool", ())})
            read = em.op("Where", [ready, read, init_values[name]])
        param.replace_all_uses_with(read)
        step.inputs.remove(param)
    tail = Emitter(step)
    for name, s in states.items():
        nxt = step.find(s.next)
        tail.ops("Assign", [nxt], {"variable": name})
        if not constant_init:
            tail.ops("Assign", [tail.const(np.array(True))], {"variable": initialized_flag(name)})
        step.outputs.remove(nxt)
    return step
