"""OpenVINO IR frontend: ``tl.load("model.xml")``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ...io import loader
from ...model import Model
from .convert import Source, convert_model
from .reader import Weights, read_xml


def load_openvino(
    path: str | os.PathLike[str], bin_path: str | os.PathLike[str] | None = None, **options: Any
) -> Model:
    """Read ``model.xml`` and its weights (``model.bin`` beside it, or ``bin_path``)."""
    net = read_xml(path)
    weights = Weights(bin_path if bin_path is not None else Path(path).with_suffix(".bin"))
    graph = convert_model(net, Source(str(path), weights))
    return Model(graph, **options)


@loader(".xml")
def _load(path: str | os.PathLike[str], **options: Any) -> Model:
    return load_openvino(path, **options)


# writer registers tl.save for .xml; the ov_* modules register more layer converters
from . import (  # noqa: E402,F401
    ov_ctc,
    ov_detection,
    ov_misc,
    ov_nms,
    ov_numeric,
    ov_signal,
    ov_strings,
    writer,
)
