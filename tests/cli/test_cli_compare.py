"""``tensorloop compare``: every runtime on the same inputs, through click's runner, real files."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

import tensorloop as tl
from tensorloop.backends import base
from tensorloop.backends.base import get_backend
from tensorloop.cli import main
from tensorloop.errors import ExecutionError, InputError
from tensorloop.tools.compare import InputSpec, compare, difference, make_inputs, parse_runtimes

DATA = Path(__file__).resolve().parents[1] / "data"
LSTM = str(DATA / "torch_lstm_gru_torchscript.onnx")  # input x: f32[batch,time,8]
IR = DATA / "openvino_converted"


def invoke(*args: str) -> Any:
    return CliRunner().invoke(main, list(args))


def loop_model(folder: Path, suffix: str = ".onnx") -> str:
    """A scan (h = tanh(0.5 h + x), every h stacked) saved as ``model<suffix>``."""
    xs = tl.placeholder("float32", ("T", 3), name="xs")
    h0 = tl.placeholder("float32", (3,), name="h0")

    def step(h: Any, x: Any) -> Any:
        new = tl.tanh(h * 0.5 + x)
        return new, new

    h, ys = tl.scan(step, h0, xs)
    path = folder / f"model{suffix}"
    tl.save(tl.Model({"h": h, "ys": ys}), path)
    return str(path)


def ir_inputs(folder: Path, name: str) -> tuple[str, str]:
    """The IR file and an .npz of its first recorded inputs, keyed by input name."""
    with np.load(IR / f"{name}.npz") as npz:
        feeds = {k.split(":")[2]: npz[k] for k in npz.files if k.startswith("in:0:")}
    path = folder / f"{name}_inputs.npz"
    np.savez(path, **feeds)
    return str(IR / f"{name}.xml"), str(path)


class _Tampered:
    """The reference backend with its outputs changed after the run (``mode``): the first one
    shifted by 1e-3, the last one cut to its first row, or the run raising."""

    name = "tampered"

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.inner = get_backend("reference")

    def prepare(self, graph: tl.Graph, input_types: Any = None) -> Any:
        inner, mode = self.inner.prepare(graph, input_types), self.mode

        class Run:
            def run(self, args: Sequence[Any], state: Any) -> list[Any]:
                if mode == "raise":
                    raise ExecutionError("tampered: no result")
                outs = list(inner.run(args, state))
                outs[0] = outs[0] + np.float32(1e-3)
                outs[-1] = outs[-1][:1]
                return outs

        return Run()

    def evaluate(self, node: tl.Node, inputs: Sequence[Any]) -> list[Any]:
        return self.inner.evaluate(node, inputs)


@pytest.fixture
def tampered(monkeypatch: pytest.MonkeyPatch) -> Any:
    """``tampered(mode)`` registers backend 'tampered' for the one test."""
    monkeypatch.setattr(base, "_INSTANCES", dict(base._INSTANCES))
    monkeypatch.setattr(base, "_FACTORIES", dict(base._FACTORIES))
    return lambda mode: base.register_backend("tampered", lambda: _Tampered(mode))


@pytest.mark.handoff("the jax runtime runs the LSTM's dynamic shapes on the compiled backend")
def test_exporter_model_agrees_on_every_runtime() -> None:
    result = invoke("compare", LSTM, "--random-inputs", "--input-shape", "x:2,3,8")
    assert result.exit_code == 0, result.output
    out = result.output
    assert "compared with tensorloop-reference" in out and "x float32[2,3,8]" in out
    for runtime in ("tensorloop-compiled", "onnxruntime", "openvino"):
        assert runtime in out
    assert "PASS" in out and "FAIL" not in out


def test_json_gives_every_output_of_every_runtime() -> None:
    runtimes = "tensorloop-reference,compiled,ort,ov"
    args = ["compare", LSTM, "--backends", runtimes, "--random-inputs", "--seed", "3"]
    result = invoke(*args, "--input-shape", "x:1,4,8", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["ok"] is True and report["reference"] == "tensorloop-reference"
    assert report["ran"] == [
        "tensorloop-reference",
        "tensorloop-compiled",
        "onnxruntime",
        "openvino",
    ]
    assert report["inputs"] == {"x": {"dtype": "float32", "shape": "[1,4,8]"}}
    rows = report["outputs"]
    assert len(rows) == 3 * 2  # three runtimes against the reference, two outputs each
    for row in rows:
        assert row["within_tolerance"] and row["problem"] is None
        assert row["dtype"] == row["expected_dtype"] == "float32"
        assert row["shape"] == row["expected_shape"]
        assert 0 <= row["max_abs"] < 1e-5
    assert {r["shape"] for r in rows} == {"[1,4,8]", "[4,1,16]"}


def test_tolerance_zero_fails_on_openvino_f32_rounding(tmp_path: Path) -> None:
    """OpenVINO's port of a torch-converted IR carries no name: outputs pair up by position,
    and its f32 rounding differs from NumPy's in the last bit."""
    xml, inputs = ir_inputs(tmp_path, "recurrence_torch")
    args = ["compare", xml, "--inputs", inputs, "--backends", "reference,openvino"]
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    assert "#0 (by position)" in result.output
    assert "skipped" not in result.output  # onnxruntime not asked for
    exact = invoke(*args, "--rtol", "0", "--atol", "0", "--json")
    assert exact.exit_code == 1, exact.output
    report = json.loads(exact.output)
    assert report["ok"] is False
    assert [r["matched_as"] for r in report["outputs"]] == ["#0 (by position)", "#1 (by position)"]
    assert any(not r["within_tolerance"] and r["max_abs"] > 0 for r in report["outputs"])
    text = invoke(*args, "--rtol", "0", "--atol", "0")
    assert text.exit_code == 1 and "FAIL: " in text.output


