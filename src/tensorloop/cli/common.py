"""What every command of the ``tensorloop`` command line shares: the click group ``main``, its
one-line errors, the common options and helpers."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, NoReturn, TypeVar

import click
from rich.console import Console
from rich.text import Text

from ..backends.base import DEFAULT_BACKEND, backend_names
from ..errors import TensorloopError
from ..io import load
from ..ir.graph import Graph, Node
from ..limits import DEFAULT_MAX_ITERATIONS, Limits
from ..model import Model
from ..reference.runtime import LOOP_SEPARATOR, loop_label

CONTEXT_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"]}
"""Every command takes ``-h`` as well as ``--help``."""

WIDE = 4096
"""The width of a console that is not a terminal: piped output is never wrapped."""


class CliError(click.ClickException):
    """An error the user can act on: printed as one ``error: ...`` line on stderr, exit 1."""

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"error: {one_line(self.message)}", file=file or sys.stderr)


class CliUsageError(click.UsageError):
    """A bad option or argument: one ``error: ...`` line naming the command's help, exit 2."""

    def show(self, file: IO[Any] | None = None) -> None:
        where = self.ctx.command_path if self.ctx is not None else "tensorloop"
        click.echo(f"error: {one_line(self.message)} (see '{where} -h')", file=file or sys.stderr)


def one_line(message: str) -> str:
    return " ".join(line.strip() for line in str(message).splitlines() if line.strip())


def fail(message: str) -> NoReturn:
    """Stop the command with ``error: message``."""
    raise CliError(message)


def describe_error(exc: BaseException) -> str:
    """What the one-line error says about ``exc``."""
    if isinstance(exc, TensorloopError):
        return f"{type(exc).__name__}: {exc}"
    if isinstance(exc, OSError) and exc.strerror:
        where = f": {exc.filename}" if exc.filename else ""
        return f"{exc.strerror}{where}"
    if isinstance(exc, MemoryError):
        return "out of memory"
    return f"{type(exc).__name__}: {exc} (an internal error; --debug shows where)"


class Group(click.Group):
    """Runs a command and turns whatever it raises into one line on stderr (``--debug``: the
    traceback instead)."""

    def invoke(self, ctx: click.Context) -> Any:
        debug = bool(ctx.params.get("debug"))
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.exceptions.Abort, CliError, CliUsageError):
            raise
        except click.UsageError as exc:
            if debug:
                raise
            raise CliUsageError(exc.format_message(), exc.ctx) from None
        except click.ClickException as exc:
            if debug:
                raise
            raise CliError(exc.format_message()) from None
        except KeyboardInterrupt:
            if debug:
                raise
            raise CliError("interrupted") from None
        except Exception as exc:
            if debug:
                raise
            raise CliError(describe_error(exc)) from None


@click.group(cls=Group, context_settings=CONTEXT_SETTINGS)
@click.version_option(package_name="tensorloop")
@click.option("--debug", is_flag=True, help="Show the Python traceback of an error.")
def main(debug: bool) -> None:
    """tensorloop: run, inspect and convert loop-centric tensor models."""


def console(*, stderr: bool = False) -> Console:
    """A rich console on stdout (or stderr): terminal width on a terminal, never wrapped when
    piped. Text is printed as given; callers pass ``Text`` or escape what is not markup."""
    stream = sys.stderr if stderr else sys.stdout
    tty = stream.isatty()
    width = None if tty else int(os.environ.get("TENSORLOOP_WIDTH", WIDE))
    return Console(file=stream, width=width, highlight=False, soft_wrap=not tty)


def plain(s: object) -> Text:
    """``s`` as rich text that is never read as markup (``f32[batch,time,8]`` stays as it is)."""
    return Text(str(s))


F = TypeVar("F", bound=Callable[..., Any])


