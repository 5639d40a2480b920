"""Recurrent models of every loop form, for the streaming law: each streams over time."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import tensorloop as tl
from tensorloop.ir.emit import Emitter
from tensorloop.ir.graph import Graph
from tensorloop.ir.loop import ITERATION_TYPE, Loop, Sliced, Stacked
from tensorloop.tensor.types import TensorType

Array = np.ndarray[Any, Any]
BATCH, WIDTH, HIDDEN = 2, 3, 4


@dataclass(frozen=True)
class Form:
    """A model of one loop form: its sequence input and time axis, and its inputs for T steps
    (the sequence input first)."""

    name: str
    model: tl.Model
    sequence: str
    axis: int
    inputs: Callable[[np.random.Generator, int], dict[str, Array]]


def _normal(rng: np.random.Generator, *shape: int, scale: float = 1.0) -> Array:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def _weights(seed: int, *shape: int) -> Array:
    return _normal(np.random.default_rng(seed), *shape, scale=shape[0] ** -0.5)


def _proto(graph: onnx.GraphProto, opset: int = 17) -> onnx.ModelProto:
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    proto.ir_version = 8
    onnx.checker.check_model(proto)
    return proto


def _onnx_model(graph: onnx.GraphProto) -> tl.Model:
    return tl.load(_proto(graph))


def scan_builder() -> Form:
    """tl.scan over a [T, batch, width] input from an h0 input: a projection before the loop,
    the stacked states and a read-out (a dense layer over the last state) after it."""
    tl.reset()
    x = tl.placeholder("float32", ("T", BATCH, WIDTH), name="x")
    h0 = tl.placeholder("float32", (BATCH, HIDDEN), name="h0")
    w, u = tl.constant(_weights(1, WIDTH, HIDDEN)), tl.constant(_weights(2, HIDDEN, HIDDEN))
    d = tl.constant(_weights(3, HIDDEN, 2))
    xw = tl.matmul(x * 0.5 + 0.25, w)

    def step(h: Any, p: Any) -> Any:
        new = tl.tanh(p + tl.matmul(h, u))
        return new, tl.relu(new)

    last, ys = tl.scan(step, h0, xw)
    model = tl.Model({"ys": ys, "score": tl.softmax(tl.matmul(last, d), -1), "last": last})
    return Form(
        "tl.scan",
        model,
        "x",
        0,
        lambda rng, t: {"x": _normal(rng, t, BATCH, WIDTH), "h0": _normal(rng, BATCH, HIDDEN)},
    )


def scan_batch_major() -> Form:
    """tl.scan over axis 1 of a [batch, T, width] input from a constant zero state, a
    softmax over features after the loop."""
    tl.reset()
    x = tl.placeholder("float32", (BATCH, "T", WIDTH), name="x")
    w = tl.constant(_weights(4, WIDTH, WIDTH))

    def step(c: Any, xt: Any) -> Any:
        new = tl.tanh(c * 0.5 + tl.matmul(xt, w))
        return new, new * 2.0

    init = tl.constant(np.zeros((BATCH, WIDTH), np.float32))
    final, ys = tl.scan(step, init, x, axis=1)
    model = tl.Model({"probs": tl.softmax(ys, -1), "final": final})
    return Form(
        "tl.scan axis 1", model, "x", 1, lambda rng, t: {"x": _normal(rng, BATCH, t, WIDTH)}
    )


def onnx_scan() -> Form:
    """ONNX Scan-16 over axis 0: a running sum and tanh state, both stacked."""
    return Form(
        "ONNX Scan",
        tl.load(scan_proto()),
        "x",
        0,
        lambda rng, t: {
            "x": _normal(rng, t, BATCH, WIDTH),
            "h0": _normal(rng, BATCH, HIDDEN),
            "acc0": _normal(rng, BATCH, WIDTH),
        },
    )


def scan_proto() -> onnx.ModelProto:
    """The ONNX Scan model of ``onnx_scan``."""
    w = _weights(5, WIDTH, HIDDEN)
    body = helper.make_graph(
        [
            helper.make_node("MatMul", ["xt", "W"], ["p"]),
            helper.make_node("Add", ["p", "h"], ["a"]),
            helper.make_node("Tanh", ["a"], ["h2"]),
            helper.make_node("Add", ["acc", "xt"], ["acc2"]),
            helper.make_node("Identity", ["h2"], ["y"]),
        ],
        "body",
        [
            helper.make_tensor_value_info("h", TensorProto.FLOAT, [BATCH, HIDDEN]),
            helper.make_tensor_value_info("acc", TensorProto.FLOAT, [BATCH, WIDTH]),
            helper.make_tensor_value_info("xt", TensorProto.FLOAT, [BATCH, WIDTH]),
        ],
        [
            helper.make_tensor_value_info("h2", TensorProto.FLOAT, [BATCH, HIDDEN]),
            helper.make_tensor_value_info("acc2", TensorProto.FLOAT, [BATCH, WIDTH]),
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [BATCH, HIDDEN]),
        ],
        [numpy_helper.from_array(w, "W")],
    )
    scan = helper.make_node(
        "Scan", ["h0", "acc0", "x"], ["hT", "accT", "ys"], num_scan_inputs=1, body=body
    )
    graph = helper.make_graph(
        [scan],
        "onnx_scan",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["T", BATCH, WIDTH]),
            helper.make_tensor_value_info("h0", TensorProto.FLOAT, [BATCH, HIDDEN]),
            helper.make_tensor_value_info("acc0", TensorProto.FLOAT, [BATCH, WIDTH]),
        ],
        [
            helper.make_tensor_value_info("hT", TensorProto.FLOAT, [BATCH, HIDDEN]),
            helper.make_tensor_value_info("accT", TensorProto.FLOAT, [BATCH, WIDTH]),
            helper.make_tensor_value_info("ys", TensorProto.FLOAT, ["T", BATCH, HIDDEN]),
        ],
    )
    return _proto(graph)


def onnx_loop() -> Form:
    """ONNX Loop whose trip count is the sequence's length and whose body reads x[i]."""
    w = _weights(6, WIDTH, HIDDEN)
    body = helper.make_graph(
        [
            helper.make_node("Gather", ["x", "i"], ["xi"], axis=0),
            helper.make_node("MatMul", ["xi", "W"], ["p"]),
            helper.make_node("Add", ["p", "h_in"], ["s"]),
            helper.make_node("Tanh", ["s"], ["h_out"]),
            helper.make_node("Identity", ["c_in"], ["c_out"]),
            helper.make_node("Sigmoid", ["h_out"], ["y"]),
        ],
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("h_in", TensorProto.FLOAT, [BATCH, HIDDEN]),
        ],
        [
            helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("h_out", TensorProto.FLOAT, [BATCH, HIDDEN]),
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [BATCH, HIDDEN]),
        ],
        [numpy_helper.from_array(w, "W")],
    )
    graph = helper.make_graph(
        [
            helper.make_node("Shape", ["x"], ["shape"]),
            helper.make_node("Gather", ["shape", "zero"], ["trips"], axis=0),
            helper.make_node("Loop", ["trips", "", "h0"], ["hT", "ys"], body=body),
        ],
        "onnx_loop",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["T", BATCH, WIDTH]),
            helper.make_tensor_value_info("h0", TensorProto.FLOAT, [BATCH, HIDDEN]),
        ],
        [
            helper.make_tensor_value_info("hT", TensorProto.FLOAT, [BATCH, HIDDEN]),
            helper.make_tensor_value_info("ys", TensorProto.FLOAT, ["T", BATCH, HIDDEN]),
        ],
        [numpy_helper.from_array(np.array(0, np.int64), "zero")],
    )
    return Form(
        "ONNX Loop",
        _onnx_model(graph),
        "x",
        0,
        lambda rng, t: {"x": _normal(rng, t, BATCH, WIDTH), "h0": _normal(rng, BATCH, HIDDEN)},
    )


_GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


def rnn_proto(
    kind: str, *, layout: int = 0, initial: bool = True, seed: int = 7
) -> onnx.ModelProto:
    """One ONNX ``kind`` node, forward, weights as initializers; initial states as inputs
    (``initial``) or left out (zeros); ``layout`` 1 puts the batch first."""
    rng = np.random.default_rng(seed)
    rows = _GATES[kind] * HIDDEN
    inits = [
        numpy_helper.from_array(_normal(rng, 1, rows, WIDTH, scale=WIDTH**-0.5), "W"),
        numpy_helper.from_array(_normal(rng, 1, rows, HIDDEN, scale=HIDDEN**-0.5), "R"),
        numpy_helper.from_array(_normal(rng, 1, 2 * rows, scale=0.5), "B"),
    ]
    x_dims: list[int | str] = [BATCH, "T", WIDTH] if layout else ["T", BATCH, WIDTH]
    h_dims = [BATCH, 1, HIDDEN] if layout else [1, BATCH, HIDDEN]
    inputs = [helper.make_tensor_value_info("X", TensorProto.FLOAT, x_dims)]
    names = ["X", "W", "R", "B"]
    states = ["initial_h", "initial_c"] if kind == "LSTM" else ["initial_h"]
    if initial:
        names += ["", *states]
        inputs += [helper.make_tensor_value_info(s, TensorProto.FLOAT, h_dims) for s in states]
    outs = ["Y", "Y_h", "Y_c"] if kind == "LSTM" else ["Y", "Y_h"]
    node = helper.make_node(kind, names, outs, hidden_size=HIDDEN, layout=layout)
    relu = helper.make_node("Relu", ["Y"], ["Y_relu"])
    graph = helper.make_graph(
        [node, relu],
        f"onnx_{kind.lower()}",
        inputs,
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in ["Y_relu", *outs[1:]]],
        inits,
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    proto.ir_version = 8
    return proto


