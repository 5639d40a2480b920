"""ONNX sequences and optionals: core ops, types and SequenceMap, checked with onnxruntime."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto
from onnx import helper as h
from onnx.backend.test.case.model import collect_testcases

import tensorloop as tl
from onnx_oracle import infer
from tensorloop.errors import ExecutionError, FormatError, GraphError, InputError
from tensorloop.formats.onnx.backend import check_case
from tensorloop.ir.graph import Graph
from tensorloop.reference.interpreter import Interpreter
from tensorloop.tensor.dtypes import DType
from tensorloop.tensor.types import OptionalType, SequenceType, TensorType, Type

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
OPSET = 18
T = TensorType


def vi(name: str, elem: int = F, shape: Sequence[int | str | None] | None = None) -> Any:
    return h.make_tensor_value_info(name, elem, shape)


def seq_vi(name: str, elem: int = F, shape: Sequence[int | str | None] | None = None) -> Any:
    return h.make_tensor_sequence_value_info(name, elem, shape)


def opt_vi(name: str, inner: Any) -> Any:
    return h.make_value_info(name, h.make_optional_type_proto(inner.type))


S23 = seq_vi("s", F, [2, 3])


def model(
    nodes: list[Any], inputs: list[Any], outputs: list[Any], opset: int = OPSET
) -> onnx.ModelProto:
    g = h.make_graph(nodes, "g", inputs, outputs)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def assert_same(got: Any, expected: Any, where: str) -> None:
    """Sequences element by element, optionals by presence, tensors by dtype, shape, value."""
    if expected is None or got is None:
        assert got is None and expected is None, (where, got, expected)
    elif isinstance(expected, list):
        assert isinstance(got, list) and len(got) == len(expected), (where, got, expected)
        for k, (g, e) in enumerate(zip(got, expected, strict=True)):
            assert_same(g, e, f"{where}[{k}]")
    else:
        e = np.asarray(expected)
        assert isinstance(got, np.ndarray), (where, got)
        assert got.dtype == e.dtype and got.shape == e.shape, (where, got, e)
        np.testing.assert_allclose(got, e, rtol=1e-6, err_msg=where)


def same_as_onnxruntime(m: onnx.ModelProto, feeds: Mapping[str, Any]) -> list[Any]:
    """Run ``m`` in both; every output agrees. Returns tensorloop's outputs."""
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = sess.run(None, dict(feeds))
    got = tl.load(m).run(dict(feeds))
    names = [o.name for o in m.graph.output]
    for name, e in zip(names, expected, strict=True):
        assert_same(got[name], e, name)
    return [got[n] for n in names]


def ints(name: str, value: Any, dtype: Any = np.int64) -> Any:
    return h.make_node(
        "Constant", [], [name], value=onnx.numpy_helper.from_array(np.asarray(value, dtype), name)
    )


RNG = np.random.default_rng(0)
A, B2, C = (RNG.standard_normal(s).astype(np.float32) for s in [(2, 3), (2, 3), (2, 3)])


# -- the sequence ops, one small model each ----------------------------------------------------
@pytest.mark.parametrize("position", [None, 0, 2, 3, -1, -3])
def test_sequence_insert(position: int | None) -> None:
    inputs = ["s", "x"] + ([] if position is None else ["p"])
    nodes = [] if position is None else [ints("p", position)]
    nodes.append(h.make_node("SequenceInsert", inputs, ["y"]))
    m = model(nodes, [seq_vi("s", F, [2, 3]), vi("x", F, [2, 4])], [seq_vi("y", F, [2, None])])
    same_as_onnxruntime(m, {"s": [A, B2, C], "x": np.ones((2, 4), np.float32)})


@pytest.mark.parametrize("position", [None, 0, 2, -1, -3])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_sequence_erase_and_at(position: int | None, dtype: Any) -> None:
    nodes = [ints("p", 0 if position is None else position, dtype)]
    nodes += [
        h.make_node("SequenceErase", ["s"] + ([] if position is None else ["p"]), ["e"]),
        h.make_node("SequenceAt", ["s", "p"], ["at"]),
        h.make_node("SequenceLength", ["e"], ["n"]),
    ]
    m = model(nodes, [S23], [seq_vi("e", F, [2, 3]), vi("at", F, [2, 3]), vi("n", I64, [])])
    same_as_onnxruntime(m, {"s": [A, B2, C]})


