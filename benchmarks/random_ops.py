"""Issue #27: the seeded random ops, tensorloop beside the anchor whose values it draws.

Each case is a one-node model with both seeds given (so every runner draws the same values,
checked before timing): ONNX RandomUniform / RandomNormal / Multinomial beside onnxruntime's
CPU provider, and OpenVINO's RandomUniform-8 (Philox, tensorflow alignment) beside OpenVINO's
CPU plugin (whose values for f32 equal tensorloop's with a power-of-two range; its stream goes on
from one inference to the next, so only its first inference is compared, and all are timed).
The runners are called ``--calls`` times, round-robin, and the median of each is printed with
its ratio to the anchor's.

    .venv/bin/python benchmarks/random_ops.py --calls 30
"""

from __future__ import annotations

import statistics
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import numpy as np
import onnx
import onnxruntime as ort
import openvino as ov
from onnx import TensorProto, helper
from openvino import opset8

import tensorloop as tl
import tensorloop.formats.onnx
import tensorloop.formats.openvino


def onnx_case(
    path: Path,
    node: onnx.NodeProto,
    inputs: list[onnx.ValueInfoProto],
    kind: int = TensorProto.FLOAT,
) -> None:
    out = helper.make_tensor_value_info(node.output[0], kind, None)
    graph = helper.make_graph([node], "random", inputs, [out])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


def openvino_case(path: Path, n: int) -> None:
    shape = opset8.constant(np.array([n], np.int64))
    lo, hi = opset8.constant(np.float32(0.0)), opset8.constant(np.float32(1.0))
    node = opset8.random_uniform(shape, lo, hi, "f32", global_seed=7, op_seed=11)
    ov.save_model(ov.Model([node.output(0)], [], "random"), path, compress_to_fp16=False)


def measure(runs: dict[str, Callable[[], Any]], calls: int) -> dict[str, float]:
    for run in runs.values():
        run()
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(calls):
        for name, run in runs.items():
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(ts) for name, ts in times.items()}


@click.command()
@click.option("--calls", default=30, show_default=True)
@click.option("--backends", default="compiled,reference", show_default=True)
def main(calls: int, backends: str) -> None:
    warnings.simplefilter("ignore")
    logits = np.log(np.full((64, 1000), 1e-3, np.float32))
    with tempfile.TemporaryDirectory() as folder:
        cases: list[tuple[str, Path, dict[str, Any]]] = []
        for n in (1000, 1_000_000):
            for op in ("RandomUniform", "RandomNormal"):
                path = Path(folder) / f"{op}{n}.onnx"
                onnx_case(path, helper.make_node(op, [], ["y"], shape=[n], seed=3.0), [])
                cases.append((f"{op} float[{n}]", path, {}))
        path = Path(folder) / "multinomial.onnx"
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 1000])
        node = helper.make_node("Multinomial", ["x"], ["y"], sample_size=100, seed=3.0)
        onnx_case(path, node, [x], TensorProto.INT32)
        cases.append(("Multinomial 64x1000 logits, 100 samples", path, {"x": logits}))
        for name, path, feeds in cases:
            session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
            want = session.run(None, feeds)[0]  # its first run: the one tensorloop equals
            runs: dict[str, Callable[[], Any]] = {
                "onnxruntime": lambda s=session, f=feeds: s.run(None, f)
            }
            for backend in backends.split(","):
                model = tl.load(path, backend=backend)
                np.testing.assert_array_equal(model.run(feeds)["y"], want)
                runs[backend] = lambda m=model, f=feeds: m.run(f)
            report(name, measure(runs, calls), "onnxruntime")
        for n in (1000, 1_000_000):
            path = Path(folder) / f"philox{n}.xml"
            openvino_case(path, n)
            compiled = ov.Core().compile_model(str(path), "CPU")
            want = np.asarray(compiled({})[0])  # its first inference
            runs = {"openvino": lambda c=compiled: c({})}
            for backend in backends.split(","):
                model = tl.load(path, backend=backend)
                np.testing.assert_array_equal(model.run({})[model.output_names[0]], want)
                runs[backend] = lambda m=model: m.run({})
            report(f"OpenVINO RandomUniform f32[{n}]", measure(runs, calls), "openvino")


def report(case: str, medians: dict[str, float], anchor: str) -> None:
    click.echo(case)
    for name, median in medians.items():
        ratio = median / medians[anchor]
        click.echo(f"  {name:12s} {median * 1e3:9.3f} ms  {ratio:6.2f}x {anchor}")


if __name__ == "__main__":
    main()
