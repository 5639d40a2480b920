"""The reference backend's kernel registry: ``@kernel("Add")`` maps an op to a NumPy function."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import GraphError, UnsupportedOpError

if TYPE_CHECKING:
    from ..ir.graph import Graph, Node
    from .runtime import RunState

BodyRunner = Callable[["Graph", Sequence[Any]], list[Any]]
"""How a backend runs a loop body or a branch: ``run(graph, args) -> results``. Kernels of
control-flow ops call the runner their backend gives them, never an interpreter directly."""

Kernel = Callable[..., Any]
"""``fn(ctx, *inputs) -> value``, or a tuple with one value per output (None for no outputs)."""

_KERNELS: dict[str, Kernel] = {}


def kernel(*ops: str) -> Callable[[Kernel], Kernel]:
    """Register ``fn`` as the reference kernel of each op in ``ops``."""

    def register(fn: Kernel) -> Kernel:
        for name in ops:
            if name in _KERNELS:
                raise GraphError(f"a reference kernel for '{name}' is registered twice")
            _KERNELS[name] = fn
        return fn

    return register


def get_kernel(op: str) -> Kernel:
    try:
        return _KERNELS[op]
    except KeyError:
        raise UnsupportedOpError(f"the reference backend has no kernel for op '{op}'") from None


def kernel_ops() -> list[str]:
    return sorted(_KERNELS)


class KernelContext:
    """What a kernel sees: the node, its resolved attributes, the run's state, and how to run a
    body or branch (``run_graph``, supplied by the backend running the node)."""

    __slots__ = ("attrs", "node", "run_graph", "state")

    def __init__(
        self, node: Node, attrs: dict[str, Any], run_graph: BodyRunner, state: RunState
    ) -> None:
        self.node = node
        self.attrs = attrs
        self.run_graph = run_graph
        self.state = state

    def attr(self, key: str) -> Any:
        return self.attrs[key]

    @property
    def where(self) -> str:
        return self.node.describe()
