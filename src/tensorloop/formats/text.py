"""The text IR as a file format: ``.tl`` (and ``.tlir``) files read and written for ``tl.load``
and ``tl.save`` (the printer and parser themselves are ``ir/printer.py`` and ``ir/parser.py``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..errors import ParseError, TensorloopError, refuse_special_file
from ..ir.parser import parse_graph
from ..ir.printer import print_graph
from ..model import Model
from .summary import ModelSummary, graph_summary

SUFFIXES = (".tl", ".tlir")


def load_file(path: str | os.PathLike[str], **options: Any) -> Model:
    """The model of a text IR file, verified as any ``Model`` is; errors name the file."""
    refuse_special_file(path, str(path))  # a FIFO or a device: refused, not read (it may block)
    return load_text(Path(path).read_bytes(), str(path), **options)


def load_text(data: bytes, label: str, **options: Any) -> Model:
    """The model of text IR ``data`` (a file's bytes); errors name ``label``."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = exc.object[: exc.start].count(b"\n") + 1
        raise ParseError(
            f"{label}: line {line}: not UTF-8 text (byte {exc.start}: {exc.reason})"
        ) from None
    try:
        return Model(parse_graph(text), **options)
    except TensorloopError as exc:
        raise type(exc)(f"{label}: {exc}") from None


def save_file(model: Model, path: str | os.PathLike[str]) -> None:
    Path(path).write_text(print_graph(model.graph) + "\n", encoding="utf-8")


def summarize_file(path: Path) -> ModelSummary:
    """A text IR file: its graph, parsed and checked as ``tl.load`` reads it."""
    return graph_summary(load_file(path).graph, str(path), "tensorloop text IR")
