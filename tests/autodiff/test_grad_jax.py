"""``tl.grad`` against ``jax.grad`` on recurrent models (float64): an Elman RNN, an LSTM cell
and a GRU cell written with matmuls, the weights model inputs, each cell run by every loop form
tensorloop builds (``tl.scan`` forward and reversed, ``tl.fori_loop`` over a run-time trip count
shorter than the sequence, ``tl.while_loop`` whose trip count comes from the data) and by a
canonical Loop whose trip count input stops it before the end of its sliced sequence (forward
or reversed). JAX runs the same cell (one definition, ``Cell``, traced by both) in ``lax.scan``
over the rows the tensorloop loop reads, and ``jax.grad`` is the oracle for the gradients with
respect to the sequence, the initial state and every weight.

Each gradient model runs on the compiled backend (the conftest law runs the reference too, and
holds them bit-exact) and on the jax backend, both held to ``jax.grad`` here; ``checkpoint``
(every k-th carried value, or about sqrt(T)) is drawn as well and run on the compiled backend.
The jax backend hands a few parts of these gradients to compiled (``known_handoff`` lists them
and why); any other handoff fails.

Tolerance (``RTOL``): both sides evaluate the same float64 expression; they differ only in
rounding: XLA and OpenBLAS sum the matmuls in their own orders, XLA's tanh/logistic are a few
ULPs from NumPy's, and the backward pass of a loop chains T such steps, each through a
contractive cell (weights scaled by 0.8 / sqrt(fan-in), |tanh'| and sigmoid' at most 1), so
the rounding errors of the steps add up rather than grow: tens of ULPs of float64 (eps =
2.2e-16) at the scale of the gradient. Measured over 20 examples of every test here (4200
gradient arrays, compiled, jax and checkpointed), the largest difference was 1.7e-15 of the
array's largest entry (8 ULPs at 1.0). ``RTOL = 1e-12`` leaves a margin of about 600 over
that, for other seeds and sizes, and is still far below what any mistake in a rule (a
missing term, a transposed weight, a row of the sequence read twice) would show. Entries
that cancel to near zero are held to the same 1e-12 of the array's largest magnitude
(``atol``), as their absolute error is that of the terms they sum, not of their own size.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

import tensorloop as tl
from tensorloop import Graph, Sliced, Stacked, TensorType
from tensorloop.ir.emit import Emitter
from tensorloop.ir.graph import clone_graph
from tensorloop.ir.loop import ITERATION_TYPE, Loop

jax = pytest.importorskip("jax")
pytest.importorskip("tensorloop.backends.jax")  # importing the backend turns on jax_enable_x64
jnp = pytest.importorskip("jax.numpy")
lax = pytest.importorskip("jax.lax")

RTOL = 1e-12
pytestmark = pytest.mark.xla_sums(
    floor_ulps=2**7,
    why="each gradient element sums the T*B*H products of a backward loop (up to ~100 terms of "
    "order one), in XLA's order on jax and NumPy's on compiled: seen 22 ULPs at 1.0 apart",
)
F64 = "float64"
EXAMPLES = settings(
    max_examples=4,
    deadline=None,
    # No shrinking: every example compiles its own XLA programs, and shrinking a failure takes
    # minutes; the failing example is printed as drawn.
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow],
)


# -- one cell definition, traced by both ---------------------------------------------------------
@dataclass(frozen=True)
class Ops:
    """The few functions a cell calls that differ between tensorloop and JAX; ``@``, ``+``,
    ``*`` and ``-`` are each library's own operators."""

    tanh: Callable[[Any], Any]
    sigmoid: Callable[[Any], Any]
    split: Callable[[Any, int], Sequence[Any]]  # equal parts along the last axis
    sum: Callable[[Any], Any]  # of every element, a scalar


TL = Ops(tl.tanh, tl.sigmoid, lambda z, n: tl.split(z, n, axis=-1), tl.reduce_sum)
JX = Ops(jnp.tanh, jax.nn.sigmoid, lambda z, n: jnp.split(z, n, axis=-1), jnp.sum)

Params = dict[str, Any]


def elman(o: Ops, p: Params, carry: Any, x: Any) -> tuple[Any, Any]:
    (h,) = carry
    h = o.tanh(x @ p["W"] + h @ p["U"] + p["b"])
    return (h,), h


