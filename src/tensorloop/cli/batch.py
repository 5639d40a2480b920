"""``tensorloop batch``: run a model over many records, a folder of ``.npz``/``.npy`` files or a
Parquet file (one row a record), each record a run of its own (``tensorloop.batch``), in this
process or on Ray Data's workers (``tensorloop.ray``); each record's outputs, or its error, to
one Parquet file (``tensorloop.batch.files``), with a progress bar and a summary: records,
errors, time and throughput, JSON for scripts."""

from __future__ import annotations

import logging
import math
import os
import re
import sys
import time
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
import numpy as np
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..batch import ERROR_COLUMN, BatchStats, RecordRunner
from ..batch.files import (
    FILE_PATH,
    READ_ERROR,
    RECORD_COLUMN,
    RECORD_ID,
    RecordFile,
    decode_parquet_batch,
    parquet_batches,
    parquet_columns,
    parquet_rows,
    read_files_batch,
    records_from_dir,
    require_pyarrow,
    write_parquet,
)
from ..errors import TensorloopError
from ..limits import Limits
from ..model import Model
from ..tensor.types import TensorType
from .common import (
    backend_option,
    console,
    describe_error,
    fail,
    load_model,
    main,
    max_iterations_option,
    one_line,
    plain,
    print_json,
    writable_file,
)
from .run import _seconds, select_outputs

FIRST_ERRORS = 5
"""Errors the summary shows, the first records' (all are in the output's ``error`` column)."""
INSTALL_RAY = "pip install 'tensorloop[ray]'"
READING_CPUS = 1
"""CPUs of a Ray job beyond its workers': for the tasks that read the records (without them a
job whose workers take every CPU would wait for ever)."""

ANSI = re.compile(r"\x1b\[[0-9;]*m")
RAISED = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception)): (.+)$", re.M)
"""A traceback's last line: the exception raised and its message."""

AxisSpec = tuple[int | None, dict[str, int | None]]
"""``--batch-axis`` as given: the axis of every input (0 unless given) and those by input."""


# -- the options ------------------------------------------------------------------------------
def parse_batch_axis(
    ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
) -> AxisSpec:
    """``--batch-axis AXIS`` and ``--batch-axis INPUT=AXIS`` (repeatable; AXIS an integer or
    ``none``) -> the axis of every input and those given by input."""
    every: int | None = 0
    given_every = False
    by_input: dict[str, int | None] = {}
    for spec in values:
        name, sep, raw = spec.rpartition("=")
        name, raw = name.strip(), raw.strip().lower()
        try:
            axis = None if raw == "none" else int(raw)
        except ValueError:
            raise click.BadParameter(
                f"{spec!r}: expected AXIS or INPUT=AXIS, AXIS an integer or 'none'"
            ) from None
        if sep and not name:
            raise click.BadParameter(f"{spec!r}: expected INPUT=AXIS, the input named")
        if not sep:
            if given_every:
                raise click.BadParameter(f"{spec!r}: the axis of every input given twice")
            every, given_every = axis, True
        elif name in by_input:
            raise click.BadParameter(f"{spec!r}: input '{name}' given twice")
        else:
            by_input[name] = axis
    return every, by_input


def parse_columns(
    ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
) -> dict[str, str]:
    """``--column INPUT=COLUMN`` (repeatable) -> ``{INPUT: COLUMN}``."""
    columns: dict[str, str] = {}
    for spec in values:
        name, sep, column = spec.partition("=")
        name, column = name.strip(), column.strip()
        if not sep or not name or not column:
            raise click.BadParameter(f"{spec!r}: expected INPUT=COLUMN")
        if name in columns:
            raise click.BadParameter(f"{spec!r}: input '{name}' given twice")
        columns[name] = column
    return columns


def default_workers() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


