"""``tensorloop run``: run a model once on given, loaded or random inputs; a table of its
outputs with their statistics, per-loop iteration counts and times, JSON for scripts."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import click
import numpy as np
from rich.console import Group as RichGroup
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from ..errors import TensorloopError
from ..ir.graph import Graph
from ..limits import Limits
from ..model import Model, Outputs
from ..reference.runtime import LOOP_SEPARATOR, LoopObserver, loop_label
from ..reference.trace import TraceEntry
from ..tensor.dtypes import from_numpy
from ..tools.inputs import write_inputs_file
from .common import (
    backend_option,
    console,
    describe_error,
    fail,
    load_model,
    main,
    max_iterations_option,
    plain,
    print_json,
    timeout_option,
    writable_file,
    writable_folder,
)
from .inputs import Inputs, input_options

PROGRESS_AFTER = 0.5
"""Seconds a run goes on before its progress is shown (on a terminal)."""
TRACE_ROWS = 5
"""Traced values shown at each end of a trace; the middle is elided."""


@main.command()
@click.argument("model_path", metavar="MODEL", type=click.Path(exists=True, dir_okay=False))
@input_options
@click.option(
    "--outputs",
    "output_names",
    metavar="NAME,...",
    help="Show and save only these outputs.",
)
@click.option(
    "--trace",
    "trace_names",
    multiple=True,
    metavar="VALUE",
    help="Record a loop-body value at every iteration (see also `tensorloop trace`).",
)
@click.option(
    "--loops",
    "watch_loops",
    is_flag=True,
    help="Count and time each loop's iterations, with live progress on a terminal "
    "(the run plans without loop optimizations, so it may be slower).",
)
@max_iterations_option
@timeout_option
@click.option(
    "--max-tensor-bytes",
    type=int,
    default=Limits.max_tensor_bytes,
    show_default=True,
    help="Refuse any tensor larger than this, before allocating it.",
)
@click.option(
    "--max-stacked-bytes",
    type=int,
    default=Limits.max_stacked_bytes,
    show_default=True,
    help="Refuse a run whose loops stack more than this into their outputs.",
)
@click.option(
    "--max-total-iterations",
    type=int,
    default=Limits.max_total_iterations,
    show_default=True,
    help="Stop a run whose loops, nested ones included, run their bodies more often than this.",
)
@click.option(
    "--max-run-bytes",
    type=int,
    default=Limits.max_run_bytes,
    show_default=True,
    help="Refuse a run that would hold more than this in live tensors at once.",
)
@click.option(
    "--max-nodes",
    type=int,
    default=Limits.max_nodes,
    show_default=True,
    help="Refuse a model of more nodes than this (bodies and inlined functions included).",
)
@backend_option()
@click.option("--save-inputs", metavar="FILE.npz", help="Write the inputs used to an .npz file.")
@click.option(
    "--save-outputs",
    metavar="FOLDER",
    help="Write each output as NAME.npy into this folder.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing but errors.")
def run(
    model_path: str,
    inputs: Inputs,
    output_names: str | None,
    trace_names: tuple[str, ...],
    watch_loops: bool,
    max_iterations: int,
    timeout: float | None,
    max_tensor_bytes: int,
    max_stacked_bytes: int,
    max_total_iterations: int,
    max_run_bytes: int,
    max_nodes: int,
    backend: str,
    save_inputs: str | None,
    save_outputs: str | None,
    as_json: bool,
    quiet: bool,
) -> None:
    """Run MODEL once and print its outputs."""
    limits = Limits(
        max_tensor_bytes=max_tensor_bytes,
        max_stacked_bytes=max_stacked_bytes,
        max_total_iterations=max_total_iterations,
        max_run_bytes=max_run_bytes,
        max_nodes=max_nodes,
        max_iterations=max_iterations,
        timeout=timeout,
    )
    inputs_target = writable_file(save_inputs) if save_inputs else None
    outputs_target = writable_folder(save_outputs) if save_outputs else None
    started = time.perf_counter()
    model = load_model(model_path, limits, backend)
    load_s = time.perf_counter() - started

    feeds = inputs.feeds(model)
    wanted = select_outputs(model, output_names)
    if inputs_target is not None:
        write_inputs_file(inputs_target, feeds)

    show_progress = not quiet and not as_json and sys.stdout.isatty() and sys.stderr.isatty()
    watch = LoopCounter(model.graph) if watch_loops else None
    started = time.perf_counter()
    with Progress(watch, show_progress):
        outputs = model.run(feeds, trace=trace_names, backend=backend, observer=watch)
    run_s = time.perf_counter() - started

    shown = {name: outputs[name] for name in wanted}
    if outputs_target is not None:
        for name, value in shown.items():
            save_value(outputs_target, name, value)
    loops = watch.summary() if watch is not None else []
    if as_json:
        print_json(
            {
                "model": model_path,
                "backend": backend,
                "inputs": [describe_input(k, v) for k, v in feeds.items()],
                "outputs": [output_stats(k, v) for k, v in shown.items()],
                "loops": loops,
                "trace": {k: len(v) for k, v in outputs.trace.items()},
                "handoffs": [asdict(h) for h in outputs.handoffs],
                "time": {"load_s": load_s, "run_s": run_s},
            }
        )
        return
    if quiet:
        return
    out = console()
    out.print(outputs_table(Path(model_path).name, shown))
    print_trace(out, outputs)
    for loop in loops:
        out.print(plain(loop_line(loop)))
    for handoff in outputs.handoffs:  # what another backend ran, and why
        out.print(plain(f"handoff: {handoff}"))
    out.print(plain(f"ran in {_seconds(run_s)} on {backend} (loaded in {_seconds(load_s)})"))


# -- inputs and outputs ---------------------------------------------------------------------
def select_outputs(model: Model, names: str | None) -> list[str]:
    if not names:
        return list(model.output_names)
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    unknown = [n for n in wanted if n not in model.output_names]
    if unknown:
        fail(
            f"model has no output {', '.join(repr(n) for n in unknown)}; outputs are "
            f"{', '.join(model.output_names)}"
        )
    return wanted


def save_value(folder: Path, name: str, value: Any) -> None:
    stem = name.replace("/", "_").replace("\\", "_") or "output"
    try:
        if isinstance(value, list):
            np.savez(folder / f"{stem}.npz", *[np.asarray(v) for v in value])
        elif value is not None:
            np.save(folder / f"{stem}.npy", np.asarray(value))
    except OSError as exc:
        fail(f"cannot write into {folder}: {describe_error(exc)}")


# -- outputs ----------------------------------------------------------------------------------
def _dtype_name(arr: np.ndarray[Any, Any]) -> str:
    try:
        return from_numpy(arr).short
    except TensorloopError:
        return str(arr.dtype.name)


def describe_input(name: str, value: Any) -> dict[str, Any]:
    if isinstance(value, list):
        return {"name": name, "dtype": "sequence", "shape": [len(value)]}
    arr = np.asarray(value)
    return {"name": name, "dtype": _dtype_name(arr), "shape": list(arr.shape)}


def output_stats(name: str, value: Any) -> dict[str, Any]:
    """Name, dtype, shape, min/max/mean of the finite elements, NaN and Inf counts and a short
    preview of one output."""
    stats: dict[str, Any] = {"name": name, "dtype": "", "shape": None}
    stats.update(min=None, max=None, mean=None, nan=0, inf=0, preview="")
    if value is None:
        return {**stats, "dtype": "none"}
    if isinstance(value, list):
        return {
            **stats,
            "dtype": "sequence",
            "shape": [len(value)],
            "preview": f"{len(value)} items",
        }
    arr = np.asarray(value)
    stats.update(dtype=_dtype_name(arr), shape=list(arr.shape), preview=preview(arr))
    numeric = arr
    if arr.dtype.kind not in "biuf":
        try:
            numeric = arr.astype(np.float64)
        except (TypeError, ValueError):
            return stats
    if numeric.size == 0:
        return stats
    as_float = numeric.astype(np.float64)
    nan, inf = np.isnan(as_float), np.isinf(as_float)
    finite = as_float[~(nan | inf)]
    stats.update(nan=int(nan.sum()), inf=int(inf.sum()))
    if finite.size:
        stats.update(min=float(finite.min()), max=float(finite.max()), mean=float(finite.mean()))
    return stats


def preview(arr: np.ndarray[Any, Any], items: int = 3) -> str:
    """The first and last few elements, flattened: ``[0.1 0.2 0.3 ... 0.9]``."""
    flat = arr.reshape(-1)
    if arr.ndim == 0:
        flat = arr.reshape(1)
    with np.printoptions(precision=4, threshold=2 * items, edgeitems=items, linewidth=10**6):
        text = np.array2string(flat, separator=" ")
    return text if arr.ndim else text[1:-1]


def _number(x: Any) -> str:
    return "-" if x is None else f"{x:.6g}"


def outputs_table(title: str, outputs: dict[str, Any]) -> Table:
    table = Table(title=plain(f"{title}: outputs"), title_justify="left")
    for col in ("output", "dtype", "shape", "min", "max", "mean", "NaN", "Inf", "preview"):
        table.add_column(
            col, justify="right" if col in ("min", "max", "mean", "NaN", "Inf") else "left"
        )
    for name, value in outputs.items():
        s = output_stats(name, value)
        shape = "-" if s["shape"] is None else f"[{','.join(map(str, s['shape']))}]"
        table.add_row(
            plain(name),
            plain(s["dtype"]),
            plain(shape),
            _number(s["min"]),
            _number(s["max"]),
            _number(s["mean"]),
            str(s["nan"]),
            str(s["inf"]),
            plain(s["preview"]),
        )
    return table


def print_trace(out: Any, outputs: Outputs) -> None:
    for name, entries in outputs.trace.items():
        t = Table(title=plain(f"trace of %{name} ({len(entries)} values)"), title_justify="left")
        t.add_column("iteration")
        t.add_column("value")
        shown: list[TraceEntry | None] = list(entries)
        if len(entries) > 2 * TRACE_ROWS:
            shown = [*entries[:TRACE_ROWS], None, *entries[-TRACE_ROWS:]]
        for entry in shown:
            if entry is None:
                t.add_row("...", plain(f"{len(entries) - 2 * TRACE_ROWS} more"))
                continue
            value = np.asarray(entry.value) if not isinstance(entry.value, list) else entry.value
            text = preview(value) if isinstance(value, np.ndarray) else repr(value)
            t.add_row(plain(",".join(map(str, entry.iteration)) or "-"), plain(text))
        out.print(t)


def _seconds(s: float) -> str:
    return f"{s * 1e3:.3g} ms" if s < 1 else f"{s:.3g} s"


def loop_line(loop: dict[str, Any]) -> str:
    runs = loop["runs"]
    timing = "" if loop["seconds"] is None else f" in {_seconds(loop['seconds'])}"
    rate = ""
    if loop["seconds"] and loop["iterations"] > 1:
        rate = f" ({loop['iterations'] / loop['seconds']:,.0f} it/s)"
    return (
        f"loop {loop['path']}: {loop['iterations']:,} iterations over {runs} "
        f"run{'s' if runs != 1 else ''}{timing}{rate}"
    )


# -- watching loops ---------------------------------------------------------------------------
@dataclass
class LoopStats:
    """One loop's iterations and runs (a run: the loop from its first iteration to its end)
    and their time in all."""

    path: str
    iterations: int = 0
    runs: int = 0
    seconds: float = 0.0
    started: float | None = None
    """When the loop's current run began (None between runs)."""
    last: float = 0.0
    """When its latest iteration began."""

    def close(self, now: float) -> None:
        """End the current run of the loop (if one is going) at ``now``."""
        if self.started is not None:
            self.seconds += now - self.started
            self.started = None


