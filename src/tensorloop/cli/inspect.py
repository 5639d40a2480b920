"""``tensorloop inspect``: a model file as written (format, versions, producer, ports, ops,
weights, loops), then on request its canonical graph, the values a trace can name, its text IR."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
from rich.table import Table

from ..formats.summary import LoopSummary, ModelSummary, graph_summary, summarize
from ..ir.graph import Graph
from ..ir.printer import print_graph
from .common import body_paths, console, load_model, main, plain, print_json
from .inputs import Inputs, input_options

ELIDE_CONSTANTS = 16
"""Constants with more elements than this print as ``[...]`` in ``--ir`` (``--full-constants``
prints them all)."""


@main.command()
@click.argument("model_path", metavar="MODEL", type=click.Path(exists=True, dir_okay=False))
@click.option("--lowered", is_flag=True, help="Also show the canonical graph tensorloop runs.")
@click.option(
    "--list-values", is_flag=True, help="List every value a trace can name, by loop path."
)
@click.option("--ir", "show_ir", is_flag=True, help="Print the canonical graph as text IR.")
@click.option("--full-constants", is_flag=True, help="With --ir, print large constants in full.")
@click.option(
    "--placement",
    "placement_backend",
    type=click.Choice(["compiled", "jax", "auto"]),
    default=None,
    help="Also show where each node runs on this backend for the inputs given, and why.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@input_options
def inspect(
    model_path: str,
    lowered: bool,
    list_values: bool,
    show_ir: bool,
    full_constants: bool,
    placement_backend: str | None,
    as_json: bool,
    inputs: Inputs,
) -> None:
    """Summarise MODEL as written: inputs, outputs, ops, weights and the nesting of its loops.

    With --placement, the plan for the inputs given (--inputs, --input, --random-inputs with
    --input-shape): the values of small control inputs choose branches, as in a run."""
    summary = summarize(model_path)
    needed = lowered or list_values or show_ir or placement_backend is not None
    model = load_model(model_path) if needed else None
    graph = None if model is None else model.graph
    placed = None
    if model is not None and placement_backend is not None:
        backend = "jax" if placement_backend == "auto" else placement_backend
        placed = model.placement(inputs.feeds(model), backend=backend)
    ir = None
    if graph is not None and show_ir:
        ir = print_graph(graph, elide_constants=None if full_constants else ELIDE_CONSTANTS)
    if as_json:
        data: dict[str, Any] = {"file": summary.to_json()}
        if graph is not None and lowered:
            data["lowered"] = _lowered_json(graph)
        if graph is not None and list_values:
            data["values"] = dict(traceable_values(graph))
        if ir is not None:
            data["ir"] = ir
        if placed is not None:
            data["placement"] = [dataclasses.asdict(p) for p in placed]
        print_json(data)
        return
    out = console()
    print_summary(out, summary, Path(model_path).name)
    if graph is not None and lowered:
        print_lowered(out, graph)
    if graph is not None and list_values:
        out.print(plain("values a trace can name (by loop path):"))
        for path, names in traceable_values(graph):
            out.print(plain(f"  {path}: {', '.join(names) or '(none)'}"))
    if ir is not None:
        click.echo(ir)
    if placed is not None:
        table = Table(title=plain(f"placement on {placement_backend}"), title_justify="left")
        for col in ("node", "op", "runs on", "why not the backend's first choice"):
            table.add_column(col)
        for p in placed:
            table.add_row(plain(p.node), plain(p.op), plain(p.device), plain(p.reason or "-"))
        out.print(table)


def print_summary(out: Any, s: ModelSummary, title: str) -> None:
    head = [s.format]
    if s.ir_version:
        head.append(f"IR version {s.ir_version}")
    if s.opsets:
        head.append("opsets " + ", ".join(f"{k} {v}" for k, v in s.opsets.items()))
    if s.producer:
        head.append(f"produced by {s.producer}")
    out.print(plain(f"{title}: {'; '.join(head)}"))
    out.print(ports_table(f"graph '{s.graph_name}'", s))
    total = sum(s.op_counts.values())
    ops = ", ".join(f"{op} x{c}" for op, c in sorted(s.op_counts.items(), key=lambda kv: -kv[1]))
    out.print(plain(f"ops ({total} nodes): {ops}"))
    out.print(plain(f"parameters: {s.parameters:,} ({_bytes(s.weight_bytes)} of weights)"))
    print_loops(out, s.loops, "loops and branches as written")


def ports_table(title: str, s: ModelSummary) -> Table:
    """A table of the graph's inputs and outputs, one row a port."""
    table = Table(title=plain(title), title_justify="left")
    for col in ("port", "name", "type"):
        table.add_column(col)
    for p in s.inputs:
        table.add_row("input", plain(p.name), plain(p.type))
    for p in s.outputs:
        table.add_row("output", plain(p.name), plain(p.type))
    return table


def print_loops(out: Any, loops: list[LoopSummary], title: str) -> None:
    if not loops:
        out.print(plain(f"{title}: none"))
        return
    out.print(plain(f"{title}:"))
    for loop in loops:
        out.print(plain(f"{'  ' * (loop.depth + 1)}{loop.describe()}"))


def print_lowered(out: Any, graph: Graph) -> None:
    s = graph_summary(graph)
    out.print(plain(""))
    table = ports_table(f"canonical graph '{graph.name}'", s)
    for var in graph.variables.values():
        table.add_row("persistent", plain(var.name), plain(var.type))
    for alias, name in graph.input_aliases.items():
        table.add_row("alias", plain(alias), plain(f"input '{name}'"))
    out.print(table)
    ops = ", ".join(f"{op} x{c}" for op, c in sorted(s.op_counts.items(), key=lambda kv: -kv[1]))
    out.print(plain(f"ops ({sum(s.op_counts.values())} nodes): {ops}"))
    print_loops(out, s.loops, "canonical loops and branches")


def _lowered_json(graph: Graph) -> dict[str, Any]:
    data = graph_summary(graph).to_json()
    data["variables"] = [{"name": v.name, "type": str(v.type)} for v in graph.variables.values()]
    data["input_aliases"] = dict(graph.input_aliases)
    return data


def traceable_values(graph: Graph) -> Iterator[tuple[str, list[str]]]:
    """The names ``run --trace`` accepts, grouped by the loop path they are traced under:
    ``(top level)`` first, then each loop body (with the branches inside it) by its path."""
    groups = {"(top level)": dict.fromkeys(_names(graph))}
    for path, _, body in body_paths(graph):  # a branch's values join its loop's (or the top's)
        groups.setdefault(path or "(top level)", {}).update(dict.fromkeys(_names(body)))
    for path, names in groups.items():
        yield path, list(names)


def _names(graph: Graph) -> list[str]:
    names = [p.name for p in graph.inputs] + [v.name for n in graph.nodes for v in n.outputs]
    return list(dict.fromkeys(n for n in names if n))


def _bytes(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} bytes"