def lstm(o: Ops, p: Params, carry: Any, x: Any) -> tuple[Any, Any]:
    h, c = carry
    i, f, g, out = o.split(x @ p["W"] + h @ p["U"] + p["b"], 4)
    c = o.sigmoid(f) * c + o.sigmoid(i) * o.tanh(g)
    h = o.sigmoid(out) * o.tanh(c)
    return (h, c), h


def gru(o: Ops, p: Params, carry: Any, x: Any) -> tuple[Any, Any]:
    (h,) = carry
    z, r = o.split(o.sigmoid(x @ p["Wzr"] + h @ p["Uzr"] + p["bzr"]), 2)
    n = o.tanh(x @ p["Wn"] + (r * h) @ p["Un"] + p["bn"])
    h = (1.0 - z) * n + z * h
    return (h,), h


@dataclass(frozen=True)
class Cell:
    name: str
    step: Callable[[Ops, Params, Any, Any], tuple[Any, Any]]
    state: tuple[str, ...]  # the carried values' initial inputs, each [B, H]
    weights: Callable[[int, int], dict[str, tuple[int, ...]]]  # (D, H) -> shapes


CELLS = {
    "elman": Cell("elman", elman, ("h0",), lambda d, h: {"W": (d, h), "U": (h, h), "b": (h,)}),
    "lstm": Cell(
        "lstm",
        lstm,
        ("h0", "c0"),
        lambda d, h: {"W": (d, 4 * h), "U": (h, 4 * h), "b": (4 * h,)},
    ),
    "gru": Cell(
        "gru",
        gru,
        ("h0",),
        lambda d, h: {
            "Wzr": (d, 2 * h),
            "Uzr": (h, 2 * h),
            "bzr": (2 * h,),
            "Wn": (d, h),
            "Un": (h, h),
            "bn": (h,),
        },
    ),
}


@dataclass(frozen=True)
class Sizes:
    T: int  # steps
    B: int  # batch
    D: int  # features of a step's input
    H: int  # hidden units
    seed: int


sizes = st.builds(
    Sizes,
    T=st.integers(1, 6),
    B=st.integers(1, 3),
    D=st.integers(1, 4),
    H=st.integers(1, 4),
    seed=st.integers(0, 2**16),
)
checkpoints = st.sampled_from([None, 1, 2, 3, "sqrt"])


@dataclass
class Problem:
    """A cell at some sizes: the feeds (sequence ``xs``, initial state, weights) and the
    constant readout weights of the loss."""

    cell: Cell
    s: Sizes
    feeds: dict[str, np.ndarray]
    w_row: np.ndarray  # [B, H]: weighs every step's output
    w_last: np.ndarray  # [B, H]: weighs the final hidden state

    @classmethod
    def make(cls, cell: Cell, s: Sizes) -> Problem:
        rng = np.random.default_rng(s.seed)
        feeds = {"xs": rng.standard_normal((s.T, s.B, s.D))}
        for name in cell.state:
            feeds[name] = rng.uniform(-0.9, 0.9, (s.B, s.H))
        for name, shape in cell.weights(s.D, s.H).items():
            fan_in = shape[0] if len(shape) == 2 else 1
            scale = 0.8 / np.sqrt(fan_in) if len(shape) == 2 else 0.2
            feeds[name] = rng.standard_normal(shape) * scale
        w_row = rng.standard_normal((s.B, s.H))
        w_last = rng.standard_normal((s.B, s.H))
        return cls(cell, s, feeds, w_row, w_last)

    @property
    def weight_names(self) -> list[str]:
        return list(self.cell.weights(self.s.D, self.s.H))

    @property
    def wrt(self) -> list[str]:
        return ["xs", *self.cell.state, *self.weight_names]

    def step_loss(self, o: Ops, y: Any, w_row: Any) -> Any:
        """What one step's output adds to the loss: cotangents that vary by element and by
        value."""
        return o.sum(y * y) * 0.5 + o.sum(y * w_row)

    # -- the oracle ------------------------------------------------------------------------
    def jax_loss(self, rows: slice, reverse: bool = False) -> Callable[[Params], Any]:
        """The loss of ``lax.scan`` of the cell over ``xs[rows]`` (last first if ``reverse``)."""
        w_row, w_last = jnp.asarray(self.w_row), jnp.asarray(self.w_last)

        def loss(p: Params) -> Any:
            init = tuple(p[name] for name in self.cell.state)
            carry, ys = lax.scan(
                lambda c, x: self.cell.step(JX, p, c, x), init, p["xs"][rows], reverse=reverse
            )
            return self.step_loss(JX, ys, w_row) + jnp.sum(carry[0] * w_last)

        return loss

    def jax_grads(self, rows: slice, reverse: bool = False) -> tuple[float, dict[str, Any]]:
        params = {k: jnp.asarray(v) for k, v in self.feeds.items()}
        assert all(v.dtype == jnp.float64 for v in params.values()), "jax_enable_x64 is off"
        value, grads = jax.value_and_grad(self.jax_loss(rows, reverse))(params)
        return float(value), {k: np.asarray(v) for k, v in grads.items()}

    def jax_trips(self, limit: float) -> int:
        """The trips of the while loop (``while i < T and sum(h * h) < limit``), stepped
        eagerly in JAX."""
        p = {k: jnp.asarray(v) for k, v in self.feeds.items()}
        carry = tuple(p[name] for name in self.cell.state)
        i = 0
        while i < self.s.T and float(jnp.sum(carry[0] * carry[0])) < limit:
            carry, _ = self.cell.step(JX, p, carry, p["xs"][i])
            i += 1
        return i

    # -- tensorloop --------------------------------------------------------------------------
    def placeholders(self, names: Sequence[str]) -> dict[str, Any]:
        return {n: tl.placeholder(F64, self.feeds[n].shape, name=n) for n in names}