# -- the command ------------------------------------------------------------------------------
@main.command("batch")
@click.argument("model_path", metavar="MODEL", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--input",
    "input_path",
    required=True,
    metavar="DIR|FILE.parquet",
    type=click.Path(exists=True),
    help="The records: a folder of .npz files (the inputs by name) or .npy files (a model of "
    "one input), or a Parquet file, one row a record and a column per input.",
)
@click.option(
    "--output",
    "output_path",
    required=True,
    metavar="OUT.parquet",
    help="The Parquet file to write: a row a record, its id, its outputs or its error.",
)
@click.option(
    "--workers",
    type=click.IntRange(min=0),
    default=None,
    metavar="N",
    help="Ray workers, one CPU each (Ray's tasks that read the records take one more); 0 runs "
    "in this process, without Ray. Default: one a CPU of this machine, or of the Ray cluster "
    "less one.",
)
@click.option(
    "--ray-address",
    metavar="ADDR",
    help="The Ray cluster to run on ('auto': the one this machine belongs to); by default a "
    "Ray started here for the job (or the one this process runs already).",
)
@click.option(
    "--batch-size",
    type=click.IntRange(min=1),
    default=64,
    show_default=True,
    metavar="B",
    help="Records a worker takes at a time.",
)
@click.option(
    "--stack",
    is_flag=True,
    help="Run records of one shape together, stacked along the batch axis (sequences padded "
    "where that cannot change their outputs): faster, outputs within float rounding of the "
    "records run alone.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    metavar="SECONDS",
    help="Stop a record's run after this many seconds: its row gets the error (default: no "
    "deadline).",
)
@click.option(
    "--batch-axis",
    "batch_axis",
    multiple=True,
    metavar="AXIS|INPUT=AXIS",
    callback=parse_batch_axis,
    help="The model inputs' batch axis, which the records are given without (0 by default; "
    "'none': a record is the whole input); INPUT=AXIS for one input, repeatable.",
)
@click.option(
    "--column",
    "columns",
    multiple=True,
    metavar="INPUT=COLUMN",
    callback=parse_columns,
    help="Read an input from this column (or .npz array) rather than its own name; repeatable.",
)
@click.option("--outputs", "output_names", metavar="NAME,...", help="Write only these outputs.")
@max_iterations_option
@click.option(
    "--max-tensor-bytes",
    type=int,
    default=Limits.max_tensor_bytes,
    show_default=True,
    help="Refuse any tensor larger than this, before allocating it.",
)
@click.option(
    "--max-stacked-bytes",
    type=int,
    default=Limits.max_stacked_bytes,
    show_default=True,
    help="Refuse a run whose loops stack more than this into their outputs.",
)
@click.option(
    "--max-total-iterations",
    type=int,
    default=Limits.max_total_iterations,
    show_default=True,
    help="Stop a run whose loops, nested ones included, run their bodies more often than this.",
)
@click.option(
    "--max-run-bytes",
    type=int,
    default=Limits.max_run_bytes,
    show_default=True,
    help="Refuse a run that would hold more than this in live tensors at once.",
)
@click.option(
    "--max-nodes",
    type=int,
    default=Limits.max_nodes,
    show_default=True,
    help="Refuse a model of more nodes than this (bodies and inlined functions included).",
)
@backend_option()
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def batch_command(
    model_path: str,
    input_path: str,
    output_path: str,
    workers: int | None,
    ray_address: str | None,
    batch_size: int,
    stack: bool,
    timeout: float | None,
    batch_axis: AxisSpec,
    columns: dict[str, str],
    output_names: str | None,
    max_iterations: int,
    max_tensor_bytes: int,
    max_stacked_bytes: int,
    max_total_iterations: int,
    max_run_bytes: int,
    max_nodes: int,
    backend: str,
    as_json: bool,
) -> None:
    """Run MODEL over every record of --input, each record a run of its own, in this process
    (--workers 0) or on Ray Data's workers, and write each record's outputs, or the error that
    stopped it, to one Parquet file: a row a record, its id ('record'), the input's other
    columns, each output NAME as a flat list NAME with its shape NAME.shape, and 'error'.
    A record that fails is its row's error; the others run, and the command succeeds.

    A record holds each input without its batch axis (--batch-axis), of any length: its
    outputs are a run of the model on that record alone, bit for bit (--stack runs records of
    one shape together: faster, within float rounding)."""
    target = writable_file(output_path)
    source = Path(input_path)
    if source.is_file() and source.resolve() == target.resolve():
        fail(f"--output {output_path} is the input file; write the results elsewhere")
    try:
        require_pyarrow()
    except TensorloopError as exc:
        fail(str(exc))
    ray = need_ray(workers, ray_address) if workers != 0 else None
    limits = Limits(
        max_tensor_bytes=max_tensor_bytes,
        max_stacked_bytes=max_stacked_bytes,
        max_total_iterations=max_total_iterations,
        max_run_bytes=max_run_bytes,
        max_nodes=max_nodes,
        max_iterations=max_iterations,
    )
    model = load_model(model_path, limits, backend)
    options = runner_options(model, batch_axis, columns, output_names, stack, timeout)
    runner = RecordRunner(model, **options)
    records = Records.of(source, runner)

    results = Results(runner.outputs)
    started = time.perf_counter()
    with ProgressBar(records.total, not as_json and sys.stderr.isatty()) as bar:
        results.on_batch = bar.advance
        used, ray_start = 0, 0.0
        if ray is None:
            for batch in records.batches(batch_size):
                results.add(runner.run_batch(batch))
        else:
            used, ray_start = run_on_ray(
                ray, ray_address, workers, model, options, records, batch_size, results
            )
    seconds = time.perf_counter() - started - ray_start
    dtypes = {v.name: v.type.dtype.numpy for v in model.outputs if isinstance(v.type, TensorType)}
    try:
        write_parquet(target, results.columns(), dtypes=dtypes)
    except OSError as exc:
        fail(f"cannot write {output_path}: {describe_error(exc)}")
    summary = Summary(
        model_path,
        input_path,
        output_path,
        backend,
        used,
        ray_address if ray_address else ("local" if ray is not None else None),
        stack,
        batch_size,
        results,
        seconds,
        ray_start,
        runner.stats if ray is None else None,
    )
    if as_json:
        print_json(summary.to_dict())
    else:
        summary.show()


