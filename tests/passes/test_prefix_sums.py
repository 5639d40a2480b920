"""loop_prefix_sums: golden before/after IR text, and results kept on random running sums."""

from __future__ import annotations

import textwrap
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from loop_pass_laws import assert_pass_keeps_results

from tensorloop.ir.graph import Graph
from tensorloop.ir.parser import parse_graph
from tensorloop.ir.printer import print_graph
from tensorloop.ir.verify import verify
from tensorloop.passes import eliminate_dead_loop_values, loop_prefix_sums

SCAN = textwrap.dedent(
    """\
    graph @main(%acc0: f64[2], %xs: f64[4,2]) {
      %acc, %ys = Loop(carried=[%acc0], sliced=[%xs]) {body = graph @body(%i: i64[], %a: f64[2], %x: f64[2]) {
        %t = Constant() {value = dense<bool[]>[true]} : bool[]
        %an = Add(%a, %x) : f64[2]
        %y = Identity(%an) : f64[2]
        return %t, %an, %y
      }, sliced = [Sliced(axis=0, reverse=false)], stacked = [Stacked(axis=0, reverse=false)]} : f64[2], f64[4,2]
      return %acc, %ys
    }"""  # noqa: E501
)


def test_prefix_sums_golden_running_sum() -> None:
    g = parse_graph(SCAN)
    assert loop_prefix_sums(g).changed
    eliminate_dead_loop_values(g)
    # The sum is one CumSum over [acc0; xs]; the loop is left with nothing to compute but its
    # trips (its sliced source still bounds them, so max_iterations still applies).
    assert print_graph(g) == textwrap.dedent(
        """\
        graph @main(%acc0: f64[2], %xs: f64[4,2]) {
          %0 = Constant() {value = dense<i64[1]>[0]} : i64[1]
          %1 = Unsqueeze(%acc0, %0) : f64[1,2]
          %2 = Concat(%1, %xs) {axis = 0} : f64[5,2]
          %3 = Constant() {value = dense<i64[]>[0]} : i64[]
          %4 = CumSum(%2, %3) : f64[5,2]
          %5 = Constant() {value = dense<i64[1]>[1]} : i64[1]
          %6 = Constant() {value = dense<i64[1]>[9223372036854775807]} : i64[1]
          %7 = Constant() {value = dense<i64[1]>[0]} : i64[1]
          %ys = Slice(%4, %5, %6, %7) : f64[4,2]
          %10 = Constant() {value = dense<i64[1]>[-1]} : i64[1]
          %11 = Gather(%4, %10) {axis = 0} : f64[1,2]
          %12 = Constant() {value = dense<i64[1]>[0]} : i64[1]
          %acc = Squeeze(%11, %12) : f64[2]
          Loop(sliced=[%xs]) {body = graph @body(%i: i64[], %x: f64[2]) {
            %t = Constant() {value = dense<bool[]>[true]} : bool[]
            return %t
          }, sliced = [Sliced(axis=0, reverse=false)], stacked = []}
          return %acc, %ys
        }"""
    )
    verify(g)
    assert not loop_prefix_sums(g).changed


def test_prefix_sums_leave_loops_that_may_stop_early() -> None:
    # The condition is computed in the body: the sum may stop before the end of xs.
    g = parse_graph(
        SCAN.replace(
            "%t = Constant() {value = dense<bool[]>[true]} : bool[]",
            "%two = Constant() {value = dense<i64[]>[2]} : i64[]\n    %t = Less(%i, %two) : bool[]",
        )
    )
    assert not loop_prefix_sums(g).changed
    short = SCAN.replace("Loop(carried", "Loop(max_trip_count=%m, carried").replace(
        "graph @main(%acc0: f64[2], %xs: f64[4,2]) {",
        "graph @main(%acc0: f64[2], %xs: f64[4,2]) {\n  %m = Constant() {value = dense<i64[]>[3]} : i64[]",  # noqa: E501
    )
    g = parse_graph(short.replace("f64[4,2]\n  return", "f64[3,2]\n  return"))
    assert not loop_prefix_sums(g).changed  # three trips over four rows