def assert_matches(got: tl.Outputs, want_loss: float, want: dict[str, np.ndarray], what: str):
    """The loss and every gradient within ``RTOL`` of JAX's, at the scale of each array."""
    np.testing.assert_allclose(got["loss"], want_loss, rtol=RTOL, err_msg=f"{what}: loss")
    for name, w in want.items():
        have = np.asarray(got[f"{name}.grad"])
        assert have.shape == w.shape, f"{what}: d loss / d {name}: {have.shape} vs {w.shape}"
        scale = float(np.max(np.abs(w), initial=1.0))
        np.testing.assert_allclose(
            have, w, rtol=RTOL, atol=RTOL * scale, err_msg=f"{what}: d loss / d {name}"
        )


def known_handoff(h: tl.Handoff, while_loop: bool = False) -> bool:
    """The one handoff the jax backend makes on these gradients, decided while planning: for a
    loop whose trip count comes from the data (a ``while_loop``, or a trip count that is a
    model input), what its forward stores for the backward (its iteration numbers and carried
    values, stacked) has as many rows as it ran trips, a length XLA does not know while
    compiling; the backward loop that reads them (``<loop>_grad``, with the ``Size`` of its
    trip count) runs on compiled. Values are not affected. Any other handoff fails the test."""
    if not while_loop:
        return False
    allowed = {"Size", *(n for n in h.nodes if n.endswith("_grad"))}
    return (
        h.source == "jax"
        and h.target == "compiled"
        and h.stage == "plan"
        and set(h.nodes) <= allowed
        and "known only at run time" in h.reason
    )


def check(
    model: tl.Model,
    problem: Problem,
    feeds: dict[str, Any],
    want_loss: float,
    want: dict[str, np.ndarray],
    checkpoint: Any,
    what: str,
    while_loop: bool = False,
) -> None:
    """``tl.grad`` of ``model`` on the compiled and the jax backends, and checkpointed on the
    compiled backend, against JAX's loss and gradients."""
    grads = tl.grad(model, of="loss", wrt=problem.wrt)
    got = grads.run(feeds)
    assert not got.handoffs, got.handoffs
    assert_matches(got, want_loss, want, f"{what}, compiled")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tl.FallbackWarning)  # checked just below
        got = grads.run(feeds, backend="jax")
    unexpected = [h for h in got.handoffs if not known_handoff(h, while_loop)]
    assert not unexpected, f"{what}: the jax backend handed on {unexpected}"
    assert_matches(got, want_loss, want, f"{what}, jax")
    if checkpoint is not None:
        ck = tl.grad(model, of="loss", wrt=problem.wrt, checkpoint=checkpoint)
        got = ck.run(feeds)
        assert not got.handoffs, got.handoffs
        assert_matches(got, want_loss, want, f"{what}, checkpoint={checkpoint!r}")


