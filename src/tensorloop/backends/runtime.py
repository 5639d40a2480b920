"""What every backend shares at run time: input coercion, run state (persistent variables, the
iteration limit, the trace being collected) and the run-time form of each type."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import GraphError, InputError, LoopLimitError
from ..ir.graph import Graph
from ..tensor.types import OptionalType, SequenceType, TensorType, Type

DEFAULT_MAX_ITERATIONS = 1_000_000


@dataclass(frozen=True)
class TraceEntry:
    """One recorded value: ``iteration`` holds the loop counters from outermost to innermost."""

    iteration: tuple[int, ...]
    value: Any


@dataclass
class RunState:
    """The mutable state of one run, whatever backend runs it: persistent variables (updated in
    place by Assign), the iteration limit, the values being traced and the current loop path."""

    variables: dict[str, np.ndarray[Any, Any]] = field(default_factory=dict)
    max_iterations: int = DEFAULT_MAX_ITERATIONS
    trace_names: frozenset[str] = frozenset()
    trace: dict[str, list[TraceEntry]] = field(default_factory=dict)
    path: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.max_iterations < 0:
            raise GraphError(f"max_iterations must be >= 0, got {self.max_iterations}")

    def start(self, graph: Graph) -> None:
        """Give every variable of ``graph`` that has no value yet its initial value."""
        for name, var in graph.variables.items():
            if name not in self.variables:
                initial = var.initial.copy()
                initial.setflags(write=False)
                self.variables[name] = initial

    def record(self, name: str, value: Any) -> None:
        """Keep ``value`` if ``name`` is traced, tagged with the current loop path."""
        if name in self.trace_names:
            self.trace.setdefault(name, []).append(TraceEntry(self.path, value))

    @contextmanager
    def iteration(self, i: int, where: str) -> Iterator[None]:
        """Run one loop iteration: checks the limit, and tags traced values with ``i``."""
        if i >= self.max_iterations:
            raise loop_limit_error(where, self.max_iterations)
        outer = self.path
        self.path = (*outer, i)
        try:
            yield
        finally:
            self.path = outer


def loop_limit_error(where: str, limit: int) -> LoopLimitError:
    """The error of a loop ``where`` stopped by the iteration limit, whatever backend ran it."""
    return LoopLimitError(
        f"{where}: still running after {limit} iterations "
        "(max_iterations); raise the limit if the loop is meant to run longer"
    )


def runtime_value(t: Type, value: Any) -> Any:
    """``value`` in the run-time form of type ``t``: an array for a tensor, a list of element
    values for a sequence, None or the element's value for an optional. A ValueError describes
    what was found instead when ``value`` does not have type ``t``."""
    if isinstance(t, TensorType):
        if value is None or isinstance(value, list):
            raise ValueError(describe(value))
        arr = np.asarray(value)
        if not t.accepts(arr):
            raise ValueError(f"{arr.dtype.name}{list(arr.shape)}")
        return arr
    if isinstance(t, SequenceType):
        if not isinstance(value, list):
            raise ValueError(describe(value))
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


def describe(x: Any) -> str:
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
    if isinstance(inputs, Mapping) and graph.input_aliases:
        inputs = _by_input_name(graph, inputs, prefix)
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


def _by_input_name(graph: Graph, inputs: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    """``inputs`` keyed by input name, an alias (``Graph.input_aliases``) standing for its input;
    one input given under two of its names is an error."""
    names = {p.name for p in graph.inputs}
    out: dict[str, Any] = {}
    for key, value in inputs.items():
        name = key if key in names else graph.input_aliases.get(key, key)
        if name in out:
            raise InputError(f"{prefix}input '{name}' is given twice (also as '{key}')")
        out[name] = value
    return out


def _coerce(name: str, expected: Type, value: Any, prefix: str) -> Any:
    if isinstance(expected, SequenceType):
        if not isinstance(value, list | tuple):
            raise InputError(f"{prefix}input '{name}': expected {expected}, got {describe(value)}")
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