def _text(spec: tuple[Any, ...]) -> str:
    dtype, n, rank_extra, axis, reverse, stacks, other, trips = spec
    elem = "[2]" if rank_extra else "[]"
    src_dims = [n, 2] if rank_extra else [n]
    if axis == 1:
        src_dims = [2, n]
    src = f"{dtype}[{','.join(map(str, src_dims))}]"
    t = f"{dtype}{elem}"
    rows = n if trips is None else min(n, trips)
    out_dims = [rows, 2] if rank_extra else [rows]
    if axis == 1:
        out_dims = [2, rows]
    out = f"{dtype}[{','.join(map(str, out_dims))}]"
    stacked_results, stacked_specs, stacked_types = [], [], []
    for which in stacks:
        stacked_results.append("%an" if which == "after" else "%a")
        stacked_specs.append(f"Stacked(axis={axis}, reverse={str(reverse).lower()})")
        stacked_types.append(out)
    carried = ["%acc0"] + (["%b0"] if other else [])
    params = [f"%a: {t}"] + ([f"%b: {t}"] if other else [])
    nexts = ["%an"] + (["%bn"] if other else [])
    body_other = f"    %bn = Mul(%b, %x) : {t}\n" if other else ""
    trip = "max_trip_count=%m, " if trips is not None else ""
    head = (
        f"  %m = Constant() {{value = dense<i64[]>[{trips}]}} : i64[]\n"
        if trips is not None
        else ""
    )
    outs = ["%acc"] + (["%b"] if other else []) + [f"%y{k}" for k in range(len(stacks))]
    types = [t] * len(carried) + stacked_types
    return (
        f"graph @main(%acc0: {t}, %b0: {t}, %xs: {src}) {{\n{head}"
        f"  {', '.join(outs)} = Loop({trip}carried=[{', '.join(carried)}], sliced=[%xs]) "
        f"{{body = graph @body(%i: i64[], {', '.join(params)}, %x: {t}) {{\n"
        "    %t = Constant() {value = dense<bool[]>[true]} : bool[]\n"
        f"    %an = Add(%x, %a) : {t}\n{body_other}"
        f"    return %t, {', '.join(nexts + stacked_results)}\n"
        f"  }}, sliced = [Sliced(axis={axis}, reverse={str(reverse).lower()})], "
        f"stacked = [{', '.join(stacked_specs)}]}} : {', '.join(types)}\n"
        f"  return {', '.join(outs)}\n}}"
    )


@st.composite
def running_sums(draw: st.DrawFn) -> tuple[Graph, dict[str, Any]]:
    dtype = draw(st.sampled_from(["f64", "i64", "i32"]))
    n = draw(st.integers(0, 5))
    rank_extra = draw(st.booleans())
    axis = draw(st.sampled_from([0, 1])) if rank_extra else 0
    reverse = draw(st.booleans())
    stacks = draw(st.lists(st.sampled_from(["after", "before"]), max_size=2))
    other = draw(st.booleans())
    trips = draw(st.sampled_from([None, n, n + 2, max(n - 1, 0)]))
    g = parse_graph(_text((dtype, n, rank_extra, axis, reverse, stacks, other, trips)))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    np_dtype = {"f64": np.float64, "i64": np.int64, "i32": np.int32}[dtype]
    elem = (2,) if rank_extra else ()
    src = ((n, 2) if axis == 0 else (2, n)) if rank_extra else (n,)

    def data(shape: tuple[int, ...]) -> Any:
        return rng.integers(-5, 6, shape).astype(np_dtype)

    inputs = {"acc0": data(elem), "b0": data(elem), "xs": data(src)}
    return g, inputs


@settings(max_examples=80, deadline=None)
@given(running_sums())
def test_prefix_sums_keep_results_of_random_running_sums(
    case: tuple[Graph, dict[str, Any]],
) -> None:
    graph, inputs = case
    assert_pass_keeps_results(loop_prefix_sums, graph, inputs)
