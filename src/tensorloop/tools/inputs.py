"""A model's feed from what the user gives: .npy files, JSON literals, an .npz file, random data."""

from __future__ import annotations

import json
import os
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError, file_kind, refuse_special_file
from ..model import Model
from ..tensor.types import TensorType

Shape = tuple[int | str, ...] | None
"""A declared input shape: ints, symbolic names (``"batch"``, ``"?"``), or None (rank unknown)."""


@dataclass(frozen=True)
class InputSpec:
    """One model input as a runtime declares it: its names (the first is the primary one; an
    OpenVINO port or a tensorloop input with aliases carries several), element type and shape."""

    names: tuple[str, ...]
    dtype: np.dtype[Any] | None
    shape: Shape

    @property
    def name(self) -> str:
        return self.names[0]

    def __str__(self) -> str:
        dims = "?" if self.shape is None else ",".join(map(str, self.shape))
        return f"{self.dtype or '?'}[{dims}]"


def input_specs_of(model: Model) -> list[InputSpec]:
    """A tensorloop model's inputs as specs, each with the aliases its graph gives it."""
    aliases: dict[str, list[str]] = {}
    for alias, name in model.graph.input_aliases.items():
        aliases.setdefault(name, []).append(alias)
    specs = []
    for v in model.inputs:
        t = v.type
        dtype = t.dtype.numpy if isinstance(t, TensorType) else None
        shape = t.shape if isinstance(t, TensorType) else None
        specs.append(InputSpec((v.name, *aliases.get(v.name, ())), dtype, shape))
    return specs


# --- reading what is given ------------------------------------------------------------------------


def parse_input_shape(spec: str) -> tuple[str, tuple[int, ...]]:
    """``"NAME:2,5,8"`` (or ``NAME:2x5x8``) -> ``("NAME", (2, 5, 8))``; ``"NAME:"`` is a
    scalar."""
    name, sep, dims = spec.rpartition(":")
    if not sep or not name:
        raise InputError(f"--input-shape {spec!r}: expected NAME:2,5,8")
    try:
        shape = tuple(int(d) for d in dims.replace("x", ",").split(",") if d.strip())
    except ValueError:
        raise InputError(
            f"--input-shape {spec!r}: dimensions must be integers, as in {name}:2,5,8"
        ) from None
    if any(d < 0 for d in shape):
        raise InputError(f"--input-shape {spec!r}: dimensions must be non-negative")
    return name, shape


def read_input(spec: str) -> tuple[str, Any]:
    """``"NAME=FILE.npy"`` or ``"NAME=JSON"`` -> ``(NAME, value)``; a path that ends in .npy or
    names a file is read as .npy."""
    name, sep, raw = spec.partition("=")
    if not sep or not name:
        raise InputError(f"--input {spec!r}: expected NAME=FILE.npy or NAME=JSON")
    if raw.endswith(".npy") or file_kind(raw) not in (None, "a folder"):  # a FIFO: refused
        data = read_numpy(raw, f"input '{name}': {raw}", ".npy")
        if not isinstance(data, np.ndarray):
            raise InputError(
                f"input '{name}': {raw} is an .npz archive; give it with --inputs {raw}"
            )
        return name, data
    try:
        return name, json.loads(raw)
    except (ValueError, RecursionError):  # not JSON, nested too deep, 4300 digits or more
        raise InputError(f"input '{name}': {raw!r} is neither a .npy file nor JSON") from None


def read_inputs_file(path: str | Path) -> dict[str, np.ndarray[Any, Any]]:
    """The arrays of an ``.npz`` file by name; a missing, truncated or foreign file (a pickle
    included) is an InputError naming it."""
    data = read_numpy(path, f"--inputs {path}", ".npz")
    if isinstance(data, np.ndarray):
        raise InputError(
            f"--inputs {path}: a .npy file holds one array; give it with --input NAME={path}"
        )
    return dict(data)


def given_inputs(specs: Iterable[str] = (), path: str | Path | None = None) -> dict[str, Any]:
    """The values an .npz file (``path``) and ``NAME=FILE.npy|JSON`` items give, by name; an
    item overrides the file."""
    given: dict[str, Any] = read_inputs_file(path) if path else {}
    given.update(read_input(s) for s in specs)
    return given


def read_numpy(path: str | os.PathLike[str], what: str, kind: str) -> Any:
    """An .npy file's array or an .npz file's arrays by name, read at once (the file is closed
    whatever happens; ``np.load`` leaves a broken .npz open); never a pickle. ``what`` names
    the file in an error, ``kind`` what it should have been."""
    refuse_special_file(path, what, InputError)  # a FIFO or a device would block or never end
    try:
        with open(path, "rb") as f:
            if not f.read(6).startswith((b"PK", b"\x93NUMPY")):
                raise InputError(f"{what}: not a readable {kind} file (not NumPy's)")
            f.seek(0)
            data = np.load(f, allow_pickle=False)
            if isinstance(data, np.ndarray):
                return data
            with data:
                return {k: np.asarray(data[k]) for k in data.files}
    except InputError:
        raise
    except FileNotFoundError:
        raise InputError(f"{what}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{what}: a folder, not a file") from None
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as exc:
        raise InputError(f"{what}: not a readable {kind} file ({error_reason(exc)})") from None


