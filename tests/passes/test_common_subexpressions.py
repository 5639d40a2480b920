"""eliminate_common_subexpressions: golden before/after IR text, and results kept on random
loops, alone and with the other loop passes."""

from __future__ import annotations

import textwrap
from typing import Any

import pytest
from hypothesis import given, settings
from loop_pass_laws import assert_pass_keeps_results, builder_cases

import tensorloop as tl
from loop_models import LoopSpec, build, loop_specs, make_inputs
from tensorloop.ir.graph import Graph
from tensorloop.ir.parser import parse_graph
from tensorloop.ir.printer import print_graph
from tensorloop.passes import (
    Pass,
    PassResult,
    eliminate_common_subexpressions,
    eliminate_dead_loop_values,
    hoist_loop_invariants,
    run_passes,
)

SETTINGS = settings(max_examples=30, deadline=None)

BEFORE = textwrap.dedent(
    """\
    graph @main(%x: f32[3], %y: f32[3], %n: i64[]) {
      %k1 = Constant() {value = dense<f32[]>[2.0]} : f32[]
      %k2 = Constant() {value = dense<f32[]>[2.0]} : f32[]
      %k3 = Constant() {value = dense<f32[1]>[2.0]} : f32[1]
      %k4 = Constant() {value = dense<f32[]>[-0.0]} : f32[]
      %k5 = Constant() {value = dense<f32[]>[0.0]} : f32[]
      %a = Mul(%x, %k1) : f32[3]
      %b = Mul(%x, %k2) : f32[3]
      %c = Add(%a, %y) : f32[3]
      %d = Add(%b, %y) : f32[3]
      %e = Add(%y, %a) : f32[3]
      %f = Mul(%x, %k3) : f32[3]
      %g = Cast(%c) {to = f64} : f64[3]
      %h = Cast(%d) {saturate = 1, to = f64} : f64[3]
      %i = Cast(%d) {to = f16} : f16[3]
      %z = Add(%k4, %k5) : f32[]
      %l = Loop(max_trip_count=%n, carried=[%x]) {body = graph @body(%j: i64[], %v: f32[3]) {
        %t = Constant() {value = dense<bool[]>[true]} : bool[]
        %two = Constant() {value = dense<f32[]>[2.0]} : f32[]
        %p = Mul(%v, %two) : f32[3]
        %q = Mul(%v, %two) : f32[3]
        %r = Add(%p, %q) : f32[3]
        return %t, %r
      }} : f32[3]
      return %c, %e, %f, %h, %i, %z, %l
    }"""
)


def test_cse_golden() -> None:
    g = parse_graph(BEFORE)
    assert eliminate_common_subexpressions(g).changed
    # %k2 -> %k1 makes %b a copy of %a, then %d of %c and %h of %g (a default attribute
    # spelled out is the same attribute). Kept apart: operands in another order (%e), another
    # shape (%k3), -0.0 and 0.0, another Cast target, and the body's %two (its own scope).
    # The result %h keeps its name: the kept Cast takes it (results own their names).
    assert print_graph(g) == textwrap.dedent(
        """\
        graph @main(%x: f32[3], %y: f32[3], %n: i64[]) {
          %k1 = Constant() {value = dense<f32[]>[2.0]} : f32[]
          %k3 = Constant() {value = dense<f32[1]>[2.0]} : f32[1]
          %k4 = Constant() {value = dense<f32[]>[-0.0]} : f32[]
          %k5 = Constant() {value = dense<f32[]>[0.0]} : f32[]
          %a = Mul(%x, %k1) : f32[3]
          %c = Add(%a, %y) : f32[3]
          %e = Add(%y, %a) : f32[3]
          %f = Mul(%x, %k3) : f32[3]
          %h = Cast(%c) {to = f64} : f64[3]
          %i = Cast(%c) {to = f16} : f16[3]
          %z = Add(%k4, %k5) : f32[]
          %l = Loop(max_trip_count=%n, carried=[%x]) {body = graph @body(%j: i64[], %v: f32[3]) {
            %t = Constant() {value = dense<bool[]>[true]} : bool[]
            %two = Constant() {value = dense<f32[]>[2.0]} : f32[]
            %p = Mul(%v, %two) : f32[3]
            %r = Add(%p, %p) : f32[3]
            return %t, %r
          }} : f32[3]
          return %c, %e, %f, %h, %i, %z, %l
        }"""
    )
    assert not eliminate_common_subexpressions(g).changed  # a fixed point


