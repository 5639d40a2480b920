"""Suite-wide laws: every model a test builds survives print -> parse -> print unchanged, and
every run a test makes gives the same outputs, trace, variables (or error) on every backend,
each backend running the nodes it claims: a handoff to another backend (``FallbackWarning``,
``Outputs.handoffs``) fails the test unless the test declares it (``@pytest.mark.handoff``)."""

from __future__ import annotations

import os
import warnings
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

import pytest

# XLA programs compiled by the suite are not kept on disk (tests/backends/jax/test_jax_cache.py
# checks the cache in processes of its own).
os.environ.setdefault("TENSORLOOP_JAX_CACHE", "off")

import backend_agreement
import tensorloop as tl
from backend_agreement import assert_same_outputs, assert_same_trace, assert_same_value
from tensorloop.backends import compiled
from tensorloop.backends.base import PLAN, Handoff, get_backend
from tensorloop.errors import FallbackWarning, TensorloopError
from tensorloop.ir.parser import parse_graph
from tensorloop.ir.printer import print_graph

# Printing a million weights as text takes seconds; such models are covered by smaller twins.
MAX_CONSTANT_ELEMENTS = 100_000


@pytest.fixture(autouse=True)
def _text_round_trip_of_every_model(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    original = tl.Model.__init__

    def checked(self: tl.Model, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        size = sum(n.attrs["value"].size for _, n in self.graph.walk() if n.op == "Constant")
        if size <= MAX_CONSTANT_ELEMENTS:
            text = print_graph(self.graph)
            assert print_graph(parse_graph(text)) == text

    monkeypatch.setattr(tl.Model, "__init__", checked)
    yield


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "handoff(reason=''): the test means a backend to hand nodes to another (a deoptimisation, "
        "a placement): FallbackWarning is no error in it, and the backend law allows handoffs",
    )
    config.addinivalue_line(
        "markers",
        "xla_sums(floor_ulps, why): the test's results are long sums of order-one terms (a "
        "gradient through a loop), which XLA adds in an order of its own: the jax backend's "
        "absolute floor (backend_agreement.JAX) is floor_ulps ULPs at 1.0, and why says why",
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """FallbackWarning is an error in every test, unless it declares a handoff: a filter the
    test's other marks (``ignore::RuntimeWarning``, say) cannot override, as it is applied
    after them."""
    for item in items:
        action = "ignore" if item.get_closest_marker("handoff") is not None else "error"
        item.add_marker(pytest.mark.filterwarnings(f"{action}::tensorloop.errors.FallbackWarning"))


def unclaimed(backend: str, handoffs: Sequence[Handoff]) -> list[Handoff]:
    """The handoffs of a run on ``backend`` beyond what the backend claims to run elsewhere:
    the jax backend places nodes on the compiled backend while planning (listed by
    ``Model.placement``); no other backend hands anything on."""
    if backend == "jax":
        return [h for h in handoffs if not (h.source == "jax" and h.stage == PLAN)]
    return list(handoffs)


CHECKED_BACKENDS = ("reference", "compiled")
"""Each run on one of these also runs on the others; results must agree (backend_agreement)."""

JAX_SAMPLE = int(os.environ.get("TENSORLOOP_JAX_SAMPLE", "6"))
"""The suite-wide law runs on the jax backend too in one test of every ``JAX_SAMPLE`` (a fixed
sample, by the CRC of the test's id), and in every test of ``tests/backends/jax/``:
compiling every model of the suite with XLA would take CI past its time. ``TENSORLOOP_JAX_SAMPLE=1``
checks every test (the full run); ``0`` none."""


def _jax_available() -> bool:
    try:
        get_backend("jax")
    except TensorloopError:
        return False
    return True


def checked_backends(test_id: str) -> tuple[str, ...]:
    """The backends a test's runs are compared across."""
    if JAX_SAMPLE <= 0 or not _jax_available():
        return CHECKED_BACKENDS
    path = test_id.split("::")[0]
    if "test_compiled" in path:  # they count the compiled backend's own plans and buffers
        return CHECKED_BACKENDS
    if "test_real_corpus" in path:  # it runs jax itself, with its known drift on real models
        return CHECKED_BACKENDS
    if "test_jax" in path or zlib.crc32(test_id.encode()) % JAX_SAMPLE == 0:
        return (*CHECKED_BACKENDS, "jax")
    return CHECKED_BACKENDS


class _Recording(tl.LoopObserver):
    """Records the loop events of one run, passing them on to ``then`` (the test's observer)."""

    def __init__(self, then: Any = None) -> None:
        self.then = then
        self.events: list[tuple[str, tuple[str, ...], int]] = []

    def on_iteration(self, path: tuple[str, ...], iteration: int) -> None:
        self.events.append(("iteration", path, iteration))
        if self.then is not None:
            self.then.on_iteration(path, iteration)

    def on_loop_end(self, path: tuple[str, ...], trips: int) -> None:
        self.events.append(("end", path, trips))
        if self.then is not None:
            self.then.on_loop_end(path, trips)


@pytest.fixture(autouse=True)
def _every_backend_agrees_with_the_reference(
    monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> Iterator[None]:
    original = tl.Session.run
    backends = checked_backends(request.node.nodeid)
    declared = request.node.get_closest_marker("handoff") is not None

    def ran_itself(backend: str, handoffs: Sequence[Handoff], where: str) -> None:
        """The run on ``backend`` ran the nodes its backend claims (else the law would compare
        the reference with itself), unless the test declares a handoff."""
        extra = [] if declared else unclaimed(backend, handoffs)
        assert not extra, f"{where}: {backend} handed on {[str(h) for h in extra]}"

    def checked(self: tl.Session, inputs: Any = (), **options: Any) -> tl.Outputs:
        backend = options.get("backend")
        name = get_backend(self.model.backend if backend is None else backend).name
        if name not in backends:
            return original(self, inputs, **options)
        before = dict(self.state)
        error: TensorloopError | None = None
        # Every backend tells an observer the same iterations (a non-observer is refused).
        observed = callable(getattr(options.get("observer"), "on_iteration", None))
        if observed:
            options["observer"] = seen = _Recording(options["observer"])
        try:
            outputs = original(self, inputs, **options)
        except TensorloopError as exc:
            error = exc
        if error is None:
            ran_itself(name, outputs.handoffs, name)
        elif name != "jax":  # the jax backend may hand an error's run on (a fault code)
            ran_itself(name, error.handoffs, name)
        after = self.state
        for other in backends:
            if other == name:
                continue
            self.state = dict(before)
            where = f"{other} vs {name}"
            if observed:
                options["observer"] = theirs_seen = _Recording()
            try:
                with warnings.catch_warnings():
                    if other == "jax":  # its placements are claimed, checked below
                        warnings.simplefilter("ignore", FallbackWarning)
                    theirs = original(self, inputs, **{**options, "backend": other})
            except TensorloopError as exc:
                assert error is not None, f"{where}: {other} raised {exc!r}, {name} did not"
                assert type(exc) is type(error), f"{where}: {exc!r} vs {error!r}"
                if other != "jax":
                    ran_itself(other, exc.handoffs, where)
                continue
            finally:
                variables, self.state = self.state, after
            assert error is None, f"{where}: {name} raised {error!r}, {other} did not"
            ran_itself(other, theirs.handoffs, where)
            assert_same_outputs(outputs, theirs, where)
            assert_same_trace(outputs.trace, theirs.trace, where)
            if observed:
                assert theirs_seen.events == seen.events, f"{where}: loop observers differ"
            assert sorted(variables) == sorted(after), f"{where}: variables differ"
            for key in after:
                assert_same_value(after[key], variables[key], f"{where}: variable '{key}'")
        if error is not None:
            raise error
        return outputs

    sums = request.node.get_closest_marker("xla_sums")
    if sums is not None:  # XLA adds long sums in an order of its own: a floor for their terms
        for dtype, law in list(backend_agreement.JAX.items()):
            floor = max(law.floor_ulps, float(sums.kwargs["floor_ulps"]))
            monkeypatch.setitem(backend_agreement.JAX, dtype, replace(law, floor_ulps=floor))
    monkeypatch.setattr(tl.Session, "run", checked)
    monkeypatch.setattr(compiled, "VERIFY_PASSES", True)  # every pass of every plan verified
    yield
