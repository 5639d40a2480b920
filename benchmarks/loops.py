"""Time tensorloop's reference interpreter beside onnxruntime and OpenVINO on recurrent ONNX models.

Every model is built with onnx.helper, loaded by each runtime in this one process, checked for
agreement (np.allclose, rtol=atol=1e-4) and then timed: warm-up runs, then the median wall time
(time.perf_counter) of ``--repeats`` runs. Only the run call is timed; loading and compiling
are not.

    .venv/bin/python benchmarks/loops.py --repeats 20
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

import click
import numpy as np
import onnx
import onnxruntime as ort

try:
    import openvino as ov
except ImportError:  # a machine without OpenVINO (a GPU box, say): its runner is left out
    ov = None
from onnx import TensorProto, helper, numpy_helper
from rich.console import Console
from rich.table import Table

import tensorloop as tl
from tensorloop.formats.onnx.writer import to_onnx

OPSET = 17
IR_VERSION = 8
RTOL = 1e-4
ATOL = 1e-4

Feed = dict[str, np.ndarray]
Runner = Callable[[Feed], dict[str, np.ndarray]]


@dataclass
class Case:
    name: str
    description: str
    model: onnx.ModelProto
    feed: Feed
    tl_model: tl.Model | None = None
    """What tensorloop runs, when it is not ``model`` read back."""


def _f32(rng: np.random.Generator, shape: tuple[int, ...], scale: float = 1.0) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def _model(graph: onnx.GraphProto) -> onnx.ModelProto:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model, full_check=True)
    return model


def lstm_case(rng: np.random.Generator) -> Case:
    seq, batch, inp, hid = 64, 8, 128, 256
    scale = 1.0 / np.sqrt(hid)
    inits = [
        numpy_helper.from_array(_f32(rng, (1, 4 * hid, inp), scale), "W"),
        numpy_helper.from_array(_f32(rng, (1, 4 * hid, hid), scale), "R"),
        numpy_helper.from_array(_f32(rng, (1, 8 * hid), scale), "B"),
    ]
    node = helper.make_node(
        "LSTM", ["X", "W", "R", "B"], ["Y", "Y_h", "Y_c"], hidden_size=hid, direction="forward"
    )
    graph = helper.make_graph(
        [node],
        "lstm",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [seq, batch, inp])],
        [
            helper.make_tensor_value_info("Y", TensorProto.FLOAT, [seq, 1, batch, hid]),
            helper.make_tensor_value_info("Y_h", TensorProto.FLOAT, [1, batch, hid]),
            helper.make_tensor_value_info("Y_c", TensorProto.FLOAT, [1, batch, hid]),
        ],
        inits,
    )
    return Case(
        "lstm",
        f"LSTM fwd seq={seq} batch={batch} in={inp} hid={hid}",
        _model(graph),
        {"X": _f32(rng, (seq, batch, inp))},
    )


def gru_case(rng: np.random.Generator) -> Case:
    seq, batch, inp, hid = 64, 4, 64, 128
    scale = 1.0 / np.sqrt(hid)
    inits = [
        numpy_helper.from_array(_f32(rng, (2, 3 * hid, inp), scale), "W"),
        numpy_helper.from_array(_f32(rng, (2, 3 * hid, hid), scale), "R"),
        numpy_helper.from_array(_f32(rng, (2, 6 * hid), scale), "B"),
    ]
    node = helper.make_node(
        "GRU", ["X", "W", "R", "B"], ["Y", "Y_h"], hidden_size=hid, direction="bidirectional"
    )
    graph = helper.make_graph(
        [node],
        "gru",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [seq, batch, inp])],
        [
            helper.make_tensor_value_info("Y", TensorProto.FLOAT, [seq, 2, batch, hid]),
            helper.make_tensor_value_info("Y_h", TensorProto.FLOAT, [2, batch, hid]),
        ],
        inits,
    )
    return Case(
        "gru",
        f"GRU bidir seq={seq} batch={batch} in={inp} hid={hid}",
        _model(graph),
        {"X": _f32(rng, (seq, batch, inp))},
    )


def loop_case(rng: np.random.Generator) -> Case:
    trips, dim = 1000, 64
    body = helper.make_graph(
        [
            helper.make_node("MatMul", ["h_in", "W"], ["hw"]),
            helper.make_node("Add", ["hw", "b"], ["pre"]),
            helper.make_node("Tanh", ["pre"], ["h_out"]),
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
        ],
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("h_in", TensorProto.FLOAT, [1, dim]),
        ],
        [
            helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("h_out", TensorProto.FLOAT, [1, dim]),
        ],
    )
    inits = [
        numpy_helper.from_array(np.array(trips, np.int64), "M"),
        numpy_helper.from_array(np.array(True), "cond"),
        # Spectral radius about 0.9: the map is contractive, so rounding does not grow.
        numpy_helper.from_array(_f32(rng, (dim, dim), 0.9 / np.sqrt(dim)), "W"),
        numpy_helper.from_array(_f32(rng, (dim,), 0.1), "b"),
    ]
    node = helper.make_node("Loop", ["M", "cond", "h0"], ["h"], body=body)
    graph = helper.make_graph(
        [node],
        "loop",
        [helper.make_tensor_value_info("h0", TensorProto.FLOAT, [1, dim])],
        [helper.make_tensor_value_info("h", TensorProto.FLOAT, [1, dim])],
        inits,
    )
    return Case(
        "loop",
        f"Loop {trips} trips, h = tanh(h @ W + b), h [1, {dim}]",
        _model(graph),
        {"h0": _f32(rng, (1, dim))},
    )


def scan_case(rng: np.random.Generator) -> Case:
    seq, rows, cols = 256, 8, 32
    body = helper.make_graph(
        [
            helper.make_node("Add", ["acc_in", "x_t"], ["acc_out"]),
            helper.make_node("Identity", ["acc_out"], ["y_t"]),
        ],
        "body",
        [
            helper.make_tensor_value_info("acc_in", TensorProto.FLOAT, [rows, cols]),
            helper.make_tensor_value_info("x_t", TensorProto.FLOAT, [rows, cols]),
        ],
        [
            helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, [rows, cols]),
            helper.make_tensor_value_info("y_t", TensorProto.FLOAT, [rows, cols]),
        ],
    )
    node = helper.make_node("Scan", ["acc0", "xs"], ["acc", "ys"], body=body, num_scan_inputs=1)
    graph = helper.make_graph(
        [node],
        "scan",
        [
            helper.make_tensor_value_info("acc0", TensorProto.FLOAT, [rows, cols]),
            helper.make_tensor_value_info("xs", TensorProto.FLOAT, [seq, rows, cols]),
        ],
        [
            helper.make_tensor_value_info("acc", TensorProto.FLOAT, [rows, cols]),
            helper.make_tensor_value_info("ys", TensorProto.FLOAT, [seq, rows, cols]),
        ],
    )
    return Case(
        "scan",
        f"Scan running sum over [{seq}, {rows}, {cols}]",
        _model(graph),
        {"acc0": np.zeros((rows, cols), np.float32), "xs": _f32(rng, (seq, rows, cols))},
    )


def network_case(rng: np.random.Generator) -> Case:
    """An LSTM built layer by layer with tensorloop.network (sampleCharRNN style); tensorloop
    runs the network's model, onnxruntime and OpenVINO its ONNX export."""
    from tensorloop.network import ActivationType as Act
    from tensorloop.network import ElementWiseOperation as Op
    from tensorloop.network import LoopOutput, MatrixOperation, Network, TripLimit

    seq, batch, inp, hid = 64, 8, 128, 256
    scale = 1.0 / np.sqrt(hid)
    net = Network("network_lstm")

    def const(array: np.ndarray) -> Any:
        return net.add_constant(array.shape, array).get_output(0)

    def add(a: Any, b: Any, op: Op = Op.SUM) -> Any:
        return net.add_elementwise(a, b, op).get_output(0)

    x = net.add_input("X", "float32", (seq, batch, inp))
    loop = net.add_loop()
    loop.add_trip_limit(const(np.array(seq, np.int32)), TripLimit.COUNT)
    step = loop.add_iterator(x).get_output(0)
    hidden = loop.add_recurrence(const(np.zeros((batch, hid), np.float32)))
    cell = loop.add_recurrence(const(np.zeros((batch, hid), np.float32)))
    none, transpose = MatrixOperation.NONE, MatrixOperation.TRANSPOSE
    w, r = const(_f32(rng, (4 * hid, inp), scale)), const(_f32(rng, (4 * hid, hid), scale))
    gates = add(
        add(
            net.add_matrix_multiply(step, none, w, transpose).get_output(0),
            net.add_matrix_multiply(hidden.get_output(0), none, r, transpose).get_output(0),
        ),
        const(_f32(rng, (1, 4 * hid), scale)),
    )

    def gate(k: int, act: Act) -> Any:
        part = net.add_slice(gates, (0, k * hid), (batch, hid), (1, 1)).get_output(0)
        return net.add_activation(part, act).get_output(0)

    i, g, f, o = gate(0, Act.SIGMOID), gate(1, Act.TANH), gate(2, Act.SIGMOID), gate(3, Act.SIGMOID)
    c_next = add(add(f, cell.get_output(0), Op.PROD), add(i, g, Op.PROD))
    h_next = add(o, net.add_activation(c_next, Act.TANH).get_output(0), Op.PROD)
    cell.set_input(1, c_next)
    hidden.set_input(1, h_next)
    every = loop.add_loop_output(h_next, LoopOutput.CONCATENATE, 0)
    every.set_input(1, const(np.array(seq, np.int32)))
    last_h = loop.add_loop_output(hidden.get_output(0), LoopOutput.LAST_VALUE).get_output(0)
    for name, out in (("Y", every.get_output(0)), ("Y_h", last_h)):
        out.name = name
        net.mark_output(out)
    model = net.to_model()
    return Case(
        "network",
        f"tensorloop.network LSTM seq={seq} batch={batch} in={inp} hid={hid}",
        to_onnx(model),
        {"X": _f32(rng, (seq, batch, inp))},
        tl_model=model,
    )


