"""Graphs lowered to JAX: the lowering registry, the per-trace context and the graph walker.

Every op JAX can express has one lowering, registered with ``@lowers("Op")``: a function
``(ctx, node, attrs, *inputs) -> list of outputs`` over traced JAX values, where ``attrs`` are
the node's attributes with defaults resolved. An optional ``check(node, attrs)`` says, before
anything is traced, why a particular node cannot be lowered (a shape operand that is not a
constant, a dtype XLA lacks, a mode the lowering does not cover); the partitioner then runs that
node on the compiled backend instead.

What a kernel of the reference would raise on run-time data (an index out of range, a loop over
the iteration limit) cannot be raised inside XLA: a lowering records it with
``ctx.fail_unless(ok, Fault(...))`` instead, the run's fault code is returned with the results,
and the executable turns it into the reference's error (or reruns the island on the compiled
backend, whose error is the reference's). Traced code never guesses: an index that XLA would
clamp is a fault, not a value.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...errors import TensorloopError
from ...ir.graph import Graph, Node, Value
from ...ir.opdef import get_opdef
from ...tensor.dtypes import DType
from ...tensor.types import TensorType

JaxValue = Any
"""A traced JAX array (``jax.Array`` or a tracer); typed loosely, as JAX's own stubs are."""

Lowering = Callable[..., list[JaxValue]]
Check = Callable[[Node, dict[str, Any]], str | None]


class LoweringError(TensorloopError):
    """A node could not be lowered (a case the lowering does not cover, found only while
    tracing): the executable moves the node to the compiled backend, plans again and records
    the handoff. Any other exception a lowering raises is a bug, and propagates."""

    def __init__(self, node: Node, why: str) -> None:
        super().__init__(f"{node.describe()}: {why}")
        self.node = node
        self.why = why


class UnlowerableError(TensorloopError):
    """Raised by a lowering, while tracing, for a node it cannot express (a case its ``check``
    cannot see before tracing, or one the reference refuses): ``lower_node`` makes it this
    node's ``LoweringError``."""


@dataclass(frozen=True)
class OpLowering:
    fn: Lowering
    check: Check | None


LOWERINGS: dict[str, OpLowering] = {}


def lowers(*ops: str, check: Check | None = None) -> Callable[[Lowering], Lowering]:
    """Register ``fn`` as the lowering of ``ops`` (one place per op)."""

    def register(fn: Lowering) -> Lowering:
        for name in ops:
            if name in LOWERINGS:
                raise TensorloopError(f"op {name} is lowered twice")
            LOWERINGS[name] = OpLowering(fn, check)
        return fn

    return register


JAX_DTYPES = frozenset(
    {
        DType.bool,
        DType.int8,
        DType.int16,
        DType.int32,
        DType.int64,
        DType.uint8,
        DType.uint16,
        DType.uint32,
        DType.uint64,
        DType.float16,
        DType.bfloat16,
        DType.float32,
        DType.float64,
    }
)
"""Element types XLA computes with exactly as NumPy does (the float8s and complex types stay on
the compiled backend)."""


@dataclass(frozen=True)
class Fault:
    """What a fault code means. ``kind``: ``"deopt"`` (rerun the island on the compiled backend,
    whose answer or error is the reference's), ``"limit"`` (a loop passed the iteration limit)
    or ``"grow"`` (a loop's stacked buffers are too small: double ``loop`` and compile again)."""

    kind: str
    where: str
    loop: Node | None = None


@dataclass(frozen=True)
class Options:
    """How islands are lowered and where they run.

    ``contract``: let XLA fuse a multiply and an add into one fused multiply-add (one rounding
    instead of two). Off by default: XLA's CPU compiler always allows the fusion, so every float
    Mul result is rounded on its own through a run-time ``-0.0`` it cannot fold away, and
    results round as the reference rounds them.

    ``device``: ``"auto"`` (JAX's default device, a GPU where there is one, except for islands
    with loops over small values: see ``SMALL_LOOP_BYTES``), ``"cpu"``, or ``"default"`` (JAX's
    default device for every island)."""

    contract: bool = False
    device: str = "auto"


@dataclass
class LowerContext:
    """The state of one trace: the run-time operands every island takes (the iteration limit,
    the budget of iterations in all and the contraction guard), the fault code and the count
    of iterations being computed, and what the codes mean."""

    options: Options
    limit: JaxValue
    negzero: JaxValue
    capacities: dict[Node, int]
    constants: ConstantPool
    faults: list[Fault] = field(default_factory=list)
    code: JaxValue = None
    budget: JaxValue = None
    """The loop iterations at every depth the island may still make (int64; the run's
    ``Limits.max_total_iterations`` less what it made before the island)."""
    count: JaxValue = None
    """The loop iterations at every depth made so far in the trace (int64)."""

    def __post_init__(self) -> None:
        import jax.numpy as jnp

        if self.code is None:
            self.code = jnp.int32(0)
        if self.count is None:
            self.count = jnp.int64(0)

    def child(self, code: JaxValue, count: JaxValue) -> LowerContext:
        """A context for a body or branch, starting from ``code`` and ``count``; faults are
        shared."""
        return LowerContext(
            self.options,
            self.limit,
            self.negzero,
            self.capacities,
            self.constants,
            self.faults,
            code,
            self.budget,
            count,
        )

    def fault(self, fault: Fault) -> int:
        """The code of ``fault`` (codes start at 1; 0 means no fault)."""
        if fault not in self.faults:
            self.faults.append(fault)
        return self.faults.index(fault) + 1

    def fail_unless(self, ok: JaxValue, fault: Fault) -> None:
        """Record ``fault`` unless ``ok`` holds (everywhere); the first fault recorded wins."""
        import jax.numpy as jnp

        code = self.fault(fault)
        self.code = jnp.where((self.code == 0) & ~jnp.all(ok), jnp.int32(code), self.code)

    def deopt_unless(self, ok: JaxValue, node: Node) -> None:
        """Hand the island to the compiled backend unless ``ok``: the reference decides."""
        self.fail_unless(ok, Fault("deopt", node.describe()))

    def round_product(self, x: JaxValue) -> JaxValue:
        """``x`` (a float product) rounded on its own, so XLA cannot contract it into an add."""
        if self.options.contract or not _is_float(x):
            return x
        return x + self.negzero.astype(x.dtype)


