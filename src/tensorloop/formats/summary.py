"""``summarize(path)``: a model file as written (format, versions, producer, ports, op counts,
weights, and every loop and branch with its ports and body) before tensorloop lowers it.

Each format module's ``summarize_file`` (``onnx/summary.py``, ``openvino/summary.py``, ``text.py``)
reads its files with that format's own reader; any tensorloop graph is summarised here, by
``graph_summary``.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import FormatError, TensorloopError, refuse_special_file
from ..ir.branch import If
from ..ir.graph import Graph
from ..ir.loop import Loop
from . import format_module


@dataclass(frozen=True)
class Port:
    """A model input or output: its name and type as the file declares it (``f32[batch,8]``)."""

    name: str
    type: str


@dataclass(frozen=True)
class LoopSummary:
    """One loop or branch of the file: ``op`` as the file names it, ``origin`` what it is (an
    ONNX Loop, an LSTM op that becomes a loop, an OpenVINO TensorIterator...), ``trip`` its trip
    bound in words, its ports by role, ``body`` the nodes of its body (bodies nested in it
    included; None for an op with no body in the file), ``depth`` how deeply it is nested."""

    op: str
    name: str
    origin: str
    depth: int
    trip: str
    carried: int = 0
    sliced: int = 0
    invariant: int = 0
    stacked: int = 0
    body: int | None = None
    detail: str = ""

    @property
    def is_branch(self) -> bool:
        return self.op == "If"

    def describe(self) -> str:
        """One line: ``Loop 'rnn' (ONNX Loop): trip ..., 1 carried, ...; body 12 nodes``."""
        head = f"{self.op} '{self.name}'" if self.name else self.op
        parts = [f"{head} ({self.origin})"] if self.origin != self.op else [head]
        if self.is_branch:
            tail = self.detail
        else:
            tail = (
                f"trip {self.trip}; {self.carried} carried, {self.sliced} sliced, "
                f"{self.invariant} invariant, {self.stacked} stacked"
            )
            if self.body is not None:
                tail += f"; body {self.body} nodes"
            if self.detail:
                tail += f"; {self.detail}"
        return f"{parts[0]}: {tail}"


@dataclass
class ModelSummary:
    """What a model file says about itself."""

    path: str
    format: str
    ir_version: str = ""
    opsets: dict[str, int] = field(default_factory=dict)
    producer: str = ""
    graph_name: str = ""
    inputs: list[Port] = field(default_factory=list)
    outputs: list[Port] = field(default_factory=list)
    op_counts: dict[str, int] = field(default_factory=dict)
    parameters: int = 0
    weight_bytes: int = 0
    loops: list[LoopSummary] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["loops"] = [{**asdict(loop), "summary": loop.describe()} for loop in self.loops]
        return data


def summarize(path: str | os.PathLike[str]) -> ModelSummary:
    """The summary of the model file at ``path`` (``.onnx``, OpenVINO ``.xml``, text IR), read
    from the file itself; a FormatError if it cannot be read."""
    p = Path(path)
    refuse_special_file(p, str(path))  # a FIFO or a device: refused, not read (it may block)
    if not p.is_file():
        raise FormatError(f"{path}: no such file")
    fn: Callable[[Path], ModelSummary] = format_module(p, "read").summarize_file
    try:
        return fn(p)
    except TensorloopError:
        raise
    except RecursionError:
        raise FormatError(f"{path}: nested too deeply to read") from None
    except Exception as exc:  # a summarizer bug a hostile file found: nothing internal escapes
        raise FormatError(f"{path}: cannot read this model ({type(exc).__name__}: {exc})") from exc


# -- the canonical graph ---------------------------------------------------------------------
def graph_summary(graph: Graph, path: str = "", fmt: str = "tensorloop graph") -> ModelSummary:
    """A summary of a tensorloop graph (a text IR file, or any model's canonical graph)."""
    counts = Counter(n.op for _, n in graph.walk())
    params = weights = 0
    for _, node in graph.walk():
        if node.op == "Constant":
            value = np.asarray(node.attrs.get("value"))
            weights += value.nbytes
            if value.dtype.kind in "fc":
                params += value.size
    return ModelSummary(
        path=path,
        format=fmt,
        graph_name=graph.name,
        inputs=[Port(v.name, str(v.type)) for v in graph.inputs],
        outputs=[Port(v.name, str(v.type)) for v in graph.outputs],
        op_counts=dict(sorted(counts.items())),
        parameters=params,
        weight_bytes=weights,
        loops=list(graph_loops(graph)),
    )


def graph_loops(graph: Graph, depth: int = 0) -> Iterator[LoopSummary]:
    """Every Loop and If of ``graph`` by the Loop and If views, outer ones first."""
    for node in graph.nodes:
        if node.op == "Loop":
            loop = Loop(node)
            static = loop.static_trip_count
            if static is not None:
                trip = str(static)
            elif loop.trip_count is not None:
                trip = f"%{loop.trip_count.name}"
            elif loop.sliced:
                trip = "the sliced length"
            else:
                trip = "none (until the condition)"
            if static is None and loop.condition is not None and loop.trip_count is not None:
                trip += " or the condition"
            yield LoopSummary(
                "Loop",
                node.name,
                "Loop",
                depth,
                trip,
                carried=len(loop.carried),
                sliced=len(loop.sliced),
                invariant=len(loop.invariants),
                stacked=len(loop.stacked),
                body=_graph_size(loop.body),
            )
            yield from graph_loops(loop.body, depth + 1)
        elif node.op == "If":
            view = If(node)
            then, orelse = view.then_branch, view.else_branch
            yield LoopSummary(
                "If",
                node.name,
                "If",
                depth,
                "",
                invariant=len(view.captured),
                body=_graph_size(then) + _graph_size(orelse),
                detail=f"then {_graph_size(then)} nodes, else {_graph_size(orelse)} nodes",
            )
            yield from graph_loops(then, depth + 1)
            yield from graph_loops(orelse, depth + 1)
        else:
            for sub in node.subgraphs.values():
                yield from graph_loops(sub, depth + 1)


def _graph_size(graph: Graph) -> int:
    return sum(1 for _ in graph.walk())


__all__ = [
    "LoopSummary",
    "ModelSummary",
    "Port",
    "graph_loops",
    "graph_summary",
    "summarize",
]
