"""``tensorloop trace`` through click's runner: a 2000-iteration while loop (the table elided in
the middle, .npz/.csv/.png written) and the bidirectional LSTM exporter model (each of its loops
apart), and the errors a user meets."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import tensorloop as tl
from tensorloop.cli import main

DATA = Path(__file__).resolve().parents[1] / "data"
LSTM = str(DATA / "torch_lstm_gru_torchscript.onnx")
LSTM_ARGS = ["--random-inputs", "--input-shape", "x:2,5,8"]
TRIPS = 2000


@pytest.fixture(autouse=True)
def _fresh_builder() -> None:
    tl.reset()


@pytest.fixture
def while_model(tmp_path: Path) -> str:
    """``x_next = 0.999 x + 0.01`` for 2000 iterations of a while loop, saved as ONNX."""
    x = tl.placeholder("float32", (3,), name="x")

    def body(c: tuple[tl.Tensor, tl.Tensor]) -> tuple[tl.Tensor, tl.Tensor]:
        i, v = c
        return i + 1, tl.name(v * np.float32(0.999) + np.float32(0.01), "x_next")

    _, y = tl.while_loop(lambda c: c[0] < TRIPS, body, (tl.constant(np.int64(0)), x))
    path = tmp_path / "while.onnx"
    tl.save(tl.Model({"y": y}), path)
    return str(path)


def _expected_x_next(x: np.ndarray) -> np.ndarray:
    out, v = [], x
    for _ in range(TRIPS):
        v = v * np.float32(0.999) + np.float32(0.01)
        out.append(v)
    return np.stack(out)


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


def test_a_long_while_loop_prints_its_first_and_last_rows(while_model: str) -> None:
    code, out = _invoke("trace", while_model, "--value", "x_next", "-i", "x=[1,2,3]")
    assert code == 0, out
    assert f"%x_next in loop while: {TRIPS} values" in out
    assert f"… {TRIPS - 20} more …" in out
    assert len(out.splitlines()) < 40
    rows = [line.split("│")[1].strip() for line in out.splitlines() if line.startswith("│")]
    assert rows[:3] == ["0", "1", "2"] and rows[-1] == str(TRIPS - 1)


def test_npz_holds_the_values_stacked_with_their_iterations(
    while_model: str, tmp_path: Path
) -> None:
    target = tmp_path / "trace.npz"
    code, out = _invoke(
        "trace", while_model, "--value", "x_next", "-i", "x=[1,2,3]", "-o", str(target)
    )
    assert code == 0, out
    assert f"wrote {target}" in out
    with np.load(target) as npz:
        assert sorted(npz.files) == ["x_next@while", "x_next@while:iteration"]
        np.testing.assert_allclose(
            npz["x_next@while"], _expected_x_next(np.array([1, 2, 3], np.float32)), rtol=1e-5
        )
        assert npz["x_next@while:iteration"].tolist() == [[i] for i in range(TRIPS)]


def test_csv_keeps_the_chosen_iterations(while_model: str, tmp_path: Path) -> None:
    target = tmp_path / "trace.csv"
    args = ["--iterations", "100:1000", "--every", "100", "--random-inputs", "-o", str(target)]
    code, out = _invoke("trace", while_model, "--value", "x_next", *args)
    assert code == 0, out
    with open(target, newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["iteration"] for r in rows] == [str(i) for i in range(100, 1000, 100)]
    assert {r["loop"] for r in rows} == {"while"} and rows[0]["type"] == "float32[3]"
    first = float(rows[0]["max"])
    assert float(rows[0]["min"]) <= float(rows[0]["mean"]) <= first <= float(rows[0]["norm"])


def test_png_is_a_plot(while_model: str, tmp_path: Path) -> None:
    target = tmp_path / "trace.png"
    args = ["--stat", "norm,mean", "--random-inputs", "-o", str(target)]
    code, out = _invoke("trace", while_model, "--value", "x_next", *args)
    assert code == 0, out
    data = target.read_bytes()
    assert data.startswith(b"\x89PNG") and len(data) > 5000


def test_the_bidirectional_lstm_shows_each_loop_apart(tmp_path: Path) -> None:
    target = tmp_path / "lstm.npz"
    code, out = _invoke("trace", LSTM, "--value", "h", *LSTM_ARGS, "-o", str(target))
    assert code == 0, out
    loops = ["/lstm/LSTM.forward", "/lstm/LSTM.reverse", "/lstm/LSTM_1.forward"]
    loops += ["/lstm/LSTM_1.reverse", "/gru/GRU"]
    for loop in loops:
        assert f"%h in loop {loop}:" in out
    with np.load(target) as npz:
        assert sorted(k for k in npz.files if not k.endswith(":iteration")) == sorted(
            f"h@{loop}" for loop in loops
        )
        assert npz["h@/lstm/LSTM.reverse"].shape == (5, 2, 16)


def test_loop_picks_one_loop(tmp_path: Path) -> None:
    code, out = _invoke("trace", LSTM, "--value", "h,c", *LSTM_ARGS, "--loop", "/lstm/LSTM.reverse")
    assert code == 0, out
    assert "%h in loop /lstm/LSTM.reverse: 5 values" in out
    assert "%c in loop /lstm/LSTM.reverse: 5 values" in out
    assert "forward" not in out and "GRU" not in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--value", "h", "--loop", "nope"], "its loops are '/lstm/LSTM.forward'"),
        (["--value", "no_such_value"], "cannot trace no_such_value"),
        (["--value", "h", "-o", "trace.txt"], "write a trace to .npz, .csv or .png"),
        (["--value", "h", "--iterations", "a:b"], "START:STOP"),
        (["--value", "h", "--stat", "median"], "unknown statistic 'median'"),
        (["--value", "h", "--every", "0"], "every must be"),
    ],
)
def test_mistakes_end_in_one_line(args: list[str], message: str) -> None:
    code, out = _invoke("trace", LSTM, *LSTM_ARGS, *args)
    assert code != 0
    assert message in out and "Traceback" not in out
    assert len([line for line in out.splitlines() if line.startswith("error:")]) == 1


def test_a_dynamic_input_needs_a_shape() -> None:
    code, out = _invoke("trace", LSTM, "--value", "h", "--random-inputs")
    assert code == 1 and "--input-shape x:" in out


def test_loop_repeats_to_pick_several() -> None:
    picks = ["--loop", "/lstm/LSTM.forward", "--loop", "/lstm/LSTM_1.reverse"]
    code, out = _invoke("trace", LSTM, "--value", "h", *LSTM_ARGS, *picks, "--iterations", "3:")
    assert code == 0, out
    assert "%h in loop /lstm/LSTM.forward: 2 values" in out
    assert "%h in loop /lstm/LSTM_1.reverse: 2 values" in out
    assert "LSTM.reverse" not in out and "GRU" not in out
