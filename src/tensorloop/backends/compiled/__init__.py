"""The compiled backend: plans a graph once per input signature and runs it as generated Python.

The first run with a given input signature (dtypes and shapes) specialises a copy of the graph
to the signature (concrete types, shapes folded to constants: ``specialize.py``), runs the loop
passes of ``PIPELINE`` on it (they see the static shapes and trip counts the signature gives)
and generates one Python function for it (``codegen.py``): no per-node dispatch, attribute
lookup or type check is left at run time. Plans are cached per signature
and shared by threads; everything a run allocates is local to the run.

What the plan does not cover it hands on, never guessing: ops without an inline template call
their reference kernel; a case the generated code does not plan for (a stacked result changing
shape, an index out of range, a failing kernel) reruns the call on the reference interpreter,
whose result or error is the answer.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...errors import TensorloopError
from ...ir.graph import Graph, Node
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
from ...passes.specialize import signature, specialize
from ...reference import Interpreter
from ...reference.runtime import RunState
from ...tensor.types import Type
from ..base import register_backend
from .codegen import generate

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

RunFunction = Callable[[Sequence[Any], RunState], list[Any]]


class Plan:
    """One signature's generated function and its source (for ``tensorloop inspect``)."""

    def __init__(self, graph: Graph, trace: frozenset[str]) -> None:
        self.source, namespace = generate(graph, trace)
        # The file name is for tracebacks only; a graph's name may hold any character (NUL too).
        label = graph.name.encode("unicode_escape").decode("ascii")
        code = compile(self.source, f"<tensorloop plan of graph '{label}'>", "exec")
        exec(code, namespace)  # our own code: names are sanitised, strings are repr()s
        self.run: RunFunction = namespace["run"]

    @classmethod
    def on_reference(cls, graph: Graph, why: Exception) -> Plan:
        """A plan that hands every run to the reference interpreter, for a graph this backend
        failed to plan (a bug of ours): said once, as a RuntimeWarning, never a wrong answer."""
        warnings.warn(
            f"the compiled backend could not plan graph '{graph.name}' "
            f"({type(why).__name__}: {why}); it runs on the reference interpreter",
            RuntimeWarning,
            stacklevel=4,
        )
        plan = cls.__new__(cls)
        plan.source = ""
        plan.run = lambda args, state: Interpreter(state=state).run_graph(graph, args)
        return plan


class CompiledExecutable:
    """A graph optimised once and planned per input signature; safe to run from many threads."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self._plans: dict[tuple[Any, ...], Plan] = {}
        self._lock = threading.Lock()
        self._stateful = any(n.op == "Assign" for _, n in graph.walk())

    def plan(self, args: Sequence[Any], trace: frozenset[str] = frozenset()) -> Plan:
        """The plan for ``args``' signature (made on first use); traced values plan from the
        unoptimised graph, so every named value is recorded where the model computes it."""
        key = (signature(args), trace)
        plan = self._plans.get(key)
        if plan is None:
            try:
                graph = specialize(self.graph, args, fold=not trace)
                graph = graph if trace else optimize(graph)
            except TensorloopError:
                # The signature makes the graph invalid (a reshape the shapes cannot take, say):
                # plan the graph as it is, and let the run report the fault as the reference does.
                graph = self.graph
            try:
                plan = Plan(graph, trace)
            except Exception as exc:  # a bug in planning: the reference still answers
                plan = Plan.on_reference(self.graph, exc)
            with self._lock:
                if len(self._plans) >= MAX_PLANS:
                    self._plans.pop(next(iter(self._plans)))
                plan = self._plans.setdefault(key, plan)
        return plan

    def compile(self, args: Sequence[Any]) -> Plan:
        """Plan for ``args``' signature now, ahead of the first run (values are not read)."""
        return self.plan(args)

    def run(self, args: Sequence[Any], state: RunState) -> list[Any]:
        state.start(self.graph)
        plan = self.plan(args, state.trace_names)
        saved = dict(state.variables) if self._stateful else None
        stacked = state.stacked_bytes
        try:
            return plan.run(args, state)
        except TensorloopError:
            raise
        except Exception:  # support.Deoptimize included
            # Not planned for, or failed: the reference's answer (or its clear error) stands.
            if saved is not None:
                state.variables.clear()
                state.variables.update(saved)
            state.trace.clear()
            state.path = ()
            state.loops = ()
            state.stacked_bytes = stacked
            return Interpreter(state=state).run_graph(self.graph, args)


class CompiledBackend:
    """Runs graphs as generated Python over NumPy, planned once per input signature."""

    name = "compiled"

    def prepare(
        self, graph: Graph, input_types: Sequence[Type] | None = None
    ) -> CompiledExecutable:
        return CompiledExecutable(graph)

    def evaluate(self, node: Node, inputs: Sequence[Any]) -> list[Any]:
        # One node once: planning would cost more than it saves.
        return Interpreter().run_node(node, inputs)


def optimize(graph: Graph, passes: Sequence[Pass] | None = None) -> Graph:
    """``graph`` after ``passes`` (``PIPELINE`` by default), rewritten in place."""
    with np.errstate(all="ignore"):
        for p in PIPELINE if passes is None else passes:
            graph = (p(graph) if VERIFY_PASSES else p.run(graph)).graph
    return graph


register_backend("compiled", CompiledBackend)

__all__ = ["PIPELINE", "VERIFY_PASSES", "CompiledBackend", "CompiledExecutable", "Plan", "optimize"]
