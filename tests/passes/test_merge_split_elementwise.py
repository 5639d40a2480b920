"""merge_split_elementwise: golden before/after IR text, and identical results on random splits."""

from __future__ import annotations

import textwrap
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from loop_pass_laws import FLOATS, INTS, assert_pass_keeps_results, numbers

from tensorloop import TensorType
from tensorloop.ir.emit import Emitter
from tensorloop.ir.graph import Graph
from tensorloop.ir.parser import parse_graph
from tensorloop.ir.printer import print_graph
from tensorloop.ir.verify import verify
from tensorloop.passes import merge_split_elementwise
from tensorloop.passes.merge_split_elementwise import UNARY as ALL_UNARY
from tensorloop.tensor.dtypes import DType

GATES = textwrap.dedent(
    """\
    graph @main(%x: f32[2,8]) {
      %i, %o, %f, %c = Split(%x) {axis = 1, num_outputs = 4} : f32[2,2], f32[2,2], f32[2,2], f32[2,2]
      %si = Sigmoid(%i) : f32[2,2]
      %so = Sigmoid(%o) : f32[2,2]
      %sf = Sigmoid(%f) : f32[2,2]
      %tc = Tanh(%c) : f32[2,2]
      %a = Mul(%si, %tc) : f32[2,2]
      %b = Mul(%so, %sf) : f32[2,2]
      return %a, %b
    }"""  # noqa: E501
)


def test_merge_golden_lstm_gates() -> None:
    g = parse_graph(GATES)
    assert merge_split_elementwise(g).changed
    # Three neighbouring sigmoid gates: one Sigmoid over six columns, split after; the tanh
    # gate stands alone and keeps its own piece.
    assert print_graph(g) == textwrap.dedent(
        """\
        graph @main(%x: f32[2,8]) {
          %0 = Constant() {value = dense<i64[2]>[6, 2]} : i64[2]
          %1, %c = Split(%x, %0) {axis = 1} : f32[2,6], f32[2,2]
          %3 = Sigmoid(%1) : f32[2,6]
          %4 = Constant() {value = dense<i64[3]>[2, 2, 2]} : i64[3]
          %si, %so, %sf = Split(%3, %4) {axis = 1} : f32[2,2], f32[2,2], f32[2,2]
          %tc = Tanh(%c) : f32[2,2]
          %a = Mul(%si, %tc) : f32[2,2]
          %b = Mul(%so, %sf) : f32[2,2]
          return %a, %b
        }"""
    )
    verify(g)
    assert not merge_split_elementwise(g).changed  # a fixed point


def test_merge_leaves_pieces_read_twice_results_and_other_attributes() -> None:
    g = parse_graph(
        textwrap.dedent(
            """\
            graph @main(%x: f64[6]) {
              %a, %b, %c = Split(%x) {axis = 0, num_outputs = 3} : f64[2], f64[2], f64[2]
              %la = LeakyRelu(%a) {alpha = 0.1} : f64[2]
              %lb = LeakyRelu(%b) {alpha = 0.2} : f64[2]
              %ec = Exp(%c) : f64[2]
              %e2 = Neg(%c) : f64[2]
              return %la, %lb, %ec, %e2
            }"""
        )
    )
    before = print_graph(g)
    assert not merge_split_elementwise(g).changed
    assert print_graph(g) == before


def test_merge_reaches_into_loop_bodies() -> None:
    g = parse_graph(
        textwrap.dedent(
            """\
            graph @main(%xs: f32[3,4]) {
              %ys = Loop(sliced=[%xs]) {body = graph @body(%i: i64[], %x: f32[4]) {
                %t = Constant() {value = dense<bool[]>[true]} : bool[]
                %p, %q = Split(%x) {axis = 0, num_outputs = 2} : f32[2], f32[2]
                %sp = Tanh(%p) : f32[2]
                %sq = Tanh(%q) : f32[2]
                %y = Add(%sp, %sq) : f32[2]
                return %t, %y
              }, sliced = [Sliced(axis=0, reverse=false)], stacked = [Stacked(axis=0, reverse=false)]} : f32[3,2]
              return %ys
            }"""  # noqa: E501
        )
    )
    xs = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    after = assert_pass_keeps_results(merge_split_elementwise, g, {"xs": xs})
    body = after.nodes[-1].attrs["body"]
    assert [n.op for n in body.nodes].count("Tanh") == 1


UNARY = ["Sigmoid", "Tanh", "Relu", "Exp", "Neg", "Abs", ("LeakyRelu", 0.1), ("LeakyRelu", 0.3)]


