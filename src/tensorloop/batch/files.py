"""The record files of batch inference (``tensorloop batch``): a folder of NumPy files, one a
record, or a Parquet file, one row a record; and the one Parquet file the results go to.
Nothing here needs Ray; Parquet needs pyarrow (``pip install 'tensorloop[ray]'``).

**A folder** (``records_from_dir``): every ``*.npz`` file (its arrays by input name) and every
``*.npy`` file (the only input of a one-input model) is a record, in the order of the file
names; the record's id is its file name. NumPy files are read as ``--inputs`` files are:
never a pickle. A file that cannot be read is that record's error, not the job's.

**A Parquet file** (``parquet_batches``, ``decode_table``): one row a record, a column per
input, each row's value a tensor without its batch axis. A tensor column may be stored

* in tensorloop's layout: a flat ``list<T>`` column ``NAME`` (the elements in row-major order)
  and a ``NAME.shape`` column, ``list<int64>``, each row's shape (``[]`` for a scalar);
* as nested lists (``list<list<float>>``, fixed-size lists too): each row rectangular, rows of
  different lengths allowed;
* as Arrow's canonical fixed-shape tensor (``pyarrow.FixedShapeTensorArray``);
* as Ray Data's tensor types (``ArrowTensorType``, ``ArrowVariableShapedTensorType``: what
  ``Dataset.write_parquet`` writes for NumPy columns), read where Ray is installed.

A column of numbers holds a scalar a row. A row whose tensor is not one (ragged nested lists,
a flat list whose length is not its shape's size, null elements) is that record's error. Other
columns pass through. The record's id: its ``record`` column, else its ``id`` column, else its
row index from 0.

**The results** (``write_parquet``, read back with ``read_parquet_records``): one Parquet file,
one row a record, in the order of the input:

* ``record``: the record's id (a file name, the ``record`` or ``id`` column, or the row index);
* the columns of the input that are no input of the model, as they were (tensors in
  tensorloop's layout);
* each output ``NAME`` in tensorloop's layout, ``NAME`` (``list<T>``, flat) and ``NAME.shape``
  (``list<int64>``), each the record's own output without its batch axis; null where the
  record failed;
* ``error`` (string): why the record failed (``"InputError: ..."``), null where it ran.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import FormatError, InputError, TensorloopError, refuse_special_file
from ..tools.inputs import error_reason, read_numpy

RECORD_COLUMN = "record"
"""The results' column of record ids."""
ID_COLUMNS = ("record", "id")
"""The input columns that give the record ids, the first found."""
SHAPE_SUFFIX = ".shape"
"""``NAME.shape``: the shapes of the flat tensors of column ``NAME`` (tensorloop's layout)."""
RECORD_SUFFIXES = (".npz", ".npy")
INSTALL = "pip install 'tensorloop[ray]'"
RAY_TENSOR = "ray.data."
"""The prefix of the names of Ray Data's Arrow extension types."""
EXTENSION_NAME = b"ARROW:extension:name"

Array = np.ndarray[Any, Any]


def require_pyarrow() -> Any:
    """The ``pyarrow`` module with ``pyarrow.parquet``, or a FormatError saying how to get it."""
    try:
        pa = importlib.import_module("pyarrow")
        importlib.import_module("pyarrow.parquet")
    except ImportError:
        raise FormatError(f"reading and writing Parquet needs pyarrow: {INSTALL}") from None
    return pa


def _parquet() -> Any:
    require_pyarrow()
    return importlib.import_module("pyarrow.parquet")


# -- a folder of NumPy files -----------------------------------------------------------------
@dataclass(frozen=True)
class RecordFile:
    """One record of a folder: its id (the file name), its path, and the column a ``.npy``
    file's array is (``single``: the only input's; None for a model of several inputs)."""

    id: str
    path: Path
    single: str | None = None

    def load(self) -> dict[str, Array]:
        """The record's arrays by column; an InputError naming the file where it cannot."""
        return read_record_file(self.path, self.single)


def records_from_dir(path: str | os.PathLike[str], single: str | None = None) -> list[RecordFile]:
    """The records of a folder: its ``.npz`` and ``.npy`` files, sorted by name, not yet read
    (``RecordFile.load``). ``single``: the column a ``.npy`` file's array is (the only input's).
    An InputError where ``path`` is no folder."""
    folder = Path(path)
    if not folder.is_dir():
        raise InputError(f"{path}: no such folder")
    files = sorted(
        (p for p in folder.iterdir() if p.suffix.lower() in RECORD_SUFFIXES and not p.is_dir()),
        key=lambda p: p.name,
    )
    return [RecordFile(p.name, p, single) for p in files]


