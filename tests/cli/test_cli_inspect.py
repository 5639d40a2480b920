"""``tensorloop inspect`` through click's runner: the file as written (ONNX, OpenVINO IR, text
IR), the canonical graph, traceable values, JSON, the text IR with elided constants."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner, Result

import tensorloop as tl
from tensorloop.cli import main
from tensorloop.errors import FormatError
from tensorloop.formats.summary import summarize

ROOT = Path(__file__).resolve().parents[2]
RNN = str(ROOT / "examples" / "rnn.tl")
LSTM = str(ROOT / "tests" / "data" / "torch_lstm_gru_torchscript.onnx")
SCRIPTED = str(ROOT / "tests" / "data" / "torch_scripted_loop.onnx")
OV_NESTED = str(ROOT / "tests" / "data" / "openvino_converted" / "loop_with_branch_torch.xml")


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def test_onnx_file_as_written() -> None:
    result = invoke("inspect", LSTM)
    assert result.exit_code == 0, result.output
    out = result.output
    assert "ONNX; IR version 7; opsets ai.onnx 14; produced by pytorch" in out
    assert "f32[batch,time,8]" in out  # symbolic shapes are not read as markup
    assert "LSTM x2" in out and "GRU x1" in out and "Gemm" not in out
    assert "parameters: 10,736" in out
    assert "LSTM '/lstm/LSTM' (ONNX LSTM, lowered to 2 loops)" in out
    assert "2 carried, 1 sliced, 3 invariant, 1 stacked; direction bidirectional" in out


def test_lowered_graph_and_traceable_values() -> None:
    result = invoke("inspect", LSTM, "--lowered", "--list-values")
    assert result.exit_code == 0, result.output
    out = result.output
    assert "canonical graph 'main_graph'" in out and "Loop x5" in out
    assert "canonical loops and branches:" in out
    assert "/lstm/LSTM.forward: iteration, h, c" in out
    assert "/lstm/LSTM.reverse: iteration, h, c" in out


def test_onnx_loop_trip_bound_and_captures() -> None:
    s = summarize(SCRIPTED)
    [loop] = s.loops
    assert (loop.op, loop.origin, loop.carried, loop.body) == ("Loop", "ONNX Loop", 1, 5)
    assert loop.trip.startswith("%n")
    assert [p.type for p in s.inputs] == ["f32[4]", "i64[]"]


def test_openvino_ir_with_a_branch_in_a_loop() -> None:
    result = invoke("inspect", OV_NESTED, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)["file"]
    assert data["format"] == "OpenVINO IR" and data["ir_version"] == "11"
    assert "OpenVINO" in data["producer"]
    assert data["op_counts"]["Loop"] == 1 and data["op_counts"]["If"] == 1
    loop, branch = data["loops"]
    assert (loop["origin"], loop["depth"], loop["carried"]) == ("OpenVINO Loop", 0, 1)
    assert (branch["op"], branch["depth"]) == ("If", 1)
    text = invoke("inspect", OV_NESTED).output
    assert "\n    If 'prim::If/If' (OpenVINO If): then" in text  # nested: indented deeper


def test_text_ir_elides_large_constants(tmp_path: Path) -> None:
    w = tl.constant(np.arange(400, dtype=np.float32).reshape(20, 20))
    x = tl.placeholder("float32", ["batch", 20], name="x")
    path = tmp_path / "big.tl"
    tl.save(tl.Model({"y": x @ w}), path)
    short = invoke("inspect", str(path), "--ir")
    assert short.exit_code == 0, short.output
    assert "dense<f32[20,20]>[...]" in short.output and "399.0" not in short.output
    assert "f32[batch,20]" in short.output
    full = invoke("inspect", str(path), "--ir", "--full-constants")
    assert "399.0" in full.output
    data = json.loads(invoke("inspect", str(path), "--json", "--lowered").output)
    assert data["file"]["parameters"] == 400 and data["file"]["weight_bytes"] == 1600
    assert data["lowered"]["inputs"] == [{"name": "x", "type": "f32[batch,20]"}]


def test_text_ir_loops_nest() -> None:
    data = json.loads(invoke("inspect", RNN, "--json", "--list-values").output)
    loops = data["file"]["loops"]
    assert [(loop["name"], loop["trip"]) for loop in loops] == [
        ("scan", "6"),
        ("while", "none (until the condition)"),
    ]
    assert "step_norm" in data["values"]["while"]


def test_inspect_errors_are_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "m.onnx"
    bad.write_bytes(b"\x08garbage")
    result = invoke("inspect", str(bad))
    assert result.exit_code == 1 and result.output.startswith("error: ")
    assert "not a readable ONNX model" in result.output and "Traceback" not in result.output


def test_summaries_are_found_by_suffix(tmp_path: Path) -> None:
    """formats/__init__.py's one suffix table picks the format module; each format's summary
    reads its files with that format's own reader."""
    import tensorloop.formats.summary as fs
    from tensorloop.formats import FORMATS, format_module

    summary = fs.summarize(SCRIPTED)
    assert summary.format == "ONNX"
    summarizers = {s: format_module(f"m{s}", "read").summarize_file for s in (".onnx", ".xml")}
    assert {".onnx", ".xml", ".tl", ".tlir"} <= set(FORMATS)
    assert summarizers[".onnx"].__module__ == "tensorloop.formats.onnx.summary"
    assert summarizers[".xml"].__module__ == "tensorloop.formats.openvino.summary"
    odd = tmp_path / "m.pb"
    odd.write_bytes(b"")
    with pytest.raises(FormatError, match=r"m.pb: unknown model format '.pb'; tensorloop reads"):
        fs.summarize(odd)
    empty = tmp_path / "e.onnx"
    empty.write_bytes(b"")
    with pytest.raises(FormatError, match=r"e.onnx: the file is empty \(0 bytes\)"):
        fs.summarize(empty)


