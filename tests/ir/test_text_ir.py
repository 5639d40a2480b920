"""The text IR: print_graph and parse_graph round-trip every graph exactly."""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, make_dataclass
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tensorloop.errors import GraphError, ParseError
from tensorloop.ir.control_flow import Sliced, Stacked
from tensorloop.ir.graph import Graph, Node, Value
from tensorloop.ir.opdef import registered_ops
from tensorloop.ir.parser import parse_graph
from tensorloop.ir.printer import print_graph, register_attr_record
from tensorloop.tensor.dtypes import DType, int_range
from tensorloop.tensor.types import OptionalType, SequenceType, TensorType, Type

F32 = TensorType(DType.float32, [3])
I64 = TensorType(DType.int64, [])
BOOL = TensorType(DType.bool, [])


# -- structural equality -----------------------------------------------------------------------
def assert_same_attr(a: Any, b: Any) -> None:
    assert type(a) is type(b), (a, b)
    if isinstance(a, np.ndarray) and a.dtype == object:  # strings: bytes would be pointers
        assert (a.dtype, a.shape, a.tolist()) == (b.dtype, b.shape, b.tolist())
    elif isinstance(a, np.ndarray):
        assert (a.dtype, a.shape, a.tobytes()) == (b.dtype, b.shape, b.tobytes())
    elif isinstance(a, Graph):
        assert_same_graph(a, b)
    elif isinstance(a, tuple):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            assert_same_attr(x, y)
    elif isinstance(a, float):
        assert struct.pack("<d", a) == struct.pack("<d", b)
    else:
        assert a == b


def assert_same_graph(a: Graph, b: Graph) -> None:
    """Same name, parameters, variables, nodes (ops, attrs, names, types, wiring) and results."""
    assert a.name == b.name
    index_a = {v: i for i, v in enumerate(a.values())}
    index_b = {v: i for i, v in enumerate(b.values())}

    def sig(values: list[Value], index: dict[Value, int]) -> list[tuple[str, Type, int]]:
        return [(v.name, v.type, index[v]) for v in values]

    def wires(values: list[Value | None], index: dict[Value, int]) -> list[int | None]:
        return [None if v is None else index[v] for v in values]

    assert sig(a.inputs, index_a) == sig(b.inputs, index_b)
    assert list(a.variables) == list(b.variables)
    for va, vb in zip(a.variables.values(), b.variables.values(), strict=True):
        assert va.trainable == vb.trainable
        assert_same_attr(va.initial, vb.initial)
    assert len(a.nodes) == len(b.nodes)
    for na, nb in zip(a.nodes, b.nodes, strict=True):
        assert (na.op, na.name, sorted(na.attrs)) == (nb.op, nb.name, sorted(nb.attrs))
        for key in na.attrs:
            assert_same_attr(na.attrs[key], nb.attrs[key])
        assert wires(na.inputs, index_a) == wires(nb.inputs, index_b)
        assert sig(na.outputs, index_a) == sig(nb.outputs, index_b)
    assert sig(a.outputs, index_a) == sig(b.outputs, index_b)


def roundtrip(graph: Graph) -> Graph:
    text = print_graph(graph)
    parsed = parse_graph(text)
    assert print_graph(parsed) == text
    assert_same_graph(graph, parsed)
    return parsed


def const(graph: Graph, value: Any, name: str = "c") -> Value:
    array = np.asarray(value)
    node = Node(
        "Constant",
        [],
        [TensorType(array.dtype, array.shape)],
        {"value": array},
        output_names=[name],
    )
    return graph.append(node).output


