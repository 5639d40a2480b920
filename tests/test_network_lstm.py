"""A character-level LSTM language model built layer by layer with ``tensorloop.network``, in the
style of TensorRT's sampleCharRNN (``SampleCharRNNLoop::addLSTMCell``): an embedding lookup, two
stacked LSTM layers, each a loop with an iterator over the sequence, recurrences for the hidden
and cell state and loop outputs for every step's hidden state and the final ones, then a fully
connected layer and a softmax over the vocabulary.

The oracle is the same model written with ONNX's own LSTM op and run by onnxruntime; the network
is also saved as ONNX and as OpenVINO IR and run by onnxruntime and OpenVINO.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import tensorloop as tl
from tensorloop.network import (
    ActivationType,
    ElementWiseOperation,
    ITensor,
    LoopOutput,
    MatrixOperation,
    Network,
    TopKOperation,
    TripLimit,
)

SEQ, BATCH, HIDDEN, EMBED, VOCAB, LAYERS = 6, 2, 8, 5, 11, 2
RTOL = ATOL = 1e-5

# The gates as sampleCharRNN stacks them in its weight matrices (input, cell candidate, forget,
# output), and where each sits in ONNX's order (input, output, forget, cell candidate).
TRT_GATES = "icfo"
ONNX_GATES = "iofc"

SUM, PROD = ElementWiseOperation.SUM, ElementWiseOperation.PROD
NONE, TRANSPOSE = MatrixOperation.NONE, MatrixOperation.TRANSPOSE


# -- weights ---------------------------------------------------------------------------------------
@dataclass
class LstmWeights:
    """One layer's weights, gates stacked in sampleCharRNN's order (TRT_GATES)."""

    input_weights: np.ndarray  # [4H, in]
    recurrent_weights: np.ndarray  # [4H, H]
    input_bias: np.ndarray  # [4H]
    recurrent_bias: np.ndarray  # [4H]


@dataclass
class CharRnnWeights:
    embedding: np.ndarray  # [VOCAB, EMBED]
    layers: list[LstmWeights]
    fc_weights: np.ndarray  # [HIDDEN, VOCAB]
    fc_bias: np.ndarray  # [VOCAB]


def random_weights(seed: int = 0) -> CharRnnWeights:
    rng = np.random.default_rng(seed)

    def f32(*shape: int, scale: float = 0.5) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    layers = [
        LstmWeights(
            f32(4 * HIDDEN, EMBED if k == 0 else HIDDEN),
            f32(4 * HIDDEN, HIDDEN),
            f32(4 * HIDDEN),
            f32(4 * HIDDEN),
        )
        for k in range(LAYERS)
    ]
    return CharRnnWeights(f32(VOCAB, EMBED, scale=1.0), layers, f32(HIDDEN, VOCAB), f32(VOCAB))


def random_inputs(seq: int = SEQ, seed: int = 1) -> dict[str, np.ndarray]:
    """Token ids [seq, BATCH] and each layer's initial hidden and cell state [BATCH, HIDDEN]."""
    rng = np.random.default_rng(seed)
    feeds = {"tokens": rng.integers(0, VOCAB, (seq, BATCH)).astype(np.int32)}
    for k in range(LAYERS):
        feeds[f"h0_{k}"] = rng.standard_normal((BATCH, HIDDEN)).astype(np.float32)
        feeds[f"c0_{k}"] = rng.standard_normal((BATCH, HIDDEN)).astype(np.float32)
    return feeds


# -- the network, layer by layer -------------------------------------------------------------------
def constant(net: Network, array: np.ndarray) -> ITensor:
    return net.add_constant(array.shape, array).get_output(0)


def named(tensor: ITensor, name: str) -> ITensor:
    tensor.name = name
    return tensor