def read_record_file(path: str | os.PathLike[str], single: str | None = None) -> dict[str, Array]:
    """A record file's arrays by column: an ``.npz`` file's by name, a ``.npy`` file's one array
    as ``single``. An InputError naming the file where it cannot be read (never a pickle)."""
    name = Path(path).name
    kind = ".npy" if Path(path).suffix.lower() == ".npy" else ".npz"
    data = read_numpy(path, name, kind)
    if isinstance(data, np.ndarray):
        if kind == ".npz":
            raise InputError(f"{name}: a .npy file, named .npz (it holds one array)")
        if single is None:
            raise InputError(
                f"{name}: a .npy file holds one array, for a model of one input; give each "
                "record of this model as an .npz file of its inputs by name"
            )
        return {single: data}
    if kind == ".npy":
        raise InputError(f"{name}: an .npz archive, named .npy")
    return dict(data)


# -- reading Parquet -------------------------------------------------------------------------
@dataclass
class Decoded:
    """A batch of rows decoded: its columns (NumPy arrays: an object array of one array a row
    for a tensor column, None in null or bad rows) and each row's error (None where every
    tensor of it was read)."""

    columns: dict[str, Array]
    errors: list[str | None]

    def __len__(self) -> int:
        return len(self.errors)


def parquet_file(path: str | os.PathLike[str]) -> Any:
    """``path`` opened as a ``pyarrow.parquet.ParquetFile``, with Ray's tensor types known
    where the file holds them; an InputError where it is no Parquet file."""
    pq = _parquet()
    refuse_special_file(path, str(path), InputError)  # a FIFO or a device: refused, not read
    try:
        schema = pq.read_schema(path)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: not a readable Parquet file ({error_reason(exc)})") from None
    if any(_ray_extension(f) for f in schema):
        register_ray_tensors()
    return pq.ParquetFile(path)


def register_ray_tensors() -> bool:
    """Make Ray Data's tensor types known to pyarrow (by importing them), where Ray is
    installed: whether it is."""
    try:
        importlib.import_module("ray.data.extensions")
    except ImportError:
        return False
    return True


def parquet_columns(path: str | os.PathLike[str]) -> list[str]:
    """The columns of a Parquet file, a ``NAME.shape`` column of tensorloop's layout left out."""
    names = list(parquet_file(path).schema_arrow.names)
    return [n for n in names if not _is_shape_column(n, names)]


def parquet_rows(path: str | os.PathLike[str]) -> int:
    """The number of rows of a Parquet file."""
    return int(parquet_file(path).metadata.num_rows)


def parquet_batches(path: str | os.PathLike[str], batch_size: int = 1024) -> Iterator[Any]:
    """The rows of a Parquet file as ``pyarrow.RecordBatch``es of ``batch_size`` rows (the last
    fewer), for ``decode_table``."""
    pa = require_pyarrow()
    batches = parquet_file(path).iter_batches(batch_size=batch_size)
    while True:
        try:
            batch = next(batches, None)
        except (OSError, ValueError, pa.ArrowException) as exc:
            raise InputError(f"{path}: not a readable Parquet file ({error_reason(exc)})") from None
        if batch is None:
            return
        yield batch


