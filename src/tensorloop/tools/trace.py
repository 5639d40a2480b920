"""A run's traces written out: each name's values per loop path stacked into an .npz, their
statistics (norm, min, max, mean per value) as .csv, or plotted to a .png; for the command line
(``tensorloop trace``) and notebooks.

The traces themselves (``Trace``, ``TraceEntry``, loop paths, stacking, filters and summaries)
are run-time types, in ``reference/trace.py``; they are re-exported here.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError
from ..reference.trace import (
    LOOP_SEPARATOR,
    STATISTICS,
    Iterations,
    LoopSpec,
    StackedTrace,
    SummaryRow,
    Trace,
    TraceEntry,
    as_trace,
    counters_text,
    loop_text,
    summarize,
)

__all__ = [
    "CSV_COLUMNS",
    "LOOP_SEPARATOR",
    "STATISTICS",
    "Iterations",
    "LoopSpec",
    "StackedTrace",
    "SummaryRow",
    "Trace",
    "TraceEntry",
    "as_trace",
    "loop_text",
    "npz_key",
    "plot",
    "save",
    "summarize",
    "write_csv",
    "write_npz",
]


# -- files ----------------------------------------------------------------------------------
def npz_key(name: str, loop: Sequence[str]) -> str:
    """The .npz key of ``name``'s values in ``loop``: ``name@loop path``; its loop counters are
    under that key followed by ``:iteration``."""
    return f"{name}@{loop_text(loop)}"


def write_npz(traces: Mapping[str, Sequence[TraceEntry]], path: str | Path) -> None:
    """Each name's values per loop path stacked (``npz_key``), with their loop counters. Values
    that do not stack (a shape that changes) are kept one by one, under the key followed by
    ``#k``."""
    arrays: dict[str, np.ndarray[Any, Any]] = {}
    for name, entries in traces.items():
        for loop, group in as_trace(name, entries).by_loop().items():
            key = npz_key(name, loop)
            try:
                stacked = group.stacked(loop)
            except InputError:
                for k, e in enumerate(group):
                    arrays[f"{key}#{k}"] = np.asarray(e.value)
                counters = [e.iteration for e in group]
                arrays[f"{key}:iteration"] = np.array(counters, np.int64).reshape(len(group), -1)
                continue
            arrays[key] = stacked.values
            arrays[f"{key}:iteration"] = stacked.iterations
    np.savez(Path(path), allow_pickle=False, **arrays)


CSV_COLUMNS = ("value", "loop", "iteration", "step", "type", *STATISTICS)


def write_csv(traces: Mapping[str, Sequence[TraceEntry]], path: str | Path) -> None:
    """One row per recorded value: its name, loop path, loop counters (joined by ``,``), its
    position in its loop path, its type and statistics."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(CSV_COLUMNS)
        for r in summarize(traces):
            stats = [repr(r.statistic(s)) for s in STATISTICS]
            out.writerow([r.name, r.loop_path, counters_text(r.iteration), r.step, r.type, *stats])


def plot(
    traces: Mapping[str, Sequence[TraceEntry]],
    path: str | Path,
    statistics: Sequence[str] = ("norm",),
    title: str | None = None,
) -> None:
    """A PNG (or any suffix matplotlib writes) of ``statistics`` against the iteration: one
    panel per statistic, one line per name and loop path. The x axis is the loop's counter,
    or the step (the position in run order) where loops are nested."""
    for s in statistics:
        if s not in STATISTICS:
            raise InputError(f"unknown statistic '{s}'; choose from {', '.join(STATISTICS)}")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = summarize(traces)
    lines: dict[tuple[str, tuple[str, ...]], list[SummaryRow]] = {}
    for r in rows:
        lines.setdefault((r.name, r.loop), []).append(r)
    nested = any(len(r.iteration) > 1 for r in rows)
    fig, axes = plt.subplots(
        len(statistics), 1, sharex=True, squeeze=False, figsize=(8, 1 + 2.2 * len(statistics))
    )
    try:
        for ax, stat in zip(axes[:, 0], statistics, strict=True):
            for (name, loop), group in lines.items():
                xs = [r.step if nested or not r.iteration else r.iteration[-1] for r in group]
                label = f"{name} @ {loop_text(loop)}" if loop else name
                ax.plot(xs, [r.statistic(stat) for r in group], label=label, linewidth=1.2)
            ax.set_ylabel(stat)
            ax.grid(True, alpha=0.3)
        axes[-1, 0].set_xlabel("step (nested iterations in run order)" if nested else "iteration")
        axes[0, 0].legend(fontsize="small", loc="best")
        if title:
            fig.suptitle(title)
        fig.tight_layout()
        fig.savefig(Path(path), dpi=110)
    finally:
        plt.close(fig)


def save(
    traces: Mapping[str, Sequence[TraceEntry]],
    path: str | Path,
    statistics: Sequence[str] = ("norm",),
    title: str | None = None,
) -> None:
    """Write ``traces`` by suffix: ``.npz`` (stacked values), ``.csv`` (statistics per value)
    or ``.png``/``.svg``/``.pdf`` (a plot of ``statistics``)."""
    suffix = Path(path).suffix.lower()
    if suffix == ".npz":
        write_npz(traces, path)
    elif suffix == ".csv":
        write_csv(traces, path)
    elif suffix in (".png", ".svg", ".pdf"):
        plot(traces, path, statistics, title)
    else:
        raise InputError(f"cannot write a trace to '{path}': use .npz, .csv, .png, .svg or .pdf")
