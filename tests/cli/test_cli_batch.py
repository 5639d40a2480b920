"""``tensorloop batch`` through click's runner: a folder of NumPy records and a Parquet file (each
tensor layout) run in this process, each record's outputs read back equal to a run of it alone
(bit for bit; within float rounding with --stack), bad records error rows of their own, the
summary's counts, the same results on Ray's workers, and one-line errors."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner, Result

import tensorloop as tl
from batch_models import WIDTH, records, run_alone, tagger, unbatched_scan
from tensorloop.cli import main

Array = np.ndarray[Any, Any]
LENGTHS = [1, 3, 5, 6, 7, 8]


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def assert_error(result: Result, message: str, code: int = 1) -> None:
    """One ``error:`` line naming ``message``, no traceback, the exit status ``code``."""
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert message in lines[0], lines[0]


@pytest.fixture
def pyarrow() -> Any:
    """pyarrow, with ``pyarrow.parquet`` imported."""
    pytest.importorskip("pyarrow.parquet", reason="Parquet needs pyarrow: tensorloop[ray]")
    return sys.modules["pyarrow"]


def read_back(path: Path) -> list[dict[str, Any]]:
    from tensorloop.batch.files import read_parquet_records

    return read_parquet_records(path)


def summary(result: Result) -> dict[str, Any]:
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def batch(model: str, source: Path, out: Path, *options: str, workers: int = 0) -> dict[str, Any]:
    """``tensorloop batch MODEL --input SOURCE --output OUT ... --json``: its summary."""
    args = ["--input", str(source), "--output", str(out), "--workers", str(workers), *options]
    return summary(invoke("batch", model, *args, "--json"))


def save_model(model: tl.Model, tmp_path: Path, name: str) -> tuple[tl.Model, str]:
    """``model`` saved as text IR, and loaded back as the command loads it."""
    path = tmp_path / f"{name}.tl"
    tl.save(model, path)
    return tl.load(path), str(path)


def alone(model: tl.Model, record: dict[str, Array], axis: int | None = 0) -> dict[str, Array]:
    """A record's outputs: one run of it alone (a batch of one where the model has a batch
    axis, taken away again)."""
    axes = dict.fromkeys(record, axis)
    return run_alone(model, record, axes, dict.fromkeys(model.output_names, axis))


def assert_rows_equal(rows: list[dict[str, Any]], expected: dict[Any, dict[str, Array]]) -> None:
    """The rows that ran hold, bit for bit, each record's outputs run alone."""
    ran = {row["record"]: row for row in rows if row["error"] is None}
    assert ran.keys() == expected.keys()
    for record, want in expected.items():
        for name, value in want.items():
            got = ran[record][name]
            assert got.dtype == value.dtype and got.shape == value.shape, (record, name)
            assert np.array_equal(got, value), (record, name)


@dataclass
class Folder:
    """A model saved, a folder of its records, and each good record's outputs by file name."""

    model: tl.Model
    path: str
    records: Path
    expected: dict[str, dict[str, Array]]


@pytest.fixture
def folder(tmp_path: Path) -> Folder:
    """The tagger (``x`` [B, T, WIDTH]), a folder of its records (.npz and one .npy) of mixed
    lengths, a record of the wrong width and a corrupt .npz, and each good record's outputs."""
    model, path = save_model(tagger(), tmp_path, "tagger")
    recs = tmp_path / "records"
    recs.mkdir()
    expected = {}
    for i, record in enumerate(records(0, LENGTHS)):
        np.savez(recs / f"r{i}.npz", **record)
        expected[f"r{i}.npz"] = alone(model, record)
    (one,) = records(1, [4])
    np.save(recs / "single.npy", one["x"])
    expected["single.npy"] = alone(model, one)
    np.savez(recs / "wide.npz", x=np.ones((3, WIDTH + 1), np.float32))
    (recs / "corrupt.npz").write_bytes(b"PK\x03\x04 not a zip archive")
    (recs / "notes.txt").write_text("not a record")
    return Folder(model, path, recs, expected)


