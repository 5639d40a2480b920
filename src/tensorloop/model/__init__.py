"""Model, Session and the run results: the user-facing way to execute a graph."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ..backends.base import (
    DEFAULT_BACKEND,
    Backend,
    Executable,
    Handoff,
    Placement,
    get_backend,
)
from ..builder.tracing import Tensor, requested_name, root_graph
from ..errors import BackendError, GraphError, InputError, TensorloopError
from ..ir.graph import Graph, Node, Value, Variable, copy_node, upstream
from ..ir.verify import verify
from ..limits import Limits, check_graph
from ..reference.runtime import LoopObserver, RunState, coerce_inputs
from ..reference.trace import Trace, TraceEntry

if TYPE_CHECKING:
    from .stream import Stream


class Outputs(dict[str, Any]):
    """A run's outputs by name; ``.trace`` holds the traced values, if any were asked for: a
    ``Trace`` per name (``reference/trace.py``), its entries keyed by loop path and iteration;
    ``.handoffs`` what the run's backend handed to another backend (``Handoff``: which nodes,
    to which backend, why), empty when it ran every node itself."""

    trace: dict[str, Trace]
    handoffs: tuple[Handoff, ...]

    def __init__(
        self,
        values: Mapping[str, Any],
        trace: Mapping[str, list[TraceEntry]],
        handoffs: Sequence[Handoff] = (),
    ) -> None:
        super().__init__(values)
        self.trace = {name: Trace(name, entries) for name, entries in trace.items()}
        self.handoffs = tuple(handoffs)


class Session:
    """Runs a model while keeping its persistent tensors (variables) across runs."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.state: dict[str, np.ndarray[Any, Any]] = {}
        self.reset()

    def reset(self) -> None:
        """Return every persistent tensor to its initial value."""
        self.state = {n: _frozen(v.initial) for n, v in self.model.graph.variables.items()}

    def run(
        self,
        inputs: Mapping[str, Any] | Sequence[Any] = (),
        *,
        trace: Iterable[str] = (),
        backend: str | Backend | None = None,
        max_iterations: int | None = None,
        timeout: float | None = None,
        observer: LoopObserver | None = None,
    ) -> Outputs:
        """Run once; ``inputs`` by name or in input order. ``trace`` names body values to record
        at every iteration (``outputs.trace[name]`` is a ``Trace``: a list of
        TraceEntry(iteration, value, loop), ``.stacked(loop)`` an array per loop path);
        ``backend`` overrides the model's; ``max_iterations`` and ``timeout`` (wall-clock
        seconds) override the model's ``Limits`` for this run: a loop still going when either
        runs out stops with ``LoopLimitError`` or ``RunTimeoutError``. ``observer`` (a
        ``LoopObserver``) is told of this run's every loop iteration as it starts, and of
        each loop's end (the run plans its loops as written, as a traced run does)."""
        limits = self.model.limits
        if max_iterations is not None or timeout is not None:
            limits = replace(
                limits,
                max_iterations=limits.max_iterations if max_iterations is None else max_iterations,
                timeout=limits.timeout if timeout is None else timeout,
            )
        graph = self.model.graph
        names = list(trace)
        if names:
            known = {v.name for _, n in graph.walk() for v in n.outputs}
            known |= {v.name for v in graph.inputs}
            known |= {
                p.name for _, n in graph.walk() for g in n.subgraphs.values() for p in g.inputs
            }
            unknown = [n for n in names if n not in known]
            if unknown:
                raise InputError(f"cannot trace {', '.join(unknown)}: no such value in the model")
        if observer is not None and not all(
            callable(getattr(observer, m, None)) for m in ("on_iteration", "on_loop_end")
        ):
            raise InputError(
                f"observer must be a tensorloop.LoopObserver (on_iteration and on_loop_end), "
                f"got {type(observer).__name__}"
            )
        args = coerce_inputs(graph, inputs, where=f"model '{graph.name}'")
        state = RunState(
            variables=self.state,
            max_iterations=limits.max_iterations,
            trace_names=frozenset(names),
            limits=limits,
            timeout=limits.timeout,
            observer=observer,
        )
        try:
            results = self.model.prepared(backend).run(args, state)
        except TensorloopError as exc:
            if state.handoffs:  # the error may be another backend's: say which and why
                exc.handoffs = tuple(state.handoffs)
                for handoff in state.handoffs[:3]:
                    exc.add_note(f"before this error, {handoff}")
                if len(state.handoffs) > 3:
                    exc.add_note(f"and {len(state.handoffs) - 3} more handoffs (error.handoffs)")
            raise
        named = dict(zip(self.model.output_names, results, strict=True))
        return Outputs(named, state.trace, state.handoffs)