def add_lstm_cell(
    net: Network,
    data: ITensor,
    hidden0: ITensor,
    cell0: ITensor,
    length: ITensor,
    w: LstmWeights,
) -> tuple[ITensor, ITensor, ITensor]:
    """One LSTM layer over ``data`` [T, B, in], as SampleCharRNNLoop::addLSTMCell builds it.

    ``length`` is the 0-D int32 sequence length: the trip count, and the length of the output
    of every step's hidden state. Returns (hidden states [T, B, H], last hidden, last cell).
    """
    loop = net.add_loop()
    loop.add_trip_limit(length, TripLimit.COUNT)

    x = loop.add_iterator(data).get_output(0)  # [B, in]: one time step
    hidden = loop.add_recurrence(hidden0)
    cell = loop.add_recurrence(cell0)
    h, c = hidden.get_output(0), cell.get_output(0)

    # gates = x W^T + h R^T + (b_W + b_R), all four gates side by side: [B, 4H]
    mm_input = net.add_matrix_multiply(x, NONE, constant(net, w.input_weights), TRANSPOSE)
    mm_hidden = net.add_matrix_multiply(h, NONE, constant(net, w.recurrent_weights), TRANSPOSE)
    mm = net.add_elementwise(mm_input.get_output(0), mm_hidden.get_output(0), SUM).get_output(0)
    bias = net.add_elementwise(
        constant(net, w.input_bias[None]), constant(net, w.recurrent_bias[None]), SUM
    ).get_output(0)  # [1, 4H]: TensorRT broadcasts only between tensors of equal rank
    gates = net.add_elementwise(mm, bias, SUM).get_output(0)

    def gate(name: str, activation: ActivationType) -> ITensor:
        k = TRT_GATES.index(name)
        part = net.add_slice(gates, start=(0, k * HIDDEN), shape=(BATCH, HIDDEN), stride=(1, 1))
        return net.add_activation(part.get_output(0), activation).get_output(0)

    i = gate("i", ActivationType.SIGMOID)
    g = gate("c", ActivationType.TANH)
    f = gate("f", ActivationType.SIGMOID)
    o = gate("o", ActivationType.SIGMOID)

    # c' = f * c + i * g;  h' = o * tanh(c')
    forget = net.add_elementwise(f, c, PROD).get_output(0)
    remember = net.add_elementwise(i, g, PROD).get_output(0)
    c_next = net.add_elementwise(forget, remember, SUM).get_output(0)
    c_squashed = net.add_activation(c_next, ActivationType.TANH).get_output(0)
    h_next = net.add_elementwise(o, c_squashed, PROD).get_output(0)

    # the back edges: the only ones TensorRT allows
    cell.set_input(1, c_next)
    hidden.set_input(1, h_next)

    every_h = loop.add_loop_output(h_next, LoopOutput.CONCATENATE, 0)
    every_h.set_input(1, length)
    last_h = loop.add_loop_output(h, LoopOutput.LAST_VALUE)
    last_c = loop.add_loop_output(c, LoopOutput.LAST_VALUE)
    return every_h.get_output(0), last_h.get_output(0), last_c.get_output(0)


def static_length(net: Network, seq: int) -> ITensor:
    return constant(net, np.array(seq, np.int32))


def length_by_gather(net: Network, tokens: ITensor) -> ITensor:
    """tokens.shape[0] as a 0-D int32: shape, gather of entry 0, cast."""
    dims = net.add_shape(tokens).get_output(0)  # [2] int64
    first = net.add_gather(dims, constant(net, np.array(0, np.int32)), axis=0).get_output(0)
    return net.add_cast(first, "int32").get_output(0)


def length_by_slice(net: Network, tokens: ITensor) -> ITensor:
    """tokens.shape[0] as a 0-D int32: shape, slice of entry 0, reshape to 0-D, cast."""
    dims = net.add_shape(tokens).get_output(0)  # [2] int64
    first = net.add_slice(dims, start=(0,), shape=(1,), stride=(1,)).get_output(0)  # [1]
    scalar = net.add_shuffle(first)
    scalar.reshape_dims = ()
    return net.add_cast(scalar.get_output(0), "int32").get_output(0)


def char_rnn_network(w: CharRnnWeights, seq: int | None = SEQ, length_of: Any = None) -> Network:
    """Embedding -> LSTM x LAYERS -> FC -> softmax, with the top-1 token of every step.

    ``seq`` None makes the time axis dynamic; its length is then computed with ``length_of``.
    """
    net = Network("char_rnn")
    tokens = net.add_input("tokens", "int32", (seq or -1, BATCH))
    length = static_length(net, seq) if seq is not None else length_of(net, tokens)

    # embedding lookup: [T, B] ids -> [T, B, EMBED]
    data = net.add_gather(constant(net, w.embedding), tokens, axis=0).get_output(0)

    for k, layer in enumerate(w.layers):
        h0 = net.add_input(f"h0_{k}", "float32", (BATCH, HIDDEN))
        c0 = net.add_input(f"c0_{k}", "float32", (BATCH, HIDDEN))
        data, last_h, last_c = add_lstm_cell(net, data, h0, c0, length, layer)
        net.mark_output(named(data, f"hidden_{k}"))
        net.mark_output(named(last_h, f"last_h_{k}"))
        net.mark_output(named(last_c, f"last_c_{k}"))

    # fully connected: [T, B, H] x [1, H, V] + [1, 1, V]; matmul broadcasts the batch dims
    fc = net.add_matrix_multiply(data, NONE, constant(net, w.fc_weights[None]), NONE)
    logits = net.add_elementwise(fc.get_output(0), constant(net, w.fc_bias[None, None]), SUM)
    probs = net.add_softmax(logits.get_output(0))
    probs.axes = 1 << 2
    net.mark_output(named(probs.get_output(0), "probs"))

    top = net.add_topk(probs.get_output(0), TopKOperation.MAX, 1, 1 << 2)
    net.mark_output(named(top.get_output(1), "next_token"))
    return net


