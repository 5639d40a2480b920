"""Model file formats, one module each: the text IR (``text``), ``onnx`` and ``openvino``. Each
has ``load_file(path, **options)``, ``save_file(model, path, **options)`` and
``summarize_file(path)``; ``FORMATS`` says which module reads which suffix."""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from types import ModuleType

from ..errors import FormatError

FORMATS = {
    ".tl": "text",
    ".tlir": "text",
    ".onnx": "onnx",
    ".xml": "openvino",
}
"""Model files by suffix: the ``tensorloop.formats`` module that reads and writes them
(imported on first use)."""


def format_module(path: str | os.PathLike[str], verb: str) -> ModuleType:
    """The format module of ``path``'s suffix; a FormatError naming the file and the known
    suffixes if there is none (``verb``: what was asked, "load", "save" or "read")."""
    suffix = Path(path).suffix.lower()
    name = FORMATS.get(suffix)
    if name is None:
        known = ", ".join(sorted(FORMATS))
        raise FormatError(f"{path}: unknown model format '{suffix}'; tensorloop {verb}s {known}")
    return importlib.import_module(f"tensorloop.formats.{name}")