def _shaped(inputs: Mapping[str, Any] | Sequence[Any]) -> Any:
    """Inputs with every ``shape``/``dtype`` description made an array of that type (a
    zero-stride view: no memory is allocated for it)."""

    def one(x: Any) -> Any:
        if isinstance(x, np.ndarray) or not (hasattr(x, "shape") and hasattr(x, "dtype")):
            return x
        return np.broadcast_to(np.zeros((), np.dtype(x.dtype)), tuple(x.shape))

    if isinstance(inputs, Mapping):
        return {k: one(v) for k, v in inputs.items()}
    return [one(v) for v in inputs]


def _frozen(array: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    # Reads hand the stored array out without a copy, so it must not be writable.
    copy = np.array(array, copy=True)
    copy.setflags(write=False)
    return copy


class Model:
    """A runnable graph: built with the tl.* API, parsed from text IR, or loaded from a file."""

    def __init__(
        self,
        outputs: Graph | Tensor | Sequence[Tensor] | Mapping[str, Tensor],
        inputs: Sequence[Tensor] | None = None,
        *,
        name: str = "model",
        max_iterations: int | None = None,
        backend: str | Backend = DEFAULT_BACKEND,
        limits: Limits | None = None,
    ) -> None:
        """``limits`` bound what the model and each run may take (``Limits()``'s defaults
        unless given); ``max_iterations`` is short for ``limits=Limits(max_iterations=...)``."""
        if limits is None:
            limits = Limits()
        elif not isinstance(limits, Limits):
            raise GraphError(f"limits must be a tensorloop.Limits, got {type(limits).__name__}")
        if max_iterations is not None:
            limits = replace(limits, max_iterations=max_iterations)
        self.limits = limits
        self.graph = outputs if isinstance(outputs, Graph) else _extract(outputs, inputs, name)
        self.backend = get_backend(backend)
        check_graph(self.graph, limits, f"model '{self.graph.name}'")
        verify(self.graph)
        self._prepared: dict[str, Executable] = {}
        self._session = Session(self)
        self._stream_parts: dict[Any, Any] = {}
        """Each way of streaming it asked for so far, made once: its streams share the step's
        plans (``model.stream.stream_parts``)."""
        self._stream_lock = threading.Lock()

    @property
    def max_iterations(self) -> int:
        """``limits.max_iterations``; setting it replaces ``limits`` with the new value."""
        return self.limits.max_iterations

    @max_iterations.setter
    def max_iterations(self, value: int) -> None:
        self.limits = replace(self.limits, max_iterations=value)

    def prepared(self, backend: str | Backend | None = None) -> Executable:
        """The graph prepared by ``backend`` (the model's own by default), once per backend."""
        chosen = self.backend if backend is None else get_backend(backend)
        executable = self._prepared.get(chosen.name)
        if executable is None:
            executable = chosen.prepare(self.graph)
            executable = self._prepared.setdefault(chosen.name, executable)
        return executable

    @property
    def input_names(self) -> list[str]:
        return [v.name for v in self.graph.inputs]

    @property
    def output_names(self) -> list[str]:
        return [v.name for v in self.graph.outputs]

    @property
    def inputs(self) -> list[Value]:
        return list(self.graph.inputs)

    @property
    def outputs(self) -> list[Value]:
        return list(self.graph.outputs)

    @property
    def state(self) -> dict[str, np.ndarray[Any, Any]]:
        """The persistent tensors of the default session."""
        return self._session.state

    def run(
        self,
        inputs: Mapping[str, Any] | Sequence[Any] = (),
        *,
        trace: Iterable[str] = (),
        backend: str | Backend | None = None,
        max_iterations: int | None = None,
        timeout: float | None = None,
        observer: LoopObserver | None = None,
    ) -> Outputs:
        """Run in the model's default session (persistent tensors carry over between runs);
        ``backend`` (a name such as ``"reference"``) overrides the model's for this run, and
        ``max_iterations`` and ``timeout`` (seconds) the model's ``limits``; ``observer`` is
        told of every loop iteration (see ``Session.run``)."""
        return self._session.run(
            inputs,
            trace=trace,
            backend=backend,
            max_iterations=max_iterations,
            timeout=timeout,
            observer=observer,
        )

    def compile(
        self, inputs: Mapping[str, Any] | Sequence[Any], *, backend: str | Backend | None = None
    ) -> Any:
        """Prepare ``backend`` (the model's own by default) for inputs of these types now, ahead
        of the first run: the compiled backend plans, the jax backend compiles its XLA programs.
        ``inputs`` are arrays (their values are not read) or anything with ``shape`` and
        ``dtype`` (a ``jax.ShapeDtypeStruct``, say). Returns the backend's plan for them (the
        jax backend's has ``compile_seconds`` and ``placement``)."""
        args = coerce_inputs(self.graph, _shaped(inputs), where=f"model '{self.graph.name}'")
        compile = getattr(self.prepared(backend), "compile", None)
        if compile is None:
            name = get_backend(self.backend if backend is None else backend).name
            raise BackendError(f"backend '{name}' has nothing to compile ahead of time")
        return compile(args)

    def placement(
        self, inputs: Mapping[str, Any] | Sequence[Any], *, backend: str | Backend = "jax"
    ) -> list[Placement]:
        """Where each top-level node runs on ``backend`` for inputs of these types, and why a
        node does not run where the backend would rather run it (XLA, for ``jax``). Nodes a
        plan hands to another backend (``Handoff``s decided up front) carry the reason: the
        compiled backend lists, besides its top-level nodes, each node inside one whose
        bodies it leaves to the reference interpreter."""
        args = coerce_inputs(self.graph, _shaped(inputs), where=f"model '{self.graph.name}'")
        executable = self.prepared(backend)
        find = getattr(executable, "placement", None)
        if find is not None:
            found: list[Placement] = find(args)
            return found
        name = get_backend(backend).name
        return [
            Placement(n.name or n.op, n.op, name) for n in self.graph.nodes if n.op != "Constant"
        ]

    def stream(
        self,
        chunk: int | None = None,
        *,
        sequence: Mapping[str, int] | None = None,
        state: Mapping[str, str] | str | None = None,
        state_init: Mapping[str, Any] | None = None,
        backend: str | Backend | None = None,
    ) -> Stream:
        """A ``Stream`` that runs this model over a sequence ``chunk`` time steps per call,
        carrying its recurrent state from call to call (``stream.push(inputs)``,
        ``stream.state``, ``stream.reset()``); see ``tensorloop.model.stream``.

        A model whose loops run over time is made a step by ``passes.streaming.make_step``:
        ``sequence`` names its sequence inputs and their time axes (by default the inputs its
        loops slice). A model that takes and returns its state streams as it is: ``state``
        pairs its state inputs with the outputs that return them (``{"state": "stateN"}``), or
        ``"auto"`` pairs them by name and type. A model with persistent tensors (variables)
        streams as it is, its state in them. ``state_init`` gives the first state (by default
        the model's own initial values, or zeros for paired state); ``backend`` overrides the
        model's."""
        from .stream import Stream, stream_parts

        parts, mode = stream_parts(self, sequence, state)
        if mode == "variables":
            chunk = None  # one run a push, the state in the persistent tensors
        return Stream(self, parts, mode=mode, chunk=chunk, backend=backend, state_init=state_init)

    def grad(
        self,
        of: str,
        wrt: Sequence[str] | str,
        *,
        checkpoint: int | str | None = None,
        per_loop: Mapping[str, int | str | None] | None = None,
    ) -> Model:
        """A model computing this one's outputs and the gradient of the sum of output ``of``
        with respect to each of ``wrt`` (input, variable or other value names): output
        ``<name>.grad``, shaped as the value. Loops differentiate as loops run in reverse over
        what the forward stored: every carried value (``checkpoint=None``, the fastest), every
        k-th (``checkpoint=k``) or about the square root of the trip count
        (``checkpoint="sqrt"``), the rest recomputed; ``per_loop`` chooses by loop name. See
        docs/gradients.md."""
        from ..autodiff import grad_graph

        names = [wrt] if isinstance(wrt, str) else list(wrt)
        graph = grad_graph(self.graph, of, names, checkpoint=checkpoint, per_loop=per_loop)
        return Model(graph, backend=self.backend, limits=self.limits)

    def session(self) -> Session:
        """A new session with its own persistent state."""
        return Session(self)

    def reset_state(self) -> None:
        self._session.reset()

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """A model pickles as its bytes: its graph as text IR with every array over 16 elements
        beside the text in binary (``print_graph(..., arrays=)``), plus its backend (by name,
        where it is registered under it) and its ``limits``; unpickling parses and verifies it
        as ``tl.load`` does. Plans, streams and the default session's persistent tensors are
        not part of it: the copy starts from the variables' initial values."""
        from ..ir.printer import print_graph

        arrays: list[np.ndarray[Any, Any]] = []
        text = print_graph(self.graph, arrays=arrays)
        backend: str | Backend = self.backend.name
        try:
            registered = get_backend(backend)
        except TensorloopError:
            registered = None
        if registered is not self.backend:
            backend = self.backend
        return _restore, (text.encode("utf-8"), arrays, backend, self.limits)

    def __str__(self) -> str:
        return str(self.graph)

    def __repr__(self) -> str:
        ins = ", ".join(f"{v.name}: {v.type}" for v in self.graph.inputs)
        outs = ", ".join(f"{v.name}: {v.type}" for v in self.graph.outputs)
        return f"<Model '{self.graph.name}' ({ins}) -> ({outs})>"


def _restore(
    text: bytes, arrays: list[np.ndarray[Any, Any]], backend: str | Backend, limits: Limits
) -> Model:
    """The model ``Model.__reduce__`` pickled."""
    from ..ir.parser import parse_graph

    return Model(parse_graph(text.decode("utf-8"), arrays), backend=backend, limits=limits)


def _extract(
    outputs: Tensor | Sequence[Tensor] | Mapping[str, Tensor],
    inputs: Sequence[Tensor] | None,
    name: str,
) -> Graph:
    """Copy the part of the builder graph that ``outputs`` need into a fresh, closed graph."""
    if isinstance(outputs, Tensor):
        named = [(requested_name(outputs.name), outputs)]
    elif isinstance(outputs, Mapping):
        named = list(outputs.items())
    else:
        named = [(requested_name(t.name), t) for t in outputs]
    src = root_graph()
    for key, t in named:
        if not isinstance(t, Tensor):
            raise GraphError(f"output '{key}' is {type(t).__name__}, expected a tl tensor")
        if t.value.graph is not src:
            raise GraphError(f"output '{key}' (%{t.name}) lives in a loop or branch body")
    needed = _needed_nodes(src, [t.value for _, t in named])
    used_params = {v for n in needed for v in n.inputs if v is not None and v.is_parameter}
    used_params |= {t.value for _, t in named if t.value.is_parameter}
    if inputs is None:
        params = [p for p in src.inputs if p in used_params]
    else:
        params = [t.value for t in inputs]
        missing = [requested_name(p.name) for p in src.inputs if p in used_params - set(params)]
        if missing:
            raise GraphError(
                f"the outputs depend on placeholder(s) {', '.join(missing)} not listed in inputs"
            )
    graph = Graph(name)
    mapping: dict[Value, Value] = {}
    for p in params:
        mapping[p] = graph.add_input(requested_name(p.name), p.type)
        if mapping[p].name != requested_name(p.name):
            raise GraphError(f"two inputs of the model are named '{requested_name(p.name)}'")
    for node in src.nodes:
        if node in needed:
            _copy_node(src, node, graph, mapping)
    for _, node in graph.walk():
        if node.op in ("ReadVariable", "Assign"):
            node.attrs["variable"] = requested_name(node.attrs["variable"])
    for key, t in named:
        if any(o.name == key for o in graph.outputs):
            raise GraphError(f"output name '{key}' is used twice")
        graph.outputs.append(graph.result_named(mapping[t.value], key))
    return graph


def _copy_node(src: Graph, node: Node, graph: Graph, mapping: dict[Value, Value]) -> None:
    """Append a copy of ``node`` to ``graph``; persistent tensors get their requested names."""
    names = [o.name for o in node.outputs]
    if node.op == "ReadVariable":
        var: Variable = src.variables[node.attrs["variable"]]
        var_name = requested_name(var.name)
        if var_name in graph.variables:
            raise GraphError(f"two persistent tensors of the model are named '{var_name}'")
        graph.variables[var_name] = Variable(var_name, var.initial, var.trainable)
        names = [var_name]
    graph.append(copy_node(node, mapping, names))


def _needed_nodes(src: Graph, roots: list[Value]) -> set[Node]:
    """Nodes the roots depend on, plus the Assigns of every variable those nodes read."""

    def assigns(node: Node) -> list[Node]:
        if node.op != "ReadVariable":
            return []
        name = node.attrs["variable"]
        return [n for n in src.nodes if n.op == "Assign" and n.attrs["variable"] == name]

    return upstream(roots, assigns)


def grad(
    model: Model,
    of: str,
    wrt: Sequence[str] | str,
    *,
    checkpoint: int | str | None = None,
    per_loop: Mapping[str, int | str | None] | None = None,
) -> Model:
    """``model.grad(of, wrt, ...)``: the model with gradients as outputs (see ``Model.grad``)."""
    return model.grad(of, wrt, checkpoint=checkpoint, per_loop=per_loop)
