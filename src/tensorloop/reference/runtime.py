"""What every backend shares at run time: input coercion, run state (persistent variables, the
limits and deadline, the trace being collected) and the run-time form of each type.

A tensor input may be a ``jax.Array`` (``is_device_array``): ``coerce_inputs`` checks its dtype
and shape as it checks a NumPy array's and keeps it where it is, on its devices, so that the
jax backend runs on it in place (sharded, where it is split over several devices); the NumPy
backends take it as a host array (``host_values``). This module never imports JAX."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ..errors import GraphError, InputError, LoopLimitError, ResourceLimitError, RunTimeoutError
from ..ir.graph import Graph, Node
from ..limits import (
    DEFAULT_LIMITS,
    Limits,
    check_shape,
    format_bytes,
    stacked_limit_error,
)
from ..limits import (
    DEFAULT_MAX_ITERATIONS as DEFAULT_MAX_ITERATIONS,
)
from ..tensor import numerics
from ..tensor.dtypes import DType
from ..tensor.types import OptionalType, SequenceType, TensorType, Type
from .trace import LOOP_SEPARATOR as LOOP_SEPARATOR
from .trace import TraceEntry as TraceEntry


class LoopObserver(Protocol):
    """Told of a run's loop iterations as they start, and of each loop's end: give one to a run
    as ``Model.run(inputs, observer=...)``. ``path`` holds the labels of the loops running,
    outermost first and the loop itself last (``loop_label``: the loop paths of traces), and
    ``iteration`` that loop's counter, from 0. Every backend calls it with the same sequence
    (the jax backend runs the loops of an observed run on the compiled backend: XLA cannot
    call out each iteration), on the thread that runs the run; an exception it raises stops
    the run. Where the compiled backend hands a run it did not plan for to the reference
    interpreter, the rerun is observed too, from its start. Subclass it to inherit the
    ``on_loop_end`` that does nothing."""

    def on_iteration(self, path: tuple[str, ...], iteration: int) -> None:
        """Iteration ``iteration`` of loop ``path`` starts (within the iteration limit and the
        deadline)."""

    def on_loop_end(self, path: tuple[str, ...], trips: int) -> None:
        """Loop ``path`` ended after ``trips`` iterations (0 for a loop that ran none); not
        called for a loop stopped by an error."""
        return None


def loop_label(node: Node) -> str:
    """The label of Loop ``node`` in trace paths, unique among the loops of its graph: the
    node's name; where loops of the graph share that name (a bidirectional RNN's two
    directions), its body's name; where that is shared too (or both are empty), the name
    followed by ``#k``, the loop's position among the graph's loops of that name."""
    loops = [n for n in node.graph.nodes if n.op == "Loop"] if node.graph is not None else [node]
    if node.name and [n.name for n in loops].count(node.name) == 1:
        return node.name
    body = _body_name(node)
    if body and [_body_name(n) for n in loops].count(body) == 1:
        return body
    same = [n for n in loops if n.name == node.name]
    return f"{node.name or 'Loop'}#{same.index(node) if node in same else 0}"


def _body_name(node: Node) -> str:
    body = node.attrs.get("body")
    return body.name if isinstance(body, Graph) else ""