def onnx_rnn(kind: str, *, layout: int = 0, initial: bool = True) -> Form:
    proto = rnn_proto(kind, layout=layout, initial=initial)
    model = tl.load(proto)
    h_shape = (BATCH, 1, HIDDEN) if layout else (1, BATCH, HIDDEN)

    def inputs(rng: np.random.Generator, t: int) -> dict[str, Array]:
        x = _normal(rng, BATCH, t, WIDTH) if layout else _normal(rng, t, BATCH, WIDTH)
        feeds = {"X": x}
        if initial:
            feeds["initial_h"] = _normal(rng, *h_shape)
            if kind == "LSTM":
                feeds["initial_c"] = _normal(rng, *h_shape)
        return feeds

    label = f"ONNX {kind}{' layout 1' if layout else ''}{'' if initial else ' zero state'}"
    return Form(label, model, "X", 1 if layout else 0, inputs)


def counted_loop(trips: int) -> Form:
    """A Loop that reads its iteration number and stops after ``trips`` (a constant) or at the
    end of its sliced input: h = h / 2 + x_t * (i + 1), each h stacked."""
    g = Graph("counted")
    x = g.add_input("x", TensorType("float32", ("T", WIDTH)))
    body = Graph("body")
    i = body.add_input("i", ITERATION_TYPE)
    h = body.add_input("h", TensorType("float32", (WIDTH,)))
    xt = body.add_input("xt", TensorType("float32", (WIDTH,)))
    bem = Emitter(body)
    step = bem.op("Cast", [bem.op("Add", [i, bem.ints(1)])], {"to": tl.DType.float32})
    new = bem.op("Add", [bem.op("Mul", [h, bem.const(np.float32(0.5))]), bem.op("Mul", [xt, step])])
    body.set_outputs([bem.const(np.array(True)), new, new])
    em = Emitter(g)
    loop = Loop.build(
        em,
        body,
        max_trip_count=em.ints(trips),
        carried=[em.const(np.zeros(WIDTH, np.float32))],
        sliced=[(x, Sliced(0))],
        stacked=[Stacked(0)],
        name="counted",
    )
    g.set_outputs([g.result_named(loop.outputs[0], "h"), g.result_named(loop.outputs[1], "hs")])
    return Form(
        f"Loop with iteration and {trips} trips",
        tl.Model(g),
        "x",
        0,
        lambda rng, t: {"x": _normal(rng, t, WIDTH)},
    )


def network_rnn() -> Form:
    """A TensorRT-style network: an iterator over x, a recurrence, its last value and every
    value, counted by x's length."""
    from tensorloop.network import (
        ActivationType,
        ElementWiseOperation,
        LoopOutput,
        Network,
        TripLimit,
    )

    net = Network()
    x = net.add_input("x", "float32", (-1, BATCH, WIDTH))
    length = net.add_gather(
        net.add_shape(x).get_output(0), net.add_constant((), np.int32(0)).get_output(0), 0
    ).get_output(0)
    loop = net.add_loop()
    loop.add_trip_limit(length, TripLimit.COUNT)
    xt = loop.add_iterator(x, 0).get_output(0)
    zeros = net.add_constant((BATCH, WIDTH), np.zeros((BATCH, WIDTH), np.float32))
    rec = loop.add_recurrence(zeros.get_output(0))
    h = rec.get_output(0)
    half = net.add_constant((1, 1), np.full((1, 1), 0.5, np.float32)).get_output(0)
    mixed = net.add_elementwise(h, half, ElementWiseOperation.PROD).get_output(0)
    new = net.add_activation(
        net.add_elementwise(xt, mixed, ElementWiseOperation.SUM).get_output(0),
        ActivationType.TANH,
    ).get_output(0)
    rec.set_input(1, new)
    last = loop.add_loop_output(h, LoopOutput.LAST_VALUE)
    every = loop.add_loop_output(new, LoopOutput.CONCATENATE, 0)
    every.set_input(1, length)
    net.mark_output(last.get_output(0))
    net.mark_output(every.get_output(0))
    return Form(
        "TensorRT-style network",
        net.to_model(),
        "x",
        0,
        lambda rng, t: {"x": _normal(rng, t, BATCH, WIDTH)},
    )


def openvino_converted(proto: onnx.ModelProto, tmp: Path, name: str) -> tl.Model:
    """``proto`` converted by OpenVINO's ONNX frontend and saved as IR (LSTM becomes
    LSTMSequence, Scan a TensorIterator), read back by tensorloop."""
    import openvino as ov

    src = tmp / f"{name}.onnx"
    onnx.save(proto, src)
    ov.save_model(ov.convert_model(str(src)), str(tmp / f"{name}.xml"), compress_to_fp16=False)
    return tl.load(tmp / f"{name}.xml")


def builder_forms() -> list[Form]:
    """The forms this module builds without files: every loop form tensorloop reads or builds."""
    return [
        scan_builder(),
        scan_batch_major(),
        onnx_scan(),
        onnx_loop(),
        onnx_rnn("LSTM"),
        onnx_rnn("GRU", layout=1, initial=False),
        onnx_rnn("RNN", initial=False),
        counted_loop(5),
        network_rnn(),
    ]
