"""Issue #24: the cost of a gradient (``tl.grad``) beside ``jax.grad`` and torch autograd.

Workloads (float32; every weight a model input, the gradient taken with respect to all of
them and to the sequence and the initial state; the loss ``sum_t 0.5 * |h_t|^2 +
sum(h_T * w)``, w a fixed random [B, H]):

- ``lstm-small`` / ``lstm-medium``: an LSTM cell written with matmuls (``z = x @ W + h @ U +
  b``, gates i, f, g, o by sigmoid/tanh) over T steps, batch B, input and hidden size H
  (small: T=50, H=32, B=4; medium: T=200, H=128, B=16).
- ``while``: the same cell (H=32, B=4) in a while loop that steps ``while i < T and total <
  limit``, ``total`` the loss so far: its trip count comes from the data (``limit`` is set so
  that it runs 150 of at most 200 trips).

Runners (one call = the loss and every gradient, as NumPy arrays):

- ``tl-compiled`` / ``tl-jax``: ``tl.grad(model, of="loss", wrt=[...]).run(feeds, backend=B)``,
  the model built with ``tl.scan`` (``tl.while_loop`` for ``while``); the store-every-step
  gradient (``checkpoint=None``).
- ``jax.grad``: ``jax.jit(jax.value_and_grad(loss))`` of the same cell in ``lax.scan``. For
  ``while``, whose trip count JAX cannot differentiate through ``lax.while_loop``: a jitted
  ``lax.while_loop`` forward that counts the trips, then the jitted gradient of ``lax.scan``
  over that many rows (compiled once per trip count; the benchmark's is fixed).
- ``torch``: the same cell in a Python loop, ``torch.autograd.grad`` (eager; skipped if torch
  is missing). For ``while`` a Python ``while`` on the same condition.

Every runner's loss and gradients are checked against ``jax.grad``'s first (float32: each
array within 1e-3 of its largest entry). Timing: ``--warmup`` untimed rounds, then rounds
until every runner has made ``--repeats`` calls and spent ``--seconds``; each round calls every
runner not yet done once, in an order rotated by one per round, so that drift on the machine
hits all alike (time.perf_counter around one call). The table gives medians and ratios of
medians to ``jax.grad``. Every runtime gets one thread (the script restarts itself with
OPENBLAS_NUM_THREADS, OMP_NUM_THREADS and XLA_FLAGS set; ``GRAD_BENCH_THREADS`` changes it):
on a shared 2-core VM the threads of one runtime contend with the others' and with other load.

Memory: the peak of tensorloop's gradient run at T=1000 (LSTM, B=16, H=128) with
``checkpoint=None`` (every carried value stored), ``"sqrt"`` and the ints of ``--ks``. The
measure is tracemalloc's peak over one call, less what was allocated before it: Python and
NumPy allocations (NumPy reports its buffers to tracemalloc), which is where the compiled and
reference backends keep every array; not BLAS's scratch or the interpreter's own. The feeds
exist before the call and are not counted. XLA's buffers are not visible to tracemalloc, so
the jax backend has no memory row (and it hands checkpointed loops to compiled: the last line
of the output times that). Two configurations: ``every step / all`` is the timed workload (its
outputs ys, xs.grad and their cotangents are T-long however the loop is checkpointed) and
``final state`` (the loss of the last h only, gradients with respect to W, U, b, h0 and c0),
which leaves only what checkpointing governs T-long; the latter on the reference backend too
(``--reference-memory``), which runs the gradient graph as written, without the compiled
backend's rewrites. Beside each peak, the time of a call: on compiled the median of 3 untraced
warm calls, on reference the traced call itself. (In ``final state`` the cotangent of h shrinks
geometrically going back from the end and becomes subnormal in float32; NumPy computes
subnormals slowly, so those rows are slower per step than ``every step``'s.)

Targets (issue #24): tl-jax within 1.5x of ``jax.grad``; the peak with ``"sqrt"`` (or an int
k) at most 1/4 of ``checkpoint=None``'s at T=1000.

    .venv/bin/python benchmarks/grad.py            # about 4 minutes on a 2-core VM
    .venv/bin/python benchmarks/grad.py --quick    # about 1 minute: fewer rounds, T=200 memory
"""

