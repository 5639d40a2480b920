"""``tl.load`` and ``tl.save``: model files by suffix, each read and written by its format."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .errors import FormatError, TensorloopError, refuse_special_file
from .formats import format_module
from .model import Model


def load(path: str | os.PathLike[str] | bytes | Any, **options: Any) -> Model:
    """Open a model file (``.tl``, ``.onnx``, ``.xml``), convert an ``onnx.ModelProto``, or
    read a file's bytes (text IR or ONNX; OpenVINO IR is two files, so only by path)."""
    if isinstance(path, bytes | bytearray | memoryview):
        return _guarded("<model bytes>", _load_bytes, bytes(path), **options)
    if not isinstance(path, str | os.PathLike):
        if type(path).__name__ == "ModelProto":
            from .formats.onnx import load_onnx

            return _guarded(f"<ONNX model '{path.graph.name}'>", load_onnx, path, **options)
        raise FormatError(f"cannot load a {type(path).__name__}: expected a path or a ModelProto")
    fn = format_module(path, "load").load_file
    refuse_special_file(path, str(path))  # a FIFO or a device: refused, not read (it may block)
    if not Path(path).is_file():
        raise FormatError(f"{path}: no such file")
    return _guarded(str(path), fn, path, **options)


def _load_bytes(data: bytes, **options: Any) -> Model:
    """A model from a file's bytes: text IR if they read as a graph, else an ONNX model."""
    head = data[:4096].lstrip()
    while head.startswith(b"#"):  # comment lines before the graph
        head = head.partition(b"\n")[2].lstrip()
    if head.startswith(b"graph"):
        from .formats.text import load_text

        return load_text(data, "<model bytes>", **options)
    from .formats.onnx import load_onnx
    from .formats.onnx.reader import parse_model_bytes

    return load_onnx(parse_model_bytes(data, "<model bytes>"), **options)


def _guarded(label: str, fn: Callable[..., Model], *args: Any, **options: Any) -> Model:
    """``fn(*args, **options)``, with any exception that is not a TensorloopError (a loader bug a
    hostile file found) turned into a FormatError naming the file: the last line of defence
    behind the loaders' own checks."""
    try:
        return fn(*args, **options)
    except TensorloopError as exc:
        if label in str(exc) or len(exc.args) != 1:
            raise
        try:  # a check past the loader (the model's limits, say) names the file too
            named = type(exc)(f"{label}: {exc}")
        except Exception:  # a subclass with its own signature stays as it is
            raise exc from None
        raise named from None
    except RecursionError:
        raise FormatError(f"{label}: nested too deeply to read") from None
    except Exception as exc:  # the point: nothing internal escapes
        raise FormatError(f"{label}: cannot read this model ({type(exc).__name__}: {exc})") from exc


def save(model: Model, path: str | os.PathLike[str], **options: Any) -> None:
    """Write a model; the format follows the suffix."""
    format_module(path, "save").save_file(model, path, **options)
