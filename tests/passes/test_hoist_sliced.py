"""hoist_sliced_work: golden before/after IR text, and results kept on random scans."""

from __future__ import annotations

import textwrap
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from loop_pass_laws import (
    assert_bit_identical,
    assert_pass_keeps_results,
    typed_loop_cases,
)

import tensorloop as tl
from loop_models import F64, I64
from tensorloop.ir.graph import Graph
from tensorloop.ir.parser import parse_graph
from tensorloop.ir.printer import print_graph
from tensorloop.ir.verify import verify
from tensorloop.passes import hoist_sliced_work
from tensorloop.tensor.dtypes import DType, string_array

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
    # The input projection becomes one MatMul over the sequence, sliced into the body: the rows
    # copied out C-contiguous (the Gather), each multiplied as the loop does (a stack of 1-row
    # matrices); the recurrent MatMul reads the carried %h and stays.
    assert print_graph(g) == textwrap.dedent(
        """\
        graph @main(%xs: f32[5,3], %h0: f32[4], %w: f32[3,4], %u: f32[4,4]) {
          %0 = Constant() {value = dense<i64[5]>[0, 1, 2, 3, 4]} : i64[5]
          %xw_rows = Gather(%xs, %0) {axis = 0} : f32[5,3]
          %1 = Constant() {value = dense<i64[1]>[1]} : i64[1]
          %xw_stack = Unsqueeze(%xw_rows, %1) : f32[5,1,3]
          %xw_products = MatMul(%xw_stack, %w) : f32[5,1,4]
          %xw = Squeeze(%xw_products, %1) : f32[5,4]
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
        # Bit for bit, floats included: a batched MatMul makes the loop's products, row by row.
        assert_bit_identical(g, w, f"output #{k}")
    again = hoist_sliced_work(result.graph)
    assert not again.changed and print_graph(again.graph) == text


def test_hoist_sliced_batches_the_scan_projection() -> None:
    xs = tl.placeholder(F64, (6, 3), name="xs")
    w = tl.placeholder(F64, (3, 3), name="w")
    c, ys = tl.scan(lambda h, x: (tl.tanh(tl.matmul(x, w) + h), h), tl.constant(np.zeros(3)), xs)
    g = tl.Model({"c": c, "ys": ys}).graph
    assert hoist_sliced_work(g).changed
    before_loop = print_graph(g).split("Loop(")[0]
    assert "Gather(%xs" in before_loop and ": f64[6,1,3]" in before_loop


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
          %0 = Constant() {value = dense<i64[6]>[0, 1, 2, 3, 4, 5]} : i64[6]
          %xw_rows = Gather(%xs, %0) {axis = 0} : f32[6,3]
          %1 = Constant() {value = dense<i64[1]>[1]} : i64[1]
          %xw_stack = Unsqueeze(%xw_rows, %1) : f32[6,1,3]
          %xw_products = MatMul(%xw_stack, %w) : f32[6,1,4]
          %xw = Squeeze(%xw_products, %1) : f32[6,4]
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
    assert_bit_identical(after.run(inputs)["h"], before.run(inputs)["h"], "h")


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


@SETTINGS
@given(typed_loop_cases())
def test_hoist_sliced_keeps_results_of_typed_loops(
    case: tuple[Graph, dict[str, Any], int | None],
) -> None:
    # No MatMul here: elementwise work and Casts are batched bit for bit, in every element type,
    # over rows a loop stopped by data never reaches, and string Casts are never batched.
    assert_pass_keeps_results(hoist_sliced_work, *case)


# -- issue #21: an op that may fail is never batched ---------------------------------------------
STRINGS = textwrap.dedent(
    """\
    graph @main(%xs: str[3,1], %n: i64[]) {
      %ys = Loop(sliced=[%xs], invariants=[%n]) {body = graph @body(%i: i64[], %x: str[1], %nb: i64[]) {
        %one = Constant() {value = dense<i64[]>[1]} : i64[]
        %j = Add(%i, %one) : i64[]
        %t = Less(%j, %nb) : bool[]
        %y = Cast(%x) {to = i64} : i64[1]
        return %t, %y
      }, sliced = [Sliced(axis=0, reverse=false)], stacked = [Stacked(axis=0, reverse=false)]} : i64[?,1]
      return %ys
    }"""  # noqa: E501
)


def test_hoist_sliced_leaves_a_string_cast_in_a_loop_that_stops_early() -> None:
    # The loop stops after two rows and never parses "abc"; parsing every row up front would.
    feed = {"xs": string_array(["1", "20", "abc"], (3, 1)), "n": np.int64(2)}
    g = parse_graph(STRINGS)
    assert not hoist_sliced_work(g).changed
    model = tl.Model(parse_graph(STRINGS))
    want = model.run(feed, backend="reference")["ys"]
    assert_bit_identical(want, np.array([[1], [20]]), "reference")
    assert_bit_identical(model.run(feed)["ys"], want, "default backend")
    # With every row visited the parse fails, on both backends alike, with the same error.
    feed["n"] = np.int64(5)
    for backend in ("reference", "compiled"):
        with pytest.raises(tl.ExecutionError, match="Cast: cannot read 'abc' as a number"):
            model.run(feed, backend=backend)


def test_hoist_sliced_leaves_string_casts_even_where_every_row_is_visited() -> None:
    # A scan visits every row, but the iteration limit may stop it first: parsing up front
    # would turn the reference's LoopLimitError into the parse error.
    scan = STRINGS.replace(
        "%t = Less(%j, %nb) : bool[]", "%t = Constant() {value = dense<bool[]>[true]} : bool[]"
    ).replace("i64[?,1]", "i64[3,1]")
    g = parse_graph(scan)
    assert not hoist_sliced_work(g).changed
    model = tl.Model(parse_graph(scan), max_iterations=1)
    feed = {"xs": string_array(["1", "20", "abc"], (3, 1)), "n": np.int64(2)}
    for backend in ("reference", "compiled"):
        with pytest.raises(tl.LoopLimitError):
            model.run(feed, backend=backend)


def test_hoist_sliced_batches_casts_that_cannot_fail() -> None:
    # Numbers to strings, ints to floats and floats to floats are total: they are batched.
    for src, to in (("i64", "str"), ("i32", "f64"), ("f64", "f16"), ("str", "str")):
        text = textwrap.dedent(
            f"""\
            graph @main(%xs: {src}[3,2]) {{
              %ys = Loop(sliced=[%xs]) {{body = graph @body(%i: i64[], %x: {src}[2]) {{
                %t = Constant() {{value = dense<bool[]>[true]}} : bool[]
                %y = Cast(%x) {{to = {to}}} : {to}[2]
                return %t, %y
              }}, sliced = [Sliced(axis=0, reverse=false)], stacked = [Stacked(axis=0, reverse=false)]}} : {to}[3,2]
              return %ys
            }}"""  # noqa: E501
        )
        assert hoist_sliced_work(parse_graph(text)).changed, (src, to)


# -- a batched MatMul makes the loop's products, bit for bit ------------------------------------
MATMUL_DTYPES = (DType.float16, DType.bfloat16, DType.float32, DType.float64, DType.int32)


def _laid_out(a: np.ndarray[Any, Any], layout: str) -> np.ndarray[Any, Any]:
    """``a``'s values in another memory layout, as a caller may pass them: NumPy's MatMul takes
    other BLAS kernels (or its own loop) for strided, reversed or broadcast rows."""
    if layout == "fortran":
        return np.asfortranarray(a)
    if layout == "reversed":  # negative strides on the last axis
        return np.ascontiguousarray(a[..., ::-1])[..., ::-1]
    if layout == "strided":  # every other element of a larger array
        big = np.zeros((*a.shape[:-1], 2 * a.shape[-1]), a.dtype)
        big[..., ::2] = a
        return big[..., ::2]
    if layout == "broadcast" and a.shape and a.shape[-1]:  # zero strides on the last axis
        return np.broadcast_to(a[..., :1], a.shape)
    return a


def matmul_loop_text(dt: DType, shape: tuple[int, ...], axis: int, n: int, reverse: bool) -> str:
    """A loop over ``xs`` (``shape``, sliced on ``axis``) stacking ``MatMul(x, w)`` per row."""
    t = dt.short
    row = shape[:axis] + shape[axis + 1 :]
    k, out = shape[-1], (*row[:-1], n)
    stacked = (shape[axis], *out)
    direction = str(reverse).lower()
    return textwrap.dedent(
        f"""\
        graph @main(%xs: {_t(t, shape)}, %w: {_t(t, (k, n))}) {{
          %ys = Loop(sliced=[%xs], invariants=[%w]) {{body = graph @body(%i: i64[], %x: {_t(t, row)}, %wb: {_t(t, (k, n))}) {{
            %t = Constant() {{value = dense<bool[]>[true]}} : bool[]
            %y = MatMul(%x, %wb) : {_t(t, out)}
            return %t, %y
          }}, sliced = [Sliced(axis={axis}, reverse={direction})], stacked = [Stacked(axis=0, reverse={direction})]}} : {_t(t, stacked)}
          return %ys
        }}"""  # noqa: E501
    )


def _t(short: str, dims: tuple[int, ...]) -> str:
    return f"{short}[{','.join(map(str, dims))}]"


@st.composite
def matmul_cases(draw: st.DrawFn) -> tuple[Graph, dict[str, Any]]:
    """A loop of ``MatMul(row, w)`` the pass batches: a vector row of ``[t, k]`` (axis 0), or a
    row with batch dims, of ``[t, b, k]`` (axis 0) or ``[b, t, m, k]`` (axis 1); any element
    type, sizes from 1 to over a thousand, inputs laid out in memory in any way. Floats are of
    order one and positive, with zeros of both signs, infinities and NaN among them: sums that
    round by their order (what this checks) but do not cancel or overflow by it, so the jax
    backend, which the suite's law runs on some tests within its tolerance, agrees too."""
    # Mostly float32 and float64 and several rows, where any other order of summing shows; the
    # rest covers the other types and no rows at all.
    dt = draw(st.sampled_from(MATMUL_DTYPES[2:] * 3 + MATMUL_DTYPES))
    t = draw(st.sampled_from([3, 4, 2, 1, 0]))
    k = draw(st.sampled_from([17, 64, 257, 1031, 3, 8, 2, 1]))
    n = draw(st.sampled_from([33, 256, 1029, 5, 16, 2, 1]))
    b, m = draw(st.integers(1, 4)), draw(st.integers(1, 3))
    shape, axis = draw(
        st.sampled_from([((t, k), 0), ((t, b, k), 0), ((b, t, m, k), 1), ((t, 1, k), 0)])
    )
    graph = parse_graph(matmul_loop_text(dt, shape, axis, n, draw(st.booleans())))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    layouts = st.sampled_from(["fortran", "reversed", "broadcast", "strided", "plain"])
    special = draw(st.sampled_from([0.0, 0.0, 0.05]))  # the share of special values

    def data(dims: tuple[int, ...]) -> np.ndarray[Any, Any]:
        if not dt.is_float:
            return rng.integers(-99, 99, dims).astype(dt.numpy)
        values = rng.uniform(0.5, 1.5, dims)
        specials = rng.choice(np.array([0.0, -0.0, np.inf, -np.inf, np.nan]), dims)
        return np.where(rng.random(dims) < special, specials, values).astype(dt.numpy)

    inputs = {
        "xs": _laid_out(data(shape), draw(layouts)),
        "w": _laid_out(data((k, n)), draw(layouts)),
    }
    return graph, inputs


@SETTINGS
@given(matmul_cases())
def test_a_batched_matmul_is_the_loops_products_bit_for_bit(
    case: tuple[Graph, dict[str, Any]],
) -> None:
    graph, inputs = case
    after = assert_pass_keeps_results(hoist_sliced_work, graph, inputs)
    assert "MatMul" not in print_graph(after).split("Loop(")[1]  # it did batch


@pytest.mark.parametrize(
    ("dt", "t", "k", "n"),
    [
        (DType.float32, 64, 64, 256),  # the ONNX RNN example's size: one GEMM was 1 ULP off
        (DType.float64, 5, 3, 4),
        (DType.float32, 3, 1031, 1029),
        (DType.float64, 2, 4099, 7),
        (DType.float32, 4, 7, 4099),
    ],
)
def test_a_batched_matmul_is_exact_where_one_gemm_is_not(dt: DType, t: int, k: int, n: int) -> None:
    # Positive values of order one, as in matmul_cases.
    rng = np.random.default_rng(k * n)
    x = rng.uniform(0.5, 1.5, (t, k)).astype(dt.numpy)
    w = rng.uniform(0.5, 1.5, (k, n)).astype(dt.numpy)
    graph = parse_graph(matmul_loop_text(dt, (t, k), 0, n, False))
    assert_pass_keeps_results(hoist_sliced_work, graph, {"xs": x, "w": w})
