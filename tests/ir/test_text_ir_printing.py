"""Hand-built graphs in the text IR: golden text, every literal, dtype and name round-trip."""

from __future__ import annotations

import math
from dataclasses import dataclass, make_dataclass
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from text_ir_checks import BOOL, F32, SPECIAL_FLOATS, const, loop_graph, roundtrip

from tensorloop.errors import GraphError, ParseError
from tensorloop.ir.graph import Graph, Node
from tensorloop.ir.loop import Sliced, Stacked
from tensorloop.ir.parser import parse_graph
from tensorloop.ir.printer import print_graph, register_attr_record
from tensorloop.tensor.dtypes import DType, int_range
from tensorloop.tensor.types import OptionalType, SequenceType, TensorType

# -- hand-built graphs -------------------------------------------------------------------------
BRIEF_EXAMPLE = """\
graph @main(%x: f32[4,N], %h0: f32[?]) {
  var @h: f32[2] = dense<f32[2]>[0.0, 0.0]
  var trainable @w: f32[2] = dense<f32[2]>[0.5, -1.0]
  %c = Constant() {value = dense<f32[2]>[1.0, 2.5]} : f32[2]
  %y = Add(%x, %c) : f32[4,2] loc("rnn/add")
  %h1, %ys = Loop(carried=[%h0], sliced=[%x]) {body = graph @body(%i: i64[], %h: f32[?], \
%xt: f32[N]) {
    %t = Constant() {value = dense<bool[]>[true]} : bool[]
    return %t, %h, %xt
  }, sliced = [Sliced(axis=0, reverse=false)], stacked = [Stacked(axis=0, reverse=true)]} : \
f32[?], f32[4,N]
  Assign(%y) {variable = "h"}
  return %y, %ys
}"""


def test_brief_example_round_trips_verbatim() -> None:
    g = parse_graph(BRIEF_EXAMPLE)
    assert print_graph(g) == BRIEF_EXAMPLE == str(g)
    assert [v.name for v in g.inputs] == ["x", "h0"]
    loop = g.nodes[2]
    assert loop.op == "Loop" and loop.inputs[:2] == [None, None]
    assert loop.attrs["stacked"] == (Stacked(0, True),)
    assert g.nodes[3].outputs == [] and g.variables["w"].trainable
    assert g.nodes[1].name == "rnn/add"
    assert g.outputs == [g.nodes[1].output, loop.outputs[1]]
    roundtrip(g)


def test_positional_loop_inputs_still_parse() -> None:
    # Text written before roles were printed: the flat inputs and num_carried.
    old = BRIEF_EXAMPLE.replace("Loop(carried=[%h0], sliced=[%x])", "Loop(none, none, %h0, %x)")
    old = old.replace("}, sliced = [", "}, num_carried = 1, sliced = [")
    assert print_graph(parse_graph(old)) == BRIEF_EXAMPLE


def test_roles_that_do_not_fit_the_op_are_refused() -> None:
    for bad, why in [
        ("Loop(carried=[%h0], %x)", "a role"),
        ("Loop(carried=[%h0], stacked=[%x])", "role 'stacked'"),
        ("Loop(carried=%h0, sliced=[%x])", "role 'carried' as a list"),
        ("Loop(carried=[%h0], carried=[%x])", "given twice"),
    ]:
        with pytest.raises(ParseError, match=why):
            parse_graph(BRIEF_EXAMPLE.replace("Loop(carried=[%h0], sliced=[%x])", bad))


def test_golden_small_loop() -> None:
    assert print_graph(loop_graph(1)) == (
        "graph @main(%acc: f32[3], %xs: f32[T,3]) {\n"
        "  %total, %partial = Loop(carried=[%acc], sliced=[%xs]) {body = graph @body1("
        "%i: i64[], %acc: f32[3], %xs: f32[3]) {\n"
        "    %cond = Constant() {value = dense<bool[]>[true]} : bool[]\n"
        "    %sum = Add(%acc, %xs) : f32[3]\n"
        "    return %cond, %sum, %sum\n"
        "  }, sliced = [Sliced(axis=0, reverse=false)], "
        'stacked = [Stacked(axis=0, reverse=false)]} : f32[3], f32[T,3] loc("loop1")\n'
        "  return %total, %partial\n"
        "}"
    )


def test_nested_loops_three_deep() -> None:
    g = loop_graph(3)
    text = print_graph(g)
    assert "      return %cond, %sum, %sum\n" in text  # innermost body indented 3 levels
    roundtrip(g)


