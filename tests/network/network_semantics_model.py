"""A plain-Python model of the spec's formal semantics of TensorRT-style loop networks (tensors
in a loop are lazy sequences), and random networks to run it on.

The model is written from the definitions by walking the builder's layer objects; it uses none
of tensorloop's analysis or lowering. Documented choices it follows: rows past the iterations
run are zeros; REVERSE is the padded CONCATENATE result reversed on its axis; a length below the
trip count, and an iterator read past its tensor's end (by the limit's X_n, or by any of the n
iterations run), are errors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import strategies as st

from tensorloop.network import (
    ActivationType,
    ElementWiseOperation,
    IActivationLayer,
    IConstantLayer,
    IElementWiseLayer,
    IIteratorLayer,
    ILoop,
    ILoopOutputLayer,
    IRecurrenceLayer,
    IReduceLayer,
    ITensor,
    IUnaryLayer,
    LoopOutput,
    Network,
    ReduceOperation,
    TripLimit,
    UnaryOperation,
)

Array = np.ndarray[Any, Any]


# --------------------------------------------------------------------------------------------
# the model: value(t, ctx) is element ctx[L] of t's sequence for every loop L in ctx
# --------------------------------------------------------------------------------------------
class InvalidRunError(Exception):
    """The spec makes this run an error."""


EW = {
    ElementWiseOperation.SUM: np.add,
    ElementWiseOperation.PROD: np.multiply,
    ElementWiseOperation.SUB: np.subtract,
    ElementWiseOperation.MAX: np.maximum,
    ElementWiseOperation.MIN: np.minimum,
    ElementWiseOperation.LESS: np.less,
    ElementWiseOperation.GREATER: np.greater,
    ElementWiseOperation.AND: np.logical_and,
}
ACT = {
    ActivationType.TANH: np.tanh,
    ActivationType.SIGMOID: lambda x: 1 / (1 + np.exp(-x)),
    ActivationType.RELU: lambda x: np.maximum(x, 0),
}
UNARY = {UnaryOperation.NEG: np.negative, UnaryOperation.ABS: np.abs}
NO_STOP = 100  # a loop with no iterator that runs this long is the generator's bug


class LazySequences:
    def __init__(self, feeds: dict[str, Array]) -> None:
        self.feeds = feeds
        self.memo: dict[tuple[ITensor, frozenset[tuple[ILoop, int]]], Array] = {}

    def value(self, t: ITensor, ctx: dict[ILoop, int]) -> Array:
        key = (t, frozenset(ctx.items()))
        if key not in self.memo:
            self.memo[key] = np.asarray(self._element(t, ctx))
        return self.memo[key]

    def _element(self, t: ITensor, ctx: dict[ILoop, int]) -> Any:
        layer = t.producer
        if layer is None:
            return self.feeds[t.name]
        if isinstance(layer, IConstantLayer):
            return layer.weights
        if isinstance(layer, IIteratorLayer):  # <X[0], X[1], ...>, from the end when reversed
            x, k = self.value(layer.get_input(0), ctx), ctx[layer.loop]
            size = x.shape[layer.axis]
            if k >= size:
                raise InvalidRunError(f"past the end: {layer.name} reads slice {k} of {size}")
            return np.take(x, size - 1 - k if layer.reverse else k, axis=layer.axis)
        if isinstance(layer, IRecurrenceLayer):  # <X, Y_0, Y_1, ...>
            k = ctx[layer.loop]
            if k == 0:
                return self.value(layer.get_input(0), ctx)
            return self.value(layer.get_input(1), {**ctx, layer.loop: k - 1})
        if isinstance(layer, ILoopOutputLayer):
            return self._loop_output(layer, ctx)
        x = [self.value(i, ctx) for i in layer.inputs if i is not None]
        if isinstance(layer, IElementWiseLayer):
            return EW[layer.op](x[0], x[1])
        if isinstance(layer, IActivationLayer):
            return ACT[layer.activation_type](x[0])
        if isinstance(layer, IUnaryLayer):
            return UNARY[layer.op](x[0])
        if isinstance(layer, IReduceLayer) and layer.op is ReduceOperation.SUM:
            axes = tuple(a for a in range(x[0].ndim) if layer.axes >> a & 1)
            return np.sum(x[0], axis=axes, keepdims=layer.keep_dims)
        raise NotImplementedError(layer)

    def trip_count(self, loop: ILoop, ctx: dict[ILoop, int]) -> int:
        """n = the count, or the least n with X_n false, or the smaller of the two."""
        count, cond = loop.trip_limits.get(TripLimit.COUNT), loop.trip_limits.get(TripLimit.WHILE)
        c = None if count is None else int(self.value(count.get_input(0), ctx))
        sizes = [self.value(it.get_input(0), ctx).shape[it.axis] for it in loop.iterators]
        most = min(sizes, default=NO_STOP)
        n = 0
        while (c is None or n < c) and (
            cond is None or bool(self.value(cond.get_input(0), {**ctx, loop: n}))
        ):
            n += 1
            if n > most:
                break
        assert sizes or n <= most, "the generator made a loop that does not stop"
        if n > most:
            raise InvalidRunError(
                f"past the end: {loop.name} runs past an iterator's {most} slices"
            )
        return n

    def _loop_output(self, layer: ILoopOutputLayer, ctx: dict[ILoop, int]) -> Array:
        loop, x = layer.loop, layer.get_input(0)
        assert x is not None
        outer = {other: k for other, k in ctx.items() if other is not loop}
        n = self.trip_count(loop, outer)
        if layer.kind is LoopOutput.LAST_VALUE:  # X_n
            return self.value(x, {**outer, loop: n})
        length_t = layer.get_input(1)
        assert length_t is not None
        length = int(self.value(length_t, outer))
        if length < n:
            raise InvalidRunError(f"short length: {layer.name} has {length} < {n} iterations")
        shape = list(x.shape)
        shape.insert(layer.axis, length)
        stacked = np.zeros(shape, x.dtype.numpy)  # X_0 .. X_{n-1}, then zero rows
        for k in range(n):
            stacked[(slice(None),) * layer.axis + (k,)] = self.value(x, {**outer, loop: k})
        return np.flip(stacked, layer.axis) if layer.kind is LoopOutput.REVERSE else stacked


# --------------------------------------------------------------------------------------------
# recipes: a network as a list of builder steps (readable in a falsifying example)
# --------------------------------------------------------------------------------------------
# A step that makes a tensor appends it to the tensor list; steps name tensors by that index.
#   ("input", name, dtype, shape)  ("const", dtype, shape, values)  ("loop",)
#   ("iter", loop, src, axis, reverse)  ("rec", loop, initial)  ("next", rec, value)
#   ("ew", op, a, b)  ("act", kind, a)  ("unary", op, a)  ("reduce", a)   [sum over axis 0]
#   ("limit", loop, kind, t)  ("out", loop, kind, src, axis, length or None)  ("mark", t)
@dataclass
class Recipe:
    steps: list[tuple[Any, ...]]
    ints: dict[str, int]  # the values of the int32 inputs
    seed: int  # the float inputs' values


def build(recipe: Recipe) -> tuple[Network, dict[str, Array]]:
    rng = np.random.default_rng(recipe.seed)
    net, tensors, loops, feeds = Network(), list[ITensor](), list[ILoop](), dict[str, Array]()
    for step in recipe.steps:
        match step:
            case ("loop",):
                loops.append(net.add_loop())
            case ("next", rec, value):
                tensors[rec].producer.set_input(1, tensors[value])
            case ("limit", loop, kind, t):
                loops[loop].add_trip_limit(tensors[t], TripLimit[kind])
            case ("mark", t):
                net.mark_output(tensors[t])
            case ("input", name, dt, shape):
                if dt == "int32":
                    feeds[name] = np.asarray(recipe.ints[name], np.int32)
                else:
                    feeds[name] = rng.uniform(-1, 1, shape).astype(np.float32)
                tensors.append(net.add_input(name, dt, shape))
            case ("const", dt, shape, values):
                data = np.array(values, dt).reshape(shape)
                tensors.append(net.add_constant(shape, data).get_output(0))
            case ("iter", loop, src, axis, reverse):
                tensors.append(loops[loop].add_iterator(tensors[src], axis, reverse).get_output(0))
            case ("rec", loop, initial):
                tensors.append(loops[loop].add_recurrence(tensors[initial]).get_output(0))
            case ("ew", op, a, b):
                layer = net.add_elementwise(tensors[a], tensors[b], ElementWiseOperation[op])
                tensors.append(layer.get_output(0))
            case ("act", kind, a):
                tensors.append(net.add_activation(tensors[a], ActivationType[kind]).get_output(0))
            case ("unary", op, a):
                tensors.append(net.add_unary(tensors[a], UnaryOperation[op]).get_output(0))
            case ("reduce", a):
                tensors.append(
                    net.add_reduce(tensors[a], ReduceOperation.SUM, 1, False).get_output(0)
                )
            case ("out", loop, kind, src, axis, length):
                out = loops[loop].add_loop_output(tensors[src], LoopOutput[kind], axis)
                if length is not None:
                    out.set_input(1, tensors[length])
                tensors.append(out.get_output(0))
            case _:
                raise AssertionError(step)
    return net, feeds


# --------------------------------------------------------------------------------------------
# random recipes
# --------------------------------------------------------------------------------------------
# Float data lives in [-1, 1]. Each float tensor of shape (d,) carries a bound on its magnitude;
# a layer whose bound would pass 4 is followed by a tanh, and a recurrence's next value by a
# tanh where it could outgrow the initial value, so nothing overflows (warnings are errors).
@dataclass(frozen=True)
class Entry:
    ref: int
    bound: float
    scope: int | None  # the loop it was made in, None for the top level


@dataclass
class LoopPlan:
    parent: int | None
    n_hi: int  # no run of the loop does more iterations (unless it is invalid)
    counter: int = -1  # an int32 recurrence 0, 1, 2, ...
    iterators: list[Entry] = field(default_factory=list)


class Gen:
    def __init__(self, draw: st.DrawFn) -> None:
        self.draw = draw
        self.d = draw(st.integers(1, 4))
        self.steps: list[tuple[Any, ...]] = []
        self.made = 0
        self.ints: dict[str, int] = {}
        self.vecs: list[Entry] = []  # float32 (d,) tensors
        self.mats: list[tuple[int, int | None]] = []  # (ref, scope): (len, d) or (d, len)
        self.loops: list[LoopPlan] = []

    def tensor(self, *step: Any) -> int:
        self.steps.append(step)
        self.made += 1
        return self.made - 1

    def pick(self, items: list[Any]) -> Any:
        return self.draw(st.sampled_from(items))

    def chain(self, loop: int | None) -> list[int | None]:
        scopes: list[int | None] = [None]
        while loop is not None:
            scopes.append(loop)
            loop = self.loops[loop].parent
        return scopes

    def visible(self, loop: int | None) -> list[Entry]:
        scopes = self.chain(loop)
        return [e for e in self.vecs if e.scope in scopes]

    def scalar(self, dt: str, value: float, as_input: bool = False) -> int:
        if as_input:
            name = f"n{self.made}"
            self.ints[name] = int(value)
            return self.tensor("input", name, dt, ())
        return self.tensor("const", dt, (), (value,))

    def fresh_vector(self) -> Entry:
        if self.draw(st.booleans()):
            return Entry(self.tensor("input", f"v{self.made}", "float32", (self.d,)), 1.0, None)
        floats = st.floats(-1, 1, width=32, allow_subnormal=False)
        values = self.draw(st.lists(floats, min_size=self.d, max_size=self.d))
        return Entry(self.tensor("const", "float32", (self.d,), tuple(values)), 1.0, None)

    def layer(self, scope: int, a: Entry, b: Entry | None = None) -> Entry:
        """A random interior layer of ``a`` (and ``b``)."""
        if b is not None:
            op = self.pick(["SUM", "PROD", "SUB", "MAX", "MIN"])
            bound = {"SUM": a.bound + b.bound, "SUB": a.bound + b.bound, "PROD": a.bound * b.bound}
            e = Entry(
                self.tensor("ew", op, a.ref, b.ref), bound.get(op, max(a.bound, b.bound)), scope
            )
        elif self.draw(st.booleans()):
            kind = self.pick(["TANH", "SIGMOID", "RELU"])
            e = Entry(self.tensor("act", kind, a.ref), 1.0 if kind != "RELU" else a.bound, scope)
        else:
            e = Entry(self.tensor("unary", self.pick(["NEG", "ABS"]), a.ref), a.bound, scope)
        return self.squash(e) if e.bound > 4 else e

    def squash(self, e: Entry) -> Entry:
        return Entry(self.tensor("act", "TANH", e.ref), 1.0, e.scope)


def iterations(draw: st.DrawFn, most: int) -> int:
    """A trip count up to ``most``: 0 one time in eight (a zero-trip loop), else at least 1."""
    return 0 if draw(st.integers(0, 7)) == 0 else draw(st.integers(min(1, most), most))


def make_loop(g: Gen, parent: int | None, nested: bool) -> None:
    """A loop in ``parent`` (None: the top level), with one loop nested in it when ``nested``."""
    draw, top = g.draw, parent is None
    loop = len(g.loops)
    g.steps.append(("loop",))
    mode = draw(st.sampled_from(["count", "while", "both"]))
    outer_hi = 0 if parent is None else g.loops[parent].n_hi
    count_is_outer_counter = not top and mode != "while" and draw(st.booleans())

    plan = LoopPlan(parent, 0)
    g.loops.append(plan)
    lengths: list[int] = []
    shortest = draw(st.integers(max(1, outer_hi - 2) if count_is_outer_counter else 1, 5))
    for _ in range(draw(st.integers(1, 3) if top else st.integers(0, 1))):
        axis, reverse = draw(st.integers(0, 1)), draw(st.booleans())
        size = shortest + draw(st.integers(0, 2))
        shape = (size, g.d) if axis == 0 else (g.d, size)
        src = g.tensor("input", f"x{g.made}", "float32", shape)
        plan.iterators.append(Entry(g.tensor("iter", loop, src, axis, reverse), 1.0, loop))
        lengths.append(size)
    g.vecs += plan.iterators
    most = min(lengths, default=5)

    # the limits' numbers first: they bound the iterations, which the lengths must cover
    highs = [most]
    count = 0
    if mode != "while":
        if count_is_outer_counter:
            highs.append(max(outer_hi - 1, 0))
        else:
            count = iterations(draw, most)
            if top and lengths and draw(st.integers(0, 7)) == 0:
                count = most + draw(st.integers(1, 2))  # past an iterator's end
            highs.append(count)
    cond_kind, stop = "", 0
    if mode != "count":
        kinds = ["counter", "accumulator"] + ["data"] * (mode == "both")
        kinds += ["counter_and_data"] * bool(lengths)
        cond_kind = draw(st.sampled_from(kinds))
        if cond_kind != "data":
            stop = iterations(draw, most + 2 if mode == "both" else most)
            highs.append(stop)
    plan.n_hi = min(highs)

    zero = g.scalar("int32", 0)
    plan.counter = g.tensor("rec", loop, zero)
    g.steps.append(
        ("next", plan.counter, g.tensor("ew", "SUM", plan.counter, g.scalar("int32", 1)))
    )
    recs = []
    for _ in range(draw(st.integers(1, 3))):
        outside = g.visible(parent)
        init = g.pick(outside) if outside and draw(st.booleans()) else g.fresh_vector()
        recs.append(Entry(g.tensor("rec", loop, init.ref), max(1.0, init.bound), loop))
    g.vecs += recs

    uses_outer = None
    if not top:  # an outer iterator's slice as an invariant; it feeds a recurrence, so the
        assert parent is not None  # loop reads a value of its parent: it is nested in it
        own = [e for e in g.vecs if e.scope == loop]
        uses_outer = g.layer(loop, g.pick(own), g.pick(g.loops[parent].iterators))
        g.vecs.append(uses_outer)
    inner: list[Entry] = []
    n_layers = draw(st.integers(0, 5))
    inner_at = draw(st.integers(0, n_layers)) if nested else -1
    for i in range(n_layers + 1):
        if i == inner_at:
            before = len(g.vecs)
            make_loop(g, loop, False)
            inner = [e for e in g.vecs[before:] if e.scope == loop]
        if i < n_layers:
            a = g.pick(g.visible(loop))
            b = g.pick(g.visible(loop)) if draw(st.booleans()) else None
            g.vecs.append(g.layer(loop, a, b))

    for j, rec in enumerate(recs):
        value = g.pick(g.visible(loop)) if j or uses_outer is None else uses_outer
        if j == 0 and inner:  # the nested loop's last value feeds this recurrence
            value = g.pick(inner)
            if draw(st.booleans()):
                value = g.layer(loop, value, g.pick(g.visible(loop)))
        if value.bound > rec.bound:
            value = g.squash(value)
        g.steps.append(("next", rec.ref, value.ref))

    if mode != "while":
        if count_is_outer_counter:
            assert parent is not None
            t = g.loops[parent].counter
        else:
            t = g.scalar("int32", count, as_input=top and draw(st.booleans()))
        g.steps.append(("limit", loop, "COUNT", t))
    scalars = [plan.counter]
    if cond_kind:
        own = [e for e in g.vecs if e.scope == loop]
        if cond_kind == "accumulator":  # acc += 1 + tanh(sum(v)) / 2 while acc < stop/2 - 1/4
            acc = g.tensor("rec", loop, g.scalar("float32", 0.0))
            total = g.tensor("act", "TANH", g.tensor("reduce", g.pick(own).ref))
            half = g.tensor("ew", "PROD", total, g.scalar("float32", 0.5))
            step = g.tensor("ew", "SUM", half, g.scalar("float32", 1.0))
            g.steps.append(("next", acc, g.tensor("ew", "SUM", acc, step)))
            cond = g.tensor("ew", "LESS", acc, g.scalar("float32", stop / 2 - 0.25))
            scalars.append(acc)
        elif cond_kind == "data":
            threshold = draw(st.sampled_from([-2.0, -1.0, -0.5, 0.0]))
            total = g.tensor("reduce", g.pick(own).ref)
            cond = g.tensor("ew", "GREATER", total, g.scalar("float32", threshold))
        else:
            cond = g.tensor("ew", "LESS", plan.counter, g.scalar("int32", stop))
            if cond_kind == "counter_and_data":
                total = g.tensor("reduce", g.pick(own).ref)
                more = g.tensor("ew", "GREATER", total, g.scalar("float32", -0.5))
                cond = g.tensor("ew", "AND", cond, more)
        g.steps.append(("limit", loop, "WHILE", cond))

    outputs, last_values = [], []
    for j, rec in enumerate(recs):
        if j == 0 or draw(st.booleans()):
            out = g.tensor("out", loop, "LAST_VALUE", rec.ref, 0, None)
            last_values.append(Entry(out, rec.bound, parent))
            outputs.append(out)
    for s in scalars:
        if draw(st.integers(0, 2)) == 0:
            outputs.append(g.tensor("out", loop, "LAST_VALUE", s, 0, None))
    sources = [(e.ref, 1) for e in g.visible(loop)] + [(s, 0) for s in scalars]
    sources += [(m, 2) for m, scope in g.mats if scope == loop]
    for _ in range(draw(st.integers(0, 2))):
        src, rank = g.pick(sources)
        kind, axis = g.pick(["CONCATENATE", "REVERSE"]), draw(st.integers(0, rank))
        low = plan.n_hi
        if top and draw(st.integers(0, 7)) == 0:
            low = max(0, low - 1)  # maybe less than the iterations run
        length = g.scalar(
            "int32", draw(st.integers(low, plan.n_hi + 2)), top and draw(st.booleans())
        )
        out = g.tensor("out", loop, kind, src, axis, length)
        if rank == 1 and not top:
            g.mats.append((out, parent))
        elif top:
            outputs.append(out)
    g.vecs += last_values  # after the loop's own outputs: those cannot read them
    if top:
        g.steps += [("mark", out) for out in outputs]


@st.composite
def recipes(draw: st.DrawFn, nested: bool) -> Recipe:
    g = Gen(draw)
    make_loop(g, None, nested)
    if draw(st.integers(0, 3)) == 0:  # a second loop, maybe reading the first one's outputs
        make_loop(g, None, False)
    return Recipe(g.steps, g.ints, draw(st.integers(0, 2**32 - 1)))
