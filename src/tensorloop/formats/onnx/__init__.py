"""ONNX frontend: ``tl.load("m.onnx")``, ``tl.load(model_proto)`` and ``tl.save(m, "m.onnx")``."""

from __future__ import annotations

import os
from typing import Any

import onnx

from ...io import loader
from ...model import Model
from .importer import import_graph, read_model


def load_onnx(model: onnx.ModelProto | str | os.PathLike[str], **options: Any) -> Model:
    """Convert an ONNX model (a path or a ModelProto) into a tensorloop Model."""
    proto, source = read_model(model)
    return Model(import_graph(proto, source), **options)


@loader(".onnx")
def _load(path: str | os.PathLike[str], **options: Any) -> Model:
    return load_onnx(path, **options)


from . import exporter  # noqa: E402,F401  (registers tl.save for .onnx)
