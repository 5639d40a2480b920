"""Batch inference over records: a model run over many records of different lengths, each
record's outputs its own, a bad record an error row (``RecordRunner``). ``tensorloop.ray`` runs
it on Ray Data's workers, ``tensorloop batch`` from the command line.

A *record* gives each model input for one item of a batch: the input without its batch axis
(``batch_axis``: where the records stack, 0 by default; None for a model without one, whose
records are whole inputs). Its outputs come back the same way, each without its batch axis.

Two ways to run them:

* **exact** (the default): each record runs alone, as a batch of one, at its own shape; its
  outputs are a single ``model.run`` of that record, bit for bit. Records of one shape share a
  plan (the compiled backend plans once per signature).
* **stacked** (``stack=True``): records are grouped by shape and run together, up to
  ``max_stack`` a run, stacked along the batch axis. Sequence inputs are padded at the end of
  their time axis to a few bucket lengths (``buckets``), so plans are reused, where padding
  cannot change a record's outputs: every output asked for is computed step by step over time
  (``passes.time_axis``: row ``t`` from steps up to ``t``), and is cut back to the record's
  length. Otherwise (a bidirectional RNN, a final state, a reduction over time) only records
  of the same length stack. A stacked run's matrix products see more rows than a single
  record's, and BLAS sums them in another order: outputs agree with the exact runs to a few
  ULPs of float rounding, not bit for bit (docs/scale-out.md).

Faults stay with their records: a record whose inputs do not fit the model, or whose run fails
(a ``Limits`` bound, a ``timeout`` of seconds per record, a kernel refusing its values),
becomes an error row naming the error; the others run. A stacked run that fails is split and
its records run alone, each then getting its own answer or error (``BatchStats.split``).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InputError, TensorloopError
from ..ir.graph import static_type
from ..model import Model
from ..passes.specialize import Guards, specialize
from ..passes.time_axis import Analysis, Readout, Timed, find_sequence_inputs
from ..reference.runtime import coerce_inputs
from ..tensor.types import TensorType, normalize_axis

ERROR_COLUMN = "error"
"""The column holding each record's error (None where it ran)."""

AUTO = "auto"


@dataclass
class RecordResult:
    """One record's outputs by name, or the error that stopped it (``"InputError: ..."``)."""

    outputs: dict[str, np.ndarray[Any, Any]] | None
    error: str | None = None


@dataclass
class BatchStats:
    """What a ``RecordRunner`` did so far."""

    records: int = 0
    errors: int = 0
    runs: int = 0
    """Model runs: one per record run alone, one per stacked group."""
    stacked: int = 0
    """Records that ran in a stacked run."""
    padded_steps: int = 0
    """Time steps of padding the stacked runs added."""
    filler: int = 0
    """Records repeated to fill a stacked run to its planned size (their outputs dropped)."""
    split: int = 0
    """Stacked runs that failed and whose records then ran alone."""

    def add(self, other: BatchStats) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


@dataclass
class _Group:
    """Records stacked into runs: their indices, each one's length, the padded length."""

    indices: list[int] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    padded: int | None = None


def bucket_length(length: int, buckets: Sequence[int] | str) -> int:
    """The padded length of a sequence of ``length`` steps: the least of ``buckets`` at least
    as long (``length`` itself beyond the last), or with ``"auto"`` the least of 1, 2, 3, 4,
    6, 8, 12, 16, 24, ... (powers of two and one and a half times them): at most half again
    as long, two plans an octave."""
    if isinstance(buckets, str):
        if length <= 2:
            return max(length, 1)
        power = 1 << (length - 1).bit_length()
        return power * 3 // 4 if length <= power * 3 // 4 else power
    return next((b for b in sorted(buckets) if b >= length), length)


