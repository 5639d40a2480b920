"""The ``tensorloop`` command line: run, inspect and convert models."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import click
import numpy as np
from rich.console import Console
from rich.table import Table
from rich.tree import Tree

from .backends.base import DEFAULT_BACKEND, backend_names
from .backends.runtime import DEFAULT_MAX_ITERATIONS
from .errors import InputError, TensorloopError
from .io import load, save
from .ir.graph import Graph
from .ir.loop import Loop
from .model import Model
from .tensor.types import TensorType


def _fail(exc: TensorloopError) -> click.ClickException:
    return click.ClickException(f"{type(exc).__name__}: {exc}")


def _load(
    path: str, max_iterations: int = DEFAULT_MAX_ITERATIONS, backend: str = DEFAULT_BACKEND
) -> Model:
    try:
        return load(path, max_iterations=max_iterations, backend=backend)
    except TensorloopError as exc:
        raise _fail(exc) from None


def _parse_input(spec: str, model: Model) -> tuple[str, Any]:
    name, sep, raw = spec.partition("=")
    if not sep:
        raise click.BadParameter(f"expected NAME=FILE.npy or NAME=JSON, got {spec!r}")
    if name not in model.input_names:
        raise click.BadParameter(
            f"model has no input '{name}'; inputs are {', '.join(model.input_names) or 'none'}"
        )
    path = Path(raw)
    if path.suffix == ".npy":
        if not path.is_file():
            raise click.BadParameter(f"input '{name}': no such file {raw}")
        return name, np.load(path, allow_pickle=False)
    try:
        return name, json.loads(raw)
    except json.JSONDecodeError:
        raise click.BadParameter(
            f"input '{name}': {raw!r} is neither a .npy file nor JSON"
        ) from None


def _random_input(name: str, t: Any, rng: np.random.Generator) -> np.ndarray[Any, Any]:
    if not isinstance(t, TensorType) or not t.is_static:
        raise InputError(f"input '{name}' has type {t}; --random-inputs needs a static shape")
    shape, dt = t.static_shape, t.dtype
    if dt.is_float:
        return rng.standard_normal(shape).astype(dt.numpy)
    if dt.value == "bool":
        return rng.random(shape) < 0.5
    return rng.integers(0, 10, shape).astype(dt.numpy)


def _summary(x: Any) -> str:
    if isinstance(x, np.ndarray):
        with np.printoptions(precision=4, threshold=12, edgeitems=3, linewidth=70):
            return np.array2string(x)
    return repr(x)


@click.group()
@click.version_option(package_name="tensorloop")
def main() -> None:
    """tensorloop: run, inspect and convert loop-centric tensor models."""


@main.command()
@click.argument("model_path", metavar="MODEL", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "-i",
    "--input",
    "input_specs",
    multiple=True,
    metavar="NAME=FILE.npy",
    help="An input as a .npy file or a JSON literal; repeat for each input.",
)
@click.option(
    "--inputs",
    "inputs_file",
    type=click.Path(exists=True, dir_okay=False),
    help="An .npz file holding inputs by name.",
)
@click.option("--random-inputs", is_flag=True, help="Fill inputs not given with random data.")
@click.option("--seed", default=0, show_default=True, help="Seed for --random-inputs.")
@click.option(
    "--trace",
    "trace_names",
    multiple=True,
    metavar="VALUE",
    help="Record a loop-body value at every iteration; repeatable.",
)
@click.option(
    "--max-iterations",
    default=DEFAULT_MAX_ITERATIONS,
    show_default=True,
    help="Stop any loop that runs longer than this, with an error.",
)
@click.option(
    "--save-outputs",
    type=click.Path(file_okay=False),
    help="Write each output as NAME.npy into this folder.",
)
@click.option(
    "--backend",
    type=click.Choice(backend_names()),
    default=DEFAULT_BACKEND,
    show_default=True,
    help="Where the model runs.",
)
def run(
    model_path: str,
    input_specs: tuple[str, ...],
    inputs_file: str | None,
    random_inputs: bool,
    seed: int,
    trace_names: tuple[str, ...],
    max_iterations: int,
    save_outputs: str | None,
    backend: str,
) -> None:
    """Run MODEL once and print its outputs."""
    console = Console()
    model = _load(model_path, max_iterations, backend)
    feeds: dict[str, Any] = {}
    if inputs_file:
        with np.load(inputs_file, allow_pickle=False) as npz:
            feeds.update({k: npz[k] for k in npz.files})
    feeds.update(_parse_input(s, model) for s in input_specs)
    try:
        if random_inputs:
            rng = np.random.default_rng(seed)
            for v in model.inputs:
                if v.name not in feeds:
                    feeds[v.name] = _random_input(v.name, v.type, rng)
        outputs = model.run(feeds, trace=trace_names)
    except TensorloopError as exc:
        raise _fail(exc) from None
    table = Table(title=f"{Path(model_path).name}: outputs")
    for col in ("output", "type", "value"):
        table.add_column(col)
    for name, value in outputs.items():
        arr = np.asarray(value)
        table.add_row(name, f"{arr.dtype}{list(arr.shape)}", _summary(arr))
    console.print(table)
    for name, entries in outputs.trace.items():
        t = Table(title=f"trace of %{name}")
        t.add_column("iteration")
        t.add_column("value")
        for e in entries:
            t.add_row(",".join(map(str, e.iteration)) or "-", _summary(e.value))
        console.print(t)
    if save_outputs:
        out = Path(save_outputs)
        out.mkdir(parents=True, exist_ok=True)
        for name, value in outputs.items():
            np.save(out / f"{name.replace('/', '_')}.npy", np.asarray(value))


def _loop_tree(graph: Graph, tree: Tree) -> None:
    for node in graph.nodes:
        if node.op == "Loop":
            loop = Loop(node)
            trip = "given" if loop.trip_count is not None else "none"
            cond = "given" if loop.condition is not None else "none"
            label = (
                f"[bold]Loop[/bold] {node.name or '(unnamed)'}: max_trip_count {trip}, "
                f"initial_condition {cond}, {len(loop.carried)} carried, {len(loop.sliced)} "
                f"sliced, {len(loop.invariants)} invariant, {len(loop.stacked)} stacked; "
                f"body {len(loop.body.nodes)} nodes"
            )
            _loop_tree(loop.body, tree.add(label))
        elif node.subgraphs:
            branch = tree.add(f"[bold]{node.op}[/bold] {node.name or '(unnamed)'}")
            for key, sub in node.subgraphs.items():
                _loop_tree(sub, branch.add(key))


@main.command()
@click.argument("model_path", metavar="MODEL", type=click.Path(exists=True, dir_okay=False))
@click.option("--ir", "show_ir", is_flag=True, help="Print the whole graph as text IR.")
def inspect(model_path: str, show_ir: bool) -> None:
    """Summarise MODEL: inputs, outputs, ops and the nesting of its loops."""
    console = Console()
    model = _load(model_path)
    graph = model.graph
    table = Table(title=f"{Path(model_path).name}: '{graph.name}'")
    table.add_column("kind")
    table.add_column("name")
    table.add_column("type")
    for v in graph.inputs:
        table.add_row("input", v.name, str(v.type))
    for v in graph.outputs:
        table.add_row("output", v.name, str(v.type))
    for var in graph.variables.values():
        table.add_row("persistent", var.name, str(var.type))
    console.print(table)
    counts = Counter(n.op for _, n in graph.walk())
    console.print("ops: " + ", ".join(f"{op} x{c}" for op, c in sorted(counts.items())))
    tree = Tree("loops")
    _loop_tree(graph, tree)
    console.print(tree)
    if show_ir:
        click.echo(str(graph))


@main.command()
@click.argument("source", type=click.Path(exists=True, dir_okay=False))
@click.argument("target", type=click.Path(dir_okay=False))
def convert(source: str, target: str) -> None:
    """Convert SOURCE to TARGET; formats follow the file suffixes."""
    model = _load(source)
    try:
        save(model, target)
    except TensorloopError as exc:
        raise _fail(exc) from None
    click.echo(f"wrote {target}")