class LoopCounter(LoopObserver):
    """The observer of a ``--loops`` run: counts and times each loop's iterations as they
    start; ``current`` is the loop that ran the latest iteration (for the progress display)."""

    def __init__(self, graph: Graph | None = None) -> None:
        self.loops: dict[tuple[str, ...], LoopStats] = {}
        self.current: LoopStats | None = None
        for path in loop_paths(graph) if graph is not None else ():
            self.loops[path] = LoopStats(LOOP_SEPARATOR.join(path))

    def on_iteration(self, path: tuple[str, ...], iteration: int) -> None:
        now = time.perf_counter()
        stats = self.loops.get(path)
        if stats is None:
            stats = self.loops[path] = LoopStats(LOOP_SEPARATOR.join(path))
        if iteration == 0:
            stats.close(stats.last)  # a run the loop did not end (never, unless rerun)
            stats.runs += 1
            stats.started = now
        stats.iterations += 1
        stats.last = now
        self.current = stats

    def on_loop_end(self, path: tuple[str, ...], trips: int) -> None:
        stats = self.loops.get(path)
        if stats is not None:
            stats.close(time.perf_counter())

    def summary(self) -> list[dict[str, Any]]:
        """Each loop of the model (outer first), with its iterations, runs and seconds (None
        where it ran no iteration)."""
        out = []
        for stats in self.loops.values():
            stats.close(stats.last)
            out.append(
                {
                    "path": stats.path,
                    "iterations": stats.iterations,
                    "runs": stats.runs,
                    "seconds": stats.seconds if stats.iterations else None,
                }
            )
        return out