# -- the loop forms ------------------------------------------------------------------------------
@pytest.mark.parametrize("cell", CELLS.values(), ids=list(CELLS))
@EXAMPLES
@given(s=sizes, reverse=st.booleans(), checkpoint=checkpoints)
@example(s=Sizes(T=5, B=3, D=4, H=4, seed=20), reverse=True, checkpoint=2)  # 22 ULPs at 1.0
def test_scan(cell: Cell, s: Sizes, reverse: bool, checkpoint: Any) -> None:
    """``tl.scan`` over the whole sequence, forward or reversed (``ys[t]`` pairs with
    ``xs[t]`` either way, as in ``lax.scan``)."""
    tl.reset()
    pb = Problem.make(cell, s)
    p = pb.placeholders(pb.feeds)
    init = tuple(p[k] for k in cell.state)
    w_row, w_last = tl.constant(pb.w_row), tl.constant(pb.w_last)
    carry, ys = tl.scan(lambda c, x: cell.step(TL, p, c, x), init, p["xs"], reverse=reverse)
    loss = pb.step_loss(TL, ys, w_row) + tl.reduce_sum(carry[0] * w_last)
    model = tl.Model({"loss": loss})
    want_loss, want = pb.jax_grads(slice(None), reverse)
    check(model, pb, pb.feeds, want_loss, want, checkpoint, f"{cell.name} scan")


@pytest.mark.parametrize("cell", CELLS.values(), ids=list(CELLS))
@EXAMPLES
@given(s=sizes, data=st.data(), checkpoint=checkpoints)
def test_fori_loop_shorter_than_the_sequence(
    cell: Cell, s: Sizes, data: st.DataObject, checkpoint: Any
) -> None:
    """``tl.fori_loop(0, n, ...)`` with ``n <= T`` a model input, each step reading
    ``xs[i]`` (Gather) and adding its output's share of the loss to a carried sum: the rows
    past ``n`` get a zero gradient, as ``lax.scan`` over ``xs[:n]`` has them."""
    n = data.draw(st.integers(0, s.T), label="n")
    tl.reset()
    pb = Problem.make(cell, s)
    p = pb.placeholders(pb.feeds)
    trips = tl.placeholder("int64", (), name="n")
    w_row, w_last = tl.constant(pb.w_row), tl.constant(pb.w_last)

    def body(i: Any, state: Any) -> Any:
        carry, total = state
        carry, y = cell.step(TL, p, carry, tl.gather(p["xs"], i))
        return carry, total + pb.step_loss(TL, y, w_row)

    zero = tl.constant(np.float64(0.0))
    carry, total = tl.fori_loop(0, trips, body, (tuple(p[k] for k in cell.state), zero))
    model = tl.Model({"loss": total + tl.reduce_sum(carry[0] * w_last)})
    want_loss, want = pb.jax_grads(slice(0, n))
    feeds = {**pb.feeds, "n": np.int64(n)}
    what = f"{cell.name} fori_loop n={n}"
    check(model, pb, feeds, want_loss, want, checkpoint, what, while_loop=True)


@pytest.mark.parametrize("cell", CELLS.values(), ids=list(CELLS))
@EXAMPLES
@given(s=sizes, fraction=st.floats(0.0, 1.0), checkpoint=checkpoints)
def test_while_loop_with_a_data_dependent_trip_count(
    cell: Cell, s: Sizes, fraction: float, checkpoint: Any
) -> None:
    """``tl.while_loop`` that steps while ``i < T and sum(h * h) < limit``: the trips come
    from the data (the gradient is that of the trips it ran, as ``lax.scan`` over them)."""
    limit = fraction * s.B * s.H  # sum(h * h) < B * H: every trip count from 0 to T happens
    tl.reset()
    pb = Problem.make(cell, s)
    p = pb.placeholders(pb.feeds)
    w_row, w_last = tl.constant(pb.w_row), tl.constant(pb.w_last)
    bound = tl.placeholder(F64, (), name="limit")

    def go(state: Any) -> Any:
        carry, _, i = state
        return (i < s.T) & (tl.reduce_sum(carry[0] * carry[0]) < bound)

    def body(state: Any) -> Any:
        carry, total, i = state
        carry, y = cell.step(TL, p, carry, tl.gather(p["xs"], i))
        return carry, total + pb.step_loss(TL, y, w_row), i + 1

    init = (tuple(p[k] for k in cell.state), tl.constant(np.float64(0.0)), tl.constant(np.int64(0)))
    carry, total, trips = tl.while_loop(go, body, init)
    model = tl.Model({"loss": total + tl.reduce_sum(carry[0] * w_last), "n": trips})
    feeds = {**pb.feeds, "limit": np.float64(limit)}
    n = pb.jax_trips(limit)
    assert int(model.run(feeds)["n"]) == n
    want_loss, want = pb.jax_grads(slice(0, n))
    what = f"{cell.name} while_loop n={n}"
    check(model, pb, feeds, want_loss, want, checkpoint, what, while_loop=True)


