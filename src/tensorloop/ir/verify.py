"""The verifier: structural and type invariants; each error names node, port and types."""

from __future__ import annotations

from ..errors import TensorloopError, VerificationError
from ..tensor.types import TensorType, Type
from .control_flow import CONDITION_TYPE, ITERATION_TYPE, LoopLayout, Sliced, Stacked
from .graph import Graph, Node, Use, Value
from .opdef import get_opdef, infer_types


def verify(graph: Graph) -> None:
    """Raise VerificationError listing every problem found in ``graph`` and its subgraphs."""
    problems: list[str] = []
    _verify_graph(graph, graph, problems, graph.name)
    if problems:
        shown = problems[:20]
        more = f"\n  ... and {len(problems) - 20} more" if len(problems) > 20 else ""
        raise VerificationError(
            f"graph '{graph.name}' failed verification:\n  " + "\n  ".join(shown) + more
        )


def _verify_graph(graph: Graph, root: Graph, problems: list[str], scope: str) -> None:
    defined: set[Value] = set()
    names: set[str] = set()

    def define(v: Value, where: str) -> None:
        if v.name in names:
            problems.append(f"{where}: value name %{v.name} is defined twice in graph '{scope}'")
        names.add(v.name)
        defined.add(v)

    for p in graph.inputs:
        if p.producer is not None:
            problems.append(f"parameter %{p.name} of graph '{scope}' has a producer")
        define(p, f"graph '{scope}'")
    for node in graph.nodes:
        where = f"{node.describe()} in graph '{scope}'"
        if node.graph is not graph:
            problems.append(f"{where}: node is listed in the graph but not owned by it")
        for i, v in enumerate(node.inputs):
            if v is None:
                continue
            if v not in defined:
                why = (
                    "is defined later (graph is not in topological order)"
                    if v.graph is graph
                    else "is not defined in this graph (bodies are closed: pass it as an input)"
                )
                problems.append(f"{where}: input #{i} %{v.name} {why}")
            if Use(node, i) not in v._uses:
                problems.append(f"{where}: input #{i} %{v.name} does not list this use")
        for j, out in enumerate(node.outputs):
            if out.producer is not node or out.index != j:
                problems.append(f"{where}: output #{j} %{out.name} has a wrong producer link")
            define(out, where)
        _verify_node(node, where, root, problems)
        for key, sub in node.subgraphs.items():
            _verify_graph(sub, root, problems, f"{scope}/{node.name or node.op}.{key}")
    for k, out in enumerate(graph.outputs):
        if out not in defined:
            problems.append(f"graph '{scope}': result #{k} %{out.name} is not defined in it")


def _verify_node(node: Node, where: str, root: Graph, problems: list[str]) -> None:
    try:
        opdef = get_opdef(node.op)
        opdef.check_arity(len(node.inputs), where)
        opdef.resolve_attrs(node.attrs, where)
    except TensorloopError as exc:
        problems.append(str(exc))
        return
    if node.op == "Loop":
        before = len(problems)
        _verify_loop(node, where, problems)
        if len(problems) > before:
            return
    elif node.op == "If":
        _verify_if(node, where, problems)
    elif node.op in ("ReadVariable", "Assign"):
        _verify_variable(node, where, root, problems)
    try:
        inferred = infer_types(node.op, node.inputs, node.attrs, node.name)
    except TensorloopError as exc:
        problems.append(f"{where}: {exc}" if where not in str(exc) else str(exc))
        return
    if len(inferred) != len(node.outputs):
        problems.append(f"{where}: has {len(node.outputs)} outputs, its op yields {len(inferred)}")
        return
    for j, (want, out) in enumerate(zip(inferred, node.outputs, strict=True)):
        if not want.compatible(out.type):
            problems.append(
                f"{where}: output #{j} %{out.name} is typed {out.type}, the op yields {want}"
            )


def _expect(problems: list[str], what: str, expected: Type, actual: Type | None) -> None:
    if actual is None or not expected.compatible(actual):
        problems.append(f"{what}: expected {expected}, got {actual if actual else 'nothing'}")


