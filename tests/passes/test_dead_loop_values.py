"""eliminate_dead_loop_values: golden before/after IR text, and results kept on random loops."""

from __future__ import annotations

import textwrap
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from loop_pass_laws import assert_bit_identical, assert_pass_keeps_results, builder_cases

import tensorloop as tl
from loop_models import LoopSpec, build, loop_specs, make_inputs
from tensorloop.ir.graph import Graph
from tensorloop.ir.parser import parse_graph
from tensorloop.ir.printer import print_graph
from tensorloop.passes import eliminate_dead_code, eliminate_dead_loop_values
from tensorloop.tensor.dtypes import string_array

SETTINGS = settings(max_examples=30, deadline=None)

BEFORE = textwrap.dedent(
    """\
    graph @main(%xs: f32[3,4], %h0: f32[4], %a0: f32[4], %b0: f32[4], %c0: f32[4], %w: f32[4]) {
      %h, %a, %b, %c, %ys, %zs = Loop(carried=[%h0, %a0, %b0, %c0], sliced=[%xs], invariants=[%w]) {body = graph @body(%i: i64[], %h: f32[4], %a: f32[4], %b: f32[4], %c: f32[4], %x: f32[4], %wb: f32[4]) {
        %t = Constant() {value = dense<bool[]>[true]} : bool[]
        %hn = Add(%h, %x) : f32[4]
        %ab = Add(%a, %b) : f32[4]
        %an = Mul(%ab, %wb) : f32[4]
        %bn = Mul(%b, %x) : f32[4]
        %cn = Neg(%c) : f32[4]
        %y = Add(%h, %c) : f32[4]
        %z = Neg(%an) : f32[4]
        return %t, %hn, %an, %bn, %cn, %y, %z
      }, sliced = [Sliced(axis=0, reverse=false)], stacked = [Stacked(axis=0, reverse=false), Stacked(axis=1, reverse=true)]} : f32[4], f32[4], f32[4], f32[4], f32[3,4], f32[4,3]
      return %h, %ys
    }"""  # noqa: E501
)


def test_dead_loop_values_golden() -> None:
    g = parse_graph(BEFORE)
    assert eliminate_dead_loop_values(g).changed
    # %a and %b are read only on the way to their own next values (and the unread %zs); %c's
    # final value is unread but %y reads it, so it stays. The invariant %w was read only by
    # %a's update. The sliced source stays: it bounds the trip count.
    assert print_graph(g) == textwrap.dedent(
        """\
        graph @main(%xs: f32[3,4], %h0: f32[4], %a0: f32[4], %b0: f32[4], %c0: f32[4], %w: f32[4]) {
          %h, %c, %ys = Loop(carried=[%h0, %c0], sliced=[%xs]) {body = graph @body(%i: i64[], %h: f32[4], %c: f32[4], %x: f32[4]) {
            %t = Constant() {value = dense<bool[]>[true]} : bool[]
            %hn = Add(%h, %x) : f32[4]
            %cn = Neg(%c) : f32[4]
            %y = Add(%h, %c) : f32[4]
            return %t, %hn, %cn, %y
          }, sliced = [Sliced(axis=0, reverse=false)], stacked = [Stacked(axis=0, reverse=false)]} : f32[4], f32[4], f32[3,4]
          return %h, %ys
        }"""  # noqa: E501
    )
    assert not eliminate_dead_loop_values(g).changed  # a fixed point


def test_dead_loop_values_keeps_what_the_condition_and_assign_read() -> None:
    g = parse_graph(
        textwrap.dedent(
            """\
            graph @main(%k0: i64[], %s0: f32[2], %v0: f32[2]) {
              var @v: f32[2] = dense<f32[2]>[0.0, 0.0]
              %k, %s, %v = Loop(carried=[%k0, %s0, %v0]) {body = graph @body(%i: i64[], %k: i64[], %s: f32[2], %v: f32[2]) {
                %three = Constant() {value = dense<i64[]>[3]} : i64[]
                %one = Constant() {value = dense<i64[]>[1]} : i64[]
                %kn = Add(%k, %one) : i64[]
                %go = Less(%kn, %three) : bool[]
                %sn = Neg(%s) : f32[2]
                Assign(%sn) {variable = "v"}
                %vn = Abs(%v) : f32[2]
                return %go, %kn, %sn, %vn
              }} : i64[], f32[2], f32[2]
              return %s0
            }"""  # noqa: E501
        )
    )
    assert eliminate_dead_loop_values(g).changed
    text = print_graph(g)
    assert "%k, %s = Loop(carried=[%k0, %s0])" in text
    assert "%vn" not in text and "Assign(%sn)" in text
    assert not eliminate_dead_loop_values(g).changed


