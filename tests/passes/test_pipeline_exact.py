"""Issue #21: the compiled backend's loop passes together (``PIPELINE``) keep every result bit for
bit, in every element type they accept, or do not fire."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from loop_pass_laws import (
    Outcome,
    assert_pass_keeps_results,
    assert_same_outcome,
    typed_loop_cases,
)

import tensorloop as tl
from tensorloop.backends.compiled import PIPELINE
from tensorloop.errors import TensorloopError
from tensorloop.ir.graph import Graph
from tensorloop.passes import Pass, PassResult, run_passes

SETTINGS = settings(max_examples=30, deadline=None)


class _Pipeline(Pass):
    name = "compiled_pipeline"

    def run(self, graph: Graph) -> PassResult:
        return run_passes(graph, list(PIPELINE))


def _run(model: tl.Model, inputs: dict[str, Any], backend: str) -> Outcome:
    try:
        res = model.run(inputs, backend=backend)
    except TensorloopError as exc:
        return (type(exc).__name__, str(exc))
    return [res[name] for name in model.output_names]


@SETTINGS
@given(typed_loop_cases())
def test_the_pipeline_keeps_results_of_typed_loops(
    case: tuple[Graph, dict[str, Any], int | None],
) -> None:
    # The passes in order on the graph, run on the reference interpreter before and after.
    assert_pass_keeps_results(_Pipeline(), *case)


@SETTINGS
@given(typed_loop_cases())
def test_the_compiled_backend_gives_the_references_bits_on_typed_loops(
    case: tuple[Graph, dict[str, Any], int | None],
) -> None:
    # The default backend (specialised, the passes, generated code) against the reference.
    graph, inputs, limit = case
    model = tl.Model(graph, **({} if limit is None else {"max_iterations": limit}))
    assert_same_outcome(_run(model, inputs, "compiled"), _run(model, inputs, "reference"))
