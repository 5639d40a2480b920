"""The backend boundary: what every backend implements, and the registry that finds one by name."""

from __future__ import annotations

import importlib
import threading
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..errors import BackendError, FallbackWarning
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
    """Where one node of a graph runs (``device``: ``xla`` or a backend's name), and why it
    does not run where its backend would rather run it (empty if it does). ``node`` is the
    node's name (its op where it has none)."""

    node: str
    op: str
    device: str
    reason: str = ""


PLAN, RUN = "plan", "run"


@dataclass(frozen=True)
class Handoff:
    """Nodes a backend handed to another backend: ``nodes`` (their names, or ops where they
    have none), the backend asked to run them (``source``), the one that ran them (``target``)
    and why (``reason``). ``stage`` says when it was decided: ``"plan"``, up front for every
    run of an input signature (listed by ``Model.placement``), or ``"run"``, a deoptimisation
    of one run on data the plan did not cover (the run then starts again on ``target``).

    Every handoff a run makes is on its ``Outputs.handoffs`` (or its error's ``handoffs``) and
    warned once per plan as a ``FallbackWarning``. An op the compiled backend computes through
    its reference kernel, called in place, is no handoff: that is the plan."""

    nodes: tuple[str, ...]
    source: str
    target: str
    reason: str
    stage: str = PLAN

    def __str__(self) -> str:
        shown = ", ".join(self.nodes[:4]) + (
            f" and {len(self.nodes) - 4} more" if len(self.nodes) > 4 else ""
        )
        when = "" if self.stage == PLAN else " at run time"
        return f"{self.source} handed {shown} to {self.target}{when}: {self.reason}"


def label(node: Node) -> str:
    """How a ``Placement`` or a ``Handoff`` names ``node``: its name, or its op if unnamed."""
    return node.name or node.op


class Handoffs:
    """A plan's handoffs: ``record`` puts one on the run's state and warns of it the first
    time (per plan and handoff), so a plan that hands on every run says so once."""

    def __init__(self, planned: Iterable[Handoff] = ()) -> None:
        self.planned = tuple(planned)
        """The handoffs decided while planning: every run makes them."""
        self._warned: set[Handoff] = set()
        self._lock = threading.Lock()

    def record(self, state: RunState, handoff: Handoff) -> None:
        """``handoff`` made by this run: kept on ``state`` and warned once per plan."""
        state.handoffs.append(handoff)
        with self._lock:
            if handoff in self._warned:
                return
            self._warned.add(handoff)
        warnings.warn(str(handoff), FallbackWarning, stacklevel=2)

    def start(self, state: RunState) -> None:
        """A run of the plan starts: it makes the planned handoffs."""
        for handoff in self.planned:
            self.record(state, handoff)


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
