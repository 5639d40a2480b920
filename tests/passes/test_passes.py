"""Passes: golden before/after IR text, and the law unrolled ≡ rolled on random loops."""

from __future__ import annotations

import textwrap
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorloop as tl
from tensorloop.ir.parser import parse_graph
from tensorloop.ir.printer import print_graph
from tensorloop.passes import (
    eliminate_dead_code,
    fold_constants,
    run_passes,
    static_trip_count,
    unroll_loops,
)

LOOP = textwrap.dedent(
    """\
    graph @main(%xs: f32[2,3], %h0: f32[3]) {
      %h, %ys = Loop(none, none, %h0, %xs) {body = graph @body(%i: i64[], %h: f32[3], %x: f32[3]) {
        %t = Constant() {value = dense<bool[]>[true]} : bool[]
        %unused = Mul(%h, %h) : f32[3]
        %hn = Add(%h, %x) : f32[3]
        return %t, %hn, %h
      }, num_carried = 1, sliced = [Sliced(axis=0, reverse=true)], stacked = [Stacked(axis=1, reverse=false)]} : f32[3], f32[3,2]
      return %h, %ys
    }"""  # noqa: E501
)


def test_unroll_then_dce_golden() -> None:
    g = parse_graph(LOOP)
    assert run_passes(g, [unroll_loops, eliminate_dead_code]).changed
    # Reverse slicing: iteration 0 reads xs[1]; stacking on axis 1 keeps h0 first.
    assert print_graph(g) == textwrap.dedent(
        """\
        graph @main(%xs: f32[2,3], %h0: f32[3]) {
          %1 = Constant() {value = dense<i64[]>[1]} : i64[]
          %2 = Gather(%xs, %1) {axis = 0} : f32[3]
          %hn = Add(%h0, %2) : f32[3]
          %4 = Constant() {value = dense<i64[]>[0]} : i64[]
          %5 = Gather(%xs, %4) {axis = 0} : f32[3]
          %h = Add(%hn, %5) : f32[3]
          %9 = Constant() {value = dense<i64[1]>[1]} : i64[1]
          %10 = Unsqueeze(%h0, %9) : f32[3,1]
          %11 = Constant() {value = dense<i64[1]>[1]} : i64[1]
          %12 = Unsqueeze(%hn, %11) : f32[3,1]
          %ys = Concat(%10, %12) {axis = 1} : f32[3,2]
          return %h, %ys
        }"""
    )


def test_dce_golden_cleans_bodies_and_keeps_assign() -> None:
    g = parse_graph(
        textwrap.dedent(
            """\
            graph @main(%x: f32[3]) {
              var @s: f32[3] = dense<f32[3]>[0.0, 0.0, 0.0]
              %dead = Neg(%x) : f32[3]
              %y = Abs(%x) : f32[3]
              Assign(%y) {variable = "s"}
              return %x
            }"""
        )
    )
    assert eliminate_dead_code(g).changed
    assert print_graph(g) == textwrap.dedent(
        """\
        graph @main(%x: f32[3]) {
          var @s: f32[3] = dense<f32[3]>[0.0, 0.0, 0.0]
          %y = Abs(%x) : f32[3]
          Assign(%y) {variable = "s"}
          return %x
        }"""
    )
    g2 = parse_graph(LOOP)
    assert eliminate_dead_code(g2).changed
    assert "%unused" not in print_graph(g2)
    assert not eliminate_dead_code(g2).changed


def test_unroll_leaves_loops_it_cannot_count() -> None:
    xs = tl.placeholder("float32", (4,), name="xs")
    n = tl.placeholder("int64", (), name="n")
    counted_by_input = tl.fori_loop(0, n, lambda i, v: v + 1.0, xs)
    stopped = tl.while_loop(lambda v: tl.reduce_sum(v) < 10.0, lambda v: v + 1.0, xs)
    m = tl.Model({"a": counted_by_input, "b": stopped})
    before = print_graph(m.graph)
    assert [static_trip_count(node) for node in m.graph.nodes if node.op == "Loop"] == [None, None]
    assert not unroll_loops(m.graph).changed
    assert print_graph(m.graph) == before


