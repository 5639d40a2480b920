"""A character-level LSTM language model built layer by layer with ``tensorloop.network``, as
TensorRT's sampleCharRNN builds one (``SampleCharRNNLoop::addLSTMCell``): an embedding lookup, two
stacked LSTM layers, each a loop with an iterator over the sequence, recurrences for the hidden
and cell state and loop outputs for every step's hidden state and the last ones, then a fully
connected layer, a softmax over the vocabulary and the most likely next token.

The oracle is the same model written with ONNX's own LSTM op and run by onnxruntime. The network
is also saved as ONNX and as OpenVINO IR and run by onnxruntime and by OpenVINO.
"""

from __future__ import annotations

from collections.abc import Callable
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

SEQ, BATCH, EMBED, HIDDEN, VOCAB, LAYERS = 6, 2, 5, 8, 11, 2
RTOL = ATOL = 1e-5

# sampleCharRNN stacks the four gates' weights in the order input, cell candidate, forget,
# output; ONNX's LSTM in the order input, output, forget, cell candidate.
TRT_GATES = "icfo"
ONNX_GATES = "iofc"

SUM, PROD = ElementWiseOperation.SUM, ElementWiseOperation.PROD
NONE, TRANSPOSE = MatrixOperation.NONE, MatrixOperation.TRANSPOSE
SIGMOID, TANH = ActivationType.SIGMOID, ActivationType.TANH

# The outputs every model here has: each layer's hidden state at every step [T, B, H], its last
# hidden and cell state [B, H], and the next-token probabilities [T, B, VOCAB].
OUTPUTS = [
    *(f"{what}_{k}" for k in range(LAYERS) for what in ("hidden", "last_h", "last_c")),
    "probs",
]

LengthOf = Callable[[Network, ITensor], ITensor]


# -- weights and inputs ----------------------------------------------------------------------------
@dataclass
class LstmWeights:
    """One layer's weights, the gates stacked in sampleCharRNN's order (TRT_GATES)."""

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
            input_weights=f32(4 * HIDDEN, EMBED if k == 0 else HIDDEN),
            recurrent_weights=f32(4 * HIDDEN, HIDDEN),
            input_bias=f32(4 * HIDDEN),
            recurrent_bias=f32(4 * HIDDEN),
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
    max_length: ITensor | None = None,
) -> tuple[ITensor, ITensor, ITensor]:
    """One LSTM layer over ``data`` [T, B, in], as SampleCharRNNLoop::addLSTMCell builds it.

    ``length`` is the 0-D int32 number of steps to run; ``max_length`` (default ``length``) the
    length of the output of every step's hidden state, padded with zeros past ``length``.
    Returns (every step's hidden state [max_length, B, H], last hidden, last cell [B, H]).
    """
    loop = net.add_loop()
    loop.add_trip_limit(length, TripLimit.COUNT)

    x = loop.add_iterator(data).get_output(0)  # [B, in]: this step's input
    hidden = loop.add_recurrence(hidden0)
    cell = loop.add_recurrence(cell0)
    h, c = hidden.get_output(0), cell.get_output(0)

    # the four gates side by side, [B, 4H]: x W^T + h R^T + (b_W + b_R)
    mm_input = net.add_matrix_multiply(x, NONE, constant(net, w.input_weights), TRANSPOSE)
    mm_hidden = net.add_matrix_multiply(h, NONE, constant(net, w.recurrent_weights), TRANSPOSE)
    mm = net.add_elementwise(mm_input.get_output(0), mm_hidden.get_output(0), SUM).get_output(0)
    # [1, 4H]: TensorRT broadcasts only between tensors of equal rank
    b_w, b_r = constant(net, w.input_bias[None]), constant(net, w.recurrent_bias[None])
    bias = net.add_elementwise(b_w, b_r, SUM).get_output(0)
    gates = net.add_elementwise(mm, bias, SUM).get_output(0)

    def gate(name: str, activation: ActivationType) -> ITensor:
        start = TRT_GATES.index(name) * HIDDEN
        part = net.add_slice(gates, start=(0, start), shape=(BATCH, HIDDEN), stride=(1, 1))
        return net.add_activation(part.get_output(0), activation).get_output(0)

    i, g, f, o = gate("i", SIGMOID), gate("c", TANH), gate("f", SIGMOID), gate("o", SIGMOID)

    # c' = f * c + i * g;  h' = o * tanh(c')
    forget = net.add_elementwise(f, c, PROD).get_output(0)
    remember = net.add_elementwise(i, g, PROD).get_output(0)
    c_next = net.add_elementwise(forget, remember, SUM).get_output(0)
    c_squashed = net.add_activation(c_next, TANH).get_output(0)
    h_next = net.add_elementwise(o, c_squashed, PROD).get_output(0)

    # the back edges, the only ones TensorRT allows
    cell.set_input(1, c_next)
    hidden.set_input(1, h_next)

    every_h = loop.add_loop_output(h_next, LoopOutput.CONCATENATE, 0)
    every_h.set_input(1, max_length or length)
    last_h = loop.add_loop_output(h, LoopOutput.LAST_VALUE)
    last_c = loop.add_loop_output(c, LoopOutput.LAST_VALUE)
    return every_h.get_output(0), last_h.get_output(0), last_c.get_output(0)