@pytest.mark.parametrize(
    ("axis", "new_axis"), [(0, 0), (1, 0), (-1, 0), (-2, 0), (0, 1), (2, 1), (-1, 1), (-3, 1)]
)
def test_concat_from_sequence(axis: int, new_axis: int) -> None:
    m = model(
        [
            h.make_node("SequenceConstruct", ["a", "b", "c"], ["s"]),
            h.make_node("ConcatFromSequence", ["s"], ["y"], axis=axis, new_axis=new_axis),
        ],
        [vi("a", F, [2, 3]), vi("b", F, [2, 3]), vi("c", F, [2, 3])],
        [vi("y", F, [None] * (2 + new_axis))],
    )
    same_as_onnxruntime(m, {"a": A, "b": B2, "c": C})


@pytest.mark.parametrize(
    ("shape", "axis", "split", "keepdims"),
    [
        ((5, 3), 0, None, 1),
        ((5, 3), 1, None, 0),
        ((5, 3), -2, None, 0),
        ((5, 3), 0, 2, 1),  # the last chunk is shorter
        ((5, 3), 0, 5, 1),
        ((5, 3), 0, 7, 1),
        ((5, 3), 0, [2, 0, 3], 1),
        ((5, 3), -1, [1, 2], 0),
        ((0, 3), 0, None, 1),
        ((0, 3), 1, None, 0),
        ((0, 3), 0, 2, 1),
        ((5, 3), 0, [], 0),  # onnxruntime reads an empty split as none given
        ((5, 3), 1, [], 1),
    ],
)
def test_split_to_sequence(shape: tuple[int, ...], axis: int, split: Any, keepdims: int) -> None:
    x = RNG.standard_normal(shape).astype(np.float32)
    feeds, params, nodes = {"x": x}, [vi("x", F, list(shape))], []
    absent = split is None or split == []
    if split == []:  # onnxruntime refuses an empty split that is a constant
        params.append(vi("split", I64, [0]))
        feeds["split"] = np.zeros(0, np.int64)
    elif split is not None:
        nodes.append(ints("split", split))
    inputs = ["x"] if split is None else ["x", "split"]
    nodes.append(h.make_node("SplitToSequence", inputs, ["s"], axis=axis, keepdims=keepdims))
    nodes.append(h.make_node("SequenceLength", ["s"], ["n"]))
    rank = len(shape) - (absent and not keepdims)
    m = model(nodes, params, [seq_vi("s", F, [None] * rank), vi("n", I64, [])])
    same_as_onnxruntime(m, feeds)


def test_a_given_split_ignores_keepdims() -> None:
    """As the spec and onnx's shape inference say; onnxruntime drops the axis, or fails."""
    m = model(
        [ints("split", 2), h.make_node("SplitToSequence", ["x", "split"], ["s"], keepdims=0)],
        [vi("x", F, [5, 3])],
        [seq_vi("s", F, [None, 3])],
    )
    parts = tl.load(m).run({"x": np.zeros((5, 3), np.float32)})["s"]
    assert [p.shape for p in parts] == [(2, 3), (2, 3), (1, 3)]


def test_split_to_sequence_with_a_split_known_only_when_running() -> None:
    m = model(
        [h.make_node("SplitToSequence", ["x", "split"], ["s"], axis=1)],
        [vi("x", F, [2, 6]), vi("split", I64, [None])],
        [seq_vi("s", F, [2, None])],
    )
    same_as_onnxruntime(
        m, {"x": np.arange(12, dtype=np.float32).reshape(2, 6), "split": np.array([1, 2, 3])}
    )


def test_strings_and_bools_in_sequences() -> None:
    m = model(
        [
            h.make_node("SplitToSequence", ["x"], ["s"], axis=0, keepdims=0),
            h.make_node("SequenceErase", ["s"], ["e"]),
            h.make_node("ConcatFromSequence", ["e"], ["y"], axis=0, new_axis=1),
        ],
        [vi("x", B, [3, 2])],
        [vi("y", B, [None, None])],
    )
    same_as_onnxruntime(m, {"x": np.array([[True, False], [False, False], [True, True]])})


