"""The compiled backend's buffer plan: views through tensor/layout, liveness, in-place writes."""

from __future__ import annotations

import itertools
import textwrap
from typing import Any

import numpy as np

import tensorloop as tl
from backend_agreement import assert_same_outputs
from tensorloop.backends.compiled.memory import plan_buffers
from tensorloop.ir.graph import Graph, Node
from tensorloop.ir.loop import Loop
from tensorloop.ir.parser import parse_graph
from tensorloop.reference.runtime import coerce_inputs

CELL = textwrap.dedent(
    """\
    graph @main(%xs: f32[5,2,8], %h0: f32[2,2], %c0: f32[2,2], %r: f32[2,8]) {
      %h, %c, %ys = Loop(carried=[%h0, %c0], sliced=[%xs], invariants=[%r]) {body = graph @body(%i: i64[], %h: f32[2,2], %c: f32[2,2], %x: f32[2,8], %rb: f32[2,8]) {
        %t = Constant() {value = dense<bool[]>[true]} : bool[]
        %hr = MatMul(%h, %rb) : f32[2,8]
        %g = Add(%x, %hr) : f32[2,8]
        %gi, %go, %gf, %gc = Split(%g) {axis = 1, num_outputs = 4} : f32[2,2], f32[2,2], f32[2,2], f32[2,2]
        %si = Sigmoid(%gi) : f32[2,2]
        %so = Sigmoid(%go) : f32[2,2]
        %sf = Sigmoid(%gf) : f32[2,2]
        %tc = Tanh(%gc) : f32[2,2]
        %fc = Mul(%sf, %c) : f32[2,2]
        %ic = Mul(%si, %tc) : f32[2,2]
        %cn = Add(%fc, %ic) : f32[2,2]
        %tn = Tanh(%cn) : f32[2,2]
        %hn = Mul(%so, %tn) : f32[2,2]
        %shape = Constant() {value = dense<i64[1]>[4]} : i64[1]
        %flat = Reshape(%tn, %shape) : f32[4]
        return %t, %hn, %cn, %flat
      }, sliced = [Sliced(axis=0, reverse=false)], stacked = [Stacked(axis=0, reverse=false)]} : f32[2,2], f32[2,2], f32[5,4]
      return %h, %c, %ys
    }"""  # noqa: E501
)


def _body() -> Graph:
    return Loop(parse_graph(CELL).nodes[-1]).body


def _writable(node: Node) -> bool:
    return node.op in ("MatMul", "Add", "Mul", "Sigmoid", "Tanh")


def test_escaping_values_are_never_pooled_and_views_keep_their_buffer_alive() -> None:
    body = _body()
    count = iter(range(100))
    plan = plan_buffers(body, 3, _writable, lambda hint: f"{hint}{next(count)}")
    pooled = {v.name for v in plan.buffers}
    # %hn and %cn are carried into the next iteration: a fresh array each time.
    assert "hn" not in pooled and "cn" not in pooled
    # %tn is read after the iteration through a view (%flat, stacked), and by %hn.
    assert {"hr", "g", "si", "so", "sf", "tc", "fc", "ic", "tn"} <= pooled
    # The Split's pieces and the Reshape are views of %g and %tn, planned with Layouts.
    names = {v.name: v for v in plan.layouts}
    assert {names[n] for n in ("gi", "go", "gf", "gc", "flat")} <= plan.views
    assert plan.layouts[names["go"]].offset == 2 and plan.layouts[names["go"]].strides == (8, 1)
    # %g is read through its pieces until %tc, so %hr's buffer (free after %g) cannot hold %si
    # while %g is live: no two values live at once share a buffer.
    live = _live_ranges(body, plan.views)
    by_buffer: dict[str, list[tuple[int, int]]] = {}
    for v, name in plan.buffers.items():
        by_buffer.setdefault(name, []).append(live[v.name])
    for ranges in by_buffer.values():
        ranges.sort()
        for (_, end), (start, _) in itertools.pairwise(ranges):
            assert end < start
    assert len(plan.allocations) < len(plan.buffers)  # some buffers are shared


def _live_ranges(body: Graph, views: set[Any]) -> dict[str, tuple[int, int]]:
    """Each pooled value's [definition, last read] in node positions, reads through views
    included; the results count as read at the end."""
    pos = {n: k for k, n in enumerate(body.nodes)}
    end = len(body.nodes)
    ranges: dict[str, tuple[int, int]] = {}
    for node in body.nodes:
        for out in node.outputs:
            readers = [out]
            for later in body.nodes[pos[node] + 1 :]:
                if later.inputs and later.inputs[0] in readers and later.outputs[0] in views:
                    readers.extend(later.outputs)
            last = max(
                [pos[u.node] for r in readers for u in r.uses]
                + [end for r in readers if r in body.outputs]
                + [pos[node]]
            )
            ranges[out.name] = (pos[node], last)
    return ranges


