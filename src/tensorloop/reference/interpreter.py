"""The reference interpreter: runs any graph with NumPy kernels, clear over fast."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import ExecutionError, ResourceLimitError, TensorloopError
from ..ir.graph import Graph, Node, Value
from ..ir.opdef import get_opdef
from .allocation import check_outputs, predicted
from .registry import Kernel, KernelContext, get_kernel
from .runtime import DEFAULT_MAX_ITERATIONS, RunState, describe, loop_label, runtime_value


class Interpreter:
    """Evaluates graphs node by node; control-flow kernels run bodies through ``run_graph``."""

    def __init__(
        self, max_iterations: int = DEFAULT_MAX_ITERATIONS, state: RunState | None = None
    ) -> None:
        self.state = state if state is not None else RunState(max_iterations=max_iterations)
        self._attrs: dict[int, dict[str, Any]] = {}
        self._labels: dict[int, str] = {}
        self._drops: dict[int, tuple[Graph, list[list[Value]], list[Value]]] = {}
        """Per graph: what to let go after each node, and the outputs its nodes made."""

    def run(
        self,
        graph: Graph,
        args: Sequence[Any],
        variables: dict[str, np.ndarray[Any, Any]] | None = None,
        trace: Sequence[str] = (),
    ) -> list[Any]:
        """Run a top-level graph in a fresh state; ``variables`` is updated in place."""
        self.state = RunState(
            variables=variables if variables is not None else {},
            max_iterations=self.state.max_iterations,
            trace_names=frozenset(trace),
            limits=self.state.limits,
            timeout=self.state.timeout,
        )
        self.state.start(graph)
        return self.run_graph(graph, args)

    def run_graph(self, graph: Graph, args: Sequence[Any]) -> list[Any]:
        if len(args) != len(graph.inputs):
            raise ExecutionError(
                f"graph '{graph.name}' takes {len(graph.inputs)} arguments, got {len(args)}"
            )
        env: dict[Value, Any] = dict(zip(graph.inputs, args, strict=True))
        state = self.state
        record = state.record
        for param in graph.inputs:
            record(param.name, env[param])
        drops = self._drops.get(id(graph))
        if drops is None or drops[0] is not graph:
            made = [v for v in dict.fromkeys(graph.outputs) if v.producer is not None]
            drops = self._drops[id(graph)] = (graph, last_uses(graph), made)
        for node, done in zip(graph.nodes, drops[1], strict=True):
            ins = [None if v is None else env[v] for v in node.inputs]
            outs = self.run_node(node, ins)
            for value, result in zip(node.outputs, outs, strict=True):
                env[value] = result
                if counted(result):  # the run's live bytes: max_run_bytes
                    state.hold(result, node)
                record(value.name, result)
            for value in done:
                if counted(env[value]):
                    state.drop(env[value])
        results = [env[v] for v in graph.outputs]
        for v in drops[2]:  # handed to the caller, which holds its own
            if counted(env[v]):
                state.drop(env[v])
        return results

    def run_node(self, node: Node, inputs: Sequence[Any]) -> list[Any]:
        attrs = self._attrs.get(id(node))
        if attrs is None:
            attrs = get_opdef(node.op).resolve_attrs(node.attrs, node.describe())
            self._attrs[id(node)] = attrs
        if predicted(node.op):
            check_outputs(self.state, node, attrs, inputs)
        ctx = KernelContext(node, attrs, self.run_graph, self.state)
        if node.op == "Loop":  # labelled always: the budget's error names the loop path
            label = self._labels.get(id(node))
            if label is None:
                label = self._labels[id(node)] = loop_label(node)
            with self.state.inside(label):
                return invoke(get_kernel(node.op), ctx, inputs)
        return invoke(get_kernel(node.op), ctx, inputs)


SMALL_BYTES = 4096
"""Arrays a graph's nodes make of fewer bytes than this are not counted in the run's live bytes
(``Limits.max_run_bytes``): at most this much per value of the graphs running, where counting
would cost more than the value. Sequences, carried values and stacked rows are always counted."""


def counted(value: Any) -> bool:
    """Whether a node's output ``value`` counts in the run's live bytes (``SMALL_BYTES``)."""
    return type(value) is not np.ndarray or value.nbytes >= SMALL_BYTES


def last_uses(graph: Graph) -> list[list[Value]]:
    """For each node of ``graph``, the values its nodes made that nothing reads after it (the
    graph's outputs excepted): what the run may let go once the node has run."""
    last: dict[Value, int] = {}
    for k, node in enumerate(graph.nodes):
        for v in node.outputs:
            last[v] = k
        for u in node.inputs:
            if u is not None and u in last:
                last[u] = k
    outputs = set(graph.outputs)
    done: list[list[Value]] = [[] for _ in graph.nodes]
    for v, k in last.items():
        if v not in outputs:
            done[k].append(v)
    return done


def invoke(fn: Kernel, ctx: KernelContext, inputs: Sequence[Any]) -> list[Any]:
    """``fn(ctx, *inputs)`` as one value per output of ``ctx.node``, each conformed to its type;
    a Python error in the kernel becomes this node's ExecutionError."""
    node = ctx.node
    result = call_kernel(fn, ctx, inputs)
    # A tuple is one value per output; anything else (a list is a sequence) is one output.
    outs = list(result) if isinstance(result, tuple) else [result]
    if len(node.outputs) == 0 and result is None:
        return []
    if len(outs) != len(node.outputs):
        raise ExecutionError(
            f"{node.describe()}: kernel returned {len(outs)} values for {len(node.outputs)} outputs"
        )
    return [conform(node, i, o) for i, o in enumerate(outs)]


def call_kernel(fn: Kernel, ctx: KernelContext, inputs: Sequence[Any]) -> Any:
    """``fn(ctx, *inputs)`` as the kernel returns it; a Python error in the kernel becomes this
    node's ExecutionError (a ResourceLimitError for memory the limits let through but the
    machine could not give)."""
    try:
        return fn(ctx, *inputs)
    except TensorloopError:
        raise
    except (ValueError, TypeError, IndexError, ArithmeticError, MemoryError) as exc:
        shapes = ", ".join(describe(x) for x in inputs)
        where = ctx.node.describe()
        if isinstance(exc, MemoryError):
            raise ResourceLimitError(
                f"{where} ran out of memory on inputs ({shapes}): {exc}"
            ) from None
        raise ExecutionError(f"{where} failed on inputs ({shapes}): {exc}") from exc


def conform(node: Node, index: int, result: Any) -> Any:
    """Kernels may return NumPy scalars or views; the IR promises values of the typed type."""
    t = node.outputs[index].type
    try:
        return runtime_value(t, result)
    except ValueError as exc:
        # A type rule and its kernel disagree: a bug in tensorloop, or a hand-typed graph.
        raise ExecutionError(
            f"{node.describe()} output #{index} %{node.outputs[index].name}: kernel "
            f"produced {exc}, its type says {t}"
        ) from None