def decode_table(table: Any, tensors: Collection[str] = ()) -> Decoded:
    """A ``pyarrow.Table`` (or ``RecordBatch``) as NumPy columns: tensor columns (tensorloop's
    layout, Arrow's and Ray's tensor types; and, for the columns named in ``tensors``, lists
    and nested lists) as object arrays of one array a row; columns of numbers as arrays of
    scalars; others as object arrays of their Python values. A row whose tensor (of a column of
    ``tensors``) cannot be read gets an error naming the column; its value is None."""
    pa = require_pyarrow()
    if isinstance(table, pa.RecordBatch):
        table = pa.Table.from_batches([table])
    names = list(table.schema.names)
    n = table.num_rows
    errors: list[str | None] = [None] * n
    columns: dict[str, Array] = {}
    for name in names:
        if _is_shape_column(name, names):
            continue
        f = table.schema.field(name)
        column = table.column(name)
        shapes = table.column(name + SHAPE_SUFFIX) if name + SHAPE_SUFFIX in names else None
        ray_name = _ray_extension(f)
        if ray_name is not None and not isinstance(f.type, pa.BaseExtensionType):
            message = (
                f"column '{name}' holds Ray Data's tensor type {ray_name}; reading it needs "
                f"Ray: {INSTALL}"
            )
            if name in tensors:
                raise FormatError(message)
            columns[name] = _objects(column.to_pylist())
            continue
        tensor = (
            shapes is not None
            or isinstance(f.type, pa.BaseExtensionType)
            or (name in tensors and _is_list(pa, f.type))
        )
        if not tensor:
            columns[name] = _plain(pa, column)
            continue
        values = np.empty(n, dtype=object)
        row = 0
        shape_chunks = iter(_chunks_like(shapes, column)) if shapes is not None else None
        for chunk in column.chunks:
            shape_chunk = next(shape_chunks) if shape_chunks is not None else None
            for k, value in enumerate(_tensor_rows(pa, chunk, shape_chunk)):
                if isinstance(value, _Bad):
                    if errors[row + k] is None and name in tensors:
                        errors[row + k] = f"InputError: column '{name}': {value.why}"
                else:
                    values[row + k] = value
            row += len(chunk)
        columns[name] = values
    return Decoded(columns, errors)


@dataclass(frozen=True)
class _Bad:
    """A row that holds no tensor, and why."""

    why: str


def _tensor_rows(pa: Any, chunk: Any, shapes: Any) -> list[Array | _Bad | None]:
    """Each row of an Arrow array of tensors as a NumPy array (None where null)."""
    kind = chunk.type
    if isinstance(kind, pa.BaseExtensionType):
        if hasattr(chunk, "to_numpy_ndarray"):  # Arrow's fixed-shape tensor
            if not chunk.null_count:
                return [np.array(r) for r in chunk.to_numpy_ndarray()]
            return [  # its NumPy view has no nulls: each row that is there alone
                np.array(chunk.slice(i, 1).to_numpy_ndarray()[0]) if chunk[i].is_valid else None
                for i in range(len(chunk))
            ]
        if kind.extension_name.startswith(RAY_TENSOR) and hasattr(chunk, "to_numpy"):
            return [np.array(r) for r in chunk.to_numpy(zero_copy_only=False)]
        chunk = chunk.storage
    rows: list[Array | _Bad | None] = []
    for i in range(len(chunk)):
        if not chunk[i].is_valid:
            rows.append(None)
            continue
        try:
            value = _nested(pa, chunk[i].values) if _is_list(pa, chunk.type) else None
            if value is None:  # a scalar a row
                value = np.asarray(chunk[i : i + 1].to_numpy(zero_copy_only=False)[0])
            if shapes is not None:
                shape = shapes[i].as_py()
                if shape is None:
                    raise ValueError(f"its shape ({SHAPE_SUFFIX} column) is null")
                if int(np.prod(shape, dtype=np.int64)) != value.size:
                    raise ValueError(f"{value.size} elements do not make its shape {list(shape)}")
                value = value.reshape(shape)
            rows.append(value)
        except ValueError as exc:
            rows.append(_Bad(str(exc)))
    return rows


def _nested(pa: Any, values: Any) -> Array:
    """A row's nested lists as one array: every level rectangular, no nulls."""
    shape = [len(values)]
    while _is_list(pa, values.type):
        if values.null_count:
            raise ValueError("a null list inside the tensor")
        if pa.types.is_fixed_size_list(values.type):
            size = values.type.list_size
        else:
            lengths = values.value_lengths().to_numpy(zero_copy_only=False)
            size = int(lengths[0]) if len(lengths) else 0
            if np.any(lengths != size):
                raise ValueError(
                    f"ragged nested lists (lengths {sorted(set(lengths.tolist()))} at one level); "
                    "a tensor's rows must be of one length"
                )
        shape.append(size)
        values = values.flatten()
    if values.null_count:
        raise ValueError("null elements inside the tensor")
    return np.asarray(values.to_numpy(zero_copy_only=False)).reshape(shape)


def _is_list(pa: Any, kind: Any) -> bool:
    t = pa.types
    return bool(t.is_list(kind) or t.is_large_list(kind) or t.is_fixed_size_list(kind))


