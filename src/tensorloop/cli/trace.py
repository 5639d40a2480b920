"""``tensorloop trace``: what values inside loops were at each iteration, keyed by loop path."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click
from rich.table import Table

from ..errors import InputError, TensorloopError
from ..limits import Limits
from ..tools.trace import STATISTICS, Iterations, SummaryRow, Trace, loop_text, save
from .common import (
    CONTEXT_SETTINGS,
    backend_option,
    console,
    describe_error,
    fail,
    load_model,
    main,
    max_iterations_option,
    plain,
    timeout_option,
    writable_file,
)
from .inputs import Inputs, input_options

DEFAULT_ROWS = 20
"""Rows of each table on the terminal; longer traces show their first and last rows."""


@main.command(context_settings=CONTEXT_SETTINGS)
@click.argument("model_path", metavar="MODEL", type=click.Path(exists=True, dir_okay=False))
@input_options
@click.option(
    "--value",
    "values",
    multiple=True,
    required=True,
    metavar="NAME[,NAME]",
    help="A value to record at every iteration of the loops it is in; repeatable.",
)
@click.option(
    "--loop",
    "loops",
    multiple=True,
    metavar="PATH",
    help="Only this loop: its path ('outer > inner') or its own label; repeatable.",
)
@click.option("--every", default=1, show_default=True, help="Keep every K-th iteration.")
@click.option(
    "--iterations",
    metavar="A:B",
    help="Keep iterations A to B-1 of the innermost loop (either end may be left out).",
)
@click.option(
    "-o",
    "--output",
    metavar="FILE",
    help="Write the trace: .npz (values stacked per loop), .csv (statistics), .png (a plot).",
)
@click.option(
    "--stat",
    "stats",
    default="norm,min,max",
    show_default=True,
    metavar="S[,S]",
    help=f"The statistics a plot shows: {', '.join(STATISTICS)}.",
)
@click.option(
    "--rows",
    default=DEFAULT_ROWS,
    show_default=True,
    help="Rows per table on the terminal; the middle of a longer trace is left out.",
)
@backend_option("Where the model runs (every backend records the same trace).")
@max_iterations_option
@timeout_option
def trace(
    model_path: str,
    values: tuple[str, ...],
    loops: tuple[str, ...],
    every: int,
    iterations: str | None,
    output: str | None,
    stats: str,
    rows: int,
    inputs: Inputs,
    backend: str,
    max_iterations: int,
    timeout: float | None,
) -> None:
    """Run MODEL and show VALUE at every iteration of its loops: per loop path, the norm, min,
    max and mean of each iteration's value; -o saves the trace or plots it."""
    names = list(dict.fromkeys(n.strip() for v in values for n in v.split(",") if n.strip()))
    statistics = [s.strip() for s in stats.split(",") if s.strip()]
    target = writable_file(output) if output else None
    try:
        chosen = Iterations.parse(iterations, every)
        for s in statistics:
            if s not in STATISTICS:
                raise InputError(f"--stat: unknown statistic '{s}'; use {', '.join(STATISTICS)}")
        if target is not None and target.suffix.lower() not in (".npz", ".csv", ".png"):
            raise InputError(f"-o {output}: write a trace to .npz, .csv or .png")
        limits = Limits(max_iterations=max_iterations, timeout=timeout)
    except TensorloopError as exc:
        raise click.UsageError(str(exc)) from None
    model = load_model(model_path, limits, backend)
    try:
        outputs = model.run(inputs.feeds(model), trace=names)
        traces = select(outputs.trace, names, loops, chosen)
    except TensorloopError as exc:
        fail(describe_error(exc))
    show(Path(model_path).name, traces, rows)
    if target is not None:
        try:
            save(traces, target, statistics, title=f"{Path(model_path).name}: {', '.join(names)}")
        except OSError as exc:
            fail(describe_error(exc))
        click.echo(f"wrote {target}")


def select(
    traces: dict[str, Trace], names: Sequence[str], loops: Sequence[str], chosen: Iterations
) -> dict[str, Trace]:
    """Each name's trace in ``loops`` (every loop if none) at the ``chosen`` iterations; an
    error only when a loop holds none of the names."""
    full = {name: traces.get(name, Trace(name)) for name in names}
    out = {name: t.select(iterations=chosen) for name, t in full.items()}
    if not loops:
        return out
    paths: dict[str, set[tuple[str, ...]]] = {name: set() for name in names}
    for loop in loops:
        errors: list[InputError] = []
        for name in names:
            try:
                paths[name].update(full[name].match(loop))
            except InputError as exc:
                errors.append(exc)
        if len(errors) == len(names):
            raise errors[0]
    return {name: Trace(name, (e for e in t if e.loop in paths[name])) for name, t in out.items()}


def show(model: str, traces: dict[str, Trace], rows: int) -> None:
    """A table per name and loop path, its middle rows left out beyond ``rows``."""
    out = console()
    for name, entries in traces.items():
        if not entries:
            out.print(plain(f"{model}: %{name} was not recorded (its loop ran no iteration)"))
            continue
        summary = entries.summary()
        for path in entries.loops:
            group = [r for r in summary if r.loop == path]
            where = f" in loop {loop_text(path)}" if path else " (outside every loop)"
            table = Table(title=plain(f"%{name}{where}: {len(group)} values"), title_justify="left")
            for col in ("iteration", "type", *STATISTICS):
                table.add_column(col, justify="left" if col in ("iteration", "type") else "right")
            for row in elide(group, rows):
                if row is None:
                    table.add_row(plain(f"… {len(group) - max(rows, 2)} more …"), *[""] * 5)
                else:
                    table.add_row(*_cells(row))
            out.print(table)


def elide(rows: Sequence[SummaryRow], limit: int) -> list[SummaryRow | None]:
    """``rows``, or their first and last ``limit // 2`` with None (the gap) between."""
    limit = max(limit, 2)
    if len(rows) <= limit:
        return list(rows)
    head = (limit + 1) // 2
    return [*rows[:head], None, *rows[len(rows) - (limit - head) :]]


def _cells(row: SummaryRow) -> list[Any]:
    counters = ",".join(map(str, row.iteration)) or "-"
    return [plain(counters), plain(row.type), *(f"{row.statistic(s):.5g}" for s in STATISTICS)]
