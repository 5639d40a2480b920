"""The compiled backend: plans a graph once per input signature and runs it as generated Python.

The first run with a given input signature (dtypes and shapes) specialises a copy of the graph
to the signature (concrete types, shapes folded to constants: ``specialize.py``), runs the loop
passes of ``PIPELINE`` on it (they see the static shapes and trip counts the signature gives)
and generates one Python function for it (``codegen.py``): no per-node dispatch, attribute
lookup or type check is left at run time. Plans are cached per signature
and shared by threads; everything a run allocates is local to the run.

What the plan does not cover it hands on, never guessing, and says so: ops without an inline
template call their reference kernel (the plan: no handoff); Loops and Ifs nested deeper than
``codegen.MAX_NESTING`` run their bodies on the reference interpreter (a handoff decided while
planning); a case the generated code does not plan for (a stacked result changing shape, an
index out of range, shapes NumPy refuses at run time) raises ``support.Deoptimize`` and the call
is rerun on the reference interpreter, whose result or error is the answer (a handoff at run
time). Each handoff is on the run's ``Outputs.handoffs`` and warned once per plan
(``FallbackWarning``). Any other exception is a bug: it propagates, never rerun; so does a
failure to plan.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Sequence
from typing import Any, cast

import numpy as np

from ...errors import TensorloopError, VerificationError
from ...ir.graph import Graph, Node
from ...ir.verify import verify
from ...passes import (
    eliminate_common_subexpressions,
    eliminate_dead_loop_values,
    fold_constants,
    hoist_loop_invariants,
    hoist_sliced_work,
    loop_prefix_sums,
    merge_split_elementwise,
)
from ...passes.base import Pass
from ...passes.specialize import Guards, Sized, specialize
from ...reference import Interpreter
from ...reference.runtime import RunState, host_values
from ...tensor.types import Type
from ..base import RUN, Handoff, Handoffs, Placement, label, register_backend
from . import support
from .codegen import generate

NAME = "compiled"

PIPELINE: list[Pass] = [
    fold_constants,
    hoist_loop_invariants,
    hoist_sliced_work,
    eliminate_common_subexpressions,
    loop_prefix_sums,
    eliminate_dead_loop_values,
    merge_split_elementwise,
]
"""The passes each plan runs, in order: each keeps results unchanged (tests/passes)."""

VERIFY_PASSES = False
"""Verify the graph after each pass of a plan. Off for speed (verification is most of the planning
time of a small model); the passes verify in their own tests, and the test suite turns this on
for every model it runs."""

MAX_PLANS = 64
"""Plans kept per executable; a model run with ever new shapes replans the oldest away."""

GENERIC_AFTER = 3
"""Distinct signatures of one kind (the same dtypes, ranks and guarded values), differing from
each other in the same dims only, after which a new one gets a plan with those dims left open
(``specialize(generic=...)``), as a tracing JIT marks a dim dynamic once it has recompiled for
it: sequences of ever new lengths share one plan instead of planning each length."""

RunFunction = Callable[[Sequence[Any], RunState], list[Any]]


class CompiledPlan:
    """One signature's generated function, its source (for ``tensorloop inspect``) and its
    handoffs: the Loops and Ifs whose bodies it leaves to the reference interpreter
    (``handed_on``: node and why), decided while planning, and each run's deoptimisations."""

    def __init__(
        self,
        graph: Graph,
        trace: frozenset[str],
        observed: bool = False,
        folded: Sized | None = None,
        checked: bool = False,
    ) -> None:
        # ``folded``: the largest output planning folded away of an op whose output size comes
        # from data; the run checks it against its limits, as the reference checks it when it
        # allocates it. ``checked``: every node output is checked against its declared type.
        self.source, namespace, self.handed_on = generate(graph, trace, observed, folded, checked)
        # The file name is for tracebacks only; a graph's name may hold any character (NUL too).
        name = graph.name.encode("unicode_escape").decode("ascii")
        code = compile(self.source, f"<tensorloop plan of graph '{name}'>", "exec")
        exec(code, namespace)  # our own code: names are sanitised, strings are repr()s
        self.run: RunFunction = namespace["run"]
        self.handoffs = Handoffs(
            Handoff((label(node),), NAME, "reference", why) for node, why in self.handed_on
        )


