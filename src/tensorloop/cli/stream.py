"""``tensorloop stream``: run a model over its inputs chunk by chunk, as ``Model.stream`` does,
its recurrent state carried from push to push: the chunks, the state carried and its size,
each push's latency, and the outputs joined over the chunks (what one run over the whole input
gives), with JSON for scripts and the joined outputs to an .npz."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
import numpy as np
from rich.table import Table

from ..errors import TensorloopError
from ..model import Model
from ..model.stream import cut_chunks, join_outputs
from ..tensor.dtypes import from_numpy
from ..tensor.types import TensorType
from ..tools.inputs import dims_text, input_specs_of, make_inputs, read_input
from .common import (
    backend_option,
    console,
    describe_error,
    fail,
    load_model,
    main,
    plain,
    print_json,
    writable_file,
)
from .inputs import Inputs, input_options
from .run import output_stats

if TYPE_CHECKING:
    from ..model.stream import Stream

AUTO = "auto"
"""``--state auto``: pair the state inputs with their outputs by name and type."""


# -- the options ------------------------------------------------------------------------------
def parse_sequence(
    ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
) -> dict[str, int]:
    """``--sequence NAME=AXIS`` (repeatable) -> ``{NAME: AXIS}``."""
    sequence: dict[str, int] = {}
    for spec in values:
        name, sep, axis = spec.partition("=")
        name, axis = name.strip(), axis.strip()
        if not sep or not name or not axis.isdigit():
            raise click.BadParameter(
                f"{spec!r}: expected NAME=AXIS, AXIS the input's time axis (0, 1, ...)"
            )
        if name in sequence:
            raise click.BadParameter(f"{spec!r}: input '{name}' given twice")
        sequence[name] = int(axis)
    return sequence


def parse_state(
    ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
) -> str | dict[str, str] | None:
    """``--state auto`` or ``--state IN=OUT`` (repeatable) -> ``"auto"``, ``{IN: OUT}`` or None."""
    if not values:
        return None
    if AUTO in values:
        if len(values) > 1:
            raise click.BadParameter("'auto' pairs every state; give it alone, or IN=OUT pairs")
        return AUTO
    pairs: dict[str, str] = {}
    for spec in values:
        name, sep, out = spec.partition("=")
        name, out = name.strip(), out.strip()
        if not sep or not name or not out:
            raise click.BadParameter(
                f"{spec!r}: expected auto or IN=OUT, a state input and the output returning it"
            )
        if name in pairs:
            raise click.BadParameter(f"{spec!r}: state input '{name}' given twice")
        pairs[name] = out
    return pairs


# -- the command ------------------------------------------------------------------------------
@main.command("stream")
@click.argument("model_path", metavar="MODEL", type=click.Path(exists=True, dir_okay=False))
@input_options
@click.option(
    "--chunk",
    type=click.IntRange(min=1),
    required=True,
    metavar="K",
    help="Time steps per push: the sequence inputs are cut into chunks of K steps.",
)
@click.option(
    "--sequence",
    "sequence",
    multiple=True,
    metavar="NAME=AXIS",
    callback=parse_sequence,
    help="A sequence input and its time axis (by default the inputs the model's loops slice); "
    "repeatable. With --state it says which inputs to cut into chunks.",
)
@click.option(
    "--state",
    "state",
    multiple=True,
    metavar="auto|IN=OUT",
    callback=parse_state,
    help="The model takes and returns its state: pair a state input with the output that "
    "returns it (repeatable), or 'auto' to pair them by name and type.",
)
@click.option(
    "--state-init",
    "state_init",
    multiple=True,
    metavar="NAME=FILE.npy",
    help="The first value of a state (a .npy file or a JSON literal); give every state, or "
    "none (the model's own first state, or zeros for --state).",
)
@backend_option()
@click.option(
    "--save-outputs",
    metavar="FILE.npz",
    help="Write the outputs joined over the chunks to an .npz file.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
def stream_command(
    model_path: str,
    inputs: Inputs,
    chunk: int,
    sequence: dict[str, int],
    state: str | dict[str, str] | None,
    state_init: tuple[str, ...],
    backend: str,
    save_outputs: str | None,
    as_json: bool,
) -> None:
    """Run MODEL over its inputs chunk by chunk, carrying its recurrent state from one chunk to
    the next: each sequence input is cut into chunks of --chunk time steps along its time axis
    and each chunk is pushed (and timed) in turn. Prints the chunks, the state carried, the
    latency per chunk and the outputs joined over the chunks (sequence outputs along their time
    axis, read-outs as the last chunk left them): the outputs of one run over the whole input.

    A model with loops over time streams as the loops are cut (--sequence names its sequence
    inputs where the loops do not say); a model that takes and returns its state streams with
    --state, and --sequence NAME=AXIS says which inputs to cut (an input given with one axis
    more than the model declares is fed one time step per push, --chunk 1, and the outputs are
    stacked along that axis)."""
    target = writable_file(save_outputs) if save_outputs else None
    model = load_model(model_path, backend=backend)
    streamed = Streamed.run(model, inputs, chunk, sequence, state, state_init, backend)
    if target is not None:
        save_npz(target, streamed.outputs)
    if as_json:
        print_json(streamed.to_dict(model_path, backend))
        return
    show(streamed, Path(model_path).name, backend)
    if target is not None:
        console().print(plain(f"wrote {save_outputs}"))


# -- streaming --------------------------------------------------------------------------------
@dataclass
class Streamed:
    """What a stream of a model over its inputs did: the chunks and their latencies, the state
    after the first chunk, and the outputs joined."""

    chunk: int
    sequence: dict[str, int]
    """Each sequence input and the time axis it was cut along (empty: one chunk)."""
    per_step: bool
    """Whether the model took one time step per push (the time axis taken away)."""
    steps: list[int | None]
    """The time steps of each chunk (None: the inputs as given, no sequence input)."""
    latencies: list[float]
    """Seconds of each push."""
    states: list[dict[str, Any]]
    """Each state: name, next, origin, type, and its dtype, shape and bytes after the first
    chunk."""
    outputs: dict[str, Any]
    roles: dict[str, tuple[str, int | None]]

    @classmethod
    def run(
        cls,
        model: Model,
        inputs: Inputs,
        chunk: int,
        sequence: dict[str, int],
        state: str | dict[str, str] | None,
        state_init: Sequence[str],
        backend: str,
    ) -> Streamed:
        # A model with loops over time is cut by the stream, which knows its sequence inputs;
        # one that takes and returns its state (or keeps it in persistent tensors) runs as a
        # step as it is, and the inputs --sequence names are cut here.
        cut_here = state is not None or bool(model.graph.variables)
        stream: Stream = model.stream(
            chunk=chunk,
            sequence=None if cut_here else sequence or None,
            state=state,
            backend=backend,
        )
        origins = {s.name: s.origin for s in stream.states}
        arguments = inputs.arguments()
        for name in arguments["given"]:
            if name in origins:
                fail(
                    f"input '{name}' is a state the stream carries ({origins[name]}); give its "
                    f"first value with --state-init {name}=FILE.npy"
                )
        specs = [s for s in input_specs_of(model) if s.name not in origins]
        feeds = make_inputs(specs, **arguments)
        if state_init:
            stream.state = initial_state(stream, state_init)

        declared = {s.name: s.shape for s in specs}
        if cut_here:
            known = [s.name for s in specs]
            for name in sequence:
                if name not in feeds:
                    fail(
                        f"--sequence {name}: the stream takes no input '{name}'; its inputs are "
                        f"{', '.join(known) or 'none'}"
                    )
            order = sequence
        else:
            order = stream.sequence_inputs
        arrays = {n: np.asarray(feeds[n]) for n in order}
        per_step = cut_here and one_step_per_push(arrays, order, declared)
        if per_step and chunk != 1:
            fail(
                "the model takes one time step per push (given "
                f"{described(arrays, declared)}, its time axis one the model does not declare); "
                "use --chunk 1"
            )
        pieces = cut_chunks(feeds, order, chunk, one_step=per_step)
        first = next(iter(order), None)
        steps: list[int | None] = [
            None if first is None else 1 if per_step else np.shape(p[first])[order[first]]
            for p in pieces
        ]

        latencies: list[float] = []
        results = []
        states: list[dict[str, Any]] = []
        for k, piece in enumerate(pieces):
            started = time.perf_counter()
            results.append(stream.push(piece))
            latencies.append(time.perf_counter() - started)
            if k == 0:
                states = state_facts(stream)
        roles = dict(stream.output_roles)
        if per_step:
            axis = next(iter(order.values()))
            roles = {
                n: ("sequence", axis) if role == "readout" else (role, ax)
                for n, (role, ax) in roles.items()
            }
        outputs = join_outputs(results, roles, stacked=per_step)
        return cls(chunk, dict(order), per_step, steps, latencies, states, outputs, roles)

    @property
    def total_steps(self) -> int | None:
        return None if not self.sequence else sum(s or 0 for s in self.steps)

    @property
    def state_bytes(self) -> int:
        return sum(s["bytes"] or 0 for s in self.states)

    def latency_ms(self) -> dict[str, float]:
        ms = np.asarray(self.latencies) * 1e3
        return {
            "p50_ms": float(np.percentile(ms, 50)),
            "p99_ms": float(np.percentile(ms, 99)),
            "max_ms": float(ms.max()),
        }

    def output_facts(self) -> dict[str, dict[str, Any]]:
        facts = {}
        for name, value in self.outputs.items():
            role, axis = self.roles.get(name, ("readout", None))
            s = output_stats(name, value)
            facts[name] = {
                "role": role,
                "axis": axis,
                **{k: s[k] for k in ("dtype", "shape", "min", "max", "mean", "nan", "inf")},
            }
        return facts

    def to_dict(self, model_path: str, backend: str) -> dict[str, Any]:
        return {
            "model": model_path,
            "backend": backend,
            "chunk": self.chunk,
            "sequence_inputs": self.sequence,
            "one_step_per_push": self.per_step,
            "steps": self.total_steps,
            "chunks": [
                {"index": k, "steps": n, "latency_ms": s * 1e3}
                for k, (n, s) in enumerate(zip(self.steps, self.latencies, strict=True))
            ],
            "states": self.states,
            "state_bytes": self.state_bytes,
            "latency": self.latency_ms(),
            "outputs": self.output_facts(),
        }


def initial_state(stream: Stream, specs: Sequence[str]) -> dict[str, Any]:
    """The ``--state-init`` values by state name, a JSON literal taking the state's dtype."""
    types = {s.name: s.type for s in stream.states}
    values: dict[str, Any] = {}
    for spec in specs:
        name, value = read_input(spec)
        if name in values:
            fail(f"--state-init {name}: given twice")
        t = types.get(name)
        if not isinstance(value, np.ndarray) and isinstance(t, TensorType):
            try:
                value = np.asarray(value, dtype=t.dtype.numpy)
            except (TypeError, ValueError) as exc:
                fail(f"--state-init {name}: not a {t.dtype.numpy} array ({exc})")
        values[name] = value
    return values


