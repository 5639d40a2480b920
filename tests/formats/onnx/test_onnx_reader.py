"""Reading ONNX (formats/onnx/reader.py, convert.py and the read_<family>.py converters): files,
external data, initializers, functions, value names, bad input, and the one list of converter
modules."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, numpy_helper
from onnx import helper as h

import tensorloop as tl
from tensorloop.errors import FormatError

OPSET = [h.make_opsetid("", 18)]


def vi(name: str, elem: int = TensorProto.FLOAT, shape: Any = None) -> Any:
    return h.make_tensor_value_info(name, elem, shape)


def affine_model(w: np.ndarray) -> onnx.ModelProto:
    g = h.make_graph(
        [h.make_node("MatMul", ["x", "w"], ["y"])],
        "affine",
        [vi("x", shape=[2, w.shape[0]])],
        [vi("y", shape=[2, w.shape[1]])],
        initializer=[numpy_helper.from_array(w, "w")],
    )
    return h.make_model(g, opset_imports=OPSET)


def save_external(m: onnx.ModelProto, path: Path) -> None:
    onnx.save_model(m, path, save_as_external_data=True, all_tensors_to_one_file=True,
                    location="weights.bin", size_threshold=0)  # fmt: skip


def test_external_data_is_read_from_the_model_folder(tmp_path: Path) -> None:
    w = np.arange(12, dtype=np.float32).reshape(3, 4)
    save_external(affine_model(w), tmp_path / "m.onnx")
    x = np.ones((2, 3), np.float32)
    np.testing.assert_array_equal(tl.load(tmp_path / "m.onnx").run({"x": x})["y"], x @ w)


def _tamper(path: Path, key: str, value: str) -> None:
    m = onnx.load(path, load_external_data=False)
    for entry in m.graph.initializer[0].external_data:
        if entry.key == key:
            entry.value = value
    onnx.save(m, path)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("offset", "4096", r"reads bytes 4096\.\.4144 of 'weights\.bin', which holds 48"),
        ("length", "8", r"needs 48 bytes, its external data entry gives 8"),
        ("location", "../outside.bin", "leaves the model folder"),
        ("location", "/etc/passwd", "leaves the model folder"),
        ("location", "missing.bin", "does not exist"),
    ],
)
def test_bad_external_data_is_a_format_error(
    tmp_path: Path, key: str, value: str, message: str
) -> None:
    save_external(affine_model(np.zeros((3, 4), np.float32)), tmp_path / "m.onnx")
    (tmp_path.parent / "outside.bin").write_bytes(b"\0" * 64)
    _tamper(tmp_path / "m.onnx", key, value)
    with pytest.raises(FormatError, match=message):
        tl.load(tmp_path / "m.onnx")


def test_external_data_without_a_folder_is_explained(tmp_path: Path) -> None:
    save_external(affine_model(np.zeros((3, 4), np.float32)), tmp_path / "m.onnx")
    proto = onnx.load(tmp_path / "m.onnx", load_external_data=False)
    with pytest.raises(FormatError, match="load the model from its path"):
        tl.load(proto)


def test_an_input_with_an_initializer_is_read_as_a_constant() -> None:
    g = h.make_graph(
        [h.make_node("Reshape", ["x", "shape"], ["y"])],
        "g",
        [vi("x", shape=[2, 3]), vi("shape", TensorProto.INT64, [2])],
        [vi("y", shape=[3, 2])],
        initializer=[numpy_helper.from_array(np.array([3, 2], np.int64), "shape")],
    )
    model = tl.load(h.make_model(g, opset_imports=OPSET))
    assert model.input_names == ["x"]
    assert str(model.outputs[0].type) == "f32[3,2]"  # the shape is known while typing


def test_model_local_functions_are_inlined() -> None:
    fn = h.make_function(
        "my.lib", "Square", ["a"], ["b"], [h.make_node("Mul", ["a", "a"], ["b"])], OPSET
    )
    g = h.make_graph(
        [h.make_node("Square", ["x"], ["y"], domain="my.lib")], "g", [vi("x", shape=[3])],
        [vi("y", shape=[3])],
    )  # fmt: skip
    m = h.make_model(g, opset_imports=[*OPSET, h.make_opsetid("my.lib", 1)], functions=[fn])
    x = np.array([1, 2, 3], np.float32)
    np.testing.assert_array_equal(tl.load(m).run({"x": x})["y"], x * x)


def test_values_keep_their_onnx_names() -> None:
    g = h.make_graph(
        [h.make_node("Relu", ["x"], ["hidden"]), h.make_node("Neg", ["hidden"], ["y"])],
        "g", [vi("x", shape=[2])], [vi("y", shape=[2])],
    )  # fmt: skip
    model = tl.load(h.make_model(g, opset_imports=OPSET))
    out = model.run({"x": np.array([-1, 2], np.float32)}, trace=["hidden"])
    assert out.trace["hidden"][0].value.tolist() == [0, 2]


def test_an_output_that_is_an_input_gets_a_name_of_its_own() -> None:
    """ONNX lets a graph output be an input; tensorloop's values have unique names, so the
    output is an Identity named after the input with a suffix, in the output's position."""
    g = h.make_graph([], "g", [vi("x", shape=[2])], [vi("x", shape=[2])])
    model = tl.load(h.make_model(g, opset_imports=OPSET))
    assert model.input_names == ["x"] and model.output_names == ["x_0"]
    assert model.run({"x": np.array([1, 2], np.float32)})["x_0"].tolist() == [1, 2]


