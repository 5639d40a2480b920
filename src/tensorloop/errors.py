"""The exception hierarchy: every error tensorloop raises on purpose is a TensorloopError."""

from __future__ import annotations

import os
import stat
from typing import Any


class TensorloopError(Exception):
    """Base of every error tensorloop raises on purpose. ``handoffs``: for an error a run
    raised, what its backend had handed on to another before it (``Outputs.handoffs``)."""

    handoffs: tuple[Any, ...] = ()


class GraphError(TensorloopError):
    """A graph is malformed: bad wiring, arity, attribute or type."""


class VerificationError(GraphError):
    """The verifier found a graph that breaks an invariant of the IR."""


class ShapeInferenceError(GraphError):
    """An op cannot type its outputs from the types of its inputs."""


class NetworkError(GraphError):
    """A network built with tensorloop.network breaks one of TensorRT's rules for networks."""


class StreamingError(GraphError):
    """A model cannot be streamed as asked: the message names the value that needs the whole
    sequence (or the state pairing that does not fit) and why."""


class GradientError(GraphError):
    """A gradient cannot be built as asked: the message names the op or value (an op without a
    gradient rule, an integer value asked for its gradient, an unknown name)."""


class ParseError(TensorloopError):
    """Text IR could not be parsed; the message names line and column."""


class FormatError(TensorloopError):
    """A model file (ONNX, OpenVINO IR, ...) is malformed or unsupported."""


class ExecutionError(TensorloopError):
    """A kernel failed at run time on the values it was given."""


class InputError(ExecutionError):
    """The inputs given to a model do not match its parameters."""


class LoopLimitError(ExecutionError):
    """A loop ran past the configured maximum number of iterations."""


class ResourceLimitError(ExecutionError):
    """A model or a run would pass one of its ``Limits``: a tensor or stacked output too large,
    a rank or a nesting of bodies too deep. Raised before the memory is allocated."""


class RunTimeoutError(ResourceLimitError):
    """A run was still going when its wall-clock ``timeout`` ran out."""


class UnsupportedOpError(TensorloopError):
    """No definition or kernel is registered for an op."""


class BackendError(TensorloopError):
    """No backend of that name exists, or a backend was asked for something it cannot do."""


class FallbackWarning(RuntimeWarning):
    """A backend handed part of a run to another backend (a ``Handoff``: which nodes, from
    which backend to which, and why): the answer is the other backend's, and so is its speed.
    Warned once per plan and reason; the test suite makes it an error unless a test declares
    the handoff."""


_FILE_KINDS = {
    stat.S_IFREG: "a regular file",
    stat.S_IFDIR: "a folder",
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
}


def file_kind(path: str | os.PathLike[str]) -> str | None:
    """What ``path`` names, found with ``os.stat`` (links followed, nothing opened, so a named
    pipe cannot block): "a regular file", "a folder", "a FIFO (named pipe)", "a character
    device", ...; None where nothing is there or it cannot be looked at (the caller's own
    open then says why)."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):  # missing, no permission, a name too long or holding NUL
        return None
    return _FILE_KINDS.get(stat.S_IFMT(mode), "a special file")


def refuse_special_file(
    path: str | os.PathLike[str], label: str, error: type[TensorloopError] = FormatError
) -> None:
    """Raise ``error`` naming ``label`` where ``path`` is there but is no regular file: a FIFO
    or a device would block or never end a read, a folder cannot be read. A missing path is
    left to the caller (its usual "no such file")."""
    kind = file_kind(path)
    if kind is not None and kind != "a regular file":
        raise error(f"{label}: {kind}, not a regular file")