def one_step_per_push(
    arrays: Mapping[str, np.ndarray[Any, Any]],
    sequence: Mapping[str, int],
    declared: Mapping[str, Any],
) -> bool:
    """Whether the sequence inputs are given with one axis more than the model declares (their
    time axis): the model takes one time step per push. All or none."""
    extra = {
        n: declared.get(n) is not None and arrays[n].ndim == len(declared[n]) + 1 for n in sequence
    }
    if len(set(extra.values())) > 1:
        fail(
            "the sequence inputs disagree: some are given with a time axis more than the model "
            f"declares, some are not ({described(arrays, declared)})"
        )
    return any(extra.values())


def described(arrays: Mapping[str, np.ndarray[Any, Any]], declared: Mapping[str, Any]) -> str:
    parts = []
    for n, a in arrays.items():
        shape = declared.get(n)
        model = "?" if shape is None else f"[{','.join(map(str, shape))}]"
        parts.append(f"input '{n}' as {dims_text(a.shape)} for the model's {model}")
    return ", ".join(parts)


def state_facts(stream: Stream) -> list[dict[str, Any]]:
    """Each state the stream carries, with its value's dtype, shape and bytes now."""
    values = stream.state
    facts = []
    for s in stream.states:
        value = values.get(s.name)
        array = None if value is None else np.asarray(value)
        facts.append(
            {
                "name": s.name,
                "next": s.next,
                "origin": s.origin,
                "type": str(s.type),
                "dtype": None if array is None else _dtype_name(array),
                "shape": None if array is None else list(array.shape),
                "bytes": None if array is None else int(array.nbytes),
            }
        )
    return facts