def stacked_count(n: int, max_stack: int, multiple: int = 1) -> int:
    """How many records a stacked run of ``n`` holds: the next of the bucket lengths (1, 2, 3,
    4, 6, 8, 12, ...: a few sizes are planned, a third at most is filler), at most
    ``max_stack``, rounded up to a ``multiple`` (the devices a batch is sharded over)."""
    size = min(bucket_length(n, AUTO), max(max_stack, n))
    return -(-size // multiple) * multiple


class RecordRunner:
    """Runs ``model`` over records (see the module docstring); safe to call from threads.

    ``batch_axis``: where records stack in each input (an int for all, a mapping by input name,
    None where an input is given whole: records then stack only with records of equal value
    for it). ``columns`` maps input names to the columns holding them (by default the input's
    own name); ``outputs`` chooses outputs (by default all). ``sequence``: each sequence input's
    time axis in the model's input (by default those its loops slice). ``buckets``: padded
    lengths for ``stack`` (``"auto"`` or a list). ``timeout``: seconds each record may take
    (a stacked run gets its records' sum). ``backend``: the backend to run on (the model's by
    default). ``devices``: on the jax backend, shard each stacked run across this many devices
    (all with ``"all"``) along its batch axis. ``output_batch_axis`` says where an output's
    batch axis is where the model's types cannot tell."""

    def __init__(
        self,
        model: Model,
        *,
        batch_axis: int | Mapping[str, int | None] | None = 0,
        stack: bool = False,
        buckets: Sequence[int] | str = AUTO,
        max_stack: int = 32,
        pad_value: float = 0,
        columns: Mapping[str, str] | None = None,
        outputs: Sequence[str] | None = None,
        sequence: Mapping[str, int] | None = None,
        timeout: float | None = None,
        backend: str | None = None,
        devices: int | str | None = None,
        output_batch_axis: Mapping[str, int | None] | None = None,
        error_column: str = ERROR_COLUMN,
        length_input: str | None = None,
    ) -> None:
        self.model = model
        graph = model.graph
        names = model.input_names
        if length_input is not None and length_input not in names:
            raise InputError(
                f"length_input '{length_input}' is no input of the model; it takes "
                f"{', '.join(names)}"
            )
        self.length_input = length_input
        self.columns = {n: n for n in names if n != length_input} | dict(columns or {})
        unknown = sorted(set(self.columns) - set(names))
        if unknown:
            raise InputError(
                f"columns name no input of the model: {', '.join(unknown)}; "
                f"it takes {', '.join(names) or 'nothing'}"
            )
        self.outputs = list(model.output_names if outputs is None else outputs)
        missing = [n for n in self.outputs if n not in model.output_names]
        if missing:
            raise InputError(
                f"no output {', '.join(missing)}; the model gives {', '.join(model.output_names)}"
            )
        self.axes = self._input_axes(batch_axis)
        if max_stack < 1:
            raise InputError(f"max_stack must be at least 1, got {max_stack}")
        if not isinstance(buckets, str) and any(int(b) < 1 for b in buckets):
            raise InputError(f"bucket lengths must be at least 1, got {list(buckets)}")
        if isinstance(buckets, str) and buckets != AUTO:
            raise InputError(f"buckets must be 'auto' or a list of lengths, got {buckets!r}")
        if stack and all(a is None for a in self.axes.values()):
            raise InputError(
                "stack=True needs a batch axis to stack records along; this runner has "
                "batch_axis=None for every input"
            )
        self.stack = stack
        self.buckets = buckets
        self.max_stack = max_stack
        self.pad_value = pad_value
        self.timeout = timeout
        self.backend = backend
        self.devices = devices
        self.error_column = error_column
        self.stats = BatchStats()
        self._lock = threading.Lock()
        self._given_out_axes = dict(output_batch_axis or {})
        self._out_axes: dict[str, int | None] | None = None
        found = find_sequence_inputs(graph) if sequence is None else dict(sequence)
        self.sequence = {
            n: normalize_axis(a, self._rank(n), f"sequence input '{n}'", error=InputError)
            for n, a in found.items()
            if n in names
        }
        if length_input is not None and not self.sequence:
            raise InputError(
                f"length_input '{length_input}' needs a sequence input to take the lengths "
                "of; name it with sequence={input: time axis}"
            )
        self.padding, self.why_not_padded, self.time_axes = self._padding_plan()
        self._probed_time_axes = length_input is None
        self.buckets_allowed = self.padding and not any(
            isinstance(self._dims(n)[a], int) for n, a in self.sequence.items()
        )
        """Whether lengths are padded up to buckets: not where a type fixes the length."""

    # -- set-up -------------------------------------------------------------------------------
    def _rank(self, name: str) -> int:
        return len(self._dims(name))

    def _dims(self, name: str) -> tuple[object, ...]:
        param = next(p for p in self.model.graph.inputs if p.name == name)
        t = param.type
        if not isinstance(t, TensorType) or t.shape is None:
            raise InputError(f"input '{name}' has no known rank; give its axes explicitly")
        return tuple(t.shape)

    def _input_axes(self, batch_axis: Any) -> dict[str, int | None]:
        axes: dict[str, int | None] = {}
        for name in self.model.input_names:
            given = batch_axis.get(name, 0) if isinstance(batch_axis, Mapping) else batch_axis
            if name == self.length_input and not (
                isinstance(batch_axis, Mapping) and name in batch_axis
            ):
                given = 0  # a length per record: [batch], or a scalar (below) for one record
            if given is None:
                axes[name] = None
                continue
            if isinstance(given, bool) or not isinstance(given, int):
                raise InputError(f"batch_axis of input '{name}' must be an int or None")
            param = next(p for p in self.model.graph.inputs if p.name == name)
            t = param.type
            if isinstance(t, TensorType) and t.rank == 0:
                axes[name] = None  # a scalar has no batch axis: given whole
                continue
            rank = t.rank if isinstance(t, TensorType) else None
            axes[name] = (
                given
                if rank is None
                else normalize_axis(given, rank, f"batch_axis of input '{name}'", error=InputError)
            )
        if isinstance(batch_axis, Mapping):
            unknown = sorted(set(batch_axis) - set(axes))
            if unknown:
                raise InputError(f"batch_axis names no input of the model: {', '.join(unknown)}")
        return axes

    def _padding_plan(self) -> tuple[bool, str, dict[str, int | None]]:
        """Whether stacked runs may pad sequences (and why not), and each output's time axis
        in the model's output (None: no time axis, the same for every length)."""
        if not self.sequence:
            return False, "no input is a sequence a loop runs over", {}
        if self.length_input is not None:  # the model masks by it: the time axes are probed
            return True, "", {}
        try:
            analysis = Analysis(self.model.graph, self.sequence)
        except TensorloopError as exc:
            return False, str(exc), {}
        axes: dict[str, int | None] = {}
        for value in self.model.outputs:
            if value.name not in self.outputs:
                continue
            kind = analysis.kind(value)
            if isinstance(kind, Timed):
                axes[value.name] = kind.axis
            elif kind is None:
                axes[value.name] = None
            else:
                why = (
                    "the final state of a loop"
                    if isinstance(kind, Readout)
                    else getattr(kind, "why", "a value computed from the whole sequence")
                )
                return False, f"output '{value.name}' is {why}", {}
        return True, "", axes

    # -- running --------------------------------------------------------------------------------
    def run(self, records: Sequence[Mapping[str, Any]]) -> list[RecordResult]:
        """Each record's result, in order; a record maps input names to values."""
        stats = BatchStats(records=len(records))
        results: list[RecordResult | None] = [None] * len(records)
        ready: list[tuple[int, dict[str, np.ndarray[Any, Any]]]] = []
        for i, record in enumerate(records):
            try:
                ready.append((i, self._checked(record)))
            except TensorloopError as exc:
                results[i] = _error(exc)
        if self.stack:
            for group in self._groups(ready):
                self._run_group(group, ready, results, stats)
        else:
            for i, record in ready:
                results[i] = self._run_alone(record, stats)
        final = [r if r is not None else RecordResult(None, "no result") for r in results]
        stats.errors = sum(r.error is not None for r in final)
        with self._lock:
            self.stats.add(stats)
        return final

    def run_batch(self, batch: Mapping[str, Any]) -> dict[str, np.ndarray[Any, Any]]:
        """A batch of columns in, columns out (Ray Data's ``map_batches`` format): every
        column that is not an input passes through (ids, paths), then each output (an object
        array of one array per record, None in error rows) and ``error_column``."""
        used = set(self.columns.values())
        sizes = {len(v) for v in batch.values()}
        if len(sizes) > 1:
            raise InputError(f"the batch's columns have different lengths: {sorted(sizes)}")
        n = sizes.pop() if sizes else 0
        absent = sorted(c for c in used if c not in batch)
        records = [
            {name: (None if col in absent else batch[col][i]) for name, col in self.columns.items()}
            for i in range(n)
        ]
        results = self.run(records)
        out = {c: np.asarray(v) for c, v in batch.items() if c not in used}
        clash = sorted({*self.outputs, self.error_column} & set(out))
        if clash:
            raise InputError(
                f"column(s) {', '.join(clash)} would be overwritten by the model's outputs; "
                "rename them or choose other outputs"
            )
        for name in self.outputs:
            out[name] = _objects([None if r.outputs is None else r.outputs[name] for r in results])
        out[self.error_column] = _objects([r.error for r in results])
        return out

    def _checked(self, record: Mapping[str, Any]) -> dict[str, np.ndarray[Any, Any]]:
        """The record's inputs as arrays, each checked against its input as a batch of one."""
        arrays: dict[str, np.ndarray[Any, Any]] = {}
        for name in self.model.input_names:
            if name == self.length_input:
                continue
            value = record.get(name)
            if value is None:
                raise InputError(f"input '{name}' (column '{self.columns[name]}') is missing")
            try:
                arrays[name] = np.asarray(value)
            except (ValueError, TypeError) as exc:  # ragged lists, objects NumPy cannot hold
                raise InputError(
                    f"input '{name}' (column '{self.columns[name]}'): not an array "
                    f"({type(exc).__name__}: {exc})"
                ) from None
        if self.length_input is not None:
            length = self._length(arrays)
            if length is None:
                raise InputError(
                    "the record's sequence inputs differ in length: "
                    + ", ".join(f"'{n}' {list(arrays[n].shape)}" for n in self.sequence)
                )
            t = next(p.type for p in self.model.graph.inputs if p.name == self.length_input)
            dt = t.dtype.numpy if isinstance(t, TensorType) else np.int64
            arrays[self.length_input] = np.asarray(length, dtype=dt)
        batched = any(self.axes[name] is not None for name in arrays)
        where = "record, as a batch of one" if batched else "record"
        coerce_inputs(self.model.graph, self._alone(arrays), where=where)
        return arrays

    def _alone(self, record: Mapping[str, np.ndarray[Any, Any]]) -> dict[str, Any]:
        alone: dict[str, Any] = {}
        for name, value in record.items():
            axis = self.axes[name]
            alone[name] = value if axis is None else np.expand_dims(value, axis)
        return alone

    def _call(self, inputs: Mapping[str, Any], records: int) -> dict[str, np.ndarray[Any, Any]]:
        timeout = None if self.timeout is None else self.timeout * records
        out = self.model.run(inputs, backend=self.backend, timeout=timeout)
        return {n: np.asarray(out[n]) for n in self.outputs}

    def _run_alone(
        self, record: Mapping[str, np.ndarray[Any, Any]], stats: BatchStats
    ) -> RecordResult:
        stats.runs += 1
        inputs = self._alone(record)
        try:
            out = self._call(inputs, 1)
            axes = self._output_axes(inputs)
            return RecordResult({n: _take(v, axes[n], 0, 1, n) for n, v in out.items()})
        except TensorloopError as exc:
            return _error(exc)
        except Exception as exc:  # a bug the record found: its row says so, the job goes on
            return RecordResult(None, f"internal error ({type(exc).__name__}): {exc}")

    def _groups(self, ready: Sequence[tuple[int, dict[str, np.ndarray[Any, Any]]]]) -> list[_Group]:
        groups: dict[Any, _Group] = {}
        for k, (_, record) in enumerate(ready):
            length = self._length(record)
            padded = (
                bucket_length(length, self.buckets)
                if length is not None and self.buckets_allowed
                else length
            )
            key = []
            for name, value in record.items():
                shape = list(value.shape)
                axis = self.sequence.get(name)
                if axis is not None and length is not None:
                    shape[self._record_axis(name, axis)] = padded
                whole = value.tobytes() if self.axes[name] is None else b""
                key.append((name, value.dtype.str, tuple(shape), whole))
            group = groups.setdefault(tuple(key), _Group(padded=padded))
            group.indices.append(k)
            group.lengths.append(0 if length is None else length)
        return list(groups.values())

    def _record_axis(self, name: str, axis: int) -> int:
        """A model-input axis in the record (its batch axis gone)."""
        batch = self.axes[name]
        return axis - 1 if batch is not None and batch < axis else axis

    def _length(self, record: Mapping[str, np.ndarray[Any, Any]]) -> int | None:
        """The record's sequence length, if its sequence inputs agree on one (None: no
        sequence, or lengths that differ, so it only stacks with records of its shape)."""
        lengths = {record[n].shape[self._record_axis(n, a)] for n, a in self.sequence.items()}
        return lengths.pop() if len(lengths) == 1 else None

    def _run_group(
        self,
        group: _Group,
        ready: Sequence[tuple[int, dict[str, np.ndarray[Any, Any]]]],
        results: list[RecordResult | None],
        stats: BatchStats,
    ) -> None:
        multiple = self._device_count()
        step = max(self.max_stack // multiple * multiple, multiple)
        for start in range(0, len(group.indices), step):
            members = group.indices[start : start + step]
            lengths = group.lengths[start : start + step]
            records = [ready[k][1] for k in members]
            if len(records) == 1 and multiple == 1:
                results[ready[members[0]][0]] = self._run_alone(records[0], stats)
                continue
            count = stacked_count(len(records), self.max_stack, multiple)
            fill = count - len(records)
            try:
                inputs = self._stacked(records + [records[-1]] * fill, group.padded)
                out = self._call(self._placed(inputs), len(records))
                axes = self._output_axes(inputs)
                if not self._probed_time_axes:
                    self._probe_time_axes(inputs, axes)
                answers = [
                    RecordResult(
                        {
                            n: self._cut(_take(v, axes[n], j, count, n), n, axes[n], length)
                            for n, v in out.items()
                        }
                    )
                    for j, length in enumerate(lengths)
                ]
            except Exception:
                # Any fault of a stacked run (one bad record, a limit the stack passes): its
                # records run alone, each getting its own answer or error.
                stats.split += 1
                for k in members:
                    results[ready[k][0]] = self._run_alone(ready[k][1], stats)
                continue
            stats.runs += 1
            stats.stacked += len(records)
            stats.filler += fill
            if group.padded is not None:
                stats.padded_steps += sum(group.padded - n for n in lengths)
            for k, answer in zip(members, answers, strict=True):
                results[ready[k][0]] = answer

    def _stacked(
        self, records: Sequence[Mapping[str, np.ndarray[Any, Any]]], padded: int | None
    ) -> dict[str, np.ndarray[Any, Any]]:
        inputs: dict[str, np.ndarray[Any, Any]] = {}
        for name in self.model.input_names:
            values = [r[name] for r in records]
            axis = self.sequence.get(name)
            if padded is not None and axis is not None:
                at = self._record_axis(name, axis)
                values = [_pad(v, at, padded, self.pad_value) for v in values]
            batch = self.axes[name]
            inputs[name] = values[0] if batch is None else np.stack(values, axis=batch)
        return inputs

    def _cut(self, value: np.ndarray[Any, Any], name: str, batch: int | None, n: int) -> Any:
        """An output of a padded run cut back to the record's ``n`` steps."""
        axis = self.time_axes.get(name) if self.padding else None
        if axis is None:
            return value
        at = axis - 1 if batch is not None and batch < axis else axis
        return np.ascontiguousarray(np.take(value, np.arange(n), axis=at))

    def _probe_time_axes(
        self, inputs: Mapping[str, np.ndarray[Any, Any]], batch: Mapping[str, int | None]
    ) -> None:
        """Each output's time axis, for a model padded by its ``length_input``: the output
        dim that grows by one where the sequences do (the model specialised for both)."""
        longer = dict(inputs)
        for name, axis in self.sequence.items():
            value = inputs[name]
            last = np.take(value, [value.shape[axis] - 1], axis=axis)
            longer[name] = np.concatenate([value, last], axis=axis)
        axes = grown_axes(self.model, inputs, longer, self.outputs)
        if axes is None:
            raise InputError(
                "cannot tell the outputs' time axes (the model's types do not say): pad no "
                "records (stack=False) or give length_input=None"
            )
        self.time_axes = axes
        self._probed_time_axes = True

    def _device_count(self) -> int:
        if self.devices is None:
            return 1
        from ..backends.jax.sharding import device_count

        return device_count() if self.devices == "all" else int(self.devices)

    def _placed(self, inputs: dict[str, np.ndarray[Any, Any]]) -> Mapping[str, Any]:
        if self.devices is None:
            return inputs
        from ..backends.jax.sharding import shard_batch

        return shard_batch(inputs, self.axes, self._device_count())

    def _output_axes(self, inputs: Mapping[str, np.ndarray[Any, Any]]) -> dict[str, int | None]:
        """Each output's batch axis, found once: the model specialised for these inputs'
        shapes with two batch sizes, the output dim that follows them (None: no batch axis,
        every record gets the output whole)."""
        found = self._out_axes
        if found is None:
            found = output_batch_axes(self.model, inputs, self.axes, self.outputs)
            found |= self._given_out_axes
            unknown = [n for n in self.outputs if n not in found]
            if unknown:
                raise InputError(
                    f"cannot tell where the batch axis of output(s) {', '.join(unknown)} is "
                    "(the model's types do not say); give output_batch_axis={name: axis}"
                )
            self._out_axes = found
        return found


def output_batch_axes(
    model: Model,
    inputs: Mapping[str, np.ndarray[Any, Any]],
    axes: Mapping[str, int | None],
    outputs: Sequence[str],
) -> dict[str, int | None]:
    """Where each output of ``outputs`` has its batch axis for inputs shaped as ``inputs``
    (stacked along ``axes``): the model specialised for batches of two and three (types and
    folded shapes, nothing run); an output whose static shape does not follow leaves no
    entry, one that does not change has None."""
    graph = model.graph
    control = Guards(graph).control
    shapes: list[dict[str, tuple[int, ...] | None]] = []
    for size in (2, 3):
        args = []
        for name in model.input_names:
            value, axis = np.asarray(inputs[name]), axes[name]
            if axis is not None:
                first = np.take(value, [0], axis=axis)
                value = np.repeat(first, size, axis=axis)
            args.append(value)
        try:
            typed = specialize(graph, args, constants={k: args[k] for k in control})
        except TensorloopError:
            return {}
        shapes.append(
            {
                v.name: (
                    v.type.static_shape
                    if isinstance(v.type, TensorType) and v.type.is_static
                    else None
                )
                for v in typed.outputs
            }
        )
    found: dict[str, int | None] = {}
    for name in outputs:
        two, three = shapes[0].get(name), shapes[1].get(name)
        if two is None or three is None or len(two) != len(three):
            continue
        moved = [k for k, (a, b) in enumerate(zip(two, three, strict=True)) if a != b]
        if not moved:
            found[name] = None
        elif len(moved) == 1 and two[moved[0]] == 2 and three[moved[0]] == 3:
            found[name] = moved[0]
    return found


def grown_axes(
    model: Model,
    inputs: Mapping[str, np.ndarray[Any, Any]],
    longer: Mapping[str, np.ndarray[Any, Any]],
    outputs: Sequence[str],
) -> dict[str, int | None] | None:
    """The dim of each output of ``outputs`` that grows by one from ``inputs`` to ``longer``
    (None: no dim changes), found by specialising the model for both; None where an output's
    static shape is not known for both or changes otherwise."""
    graph = model.graph
    control = Guards(graph).control
    shapes = []
    for feeds in (inputs, longer):
        args = [np.asarray(feeds[n]) for n in model.input_names]
        try:
            typed = specialize(graph, args, constants={k: args[k] for k in control})
        except TensorloopError:
            return None
        shapes.append({v.name: static_type(v) for v in typed.outputs})
    found: dict[str, int | None] = {}
    for name in outputs:
        a, b = shapes[0].get(name), shapes[1].get(name)
        if a is None or b is None or a.rank != b.rank:
            return None
        pairs = list(zip(a.static_shape, b.static_shape, strict=True))
        moved = [k for k, (x, y) in enumerate(pairs) if x != y]
        if len(moved) > 1 or (moved and pairs[moved[0]][1] != pairs[moved[0]][0] + 1):
            return None
        found[name] = moved[0] if moved else None
    return found


def _take(value: np.ndarray[Any, Any], axis: int | None, j: int, count: int, name: str) -> Any:
    """Record ``j``'s part of an output of a run of ``count`` records."""
    if axis is None:
        return value
    if value.ndim <= axis or value.shape[axis] != count:
        raise InputError(
            f"output '{name}' has shape {list(value.shape)}: expected {count} records along "
            f"its batch axis {axis}"
        )
    return np.ascontiguousarray(np.take(value, j, axis=axis))


def _pad(value: np.ndarray[Any, Any], axis: int, length: int, fill: float) -> Any:
    if value.shape[axis] == length:
        return value
    widths = [(0, 0)] * value.ndim
    widths[axis] = (0, length - value.shape[axis])
    return np.pad(value, widths, constant_values=np.array(fill).astype(value.dtype))


def _objects(values: Sequence[Any]) -> np.ndarray[Any, Any]:
    array = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):  # one by one: equal shapes must not broadcast into it
        array[i] = v
    return array


def _error(exc: BaseException) -> RecordResult:
    return RecordResult(None, f"{type(exc).__name__}: {exc}")


__all__ = [
    "ERROR_COLUMN",
    "BatchStats",
    "RecordResult",
    "RecordRunner",
    "bucket_length",
    "output_batch_axes",
    "stacked_count",
]