def test_onnxruntime_is_skipped_for_an_ir_file(tmp_path: Path) -> None:
    xml, inputs = ir_inputs(tmp_path, "early_break_onnx")
    result = invoke("compare", xml, "--inputs", inputs, "--backends", "reference,ort,compiled,ov")
    assert result.exit_code == 0, result.output
    assert "skipped onnxruntime: onnxruntime reads .onnx files only" in result.output
    assert "count.16" in result.output  # matched by name


def test_altered_outputs_fail_with_their_difference_and_shape(
    tmp_path: Path, tampered: Any
) -> None:
    tampered("shift")
    model = loop_model(tmp_path)
    args = ["compare", model, "--random-inputs", "--input-shape", "xs:4,3"]
    result = invoke(*args, "--backends", "reference,tampered,onnxruntime", "--json")
    assert result.exit_code == 1, result.output
    rows = {(r["runtime"], r["output"]): r for r in json.loads(result.output)["outputs"]}
    shifted = rows["tensorloop-tampered", "h"]
    assert not shifted["within_tolerance"] and shifted["max_abs"] == pytest.approx(1e-3, rel=1e-2)
    cut = rows["tensorloop-tampered", "ys"]
    assert cut["problem"] == "shape [1,3], expected [4,3]" and cut["max_abs"] is None
    assert rows["onnxruntime", "h"]["within_tolerance"]
    loose = invoke(*args, "--backends", "reference,tampered", "--atol", "0.01")
    assert loose.exit_code == 1 and "shape [1,3], expected [4,3]" in loose.output


def test_a_runtime_that_fails_to_run_fails_the_comparison(tmp_path: Path, tampered: Any) -> None:
    tampered("raise")
    model = loop_model(tmp_path, ".tl")
    result = invoke("compare", model, "--backends", "reference,compiled,tampered,ort", "-i",
                    "xs=[[1,2,3]]", "-i", "h0=[0,0,0]")  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "FAILED tensorloop-tampered: ExecutionError: tampered: no result" in result.output
    assert "skipped onnxruntime: onnxruntime reads .onnx files only" in result.output


