"""The time axis of every top-level value of a model over a sequence, for streaming.

``Analysis`` follows, op by op, where each value keeps the time axis of its sequence inputs
(``Timed``): elementwise maths with broadcast constants, projections that do not contract time,
transposes and reshapes that keep the dims before it, slices, gathers and reductions over other
axes; each entry of a shape vector, so a sequence's batch may shape a zero state and its
length may bound a loop or shape a reshape (``Dims``); the time indices converters compare
with full lengths; a loop's final carried values and the last time step, read-outs
(``READOUT``) whose value after the last chunk is the whole run's. A value that needs the
whole sequence is marked (``Whole``) with the reason and refused only where something reads it.
``passes/streaming.py`` builds the step on it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ..errors import StreamingError
from ..ir.graph import Graph, Node, Value, constant_ints
from ..ir.loop import Loop
from ..tensor.types import TensorType, normalize_axis

# -- what a value is to a stream ------------------------------------------------------------------


@dataclass(frozen=True)
class Timed:
    """A tensor whose ``axis`` is time: its row ``t`` is computed from time step ``t`` alone
    (and, through a loop's carried values, from the steps before it)."""

    axis: int


@dataclass(frozen=True)
class Readout:
    """A value computed from loops' final carried values (and what no chunk changes)."""


READOUT = Readout()


class _Length:
    """An element of a shape vector that is the sequence's length."""

    def __repr__(self) -> str:
        return "T"


LENGTH = _Length()


@dataclass(frozen=True)
class DimOf:
    """An element of a shape vector copied from dim ``k`` of ``value`` (a static dim)."""

    value: Value
    k: int


Elem = int | DimOf | _Length | None  # None: static, value unknown


@dataclass(frozen=True)
class Dims:
    """An integer tensor computed from shapes, element by element (a scalar is one element)."""

    elems: tuple[Elem, ...]
    scalar: bool = False

    @property
    def has_length(self) -> bool:
        return any(isinstance(e, _Length) for e in self.elems)


@dataclass(frozen=True)
class LengthDependent:
    """A value computed from the sequence's length in a way a chunk does not reproduce."""

    why: str


@dataclass(frozen=True)
class Whole:
    """A value that needs the whole sequence (``why``, the first such step, names it); only
    its shape may be read, time excepted: ``axis`` is where the time axis was (None where it
    is gone, -1 where it is not known)."""

    why: str
    axis: int | None


@dataclass(frozen=True)
class TimeIndex:
    """``Range(0, T)`` (reshaped): each time step's index, counted from each chunk's start.
    ``baked``: the constant ``0 .. T-1`` a static export wrote instead, if it is one; it is the
    time steps only where compared with the full lengths, and any other use reads it as the
    constant it is."""

    axis: int
    baked: Value | None = None


@dataclass(frozen=True)
class AllLength:
    """A tensor every element of which is the sequence's length (sequence lengths of rows
    that all run the whole sequence, as converters write them)."""


ALL_LENGTH = AllLength()


class _NoRule:
    """What ``Analysis._indices`` returns for a node its patterns do not cover."""


NO_RULE = _NoRule()
LENDEP = _Length()
"""An element of a shape vector that depends on the length but is not it."""

Kind = Timed | Readout | Dims | LengthDependent | Whole | TimeIndex | AllLength | None
"""What a value is to a stream; None: static (no time in it)."""

# -- the analysis ---------------------------------------------------------------------------------

ELEMENTWISE = frozenset(
    {"Add", "Sub", "Mul", "Div", "Pow", "Mod", "Min", "Max", "Sum", "Mean", "Where", "PRelu"}
    | {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "Not"}
    | {"Neg", "Abs", "Relu", "Sqrt", "Exp", "Log", "Sigmoid", "Tanh", "Erf", "Gelu", "Elu"}
    | {"Selu", "Celu", "LeakyRelu", "HardSigmoid", "HardSwish", "Softplus", "Softsign", "Mish"}
    | {"Swish", "Sign", "Floor", "Ceil", "Round", "Reciprocal", "Sin", "Cos", "Tan", "Asin"}
    | {"Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "IsNaN", "IsInf", "Shrink"}
    | {"ThresholdedRelu", "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot"}
    | {"Cast", "CastLike", "Identity", "Clip"}
)
"""Ops whose every output element is computed from the inputs' elements at its position
(inputs broadcast NumPy-style): on a chunk they give the chunk's rows of the whole result."""

_ALONG_AXIS = {"Softmax": -1, "LogSoftmax": -1, "Hardmax": -1, "LpNormalization": -1}
"""Ops that mix elements along one ``axis`` attribute (with its default) only."""

_COMPARE = {"Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Equal"}


def _rank(v: Value | None) -> int | None:
    t = None if v is None else v.type
    return t.rank if isinstance(t, TensorType) else None


def _dims(v: Value | None) -> tuple[object, ...] | None:
    t = None if v is None else v.type
    if isinstance(t, TensorType) and t.shape is not None:
        return tuple(t.shape)
    return None


class Analysis:
    """The kind of every top-level value of ``graph`` given its sequence inputs (time axes)."""

    def __init__(
        self, graph: Graph, sequence: Mapping[str, int], lengths: frozenset[int] = frozenset()
    ) -> None:
        self.graph = graph
        self.kinds: dict[Value, Kind] = {}
        self.loops: list[Loop] = []
        self.lengths = lengths
        """The whole sequence's lengths the model's types declared (a static export)."""
        self.length_trips: set[Node] = set()
        """Loops whose trip count is the sequence's length (each chunk's then bounds them)."""
        self.time_indices: dict[Value, set[Node]] = {}
        """Constants holding ``0 .. T-1`` for a declared length T, each with the comparisons
        that read it as the time steps: there the step counts a chunk's."""
        self.rewrites: dict[Node, tuple[Elem, ...]] = {}
        """Reshape nodes whose constant shape holds a declared length: the shape to use."""
        for v in graph.inputs:
            if v.name in sequence:
                rank = _rank(v)
                axis = sequence[v.name]
                if rank is not None:
                    axis = normalize_axis(axis, rank, f"sequence input '{v.name}'")
                self.kinds[v] = Timed(axis)
        for node in graph.nodes:
            self._visit(node)

    # -- helpers ---------------------------------------------------------------------------------
    def is_length(self, v: Value) -> bool:
        """Whether ``v`` is the sequence's length: computed from the shape of a sequence, or
        the length a static export declared, written as a constant."""
        k = self.kind(v)
        if not isinstance(k, Dims) or len(k.elems) != 1:
            return False
        return k.elems[0] is LENGTH or (v.constant is not None and k.elems[0] in self.lengths)

    def kind(self, v: Value | None) -> Kind:
        return None if v is None else self.kinds.get(v)

    def fail(self, node: Node, v: Value | None, why: str) -> StreamingError:
        what = f"%{v.name}" if v is not None else "a value"
        return StreamingError(f"cannot stream {node.describe()}: {what} {why}")

    def _static(self, node: Node, v: Value | None, what: str) -> None:
        k = self.kind(v)
        if isinstance(k, Timed):
            raise self.fail(node, v, f"is a sequence (time on axis {k.axis}); {what}")
        if k is READOUT:
            raise self.fail(
                node, v, f"depends on the whole sequence (a loop's final value); {what}"
            )
        if isinstance(k, LengthDependent):
            raise self.fail(node, v, f"depends on the sequence's length ({k.why}); {what}")
        if isinstance(k, Dims) and k.has_length:
            raise self.fail(node, v, f"holds the sequence's length; {what}")
        if isinstance(k, Whole):
            raise StreamingError(f"{k.why} ({what}: {node.describe()})")
        if _counts_time(k):
            raise self.fail(node, v, f"holds time steps' indices or the length; {what}")

    def _set(self, node: Node, kind: Kind) -> None:
        for out in node.outputs:
            self.kinds[out] = kind

    # -- one node --------------------------------------------------------------------------------
    def _visit(self, node: Node) -> None:
        kinds = [self.kind(v) for v in node.inputs]
        if node.op == "Loop":
            self._loop(node)
            return
        if node.op == "Shape":
            self._set(node, self._shape(node))
            return
        if node.op == "Constant":
            special = self._indices(node, kinds)
            if not isinstance(special, _NoRule):
                self._set(node, special)
                return
            data = np.asarray(node.attrs["value"])
            if data.dtype.kind in "iu" and data.ndim <= 1 and data.size <= 16:
                elems = tuple(int(x) for x in data.reshape(-1))
                self._set(node, Dims(elems, data.ndim == 0))
            return
        if node.op in ("ReadVariable", "Assign"):
            raise StreamingError(
                f"cannot stream {node.describe()}: the model keeps persistent tensors, which a "
                "step would change once per chunk rather than once per sequence"
            )
        special = self._indices(node, kinds)
        if not isinstance(special, _NoRule):
            self._set(node, special)
            return
        whole = next((k for k in kinds if isinstance(k, Whole)), None)
        if whole is not None:
            self._set(node, Whole(whole.why, self._moved(node, whole.axis)))
            return
        try:
            self._set(node, self._kind_of(node, kinds))
        except StreamingError as exc:  # only an error if a result or a loop needs the value
            timed = next((k for k in kinds if isinstance(k, Timed)), None)
            axis = None if timed is None else self._moved(node, timed.axis)
            self._set(node, Whole(str(exc), axis))

    def _moved(self, node: Node, axis: int | None) -> int | None:
        """Where ``axis`` of input 0 is in ``node``'s output, for ops that only move axes;
        -1 where that is not known."""
        if axis is None or axis < 0:
            return axis
        if node.op in ("Cast", "Identity") or (node.op in ELEMENTWISE and len(node.inputs) == 1):
            return axis
        if node.op in ("Squeeze", "Unsqueeze", "Gather", "Slice"):
            try:
                kind = (
                    self._squeeze(node, axis)
                    if node.op in ("Squeeze", "Unsqueeze")
                    else Timed(axis)
                )
            except StreamingError:
                return None
            if node.op == "Gather":
                a = normalize_axis(node.attrs.get("axis", 0), _rank(node.inputs[0]) or 1)
                if a == axis:
                    return None if _rank(node.inputs[1]) == 0 else axis
            return kind.axis if isinstance(kind, Timed) else -1
        return -1

    def _kind_of(self, node: Node, kinds: list[Kind]) -> Kind:
        timed = [k for k in kinds if isinstance(k, Timed)]
        lengthy = [k for k in kinds if isinstance(k, LengthDependent | Dims) and _has_length_use(k)]
        if not timed and not lengthy:
            if any(k is READOUT for k in kinds):
                return READOUT
            if any(isinstance(k, Dims) for k in kinds):
                return _shape_op(node, kinds)
            return None
        if any(k is READOUT for k in kinds) and timed:
            v = next(v for v, k in zip(node.inputs, kinds, strict=True) if k is READOUT)
            raise self.fail(node, v, "is a loop's final value, used with a sequence")
        if not timed:
            return self._length(node, kinds)
        return self._timed(node, kinds)

    def _indices(self, node: Node, kinds: list[Kind]) -> Kind | _NoRule:
        """The kinds of the time-index pattern converters write for sequence lengths that are
        all the whole length: ``Range(0, T)`` compared with ``T`` is true at every step, of a
        chunk as of the whole sequence. NO_RULE for any other node."""
        op = node.op
        if op == "Constant":
            data = np.asarray(node.attrs["value"])
            if (
                data.ndim == 1
                and data.dtype.kind in "iu"
                and data.size in self.lengths
                and np.array_equal(data, np.arange(data.size))
            ):  # perhaps the time steps' indices a static export wrote out
                return TimeIndex(0, node.outputs[0])
            return NO_RULE
        if op in _COMPARE and len(kinds) == 2 and any(isinstance(k, AllLength) for k in kinds):
            as_dims: list[Kind] = [
                Dims((LENGTH,)) if isinstance(k, AllLength) else k for k in kinds
            ]
            if _compare_length(op, as_dims) is not None:
                return None  # the same at every element, for any length: static
        if op == "Range" and len(kinds) == 3:
            start, limit, delta = kinds
            if (
                isinstance(start, Dims)
                and start.elems == (0,)
                and isinstance(limit, Dims)
                and limit.elems == (LENGTH,)
                and isinstance(delta, Dims)
                and delta.elems == (1,)
            ):
                return TimeIndex(0)
            return NO_RULE
        first = kinds[0] if kinds else None
        if (
            op == "Expand"
            and isinstance(first, Dims)
            and first.elems
            and all(e is LENGTH for e in first.elems)
        ):
            self._static(node, node.inputs[1], "it is the shape of the sequence lengths")
            return ALL_LENGTH
        if isinstance(first, AllLength) and op in ("Unsqueeze", "Squeeze", "Cast", "Identity"):
            for v in node.inputs[1:]:
                self._static(node, v, "it reshapes the sequence lengths")
            return ALL_LENGTH
        if isinstance(first, TimeIndex) and op in ("Unsqueeze", "Squeeze", "Cast", "Identity"):
            if op in ("Cast", "Identity"):
                return first
            moved = self._squeeze(node, first.axis)
            return TimeIndex(moved.axis, first.baked) if isinstance(moved, Timed) else NO_RULE
        if op in _COMPARE and op != "Equal" and len(kinds) == 2:
            left, right = kinds
            if op in ("Greater", "GreaterOrEqual"):
                left, right = right, left
            other = node.inputs[1 if op in ("Less", "LessOrEqual") else 0]
            baked = None if other is None else other.constant
            full = (
                isinstance(right, AllLength)
                or (
                    isinstance(right, Dims)
                    and right.elems
                    and all(e is LENGTH for e in right.elems)
                )
                or (  # lengths a static export wrote: every row the whole declared length
                    baked is not None
                    and baked.size > 0
                    and len(self.lengths) == 1
                    and bool(np.all(baked == next(iter(self.lengths))))
                )
            )
            if isinstance(left, TimeIndex) and full:
                out_rank = _rank(node.outputs[0])
                index = node.inputs[0 if op in ("Less", "LessOrEqual") else 1]
                rank = _rank(index)
                if out_rank is not None and rank is not None:
                    if left.baked is not None:
                        self.time_indices.setdefault(left.baked, set()).add(node)
                    return Timed(out_rank - rank + left.axis)
        if any(_counts_time(k) for k in kinds):
            v = next(
                v
                for v, k in zip(node.inputs, kinds, strict=True)
                if _counts_time(k) and v is not None
            )
            return Whole(
                f"cannot stream {node.describe()}: %{v.name} holds time steps' indices or "
                "sequence lengths, counted from each chunk's start in a stream",
                -1,
            )
        return NO_RULE

    def _shape(self, node: Node) -> Kind:
        x = node.inputs[0]
        dims = _dims(x)
        if dims is None or x is None:
            return None
        rank = len(dims)
        start, end = node.attrs.get("start", 0), node.attrs.get("end")
        start = max(0, min(rank, start + rank if start < 0 else start))
        end = rank if end is None else max(0, min(rank, end + rank if end < 0 else end))
        k = self.kind(x)
        elems: list[Elem] = []
        for i in range(start, end):
            if isinstance(k, Timed) and i == k.axis:
                elems.append(LENGTH)
            elif isinstance(k, Whole) and not isinstance(dims[i], int) and k.axis in (i, -1):
                elems.append(LENDEP)
            elif isinstance(dims[i], int):
                elems.append(int(dims[i]))  # type: ignore[call-overload]
            else:
                elems.append(DimOf(x, i))
        return Dims(tuple(elems))

    def _length(self, node: Node, kinds: list[Kind]) -> Kind:
        """A node reading the sequence's length (through shapes) and no sequence."""
        op = node.op
        if op in _COMPARE and len(node.inputs) == 2:
            decided = _compare_length(op, kinds)
            if decided is not None:
                return Dims((int(decided),), True)
        shaped = _shape_op(node, kinds)
        if shaped is not None:
            return shaped
        if op == "Max" and len(kinds) == 2 and all(isinstance(k, Dims) for k in kinds):
            # max(T, c) is T for every length of at least 1 when c is at most 1
            elems = [k.elems for k in kinds if isinstance(k, Dims)]
            if sorted(map(len, elems)) == [1, 1] and any(e == (LENGTH,) for e in elems):
                other = next(e[0] for e in elems if e != (LENGTH,)) if elems[0] != elems[1] else 1
                if isinstance(other, int) and other <= 1:
                    return Dims((LENGTH,), all(isinstance(k, Dims) and k.scalar for k in kinds))
        if op == "ConstantOfShape":
            spec = kinds[0]
            if isinstance(spec, Dims) and sum(e is LENGTH for e in spec.elems) == 1:
                return Timed(next(i for i, e in enumerate(spec.elems) if e is LENGTH))
        why = f"{op} of the length"
        if op == "Range":
            why = "a Range over the time steps counts from 0 in each chunk"
        return LengthDependent(why)

    def _timed(self, node: Node, kinds: list[Kind]) -> Kind:
        op, ins = node.op, node.inputs
        lead = next(k for k in kinds if isinstance(k, Timed))
        a = lead.axis
        x = ins[0]
        if op in ELEMENTWISE:
            return self._broadcast(node, kinds)
        if op == "Transpose":
            rank = _rank(x)
            perm = node.attrs.get("perm")
            if perm is None and rank is not None:
                perm = list(range(rank))[::-1]
            if perm is None:
                raise self.fail(node, x, "has an unknown rank; its time axis cannot be followed")
            return Timed(list(perm).index(a))
        if op in ("Unsqueeze", "Squeeze"):
            return self._squeeze(node, a)
        if op == "Reshape":
            return self._reshape(node, kinds, a)
        if op in ("Expand",):
            self._not_time_only(node, kinds, 0)
            spec = kinds[1]
            rank_out = _rank(node.outputs[0])
            rank_in = _rank(x)
            if rank_out is None or rank_in is None or not isinstance(spec, Dims):
                raise self.fail(node, ins[1], "is not a shape whose time dim can be checked")
            pos = rank_out - rank_in + a
            e = spec.elems[pos - (rank_out - len(spec.elems))] if len(spec.elems) > 0 else 1
            if pos >= rank_out - len(spec.elems) and e not in (1, LENGTH):
                raise self.fail(node, ins[1], "expands the time axis")
            return Timed(pos)
        if op in ("Concat", "Split", "Gather", "Compress", "TopK", "ArgMax", "ArgMin", "Flatten"):
            return self._along(node, kinds, a)
        if op in ("Slice", "Gather") and self._last_step(node, a):
            return READOUT
        if op == "Slice":
            return self._slice(node, kinds, a)
        if op in _ALONG_AXIS or op in ("LayerNormalization", "RMSNormalization"):
            return self._normalize(node, kinds, a)
        if op.startswith("Reduce"):
            return self._reduce(node, kinds, a)
        if op in ("MatMul", "Gemm"):
            return self._matmul(node, kinds, a)
        if op == "Pad":
            self._not_time_only(node, kinds, 0)
            rank = _rank(x)
            pads = constant_ints(ins[1]) if len(ins) > 1 else None
            axes = constant_ints(ins[3]) if len(ins) > 3 and ins[3] is not None else None
            if pads is None or rank is None:
                raise self.fail(node, ins[1], "are pads not known before running")
            axes = list(range(rank)) if axes is None else [normalize_axis(i, rank) for i in axes]
            n = len(axes)
            if a in axes and (pads[axes.index(a)] or pads[n + axes.index(a)]):
                raise self.fail(node, x, "is padded along its time axis")
            return Timed(a)
        raise self.fail(
            node,
            next(v for v, k in zip(ins, kinds, strict=True) if isinstance(k, Timed)),
            f"is a sequence (time on axis {a}), and {op} is not known to compute each time "
            "step on its own",
        )

    def _not_time_only(self, node: Node, kinds: list[Kind], *sequence_ports: int) -> None:
        """Every input but ``sequence_ports`` is static (shape vectors may hold the length)."""
        for i, (v, k) in enumerate(zip(node.inputs, kinds, strict=True)):
            if i in sequence_ports or isinstance(k, Dims) or k is None:
                continue
            self._static(node, v, f"input #{i} of {node.op} must not change over time")

    def _broadcast(self, node: Node, kinds: list[Kind]) -> Kind:
        out_rank = _rank(node.outputs[0])
        if out_rank is None:
            raise self.fail(node, node.outputs[0], "has an unknown rank")
        position: int | None = None
        for v, k in zip(node.inputs, kinds, strict=True):
            if isinstance(k, Timed):
                rank = _rank(v)
                assert rank is not None  # a timed value has a known rank
                p = out_rank - rank + k.axis
                if position is not None and p != position:
                    raise self.fail(node, v, "has its time axis where another input has not")
                position = p
        assert position is not None
        for v, k in zip(node.inputs, kinds, strict=True):
            if isinstance(k, Timed) or v is None:
                continue
            if isinstance(k, Dims) and k.has_length:
                raise self.fail(node, v, "holds the sequence's length")
            self._static(node, v, "it is broadcast over the time steps")
            dims = _dims(v)
            if dims is None:
                raise self.fail(node, v, "has an unknown rank, broadcast against a sequence")
            p = position - (out_rank - len(dims))
            if p >= 0 and dims[p] != 1:
                raise self.fail(
                    node,
                    v,
                    f"has {dims[p]} rows on the time axis: a value per time step of "
                    "the whole sequence",
                )
        return Timed(position)

    def _squeeze(self, node: Node, a: int) -> Kind:
        x = node.inputs[0]
        rank = _rank(x)
        axes = constant_ints(node.inputs[1]) if len(node.inputs) > 1 else None
        if rank is None or (axes is None and (node.op == "Unsqueeze" or len(node.inputs) > 1)):
            raise self.fail(node, x, "is reshaped by axes known only at run time")
        if node.op == "Unsqueeze":
            assert axes is not None
            out_rank = rank + len(axes)
            new = sorted(normalize_axis(i, out_rank) for i in axes)
            kept = [i for i in range(out_rank) if i not in new]
            return Timed(kept[a])
        if axes is None:
            dims = _dims(x) or ()
            axes = [i for i, d in enumerate(dims) if d == 1]
        axes = [normalize_axis(i, rank) for i in axes]
        if a in axes:
            raise self.fail(node, x, "has its time axis squeezed away")
        return Timed(a - sum(i < a for i in axes))

    def _reshape(self, node: Node, kinds: list[Kind], a: int) -> Kind:
        x, spec = node.inputs[0], kinds[1]
        dims = _dims(x)
        if not isinstance(spec, Dims) or dims is None:
            raise self.fail(node, node.inputs[1], "is a shape whose time dim cannot be followed")
        elems = spec.elems
        zero_copies = not node.attrs.get("allowzero", 0)
        at = [i for i, e in enumerate(elems) if e is LENGTH]
        if not at and zero_copies and a < len(elems) and elems[a] == 0:
            at = [a]
        baked = node.inputs[1] is not None and node.inputs[1].constant is not None
        if not at and baked and zero_copies and a < len(elems) and elems[a] in self.lengths:
            # The exporter wrote the whole sequence's length into the shape (a static export):
            # the step copies the chunk's length there instead (0 copies the input's dim).
            at = [a]
            self.rewrites[node] = tuple(0 if i == a else e for i, e in enumerate(elems))
        if not at and a < len(elems) and elems[a] == -1 and self._inferred_length(x, elems, a):
            at = [a]
        if len(at) != 1 or at[0] != a:
            raise self.fail(node, x, "is reshaped across its time axis")
        for i in range(a):
            e = elems[i]
            same = (
                (zero_copies and e == 0)
                or (isinstance(e, int) and e == dims[i])
                or (isinstance(e, DimOf) and _same_dim(e, x, i))
            )
            if not same:
                raise self.fail(node, x, f"is reshaped across its time axis (dim {i} before it)")
        return Timed(a)

    @staticmethod
    def _inferred_length(x: Value | None, elems: tuple[Elem, ...], a: int) -> bool:
        """Whether the -1 at the time axis ``a`` of a Reshape of ``x`` to ``elems`` is the
        length: the dims after it hold as many elements, all known, as the input's do."""
        dims = _dims(x)
        if dims is None:
            return False
        after_in = dims[a + 1 :]
        after_out = [dims[i] if e == 0 and i < len(dims) else e for i, e in enumerate(elems)]
        after_out = after_out[a + 1 :]
        known = [d for d in (*after_in, *after_out) if isinstance(d, int) and d > 0]
        if len(known) != len(after_in) + len(after_out):
            return False
        count_in = int(np.prod([int(d) for d in after_in], dtype=np.int64))  # type: ignore[call-overload]
        count_out = int(np.prod([int(d) for d in after_out], dtype=np.int64))  # type: ignore[call-overload]
        return count_in == count_out

    def _along(self, node: Node, kinds: list[Kind], a: int) -> Kind:
        op, x = node.op, node.inputs[0]
        rank = _rank(x)
        if rank is None:
            raise self.fail(node, x, "has an unknown rank")
        if op == "Flatten":
            axis = normalize_axis(node.attrs.get("axis", 1), rank + 1)
            dims = _dims(x) or ()
            if a < axis and all(dims[i] == 1 for i in range(axis) if i != a):
                return Timed(0)
            if a >= axis and all(dims[i] == 1 for i in range(axis, rank) if i != a):
                return Timed(1)
            raise self.fail(node, x, "is flattened across its time axis")
        axis = normalize_axis(node.attrs.get("axis", -1 if op == "TopK" else 0), rank)
        if axis == a:
            raise self.fail(node, x, f"is a sequence, and {op} works along its time axis")
        if op == "Concat":
            for v, k in zip(node.inputs, kinds, strict=True):
                if k != Timed(a):
                    raise self.fail(node, v, "is joined to a sequence without its time axis")
            return Timed(a)
        self._not_time_only(node, kinds, 0)
        if op == "Gather":
            idx_rank = _rank(node.inputs[1])
            if idx_rank is None:
                raise self.fail(node, node.inputs[1], "has an unknown rank")
            return Timed(a + idx_rank - 1 if axis < a else a)
        if op in ("ArgMax", "ArgMin") and not node.attrs.get("keepdims", 1) and axis < a:
            return Timed(a - 1)
        return Timed(a)

    def _last_step(self, node: Node, a: int) -> bool:
        """Whether ``node`` takes the last time step of its input (``x[-1:]`` or ``x[-1]`` on
        the time axis, nothing else): after the last chunk, that is the whole sequence's."""
        ins = node.inputs
        rank = _rank(ins[0])
        if rank is None:
            return False
        if node.op == "Gather":
            index = constant_ints(ins[1])
            axis = normalize_axis(node.attrs.get("axis", 0), rank)
            return axis == a and index == [-1] and _rank(ins[1]) == 0
        starts, ends = constant_ints(ins[1]), constant_ints(ins[2])
        axes = constant_ints(ins[3]) if len(ins) > 3 and ins[3] is not None else [0]
        steps = constant_ints(ins[4]) if len(ins) > 4 and ins[4] is not None else [1]
        if starts is None or ends is None or axes is None or steps is None:
            return False
        return (
            len(starts) == 1
            and normalize_axis(axes[0], rank) == a
            and starts[0] == -1
            and ends[0] >= 0
            and steps in ([1], [])
        )

    def _slice(self, node: Node, kinds: list[Kind], a: int) -> Kind:
        x = node.inputs[0]
        rank = _rank(x)
        self._not_time_only(node, kinds, 0)
        starts = constant_ints(node.inputs[1])
        axes = constant_ints(node.inputs[3]) if len(node.inputs) > 3 and node.inputs[3] else None
        if rank is None or starts is None:
            raise self.fail(node, x, "is sliced by bounds known only at run time")
        axes = list(range(len(starts))) if axes is None else axes
        if a in [normalize_axis(i, rank) for i in axes]:
            raise self.fail(node, x, "is sliced along its time axis")
        return Timed(a)

    def _normalize(self, node: Node, kinds: list[Kind], a: int) -> Kind:
        x = node.inputs[0]
        rank = _rank(x)
        self._not_time_only(node, kinds, 0)
        if rank is None:
            raise self.fail(node, x, "has an unknown rank")
        axis = normalize_axis(node.attrs.get("axis", _ALONG_AXIS.get(node.op, -1)), rank)
        along = [axis] if node.op in _ALONG_AXIS else list(range(axis, rank))
        if a in along:
            raise self.fail(node, x, f"is normalised by {node.op} along its time axis")
        return Timed(a)

    def _reduce(self, node: Node, kinds: list[Kind], a: int) -> Kind:
        x = node.inputs[0]
        rank = _rank(x)
        self._not_time_only(node, kinds, 0)
        axes = constant_ints(node.inputs[1]) if len(node.inputs) > 1 and node.inputs[1] else None
        if rank is None or axes is None or not axes:
            raise self.fail(node, x, f"is reduced by {node.op} over every axis, time included")
        axes = [normalize_axis(i, rank) for i in axes]
        if a in axes:
            raise self.fail(node, x, f"is reduced by {node.op} over its time axis")
        keep = node.attrs.get("keepdims", 1)
        return Timed(a if keep else a - sum(i < a for i in axes))

    def _matmul(self, node: Node, kinds: list[Kind], a: int) -> Kind:
        x, w = node.inputs[0], node.inputs[1]
        self._not_time_only(node, kinds, 0)
        rank, out_rank = _rank(x), _rank(node.outputs[0])
        if kinds[0] != Timed(a) or rank is None or out_rank is None:
            raise self.fail(node, w, "is a sequence on the right of a matrix product")
        if node.op == "Gemm":
            if node.attrs.get("transA", 0) or a != 0:
                raise self.fail(node, x, "is a sequence whose time axis Gemm contracts")
            return Timed(0)
        if rank < 2 or a == rank - 1:
            raise self.fail(node, x, "is a sequence whose time axis the matrix product contracts")
        wd = _dims(w)
        if wd is None:
            raise self.fail(node, w, "has an unknown rank")
        position = out_rank - rank + a
        if a < rank - 2:
            p = position - (out_rank - len(wd))
            if 0 <= p < len(wd) - 2 and wd[p] != 1:
                raise self.fail(node, w, "has a matrix per time step of the whole sequence")
        return Timed(position)

    # -- loops -----------------------------------------------------------------------------------
    def _loop(self, node: Node) -> None:
        loop = Loop(node)
        kinds = [self.kind(v) for v in node.inputs]
        if not any(isinstance(k, Timed) for k in kinds):
            for v, k in zip(node.inputs, kinds, strict=True):
                if k is READOUT:
                    raise self.fail(node, v, "is a loop's final value, read by another loop")
                if isinstance(k, LengthDependent) or (isinstance(k, Dims) and k.has_length):
                    raise self.fail(node, v, "depends on the sequence's length")
            return
        where = f"loop '{loop.name}'" if loop.name else "loop"
        for s in loop.sliced:
            k = self.kind(s.source)
            if isinstance(k, Whole):
                raise StreamingError(f"{k.why} (sliced by {where}: {node.describe()})")
            rank = _rank(s.source)
            axis = None if rank is None else normalize_axis(s.spec.axis, rank)
            if not isinstance(k, Timed) or k.axis != axis:
                raise self.fail(
                    node,
                    s.source,
                    f"is sliced by {where} on axis {s.spec.axis}, which is not "
                    "the time axis: the loop would need the whole sequence",
                )
            if s.spec.reverse:
                raise self.fail(
                    node,
                    s.source,
                    f"is sliced in reverse by {where}: its first step needs the "
                    "sequence's last element",
                )
        if not loop.always_starts or not loop.always_continues:
            cond = loop.condition if not loop.always_starts else loop.continue_condition
            raise self.fail(
                node,
                cond,
                f"can end {where} early (a while loop's exit): a stream cannot "
                "know, chunk by chunk, that the whole run would have stopped",
            )
        trip = loop.trip_count
        if trip is not None and self.is_length(trip):
            self.length_trips.add(node)
        elif trip is not None:
            self._static(node, trip, f"is the trip count of {where}")
        for c in loop.carried:
            self._static(
                node, c.initial, f"is the initial value of {where}'s carried %{c.param.name}"
            )
        for inv in loop.invariants:
            self._static(
                node, inv.value, f"is read whole by every iteration of {where} (an invariant)"
            )
        self.loops.append(loop)
        for c in loop.carried:
            self.kinds[c.final] = READOUT
        for st in loop.stacked:
            if st.spec.reverse:
                raise self.fail(node, st.output, f"is stacked last step first by {where}")
            rank = _rank(st.output)
            if rank is None:
                raise self.fail(node, st.output, "has an unknown rank")
            self.kinds[st.output] = Timed(normalize_axis(st.spec.axis, rank))


def _counts_time(k: Kind) -> bool:
    """Whether ``k`` holds time steps' indices or lengths (not a constant that only may)."""
    return isinstance(k, AllLength) or (isinstance(k, TimeIndex) and k.baked is None)


def _has_length_use(k: Kind) -> bool:
    return isinstance(k, LengthDependent) or (isinstance(k, Dims) and k.has_length)


def _same_dim(e: DimOf, x: Value | None, i: int) -> bool:
    """Whether dim ``e.k`` of ``e.value`` is dim ``i`` of ``x``: the same value's, or both
    static types naming one symbol or size."""
    if e.value is x and e.k == i:
        return True
    a, b = _dims(e.value), _dims(x)
    if a is None or b is None:
        return False
    da, db = a[e.k], b[i]
    return da == db and da != "?"


def _compare_length(op: str, kinds: list[Kind]) -> bool | None:
    """A comparison of the length (at least 1 in every chunk and run that has one) with a
    constant, when that range decides it."""
    left, right = kinds
    if not (isinstance(left, Dims) and isinstance(right, Dims)):
        return None
    if len(left.elems) != 1 or len(right.elems) != 1:
        return None
    a, b = left.elems[0], right.elems[0]
    if a is LENGTH and isinstance(b, int):
        flip = {"Less": "Greater", "Greater": "Less", "LessOrEqual": "GreaterOrEqual"}
        flip |= {"GreaterOrEqual": "LessOrEqual", "Equal": "Equal"}
        return _compare_length(flip[op], [right, left])
    if not (isinstance(a, int) and b is LENGTH):
        return None
    # c OP L with L >= 1
    if op == "Less":
        return True if a < 1 else None
    if op == "LessOrEqual":
        return True if a <= 1 else None
    if op in ("Greater", "GreaterOrEqual"):
        return False if a < 1 or (op == "Greater" and a == 1) else None
    return False if a < 1 else None


def _shape_op(node: Node, kinds: list[Kind]) -> Dims | None:
    """The element-wise meaning of a shape-vector op (Gather, Slice, Concat, Unsqueeze,
    Squeeze, Cast, Identity, ConstantOfShape excluded), or None for any other op."""
    op = node.op
    first = kinds[0] if kinds else None
    if not isinstance(first, Dims):
        return None
    if op in ("Cast", "Identity"):
        return first
    if op in ("Unsqueeze", "Squeeze", "Reshape") and (first.scalar or len(first.elems) == 1):
        scalar = op == "Squeeze" or (op == "Reshape" and _rank(node.outputs[0]) == 0)
        return Dims(first.elems, scalar) if len(first.elems) == 1 else None
    if op == "Concat" and all(isinstance(k, Dims) for k in kinds):
        return Dims(tuple(e for k in kinds for e in k.elems))  # type: ignore[union-attr]
    if op == "Gather" and node.attrs.get("axis", 0) == 0:
        idx = constant_ints(node.inputs[1])
        if idx is None or _rank(node.inputs[1]) not in (0, 1):
            return None
        n = len(first.elems)
        if not all(-n <= i < n for i in idx):
            return None
        return Dims(tuple(first.elems[i] for i in idx), _rank(node.inputs[1]) == 0)
    if op == "Slice":
        starts, ends = constant_ints(node.inputs[1]), constant_ints(node.inputs[2])
        steps = constant_ints(node.inputs[4]) if len(node.inputs) > 4 and node.inputs[4] else [1]
        if starts is None or ends is None or steps is None or len(starts) != 1:
            return None
        return Dims(tuple(first.elems[slice(starts[0], ends[0], steps[0])]))
    return None


# -- the analysis from a graph: which inputs are sequences ------------------------------------


def find_sequence_inputs(graph: Graph) -> dict[str, int]:
    """The inputs that top-level loops slice over time, with their time axes, followed back
    from each sliced source through the ops that keep a time axis."""
    found: dict[str, int] = {}
    for node in graph.nodes:
        if node.op != "Loop":
            continue
        for s in Loop(node).sliced:
            rank = _rank(s.source)
            if s.source is None or rank is None:
                continue
            for v, axis in _back(s.source, normalize_axis(s.spec.axis, rank)):
                found.setdefault(v.name, axis)
    return found


def why_no_sequence(graph: Graph) -> str:
    """Why no top-level loop of ``graph`` slices an input over time, for the error."""
    reasons = []
    for node in graph.nodes:
        if node.op != "Loop":
            continue
        loop = Loop(node)
        where = f"loop '{loop.name}'" if loop.name else "a loop"
        if not loop.sliced:
            reasons.append(
                f"{where} slices nothing (a while loop, reading its data by index): only "
                "loops that slice their sequence stream"
            )
            continue
        for s in loop.sliced:
            producer = None if s.source is None else s.source.producer
            while producer is not None and producer.op in (
                ELEMENTWISE | {"Transpose", "MatMul", "Squeeze", "Unsqueeze", "Reshape"}
            ):
                nxt = producer.inputs[0]
                producer = None if nxt is None else nxt.producer
            if producer is not None:
                reasons.append(
                    f"{where} slices a value computed by {producer.describe()}, which mixes "
                    "time steps"
                )
                break
    return f" ({'; '.join(reasons)})" if reasons else ""


def _back(v: Value, a: int) -> list[tuple[Value, int]]:
    """The graph inputs a time axis ``a`` of ``v`` comes from, following ops backwards."""
    seen: set[tuple[int, int]] = set()
    todo, found = [(v, a)], []
    while todo:
        v, a = todo.pop()
        if (id(v), a) in seen:
            continue
        seen.add((id(v), a))
        node = v.producer
        if node is None:
            if v.graph is not None and v in v.graph.inputs:
                found.append((v, a))
            continue
        op, ins = node.op, node.inputs
        out_rank = _rank(v)
        if op in ELEMENTWISE or op in ("MatMul", "Gemm", "Pad", "Slice", "Concat"):
            for x in ins[:1] if op in ("MatMul", "Gemm", "Pad", "Slice") else ins:
                r = _rank(x)
                if x is not None and r is not None and out_rank is not None:
                    p = a - (out_rank - r)
                    dims = _dims(x) or ()
                    if 0 <= p < r and dims[p] != 1:
                        todo.append((x, p))
        elif op == "Transpose" and ins[0] is not None:
            perm = node.attrs.get("perm")
            r = _rank(ins[0])
            if perm is None and r is not None:
                perm = list(range(r))[::-1]
            if perm is not None:
                todo.append((ins[0], list(perm)[a]))
        elif op in ("Unsqueeze", "Squeeze") and ins[0] is not None:
            axes = constant_ints(ins[1]) if len(ins) > 1 else None
            r, o = _rank(ins[0]), out_rank
            if axes is None or r is None or o is None:
                continue
            if op == "Unsqueeze":
                new = sorted(normalize_axis(i, o) for i in axes)
                if a not in new:
                    todo.append((ins[0], a - sum(i < a for i in new)))
            else:
                old = sorted(normalize_axis(i, r) for i in axes)
                kept = [i for i in range(r) if i not in old]
                todo.append((ins[0], kept[a]))
        elif op == "Gather" and ins[0] is not None:
            r, index_rank = _rank(ins[0]), _rank(ins[1])
            if r is None or index_rank is None:
                continue
            g = normalize_axis(node.attrs.get("axis", 0), r)
            if a < g:
                todo.append((ins[0], a))
            elif a >= g + index_rank:
                todo.append((ins[0], a - index_rank + 1))
        elif op == "Reshape" and ins[0] is not None and a == 0:
            todo.append((ins[0], 0))
        elif op == "Loop":
            loop = Loop(node)
            for s in loop.stacked:
                if s.output is v and loop.sliced and loop.sliced[0].source is not None:
                    src = loop.sliced[0].source
                    r = _rank(src)
                    if r is not None:
                        todo.append((src, normalize_axis(loop.sliced[0].spec.axis, r)))
    return found


__all__ = ["ELEMENTWISE", "READOUT", "Analysis", "Dims", "Timed", "Whole", "find_sequence_inputs"]