@st.composite
def split_cases(draw: st.DrawFn) -> tuple[Graph, dict[str, Any]]:
    rank = draw(st.integers(1, 3))
    shape = [draw(st.integers(1, 3)) for _ in range(rank)]
    axis = draw(st.integers(-rank, rank - 1))
    sizes = draw(st.lists(st.integers(0, 3), min_size=1, max_size=5))
    shape[axis] = sum(sizes)
    g = Graph("main")
    x = g.add_input("x", TensorType("float64", shape))
    em = Emitter(g)
    cut = em.op("Constant", [], {"value": np.array(sizes, np.int64)})
    pieces = em.ops("Split", [x, cut], {"axis": axis})
    results = []
    for piece in pieces:
        choice = draw(st.sampled_from([*UNARY, None]))
        if choice is None:
            results.append(piece)  # a piece that is itself a result
            continue
        op, attrs = (choice[0], {"alpha": choice[1]}) if isinstance(choice, tuple) else (choice, {})
        y = em.op(op, [piece], attrs)
        if draw(st.booleans()):
            results.append(em.op("Add", [y, piece]))  # the piece read twice
        else:
            results.append(y)
    g.set_outputs(results)
    verify(g)
    seed = draw(st.integers(0, 2**16))
    data = np.random.default_rng(seed).uniform(-3, 3, shape)
    return g, {"x": data}


@settings(max_examples=80, deadline=None)
@given(split_cases())
def test_merge_keeps_results_of_random_splits(case: tuple[Graph, dict[str, Any]]) -> None:
    graph, inputs = case
    assert_pass_keeps_results(merge_split_elementwise, graph, inputs)


SLICES = textwrap.dedent(
    """\
    graph @main(%x: f32[2,6]) {
      %ax = Constant() {value = dense<i64[2]>[0, 1]} : i64[2]
      %lo2 = Constant() {value = dense<i64[2]>[0, 4]} : i64[2]
      %hi2 = Constant() {value = dense<i64[2]>[2, 6]} : i64[2]
      %c = Slice(%x, %lo2, %hi2, %ax) : f32[2,2]
      %sc = Tanh(%c) : f32[2,2]
      %lo1 = Constant() {value = dense<i64[1]>[2]} : i64[1]
      %hi1 = Constant() {value = dense<i64[1]>[4]} : i64[1]
      %one = Constant() {value = dense<i64[1]>[1]} : i64[1]
      %b = Slice(%x, %lo1, %hi1, %one) : f32[2,2]
      %sb = Tanh(%b) : f32[2,2]
      %m = Mul(%sb, %sc) : f32[2,2]
      return %m
    }"""
)


def test_merge_golden_neighbouring_slices_in_any_order() -> None:
    # Columns 4:6 (sliced on both axes, the first whole) then 2:4: one Tanh over 2:6.
    g = parse_graph(SLICES)
    x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(2, 6)
    after = assert_pass_keeps_results(merge_split_elementwise, g, {"x": x})
    assert print_graph(after) == textwrap.dedent(
        """\
        graph @main(%x: f32[2,6]) {
          %0 = Constant() {value = dense<i64[1]>[2]} : i64[1]
          %1 = Constant() {value = dense<i64[1]>[6]} : i64[1]
          %2 = Constant() {value = dense<i64[1]>[1]} : i64[1]
          %3 = Slice(%x, %0, %1, %2) : f32[2,4]
          %4 = Tanh(%3) : f32[2,4]
          %5 = Constant() {value = dense<i64[2]>[2, 2]} : i64[2]
          %sb, %sc = Split(%4, %5) {axis = 1} : f32[2,2], f32[2,2]
          %m = Mul(%sb, %sc) : f32[2,2]
          return %m
        }"""
    )


@st.composite
def slice_cases(draw: st.DrawFn) -> tuple[Graph, dict[str, Any]]:
    """Slices of one value cutting axis 1 into random pieces, made in a random order, each
    feeding a random unary op (or nothing, or read twice)."""
    sizes = draw(st.lists(st.integers(1, 3), min_size=1, max_size=5))
    order = draw(st.permutations(range(len(sizes))))
    g = Graph("main")
    x = g.add_input("x", TensorType("float64", [2, sum(sizes)]))
    em = Emitter(g)
    starts = np.cumsum([0, *sizes])
    results = []
    for k in order:
        bounds = [np.array([int(starts[k])]), np.array([int(starts[k + 1])]), np.array([1])]
        piece = em.op("Slice", [x, *(em.op("Constant", [], {"value": b}) for b in bounds)])
        choice = draw(st.sampled_from([*UNARY, None]))
        if choice is None:
            results.append(piece)
            continue
        op, attrs = (choice[0], {"alpha": choice[1]}) if isinstance(choice, tuple) else (choice, {})
        y = em.op(op, [piece], attrs)
        results.append(em.op("Add", [y, piece]) if draw(st.booleans()) else y)
    g.set_outputs(results)
    verify(g)
    data = np.random.default_rng(draw(st.integers(0, 2**16))).uniform(-3, 3, (2, sum(sizes)))
    return g, {"x": data}


@settings(max_examples=80, deadline=None)
@given(slice_cases())
def test_merge_keeps_results_of_random_slices(case: tuple[Graph, dict[str, Any]]) -> None:
    graph, inputs = case
    assert_pass_keeps_results(merge_split_elementwise, graph, inputs)


