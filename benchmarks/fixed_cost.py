"""Issue #22: the fixed cost of one call, on a model of one ``Add`` of two float32[4]s.

Each runner (tensorloop's backends through ``Model.run``, onnxruntime's CPU provider through
``InferenceSession.run``) is called ``--calls`` times, round-robin, one call each in turn, and
the median of each is printed with its ratio to onnxruntime's.

    .venv/bin/python benchmarks/fixed_cost.py --calls 3000
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
from onnx import TensorProto, helper

import tensorloop as tl


def add_model(path: Path) -> None:
    ports = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [4]) for n in "abc"]
    graph = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["c"])], "add", ports[:2], [ports[2]]
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


@click.command()
@click.option("--calls", default=3000, show_default=True)
@click.option("--backends", default="compiled,jax", show_default=True)
def main(calls: int, backends: str) -> None:
    warnings.simplefilter("ignore")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "add.onnx"
        add_model(path)
        feeds = {"a": np.ones(4, np.float32), "b": np.ones(4, np.float32)}
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        runs: dict[str, Callable[[], Any]] = {"onnxruntime": lambda: session.run(None, feeds)}
        for name in backends.split(","):
            model = tl.load(path, backend=name)
            runs[name] = lambda model=model: model.run(feeds)
        for run in runs.values():
            run()
        times: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(calls):
            for name, run in runs.items():
                start = time.perf_counter()
                run()
                times[name].append(time.perf_counter() - start)
    base = statistics.median(times["onnxruntime"])
    for name, ts in times.items():
        median = statistics.median(ts)
        click.echo(f"{name:12s} {median * 1e6:8.1f} us  {median / base:5.2f}x onnxruntime")


if __name__ == "__main__":
    main()