def loop_paths(graph: Graph, outer: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """The loop path of every loop of ``graph`` (loops within loops too, outer first), as the
    run's observer is given them (``loop_label``; a branch adds nothing)."""
    for node in graph.nodes:
        path = (*outer, loop_label(node)) if node.op == "Loop" else outer
        if node.op == "Loop":
            yield path
        for sub in node.subgraphs.values():
            yield from loop_paths(sub, path)


class _ProgressView:
    """What the live display shows: nothing for the first half second, then a pulsing bar
    with the time so far and, when loops are watched, the loop running and its rate."""

    def __init__(self, watch: LoopCounter | None) -> None:
        self.watch = watch
        self.start = time.perf_counter()

    def __rich__(self) -> Any:
        elapsed = time.perf_counter() - self.start
        if elapsed < PROGRESS_AFTER:
            return Text("")
        line = f"running, {elapsed:.1f} s"
        stats = self.watch.current if self.watch is not None else None
        if stats is not None:
            rate = stats.iterations / elapsed if elapsed else 0.0
            line = (
                f"loop {stats.path}: {stats.iterations:,} iterations, {rate:,.0f} it/s, "
                f"{elapsed:.1f} s"
            )
        elif self.watch is None:
            line += " (--loops counts iterations)"
        return RichGroup(ProgressBar(total=None, width=30), Text(line))


class Progress:
    """A live progress display on stderr while the run goes on, when ``shown``."""

    def __init__(self, watch: LoopCounter | None, shown: bool) -> None:
        self.live = (
            Live(_ProgressView(watch), console=console(stderr=True), transient=True)
            if shown
            else None
        )

    def __enter__(self) -> None:
        if self.live is not None:
            self.live.start()

    def __exit__(self, *exc: object) -> None:
        if self.live is not None:
            self.live.stop()
