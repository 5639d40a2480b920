"""hoist_sliced_work: golden before/after IR text, and results kept on random scans."""

from __future__ import annotations

import textwrap
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorloop as tl
from loop_models import F64, I64
from tensorloop.ir.graph import Graph
from tensorloop.ir.parser import parse_graph
from tensorloop.ir.printer import print_graph
from tensorloop.ir.verify import verify
from tensorloop.passes import hoist_sliced_work

SETTINGS = settings(max_examples=60, deadline=None)

BEFORE = textwrap.dedent(
    """\
    graph @main(%xs: f32[5,3], %h0: f32[4], %w: f32[3,4], %u: f32[4,4]) {
      %h, %ys = Loop(carried=[%h0], sliced=[%xs], invariants=[%w, %u]) {body = graph @body(%i: i64[], %h: f32[4], %x: f32[3], %wb: f32[3,4], %ub: f32[4,4]) {
        %t = Constant() {value = dense<bool[]>[true]} : bool[]
        %xw = MatMul(%x, %wb) : f32[4]
        %hu = MatMul(%h, %ub) : f32[4]
        %s = Add(%xw, %hu) : f32[4]
        %hn = Tanh(%s) : f32[4]
        return %t, %hn, %hn
      }, sliced = [Sliced(axis=0, reverse=false)], stacked = [Stacked(axis=0, reverse=false)]} : f32[4], f32[5,4]
      return %h, %ys
    }"""  # noqa: E501
)


def test_hoist_sliced_golden_rnn_projection() -> None:
    g = parse_graph(BEFORE)
    assert hoist_sliced_work(g).changed
    # The input projection becomes one MatMul over the sequence, sliced into the body; the
    # recurrent MatMul reads the carried %h and stays.
    assert print_graph(g) == textwrap.dedent(
        """\
        graph @main(%xs: f32[5,3], %h0: f32[4], %w: f32[3,4], %u: f32[4,4]) {
          %xw = MatMul(%xs, %w) : f32[5,4]
          %h, %ys = Loop(carried=[%h0], sliced=[%xs, %xw], invariants=[%w, %u]) {body = graph @body(%i: i64[], %h: f32[4], %x: f32[3], %xw: f32[4], %wb: f32[3,4], %ub: f32[4,4]) {
            %t = Constant() {value = dense<bool[]>[true]} : bool[]
            %hu = MatMul(%h, %ub) : f32[4]
            %s = Add(%xw, %hu) : f32[4]
            %hn = Tanh(%s) : f32[4]
            return %t, %hn, %hn
          }, sliced = [Sliced(axis=0, reverse=false), Sliced(axis=0, reverse=false)], stacked = [Stacked(axis=0, reverse=false)]} : f32[4], f32[5,4]
          return %h, %ys
        }"""  # noqa: E501
    )
    verify(g)
    assert not hoist_sliced_work(g).changed  # a fixed point


def test_hoist_sliced_chains_with_constants_and_reverse() -> None:
    g = parse_graph(
        textwrap.dedent(
            """\
            graph @main(%xs: f32[2,5,3], %b: f32[3]) {
              %ys = Loop(sliced=[%xs], invariants=[%b]) {body = graph @body(%i: i64[], %x: f32[2,3], %bb: f32[3]) {
                %t = Constant() {value = dense<bool[]>[true]} : bool[]
                %two = Constant() {value = dense<f32[]>[2.0]} : f32[]
                %xb = Add(%x, %bb) : f32[2,3]
                %y = Mul(%xb, %two) : f32[2,3]
                return %t, %y
              }, sliced = [Sliced(axis=1, reverse=true)], stacked = [Stacked(axis=0, reverse=true)]} : f32[5,2,3]
              return %ys
            }"""  # noqa: E501
        )
    )
    assert hoist_sliced_work(g).changed
    text = print_graph(g)
    assert "  %xb = Add(%xs, %b) : f32[2,5,3]\n" in text
    assert "  %y = Mul(%xb, %two) : f32[2,5,3]\n" in text
    assert "sliced = [Sliced(axis=1, reverse=true), Sliced(axis=1, reverse=true)]" in text
    body = text.split("Loop(")[1]
    assert "Add(" not in body and "Mul(" not in body and "%two" not in body
    verify(g)
    assert not hoist_sliced_work(g).changed


