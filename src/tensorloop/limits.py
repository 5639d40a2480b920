"""``Limits``: the resources a model and each of its runs may take, checked before allocating."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from .errors import GraphError, ResourceLimitError
from .ir.graph import Graph, Node
from .tensor.dtypes import DType
from .tensor.types import OptionalType, SequenceType, TensorType, Type

GiB = 1 << 30

DEFAULT_MAX_ITERATIONS = 1_000_000
"""Iterations any one loop may run in a run (``Limits.max_iterations``)."""
DEFAULT_MAX_TOTAL_ITERATIONS = 10_000_000
"""Body runs of all loops at every depth one run may make (``Limits.max_total_iterations``)."""
DEFAULT_MAX_NODES = 1_000_000
"""Nodes a model may hold, bodies and inlined functions included (``Limits.max_nodes``)."""


@dataclass(frozen=True)
class Limits:
    """What a model and each run of it may take; each is checked before the memory or time is
    spent, and passing one raises ``ResourceLimitError`` (``LoopLimitError`` for iterations,
    ``RunTimeoutError`` for the deadline), naming the node and the request against the limit.

    ``Model(..., limits=Limits(timeout=5.0))`` sets them for a model (``tl.load`` passes
    ``limits=`` on); ``model.run(..., max_iterations=, timeout=)`` overrides those two per run.
    """

    max_tensor_bytes: int = 4 * GiB
    """The largest tensor a declared, inferred or run-time-computed shape may have."""
    max_stacked_bytes: int = 8 * GiB
    """The total bytes one run's loops may stack into their per-iteration outputs."""
    max_rank: int = 64
    """The most dims a declared or computed shape may have."""
    max_nesting_depth: int = 64
    """How deep loop bodies and branches may nest inside each other."""
    max_iterations: int = DEFAULT_MAX_ITERATIONS
    """Iterations any one loop may run before the run stops with ``LoopLimitError``."""
    max_total_iterations: int = DEFAULT_MAX_TOTAL_ITERATIONS
    """Body runs of every loop at every depth one run may make (nested trips multiply), before
    the run stops with ``LoopLimitError`` naming the loop path."""
    max_run_bytes: int = 16 * GiB
    """Bytes of tensors one run may hold live at once: op outputs, carried values, sequences
    and stacked outputs, counted as they are made and freed, checked before allocating."""
    max_nodes: int = DEFAULT_MAX_NODES
    """Nodes a model may hold, bodies included, counted before ONNX functions are inlined."""
    timeout: float | None = None
    """Wall-clock seconds a run may take, or None for no deadline."""

    def __post_init__(self) -> None:
        for name in (
            "max_tensor_bytes",
            "max_stacked_bytes",
            "max_iterations",
            "max_total_iterations",
            "max_run_bytes",
            "max_nodes",
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise GraphError(f"Limits.{name} must be an int >= 0, got {value!r}")
        for name in ("max_rank", "max_nesting_depth"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise GraphError(f"Limits.{name} must be an int >= 1, got {value!r}")
        t = self.timeout
        if t is not None and (isinstance(t, bool) or not isinstance(t, int | float) or not t > 0):
            raise GraphError(f"Limits.timeout must be seconds > 0 or None, got {t!r}")


DEFAULT_LIMITS = Limits()


def nbytes(shape: Iterable[int], dtype: DType | None) -> int:
    """Bytes of a tensor of ``shape`` (ints >= 0) and ``dtype`` (8 a string element, as a
    pointer; 1 an unknown element type); Python ints, so no product overflows."""
    itemsize = 1 if dtype is None else (8 if dtype.value == "string" else dtype.itemsize)
    return math.prod(max(int(d), 0) for d in shape) * itemsize


def check_shape(
    shape: Iterable[object] | None, dtype: DType | None, where: str, limits: Limits = DEFAULT_LIMITS
) -> None:
    """Refuse a tensor of ``shape`` (int dims; others, symbolic or unknown, are left out of the
    product) and ``dtype`` that has more than ``max_rank`` dims or, with every dim known, more
    than ``max_tensor_bytes`` bytes. ``where`` names the file, node and port for the message."""
    if shape is None:
        return
    dims = list(shape)
    if len(dims) > limits.max_rank:
        raise ResourceLimitError(
            f"{where}: rank {len(dims)} is more than the limit of {limits.max_rank} dims "
            "(Limits.max_rank)"
        )
    ints = [d for d in dims if isinstance(d, int) and not isinstance(d, bool)]
    if len(ints) != len(dims):
        return
    size = nbytes(ints, dtype)
    if size > limits.max_tensor_bytes:
        raise tensor_limit_error(where, ints, dtype, size, limits)


def tensor_limit_error(
    where: str, shape: Iterable[int], dtype: DType | None, size: int, limits: Limits
) -> ResourceLimitError:
    """The error of a tensor ``where`` that would take ``size`` bytes, more than allowed."""
    kind = "" if dtype is None else dtype.value
    return ResourceLimitError(
        f"{where}: a tensor {kind}{list(shape)} would take {_bytes(size)}, more than the limit "
        f"of {_bytes(limits.max_tensor_bytes)} (Limits.max_tensor_bytes)"
    )


def stacked_limit_error(where: str, total: int, limits: Limits) -> ResourceLimitError:
    """The error of a run whose stacked outputs would grow to ``total`` bytes at ``where``."""
    return ResourceLimitError(
        f"{where}: the run's stacked loop outputs would take {_bytes(total)}, more than the "
        f"limit of {_bytes(limits.max_stacked_bytes)} (Limits.max_stacked_bytes)"
    )


def format_bytes(n: int) -> str:
    """``n`` bytes for a message: in the largest unit that fits, with the exact count."""
    return _bytes(n)


def _bytes(n: int) -> str:
    for unit, scale in (("TiB", 1 << 40), ("GiB", GiB), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.4g} {unit} ({n} bytes)"
    return f"{n} bytes"


def check_type(t: Type, where: str, limits: Limits = DEFAULT_LIMITS) -> None:
    """``check_shape`` on a tensor type, or on the element type of a sequence or optional."""
    while isinstance(t, SequenceType | OptionalType):
        t = t.element
    if isinstance(t, TensorType):
        check_shape(t.shape, t.dtype, where, limits)


def check_graph(graph: Graph, limits: Limits = DEFAULT_LIMITS, where: str = "") -> None:
    """Refuse ``graph`` if it holds more than ``max_nodes`` nodes (bodies included), its bodies
    nest deeper than ``max_nesting_depth``, or a parameter, value or constant of it (bodies
    included) is declared or inferred with more than ``max_rank`` dims or more than
    ``max_tensor_bytes`` bytes. The walks are iterative, so a hostile nesting depth is refused
    before anything recurses into it."""
    prefix = f"{where}: " if where else ""
    count = node_count(graph)
    if count > limits.max_nodes:
        raise ResourceLimitError(
            f"{prefix}graph '{graph.name}' holds {count} nodes, bodies included, more than the "
            f"limit of {limits.max_nodes} (Limits.max_nodes)"
        )
    stack: list[tuple[Graph, int, str]] = [(graph, 0, f"graph '{graph.name}'")]
    while stack:
        g, depth, path = stack.pop()
        if depth > limits.max_nesting_depth:
            raise ResourceLimitError(
                f"{prefix}{path}: bodies nest {depth} deep, more than the limit of "
                f"{limits.max_nesting_depth} (Limits.max_nesting_depth)"
            )
        for p in g.inputs:
            check_type(p.type, f"{prefix}{path}: parameter %{p.name}", limits)
        for node in g.nodes:
            _check_node(node, f"{prefix}{path}", limits)
            for key, sub in node.subgraphs.items():
                stack.append((sub, depth + 1, f"{path} > {node.describe()} {key}"))


def _check_node(node: Node, path: str, limits: Limits) -> None:
    for k, v in enumerate(node.outputs):
        check_type(v.type, f"{path}: {node.describe()} output #{k} %{v.name}", limits)
    for key, value in node.attrs.items():
        if isinstance(value, np.ndarray):
            where = f"{path}: {node.describe()} attribute '{key}'"
            check_shape(value.shape[: limits.max_rank + 1], None, where, limits)
            if value.nbytes > limits.max_tensor_bytes:
                raise tensor_limit_error(where, value.shape, None, value.nbytes, limits)


def node_count(graph: Graph) -> int:
    """How many nodes ``graph`` holds, the nodes of its bodies at any depth included, counted
    without recursion."""
    count, stack = 0, [graph]
    while stack:
        g = stack.pop()
        count += len(g.nodes)
        stack += [sub for n in g.nodes for sub in n.subgraphs.values()]
    return count


def nesting_depth(graph: Graph) -> int:
    """How deep bodies nest in ``graph`` (0: none), found without recursion."""
    deepest, stack = 0, [(graph, 0)]
    while stack:
        g, depth = stack.pop()
        deepest = max(deepest, depth)
        stack += [(sub, depth + 1) for n in g.nodes for sub in n.subgraphs.values()]
    return deepest


__all__ = [
    "DEFAULT_LIMITS",
    "DEFAULT_MAX_ITERATIONS",
    "DEFAULT_MAX_NODES",
    "DEFAULT_MAX_TOTAL_ITERATIONS",
    "Limits",
    "check_graph",
    "check_shape",
    "check_type",
    "format_bytes",
    "nbytes",
    "nesting_depth",
    "node_count",
    "stacked_limit_error",
    "tensor_limit_error",
]
