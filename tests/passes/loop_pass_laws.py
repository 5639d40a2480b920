"""Laws every loop pass keeps, checked on random canonical loops, on builder loops that do
invariant work, and on typed loops (every element type a pass accepts, values that cancel,
overflow, NaN, infinities and signed zeros, loops stopped early by data, strings that may fail to
parse): results bit for bit unchanged (or the same error), ``changed`` exactly when the printed
graph changed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np
from hypothesis import strategies as st

import tensorloop as tl
from loop_models import F64, I64
from tensorloop.errors import TensorloopError
from tensorloop.ir.graph import Graph
from tensorloop.ir.parser import parse_graph
from tensorloop.ir.printer import print_graph
from tensorloop.ir.verify import verify
from tensorloop.passes import Pass
from tensorloop.tensor.dtypes import DType, string_array

Outcome = list[Any] | tuple[str, str]
"""A run's outputs in order, or the (type name, message) of the error it raised."""


def run_reference(
    graph: Graph, inputs: dict[str, Any], max_iterations: int | None = None
) -> Outcome:
    """``graph`` run on the reference interpreter (the conftest law reruns it on the other
    backends), as its outputs or its error."""
    kw = {} if max_iterations is None else {"max_iterations": max_iterations}
    model = tl.Model(graph, backend="reference", **kw)  # the pass alone, not the pipeline
    try:
        res = model.run(inputs)
    except TensorloopError as exc:
        return (type(exc).__name__, str(exc))
    return [res[name] for name in model.output_names]


def assert_bit_identical(got: Any, want: Any, where: str) -> None:
    """``got`` is ``want`` bit for bit: the same type, dtype and shape, equal elements (NaN
    equal to NaN) and, for float zeros, the same sign."""
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), where
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            assert_bit_identical(g, w, f"{where}[{k}]")
        return
    if want is None:
        assert got is None, where
        return
    g, w = np.asarray(got), np.asarray(want)
    assert g.dtype == w.dtype, f"{where}: dtype {g.dtype}, want {w.dtype}"
    assert g.shape == w.shape, f"{where}: shape {g.shape}, want {w.shape}"
    if w.dtype.kind in "fV":  # NumPy's floats and ml_dtypes' (bfloat16): exact in float64
        gf, wf = g.astype(np.float64), w.astype(np.float64)
        assert np.array_equal(gf, wf, equal_nan=True), f"{where}: {gf} != {wf}"
        zeros = wf == 0
        assert np.array_equal(np.signbit(gf[zeros]), np.signbit(wf[zeros])), (
            f"{where}: signs of zeros differ: {gf} vs {wf}"
        )
    else:
        assert np.array_equal(g, w), f"{where}: {g} != {w}"


def assert_same_outcome(got: Outcome, want: Outcome) -> None:
    """The same outputs bit for bit, or the same error (type and message)."""
    if isinstance(want, tuple) or isinstance(got, tuple):
        assert got == want
        return
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        assert_bit_identical(g, w, f"output #{k}")


def assert_pass_keeps_results(
    pass_: Pass, graph: Graph, inputs: dict[str, Any], max_iterations: int | None = None
) -> Graph:
    """Run ``pass_`` on a clone of ``graph``; the clone, returned, must give the same results bit
    for bit (or the same error) on the reference interpreter, and print differently exactly
    when the pass says it changed."""
    want = run_reference(graph, inputs, max_iterations)
    after = graph.clone()
    before_text = print_graph(after)
    result = pass_(after)
    verify(result.graph)
    assert result.changed == (print_graph(result.graph) != before_text)
    got = run_reference(result.graph, inputs, max_iterations)
    assert_same_outcome(got, want)
    text = print_graph(result.graph)
    again = pass_(result.graph)
    assert again.changed == (print_graph(again.graph) != text)
    return result.graph