def test_cse_leaves_loops_variables_and_randomness() -> None:
    text = textwrap.dedent(
        """\
        graph @main(%x: f32[2], %n: i64[]) {
          var @v: f32[2] = dense<f32[2]>[0.0, 0.0]
          %r1 = ReadVariable() {type = f32[2], variable = "v"} : f32[2]
          Assign(%x) {variable = "v"}
          %r2 = ReadVariable() {type = f32[2], variable = "v"} : f32[2]
          %d1 = Dropout(%x) {seed = 1} : f32[2]
          %d2 = Dropout(%x) {seed = 1} : f32[2]
          %l1 = Loop(max_trip_count=%n, carried=[%x]) {body = graph @body(%i: i64[], %a: f32[2]) {
            %t = Constant() {value = dense<bool[]>[true]} : bool[]
            return %t, %a
          }} : f32[2]
          %l2 = Loop(max_trip_count=%n, carried=[%x]) {body = graph @body(%i: i64[], %a: f32[2]) {
            %t = Constant() {value = dense<bool[]>[true]} : bool[]
            return %t, %a
          }} : f32[2]
          return %r1, %r2, %d1, %d2, %l1, %l2
        }"""
    )
    g = parse_graph(text)
    assert not eliminate_common_subexpressions(g).changed
    assert print_graph(g) == text


def test_cse_leaves_twin_results() -> None:
    text = textwrap.dedent(
        """\
        graph @main(%x: f32[2]) {
          %a = Neg(%x) : f32[2]
          %b = Neg(%x) : f32[2]
          return %a, %b
        }"""
    )
    g = parse_graph(text)
    assert not eliminate_common_subexpressions(g).changed  # an Identity would gain nothing
    assert print_graph(g) == text


class _LoopPipeline(Pass):
    """The loop passes in a row. (eliminate_dead_code stays out: it drops a loop with no used
    outputs even where that loop would have stopped the run with LoopLimitError.)"""

    name = "loop_pipeline"

    def run(self, graph: Graph) -> PassResult:
        passes: list[Pass] = [
            hoist_loop_invariants,
            eliminate_common_subexpressions,
            eliminate_dead_loop_values,
        ]
        return run_passes(graph, passes)


@pytest.fixture(autouse=True)
def _fresh_builder() -> None:
    tl.reset()


@SETTINGS
@given(loop_specs())
def test_cse_keeps_results_of_random_loops(spec: LoopSpec) -> None:
    graph, inputs = build(spec), make_inputs(spec)
    assert_pass_keeps_results(eliminate_common_subexpressions, graph, inputs, spec.max_iterations)


@SETTINGS
@given(builder_cases())
def test_cse_keeps_results_of_builder_loops(case: tuple[Graph, dict[str, Any]]) -> None:
    assert_pass_keeps_results(eliminate_common_subexpressions, *case)


@SETTINGS
@given(loop_specs())
def test_loop_passes_together_keep_results_of_random_loops(spec: LoopSpec) -> None:
    graph, inputs = build(spec), make_inputs(spec)
    assert_pass_keeps_results(_LoopPipeline(), graph, inputs, spec.max_iterations)


@SETTINGS
@given(builder_cases())
def test_loop_passes_together_keep_results_of_builder_loops(
    case: tuple[Graph, dict[str, Any]],
) -> None:
    assert_pass_keeps_results(_LoopPipeline(), *case)