def test_unroll_nested_and_zero_trip() -> None:
    xs = tl.placeholder("float32", (3, 2, 4), name="xs")

    def outer(c: tl.Tensor, x: tl.Tensor) -> tuple[tl.Tensor, tl.Tensor]:
        inner_c, rows = tl.scan(lambda a, r: (a + r, a * r), c, x, axis=0, reverse=True)
        return inner_c, rows

    c, ys = tl.scan(outer, tl.constant(np.ones(4, np.float32)), xs, axis=0)
    empty = tl.placeholder("float32", (0, 4), name="empty")
    z, zs = tl.scan(lambda a, r: (a + r, r), tl.constant(np.ones(4, np.float32)), empty)
    m = tl.Model({"c": c, "ys": ys, "z": z, "zs": zs})
    feeds = {
        "xs": np.random.default_rng(1).standard_normal((3, 2, 4)).astype(np.float32),
        "empty": np.zeros((0, 4), np.float32),
    }
    rolled = m.run(feeds)
    assert unroll_loops(m.graph).changed
    assert not any(n.op == "Loop" for _, n in m.graph.walk())
    unrolled = tl.Model(m.graph).run(feeds)
    for k in rolled:
        np.testing.assert_array_equal(unrolled[k], rolled[k])
    assert unrolled["zs"].shape == (0, 4)


@st.composite
def scans(draw: Any) -> tuple[list[int], int, bool, int, bool, int]:
    rank = draw(st.integers(1, 3))
    shape = draw(st.lists(st.integers(0, 3), min_size=rank, max_size=rank))
    axis = draw(st.integers(-rank, rank - 1))
    reverse = draw(st.booleans())
    out_axis = draw(st.integers(-rank, rank - 1))
    out_reverse = draw(st.booleans())
    seed = draw(st.integers(0, 2**16))
    return shape, axis, reverse, out_axis, out_reverse, seed


@settings(max_examples=40, deadline=None)
@given(scans())
def test_unrolled_equals_rolled(case: tuple[list[int], int, bool, int, bool, int]) -> None:
    shape, axis, reverse, out_axis, out_reverse, seed = case
    tl.reset()
    xs = tl.placeholder("float64", shape, name="xs")
    slice_shape = [d for k, d in enumerate(shape) if k != axis % len(shape)]
    init = tl.constant(np.zeros(slice_shape))

    def step(c: tl.Tensor, x: tl.Tensor) -> tuple[tl.Tensor, tl.Tensor]:
        return c * 0.5 + x, tl.tanh(c - x)

    c, ys = tl.scan(step, init, xs, axis=axis, reverse=reverse)
    # A second loop stacking on another axis, to vary the Stacked attributes too.
    _, zs = tl.scan(lambda c2, x: (c2, x * 2.0), init, xs, axis=axis, reverse=out_reverse)
    m = tl.Model({"c": c, "ys": ys, "zs": zs})
    del out_axis
    feeds = {"xs": np.random.default_rng(seed).standard_normal(shape)}
    rolled = m.run(feeds)
    assert unroll_loops(m.graph).changed
    unrolled = tl.Model(m.graph).run(feeds)
    for k in rolled:
        np.testing.assert_allclose(unrolled[k], rolled[k], rtol=0, atol=0)


def test_fold_constants_golden() -> None:
    g = parse_graph(
        textwrap.dedent(
            """\
            graph @main(%x: f32[2,3]) {
              %s = Shape(%x) : i64[2]
              %k = Constant() {value = dense<i64[1]>[1]} : i64[1]
              %shape = Concat(%k, %s) {axis = 0} : i64[3]
              %y = Reshape(%x, %shape) : f32[*]
              return %y
            }"""
        )
    )
    assert fold_constants(g).changed
    assert print_graph(g) == textwrap.dedent(
        """\
        graph @main(%x: f32[2,3]) {
          %s = Constant() {value = dense<i64[2]>[2, 3]} : i64[2]
          %k = Constant() {value = dense<i64[1]>[1]} : i64[1]
          %shape = Constant() {value = dense<i64[3]>[1, 2, 3]} : i64[3]
          %y = Reshape(%x, %shape) : f32[*]
          return %y
        }"""
    )
    assert not fold_constants(g).changed  # a fixed point


def test_fold_constants_leaves_large_and_unknown_results() -> None:
    g = parse_graph(
        textwrap.dedent(
            """\
            graph @main(%x: f32[?]) {
              %n = Constant() {value = dense<i64[1]>[100000]} : i64[1]
              %big = ConstantOfShape(%n) : f32[100000]
              %s = Shape(%x) : i64[1]
              return %big, %s
            }"""
        )
    )
    assert not fold_constants(g).changed
