"""The backend boundary: what every backend implements, and the registry that finds one by name."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..errors import BackendError
from ..ir.graph import Graph, Node
from ..reference.runtime import RunState
from ..tensor.types import Type


class Executable(Protocol):
    """A graph prepared by a backend: runs many times, from many threads at once. Anything it
    preallocates belongs to one run; ``state`` is the run's own."""

    def run(self, args: Sequence[Any], state: RunState) -> list[Any]:
        """The graph's results for ``args`` (already coerced to the parameters' types)."""
        ...


class Backend(Protocol):
    """Where graphs run. ``prepare`` does the per-graph work once (for the given parameter
    types, if the backend specialises on them); ``evaluate`` runs one node on known inputs, as
    constant folding does."""

    name: str

    def prepare(self, graph: Graph, input_types: Sequence[Type] | None = None) -> Executable:
        """Plan ``graph`` for running; ``input_types`` default to the parameters' types."""
        ...

    def evaluate(self, node: Node, inputs: Sequence[Any]) -> list[Any]:
        """The outputs of ``node`` on run-time ``inputs`` (None for omitted optionals)."""
        ...


@dataclass(frozen=True)
class Placement:
    """Where one top-level node of a graph runs (``device``: ``xla`` or a backend's name), and
    why it does not run where its backend would rather run it (empty if it does)."""

    node: str
    op: str
    device: str
    reason: str = ""


DEFAULT_BACKEND = "compiled"
"""What ``Model``, ``load`` and the CLI run on unless told otherwise."""

_FACTORIES: dict[str, Callable[[], Backend]] = {}
_INSTANCES: dict[str, Backend] = {}
_BUILTIN = {
    "reference": "tensorloop.backends.reference",
    "compiled": "tensorloop.backends.compiled",
    "jax": "tensorloop.backends.jax",
    "auto": "tensorloop.backends.auto",
}
"""Built-in backends by name, and the module whose import registers each one."""


def register_backend(name: str, factory: Callable[[], Backend]) -> None:
    """Make ``factory()`` the backend called ``name``."""
    if name in _FACTORIES:
        raise BackendError(f"a backend named '{name}' is registered twice")
    _FACTORIES[name] = factory


def backend_names() -> list[str]:
    """The names ``get_backend`` accepts."""
    return sorted(set(_BUILTIN) | set(_FACTORIES))


def get_backend(name: str | Backend) -> Backend:
    """The backend called ``name`` (one instance per name), or ``name`` itself if it is one."""
    if not isinstance(name, str):
        return name
    backend = _INSTANCES.get(name)
    if backend is not None:
        return backend
    if name not in _FACTORIES and name in _BUILTIN:
        importlib.import_module(_BUILTIN[name])
    factory = _FACTORIES.get(name)
    if factory is None:
        raise BackendError(f"unknown backend '{name}'; tensorloop has {', '.join(backend_names())}")
    return _INSTANCES.setdefault(name, factory())
