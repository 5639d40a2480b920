"""tl.load / tl.save: text IR files, and clear errors for bad files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import tensorloop as tl


@pytest.fixture(autouse=True)
def _fresh_builder() -> None:
    tl.reset()


def _model() -> tl.Model:
    x = tl.placeholder("float32", ("N", 3), name="x")
    h = tl.persistent_tensor(np.zeros(3, np.float32), name="h")
    s, ys = tl.scan(lambda c, r: (c + r, c * r), h, x)
    tl.assign(h, s)
    return tl.Model({"s": s, "ys": ys})


def test_save_load_round_trip_keeps_behaviour_and_state(tmp_path: Path) -> None:
    model = _model()
    path = tmp_path / "m.tl"
    tl.save(model, path)
    loaded = tl.load(path)
    assert loaded.input_names == ["x"] and loaded.output_names == ["s", "ys"]
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    for _ in range(2):  # the second run starts from the state the first one stored
        a, b = model.run({"x": x}), loaded.run({"x": x})
        for k in a:
            np.testing.assert_array_equal(a[k], b[k])
    np.testing.assert_array_equal(loaded.state["h"], 2 * x.sum(axis=0))
    assert str(loaded) == str(model)


def test_load_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(tl.FormatError, match="no such file"):
        tl.load(tmp_path / "missing.tl")
    broken = tmp_path / "broken.tl"
    broken.write_text("graph @g(%x: f32[3]) {\n  %y = Neg(%x : f32[3]\n}")
    with pytest.raises(tl.ParseError, match=r"broken\.tl: line 2"):
        tl.load(broken)
    wrong = tmp_path / "wrong.tl"
    wrong.write_text("graph @g(%x: f32[3]) {\n  %y = Neg(%x) : f32[4]\n  return %y\n}")
    with pytest.raises(
        tl.VerificationError, match=r"(?s)wrong\.tl.*Neg.*typed f32\[4\], the op yields f32\[3\]"
    ):
        tl.load(wrong)
    with pytest.raises(tl.FormatError, match=r"unknown model format '\.bin'"):
        tl.load(tmp_path / "x.bin")
    with pytest.raises(tl.FormatError, match=r"x\.onnx: .*an ONNX model keeps no state"):
        tl.save(_model(), tmp_path / "x.onnx")


def test_error_hierarchy() -> None:
    for cls in (
        tl.GraphError,
        tl.VerificationError,
        tl.ShapeInferenceError,
        tl.ParseError,
        tl.FormatError,
        tl.ExecutionError,
        tl.InputError,
        tl.LoopLimitError,
        tl.UnsupportedOpError,
    ):
        assert issubclass(cls, tl.TensorloopError)
    assert issubclass(tl.LoopLimitError, tl.ExecutionError)


def test_public_api_is_exported() -> None:
    missing = [name for name in tl.__all__ if not hasattr(tl, name)]
    assert missing == []
    for name in (
        "Model",
        "load",
        "save",
        "scan",
        "while_loop",
        "fori_loop",
        "cond",
        "placeholder",
        "constant",
        "persistent_tensor",
        "variable",
        "assign",
        "matmul",
        "tanh",
    ):
        assert name in tl.__all__