# -- in this process --------------------------------------------------------------------------
def test_folder_records_run_each_alone_and_bad_ones_are_error_rows(
    pyarrow: Any, tmp_path: Path, folder: Folder
) -> None:
    path, recs = folder.path, folder.records
    out = tmp_path / "out.parquet"
    data = batch(path, recs, out)
    assert data["records"] == 9 and data["errors"] == 2 and data["workers"] == 0
    assert data["ray"] is None and data["stats"]["runs"] == 7
    assert data["records_per_s"] > 0
    first = {e["record"]: e["error"] for e in data["first_errors"]}
    assert first.keys() == {"corrupt.npz", "wide.npz"}
    assert first["corrupt.npz"].startswith("InputError: corrupt.npz: not a readable .npz file")
    assert "input 'x'" in first["wide.npz"] and f"{WIDTH + 1}]" in first["wide.npz"]

    rows = read_back(out)
    names = ["corrupt.npz", *(f"r{i}.npz" for i in range(len(LENGTHS))), "single.npy"]
    assert [r["record"] for r in rows] == [*names, "wide.npz"]
    assert {r["record"]: r["error"] for r in rows if r["error"] is not None} == first
    for row in rows:
        if row["error"] is not None:
            assert row["tags"] is None and row["last"] is None
    assert_rows_equal(rows, folder.expected)
    table = pyarrow.parquet.read_table(out)
    assert table.schema.names == [
        "record",
        "tags",
        "tags.shape",
        "last",
        "last.shape",
        "error",
    ]
    assert str(table.schema.field("tags").type) == "list<element: float>"


def test_text_summary(tmp_path: Path, pyarrow: Any, folder: Folder) -> None:
    path, recs = folder.path, folder.records
    out = tmp_path / "out.parquet"
    result = invoke("batch", path, "--input", str(recs), "--output", str(out), "--workers", "0")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == f"tagger.tl: 9 records from {recs}, 2 errors"
    assert lines[1].startswith("  corrupt.npz: InputError: corrupt.npz: not a readable")
    assert lines[2].startswith("  wide.npz: InputError: ")
    assert lines[3].startswith("ran in ") and "records/s, in this process, on compiled" in lines[3]
    assert lines[4:] == [f"wrote {out}"]


def test_stacked_records_agree_within_float_rounding(
    pyarrow: Any, tmp_path: Path, folder: Folder
) -> None:
    """--stack runs records of one padded length together: the outputs of the exact runs within
    float32 rounding, and the summary says how many stacked."""
    model, path = save_model(tagger(final=False), tmp_path, "steps")
    recs = folder.records
    out = tmp_path / "stacked.parquet"
    data = batch(path, recs, out, "--stack")
    assert data["stack"] and data["records"] == 9 and data["errors"] == 2
    stats = data["stats"]  # lengths 5 and 6 run padded to 6, 7 and 8 to 8
    assert stats["stacked"] == 4 and stats["padded_steps"] == 2 and stats["split"] == 0
    rows = {r["record"]: r for r in read_back(out) if r["error"] is None}
    assert len(rows) == 7
    for name, row in rows.items():
        x = np.load(recs / name)["x"] if name.endswith(".npz") else np.load(recs / name)
        want = alone(model, {"x": x})["tags"]
        assert row["tags"].shape == want.shape
        np.testing.assert_allclose(row["tags"], want, rtol=1e-5, atol=1e-6)


def test_records_without_a_batch_axis_and_npy_needing_one_input(
    pyarrow: Any, tmp_path: Path
) -> None:
    """--batch-axis none: a record is the whole input, a scalar input a scalar; a model of two
    inputs takes .npz records, a .npy one is an error row saying so."""
    model, path = save_model(unbatched_scan(), tmp_path, "unbatched")
    recs = tmp_path / "records"
    recs.mkdir()
    expected = {}
    for i, record in enumerate(records(2, [2, 6], name="xs")):
        record["k"] = np.float32(0.5 + i)
        np.savez(recs / f"r{i}.npz", **record)
        expected[f"r{i}.npz"] = alone(model, record, axis=None)
    np.save(recs / "lone.npy", np.ones((3, WIDTH), np.float32))
    out = tmp_path / "out.parquet"
    data = batch(path, recs, out, "--batch-axis", "none")
    assert data["records"] == 3 and data["errors"] == 1
    (error,) = data["first_errors"]
    assert error["record"] == "lone.npy"
    assert "a .npy file holds one array, for a model of one input" in error["error"]
    assert_rows_equal(read_back(out), expected)


