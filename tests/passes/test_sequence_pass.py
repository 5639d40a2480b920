"""lower_sequences: loops that append to a sequence and straight-line sequences become tensors;
results kept (reference before and after), and the OpenVINO IR written runs as onnxruntime."""

from __future__ import annotations

import tempfile
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import openvino as ov
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

import tensorloop as tl
from tensorloop.errors import FormatError
from tensorloop.ir.parser import parse_graph
from tensorloop.ir.printer import print_graph
from tensorloop.ir.verify import verify
from tensorloop.passes import lower_sequences
from tensorloop.tensor.types import SequenceType

DATA = Path(__file__).parent.parent / "data"
F32 = {"INFERENCE_PRECISION_HINT": "f32"}
Reader = tuple[str, int, int]  # op, axis or position, new_axis


def _const(name: str, value: Any) -> onnx.NodeProto:
    return helper.make_node("Constant", [], [name], value=onnx.numpy_helper.from_array(value))


def _appending_loop(
    shape: tuple[int, ...], readers: list[Reader], *, initial: int, growing: bool
) -> onnx.ModelProto:
    """``seq = [x * 2**j for j < initial]``; ``for i < n while i + 1 < stop: seq.append(y)``
    with ``y = x + i`` (or, growing, ``x[: i + 1]`` on axis 0); then the readers."""
    body_nodes = [
        _const("one", np.array(1, np.int64)),
        helper.make_node("Add", ["i", "one"], ["i1"]),
        helper.make_node("Less", ["i1", "stop"], ["go"]),
    ]
    if growing:
        body_nodes += [
            _const("zero", np.array([0], np.int64)),
            helper.make_node("Unsqueeze", ["i1", "zero"], ["end"]),
            helper.make_node("Slice", ["x", "zero", "end", "zero"], ["y"]),
        ]
    else:
        body_nodes += [
            helper.make_node("Cast", ["i"], ["fi"], to=TensorProto.FLOAT),
            helper.make_node("Add", ["x", "fi"], ["y"]),
        ]
    body_nodes.append(helper.make_node("SequenceInsert", ["s", "y"], ["s_next"]))
    body = helper.make_graph(
        body_nodes,
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("c", TensorProto.BOOL, []),
            helper.make_tensor_sequence_value_info("s", TensorProto.FLOAT, None),
        ],
        [
            helper.make_tensor_value_info("go", TensorProto.BOOL, []),
            helper.make_tensor_sequence_value_info("s_next", TensorProto.FLOAT, None),
        ],
    )
    nodes = [_const("true", np.array(True))]
    if initial:
        for j in range(initial):
            nodes += [
                _const(f"k{j}", np.array(2.0**j, np.float32)),
                helper.make_node("Mul", ["x", f"k{j}"], [f"e{j}"]),
            ]
        nodes.append(
            helper.make_node("SequenceConstruct", [f"e{j}" for j in range(initial)], ["s0"])
        )
    else:
        nodes.append(helper.make_node("SequenceEmpty", [], ["s0"], dtype=TensorProto.FLOAT))
    nodes.append(helper.make_node("Loop", ["n", "true", "s0"], ["s_final"], body=body))
    outputs = []
    for k, (op, arg, new_axis) in enumerate(readers):
        out = f"out{k}"
        if op == "ConcatFromSequence":
            nodes.append(helper.make_node(op, ["s_final"], [out], axis=arg, new_axis=new_axis))
            outputs.append(helper.make_tensor_value_info(out, TensorProto.FLOAT, None))
        elif op == "SequenceAt":
            nodes += [_const(f"p{k}", np.array(arg, np.int64))]
            nodes.append(helper.make_node(op, ["s_final", f"p{k}"], [out]))
            outputs.append(helper.make_tensor_value_info(out, TensorProto.FLOAT, None))
        else:
            nodes.append(helper.make_node(op, ["s_final"], [out]))
            outputs.append(helper.make_tensor_value_info(out, TensorProto.INT64, []))
    graph = helper.make_graph(
        nodes,
        "appending",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape)),
            helper.make_tensor_value_info("n", TensorProto.INT64, []),
            helper.make_tensor_value_info("stop", TensorProto.INT64, []),
        ],
        outputs,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _onnxruntime(model: onnx.ModelProto, feeds: dict[str, Any]) -> list[Any] | None:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    try:
        return list(session.run(None, feeds))
    except Exception:  # an empty sequence concatenated, an index out of range
        return None


def _openvino(model: tl.Model, feeds: dict[str, Any], tmp_path: Path) -> list[Any]:
    path = tmp_path / "m.xml"
    tl.save(model, path)
    compiled = ov.Core().compile_model(str(path), "CPU", F32)
    # Copies: OpenVINO shares the arrays, which a tensorloop run may have made read-only.
    res = compiled({k: np.array(v) for k, v in feeds.items() if k in model.input_names})
    return [res[compiled.output(name)] for name in model.output_names]