def _is_float(x: JaxValue) -> bool:
    import jax.numpy as jnp

    return bool(jnp.issubdtype(x.dtype, jnp.floating))


def np_dtype(value: Value) -> np.dtype[Any]:
    return value.tensor_type.dtype.numpy


def constant_array(value: Value | None) -> np.ndarray[Any, Any] | None:
    """The data of ``value`` if a Constant produces it (shape operands, axes, pads)."""
    return None if value is None else value.constant


def needs_constant(*ports: int) -> Check:
    """A check: the inputs at ``ports`` (where present) must be constants of the graph."""

    def check(node: Node, attrs: dict[str, Any]) -> str | None:
        for p in ports:
            v = node.inputs[p] if p < len(node.inputs) else None
            if v is not None and v.constant is None:
                return f"input #{p} (%{v.name}) is computed at run time; XLA needs it constant"
        return None

    return check


def attrs_of(node: Node) -> dict[str, Any]:
    return get_opdef(node.op).resolve_attrs(node.attrs, node.describe())


def lower_node(ctx: LowerContext, node: Node, inputs: Sequence[JaxValue]) -> list[JaxValue]:
    """``node``'s outputs on traced ``inputs``, each checked against its static type."""
    import jax.numpy as jnp

    entry = LOWERINGS.get(node.op)
    if entry is None:
        raise LoweringError(node, f"no XLA lowering for {node.op}")
    attrs = attrs_of(node)
    # A case the lowering does not cover is its check's to refuse, or a LoweringError it raises
    # (the node then moves to the compiled backend); any other exception is a bug, and propagates.
    try:
        outs = entry.fn(ctx, node, attrs, *inputs)
    except UnlowerableError as exc:
        raise LoweringError(node, str(exc)) from exc
    if len(outs) != len(node.outputs):
        raise LoweringError(node, f"lowered to {len(outs)} outputs, expected {len(node.outputs)}")
    checked = []
    for out, value in zip(outs, node.outputs, strict=True):
        t = value.type
        if hasattr(out, "finish"):  # a DynamicStack: cut to length outside the program
            checked.append(out)
            continue
        if not isinstance(t, TensorType) or t.shape is None:
            raise LoweringError(node, f"output %{value.name} has type {t}")
        out = jnp.asarray(out)
        if out.dtype != t.dtype.numpy:
            out = out.astype(t.dtype.numpy)
        if all(isinstance(d, int) for d in t.shape) and tuple(out.shape) != tuple(t.shape):
            raise LoweringError(
                node, f"output %{value.name} lowered to shape {out.shape}, typed {t}"
            )
        checked.append(out)
    return checked


def lower_graph(
    ctx: LowerContext, graph: Graph, args: Sequence[JaxValue], constants: ConstantPool
) -> list[JaxValue]:
    """The results of ``graph`` (a body or branch) on traced ``args``."""
    env: dict[Value, JaxValue] = dict(zip(graph.inputs, args, strict=True))
    for node in graph.nodes:
        if node.op == "Constant":
            env[node.output] = constants.get(node.output)
            continue
        inputs = [None if v is None else lookup(env, v, constants) for v in node.inputs]
        env.update(zip(node.outputs, lower_node(ctx, node, inputs), strict=True))
    return [lookup(env, v, constants) for v in graph.outputs]


def lookup(env: dict[Value, JaxValue], value: Value, constants: ConstantPool) -> JaxValue:
    found = env.get(value)
    if found is None:
        if value.constant is None:
            raise TensorloopError(f"value %{value.name} is used before it is computed")
        found = env[value] = constants.get(value)
    return found


EMBED_LIMIT = 4096
"""Constants up to this many bytes are compiled into the program (XLA folds them); larger ones
(weights) are operands of the compiled program, put on the device once per plan."""


class ConstantPool:
    """The constants an island reads: small ones embedded, large ones as traced operands."""

    def __init__(self) -> None:
        self.operands: dict[Value, JaxValue] = {}

    def get(self, value: Value) -> JaxValue:
        import jax.numpy as jnp

        if value in self.operands:
            return self.operands[value]
        data = value.constant
        assert data is not None
        return jnp.asarray(data)


__all__ = [
    "EMBED_LIMIT",
    "JAX_DTYPES",
    "LOWERINGS",
    "ConstantPool",
    "Fault",
    "LowerContext",
    "LoweringError",
    "Options",
    "UnlowerableError",
    "attrs_of",
    "constant_array",
    "lower_graph",
    "lower_node",
    "lowers",
    "needs_constant",
]