def test_column_names_another_array(pyarrow: Any, tmp_path: Path) -> None:
    """--column x=feats reads input x from the .npz array feats (and a .npy file as it)."""
    model, path = save_model(tagger(), tmp_path, "tagger")
    recs = tmp_path / "records"
    recs.mkdir()
    a, b = records(3, [2, 5])
    np.savez(recs / "a.npz", feats=a["x"])
    np.save(recs / "b.npy", b["x"])
    out = tmp_path / "out.parquet"
    data = batch(path, recs, out, "--column", "x=feats")
    assert data["errors"] == 0
    assert_rows_equal(read_back(out), {"a.npz": alone(model, a), "b.npy": alone(model, b)})


# -- Parquet ----------------------------------------------------------------------------------
def parquet_input(pa: Any, path: Path, layout: str, xs: list[Array]) -> None:
    """The records ``xs`` with ids 100, 101, ... and a note each, ``x`` in ``layout``: ``flat``
    (tensorloop's: a flat list and its shape) or ``nested`` (lists of lists)."""
    ids = list(range(100, 100 + len(xs)))
    notes = [f"clip {i}" for i in ids]
    if layout == "flat":
        columns = {
            "x": pa.array([x.ravel().tolist() for x in xs], pa.list_(pa.float32())),
            "x.shape": pa.array([list(x.shape) for x in xs], pa.list_(pa.int64())),
        }
    else:
        columns = {"x": pa.array([x.tolist() for x in xs], pa.list_(pa.list_(pa.float32())))}
    table = pa.table({"id": pa.array(ids, pa.int64()), **columns, "note": notes})
    pa.parquet.write_table(table, path)


@pytest.mark.parametrize("layout", ["flat", "nested"])
def test_parquet_rows_in_both_layouts_with_ids_passed_through(
    pyarrow: Any, tmp_path: Path, layout: str
) -> None:
    model, path = save_model(tagger(), tmp_path, "tagger")
    xs = [r["x"] for r in records(4, LENGTHS)]
    xs.insert(2, np.ones((2, WIDTH - 1), np.float32))  # the wrong width: an error row
    source = tmp_path / "clips.parquet"
    parquet_input(pyarrow, source, layout, xs)
    out = tmp_path / "out.parquet"
    data = batch(path, source, out, "--batch-size", "2")
    assert data["records"] == 7 and data["errors"] == 1
    assert data["first_errors"][0]["record"] == 102
    rows = read_back(out)
    assert [r["record"] for r in rows] == list(range(100, 107))
    assert [r["id"] for r in rows] == list(range(100, 107))
    assert [r["note"] for r in rows] == [f"clip {i}" for i in range(100, 107)]
    assert "x" not in rows[0] and "x.shape" not in rows[0]
    expected = {100 + i: alone(model, {"x": x}) for i, x in enumerate(xs) if i != 2}
    assert_rows_equal(rows, expected)


