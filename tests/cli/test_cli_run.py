"""``tensorloop run`` through click's runner: inputs from files, JSON and random data with
given shapes, output statistics, per-loop counts, JSON, saving, and one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner, Result
from rich.console import Console

import tensorloop as tl
from tensorloop.cli import main
from tensorloop.cli import run as run_module

F32 = "float32"
ROOT = Path(__file__).resolve().parents[2]
RNN = str(ROOT / "examples" / "rnn.tl")
INPUTS = str(ROOT / "examples" / "rnn_inputs.npz")
LSTM = str(ROOT / "tests" / "data" / "torch_lstm_gru_torchscript.onnx")
OV = ROOT / "tests" / "data" / "openvino_converted"


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def assert_error(result: Result, message: str, code: int = 1) -> None:
    """One ``error:`` line naming ``message``, no traceback, a non-zero exit."""
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert message in lines[0], lines[0]


def geometric(tmp_path: Path) -> str:
    """A while loop built in the test: s <- 2 s until s passes the limit."""
    s0 = tl.placeholder(F32, [], name="s0")
    limit = tl.placeholder(F32, [], name="limit")
    final = tl.while_loop(lambda s: s < limit, lambda s: s * 2.0, s0)
    path = tmp_path / "geometric.tl"
    tl.save(tl.Model({"s": final}), path)
    return str(path)


def test_outputs_table_statistics_loops_and_timing(tmp_path: Path) -> None:
    result = invoke("run", RNN, "--inputs", INPUTS, "--loops")
    assert result.exit_code == 0, result.output
    out = result.output
    for column in ("output", "dtype", "shape", "min", "max", "mean", "NaN", "Inf", "preview"):
        assert column in out
    data = json.loads(invoke("run", RNN, "--inputs", INPUTS, "--json").output)
    steps = int(data["outputs"][3]["min"])
    assert "loop scan: 6 iterations over 1 run" in out
    assert f"loop while: {steps} iterations over 1 run" in out
    assert "ran in" in out
    # piped output is never wrapped at 80 columns: the table keeps each row on one line
    assert max(len(line) for line in out.splitlines()) > 100
    assert sum("decode_steps" in line for line in out.splitlines()) == 1


def test_loops_counted_in_a_model_built_here(tmp_path: Path) -> None:
    model = geometric(tmp_path)
    result = invoke("run", model, "-i", "s0=1", "-i", "limit=1000", "--loops", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["outputs"][0]["max"] == 1024.0
    assert [loop["iterations"] for loop in data["loops"]] == [10]
    assert data["time"]["run_s"] > 0


def test_json_lists_outputs_with_statistics() -> None:
    result = invoke("run", RNN, "--inputs", INPUTS, "--json", "--outputs", "decoded,decode_steps")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert [o["name"] for o in data["outputs"]] == ["decoded", "decode_steps"]
    decoded = data["outputs"][0]
    assert decoded["dtype"] == "f32" and decoded["shape"] == [8]
    assert decoded["min"] <= decoded["mean"] <= decoded["max"]
    assert decoded["nan"] == decoded["inf"] == 0
    assert [i["name"] for i in data["inputs"]] == ["xs", "h0", "threshold"]


def test_nan_and_inf_are_counted() -> None:
    stats = run_module.output_stats("y", np.array([1.0, np.nan, np.inf, -np.inf, 3.0], np.float32))
    assert (stats["nan"], stats["inf"], stats["min"], stats["max"]) == (1, 2, 1.0, 3.0)
    assert run_module.output_stats("s", [np.zeros(2)])["dtype"] == "sequence"


def test_random_inputs_need_dynamic_dims_and_take_shapes(tmp_path: Path) -> None:
    assert_error(invoke("run", LSTM, "--random-inputs"), "dim 0 ('batch') is dynamic")
    saved = tmp_path / "in.npz"
    args = ["run", LSTM, "--random-inputs", "--seed", "4", "--input-shape", "x:2,5,8"]
    first = invoke(*args, "--save-inputs", str(saved), "--json")
    assert first.exit_code == 0, first.output
    with np.load(saved) as f:
        assert f["x"].shape == (2, 5, 8) and f["x"].dtype == np.float32
    again = invoke("run", LSTM, "--inputs", str(saved), "--json")
    assert json.loads(again.output)["outputs"] == json.loads(first.output)["outputs"]
    assert json.loads(first.output)["outputs"][0]["shape"] == [2, 5, 8]
    assert_error(invoke(*args[:-2], "--input-shape", "x:2,5"), "does not fit")
    assert_error(invoke(*args[:-2], "--input-shape", "x:2,5,7"), "does not fit")
    assert_error(invoke(*args[:-2], "--input-shape", "y:2"), "model has no input 'y'")


def test_a_symbol_bound_by_one_input_sizes_another(tmp_path: Path) -> None:
    x = tl.placeholder(F32, ["n", 3], name="x")
    y = tl.placeholder(F32, ["n"], name="y")
    path = tmp_path / "m.tl"
    tl.save(tl.Model({"z": tl.reduce_sum(x, axes=[1]) + y}), path)
    result = invoke("run", str(path), "--random-inputs", "--input-shape", "x:4,3", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["outputs"][0]["shape"] == [4]


def test_openvino_ir_runs_on_its_recorded_inputs(tmp_path: Path) -> None:
    with np.load(OV / "recurrence_onnx.npz") as f:
        np.save(tmp_path / "xs.npy", f["in:0:xs"])
        np.save(tmp_path / "h.npy", f["in:0:h"])
        want = f["out:0:0"]
    out = tmp_path / "out"
    xml = str(OV / "recurrence_onnx.xml")
    result = invoke(
        "run", xml, "-i", f"xs={tmp_path / 'xs.npy'}", "-i", f"h={tmp_path / 'h.npy'}",
        "--save-outputs", str(out), "--quiet",
    )  # fmt: skip
    assert result.exit_code == 0 and result.output == ""
    model = tl.load(xml)
    saved = out / f"{model.output_names[0].replace('/', '_')}.npy"
    assert len(list(out.iterdir())) == 2
    np.testing.assert_allclose(np.load(saved), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--outputs", "nope"], "model has no output 'nope'"),
        (["--input-shape", "xs:6,4"], "add --random-inputs"),
        (["-i", "xs=nothing.npy"], "input 'xs': nothing.npy: no such file"),
        (["-i", "xs={bad"], "neither a .npy file nor JSON"),
        (["--max-iterations", "3"], "LoopLimitError"),
        (["--trace", "nothing"], "cannot trace nothing"),
        (["--trace", "nothing", "--loops"], "cannot trace nothing"),
    ],
)
def test_run_errors_are_one_line(args: list[str], message: str) -> None:
    assert_error(invoke("run", RNN, "--inputs", INPUTS, *args), message)


def test_damaged_input_files_are_one_line(tmp_path: Path) -> None:
    whole = tmp_path / "whole.npz"
    with np.load(INPUTS) as f:
        np.savez(whole, **{k: f[k] for k in f.files})
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    assert_error(invoke("run", RNN, "--inputs", str(truncated)), f"--inputs {truncated}")
    text = tmp_path / "text.npz"
    text.write_text("not numpy")
    assert_error(invoke("run", RNN, "--inputs", str(text)), "not a readable .npz file")
    one = tmp_path / "one.npy"
    np.save(one, np.zeros(3, np.float32))
    assert_error(invoke("run", RNN, "--inputs", str(one)), "a .npy file holds one array")
    bad = tmp_path / "bad.npy"
    bad.write_bytes(b"\x93NUMPY garbage")
    assert_error(invoke("run", RNN, "-i", f"xs={bad}"), "not a readable .npy file")
    pickled = tmp_path / "obj.npy"
    np.save(pickled, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    assert_error(invoke("run", RNN, "-i", f"xs={pickled}"), "not a readable .npy file")


def test_unwritable_output_paths_are_one_line(tmp_path: Path) -> None:
    a_file = tmp_path / "f.txt"
    a_file.write_text("x")
    assert_error(
        invoke("run", RNN, "--inputs", INPUTS, "--save-outputs", str(a_file)), "not a folder"
    )
    assert_error(
        invoke("run", RNN, "--inputs", INPUTS, "--save-outputs", str(a_file / "sub")),
        "cannot make the folder",
    )
    assert_error(
        invoke("run", RNN, "--inputs", INPUTS, "--save-inputs", "/nonexistent/in.npz"),
        "no such folder /nonexistent",
    )


def test_progress_view_shows_loop_and_rate_after_a_moment() -> None:
    watch = run_module.LoopCounter()
    view = run_module._ProgressView(watch)
    console = Console(record=True, width=120)
    console.print(view)
    assert console.export_text().strip() == ""  # a short run shows nothing
    view.start -= 2 * run_module.PROGRESS_AFTER
    watch.on_iteration(("outer", "inner"), 0)
    watch.on_iteration(("outer", "inner"), 1)
    console.print(view)
    text = console.export_text()
    assert "loop outer > inner: 2 iterations" in text and "it/s" in text
    assert watch.loops[("outer", "inner")].runs == 1


def test_loops_counts_every_run_of_a_nested_loop_and_leaves_the_model_as_it_was(
    tmp_path: Path,
) -> None:
    xs = tl.placeholder(F32, (3, 4), name="xs")

    def outer(c: tl.Tensor, row: tl.Tensor) -> tuple[tl.Tensor, tl.Tensor]:
        def inner(c2: tl.Tensor, v: tl.Tensor) -> tuple[tl.Tensor, tl.Tensor]:
            return c2 + v, v

        c2, _ = tl.scan(inner, tl.constant(np.float32(0)), row)
        return c + c2, c2

    c, _ = tl.scan(outer, tl.constant(np.float32(0)), xs)
    path = tmp_path / "nested.tl"
    tl.save(tl.Model({"c": c}), path)
    before = path.read_text()
    result = invoke("run", str(path), "-i", f"xs={np.ones((3, 4)).tolist()}", "--loops", "--json")
    assert result.exit_code == 0, result.output
    loops = json.loads(result.output)["loops"]
    assert [(loop["iterations"], loop["runs"]) for loop in loops] == [(3, 1), (12, 3)]
    assert loops[1]["path"].startswith(loops[0]["path"] + " > ")
    assert all(loop["seconds"] > 0 for loop in loops)
    assert path.read_text() == before


def test_python_dash_m_runs_the_cli() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tensorloop", "run", "-h"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0 and "--random-inputs" in done.stdout


def test_a_run_has_a_deadline_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    from tensorloop.cli.common import DEFAULT_TIMEOUT

    seen: list[tl.Limits] = []
    real = run_module.load_model

    def spy(path: str, limits: tl.Limits | None = None, backend: str = "compiled") -> tl.Model:
        assert limits is not None
        seen.append(limits)
        return real(path, limits, backend)

    monkeypatch.setattr(run_module, "load_model", spy)
    assert invoke("run", RNN, "--inputs", INPUTS, "-q").exit_code == 0
    assert invoke("run", RNN, "--inputs", INPUTS, "-q", "--timeout", "none").exit_code == 0
    assert [limits.timeout for limits in seen] == [DEFAULT_TIMEOUT, None]
    assert "[default: 600.0]" in " ".join(invoke("run", "--help").output.split())


def test_an_endless_loop_stops_at_the_timeout_in_one_line() -> None:
    endless = str(ROOT / "tests" / "data" / "hostile" / "onnx_loop_endless.onnx")
    result = invoke("run", endless, "--random-inputs", "--timeout", "0.3")
    assert_error(result, "RunTimeoutError: Loop: the run was still going when its timeout of 0.3 s")
    bad = invoke("run", endless, "--random-inputs", "--timeout", "-1")
    assert bad.exit_code == 2 and "give seconds > 0, or 'none'" in bad.output