def test_hoist_sliced_leaves_work_on_carried_values_and_misaligned_broadcasts() -> None:
    # %hx reads the carried %h; %xv's invariant operand would align to the sliced axis of
    # the whole source (axis 1 of f32[4,3]), so neither may be batched.
    text = textwrap.dedent(
        """\
        graph @main(%xs: f32[4,3], %h0: f32[4], %v: f32[4]) {
          %h, %ys = Loop(carried=[%h0], sliced=[%xs], invariants=[%v]) {body = graph @body(%i: i64[], %h: f32[4], %x: f32[4], %vb: f32[4]) {
            %t = Constant() {value = dense<bool[]>[true]} : bool[]
            %hx = Add(%h, %x) : f32[4]
            %xv = Mul(%x, %vb) : f32[4]
            return %t, %hx, %xv
          }, sliced = [Sliced(axis=1, reverse=false)], stacked = [Stacked(axis=0, reverse=false)]} : f32[4], f32[3,4]
          return %h, %ys
        }"""  # noqa: E501
    )
    g = parse_graph(text)
    assert not hoist_sliced_work(g).changed
    assert print_graph(g) == text


def _run(graph: Graph, inputs: dict[str, Any]) -> list[Any]:
    model = tl.Model(graph)
    res = model.run(inputs)
    return [res[name] for name in model.output_names]


@st.composite
def scan_cases(draw: st.DrawFn) -> tuple[Graph, dict[str, Any]]:
    """A tl.scan over a random sequence (float or int) with invariant weights whose body does
    elementwise and matmul work on the slice, some of it chained, some reading the carry."""
    tl.reset()
    n, seed = draw(st.integers(0, 4)), draw(st.integers(0, 2**16))
    ints = draw(st.booleans())
    dt = I64 if ints else F64
    rng = np.random.default_rng(seed)

    def data(shape: tuple[int, ...]) -> Any:
        if ints:
            return rng.integers(-3, 4, shape).astype(np.int64)
        return rng.uniform(-1, 1, shape)

    axis = draw(st.sampled_from([0, 1]))
    xs_shape = (n, 3) if axis == 0 else (3, n)
    xs = tl.placeholder(dt, xs_shape, name="xs")
    w = tl.placeholder(dt, (3, 3), name="w")
    b = tl.placeholder(dt, (3,), name="b")
    inputs: dict[str, Any] = {"xs": data(xs_shape), "w": data((3, 3)), "b": data(3)}
    work = draw(st.sampled_from(["matmul", "elementwise", "chain", "carry", "cast"]))

    def step(h: Any, x: Any) -> Any:
        if work == "matmul":
            y = tl.matmul(x, w)
        elif work == "elementwise":
            y = tl.maximum(x * b, x - b) if ints else tl.tanh(x * b + b)
        elif work == "chain":
            y = tl.matmul(tl.abs(x) + b, w) * b
        elif work == "carry":
            y = (x + h) * b
        else:
            # float -> int is never batched; int -> float and float -> float are
            y = tl.cast(tl.cast(x, F64), I64) + b if ints else tl.cast(tl.cast(x, "float32"), F64)
        return h + tl.matmul(y, w), (y, h * 2)

    reverse = draw(st.booleans())
    zeros = tl.constant(np.zeros(3, dtype=np.int64 if ints else np.float64))
    c, (ys, hs) = tl.scan(step, zeros, xs, axis=axis, reverse=reverse)
    outs = {"c": c, "ys": ys, "hs": hs}
    keep = draw(st.lists(st.sampled_from(sorted(outs)), min_size=1, unique=True))
    graph = tl.Model({k: outs[k] for k in keep}).graph
    return graph, {k: v for k, v in inputs.items() if k in {p.name for p in graph.inputs}}


@pytest.fixture(autouse=True)
def _fresh_builder() -> None:
    tl.reset()


@SETTINGS
@given(scan_cases())
def test_hoist_sliced_keeps_results_of_scans(case: tuple[Graph, dict[str, Any]]) -> None:
    graph, inputs = case
    want = _run(graph, inputs)
    after = graph.clone()
    before_text = print_graph(after)
    result = hoist_sliced_work(after)
    verify(result.graph)
    text = print_graph(result.graph)
    assert result.changed == (text != before_text)
    got = _run(result.graph, inputs)
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g.dtype == w.dtype and g.shape == w.shape, f"output #{k}"
        if np.issubdtype(w.dtype, np.floating):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-12, err_msg=f"output #{k}")
        else:
            np.testing.assert_array_equal(g, w, err_msg=f"output #{k}")
    again = hoist_sliced_work(result.graph)
    assert not again.changed and print_graph(again.graph) == text


