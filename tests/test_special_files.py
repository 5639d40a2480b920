"""A FIFO, a device or a folder where a model, its external data, an OpenVINO .bin, an input
file or a batch record file belongs is refused as such (a typed error saying what it is),
found with ``os.stat`` before anything is opened: nothing blocks on a named pipe or reads
/dev/zero forever. Each case runs in a thread with a deadline, so a regression fails."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import tensorloop as tl
from tensorloop.batch.files import parquet_file, read_record_file, records_from_dir
from tensorloop.errors import FormatError, InputError, file_kind, refuse_special_file
from tensorloop.formats.summary import summarize
from tensorloop.tools.inputs import read_input, read_inputs_file

DEADLINE = 10.0
FIFO = r"a FIFO \(named pipe\), not a regular file"
DEVICE = "a character device, not a regular file"
FOLDER = "a folder, not a regular file"
needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no os.mkfifo here")
needs_dev = pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero here")


def raises_in_time(error: type[Exception], match: str, fn: Callable[[], Any]) -> None:
    """``fn()`` raises ``error`` matching ``match`` within DEADLINE seconds (in a thread, so a
    read that blocks fails the test instead of hanging it)."""
    outcome: list[BaseException | None] = []

    def target() -> None:
        try:
            fn()
        except BaseException as exc:  # handed to the test's thread
            outcome.append(exc)
        else:
            outcome.append(None)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(DEADLINE)
    assert not thread.is_alive(), f"still blocked after {DEADLINE} s"
    with pytest.raises(error, match=match):
        if outcome[0] is not None:
            raise outcome[0]


@contextlib.contextmanager
def _unblocked(path: Path) -> Iterator[Path]:
    """``path`` a FIFO; on leaving, a writer opens and closes it, so a reader a regression left
    blocked in ``open`` is let go."""
    os.mkfifo(path)
    try:
        yield path
    finally:
        with contextlib.suppress(OSError):
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))


def _link(path: Path, target: str) -> Path:
    path.symlink_to(target)
    return path


def _onnx_with_external(folder: Path, location: str) -> Path:
    t = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "w")
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    t.external_data.append(onnx.StringStringEntryProto(key="location", value=location))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g", [x], [y], [t])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    path = folder / "model.onnx"
    path.write_bytes(model.SerializeToString())
    return path


def _openvino(folder: Path) -> Path:
    tl.reset()
    x = tl.placeholder("float32", (2, 3), name="x")
    path = folder / "model.xml"
    tl.save(tl.Model({"y": x + tl.constant(np.ones((2, 3), np.float32))}), path)
    return path


@needs_fifo
@pytest.mark.parametrize("suffix", [".onnx", ".xml", ".tl"])
def test_a_fifo_as_the_model_is_refused(tmp_path: Path, suffix: str) -> None:
    with _unblocked(tmp_path / f"model{suffix}") as fifo:
        raises_in_time(FormatError, rf"model\{suffix}: {FIFO}", lambda: tl.load(fifo))
        raises_in_time(FormatError, rf"model\{suffix}: {FIFO}", lambda: summarize(fifo))


@needs_dev
@pytest.mark.parametrize("target", ["/dev/zero", "/dev/null"])
@pytest.mark.parametrize("suffix", [".onnx", ".xml", ".tl"])
def test_a_device_as_the_model_is_refused(tmp_path: Path, suffix: str, target: str) -> None:
    link = _link(tmp_path / f"model{suffix}", target)
    raises_in_time(FormatError, rf"model\{suffix}: {DEVICE}", lambda: tl.load(link))
    (tmp_path / "dir.onnx").mkdir()
    raises_in_time(FormatError, rf"dir\.onnx: {FOLDER}", lambda: tl.load(tmp_path / "dir.onnx"))


@needs_fifo
def test_a_fifo_or_device_as_onnx_external_data_is_refused(tmp_path: Path) -> None:
    with _unblocked(tmp_path / "w.data"):
        path = _onnx_with_external(tmp_path, "w.data")
        raises_in_time(FormatError, rf"external data file 'w\.data': {FIFO}", lambda: tl.load(path))
    # (a link to /dev/zero leaves the model's folder, refused as such before this check)
    (tmp_path / "d.data").mkdir()
    path = _onnx_with_external(tmp_path, "d.data")
    raises_in_time(FormatError, rf"external data file 'd\.data': {FOLDER}", lambda: tl.load(path))


@needs_fifo
def test_a_fifo_or_device_as_the_openvino_bin_is_refused(tmp_path: Path) -> None:
    xml = _openvino(tmp_path)
    assert tl.load(xml).run({"x": np.zeros((2, 3), np.float32)})["y"].tolist() == [[1.0] * 3] * 2
    xml.with_suffix(".bin").unlink()
    with _unblocked(xml.with_suffix(".bin")):
        raises_in_time(FormatError, rf"model\.bin: {FIFO}", lambda: tl.load(xml))
    os.unlink(xml.with_suffix(".bin"))
    if Path("/dev/zero").exists():
        _link(xml.with_suffix(".bin"), "/dev/zero")
        raises_in_time(FormatError, rf"model\.bin: {DEVICE}", lambda: tl.load(xml))


@needs_fifo
@pytest.mark.parametrize("name", ["inputs.npz", "x.npy", "x"])
def test_a_fifo_as_an_inputs_file_is_refused(tmp_path: Path, name: str) -> None:
    with _unblocked(tmp_path / name) as fifo:
        raises_in_time(InputError, FIFO, lambda: read_inputs_file(fifo))
        raises_in_time(InputError, rf"input 'x': .*{FIFO}", lambda: read_input(f"x={fifo}"))
    if Path("/dev/zero").exists():
        raises_in_time(InputError, DEVICE, lambda: read_inputs_file("/dev/zero"))
        raises_in_time(InputError, DEVICE, lambda: read_input("x=/dev/zero"))
    raises_in_time(InputError, FOLDER, lambda: read_inputs_file(tmp_path))
    assert read_input("x=[1, 2]") == ("x", [1, 2])
    assert read_input("x=[" + "1, " * 2000 + "1]")[1] == [1] * 2001  # a long value: no file name
    for raw in ["1" * 5000, "[" * 100_000]:  # past what Python's json reads
        with pytest.raises(InputError, match=r"neither a \.npy file nor JSON"):
            read_input(f"x={raw}")


@needs_fifo
def test_a_fifo_among_batch_records_is_refused(tmp_path: Path) -> None:
    np.savez(tmp_path / "a.npz", x=np.zeros(2, np.float32))
    with _unblocked(tmp_path / "b.npz"):
        records = records_from_dir(tmp_path)
        assert [r.id for r in records] == ["a.npz", "b.npz"]
        assert records[0].load()["x"].shape == (2,)
        raises_in_time(InputError, rf"b\.npz: {FIFO}", records[1].load)
        raises_in_time(InputError, FIFO, lambda: read_record_file(tmp_path / "b.npz", single="x"))


@needs_fifo
def test_a_fifo_as_a_parquet_file_is_refused(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    with _unblocked(tmp_path / "r.parquet") as fifo:
        raises_in_time(InputError, rf"r\.parquet: {FIFO}", lambda: parquet_file(fifo))


def test_file_kinds() -> None:
    assert file_kind(__file__) == "a regular file"
    assert file_kind(Path(__file__).parent) == "a folder"
    assert file_kind("/no/such/file") is None
    assert file_kind("x" * 5000) is None and file_kind("a\0b") is None
    refuse_special_file(__file__, "ok")
    refuse_special_file("/no/such/file", "missing: the caller's to report")
    with pytest.raises(InputError, match=rf"^here: {FOLDER}$"):
        refuse_special_file(Path(__file__).parent, "here", InputError)
