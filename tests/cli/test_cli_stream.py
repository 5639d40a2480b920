"""``tensorloop stream`` through click's runner: a scan model streamed chunk by chunk gives the
outputs of one run over the whole input, JSON with the chunks, states and latencies, a model that
takes and returns its state streamed one step or one chunk per push, and one-line errors."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner, Result

import tensorloop as tl
from tensorloop.cli import main
from tensorloop.tools.inputs import make_inputs

F32 = "float32"
T = 10


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def assert_error(result: Result, message: str, code: int | None = None) -> None:
    """One ``error:`` line naming ``message``, no traceback, a non-zero exit."""
    assert result.exit_code != 0, result.output
    if code is not None:
        assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert message in lines[0], lines[0]


def weights(seed: int, shape: tuple[int, ...]) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * 0.5).astype(np.float32)


def save_array(path: Path, value: np.ndarray) -> str:
    np.save(path, value)
    return str(path)


def scan_model(
    tmp_path: Path, *, reverse: bool = False, suffix: str = ".onnx"
) -> tuple[tl.Model, str]:
    """An RNN over ``x: f32[T,3]`` from ``h0: f32[4]``: the last state ``hT`` (a read-out) and
    every step's output ``ys`` (a sequence output), saved as ONNX (or ``suffix``)."""
    tl.reset()
    w, u = weights(0, (3, 4)), weights(1, (4, 4))
    x = tl.placeholder(F32, ("T", 3), name="x")
    h0 = tl.placeholder(F32, (4,), name="h0")

    def f(h: tl.Tensor, xt: tl.Tensor) -> tuple[tl.Tensor, tl.Tensor]:
        a = tl.squeeze(tl.matmul(tl.unsqueeze(xt, 0), w), [0])
        b = tl.squeeze(tl.matmul(tl.unsqueeze(h, 0), u), [0])
        h2 = tl.tanh(a + b)
        return h2, h2 * 2.0

    hT, ys = tl.scan(f, h0, x, reverse=reverse)
    model = tl.Model({"hT": hT, "ys": ys})
    path = tmp_path / (("reverse" if reverse else "rnn") + suffix)
    tl.save(model, path)
    return model, str(path)


def step_model(tmp_path: Path, time_axis: bool = False) -> tuple[tl.Model, str]:
    """A model that takes and returns its state: ``stateN = tanh(state + x @ W)`` and
    ``y = 3 stateN``, over one time step ``x: f32[3]`` (or, ``time_axis``, a chunk of steps
    ``x: f32[T,3]`` summed)."""
    tl.reset()
    w = weights(2, (3, 4))
    x = tl.placeholder(F32, ("T", 3) if time_axis else (3,), name="x")
    state = tl.placeholder(F32, (4,), name="state")
    if time_axis:
        step = tl.reduce_sum(tl.matmul(x, w), [0])
    else:
        step = tl.squeeze(tl.matmul(tl.unsqueeze(x, 0), w), [0])
    state_n = tl.tanh(state + step)
    model = tl.Model({"y": state_n * 3.0, "stateN": state_n})
    path = tmp_path / ("chunk_step.onnx" if time_axis else "step.onnx")
    tl.save(model, path)
    return model, str(path)


@pytest.fixture
def rnn(tmp_path: Path) -> tuple[tl.Model, str, list[str], dict[str, np.ndarray]]:
    """The scan model, its path, the --input options and the inputs."""
    model, path = scan_model(tmp_path)
    feeds = {"x": weights(3, (T, 3)) * 2, "h0": weights(4, (4,))}
    options = [f"--input=x={save_array(tmp_path / 'x.npy', feeds['x'])}"]
    options.append(f"--input=h0={save_array(tmp_path / 'h0.npy', feeds['h0'])}")
    return model, path, options, feeds


@pytest.mark.parametrize("chunk", [1, 3, 4, 10, 16])
def test_joined_outputs_are_one_run_over_the_whole_input(
    tmp_path: Path, rnn: tuple[tl.Model, str, list[str], dict[str, np.ndarray]], chunk: int
) -> None:
    model, path, options, feeds = rnn
    saved = tmp_path / "out.npz"
    result = invoke("stream", path, *options, "--chunk", str(chunk), "--save-outputs", str(saved))
    assert result.exit_code == 0, result.output
    assert f"wrote {saved}" in result.output
    whole = model.run(feeds)
    with np.load(saved) as joined:
        assert sorted(joined.files) == ["hT", "ys"]
        for name in ("hT", "ys"):
            assert joined[name].dtype == np.float32
            assert np.array_equal(joined[name], whole[name]), name


