"""Names belong to the graph: rewrites keep result names (golden IR text before and after)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorloop as tl
from tensorloop.ir.parser import parse_graph
from tensorloop.ir.printer import print_graph
from tensorloop.passes import fold_constants


@pytest.fixture(autouse=True)
def _fresh_builder() -> None:
    tl.reset()


def test_folding_a_result_keeps_its_name() -> None:
    c = tl.constant(np.array([1.0, 2.0], np.float32))
    x = tl.placeholder("float32", (2,), name="x")
    m = tl.Model({"y": -c, "z": x + 1.0})
    assert fold_constants(m.graph).changed
    assert m.output_names == ["y", "z"]
    assert print_graph(m.graph) == (
        "graph @model(%x: f32[2]) {\n"
        "  %const = Constant() {value = dense<f32[2]>[1.0, 2.0]} : f32[2]\n"
        "  %y = Constant() {value = dense<f32[2]>[-1.0, -2.0]} : f32[2]\n"
        "  %const_1 = Constant() {value = dense<f32[]>[1.0]} : f32[]\n"
        "  %z = Add(%x, %const_1) : f32[2]\n"
        "  return %y, %z\n"
        "}"
    )
    out = m.run({"x": np.zeros(2, np.float32)})
    np.testing.assert_array_equal(out["y"], [-1.0, -2.0])


BEFORE = """\
graph @g(%x: f32[3]) {
  %n = Neg(%x) : f32[3]
  %y = Abs(%n) : f32[3]
  %z = Exp(%n) : f32[3]
  return %y, %z
}"""


def test_replacing_a_result_by_an_interior_value_moves_the_name_to_it() -> None:
    g = parse_graph(BEFORE)
    y, n = g.outputs[0], g.nodes[0].output
    g.replace(y, n)
    g.erase(y.producer)  # type: ignore[arg-type]
    assert print_graph(g) == (
        "graph @g(%x: f32[3]) {\n"
        "  %y = Neg(%x) : f32[3]\n"
        "  %z = Exp(%y) : f32[3]\n"
        "  return %y, %z\n"
        "}"
    )


def test_replacing_a_result_by_a_parameter_or_another_result_adds_an_identity() -> None:
    g = parse_graph(BEFORE)
    g.replace(g.outputs[0], g.inputs[0])
    g.replace(g.outputs[1], g.outputs[0])
    assert [v.name for v in g.outputs] == ["y", "z"]
    assert print_graph(g).endswith(
        "  %y = Identity(%x) : f32[3]\n  %z = Identity(%y) : f32[3]\n  return %y, %z\n}"
    )
    x = np.array([1.0, -2.0, 3.0], np.float32)
    out = tl.Model(g).run({"x": x})
    np.testing.assert_array_equal(out["y"], x)
    np.testing.assert_array_equal(out["z"], x)


def test_replace_all_uses_with_moves_no_name() -> None:
    g = parse_graph(BEFORE)
    y, n = g.outputs[0], g.nodes[0].output
    y.replace_all_uses_with(n)
    assert (n.name, y.name) == ("n", "y") and g.outputs[0] is n


def test_a_result_takes_its_name_from_an_interior_value_that_held_it() -> None:
    g = parse_graph(BEFORE)
    z, g.outputs = g.outputs[1], []
    kept = g.result_named(z, "n")
    assert kept is z and z.name == "n" and g.nodes[0].output.name != "n"
    with pytest.raises(tl.GraphError, match="output name 'x' is already the name of an input"):
        g.result_named(z, "x")


def test_extracting_a_model_whose_outputs_are_an_input_and_a_constant() -> None:
    x = tl.placeholder("float32", (2,), name="x")
    c = tl.constant(np.array([3, 4], np.int64))
    m = tl.Model({"same": x, "x_again": x, "k": c, "k2": c})
    assert m.output_names == ["same", "x_again", "k", "k2"]
    assert print_graph(m.graph) == (
        "graph @model(%x: f32[2]) {\n"
        "  %k = Constant() {value = dense<i64[2]>[3, 4]} : i64[2]\n"
        "  %same = Identity(%x) : f32[2]\n"
        "  %x_again = Identity(%x) : f32[2]\n"
        "  %k2 = Identity(%k) : i64[2]\n"
        "  return %same, %x_again, %k, %k2\n"
        "}"
    )
    out = m.run({"x": np.array([1.0, 2.0], np.float32)})
    np.testing.assert_array_equal(out["x_again"], [1.0, 2.0])
    np.testing.assert_array_equal(out["k2"], [3, 4])
    assert tl.Model({"x": x}).output_names == ["x"]  # an input as itself, under its own name
    with pytest.raises(tl.GraphError, match="output name 'x' is already the name of an input"):
        tl.Model({"x": c, "y": x})
    g = tl.Model({"k": c, "k2": x}).graph
    with pytest.raises(tl.GraphError, match="output name 'k' is used twice"):
        g.result_named(g.inputs[0], "k")