# -- optionals -----------------------------------------------------------------------------------
@pytest.mark.parametrize("present", [True, False])
def test_optional_of_a_sequence(present: bool) -> None:
    seq_type = h.make_sequence_type_proto(h.make_tensor_type_proto(F, None))
    made = h.make_node(
        "Optional", ["s"] if present else [], ["o"], **({} if present else {"type": seq_type})
    )
    m = model(
        [
            made,
            h.make_node("OptionalHasElement", ["o"], ["has"]),
            h.make_node("Identity", ["o"], ["o2"]),
        ],
        [S23],
        [vi("has", B, []), opt_vi("o2", S23)],
    )
    has, o = same_as_onnxruntime(m, {"s": [A, B2]})
    assert bool(has) is present and (o is None) is not present


@pytest.mark.parametrize("wrap", [True, False])
def test_optional_get_element_of_a_tensor_or_its_optional(wrap: bool) -> None:
    nodes = [h.make_node("Optional", ["x"], ["o"])] if wrap else []
    nodes += [
        h.make_node("OptionalGetElement", ["o" if wrap else "x"], ["y"]),
        h.make_node("OptionalHasElement", ["o" if wrap else "x"], ["has"]),
    ]
    m = model(nodes, [vi("x", F, [2, 3])], [vi("y", F, [2, 3]), vi("has", B, [])])
    same_as_onnxruntime(m, {"x": A})


def test_an_optional_model_input_may_be_empty() -> None:
    m = model(
        [h.make_node("OptionalHasElement", ["o"], ["has"])],
        [opt_vi("o", vi("x", F, [2]))],
        [vi("has", B, [])],
    )
    loaded = tl.load(m)
    assert not loaded.run({"o": None})["has"]
    assert loaded.run({"o": np.ones(2, np.float32)})["has"]


def test_an_empty_optional_has_no_element_to_get() -> None:
    m = model(
        [h.make_node("OptionalGetElement", ["o"], ["y"])],
        [opt_vi("o", vi("x", F, [2]))],
        [vi("y", F, [2])],
    )
    with pytest.raises(ExecutionError, match=r"OptionalGetElement.*the optional is empty"):
        tl.load(m).run({"o": None})


# -- sequences built by loops --------------------------------------------------------------------
def _growing_loop(trips: int) -> onnx.ModelProto:
    """A Loop that inserts x[:i+1] into a carried sequence, then concatenates it."""
    body = h.make_graph(
        [
            h.make_node("Identity", ["cond"], ["cond_out"]),
            ints("one", 1),
            h.make_node("Add", ["i", "one"], ["end"]),
            ints("zero", [0]),
            ints("axes", [0]),
            h.make_node("Unsqueeze", ["end", "axes"], ["end1"]),
            h.make_node("Slice", ["x", "zero", "end1"], ["part"]),
            h.make_node("SequenceInsert", ["seq", "part"], ["seq_out"]),
        ],
        "body",
        [vi("i", I64, []), vi("cond", B, []), seq_vi("seq", F, [None])],
        [vi("cond_out", B, []), seq_vi("seq_out", F, [None])],
    )
    return model(
        [
            h.make_node("SequenceEmpty", [], ["empty"], dtype=F),
            ints("trips", trips),
            h.make_node("Loop", ["trips", "", "empty"], ["parts"], body=body),
            h.make_node("SequenceLength", ["parts"], ["n"]),
            h.make_node("ConcatFromSequence", ["parts"], ["flat"], axis=0),
        ],
        [vi("x", F, [4])],
        [seq_vi("parts", F, [None]), vi("n", I64, []), vi("flat", F, [None])],
    )


def test_a_loop_grows_a_ragged_sequence() -> None:
    parts, n, flat = same_as_onnxruntime(_growing_loop(4), {"x": np.arange(4, dtype=np.float32)})
    assert [len(p) for p in parts] == [1, 2, 3, 4] and n == 4 and flat.shape == (10,)


def test_a_zero_trip_loop_leaves_the_sequence_empty() -> None:
    m = _growing_loop(0)
    m.graph.node.pop()  # ConcatFromSequence of an empty sequence is an error
    m.graph.output.pop()
    parts, n = same_as_onnxruntime(m, {"x": np.arange(4, dtype=np.float32)})
    assert parts == [] and n == 0


