"""``tl.load`` and ``tl.save``: model files by suffix, through a registry the frontends fill."""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .errors import FormatError, ParseError, TensorloopError
from .model import Model

Loader = Callable[..., Model]
Saver = Callable[..., None]

_LOADERS: dict[str, Loader] = {}
_SAVERS: dict[str, Saver] = {}
_FRONTENDS = ("tensorloop.formats.openvino", "tensorloop.formats.onnx")


def loader(*suffixes: str) -> Callable[[Loader], Loader]:
    def register(fn: Loader) -> Loader:
        for s in suffixes:
            _LOADERS[s] = fn
        return fn

    return register


def saver(*suffixes: str) -> Callable[[Saver], Saver]:
    def register(fn: Saver) -> Saver:
        for s in suffixes:
            _SAVERS[s] = fn
        return fn

    return register


def _suffix(path: str | os.PathLike[str], table: dict[str, Any], verb: str) -> str:
    for module in _FRONTENDS:  # imported on first use: they register their suffixes
        importlib.import_module(module)
    suffix = Path(path).suffix.lower()
    if suffix in table:
        return suffix
    known = ", ".join(sorted(table))
    raise FormatError(f"{path}: unknown model format '{suffix}'; tensorloop {verb}s {known}")


def load(path: str | os.PathLike[str] | Any, **options: Any) -> Model:
    """Open a model file (``.tl``, ``.onnx``, ``.xml``), or convert an ``onnx.ModelProto``."""
    if not isinstance(path, str | os.PathLike):
        if type(path).__name__ == "ModelProto":
            from .formats.onnx import load_onnx

            return _guarded(f"<ONNX model '{path.graph.name}'>", load_onnx, path, **options)
        raise FormatError(f"cannot load a {type(path).__name__}: expected a path or a ModelProto")
    fn = _LOADERS[_suffix(path, _LOADERS, "load")]
    if not Path(path).is_file():
        raise FormatError(f"{path}: no such file")
    return _guarded(str(path), fn, path, **options)


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
    _SAVERS[_suffix(path, _SAVERS, "save")](model, path, **options)


@loader(".tl", ".tlir")
def _load_text(path: str | os.PathLike[str], **options: Any) -> Model:
    from .ir.parser import parse_graph

    try:
        text = Path(path).read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        line = exc.object[: exc.start].count(b"\n") + 1
        raise ParseError(
            f"{path}: line {line}: not UTF-8 text (byte {exc.start}: {exc.reason})"
        ) from None
    try:
        graph = parse_graph(text)
        return Model(graph, **options)
    except TensorloopError as exc:
        raise type(exc)(f"{path}: {exc}") from None


@saver(".tl", ".tlir")
def _save_text(model: Model, path: str | os.PathLike[str]) -> None:
    from .ir.printer import print_graph

    Path(path).write_text(print_graph(model.graph) + "\n", encoding="utf-8")