# -- the oracle: ONNX's LSTM op ---------------------------------------------------------------------
def to_onnx_gates(stacked: np.ndarray) -> np.ndarray:
    """Reorder the four gate blocks on axis 0 from sampleCharRNN's order to ONNX's."""
    blocks = np.split(stacked, 4, axis=0)
    return np.concatenate([blocks[TRT_GATES.index(g)] for g in ONNX_GATES], axis=0)


ONNX_OUTPUTS = [
    *(f"{what}_{k}" for k in range(LAYERS) for what in ("hidden", "last_h", "last_c")),
    "probs",
]


def onnx_char_rnn(w: CharRnnWeights, seq: int | str = SEQ) -> onnx.ModelProto:
    """The same model with Gather, ONNX LSTM (one node a layer), MatMul + Add and Softmax."""
    nodes: list[onnx.NodeProto] = []
    inits = [
        numpy_helper.from_array(w.embedding, "embedding"),
        numpy_helper.from_array(w.fc_weights, "fc_w"),
        numpy_helper.from_array(w.fc_bias, "fc_b"),
        numpy_helper.from_array(np.array([1], np.int64), "axis1"),
    ]
    inputs = [helper.make_tensor_value_info("tokens", TensorProto.INT32, [seq, BATCH])]
    nodes.append(helper.make_node("Gather", ["embedding", "tokens"], ["x_0"], axis=0))
    for k, layer in enumerate(w.layers):
        inits += [
            numpy_helper.from_array(to_onnx_gates(layer.input_weights)[None], f"W_{k}"),
            numpy_helper.from_array(to_onnx_gates(layer.recurrent_weights)[None], f"R_{k}"),
            numpy_helper.from_array(
                np.concatenate(
                    [to_onnx_gates(layer.input_bias), to_onnx_gates(layer.recurrent_bias)]
                )[None],
                f"B_{k}",
            ),
        ]
        for state in ("h0", "c0"):
            inputs.append(
                helper.make_tensor_value_info(f"{state}_{k}", TensorProto.FLOAT, [1, BATCH, HIDDEN])
            )
        nodes += [
            helper.make_node(
                "LSTM",
                [f"x_{k}", f"W_{k}", f"R_{k}", f"B_{k}", "", f"h0_{k}", f"c0_{k}"],
                [f"y_{k}", f"yh_{k}", f"yc_{k}"],
                hidden_size=HIDDEN,
            ),
            # Y is [T, directions, B, H]; Y_h and Y_c are [directions, B, H]
            helper.make_node("Squeeze", [f"y_{k}", "axis1"], [f"hidden_{k}"]),
            helper.make_node("Squeeze", [f"yh_{k}", "axis0"], [f"last_h_{k}"]),
            helper.make_node("Squeeze", [f"yc_{k}", "axis0"], [f"last_c_{k}"]),
            helper.make_node("Identity", [f"hidden_{k}"], [f"x_{k + 1}"]),
        ]
    inits.append(numpy_helper.from_array(np.array([0], np.int64), "axis0"))
    nodes += [
        helper.make_node("MatMul", [f"x_{LAYERS}", "fc_w"], ["fc"]),
        helper.make_node("Add", ["fc", "fc_b"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=-1),
    ]
    shapes = {"hidden": [seq, BATCH, HIDDEN], "last_h": [BATCH, HIDDEN], "last_c": [BATCH, HIDDEN]}
    outputs = [
        helper.make_tensor_value_info(
            name, TensorProto.FLOAT, [seq, BATCH, VOCAB] if name == "probs" else shapes[name[:-2]]
        )
        for name in ONNX_OUTPUTS
    ]
    graph = helper.make_graph(nodes, "char_rnn_oracle", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model)
    return model


def run_onnxruntime(model: onnx.ModelProto | str, feeds: dict[str, np.ndarray]) -> dict[str, Any]:
    source = model if isinstance(model, str) else model.SerializeToString()
    session = ort.InferenceSession(source, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, feeds), strict=True))