def test_sequence_map_with_a_tensor_input_and_an_outer_value() -> None:
    body = h.make_graph(
        [
            h.make_node("Add", ["x", "bias"], ["shifted"]),
            h.make_node("ReduceSum", ["shifted"], ["total"], keepdims=0),
            h.make_node("Mul", ["w", "scale"], ["scaled"]),
        ],
        "body",
        [vi("x", F, ["N"]), vi("w", F, [2])],
        [vi("total", F, []), vi("scaled", F, [2])],
    )
    m = model(
        [
            h.make_node("Neg", ["b"], ["bias"]),
            h.make_node("SequenceMap", ["xs", "w"], ["totals", "ws"], body=body),
            h.make_node("ConcatFromSequence", ["totals"], ["stacked"], axis=0, new_axis=1),
        ],
        [seq_vi("xs", F, ["N"]), vi("w", F, [2]), vi("b", F, []), vi("scale", F, [])],
        [vi("stacked", F, [None]), seq_vi("ws", F, [2])],
    )
    feeds = {
        "xs": [np.arange(n, dtype=np.float32) for n in (3, 1, 5)],
        "w": np.array([1, 2], np.float32),
        "b": np.array(1, np.float32),
        "scale": np.array(3, np.float32),
    }
    stacked, ws = same_as_onnxruntime(m, feeds)
    assert stacked.tolist() == [0, -1, 5] and len(ws) == 3


def test_sequence_map_lowers_to_one_loop() -> None:
    body = h.make_graph(
        [h.make_node("Shape", ["x"], ["shape"])],
        "body",
        [vi("x", F, ["H", "W"])],
        [vi("shape", I64, [2])],
    )
    m = model(
        [h.make_node("SequenceMap", ["xs"], ["shapes"], body=body)],
        [seq_vi("xs", F, ["H", "W"])],
        [seq_vi("shapes", I64, [2])],
    )
    graph = tl.load(m).graph
    loops = [n for n in graph.nodes if n.op == "Loop"]
    assert len(loops) == 1 and not any(n.op == "SequenceMap" for _, n in graph.walk())
    assert str(graph.outputs[0].type) == "seq<i64[2]>"
    same_as_onnxruntime(m, {"xs": [np.zeros((2, 3), np.float32), np.zeros((4, 1), np.float32)]})


# -- a law ---------------------------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(0, 4), min_size=1, max_size=3),
    st.data(),
)
def test_split_then_concat_gives_the_input_back(shape: list[int], data: st.DataObject) -> None:
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    dim = shape[axis]
    parts = data.draw(
        st.lists(st.integers(0, 3), min_size=1, max_size=4).filter(lambda p: sum(p) == dim)
        if dim
        else st.just([0])
    )
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    m = model(
        [
            ints("split", parts),
            h.make_node("SplitToSequence", ["x", "split"], ["s"], axis=axis),
            h.make_node("ConcatFromSequence", ["s"], ["y"], axis=axis),
        ],
        [vi("x", F, shape)],
        [vi("y", F, shape)],
    )
    np.testing.assert_array_equal(tl.load(m).run({"x": x})["y"], x)


# -- types ---------------------------------------------------------------------------------------
SEQ = SequenceType(T("f32", [2, "N"]))