from __future__ import annotations

import os
import platform
import statistics
import sys
import time
import tracemalloc
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib.metadata import version
from typing import Any

import click
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from rich.console import Console
from rich.table import Table

import tensorloop as tl
import tensorloop.backends.jax  # turns on jax_enable_x64 for jax.grad too (float32 stays float32)
from tensorloop.tools.bench import import_ahead

try:
    import torch
except ImportError:  # torch is not a dependency: its column is left out
    torch = None

F32 = "float32"
CHECK = 1e-3  # float32, T steps through the cell: each array within this of its largest entry
Feeds = dict[str, np.ndarray]
Grads = dict[str, np.ndarray]
STATE = ("h0", "c0")
WEIGHTS = ("W", "U", "b")
WRT = ("xs", *STATE, *WEIGHTS)


# -- the cell, once for all three libraries -------------------------------------------------------
@dataclass(frozen=True)
class Ops:
    tanh: Callable[[Any], Any]
    sigmoid: Callable[[Any], Any]
    split4: Callable[[Any], Sequence[Any]]  # four equal parts along the last axis
    sum: Callable[[Any], Any]


def lstm(o: Ops, p: dict[str, Any], h: Any, c: Any, x: Any) -> tuple[Any, Any]:
    i, f, g, out = o.split4(x @ p["W"] + h @ p["U"] + p["b"])
    c = o.sigmoid(f) * c + o.sigmoid(i) * o.tanh(g)
    return o.sigmoid(out) * o.tanh(c), c


TL = Ops(tl.tanh, tl.sigmoid, lambda z: tl.split(z, 4, axis=-1), tl.reduce_sum)
JX = Ops(jnp.tanh, jax.nn.sigmoid, lambda z: jnp.split(z, 4, axis=-1), jnp.sum)
TORCH = (
    None
    if torch is None
    else Ops(torch.tanh, torch.sigmoid, lambda z: torch.chunk(z, 4, dim=-1), torch.sum)
)


def step_loss(o: Ops, h: Any) -> Any:
    return o.sum(h * h) * 0.5


@dataclass
class Problem:
    T: int
    B: int
    H: int
    seed: int = 0
    feeds: Feeds = field(init=False)
    w_last: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        rng = np.random.default_rng(self.seed)
        h = self.H
        self.feeds = {
            "xs": rng.standard_normal((self.T, self.B, h)).astype(F32),
            "h0": (rng.standard_normal((self.B, h)) * 0.1).astype(F32),
            "c0": (rng.standard_normal((self.B, h)) * 0.1).astype(F32),
            "W": (rng.standard_normal((h, 4 * h)) / np.sqrt(h)).astype(F32),
            "U": (rng.standard_normal((h, 4 * h)) / np.sqrt(h)).astype(F32),
            "b": (rng.standard_normal(4 * h) * 0.1).astype(F32),
        }
        self.w_last = rng.standard_normal((self.B, h)).astype(F32)

    @property
    def name(self) -> str:
        return f"T={self.T} B={self.B} H={self.H}"


# -- tensorloop ---------------------------------------------------------------------------------
def tl_scan_model(pb: Problem, every_step: bool = True) -> tl.Model:
    """The LSTM as ``tl.scan``; the loss over every step's output (``every_step``) or of the
    final h alone."""
    tl.reset()
    p = {k: tl.placeholder(F32, v.shape, name=k) for k, v in pb.feeds.items()}

    def step(carry: Any, x: Any) -> Any:
        h, c = lstm(TL, p, carry[0], carry[1], x)
        return (h, c), h

    (h, _), hs = tl.scan(step, (p["h0"], p["c0"]), p["xs"])
    loss = tl.reduce_sum(h * tl.constant(pb.w_last))
    if every_step:
        loss = step_loss(TL, hs) + loss
    return tl.Model({"loss": loss})