def test_if_with_branches_variables_and_zero_output_nodes() -> None:
    def branch(name: str, op: str) -> Graph:
        b = Graph(name)
        x = b.add_input("x", F32)
        b.outputs = [b.append(Node(op, [x], [F32], output_names=["r"])).output]
        return b

    g = Graph("main")
    g.add_variable("state", np.zeros(3, np.float32))
    g.add_variable("step", np.array(0, np.int64), trainable=True)
    cond, x = g.add_input("cond", BOOL), g.add_input("x", F32)
    attrs = {"then_branch": branch("then", "Tanh"), "else_branch": branch("else", "Neg")}
    out = g.append(Node("If", [cond, x], [F32], attrs, output_names=["y"])).output
    read = g.append(Node("ReadVariable", [], [F32], {"variable": "state", "type": F32})).output
    g.append(Node("Assign", [out], [], {"variable": "state"}))
    g.append(Node("Custom", [None, read, None], [], name="sink"))
    g.outputs = [out, out]
    text = print_graph(g)
    assert '  Assign(%y) {variable = "state"}\n' in text
    assert '  Custom(none, %0, none) loc("sink")\n' in text
    assert "  var trainable @step: i64[] = dense<i64[]>[0]\n" in text
    roundtrip(g)


def test_every_attribute_literal_kind() -> None:
    g = Graph("main")
    attrs = {
        "int": 3,
        "neg": -1,
        "big": 2**80,
        "float": 0.1,
        "whole": 2.0,
        "tiny": 5e-324,
        "huge": -1.5e300,
        "negzero": -0.0,
        "nan": math.nan,
        "neg_nan": -math.nan,
        "inf": math.inf,
        "ninf": -math.inf,
        "t": True,
        "f": False,
        "s": 'tab\t"quote" \\ newline\n unicode é 中 \x00',
        "empty": "",
        "none": None,
        "dtype": DType.bfloat16,
        "type": TensorType(DType.float32, [4, 3]),
        "scalar_type": TensorType(DType.int8, []),
        "unranked": TensorType(DType.uint64, None),
        "seq": SequenceType(OptionalType(TensorType(DType.float16, ["N", "?"]))),
        "tuple": (1, (2.5, "x"), (), None, DType.bool),
        "records": (Sliced(axis=-1, reverse=True), Stacked()),
        "array": np.arange(6, dtype=np.int32).reshape(2, 3),
        "empty_array": np.zeros((0, 3), np.float32),
        "scalar_array": np.array(7, np.uint8),
        "graph": loop_graph(0, "sub"),
        "weird key/with:chars": 1,
    }
    g.append(Node("Identity", [], [], attrs))
    text = print_graph(g)
    for fragment in [
        "big = 1208925819614629174706176",
        "float = 0.1",
        "whole = 2.0",
        "tiny = 5e-324",
        "negzero = -0.0",
        "nan = nan",
        "inf = inf, int = 3",
        "ninf = -inf",
        'empty = ""',
        "dtype = bf16",
        "type = f32[4,3]",
        "scalar_type = i8[]",
        "unranked = u64[*]",
        "seq = seq<opt<f16[N,?]>>",
        'tuple = [1, [2.5, "x"], [], none, bool]',
        "records = [Sliced(axis=-1, reverse=true), Stacked(axis=0, reverse=false)]",
        "array = dense<i32[2,3]>[0, 1, 2, 3, 4, 5]",
        "empty_array = dense<f32[0,3]>[]",
        "scalar_array = dense<u8[]>[7]",
        '"weird key/with:chars" = 1',
    ]:
        assert fragment in text
    roundtrip(g)


@pytest.mark.parametrize("dt", list(DType), ids=str)
def test_every_dtype_round_trips_exact_bits(dt: DType) -> None:
    if dt is DType.bool:
        data = np.array([[True, False], [False, True]])
    elif dt is DType.string:
        data = np.array(["", "a b", 'q"uo\\te', "é中\n\t", "nan"], dtype=object)
    elif dt.is_int:
        data = np.array([*int_range(dt), 0, 1], dtype=dt.numpy)
    else:
        with np.errstate(all="ignore"):
            data = np.array(SPECIAL_FLOATS, dtype=np.float64).astype(dt.numpy)
        # Every bit pattern of the 16-bit and narrower types, and NaNs with payloads and signs
        # for the rest.
        if dt.itemsize == 1:
            data = np.arange(2**dt.bits, dtype=np.uint8).view(dt.numpy)
        elif dt.itemsize == 2:
            data = np.arange(2**16, dtype=np.uint16).view(dt.numpy)
        else:
            uint = np.uint32 if dt.itemsize == 4 else np.uint64
            top = uint(1) << uint(8 * dt.itemsize - 1)
            nan = np.array([np.nan], dtype=dt.numpy).view(uint)[0]
            odd = np.array([nan | uint(1), nan | top, (nan | top) + uint(5)], dtype=uint)
            data = np.concatenate([data, odd.view(dt.numpy)])
    g = Graph()
    const(g, data)
    g.add_variable("v", data)
    roundtrip(g)