@pytest.mark.parametrize(
    ("op", "inputs", "attrs", "expected"),
    [
        ("SequenceEmpty", [], {"dtype": DType.int8}, "seq<i8[*]>"),
        ("SequenceEmpty", [], {}, "seq<f32[*]>"),
        ("SequenceConstruct", [T("f32", [2, 3]), T("f32", [2, 4])], {}, "seq<f32[2,?]>"),
        ("SequenceConstruct", [T("f32", [2, 3]), T("f32", [3])], {}, "seq<f32[*]>"),
        ("SequenceInsert", [SEQ, T("f32", [2, "N"])], {}, "seq<f32[2,N]>"),
        ("SequenceInsert", [SequenceType(T("f32", None)), T("f32", [1])], {}, "seq<f32[*]>"),
        ("SequenceAt", [SEQ, T("i32", [])], {}, "f32[2,N]"),
        ("SequenceErase", [SEQ], {}, "seq<f32[2,N]>"),
        ("SequenceLength", [SEQ], {}, "i64[]"),
        ("ConcatFromSequence", [SEQ], {"axis": -1}, "f32[2,?]"),
        ("ConcatFromSequence", [SEQ], {"axis": 0}, "f32[?,N]"),
        ("ConcatFromSequence", [SEQ], {"axis": 2, "new_axis": 1}, "f32[2,N,?]"),
        ("SplitToSequence", [T("f32", [6, 4])], {"axis": 1}, "seq<f32[6,1]>"),
        ("SplitToSequence", [T("f32", [6, 4])], {"axis": 1, "keepdims": 0}, "seq<f32[6]>"),
        ("SplitToSequence", [T("f32", [6, 4]), np.array(2)], {}, "seq<f32[2,4]>"),
        ("SplitToSequence", [T("f32", [5, 4]), np.array(2)], {}, "seq<f32[?,4]>"),
        ("SplitToSequence", [T("f32", ["N", 4]), np.array([2, 2])], {}, "seq<f32[2,4]>"),
        ("SplitToSequence", [T("f32", [6, 4]), T("i64", [2])], {"keepdims": 0}, "seq<f32[?,4]>"),
        ("SplitToSequence", [T("f32", [6, 4]), T("i64", ["K"])], {"keepdims": 0}, "seq<f32[*]>"),
        (
            "SplitToSequence",
            [T("f32", [6, 4]), np.array([], np.int64)],
            {"keepdims": 0},
            "seq<f32[4]>",
        ),
        ("Optional", [SEQ], {}, "opt<seq<f32[2,N]>>"),
        ("Optional", [], {"type": T("f32", [3])}, "opt<f32[3]>"),
        ("OptionalHasElement", [], {}, "bool[]"),
        ("OptionalHasElement", [SEQ], {}, "bool[]"),
        ("OptionalGetElement", [OptionalType(SEQ)], {}, "seq<f32[2,N]>"),
        ("OptionalGetElement", [SEQ], {}, "seq<f32[2,N]>"),
    ],
)
def test_type_rules(op: str, inputs: list[Any], attrs: dict[str, Any], expected: str) -> None:
    assert ", ".join(infer(op, inputs, attrs)) == expected


@pytest.mark.parametrize(
    ("op", "inputs", "attrs", "message"),
    [
        ("SequenceInsert", [SEQ, T("i64", [2])], {}, "share one element type.*f32.*i64"),
        ("SequenceInsert", [T("f32", [2]), T("f32", [2])], {}, "input #0: expected a sequence"),
        ("SequenceAt", [SEQ, T("f32", [])], {}, "position.*int32 or int64 scalar, got f32"),
        ("SequenceAt", [SEQ, T("i64", [2])], {}, "position.*int32 or int64 scalar, got i64"),
        ("SequenceConstruct", [T("f32", [1]), T("f16", [1])], {}, "share one element type"),
        ("ConcatFromSequence", [SEQ], {"axis": 2}, "axis 2 is out of range for rank 2"),
        ("ConcatFromSequence", [SEQ], {"axis": 0, "new_axis": 2}, "new_axis must be 0 or 1"),
        ("ConcatFromSequence", [SequenceType(T("f32", []))], {"axis": 0}, "concatenate scalars"),
        ("SplitToSequence", [T("f32", [5]), np.array([2, 2])], {}, r"sums to 4.*length 5"),
        ("SplitToSequence", [T("f32", [5]), np.array(0)], {}, "must be positive, got 0"),
        ("SplitToSequence", [T("f32", [5]), np.array([[5]])], {}, "scalar or 1-D"),
        ("SplitToSequence", [T("f32", [])], {}, "cannot split a scalar"),
        ("Optional", [], {}, "needs the 'type' attribute"),
        ("Optional", [T("f32", [2])], {"type": T("i64", [2])}, "'type' attribute says i64"),
        ("Optional", [OptionalType(SEQ)], {}, "expected a tensor or a sequence"),
    ],
)
def test_type_rule_errors(op: str, inputs: list[Any], attrs: dict[str, Any], message: str) -> None:
    with pytest.raises(GraphError, match=message):
        infer(op, inputs, attrs)


