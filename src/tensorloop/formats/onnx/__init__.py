"""ONNX frontend: ``tl.load("m.onnx")``, ``tl.load(model_proto)`` and ``tl.save(m, "m.onnx")``."""

from __future__ import annotations

import os
from typing import Any

import onnx

from ...limits import DEFAULT_LIMITS, Limits
from ...model import Model
from .reader import read_graph, read_model


def load_onnx(
    model: onnx.ModelProto | str | os.PathLike[str], *, trainable: bool = False, **options: Any
) -> Model:
    """Convert an ONNX model (a path or a ModelProto) into a tensorloop Model. ``trainable``:
    its float initializers become trainable persistent variables under their names (for
    ``tl.grad`` with respect to them and for ``train.train_step``), where by default they are
    constants that loading may fold into others (a GRU's weights sliced per gate)."""
    proto, source = read_model(model)
    source.trainable = trainable
    limits = options.get("limits")  # Model refuses one that is not a Limits
    graph = read_graph(proto, source, limits if isinstance(limits, Limits) else DEFAULT_LIMITS)
    return Model(graph, **options)


def load_file(path: str | os.PathLike[str], **options: Any) -> Model:
    """``tl.load`` of a ``.onnx`` file."""
    return load_onnx(path, **options)


from .summary import summarize_file  # noqa: E402
from .writer import save_file  # noqa: E402

__all__ = ["load_file", "load_onnx", "save_file", "summarize_file"]