@dataclass
class RunState:
    """The mutable state of one run, whatever backend runs it: persistent variables (updated in
    place by Assign), the limits (the iteration limit, the ``deadline`` on ``time.monotonic()``,
    the bytes stacked so far), the values being traced and the current loop path: ``path``
    the counters of the loops running now, ``loops`` their labels (``loop_label``); the
    ``observer`` (if any) is told of every loop iteration (``LoopObserver``)."""

    variables: dict[str, np.ndarray[Any, Any]] = field(default_factory=dict)
    max_iterations: int = DEFAULT_MAX_ITERATIONS
    trace_names: frozenset[str] = frozenset()
    trace: dict[str, list[TraceEntry]] = field(default_factory=dict)
    path: tuple[int, ...] = ()
    loops: tuple[str, ...] = ()
    limits: Limits = DEFAULT_LIMITS
    timeout: float | None = None
    deadline: float | None = None
    stacked_bytes: int = 0
    total_iterations: int = 0
    """Body runs of every loop at every depth so far (``Limits.max_total_iterations``)."""
    live_bytes: int = 0
    """Bytes of the buffers the run holds now (``Limits.max_run_bytes``): each buffer once,
    however many values view it (``hold`` / ``drop``), and what a compiled plan reserves."""
    peak_bytes: int = 0
    """The most ``live_bytes`` has been in this run."""
    _held: dict[int, list[Any]] = field(default_factory=dict, repr=False)
    """The buffers held (``hold``), by id: [the buffer, how many holds, its bytes]."""
    observer: LoopObserver | None = None
    handoffs: list[Any] = field(default_factory=list)
    """What the backends running this run handed to other backends (``backends.base.Handoff``),
    in the order they did."""
    generators: dict[int, Any] = field(default_factory=dict, repr=False)
    """Each random op's generator in this run (``generator``), by the node's id."""

    def generator(self, node: object, start: Callable[[], Any]) -> Any:
        """This run's random-number generator of ``node`` (a random op's, ``ops/random.py``),
        made by ``start()`` where the run first asks for it. So every run starts each random
        op's stream afresh (a seeded op gives the same values in every run), and a loop's body
        continues its op's stream trip after trip; a run never shares one with another run."""
        key = id(node)
        found = self.generators.get(key)
        if found is None:
            found = self.generators[key] = start()
        return found

    @property
    def labelled(self) -> bool:
        """Whether loops keep ``loops`` (their labels) up to date: for a trace or an observer."""
        return bool(self.trace_names) or self.observer is not None

    def __post_init__(self) -> None:
        if self.max_iterations < 0:
            raise GraphError(f"max_iterations must be >= 0, got {self.max_iterations}")
        if self.timeout is not None:
            if not self.timeout > 0:
                raise GraphError(f"timeout must be seconds > 0 or None, got {self.timeout}")
            if self.deadline is None:
                self.deadline = time.monotonic() + self.timeout

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
            self.trace.setdefault(name, []).append(TraceEntry(self.path, value, self.loops))

    @contextmanager
    def inside(self, label: str) -> Iterator[None]:
        """Run a loop labelled ``label``: traced values in its iterations carry the label."""
        outer = self.loops
        self.loops = (*outer, label)
        try:
            yield
        finally:
            self.loops = outer

    @contextmanager
    def iteration(self, i: int, where: str) -> Iterator[None]:
        """Run one loop iteration: checks the limit and the deadline, tells the observer and
        tags traced values with ``i``."""
        if i >= self.max_iterations:
            raise loop_limit_error(where, self.max_iterations)
        self.total_iterations += 1
        if self.total_iterations > self.limits.max_total_iterations:
            raise total_limit_error(where, self.loops, self.limits.max_total_iterations)
        if self.deadline is not None:
            self.check_deadline(where)
        if self.observer is not None:
            self.observer.on_iteration(self.loops, i)
        outer = self.path
        self.path = (*outer, i)
        try:
            yield
        finally:
            self.path = outer

    def plan_iterations(self, more: int, where: str) -> None:
        """Refuse, before it starts, a loop ``where`` certain to make ``more`` iterations at
        every depth (``ir.loop.fixed_runs``) that the run's budget cannot hold."""
        limit = self.limits.max_total_iterations
        if self.total_iterations + more > limit:
            raise total_limit_error(where, self.loops, limit, (self.total_iterations, more))

    def loop_end(self, trips: int) -> None:
        """The loop running now ended after ``trips`` iterations: tells the observer."""
        if self.observer is not None:
            self.observer.on_loop_end(self.loops, trips)

    def check_deadline(self, where: str) -> None:
        """Stop the run with ``RunTimeoutError`` if its deadline has passed."""
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise timeout_error(where, self.timeout)

    def check_tensor(self, shape: Sequence[int], dtype: DType | None, where: str) -> None:
        """Refuse a tensor of ``shape`` about to be allocated ``where`` beyond the limits."""
        check_shape(shape, dtype, where, self.limits)

    def check_room(self, size: int, where: str) -> None:
        """Refuse ``size`` more bytes about to be allocated ``where`` if the run's live bytes
        would pass ``Limits.max_run_bytes``."""
        if self.live_bytes + size > self.limits.max_run_bytes:
            raise run_bytes_error(where, self.live_bytes, size, self.limits.max_run_bytes)

    def reserve(self, size: int, where: str) -> None:
        """Count ``size`` bytes as live (checked first): memory a plan holds beside values."""
        self.check_room(size, where)
        self.live_bytes += size
        self.peak_bytes = max(self.peak_bytes, self.live_bytes)

    def release(self, size: int) -> None:
        """Count ``size`` reserved bytes as free again."""
        self.live_bytes -= size

    def hold(self, value: Any, where: str | Node) -> None:
        """Count the buffers of ``value`` (an array, a sequence's arrays) as held once more;
        a buffer not held before adds its bytes, checked against ``Limits.max_run_bytes``
        (made already: an op whose output size no prediction bounds is bounded by its
        inputs)."""
        if type(value) is np.ndarray:  # the common case, without a list
            root = value if value.base is None else _root(value)
            entry = self._held.get(id(root))
            if entry is not None:
                entry[1] += 1
            else:
                self._hold_new(root, where)
            return
        for root in buffers_of(value):
            entry = self._held.get(id(root))
            if entry is not None:
                entry[1] += 1
            else:
                self._hold_new(root, where)

    def _hold_new(self, root: np.ndarray[Any, Any], where: str | Node) -> None:
        size = root.nbytes
        live = self.live_bytes + size
        if live > self.limits.max_run_bytes:
            at = where.describe() if isinstance(where, Node) else where
            raise run_bytes_error(at, self.live_bytes, size, self.limits.max_run_bytes)
        self.live_bytes = live
        if live > self.peak_bytes:
            self.peak_bytes = live
        self._held[id(root)] = [root, 1, size]

    def drop(self, value: Any) -> None:
        """Undo one ``hold`` of ``value``: a buffer held no more frees its bytes."""
        if type(value) is np.ndarray:
            root = value if value.base is None else _root(value)
            roots: Any = (root,)
        else:
            roots = buffers_of(value)
        held = self._held
        for root in roots:
            entry = held.get(id(root))
            if entry is None:
                continue
            entry[1] -= 1
            if entry[1] == 0:
                del held[id(root)]
                self.live_bytes -= entry[2]

    def add_stacked(self, size: int, where: str) -> None:
        """Count ``size`` more bytes of stacked loop outputs against ``max_stacked_bytes``."""
        total = self.stacked_bytes + size
        if total > self.limits.max_stacked_bytes:
            raise stacked_limit_error(where, total, self.limits)
        self.stacked_bytes = total