def test_parquet_rows_that_hold_no_tensor_are_error_rows(pyarrow: Any, tmp_path: Path) -> None:
    """A ragged row of nested lists, a flat row its shape does not fit: their own errors; the
    scalars of a column stay scalars; no id column: the row indices."""
    model, path = save_model(unbatched_scan(), tmp_path, "unbatched")
    xs = [r["xs"] for r in records(5, [3, 4, 2], name="xs")]
    ragged = [[1.0] * WIDTH, [1.0] * (WIDTH - 1)]
    table = pyarrow.table(
        {
            "xs": pyarrow.array(
                [x.tolist() for x in xs] + [ragged], pyarrow.list_(pyarrow.list_(pyarrow.float32()))
            ),
            "k": pyarrow.array([0.5, 1.0, 1.5, 2.0], pyarrow.float32()),
        }
    )
    source = tmp_path / "in.parquet"
    pyarrow.parquet.write_table(table, source)
    out = tmp_path / "out.parquet"
    data = batch(path, source, out, "--batch-axis", "none")
    assert data["errors"] == 1
    assert data["first_errors"] == [
        {
            "record": 3,
            "error": "InputError: column 'xs': ragged nested lists (lengths [4, 5] at one "
            "level); a tensor's rows must be of one length",
        }
    ]
    ks = [np.float32(0.5), np.float32(1.0), np.float32(1.5)]
    expected = {
        i: alone(model, {"xs": x, "k": k}, axis=None)
        for i, (x, k) in enumerate(zip(xs, ks, strict=True))
    }
    assert_rows_equal(read_back(out), expected)

    flat = pyarrow.table(
        {
            "xs": pyarrow.array([xs[0].ravel().tolist()], pyarrow.list_(pyarrow.float32())),
            "xs.shape": pyarrow.array([[4, WIDTH]], pyarrow.list_(pyarrow.int64())),
            "k": pyarrow.array([0.5], pyarrow.float32()),
        }
    )
    pyarrow.parquet.write_table(flat, source)
    data = batch(path, source, out, "--batch-axis", "none")
    assert data["first_errors"] == [
        {
            "record": 0,
            "error": f"InputError: column 'xs': {3 * WIDTH} elements do not make its "
            f"shape [4, {WIDTH}]",
        }
    ]


def test_arrow_and_ray_tensor_columns(pyarrow: Any, tmp_path: Path) -> None:
    """Arrow's fixed-shape tensors and, where Ray is installed, Ray Data's tensor types."""
    model, path = save_model(tagger(), tmp_path, "tagger")
    xs = [r["x"] for r in records(6, [3, 3, 4])]
    columns = {"fixed": pyarrow.FixedShapeTensorArray.from_numpy_ndarray(np.stack(xs[:2]))}
    expected = {i: alone(model, {"x": x}) for i, x in enumerate(xs[:2])}
    cases = [("fixed", columns, expected)]
    try:
        from ray.data.extensions import ArrowTensorArray
    except ImportError:
        pass
    else:
        ragged = np.empty(3, dtype=object)
        ragged[:] = xs
        variable = ArrowTensorArray.from_numpy(ragged)
        cases.append(
            ("ray", {"ray": variable}, {i: alone(model, {"x": x}) for i, x in enumerate(xs)})
        )
    for column, table, want in cases:
        source = tmp_path / f"{column}.parquet"
        pyarrow.parquet.write_table(pyarrow.table(table), source)
        out = tmp_path / f"{column}.out.parquet"
        data = batch(path, source, out, "--column", f"x={column}")
        assert data["errors"] == 0, data
        assert_rows_equal(read_back(out), want)


# -- on Ray -----------------------------------------------------------------------------------
def test_ray_workers_give_the_same_results(pyarrow: Any, tmp_path: Path, folder: Folder) -> None:
    """--workers 2 on Ray Data: a folder's records (read by Ray's tasks, an unreadable file an
    error row) and a Parquet file's rows, the results of --workers 0. The command starts Ray
    and shuts it down (or uses the Ray this process runs already)."""
    ray = pytest.importorskip("ray", reason="--workers N runs on Ray: tensorloop[ray]")
    running = ray.is_initialized()
    if running and ray.cluster_resources().get("CPU", 0) < 3:
        pytest.skip("the Ray this process runs has fewer than 3 CPUs: 2 workers and a reader")
    path, recs = folder.path, folder.records
    source = tmp_path / "clips.parquet"
    parquet_input(pyarrow, source, "flat", [r["x"] for r in records(7, [2, 6, 3])])
    for given in (recs, source):
        here, there = tmp_path / "here.parquet", tmp_path / "there.parquet"
        local = batch(path, given, here, "--batch-size", "2")
        remote = batch(path, given, there, "--batch-size", "2", workers=2)
        assert remote["workers"] == 2 and remote["ray"] == "local"
        assert remote["stats"] is None and remote["ray_start_s"] >= 0
        for key in ("records", "errors", "first_errors"):
            assert remote[key] == local[key], key
        mine, theirs = read_back(here), read_back(there)
        assert [r["record"] for r in theirs] == [r["record"] for r in mine]
        for a, b in zip(mine, theirs, strict=True):
            assert a.keys() == b.keys()
            for name, value in a.items():
                if isinstance(value, np.ndarray):
                    assert np.array_equal(value, b[name]) and value.dtype == b[name].dtype
                else:
                    assert value == b[name], name
        assert ray.is_initialized() == running
    assert read_back(tmp_path / "here.parquet")[0]["note"] == "clip 100"


