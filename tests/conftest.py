"""Suite-wide laws: every model a test builds survives print -> parse -> print unchanged, and
every run a test makes gives the same outputs, trace, variables (or error) on every backend."""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterator
from typing import Any

import pytest

import tensorloop as tl
from backend_agreement import assert_same_outputs, assert_same_trace, assert_same_value
from tensorloop.backends import compiled
from tensorloop.backends.base import get_backend
from tensorloop.errors import TensorloopError
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


CHECKED_BACKENDS = ("reference", "compiled")
"""Each run on one of these also runs on the others; results must agree (backend_agreement)."""

JAX_SAMPLE = int(os.environ.get("TENSORLOOP_JAX_SAMPLE", "6"))
"""The suite-wide law runs on the jax backend too in one test of every ``JAX_SAMPLE`` (a fixed
sample, by the CRC of the test's id), and in every test of ``tests/backends/test_jax*``:
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
    if "test_jax" in path or zlib.crc32(test_id.encode()) % JAX_SAMPLE == 0:
        return (*CHECKED_BACKENDS, "jax")
    return CHECKED_BACKENDS


@pytest.fixture(autouse=True)
def _every_backend_agrees_with_the_reference(
    monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> Iterator[None]:
    original = tl.Session.run
    backends = checked_backends(request.node.nodeid)

    def checked(self: tl.Session, inputs: Any = (), **options: Any) -> tl.Outputs:
        backend = options.get("backend")
        name = get_backend(self.model.backend if backend is None else backend).name
        if name not in backends:
            return original(self, inputs, **options)
        before = dict(self.state)
        error: TensorloopError | None = None
        try:
            outputs = original(self, inputs, **options)
        except TensorloopError as exc:
            error = exc
        after = self.state
        for other in backends:
            if other == name:
                continue
            self.state = dict(before)
            where = f"{other} vs {name}"
            try:
                theirs = original(self, inputs, **{**options, "backend": other})
            except TensorloopError as exc:
                assert error is not None, f"{where}: {other} raised {exc!r}, {name} did not"
                assert type(exc) is type(error), f"{where}: {exc!r} vs {error!r}"
                continue
            finally:
                variables, self.state = self.state, after
            assert error is None, f"{where}: {name} raised {error!r}, {other} did not"
            assert_same_outputs(outputs, theirs, where)
            assert_same_trace(outputs.trace, theirs.trace, where)
            assert sorted(variables) == sorted(after), f"{where}: variables differ"
            for key in after:
                assert_same_value(after[key], variables[key], f"{where}: variable '{key}'")
        if error is not None:
            raise error
        return outputs

    monkeypatch.setattr(tl.Session, "run", checked)
    monkeypatch.setattr(compiled, "VERIFY_PASSES", True)  # every pass of every plan verified
    yield
