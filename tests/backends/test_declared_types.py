"""A declared static type is a claim the inputs may break (a hand-typed text IR file saying
``f32[7,3]`` where the input's ``N`` is 3, a stacked output declared longer than the trips):
every backend reports the broken claim as the reference does, with the same ExecutionError,
and runs the inputs that keep it to the reference's answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tensorloop as tl
from tensorloop.backends.compiled import CompiledExecutable
from tensorloop.errors import ExecutionError

ELEMENTWISE = """
graph @model(%xs: f32[N,3]) {
  %y = Add(%xs, %xs) : f32[7,3]
  %z = Neg(%y) : f32[7,3]
  return %z
}
"""

SCAN = """
graph @model(%xs: f32[N,3]) {
  %c0 = Constant() {value = dense<f32[3]>[0.0, 0.0, 0.0]} : f32[3]
  %final, %ys = Loop(carried=[%c0], sliced=[%xs]) {
    body = graph @b(%i: i64[], %c: f32[3], %x: f32[3]) {
    %d = Add(%c, %x) : f32[3]
    %t = Constant() {value = dense<bool[]>[true]} : bool[]
    return %t, %d, %d
  }, sliced = [Sliced(axis=0, reverse=false)], stacked = [Stacked(axis=0, reverse=false)]
  } : f32[3], f32[7,3] loc("scan")
  return %final, %ys
}
"""

COUNTED = """
graph @model(%n: i64[]) {
  %c0 = Constant() {value = dense<f32[]>[0.0]} : f32[]
  %final, %ys = Loop(max_trip_count=%n, carried=[%c0]) {body = graph @b(%i: i64[], %c: f32[]) {
    %one = Constant() {value = dense<f32[]>[1.0]} : f32[]
    %d = Add(%c, %one) : f32[]
    %t = Constant() {value = dense<bool[]>[true]} : bool[]
    return %t, %d, %d
  }, sliced = [], stacked = [Stacked(axis=0, reverse=false)]} : f32[], f32[7]
  return %final, %ys
}
"""

CASES: dict[str, tuple[str, dict[str, Any], dict[str, Any], str]] = {
    # name: (text, inputs that break the claim, inputs that keep it, the reference's error)
    "elementwise": (
        ELEMENTWISE,
        {"xs": np.ones((3, 3), np.float32)},
        {"xs": np.ones((7, 3), np.float32)},
        "Add output #0 %y: kernel produced float32[3, 3], its type says f32[7,3]",
    ),
    "scan": (
        SCAN,
        {"xs": np.ones((3, 3), np.float32)},
        {"xs": np.ones((7, 3), np.float32)},
        "Loop 'scan' output #1 %ys: kernel produced float32[3, 3], its type says f32[7,3]",
    ),
    "counted": (
        COUNTED,
        {"n": np.int64(0)},
        {"n": np.int64(7)},
        "Loop output #1 %ys: kernel produced float32[0], its type says f32[7]",
    ),
}


def _model(tmp_path: Path, text: str) -> tl.Model:
    path = tmp_path / "m.tl"
    path.write_text(text)
    return tl.load(path)


@pytest.mark.handoff  # jax hands a graph its inputs contradict to the compiled backend
@pytest.mark.parametrize("backend", ["reference", "compiled", "jax"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_broken_declared_type_is_the_references_error(
    tmp_path: Path, case: str, backend: str
) -> None:
    if backend == "jax":
        pytest.importorskip("jax")
    text, broken, kept, message = CASES[case]
    model = _model(tmp_path, text)
    with pytest.raises(ExecutionError) as info:
        model.run(broken, backend=backend)
    assert str(info.value) == message
    want = model.run(kept, backend="reference")
    got = model.run(kept, backend=backend)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name])
        assert got[name].shape == want[name].shape


def test_a_counted_loop_that_keeps_its_declared_rows_plans_no_checks(tmp_path: Path) -> None:
    """Inputs that keep every claim plan as usual: the compiled plan checks only the stacked
    rows, the one claim the trips decide."""
    model = _model(tmp_path, COUNTED)
    exe = model.prepared("compiled")
    assert isinstance(exe, CompiledExecutable)
    source = exe.plan([np.int64(7)]).source
    assert source.count("conform") == 1, source
    elementwise = _model(tmp_path, ELEMENTWISE).prepared("compiled")
    assert isinstance(elementwise, CompiledExecutable)
    assert "conform" not in elementwise.plan([np.ones((7, 3), np.float32)]).source
    assert "conform" in elementwise.plan([np.ones((3, 3), np.float32)]).source