def runner_options(
    model: Model,
    batch_axis: AxisSpec,
    columns: Mapping[str, str],
    output_names: str | None,
    stack: bool,
    timeout: float | None,
) -> dict[str, Any]:
    """The ``RecordRunner`` options of the command line, checked against the model."""
    names = model.input_names
    known = ", ".join(names) or "none"
    every, by_input = batch_axis
    for option, given in (("--batch-axis", by_input), ("--column", columns)):
        for name in given:
            if name not in names:
                fail(
                    f"{option} {name}=...: the model has no input '{name}'; its inputs are {known}"
                )
    outputs = select_outputs(model, output_names)
    for name in outputs:
        if name in (RECORD_COLUMN, ERROR_COLUMN):
            fail(
                f"the model's output '{name}' would be written over the results' '{name}' "
                "column; choose the other outputs with --outputs"
            )
    axes: int | dict[str, int | None] | None = (
        {n: by_input.get(n, every) for n in names} if by_input else every
    )
    return {
        "batch_axis": axes,
        "stack": stack,
        "columns": dict(columns),
        "outputs": outputs,
        "timeout": timeout,
    }


# -- the records ------------------------------------------------------------------------------
@dataclass
class Records:
    """The records of ``--input``: the files of a folder, or the rows of a Parquet file."""

    path: Path
    total: int
    inputs: list[str]
    """The columns (or .npz arrays) the model's inputs are read from."""
    files: list[RecordFile] | None = None
    single: str | None = None
    """The column a .npy file's array is (a model of one input)."""

    @classmethod
    def of(cls, path: Path, runner: RecordRunner) -> Records:
        inputs = list(dict.fromkeys(runner.columns.values()))
        if path.is_dir():
            single = inputs[0] if len(runner.columns) == 1 else None
            files = records_from_dir(path, single)
            if not files:
                fail(f"--input {path}: no .npz or .npy files in the folder")
            return cls(path, len(files), inputs, files, single)
        try:
            names = parquet_columns(path)
            total = parquet_rows(path)
        except TensorloopError as exc:
            fail(f"--input {exc}")
        for name, column in runner.columns.items():
            if column not in names:
                via = "" if column == name else f" (--column {name}={column})"
                fail(
                    f"--input {path}: no column '{column}' for input '{name}'{via}; its columns "
                    f"are {', '.join(names) or 'none'}"
                )
        clash = sorted({*runner.outputs, ERROR_COLUMN} & (set(names) - set(inputs)))
        if clash:
            fail(
                f"--input {path}: its column(s) {', '.join(clash)} would be written over by the "
                "results' columns of the same names; rename them or choose --outputs"
            )
        return cls(path, total, inputs)

    def batches(self, size: int) -> Iterator[dict[str, np.ndarray[Any, Any]]]:
        """The records read, ``size`` at a time, as the model's batches of columns."""
        if self.files is not None:
            for start in range(0, len(self.files), size):
                chunk = self.files[start : start + size]
                listed = {RECORD_ID: [f.id for f in chunk], FILE_PATH: [str(f.path) for f in chunk]}
                yield read_files_batch(listed, self.inputs, self.single)
            return
        for batch in parquet_batches(self.path, size):
            yield decode_parquet_batch(batch, self.inputs)