CASES: dict[str, Callable[[np.random.Generator], Case]] = {
    "lstm": lstm_case,
    "gru": gru_case,
    "loop": loop_case,
    "scan": scan_case,
    "network": network_case,
}


def tensorloop_runner(case: Case) -> Runner:
    model = case.tl_model or tl.load(case.model)

    def run(feed: Feed) -> dict[str, np.ndarray]:
        return dict(model.run(feed))

    return run


def onnxruntime_runner(case: Case) -> Runner:
    sess = ort.InferenceSession(case.model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]

    def run(feed: Feed) -> dict[str, np.ndarray]:
        return dict(zip(names, sess.run(names, feed), strict=True))

    return run


def openvino_runner(case: Case, workdir: Path) -> Runner:
    path = workdir / f"{case.name}.onnx"
    onnx.save(case.model, path)
    return openvino_from_file(case, path)


def openvino_from_file(case: Case, path: Path) -> Runner:
    """OpenVINO's CPU plugin (exact f32) on the case's model saved at ``path``."""
    compiled = ov.Core().compile_model(str(path), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    request = compiled.create_infer_request()
    wanted = [o.name for o in case.model.graph.output]
    ports = {name: port for port in compiled.outputs for name in port.get_names()}

    def run(feed: Feed) -> dict[str, np.ndarray]:
        result = request.infer(feed)
        return {name: np.asarray(result[ports[name]]) for name in wanted}

    return run


def check(case: Case, reference: dict[str, np.ndarray], other: dict[str, np.ndarray], who: str):
    for name, expected in reference.items():
        got = other[name]
        if got.shape != expected.shape or not np.allclose(got, expected, rtol=RTOL, atol=ATOL):
            diff = float(np.max(np.abs(got - expected))) if got.shape == expected.shape else "shape"
            raise click.ClickException(
                f"{case.name}: output '{name}' of {who} disagrees with onnxruntime "
                f"(shapes {got.shape} vs {expected.shape}, max abs diff {diff})"
            )


def median_seconds(run: Runner, feed: Feed, warmup: int, repeats: int) -> float:
    for _ in range(warmup):
        run(feed)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run(feed)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f}"