def tl_while_model(pb: Problem) -> tl.Model:
    """The LSTM in ``tl.while_loop``: ``while i < T and total < limit``, reading ``xs[i]``."""
    tl.reset()
    p = {k: tl.placeholder(F32, v.shape, name=k) for k, v in pb.feeds.items()}
    limit = tl.placeholder(F32, (), name="limit")

    def go(s: Any) -> Any:
        return (s[3] < pb.T) & (s[2] < limit)

    def body(s: Any) -> Any:
        h, c, total, i = s
        h, c = lstm(TL, p, h, c, tl.gather(p["xs"], i))
        return h, c, total + step_loss(TL, h), i + 1

    init = (p["h0"], p["c0"], tl.constant(np.float32(0)), tl.constant(np.int64(0)))
    h, _, total, n = tl.while_loop(go, body, init)
    return tl.Model({"loss": total + tl.reduce_sum(h * tl.constant(pb.w_last)), "n": n})


def tl_runner(model: tl.Model, backend: str, wrt: Sequence[str], **options: Any) -> Runner:
    grads = tl.grad(model, of="loss", wrt=list(wrt), **options)
    handoffs: set[str] = set()

    def run(feeds: Feeds) -> tuple[float, Grads]:
        out = grads.run(feeds, backend=backend)
        handoffs.update(f"{', '.join(h.nodes)} ({h.reason})" for h in out.handoffs)
        return float(out["loss"]), {k: np.asarray(out[f"{k}.grad"]) for k in wrt}

    return Runner(f"tl-{backend}", run, handoffs)


@dataclass
class Runner:
    name: str
    run: Callable[[Feeds], tuple[float, Grads]]
    handoffs: set[str] = field(default_factory=set)


# -- jax ----------------------------------------------------------------------------------------
def jax_scan_loss(pb: Problem) -> Callable[[dict[str, Any]], Any]:
    w_last = jnp.asarray(pb.w_last)

    def loss(p: dict[str, Any]) -> Any:
        def step(carry: Any, x: Any) -> Any:
            h, c = lstm(JX, p, carry[0], carry[1], x)
            return (h, c), step_loss(JX, h)

        (h, _), losses = lax.scan(step, (p["h0"], p["c0"]), p["xs"])
        return jnp.sum(losses) + jnp.sum(h * w_last)

    return loss


def jax_runner(pb: Problem) -> Runner:
    grad = jax.jit(jax.value_and_grad(jax_scan_loss(pb)))

    def run(feeds: Feeds) -> tuple[float, Grads]:
        value, g = grad({k: feeds[k] for k in WRT})
        return float(value), {k: np.asarray(v) for k, v in g.items()}

    return Runner("jax.grad", run)


def jax_while_runner(pb: Problem) -> Runner:
    """A jitted ``lax.while_loop`` forward that counts the trips, then the jitted gradient of
    ``lax.scan`` over ``xs[:n]`` (JAX does not differentiate a while loop in reverse)."""

    @jax.jit
    def trips(p: dict[str, Any], limit: Any) -> Any:
        def go(s: Any) -> Any:
            return (s[3] < pb.T) & (s[2] < limit)

        def body(s: Any) -> Any:
            h, c, total, i = s
            h, c = lstm(JX, p, h, c, p["xs"][i])
            return h, c, total + step_loss(JX, h), i + 1

        return lax.while_loop(go, body, (p["h0"], p["c0"], jnp.float32(0), 0))[3]

    grads: dict[int, Any] = {}
    loss = jax_scan_loss(pb)

    def run(feeds: Feeds) -> tuple[float, Grads]:
        p = {k: feeds[k] for k in WRT}
        n = int(trips(p, feeds["limit"]))
        if n not in grads:
            grads[n] = jax.jit(jax.value_and_grad(lambda q, n=n: loss({**q, "xs": q["xs"][:n]})))
        value, g = grads[n](p)
        return float(value), {k: np.asarray(v) for k, v in g.items()}

    return Runner("jax.grad", run)


