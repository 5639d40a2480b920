"""Op definitions: attribute schemas and type rules, registered by op name with ``@op``."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import GraphError, ShapeInferenceError, UnsupportedOpError
from ..tensor.dtypes import DType
from ..tensor.types import TensorType, Type

if TYPE_CHECKING:
    from .graph import Graph, Node, Value

REQUIRED: Any = object()

VerifyHook = Callable[["Node", str, "Graph"], list[str]]
"""``verify(node, where, root) -> problems``: an op's own structure checks, run by the verifier
before the type rule (which is skipped when they find problems)."""


@dataclass(frozen=True)
class Roles:
    """How an op's inputs group by role, for the text IR: ``Loop(max_trip_count=none, ...,
    carried=[%a, %b])``. ``split`` groups flat inputs (singles, then lists); ``join`` gives the
    flat inputs back with the attributes the grouping implies (``derived``, never printed)."""

    singles: tuple[str, ...]
    lists: tuple[str, ...]
    split: Callable[[Sequence[Any], Mapping[str, Any]], dict[str, Any]]
    join: Callable[[Mapping[str, Any]], tuple[list[Any], dict[str, Any]]]
    derived: frozenset[str] = frozenset()


@dataclass(frozen=True)
class AttrSpec:
    """The schema of one attribute: accepted Python types and the default (REQUIRED if none)."""

    kind: type | tuple[type, ...]
    default: Any = REQUIRED
    doc: str = ""

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


@dataclass(frozen=True)
class OpDef:
    """What an op means to the IR: arity, attribute schema and the rule that types its outputs."""

    name: str
    infer: Callable[[InferContext], list[Type]]
    min_inputs: int = 1
    max_inputs: int | None = 1
    attrs: Mapping[str, AttrSpec] = field(default_factory=dict)
    doc: str = ""
    verify: VerifyHook | None = None
    roles: Roles | None = None

    def check_arity(self, count: int, where: str) -> None:
        hi = "any" if self.max_inputs is None else str(self.max_inputs)
        if count < self.min_inputs or (self.max_inputs is not None and count > self.max_inputs):
            span = (
                str(self.min_inputs) if hi == str(self.min_inputs) else f"{self.min_inputs}..{hi}"
            )
            raise GraphError(f"{where}: expected {span} inputs, got {count}")

    def resolve_attrs(self, attrs: Mapping[str, Any], where: str) -> dict[str, Any]:
        """Attributes with defaults filled in, each checked against the schema."""
        unknown = sorted(set(attrs) - set(self.attrs))
        if unknown:
            raise GraphError(f"{where}: unknown attribute(s) {', '.join(unknown)}")
        out: dict[str, Any] = {}
        for key, spec in self.attrs.items():
            if key in attrs:
                value = attrs[key]
                if not _attr_ok(value, spec.kind):
                    raise GraphError(
                        f"{where}: attribute '{key}' expected {_kind_name(spec.kind)}, "
                        f"got {type(value).__name__} {value!r}"
                    )
                out[key] = value
            elif spec.required:
                raise GraphError(f"{where}: missing required attribute '{key}'")
            else:
                out[key] = spec.default
        return out


def _attr_ok(value: Any, kind: type | tuple[type, ...]) -> bool:
    if value is None:
        return True
    if (
        isinstance(value, bool)
        and kind is not bool
        and not (isinstance(kind, tuple) and bool in kind)
    ):
        return False
    if isinstance(value, tuple) and (kind is tuple or (isinstance(kind, tuple) and tuple in kind)):
        return True
    return isinstance(value, kind)


def _kind_name(kind: type | tuple[type, ...]) -> str:
    if isinstance(kind, tuple):
        return " or ".join(k.__name__ for k in kind)
    return kind.__name__


_REGISTRY: dict[str, OpDef] = {}


def op(
    name: str,
    *,
    inputs: int | tuple[int, int | None] = 1,
    attrs: Mapping[str, AttrSpec] | None = None,
    verify: VerifyHook | None = None,
    roles: Roles | None = None,
) -> Callable[[Callable[[InferContext], list[Type]]], Callable[[InferContext], list[Type]]]:
    """Register the type rule of op ``name``; ``inputs`` is a count or a (min, max|None) range;
    ``verify`` adds the op's own structure checks and ``roles`` its text-IR input groups."""
    lo, hi = (inputs, inputs) if isinstance(inputs, int) else inputs

    def register(fn: Callable[[InferContext], list[Type]]) -> Callable[[InferContext], list[Type]]:
        if name in _REGISTRY:
            raise GraphError(f"op '{name}' is defined twice")
        doc = (fn.__doc__ or "").strip()
        _REGISTRY[name] = OpDef(name, fn, lo, hi, dict(attrs or {}), doc, verify, roles)
        return fn

    return register


def get_opdef(name: str) -> OpDef:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnsupportedOpError(f"no op named '{name}' is defined") from None


def find_opdef(name: str) -> OpDef | None:
    """The definition of op ``name``, or None if no op of that name is registered."""
    return _REGISTRY.get(name)


def registered_ops() -> list[str]:
    """Every registered op; the built-in ones register when ``tensorloop`` is imported."""
    return sorted(_REGISTRY)


class InferContext:
    """What a type rule sees: input types, resolved attributes and constant inputs."""

    def __init__(
        self,
        opdef: OpDef,
        inputs: Sequence[Value | None],
        attrs: Mapping[str, Any],
        name: str = "",
    ) -> None:
        self.opdef = opdef
        self.name = name
        self.where = f"{opdef.name} '{name}'" if name else opdef.name
        self.values = list(inputs)
        self.types: list[Type | None] = [None if v is None else v.type for v in inputs]
        self.attrs = opdef.resolve_attrs(attrs, self.where)

    def __len__(self) -> int:
        return len(self.types)

    def has(self, index: int) -> bool:
        return index < len(self.types) and self.types[index] is not None

    def tensor(self, index: int) -> TensorType:
        """Input ``index`` as a TensorType, or a clear error."""
        if not self.has(index):
            raise self.error(f"input #{index} is required")
        t = self.types[index]
        if not isinstance(t, TensorType):
            raise self.error(f"input #{index}: expected a tensor, got {t}")
        return t

    def const(self, index: int) -> np.ndarray[Any, Any] | None:
        """The value of input ``index`` if a Constant node produces it, else None."""
        v = self.values[index] if index < len(self.values) else None
        return None if v is None else v.constant

    def const_ints(self, index: int) -> list[int] | None:
        data = self.const(index)
        return None if data is None else [int(x) for x in np.asarray(data).reshape(-1)]

    def attr(self, key: str) -> Any:
        return self.attrs[key]

    def error(self, message: str) -> ShapeInferenceError:
        return ShapeInferenceError(f"{self.where}: {message}")

    def same_dtype(self, *indices: int) -> DType:
        dtypes = [self.tensor(i).dtype for i in indices]
        if any(d != dtypes[0] for d in dtypes):
            raise self.error(
                "inputs " + ", ".join(f"#{i}" for i in indices) + " must share one element type, "
                f"got {', '.join(str(d) for d in dtypes)}"
            )
        return dtypes[0]


def infer_types(
    op_name: str, inputs: Sequence[Value | None], attrs: Mapping[str, Any], name: str = ""
) -> list[Type]:
    """Type the outputs of a would-be node; raises GraphError naming the node on bad input."""
    opdef = get_opdef(op_name)
    where = f"{op_name} '{name}'" if name else op_name
    opdef.check_arity(len(inputs), where)
    return opdef.infer(InferContext(opdef, inputs, attrs, name))