def error_reason(exc: BaseException) -> str:
    """An exception's reason in one short line: an OSError's text, else its message's first
    line (at most 200 characters), else its type's name."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:200]


def write_inputs_file(path: str | Path, feeds: Mapping[str, Any]) -> None:
    """Write tensor ``feeds`` to an ``.npz`` file that ``read_inputs_file`` reads back; string
    tensors (object arrays of str) as NumPy unicode arrays, which the str inputs take."""
    arrays = {}
    for name, value in feeds.items():
        if isinstance(value, list) or value is None:
            raise InputError(f"--save-inputs: input '{name}' is not a tensor; .npz holds tensors")
        array = np.asarray(value)
        if array.dtype == object:  # .npz would pickle it, and pickles are not read back
            if not all(isinstance(s, str) for s in array.reshape(-1).tolist()):
                raise InputError(
                    f"--save-inputs: input '{name}' is an object array not all of str; "
                    ".npz holds numbers and strings"
                )
            array = array.astype(str)
        arrays[name] = array
    try:
        np.savez(path, **arrays)  # type: ignore[arg-type]
    except OSError as exc:
        raise InputError(f"cannot write {path}: {error_reason(exc)}") from None


# --- the feed -------------------------------------------------------------------------------------


def random_array(spec: InputSpec, shape: tuple[int, ...], rng: np.random.Generator) -> Any:
    """Random data of the input's type: normal floats, booleans, integers in [0, 10)."""
    dt = np.dtype(np.float32) if spec.dtype is None else spec.dtype
    if dt.kind == "f":
        return rng.standard_normal(shape).astype(dt)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        return rng.integers(0, 10, shape).astype(dt)
    raise InputError(f"input '{spec.name}' holds {dt}; --random-inputs makes numbers only")


def make_inputs(
    inputs: Model | Sequence[InputSpec],
    given: Mapping[str, Any] = {},
    *,
    random: bool = False,
    seed: int = 0,
    shapes: Mapping[str, Sequence[int]] = {},
) -> dict[str, Any]:
    """The feed for a model (or for inputs declared by ``specs``), keyed by primary name: the
    ``given`` values (by any name of their input; lists and numbers take the input's element
    type), and with ``random`` the rest drawn from ``seed``. A random input's shape is its
    declared one, with ``shapes`` for it, or with a named dimension (``batch``) sized by another
    input given or shaped."""
    specs = input_specs_of(inputs) if isinstance(inputs, Model) else list(inputs)
    by_name = {n: s for s in specs for n in s.names}
    known = ", ".join(s.name for s in specs) or "none"
    feeds: dict[str, Any] = {}
    for key, value in given.items():
        spec = by_name.get(key)
        if spec is None:
            raise InputError(f"model has no input '{key}'; inputs are {known}")
        if spec.name in feeds:
            raise InputError(f"input '{spec.name}' given twice (as '{key}')")
        if not isinstance(value, np.ndarray) and spec.dtype is not None:
            try:
                value = np.asarray(value, dtype=spec.dtype)
            except (TypeError, ValueError) as exc:
                raise InputError(f"input '{key}': not a {spec.dtype} array ({exc})") from None
        feeds[spec.name] = value
    for key in shapes:
        if key not in by_name:
            raise InputError(f"--input-shape {key}: model has no input '{key}'; inputs are {known}")
    if shapes and not random:
        raise InputError("--input-shape gives the shapes of random inputs; add --random-inputs")
    missing = [s for s in specs if s.name not in feeds]
    if missing and not random:
        raise InputError(
            f"missing input(s) {', '.join(s.name for s in missing)}; give them with --input or "
            "--inputs, or use --random-inputs"
        )
    if not random:  # the runtime judges the values given
        return {s.name: feeds[s.name] for s in specs}
    shape_of = {by_name[k].name: tuple(v) for k, v in shapes.items()}
    symbols: dict[str, int] = {}
    for spec in specs:
        actual = shape_of.get(spec.name)
        if actual is None and spec.name in feeds:
            actual = tuple(np.shape(feeds[spec.name]))
        if actual is not None:
            _check_fits(spec, actual)
            for d, n in zip(spec.shape or (), actual, strict=False):
                if isinstance(d, str) and d != "?":
                    symbols.setdefault(d, n)
    rng = np.random.default_rng(seed)
    for spec in missing:
        shape = shape_of.get(spec.name)
        if shape is None:
            shape = _shape_for(spec, symbols)
        feeds[spec.name] = random_array(spec, shape, rng)
    return {s.name: feeds[s.name] for s in specs}


def dims_text(shape: Sequence[int]) -> str:
    """``[2,5,8]``."""
    return "[" + ",".join(map(str, shape)) + "]"


def _check_fits(spec: InputSpec, actual: tuple[int, ...]) -> None:
    declared = spec.shape
    if declared is not None and (
        len(declared) != len(actual)
        or any(isinstance(d, int) and d != n for d, n in zip(declared, actual, strict=True))
    ):
        raise InputError(
            f"input '{spec.name}' is {spec}; shape {dims_text(actual)} does not fit it"
        )


def _shape_for(spec: InputSpec, symbols: Mapping[str, int]) -> tuple[int, ...]:
    """The declared shape with its named dimensions sized; an error naming the first dimension
    left open, and the ``--input-shape`` that would settle it."""
    fix = f"give one with --input-shape {spec.name}:D1,D2,..."
    if spec.shape is None:
        raise InputError(f"input '{spec.name}' is {spec}, not a fixed shape (rank unknown); {fix}")
    dims: list[int] = []
    for k, d in enumerate(spec.shape):
        if isinstance(d, int):
            dims.append(d)
        elif d in symbols:
            dims.append(symbols[d])
        else:
            example = ",".join(str(x) if isinstance(x, int) else "N" for x in spec.shape)
            what = "unknown" if d == "?" else f"'{d}'"
            raise InputError(
                f"input '{spec.name}' is {spec}, not a fixed shape: dim {k} ({what}) is dynamic; "
                f"{fix} (here {spec.name}:{example})"
            )
    return tuple(dims)