def test_a_reshape_the_layout_cannot_express_is_a_copy() -> None:
    graph = parse_graph(
        textwrap.dedent(
            """\
            graph @main(%xs: f32[3,2,4]) {
              %ys = Loop(sliced=[%xs]) {body = graph @body(%i: i64[], %x: f32[2,4]) {
                %t = Constant() {value = dense<bool[]>[true]} : bool[]
                %e = Exp(%x) : f32[2,4]
                %tt = Transpose(%e) {perm = [1, 0]} : f32[4,2]
                %shape = Constant() {value = dense<i64[1]>[8]} : i64[1]
                %flat = Reshape(%tt, %shape) : f32[8]
                return %t, %flat
              }, sliced = [Sliced(axis=0, reverse=false)], stacked = [Stacked(axis=0, reverse=false)]} : f32[3,8]
              return %ys
            }"""  # noqa: E501
        )
    )
    body = Loop(graph.nodes[-1]).body
    plan = plan_buffers(body, 1, lambda n: n.op == "Exp", lambda hint: hint)
    names = {v.name: v for v in plan.layouts}
    assert names["tt"] in plan.views  # a transpose is a view
    assert names["flat"] not in plan.views  # flattening a transposed view must copy
    xs = np.arange(24, dtype=np.float32).reshape(3, 2, 4) / 24
    got = tl.Model(graph).run({"xs": xs})["ys"]
    np.testing.assert_array_equal(got, np.exp(xs).transpose(0, 2, 1).reshape(3, 8))


def test_the_lstm_cell_writes_in_place_and_matches_the_reference() -> None:
    model = tl.Model(parse_graph(CELL))
    rng = np.random.default_rng(0)
    feed = {
        "xs": rng.standard_normal((5, 2, 8)).astype(np.float32),
        "h0": rng.standard_normal((2, 2)).astype(np.float32),
        "c0": rng.standard_normal((2, 2)).astype(np.float32),
        "r": rng.standard_normal((2, 8)).astype(np.float32),
    }
    executable = model.prepared("compiled")
    source = executable.plan(coerce_inputs(model.graph, feed)).source
    assert "out=buf" in source and "np.empty((2, 8)" in source
    want = model.run(feed, backend="reference")
    for _ in range(2):  # buffers are reused from one run and iteration to the next
        assert_same_outputs(model.run(feed), want, "compiled vs reference")


def test_weights_read_through_views_of_constants_are_taken_once_at_planning() -> None:
    # The RNN lowerings read W[0] of a [directions, 4H, H] weight and use it transposed
    # (Gemm transB): the plan takes the view once, transposes it once, and the recurrent Gemm
    # writes into a buffer.
    rng = np.random.default_rng(1)
    w = rng.standard_normal((1, 8, 2)).astype(np.float32)
    weights = ", ".join(repr(float(v)) for v in w.reshape(-1))
    graph = parse_graph(
        textwrap.dedent(
            """\
            graph @main(%xs: f32[3,2,8], %h0: f32[2,2]) {
              %w = Constant() {value = WEIGHTS} : f32[1,8,2]
              %zero = Constant() {value = dense<i64[]>[0]} : i64[]
              %r = Gather(%w, %zero) {axis = 0} : f32[8,2]
              %h = Loop(carried=[%h0], sliced=[%xs], invariants=[%r]) {body = graph @body(%i: i64[], %h: f32[2,2], %x: f32[2,8], %rb: f32[8,2]) {
                %t = Constant() {value = dense<bool[]>[true]} : bool[]
                %lo = Constant() {value = dense<i64[1]>[0]} : i64[1]
                %hi = Constant() {value = dense<i64[1]>[2]} : i64[1]
                %ax = Constant() {value = dense<i64[1]>[1]} : i64[1]
                %g = Gemm(%h, %rb, %x) {transB = 1} : f32[2,8]
                %gs = Slice(%g, %lo, %hi, %ax) : f32[2,2]
                %hn = Tanh(%gs) : f32[2,2]
                return %t, %hn
              }, sliced = [Sliced(axis=0, reverse=false)]} : f32[2,2]
              return %h
            }"""  # noqa: E501
        ).replace("WEIGHTS", f"dense<f32[1,8,2]>[{weights}]")
    )
    model = tl.Model(graph)
    feed = {
        "xs": rng.standard_normal((3, 2, 8)).astype(np.float32),
        "h0": rng.standard_normal((2, 2)).astype(np.float32),
    }
    source = model.prepared("compiled").plan(coerce_inputs(model.graph, feed)).source
    assert "g_weights_t" in source and "np.matmul(" in source and ", out=buf" in source
    assert "Gather" not in source  # taken at planning time, not per run
    want = model.run(feed, backend="reference")
    assert_same_outputs(model.run(feed), want, "compiled vs reference")