def test_declared_output_type_must_agree() -> None:
    g = h.make_graph(
        [h.make_node("Relu", ["x"], ["y"])],
        "g",
        [vi("x", shape=[2])],
        [vi("y", TensorProto.INT64, [2])],
    )
    with pytest.raises(FormatError, match=r"output 'y'.*declared i64\[2\], computed f32\[2\]"):
        tl.load(h.make_model(g, opset_imports=OPSET))


def test_a_type_error_names_the_node() -> None:
    g = h.make_graph(
        [h.make_node("Add", ["x", "n"], ["y"], name="bad_add")],
        "g", [vi("x", shape=[2]), vi("n", TensorProto.INT64, [2])], [vi("y", shape=[2])],
    )  # fmt: skip
    with pytest.raises(FormatError, match=r"node 'bad_add' \(Add\).*share one element type"):
        tl.load(h.make_model(g, opset_imports=OPSET))


def test_not_an_onnx_file(tmp_path: Path) -> None:
    path = tmp_path / "junk.onnx"
    path.write_bytes(b"\x08\x07 definitely not protobuf \xff\xff")
    with pytest.raises(FormatError, match=r"junk\.onnx"):
        tl.load(path)


def test_missing_file() -> None:
    with pytest.raises(FormatError, match="no such file"):
        tl.load("/nonexistent/model.onnx")


def test_old_opset_adapters() -> None:
    """Attributes that later became inputs are read from older opsets."""
    g = h.make_graph(
        [
            h.make_node("Unsqueeze", ["x"], ["u"], axes=[0]),
            h.make_node("Split", ["u"], ["a", "b"], axis=2),
            h.make_node("Squeeze", ["a"], ["s"], axes=[0]),
            h.make_node("Slice", ["s"], ["y"], starts=[1], ends=[100], axes=[0]),
            h.make_node("Pad", ["b"], ["p"], pads=[0, 1, 0, 0, 0, 0], value=9.0),
        ],
        "g",
        [vi("x", shape=[3, 4])],
        [vi("y", shape=[2, 2]), vi("p", shape=[1, 4, 2])],
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 9)])
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    out = tl.load(m).run({"x": x})
    np.testing.assert_array_equal(out["y"], x[1:, :2])
    assert out["p"].shape == (1, 4, 2) and out["p"][0, 0].tolist() == [9, 9]


def test_symbolic_dim_names_from_exporters_are_read() -> None:
    """TorchScript writes dims such as 'Loopx.4_dim_0'; they become word-character symbols."""
    g = h.make_graph(
        [h.make_node("Relu", ["x"], ["y"])],
        "g",
        [vi("x", shape=["Loopx.4_dim_0", "batch size"])],
        [vi("y", shape=["Loopx.4_dim_0", "batch size"])],
    )
    model = tl.load(h.make_model(g, opset_imports=OPSET))
    assert str(model.inputs[0].type) == "f32[Loopx_4_dim_0,batch_size]"
    assert model.run({"x": -np.ones((2, 3), np.float32)})["y"].shape == (2, 3)


def test_every_reading_family_is_listed_once() -> None:
    """convert.READ_FAMILIES is the one list of converter modules: each read_<family>.py of the
    package is in it once, and it names no other module."""
    from tensorloop.formats.onnx import convert

    package = Path(convert.__file__).parent
    modules = sorted(p.stem for p in package.glob("read_*.py"))
    assert sorted(convert.READ_FAMILIES) == modules
    assert len(set(convert.READ_FAMILIES)) == len(convert.READ_FAMILIES)
    assert not list(package.glob("ops_*.py")) and not list(package.glob("export*.py"))


@pytest.mark.parametrize(
    ("domain", "op_type", "opset", "module"),
    [
        ("", "Constant", 1, "convert"),
        ("", "Squeeze", 11, "read_shape"),
        ("", "ReduceMean", 13, "read_reduce"),
        ("", "Softmax", 11, "read_reduce"),
        ("", "Clip", 6, "read_math"),
        ("", "Dropout", 10, "read_nn"),
        ("ai.onnx.preview", "FlexAttention", 1, "read_nn"),
        ("", "Upsample", 9, "read_image"),
        ("", "TopK", 1, "read_indexing"),
        ("", "DFT", 17, "read_signal"),
        ("ai.onnx.ml", "LabelEncoder", 1, "read_strings"),
        ("", "Loop", 21, "read_control"),
        ("", "LSTM", 21, "read_rnn"),
        ("", "SequenceMap", 21, "read_sequence"),
    ],
)
def test_converters_live_in_their_family(
    domain: str, op_type: str, opset: int, module: str
) -> None:
    from tensorloop.formats.onnx.convert import find_converter

    fn = find_converter(domain, op_type, opset)
    assert fn is not None and fn.__module__ == f"tensorloop.formats.onnx.{module}"


def test_a_declared_output_rank_is_a_hint_as_onnxruntime_reads_it() -> None:
    # As a shipped OCR model declares its [steps, 1, classes] output: [1, seqlen].
    g = h.make_graph(
        [h.make_node("Unsqueeze", ["x", "axes"], ["y"])],
        "g",
        [vi("x", shape=[3, 4])],
        [vi("y", shape=[1, "seqlen"])],
        [h.make_tensor("axes", TensorProto.INT64, [1], [1])],
    )
    model = tl.load(h.make_model(g, opset_imports=OPSET))
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(model.run({"x": x})["y"], x[:, None, :])