# -- torch --------------------------------------------------------------------------------------
def torch_runner(pb: Problem, while_loop: bool = False) -> Runner:
    assert torch is not None and TORCH is not None
    w_last = torch.from_numpy(pb.w_last)

    def run(feeds: Feeds) -> tuple[float, Grads]:
        p = {k: torch.from_numpy(feeds[k]).requires_grad_() for k in WRT}
        h, c = p["h0"], p["c0"]
        total = torch.zeros((), dtype=torch.float32)
        t = 0
        limit = float(feeds["limit"]) if while_loop else None
        while t < pb.T and (limit is None or float(total) < limit):
            h, c = lstm(TORCH, p, h, c, p["xs"][t])
            total = total + step_loss(TORCH, h)
            t += 1
        loss = total + torch.sum(h * w_last)
        g = torch.autograd.grad(loss, [p[k] for k in WRT], allow_unused=True)
        out = {
            k: np.zeros_like(feeds[k]) if v is None else v.numpy()
            for k, v in zip(WRT, g, strict=True)
        }
        return float(loss), out

    return Runner("torch", run)


# -- measuring ----------------------------------------------------------------------------------
def agreement(got: tuple[float, Grads], want: tuple[float, Grads]) -> str:
    worst = abs(got[0] - want[0]) / max(abs(want[0]), 1.0)
    for k, w in want[1].items():
        scale = float(np.max(np.abs(w), initial=1.0))
        worst = max(worst, float(np.max(np.abs(got[1][k] - w), initial=0.0)) / scale)
    if worst > CHECK:
        raise click.ClickException(f"gradients disagree with jax.grad by {worst:.2e}")
    return f"{worst:.1e}"


def round_robin(
    runners: list[Runner], feeds: Feeds, warmup: int, repeats: int, seconds: float
) -> dict[str, list[float]]:
    """``warmup`` untimed rounds, then rounds until each runner has run ``repeats`` times and
    for ``seconds`` in all: each round runs every runner not yet done once, in an order
    rotated by one per round, so that drift on the machine hits all alike."""
    for _ in range(warmup):
        for r in runners:
            r.run(feeds)
    times: dict[str, list[float]] = {r.name: [] for r in runners}
    k = 0
    while True:
        todo = [r for r in runners if len(times[r.name]) < repeats or sum(times[r.name]) < seconds]
        if not todo:
            return times
        j = k % len(todo)
        for r in todo[j:] + todo[:j]:
            start = time.perf_counter()
            r.run(feeds)
            times[r.name].append(time.perf_counter() - start)
        k += 1


@dataclass
class Case:
    name: str
    description: str
    runners: list[Runner]
    feeds: Feeds
    trips: int | None = None


def lstm_case(name: str, pb: Problem, backends: Sequence[str]) -> Case:
    model = tl_scan_model(pb)
    runners = [jax_runner(pb), *(tl_runner(model, b, WRT) for b in backends)]
    if torch is not None:
        runners.append(torch_runner(pb))
    return Case(name, f"LSTM tl.scan {pb.name}", runners, pb.feeds)


def while_case(pb: Problem, backends: Sequence[str], trips: int) -> Case:
    """``limit`` halfway between the loop's ``total`` after ``trips - 1`` steps and after
    ``trips`` (stepped eagerly in JAX), so that it stops after exactly ``trips``."""
    h, c = pb.feeds["h0"], pb.feeds["c0"]
    p = {k: jnp.asarray(v) for k, v in pb.feeds.items()}
    sums = [0.0]
    for t in range(trips + 1):
        h, c = lstm(JX, p, h, c, p["xs"][t])
        sums.append(sums[-1] + float(step_loss(JX, h)))
    limit = np.float32((sums[trips - 1] + sums[trips]) / 2)  # stops once total >= limit
    feeds = {**pb.feeds, "limit": limit}
    model = tl_while_model(pb)
    runners = [jax_while_runner(pb), *(tl_runner(model, b, WRT) for b in backends)]
    if torch is not None:
        runners.append(torch_runner(pb, while_loop=True))
    n = int(model.run(feeds)["n"])
    return Case(
        "while", f"LSTM tl.while_loop {pb.name}, {n} trips (data-dependent)", runners, feeds, n
    )


def traced_peak(run: Callable[[], Any]) -> int:
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        run()
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f}" if seconds < 10 else f"{seconds:.1f} s"


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f}"


