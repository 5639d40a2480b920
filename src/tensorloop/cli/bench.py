"""``tensorloop bench``: latency, throughput, first run and memory of one model per runtime."""

from __future__ import annotations

import click
from rich.table import Table

from ..tools.bench import HANDOFFS_NOTE, MEMORY_NOTE, TRACED_NOTE, Benchmark, bench
from .common import console, main, plain, print_json
from .compare import feed_options, runtimes_option
from .inputs import Inputs, input_options


def _ms(seconds: float) -> str:
    ms = seconds * 1e3
    return f"{ms:.3f}" if ms < 10 else f"{ms:.1f}"


def _mib(n: int | None) -> str:
    return "-" if n is None else f"{n / 2**20:.1f}"


def show_benchmark(b: Benchmark) -> None:
    out = console()
    out.print(
        plain(
            f"{b.model}: warm-up {b.warmup} run(s), then {b.seconds:g} s of runs per runtime, "
            "round-robin"
        )
    )
    table = Table()
    for col, justify in (
        ("runtime", "left"),
        ("runs", "right"),
        ("median ms", "right"),
        ("p90 ms", "right"),
        ("runs/s", "right"),
        (f"/ {b.baseline}", "right"),
        ("first run ms", "right"),
        ("peak RSS MiB", "right"),
        ("traced KiB", "right"),
        ("handoffs", "right"),
    ):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for t in b.timings:
        table.add_row(
            plain(t.runtime),
            str(t.runs),
            _ms(t.median_s),
            _ms(t.p90_s),
            f"{t.throughput:.1f}",
            "-" if t.ratio is None else f"{t.ratio:.2f}x",
            _ms(t.first_run_s),
            _mib(t.peak_rss_bytes),
            "-" if t.traced_peak_bytes is None else f"{t.traced_peak_bytes / 1024:.1f}",
            "-" if t.handoffs is None else str(t.handoffs),
        )
    if b.timings:
        out.print(table)
        out.print(plain("first run: load + first run, libraries imported beforehand"))
        out.print(plain(f"peak RSS: {MEMORY_NOTE[b.memory_method]}"))
        out.print(plain(f"traced: {TRACED_NOTE}"))
        if any(t.handoffs for t in b.timings):
            out.print(plain(f"handoffs: {HANDOFFS_NOTE}"))
    for name, reason in b.skipped.items():
        out.print(plain(f"skipped {name}: {reason}"))
    for name, reason in b.failed.items():
        out.print(plain(f"FAILED {name}: {reason}"), style="red")


@main.command("bench")
@click.argument("model_path", metavar="MODEL", type=click.Path(exists=True, dir_okay=False))
@input_options
@runtimes_option
@click.option(
    "--seconds",
    type=click.FloatRange(min=0),
    default=1.0,
    show_default=True,
    help="Timed runs per runtime go on this long (at least one run).",
)
@click.option(
    "--warmup",
    type=click.IntRange(min=0),
    default=2,
    show_default=True,
    help="Untimed runs per runtime before timing, after the first run.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the numbers as JSON (seconds, bytes).")
def bench_command(
    model_path: str,
    seconds: float,
    warmup: int,
    as_json: bool,
    inputs: Inputs,
    runtimes: str,
) -> None:
    """Time MODEL on every runtime in one process: first run (load + run), then warm-up runs,
    then round-robin timed runs; median and p90 latency, throughput, ratio to onnxruntime (or to
    the first runtime), peak memory. A runtime that cannot load the model is skipped; exit
    status 1 when one fails to run it."""
    result = bench(model_path, **feed_options(inputs, runtimes), seconds=seconds, warmup=warmup)
    if as_json:
        print_json(result.to_dict())
    else:
        show_benchmark(result)
    if result.failed or not result.timings:
        click.get_current_context().exit(1)
