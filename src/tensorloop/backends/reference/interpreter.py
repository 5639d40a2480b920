"""The reference interpreter: runs any graph with NumPy kernels, clear over fast."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...errors import ExecutionError, GraphError, InputError, TensorloopError
from ...ir.graph import Graph, Node, Value
from ...ir.opdef import get_opdef
from ...tensor.types import OptionalType, SequenceType, TensorType, Type
from .registry import KernelContext, get_kernel

DEFAULT_MAX_ITERATIONS = 1_000_000


@dataclass(frozen=True)
class TraceEntry:
    """One recorded value: ``iteration`` holds the loop counters from outermost to innermost."""

    iteration: tuple[int, ...]
    value: Any


@dataclass
class RunState:
    """Mutable state of one run: persistent variables and the trace being collected."""

    variables: dict[str, np.ndarray[Any, Any]] = field(default_factory=dict)
    trace_names: frozenset[str] = frozenset()
    trace: dict[str, list[TraceEntry]] = field(default_factory=dict)


class Interpreter:
    """Evaluates graphs node by node; control-flow kernels call back into ``run_graph``."""

    def __init__(self, max_iterations: int = DEFAULT_MAX_ITERATIONS) -> None:
        if max_iterations < 0:
            raise GraphError(f"max_iterations must be >= 0, got {max_iterations}")
        self.max_iterations = max_iterations
        self.state = RunState()
        self.path: tuple[int, ...] = ()
        self._attrs: dict[int, dict[str, Any]] = {}

    def run(
        self,
        graph: Graph,
        args: Sequence[Any],
        variables: dict[str, np.ndarray[Any, Any]] | None = None,
        trace: Sequence[str] = (),
    ) -> list[Any]:
        """Run a top-level graph; ``variables`` is updated in place by Assign nodes."""
        self.state = RunState(
            variables=variables if variables is not None else {},
            trace_names=frozenset(trace),
        )
        for name, var in graph.variables.items():
            if name not in self.state.variables:
                initial = var.initial.copy()
                initial.setflags(write=False)
                self.state.variables[name] = initial
        return self.run_graph(graph, args)

    def run_graph(self, graph: Graph, args: Sequence[Any]) -> list[Any]:
        if len(args) != len(graph.inputs):
            raise ExecutionError(
                f"graph '{graph.name}' takes {len(graph.inputs)} arguments, got {len(args)}"
            )
        env: dict[Value, Any] = dict(zip(graph.inputs, args, strict=True))
        for param in graph.inputs:
            self._record(param, env[param])
        for node in graph.nodes:
            ins = [None if v is None else env[v] for v in node.inputs]
            outs = self.run_node(node, ins)
            for value, result in zip(node.outputs, outs, strict=True):
                env[value] = result
                self._record(value, result)
        return [env[v] for v in graph.outputs]

    def run_node(self, node: Node, inputs: list[Any]) -> list[Any]:
        attrs = self._attrs.get(id(node))
        if attrs is None:
            attrs = get_opdef(node.op).resolve_attrs(node.attrs, node.describe())
            self._attrs[id(node)] = attrs
        fn = get_kernel(node.op)
        try:
            result = fn(KernelContext(node, attrs, self), *inputs)
        except TensorloopError:
            raise
        except (ValueError, TypeError, IndexError, ArithmeticError) as exc:
            shapes = ", ".join(_describe(x) for x in inputs)
            raise ExecutionError(f"{node.describe()} failed on inputs ({shapes}): {exc}") from exc
        # A tuple is one value per output; anything else (a list is a sequence) is one output.
        outs = list(result) if isinstance(result, tuple) else [result]
        if len(node.outputs) == 0 and result is None:
            return []
        if len(outs) != len(node.outputs):
            raise ExecutionError(
                f"{node.describe()}: kernel returned {len(outs)} values for "
                f"{len(node.outputs)} outputs"
            )
        return [_conform(node, i, o) for i, o in enumerate(outs)]

    def _record(self, value: Value, result: Any) -> None:
        if value.name in self.state.trace_names:
            self.state.trace.setdefault(value.name, []).append(TraceEntry(self.path, result))


def _conform(node: Node, index: int, result: Any) -> Any:
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


def runtime_value(t: Type, value: Any) -> Any:
    """``value`` in the run-time form of type ``t``: an array for a tensor, a list of element
    values for a sequence, None or the element's value for an optional. A ValueError describes
    what was found instead when ``value`` does not have type ``t``."""
    if isinstance(t, TensorType):
        if value is None or isinstance(value, list):
            raise ValueError(_describe(value))
        arr = np.asarray(value)
        if not t.accepts(arr):
            raise ValueError(f"{arr.dtype.name}{list(arr.shape)}")
        return arr
    if isinstance(t, SequenceType):
        if not isinstance(value, list):
            raise ValueError(_describe(value))
        out = []
        for k, item in enumerate(value):
            try:
                out.append(runtime_value(t.element, item))
            except ValueError as exc:
                raise ValueError(f"a sequence whose element #{k} is {exc}") from None
        return out
    if isinstance(t, OptionalType):
        return None if value is None else runtime_value(t.element, value)
    return value


def _describe(x: Any) -> str:
    if isinstance(x, np.ndarray):
        return f"{x.dtype}{list(x.shape)}"
    if isinstance(x, list):
        return f"sequence of {len(x)}"
    return "none" if x is None else type(x).__name__


def coerce_inputs(
    graph: Graph, inputs: Mapping[str, Any] | Sequence[Any], where: str = ""
) -> list[Any]:
    """Match user inputs (by name or position) to the graph's parameters and check their types."""
    prefix = f"{where}: " if where else ""
    params = graph.inputs
    if isinstance(inputs, Mapping):
        unknown = sorted(set(inputs) - {p.name for p in params})
        if unknown:
            raise InputError(
                f"{prefix}unknown input(s) {', '.join(unknown)}; "
                f"the model takes {', '.join(p.name for p in params) or 'nothing'}"
            )
        missing = [p.name for p in params if p.name not in inputs]
        if missing:
            raise InputError(f"{prefix}missing input(s) {', '.join(missing)}")
        values = [inputs[p.name] for p in params]
    else:
        values = list(inputs)
        if len(values) != len(params):
            raise InputError(f"{prefix}the model takes {len(params)} inputs, got {len(values)}")
    return [_coerce(p.name, p.type, v, prefix) for p, v in zip(params, values, strict=True)]


