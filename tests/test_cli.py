"""The command line, driven through click's runner on the bundled example and on bad input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import tensorloop as tl
from tensorloop.cli import main

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
RNN = str(EXAMPLES / "rnn.tl")
INPUTS = str(EXAMPLES / "rnn_inputs.npz")


def _expected_rnn() -> dict[str, np.ndarray]:
    """The example's semantics in plain NumPy, with weights read from its own constants."""
    model = tl.load(RNN)
    # Constants are copied into the bodies that use them, under their names (maybe suffixed).
    consts = {
        n.outputs[0].name.split("_")[0]: n.attrs["value"]
        for _, n in model.graph.walk()
        if n.op == "Constant"
    }
    W, U, V = consts["W"], consts["U"], consts["V"]
    with np.load(INPUTS) as f:
        xs, h, threshold = f["xs"], f["h0"], f["threshold"]
    states = []
    for x in xs:
        h = np.tanh(x @ W + h @ U)
        states.append(h)
    y, steps, norm = h, 0, np.sqrt(np.sum(h * h))
    while steps < 10 and norm > threshold:
        y = np.tanh(y @ V) * np.float32(0.8)
        steps, norm = steps + 1, np.sqrt(np.sum(y * y))
    return {"encoded": h, "states": np.stack(states), "decoded": y, "decode_steps": steps}


def test_run_bundled_example(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main,
        ["run", RNN, "--inputs", INPUTS, "--trace", "step_norm", "--save-outputs", str(tmp_path)],
    )
    assert result.exit_code == 0, result.output
    assert "decode_steps" in result.output and "trace of %step_norm" in result.output
    expected = _expected_rnn()
    for name, value in expected.items():
        np.testing.assert_allclose(np.load(tmp_path / f"{name}.npy"), value, rtol=1e-5, atol=1e-6)
    assert 0 < expected["decode_steps"] < 10  # the example does stop early


def test_run_on_a_named_backend(tmp_path: Path) -> None:
    args = ["run", RNN, "--inputs", INPUTS, "--save-outputs", str(tmp_path)]
    result = CliRunner().invoke(main, [*args, "--backend", "reference"])
    assert result.exit_code == 0, result.output
    np.testing.assert_allclose(
        np.load(tmp_path / "decoded.npy"), _expected_rnn()["decoded"], rtol=1e-5, atol=1e-6
    )
    bad = CliRunner().invoke(main, [*args, "--backend", "nope"])
    assert bad.exit_code == 2 and "Invalid value for '--backend': 'nope'" in bad.output


def test_run_with_npy_and_json_inputs(tmp_path: Path) -> None:
    with np.load(INPUTS) as f:
        np.save(tmp_path / "xs.npy", f["xs"])
    args = [
        "run",
        RNN,
        "-i",
        f"xs={tmp_path / 'xs.npy'}",
        "-i",
        "h0=[0,0,0,0,0,0,0,0]",
        "-i",
        "threshold=0.2",
        "--save-outputs",
        str(tmp_path / "out"),
    ]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    np.testing.assert_allclose(
        np.load(tmp_path / "out" / "encoded.npy"), _expected_rnn()["encoded"], rtol=1e-5
    )


def test_run_random_inputs_and_inspect() -> None:
    runner = CliRunner()
    assert runner.invoke(main, ["run", RNN, "--random-inputs", "--seed", "3"]).exit_code == 0
    result = runner.invoke(main, ["inspect", RNN, "--ir"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "3 carried, 0 sliced, 1 invariant" in result.output
    assert "graph @rnn(" in result.output


def test_convert_round_trips(tmp_path: Path) -> None:
    out = tmp_path / "copy.tl"
    result = CliRunner().invoke(main, ["convert", RNN, str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_text() == Path(RNN).read_text()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-i", "nope=1"], "model has no input 'nope'"),
        (["-i", "xs"], "expected NAME=FILE.npy or NAME=JSON"),
        (["-i", "xs=[1,2]", "-i", "h0=[0]", "-i", "threshold=1"], "input 'xs': expected f32[6,4]"),
        (["-i", "h0=[0]"], "missing input(s) xs"),
        (["--inputs", INPUTS, "--max-iterations", "3"], "LoopLimitError"),
        (["--inputs", INPUTS, "--trace", "nothing"], "cannot trace nothing"),
    ],
)
def test_run_reports_bad_input(args: list[str], message: str) -> None:
    result = CliRunner().invoke(main, ["run", RNN, *args])
    assert result.exit_code != 0
    assert message in result.output
    assert "Traceback" not in result.output


def test_unknown_and_unreadable_formats(tmp_path: Path) -> None:
    bad = tmp_path / "m.pb"
    bad.write_text("x")
    result = CliRunner().invoke(main, ["inspect", str(bad)])
    assert result.exit_code != 0 and "unknown model format '.pb'" in result.output
    onnx = tmp_path / "m.onnx"
    onnx.write_text("x")
    result = CliRunner().invoke(main, ["run", str(onnx)])
    assert result.exit_code != 0 and "m.onnx: not a readable ONNX model" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("command", [[], ["run"], ["inspect"], ["convert"]])
def test_dash_h_is_help(command: list[str]) -> None:
    result = CliRunner().invoke(main, [*command, "-h"])
    assert result.exit_code == 0 and "Usage:" in result.output


def test_convert_to_a_missing_folder_is_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["convert", RNN, "/nonexistent/x.onnx"])
    assert result.exit_code == 1
    assert result.output == "error: cannot write /nonexistent/x.onnx: no such folder /nonexistent\n"
    result = CliRunner().invoke(main, ["convert", RNN, str(tmp_path)])
    assert result.exit_code != 0 and "Traceback" not in result.output


def test_usage_errors_are_one_line_and_debug_shows_the_error() -> None:
    result = CliRunner().invoke(main, ["run", RNN, "--nope"])
    assert result.exit_code == 2
    assert result.output.startswith("error: No such option '--nope'") and "run -h" in result.output
    result = CliRunner().invoke(main, ["--debug", "run", RNN, "-i", "h0=[0]"])
    assert result.exit_code == 1 and isinstance(result.exception, tl.errors.InputError)
