"""``tensorloop draw``: a picture of the graph, loop and branch bodies as nested clusters."""

from __future__ import annotations

from typing import cast

import click

from ..tools.draw import SUFFIXES, ConstantStyle, DrawError, render
from .common import fail, load_model, main, writable_file


@main.command()
@click.argument("model_path", metavar="MODEL", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(dir_okay=False),
    help="Where to draw: .svg, .png, .html (bodies fold on click) or .dot (no Graphviz needed).",
)
@click.option(
    "--constants",
    type=click.Choice(["fold", "hide", "show"]),
    default="fold",
    show_default=True,
    help="Constants folded into the labels of their readers, left out, or drawn as nodes.",
)
def draw(model_path: str, output: str, constants: str) -> None:
    """Draw MODEL's graph with Graphviz: each loop a cluster titled with its kind, trip count
    and roles, carried values' back edges dashed, If branches side by side. In the HTML page
    every body starts unfolded; click a body's title to fold it."""
    if not output.lower().endswith(SUFFIXES):
        raise click.BadParameter(
            f"'{output}' ends in none of {', '.join(SUFFIXES)}", param_hint="'-o' / '--output'"
        )
    writable_file(output)
    model = load_model(model_path)
    try:
        render(model.graph, output, constants=cast(ConstantStyle, constants))
    except DrawError as exc:
        fail(str(exc))
    click.echo(f"wrote {output}")