def _dtype_name(array: np.ndarray[Any, Any]) -> str:
    try:
        return from_numpy(array).short
    except TensorloopError:
        return str(array.dtype.name)


def save_npz(target: Path, outputs: Mapping[str, Any]) -> None:
    arrays = {}
    for name, value in outputs.items():
        if value is None or isinstance(value, list):
            fail(f"--save-outputs: output '{name}' is not a tensor; .npz holds tensors")
        arrays[name] = np.asarray(value)
    try:
        np.savez(target, **arrays)  # type: ignore[arg-type]
    except OSError as exc:
        fail(f"cannot write {target}: {describe_error(exc)}")


# -- showing it -------------------------------------------------------------------------------
def _bytes(n: int | None) -> str:
    if n is None:
        return "-"
    if n < 1024:
        return f"{n} B"
    return f"{n / 1024:.1f} KiB" if n < 2**20 else f"{n / 2**20:.1f} MiB"


def _ms(ms: float) -> str:
    return f"{ms:.3g} ms"


def _number(x: Any) -> str:
    return "-" if x is None else f"{x:.6g}"


def _role(role: str, axis: int | None) -> str:
    if role == "sequence":
        return f"sequence (axis {axis})"
    return "read-out" if role == "readout" else role


def show(s: Streamed, title: str, backend: str) -> None:
    out = console()
    chunks = len(s.steps)
    plural = "s" if chunks != 1 else ""
    if s.sequence:
        out.print(
            plain(
                f"{title}: {s.total_steps} time steps in {chunks} chunk{plural} of "
                f"{s.chunk} on {backend}"
            )
        )
        seq = ", ".join(f"{n} (axis {a})" for n, a in s.sequence.items())
        out.print(plain(f"sequence inputs: {seq}"))
        if s.per_step:
            out.print(plain("one time step per push: the outputs stacked along the time axis"))
    else:
        out.print(
            plain(
                f"{title}: 1 chunk, the inputs as given, on {backend} (no sequence input: "
                "--sequence NAME=AXIS cuts one into chunks)"
            )
        )
    table = Table(title=plain("state carried (after the first chunk)"), title_justify="left")
    for col in ("state", "type", "dtype", "shape", "bytes", "carries"):
        table.add_column(col, justify="right" if col == "bytes" else "left")
    for st in s.states:
        shape = "-" if st["shape"] is None else dims_text(st["shape"])
        table.add_row(
            plain(st["name"]),
            plain(st["type"]),
            plain(st["dtype"] or "-"),
            plain(shape),
            _bytes(st["bytes"]),
            plain(st["origin"]),
        )
    if s.states:
        out.print(table)
    n = len(s.states)
    out.print(plain(f"state: {n} value{'s' if n != 1 else ''}, {_bytes(s.state_bytes)} in all"))
    lat = s.latency_ms()
    out.print(
        plain(
            f"latency per chunk: p50 {_ms(lat['p50_ms'])}, p99 {_ms(lat['p99_ms'])}, "
            f"max {_ms(lat['max_ms'])} (first chunk {_ms(s.latencies[0] * 1e3)})"
        )
    )
    outputs = Table(title=plain("outputs joined over the chunks"), title_justify="left")
    for col in ("output", "role", "dtype", "shape", "min", "max", "mean"):
        outputs.add_column(col, justify="right" if col in ("min", "max", "mean") else "left")
    for name, f in s.output_facts().items():
        shape = "-" if f["shape"] is None else dims_text(f["shape"])
        outputs.add_row(
            plain(name),
            plain(_role(f["role"], f["axis"])),
            plain(f["dtype"]),
            plain(shape),
            _number(f["min"]),
            _number(f["max"]),
            _number(f["mean"]),
        )
    out.print(outputs)
