"""The verifier: wiring, order and closed bodies, then each op's own checks (its ``verify`` hook)
and re-inferred types; each error names graph, node, port, expected and actual."""

from __future__ import annotations

from ..errors import TensorloopError, VerificationError
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
            if Use(node, i) not in v.uses:
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
    if opdef.verify is not None:
        own = opdef.verify(node, where, root)
        if own:
            problems.extend(own)
            return
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