def test_hoist_sliced_batches_the_scan_projection() -> None:
    xs = tl.placeholder(F64, (6, 3), name="xs")
    w = tl.placeholder(F64, (3, 3), name="w")
    c, ys = tl.scan(lambda h, x: (tl.tanh(tl.matmul(x, w) + h), h), tl.constant(np.zeros(3)), xs)
    g = tl.Model({"c": c, "ys": ys}).graph
    assert hoist_sliced_work(g).changed
    before_loop = print_graph(g).split("Loop(")[0]
    assert "MatMul(%xs" in before_loop and ": f64[6,3]" in before_loop


INDEXED = textwrap.dedent(
    """\
    graph @main(%xs: f32[6,3], %h0: f32[4], %w: f32[3,4]) {
      %n = Constant() {value = dense<i64[]>[TRIPS]} : i64[]
      %h = Loop(max_trip_count=%n, carried=[%h0], invariants=[%xs, %w]) {body = graph @body(%i: i64[], %h: f32[4], %xb: f32[6,3], %wb: f32[3,4]) {
        %t = Constant() {value = dense<bool[]>[true]} : bool[]
        %x = Gather(%xb, %i) {axis = 0} : f32[3]
        %xw = MatMul(%x, %wb) : f32[4]
        %s = Add(%xw, %h) : f32[4]
        return %t, %s
      }} : f32[4]
      return %h
    }"""  # noqa: E501
)


def test_hoist_sliced_golden_gather_by_iteration() -> None:
    # ONNX exporters write an RNN's x[t] as Gather(X, t) of an invariant X: with the trip
    # count 5 <= len(X) = 6 the index is always in range, so X is treated as sliced.
    g = parse_graph(INDEXED.replace("TRIPS", "5"))
    assert hoist_sliced_work(g).changed
    assert print_graph(g) == textwrap.dedent(
        """\
        graph @main(%xs: f32[6,3], %h0: f32[4], %w: f32[3,4]) {
          %n = Constant() {value = dense<i64[]>[5]} : i64[]
          %xw = MatMul(%xs, %w) : f32[6,4]
          %h = Loop(max_trip_count=%n, carried=[%h0], sliced=[%xw], invariants=[%xs, %w]) {body = graph @body(%i: i64[], %h: f32[4], %xw: f32[4], %xb: f32[6,3], %wb: f32[3,4]) {
            %t = Constant() {value = dense<bool[]>[true]} : bool[]
            %x = Gather(%xb, %i) {axis = 0} : f32[3]
            %s = Add(%xw, %h) : f32[4]
            return %t, %s
          }, sliced = [Sliced(axis=0, reverse=false)], stacked = []} : f32[4]
          return %h
        }"""  # noqa: E501
    )
    verify(g)
    rng = np.random.default_rng(0)
    inputs = {
        "xs": rng.standard_normal((6, 3)).astype(np.float32),
        "h0": rng.standard_normal(4).astype(np.float32),
        "w": rng.standard_normal((3, 4)).astype(np.float32),
    }
    before = tl.Model(parse_graph(INDEXED.replace("TRIPS", "5")), backend="reference")
    after = tl.Model(g, backend="reference")
    np.testing.assert_allclose(after.run(inputs)["h"], before.run(inputs)["h"], rtol=1e-5)


def test_hoist_sliced_leaves_a_gather_that_can_run_out_of_range() -> None:
    # Seven trips over six rows: the seventh Gather fails, as it must keep doing.
    g = parse_graph(INDEXED.replace("TRIPS", "7"))
    assert not hoist_sliced_work(g).changed


def test_hoist_sliced_leaves_work_whose_batched_result_is_too_large(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The batched projection of BEFORE is f32[5,4], 80 bytes: over a 64-byte limit it stays.
    import tensorloop.passes.hoist_sliced as hoist

    monkeypatch.setattr(hoist, "MAX_BATCHED_BYTES", 64)
    g = parse_graph(BEFORE)
    assert not hoist_sliced_work(g).changed
    assert print_graph(g) == print_graph(parse_graph(BEFORE))
    monkeypatch.setattr(hoist, "MAX_BATCHED_BYTES", 80)
    assert hoist_sliced_work(g).changed