def test_a_loop_that_fed_only_dead_outputs_keeps_its_trips() -> None:
    xs = tl.placeholder("float32", (3, 2, 4), name="xs")

    def outer(c: tl.Tensor, x: tl.Tensor) -> tuple[tl.Tensor, tl.Tensor]:
        inner_c, rows = tl.scan(lambda a, r: (a + r, a * r), c, x)
        return c + 1.0, (inner_c, rows)

    c, (_, _) = tl.scan(outer, tl.constant([0.0, 0.0, 0.0, 0.0], "float32"), xs)
    g = tl.Model({"c": c}).graph
    # The outer loop's stacked outputs were all the inner loop fed: they go, and the inner
    # loop's values with them. The inner loop itself stays, with no outputs: its two trips can
    # pass the iteration limit, and the reference (running every node) reports it there.
    feed = {"xs": np.ones((3, 2, 4), np.float32)}
    after = assert_pass_keeps_results(eliminate_dead_loop_values, g, feed)
    text = print_graph(after)
    assert text.count("Loop(") == 2 and "stacked = []} : f32[4]" in text
    assert "%c = Loop(carried=[%const], sliced=[%xs])" in text
    assert "    Loop(sliced=[%x0])" in text
    assert not eliminate_dead_code(after).changed
    for limit in (1, 2, 3):  # the inner loop's error at 1, the outer loop's at 2
        assert_pass_keeps_results(eliminate_dead_loop_values, g, feed, limit)


@pytest.fixture(autouse=True)
def _fresh_builder() -> None:
    tl.reset()


@SETTINGS
@given(loop_specs(), st.data())
def test_dead_loop_values_keep_results_of_random_loops(spec: LoopSpec, data: Any) -> None:
    g = build(spec)
    kept = data.draw(st.lists(st.sampled_from(g.outputs), unique=True)) if g.outputs else []
    assume(kept)
    g.set_outputs(kept)
    assert_pass_keeps_results(eliminate_dead_loop_values, g, make_inputs(spec), spec.max_iterations)


@SETTINGS
@given(builder_cases())
def test_dead_loop_values_keep_results_of_builder_loops(case: tuple[Graph, dict[str, Any]]) -> None:
    graph, inputs = case
    assert_pass_keeps_results(eliminate_dead_loop_values, graph, inputs)


# -- a node that may fail is never dropped ------------------------------------------------------
PARSED = textwrap.dedent(
    """\
    graph @main(%ss: str[3], %n0: i64[], %acc0: i64[]) {
      %n, %acc = Loop(carried=[%n0, %acc0], sliced=[%ss]) {body = graph @body(%i: i64[], %n: i64[], %a: i64[], %s: str[]) {
        %t = Constant() {value = dense<bool[]>[true]} : bool[]
        %one = Constant() {value = dense<i64[]>[1]} : i64[]
        %nn = Add(%n, %one) : i64[]
        %v = Cast(%s) {to = i64} : i64[]
        %an = Add(%a, %v) : i64[]
        %dead = Neg(%v) : i64[]
        return %t, %nn, %an
      }, sliced = [Sliced(axis=0, reverse=false)]} : i64[], i64[]
      %unread = Cast(%ss) {to = i64} : i64[3]
      return %n
    }"""  # noqa: E501
)


def _parsed_feed(last: str) -> dict[str, Any]:
    return {"ss": string_array(["1", "20", last], (3,)), "n0": np.int64(0), "acc0": np.int64(0)}


def test_a_failing_node_feeding_only_an_unread_carried_value_stays() -> None:
    # The carried sum %acc is never read, but the reference parses every row to compute it and
    # fails on "abc": the Cast stays (its result unread), and the error with it; the sum goes.
    g = parse_graph(PARSED)
    for feed in (_parsed_feed("3"), _parsed_feed("abc")):
        after = assert_pass_keeps_results(eliminate_dead_loop_values, g, feed)
        text = print_graph(after)
        assert "%n = Loop(carried=[%n0], sliced=[%ss])" in text
        assert "%v = Cast(%s) {to = i64} : i64[]" in text
        assert "%an = " not in text and "%dead" not in text  # what cannot fail goes
    model = tl.Model(g)
    assert_bit_identical(model.run(_parsed_feed("3"))["n"], np.int64(3), "default backend")
    for backend in ("reference", "compiled"):
        with pytest.raises(tl.ExecutionError, match="Cast: cannot read 'abc' as a number"):
            model.run(_parsed_feed("abc"), backend=backend)


def test_dead_code_keeps_nodes_that_may_fail() -> None:
    # The reference runs every node, read or not, at the top level as in bodies: an unread
    # Cast from strings (top level and in the body) and an unread Loop (which may pass the
    # iteration limit) stay; an unread Neg goes.
    g = parse_graph(PARSED)
    assert eliminate_dead_code(g).changed
    text = print_graph(g)
    assert "%dead" not in text
    assert "%unread = Cast(%ss)" in text and "%v = Cast(%s)" in text
    assert not eliminate_dead_code(g).changed
    g2 = parse_graph(PARSED.replace("return %n\n", "return %n0\n"))
    eliminate_dead_code(g2)
    assert "Loop(" in print_graph(g2)
    feed = _parsed_feed("abc")
    feed["ss"] = string_array(["1", "abc", "2"], (3,))
    for graph in (parse_graph(PARSED), parse_graph(PARSED.replace("return %n\n", "return %n0\n"))):
        assert_pass_keeps_results(eliminate_dead_code, graph, feed)
        assert_pass_keeps_results(eliminate_dead_code, graph, _parsed_feed("7"), 2)