def _coerce(name: str, expected: Type, value: Any, prefix: str) -> Any:
    if isinstance(expected, SequenceType):
        if not isinstance(value, list | tuple):
            raise InputError(f"{prefix}input '{name}': expected {expected}, got {_describe(value)}")
        return [
            _coerce(f"{name}[{k}]", expected.element, item, prefix) for k, item in enumerate(value)
        ]
    if isinstance(expected, OptionalType):
        return None if value is None else _coerce(name, expected.element, value, prefix)
    if not isinstance(expected, TensorType):
        return value
    if isinstance(value, np.ndarray | np.generic):
        arr = np.asarray(value)
        if arr.dtype != expected.dtype.numpy:
            raise InputError(
                f"{prefix}input '{name}': expected {expected}, got {arr.dtype} array "
                f"of shape {list(arr.shape)}"
            )
    else:
        try:
            raw = np.asarray(value)
            arr = raw.astype(expected.dtype.numpy)
        except (TypeError, ValueError) as exc:
            raise InputError(
                f"{prefix}input '{name}': cannot convert to {expected}: {exc}"
            ) from None
        if raw.dtype.kind in "fc" and not expected.dtype.is_float and not np.array_equal(raw, arr):
            raise InputError(
                f"{prefix}input '{name}': expected {expected}, got non-integral values {value!r}"
            )
    if not expected.accepts(arr):
        raise InputError(
            f"{prefix}input '{name}': expected {expected}, got {arr.dtype.name}{list(arr.shape)}"
        )
    return arr