@st.composite
def builder_cases(draw: st.DrawFn) -> tuple[Graph, dict[str, Any]]:
    """A scan, while or fori loop (or a scan holding a fori loop) whose body does work that
    reads only invariants, some of its results left unused; with inputs to run it."""
    tl.reset()
    n, seed = draw(st.integers(0, 3)), draw(st.integers(0, 2**16))
    xs = tl.placeholder(F64, (n, 3), name="xs")
    w = tl.placeholder(F64, (3, 3), name="w")
    b = tl.placeholder(F64, (3,), name="b")
    rng = np.random.default_rng(seed)
    inputs: dict[str, Any] = {
        "xs": rng.uniform(-1, 1, (n, 3)),
        "w": rng.uniform(-1, 1, (3, 3)),
        "b": rng.uniform(-1, 1, 3),
    }

    def cell(h: Any, x: Any) -> Any:
        return tl.tanh(tl.matmul(x, w * 0.5) + h * tl.tanh(b) + b * 0.5)

    zeros = tl.constant(np.zeros(3))
    kind = draw(st.sampled_from(["scan", "while", "fori", "nested"]))
    outs: dict[str, Any]
    if kind == "scan":
        c, (ys, zs) = tl.scan(lambda h, x: (cell(h, x), (h * 2.0 + b * b, tl.tanh(w))), zeros, xs)
        outs = {"c": c, "ys": ys, "zs": zs}
    elif kind == "while":
        limit = tl.placeholder(I64, (), name="limit")
        inputs["limit"] = np.int64(draw(st.integers(-1, 3)))
        h, k, v = tl.while_loop(
            lambda s: s[1] < limit,
            lambda s: (cell(s[0], b), s[1] + 1, s[2] + tl.abs(w * 0.25)),
            (zeros, tl.constant(np.int64(0)), tl.constant(np.zeros((3, 3)))),
        )
        outs = {"h": h, "k": k, "v": v}
    elif kind == "fori":
        hi_: Any = draw(st.integers(-1, 3))
        if draw(st.booleans()):
            inputs["hi"] = np.int64(hi_)
            hi_ = tl.placeholder(I64, (), name="hi")
        h, acc = tl.fori_loop(
            0, hi_, lambda i, s: (cell(s[0], b * tl.cast(i, F64)), s[1] * 0.5 + w * 2.0), (zeros, w)
        )
        outs = {"h": h, "acc": acc}
    else:

        def step(h: Any, x: Any) -> Any:
            inner = tl.fori_loop(0, 2, lambda i, g: cell(g, x) + tl.tanh(b), h)
            return inner, inner * tl.reduce_sum(tl.tanh(w), 0)

        c, ys = tl.scan(step, zeros, xs)
        outs = {"c": c, "ys": ys}
    keep = draw(st.lists(st.sampled_from(sorted(outs)), min_size=1, unique=True))
    graph = tl.Model({k: outs[k] for k in keep}).graph
    return graph, {k: v for k, v in inputs.items() if k in {p.name for p in graph.inputs}}


# -- typed loops ------------------------------------------------------------------------------
FLOATS = (DType.float16, DType.bfloat16, DType.float32, DType.float64)
INTS = (DType.int8, DType.int16, DType.int32, DType.int64)
UINTS = (DType.uint8, DType.uint16, DType.uint32, DType.uint64)
NUMBERS = FLOATS + INTS + UINTS
"""Every element type the loop passes accept (``ops.reduce.PREFIX_SUM_DTYPES``)."""

PATTERNS = ("mixed", "cancel", "overflow")
"""How values run along a sequence: any mix of ordinary and special values (0, -0, ±inf,
NaN, the extremes); a huge value, small ones the huge one swallows, then minus the huge one
(float sums that cancel, where rounding in another type or order shows); values near the top
of the type (sums that overflow to inf, or wrap)."""