def _no_sequences(graph: Any) -> bool:
    return not any(isinstance(o.type, SequenceType) for _, n in graph.walk() for o in n.outputs)


def _check(model: onnx.ModelProto, feeds: dict[str, Any], tmp_path: Path) -> None:
    """Reference before = after = onnxruntime = OpenVINO on what tl.save wrote; where the
    original fails (an empty sequence concatenated), the lowered graph gives an empty tensor."""
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    loaded = tl.load(path)
    lowered = lower_sequences(loaded.graph.clone())
    assert lowered.changed and _no_sequences(lowered.graph)
    names = loaded.output_names
    ov_got = _openvino(loaded, feeds, tmp_path)
    got = tl.Model(lowered.graph, backend="reference").run(feeds)
    want = _onnxruntime(model, feeds)
    original = tl.Model(loaded.graph, backend="reference")
    if want is None:
        with pytest.raises(tl.errors.ExecutionError):
            original.run(feeds)
        assert any(got[name].size == 0 for name in names)
        return  # no result to compare OpenVINO's with
    else:
        before = original.run(feeds)
        for k, name in enumerate(names):
            np.testing.assert_allclose(before[name], want[k], rtol=1e-5, atol=1e-6, err_msg=f"#{k}")
    for k, name in enumerate(names):
        assert got[name].shape == want[k].shape and ov_got[k].shape == want[k].shape
        np.testing.assert_allclose(got[name], want[k], rtol=1e-5, atol=1e-6, err_msg=f"#{k}")
        np.testing.assert_allclose(ov_got[k], want[k], rtol=1e-5, atol=1e-6, err_msg=f"#{k}")


@st.composite
def _readers(draw: st.DrawFn, rank: int) -> list[Reader]:
    kinds = st.sampled_from(["stack", "concat", "length", "at"])
    out: list[Reader] = []
    for kind in draw(st.lists(kinds, min_size=1, max_size=3)):
        if kind == "stack":
            out.append(("ConcatFromSequence", draw(st.integers(-rank - 1, rank)), 1))
        elif kind == "concat":
            out.append(("ConcatFromSequence", draw(st.integers(-rank, rank - 1)), 0))
        elif kind == "length":
            out.append(("SequenceLength", 0, 0))
        else:
            out.append(("SequenceAt", draw(st.sampled_from([0, -1])), 0))
    return out


@settings(max_examples=30, deadline=None)
@given(
    shape=st.lists(st.integers(1, 3), min_size=1, max_size=3).map(tuple),
    data=st.data(),
    initial=st.integers(0, 2),
    n=st.integers(0, 4),
    stop=st.integers(0, 5),
)
def test_appended_sequence_becomes_a_stacked_output(
    shape: tuple[int, ...], data: st.DataObject, initial: int, n: int, stop: int
) -> None:
    readers = data.draw(_readers(len(shape)))
    if not initial and any(op == "SequenceAt" for op, _, _ in readers):
        n, stop = max(n, 1), max(stop, 1)  # SequenceAt of an empty sequence fails everywhere
    model = _appending_loop(shape, readers, initial=initial, growing=False)
    x = np.random.default_rng(n).standard_normal(shape).astype(np.float32)
    feeds = {"x": x, "n": np.array(n, np.int64), "stop": np.array(stop, np.int64)}
    with tempfile.TemporaryDirectory() as tmp:
        _check(model, feeds, Path(tmp))


@settings(max_examples=15, deadline=None)
@given(length=st.integers(1, 5), initial=st.integers(0, 1), n=st.integers(0, 5))
def test_growing_pieces_concatenate_in_a_carried_tensor(length: int, initial: int, n: int) -> None:
    """Pieces x[:i+1] differ in length on the concatenated axis: no stacking, a carried Concat."""
    model = _appending_loop(
        (length, 2), [("ConcatFromSequence", 0, 0)], initial=initial, growing=True
    )
    x = np.arange(length * 2, dtype=np.float32).reshape(length, 2)
    feeds = {"x": x, "n": np.array(n, np.int64), "stop": np.array(length, np.int64)}
    with tempfile.TemporaryDirectory() as tmp:
        _check(model, feeds, Path(tmp))