def test_an_optional_accepts_its_element_and_joins_with_it() -> None:
    opt = OptionalType(SEQ)
    assert opt.compatible(SEQ) and opt.compatible(opt) and not SEQ.compatible(opt)
    assert SEQ.join(opt) == opt.join(SEQ) == opt
    assert T("f32", [2]).join(OptionalType(T("f32", [3]))) == OptionalType(T("f32", ["?"]))


# -- run-time errors and inputs ------------------------------------------------------------------
def _run(op: str, types: list[Type], args: list[Any], attrs: dict[str, Any] | None = None) -> Any:
    g = Graph()
    node = g.add_node(op, [g.add_input(f"x{i}", t) for i, t in enumerate(types)], attrs or {})
    g.set_outputs(node.outputs)
    return Interpreter().run(g, args)[0]


SEQ_F = SequenceType(T("f32", None))
POS = T("i64", [])


@pytest.mark.parametrize(
    ("op", "types", "args", "message"),
    [
        ("SequenceAt", [SEQ_F, POS], [[A], np.int64(1)], r"position 1 is out of range \[-1, 0\]"),
        ("SequenceAt", [SEQ_F, POS], [[], np.int64(0)], r"position 0 is out of range \[0, -1\]"),
        ("SequenceErase", [SEQ_F], [[]], r"position -1 is out of range \[0, -1\]"),
        (
            "SequenceInsert",
            [SEQ_F, T("f32", None), POS],
            [[A], A, np.int64(-2)],
            r"position -2 is out of range \[-1, 1\]",
        ),
        ("ConcatFromSequence", [SEQ_F], [[]], "cannot concatenate an empty sequence"),
        (
            "SplitToSequence",
            [T("f32", None), T("i64", None)],
            [A, np.int64(-1)],
            "must be positive, got -1",
        ),
        (
            "SplitToSequence",
            [T("f32", None), T("i64", None)],
            [A, np.array([1, 2])],
            r"sums to 3, but the axis has length 2",
        ),
    ],
)
def test_run_time_errors_name_the_node(
    op: str, types: list[Type], args: list[Any], message: str
) -> None:
    attrs = {"axis": 0} if op == "ConcatFromSequence" else {}
    with pytest.raises(ExecutionError, match=f"{op}.*{message}"):
        _run(op, types, args, attrs)


def test_sequence_inputs_are_checked() -> None:
    m = model(
        [h.make_node("SequenceLength", ["s"], ["n"])], [seq_vi("s", F, [2])], [vi("n", I64, [])]
    )
    loaded = tl.load(m)
    assert loaded.run({"s": (np.zeros(2, np.float32),)})["n"] == 1
    with pytest.raises(InputError, match=r"input 's': expected seq<f32\[2\]>, got float32"):
        loaded.run({"s": np.zeros(2, np.float32)})
    with pytest.raises(InputError, match=r"input 's\[1\]': expected f32\[2\], got float64"):
        loaded.run({"s": [np.zeros(2, np.float32), np.zeros(2)]})


def test_a_kernel_result_is_checked_against_the_sequence_type() -> None:
    g = Graph()
    x = g.add_input("x", T("f32", [2]))
    node = g.add_node("SequenceConstruct", [x], output_types=[SequenceType(T("f32", [3]))])
    g.set_outputs(node.outputs)
    with pytest.raises(ExecutionError, match=r"a sequence whose element #0 is float32\[2\]"):
        Interpreter().run(g, [np.zeros(2, np.float32)])


def test_a_type_mismatch_in_a_model_is_a_format_error() -> None:
    m = model(
        [h.make_node("SequenceInsert", ["s", "x"], ["y"])],
        [seq_vi("s", F, [2]), vi("x", I64, [2])],
        [seq_vi("y", F, [2])],
    )
    with pytest.raises(FormatError, match=r"SequenceInsert.*share one element type"):
        tl.load(m)


# -- onnx's sequence model tests -----------------------------------------------------------------
MODEL_CASES = [c for c in collect_testcases() if str(c.name).startswith("test_sequence_model")]


@pytest.mark.parametrize("case", MODEL_CASES, ids=[str(c.name) for c in MODEL_CASES])
def test_onnx_sequence_model_case(case: Any) -> None:
    check_case(case)