def numbers(
    rng: np.random.Generator, dt: DType, shape: tuple[int, ...], pattern: str, axis: int = 0
) -> np.ndarray[Any, Any]:
    """An array of ``dt`` and ``shape``, its values laid along ``axis`` by ``pattern``."""
    n = shape[axis] if shape else 1
    if dt.is_float:
        info = ml_dtypes.finfo(dt.numpy)
        top, big = float(info.max), 2.0 ** (int(info.nmant) + 2)
        special = np.array(
            [0.0, -0.0, np.inf, -np.inf, np.nan, top, -top, top / 2, 1.0, -1.0, big, -big]
        )
        plain = rng.standard_normal(shape) * 10.0 ** rng.integers(-2, 3, shape)
        wide = np.where(rng.random(shape) < 0.3, rng.choice(special, shape), plain)
        if pattern == "cancel" and n >= 2:
            line = np.concatenate([[big], np.ones(n - 2), [-big]])
            wide = np.moveaxis(np.broadcast_to(line, (*np.delete(shape, axis), n)), -1, axis)
        elif pattern == "overflow":
            wide = rng.choice([top * 0.75, -top * 0.75, top, top / 2], shape)
        with np.errstate(over="ignore"):
            return np.asarray(wide).astype(dt.numpy)
    info_i = np.iinfo(dt.numpy)
    if pattern == "overflow":
        return rng.choice(np.array([info_i.max, info_i.max // 2 + 1, info_i.min], dt.numpy), shape)
    special_i = np.array([info_i.min, info_i.max, 0, 1, info_i.max // 2], dt.numpy)
    plain_i = rng.integers(info_i.min, info_i.max, shape, dtype=dt.numpy, endpoint=True)
    return np.where(rng.random(shape) < 0.3, rng.choice(special_i, shape), plain_i)


@dataclass(frozen=True)
class TypedLoop:
    """A loop over ``xs`` (``dtype``, ``n`` rows of ``elem``) with a running sum and the
    ``parts`` of work each pass targets; see ``typed_loop_text``."""

    dtype: DType
    n: int
    elem: tuple[int, ...]
    control: str  # "scan", "trip", "trip_input" or "while"
    trip: int  # the trip count of "trip" and "trip_input"
    initial: bool | None  # the initial condition of "while", given as an input
    reverse: bool
    acc_first: bool  # Add(acc, x) or Add(x, acc)
    parts: tuple[str, ...]  # from "after", "before", "work", "cast", "strings", "invariant"


def _tensor(dt: str, dims: tuple[int | str, ...]) -> str:
    return f"{dt}[{','.join(map(str, dims))}]"


def typed_loop_text(spec: TypedLoop) -> str:
    """The graph of ``spec`` in text IR. The body adds each row of ``xs`` into ``acc`` (the
    running sum ``loop_prefix_sums`` takes), and by ``parts``: stacks acc after and before the
    add; computes ``x * w - (w + w)`` (row work ``hoist_sliced_work`` may batch, invariant work
    ``hoist_loop_invariants`` may move); casts the row to f32 (batched); parses a row of the
    strings ``ss`` and the invariant strings ``sw`` as numbers (may fail: never batched or
    moved). Each value computed is read, so no pass may drop it. "while" loops continue while
    the row of the bool source ``go`` says so (a condition read from data)."""
    t, e = spec.dtype.short, spec.elem
    elem, rows = _tensor(t, e), _tensor(t, (spec.n, *e))
    stacked_dims = ("?", *e) if spec.control in ("while", "trip_input") else None
    count = spec.n if spec.control in ("scan", "while") else min(spec.n, spec.trip)
    dims = stacked_dims or (count, *e)
    params = [f"%acc0: {elem}", f"%xs: {rows}", f"%w: {elem}"]
    sliced, body_params, invariants, inv_params = ["%xs"], [f"%x: {elem}"], ["%w"], []
    inv_params.append(f"%wb: {elem}")
    strings = "strings" in spec.parts
    if strings:
        params.append(f"%ss: str[{spec.n},2]")
        sliced.append("%ss")
        body_params.append("%s: str[2]")
    if "invariant" in spec.parts:
        params.append("%sw: str[2]")
        invariants.append("%sw")
        inv_params.append("%swb: str[2]")
    head, roles = "", []
    if spec.control == "trip":
        head = f"  %m = Constant() {{value = dense<i64[]>[{spec.trip}]}} : i64[]\n"
        roles.append("max_trip_count=%m")
    elif spec.control == "trip_input":
        params.append("%m: i64[]")
        roles.append("max_trip_count=%m")
    elif spec.control == "while":
        params.append(f"%go: bool[{spec.n}]")
        sliced.append("%go")
        body_params.append("%g: bool[]")
        if spec.initial is not None:
            params.append("%c0: bool[]")
            roles.append("initial_condition=%c0")
    roles += ["carried=[%acc0]", f"sliced=[{', '.join(sliced)}]"]
    roles.append(f"invariants=[{', '.join(invariants)}]")
    cond = (
        "    %t = Identity(%g) : bool[]\n"
        if spec.control == "while"
        else "    %t = Constant() {value = dense<bool[]>[true]} : bool[]\n"
    )
    add = "Add(%a, %x)" if spec.acc_first else "Add(%x, %a)"
    lines = [cond, f"    %an = {add} : {elem}\n"]
    results: list[tuple[str, str]] = []  # (body result, outer type)
    if "after" in spec.parts:
        results.append(("%an", _tensor(t, dims)))
    if "before" in spec.parts:
        results.append(("%a", _tensor(t, dims)))
    if "work" in spec.parts:
        lines += [
            f"    %xw = Mul(%x, %wb) : {elem}\n",
            f"    %ww = Add(%wb, %wb) : {elem}\n",
            f"    %y = Sub(%xw, %ww) : {elem}\n",
        ]
        results.append(("%y", _tensor(t, dims)))
    if "cast" in spec.parts:
        lines.append(f"    %xd = Cast(%x) {{to = f32}} : {_tensor('f32', e)}\n")
        results.append(("%xd", _tensor("f32", dims)))
    text_dims = (dims[0], 2)
    if strings:
        lines.append(f"    %sc = Cast(%s) {{to = {t}}} : {t}[2]\n")
        results.append(("%sc", _tensor(t, text_dims)))
    if "invariant" in spec.parts:
        lines.append(f"    %swc = Cast(%swb) {{to = {t}}} : {t}[2]\n")
        results.append(("%swc", _tensor(t, text_dims)))
    direction = str(spec.reverse).lower()
    slices = ", ".join([f"Sliced(axis=0, reverse={direction})"] * len(sliced))
    stacks = ", ".join([f"Stacked(axis=0, reverse={direction})"] * len(results))
    outs = ["%acc"] + [f"%out{k}" for k in range(len(results))]
    types = [elem] + [ty for _, ty in results]
    body_sig = ", ".join(["%i: i64[]", f"%a: {elem}", *body_params, *inv_params])
    returned = ", ".join(["%t", "%an", *(r for r, _ in results)])
    return (
        f"graph @main({', '.join(params)}) {{\n{head}"
        f"  {', '.join(outs)} = Loop({', '.join(roles)}) {{body = graph @body({body_sig}) {{\n"
        + "".join(lines)
        + f"    return {returned}\n"
        f"  }}, sliced = [{slices}], stacked = [{stacks}]}} : {', '.join(types)}\n"
        f"  return {', '.join(outs)}\n}}"
    )


def _strings(rng: np.random.Generator, shape: tuple[int, ...], bad: int | None) -> Any:
    """Numbers every element type reads (0 to 9) as text; row ``bad`` reads as no number."""
    items = rng.integers(0, 10, shape).astype(str).astype(object)
    if bad is not None:
        items[bad] = "abc"
    return string_array(list(items.reshape(-1)), shape)


@st.composite
def typed_loop_cases(
    draw: st.DrawFn, dtypes: tuple[DType, ...] = NUMBERS
) -> tuple[Graph, dict[str, Any], int | None]:
    """A typed loop (``typed_loop_text``) with inputs and an iteration limit (or None)."""
    dt = draw(st.sampled_from(dtypes))
    control = draw(st.sampled_from(["scan", "trip", "trip_input", "while"]))
    n = draw(st.integers(0, 5))
    parts = draw(
        st.lists(
            st.sampled_from(["after", "before", "work", "cast", "strings", "invariant"]),
            unique=True,
        )
    )
    spec = TypedLoop(
        dt,
        n,
        draw(st.sampled_from([(), (2,)])),
        control,
        draw(st.sampled_from([n, n + 1, max(n - 1, 0), 0])),
        draw(st.one_of(st.none(), st.booleans())) if control == "while" else None,
        draw(st.booleans()),
        draw(st.booleans()),
        tuple(parts),
    )
    graph = parse_graph(typed_loop_text(spec))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    pattern = draw(st.sampled_from(PATTERNS))
    inputs: dict[str, Any] = {
        "acc0": numbers(rng, dt, spec.elem, "mixed"),
        "xs": numbers(rng, dt, (n, *spec.elem), pattern),
        "w": numbers(rng, dt, spec.elem, draw(st.sampled_from(PATTERNS))),
    }
    if pattern == "cancel" and draw(st.booleans()):
        inputs["acc0"] = np.zeros(spec.elem, dt.numpy)  # the sum starts at the huge value
    if "strings" in parts:
        bad = draw(st.one_of(st.none(), st.integers(0, n - 1))) if n else None
        inputs["ss"] = _strings(rng, (n, 2), bad)
    if "invariant" in parts:
        inputs["sw"] = _strings(rng, (2,), 1 if draw(st.booleans()) else None)
    if control == "trip_input":
        inputs["m"] = np.int64(spec.trip)
    if control == "while":
        inputs["go"] = rng.random(n) < 0.7
        if spec.initial is not None:
            inputs["c0"] = np.bool_(spec.initial)
    limit = draw(st.one_of(st.none(), st.integers(0, n + 1)))
    return graph, inputs, limit