@click.command()
@click.option("--repeats", default=15, show_default=True, help="Least timed calls per runner.")
@click.option(
    "--seconds", default=1.0, show_default=True, help="Least timed seconds per runner and case."
)
@click.option("--warmup", default=2, show_default=True, help="Untimed rounds first.")
@click.option("--backends", default="compiled,jax", show_default=True)
@click.option("--memory-steps", default=1000, show_default=True, help="T of the memory rows.")
@click.option(
    "--ks", default="10,100", show_default=True, help="The int checkpoints of the memory rows."
)
@click.option(
    "--reference-memory/--no-reference-memory",
    default=True,
    show_default=True,
    help="Memory rows on the reference backend too (final state; about 1 minute at T=1000).",
)
@click.option("--quick", is_flag=True, help="5 rounds, 1 warm-up, memory at T=200.")
def main(
    repeats: int,
    seconds: float,
    warmup: int,
    backends: str,
    memory_steps: int,
    ks: str,
    reference_memory: bool,
    quick: bool,
) -> None:
    """Median time of one gradient call, tensorloop against jax.grad and torch; and the memory
    tensorloop's checkpointing saves."""
    warnings.simplefilter("ignore")  # handoffs are collected and printed instead
    if quick:
        repeats, seconds, warmup, memory_steps = 5, 0.2, 1, 200
    names = [b.strip() for b in backends.split(",") if b.strip()]
    import_ahead([f"tensorloop-{b}" for b in names])
    console = Console(width=max(Console().width, 140))
    console.print(
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, numpy {np.__version__}, jax {jax.__version__}, "
        f"torch {torch.__version__ if torch is not None else 'missing (column skipped)'}, "
        f"tensorloop {version('tensorloop')}; load average "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    console.print(
        f"warmup {warmup}, at least {repeats} calls and {seconds} s per runner, float32, "
        f"{threads()} thread(s) per runtime "
        f"(OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}, torch "
        f"{torch.get_num_threads() if torch is not None else '-'}, "
        f"XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r})"
    )
    started = time.perf_counter()

    cases = [
        lstm_case("lstm-small", Problem(50, 4, 32), names),
        lstm_case("lstm-medium", Problem(200, 16, 128), names),
        while_case(Problem(200, 4, 32, seed=1), names, 150),
    ]
    table = Table(title="Median time of one gradient call (loss + every gradient), ms")
    table.add_column("case")
    table.add_column("model")
    order = ["jax.grad", *(f"tl-{b}" for b in names), *(["torch"] if torch is not None else [])]
    for who in order:
        table.add_column(who, justify="right")
    for who in order[1:]:
        table.add_column(f"{who} / jax", justify="right")
    notes: list[str] = []
    for case in cases:
        start = time.perf_counter()
        first = {r.name: r.run(case.feeds) for r in case.runners}
        want = first["jax.grad"]
        checks = {name: agreement(got, want) for name, got in first.items()}
        compile_s = time.perf_counter() - start
        times = round_robin(case.runners, case.feeds, warmup, repeats, seconds)
        counts = ", ".join(f"{k} {len(v)}" for k, v in times.items())
        med = {k: statistics.median(v) for k, v in times.items()}
        table.add_row(
            case.name,
            case.description,
            *(_ms(med[w]) for w in order),
            *(f"{med[w] / med['jax.grad']:.2f}x" for w in order[1:]),
        )
        console.print(
            f"{case.name}: first calls (build, compile, check) {compile_s:.1f} s; agreement "
            "with jax.grad (max |diff| / max |grad|): "
            + ", ".join(f"{k} {v}" for k, v in checks.items() if k != "jax.grad")
            + f"; timed calls: {counts}"
        )
        for r in case.runners:
            for h in sorted(r.handoffs):
                notes.append(f"{case.name} {r.name} handed to compiled: {h}")
    console.print(table)
    for n in notes:
        console.print(f"  - {n}")

    # -- memory ---------------------------------------------------------------------------------
    options: list[int | str | None] = [None, "sqrt", *(int(k) for k in ks.split(",") if k)]
    pb = Problem(memory_steps, 16, 128, seed=2)
    mem = Table(
        title=f"Gradient at T={memory_steps}, B=16, H=128: tracemalloc peak of one call "
        "(Python + NumPy allocations, MiB)"
    )
    for col in ("backend", "loss / wrt", "checkpoint", "peak MiB", "/ None", "ms", "/ None"):
        left = col in ("backend", "loss / wrt", "checkpoint")
        mem.add_column(col, justify="left" if left else "right")
    configs = [("compiled", True, options), ("compiled", False, options)]
    if reference_memory:
        configs.append(("reference", False, options[:3]))
    for backend, every_step, chosen in configs:
        model = tl_scan_model(pb, every_step)
        wrt = WRT if every_step else (*STATE, *WEIGHTS)
        label = "every step / all" if every_step else "final state / W, U, b, h0, c0"
        base_peak = base_time = 0.0
        first: tuple[float, Grads] | None = None
        for option in chosen:
            runner = tl_runner(model, backend, wrt, checkpoint=option)
            if backend == "compiled":  # plan, then the median of 3 untraced calls
                got = runner.run(pb.feeds)
                seconds = []
                for _ in range(3):
                    start = time.perf_counter()
                    runner.run(pb.feeds)
                    seconds.append(time.perf_counter() - start)
                t = statistics.median(seconds)
                peak = traced_peak(lambda runner=runner: runner.run(pb.feeds))
            else:  # no plan to warm; one call, traced, timed as it is (tracemalloc slows it)
                start = time.perf_counter()
                peak = traced_peak(lambda runner=runner: runner.run(pb.feeds))
                t = time.perf_counter() - start
                got = runner.run(pb.feeds) if first is None else None
            if first is None:
                first = got
            elif got is not None:
                agreement(got, first)
            if option is None:
                base_peak, base_time = peak, t
            mem.add_row(
                backend,
                label,
                repr(option),
                _mib(peak),
                f"{peak / base_peak:.2f}",
                _ms(t),
                f"{t / base_time:.2f}x",
            )
    stored = 2 * pb.B * pb.H * 4
    console.print(mem)
    console.print(
        f"ms: compiled, the median of 3 untraced warm calls; reference, the traced call itself. "
        f"One step's carried values (h, c) are {stored / 1024:.0f} KiB: "
        f"{_mib(stored * memory_steps)} MiB for all {memory_steps}. T-long arrays: xs, ys, "
        f"their cotangents {_mib(pb.B * pb.H * 4 * memory_steps)} MiB each; one step's gates "
        f"for all T (x @ W, [T, B, 4H]) {_mib(pb.B * pb.H * 16 * memory_steps)} MiB."
    )

    # -- the jax backend with checkpointing -----------------------------------------------------
    pb = Problem(200, 16, 128)
    runner = tl_runner(tl_scan_model(pb), "jax", WRT, checkpoint="sqrt")
    agreement(runner.run(pb.feeds), jax_runner(pb).run(pb.feeds))
    seconds = []
    for _ in range(3):
        start = time.perf_counter()
        runner.run(pb.feeds)
        seconds.append(time.perf_counter() - start)
    console.print(
        f"tl-jax, lstm-medium, checkpoint='sqrt': {_ms(statistics.median(seconds))} ms per call "
        f"(median of 3); handed to compiled: {'; '.join(sorted(runner.handoffs)) or 'nothing'}"
    )
    console.print(f"Total {time.perf_counter() - started:.0f} s.")


THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
ONE_THREAD_XLA = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"


def threads() -> str:
    """How many threads each runtime was given (``GRAD_BENCH_THREADS``, 1 by default)."""
    return os.environ.get("GRAD_BENCH_THREADS", "1")


def restart_with_threads() -> None:
    """Run this script again in a process whose runtimes use ``threads()`` threads each:
    OpenBLAS (under NumPy and tensorloop's backends), torch and XLA's CPU client read their
    thread counts when they load, before ``main`` could set them. On a shared 2-core VM the
    threads of one runtime contend with another's and with other load, and medians swung by
    10x with the default threads."""
    if os.environ.get("GRAD_BENCH_CHILD") == "1":
        return
    env = {**os.environ, "GRAD_BENCH_CHILD": "1"}
    for name in THREAD_VARIABLES:
        env.setdefault(name, threads())
    if threads() == "1":
        env.setdefault("XLA_FLAGS", ONE_THREAD_XLA)
    os.execve(sys.executable, [sys.executable, *sys.argv], env)


if __name__ == "__main__":
    restart_with_threads()
    main()
