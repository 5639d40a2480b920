"""Python source for a graph: straight-line code over locals, loops and branches inlined.

Every value is a local of one generated function; ops become inline NumPy expressions
(``ops.py``) or a call of their reference kernel bound once at planning time; a Loop becomes a
``while`` over its body's code, its carried values rebound (never copied) each iteration and its
stacked results written in place into a buffer sized by the trip bound; an If becomes
``if``/``else``. Nothing is looked up or type-checked per call that planning already knows.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from ...ir.branch import If
from ...ir.graph import Graph, Node, Value, static_type
from ...ir.loop import Loop, fixed_runs
from ...ir.opdef import get_opdef
from ...limits import nbytes
from ...passes.specialize import Sized
from ...reference.allocation import predicted
from ...reference.interpreter import conform
from ...reference.kernels.control_flow import empty_stacked
from ...reference.runtime import loop_label, loop_limit_error, timeout_error, total_limit_error
from ...tensor.types import TensorType, normalize_axis
from . import support
from .memory import VIEW_OPS, plan_buffers, plan_in_place
from .ops import Operand, inline, inline_into

MAX_NESTING = 10
"""Bodies nested deeper run through the reference kernel, which runs them on the reference
interpreter: a handoff of the plan (Python allows 20 nested blocks)."""


class Source:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 0

    def line(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)

    @contextmanager
    def block(self, header: str) -> Iterator[None]:
        self.line(header)
        self.depth += 1
        start = len(self.lines)
        try:
            yield
        finally:
            if len(self.lines) == start:
                self.line("pass")
            self.depth -= 1

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


class Generator:
    """Writes one function ``run(args, state)`` for a graph; ``trace`` names values to record,
    ``observed``: the function calls the run's loop observer (``state.observer``) as each
    iteration starts and each loop ends (a plan for unobserved runs has no such call)."""

    def __init__(
        self,
        trace: frozenset[str],
        observed: bool = False,
        folded: Sized | None = None,
        checked: bool = False,
    ) -> None:
        self.src = Source()
        self.trace = trace
        self.observed = observed
        self.checked = checked
        """Every node's outputs are checked against their declared types, as the reference
        checks them (a plan for inputs that contradict a declared type: see ``specialize``)."""
        self.labelled = bool(trace) or observed
        """Loops keep ``state.loops`` (their labels) up to date."""
        self.globals: dict[str, Any] = {
            "np": np,
            "support": support,
            "conform": conform,
            "loop_limit_error": loop_limit_error,
            "total_limit_error": total_limit_error,
            "timeout_error": timeout_error,
            "_monotonic": time.monotonic,
        }
        self.largest: Sized | None = folded
        """The largest static output of an op whose output size comes from data (``folded``:
        the largest that planning folded away): checked against the run's limits once, when
        the run starts."""
        self.names: dict[Value, str] = {}
        self.constants: dict[Value, Any] = {}
        self._count = 0
        self.nesting = 0
        self.loop_path: list[str] = []
        """The labels of the loops whose bodies are being written, outermost first."""
        self.handed_on: list[tuple[Node, str]] = []
        """Loops and Ifs whose bodies the plan leaves to the reference interpreter, and why."""
        self.why_not_inlined = ""
        self.buffers: dict[Value, str] = {}
        self.in_place: dict[Value, Value] = {}
        self.known: dict[Value, Any] = {}
        """Values computed while planning: views of constants (a weight's slice, transposed)."""
        """Values written into the buffer of an input that dies with them."""
        """Body values written in place into a buffer allocated before their loop."""

    # -- names -------------------------------------------------------------------------------
    def fresh(self, hint: str) -> str:
        self._count += 1
        clean = "".join(c if c.isascii() and c.isalnum() else "_" for c in hint)[:24]
        return f"{clean}_{self._count}"

    def bind(self, obj: Any, hint: str) -> str:
        """A global name for ``obj``, which the generated code only reads."""
        name = self.fresh(f"g_{hint}")
        self.globals[name] = obj
        return name

    def local(self, value: Value) -> str:
        name = self.fresh(f"v_{value.name}")
        self.names[value] = name
        return name

    def record(self, value: Value, *, raw: bool = False) -> None:
        """Record ``value`` if traced: as an array, as the reference conforms each result;
        ``raw`` as it is (a loop's iteration is an np.int64 there too). A checked plan checks
        each node output against its type here."""
        node = value.producer
        if self.checked and node is not None and node.op != "Constant":
            self.src.line(f"conform({self.bind(node, 'node')}, {value.index}, {self.names[value]})")
        if value.name in self.trace:
            expr = self.names[value] if raw else self.result(value)
            self.src.line(f"_record({value.name!r}, {expr})")

    def alias(self, param: Value, value: Value | None) -> None:
        """Body parameter ``param`` reads ``value`` of the enclosing graph, as it is."""
        self.names[param] = self.ref(value)
        if value is not None:
            known = value.constant if value.constant is not None else self.known.get(value)
            if known is not None:
                self.known[param] = known

    def ref(self, value: Value | None) -> str:
        """How the generated code reads ``value`` (None for an omitted optional input)."""
        return "None" if value is None else self.names[value]

    def operand(self, value: Value | None) -> Operand | None:
        if value is None:
            return None
        known = value.constant if value.constant is not None else self.known.get(value)
        return Operand(self.names[value], value.type, known)

    # -- the function ------------------------------------------------------------------------
    def function(self, graph: Graph) -> str:
        args = [self.local(p) for p in graph.inputs]
        with self.src.block("def run(args, state):"):
            self.src.line("_max_iterations = state.max_iterations")
            self.src.line("_max_total = state.limits.max_total_iterations")
            self.src.line("_deadline = state.deadline")
            static_check = len(self.src.lines)
            if self.trace:
                self.src.line("_record = state.record")
            if self.observed:
                self.src.line("_on_iteration = state.observer.on_iteration")
                self.src.line("_on_loop_end = state.observer.on_loop_end")
            if args:
                self.src.line(f"{', '.join(args)}, = args")
            for p in graph.inputs:
                self.record(p)
            with self.src.block("with np.errstate(all='ignore'):"):
                if not self.trace:
                    self.in_place = plan_in_place(graph, self.elementwise)
                self.body(graph)
                outs = [self.result(v) for v in graph.outputs]
                self.src.line(f"return [{', '.join(outs)}]")
            if self.largest is not None:
                size, shape, dtype, where = self.largest
                self.src.lines[static_check:static_check] = [
                    f"    if state.limits.max_tensor_bytes < {size}:",
                    f"        state.check_tensor({shape!r}, {self.bind(dtype, 'dtype')}, "
                    f"{self.bind(where, 'where')})",
                ]
        return self.src.text()

    def guard(self, node: Node) -> None:
        """Check, before ``node`` runs, that its output (its size read from data) fits the run's
        limits: once per run when its outputs' shapes are all static here, else each time it
        runs."""
        types = [static_type(v) for v in node.outputs]
        if types and all(t is not None for t in types):
            for k, t in enumerate(types):
                assert t is not None
                size = nbytes(t.static_shape, t.dtype)
                if self.largest is None or size > self.largest[0]:
                    where = f"{node.describe()} output #{k}"
                    self.largest = (size, t.static_shape, t.dtype, where)
            return
        check = self.bind(support.guard(node), f"guard_{node.op}")
        args = ", ".join(self.ref(v) for v in node.inputs)
        self.src.line(f"{check}(state, ({args}{',' if len(node.inputs) == 1 else ''}))")

    def result(self, value: Value) -> str:
        name = self.names[value]
        return f"np.asarray({name})" if isinstance(value.type, TensorType) else name

    def body(self, graph: Graph) -> None:
        for node in graph.nodes:
            self.node(node)

    def node(self, node: Node) -> None:
        if node.op == "Constant":
            value = node.attrs["value"]
            # A scalar as a NumPy scalar: scalar arithmetic skips the ufunc machinery.
            value = value[()] if isinstance(value, np.ndarray) and value.ndim == 0 else value
            self.names[node.outputs[0]] = self.bind(value, node.outputs[0].name)
            self.record(node.outputs[0])
            return
        if node.op == "Identity":
            self.names[node.outputs[0]] = self.names[node.inputs[0]]  # type: ignore[index]
            self.record(node.outputs[0])
            return
        if node.op == "Loop" and self.nesting < MAX_NESTING and self.loop(node):
            return
        if node.op == "If" and self.nesting < MAX_NESTING:
            self.branch(node)
            return
        if node.op in ("Loop", "If"):
            self.handed_on.append((node, self.why_not_inlined or _TOO_DEEP))
            self.why_not_inlined = ""
        if predicted(node.op):
            self.guard(node)
        attrs = get_opdef(node.op).resolve_attrs(node.attrs, node.describe())
        exprs = None
        if not node.subgraphs:
            operands = [self.operand(v) for v in node.inputs]
            out = node.outputs[0] if len(node.outputs) == 1 else None
            buffer = None if out is None else self.buffers.get(out)
            if out is not None and out in self.in_place:
                buffer = self.names[self.in_place[out]]
            if buffer is not None:
                lines = inline_into(node, attrs, operands, buffer, self.bind)
                if lines is not None:
                    self.statements(node, lines)
                    self.names[node.outputs[0]] = buffer
                    self.record(node.outputs[0])
                    return
            exprs = inline(node, attrs, operands, self.bind)
            if exprs is not None and self.take_view(node, operands, exprs):
                return
        if exprs is None:
            self.call(node)
            return
        outs = [self.local(out) for out in node.outputs]
        self.statements(node, [f"{o} = {e}" for o, e in zip(outs, exprs, strict=True)])
        for out in node.outputs:
            self.record(out)

    def statements(self, node: Node, lines: list[str]) -> None:
        """``node``'s inline code. Where shapes or an index are known only at run time, what
        NumPy refuses is the data's fault, which the reference must report: those lines alone
        deoptimise on ``IndexError``/``ValueError`` (a bug of a template that fails the same
        way makes a handoff, warned); every other exception propagates."""
        if not _may_fail_on_data(node):
            for line in lines:
                self.src.line(line)
            return
        with self.src.block("try:"):
            for line in lines:
                self.src.line(line)
        where = self.bind(node.describe(), "where")
        with self.src.block("except (IndexError, ValueError) as e:"):
            self.src.line(f"raise support.Deoptimize.on_data({where}, e) from e")

    def take_view(self, node: Node, operands: list[Operand | None], exprs: list[str]) -> bool:
        """A view of constants is a constant: take it now, once (no copy is made). False when
        ``node`` is no such view, or taking it fails (the run then reports the fault)."""
        if node.op not in VIEW_OPS or any(o is not None and o.const is None for o in operands):
            return False
        try:
            values = [np.asarray(eval(expr, self.globals)) for expr in exprs]
        except (IndexError, ValueError):  # an index out of range, say: the run's error to give
            return False
        for out, value in zip(node.outputs, values, strict=True):
            self.known[out] = value
            self.names[out] = self.bind(value[()] if value.ndim == 0 else value, out.name)
            self.record(out)
        return True

    def call(self, node: Node) -> None:
        """``node`` through its reference kernel (bodies, if any, on the reference)."""
        stateful = support.needs_state(node)
        fn = self.bind(support.generic_call(node, stateful=stateful), f"k_{node.op}")
        args = ["state"] if stateful else []
        args += ["None" if v is None else self.names[v] for v in node.inputs]
        outs = [self.local(o) for o in node.outputs]
        call = f"{fn}({', '.join(args)})"
        labelled = node.op == "Loop"  # its iterations carry its label (and the budget's error)
        if labelled:
            outer = self.fresh("loops")
            self.src.line(f"{outer} = state.loops")
            if self.labelled:
                self.src.line(f"state.loops = {outer} + ({loop_label(node)!r},)")
            else:  # the loops around it keep no labels: the path this plan gives it
                self.src.line(f"state.loops = {(*self.loop_path, loop_label(node))!r}")
        if not outs:
            self.src.line(call)
        elif len(outs) == 1:
            self.src.line(f"{outs[0]} = {call}")
        else:
            self.src.line(f"{', '.join(outs)}, = {call}")
        if labelled:
            self.src.line(f"state.loops = {outer}")
        for o in node.outputs:
            self.record(o)

    def idle(self, view: Loop) -> bool:
        """A loop with no outputs whose body only says "go on": running it changes nothing."""
        return (
            not view.outputs
            and not self.trace
            and not self.observed
            and view.always_continues
            and all(n.op == "Constant" for n in view.body.nodes)
        )

    @staticmethod
    def writable(node: Node) -> bool:
        """Whether ``node`` has an in-place form (``ops.inline_into``)."""
        if node.subgraphs or len(node.outputs) != 1:
            return False
        attrs = get_opdef(node.op).resolve_attrs(node.attrs, node.describe())
        probe = [None if v is None else Operand("x", v.type, v.constant) for v in node.inputs]
        return inline_into(node, attrs, probe, "out", lambda obj, hint: hint) is not None

    @staticmethod
    def elementwise(node: Node) -> bool:
        return node.op not in ("MatMul", "Gemm") and Generator.writable(node)  # no overlap

    def plan_buffers(self, body: Graph, escaping: int) -> None:
        """Allocate the pooled buffers of ``body`` (memory.py) here, before its loop."""

        plan = plan_buffers(body, escaping, self.writable, self.fresh)
        for name, shape, dtype in plan.allocations:
            self.src.line(f"{name} = np.empty({shape!r}, {self.bind(dtype, 'dtype')})")
        self.buffers.update(plan.buffers)

    # -- control flow ------------------------------------------------------------------------
    def branch(self, node: Node) -> None:
        view = If(node)
        cond = self.names[node.inputs[0]]  # type: ignore[index]
        outs = [self.local(o) for o in node.outputs]
        where = self.bind(node.describe(), "where")
        self.nesting += 1
        for header, graph in (
            (f"if support.truth({cond}, {where}):", view.then_branch),
            ("else:", view.else_branch),
        ):
            with self.src.block(header):
                for p, v in zip(graph.inputs, node.inputs[1:], strict=True):
                    self.alias(p, v)
                    self.record(p)
                self.body(graph)
                if outs:
                    results = ", ".join(self.names[v] for v in graph.outputs)
                    self.src.line(f"{', '.join(outs)}, = {results},")
        self.nesting -= 1
        for o in node.outputs:
            self.record(o)

    def raise_limit(self, where: str) -> None:
        """The statement that stops loop ``where`` at the iteration limit, as the reference."""
        self.src.line(f"raise loop_limit_error({self.bind(where, 'where')}, _max_iterations)")

    def count_trips(self, where: str, label: str, trips: str) -> None:
        """The statements that count ``trips`` more iterations of loop ``where`` (labelled
        ``label``) against the run's budget, and stop the run as the reference does where
        they pass it."""
        path = self.bind((*self.loop_path, label), "path")
        with self.src.block(f"if state.total_iterations + {trips} > _max_total:"):
            self.src.line("state.total_iterations = _max_total")
            where_name = self.bind(where, "where")
            self.src.line(f"raise total_limit_error({where_name}, {path}, _max_total)")
        self.src.line(f"state.total_iterations += {trips}")

    def loop(self, node: Node) -> bool:
        """Inline ``node`` as a while loop; False (nothing written) if planning cannot."""
        view = Loop(node)
        types = [None if s.source is None else s.source.type for s in view.sliced]
        ranks = [t.rank if isinstance(t, TensorType) else None for t in types]
        if any(r is None for r in ranks):
            self.why_not_inlined = "a sliced input of unknown rank: its kernel runs the body"
            return False
        axes = []
        for s, rank in zip(view.sliced, ranks, strict=True):
            assert rank is not None
            if not -rank <= s.spec.axis < rank:  # certain to fail: where it runs, as the reference
                check = self.bind(normalize_axis, "normalize_axis")
                self.src.line(
                    f"{check}({s.spec.axis}, {rank}, {self.bind(node.describe(), 'where')})"
                )
                for o in node.outputs:
                    self.names[o] = "None"  # never reached
                return True
            axes.append(s.spec.axis + rank if s.spec.axis < 0 else s.spec.axis)
        src, where = self.src, node.describe()
        k = self.fresh("loop")
        i, n, cond = f"i_{k}", f"n_{k}", f"c_{k}"

        bounds = []  # the run-time bound is the least of these (Loop.bound_given)
        if view.constant_trip_count is not None:
            bounds.append(str(view.constant_trip_count))
        elif view.trip_count is not None:
            bounds.append(f"int({self.ref(view.trip_count)})")
        slice_names = [self.ref(s.source) for s in view.sliced]
        bounds += [f"{name}.shape[{a}]" for name, a in zip(slice_names, axes, strict=True)]
        if bounds:
            src.line(f"{n} = {bounds[0] if len(bounds) == 1 else 'min(' + ', '.join(bounds) + ')'}")
        initial = view.condition
        if initial is None:
            src.line(f"{cond} = True")
        elif initial.constant is not None:
            src.line(f"{cond} = {bool(np.asarray(initial.constant))}")
        else:
            src.line(f"{cond} = bool(np.asarray({self.names[initial]}))")

        body = view.body
        if bounds and self.idle(view):
            # Nothing to compute, nothing to keep: the loop's one effect is the iteration limit.
            going = "" if initial is None else f" and bool(np.asarray({self.ref(initial)}))"
            with src.block(f"if _max_iterations < {n}{going}:"):
                self.raise_limit(where)
            with src.block(f"if {n} > 0{going}:"):
                self.count_trips(where, loop_label(node), n)
            return True
        if bounds and not view.can_stop_early:  # certain trips: refused now if too many
            per_trip = 1 + fixed_runs(body)
            path = self.bind((*self.loop_path, loop_label(node)), "path")
            planned = f"{n} * {per_trip}"
            with src.block(f"if state.total_iterations + {planned} > _max_total:"):
                src.line(
                    f"raise total_limit_error({self.bind(where, 'where')}, {path}, _max_total, "
                    f"(state.total_iterations, {planned}))"
                )
        it_param, carried_params, slice_params, inv_params = view.counts.split_params(body.inputs)
        carried_names = [self.local(p) for p in carried_params]
        for name, c in zip(carried_names, view.carried, strict=True):
            src.line(f"{name} = {self.ref(c.initial)}")
        # Carried values whose size the plan does not know (they may grow every trip) count
        # against the run's max_run_bytes while the loop runs.
        growing = [n for n, p in zip(carried_names, carried_params, strict=True) if not _fixed(p)]
        held = f"held_{k}"
        if growing:
            values, at = ", ".join(growing), self.bind(where, "where")
            carry = f"support.carry(state, {{}}, ({values},), {at})"
            src.line(f"{held} = {carry.format(0)}")
        for p, inv in zip(inv_params, view.invariants, strict=True):
            self.alias(p, inv.value)
        stacked = [self.fresh("stack") for _ in view.stacked]
        shapes = [self.fresh("shape") for _ in view.stacked]
        caps = [self.fresh("cap") for _ in view.stacked]
        fixed = [static_type(st.result) for st in view.stacked]
        for b, cap, t in zip(stacked, caps, fixed, strict=True):
            if t is None:
                src.line(f"{b} = None")
            else:  # the per-iteration shape is known: the buffer exists before the loop
                rows = n if bounds else "1"
                dtype = self.bind(t.dtype.numpy, "dtype")
                src.line(
                    f"{b} = support.stack_alloc(state, {rows}, {t.static_shape!r}, {dtype}, "
                    f"{self.bind(where, 'where')})"
                )
                src.line(f"{cap} = len({b})")
        src.line(f"{i} = 0")
        # A loop with no body inside its body counts its trips in a local, in the run's count
        # when it ends; one around other loops keeps the run's count up to date every trip.
        leaf = not any(n.subgraphs for n in body.nodes)
        base, room = f"base_{k}", f"room_{k}"
        if leaf:
            src.line(f"{base} = state.total_iterations")
            src.line(f"{room} = _max_total - {base}")
        if self.trace:
            src.line(f"path_{k} = state.path")
        if self.labelled:
            src.line(f"loops_{k} = state.loops")
            src.line(f"labels_{k} = state.loops = loops_{k} + ({loop_label(node)!r},)")

        stops = not view.always_continues  # the body's condition is computed
        always = not view.can_stop_early  # no condition to test (a constant false one is kept)
        # A bounded loop checks the iteration limit once, after it: it runs at most
        # min(bound, limit) trips and fails if it would have gone on (as the reference fails on
        # entering trip number `limit`).
        limit = f"lim_{k}"
        if bounds:
            src.line(f"{limit} = min({n}, _max_iterations)")
        tests = ([f"{i} < {limit}"] if bounds else []) + ([] if always else [cond])
        header = " and ".join(tests) or "True"
        if not self.trace:  # traced values are kept, so none may be overwritten
            self.plan_buffers(body, 1 + view.counts.carried)
        self.nesting += 1
        where_name = self.bind(where, "where")
        label = loop_label(node)
        with src.block(f"while {header}:"):
            with src.block("if _deadline is not None and _monotonic() > _deadline:"):
                src.line(f"raise timeout_error({where_name}, state.timeout)")
            if not bounds:
                with src.block(f"if {i} >= _max_iterations:"):
                    self.raise_limit(where)
            if leaf:
                with src.block(f"if {i} >= {room}:"):
                    src.line("state.total_iterations = _max_total")
                    path = self.bind((*self.loop_path, label), "path")
                    src.line(f"raise total_limit_error({where_name}, {path}, _max_total)")
            else:
                self.count_trips(where, label, "1")
            self.loop_path.append(label)
            if self.observed:
                src.line(f"_on_iteration(labels_{k}, {i})")
            if self.trace:
                src.line(f"state.path = path_{k} + ({i},)")
            if it_param.uses or it_param.name in self.trace:
                src.line(f"{self.local(it_param)} = np.int64({i})")
            else:
                self.names[it_param] = f"np.int64({i})"
            for p, name, a, s in zip(slice_params, slice_names, axes, view.sliced, strict=True):
                if not p.uses and p not in body.outputs and p.name not in self.trace:
                    continue  # a source kept only for its length bounds the trips
                item = f"{name}.shape[{a}] - 1 - {i}" if s.spec.reverse else i
                # As the reference's slice: an array even of one element (plain indexing gives
                # a NumPy scalar there, or a string tensor's Python str), and C-contiguous (a
                # view where the source's rows are; NumPy's MatMul rounds by layout).
                index = ", ".join([":"] * a + [item, "..."])
                src.line(f"{self.local(p)} = np.asarray({name}[{index}], order='C')")
            for p in body.inputs:
                self.record(p, raw=p is it_param)
            self.body(body)
            step = view.counts.split_results(body.outputs)
            if stops:
                src.line(f"{cond} = bool({self.names[view.continue_condition]})")
            # Stacked results first: one may be a carried parameter, rebound below.
            first = n if bounds else "1"
            for b, shape, cap, t, y in zip(
                stacked, shapes, caps, fixed, step.per_iteration, strict=True
            ):
                yv = self.names[y]
                if t is not None:
                    with src.block(f"if {i} == {cap}:"):
                        src.line(f"{b} = support.stack_grow(state, {b}, {where_name})")
                        src.line(f"{cap} = len({b})")
                    src.line(f"{b}[{i}] = {yv}")
                    continue
                with src.block(f"if {b} is None:"):
                    src.line(
                        f"{b}, {shape} = support.stack_start(state, {yv}, {first}, {where_name})"
                    )
                with src.block(f"elif {i} == len({b}):"):
                    src.line(f"{b} = support.stack_grow(state, {b}, {where_name})")
                with src.block(f"if {yv}.shape != {shape}:"):
                    src.line(
                        f"raise support.Deoptimize({where_name}, 'a stacked result changes shape')"
                    )
                src.line(f"{b}[{i}] = {yv}")
            nexts = [self.names[v] for v in step.carried]
            changed = [(c, x) for c, x in zip(carried_names, nexts, strict=True) if c != x]
            if changed:
                lhs = ", ".join(c for c, _ in changed)
                rhs = ", ".join(x for _, x in changed)
                src.line(f"{lhs}, = {rhs},")
            if growing:
                src.line(f"{held} = {carry.format(held)}")
            src.line(f"{i} += 1")
            self.loop_path.pop()
        self.nesting -= 1
        if leaf:
            src.line(f"state.total_iterations = {base} + {i}")
        if self.trace:
            src.line(f"state.path = path_{k}")
        if self.labelled:
            src.line(f"state.loops = loops_{k}")
        if bounds:
            going = " and ".join([f"{i} < {n}"] + ([] if always else [cond]))
            with src.block(f"if {i} == _max_iterations and {going}:"):
                self.raise_limit(where)
        if self.observed:
            src.line(f"_on_loop_end(labels_{k}, {i})")
        if growing:
            src.line(f"state.live_bytes -= {held}")
        if stacked:  # the buffers become the outputs, which the run no longer counts
            src.line(f"support.let_go(state, {', '.join(stacked)})")

        finals, outputs = view.counts.split_outputs(node.outputs)
        for out, name in zip(finals, carried_names, strict=True):
            self.names[out] = name
        if outputs:
            outs = [self.local(o) for o in outputs]
            with src.block(f"if {i} == 0:"):
                helper = self.bind(_zero_trip(node), "zero_trip")
                invariants = ", ".join(self.ref(v.value) for v in view.invariants)
                src.line(
                    f"{', '.join(outs)}, = {helper}([{', '.join(carried_names)}], "
                    f"[{', '.join(slice_names)}], [{invariants}])"
                )
            with src.block("else:"):
                for name, b, st in zip(outs, stacked, view.stacked, strict=True):
                    spec = st.spec
                    src.line(
                        f"{name} = support.stack_finish({b}, {i}, {spec.axis}, {spec.reverse})"
                    )
            node_name = self.bind(node, "node")
            for name, st in zip(outs, view.stacked, strict=True):
                # Declared rows are a claim the trips may break (an early exit, a hand-typed
                # file): checked as the reference checks every output.
                declared = st.output.type
                if not self.checked and isinstance(declared, TensorType) and declared.shape:
                    axis = st.spec.axis % len(declared.shape)
                    declared_rows = declared.shape[axis]
                    if isinstance(declared_rows, int):
                        with src.block(f"if {name}.shape[{axis}] != {declared_rows}:"):
                            src.line(f"conform({node_name}, {st.output.index}, {name})")
        for out in node.outputs:
            self.record(out)
        return True


def _fixed(p: Value) -> bool:
    """Whether a carried parameter's size is known to the plan (a static tensor type)."""
    return static_type(p) is not None


def _zero_trip(node: Node) -> Any:
    def outputs(carried: list[Any], sources: list[Any], invariants: list[Any]) -> list[Any]:
        return empty_stacked(node, carried, sources, invariants)

    return outputs


_TOO_DEEP = (
    f"nested deeper than MAX_NESTING ({MAX_NESTING}) bodies: its kernel runs its bodies on the "
    "reference interpreter"
)


def _may_fail_on_data(node: Node) -> bool:
    """Whether ``node``'s inline form may fail on run-time data: a Gather's index, or shapes
    the plan does not know (NumPy then refuses what the type rules could not)."""
    if node.op == "Gather":
        return True
    values = [*node.inputs, *node.outputs]
    return any(
        isinstance(v.type, TensorType) and not v.type.is_static for v in values if v is not None
    )


def generate(
    graph: Graph,
    trace: frozenset[str],
    observed: bool = False,
    folded: Sized | None = None,
    checked: bool = False,
) -> tuple[str, dict[str, Any], list[tuple[Node, str]]]:
    """The source of ``run(args, state)`` for ``graph``, the globals it reads (``observed``:
    calling the run's loop observer, see ``Generator``; ``folded``: an output planning folded
    away that the run still checks; ``checked``: every node output checked against its type),
    and the Loops and Ifs whose bodies the plan hands to the reference interpreter, with why."""
    gen = Generator(trace, observed, folded, checked)
    text = gen.function(graph)
    return text, gen.globals, gen.handed_on
