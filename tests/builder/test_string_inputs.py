"""``str`` inputs take NumPy's string arrays: unicode (``<U``) and StringDType arrays, object
arrays of str, and bytes (``S`` arrays, bytes items), decoded as UTF-8 with surrogateescape as the
IR readers decode strings; any other array is an InputError naming the input, on every backend,
through a session and through the CLI's input files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tensorloop as tl
from tensorloop.builder.tracing import emit, emit_node
from tensorloop.errors import InputError
from tensorloop.tensor.dtypes import string_array
from tensorloop.tools.inputs import read_inputs_file, write_inputs_file

BACKENDS = ("reference", "compiled", "jax")
WORDS = ["hello", "", "w\u00e9", "\u00e9t\u00e9 \U0001f600"]


@pytest.fixture(autouse=True)
def _fresh_builder() -> None:
    tl.reset()


def _unpack_model() -> tl.Model:
    """The UTF-8 bytes of each string of x, and x joined with itself."""
    x = tl.placeholder("string", [2, 2], name="x")
    begins, ends, symbols = emit_node("StringTensorUnpack", [x])
    joined = emit("StringConcat", [x, x], {})
    return tl.Model({"begins": begins, "ends": ends, "symbols": symbols, "joined": joined})


def _want(items: list[str]) -> dict[str, Any]:
    encoded = [s.encode("utf-8", "surrogateescape") for s in items]
    ends = np.cumsum([len(b) for b in encoded])
    return {
        "begins": (ends - [len(b) for b in encoded]).reshape(2, 2),
        "ends": ends.reshape(2, 2),
        "symbols": list(b"".join(encoded)),
        "joined": [s + s for s in items],
    }


def _run_all(model: tl.Model, value: Any, items: list[str]) -> None:
    want = _want(items)
    for backend in BACKENDS:
        got = model.run({"x": value}, backend=backend)
        assert got["begins"].tolist() == want["begins"].tolist(), backend
        assert got["ends"].tolist() == want["ends"].tolist(), backend
        assert got["symbols"].tolist() == want["symbols"], backend
        assert got["joined"].dtype == object and got["joined"].shape == (2, 2), backend
        assert got["joined"].reshape(-1).tolist() == want["joined"], backend
        assert all(type(s) is str for s in got["joined"].reshape(-1).tolist()), backend


@pytest.mark.handoff(reason="jax places string nodes on the compiled backend")
@pytest.mark.parametrize(
    "form",
    ["unicode", "StringDType", "object", "list", "bytes", "object of bytes", "object of np.str_"],
)
def test_every_numpy_string_form_is_taken(form: str) -> None:
    items = ["h\u00e9llo", "", "\U0001f600", "a b"]
    value = {
        "unicode": lambda: np.array(items).reshape(2, 2),
        "StringDType": lambda: np.array(items, dtype=np.dtypes.StringDType()).reshape(2, 2),
        "object": lambda: string_array(items, (2, 2)),
        "list": lambda: [items[:2], items[2:]],
        "bytes": lambda: np.array([s.encode() for s in items]).reshape(2, 2),
        "object of bytes": lambda: string_array([s.encode() for s in items], (2, 2)),  # type: ignore[misc]
        "object of np.str_": lambda: string_array([np.str_(s) for s in items], (2, 2)),
    }[form]()
    _run_all(_unpack_model(), value, items)


@pytest.mark.handoff(reason="jax places string nodes on the compiled backend")
def test_bytes_that_are_not_utf8_survive_as_surrogates() -> None:
    raw = [b"\xff\xfe", b"ok", b"caf\xc3\xa9", b"\x80"]
    items = [b.decode("utf-8", "surrogateescape") for b in raw]
    _run_all(_unpack_model(), np.array(raw).reshape(2, 2), items)
    got = _unpack_model().run({"x": np.array(raw).reshape(2, 2)})
    assert bytes(got["symbols"].tolist()) == b"".join(raw)


@given(st.lists(st.text(), min_size=4, max_size=4))
def test_unicode_and_object_arrays_run_alike(items: list[str]) -> None:
    """Any text (NumPy's fixed width drops trailing NULs, so those are left out)."""
    items = [s.rstrip("\x00") for s in items]
    tl.reset()
    model = _unpack_model()
    a = model.run({"x": np.array(items, dtype=str).reshape(2, 2)})
    b = model.run({"x": string_array(items, (2, 2))})
    for name in a:
        assert a[name].tolist() == b[name].tolist(), name


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (np.zeros((2, 2), np.int64), r"expected str\[2,2\], got int64 array of shape \[2, 2\]"),
        (np.zeros((2, 2), np.float32), r"expected str\[2,2\], got float32 array"),
        (np.ones((2, 2), bool), r"expected str\[2,2\], got bool array"),
        (
            string_array(["a", "b", "c", 3], (2, 2)),  # type: ignore[list-item]
            r"expected str\[2,2\], got an object array of shape \[2, 2\] holding int at \[1, 1\]",
        ),
        (
            string_array(["a", None, "c", "d"], (2, 2)),  # type: ignore[list-item]
            r".* holding NoneType at \[0, 1\]",
        ),
        ([[1, 2], [3, 4]], r".* holding int at \[0, 0\]"),
        (np.array(["a", "b", "c"]), r"expected str\[2,2\], got str\[3\]"),
    ],
)
def test_a_non_string_array_names_the_input(value: Any, message: str) -> None:
    model = _unpack_model()
    for backend in BACKENDS:
        with pytest.raises(InputError, match=r"input 'x': " + message):
            model.run({"x": value}, backend=backend)


def test_a_session_takes_unicode_arrays() -> None:
    model = _unpack_model()
    items = ["ab", "c", "", "d\u00e9"]
    want = model.run({"x": string_array(items, (2, 2))})
    session = tl.Session(model)
    got = session.run({"x": np.array(items).reshape(2, 2)})
    assert got["joined"].tolist() == want["joined"].tolist()


def test_saved_string_inputs_read_back_as_the_same_run(tmp_path: Path) -> None:
    """``--save-inputs`` writes a string tensor as a unicode array (an object array would be a
    pickle, which ``--inputs`` refuses), and the model takes it back."""
    items = ["h\u00e9", "\udcff", "", "z"]
    path = tmp_path / "in.npz"
    write_inputs_file(path, {"x": string_array(items, (2, 2))})
    read = read_inputs_file(path)
    assert read["x"].dtype.kind == "U"
    model = _unpack_model()
    assert (
        model.run(read)["symbols"].tolist()
        == model.run({"x": string_array(items, (2, 2))})["symbols"].tolist()
    )
    with pytest.raises(InputError, match="input 'x' is an object array not all of str"):
        write_inputs_file(path, {"x": string_array(["a", 1], (2,))})  # type: ignore[list-item]