# -- the results ------------------------------------------------------------------------------
@dataclass
class Results:
    """The results gathered batch by batch, in the records' order: ids, the columns passed
    through, the outputs, the errors."""

    outputs: list[str]
    ids: list[Any] = field(default_factory=list)
    values: dict[str, list[Any]] = field(default_factory=dict)
    """The outputs and the columns passed through, by name."""
    errors: list[str | None] = field(default_factory=list)
    on_batch: Any = None
    """Called with the number of records of each batch added (the progress bar)."""

    @property
    def count(self) -> int:
        return len(self.errors)

    def add(self, batch: Mapping[str, Any]) -> None:
        """A batch of the model's results (``RecordRunner.run_batch``, on a worker or here).
        A record not read has the reading's error; a record with an error has no outputs
        (whatever Ray Data made of a column of Nones: NaN, say)."""
        n = len(batch[ERROR_COLUMN])
        given = batch.get(RECORD_ID)
        ids = range(self.count, self.count + n) if given is None else given
        self.ids.extend(_item(i) for i in ids)
        read = batch.get(READ_ERROR)
        errors = [
            _text(read[i] if read is not None else None) or _text(error)
            for i, error in enumerate(batch[ERROR_COLUMN])
        ]
        self.errors.extend(errors)
        internal = {RECORD_ID, READ_ERROR, FILE_PATH, ERROR_COLUMN, RECORD_COLUMN}
        names = [*self.outputs, *(c for c in batch if c not in internal and c not in self.outputs)]
        for name in names:
            column = self.values.setdefault(name, [None] * (self.count - n))
            if name not in batch:
                column.extend([None] * n)
            elif name in self.outputs:
                column.extend(
                    None if e is not None else np.asarray(v)
                    for v, e in zip(batch[name], errors, strict=True)
                )
            else:
                column.extend(_item(v) for v in batch[name])
        for column in self.values.values():  # a column this batch lacks
            column.extend([None] * (self.count - len(column)))
        if self.on_batch is not None:
            self.on_batch(n)

    def columns(self) -> dict[str, Sequence[Any]]:
        """The results' columns, as ``write_parquet`` writes them."""
        passed = {n: v for n, v in self.values.items() if n not in self.outputs}
        outputs = {n: self.values.get(n, [None] * self.count) for n in self.outputs}
        return {RECORD_COLUMN: self.ids, **passed, **outputs, ERROR_COLUMN: self.errors}

    def first_errors(self) -> list[tuple[Any, str]]:
        found = [(i, e) for i, e in zip(self.ids, self.errors, strict=True) if e is not None]
        return found[:FIRST_ERRORS]

    @property
    def error_count(self) -> int:
        return sum(e is not None for e in self.errors)


def _text(value: Any) -> str | None:
    """An error: a message, or None (for None, or NaN from a column of Nones)."""
    return str(value) if isinstance(value, str) and value else None


def _item(value: Any) -> Any:
    """A NumPy scalar as Python's; an array's row stays an array."""
    return value.item() if isinstance(value, np.generic) else value


