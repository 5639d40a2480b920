"""The options that say what a model is fed: one set for run, trace, compare and bench."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import click

from ..model import Model
from ..tools.inputs import InputSpec, given_inputs, make_inputs, parse_input_shape

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Inputs:
    """What ``--input``, ``--inputs``, ``--random-inputs``, ``--seed`` and ``--input-shape``
    said, as given on the command line."""

    items: tuple[str, ...] = ()
    file: str | None = None
    random: bool = False
    seed: int = 0
    shapes: tuple[str, ...] = ()

    def arguments(self) -> dict[str, Any]:
        """The keyword arguments of ``make_inputs`` (and of ``tools.compare.compare`` and
        ``tools.bench.bench``) after ``inputs``: the values given, read, and the shapes
        parsed. Raises InputError."""
        return {
            "given": given_inputs(self.items, self.file),
            "random": self.random,
            "seed": self.seed,
            "shapes": dict(parse_input_shape(s) for s in self.shapes),
        }

    def feeds(self, model: Model | Sequence[InputSpec]) -> dict[str, Any]:
        """The feed for ``model``; raises InputError."""
        return make_inputs(model, **self.arguments())


def input_options(f: F) -> F:
    """Add the input options to a command; it receives them as one ``inputs: Inputs``."""

    @functools.wraps(f)
    def command(
        *args: Any,
        input_specs: tuple[str, ...],
        inputs_file: str | None,
        random_inputs: bool,
        seed: int,
        input_shapes: tuple[str, ...],
        **kwargs: Any,
    ) -> Any:
        inputs = Inputs(input_specs, inputs_file, random_inputs, seed, input_shapes)
        return f(*args, inputs=inputs, **kwargs)

    options = [
        click.option(
            "-i",
            "--input",
            "input_specs",
            multiple=True,
            metavar="NAME=FILE.npy",
            help="An input as a .npy file or a JSON literal (NAME=[1,2]); repeat for each input.",
        ),
        click.option(
            "--inputs",
            "inputs_file",
            type=click.Path(exists=True, dir_okay=False),
            help="An .npz file holding inputs by name.",
        ),
        click.option(
            "--random-inputs", is_flag=True, help="Fill the inputs not given with random data."
        ),
        click.option("--seed", default=0, show_default=True, help="Seed for --random-inputs."),
        click.option(
            "--input-shape",
            "input_shapes",
            multiple=True,
            metavar="NAME:2,5,8",
            help="The shape of a random input whose dimensions are not fixed; repeatable.",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command  # type: ignore[return-value]
