"""parse_graph's errors: each bad input names its line, column, what was expected and found."""

from __future__ import annotations

import pytest

from tensorloop.errors import ParseError
from tensorloop.ir.parser import parse_graph


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
