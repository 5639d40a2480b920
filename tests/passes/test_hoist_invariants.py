"""hoist_loop_invariants: golden before/after IR text, and results kept on random loops."""

from __future__ import annotations

import textwrap
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from loop_pass_laws import (
    assert_bit_identical,
    assert_pass_keeps_results,
    builder_cases,
    typed_loop_cases,
)

import tensorloop as tl
from loop_models import LoopSpec, build, loop_specs, make_inputs
from tensorloop.ir.graph import Graph
from tensorloop.ir.parser import parse_graph
from tensorloop.ir.printer import print_graph
from tensorloop.passes import hoist_loop_invariants
from tensorloop.tensor.dtypes import string_array

SETTINGS = settings(max_examples=60, deadline=None)

BEFORE = textwrap.dedent(
    """\
    graph @main(%xs: f32[3,4], %h0: f32[4], %w: f32[4,4], %n: i64[]) {
      %h, %ys = Loop(carried=[%h0], sliced=[%xs], invariants=[%w]) {body = graph @body(%i: i64[], %h: f32[4], %x: f32[4], %wb: f32[4,4]) {
        %t = Constant() {value = dense<bool[]>[true]} : bool[]
        %two = Constant() {value = dense<f32[]>[2.0]} : f32[]
        %w2 = Mul(%wb, %two) : f32[4,4]
        %xw = MatMul(%x, %w2) : f32[4]
        %hn = Add(%h, %xw) : f32[4]
        %hx = Mul(%h, %two) : f32[4]
        return %t, %hn, %hx
      }, sliced = [Sliced(axis=0, reverse=false)], stacked = [Stacked(axis=0, reverse=false)]} : f32[4], f32[3,4]
      %g = Loop(max_trip_count=%n, carried=[%h], invariants=[%w]) {body = graph @body2(%j: i64[], %g: f32[4], %wc: f32[4,4]) {
        %u = Constant() {value = dense<bool[]>[true]} : bool[]
        %q = Div(%wc, %wc) : f32[4,4]
        %s = Tanh(%wc) : f32[4,4]
        %gq = MatMul(%g, %q) : f32[4]
        %gn = MatMul(%gq, %s) : f32[4]
        return %u, %gn
      }} : f32[4]
      return %g, %ys
    }"""  # noqa: E501
)


def test_hoist_golden() -> None:
    g = parse_graph(BEFORE)
    assert hoist_loop_invariants(g).changed
    # %w2 leaves the first loop with a copy of the constant it reads; %two stays for %hx.
    # The total Tanh leaves the second loop; the Div (not in the allow-list of ops that cannot
    # fail) stays.
    assert print_graph(g) == textwrap.dedent(
        """\
        graph @main(%xs: f32[3,4], %h0: f32[4], %w: f32[4,4], %n: i64[]) {
          %two = Constant() {value = dense<f32[]>[2.0]} : f32[]
          %w2 = Mul(%w, %two) : f32[4,4]
          %h, %ys = Loop(carried=[%h0], sliced=[%xs], invariants=[%w, %w2]) {body = graph @body(%i: i64[], %h: f32[4], %x: f32[4], %wb: f32[4,4], %w2: f32[4,4]) {
            %t = Constant() {value = dense<bool[]>[true]} : bool[]
            %two = Constant() {value = dense<f32[]>[2.0]} : f32[]
            %xw = MatMul(%x, %w2) : f32[4]
            %hn = Add(%h, %xw) : f32[4]
            %hx = Mul(%h, %two) : f32[4]
            return %t, %hn, %hx
          }, sliced = [Sliced(axis=0, reverse=false)], stacked = [Stacked(axis=0, reverse=false)]} : f32[4], f32[3,4]
          %s = Tanh(%w) : f32[4,4]
          %g = Loop(max_trip_count=%n, carried=[%h], invariants=[%w, %s]) {body = graph @body2(%j: i64[], %g: f32[4], %wc: f32[4,4], %s: f32[4,4]) {
            %u = Constant() {value = dense<bool[]>[true]} : bool[]
            %q = Div(%wc, %wc) : f32[4,4]
            %gq = MatMul(%g, %q) : f32[4]
            %gn = MatMul(%gq, %s) : f32[4]
            return %u, %gn
          }, sliced = [], stacked = []} : f32[4]
          return %g, %ys
        }"""  # noqa: E501
    )
    assert not hoist_loop_invariants(g).changed  # a fixed point


def test_hoist_keeps_result_names_and_leaves_impure_work() -> None:
    g = parse_graph(
        textwrap.dedent(
            """\
            graph @main(%w: f32[2], %n: i64[]) {
              var @v: f32[2] = dense<f32[2]>[0.0, 0.0]
              %r = Loop(max_trip_count=%n, invariants=[%w]) {body = graph @body(%i: i64[], %wb: f32[2]) {
                %t = Constant() {value = dense<bool[]>[true]} : bool[]
                %read = ReadVariable() {type = f32[2], variable = "v"} : f32[2]
                %sum = Add(%read, %wb) : f32[2]
                Assign(%sum) {variable = "v"}
                %neg = Neg(%wb) : f32[2]
                return %t, %neg
              }, stacked = [Stacked(axis=0, reverse=false)]} : f32[?,2]
              return %r
            }"""  # noqa: E501
        )
    )
    assert hoist_loop_invariants(g).changed
    text = print_graph(g)
    # The stacked result keeps its name through an Identity of the new invariant parameter.
    assert "  %neg = Neg(%w) : f32[2]\n" in text
    assert "    %neg = Identity(%neg_" in text
    assert "%read = ReadVariable()" in text.split("Loop(")[1]
    assert "Assign(%sum)" in text.split("Loop(")[1]
    assert not hoist_loop_invariants(g).changed