class CompiledExecutable:
    """A graph optimised once and planned per input signature; safe to run from many threads."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self._plans: dict[tuple[Any, ...], CompiledPlan] = {}
        self._lock = threading.Lock()
        self._stateful = any(n.op == "Assign" for _, n in graph.walk())
        self._guards = Guards(graph)
        self._kinds: dict[Hashable, set[tuple[Any, ...]]] = {}
        """The signatures planned so far, by kind (``_kind``)."""
        self._generic: dict[Hashable, CompiledPlan | None] = {}
        """Plans with dims left open, by kind, open dims and the other dims' sizes; None where
        the graph cannot be typed with those dims open."""

    def plan(
        self, args: Sequence[Any], trace: frozenset[str] = frozenset(), observed: bool = False
    ) -> CompiledPlan:
        """The plan for ``args``' signature (made on first use); traced values plan from the
        unoptimised graph, so every named value is recorded where the model computes it, and
        so do observed runs (``observed``), whose observer sees the model's own loops.

        A plan of an unobserved run is also made for the values of the small control inputs
        (``specialize.control_inputs``: an ``sr`` that picks a branch, a length that shapes a
        state), which fold with everything they decide; a call with other values gets (or
        makes) another plan."""
        as_written = bool(trace) or observed
        guarded, values = self._guards.key(args, not as_written)
        key = (guarded, trace, observed)
        plan = self._plans.get(key)
        if plan is None and not as_written:
            plan = self._generic_plan(args, guarded, values)
        if plan is None:
            folded: list[Sized] = []
            checked = False
            try:
                graph = specialize(
                    self.graph, args, fold=not as_written, constants=values, folded=folded
                )
            except TensorloopError:
                # The signature makes the graph invalid (a reshape the shapes cannot take, a
                # declared type it contradicts): plan the graph as it is, every value checked
                # against its type, and let the run report the fault as the reference does.
                graph, checked = self.graph, True
            else:
                graph = graph if as_written else optimize(graph)
            # A pass or the code generator failing is a bug: it propagates, never hidden.
            largest = max(folded, default=None, key=lambda sized: sized[0])
            plan = CompiledPlan(graph, trace, observed, largest, checked)
            with self._lock:
                if len(self._plans) >= MAX_PLANS:
                    self._plans.pop(next(iter(self._plans)))
                plan = self._plans.setdefault(key, plan)
        return plan

    def _generic_plan(
        self, args: Sequence[Any], guarded: Hashable, values: dict[int, Any]
    ) -> CompiledPlan | None:
        """A plan with the dims left open in which this kind of signature has varied (after
        ``GENERIC_AFTER`` signatures), or None: too few yet, or a graph that cannot be typed
        so (then each signature gets its own plan, as before)."""
        sig, guard = cast(tuple[tuple[Any, ...], Any], guarded)  # Guards.key's pair
        kind = _kind(sig, guard)
        if kind is None:
            return None
        with self._lock:
            seen = self._kinds.setdefault(kind, set())
            if len(seen) < MAX_PLANS:
                seen.add(sig)
            others = [s for s in seen if s != sig]
        if len(others) + 1 < GENERIC_AFTER:
            return None
        # The dims to open: those this signature differs in from its nearest planned one, if
        # enough signatures differ from it in those dims only (a length that varies stays
        # apart from a batch size that varies too: each batch size gets its plan).
        diffs = [
            frozenset(
                (k, a)
                for k, arg in enumerate(sig)
                for a, d in enumerate(arg[1])
                if other[k][1][a] != d
            )
            for other in others
        ]
        support = {d: sum(e <= d for e in diffs) for d in set(diffs)}
        nearest = min(support, key=lambda d: (len(d), -support[d], sorted(d)))
        if support[nearest] + 1 < GENERIC_AFTER:
            return None
        open_dims = {
            k: frozenset(a for kk, a in nearest if kk == k) for k in {k for k, _ in nearest}
        }
        rest = tuple(
            None
            if arg is None
            else tuple(d for a, d in enumerate(arg[1]) if a not in open_dims.get(k, ()))
            for k, arg in enumerate(sig)
        )
        key = (kind, tuple(sorted(open_dims.items())), rest)
        if key in self._generic:
            return self._generic[key]
        folded: list[Sized] = []
        try:
            graph = specialize(self.graph, args, constants=values, folded=folded, generic=open_dims)
        except TensorloopError:  # a claim the open dims cannot confirm: plan per signature
            plan = None
        else:
            largest = max(folded, default=None, key=lambda sized: sized[0])
            plan = CompiledPlan(optimize(graph), frozenset(), False, largest)
        with self._lock:
            return self._generic.setdefault(key, plan)

    def compile(self, args: Sequence[Any]) -> CompiledPlan:
        """Plan for ``args``' signature now, ahead of the first run (of their values, only the
        guarded control inputs' are read)."""
        return self.plan(args)

    def placement(self, args: Sequence[Any]) -> list[Placement]:
        """Where each top-level node runs for ``args``' signature (here), and each Loop or If,
        at any depth, whose bodies the plan leaves to the reference interpreter, with why."""
        handed = {label(node): (node, why) for node, why in self.plan(args).handed_on}
        rows = []
        for node in self.graph.nodes:
            if node.op == "Constant":
                continue
            inner = handed.pop(label(node), None)
            device, why = (NAME, "") if inner is None else ("reference", inner[1])
            rows.append(Placement(label(node), node.op, device, why))
        rows += [Placement(name, n.op, "reference", why) for name, (n, why) in handed.items()]
        return rows

    def run(self, args: Sequence[Any], state: RunState) -> list[Any]:
        args = host_values(args)  # a jax.Array input as NumPy
        state.start(self.graph)
        plan = self.plan(args, state.trace_names, state.observer is not None)
        saved = dict(state.variables) if self._stateful else None
        stacked, handed = state.stacked_bytes, len(state.handoffs)
        live, held, total = state.live_bytes, dict(state._held), state.total_iterations
        plan.handoffs.start(state)
        try:
            return plan.run(args, state)
        except support.Deoptimize as deopt:  # a case the plan does not cover: planned for
            reason = str(deopt)
        except MemoryError as exc:  # what the plan preallocates, the machine could not give
            reason = f"out of memory ({exc or 'MemoryError'})"
        # The reference's answer (or its clear error) stands: its run starts from the state this
        # run started from, and it is what this run did (the handoff says so).
        if saved is not None:
            state.variables.clear()
            state.variables.update(saved)
        state.trace.clear()
        state.generators.clear()  # the reference draws each random op's stream from its start
        state.path = ()
        state.loops = ()
        state.stacked_bytes = stacked
        state.live_bytes, state._held, state.total_iterations = live, held, total
        del state.handoffs[handed:]
        nodes = tuple(label(n) for n in self.graph.nodes if n.op != "Constant")
        plan.handoffs.record(state, Handoff(nodes, NAME, "reference", reason, RUN))
        return Interpreter(state=state).run_graph(self.graph, args)


