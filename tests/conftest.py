"""Suite-wide laws: every model a test builds survives print -> parse -> print unchanged."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import tensorloop as tl
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