def test_floats_print_their_shortest_decimal() -> None:
    values = [0.1, -0.0, math.nan, math.inf, 1e10, 1.0]
    for dt, expect in [
        (np.float64, "0.1, -0.0, nan, inf, 10000000000.0, 1.0"),
        (np.float32, "0.1, -0.0, nan, inf, 1e+10, 1.0"),
        (np.float16, "0.1, -0.0, nan, inf, inf, 1.0"),
        (ml_dtypes.bfloat16, "0.1, -0.0, nan, inf, 1e+10, 1.0"),
    ]:
        with np.errstate(all="ignore"):
            text = print_graph(_with_const(np.array(values).astype(dt)))
        assert f"[{expect}]" in text, text


def _with_const(array: np.ndarray[Any, Any]) -> Graph:
    g = Graph()
    g.outputs = [const(g, array)]
    return roundtrip(g)


def test_quoted_names() -> None:
    g = Graph("model/v1:0")
    x = g.add_input("input:0", F32)
    plain = g.add_input("a.b_9", F32)
    y = g.append(Node("Identity", [x], [F32], output_names=['o/"q" é'])).output
    z = g.append(Node("return", [plain], [F32], output_names=["7"])).output
    w = g.append(Node("my op", [y], [F32], output_names=[" "])).output
    v = g.append(Node("com.example.Op", [z], [F32], output_names=[""])).output
    g.outputs = [y, z, w, v]
    text = print_graph(g)
    assert text.startswith('graph @"model/v1:0"(%"input:0": f32[3], %a.b_9: f32[3]) {\n')
    assert '  %"o/\\"q\\" é" = Identity(%"input:0") : f32[3]\n' in text
    assert '  %7 = "return"(%a.b_9) : f32[3]\n' in text
    assert '  %" " = "my op"(%"o/\\"q\\" é") : f32[3]\n' in text
    assert "  %0 = com.example.Op(%7) : f32[3]\n" in text
    roundtrip(g)


def test_empty_and_duplicate_names_are_made_unique_when_printed() -> None:
    g = Graph("")
    x = g.add_input("x", F32)
    a = g.append(Node("Identity", [x], [F32], output_names=["a"])).output
    b = g.append(Node("Identity", [a], [F32], output_names=["b"])).output
    c = g.append(Node("Identity", [b], [F32], output_names=["a_0"])).output
    b.name, c.name = "a", ""  # renamed behind the graph's back
    g.outputs = [c]
    text = print_graph(g)
    assert "  %a_0 = Identity(%a) : f32[3]\n  %1 = Identity(%a_0) : f32[3]\n" in text
    assert print_graph(parse_graph(text)) == text


def test_symbolic_dims_that_look_like_ints_are_quoted() -> None:
    g = Graph()
    g.outputs = [g.add_input("x", TensorType(DType.float32, ["7", 7, "N_2", "?"]))]
    assert '%x: f32["7",7,N_2,?]' in print_graph(g)
    t = roundtrip(g).inputs[0].type
    assert isinstance(t, TensorType) and t.shape == ("7", 7, "N_2", "?")


def test_comments_and_free_layout_are_accepted() -> None:
    text = """
    # a comment
    graph @g(%x: f32[2]) {   # trailing comment
      %y = Identity(
        %x) : f32[2]
      return %y }
    """
    g = parse_graph(text)
    assert print_graph(g) == "graph @g(%x: f32[2]) {\n  %y = Identity(%x) : f32[2]\n  return %y\n}"


def test_elided_constants_are_for_display_only() -> None:
    g = Graph()
    g.outputs = [const(g, np.zeros(1000, np.float32)), const(g, np.ones(2, np.int8), "small")]
    g.add_variable("big", np.zeros((10, 10)))
    text = print_graph(g, elide_constants=10)
    assert "%c = Constant() {value = dense<f32[1000]>[...]} : f32[1000]" in text
    assert "var @big: f64[10,10] = dense<f64[10,10]>[...]" in text
    assert "dense<i8[2]>[1, 1]" in text
    with pytest.raises(
        ParseError,
        match=r"line 2, column 44: expected constant data, found "
        r"'\.\.\.': this constant was elided",
    ):
        parse_graph(text)


@register_attr_record
@dataclass(frozen=True)
class Window:
    size: int
    pad: tuple[int, ...] = ()
    mode: str = "same"


def test_registered_records_round_trip() -> None:
    g = Graph()
    g.append(Node("Pool", [], [], {"window": Window(3, (1, 1))}))
    assert '{window = Window(size=3, pad=[1, 1], mode="same")}' in print_graph(g)
    roundtrip(g)
    assert register_attr_record(Window) is Window

    @dataclass
    class Mutable:
        x: int

    with pytest.raises(GraphError, match="frozen dataclass"):
        register_attr_record(Mutable)

    with pytest.raises(GraphError, match="already named Window"):
        register_attr_record(make_dataclass("Window", [("x", int)], frozen=True))


def test_unprintable_attribute_is_a_graph_error() -> None:
    g = Graph()
    g.append(Node("Identity", [], [], {"bad": object()}))
    with pytest.raises(GraphError, match="cannot print attribute value"):
        print_graph(g)
