"""``tensorloop bench``: timings of every runtime in one process, through click's runner."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from test_cli_compare import LSTM, ir_inputs, loop_model, tampered  # noqa: F401  (a fixture)

from tensorloop.cli import main
from tensorloop.tools.bench import percentile, round_robin
from tensorloop.tools.compare import Runtime


def invoke(*args: str) -> Any:
    return CliRunner().invoke(main, list(args))


def test_exporter_model_on_three_runtimes_as_json() -> None:
    args = ["bench", LSTM, "--backends", "compiled,onnxruntime,openvino", "--random-inputs"]
    result = invoke(*args, "--input-shape", "x:2,3,8", "--seconds", "0.2", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["baseline"] == "onnxruntime" and report["seconds"] == 0.2
    assert report["warmup"] == 2 and report["skipped"] == {} and report["failed"] == {}
    assert set(report["memory"]) == {"peak_rss_bytes", "traced_peak_bytes"}
    rows = {r["runtime"]: r for r in report["runtimes"]}
    assert list(rows) == ["tensorloop-compiled", "onnxruntime", "openvino"]
    assert rows["onnxruntime"]["ratio"] == 1.0
    for r in rows.values():
        assert r["runs"] >= 1 and 0 < r["median_s"] <= r["p90_s"]
        assert r["throughput_per_s"] == pytest.approx(1 / r["mean_s"])
        assert r["ratio"] == pytest.approx(r["median_s"] / rows["onnxruntime"]["median_s"])
        assert r["first_run_s"] >= r["load_s"] > 0
        assert r["peak_rss_bytes"] >= 0 and r["traced_peak_bytes"] > 0


def test_ir_without_onnxruntime_is_held_to_the_first_runtime(tmp_path: Path) -> None:
    xml, inputs = ir_inputs(tmp_path, "loop_with_branch_onnx")
    args = ["bench", xml, "--inputs", inputs, "--backends", "reference,ort,openvino"]
    result = invoke(*args, "--seconds", "0", "--warmup", "0")
    assert result.exit_code == 0, result.output
    out = result.output
    assert "/ tensorloop-reference" in out and "median ms" in out and "first run ms" in out
    assert "skipped onnxruntime: onnxruntime reads .onnx files only" in out
    assert "peak RSS: " in out and "traced: " in out
    report = json.loads(invoke(*args, "--seconds", "0", "--warmup", "0", "--json").output)
    assert report["baseline"] == "tensorloop-reference"
    assert [r["runs"] for r in report["runtimes"]] == [1, 1]  # no time: one timed run each


def test_a_runtime_that_fails_exits_1(tmp_path: Path, tampered: Any) -> None:  # noqa: F811
    tampered("raise")
    model = loop_model(tmp_path, ".tl")
    result = invoke("bench", model, "--backends", "compiled,tampered", "-i", "xs=[[1,2,3]]",
                    "-i", "h0=[0,0,0]", "--seconds", "0.05")  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "tensorloop-compiled" in result.output
    assert "FAILED tensorloop-tampered: ExecutionError: tampered: no result" in result.output


def test_mistakes_end_in_one_line(tmp_path: Path) -> None:
    model = loop_model(tmp_path)
    for args, message in [
        (["--random-inputs"], "give one with --input-shape xs:D1,D2,..."),
        (["--seconds", "-1"], "Invalid value for '--seconds'"),
        (["--backends", ","], "no runtime named"),
    ]:
        result = invoke("bench", model, "--backends", "compiled", *args)
        assert result.exit_code != 0 and message in result.output, result.output
        assert len(result.output.strip().splitlines()) == 1


def test_round_robin_and_percentiles() -> None:
    calls: list[str] = []

    def runtime(name: str) -> Runtime:
        return Runtime(name, [], [], lambda feeds: calls.append(name) or [])

    times = round_robin([runtime("a"), runtime("b")], {}, 0.0, 1)
    assert calls == ["a", "b", "a", "b"]  # one warm-up round, then one timed run each
    assert [len(t) for t in times.values()] == [1, 1]
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0], 0.9) == pytest.approx(4.6)
    assert percentile([7.0], 0.9) == 7.0
    assert np.median([1.0, 2.0]) == percentile([1.0, 2.0], 0.5)