@click.command()
@click.option("--repeats", default=20, show_default=True, help="Timed runs per runtime.")
@click.option("--warmup", default=3, show_default=True, help="Untimed runs before timing.")
@click.option(
    "--case",
    "cases",
    multiple=True,
    type=click.Choice(list(CASES)),
    help="Run only these cases (repeatable; default: all).",
)
@click.option("--seed", default=0, show_default=True, help="Seed for weights and inputs.")
def main(repeats: int, warmup: int, cases: tuple[str, ...], seed: int) -> None:
    """Median wall time of tensorloop, onnxruntime (CPU) and OpenVINO (CPU, f32) on loop models."""
    if repeats < 1:
        raise click.BadParameter("must be at least 1", param_hint="--repeats")
    console = Console(width=max(Console().width, 120))  # keep table rows on one line
    console.print(
        f"numpy {np.__version__}, onnx {onnx.__version__}, onnxruntime {ort.__version__}, "
        f"tensorloop {version('tensorloop')}, openvino {ov.get_version()}"
    )
    console.print(f"warmup {warmup}, repeats {repeats}, seed {seed}")
    table = Table(title="Median wall time per run (ms)")
    table.add_column("case")
    table.add_column("model")
    table.add_column("tensorloop", justify="right")
    table.add_column("onnxruntime", justify="right")
    table.add_column("OpenVINO", justify="right")
    table.add_column("tl / ort", justify="right")
    table.add_column("tl / OV", justify="right")
    rng = np.random.default_rng(seed)
    with tempfile.TemporaryDirectory() as tmp:
        for key in cases or tuple(CASES):
            case = CASES[key](rng)
            runners = {
                "tensorloop": tensorloop_runner(case),
                "onnxruntime": onnxruntime_runner(case),
                "openvino": openvino_runner(case, Path(tmp)),
            }
            reference = runners["onnxruntime"](case.feed)
            for who in ("tensorloop", "openvino"):
                check(case, reference, runners[who](case.feed), who)
            t: dict[str, Any] = {
                who: median_seconds(run, case.feed, warmup, repeats) for who, run in runners.items()
            }
            table.add_row(
                case.name,
                case.description,
                _ms(t["tensorloop"]),
                _ms(t["onnxruntime"]),
                _ms(t["openvino"]),
                f"{t['tensorloop'] / t['onnxruntime']:.1f}x",
                f"{t['tensorloop'] / t['openvino']:.1f}x",
            )
    console.print(table)
    console.print(f"All outputs agree with onnxruntime (rtol {RTOL}, atol {ATOL}).")


if __name__ == "__main__":
    main()