# -- exact in every element type, and no new error ------------------------------------------------
ATTRS: dict[str, dict[str, Any]] = {
    "LeakyRelu": {"alpha": 0.1},
    "Elu": {"alpha": 0.7},
    "Celu": {"alpha": 1.3},
    "HardSigmoid": {"alpha": 0.3, "beta": 0.4},
    "ThresholdedRelu": {"alpha": 0.5},
    "Gelu": {"approximate": "tanh"},
}
TYPES = {"Abs": INTS, "Neg": INTS, "Relu": INTS, "Sign": INTS, "Not": (DType.bool,)}


@st.composite
def typed_split_cases(draw: st.DrawFn) -> tuple[Graph, dict[str, Any]]:
    """Every op of ``UNARY`` on the pieces of a Split of any float type (or the other types the
    op takes), pieces long enough for NumPy's vector loops, contiguous or strided, with
    infinities, NaN and signed zeros."""
    op = draw(st.sampled_from(sorted(ALL_UNARY)))
    dt = draw(st.sampled_from(TYPES.get(op, ()) + FLOATS if op != "Not" else TYPES[op]))
    shape, axis = draw(
        st.sampled_from([((3, 40), 1), ((40,), 0), ((33, 4), 0), ((2, 20, 3), 1), ((64, 2), 1)])
    )
    n = shape[axis]
    cuts = draw(st.lists(st.integers(1, n - 1), min_size=1, max_size=3, unique=True))
    sizes = np.diff([0, *sorted(cuts), n]).astype(np.int64)
    g = Graph("main")
    x = g.add_input("x", TensorType(dt.numpy, list(shape)))
    em = Emitter(g)
    pieces = em.ops("Split", [x, em.const(sizes)], {"axis": axis})
    g.set_outputs([em.op(op, [p], ATTRS.get(op, {})) for p in pieces])
    verify(g)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if dt is DType.bool:
        data = rng.random(shape) < 0.5
    elif draw(st.booleans()):
        data = numbers(rng, dt, shape, "mixed")
    else:
        wide = rng.standard_normal(shape) * 10.0 ** rng.integers(-2, 2, shape)
        data = wide.astype(dt.numpy) if dt.is_float else rng.integers(-99, 99, shape, dt.numpy)
    return g, {"x": data}


@settings(max_examples=80, deadline=None)
@given(typed_split_cases())
def test_merge_keeps_every_unary_op_bit_for_bit_in_every_type(
    case: tuple[Graph, dict[str, Any]],
) -> None:
    graph, inputs = case
    after = assert_pass_keeps_results(merge_split_elementwise, graph, inputs)
    assert print_graph(after) != print_graph(graph)  # it merged


def test_merge_leaves_a_split_of_an_axis_known_only_at_run_time() -> None:
    # Sizes [2, 3] of an axis of unknown size: on 6 elements the reference reports those sizes;
    # merged into one piece the Split would report [5].
    text = textwrap.dedent(
        """\
        graph @main(%x: f32[?]) {
          %s = Constant() {value = dense<i64[2]>[2, 3]} : i64[2]
          %a, %b = Split(%x, %s) {axis = 0} : f32[2], f32[3]
          %ta = Tanh(%a) : f32[2]
          %tb = Tanh(%b) : f32[3]
          return %ta, %tb
        }"""
    )
    for n in (5, 6):
        g = parse_graph(text)
        assert_pass_keeps_results(merge_split_elementwise, g, {"x": np.ones(n, np.float32)})
    assert not merge_split_elementwise(parse_graph(text)).changed
    assert merge_split_elementwise(parse_graph(text.replace("f32[?]", "f32[5]"))).changed


def test_merge_leaves_a_piece_whose_result_a_matmul_reads() -> None:
    # Pieces of axis 1 of [64, 8]: merged, each piece's Sigmoid would be a view with gaps
    # between its rows, and a vector-matrix product over such a view takes another BLAS kernel
    # (it rounded differently in most of these draws). %sa stays on its own; the pieces only
    # returned merge.
    text = textwrap.dedent(
        """\
        graph @main(%g: f32[64,8], %x: f32[64]) {
          %a, %b, %c, %d = Split(%g) {axis = 1, num_outputs = 4} : f32[64,2], f32[64,2], f32[64,2], f32[64,2]
          %sa = Sigmoid(%a) : f32[64,2]
          %sb = Sigmoid(%b) : f32[64,2]
          %sc = Sigmoid(%c) : f32[64,2]
          %sd = Sigmoid(%d) : f32[64,2]
          %y = MatMul(%x, %sa) : f32[2]
          return %y, %sb, %sc, %sd
        }"""  # noqa: E501
    )
    rng = np.random.default_rng(0)
    for _ in range(5):
        feed = {
            "g": rng.standard_normal((64, 8)).astype(np.float32),
            "x": rng.standard_normal(64).astype(np.float32),
        }
        after = assert_pass_keeps_results(merge_split_elementwise, parse_graph(text), feed)
    assert print_graph(after).count("Sigmoid(") == 2
    assert "%sa = Sigmoid(%a)" in print_graph(after)