def length_by_gather(net: Network, tokens: ITensor) -> ITensor:
    """tokens.shape[0] as a 0-D int32: shape, gather entry 0, cast."""
    dims = net.add_shape(tokens).get_output(0)  # [2] int64
    first = net.add_gather(dims, constant(net, np.array(0, np.int32)), axis=0).get_output(0)
    return net.add_cast(first, "int32").get_output(0)


def length_by_slice(net: Network, tokens: ITensor) -> ITensor:
    """tokens.shape[0] as a 0-D int32: shape, slice [0:1], reshape to 0-D, cast."""
    dims = net.add_shape(tokens).get_output(0)  # [2] int64
    first = net.add_slice(dims, start=(0,), shape=(1,), stride=(1,)).get_output(0)
    scalar = net.add_shuffle(first)
    scalar.reshape_dims = ()
    return net.add_cast(scalar.get_output(0), "int32").get_output(0)


def add_embedding(net: Network, tokens: ITensor, table: np.ndarray) -> ITensor:
    """[T, B] token ids -> [T, B, EMBED]."""
    return net.add_gather(constant(net, table), tokens, axis=0).get_output(0)


def add_initial_state(net: Network, k: int) -> tuple[ITensor, ITensor]:
    h0 = net.add_input(f"h0_{k}", "float32", (BATCH, HIDDEN))
    c0 = net.add_input(f"c0_{k}", "float32", (BATCH, HIDDEN))
    return h0, c0


def char_rnn_network(
    w: CharRnnWeights, seq: int | None = SEQ, length_of: LengthOf = length_by_gather
) -> Network:
    """tokens -> embedding -> LSTM x LAYERS -> FC -> softmax -> top-1 token at every step.

    ``seq`` None leaves the time axis dynamic: its length is then computed with ``length_of``.
    """
    net = Network("char_rnn")
    tokens = net.add_input("tokens", "int32", (seq or -1, BATCH))
    length = length_of(net, tokens) if seq is None else constant(net, np.array(seq, np.int32))

    data = add_embedding(net, tokens, w.embedding)
    for k, layer in enumerate(w.layers):
        h0, c0 = add_initial_state(net, k)
        data, last_h, last_c = add_lstm_cell(net, data, h0, c0, length, layer)
        net.mark_output(named(data, f"hidden_{k}"))
        net.mark_output(named(last_h, f"last_h_{k}"))
        net.mark_output(named(last_c, f"last_c_{k}"))

    # [T, B, H] x [1, H, V] + [1, 1, V]: matrix multiply broadcasts the batch dims
    fc = net.add_matrix_multiply(data, NONE, constant(net, w.fc_weights[None]), NONE)
    logits = net.add_elementwise(fc.get_output(0), constant(net, w.fc_bias[None, None]), SUM)
    probs = net.add_softmax(logits.get_output(0))
    probs.axes = 1 << 2  # the vocabulary axis (also the default: the last one)
    net.mark_output(named(probs.get_output(0), "probs"))

    top = net.add_topk(probs.get_output(0), TopKOperation.MAX, 1, 1 << 2)
    net.mark_output(named(top.get_output(1), "next_token"))  # int32 [T, B, 1]
    return net


