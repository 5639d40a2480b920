"""Reads the text form written by ``printer.print_graph`` back into a Graph."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any, NoReturn, TypeVar

import numpy as np

from ..errors import ParseError
from ..tensor.dtypes import DType, int_range
from ..tensor.types import UNKNOWN, Dim, OptionalType, SequenceType, TensorType, Type
from .graph import Graph, Node, Value
from .opdef import find_opdef
from .printer import ATTR_RECORDS, floats_to_array, sigil_name

_STRING = r'"(?:[^"\\\n]|\\.)*"'
_TOKEN = re.compile(
    rf"""
    (?P<skip>[ \t\r\n]+|\#[^\n]*)
  | (?P<sigil>[%@])(?:(?P<bare>[A-Za-z0-9_.]+)|(?P<quoted>{_STRING}))
  | (?P<string>{_STRING})
  | (?P<number>-?(?:0x[0-9a-fA-F]+|[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?))
  | (?P<ident>[A-Za-z_][A-Za-z0-9_.]*)
  | (?P<punct>\.\.\.|[(){{}}\[\]<>,=:?*-])
    """,
    re.VERBOSE,
)
_DTYPES = {**{d.value: d for d in DType}, **{d.short: d for d in DType}}
_INTEGER = re.compile(r"-?(0x[0-9a-fA-F]+|[0-9]+)")


@dataclass(frozen=True)
class Token:
    kind: str  # "value" (%x), "global" (@x), "string", "number", "ident", "punct" or "eof"
    text: str  # the decoded name or string for value/global/string, else the source text
    line: int
    column: int

    def show(self) -> str:
        if self.kind == "eof":
            return "end of input"
        if self.kind in ("value", "global"):
            return sigil_name("%" if self.kind == "value" else "@", self.text)
        return json.dumps(self.text) if self.kind == "string" else f"'{self.text}'"


def tokenize(text: str) -> list[Token]:
    tokens: list[Token] = []
    pos, line, line_start = 0, 1, 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        column = pos - line_start + 1
        if m is None:
            if text[pos] == '"':
                found = repr(text[pos:].split("\n")[0][:20])
                expected = "a string closed on its line"
            else:
                found = f"unexpected character {text[pos]!r}"
                expected = f"a name after {text[pos]!r}" if text[pos] in "%@" else "a token"
            raise ParseError(f"line {line}, column {column}: expected {expected}, found {found}")
        kind = m.lastgroup
        assert kind is not None
        if kind == "skip":
            newlines = m.group().count("\n")
            if newlines:
                line += newlines
                line_start = pos + m.group().rindex("\n") + 1
        elif kind in ("bare", "quoted", "string"):
            raw = m.group(kind)
            try:
                value = raw if kind == "bare" else json.loads(raw)
            except json.JSONDecodeError as e:
                raise ParseError(
                    f"line {line}, column {column}: expected a valid string, found {raw} ({e.msg})"
                ) from None
            if kind == "string":
                tokens.append(Token("string", value, line, column))
            else:
                sigil = "value" if m.group("sigil") == "%" else "global"
                tokens.append(Token(sigil, value, line, column))
        else:
            tokens.append(Token(kind, m.group(), line, column))
        pos = m.end()
    tokens.append(Token("eof", "", line, len(text) - line_start + 1))
    return tokens


def parse_graph(text: str, arrays: Sequence[np.ndarray[Any, Any]] | None = None) -> Graph:
    """Parse one ``graph @name(...) {...}``; raises ParseError naming line and column.
    ``arrays``: what the references ``dense<...> array(k)`` of text printed with
    ``print_graph(graph, arrays=...)`` stand for."""
    return _Parser(text, arrays).top()


MAX_NESTING = 96
"""How deep attribute values (lists, records, bodies) may nest; a body inside a body inside ...
a hundred deep is no model, and Python's own recursion limit is not far beyond."""
T = TypeVar("T")
Scope = dict[str, tuple[Value, Token]]  # a graph's values so far, with where each was defined


@dataclass(frozen=True)
class NanBits:
    """A NaN written with its exact bit pattern, ``nan(0x7fc00001)``."""

    bits: int


class _Parser:
    def __init__(self, text: str, arrays: Sequence[np.ndarray[Any, Any]] | None = None) -> None:
        self.arrays = arrays
        self.tokens = tokenize(text)
        self.pos = 0
        self.depth = 0

    # -- token helpers -------------------------------------------------------------------------
    def peek(self, ahead: int = 0) -> Token:
        return self.tokens[min(self.pos + ahead, len(self.tokens) - 1)]

    def next(self) -> Token:
        tok = self.peek()
        self.pos += 1
        return tok

    def at(self, text: str, kind: str = "punct", ahead: int = 0) -> bool:
        tok = self.peek(ahead)
        return tok.kind == kind and tok.text == text

    def accept(self, text: str, kind: str = "punct") -> bool:
        if self.at(text, kind):
            self.pos += 1
            return True
        return False

    def expect(self, text: str, kind: str = "punct") -> Token:
        if not self.at(text, kind):
            self.fail(f"'{text}'")
        return self.next()

    def expect_kind(self, kind: str, what: str) -> Token:
        if self.peek().kind != kind:
            self.fail(what)
        return self.next()

    def items(self, close: str, item: Callable[[], T]) -> list[T]:
        """Comma-separated ``item``s up to and including the ``close`` punctuation."""
        out: list[T] = []
        while not self.accept(close):
            if out and not self.accept(","):
                self.fail(f"',' or '{close}'")
            out.append(item())
        return out

    def fail(self, expected: str, tok: Token | None = None, found: str | None = None) -> NoReturn:
        tok = tok or self.peek()
        raise ParseError(
            f"line {tok.line}, column {tok.column}: expected {expected}, "
            f"found {found or tok.show()}"
        )

    # -- graphs ------------------------------------------------------------------------------
    def top(self) -> Graph:
        graph = self.graph(frozenset())
        self.expect_kind("eof", "end of input")
        return graph

    def graph(self, outer: AbstractSet[str]) -> Graph:
        """``outer`` names the values of enclosing graphs, only to explain why they are unusable."""
        self.expect("graph", "ident")
        graph = Graph(self.expect_kind("global", "a graph name (@name)").text)
        scope: Scope = {}

        def param() -> None:
            tok = self.define(scope)
            self.expect(":")
            scope[tok.text] = (graph.add_input(tok.text, self.type()), tok)

        self.expect("(")
        self.items(")", param)
        self.expect("{")
        while not self.accept("return", "ident"):
            if self.at("var", "ident"):
                self.variable(graph)
            else:
                self.node(graph, scope, outer)
        if self.peek().kind == "value":
            graph.outputs.append(self.use(scope, outer))
            while self.accept(","):
                graph.outputs.append(self.use(scope, outer))
        self.expect("}")
        return graph

    def variable(self, graph: Graph) -> None:
        self.expect("var", "ident")
        trainable = self.accept("trainable", "ident")
        tok = self.expect_kind("global", "a variable name (@name)")
        if tok.text in graph.variables:
            self.fail("a new variable name", tok, f"{tok.show()} defined twice")
        self.expect(":")
        declared = self.type()
        self.expect("=")
        at = self.peek()
        if not self.at("dense", "ident"):
            self.fail("a dense<...> initial value")
        initial = self.dense()
        actual = TensorType(initial.dtype, initial.shape)
        if actual != declared:
            self.fail(f"an initial value of type {declared}", at, f"one of type {actual}")
        graph.add_variable(tok.text, initial, trainable)

    def node(self, graph: Graph, scope: Scope, outer: AbstractSet[str]) -> None:
        outs: list[Token] = []
        if self.peek().kind == "value":
            outs.append(self.define(scope))
            while self.accept(","):
                outs.append(self.define(scope, outs))
            self.expect("=")
        op = self.next()
        if op.kind not in ("ident", "string"):
            self.fail("a node, 'var' or 'return'" if not outs else "an op name", op)
        self.expect("(")
        roles: dict[str, Any] = {}
        inputs = self.items(")", lambda: self.operand(scope, outer, roles))
        attrs: dict[str, Any] = {}

        def attr() -> None:
            key = self.next()
            if key.kind not in ("ident", "string"):
                self.fail("an attribute name", key)
            if key.text in attrs:
                self.fail("a new attribute name", key, f"{key.show()} given twice")
            self.expect("=")
            attrs[key.text] = self.literal(outer | scope.keys())

        if self.accept("{"):
            self.items("}", attr)
        types: list[Type] = []
        if outs:
            colon = self.expect(":")
            types.append(self.type())
            while self.accept(","):
                types.append(self.type())
            if len(types) != len(outs):
                self.fail(f"{len(outs)} output types", colon, str(len(types)))
        if roles:
            inputs = self.join_roles(op, roles, inputs, attrs)
        name = ""
        if self.accept("loc", "ident"):
            self.expect("(")
            name = self.expect_kind("string", "a quoted node name").text
            self.expect(")")
        node = Node(op.text, inputs, types, attrs, name=name, output_names=[t.text for t in outs])
        graph.append(node)
        scope.update((tok.text, (v, tok)) for tok, v in zip(outs, node.outputs, strict=True))

    # -- values ------------------------------------------------------------------------------
    def define(self, scope: Scope, pending: Sequence[Token] = ()) -> Token:
        tok = self.expect_kind("value", "a value name (%name)")
        if not tok.text:
            self.fail("a non-empty value name", tok)
        first = scope[tok.text][1] if tok.text in scope else None
        first = first or next((t for t in pending if t.text == tok.text), None)
        if first is not None:
            self.fail(
                "a new value name",
                tok,
                f"{tok.show()} already defined at line {first.line}, column {first.column}",
            )
        return tok

    def operand(self, scope: Scope, outer: AbstractSet[str], roles: dict[str, Any]) -> Value | None:
        """A positional input, or ``role=%v`` / ``role=[%a, %b]`` (recorded in ``roles``)."""
        if not (self.peek().kind == "ident" and self.at("=", ahead=1)):
            if roles:
                self.fail("a role (name=...) after roles")
            return self.input(scope, outer)
        key = self.next()
        if key.text in roles:
            self.fail("a new role", key, f"role '{key.text}' given twice")
        self.expect("=")
        if self.accept("["):
            roles[key.text] = self.items("]", lambda: self.input(scope, outer))
        else:
            roles[key.text] = self.input(scope, outer)
        return None

    def join_roles(
        self, op: Token, roles: dict[str, Any], inputs: list[Value | None], attrs: dict[str, Any]
    ) -> list[Value | None]:
        """The flat inputs of a node written with roles; the attributes they imply join
        ``attrs``."""
        opdef = find_opdef(op.text)
        spec = None if opdef is None else opdef.roles
        if spec is None:
            self.fail("positional inputs", op, f"roles for op '{op.text}', which has none")
        if len(inputs) != len(roles):
            self.fail("only roles", op, "positional inputs mixed with roles")
        for key in roles:
            if key not in spec.singles + spec.lists:
                known = ", ".join(spec.singles + spec.lists)
                self.fail(f"a role of {op.text} ({known})", op, f"role '{key}'")
            if isinstance(roles[key], list) != (key in spec.lists):
                self.fail(f"role '{key}' as {'a list' if key in spec.lists else 'one value'}", op)
        flat, derived = spec.join(roles)
        for key, value in derived.items():
            if key in attrs:
                self.fail(f"'{key}' implied by the roles only", op, f"attribute '{key}' given")
            attrs[key] = value
        return list(flat)

    def input(self, scope: Scope, outer: AbstractSet[str]) -> Value | None:
        return None if self.accept("none", "ident") else self.use(scope, outer)

    def use(self, scope: Scope, outer: AbstractSet[str]) -> Value:
        tok = self.expect_kind("value", "a value (%name)")
        if tok.text in scope:
            return scope[tok.text][0]
        if tok.text in outer:
            self.fail(
                "a value of this graph",
                tok,
                f"{tok.show()} of an enclosing graph "
                "(graph bodies are closed: pass it in as an input)",
            )
        self.fail("a value defined earlier in this graph", tok, f"undefined value {tok.show()}")

    # -- types -------------------------------------------------------------------------------
    def type(self) -> Type:
        tok = self.expect_kind("ident", "a type")
        if tok.text in ("seq", "opt"):
            self.expect("<")
            if self.depth >= MAX_NESTING:
                self.fail(f"at most {MAX_NESTING} nested types", found="deeper nesting")
            self.depth += 1
            try:
                element = self.type()
            finally:
                self.depth -= 1
            self.expect(">")
            return SequenceType(element) if tok.text == "seq" else OptionalType(element)
        dt = _DTYPES.get(tok.text)
        if dt is None:
            self.fail("a type", tok, f"unknown type '{tok.text}'")
        self.expect("[")
        if self.accept("*"):
            self.expect("]")
            return TensorType(dt, None)
        return TensorType(dt, self.items("]", self.dim))

    def dim(self) -> Dim:
        tok = self.next()
        if tok.kind == "number" and tok.text.isdigit():
            return int(tok.text)
        if tok.kind == "punct" and tok.text == "?":
            return UNKNOWN
        if tok.kind in ("ident", "string") and tok.text.replace("_", "a").isalnum():
            return tok.text  # a symbol; the printer quotes those that would read as something else
        self.fail("a dimension (an int, a symbol or ?)", tok)

    # -- attribute literals ------------------------------------------------------------------
    def literal(self, outer: AbstractSet[str] = frozenset()) -> Any:
        """An attribute value; nested values (lists, records, graphs) count towards MAX_NESTING,
        so that a hostile file meets a ParseError rather than Python's recursion limit."""
        if self.depth >= MAX_NESTING:
            self.fail(f"at most {MAX_NESTING} nested attribute values", found="deeper nesting")
        self.depth += 1
        try:
            return self._literal(outer)
        finally:
            self.depth -= 1

    def _literal(self, outer: AbstractSet[str]) -> Any:
        tok = self.peek()
        if tok.kind == "string":
            return self.next().text
        if tok.kind == "number" or self.at("-") or tok.text in ("inf", "nan"):
            value = self.number()
            if not isinstance(value, NanBits):
                return value
            if value.bits >= 1 << 64:
                self.fail("NaN bits that fit in f64", tok)
            return float(np.array(value.bits, dtype=np.uint64).view(np.float64))
        if self.accept("["):
            return tuple(self.items("]", lambda: self.literal(outer)))
        if tok.kind != "ident":
            self.fail("an attribute value")
        word = tok.text
        if word in ("none", "true", "false"):
            self.next()
            return None if word == "none" else word == "true"
        if word == "dense":
            return self.dense()
        if word == "graph":
            return self.graph(outer)
        if word in ("seq", "opt") or (word in _DTYPES and self.at("[", ahead=1)):
            return self.type()
        if word in _DTYPES:
            return _DTYPES[self.next().text]
        if self.at("(", ahead=1):
            return self.record(outer)
        self.fail("an attribute value", tok, f"unknown word '{word}'")

    def record(self, outer: AbstractSet[str]) -> Any:
        tok = self.next()
        cls = ATTR_RECORDS.get(tok.text)
        if cls is None:
            known = ", ".join(sorted(ATTR_RECORDS))
            self.fail(f"an attribute record ({known})", tok, f"unknown record '{tok.text}'")
        self.expect("(")
        fields: dict[str, Any] = {}

        def field() -> None:
            key = self.expect_kind("ident", f"a field of {tok.text}")
            if key.text in fields:
                self.fail("a new field name", key, f"'{key.text}' given twice")
            self.expect("=")
            fields[key.text] = self.literal(outer)

        self.items(")", field)
        try:
            return cls(**fields)
        except TypeError as e:
            self.fail(f"the fields of {tok.text}", tok, f"an error: {e}")

    def number(self) -> int | float | NanBits:
        """An int, or a float as the printer spells it: decimal, [-]inf, nan or nan(0xBITS)."""
        tok = self.next()
        if tok.kind == "number":
            if _INTEGER.fullmatch(tok.text):
                return int(tok.text, 16 if "x" in tok.text else 10)
            return float(tok.text)
        if tok.text == "-" and self.at("inf", "ident"):
            self.next()
            return float("-inf")
        if tok.text == "inf":
            return float("inf")
        if tok.text != "nan":
            self.fail("a number", tok)
        if not self.accept("("):
            return float("nan")
        bits = self.next()
        if bits.kind != "number" or not bits.text.startswith("0x"):
            self.fail("the bits of a NaN in hex (0x...)", bits)
        self.expect(")")
        return NanBits(int(bits.text, 16))

    def dense(self) -> np.ndarray[Any, Any]:
        self.expect("dense", "ident")
        self.expect("<")
        at = self.peek()
        t = self.type()
        if not isinstance(t, TensorType) or not t.is_static:
            self.fail("a static tensor type", at, str(t))
        self.expect(">")
        if self.at("array", "ident"):
            return self.array_reference(t)
        start = self.expect("[")
        if self.at("..."):
            self.fail(
                "constant data",
                self.peek(),
                "'...': this constant was elided when "
                "printed (elide_constants) and cannot be parsed back",
            )

        def element() -> tuple[Token, Any]:
            tok = self.peek()
            if tok.kind == "ident" and tok.text in ("true", "false"):
                return tok, self.next().text == "true"
            if tok.kind == "string":
                return tok, self.next().text
            return tok, self.number()

        items = self.items("]", element)
        if len(items) != t.numel():
            self.fail(f"{t.numel()} values for {t}", start, str(len(items)))
        return _array(self, t, items)

    def array_reference(self, t: TensorType) -> np.ndarray[Any, Any]:
        """``array(k)``: the ``k``-th of the arrays the text was printed with, of type ``t``."""
        self.expect("array", "ident")
        self.expect("(")
        tok = self.next()
        if tok.kind != "number" or not tok.text.isdigit():
            self.fail("an array index", tok)
        self.expect(")")
        k = int(tok.text)
        if self.arrays is None:
            self.fail("constant data", tok, "a reference to an array given beside the text")
        if k >= len(self.arrays):
            self.fail(f"an array index below {len(self.arrays)}", tok)
        array = self.arrays[k]
        if not isinstance(array, np.ndarray) or array.dtype != t.dtype.numpy:
            found = str(array.dtype) if isinstance(array, np.ndarray) else type(array).__name__
            self.fail(f"a {t.dtype} array", tok, found)
        if array.shape != t.static_shape:
            self.fail(f"an array of shape {list(t.static_shape)}", tok, str(list(array.shape)))
        return array


def _array(parser: _Parser, t: TensorType, items: list[tuple[Token, Any]]) -> np.ndarray[Any, Any]:
    dt, shape = t.dtype, t.static_shape
    ok: type | tuple[type, ...]
    if dt is DType.bool:
        ok, what = bool, "true or false"
    elif dt is DType.string:
        ok, what = str, "a string"
    elif dt.is_int:
        ok, what = int, "an integer"
    else:
        ok, what = (int, float, NanBits), "a number"
    lo, hi = int_range(dt) if dt.is_int else (0, 0)
    for tok, v in items:
        if not isinstance(v, ok) or isinstance(v, bool) != (dt is DType.bool):
            parser.fail(f"{what} for {dt}", tok)
        if dt.is_int and isinstance(v, int) and not lo <= v <= hi:
            parser.fail(f"an integer in the range of {dt}", tok)
        if isinstance(v, NanBits) and v.bits >= 1 << (8 * dt.itemsize):
            parser.fail(f"NaN bits that fit in {dt}", tok)
    if not dt.is_float:
        flat = np.empty(len(items), dtype=dt.numpy)
        flat[:] = [v for _, v in items]  # element-wise, so an object array holds each str whole
        return flat.reshape(shape)
    array = floats_to_array([math.nan if isinstance(v, NanBits) else v for _, v in items], dt)
    bits = array.view(f"u{dt.itemsize}")
    for i, (_, v) in enumerate(items):
        if isinstance(v, NanBits):
            bits[i] = v.bits
    return array.reshape(shape)
