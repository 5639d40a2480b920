"""Hostile and broken ONNX models: each refused with a FormatError naming the file, the node or
value and what was expected, never a Python-internal error or garbage (issue 14).

Most files are the hostile corpus's (tests/data/hostile, scripts/make_hostile_corpus.py); these
tests pin the messages and the cases that need a temporary folder (external data, symlinks).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import tensorloop as tl
from tensorloop.errors import ExecutionError, FormatError

CORPUS = Path(__file__).parents[2] / "data" / "hostile"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("onnx_empty.onnx", "the file is empty"),
        ("onnx_truncated.onnx", "not a readable ONNX model"),
        ("onnx_ir_version_future.onnx", "ir_version 99 is not one ONNX defines"),
        ("onnx_ir_version_zero.onnx", "ir_version 0"),
        ("onnx_opset_future.onnx", "default domain is version 99"),
        ("onnx_opset_zero.onnx", "default domain is version 0"),
        ("onnx_duplicate_graph_output.onnx", "lists output(s) 'y' more than once"),
        ("onnx_duplicate_graph_input.onnx", "lists input(s) 'x' more than once"),
        ("onnx_duplicate_node_output.onnx", "output 'y' is already defined"),
        ("onnx_output_shadows_input.onnx", "output 'x' is already defined"),
        ("onnx_negative_input_dim.onnx", "dim #1 is -5"),
        ("onnx_negative_output_dim.onnx", "dim #0 is -3"),
        ("onnx_negative_initializer_dim.onnx", "negative"),
        ("onnx_scan_unequal_lengths.onnx", "#0 has 4, #1 has 5"),
        ("onnx_external_absolute.onnx", "must be a relative path inside it"),
        ("onnx_external_dotdot.onnx", "must be a relative path inside it"),
        ("onnx_external_symlink.onnx", "leaves the model folder"),
        ("onnx_external_offset_beyond.onnx", "reads bytes"),
        ("onnx_external_length_mismatch.onnx", "needs 24 bytes"),
        ("onnx_nested_if_deep.onnx", "not a readable ONNX model"),
    ],
)
def test_refused_with_a_message_naming_the_place(name: str, expected: str) -> None:
    with pytest.raises(FormatError) as info:
        tl.load(CORPUS / name)
    assert name in str(info.value)
    assert expected in str(info.value)


def _external_model(folder: Path, location: str) -> Path:
    t = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "w")
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    t.external_data.append(onnx.StringStringEntryProto(key="location", value=location))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g", [x], [y], [t])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = folder / "m.onnx"
    path.write_bytes(model.SerializeToString())
    return path


def test_external_data_through_a_symlink_inside_the_folder(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "w.bin").write_bytes(np.arange(6, dtype=np.float32).tobytes())
    os.symlink("sub/w.bin", tmp_path / "w.link")
    model = tl.load(_external_model(tmp_path, "w.link"))
    (y,) = model.run([np.zeros((2, 3), np.float32)]).values()
    np.testing.assert_array_equal(y, np.arange(6, dtype=np.float32).reshape(2, 3))


@pytest.mark.parametrize("location", ["../w.bin", "sub/../../w.bin", "..\\w.bin", "/tmp/w.bin"])
def test_external_data_outside_the_folder_is_refused(tmp_path: Path, location: str) -> None:
    inner = tmp_path / "model"
    inner.mkdir()
    (tmp_path / "w.bin").write_bytes(bytes(24))
    with pytest.raises(FormatError, match="leaves the model folder: it must be a relative path"):
        tl.load(_external_model(inner, location))


def test_symlink_leaving_the_folder_is_refused(tmp_path: Path) -> None:
    inner = tmp_path / "model"
    inner.mkdir()
    (tmp_path / "w.bin").write_bytes(bytes(24))
    os.symlink(tmp_path / "w.bin", inner / "w.link")
    with pytest.raises(FormatError, match=r"leaves the model folder .*: it resolves to"):
        tl.load(_external_model(inner, "w.link"))


def test_dynamic_dim_minus_one_is_accepted() -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [-1, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [-1, 3])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    model = tl.load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    assert str(model.inputs[0].type) == "f32[?,3]"


@pytest.mark.parametrize("backend", ["reference", "compiled"])
def test_scan_inputs_of_unequal_length_fail_at_run(backend: str) -> None:
    model = tl.load(CORPUS / "onnx_scan_unequal_lengths_at_run.onnx")
    s0 = np.zeros(3, np.float32)
    a, b = np.ones((4, 3), np.float32), np.ones((5, 3), np.float32)
    with pytest.raises(ExecutionError, match=r"scan inputs #0 'A', #1 'B' differ in length"):
        model.run([s0, a, b], backend=backend)
    s, ys = model.run([s0, a, a], backend=backend).values()
    np.testing.assert_array_equal(s, np.full(3, 8.0, np.float32))
    assert ys.shape == (4, 3)


def test_unexpected_internal_errors_become_format_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    """The last line of defence in tl.load: a loader bug surfaces as a FormatError."""
    from tensorloop.formats.onnx import reader

    def broken(*args: object) -> None:
        raise KeyError("internal")

    monkeypatch.setattr(reader, "_check_supported", broken)
    with pytest.raises(FormatError, match=r"onnx_ok_add.onnx: cannot read this model \(KeyError"):
        tl.load(CORPUS / "onnx_ok_add.onnx")
