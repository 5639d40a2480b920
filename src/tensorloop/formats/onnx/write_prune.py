"""What nothing uses, taken out of a written ONNX model: nodes whose outputs no live node, body or
graph output reads, and initializers no live node reads (onnxruntime warns about each one)."""

from __future__ import annotations

import onnx


def prune(model: onnx.ModelProto) -> None:
    """Remove, in place, the nodes and initializers of ``model`` that no graph output depends
    on. Every graph keeps its inputs and outputs; a body keeps what its outputs need, and its
    loop or branch reads the outer names that is made of."""
    _prune_graph(model.graph)


def _prune_graph(graph: onnx.GraphProto) -> set[str]:
    """Prune ``graph`` (and the bodies of the nodes it keeps); return the names its kept nodes
    read that ``graph`` does not define (values of enclosing graphs)."""
    needed = {o.name for o in graph.output}
    kept: list[onnx.NodeProto] = []
    for node in reversed(graph.node):  # ONNX lists nodes in topological order
        if not any(name in needed for name in node.output if name):
            continue
        for attr in node.attribute:
            for body in [attr.g] if attr.type == onnx.AttributeProto.GRAPH else attr.graphs:
                needed |= _prune_graph(body)
        needed.update(name for name in node.input if name)
        kept.append(node)
    kept.reverse()
    if len(kept) != len(graph.node):
        del graph.node[:]
        graph.node.extend(kept)
    initializers = [t for t in graph.initializer if t.name in needed]
    if len(initializers) != len(graph.initializer):
        del graph.initializer[:]
        graph.initializer.extend(initializers)
    live = {name for n in kept for name in n.output}
    infos = [i for i in graph.value_info if i.name in live or i.name in needed]
    if len(infos) != len(graph.value_info):
        del graph.value_info[:]
        graph.value_info.extend(infos)
    defined = live | {i.name for i in graph.input} | {t.name for t in graph.initializer}
    return needed - defined