def _verify_loop(node: Node, where: str, problems: list[str]) -> None:
    body: Graph = node.attrs["body"]
    layout = LoopLayout.of(node)
    sliced = node.attrs.get("sliced", ())
    stacked = node.attrs.get("stacked", ())
    if not all(isinstance(s, Sliced) for s in sliced) or not all(
        isinstance(s, Stacked) for s in stacked
    ):
        problems.append(f"{where}: 'sliced' must hold Sliced records and 'stacked' Stacked records")
        return
    problem = layout.mismatch(len(node.inputs), body)
    if problem:
        problems.append(f"{where}: {problem}")
        return
    trip, cond = node.inputs[0], node.inputs[1]
    if trip is not None and not (
        isinstance(trip.type, TensorType) and trip.type.dtype.is_int and trip.type.rank in (0, None)
    ):
        problems.append(f"{where}: max_trip_count: expected an integer scalar, got {trip.type}")
    if cond is not None:
        _expect(problems, f"{where}: initial_condition", CONDITION_TYPE, cond.type)
    _expect(problems, f"{where}: body parameter 'iteration'", ITERATION_TYPE, body.inputs[0].type)
    _expect(
        problems, f"{where}: body result 'continue_condition'", CONDITION_TYPE, body.outputs[0].type
    )
    name = f"loop '{node.name}'" if node.name else "loop"
    for c, (i, p, r) in enumerate(
        zip(layout.carried_inputs(), layout.carried_params(), layout.carried_results(), strict=True)
    ):
        init, param, nxt = node.inputs[i], body.inputs[p].type, body.outputs[r].type
        if init is None or not param.compatible(init.type):
            problems.append(
                f"carried #{c} of {name}: initial value is "
                f"{init.type if init else 'missing'}, body parameter expects {param}"
            )
        if not param.compatible(nxt):
            problems.append(f"carried #{c} of {name}: body yields {nxt}, expected {param}")
    for c, (i, p, s) in enumerate(
        zip(layout.sliced_inputs(), layout.slice_params(), sliced, strict=True)
    ):
        src = node.inputs[i]
        if src is None or not isinstance(src.type, TensorType):
            problems.append(f"sliced #{c} of {name}: source must be a tensor")
            continue
        if src.type.shape is None:
            continue
        rank = len(src.type.shape)
        if not -rank <= s.axis < rank:
            problems.append(
                f"sliced #{c} of {name}: axis {s.axis} is out of range for source {src.type}"
            )
            continue
        a = s.axis % rank
        _expect(
            problems,
            f"sliced #{c} of {name}: body parameter",
            TensorType(src.type.dtype, src.type.shape[:a] + src.type.shape[a + 1 :]),
            body.inputs[p].type,
        )
    for c, (i, p) in enumerate(
        zip(layout.invariant_inputs(), layout.invariant_params(), strict=True)
    ):
        inv = node.inputs[i]
        param = body.inputs[p].type
        if inv is None or not param.compatible(inv.type):
            problems.append(
                f"invariant #{c} of {name}: value is "
                f"{inv.type if inv else 'missing'}, body parameter expects {param}"
            )


def _verify_if(node: Node, where: str, problems: list[str]) -> None:
    cond = node.inputs[0]
    if cond is None or not (isinstance(cond.type, TensorType) and cond.type.dtype.value == "bool"):
        problems.append(f"{where}: cond: expected a bool tensor, got {cond.type if cond else None}")
    for key in ("then_branch", "else_branch"):
        branch: Graph = node.attrs[key]
        captured = node.inputs[1:]
        if len(branch.inputs) != len(captured):
            problems.append(
                f"{where}: {key} takes {len(branch.inputs)} parameters, "
                f"the node passes {len(captured)}"
            )
            continue
        for c, (v, p) in enumerate(zip(captured, branch.inputs, strict=True)):
            if v is None or not p.type.compatible(v.type):
                problems.append(
                    f"{where}: {key} parameter #{c} expects {p.type}, "
                    f"got {v.type if v else 'nothing'}"
                )


def _verify_variable(node: Node, where: str, root: Graph, problems: list[str]) -> None:
    name = node.attrs.get("variable")
    var = root.variables.get(str(name))
    if var is None:
        problems.append(f"{where}: no variable '{name}' in graph '{root.name}'")
        return
    actual = (
        node.outputs[0].type
        if node.op == "ReadVariable"
        else (node.inputs[0].type if node.inputs and node.inputs[0] is not None else None)
    )
    what = "reads" if node.op == "ReadVariable" else "assigns"
    if actual is None or not var.type.compatible(actual):
        problems.append(f"{where}: {what} variable '{name}' as {actual}, it holds {var.type}")