def _plain(pa: Any, column: Any) -> Array:
    """A column that holds no tensor: numbers without nulls as a NumPy array, the rest as an
    object array of Python values (None for null)."""
    t = pa.types
    kind = column.type
    numeric = t.is_integer(kind) or t.is_floating(kind) or t.is_boolean(kind)
    if numeric and column.null_count == 0:
        return np.asarray(column.to_numpy())
    return _objects(column.to_pylist())


def _chunks_like(shapes: Any, column: Any) -> list[Any]:
    """The shape column cut into chunks as the tensor column is."""
    whole = shapes.combine_chunks()
    out, start = [], 0
    for chunk in column.chunks:
        out.append(whole.slice(start, len(chunk)))
        start += len(chunk)
    return out


def _is_shape_column(name: str, names: Collection[str]) -> bool:
    return name.endswith(SHAPE_SUFFIX) and name[: -len(SHAPE_SUFFIX)] in names


def _ray_extension(f: Any) -> str | None:
    """The name of Ray Data's tensor type a Parquet field holds, or None."""
    kind = f.type
    name = getattr(kind, "extension_name", None)
    if name is None and f.metadata:
        raw = f.metadata.get(EXTENSION_NAME)
        name = raw.decode("utf-8", "replace") if raw else None
    return name if isinstance(name, str) and name.startswith(RAY_TENSOR) else None


# -- batches for Ray Data's ``map_batches`` (and the same in one process) -------------------
RECORD_ID = "__tensorloop_record"
"""A batch's column of record ids (where the rows do not count them)."""
READ_ERROR = "__tensorloop_read_error"
"""A batch's column of the errors of reading each record (None where it was read)."""
FILE_PATH = "__tensorloop_path"
"""A batch's column of the record files to read."""


def read_files_batch(
    batch: Mapping[str, Any], columns: Collection[str], single: str | None = None
) -> dict[str, Array]:
    """A batch of record files (``RECORD_ID`` and ``FILE_PATH`` columns) read: ``RECORD_ID``,
    the ``columns`` (object arrays of one array a record, None where its file lacks it or
    cannot be read) and ``READ_ERROR``. Reads in the worker that runs the records."""
    paths = list(batch[FILE_PATH])
    out = {c: np.empty(len(paths), dtype=object) for c in columns}
    errors: list[str | None] = []
    for i, path in enumerate(paths):
        try:
            arrays = read_record_file(str(path), single)
        except TensorloopError as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
            continue
        errors.append(None)
        for c in columns:
            out[c][i] = arrays.get(c)
    return {RECORD_ID: np.asarray(batch[RECORD_ID]), **out, READ_ERROR: _objects(errors)}


def decode_parquet_batch(table: Any, tensors: Collection[str] = ()) -> dict[str, Array]:
    """A batch of Parquet rows (a ``pyarrow.Table``) decoded (``decode_table``; ``tensors``:
    the columns of the model's inputs), with ``READ_ERROR``, and ``RECORD_ID`` where a
    ``record`` or ``id`` column gives the ids (the ``record`` column then taken away unless
    it is an input's)."""
    decoded = decode_table(table, tensors)
    columns = decoded.columns
    out: dict[str, Array] = {}
    for name in ID_COLUMNS:
        if name in columns:
            out[RECORD_ID] = columns[name]
            break
    if RECORD_COLUMN in columns and RECORD_COLUMN not in tensors:
        del columns[RECORD_COLUMN]
    return {**out, **columns, READ_ERROR: _objects(decoded.errors)}


# -- writing the results ---------------------------------------------------------------------
def write_parquet(
    path: str | os.PathLike[str],
    columns: Mapping[str, Sequence[Any] | Array],
    *,
    dtypes: Mapping[str, Any] | None = None,
) -> None:
    """Write ``columns`` (equal lengths) to one Parquet file (the module docstring's layout):
    a column whose values are NumPy arrays (None where null) in tensorloop's layout, ``NAME``
    and ``NAME.shape``; any other as Arrow makes it of its values. ``dtypes`` gives the element
    type of a tensor column whose rows are all null (else ``float32``)."""
    pa = require_pyarrow()
    pq = _parquet()
    arrays: dict[str, Any] = {}
    lengths = {len(v) for v in columns.values()}
    if len(lengths) > 1:
        raise FormatError(f"columns of different lengths: {sorted(lengths)}")
    for name, values in columns.items():
        if _holds_tensors(values):
            dtype = (dtypes or {}).get(name)
            arrays[name], arrays[name + SHAPE_SUFFIX] = _tensor_column(pa, name, values, dtype)
        else:
            arrays[name] = _plain_column(pa, name, values)
    try:
        pq.write_table(pa.table(arrays), path)
    except pa.ArrowException as exc:
        raise FormatError(f"cannot write {path}: {error_reason(exc)}") from None


