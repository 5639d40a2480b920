"""Random canonical loop specifications, a plain-Python model of the Loop docstring, and
hand-built loop models shared by the loop-property, ONNX export and OpenVINO writer tests."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st

import tensorloop as tl
from tensorloop import Graph, Sliced, Stacked, TensorType, Value
from tensorloop.ir.emit import Emitter
from tensorloop.ir.loop import ITERATION_TYPE

F64, I64, BOOL = "float64", "int64", "bool"


# --------------------------------------------------------------------------------------------
# random loop specifications
# --------------------------------------------------------------------------------------------
# An expression is a list of (sign, term); a term is a leaf or ("mul", leaf, bounded_leaf).
# Leaves: ("c", j) carried, ("s", j) slice, ("v", j) invariant, ("k", x) constant.  Products
# always have a bounded factor (|x| <= 1), so values grow at most geometrically and never
# overflow (warnings are errors).

Leaf = tuple[str, Any]


@dataclass(frozen=True)
class LoopSpec:
    elem: tuple[int, ...]  # the shape of every carried / slice / invariant / stacked value
    carried_exprs: tuple[Any, ...]  # carried j's next value
    sliced: tuple[tuple[int, bool, int], ...]  # (axis on the rank+1 source, reverse, length)
    num_invariants: int
    stacked: tuple[tuple[Any, int, bool], ...]  # (expr or "iter", axis, reverse)
    trip: int | None
    trip_as_input: bool
    init_cond: bool | None
    cond_as_input: bool
    body_cond: tuple[Any, ...]  # ("true",), ("false",) or ("lt", k)
    max_iterations: int | None
    seed: int


@st.composite
def expressions(draw: st.DrawFn, nc: int, ns: int, nv: int) -> tuple[Any, ...]:
    bounded = [st.tuples(st.just("k"), st.sampled_from([-1.0, -0.5, 0.25, 0.5, 1.0]))]
    if ns:
        bounded.append(st.tuples(st.just("s"), st.integers(0, ns - 1)))
    if nv:
        bounded.append(st.tuples(st.just("v"), st.integers(0, nv - 1)))
    bounded_leaf = st.one_of(*bounded)
    leaf = (
        st.one_of(bounded_leaf, st.tuples(st.just("c"), st.integers(0, nc - 1)))
        if nc
        else bounded_leaf
    )
    term = st.one_of(leaf, st.tuples(st.just("mul"), leaf, bounded_leaf))
    n = draw(st.integers(1, 3))
    first = draw(term)
    rest = [(draw(st.sampled_from(["+", "-"])), draw(term)) for _ in range(n - 1)]
    return (("+", first), *rest)


@st.composite
def loop_specs(draw: st.DrawFn) -> LoopSpec:
    rank = draw(st.integers(0, 2))
    elem = tuple(draw(st.lists(st.integers(1, 3), min_size=rank, max_size=rank)))
    nc, ns, nv = draw(st.integers(0, 3)), draw(st.integers(0, 2)), draw(st.integers(0, 2))
    carried = tuple(draw(expressions(nc, ns, nv)) for _ in range(nc))
    sliced = tuple(
        (draw(st.integers(-(rank + 1), rank)), draw(st.booleans()), draw(st.integers(0, 5)))
        for _ in range(ns)
    )
    stacked = []
    for _ in range(draw(st.integers(0, 2))):
        if draw(st.booleans()):
            stacked.append(("iter", draw(st.integers(-1, 0)), draw(st.booleans())))
        else:
            value = draw(expressions(nc, ns, nv))
            stacked.append((value, draw(st.integers(-(rank + 1), rank)), draw(st.booleans())))
    trip = draw(st.one_of(st.none(), st.integers(-2, 6)))
    init_cond = draw(st.one_of(st.none(), st.booleans()))
    body_cond = draw(
        st.one_of(
            st.just(("true",)), st.just(("false",)), st.tuples(st.just("lt"), st.integers(-1, 7))
        )
    )
    unbounded = trip is None and ns == 0 and body_cond == ("true",)
    if unbounded:
        max_iterations: int | None = draw(st.integers(0, 6))
    else:
        max_iterations = draw(st.one_of(st.none(), st.integers(0, 8)))
    return LoopSpec(
        elem,
        carried,
        sliced,
        nv,
        tuple(stacked),
        trip,
        draw(st.booleans()),
        init_cond,
        draw(st.booleans()),
        body_cond,
        max_iterations,
        draw(st.integers(0, 2**16)),
    )


def source_shape(spec: LoopSpec, axis: int, length: int) -> tuple[int, ...]:
    a = axis % (len(spec.elem) + 1)
    return (*spec.elem[:a], length, *spec.elem[a:])


def make_inputs(spec: LoopSpec) -> dict[str, Any]:
    rng = np.random.default_rng(spec.seed)
    inputs: dict[str, Any] = {}
    for j in range(len(spec.carried_exprs)):
        inputs[f"c{j}"] = rng.uniform(-1, 1, spec.elem)
    for j, (axis, _, length) in enumerate(spec.sliced):
        inputs[f"src{j}"] = rng.uniform(-1, 1, source_shape(spec, axis, length))
    for j in range(spec.num_invariants):
        inputs[f"inv{j}"] = rng.uniform(-1, 1, spec.elem)
    if spec.trip is not None and spec.trip_as_input:
        inputs["n"] = np.int64(spec.trip)
    if spec.init_cond is not None and spec.cond_as_input:
        inputs["cond0"] = np.bool_(spec.init_cond)
    return inputs


# --------------------------------------------------------------------------------------------
# the independent model of the Loop docstring
# --------------------------------------------------------------------------------------------


class LimitReachedError(Exception):
    pass


def eval_expr(expr: Any, elem: tuple[int, ...], env: dict[str, list[np.ndarray]]) -> np.ndarray:
    def leaf(x: Leaf) -> np.ndarray:
        kind, arg = x
        return np.full(elem, arg, np.float64) if kind == "k" else env[kind][arg]

    def term(t: Any) -> np.ndarray:
        return leaf(t[1]) * leaf(t[2]) if t[0] == "mul" else leaf(t)

    acc = term(expr[0][1])
    for sign, t in expr[1:]:
        acc = acc + term(t) if sign == "+" else acc - term(t)
    return acc


def reference(spec: LoopSpec, inputs: dict[str, Any]) -> tuple[list[np.ndarray], int]:
    """The outputs per the docstring of Loop, and how many iterations ran."""
    limit = tl.DEFAULT_MAX_ITERATIONS if spec.max_iterations is None else spec.max_iterations
    carried = [inputs[f"c{j}"] for j in range(len(spec.carried_exprs))]
    sources = [inputs[f"src{j}"] for j in range(len(spec.sliced))]
    invariants = [inputs[f"inv{j}"] for j in range(spec.num_invariants)]
    rank = len(spec.elem)
    axes = [axis % (rank + 1) for axis, _, _ in spec.sliced]

    bounds = [spec.trip] if spec.trip is not None else []
    bounds += [src.shape[a] for src, a in zip(sources, axes, strict=True)]
    cond = True if spec.init_cond is None else bool(spec.init_cond)
    i, per_iteration = 0, [[] for _ in spec.stacked]  # type: tuple[int, list[list[Any]]]
    while all(i < b for b in bounds) and cond:
        slices = []
        for src, a, (_, rev, _) in zip(sources, axes, spec.sliced, strict=True):
            index = src.shape[a] - 1 - i if rev else i
            slices.append(src[(slice(None),) * a + (index,)])
        env = {"c": carried, "s": slices, "v": invariants}
        # body(i, *carried, *slices, *invariants) -> (cond, *carried_next, *per_iteration)
        kind = spec.body_cond[0]
        cond = i < spec.body_cond[1] if kind == "lt" else kind == "true"
        new_carried = [eval_expr(e, spec.elem, env) for e in spec.carried_exprs]
        ys = [
            np.int64(i) if value == "iter" else eval_expr(value, spec.elem, env)
            for value, _, _ in spec.stacked
        ]
        carried = new_carried
        for acc, y in zip(per_iteration, ys, strict=True):
            acc.append(y)
        i += 1
        if i > limit:
            raise LimitReachedError
    outputs = list(carried)
    for acc, (value, axis, rev) in zip(per_iteration, spec.stacked, strict=True):
        y_rank = 0 if value == "iter" else rank
        a = axis % (y_rank + 1)
        if acc:
            outputs.append(np.stack(acc[::-1] if rev else acc, axis=a))
        else:
            dims = [] if value == "iter" else list(spec.elem)
            dims.insert(a, 0)
            outputs.append(np.zeros(dims, np.int64 if value == "iter" else np.float64))
    return outputs, i


# --------------------------------------------------------------------------------------------
# the same loop as IR
# --------------------------------------------------------------------------------------------


def _const(g: Graph, value: Any, dtype: str) -> Value:
    return g.add_node("Constant", [], {"value": np.asarray(value, dtype=dtype)}).output


def build(spec: LoopSpec) -> Graph:
    et = TensorType(F64, spec.elem)
    g = Graph("main")
    carried_init = [g.add_input(f"c{j}", et) for j in range(len(spec.carried_exprs))]
    sources = [
        g.add_input(f"src{j}", TensorType(F64, source_shape(spec, axis, length)))
        for j, (axis, _, length) in enumerate(spec.sliced)
    ]
    invariants = [g.add_input(f"inv{j}", et) for j in range(spec.num_invariants)]
    trip: Value | None = None
    if spec.trip is not None:
        trip = (
            g.add_input("n", TensorType(I64, ()))
            if spec.trip_as_input
            else _const(g, spec.trip, I64)
        )
    cond: Value | None = None
    if spec.init_cond is not None:
        cond = (
            g.add_input("cond0", TensorType(BOOL, ()))
            if spec.cond_as_input
            else _const(g, spec.init_cond, BOOL)
        )

    b = Graph("body")
    it = b.add_input("it", TensorType(I64, ()))
    env = {
        "c": [b.add_input(f"bc{j}", et) for j in range(len(spec.carried_exprs))],
        "s": [b.add_input(f"bs{j}", et) for j in range(len(spec.sliced))],
        "v": [b.add_input(f"bv{j}", et) for j in range(spec.num_invariants)],
    }

    def node(op: str, *ins: Value) -> Value:
        return b.add_node(op, list(ins)).output

    def leaf(x: Leaf) -> Value:
        kind, arg = x
        return _const(b, np.full(spec.elem, arg), F64) if kind == "k" else env[kind][arg]

    def term(t: Any) -> Value:
        return node("Mul", leaf(t[1]), leaf(t[2])) if t[0] == "mul" else leaf(t)

    def expr(e: Any) -> Value:
        acc = term(e[0][1])
        for sign, t in e[1:]:
            acc = node("Add" if sign == "+" else "Sub", acc, term(t))
        return acc

    if spec.body_cond[0] == "lt":
        go = node("Less", it, _const(b, spec.body_cond[1], I64))
    else:
        go = _const(b, spec.body_cond[0] == "true", BOOL)
    results = [go, *(expr(e) for e in spec.carried_exprs)]
    results += [it if v == "iter" else expr(v) for v, _, _ in spec.stacked]
    b.set_outputs(results)

    node_ = g.add_node(
        "Loop",
        [trip, cond, *carried_init, *sources, *invariants],
        {
            "body": b,
            "num_carried": len(carried_init),
            "sliced": tuple(Sliced(axis, rev) for axis, rev, _ in spec.sliced),
            "stacked": tuple(Stacked(axis, rev) for _, axis, rev in spec.stacked),
        },
        name="random_loop",
    )
    g.set_outputs(node_.outputs)
    return g


def hand_built_loop(time: int | str) -> Graph:
    """A Loop over xs: f32[4, ``time``, 6] with a trip count (int32 input ``trip``), an initial
    condition (input ``go``), a data-dependent stop, a reversed slice on axis 1 and stacked
    outputs on two axes, one reversed: what the builder never emits at once."""
    g = Graph("hand")
    xs = g.add_input("xs", TensorType("float32", (4, time, 6)))
    trip = g.add_input("trip", TensorType("int32", ()))
    go = g.add_input("go", TensorType("bool", ()))
    body = Graph("body")
    i = body.add_input("i", ITERATION_TYPE)
    c = body.add_input("c", TensorType("float32", (4, 6)))
    x = body.add_input("x", TensorType("float32", (4, 6)))
    em = Emitter(body)
    nxt = em.op("Add", [c, em.op("Abs", [x])])
    keep_going = em.op(
        "Less", [em.op("ReduceSum", [nxt], {"keepdims": 0}), em.const(np.float32(40))]
    )
    scaled = em.op("Mul", [nxt, em.op("Cast", [i], {"to": tl.DType.float32})])
    body.set_outputs([keep_going, nxt, nxt, scaled])
    attrs = {"body": body, "num_carried": 1, "sliced": (Sliced(1, reverse=True),)}
    attrs["stacked"] = (Stacked(0, reverse=True), Stacked(-1))
    init = Emitter(g).const(np.zeros((4, 6), np.float32))
    names = ["final", "stacked0", "stacked2"]
    loop = g.add_node("Loop", [trip, go, init, xs], attrs, name="hand", output_names=names)
    g.set_outputs(loop.outputs)
    return g


def scan_on_axis(axis: int, reverse: bool, w: np.ndarray) -> tl.Model:
    """A scan over xs: f32[A, 5, 6] along ``axis`` (from the end if ``reverse``) that carries
    tanh(c / 2 + x * w) and stacks it and each slice's sum over its first axis."""
    xs = tl.placeholder("float32", ("A", 5, 6), name="xs")
    weights = tl.constant(w)

    def step(c: Any, x: Any) -> Any:
        new = tl.tanh(c * 0.5 + x * weights)
        return new, (new, tl.reduce_sum(x, 0, keepdims=True))

    init = tl.constant(np.zeros(w.shape, np.float32))
    final, (ys, sums) = tl.scan(step, init, xs, axis=axis, reverse=reverse)
    return tl.Model({"final": final, "ys": ys, "sums": sums})


def while_on_data() -> tl.Model:
    """A while loop that grows x: f32[3] (v -> 1.5 v + 0.25) and counts its trips (n) while
    sum(v) < limit, an f32 scalar input."""
    x = tl.placeholder("float32", (3,), name="x")
    limit = tl.placeholder("float32", (), name="limit")

    def body(state: Any) -> Any:
        v, n = state
        return v * 1.5 + 0.25, n + 1

    v, n = tl.while_loop(lambda s: tl.reduce_sum(s[0]) < limit, body, (x, tl.constant(np.int64(0))))
    return tl.Model({"v": v, "n": n})


def T(dtype: str, *shape: int | str) -> TensorType:
    """A tensor type, shape given as arguments (``T("float32", 2, "n")``)."""
    return TensorType(dtype, shape)


def add_loop(
    g: Graph, body: Graph, inputs: list[Value | None], carried: int, stacked: Any, name: str
) -> list[Value]:
    """A Loop node in ``g`` (no sliced inputs) over ``inputs`` (the two control inputs, the
    carried values, the invariants); its outputs."""
    attrs = {"body": body, "num_carried": carried, "sliced": (), "stacked": tuple(stacked)}
    return g.add_node("Loop", inputs, attrs, name=name).outputs