def _kind(sig: tuple[Any, ...], guard: Any) -> Hashable | None:
    """What signatures that may share a plan with open dims have in common: each argument's
    dtype and rank, and the guarded values; None for arguments other than arrays."""
    kinds = []
    for arg in sig:
        if not (isinstance(arg, tuple) and len(arg) == 2 and isinstance(arg[1], tuple)):
            return None
        kinds.append((arg[0], len(arg[1])))
    return (tuple(kinds), guard)


class CompiledBackend:
    """Runs graphs as generated Python over NumPy, planned once per input signature."""

    name = NAME

    def prepare(
        self, graph: Graph, input_types: Sequence[Type] | None = None
    ) -> CompiledExecutable:
        return CompiledExecutable(graph)

    def evaluate(self, node: Node, inputs: Sequence[Any]) -> list[Any]:
        # One node once: planning would cost more than it saves.
        return Interpreter().run_node(node, inputs)


def optimize(graph: Graph, passes: Sequence[Pass] | None = None) -> Graph:
    """``graph`` after ``passes`` (``PIPELINE`` by default), rewritten in place."""
    checked = VERIFY_PASSES and _verifies(graph)
    with np.errstate(all="ignore"):
        for p in PIPELINE if passes is None else passes:
            graph = (p(graph) if checked else p.run(graph)).graph
    return graph


def _verifies(graph: Graph) -> bool:
    """Whether the specialised ``graph`` verifies before any pass runs. A signature can leave a
    node that no type fits (a Reshape of a Slice that a Check refuses at run time first): the
    run reports that fault as the reference does, and the passes, which did not make it, are
    not checked against it."""
    try:
        verify(graph)
    except VerificationError:
        return False
    return True


register_backend("compiled", CompiledBackend)

__all__ = [
    "PIPELINE",
    "VERIFY_PASSES",
    "CompiledBackend",
    "CompiledExecutable",
    "CompiledPlan",
    "optimize",
]