# -- the oracle: ONNX's LSTM op on onnxruntime -----------------------------------------------------
def to_onnx_gates(stacked: np.ndarray) -> np.ndarray:
    """The four gate blocks on axis 0 from sampleCharRNN's order to ONNX's."""
    blocks = dict(zip(TRT_GATES, np.split(stacked, 4), strict=True))
    return np.concatenate([blocks[gate] for gate in ONNX_GATES])


def onnx_lstm_inits(k: int, w: LstmWeights) -> list[onnx.TensorProto]:
    """ONNX LSTM's W [1, 4H, in], R [1, 4H, H] and B [1, 8H] (W's bias, then R's)."""
    bias = np.concatenate([to_onnx_gates(w.input_bias), to_onnx_gates(w.recurrent_bias)])
    return [
        numpy_helper.from_array(to_onnx_gates(w.input_weights)[None], f"W_{k}"),
        numpy_helper.from_array(to_onnx_gates(w.recurrent_weights)[None], f"R_{k}"),
        numpy_helper.from_array(bias[None], f"B_{k}"),
    ]


def onnx_char_rnn(w: CharRnnWeights, seq: int | str = SEQ) -> onnx.ModelProto:
    """The same model with Gather, one ONNX LSTM node a layer, MatMul + Add and Softmax. The
    initial states are inputs h0_k, c0_k of shape [1, B, H] (one direction)."""
    f32, state = TensorProto.FLOAT, [1, BATCH, HIDDEN]
    inputs = [helper.make_tensor_value_info("tokens", TensorProto.INT32, [seq, BATCH])]
    inits = [
        numpy_helper.from_array(w.embedding, "embedding"),
        numpy_helper.from_array(w.fc_weights, "fc_w"),
        numpy_helper.from_array(w.fc_bias, "fc_b"),
        numpy_helper.from_array(np.array([0], np.int64), "axis0"),
        numpy_helper.from_array(np.array([1], np.int64), "axis1"),
    ]
    nodes = [helper.make_node("Gather", ["embedding", "tokens"], ["x_0"], axis=0)]
    for k, layer in enumerate(w.layers):
        inputs += [helper.make_tensor_value_info(f"{s}_{k}", f32, state) for s in ("h0", "c0")]
        inits += onnx_lstm_inits(k, layer)
        lstm_inputs = [f"x_{k}", f"W_{k}", f"R_{k}", f"B_{k}", "", f"h0_{k}", f"c0_{k}"]
        nodes += [
            helper.make_node(
                "LSTM", lstm_inputs, [f"y_{k}", f"y_h_{k}", f"y_c_{k}"], hidden_size=HIDDEN
            ),
            # Y is [T, directions, B, H]; Y_h and Y_c are [directions, B, H]
            helper.make_node("Squeeze", [f"y_{k}", "axis1"], [f"hidden_{k}"]),
            helper.make_node("Squeeze", [f"y_h_{k}", "axis0"], [f"last_h_{k}"]),
            helper.make_node("Squeeze", [f"y_c_{k}", "axis0"], [f"last_c_{k}"]),
            helper.make_node("Identity", [f"hidden_{k}"], [f"x_{k + 1}"]),
        ]
    nodes += [
        helper.make_node("MatMul", [f"x_{LAYERS}", "fc_w"], ["fc"]),
        helper.make_node("Add", ["fc", "fc_b"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=-1),
    ]
    shapes: dict[str, list[int | str]] = {
        "hidden": [seq, BATCH, HIDDEN],
        "last_h": [BATCH, HIDDEN],
        "last_c": [BATCH, HIDDEN],
        "probs": [seq, BATCH, VOCAB],
    }
    outputs = [
        helper.make_tensor_value_info(name, f32, shapes[name.rstrip("_0123456789")])
        for name in OUTPUTS
    ]
    graph = helper.make_graph(nodes, "char_rnn_oracle", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model, full_check=True)
    return model


def run_onnxruntime(
    model: onnx.ModelProto | Path, feeds: dict[str, np.ndarray]
) -> dict[str, np.ndarray]:
    source = str(model) if isinstance(model, Path) else model.SerializeToString()
    session = ort.InferenceSession(source, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return {n: np.asarray(y) for n, y in zip(names, session.run(None, feeds), strict=True)}


def oracle(
    w: CharRnnWeights, feeds: dict[str, np.ndarray], seq: int | str = SEQ
) -> dict[str, np.ndarray]:
    """onnxruntime's outputs for ``onnx_char_rnn`` (``seq`` may name a dynamic time axis)."""
    states = {k: v[None] for k, v in feeds.items() if k != "tokens"}  # [B, H] -> [1, B, H]
    return run_onnxruntime(onnx_char_rnn(w, seq), {"tokens": feeds["tokens"], **states})


def run_model(model: tl.Model, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {name: np.asarray(value) for name, value in model.run(feeds).items()}


def assert_outputs_close(got: dict[str, Any], want: dict[str, Any], names: list[str]) -> None:
    for name in names:
        g, x = np.asarray(got[name]), np.asarray(want[name])
        assert (g.dtype, g.shape) == (x.dtype, x.shape), name
        np.testing.assert_allclose(g, x, rtol=RTOL, atol=ATOL, err_msg=name)


# -- tests -----------------------------------------------------------------------------------------
def test_each_lstm_layer_is_one_loop() -> None:
    net = char_rnn_network(random_weights())
    net.validate()
    assert len(net.loops) == LAYERS
    for loop in net.loops:
        assert len(loop.iterators) == 1 and len(loop.recurrences) == 2
        kinds = [o.kind for o in loop.outputs]
        assert kinds == [LoopOutput.CONCATENATE, LoopOutput.LAST_VALUE, LoopOutput.LAST_VALUE]
    outputs = {t.name: t for t in map(net.get_output, range(net.num_outputs))}
    assert list(outputs) == [*OUTPUTS, "next_token"]
    assert outputs["hidden_1"].shape == (SEQ, BATCH, HIDDEN)
    assert outputs["last_c_1"].shape == (BATCH, HIDDEN)
    assert outputs["probs"].shape == (SEQ, BATCH, VOCAB)
    assert outputs["next_token"].shape == (SEQ, BATCH, 1)


def test_same_as_onnx_lstm_on_onnxruntime() -> None:
    w, feeds = random_weights(), random_inputs()
    got = run_model(char_rnn_network(w).to_model(), feeds)
    want = oracle(w, feeds)
    assert_outputs_close(got, want, OUTPUTS)
    np.testing.assert_allclose(got["probs"].sum(-1), 1.0, rtol=1e-6)
    assert got["next_token"].dtype == np.int32
    np.testing.assert_array_equal(got["next_token"][..., 0], want["probs"].argmax(-1))


@pytest.mark.parametrize("length_of", [length_by_gather, length_by_slice])
def test_dynamic_sequence_length(length_of: LengthOf) -> None:
    w = random_weights()
    net = char_rnn_network(w, seq=None, length_of=length_of)
    assert net.get_input(0).shape == (-1, BATCH)
    assert net.get_output(0).shape == (-1, BATCH, HIDDEN)
    model = net.to_model()
    for seq in (3, 7):
        feeds = random_inputs(seq, seed=seq)
        got = run_model(model, feeds)
        assert got["next_token"].shape == (seq, BATCH, 1)
        assert_outputs_close(got, oracle(w, feeds, seq="T"), OUTPUTS)


def test_hidden_states_padded_to_max_length() -> None:
    """sampleCharRNN sets the CONCATENATE output's length to its maximum sequence length: the
    steps not run are zeros, and a length below the steps run is a run-time error."""
    w, max_length = random_weights(), 9
    net = Network("padded")
    tokens = net.add_input("tokens", "int32", (-1, BATCH))
    data = add_embedding(net, tokens, w.embedding)
    h0, c0 = add_initial_state(net, 0)
    length, longest = length_by_gather(net, tokens), constant(net, np.array(max_length, np.int32))
    hidden, _, _ = add_lstm_cell(net, data, h0, c0, length, w.layers[0], max_length=longest)
    net.mark_output(named(hidden, "hidden_0"))
    assert hidden.shape == (max_length, BATCH, HIDDEN)
    model = net.to_model()
    for seq in (3, max_length):
        feeds = random_inputs(seq, seed=seq)
        got = model.run({k: feeds[k] for k in ("tokens", "h0_0", "c0_0")})["hidden_0"]
        assert got.shape == (max_length, BATCH, HIDDEN)
        want = oracle(w, feeds, seq="T")["hidden_0"]
        np.testing.assert_allclose(got[:seq], want, rtol=RTOL, atol=ATOL)
        np.testing.assert_array_equal(got[seq:], 0.0)
    feeds = random_inputs(max_length + 1)
    with pytest.raises(tl.ExecutionError, match="less than the number of iterations"):
        model.run({k: feeds[k] for k in ("tokens", "h0_0", "c0_0")})


# -- saved as ONNX and as OpenVINO IR --------------------------------------------------------------
# (sequence length of the network or None for a dynamic one, the lengths to run it on)
SAVED_CASES = pytest.mark.parametrize(
    ("seq", "lengths"), [(SEQ, [SEQ]), (None, [3, 7])], ids=["static", "dynamic"]
)


@SAVED_CASES
def test_saved_as_onnx_runs_on_onnxruntime(
    tmp_path: Path, seq: int | None, lengths: list[int]
) -> None:
    model = char_rnn_network(random_weights(), seq).to_model()
    path = tmp_path / "char_rnn.onnx"
    tl.save(model, path)
    for n in lengths:
        feeds = random_inputs(n, seed=n)
        ours, theirs = run_model(model, feeds), run_onnxruntime(path, feeds)
        assert list(theirs) == [*OUTPUTS, "next_token"]
        assert_outputs_close(theirs, ours, list(ours))


def run_openvino(path: Path, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    ov = pytest.importorskip("openvino")
    core = ov.Core()
    # f32: the CPU plugin may otherwise compute in bf16
    compiled = core.compile_model(
        core.read_model(str(path)), "CPU", {"INFERENCE_PRECISION_HINT": "f32"}
    )
    result = compiled(feeds)
    return {out.get_any_name(): np.asarray(result[out]) for out in compiled.outputs}


@SAVED_CASES
def test_saved_as_openvino_ir_runs_on_openvino(
    tmp_path: Path, seq: int | None, lengths: list[int]
) -> None:
    net = char_rnn_network(random_weights(), seq)
    model = net.to_model()
    path = tmp_path / "char_rnn.xml"
    tl.save(model, path)
    for n in lengths:
        feeds = random_inputs(n, seed=n)
        ours, theirs = run_model(model, feeds), run_openvino(path, feeds)
        assert sorted(theirs) == sorted([*OUTPUTS, "next_token"])
        assert_outputs_close(theirs, ours, OUTPUTS)
        np.testing.assert_array_equal(theirs["next_token"], ours["next_token"])
