"""loop_prefix_sums: golden before/after IR text, and results kept on random running sums."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from loop_pass_laws import (
    NUMBERS,
    PATTERNS,
    assert_bit_identical,
    assert_pass_keeps_results,
    numbers,
    typed_loop_cases,
)

import tensorloop as tl
from tensorloop.ir.emit import Emitter
from tensorloop.ir.graph import Graph
from tensorloop.ir.parser import parse_graph
from tensorloop.ir.printer import print_graph
from tensorloop.ir.verify import verify
from tensorloop.passes import eliminate_dead_loop_values, loop_prefix_sums
from tensorloop.reference.runtime import coerce_inputs
from tensorloop.tensor.dtypes import DType
from tensorloop.tensor.types import TensorType

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
    # The sum is one PrefixSum over [acc0; xs]; the loop is left with nothing to compute but its
    # trips (its sliced source still bounds them, so max_iterations still applies).
    assert print_graph(g) == textwrap.dedent(
        """\
        graph @main(%acc0: f64[2], %xs: f64[4,2]) {
          %0 = Constant() {value = dense<i64[1]>[0]} : i64[1]
          %1 = Unsqueeze(%acc0, %0) : f64[1,2]
          %2 = Concat(%1, %xs) {axis = 0} : f64[5,2]
          %3 = PrefixSum(%2) {axis = 0} : f64[5,2]
          %4 = Constant() {value = dense<i64[1]>[1]} : i64[1]
          %5 = Constant() {value = dense<i64[1]>[9223372036854775807]} : i64[1]
          %6 = Constant() {value = dense<i64[1]>[0]} : i64[1]
          %ys = Slice(%3, %4, %5, %6) : f64[4,2]
          %9 = Constant() {value = dense<i64[1]>[-1]} : i64[1]
          %10 = Gather(%3, %9) {axis = 0} : f64[1,2]
          %11 = Constant() {value = dense<i64[1]>[0]} : i64[1]
          %acc = Squeeze(%10, %11) : f64[2]
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
    dt = draw(st.sampled_from(NUMBERS))
    n = draw(st.integers(0, 5))
    rank_extra = draw(st.booleans())
    axis = draw(st.sampled_from([0, 1])) if rank_extra else 0
    reverse = draw(st.booleans())
    stacks = draw(st.lists(st.sampled_from(["after", "before"]), max_size=2))
    other = draw(st.booleans())
    trips = draw(st.sampled_from([None, n, n + 2, max(n - 1, 0)]))
    g = parse_graph(_text((dt.short, n, rank_extra, axis, reverse, stacks, other, trips)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    elem = (2,) if rank_extra else ()
    src = ((n, 2) if axis == 0 else (2, n)) if rank_extra else (n,)
    pattern = draw(st.sampled_from(PATTERNS))
    inputs = {
        "acc0": numbers(rng, dt, elem, "mixed"),
        "b0": numbers(rng, dt, elem, "mixed"),
        "xs": numbers(rng, dt, src, pattern, axis),
    }
    if pattern == "cancel" and draw(st.booleans()):
        inputs["acc0"] = np.zeros(elem, dt.numpy)
    return g, inputs


@settings(max_examples=80, deadline=None)
@given(running_sums())
def test_prefix_sums_keep_results_of_random_running_sums(
    case: tuple[Graph, dict[str, Any]],
) -> None:
    graph, inputs = case
    assert_pass_keeps_results(loop_prefix_sums, graph, inputs)


@settings(max_examples=60, deadline=None)
@given(typed_loop_cases())
def test_prefix_sums_keep_results_of_typed_loops(
    case: tuple[Graph, dict[str, Any], int | None],
) -> None:
    # Every element type, values that cancel or overflow, NaN, infinities and signed zeros,
    # loops stopped by data or by trip counts, strings that may fail to parse, and limits.
    assert_pass_keeps_results(loop_prefix_sums, *case)


# -- issue #21: the sum is the loop's, bit for bit, on the default backend ----------------------
@pytest.fixture(autouse=True)
def _fresh_builder() -> None:
    tl.reset()


def _scan_sum(xs: np.ndarray[Any, Any]) -> tl.Model:
    x = tl.placeholder(str(xs.dtype), xs.shape, name="xs")
    zero = tl.constant(np.zeros(xs.shape[1:], xs.dtype))
    last, sums = tl.scan(lambda a, v: (a + v, a + v), zero, x)
    return tl.Model({"last": last, "sums": sums})


def _assert_the_loops_sum(xs: np.ndarray[Any, Any], last: float) -> None:
    model = _scan_sum(xs)
    feed = {"xs": xs}
    source = model.prepared().plan(coerce_inputs(model.graph, feed)).source
    assert "np.cumsum(" in source and "while" not in source  # the sum is rewritten
    got, want = model.run(feed), model.run(feed, backend="reference")
    for name in ("last", "sums"):
        assert_bit_identical(got[name], want[name], name)
    assert_bit_identical(got["last"], np.asarray(last, xs.dtype), "last")


def test_prefix_sums_round_a_float32_sum_that_cancels_as_the_loop_does() -> None:
    # Each 1 is lost against 1e8 in float32, so the loop ends at 0 (a float64 sum gave 998).
    xs = np.array([1e8] + [1.0] * 998 + [-1e8], np.float32)
    _assert_the_loops_sum(xs, 0.0)


def test_prefix_sums_overflow_a_float32_sum_as_the_loop_does() -> None:
    # 3e38 + 3e38 is inf in float32, and stays inf (a float64 sum came back to 3e38).
    _assert_the_loops_sum(np.array([3e38, 3e38, -3e38], np.float32), np.inf)


@pytest.mark.parametrize(("dtype", "big"), [("float16", 2048.0), ("bfloat16", 256.0)])
def test_prefix_sums_round_half_floats_as_the_loop_does(dtype: str, big: float) -> None:
    # big + 1 rounds back to big in the type at every step (float32 would keep the ones).
    xs = np.array([[big, 1.0], [1.0, 1.0], [1.0, 1.0], [-big, 1.0]]).astype(DType(dtype).numpy)
    model = _scan_sum(xs)
    got, want = model.run({"xs": xs}), model.run({"xs": xs}, backend="reference")
    for name in ("last", "sums"):
        assert_bit_identical(got[name], want[name], name)
    assert_bit_identical(got["last"], np.array([0.0, 4.0], xs.dtype), "last")


@pytest.mark.parametrize("dtype", [d.value for d in NUMBERS])
@pytest.mark.parametrize("reverse", [0, 1])
def test_prefix_sum_adds_one_element_at_a_time_as_add_does(dtype: str, reverse: int) -> None:
    # The op's meaning: y[0] = x[0], y[k] = Add(y[k-1], x[k]) with the reference Add kernel.
    dt = DType(dtype)
    rng = np.random.default_rng(7)
    data = numbers(rng, dt, (6, 3), "mixed", axis=1)
    g = Graph("main")
    x = g.add_input("x", TensorType(dt, (6, 3)))
    g.set_outputs([Emitter(g).op("PrefixSum", [x], {"axis": -1, "reverse": reverse})])
    model = tl.Model(g)
    (name,) = model.output_names
    rows = np.moveaxis(data, 1, 0)[::-1] if reverse else np.moveaxis(data, 1, 0)
    a = tl.placeholder(dtype, (6,), name="a")
    b = tl.placeholder(dtype, (6,), name="b")
    add = tl.Model({"c": a + b}, backend="reference")
    want = [rows[0]]
    for row in rows[1:]:
        want.append(add.run({"a": want[-1], "b": row})["c"])
    stacked = np.stack(want[::-1] if reverse else want, axis=1)
    assert_bit_identical(model.run({"x": data})[name], stacked, "PrefixSum")
    assert_bit_identical(model.run({"x": data}, backend="reference")[name], stacked, "reference")


def test_prefix_sums_leave_sums_of_other_types() -> None:
    # float8 and 4-bit integers are not PrefixSum types: the loop stays a loop.
    for t in ("f8e5m2", "i4"):
        g = parse_graph(_text((t, 4, False, 0, False, ["after"], False, None)))
        assert not loop_prefix_sums(g).changed


def test_the_writers_refuse_prefix_sum(tmp_path: Path) -> None:
    # PrefixSum is tensorloop's own op (plans make it; a graph may hold it too): ONNX's CumSum
    # does not promise to add in the input's type, and OpenVINO has no such layer.
    g = Graph("main")
    x = g.add_input("x", TensorType("float32", (4, 2)))
    g.set_outputs([Emitter(g).op("PrefixSum", [x], {"axis": 0})])
    model = tl.Model(g)
    with pytest.raises(tl.FormatError, match="ONNX has no op 'PrefixSum'"):
        tl.save(model, tmp_path / "sum.onnx")
    with pytest.raises(tl.FormatError, match="no OpenVINO lowering for op 'PrefixSum'"):
        tl.save(model, tmp_path / "sum.xml")