def canonical_loop_model(pb: Problem, reverse: bool) -> tl.Model:
    """A Loop node as the IR has it, built by hand: a trip count input ``n`` (int64, any
    value), the sequence ``xs`` sliced on axis 0 (last row first if ``reverse``), the weights
    invariants, the outputs stacked on axis 0 (in reverse too, so ``ys[k]`` pairs with the
    ``k``-th row read). The loop stops at ``min(n, T)`` trips. Its body is the cell traced by
    the builder into a model of its own, ``(i, *state, x, *weights) -> (go, *state, y)``."""
    cell, names = pb.cell, pb.weight_names
    tl.reset()
    it = tl.placeholder(ITERATION_TYPE.dtype, (), name="i")
    state = [tl.placeholder(F64, (pb.s.B, pb.s.H), name=n) for n in cell.state]
    x = tl.placeholder(F64, (pb.s.B, pb.s.D), name="x")
    p = pb.placeholders(names)
    new, y = cell.step(TL, p, tuple(state), x)
    results = {
        "go": tl.constant(np.bool_(True)),
        **{f"{n}_next": v for n, v in zip(cell.state, new, strict=True)},
        "y": y,
    }
    body_model = tl.Model(results, inputs=[it, *state, x, *p.values()], name="cell")
    body = clone_graph(body_model.graph, "cell_body")
    tl.reset()

    g = Graph("canonical")
    em = Emitter(g)
    xs = g.add_input("xs", TensorType(F64, pb.feeds["xs"].shape))
    init = [g.add_input(n, TensorType(F64, pb.feeds[n].shape)) for n in cell.state]
    weights = [g.add_input(n, TensorType(F64, pb.feeds[n].shape)) for n in names]
    trips = g.add_input("n", TensorType("int64", ()))
    loop = Loop.build(
        em,
        body,
        max_trip_count=trips,
        carried=init,
        sliced=[(xs, Sliced(0, reverse))],
        invariants=weights,
        stacked=[Stacked(0, reverse)],
        name="cell_loop",
    )
    final, ys = loop.node.outputs[0], loop.node.outputs[len(cell.state)]

    def total(v: Any) -> Any:
        return em.op("ReduceSum", [v], {"keepdims": 0})

    squares = em.op("Mul", [total(em.op("Mul", [ys, ys])), em.const(np.float64(0.5))])
    rows = total(em.op("Mul", [ys, em.const(pb.w_row)]))
    last = total(em.op("Mul", [final, em.const(pb.w_last)]))
    loss = em.op("Add", [em.op("Add", [squares, rows]), last])
    g.set_outputs([g.result_named(loss, "loss")])
    return tl.Model(g)


@pytest.mark.parametrize("cell", CELLS.values(), ids=list(CELLS))
@EXAMPLES
@given(s=sizes, reverse=st.booleans(), data=st.data(), checkpoint=checkpoints)
def test_loop_whose_trip_count_is_shorter_than_the_sequence(
    cell: Cell, s: Sizes, reverse: bool, data: st.DataObject, checkpoint: Any
) -> None:
    """A canonical Loop with a trip count (drawn from 0 to T + 1) and a sliced sequence: it
    reads the first ``min(n, T)`` rows (the last ones if reversed); the others get a zero
    gradient."""
    n = data.draw(st.integers(0, s.T + 1), label="n")
    pb = Problem.make(cell, s)
    model = canonical_loop_model(pb, reverse)
    m = min(n, s.T)
    rows = slice(s.T - m, s.T) if reverse else slice(0, m)
    want_loss, want = pb.jax_grads(rows, reverse)
    feeds = {**pb.feeds, "n": np.int64(n)}
    what = f"{cell.name} Loop n={n} of T={s.T}{' reversed' if reverse else ''}"
    check(model, pb, feeds, want_loss, want, checkpoint, what, while_loop=True)
