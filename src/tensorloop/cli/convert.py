"""``tensorloop convert``: one model format to another, by the files' suffixes."""

from __future__ import annotations

import click

from ..io import save
from .common import fail, load_model, main, writable_file


@main.command()
@click.argument("source", type=click.Path(exists=True, dir_okay=False))
@click.argument("target", type=click.Path(dir_okay=False))
def convert(source: str, target: str) -> None:
    """Convert SOURCE to TARGET; formats follow the file suffixes (.tl, .onnx, .xml)."""
    writable_file(target)
    model = load_model(source)
    try:
        save(model, target)
    except OSError as exc:
        fail(f"cannot write {target}: {exc.strerror or exc}")
    click.echo(f"wrote {target}")