def oracle(w: CharRnnWeights, feeds: dict[str, np.ndarray], seq: int | str = SEQ) -> dict:
    """onnxruntime's outputs of ONNX's LSTM, which takes the initial states as [1, B, H]."""
    lifted = {k: v if k == "tokens" else v[None] for k, v in feeds.items()}
    return run_onnxruntime(onnx_char_rnn(w, seq), lifted)


def assert_outputs_close(got: dict[str, Any], want: dict[str, Any], names: list[str]) -> None:
    for name in names:
        g, x = np.asarray(got[name]), np.asarray(want[name])
        assert g.dtype == x.dtype and g.shape == x.shape, (name, g.dtype, g.shape, x.shape)
        np.testing.assert_allclose(g, x, rtol=RTOL, atol=ATOL, err_msg=name)


def run_network(net: Network, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    outputs = net.to_model().run(feeds)
    return {name: np.asarray(value) for name, value in outputs.items()}


# -- tests -----------------------------------------------------------------------------------------
def test_network_has_one_loop_a_layer() -> None:
    net = char_rnn_network(random_weights())
    net.validate()
    assert len(net.loops) == LAYERS
    for loop in net.loops:
        assert len(loop.iterators) == 1 and len(loop.recurrences) == 2
        assert [o.kind for o in loop.outputs] == [
            LoopOutput.CONCATENATE,
            LoopOutput.LAST_VALUE,
            LoopOutput.LAST_VALUE,
        ]
    assert net.get_output(0).shape == (SEQ, BATCH, HIDDEN)
    assert [net.get_output(i).name for i in range(net.num_outputs)] == [
        *ONNX_OUTPUTS,
        "next_token",
    ]


def test_matches_onnx_lstm_on_onnxruntime() -> None:
    w, feeds = random_weights(), random_inputs()
    got = run_network(char_rnn_network(w), feeds)
    want = oracle(w, feeds)
    assert_outputs_close(got, want, ONNX_OUTPUTS)
    np.testing.assert_allclose(got["probs"].sum(-1), 1.0, rtol=1e-6)
    assert got["next_token"].dtype == np.int32
    np.testing.assert_array_equal(got["next_token"][..., 0], want["probs"].argmax(-1))


def test_saved_as_onnx_runs_on_onnxruntime(tmp_path: Path) -> None:
    net, feeds = char_rnn_network(random_weights()), random_inputs()
    model = net.to_model()
    path = tmp_path / "char_rnn.onnx"
    tl.save(model, path)
    ours = {k: np.asarray(v) for k, v in model.run(feeds).items()}
    theirs = run_onnxruntime(str(path), feeds)
    assert set(theirs) == set(ours)
    assert_outputs_close(theirs, ours, list(ours))


def test_saved_as_openvino_ir_runs_on_openvino(tmp_path: Path) -> None:
    ov = pytest.importorskip("openvino")
    net, feeds = char_rnn_network(random_weights()), random_inputs()
    model = net.to_model()
    path = tmp_path / "char_rnn.xml"
    tl.save(model, path)
    ours = {k: np.asarray(v) for k, v in model.run(feeds).items()}
    compiled = ov.Core().compile_model(
        ov.Core().read_model(str(path)), "CPU", {"INFERENCE_PRECISION_HINT": "f32"}
    )
    result = compiled(feeds)
    theirs = {out.get_any_name(): np.asarray(result[out]) for out in compiled.outputs}
    assert set(theirs) == set(ours)
    assert_outputs_close(theirs, ours, list(ours))


@pytest.mark.parametrize("length_of", [length_by_gather, length_by_slice])
def test_dynamic_sequence_length(length_of: Any) -> None:
    w = random_weights()
    net = char_rnn_network(w, seq=None, length_of=length_of)
    assert net.get_input(0).shape == (-1, BATCH)
    model = net.to_model()
    for seq in (3, 7):
        feeds = random_inputs(seq, seed=seq)
        got = {k: np.asarray(v) for k, v in model.run(feeds).items()}
        assert got["hidden_1"].shape == (seq, BATCH, HIDDEN)
        assert_outputs_close(got, oracle(w, feeds, seq="T"), ONNX_OUTPUTS)