def test_listed_loop_paths_are_the_paths_traces_carry(tmp_path: Path) -> None:
    """What `inspect --list-values` groups values under is the loop path a run traces them
    with, loops nested in loops and in branches included, so it can be given to --loop."""
    from test_cli_draw import nested_model  # a scan holding a for loop, and an If holding a while

    from tensorloop.cli import body_paths
    from tensorloop.cli.inspect import traceable_values

    model = nested_model()
    feeds = {
        "xs": np.ones((5, 3), np.float32),
        "h0": np.ones(3, np.float32),
        "limit": np.float32(50),
    }
    listed = dict(traceable_values(model.graph))
    loops = [(path, body) for path, node, body in body_paths(model.graph) if node.op == "Loop"]
    assert sorted(path for path, _ in loops) == ["scan", "scan > fori", "scan > while"]
    for path, body in loops:
        carried = body.inputs[1].name
        assert carried in listed[path]
        trace = model.run(feeds, trace=[carried]).trace[carried]
        assert trace.loops == [tuple(path.split(" > "))], path


@pytest.mark.parametrize("backend", ["compiled", "jax"])
def test_placement_for_the_inputs_given(backend: str) -> None:
    args = ["inspect", LSTM, "--placement", backend, "--random-inputs"]
    args += ["--input-shape", "x:2,5,8", "--json"]
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)["placement"]
    assert rows and all(set(r) == {"node", "op", "device", "reason"} for r in rows)
    devices = {r["device"] for r in rows}
    assert devices <= ({"compiled", "reference"} if backend == "compiled" else {"xla", "compiled"})
    if backend == "jax":  # every shape follows from the input's: the loops run on XLA
        assert {r["device"] for r in rows if r["op"] == "Loop"} == {"xla"}
    table = invoke(*args[:-1])
    assert table.exit_code == 0 and f"placement on {backend}" in table.output
