"""A run's traced values keyed by loop path: ``TraceEntry`` (one recorded value) and ``Trace``
(the values of one name: ``outputs.trace[name]``), stacked per loop path, filtered and
summarised (norm, min, max, mean per value). Writing them to files is ``tools/trace.py``'s.

Every recorded value (a ``TraceEntry``) carries its ``iteration`` (the counters of the loops it
ran in, outermost first) and its ``loop``: the labels of those loops, each the Loop node's name
(or, where loops of one graph share a name, as a bidirectional RNN's two directions do, its
body's name; see ``runtime.loop_label``). As text a loop path joins its labels with
``" > "``: ``/lstm/LSTM.forward``, ``outer > inner``. A value traced outside every loop has the
empty path. Wherever a loop is asked for, either its whole path or its innermost label will do.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InputError
from ..tensor.dtypes import DType

LOOP_SEPARATOR = " > "
"""Joins the labels of a loop path in its text form (ONNX node names hold ``/`` already)."""


@dataclass(frozen=True)
class TraceEntry:
    """One recorded value: ``iteration`` holds the loop counters from outermost to innermost,
    ``loop`` the labels of those loops (``loop_label``), one per counter."""

    iteration: tuple[int, ...]
    value: Any
    loop: tuple[str, ...] = ()

    @property
    def loop_path(self) -> str:
        """``loop`` as text: its labels joined by ``" > "`` (empty outside every loop)."""
        return LOOP_SEPARATOR.join(self.loop)


STATISTICS = ("norm", "min", "max", "mean")
"""The statistics of each traced value: the L2 norm of all its elements, and their min, max and
mean (NaN where the value is no numeric tensor or is empty)."""

LoopSpec = str | Sequence[str] | None
"""A loop path as text (``"outer > inner"``), its innermost label, or the labels as a tuple."""


def loop_text(loop: Sequence[str]) -> str:
    """A loop path as text: its labels joined by ``" > "``."""
    return LOOP_SEPARATOR.join(loop)


@dataclass(frozen=True)
class StackedTrace:
    """The values one name took in one loop path, stacked: ``values[k]`` was recorded at the
    loop counters ``iterations[k]`` (int64 ``[n, depth]``)."""

    name: str
    loop: tuple[str, ...]
    iterations: np.ndarray[Any, Any]
    values: np.ndarray[Any, Any]

    @property
    def loop_path(self) -> str:
        return loop_text(self.loop)


@dataclass(frozen=True)
class SummaryRow:
    """The statistics of one recorded value."""

    name: str
    loop: tuple[str, ...]
    iteration: tuple[int, ...]
    step: int
    """The value's position among the values of its name and loop path (from 0)."""
    type: str
    norm: float
    min: float
    max: float
    mean: float

    @property
    def loop_path(self) -> str:
        return loop_text(self.loop)

    def statistic(self, name: str) -> float:
        if name not in STATISTICS:
            raise InputError(f"unknown statistic '{name}'; choose from {', '.join(STATISTICS)}")
        return float(getattr(self, name))


@dataclass(frozen=True)
class Iterations:
    """The iterations ``start <= i < stop`` (either open) of the innermost loop, every
    ``every``-th from ``start``: Python's ``start:stop:every``."""

    start: int = 0
    stop: int | None = None
    every: int = 1

    def __post_init__(self) -> None:
        if self.every < 1:
            raise InputError(f"every must be a whole number >= 1, got {self.every}")
        if self.start < 0 or (self.stop is not None and self.stop < 0):
            raise InputError(f"iterations count from 0, got {self.start}:{self.stop}")

    @classmethod
    def parse(cls, text: str | None, every: int = 1) -> Iterations:
        """``"a:b"``, ``"a:"``, ``":b"`` or ``"a"`` (that one iteration)."""
        if not text:
            return cls(every=every)
        start, sep, stop = text.partition(":")
        try:
            first = int(start) if start.strip() else 0
            last = int(stop) if stop.strip() else None
        except ValueError:
            raise InputError(
                f"iterations must read START:STOP (whole numbers), got {text!r}"
            ) from None
        return cls(first, last if sep else first + 1, every)

    def keeps(self, i: int) -> bool:
        if i < self.start or (self.stop is not None and i >= self.stop):
            return False
        return (i - self.start) % self.every == 0