# -- errors -----------------------------------------------------------------------------------
def test_one_line_errors(pyarrow: Any, tmp_path: Path, folder: Folder) -> None:
    path, recs = folder.path, folder.records
    out = str(tmp_path / "out.parquet")
    run = ["batch", path, "--input", str(recs), "--output", out, "--workers", "0"]
    assert_error(
        invoke("batch", path, "--input", str(tmp_path / "nowhere"), "--output", out),
        "Invalid value for '--input': Path",
        code=2,
    )
    assert_error(invoke(*run, "--column", "y=x"), "--column y=...: the model has no input 'y'")
    assert_error(invoke(*run, "--batch-axis", "y=1"), "--batch-axis y=...: the model has no")
    assert_error(invoke(*run, "--batch-axis", "x=two"), "expected AXIS or INPUT=AXIS", code=2)
    assert_error(invoke(*run, "--outputs", "nope"), "model has no output 'nope'")
    nowhere = str(tmp_path / "no" / "out.parquet")
    assert_error(invoke(*run[:4], "--output", nowhere), "cannot write")
    assert_error(invoke(*run[:4], "--output", str(recs)), "it is a folder")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert_error(
        invoke(*run[:2], "--input", str(empty), "--output", out, "--workers", "0"),
        "no .npz or .npy files in the folder",
    )
    broken = tmp_path / "broken.tl"
    broken.write_text("graph @g(")
    assert_error(invoke("batch", str(broken), *run[2:]), "ParseError")

    source = tmp_path / "in.parquet"
    parquet_input(pyarrow, source, "flat", [np.ones((2, WIDTH), np.float32)])
    on_parquet = ["batch", path, "--input", str(source), "--output", out, "--workers", "0"]
    assert_error(
        invoke(*on_parquet, "--column", "x=feats"),
        "no column 'feats' for input 'x' (--column x=feats); its columns are id, x, note",
    )
    assert_error(
        invoke(*on_parquet[:4], "--output", str(source), "--workers", "0"), "is the input file"
    )
    not_parquet = tmp_path / "in.csv"
    not_parquet.write_text("x\n1\n")
    assert_error(
        invoke(*on_parquet[:3], str(not_parquet), *on_parquet[4:]), "not a readable Parquet file"
    )


def test_ray_or_pyarrow_missing_says_how_to_install(
    tmp_path: Path, folder: Folder, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, recs = folder.path, folder.records
    run = ["batch", path, "--input", str(recs), "--output", str(tmp_path / "out.parquet")]
    for module in ("ray", "ray.data"):
        monkeypatch.setitem(sys.modules, module, None)  # import ray fails as where it is missing
    assert_error(
        invoke(*run, "--workers", "2"),
        "--workers 2 runs on Ray, which is not installed: pip install 'tensorloop[ray]' "
        "(or --workers 0 runs in this process)",
    )
    assert_error(invoke(*run), "--workers N (the default) runs on Ray, which is not installed")
    for module in ("pyarrow", "pyarrow.parquet"):
        monkeypatch.setitem(sys.modules, module, None)
    assert_error(
        invoke(*run, "--workers", "0"),
        "reading and writing Parquet needs pyarrow: pip install 'tensorloop[ray]'",
    )