def timeout_error(where: str, timeout: float | None) -> RunTimeoutError:
    """The error of a run stopped ``where`` by its deadline, whatever backend ran it."""
    return RunTimeoutError(
        f"{where}: the run was still going when its timeout of {timeout} s ran out "
        "(timeout); raise the timeout if the model is meant to run longer"
    )


def loop_limit_error(where: str, limit: int) -> LoopLimitError:
    """The error of a loop ``where`` stopped by the iteration limit, whatever backend ran it."""
    return LoopLimitError(
        f"{where}: still running after {limit} iterations "
        "(max_iterations); raise the limit if the loop is meant to run longer"
    )


def _root(array: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """The array whose memory ``array`` views (itself where it owns its memory)."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def buffers_of(value: Any) -> list[np.ndarray[Any, Any]]:
    """The memory blocks ``value`` keeps alive: each array's base (a view counts as the array it
    views), a sequence's elements', none for None or a scalar."""
    if isinstance(value, np.ndarray):
        root = value
        while isinstance(root.base, np.ndarray):
            root = root.base
        return [root]
    if isinstance(value, list):
        return [b for item in value for b in buffers_of(item)]
    return []


def run_bytes_error(where: str, live: int, size: int, limit: int) -> ResourceLimitError:
    """The error of a run refused ``size`` more bytes ``where`` while holding ``live``."""
    return ResourceLimitError(
        f"{where}: {format_bytes(size)} more would make the run hold "
        f"{format_bytes(live + size)} at once, more than the limit of {format_bytes(limit)} "
        "(Limits.max_run_bytes)"
    )


def total_limit_error(
    where: str, path: Sequence[str], limit: int, planned: tuple[int, int] | None = None
) -> LoopLimitError:
    """The error of a run stopped ``where`` (the loop about to start an iteration; ``path``
    the labels of the loops running, outermost first) by its budget of iterations in all;
    ``planned``: (iterations made so far, iterations the loop is certain to make), for a loop
    refused before it starts."""
    inside = f" (loop path {' > '.join(path)})" if path else ""
    if planned is not None:
        done, more = planned
        return LoopLimitError(
            f"{where}{inside}: would make {more} loop iterations at every depth (its trips "
            f"times those of the loops inside it), {done} made before it, more than the limit "
            f"of {limit} in all (Limits.max_total_iterations); raise the limit if the model is "
            "meant to run longer"
        )
    return LoopLimitError(
        f"{where}{inside}: the run's loops, at every depth, have made {limit} iterations in "
        "all (Limits.max_total_iterations; the trips of nested loops multiply); raise the "
        "limit if the model is meant to run longer"
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


DEVICE_ARRAY_MODULES = ("jax", "jaxlib")
"""The packages whose arrays ``is_device_array`` recognises (``jax.Array``'s class lives in
``jaxlib``)."""


def is_device_array(value: Any) -> bool:
    """Whether ``value`` is a concrete ``jax.Array`` (on one device or sharded over several),
    told by duck typing: its class comes from JAX and it has a ``shape``, a ``dtype`` and a
    ``sharding``. A tracer (a value inside a function JAX traces) has no sharding: it is none."""
    return (
        type(value).__module__.partition(".")[0] in DEVICE_ARRAY_MODULES
        and hasattr(value, "sharding")
        and hasattr(value, "shape")
        and hasattr(value, "dtype")
    )


def host_values(args: Sequence[Any]) -> list[Any]:
    """``args`` with every device array (``is_device_array``), at any depth of a sequence,
    copied to a host NumPy array: what a backend computing with NumPy runs on. Other values
    are returned as they are."""
    return [_on_host(a) for a in args]


def _on_host(value: Any) -> Any:
    if type(value) is np.ndarray:  # the common case, first
        return value
    if isinstance(value, list):
        return [_on_host(v) for v in value]
    return np.asarray(value) if is_device_array(value) else value


def describe(x: Any) -> str:
    if isinstance(x, np.ndarray) or is_device_array(x):
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
    if type(inputs) is dict and len(inputs) == len(params) and not graph.input_aliases:
        # The common call, every input given by name as an array of its type: checked inline.
        fast = []
        for p in params:
            value, t = inputs.get(p.name), p.type
            if not (
                type(value) is np.ndarray
                and isinstance(t, TensorType)
                and value.dtype == t.dtype.numpy
                and t.dtype is not DType.string  # its items are checked (coerce_value)
                and t.accepts(value)
            ):
                break
            fast.append(value)
        else:
            return fast
    if isinstance(inputs, Mapping) and graph.input_aliases:
        inputs = by_input_name(graph, inputs, prefix)
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
    return [coerce_value(p.name, p.type, v, prefix) for p, v in zip(params, values, strict=True)]


def by_input_name(graph: Graph, inputs: Mapping[str, Any], prefix: str) -> dict[str, Any]:
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


def string_input(name: str, expected: TensorType, value: Any, prefix: str = "") -> Any:
    """``value`` for a ``str`` input as tensorloop's string tensors hold it, an object array of
    ``str``: NumPy unicode (``<U``) and StringDType arrays converted, bytes (``S`` arrays, or
    bytes items of an object array) decoded as UTF-8 with surrogateescape, as the IR readers
    decode strings (bytes that are not UTF-8 survive as lone surrogates and encode back to
    themselves); anything else an ``InputError``. NumPy's fixed-width arrays drop trailing NUL
    characters, as NumPy always does; an object array keeps them."""
    raw = value if isinstance(value, np.ndarray) else np.asarray(value, dtype=object)
    kind = raw.dtype.kind
    if kind in "UT":
        return raw.astype(object)
    if kind not in "SO":
        raise InputError(
            f"{prefix}input '{name}': expected {expected}, got {raw.dtype} array of shape "
            f"{list(raw.shape)}"
        )
    items = raw.reshape(-1).tolist()
    if kind == "O" and all(type(s) is str for s in items):
        return raw
    for k, item in enumerate(items):
        if isinstance(item, bytes):
            items[k] = item.decode("utf-8", "surrogateescape")
        elif not isinstance(item, str):
            at = [int(i) for i in np.unravel_index(k, raw.shape)]
            raise InputError(
                f"{prefix}input '{name}': expected {expected}, got an object array of shape "
                f"{list(raw.shape)} holding {type(item).__name__} at {at}"
            )
    out = np.empty(len(items), dtype=object)
    out[:] = [str(s) for s in items]
    return out.reshape(raw.shape)


def coerce_value(name: str, expected: Type, value: Any, prefix: str = "") -> Any:
    """``value`` as input ``name`` of type ``expected`` takes it, or an ``InputError``; a
    ``jax.Array`` of that dtype and shape is taken as it is, on its devices."""
    if isinstance(expected, SequenceType):
        if not isinstance(value, list | tuple):
            raise InputError(f"{prefix}input '{name}': expected {expected}, got {describe(value)}")
        return [
            coerce_value(f"{name}[{k}]", expected.element, item, prefix)
            for k, item in enumerate(value)
        ]
    if isinstance(expected, OptionalType):
        return None if value is None else coerce_value(name, expected.element, value, prefix)
    if not isinstance(expected, TensorType):
        return value
    device = is_device_array(value)
    if expected.dtype is DType.string and not device:
        arr = string_input(name, expected, value, prefix)
        if not expected.accepts(arr):
            raise InputError(
                f"{prefix}input '{name}': expected {expected}, got str{list(arr.shape)}"
            )
        return arr
    if device or isinstance(value, np.ndarray | np.generic):
        # A jax.Array stays on its devices (not copied to the host): checked as NumPy's is.
        arr = value if device else np.asarray(value)
        if np.dtype(arr.dtype) != expected.dtype.numpy:
            raise InputError(
                f"{prefix}input '{name}': expected {expected}, got {np.dtype(arr.dtype)} array "
                f"of shape {list(arr.shape)}"
            )
    else:
        try:
            raw = np.asarray(value)
            if raw.dtype.kind == "c":  # no input is complex: NumPy would drop the imaginary part
                raise InputError(
                    f"{prefix}input '{name}': expected {expected}, got complex values "
                    f"({raw.dtype.name}{list(raw.shape)})"
                )
            arr = raw.astype(expected.dtype.numpy)
        except (TypeError, ValueError) as exc:
            raise InputError(
                f"{prefix}input '{name}': cannot convert to {expected}: {exc}"
            ) from None
        fractional = raw.dtype.kind in "fc" or numerics.is_float(raw.dtype)  # bf16, float8s: "V"
        if fractional and not expected.dtype.is_float and not np.array_equal(raw, arr):
            raise InputError(
                f"{prefix}input '{name}': expected {expected}, got non-integral values {value!r}"
            )
    if not expected.accepts(arr):
        raise InputError(
            f"{prefix}input '{name}': expected {expected}, got "
            f"{np.dtype(arr.dtype).name}{list(arr.shape)}"
        )
    return arr
