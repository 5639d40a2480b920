"""Graph core: use-lists, the rewrite API, type inference at construction, and the verifier."""

from __future__ import annotations

import numpy as np
import pytest

import tensorloop as tl
from tensorloop.ir.graph import Graph, Node
from tensorloop.ir.printer import print_graph
from tensorloop.ir.verify import verify
from tensorloop.tensor.types import TensorType

F3 = TensorType("float32", [3])


def _chain() -> tuple[Graph, Node, Node]:
    g = Graph("g")
    x = g.add_input("x", F3)
    neg = g.add_node("Neg", [x], name="neg")
    ab = g.add_node("Abs", [neg.output], name="abs")
    g.set_outputs([ab.output])
    return g, neg, ab


def test_use_lists_follow_rewiring() -> None:
    g, neg, ab = _chain()
    x = g.inputs[0]
    assert [(u.node, u.port) for u in neg.output.uses] == [(ab, 0)]
    neg.output.replace_all_uses_with(x)
    assert neg.output.uses == () and [(u.node, u.port) for u in x.uses] == [(neg, 0), (ab, 0)]
    g.erase(neg)
    assert [(u.node, u.port) for u in x.uses] == [(ab, 0)]
    verify(g)
    x_val = np.array([1.0, -2.0, 3.0], np.float32)
    np.testing.assert_array_equal(tl.Model(g).run([x_val])[g.outputs[0].name], np.abs(x_val))


def test_erase_refuses_a_used_node() -> None:
    g, neg, _ = _chain()
    with pytest.raises(tl.GraphError, match=r"cannot erase Neg 'neg': %.* is used by Abs 'abs'"):
        g.erase(neg)


def test_insert_before_and_clone_are_independent() -> None:
    g, neg, ab = _chain()
    exp = Node("Exp", [neg.output], [F3], name="exp")
    g.insert_before(ab, exp)
    ab.set_input(0, exp.output)
    verify(g)
    copy = g.clone()
    assert print_graph(copy) == print_graph(g)
    copy.nodes[0].name = "renamed"
    assert g.nodes[0].name == "neg"
    assert copy.inputs[0] is not g.inputs[0]
    x = np.array([0.5, -1.0, 2.0], np.float32)
    np.testing.assert_allclose(
        tl.Model(copy).run([x])[copy.outputs[0].name], np.abs(np.exp(-x)), rtol=1e-6
    )


def test_result_keeps_its_name_when_replaced() -> None:
    g, neg, ab = _chain()
    out_name = ab.output.name
    g.replace(ab.output, neg.output)
    assert g.outputs == [neg.output] and neg.output.name == out_name


def test_replace_all_uses_with_rewires_only() -> None:
    g, neg, ab = _chain()
    names = (neg.output.name, ab.output.name)
    ab.output.replace_all_uses_with(neg.output)
    assert g.outputs == [neg.output] and (neg.output.name, ab.output.name) == names


def test_construction_infers_types_and_names_the_node() -> None:
    g = Graph("g")
    a = g.add_input("a", TensorType("float32", ["N", 1]))
    b = g.add_input("b", TensorType("float32", [4]))
    assert str(g.add_node("Add", [a, b]).output.type) == "f32[N,4]"
    c = g.add_input("c", TensorType("int64", [4]))
    with pytest.raises(tl.ShapeInferenceError, match="Add 'bad': inputs #0, #1 must share"):
        g.add_node("Add", [b, c], name="bad")
    with pytest.raises(tl.GraphError, match="Neg: expected 1 inputs, got 2"):
        g.add_node("Neg", [b, b])
    with pytest.raises(tl.GraphError, match="Softmax: unknown attribute"):
        g.add_node("Softmax", [b], {"axes": 1})
    with pytest.raises(tl.GraphError, match="attribute 'axis' expected int, got str"):
        g.add_node("Softmax", [b], {"axis": "1"})
    with pytest.raises(tl.UnsupportedOpError, match="no op named 'Frobnicate'"):
        g.add_node("Frobnicate", [b])


def test_verifier_reports_every_problem_with_place() -> None:
    g = Graph("g")
    x = g.add_input("x", F3)
    late = Node("Neg", [x], [F3], name="late")
    early = Node("Abs", [late.output], [TensorType("float32", [4])], name="early")
    g.append(early)
    g.append(late)
    g.set_outputs([early.output])
    with pytest.raises(tl.VerificationError) as info:
        verify(g)
    message = str(info.value)
    assert "Abs 'early' in graph 'g': input #0 %" in message
    assert "is defined later (graph is not in topological order)" in message
    assert "output #0 %" in message and "is typed f32[4], the op yields f32[3]" in message


def test_verifier_rejects_open_bodies() -> None:
    outer = Graph("outer")
    x = outer.add_input("x", F3)
    body = Graph("body")
    body.add_input("i", TensorType("int64", []))
    leaked = body.add_node("Neg", [x])  # uses an outer value: bodies must be closed
    t = body.add_node("Constant", [], {"value": np.array(True)})
    body.set_outputs([t.output, leaked.output])
    loop = outer.add_node(
        "Loop",
        [outer.add_node("Constant", [], {"value": np.array(2, np.int64)}).output, None],
        {"body": body, "stacked": (tl.Stacked(0),)},
        name="L",
    )
    outer.set_outputs(loop.outputs)
    with pytest.raises(tl.VerificationError, match="bodies are closed: pass it as an input"):
        verify(outer)


def test_variables_must_exist_and_match() -> None:
    g = Graph("g")
    x = g.add_input("x", F3)
    g.add_node("Assign", [x], {"variable": "nope"})
    g.add_variable("v", np.zeros(4, np.float32))
    g.add_node("Assign", [x], {"variable": "v"})
    with pytest.raises(tl.VerificationError) as info:
        verify(g)
    assert "no variable 'nope' in graph 'g'" in str(info.value)
    assert "assigns variable 'v' as f32[3], it holds f32[4]" in str(info.value)