def test_straight_line_sequences_fold(tmp_path: Path) -> None:
    nodes = [
        _const("split", np.array([1, 2], np.int64)),
        helper.make_node("SplitToSequence", ["x", "split"], ["parts"], axis=1),
        helper.make_node("SequenceInsert", ["parts", "y"], ["more"]),
        _const("last", np.array(-1, np.int64)),
        helper.make_node("SequenceAt", ["more", "last"], ["at"]),
        helper.make_node("ConcatFromSequence", ["more"], ["joined"], axis=1),
        helper.make_node("SequenceLength", ["more"], ["count"]),
        helper.make_node("SplitToSequence", ["x"], ["rows"], axis=0, keepdims=0),
        helper.make_node("SequenceConstruct", ["y", "y"], ["pair"]),
        helper.make_node("ConcatFromSequence", ["rows"], ["stacked"], axis=-1, new_axis=1),
        helper.make_node("ConcatFromSequence", ["pair"], ["paired"], axis=0, new_axis=1),
    ]
    f32 = TensorProto.FLOAT
    graph = helper.make_graph(
        nodes,
        "straight",
        [
            helper.make_tensor_value_info("x", f32, [2, 3]),
            helper.make_tensor_value_info("y", f32, [2, 1]),
        ],
        [
            helper.make_tensor_value_info(name, f32, None)
            for name in ("at", "joined", "stacked", "paired")
        ]
        + [helper.make_tensor_value_info("count", TensorProto.INT64, [])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    rng = np.random.default_rng(0)
    feeds = {
        "x": rng.standard_normal((2, 3)).astype(np.float32),
        "y": rng.standard_normal((2, 1)).astype(np.float32),
    }
    _check(model, feeds, tmp_path)


def test_what_cannot_be_proved_stays_and_is_refused(tmp_path: Path) -> None:
    """A loop that prepends (SequenceInsert at 0) keeps its sequence; the writer names it."""
    model = _appending_loop((2,), [("ConcatFromSequence", 0, 0)], initial=0, growing=False)
    insert = model.graph.node[-2].attribute[0].g.node[-1]
    model.graph.node[-2].attribute[0].g.node.insert(
        len(model.graph.node[-2].attribute[0].g.node) - 1, _const("front", np.array(0, np.int64))
    )
    insert.input.append("front")
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    loaded = tl.load(path)
    assert not _no_sequences(lower_sequences(loaded.graph.clone()).graph)
    with pytest.raises(FormatError, match="Sequence"):
        tl.save(loaded, tmp_path / "m.xml")


@pytest.mark.parametrize("max_len", [0, 1, 3, 7, 30])
@pytest.mark.parametrize("batch", [1, 3])
def test_torch_greedy_decoder_converts(max_len: int, batch: int, tmp_path: Path) -> None:
    """tests/data/make_torch_models.py's scripted greedy decoder (break on an end token, lists
    stacked and concatenated after the loop) as IR runs on OpenVINO as on onnxruntime."""
    model = onnx.load(DATA / "torch_greedy_decoder.onnx")
    h = np.random.default_rng(batch).standard_normal((batch, 4)).astype(np.float32) * 2
    feeds = {"h": h, "max_len": np.array(max_len, np.int64)}
    _check(model, feeds, tmp_path)


APPENDING = textwrap.dedent(
    """\
    graph @appending(%x: f32[2], %n: i64[], %stop: i64[]) {
      %true = Constant() {value = dense<bool[]>[true]} : bool[]
      %s0 = SequenceEmpty() {dtype = f32} : seq<f32[*]>
      %s_final = Loop(max_trip_count=%n, initial_condition=%true, carried=[%s0], invariants=[%stop, %x]) {body = graph @body(%i: i64[], %s: seq<f32[*]>, %stop: i64[], %x: f32[2]) {
        %one = Constant() {value = dense<i64[]>[1]} : i64[]
        %i1 = Add(%i, %one) : i64[]
        %go = Less(%i1, %stop) : bool[]
        %fi = Cast(%i) {to = f32} : f32[]
        %y = Add(%x, %fi) : f32[2]
        %s_next = SequenceInsert(%s, %y) : seq<f32[*]>
        return %go, %s_next
      }, sliced = [], stacked = []} : seq<f32[*]>
      %out0 = ConcatFromSequence(%s_final) {axis = 0, new_axis = 1} : f32[*]
      %out1 = SequenceLength(%s_final) : i64[]
      return %out0, %out1
    }"""  # noqa: E501
)


def test_lower_sequences_golden_appending_loop() -> None:
    g = parse_graph(APPENDING)
    assert lower_sequences(g).changed
    # The appended value becomes a stacked output; stacking it on a new axis 0 is that output,
    # and the sequence's length is the stacked axis's.
    assert print_graph(g) == textwrap.dedent(
        """\
        graph @appending(%x: f32[2], %n: i64[], %stop: i64[]) {
          %true = Constant() {value = dense<bool[]>[true]} : bool[]
          %out0 = Loop(max_trip_count=%n, initial_condition=%true, invariants=[%stop, %x]) {body = graph @body(%i: i64[], %stop: i64[], %x: f32[2]) {
            %one = Constant() {value = dense<i64[]>[1]} : i64[]
            %i1 = Add(%i, %one) : i64[]
            %go = Less(%i1, %stop) : bool[]
            %fi = Cast(%i) {to = f32} : f32[]
            %y = Add(%x, %fi) : f32[2]
            return %go, %y
          }, sliced = [], stacked = [Stacked(axis=0, reverse=false)]} : f32[?,2]
          %2 = Shape(%out0) : i64[2]
          %3 = Constant() {value = dense<i64[]>[0]} : i64[]
          %out1 = Gather(%2, %3) {axis = 0} : i64[]
          return %out0, %out1
        }"""  # noqa: E501
    )
    verify(g)
    assert not lower_sequences(g).changed