def test_state_init_sets_the_first_state(
    tmp_path: Path, rnn: tuple[tl.Model, str, list[str], dict[str, np.ndarray]]
) -> None:
    """The loop's carried state started from --state-init: one run from that initial value."""
    model, path, options, feeds = rnn
    init = np.linspace(-1, 1, 4, dtype=np.float32)
    saved = tmp_path / "out.npz"
    for given in (save_array(tmp_path / "init.npy", init), json.dumps(init.tolist())):
        result = invoke(
            "stream", path, *options, "--chunk", "4", "--state-init", f"scan.carried0={given}",
            "--save-outputs", str(saved),
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        whole = model.run({**feeds, "h0": init})
        with np.load(saved) as joined:
            for name in ("hT", "ys"):
                assert np.array_equal(joined[name], whole[name]), name


def test_text_shows_chunks_states_latency_and_outputs(
    rnn: tuple[tl.Model, str, list[str], dict[str, np.ndarray]],
) -> None:
    model, path, options, feeds = rnn
    result = invoke("stream", path, *options, "--chunk", "3")
    assert result.exit_code == 0, result.output
    out = result.output
    assert "rnn.onnx: 10 time steps in 4 chunks of 3 on compiled" in out
    assert "sequence inputs: x (axis 0)" in out
    for column in ("state", "type", "dtype", "shape", "bytes", "carries"):
        assert column in out
    assert "scan.carried0" in out and "carried %carried0 of loop 'scan'" in out
    assert "state: 1 value, 16 B in all" in out
    assert "latency per chunk: p50 " in out and " p99 " in out and " max " in out
    rows = {line.split("│")[1].strip(): line for line in out.splitlines() if line.count("│") > 3}
    assert "read-out" in rows["hT"] and "[4]" in rows["hT"]
    assert "sequence (axis 0)" in rows["ys"] and "[10,4]" in rows["ys"]
    ys = model.run(feeds)["ys"]
    assert f"{float(ys.min()):.6g}" in rows["ys"] and f"{float(ys.max()):.6g}" in rows["ys"]


@pytest.mark.parametrize("chunk", [1, 3, 5, 10, 11])
def test_json_lists_chunks_states_latency_and_outputs(
    rnn: tuple[tl.Model, str, list[str], dict[str, np.ndarray]], chunk: int
) -> None:
    model, path, options, feeds = rnn
    result = invoke("stream", path, *options, "--chunk", str(chunk), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["chunk"] == chunk and data["steps"] == T
    assert data["sequence_inputs"] == {"x": 0}
    chunks = data["chunks"]
    assert len(chunks) == math.ceil(T / chunk)
    assert [c["index"] for c in chunks] == list(range(len(chunks)))
    assert sum(c["steps"] for c in chunks) == T
    assert all(c["steps"] == chunk for c in chunks[:-1])
    assert all(c["latency_ms"] > 0 for c in chunks)
    [state] = data["states"]
    assert state["name"] == "scan.carried0" and state["next"] == "scan.carried0.next"
    assert (state["dtype"], state["shape"], state["bytes"]) == ("f32", [4], 16)
    assert data["state_bytes"] == 16
    latency = data["latency"]
    assert set(latency) == {"p50_ms", "p99_ms", "max_ms"}
    assert 0 < latency["p50_ms"] <= latency["p99_ms"] <= latency["max_ms"]
    assert latency["max_ms"] == max(c["latency_ms"] for c in chunks)
    whole = model.run(feeds)
    outputs = data["outputs"]
    assert list(outputs) == ["hT", "ys"]
    assert (outputs["hT"]["role"], outputs["hT"]["shape"]) == ("readout", [4])
    assert (outputs["ys"]["role"], outputs["ys"]["axis"]) == ("sequence", 0)
    assert (outputs["ys"]["shape"], outputs["ys"]["dtype"]) == ([T, 4], "f32")
    for name in ("hT", "ys"):
        assert outputs[name]["min"] == float(whole[name].min())
        assert outputs[name]["max"] == float(whole[name].max())
        assert outputs[name]["mean"] == pytest.approx(float(whole[name].astype(np.float64).mean()))


def test_sequence_named_and_random_inputs(tmp_path: Path) -> None:
    model, path = scan_model(tmp_path)
    saved = tmp_path / "out.npz"
    inputs = tmp_path / "inputs.npz"
    result = invoke(
        "stream", path, "--random-inputs", "--input-shape", "x:7,3", "--sequence", "x=0",
        "--chunk", "2", "--save-outputs", str(saved), "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert [c["steps"] for c in json.loads(result.output)["chunks"]] == [2, 2, 2, 1]
    # the same random inputs, given by file: the same outputs, one run over them
    feeds = make_inputs(model, random=True, seed=0, shapes={"x": (7, 3)})
    np.savez(inputs, **feeds)
    again = invoke("stream", path, "--inputs", str(inputs), "--chunk", "2", "--json")
    assert again.exit_code == 0, again.output
    with np.load(saved) as joined:
        for name, value in model.run(feeds).items():
            assert np.array_equal(joined[name], value)


def test_a_model_that_cannot_stream_is_one_line(tmp_path: Path) -> None:
    """A scan in reverse needs the sequence's last element first."""
    x = save_array(tmp_path / "x.npy", weights(3, (T, 3)))
    h0 = save_array(tmp_path / "h0.npy", weights(4, (4,)))
    _, path = scan_model(tmp_path, reverse=True, suffix=".tl")
    result = invoke("stream", path, "-i", f"x={x}", "-i", f"h0={h0}", "--chunk", "2")
    assert_error(result, "StreamingError: cannot stream", 1)
    assert "reverse" in result.output
    # written to ONNX, the reverse scan reads x by index: refused as well, in one line
    _, path = scan_model(tmp_path, reverse=True)
    result = invoke("stream", path, "-i", f"x={x}", "-i", f"h0={h0}", "--chunk", "2")
    assert_error(result, "StreamingError", 1)


def test_bad_inputs_and_options_are_one_line(
    tmp_path: Path, rnn: tuple[tl.Model, str, list[str], dict[str, np.ndarray]]
) -> None:
    _, path, options, _ = rnn
    x, h0 = options
    h0_file = h0.split("=", 2)[2]
    assert_error(invoke("stream", path, x, "-i", f"hh={h0_file}", "--chunk", "2"), "no input 'hh'")
    assert_error(invoke("stream", path, x, "--chunk", "2"), "missing input(s) h0")
    assert_error(invoke("stream", path, *options, "--chunk", "0"), "--chunk", 2)
    assert_error(invoke("stream", path, *options, "--chunk", "-3"), "--chunk", 2)
    assert_error(invoke("stream", path, *options), "Missing option '--chunk'", 2)
    for bad in ("x", "x=", "=0", "x=time", "x=-1"):
        assert_error(
            invoke("stream", path, *options, "--chunk", "2", "--sequence", bad), "NAME=AXIS", 2
        )
    result = invoke("stream", path, *options, "--chunk", "2", "--sequence", "zz=0")
    assert_error(result, "no input 'zz'", 1)
    result = invoke("stream", path, *options, "--chunk", "2", "--state-init", "nope=[1,2,3,4]")
    assert_error(result, "no state named 'nope'", 1)
    empty = save_array(tmp_path / "empty.npy", np.zeros((0, 3), np.float32))
    assert_error(invoke("stream", path, f"--input=x={empty}", h0, "--chunk", "2"), "x", 1)
    folder = tmp_path / "missing" / "out.npz"
    result = invoke("stream", path, *options, "--chunk", "2", "--save-outputs", str(folder))
    assert_error(result, "no such folder", 1)


def manual_steps(
    model: tl.Model, xs: Sequence[np.ndarray] | np.ndarray, state: np.ndarray
) -> tuple[list[np.ndarray], np.ndarray]:
    """``model`` run by hand over ``xs``, one element per run, its state fed back."""
    ys = []
    for x in xs:
        out = model.run({"x": x, "state": state})
        ys.append(out["y"])
        state = out["stateN"]
    return ys, state


def test_explicit_state_one_step_per_push(tmp_path: Path) -> None:
    model, path = step_model(tmp_path)
    xs = weights(5, (T, 3))
    x = save_array(tmp_path / "xs.npy", xs)
    saved = tmp_path / "out.npz"
    args = ["stream", path, "-i", f"x={x}", "--state", "auto", "--sequence", "x=0", "--chunk", "1"]
    result = invoke(*args, "--save-outputs", str(saved), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["one_step_per_push"] is True and data["sequence_inputs"] == {"x": 0}
    assert [c["steps"] for c in data["chunks"]] == [1] * T
    [state] = data["states"]
    assert (state["name"], state["next"], state["origin"]) == ("state", "stateN", "input 'state'")
    assert (state["shape"], state["bytes"]) == ([4], 16)
    assert data["outputs"]["y"]["role"] == "sequence" and data["outputs"]["y"]["shape"] == [T, 4]
    ys, _ = manual_steps(model, xs, np.zeros(4, np.float32))
    with np.load(saved) as joined:
        assert joined.files == ["y"]
        assert np.array_equal(joined["y"], np.stack(ys))

    # the pairing named, and a first state given
    init = np.full(4, 0.5, np.float32)
    init_file = save_array(tmp_path / "init.npy", init)
    args[args.index("auto")] = "state=stateN"
    result = invoke(*args, "--state-init", f"state={init_file}", "--save-outputs", str(saved))
    assert result.exit_code == 0, result.output
    assert "one time step per push" in result.output and "input 'state'" in result.output
    ys, _ = manual_steps(model, xs, init)
    with np.load(saved) as joined:
        assert np.array_equal(joined["y"], np.stack(ys))
    result = invoke(*args, "--state-init", "state=[0.5,0.5,0.5,0.5]", "--save-outputs", str(saved))
    assert result.exit_code == 0, result.output
    with np.load(saved) as joined:
        assert np.array_equal(joined["y"], np.stack(ys))


def test_explicit_state_chunks_of_steps(tmp_path: Path) -> None:
    """A model that takes a chunk of steps: each push is a chunk of K steps, the read-out is the
    last chunk's."""
    model, path = step_model(tmp_path, time_axis=True)
    xs = weights(6, (T, 3))
    x = save_array(tmp_path / "xs.npy", xs)
    saved = tmp_path / "out.npz"
    result = invoke(
        "stream", path, "-i", f"x={x}", "--state", "auto", "--sequence", "x=0", "--chunk", "4",
        "--save-outputs", str(saved), "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["one_step_per_push"] is False
    assert [c["steps"] for c in data["chunks"]] == [4, 4, 2]
    assert data["outputs"]["y"]["role"] == "readout"
    ys, _ = manual_steps(model, [xs[0:4], xs[4:8], xs[8:10]], np.zeros(4, np.float32))
    with np.load(saved) as joined:
        assert np.array_equal(joined["y"], ys[-1])


def test_explicit_state_without_sequence_is_one_chunk(tmp_path: Path) -> None:
    _, path = step_model(tmp_path)
    result = invoke("stream", path, "-i", "x=[1,2,3]", "--state", "auto", "--chunk", "2", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["chunks"][0]["steps"] is None and len(data["chunks"]) == 1
    assert data["steps"] is None and data["sequence_inputs"] == {}
    text = invoke("stream", path, "-i", "x=[1,2,3]", "--state", "auto", "--chunk", "2")
    assert "1 chunk, the inputs as given" in text.output


def test_explicit_state_errors_are_one_line(tmp_path: Path) -> None:
    _, path = step_model(tmp_path)
    x = save_array(tmp_path / "xs.npy", weights(5, (T, 3)))
    base = ["stream", path, "-i", f"x={x}", "--sequence", "x=0"]
    assert_error(invoke(*base, "--state", "auto", "--chunk", "3"), "use --chunk 1", 1)
    result = invoke(*base, "-i", "state=[1,2,3,4]", "--state", "auto", "--chunk", "1")
    assert_error(result, "--state-init state=", 1)
    assert_error(invoke(*base, "--state", "auto", "--state", "a=b", "--chunk", "1"), "auto", 2)
    assert_error(invoke(*base, "--state", "state", "--chunk", "1"), "IN=OUT", 2)
    assert_error(invoke(*base, "--state", "x=y", "--chunk", "1"), "StreamingError", 1)
    result = invoke(
        "stream", path, "-i", f"x={x}", "--sequence", "zz=0", "--state", "auto", "--chunk", "1"
    )
    assert_error(result, "no input 'zz'", 1)
    result = invoke(
        "stream", path, "-i", f"x={x}", "--sequence", "x=2", "--state", "auto", "--chunk", "1"
    )
    assert_error(result, "no axis 2", 1)
    # without --state, a model with no loop over time cannot stream
    assert_error(invoke(*base, "--chunk", "1"), "StreamingError", 1)


def test_python_dash_m_stream_help() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tensorloop", "stream", "-h"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0
    for option in ("--chunk", "--sequence", "--state", "--state-init", "--save-outputs", "--json"):
        assert option in done.stdout


def test_persistent_state_one_step_per_push(tmp_path: Path) -> None:
    """A model that keeps its state in a persistent tensor streams in it: the outputs stacked
    over the steps are a session's runs, one step each."""
    tl.reset()
    x = tl.placeholder(F32, (3,), name="x")
    h = tl.persistent_tensor(np.zeros(3, np.float32), name="h")
    s = tl.tanh(h + x)
    tl.assign(h, s)
    path = tmp_path / "persistent.tl"
    tl.save(tl.Model({"s": s}), path)
    xs = weights(7, (T, 3))
    x_file = save_array(tmp_path / "xs.npy", xs)
    saved = tmp_path / "out.npz"
    result = invoke(
        "stream", str(path), "-i", f"x={x_file}", "--sequence", "x=0", "--chunk", "1",
        "--save-outputs", str(saved), "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert [(st["name"], st["origin"], st["bytes"]) for st in data["states"]] == [
        ("h", "persistent tensor 'h'", 12)
    ]
    assert len(data["chunks"]) == T and data["outputs"]["s"]["shape"] == [T, 3]
    session = tl.load(path).session()
    want = np.stack([session.run({"x": row})["s"] for row in xs])
    with np.load(saved) as joined:
        assert np.array_equal(joined["s"], want)
