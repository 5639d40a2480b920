"""Models and records for the batch-inference tests (``tests/batch``, ``tests/ray``): recurrent
models with a batch axis and a sequence of any length, and records of mixed lengths."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper

import tensorloop as tl

Array = np.ndarray[Any, Any]
WIDTH, HIDDEN = 5, 6


def _weights(seed: int, *shape: int) -> Array:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * shape[0] ** -0.5).astype(np.float32)


def tagger(final: bool = True) -> tl.Model:
    """A batch-first tagger: a tanh RNN by ``tl.scan`` over ``x`` [B, T, WIDTH] (the time axis
    1), per-step log-probabilities ``tags`` [B, T, 3] and (``final``) the final state ``last``
    [B, HIDDEN], which a padded tail would change."""
    tl.reset()
    x = tl.placeholder("float32", ("B", "T", WIDTH), name="x")
    w, u = tl.constant(_weights(1, WIDTH, HIDDEN)), tl.constant(_weights(2, HIDDEN, HIDDEN))
    d = tl.constant(_weights(3, HIDDEN, 3))
    batch = tl.slice(tl.shape_of(x), [0], [1])
    h0 = tl.expand(tl.constant(np.zeros((1, HIDDEN), np.float32)), tl.concat([batch, [HIDDEN]], 0))

    def step(h: Any, xt: Any) -> Any:
        new = tl.tanh(tl.matmul(xt, w) + tl.matmul(h, u))
        return new, new

    last, hs = tl.scan(step, h0, x, axis=1)
    tags = tl.log(tl.softmax(tl.matmul(hs, d), -1))
    outputs = {"tags": tags, "last": last} if final else {"tags": tags}
    return tl.Model(outputs, name="tagger")


def bilstm_proto(hidden: int = HIDDEN, lengths: bool = False) -> onnx.ModelProto:
    """An ONNX bidirectional LSTM over ``X`` [T, B, WIDTH] (layout 0: batch axis 1) with its
    ``Y`` [T, 2, B, hidden] and ``Y_h`` [2, B, hidden]: the reverse direction needs the whole
    sequence, so padding would change every step, unless (``lengths``) the model takes each
    sequence's length (``sequence_lens`` [B], int32) and masks by it."""
    rng = np.random.default_rng(7)
    gates = 4 * hidden
    w = (rng.standard_normal((2, gates, WIDTH)) * 0.3).astype(np.float32)
    r = (rng.standard_normal((2, gates, hidden)) * 0.3).astype(np.float32)
    b = (rng.standard_normal((2, 2 * gates)) * 0.1).astype(np.float32)
    node = helper.make_node(
        "LSTM",
        ["X", "W", "R", "B", *(["sequence_lens"] if lengths else [])],
        ["Y", "Y_h"],
        hidden_size=hidden,
        direction="bidirectional",
    )
    inputs = [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["T", "B", WIDTH])]
    if lengths:
        inputs.append(helper.make_tensor_value_info("sequence_lens", TensorProto.INT32, ["B"]))
    graph = helper.make_graph(
        [node],
        "bilstm",
        inputs,
        [
            helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["T", 2, "B", hidden]),
            helper.make_tensor_value_info("Y_h", TensorProto.FLOAT, [2, "B", hidden]),
        ],
        [
            helper.make_tensor("W", TensorProto.FLOAT, w.shape, w.ravel()),
            helper.make_tensor("R", TensorProto.FLOAT, r.shape, r.ravel()),
            helper.make_tensor("B", TensorProto.FLOAT, b.shape, b.ravel()),
        ],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    proto.ir_version = 8
    return proto


def bilstm(lengths: bool = False) -> tl.Model:
    return tl.load(bilstm_proto(lengths=lengths))


def unbatched_scan() -> tl.Model:
    """A model without a batch axis: a running mean-and-tanh over ``xs`` [T, WIDTH] with a
    threshold scalar input ``k``; its records are whole inputs (``batch_axis=None``)."""
    tl.reset()
    xs = tl.placeholder("float32", ("T", WIDTH), name="xs")
    k = tl.placeholder("float32", (), name="k")

    def step(h: Any, x: Any) -> Any:
        new = tl.tanh(h * 0.5 + x * k)
        return new, new

    last, ys = tl.scan(step, tl.constant(np.zeros(WIDTH, np.float32)), xs)
    return tl.Model({"ys": ys, "last": last}, name="unbatched")


def records(
    seed: int, lengths: list[int], *, name: str = "x", width: int = WIDTH
) -> list[dict[str, Array]]:
    """One record per length: ``name`` of shape [length, width], float32."""
    rng = np.random.default_rng(seed)
    return [{name: rng.standard_normal((n, width)).astype(np.float32)} for n in lengths]


def run_alone(
    model: tl.Model,
    record: dict[str, Any],
    axes: dict[str, int | None],
    out_axes: dict[str, int | None],
    backend: str | None = None,
) -> dict[str, Array]:
    """What a record's outputs are: one ``model.run`` of it as a batch of one, each output's
    batch axis taken away (``out_axes``)."""
    inputs = {
        n: v if axes.get(n) is None else np.expand_dims(v, axes[n]) for n, v in record.items()
    }
    out = model.run(inputs, backend=backend)
    return {
        n: (np.asarray(v) if out_axes[n] is None else np.take(np.asarray(v), 0, axis=out_axes[n]))
        for n, v in out.items()
    }