def test_only_one_runtime_is_nothing_to_compare(tmp_path: Path) -> None:
    model = loop_model(tmp_path, ".tl")
    result = invoke("compare", model, "--backends", "compiled,ov", "--random-inputs",
                    "--input-shape", "xs:2,3")  # fmt: skip
    assert result.exit_code == 1
    assert "skipped openvino" in result.output and "nothing to compare" in result.output


def test_a_dimension_not_fixed_needs_a_shape() -> None:
    result = invoke("compare", LSTM, "--random-inputs", "--backends", "reference,ort")
    assert result.exit_code == 1
    assert result.output.startswith("error: InputError: input 'x' is float32[batch,time,8]")
    assert "give one with --input-shape x:D1,D2,..." in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "missing input(s) xs, h0; give them with --input or --inputs"),
        (["--random-inputs", "--input-shape", "y:1,2"], "model has no input 'y'"),
        (["--random-inputs", "--input-shape", "xs:2,4"], "shape [2,4] does not fit it"),
        (["--random-inputs", "--input-shape", "xs:1,b"], "dimensions must be integers"),
        (["--backends", "reference,tensorflow"], "unknown runtime 'tensorflow'"),
        (["-i", "q=[1]"], "model has no input 'q'"),
        (["-i", "xs=[1"], "'[1' is neither a .npy file nor JSON"),
        (["-i", "xs=nowhere.npy"], "input 'xs': nowhere.npy: no such file"),
    ],
)
def test_input_mistakes_end_in_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    result = invoke("compare", loop_model(tmp_path), *args)
    assert result.exit_code != 0
    assert message in result.output, result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1


def test_a_broken_inputs_file_ends_in_one_line(tmp_path: Path) -> None:
    good = tmp_path / "good.npz"
    np.savez(good, xs=np.zeros((2, 3), np.float32), h0=np.zeros(3, np.float32))
    model = loop_model(tmp_path)
    assert invoke("compare", model, "--inputs", str(good)).exit_code == 0
    broken = tmp_path / "broken.npz"
    broken.write_bytes(good.read_bytes()[:40])
    result = invoke("compare", model, "--inputs", str(broken))
    assert result.exit_code == 1
    assert "broken.npz: not a readable .npz file" in result.output
    assert "Traceback" not in result.output
    result = invoke("compare", model, "--inputs", model)
    assert result.exit_code == 1 and "model.onnx: not a readable .npz file" in result.output


def test_the_python_api() -> None:
    c = compare(LSTM, ["reference", "onnxruntime"], {"x": np.ones((1, 2, 8), np.float32)})
    assert c.ok and c.ran == ["tensorloop-reference", "onnxruntime"]
    assert parse_runtimes("ov, jax") == ["openvino", "tensorloop-jax"]
    assert difference(np.float32([1, np.nan]), np.float32([1, np.nan]), 0, 0) == (0, 0, None, True)
    _, rel, _, ok = difference(np.float32([0, 1]), np.float32([0, 0]), 0, 0.5)
    assert rel == np.inf and not ok
    assert difference([np.zeros(2)], [np.zeros(3)], 1, 1)[2] == "element 0: shape [2], expected [3]"
    assert c.diffs[0].runtime == "onnxruntime"
    f32 = np.dtype(np.float32)
    specs = [InputSpec(("a", "A"), f32, ("T", 3)), InputSpec(("b",), f32, ("T", "?"))]
    feeds = make_inputs(specs, {"A": [[1, 2, 3]] * 4}, random=True, shapes={"b": (4, 2)})
    assert feeds["a"].dtype == f32 and feeds["b"].shape == (4, 2)
    feeds = make_inputs(specs[:1], random=True, shapes={"A": (5, 3)}, seed=1)
    assert feeds["a"].shape == (5, 3)
    with pytest.raises(InputError, match="input 'b' is float32\\[T,\\?\\], not a fixed shape"):
        make_inputs(specs, {"a": np.zeros((4, 3), f32)}, random=True)