def test_hoist_leaves_loops_without_invariant_work() -> None:
    xs = tl.placeholder("float32", (4, 3), name="xs")
    c, ys = tl.scan(lambda c, x: (c + x, c * x), tl.constant([0.0, 0.0, 0.0]), xs)
    g = tl.Model({"c": c, "ys": ys}).graph
    before = print_graph(g)
    assert not hoist_loop_invariants(g).changed
    assert print_graph(g) == before


@pytest.fixture(autouse=True)
def _fresh_builder() -> None:
    tl.reset()


@SETTINGS
@given(loop_specs())
def test_hoist_keeps_results_of_random_loops(spec: LoopSpec) -> None:
    assert_pass_keeps_results(
        hoist_loop_invariants, build(spec), make_inputs(spec), spec.max_iterations
    )


@SETTINGS
@given(builder_cases())
def test_hoist_keeps_results_of_builder_loops(case: tuple[Graph, dict[str, Any]]) -> None:
    graph, inputs = case
    after = assert_pass_keeps_results(hoist_loop_invariants, graph, inputs)
    assert hoist_loop_invariants(graph.clone()).changed == (
        print_graph(after) != print_graph(graph)
    )


@SETTINGS
@given(typed_loop_cases())
def test_hoist_keeps_results_of_typed_loops(case: tuple[Graph, dict[str, Any], int | None]) -> None:
    assert_pass_keeps_results(hoist_loop_invariants, *case)


# -- issue #21: an op that may fail never leaves its loop --------------------------------------
PARSE = textwrap.dedent(
    """\
    graph @main(%xs: f32[N,2], %sw: str[2]) {
      %ys = Loop(sliced=[%xs], invariants=[%sw]) {body = graph @body(%i: i64[], %x: f32[2], %swb: str[2]) {
        %t = Constant() {value = dense<bool[]>[true]} : bool[]
        %w = Cast(%swb) {to = f32} : f32[2]
        %y = Mul(%x, %w) : f32[2]
        return %t, %y
      }, sliced = [Sliced(axis=0, reverse=false)], stacked = [Stacked(axis=0, reverse=false)]} : f32[N,2]
      return %ys
    }"""  # noqa: E501
)


def test_hoist_leaves_a_string_cast_in_a_loop_that_runs_zero_times() -> None:
    # Over zero rows the body never parses "abc"; parsing it in front of the loop would fail.
    text = PARSE.replace("N", "0")
    assert not hoist_loop_invariants(parse_graph(text)).changed
    model = tl.Model(parse_graph(text))
    feed = {"xs": np.zeros((0, 2), np.float32), "sw": string_array(["1", "abc"])}
    assert_bit_identical(model.run(feed)["ys"], np.zeros((0, 2), np.float32), "ys")


def test_hoist_leaves_failing_work_in_a_loop_certain_to_run() -> None:
    # Three rows: the loop certainly runs, and the parse fails on its first trip. But with
    # max_iterations=0 the reference stops before that trip, with a LoopLimitError.
    text = PARSE.replace("N", "3")
    assert not hoist_loop_invariants(parse_graph(text)).changed
    model = tl.Model(parse_graph(text), max_iterations=0)
    feed = {"xs": np.ones((3, 2), np.float32), "sw": string_array(["1", "abc"])}
    for backend in ("reference", "compiled"):
        with pytest.raises(tl.LoopLimitError):
            model.run(feed, backend=backend)


def test_hoist_keeps_the_first_error_of_the_body() -> None:
    # The row's parse fails on the first trip before the invariant division by zero would:
    # the reference reports the parse, so the division must not run first, in front of the loop.
    g = parse_graph(
        textwrap.dedent(
            """\
            graph @main(%ss: str[2,1], %a: i64[1], %b: i64[1]) {
              %ys = Loop(sliced=[%ss], invariants=[%a, %b]) {body = graph @body(%i: i64[], %s: str[1], %ab: i64[1], %bb: i64[1]) {
                %t = Constant() {value = dense<bool[]>[true]} : bool[]
                %v = Cast(%s) {to = i64} : i64[1]
                %q = Div(%ab, %bb) : i64[1]
                %y = Add(%v, %q) : i64[1]
                return %t, %y
              }, sliced = [Sliced(axis=0, reverse=false)], stacked = [Stacked(axis=0, reverse=false)]} : i64[2,1]
              return %ys
            }"""  # noqa: E501
        )
    )
    assert not hoist_loop_invariants(g.clone()).changed
    model = tl.Model(g)
    feed = {
        "ss": string_array(["x", "1"], (2, 1)),
        "a": np.ones(1, np.int64),
        "b": np.zeros(1, np.int64),
    }
    for backend in ("reference", "compiled"):
        with pytest.raises(tl.ExecutionError, match="cannot read 'x' as a number"):
            model.run(feed, backend=backend)
