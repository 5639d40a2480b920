"""OpenVINO IR frontend: ``tl.load("model.xml")``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ...limits import DEFAULT_LIMITS, Limits
from ...model import Model
from .convert import Source, convert_model
from .reader import Weights, read_xml


def load_openvino(
    path: str | os.PathLike[str], bin_path: str | os.PathLike[str] | None = None, **options: Any
) -> Model:
    """Read ``model.xml`` and its weights (``model.bin`` beside it, or ``bin_path``)."""
    limits = options.get("limits")  # Model refuses one that is not a Limits
    net = read_xml(path, limits if isinstance(limits, Limits) else DEFAULT_LIMITS)
    weights = Weights(bin_path if bin_path is not None else Path(path).with_suffix(".bin"))
    graph = convert_model(net, Source(str(path), weights))
    return Model(graph, **options)


def load_file(path: str | os.PathLike[str], **options: Any) -> Model:
    """``tl.load`` of an ``.xml`` file (its weights in the ``.bin`` beside it)."""
    return load_openvino(path, **options)


# families registers the layer converters and writers (families.py lists them)
from . import families  # noqa: E402,F401
from .summary import summarize_file  # noqa: E402
from .writer import save_file  # noqa: E402

__all__ = ["load_file", "load_openvino", "save_file", "summarize_file"]
