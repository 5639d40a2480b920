"""``tensorloop compare``: one model on several runtimes, outputs held to the first one's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click
from rich.table import Table

from ..errors import InputError
from ..tools.compare import (
    DEFAULT_ATOL,
    DEFAULT_RTOL,
    DEFAULT_RUNTIMES,
    Comparison,
    compare,
    parse_runtimes,
)
from .common import console, main, plain, print_json
from .inputs import Inputs, input_options

F = TypeVar("F", bound=Callable[..., Any])


def runtimes_option(f: F) -> F:
    """The ``--backends`` option of ``compare`` and ``bench``: the runtimes, in order."""
    return click.option(
        "--backends",
        "runtimes",
        default=",".join(DEFAULT_RUNTIMES),
        show_default=True,
        metavar="R1,R2,...",
        help="Runtimes, in order: tensorloop-<backend> (or just the backend), "
        "onnxruntime, openvino.",
    )(f)


def feed_options(inputs: Inputs, runtimes: str) -> dict[str, Any]:
    """The keyword arguments of ``tools.compare.compare`` and ``tools.bench.bench`` that the
    input options and ``--backends`` give."""
    try:
        names = parse_runtimes(runtimes)
    except InputError as exc:
        raise click.BadParameter(str(exc), param_hint="--backends") from None
    arguments = inputs.arguments()
    return {"runtimes": names, "inputs": arguments.pop("given"), **arguments}


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.3g}"


def show_comparison(c: Comparison) -> None:
    out = console()
    out.print(
        plain(f"{c.model}: compared with {c.reference or '-'} (rtol {c.rtol}, atol {c.atol})")
    )
    if c.inputs:
        out.print(plain("inputs: " + ", ".join(f"{n} {d}{s}" for n, (d, s) in c.inputs.items())))
    table = Table()
    for col, justify in (
        ("runtime", "left"),
        ("output", "left"),
        ("as", "left"),  # the runtime's name for it, where that differs
        ("type", "left"),
        ("max abs diff", "right"),
        ("max rel diff", "right"),
        ("", "left"),
    ):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for d in c.diffs:
        verdict = "ok" if d.within else "FAIL"
        if d.problem:
            verdict += f": {d.problem}"
        table.add_row(
            *map(plain, (d.runtime, d.output, "" if d.matched_as == d.output else d.matched_as)),
            plain(f"{d.dtype}{d.shape}"),
            _num(d.max_abs),
            _num(d.max_rel),
            plain(verdict),
            style=None if d.within else "red",
        )
    if c.diffs:
        out.print(table)
    for name, reason in c.skipped.items():
        out.print(plain(f"skipped {name}: {reason}"))
    for name, reason in c.failed.items():
        out.print(plain(f"FAILED {name}: {reason}"), style="red")
    bad = sum(not d.within for d in c.diffs)
    if len(c.ran) < 2:
        out.print(plain(f"only {c.reference or 'no runtime'} ran: nothing to compare"))
    elif c.ok:
        others = ", ".join(c.ran[1:])
        out.print(plain(f"PASS: {others} agree with {c.reference}"), style="green")
    else:
        parts = [f"{bad} output(s) outside tolerance"] if bad else []
        parts += [f"{len(c.failed)} runtime(s) failed"] if c.failed else []
        out.print(plain("FAIL: " + ", ".join(parts)), style="red")


@main.command("compare")
@click.argument("model_path", metavar="MODEL", type=click.Path(exists=True, dir_okay=False))
@input_options
@runtimes_option
@click.option(
    "--rtol", type=float, default=DEFAULT_RTOL, show_default=True, help="Relative tolerance."
)
@click.option(
    "--atol", type=float, default=DEFAULT_ATOL, show_default=True, help="Absolute tolerance."
)
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
def compare_command(
    model_path: str,
    rtol: float,
    atol: float,
    as_json: bool,
    inputs: Inputs,
    runtimes: str,
) -> None:
    """Run MODEL on every runtime with the same inputs and compare each output with the
    first runtime's: exit status 1 when any is outside |got - expected| <= atol + rtol *
    |expected|, or a runtime fails. A runtime that cannot load the model is skipped. OpenVINO
    runs on its CPU plugin in f32."""
    if rtol < 0 or atol < 0:
        raise click.BadParameter("tolerances must be non-negative", param_hint="--rtol/--atol")
    result = compare(model_path, **feed_options(inputs, runtimes), rtol=rtol, atol=atol)
    if as_json:
        print_json(result.to_dict())
    else:
        show_comparison(result)
    if not result.ok:
        click.get_current_context().exit(1)