def _holds_tensors(values: Sequence[Any] | Array) -> bool:
    if isinstance(values, np.ndarray) and values.dtype != object:
        return False
    return any(isinstance(v, np.ndarray) for v in values)


def _tensor_column(
    pa: Any, name: str, values: Sequence[Any] | Array, dtype: Any
) -> tuple[Any, Any]:
    """The flat ``list<T>`` column and the ``list<int64>`` shape column of tensors."""
    arrays = [None if v is None else np.asarray(v) for v in values]
    present = [a for a in arrays if a is not None]
    if any(a.dtype.kind in "OUSV" for a in present):  # not numbers: nested lists of them
        return _plain_column(pa, name, [None if a is None else a.tolist() for a in arrays]), (
            pa.array([None if a is None else list(a.shape) for a in arrays], pa.list_(pa.int64()))
        )
    kind = np.result_type(*present) if present else np.dtype(dtype or np.float32)
    try:
        element = pa.from_numpy_dtype(kind)
    except (pa.ArrowException, TypeError, ValueError, NotImplementedError):
        raise FormatError(f"column '{name}' holds {kind}, which Parquet cannot hold") from None
    sizes = np.array([0 if a is None else a.size for a in arrays], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    flat = (
        np.concatenate([a.reshape(-1).astype(kind, copy=False) for a in present])
        if present
        else np.empty(0, kind)
    )
    mask = pa.array([a is None for a in arrays], pa.bool_())
    large = offsets[-1] > np.iinfo(np.int32).max
    lists = pa.LargeListArray if large else pa.ListArray
    offset_type = pa.int64() if large else pa.int32()
    data = lists.from_arrays(pa.array(offsets, offset_type), pa.array(flat, element), mask=mask)
    dims = [[] if a is None else list(a.shape) for a in arrays]
    shape_sizes = np.array([len(d) for d in dims], dtype=np.int64)
    shape_offsets = np.concatenate([[0], np.cumsum(shape_sizes)]).astype(np.int32)
    shape_values = pa.array([d for ds in dims for d in ds], pa.int64())
    shapes = pa.ListArray.from_arrays(pa.array(shape_offsets, pa.int32()), shape_values, mask=mask)
    return data, shapes


def _plain_column(pa: Any, name: str, values: Sequence[Any] | Array) -> Any:
    if isinstance(values, np.ndarray) and values.dtype != object:
        return pa.array(values)
    items = [v.item() if isinstance(v, np.generic) else v for v in values]
    try:
        return pa.array(items)
    except (pa.ArrowException, TypeError, ValueError) as exc:
        raise FormatError(f"column '{name}': its values make no Arrow column ({exc})") from None


def read_parquet_records(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """A Parquet file's rows as dicts by column: tensors (tensorloop's layout, Arrow's and Ray's
    tensor types) as NumPy arrays, None where null; other values as Python values (numbers as
    NumPy scalars). Reads what ``write_parquet`` wrote: ``rows[i]["NAME"]`` is record ``i``'s
    output ``NAME``, ``rows[i]["error"]`` its error."""
    rows: list[dict[str, Any]] = []
    for batch in parquet_batches(path):
        decoded = decode_table(batch)
        names = list(decoded.columns)
        rows.extend({n: decoded.columns[n][i] for n in names} for i in range(len(decoded)))
    return rows


def _objects(values: Sequence[Any]) -> Array:
    array = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):
        array[i] = v
    return array


__all__ = [
    "FILE_PATH",
    "ID_COLUMNS",
    "READ_ERROR",
    "RECORD_COLUMN",
    "RECORD_ID",
    "SHAPE_SUFFIX",
    "Decoded",
    "RecordFile",
    "decode_parquet_batch",
    "decode_table",
    "parquet_batches",
    "parquet_columns",
    "parquet_file",
    "parquet_rows",
    "read_files_batch",
    "read_parquet_records",
    "read_record_file",
    "records_from_dir",
    "register_ray_tensors",
    "require_pyarrow",
    "write_parquet",
]
