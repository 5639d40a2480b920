"""The text form of the IR, one node per line and MLIR-flavoured; ``parse_graph`` reads it back."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from ..errors import GraphError
from ..tensor.dtypes import DType, dtype
from ..tensor.types import OptionalType, SequenceType, TensorType, Type
from .graph import Graph, Node, Value
from .loop import Sliced, Stacked
from .opdef import Roles, find_opdef

_BARE_NAME = re.compile(r"[A-Za-z0-9_.]+")
_BARE_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
_BARE_DIM = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# An op spelled like a statement keyword would be misread at the start of a line.
_KEYWORDS = frozenset({"var", "return", "loc"})

ATTR_RECORDS: dict[str, type] = {"Sliced": Sliced, "Stacked": Stacked}
"""Frozen dataclasses that may appear as attributes, by the name they are printed under."""

R = TypeVar("R", bound=type)


def register_attr_record(cls: R) -> R:
    """Let instances of the frozen dataclass ``cls`` be printed and parsed as attributes."""
    if not (dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen):  # type: ignore[attr-defined]
        raise GraphError(f"{cls.__name__} must be a frozen dataclass to be an attribute record")
    known = ATTR_RECORDS.setdefault(cls.__name__, cls)
    if known is not cls:
        raise GraphError(f"another attribute record is already named {cls.__name__}")
    return cls


def quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def sigil_name(sigil: str, name: str) -> str:
    """``%name`` / ``@name``, quoted when the name has characters beyond [A-Za-z0-9_.]."""
    return sigil + (name if _BARE_NAME.fullmatch(name) else quote(name))


def format_type(t: Type) -> str:
    if isinstance(t, TensorType):
        if t.shape is None:
            return f"{t.dtype.short}[*]"
        dims = (
            d if isinstance(d, int) or _BARE_DIM.fullmatch(d) or d == "?" else quote(d)
            for d in t.shape
        )
        return f"{t.dtype.short}[{','.join(str(d) for d in dims)}]"
    if isinstance(t, SequenceType):
        return f"seq<{format_type(t.element)}>"
    if isinstance(t, OptionalType):
        return f"opt<{format_type(t.element)}>"
    raise GraphError(f"cannot print type {t!r}")


# -- floats ------------------------------------------------------------------------------------
_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def floats_to_array(values: list[float], dt: DType) -> np.ndarray[Any, Any]:
    """How the parser turns decimal float literals into elements; the printer checks against it."""
    with np.errstate(all="ignore"):
        return np.array(values, dtype=np.float64).astype(dt.numpy)


def format_floats(flat: np.ndarray[Any, Any]) -> list[str]:
    """Decimal text for each float element that parses back to the exact same bits.

    The shortest decimal is tried first for readability; ``repr(float(x))`` is always exact
    otherwise, except for NaNs other than the default one, whose bits are spelled out.
    """
    dt = dtype(flat.dtype)
    bits = flat.view(_UINT[dt.itemsize])
    with np.errstate(invalid="ignore"):
        exact = flat.astype(np.float64).tolist()
    if dt is DType.float64:
        texts = [repr(x) for x in exact]
    elif dt is DType.bfloat16 or dt.itemsize == 1:
        texts = _shortest_narrow(exact, bits, dt)
    else:  # NumPy prints float16/float32 scalars as their shortest round-trip decimal
        texts = [str(x) for x in flat]
    texts = [_decimal(t) for t in texts]
    back = floats_to_array([float(t) for t in texts], dt).view(bits.dtype)
    for i in np.flatnonzero(back != bits):
        x = exact[i]
        texts[i] = f"nan(0x{int(bits[i]):x})" if math.isnan(x) else repr(x)
    return texts


def _decimal(text: str) -> str:
    """``text`` spelled as a float: "3" becomes "3.0"."""
    return text if any(c in text for c in ".en") else text + ".0"


def _shortest_narrow(values: list[float], bits: np.ndarray[Any, Any], dt: DType) -> list[str]:
    """bfloat16 and the 8- and 4-bit floats: the shortest of the exact float64 repr and 4 down to
    1 significant digits (which pin down their 8 or fewer mantissa bits) that round-trips."""
    texts = [_decimal(repr(v)) for v in values]
    for digits in (4, 3, 2, 1):
        shorter = [_decimal(f"{v:.{digits}g}") for v in values]
        same = floats_to_array([float(t) for t in shorter], dt).view(bits.dtype) == bits
        texts = [
            new if ok and len(new) <= len(old) else old
            for new, old, ok in zip(shorter, texts, same.tolist(), strict=True)
        ]
    return texts


# -- the printer -------------------------------------------------------------------------------
def print_graph(
    graph: Graph,
    *,
    elide_constants: int | None = None,
    arrays: list[np.ndarray[Any, Any]] | None = None,
) -> str:
    """The text form of ``graph``; arrays over ``elide_constants`` elements print as ``[...]``.
    With ``arrays`` (a list to fill), every array but a string array of more than
    ``ARRAY_REFERENCE_ELEMENTS`` elements prints as a reference ``dense<f32[4,8]> array(k)`` to
    the ``k``-th array appended to it, read back by ``parse_graph(text, arrays)``: the form a
    model pickles as (``Model.__reduce__``), its weights binary instead of decimal text."""
    return _Printer(elide_constants, arrays).graph(graph, "")


ARRAY_REFERENCE_ELEMENTS = 16
"""Arrays larger than this print as references when ``print_graph`` is given ``arrays``."""


def _value_names(graph: Graph) -> dict[Value, str]:
    """The name each value prints under: its own, unless empty or taken earlier in this graph."""
    taken = {v.name for v in graph.values()}
    names: dict[Value, str] = {}
    used: set[str] = set()
    counter = 0
    for v in graph.values():
        name = v.name
        while not name or name in used:
            name = f"{v.name}_{counter}" if v.name else str(counter)
            counter += 1
            if name in taken:
                name = ""
        used.add(name)
        names[v] = name
    return names


class _Printer:
    def __init__(
        self, elide_constants: int | None, arrays: list[np.ndarray[Any, Any]] | None = None
    ) -> None:
        self.elide = elide_constants
        self.arrays = arrays

    def graph(self, graph: Graph, indent: str) -> str:
        names = _value_names(graph)

        def ref(v: Value | None) -> str:
            return "none" if v is None else sigil_name("%", names.get(v, v.name))

        params = ", ".join(f"{ref(v)}: {format_type(v.type)}" for v in graph.inputs)
        inner = indent + "  "
        lines = [f"graph {sigil_name('@', graph.name)}({params}) {{"]
        for var in graph.variables.values():
            trainable = "trainable " if var.trainable else ""
            lines.append(
                f"{inner}var {trainable}{sigil_name('@', var.name)}: "
                f"{format_type(var.type)} = {self.dense(var.initial)}"
            )
        lines.extend(inner + self.node(node, ref, inner) for node in graph.nodes)
        results = ", ".join(ref(v) for v in graph.outputs)
        lines.append(f"{inner}return {results}".rstrip())
        lines.append(indent + "}")
        return "\n".join(lines)

    def node(self, node: Node, ref: Callable[[Value | None], str], indent: str) -> str:
        outs = ", ".join(ref(v) for v in node.outputs)
        op = (
            node.op
            if _BARE_IDENT.fullmatch(node.op) and node.op not in _KEYWORDS
            else quote(node.op)
        )
        text = f"{outs} = " if outs else ""
        roles = _roles_of(node)
        if roles is None:
            text += f"{op}({', '.join(ref(v) for v in node.inputs)})"
            keys = sorted(node.attrs)
        else:  # inputs by role: Loop(max_trip_count=none, ..., carried=[%h])
            groups = roles.split(node.inputs, node.attrs)
            parts = [f"{k}={ref(groups[k])}" for k in roles.singles if groups[k] is not None]
            parts += [
                f"{k}=[{', '.join(ref(v) for v in groups[k])}]" for k in roles.lists if groups[k]
            ]
            parts = parts or [f"{roles.singles[0]}=none"]  # omitted roles are none or empty
            text += f"{op}({', '.join(parts)})"
            keys = sorted(set(node.attrs) - roles.derived)
        if keys:
            attrs = (f"{_key(k)} = {self.attr(node.attrs[k], indent)}" for k in keys)
            text += " {" + ", ".join(attrs) + "}"
        if node.outputs:
            text += " : " + ", ".join(format_type(v.type) for v in node.outputs)
        if node.name:
            text += f" loc({quote(node.name)})"
        return text

    def attr(self, value: Any, indent: str) -> str:
        if value is None:
            return "none"
        if isinstance(value, bool | np.bool_):
            return "true" if value else "false"
        if isinstance(value, int | np.integer):
            return str(int(value))
        if isinstance(value, float | np.floating):
            return format_floats(np.array([value], dtype=np.float64))[0]
        if isinstance(value, str):
            return quote(value)
        if isinstance(value, DType):
            return value.short
        if isinstance(value, Type):
            return format_type(value)
        if isinstance(value, np.ndarray):
            return self.dense(value)
        if isinstance(value, Graph):
            return self.graph(value, indent)
        if isinstance(value, tuple | list):
            return "[" + ", ".join(self.attr(v, indent) for v in value) + "]"
        name = type(value).__name__
        if ATTR_RECORDS.get(name) is type(value) and dataclasses.is_dataclass(value):
            fields = (
                f"{f.name}={self.attr(getattr(value, f.name), indent)}"
                for f in dataclasses.fields(value)
            )
            return f"{name}({', '.join(fields)})"
        raise GraphError(
            f"cannot print attribute value {value!r} of type {name} "
            "(attribute records need register_attr_record)"
        )

    def dense(self, array: np.ndarray[Any, Any]) -> str:
        dt = dtype(array.dtype)
        head = f"dense<{format_type(TensorType(dt, array.shape))}>"
        flat = array.reshape(-1)
        if self.elide is not None and flat.size > self.elide:
            return head + "[...]"
        referenced = flat.size > ARRAY_REFERENCE_ELEMENTS and dt is not DType.string
        if self.arrays is not None and referenced:
            self.arrays.append(array)
            return f"{head} array({len(self.arrays) - 1})"
        if dt is DType.bool:
            items = ["true" if x else "false" for x in flat.tolist()]
        elif dt is DType.string:
            items = [_string_item(x) for x in flat.tolist()]
        elif dt.is_float:
            items = format_floats(flat)
        else:
            items = [str(x) for x in flat.tolist()]
        return f"{head}[{', '.join(items)}]"


def _roles_of(node: Node) -> Roles | None:
    """The op's input roles, if it has them and they describe this node exactly (a malformed
    node, whose inputs do not split by role, prints positionally)."""
    opdef = find_opdef(node.op)
    roles = None if opdef is None else opdef.roles
    if roles is None:
        return None
    try:
        flat, derived = roles.join(roles.split(node.inputs, node.attrs))
    except (TypeError, ValueError, IndexError, KeyError):
        return None
    same = len(flat) == len(node.inputs) and all(
        a is b for a, b in zip(flat, node.inputs, strict=True)
    )
    if not same or any(k not in node.attrs or node.attrs[k] != derived[k] for k in derived):
        return None  # the parser sets the derived attributes, so they must be there already
    return roles


def _string_item(x: object) -> str:
    if not isinstance(x, str):
        raise GraphError(f"a string tensor holds {type(x).__name__} {x!r}, expected str")
    return quote(x)


def _key(key: str) -> str:
    return key if _BARE_IDENT.fullmatch(key) else quote(key)