def loop_graph(depth: int, name: str = "main", *, body: bool = False) -> Graph:
    """A scan whose body is itself a scan, ``depth`` loops deep."""
    g = Graph(name)
    if body:
        g.add_input("i", I64)
    acc = g.add_input("acc", F32)
    xs = g.add_input("xs", TensorType(DType.float32, ["T"] * depth + [3]))
    results = [const(g, True, "cond")] if body else []
    if depth == 0:
        total = g.append(Node("Add", [acc, xs], [F32], output_names=["sum"])).output
        g.outputs = [*results, total, total]
        return g
    attrs = {
        "body": loop_graph(depth - 1, f"body{depth}", body=True),
        "num_carried": 1,
        "sliced": (Sliced(),),
        "stacked": (Stacked(),),
    }
    loop = Node(
        "Loop",
        [None, None, acc, xs],
        [F32, xs.type],
        attrs,
        name=f"loop{depth}",
        output_names=["total", "partial"],
    )
    g.outputs = [*results, *g.append(loop).outputs]
    return g


# -- hand-built graphs -------------------------------------------------------------------------
BRIEF_EXAMPLE = """\
graph @main(%x: f32[4,N], %h0: f32[?]) {
  var @h: f32[2] = dense<f32[2]>[0.0, 0.0]
  var trainable @w: f32[2] = dense<f32[2]>[0.5, -1.0]
  %c = Constant() {value = dense<f32[2]>[1.0, 2.5]} : f32[2]
  %y = Add(%x, %c) : f32[4,2] loc("rnn/add")
  %h1, %ys = Loop(none, none, %h0, %x) {body = graph @body(%i: i64[], %h: f32[?], %xt: f32[N]) {
    %t = Constant() {value = dense<bool[]>[true]} : bool[]
    return %t, %h, %xt
  }, num_carried = 1, sliced = [Sliced(axis=0, reverse=false)], \
stacked = [Stacked(axis=0, reverse=true)]} : f32[?], f32[4,N]
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


def test_golden_small_loop() -> None:
    assert print_graph(loop_graph(1)) == (
        "graph @main(%acc: f32[3], %xs: f32[T,3]) {\n"
        "  %total, %partial = Loop(none, none, %acc, %xs) {body = graph @body1(%i: i64[], "
        "%acc: f32[3], %xs: f32[3]) {\n"
        "    %cond = Constant() {value = dense<bool[]>[true]} : bool[]\n"
        "    %sum = Add(%acc, %xs) : f32[3]\n"
        "    return %cond, %sum, %sum\n"
        "  }, num_carried = 1, sliced = [Sliced(axis=0, reverse=false)], "
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


SPECIAL_FLOATS = [0.1, 1 / 3, -0.0, 0.0, math.nan, math.inf, -math.inf, 1e-40, 65504.0, 3e38, -2.5]


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


# -- parse errors ------------------------------------------------------------------------------
def graph_text(*lines: str, params: str = "%x: f32[2]", results: str = "%x") -> str:
    body = "".join(f"  {line}\n" for line in lines)
    return f"graph @g({params}) {{\n{body}  return {results}\n}}"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            graph_text(params="%x: f31[2]"),
            "line 1, column 14: expected a type, found unknown type 'f31'",
        ),
        (
            graph_text(params="%x: f32[4,-1]"),
            r"line 1, column 20: expected a dimension \(an int, a symbol or \?\), found '-1'",
        ),
        (
            graph_text(params="%x: f32[4,2.5]"),
            r"line 1, column 20: expected a dimension \(an int, a symbol or \?\), found '2.5'",
        ),
        (
            graph_text("%y = Identity(%x : f32[2]"),
            "line 2, column 20: expected ',' or '\\)', found ':'",
        ),
        ("graph @g(%x: f32[2] {", "line 1, column 21: expected ',' or '\\)', found '{'"),
        (
            graph_text("%y = Identity(%z) : f32[2]"),
            "line 2, column 17: expected a value defined earlier in this graph, "
            "found undefined value %z",
        ),
        (
            graph_text("%y = Identity(%y) : f32[2]"),
            "line 2, column 17: expected a value defined earlier in this graph, "
            "found undefined value %y",
        ),
        (
            graph_text("%x = Identity(%x) : f32[2]"),
            "line 2, column 3: expected a new value name, found %x already defined at line 1, "
            "column 10",
        ),
        (
            graph_text("%a, %a = Split(%x) : f32[1], f32[1]"),
            "line 2, column 7: expected a new value name, found %a already defined at line 2, "
            "column 3",
        ),
        (
            graph_text(params="%x: f32[2], %x: f32[2]"),
            "line 1, column 22: expected a new value name, found %x already defined",
        ),
        (
            graph_text(
                "%y = If(%x) {then_branch = graph @t() {",
                "    return %x",
                "  }, else_branch = graph @e() {",
                "    return",
                "  }} : f32[2]",
            ),
            "line 3, column 14: expected a value of this graph, found %x of an enclosing graph "
            r"\(graph bodies are closed: pass it in as an input\)",
        ),
        (
            graph_text("%y = Identity(%x) : f32[2], f32[2]"),
            "line 2, column 21: expected 1 output types, found 2",
        ),
        (graph_text("%y = Identity(%x)"), "line 3, column 3: expected ':', found 'return'"),
        (
            graph_text("%c = Constant() {value = dense<f32[3]>[1.0, 2.0]} : f32[3]"),
            r"line 2, column 41: expected 3 values for f32\[3\], found 2",
        ),
        (
            graph_text("%c = Constant() {value = dense<i8[1]>[300]} : i8[1]"),
            "line 2, column 41: expected an integer in the range of i8, found '300'",
        ),
        (
            graph_text("%c = Constant() {value = dense<i8[1]>[1.5]} : i8[1]"),
            "line 2, column 41: expected an integer for i8, found '1.5'",
        ),
        (
            graph_text("%c = Constant() {value = dense<f32[1]>[true]} : f32[1]"),
            "line 2, column 42: expected a number for f32, found 'true'",
        ),
        (
            graph_text("%c = Constant() {value = dense<f32[N]>[]} : f32[N]"),
            r"line 2, column 34: expected a static tensor type, found f32\[N\]",
        ),
        (
            graph_text("Op() {r = Ranged(a=1)}"),
            r"line 2, column 13: expected an attribute record \(.*Sliced.*\), "
            "found unknown record 'Ranged'",
        ),
        (
            graph_text("Op() {r = Sliced(axis=1, bogus=2)}"),
            "line 2, column 13: expected the fields of Sliced, found an error: .*bogus",
        ),
        (
            graph_text("Op() {a = 1, a = 2}"),
            "line 2, column 16: expected a new attribute name, found 'a' given twice",
        ),
        (
            graph_text("Op() {a = frob}"),
            "line 2, column 13: expected an attribute value, found unknown word 'frob'",
        ),
        (
            graph_text('Op() {a = "bad \\q escape"}'),
            "line 2, column 13: expected a valid string, found",
        ),
        (
            graph_text('Op() {a = "unterminated}'),
            "line 2, column 13: expected a string closed on its line, found '\"unterminated}'",
        ),
        (graph_text("Op(% x)"), "line 2, column 6: expected a name after '%', found unexpected"),
        (
            graph_text("Op() {a = nan(0x1ffffffffffffffff)}"),
            "line 2, column 13: expected NaN bits that fit in f64, found 'nan'",
        ),
        (
            graph_text("Op() {a = dense<f16[1]>[nan(0x1ffff)]}"),
            "line 2, column 27: expected NaN bits that fit in f16, found 'nan'",
        ),
        (
            graph_text("Op() {a = $}"),
            "line 2, column 13: expected a token, found unexpected character '\\$'",
        ),
        (
            graph_text("var @v: f32[2] = dense<f32[3]>[1.0, 2.0, 3.0]"),
            r"line 2, column 20: expected an initial value of type f32\[2\], found one of type "
            r"f32\[3\]",
        ),
        (graph_text("}"), "line 2, column 3: expected a node, 'var' or 'return', found '}'"),
        (graph_text() + "\ngraph", "line 4, column 1: expected end of input, found 'graph'"),
        ("", "line 1, column 1: expected 'graph', found end of input"),
    ],
)
def test_parse_errors(text: str, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        parse_graph(text)


# -- property: print -> parse -> print is the identity -----------------------------------------
NAMES = st.one_of(st.from_regex(r"[A-Za-z0-9_.]{1,5}", fullmatch=True), st.text(max_size=5))
DIMS = st.one_of(st.integers(0, 5), st.sampled_from(["N", "batch_size", "?", "T1", "7"]))
TENSOR_TYPES = st.builds(
    TensorType, st.sampled_from(list(DType)), st.none() | st.lists(DIMS, max_size=3)
)
TYPES = st.recursive(
    TENSOR_TYPES, lambda t: st.builds(SequenceType, t) | st.builds(OptionalType, t), max_leaves=2
)
FLOATS = st.sampled_from(SPECIAL_FLOATS) | st.floats(-1e4, 1e4)


@st.composite
def arrays(draw: st.DrawFn) -> np.ndarray[Any, Any]:
    dt = draw(st.sampled_from(list(DType)))
    shape = tuple(draw(st.lists(st.integers(0, 3), max_size=3)))
    n = math.prod(shape)
    if dt is DType.bool:
        data = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=np.bool_)
    elif dt is DType.string:
        data = np.empty(n, dtype=object)
        data[:] = draw(st.lists(st.text(max_size=4), min_size=n, max_size=n))
    elif dt.is_float and draw(st.booleans()):
        with np.errstate(all="ignore"):
            floats = draw(st.lists(FLOATS, min_size=n, max_size=n))
            data = np.array(floats, dtype=np.float64).astype(dt.numpy)
    else:  # arbitrary bits: subnormals, NaN payloads, extreme ints
        raw = draw(st.binary(min_size=n * dt.itemsize, max_size=n * dt.itemsize))
        data = np.frombuffer(raw, dtype=dt.numpy).copy()
        if dt.bits < 8:  # a 4- or 2-bit element lives in the low bits of its byte
            data = (data.view(np.uint8) & np.uint8(2**dt.bits - 1)).view(dt.numpy)
    return data.reshape(shape)


LITERALS = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats()
    | st.text(max_size=8)
    | st.sampled_from(list(DType))
    | TYPES
    | arrays()
    | st.builds(Sliced, st.integers(-3, 3), st.booleans())
    | st.builds(Stacked, st.integers(-3, 3), st.booleans()),
    lambda inner: st.lists(inner, max_size=3).map(tuple),
    max_leaves=5,
)


@st.composite
def graphs(draw: st.DrawFn, depth: int = 2) -> Graph:
    g = Graph(draw(NAMES))
    for _ in range(draw(st.integers(0, 3))):
        g.add_input(draw(NAMES.filter(bool)), draw(TYPES))
    for name in draw(st.lists(NAMES, max_size=2, unique=True)):
        g.add_variable(name, draw(arrays()), draw(st.booleans()))
    attr_values = LITERALS | graphs(depth - 1) if depth > 0 else LITERALS
    for _ in range(draw(st.integers(0, 5))):
        values = list(g.values())
        input_strategy = st.none() | st.sampled_from(values) if values else st.none()
        n_out = draw(st.integers(0, 3))
        node = Node(
            draw(st.sampled_from(registered_ops())),
            draw(st.lists(input_strategy, max_size=3)),
            draw(st.lists(TYPES, min_size=n_out, max_size=n_out)),
            draw(st.dictionaries(NAMES, attr_values, max_size=3)),
            name=draw(st.just("") | NAMES),
            output_names=draw(st.lists(NAMES, min_size=n_out, max_size=n_out)),
        )
        g.append(node)
    values = list(g.values())
    g.outputs = draw(st.lists(st.sampled_from(values), max_size=3)) if values else []
    return g


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs())
def test_print_parse_print_is_identity(graph: Graph) -> None:
    roundtrip(graph)