def backend_option(help: str = "Where the model runs.") -> Callable[[F], F]:
    """The ``--backend`` option of the commands that run a model on one backend."""
    return click.option(
        "--backend",
        type=click.Choice(backend_names()),
        default=DEFAULT_BACKEND,
        show_default=True,
        help=help,
    )


def max_iterations_option(f: F) -> F:
    """The ``--max-iterations`` option of the commands that run a model."""
    return click.option(
        "--max-iterations",
        type=int,
        default=DEFAULT_MAX_ITERATIONS,
        show_default=True,
        help="Stop any loop that runs longer than this, with an error.",
    )(f)


DEFAULT_TIMEOUT = 600.0
"""The deadline of a run the command line starts, in seconds, unless ``--timeout`` says
otherwise (``--timeout none``: no deadline): a hostile or runaway model ends with an error
instead of holding the terminal for hours."""


class Seconds(click.ParamType[float | None]):
    """Seconds > 0, or ``none`` for no deadline."""

    name = "seconds"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if value is None or isinstance(value, float):
            return value
        if str(value).strip().lower() in ("none", "inf"):
            return None
        try:
            seconds = float(value)
        except ValueError:
            self.fail(f"{value!r} is not a number of seconds (or 'none')", param, ctx)
        if not seconds > 0 or seconds != seconds:
            self.fail(f"{value!r}: give seconds > 0, or 'none' for no deadline", param, ctx)
        return seconds


def timeout_option(f: F) -> F:
    """The ``--timeout`` option of the commands that run a model (``DEFAULT_TIMEOUT``)."""
    return click.option(
        "--timeout",
        type=Seconds(),
        default=DEFAULT_TIMEOUT,
        show_default=True,
        help="Stop the run with an error after this many seconds; 'none' for no deadline.",
    )(f)


def load_model(path: str, limits: Limits | None = None, backend: str = DEFAULT_BACKEND) -> Model:
    """``tl.load`` for a command (its errors end the command with one line, in ``Group``)."""
    return load(path, limits=limits or Limits(), backend=backend)


def print_json(data: Any) -> None:
    """``data`` as JSON on stdout (NaN and infinities written as null)."""
    click.echo(json.dumps(_finite(data), indent=2))


def _finite(x: Any) -> Any:
    if isinstance(x, float) and (x != x or x in (float("inf"), float("-inf"))):
        return None
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_finite(v) for v in x]
    return x


def writable_file(path: str) -> Path:
    """``path`` as a file to write: its folder must exist and be writable."""
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        fail(f"cannot write {path}: no such folder {folder}")
    if target.is_dir():
        fail(f"cannot write {path}: it is a folder")
    if not os.access(folder, os.W_OK):
        fail(f"cannot write {path}: the folder {folder} is not writable")
    return target


def writable_folder(path: str) -> Path:
    """``path`` as a folder to write files into, made if missing."""
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        fail(f"cannot write into {path}: it is a file, not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        fail(f"cannot make the folder {path}: {exc.strerror}")
    if not os.access(folder, os.W_OK):
        fail(f"cannot write into {path}: the folder is not writable")
    return folder


def body_paths(graph: Graph, prefix: str = "") -> Iterator[tuple[str, Node, Graph]]:
    """Every body of ``graph`` (bodies within bodies too, outer first) with the loop path its
    values are traced under: the labels of the loops around it and its own, outermost first
    (``loop_label`` joined by ``LOOP_SEPARATOR``), so that ``run --trace`` and ``trace --loop``
    take what ``inspect --list-values`` shows. A branch adds nothing to the path (its body's
    values are traced under the loops around it; "" outside every loop)."""
    for node in graph.nodes:
        for sub in node.subgraphs.values():
            path = prefix
            if node.op == "Loop":
                path = f"{prefix}{LOOP_SEPARATOR}{loop_label(node)}" if prefix else loop_label(node)
            yield path, node, sub
            yield from body_paths(sub, path)


# The commands: each module registers its command on ``main``.