class ProgressBar:
    """Records done of the total on stderr, while the job runs, when ``shown``."""

    def __init__(self, total: int, shown: bool) -> None:
        self.progress = (
            Progress(
                TextColumn("records"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=console(stderr=True),
                transient=True,
            )
            if shown
            else None
        )
        self.total = total
        self.task: Any = None

    def __enter__(self) -> ProgressBar:
        if self.progress is not None:
            self.progress.start()
            self.task = self.progress.add_task("records", total=self.total)
        return self

    def advance(self, n: int) -> None:
        if self.progress is not None:
            self.progress.advance(self.task, n)

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.stop()


# -- Ray --------------------------------------------------------------------------------------
def need_ray(workers: int | None, address: str | None) -> Any:
    """The ``ray`` module, or an error saying how to install it (or to run here)."""
    try:
        from ..ray import require_ray

        return require_ray()
    except TensorloopError:
        given = "--workers N (the default)" if workers is None else f"--workers {workers}"
        where = f" --ray-address {address}" if address else ""
        fail(
            f"{given}{where} runs on Ray, which is not installed: {INSTALL_RAY} (or --workers 0 "
            "runs in this process)"
        )


def run_on_ray(
    ray: Any,
    address: str | None,
    workers: int | None,
    model: Model,
    options: Mapping[str, Any],
    records: Records,
    batch_size: int,
    results: Results,
) -> tuple[int, float]:
    """Run the records on Ray Data's workers, adding their results in order: the workers used
    and the seconds Ray took to start. Ray's tasks read the records (a folder's files, a
    Parquet file's rows) on one CPU more."""
    from ..ray import map_model

    started = time.perf_counter()
    with ray_cluster(ray, address, workers) as used:
        ready = time.perf_counter() - started
        try:
            if records.files is not None:
                blocks = max(1, math.ceil(records.total / batch_size))
                items = [{RECORD_ID: f.id, FILE_PATH: str(f.path.resolve())} for f in records.files]
                dataset = ray.data.from_items(items, override_num_blocks=blocks)
                dataset = dataset.map_batches(
                    read_files_batch,
                    fn_kwargs={"columns": records.inputs, "single": records.single},
                    batch_format="numpy",
                    batch_size=batch_size,
                )
            else:
                dataset = ray.data.read_parquet(str(records.path.resolve()))
                dataset = dataset.repartition(target_num_rows_per_block=batch_size)
                dataset = dataset.map_batches(
                    decode_parquet_batch,
                    fn_kwargs={"tensors": records.inputs},
                    batch_format="pyarrow",
                    batch_size=batch_size,
                )
            mapped = map_model(dataset, model, workers=used, batch_size=batch_size, **options)
            for batch in mapped.iter_batches(batch_format="numpy", batch_size=None):
                results.add(batch)
        except ray.exceptions.RayError as exc:
            fail(f"the Ray job failed: {ray_failure(exc)}")
    return used, ready


@contextmanager
def ray_cluster(ray: Any, address: str | None, workers: int | None) -> Iterator[int]:
    """Ray, quiet: connected to ``address``, the one this process runs already, or started
    here with a CPU for each worker and one more to read the records (and shut down at the
    end). Yields the number of workers: ``workers``, or by default a CPU's less one."""
    spare = READING_CPUS
    with quiet_ray(ray):
        started = False
        if not ray.is_initialized():
            common: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
            common["logging_level"] = logging.ERROR
            if address:
                ray.init(address=address, **common)
            else:
                ray.init(num_cpus=(workers or default_workers()) + spare, **common)
            started = True
        try:
            cpus = int(ray.cluster_resources().get("CPU", 0))
            used = workers if workers is not None else max(cpus - spare, 1)
            if used + spare > cpus:
                fail(
                    f"--workers {used}: the Ray cluster has {cpus} CPU{'s' if cpus != 1 else ''}; "
                    f"the workers take one each and reading the records {spare} more"
                )
            yield used
        finally:
            if started:
                ray.shutdown()


@contextmanager
def quiet_ray(ray: Any) -> Iterator[None]:
    """Ray's and Ray Data's logs, warnings and progress bars off (the command shows its own),
    and the results in the records' order; as they were afterwards."""
    loggers = {name: logging.getLogger(name) for name in ("ray", "ray.data")}
    levels = {name: logger.level for name, logger in loggers.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Ray's own deprecations, warned as it sets itself up
        context = ray.data.DataContext.get_current()
        before = (context.enable_progress_bars, context.execution_options.preserve_order)
        context.enable_progress_bars = False
        context.execution_options.preserve_order = True
        for logger in loggers.values():
            logger.setLevel(logging.CRITICAL)  # the command says what failed
        try:
            yield
        finally:
            context.enable_progress_bars, context.execution_options.preserve_order = before
            for name, logger in loggers.items():
                logger.setLevel(levels[name])


def ray_failure(exc: BaseException) -> str:
    """What a failed Ray job says: the error a worker raised, as its traceback (which is all
    Ray keeps of it) names it (``InputError: ...``), else the first line of Ray's."""
    text = ANSI.sub("", str(exc))
    raised = [m for m in RAISED.finditer(text) if not m.group(1).startswith("ray.")]
    if raised:
        name, message = raised[0].group(1), raised[0].group(2)
        return one_line(f"{name.rpartition('.')[2]}: {message}")
    lines = [line for line in text.splitlines() if line.strip()]
    return one_line(lines[0] if lines else type(exc).__name__)


# -- the summary ------------------------------------------------------------------------------
@dataclass
class Summary:
    """What the command did: where, on how many workers, the records and errors, the time."""

    model: str
    input: str
    output: str
    backend: str
    workers: int
    ray: str | None
    """The Ray cluster's address (``local``: started for the job), None in this process."""
    stack: bool
    batch_size: int
    results: Results
    seconds: float
    """Seconds from the first record read to the last result, Ray's start left out."""
    ray_start: float
    """Seconds Ray took to start (or to connect)."""
    stats: BatchStats | None
    """What the runner did (in this process only)."""

    @property
    def rate(self) -> float:
        return self.results.count / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "input": self.input,
            "output": self.output,
            "backend": self.backend,
            "workers": self.workers,
            "ray": self.ray,
            "stack": self.stack,
            "batch_size": self.batch_size,
            "records": self.results.count,
            "errors": self.results.error_count,
            "first_errors": [
                {"record": record, "error": error} for record, error in self.results.first_errors()
            ],
            "seconds": self.seconds,
            "records_per_s": self.rate,
            "ray_start_s": self.ray_start if self.ray is not None else None,
            "stats": None if self.stats is None else _stats(self.stats),
        }

    def show(self) -> None:
        out = console()
        n, errors = self.results.count, self.results.error_count
        out.print(
            plain(
                f"{Path(self.model).name}: {n} record{'s' if n != 1 else ''} from {self.input}, "
                f"{errors} error{'s' if errors != 1 else ''}"
            )
        )
        for record, error in self.results.first_errors():
            out.print(plain(f"  {record}: {one_line(error)}"))
        if errors > FIRST_ERRORS:
            out.print(plain(f"  ... {errors - FIRST_ERRORS} more (the output's error column)"))
        where = (
            "in this process"
            if self.ray is None
            else f"on {self.workers} Ray worker{'s' if self.workers != 1 else ''} ({self.ray}, "
            f"started in {_seconds(self.ray_start)})"
        )
        out.print(
            plain(
                f"ran in {_seconds(self.seconds)}, {self.rate:,.1f} records/s, {where}, on "
                f"{self.backend}"
            )
        )
        if self.stack and self.stats is not None:
            s = self.stats
            out.print(
                plain(
                    f"stacked: {s.stacked} of {n} records, {s.runs} runs in all, "
                    f"{s.padded_steps} time steps of padding, {s.split} stacked runs split"
                )
            )
        out.print(plain(f"wrote {self.output}"))


def _stats(stats: BatchStats) -> dict[str, int]:
    return {name: int(getattr(stats, name)) for name in stats.__dataclass_fields__}
