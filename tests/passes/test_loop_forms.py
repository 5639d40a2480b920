"""The loop-form rewrites (``passes/loop_forms.py``): a tf.while-style counted loop, carried
values passed on unchanged, and rows read by index become the canonical roles, each without
changing any result (a Hypothesis law, bit for bit) or error."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

import tensorloop as tl
from tensorloop.ir.graph import clone_graph
from tensorloop.ir.loop import Loop
from tensorloop.passes.loop_forms import (
    count_while_loops,
    pass_through_invariants,
    slice_indexed_reads,
)

Array = np.ndarray[Any, Any]


def _while_rnn() -> tl.Model:
    """What tf2onnx writes for a Keras SimpleRNN: a Loop with a constant true condition whose
    body counts ``time`` from 0, continues while ``time + 1 < n`` (``n`` carried unchanged),
    carries its weight unchanged and reads ``x[time]``."""
    body = helper.make_graph(
        [
            helper.make_node("Add", ["time", "one"], ["time_next"]),
            helper.make_node("Gather", ["x", "time"], ["xt"], axis=0),
            helper.make_node("MatMul", ["h", "w_in"], ["hw"]),
            helper.make_node("Add", ["xt", "hw"], ["s"]),
            helper.make_node("Tanh", ["s"], ["h_next"]),
            helper.make_node("Identity", ["n_in"], ["n_out"]),
            helper.make_node("Identity", ["w_in"], ["w_out"]),
            helper.make_node("Cast", ["time_next"], ["t64"], to=TensorProto.INT64),
            helper.make_node("Cast", ["n_in"], ["n64"], to=TensorProto.INT64),
            helper.make_node("Less", ["t64", "n64"], ["go"]),
            helper.make_node("Identity", ["h_next"], ["y"]),
        ],
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("c", TensorProto.BOOL, []),
            helper.make_tensor_value_info("time", TensorProto.INT32, []),
            helper.make_tensor_value_info("h", TensorProto.FLOAT, [2, 3]),
            helper.make_tensor_value_info("n_in", TensorProto.INT32, []),
            helper.make_tensor_value_info("w_in", TensorProto.FLOAT, [3, 3]),
        ],
        [
            helper.make_tensor_value_info("go", TensorProto.BOOL, []),
            helper.make_tensor_value_info("time_next", TensorProto.INT32, []),
            helper.make_tensor_value_info("h_next", TensorProto.FLOAT, [2, 3]),
            helper.make_tensor_value_info("n_out", TensorProto.INT32, []),
            helper.make_tensor_value_info("w_out", TensorProto.FLOAT, [3, 3]),
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3]),
        ],
        [numpy_helper.from_array(np.array(1, np.int32), "one")],
    )
    w = (np.random.default_rng(0).standard_normal((3, 3)) * 0.4).astype(np.float32)
    graph = helper.make_graph(
        [
            helper.make_node(
                "Loop",
                ["", "true", "zero", "h0", "n", "w"],
                ["time_end", "h_end", "n_end", "w_end", "ys"],
                body=body,
            ),
        ],
        "while_rnn",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["T", 2, 3]),
            helper.make_tensor_value_info("h0", TensorProto.FLOAT, [2, 3]),
            helper.make_tensor_value_info("n", TensorProto.INT32, []),
        ],
        [
            helper.make_tensor_value_info("time_end", TensorProto.INT32, []),
            helper.make_tensor_value_info("h_end", TensorProto.FLOAT, [2, 3]),
            helper.make_tensor_value_info("n_end", TensorProto.INT32, []),
            helper.make_tensor_value_info("ys", TensorProto.FLOAT, ["N", 2, 3]),
        ],
        [
            numpy_helper.from_array(np.array(True), "true"),
            numpy_helper.from_array(np.array(0, np.int32), "zero"),
            numpy_helper.from_array(w, "w"),
        ],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    proto.ir_version = 8
    onnx.checker.check_model(proto)
    return tl.load(proto)


MODEL = _while_rnn()


def _rewritten(*rewrites: Any) -> tl.Model:
    graph = clone_graph(MODEL.graph)
    for rewrite in rewrites:
        rewrite(graph)
    return tl.Model(graph)


def _outcome(model: tl.Model, feeds: dict[str, Array]) -> Any:
    try:
        return dict(model.run(feeds))
    except tl.TensorloopError as exc:
        return type(exc)


def _same(got: Any, want: Any) -> None:
    if isinstance(want, type):
        assert got is want
        return
    assert isinstance(got, dict)
    assert list(got) == list(want)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name, strict=True)


def test_the_roles_each_rewrite_gives() -> None:
    (loop,) = [Loop(n) for n in MODEL.graph.nodes if n.op == "Loop"]
    assert (loop.counts.carried, loop.counts.sliced, loop.counts.invariant) == (4, 0, 1)
    through = _rewritten(pass_through_invariants)
    (loop,) = [Loop(n) for n in through.graph.nodes if n.op == "Loop"]
    assert (loop.counts.carried, loop.counts.invariant) == (2, 3)
    assert loop.can_stop_early
    counted = _rewritten(pass_through_invariants, count_while_loops)
    (loop,) = [Loop(n) for n in counted.graph.nodes if n.op == "Loop"]
    assert loop.trip_count is not None and not loop.can_stop_early
    sliced = _rewritten(pass_through_invariants, count_while_loops, slice_indexed_reads)
    (loop,) = [Loop(n) for n in sliced.graph.nodes if n.op == "Loop"]
    assert (loop.counts.sliced, loop.counts.invariant) == (1, 2)


@pytest.mark.handoff  # a read past x's end fails on the compiled backend by handing it on
@settings(max_examples=60, deadline=None)
@given(length=st.integers(1, 6), bound=st.integers(-2, 8), seed=st.integers(0, 2**16))
def test_while_loop_rewrites_never_change_a_result(length: int, bound: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    feeds = {
        "x": rng.standard_normal((length, 2, 3)).astype(np.float32),
        "h0": rng.standard_normal((2, 3)).astype(np.float32),
        "n": np.array(bound, np.int32),
    }
    want = _outcome(MODEL, feeds)
    _same(_outcome(_rewritten(pass_through_invariants), feeds), want)
    _same(_outcome(_rewritten(pass_through_invariants, count_while_loops), feeds), want)
    if max(bound, 1) <= length:  # within x: reading rows by index is slicing them
        both = _rewritten(pass_through_invariants, count_while_loops, slice_indexed_reads)
        _same(_outcome(both, feeds), want)


@pytest.mark.handoff
def test_a_while_loop_past_its_rows_fails_before_the_slice_rewrite() -> None:
    # why make_step slices such reads only where the trip count is the rows' length
    feeds = {
        "x": np.ones((2, 2, 3), np.float32),
        "h0": np.zeros((2, 3), np.float32),
        "n": np.array(5, np.int32),
    }
    assert issubclass(_outcome(MODEL, feeds), tl.TensorloopError)
    sliced = _rewritten(pass_through_invariants, count_while_loops, slice_indexed_reads)
    assert sliced.run(feeds)["ys"].shape == (2, 2, 3)