class Trace(list[TraceEntry]):
    """The values recorded for one traced name, in run order: ``outputs.trace[name]``. A list of
    ``TraceEntry(iteration, value, loop)``; ``loops`` lists its loop paths, ``stacked(loop)``
    gives the values of one path as an array ``[iterations, ...]``."""

    def __init__(self, name: str, entries: Iterable[TraceEntry] = ()) -> None:
        super().__init__(entries)
        self.name = name

    @property
    def loops(self) -> list[tuple[str, ...]]:
        """The loop paths of the entries, in the order they first ran."""
        return list(dict.fromkeys(e.loop for e in self))

    def by_loop(self) -> dict[tuple[str, ...], Trace]:
        """The entries of each loop path, each in run order."""
        groups: dict[tuple[str, ...], Trace] = {}
        for e in self:
            groups.setdefault(e.loop, Trace(self.name)).append(e)
        return groups

    def select(
        self, loop: LoopSpec = None, *, iterations: Iterations | str | None = None, every: int = 1
    ) -> Trace:
        """The entries of ``loop`` (every loop if None) at the chosen iterations of their
        innermost loop (``"a:b"`` or an ``Iterations``; values outside every loop stay)."""
        chosen = set(self.match(loop)) if loop is not None else None
        if not isinstance(iterations, Iterations):
            iterations = Iterations.parse(iterations, every)
        elif every != 1:
            iterations = Iterations(iterations.start, iterations.stop, every)
        return Trace(
            self.name,
            (
                e
                for e in self
                if (chosen is None or e.loop in chosen)
                and (not e.iteration or iterations.keeps(e.iteration[-1]))
            ),
        )

    def match(self, loop: LoopSpec) -> list[tuple[str, ...]]:
        """The loop paths ``loop`` names: its whole path, or its innermost label."""
        paths = self.loops
        if loop is None:
            return paths
        if not isinstance(loop, str):
            found = [p for p in paths if p == tuple(loop)]
        else:
            found = [p for p in paths if loop_text(p) == loop] or [
                p for p in paths if p and p[-1] == loop
            ]
        if not found:
            raise InputError(
                f"'{self.name}' was recorded in no loop {_quoted(loop)}; its loops are "
                f"{', '.join(_quoted(p) for p in paths) or 'none (nothing was recorded)'}"
            )
        return found

    def stacked(self, loop: LoopSpec = None) -> StackedTrace:
        """The values of one loop path stacked along a new first axis (``loop`` may be left out
        where the name ran in one loop path only)."""
        paths = self.match(loop)
        if len(paths) != 1:
            raise InputError(
                f"'{self.name}' was recorded in {len(paths)} loops "
                f"({', '.join(_quoted(p) for p in paths)}); say which with loop="
            )
        (path,) = paths
        entries = [e for e in self if e.loop == path]
        arrays = [np.asarray(e.value) for e in entries]
        first = arrays[0]
        for k, a in enumerate(arrays):
            if a.shape != first.shape or a.dtype != first.dtype or a.dtype == object:
                raise InputError(
                    f"'{self.name}' in loop {_quoted(path)} is {_type_of(entries[0].value)} at "
                    f"iteration {counters_text(entries[0].iteration)} but "
                    f"{_type_of(entries[k].value)} at {counters_text(entries[k].iteration)}: "
                    "values of different types do not stack"
                )
        counters = np.array([e.iteration for e in entries], np.int64).reshape(len(entries), -1)
        return StackedTrace(self.name, path, counters, np.stack(arrays))

    def summary(self) -> list[SummaryRow]:
        """The statistics of every entry, in run order."""
        rows: dict[int, SummaryRow] = {}
        for path, group in self.by_loop().items():
            positions = [k for k, e in enumerate(self) if e.loop == path]
            for k, row in zip(positions, _summarise(self.name, path, group), strict=True):
                rows[k] = row
        return [rows[k] for k in range(len(self))]


def summarize(traces: Mapping[str, Sequence[TraceEntry]]) -> list[SummaryRow]:
    """The statistics of every traced value, name by name, each name in run order."""
    return [row for name, entries in traces.items() for row in as_trace(name, entries).summary()]


def as_trace(name: str, entries: Sequence[TraceEntry]) -> Trace:
    return entries if isinstance(entries, Trace) else Trace(name, entries)


def _summarise(name: str, path: tuple[str, ...], group: Trace) -> list[SummaryRow]:
    """The statistics of ``group`` (one loop path): vectorised where its values stack."""
    values = [e.value for e in group]
    arrays = [v for v in values if isinstance(v, np.ndarray | np.generic)]
    same = len(arrays) == len(values) and all(
        a.shape == arrays[0].shape and a.dtype == arrays[0].dtype for a in arrays
    )
    if same and arrays and arrays[0].size and _numeric(arrays[0]):
        with np.errstate(all="ignore"):
            flat = np.stack(arrays).reshape(len(arrays), -1).astype(np.float64)
            stats = zip(
                np.sqrt(np.sum(flat * flat, axis=1)),
                flat.min(axis=1),
                flat.max(axis=1),
                flat.mean(axis=1),
                strict=True,
            )
        kind = _type_of(arrays[0])
        return [
            SummaryRow(name, path, e.iteration, k, kind, *map(float, s))
            for k, (e, s) in enumerate(zip(group, stats, strict=True))
        ]
    return [
        SummaryRow(name, path, e.iteration, k, _type_of(e.value), *_statistics(e.value))
        for k, e in enumerate(group)
    ]


def _numeric(a: np.ndarray[Any, Any] | np.generic) -> bool:
    """Bools and numbers: NumPy's kinds "biuf" and the ml_dtypes types (bfloat16, the float8s,
    float4, the 4- and 2-bit integers), which NumPy files under kind "V"."""
    return a.dtype.kind in "biuf" or a.dtype in _ML_NUMBERS


_ML_NUMBERS = frozenset(d.numpy for d in DType if d.is_numeric)


def _statistics(value: Any) -> tuple[float, float, float, float]:
    if not isinstance(value, np.ndarray | np.generic) or not value.size or not _numeric(value):
        return (math.nan,) * 4
    with np.errstate(all="ignore"):
        flat = np.asarray(value, np.float64).reshape(-1)
        return (
            float(np.sqrt(np.sum(flat * flat))),
            float(flat.min()),
            float(flat.max()),
            float(flat.mean()),
        )


def _type_of(value: Any) -> str:
    if isinstance(value, np.ndarray | np.generic):
        return f"{value.dtype.name}[{','.join(map(str, value.shape))}]"
    if isinstance(value, list):
        return f"sequence of {len(value)}"
    return "none" if value is None else type(value).__name__


def counters_text(iteration: tuple[int, ...]) -> str:
    """Loop counters as text: ``"2,0"``, or ``"-"`` outside every loop."""
    return ",".join(map(str, iteration)) or "-"


def _quoted(loop: str | Sequence[str]) -> str:
    return f"'{loop if isinstance(loop, str) else loop_text(loop)}'"
