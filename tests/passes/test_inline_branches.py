"""Issue #22: a plan guarded on small control inputs (an ``sr`` that picks a branch), with the If
nodes that those values decide inlined (``inline_constant_branches``); results bit for bit the
reference's, for every value, and a bounded number of plans."""

from __future__ import annotations

import textwrap
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorloop as tl
from tensorloop.backends.compiled import CompiledExecutable
from tensorloop.ir.parser import parse_graph
from tensorloop.ir.printer import print_graph
from tensorloop.passes import inline_constant_branches
from tensorloop.passes.specialize import MAX_GUARDED_VARIANTS, control_inputs, specialize

SETTINGS = settings(max_examples=40, deadline=None)


def _vad_like() -> tl.Model:
    """A model that picks a branch from a sample rate, as voice-activity models do: the 16 kHz
    branch reshapes its input into 4 frames, the other into 2; a nested If on a flag inside."""
    x = tl.placeholder("float32", ("n",), name="x")
    sr = tl.placeholder("int64", (), name="sr")
    flag = tl.placeholder("bool", (), name="flag")
    scale = tl.placeholder("float32", (), name="scale")

    def fast(x: Any, flag: Any, scale: Any) -> Any:
        frames = tl.reshape(x, tl.constant(np.array([4, -1], np.int64)))
        inner = tl.cond(flag, lambda f: f * scale, lambda f: f - scale, frames)
        return tl.reduce_sum(inner, axes=[1])

    def slow(x: Any, flag: Any, scale: Any) -> Any:
        frames = tl.reshape(x, tl.constant(np.array([2, -1], np.int64)))
        return tl.reduce_sum(frames * scale, axes=[1])

    out = tl.cond(tl.equal(sr, tl.constant(np.int64(16000))), fast, slow, x, flag, scale)
    return tl.Model({"y": out})


def _executable(model: tl.Model) -> CompiledExecutable:
    exe = model.prepared("compiled")
    assert isinstance(exe, CompiledExecutable)
    return exe


def test_control_inputs_are_the_integer_and_bool_inputs_that_decide_branches_or_shapes() -> None:
    model = _vad_like()
    names = [model.graph.inputs[k].name for k in sorted(control_inputs(model.graph))]
    assert names == ["sr", "flag"]  # not x (data), not scale (a float read by arithmetic)


def test_a_guarded_plan_inlines_the_branches_its_values_decide() -> None:
    model = _vad_like()
    args = [np.arange(8, dtype=np.float32), np.int64(16000), np.bool_(True), np.float32(0.5)]
    args = [np.asarray(a) for a in args]
    exe = _executable(model)
    source = exe.plan(args).source
    assert "support.truth" not in source  # both Ifs decided while planning: no branch left
    graph = specialize(model.graph, args, constants={1: args[1], 2: args[2]})
    assert all(node.op != "If" for _, node in graph.walk())
    # Unguarded (the values not given), both Ifs stay.
    plain = specialize(model.graph, args)
    assert sum(node.op == "If" for _, node in plain.walk()) == 2


@SETTINGS
@given(
    st.sampled_from([16000, 8000, 0, -1, 2**62]),
    st.booleans(),
    st.floats(-4, 4, width=32),
    st.sampled_from([4, 8, 12]),
)
def test_guarded_plans_give_the_references_bits_for_every_value(
    sr: int, flag: bool, scale: float, n: int
) -> None:
    model = _vad_like()
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    feeds = {"x": x, "sr": np.int64(sr), "flag": np.bool_(flag), "scale": np.float32(scale)}
    want = model.run(feeds, backend="reference")["y"]
    for _ in range(2):  # planned, then the plan reused
        got = model.run(feeds, backend="compiled")["y"]
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


def test_plans_per_signature_stop_at_the_guarded_variants_cap() -> None:
    model = _vad_like()
    exe = _executable(model)
    x = np.arange(8, dtype=np.float32)
    srs = range(MAX_GUARDED_VARIANTS + 5)
    for sr in srs:
        feeds = {"x": x, "sr": np.int64(sr), "flag": np.bool_(False), "scale": np.float32(2)}
        want = model.run(feeds, backend="reference")["y"]
        assert model.run(feeds, backend="compiled")["y"].tobytes() == want.tobytes()
    # The capped values share one unguarded plan: a bounded number of plans.
    assert len(exe._plans) == MAX_GUARDED_VARIANTS + 1


def test_inlining_a_constant_branch_keeps_results_and_names() -> None:
    x = tl.placeholder("float32", (3,), name="x")
    out = tl.cond(tl.constant(np.bool_(False)), lambda v: v * 2.0, lambda v: v + 1.0, x)
    model = tl.Model({"y": out})
    graph = model.graph.clone()
    assert inline_constant_branches.run(graph).changed
    assert all(node.op != "If" for node in graph.nodes)
    assert [v.name for v in graph.outputs] == ["y"]
    feeds = {"x": np.array([1, 2, 3], np.float32)}
    got = tl.Model(graph).run(feeds, backend="reference")["y"]
    np.testing.assert_array_equal(got, model.run(feeds, backend="reference")["y"])
    np.testing.assert_array_equal(got, [2, 3, 4])


BRANCHED = textwrap.dedent(
    """\
    graph @model(%x: f32[3]) {
      %const = Constant() {value = dense<bool[]>[true]} : bool[]
      %y = If(cond=%const, captured=[%x]) {else_branch = graph @else_branch(%a: f32[3]) {
        %one = Constant() {value = dense<f32[]>[1.0]} : f32[]
        %5 = Add(%a, %one) : f32[3]
        return %5
      }, then_branch = graph @then_branch(%b: f32[3]) {
        %two = Constant() {value = dense<f32[]>[2.0]} : f32[]
        %1 = Mul(%b, %two) : f32[3]
        %2 = Tanh(%1) : f32[3]
        return %2
      }} : f32[3]
      return %y
    }"""
)


def test_inline_constant_branches_golden() -> None:
    g = parse_graph(BRANCHED)
    assert inline_constant_branches.run(g).changed
    # The branch taken, its parameter read as the captured value; the result keeps its name.
    assert print_graph(g) == textwrap.dedent(
        """\
        graph @model(%x: f32[3]) {
          %const = Constant() {value = dense<bool[]>[true]} : bool[]
          %two = Constant() {value = dense<f32[]>[2.0]} : f32[]
          %1 = Mul(%x, %two) : f32[3]
          %y = Tanh(%1) : f32[3]
          return %y
        }"""
    )
    assert not inline_constant_branches.run(g).changed
