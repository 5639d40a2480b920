"""The JAX backend: islands of a graph compiled by XLA, the rest on the compiled backend.

The first run with an input signature specialises the graph to it (``compiled.specialize``:
static shapes, shape arithmetic folded), partitions it (``partition.py``: what XLA can express
forms the largest islands possible, the rest runs on the compiled CPU backend) and compiles each
XLA island ahead of time (``jax.jit(...).lower(...).compile()``), once per signature; plans are
cached and shared by threads. ``JaxExecutable.compile`` does this ahead of the first run, and
``placement`` says where every node runs and why.

Results are the reference's: int64 stays int64 (``jax_enable_x64`` is set when this backend is
imported), a multiply is never fused into an add unless ``Options(contract=True)`` asks for it
(see ``lowering.Options``), and what the reference would raise on run-time data is a fault
code that becomes the reference's error (``lowering.Fault``). Traced runs run on the compiled
backend, which records every iteration on the host; observed runs (``LoopObserver``) run
their loops there, which calls the observer every iteration.

Inputs may be ``jax.Array``s, left where they are. An island whose operands include an array
sharded over several devices (a ``NamedSharding``: ``sharding.shard_batch`` splits a batch so)
runs on that array's mesh, as XLA partitions it (GSPMD: the program follows its inputs'
shardings, compiled once per sharding by ``jax.jit``), whatever ``Options.device`` says; its
other operands join the mesh replicated, and its results stay sharded for the islands after
it. Values the host computes, and the run's results, are NumPy arrays as ever.

What runs on the compiled backend instead of XLA is a ``Handoff`` from ``jax`` to ``compiled``,
on every run's ``Outputs.handoffs`` and warned once per plan (``FallbackWarning``): nodes the
partition places there (the lowering's ``check``, types, a traced, timed or observed run), nodes
whose lowering raised ``LoweringError`` while tracing or whose island XLA refused to compile
(re-partitioned, with XLA's message), and at run time an island whose fault code asks the
compiled backend to judge the data or whose run XLA failed. Any other exception of a lowering,
of tracing or of a run is a bug: it propagates.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import BackendError, TensorloopError
from ...ir.graph import Graph, Node, Value, static_type
from ...ir.loop import Loop
from ...limits import nbytes
from ...passes import (
    eliminate_common_subexpressions,
    eliminate_dead_loop_values,
    fold_constants,
    hoist_loop_invariants,
    hoist_sliced_work,
    merge_split_elementwise,
)
from ...passes.base import Pass
from ...passes.specialize import Guards, Sized, largest_sized, specialize
from ...reference import Interpreter
from ...reference.runtime import RunState, host_values, loop_limit_error
from ...tensor.types import TensorType, Type
from ..base import RUN, Handoff, Handoffs, label, register_backend
from ..compiled import CompiledExecutable, optimize

try:
    import jax
except ImportError as exc:  # pragma: no cover - the extra is installed in CI
    raise BackendError("the 'jax' backend needs JAX: pip install 'tensorloop[jax]'") from exc

jax.config.update("jax_enable_x64", True)  # type: ignore[no-untyped-call]

CACHE_ENV = "TENSORLOOP_JAX_CACHE"
"""Where XLA's compiled programs are kept between processes (JAX's persistent compilation
cache): this variable's folder, else ``~/.cache/tensorloop/jax``; ``off`` (or empty) for none.
A cache folder the user already gave JAX (``jax_compilation_cache_dir``) is left as it is."""


def _enable_compilation_cache() -> None:
    if jax.config.jax_compilation_cache_dir:  # type: ignore[attr-defined]
        return
    where = os.environ.get(CACHE_ENV, str(Path.home() / ".cache" / "tensorloop" / "jax"))
    if where.strip().lower() in ("", "0", "off", "none", "false"):
        return
    # Every program, however quick to compile: a stream's first call is what the cache is for.
    jax.config.update("jax_compilation_cache_dir", where)  # type: ignore[no-untyped-call]
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)  # type: ignore[no-untyped-call]
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)  # type: ignore[no-untyped-call]


_enable_compilation_cache()

from . import control, ops, ops_math, ops_nn, ops_shape  # noqa: E402,F401  (lowerings register on import, after x64 is on)
from .control import INITIAL_CAPACITY, DynamicStack, uninterruptible  # noqa: E402
from .lowering import (  # noqa: E402
    EMBED_LIMIT,
    ConstantPool,
    Fault,
    LowerContext,
    LoweringError,
    Options,
    lookup,
    lower_node,
)
from .partition import HOST, XLA, Island, Placement, partition, place  # noqa: E402

PIPELINE: list[Pass] = [
    fold_constants,
    hoist_loop_invariants,
    hoist_sliced_work,
    eliminate_common_subexpressions,
    eliminate_dead_loop_values,
    merge_split_elementwise,
]
"""The loop passes a plan runs before partitioning: the compiled backend's, less
``loop_prefix_sums``: a running sum stays a scan (XLA scans 1000 steps of 64 floats in 0.14 ms,
its cumsum took 0.5 ms). Batching a loop's input projection into one product over the
sequence (a stack of the loop's per-row products), and one activation over the gates an LSTM
splits from one GEMM, serve XLA as they serve NumPy (the medium LSTM loop: 78 ms without the
merge, 41 ms with it)."""

MAX_PLANS = 16
"""Plans kept per executable (each holds compiled XLA programs)."""


class _IslandFailedError(Exception):
    """XLA could not take ``nodes``: they move to the compiled backend, said ``why``."""

    def __init__(self, nodes: Sequence[Node], why: str) -> None:
        super().__init__(why)
        self.nodes = list(nodes)
        self.why = why


def _large_constants(island: Island) -> list[Value]:
    """Constants read anywhere in ``island`` (bodies included) too large to embed."""
    found: dict[Value, None] = {}

    def visit(nodes: Sequence[Node]) -> None:
        for node in nodes:
            for v in node.inputs:
                if v is not None and v.constant is not None and v.constant.nbytes > EMBED_LIMIT:
                    found[v] = None
            for sub in node.subgraphs.values():
                visit(sub.nodes)

    visit(island.nodes)
    return list(found)


MAX_MESHES = 4
"""Meshes an island keeps its constants replicated on (for runs sharded over them)."""


class XlaIsland:
    """One island compiled by XLA: ``run(inputs, limit) -> (fault code, outputs)``.

    It is compiled ahead of time for ``device``; a run given an operand sharded over several
    devices runs instead on that operand's mesh (``mesh_of``), through ``jitted``, which
    compiles the island once per input sharding."""

    def __init__(self, island: Island, options: Options, capacities: dict[Node, int]) -> None:
        self.island = island
        self.options = options
        self.capacities = capacities
        self.device = self._device()
        self.jitted = jax.jit(self._function())
        self.replicas: dict[Any, list[Any]] = {}
        """The large constants replicated on each mesh the island has run sharded over (up to
        ``MAX_MESHES``, the oldest dropped first)."""
        self._replicas_lock = threading.Lock()
        self.operand_values = _large_constants(island)
        try:
            self.operands = [jax.device_put(v.constant, self.device) for v in self.operand_values]
        except jax.errors.JaxRuntimeError as exc:  # no room on the device for the weights
            why = f"XLA could not put its constants on {self.device} ({_one_line(exc)})"
            raise _IslandFailedError(island.nodes, why) from exc
        self.faults: list[Fault] = []
        self.stacks: dict[int, Any] = {}
        started = time.perf_counter()
        self.compiled = self._compile()
        self.compile_seconds = time.perf_counter() - started
        self.run_bytes = _run_bytes(self.compiled)
        """What a run of the island allocates (XLA's memory analysis: its temporaries and
        outputs), counted against the run's ``Limits.max_run_bytes`` before it runs."""
        self._host: CompiledExecutable | None = None

    def _function(self) -> Any:
        island = self.island

        def fn(limits: Any, negzero: Any, operands: list[Any], inputs: list[Any]) -> Any:
            pool = ConstantPool()
            pool.operands = dict(zip(self.operand_values, operands, strict=True))
            capacities = dict(self.capacities)
            ctx = LowerContext(self.options, limits[0], negzero, capacities, pool)
            ctx.budget = limits[1]
            env: dict[Value, Any] = dict(zip(island.inputs, inputs, strict=True))
            for node in island.nodes:
                args = [None if v is None else lookup(env, v, pool) for v in node.inputs]
                try:
                    outs = lower_node(ctx, node, args)
                except LoweringError as exc:  # typed: the node moves, any other error is a bug
                    raise _IslandFailedError([node], f"XLA lowering failed ({exc.why})") from exc
                env.update(zip(node.outputs, outs, strict=True))
            self.faults = ctx.faults
            results = []
            for k, v in enumerate(island.outputs):
                value = lookup(env, v, pool)
                if isinstance(value, DynamicStack):
                    self.stacks[k] = value.spec
                    value = (value.buffer, value.count)
                results.append(value)
            return ctx.code, ctx.count, results

        return fn

    def _device(self) -> Any:
        """Where the island runs (see ``Options.device``)."""
        cpu = jax.devices("cpu")[0]
        choice = self.options.device
        if choice == "cpu" or (choice == "auto" and _small_loops(self.island)):
            return cpu
        return jax.devices()[0]

    def _compile(self) -> Any:
        def spec(v: Value) -> Any:
            t = v.type
            assert isinstance(t, TensorType) and t.shape is not None
            return _abstract(tuple(int(d) for d in t.shape), t.dtype.numpy)

        limit = _abstract((2,), np.dtype(np.int64))
        negzero = _abstract((), np.dtype(np.float64))
        operands = [_abstract(o.shape, o.dtype) for o in self.operands]
        inputs = [spec(v) for v in self.island.inputs]
        with jax.default_device(self.device):
            lowered = self.jitted.lower(limit, negzero, operands, inputs)
            try:
                return lowered.compile()
            except jax.errors.JaxRuntimeError as exc:  # XLA refused it (out of memory, say)
                why = f"XLA could not compile its island ({_one_line(exc)})"
                raise _IslandFailedError(self.island.nodes, why) from exc

    def host(self, graph: Graph) -> CompiledExecutable:
        """The same island on the compiled backend (for a fault the reference must judge)."""
        if self._host is None:
            self._host = CompiledExecutable(subgraph(graph, self.island))
        return self._host

    def run(self, inputs: list[Any], state: RunState) -> tuple[int, list[Any]]:
        """Run the island: its fault code (0: none) and its outputs; the loop iterations it
        made are added to ``state.total_iterations`` where it ran without a fault."""
        state.check_room(self.run_bytes, f"XLA island of {len(self.island.nodes)} nodes")
        budget = max(state.limits.max_total_iterations - state.total_iterations, 0)
        limits = np.array([state.max_iterations, budget], np.int64)
        mesh = mesh_of(inputs)
        if mesh is None:
            inputs = [_on(x, self.device) for x in inputs]
            code, count, results = self.compiled(limits, np.float64(-0.0), self.operands, inputs)
        else:  # sharded: XLA partitions the island over the mesh (compiled on first use)
            inputs = [_onto(x, mesh) for x in inputs]
            on_mesh = self._on_mesh(mesh)
            code, count, results = self.jitted(limits, np.float64(-0.0), on_mesh, inputs)
        outs = []
        for k, value in enumerate(results):
            spec = self.stacks.get(k)
            outs.append(value if spec is None else DynamicStack(value[0], value[1], spec).finish())
        # An island that can raise no fault returns code 0: not read back (a device sync). One
        # with a loop can (its iteration limit), and its count is read with the code.
        fault = int(code) if self.faults else 0
        if self.faults and fault == 0:
            state.total_iterations += int(count)
        return fault, outs

    def _on_mesh(self, mesh: Any) -> list[Any]:
        """The island's large constants replicated over ``mesh`` (copied there once)."""
        found = self.replicas.get(mesh)
        if found is not None:
            return found
        with self._replicas_lock:
            found = self.replicas.get(mesh)
            if found is None:
                everywhere = jax.sharding.NamedSharding(mesh, _REPLICATED)
                found = [jax.device_put(o, everywhere) for o in self.operands]
                if len(self.replicas) >= MAX_MESHES:
                    self.replicas.pop(next(iter(self.replicas)))
                self.replicas[mesh] = found
            return found


SMALL_LOOP_BYTES = 16 * 1024
"""An island with a loop whose bodies compute no value larger than this many bytes runs on the
CPU even where there is a GPU: a GPU pays microseconds per iteration (a kernel launch, and for a
while loop a read of its condition back to the host), more than such an iteration costs on the
CPU. Measured on an H100: a scalar while loop takes 17 us per iteration there, 0.003 us on the
host's CPU; a batch-1 LSTM step 8.6 us there."""


def _small_loops(island: Island) -> bool:
    """Whether ``island`` holds a loop and no loop body in it computes a value larger than
    ``SMALL_LOOP_BYTES`` (constants and nested loops' stacked outputs aside)."""
    if not any(node.op == "Loop" for node in island.nodes):
        return False
    for body in (sub for node in island.nodes for sub in node.subgraphs.values()):
        for _, node in body.walk():
            if node.op in ("Constant", "Loop"):
                continue
            for v in node.outputs:
                t = static_type(v)
                if (
                    t is not None
                    and math.prod(t.static_shape) * t.dtype.itemsize > SMALL_LOOP_BYTES
                ):
                    return False
    return True


def _on(value: Any, device: Any) -> Any:
    """``value`` on ``device`` (an array made by an island elsewhere is moved; NumPy data is
    transferred by the call itself)."""
    if isinstance(value, jax.Array) and value.devices() != {device}:
        return jax.device_put(value, device)
    return value


_REPLICATED = jax.sharding.PartitionSpec()  # type: ignore[no-untyped-call]
"""The layout of a value every device of a mesh holds whole."""


def mesh_of(values: Sequence[Any]) -> Any:
    """The mesh of the first of ``values`` sharded over several devices by a ``NamedSharding``
    (what ``sharding.shard_batch`` and ``jax.jit`` make), or None: an island given one runs
    sharded over that mesh. An array spread by another kind of sharding is moved to the
    island's device, as a single-device array is."""
    for value in values:
        if isinstance(value, jax.Array):
            where = value.sharding
            if isinstance(where, jax.sharding.NamedSharding) and where.num_devices > 1:
                return where.mesh
    return None


def _onto(value: Any, mesh: Any) -> Any:
    """``value`` as an island sharded over ``mesh`` takes it: an array laid out over the mesh's
    devices as it is, any other array replicated over them (XLA wants every operand on the same
    devices, in the same order); NumPy data is transferred by the call itself."""
    if not isinstance(value, jax.Array):
        return value
    where = value.sharding
    if isinstance(where, jax.sharding.NamedSharding) and (
        where.mesh is mesh or tuple(where.mesh.devices.flat) == tuple(mesh.devices.flat)
    ):
        return value
    return jax.device_put(value, jax.sharding.NamedSharding(mesh, _REPLICATED))


def _run_bytes(compiled: Any) -> int:
    """The bytes a compiled island allocates when it runs (temporaries and outputs), as XLA's
    memory analysis gives them; 0 where the platform gives none."""
    try:
        stats = compiled.memory_analysis()
        return int(stats.temp_size_in_bytes) + int(stats.output_size_in_bytes)
    except Exception:  # a platform without the analysis: the islands' shapes are static
        return 0


def _abstract(shape: tuple[int, ...], dtype: np.dtype[Any]) -> Any:
    """An argument of this shape and dtype, for compiling ahead of time."""
    return jax.ShapeDtypeStruct(shape, dtype)  # type: ignore[no-untyped-call]


def subgraph(graph: Graph, island: Island) -> Graph:
    """``island``'s nodes as a graph of their own (constants copied in, variables shared)."""
    from ...ir.graph import copy_node

    sub = Graph(f"{graph.name}.island")
    sub.variables.update(graph.variables)
    mapping: dict[Value, Value] = {v: sub.add_input(v.name, v.type) for v in island.inputs}
    for node in island.nodes:
        for v in node.inputs:
            producer = None if v is None or v in mapping else v.producer
            if producer is not None and producer.op == "Constant":
                sub.append(copy_node(producer, mapping))
        sub.append(copy_node(node, mapping))
    sub.set_outputs([mapping[v] for v in island.outputs])
    return sub


@dataclass
class JaxPlan:
    """One signature's islands, compiled; ``placement`` says where each node runs, and
    ``handoffs`` records (and warns of, once) what it hands to the compiled backend: the nodes
    placed there while planning, every run, and each run's deoptimisations."""

    graph: Graph
    options: Options
    steps: list[tuple[Island, Any]] = field(default_factory=list)
    placement: list[Placement] = field(default_factory=list)
    compile_seconds: float = 0.0
    capacities: dict[Node, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    timed: bool = False
    """Planned for runs with a deadline: no loop XLA cannot interrupt runs on XLA."""
    observed: bool = False
    """Planned for runs with a loop observer: no loop runs on XLA."""
    interruptible: bool = True
    """Whether every XLA island stops within a deadline (holds no while loop)."""
    largest: tuple[int, tuple[int, ...], Any, str] | None = None
    """The largest static output of an op whose output size comes from data, checked against
    each run's limits before the plan runs."""
    handoffs: Handoffs = field(default_factory=Handoffs)
    invalid: str = ""
    """Why these inputs make the graph invalid (they contradict a declared type, say): then
    every node runs on the compiled backend, which checks each value as the reference does."""

    def build(self) -> None:
        self.largest = largest_sized(node for _, node in self.graph.walk())
        excluded = dict.fromkeys(self.graph.nodes, self.invalid) if self.invalid else {}
        if self.timed:
            why = (
                "a run with a timeout: XLA cannot interrupt its while loop, the compiled "
                "backend checks the deadline every iteration"
            )
            excluded = {n: why for n in self.graph.nodes if uninterruptible(n)}
        if self.observed:
            why = (
                "a run with a loop observer: XLA cannot call out each iteration, the compiled "
                "backend calls the observer every iteration"
            )
            excluded.update({n: why for n in self.graph.nodes if _holds_loop(n)})
        for _ in range(len(self.graph.nodes) + 1):
            try:
                self._build(excluded)
                return
            except _IslandFailedError as failed:
                excluded.update(dict.fromkeys(failed.nodes, failed.why))
        raise BackendError(f"could not partition graph '{self.graph.name}'")  # pragma: no cover

    def _build(self, excluded: dict[Node, str]) -> None:
        steps: list[tuple[Island, Any]] = []
        seconds = 0.0
        for island in partition(self.graph, excluded):
            if island.device == XLA:
                # A lowering's LoweringError or XLA's refusal moves the island's nodes to the
                # compiled backend (_IslandFailedError, caught by build); anything else is a bug.
                compiled = XlaIsland(island, self.options, self.capacities)
                seconds += compiled.compile_seconds
                steps.append((island, compiled))
            else:
                steps.append((island, CompiledExecutable(subgraph(self.graph, island))))
        self.steps = steps
        self.placement = place(self.graph, excluded)
        self.handoffs = Handoffs(placed_handoffs(self.placement))
        self.compile_seconds = seconds
        self.interruptible = not any(
            uninterruptible(n) for i, s in steps if isinstance(s, XlaIsland) for n in i.nodes
        )

    def run(self, args: Sequence[Any], state: RunState) -> list[Any]:
        self.handoffs.start(state)
        if self.largest is not None and self.largest[0] > state.limits.max_tensor_bytes:
            _, shape, dtype, where = self.largest
            state.check_tensor(shape, dtype, where)
        env: dict[Value, Any] = dict(zip(self.graph.inputs, args, strict=True))
        for k, (island, step) in enumerate(self.steps):
            state.check_deadline(f"graph '{self.graph.name}'")
            inputs = [env[v] for v in island.inputs]
            if isinstance(step, XlaIsland):
                outs = self._run_xla(k, step, inputs, state)
            else:
                outs = step.run([_host(x) for x in inputs], state)
            env.update(zip(island.outputs, outs, strict=True))
        return [_result(env, v) for v in self.graph.outputs]

    def _run_xla(self, k: int, step: XlaIsland, inputs: list[Any], state: RunState) -> list[Any]:
        reason = "its stacked outputs grew 64 times"
        for _ in range(64):
            try:
                code, outs = step.run(inputs, state)
            except jax.errors.JaxRuntimeError as exc:  # XLA failed at run time (memory, say)
                reason = f"XLA failed at run time ({_one_line(exc)})"
                break
            if code == 0:
                return outs
            fault = step.faults[code - 1]
            if fault.kind == "limit":
                raise loop_limit_error(fault.where, state.max_iterations)
            if fault.kind == "grow" and fault.loop is not None:
                grown = self._stacked_bytes(fault.loop)
                if (
                    grown > state.limits.max_stacked_bytes
                    or state.live_bytes + grown > state.limits.max_run_bytes
                ):
                    # the compiled backend stops it at the limit, as the reference does
                    limits = "max_stacked_bytes or max_run_bytes"
                    reason = f"{fault.where}: its stacked outputs reach {limits}"
                    break
                try:
                    step = self._grow(k, step, fault.loop)
                except _IslandFailedError as failed:  # XLA could not compile larger buffers
                    reason = failed.why
                    break
                continue
            reason = f"{fault.where}: run-time data the compiled backend must judge ({fault.kind})"
            break
        nodes = tuple(label(n) for n in step.island.nodes)
        self.handoffs.record(state, Handoff(nodes, "jax", HOST, reason, RUN))
        return step.host(self.graph).run([_host(x) for x in inputs], state)

    def _stacked_bytes(self, loop: Node) -> int:
        """Bytes of ``loop``'s stacked buffers once their capacity is doubled."""
        rows = 2 * self.capacities.get(loop, INITIAL_CAPACITY)
        total = 0
        for st in Loop(loop).stacked:
            t = st.result.type
            if isinstance(t, TensorType) and t.shape is not None:
                total += nbytes((rows, *(int(d) for d in t.shape)), t.dtype)
        return total

    def _grow(self, k: int, step: XlaIsland, loop: Node) -> XlaIsland:
        """Island ``k`` compiled again with ``loop``'s stacked buffers twice as long (once,
        whichever thread gets here first)."""
        with self.lock:
            if self.steps[k][1] is step:
                self.capacities[loop] = 2 * self.capacities.get(loop, INITIAL_CAPACITY)
                grown = XlaIsland(step.island, self.options, dict(self.capacities))
                self.compile_seconds += grown.compile_seconds
                self.steps[k] = (step.island, grown)
            current: XlaIsland = self.steps[k][1]
            return current


def placed_handoffs(placement: Sequence[Placement]) -> list[Handoff]:
    """The nodes ``placement`` puts on the compiled backend, one handoff per reason."""
    by_reason: dict[str, list[str]] = {}
    for p in placement:
        if p.device != XLA:
            by_reason.setdefault(p.reason, []).append(p.node)
    return [Handoff(tuple(nodes), "jax", HOST, why) for why, nodes in by_reason.items()]


def _one_line(exc: BaseException) -> str:
    """``exc`` as its type and the first line of its message (XLA's run to many lines)."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _holds_loop(node: Node) -> bool:
    """Whether ``node`` is a Loop or holds one in a body or branch."""
    return node.op == "Loop" or any(
        n.op == "Loop" for sub in node.subgraphs.values() for _, n in sub.walk()
    )


def _host(value: Any) -> Any:
    if isinstance(value, list):  # a sequence (of the user's jax.Arrays, say)
        return [_host(v) for v in value]
    return np.array(value) if isinstance(value, jax.Array) else value


def _result(env: dict[Value, Any], v: Value) -> Any:
    if v in env:
        return _host(env[v])
    data = v.constant
    if data is None:
        raise TensorloopError(f"graph result %{v.name} is never computed")
    return data.copy()


class JaxExecutable:
    """A graph compiled by XLA per input signature; safe to run from many threads."""

    def __init__(self, graph: Graph, options: Options) -> None:
        self.graph = graph
        self.options = options
        self._plans: dict[Any, JaxPlan] = {}
        self._lock = threading.Lock()
        self._host = CompiledExecutable(graph)
        self._guards = Guards(graph)
        nodes = tuple(label(n) for n in graph.nodes if n.op != "Constant")
        why = "a traced run: the compiled backend records every iteration on the host"
        self._traced = Handoffs([Handoff(nodes, "jax", HOST, why)])

    def plan(self, args: Sequence[Any], timed: bool = False, observed: bool = False) -> JaxPlan:
        """The plan for ``args``' signature, made and compiled on first use; ``timed``: one
        for runs with a deadline, where no loop XLA cannot interrupt runs on XLA; ``observed``:
        one for runs with a loop observer, where no loop runs on XLA."""
        args = self._planned(args)
        guarded, values = self._guards.key(args)
        key = (guarded, timed, observed)
        plan = self._plans.get(key)
        if plan is not None:
            return plan
        with self._lock:
            plan = self._plans.get(key)
            if plan is None:
                folded: list[Sized] = []
                invalid = ""
                try:
                    graph = specialize(self.graph, args, constants=values, folded=folded)
                except TensorloopError as exc:
                    # The signature makes the graph invalid: XLA cannot take the declared types,
                    # so the compiled backend runs the graph as it is and reports the fault.
                    graph, invalid = self.graph, f"the inputs contradict the graph ({exc})"
                else:
                    graph = optimize(graph, PIPELINE)
                plan = JaxPlan(graph, self.options, timed=timed, observed=observed)
                plan.invalid = invalid
                plan.build()
                # what planning folded away is still checked against each run's limits
                sized = [*folded, *([plan.largest] if plan.largest else [])]
                plan.largest = max(sized, default=None, key=lambda s: s[0])
                if len(self._plans) >= MAX_PLANS:
                    self._plans.pop(next(iter(self._plans)))
                self._plans[key] = plan
        return plan

    def _planned(self, args: Sequence[Any]) -> list[Any]:
        """``args`` as planning reads them, NumPy arrays: a ``jax.Array`` is left on its devices
        as a zero-stride array of its dtype and shape (no memory is allocated for it), except
        a control input's (``Guards``), whose value a plan may be made for: copied to the host."""
        control = self._guards.control

        def planned(k: int, value: Any) -> Any:
            if isinstance(value, list):
                return [planned(-1, v) for v in value]
            if not isinstance(value, jax.Array):
                return value
            if k in control:
                return np.asarray(value)
            return np.broadcast_to(np.zeros((), value.dtype), value.shape)

        return [planned(k, a) for k, a in enumerate(args)]

    def compile(self, args: Sequence[Any]) -> JaxPlan:
        """Compile for ``args``' signature now (of their values, only the guarded control
        inputs' are read)."""
        return self.plan(args)

    def placement(self, args: Sequence[Any], observed: bool = False) -> list[Placement]:
        """Where each node runs for ``args``' signature, and why not on XLA (``observed``: in
        a run with a loop observer)."""
        return self.plan(args, observed=observed).placement

    def run(self, args: Sequence[Any], state: RunState) -> list[Any]:
        if state.trace_names:  # per-iteration values are recorded on the host
            self._traced.start(state)
            return self._host.run(host_values(args), state)
        state.start(self.graph)
        if state.observer is not None:  # its loops on the host: a plan that meets any deadline
            return self.plan(args, observed=True).run(args, state)
        if state.deadline is None:
            return self.plan(args).run(args, state)
        # A deadline: the usual plan if XLA can stop it in time, else one that leaves the
        # loops XLA cannot interrupt to the compiled backend.
        plan = self._plans.get((self._guards.key(self._planned(args))[0], False, False))
        if plan is None or not plan.interruptible:
            plan = self.plan(args, timed=True)
        return plan.run(args, state)

    def interruptible(self, args: Sequence[Any]) -> bool:
        """Whether the plan for ``args``' signature (made on first use) stops within a run's
        deadline without a plan of its own for runs with one."""
        return self.plan(args).interruptible


class JaxBackend:
    """Runs graphs as XLA programs through JAX, on the CPU or a GPU, with what XLA cannot
    express on the compiled backend."""

    name = "jax"

    def __init__(self, options: Options | None = None) -> None:
        self.options = options or Options()

    def prepare(self, graph: Graph, input_types: Sequence[Type] | None = None) -> JaxExecutable:
        return JaxExecutable(graph, self.options)

    def evaluate(self, node: Node, inputs: Sequence[Any]) -> list[Any]:
        return Interpreter().run_node(node, inputs)


register_backend("jax", JaxBackend)

__all__ = [
    "HOST",
    "XLA",
    "JaxBackend",
    "JaxExecutable",
    "JaxPlan",
    "Options",
    "Placement",
    "control",
    "ops",
]
