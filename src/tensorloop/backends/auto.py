"""The ``auto`` backend: tiered like a JIT. Every input signature starts on the compiled CPU
backend (planned in milliseconds); once its runs there have taken ``PROMOTE_AFTER_SECONDS`` in
all, XLA compiles the model for that signature in a background thread, and runs move to the
XLA program when it is ready, for a trial of ``TRIAL_RUNS`` runs: it stays there only if its
median run is faster than the compiled backend's median over the signature's recent runs, else
the signature goes back to the compiled backend for good (``Tier.why`` says by how much). A
model that runs briefly never pays for XLA; a model that runs long pays once, and a model XLA
runs slower (a loop of small steps, say) is not moved. Without JAX installed, everything stays
on the compiled backend. A run with a timeout stays on the compiled backend, which checks the
deadline every loop iteration, unless the XLA plan holds no loop XLA cannot interrupt
(``JaxExecutable.interruptible``).

Runs on XLA are the jax backend's: what its plan hands to the compiled backend is on their
``Outputs.handoffs`` and warned (``FallbackWarning``). A signature XLA cannot take (JAX
missing, a ``TensorloopError`` while planning) stays on the compiled backend, said in its
``Tier.why``; any other exception of the compile is a bug, raised by the signature's next run
(at once without a background thread), never swallowed."""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import TensorloopError
from ..ir.graph import Graph, Node
from ..passes.specialize import signature
from ..reference import Interpreter
from ..reference.runtime import RunState
from ..tensor.types import Type
from .base import register_backend
from .compiled import CompiledExecutable

PROMOTE_AFTER_SECONDS = 0.25
"""Run time on the compiled backend, per signature, after which XLA compiles it: about what
XLA takes to compile a small loop model (40-300 ms measured), so the compile is repaid."""

TRIAL_RUNS = 5
"""Runs on XLA, once it is ready, before a signature is kept there or sent back."""

RECENT = 16
"""Run times kept per signature and tier for the comparison."""

COMPILED, COMPILING, TRIAL, XLA, STAYS = "compiled", "compiling", "trial", "xla", "stays"


@dataclass
class Tier:
    """Where one signature runs now, and how long its runs on the compiled backend took."""

    where: str = COMPILED
    runs: int = 0
    seconds: float = 0.0
    why: str = ""
    compiled_times: list[float] = field(default_factory=list)
    xla_times: list[float] = field(default_factory=list)
    failure: BaseException | None = None
    """An exception the XLA compile raised that is no typed refusal (a bug): the next run of
    the signature raises it, never hiding it."""


class AutoExecutable:
    """Runs on the compiled backend, and on XLA for signatures that have run long enough."""

    def __init__(self, graph: Graph, *, background: bool = True) -> None:
        self.graph = graph
        self.background = background
        self.compiled = CompiledExecutable(graph)
        self._jax: Any = None
        self._tiers: dict[Any, Tier] = {}
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []

    def tier(self, args: Sequence[Any]) -> Tier:
        """Where ``args``' signature runs now (``where``: compiled, compiling, trial, xla or
        stays)."""
        key = signature(args)
        with self._lock:
            return self._tiers.setdefault(key, Tier())

    def wait(self) -> None:
        """Wait for background compiles started so far (for tests and benchmarks)."""
        for t in list(self._threads):
            t.join()

    def run(self, args: Sequence[Any], state: RunState) -> list[Any]:
        if state.trace_names or state.observer is not None:  # every iteration on the host
            return self.compiled.run(args, state)
        tier = self.tier(args)
        if tier.failure is not None:
            failure, tier.failure = tier.failure, None
            raise failure
        # With a deadline, only a plan whose XLA islands can be stopped in time runs on XLA.
        if tier.where in (TRIAL, XLA) and (
            state.deadline is None or self._jax_executable().interruptible(args)
        ):
            if tier.where == XLA:
                return self._jax_executable().run(args, state)  # type: ignore[no-any-return]
            started = time.perf_counter()
            results: list[Any] = self._jax_executable().run(args, state)
            self._judge(tier, time.perf_counter() - started)
            return results
        started = time.perf_counter()
        results = self.compiled.run(args, state)
        elapsed = time.perf_counter() - started
        tier.runs += 1
        tier.seconds += elapsed
        tier.compiled_times = [*tier.compiled_times[-RECENT + 1 :], elapsed]
        if tier.where == COMPILED and tier.seconds >= PROMOTE_AFTER_SECONDS:
            self._promote(tier, list(args))
        return results

    def _judge(self, tier: Tier, elapsed: float) -> None:
        """Count one trial run on XLA; after ``TRIAL_RUNS``, keep XLA only if it is faster."""
        with self._lock:
            tier.xla_times.append(elapsed)
            if len(tier.xla_times) < TRIAL_RUNS or tier.where != TRIAL:
                return
            xla = statistics.median(tier.xla_times[1:])  # the first may include transfers
            compiled = statistics.median(tier.compiled_times or [float("inf")])
            if xla < compiled:
                tier.where = XLA
                return
            tier.where = STAYS
            tier.why = (
                f"XLA measured slower: {xla * 1e3:.3g} ms a run against the compiled "
                f"backend's {compiled * 1e3:.3g} ms"
            )

    def _jax_executable(self) -> Any:
        with self._lock:
            if self._jax is None:
                from .base import get_backend

                self._jax = get_backend("jax").prepare(self.graph)
            return self._jax

    def _promote(self, tier: Tier, args: list[Any]) -> None:
        with self._lock:
            if tier.where != COMPILED:
                return
            tier.where = COMPILING

        def compile_now() -> None:
            try:
                self._jax_executable().compile(args)
            except TensorloopError as exc:  # JAX missing, or nothing XLA can run
                tier.where, tier.why = STAYS, str(exc)
                return
            except Exception as exc:  # a bug of ours: the next run raises it
                tier.where, tier.why = STAYS, f"{type(exc).__name__}: {exc}"
                if not self.background:
                    raise
                tier.failure = exc
                return
            tier.where = TRIAL

        if not self.background:
            compile_now()
            return
        # Not a daemon: an interpreter that exits while XLA compiles would abort in XLA's code;
        # exiting waits for the compile instead.
        thread = threading.Thread(target=compile_now, name="tensorloop-xla-compile")
        self._threads.append(thread)
        thread.start()


class AutoBackend:
    """Tiered: the compiled CPU backend at once, XLA for what runs long (see the module)."""

    name = "auto"

    def __init__(self, *, background: bool = True) -> None:
        self.background = background

    def prepare(self, graph: Graph, input_types: Sequence[Type] | None = None) -> AutoExecutable:
        return AutoExecutable(graph, background=self.background)

    def evaluate(self, node: Node, inputs: Sequence[Any]) -> list[Any]:
        return Interpreter().run_node(node, inputs)


register_backend("auto", AutoBackend)

__all__ = ["PROMOTE_AFTER_SECONDS", "TRIAL_RUNS", "AutoBackend", "AutoExecutable", "Tier"]
