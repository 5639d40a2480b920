"""What cannot be differentiated is refused up front, by a GradientError that names the op or
value and says why: never a silent zero or a crash."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import tensorloop as tl
from tensorloop.ir.emit import Emitter
from tensorloop.ir.graph import Graph
from tensorloop.tensor.types import TensorType

DATA = Path(__file__).parent.parent / "data"


def _one(op: str, dtype: str = "float64") -> tl.Model:
    g = Graph("one")
    x = g.add_input("x", TensorType(dtype, (3,)))
    em = Emitter(g)
    y = em.op(op, [x, em.ints(0)])
    g.outputs = [g.result_named(em.op("ReduceSum", [y], {"keepdims": 0}), "loss")]
    return tl.Model(g)


def test_an_op_without_a_rule_is_named() -> None:
    with pytest.raises(tl.GradientError, match=r"CumProd.*no gradient rule for CumProd"):
        tl.grad(_one("CumProd"), of="loss", wrt=["x"])


def test_integer_values_have_no_gradient() -> None:
    model = _one("CumSum", "int64")
    with pytest.raises(tl.GradientError, match="output 'loss' is typed i64"):
        tl.grad(model, of="loss", wrt=["x"])


def test_unknown_names_are_listed() -> None:
    model = _one("CumSum")
    with pytest.raises(tl.GradientError, match=r"no output 'nope' \(outputs: loss\)"):
        tl.grad(model, of="nope", wrt=["x"])
    with pytest.raises(tl.GradientError, match=r"no value named 'w'.*inputs and variables: x"):
        tl.grad(model, of="loss", wrt=["w"])


def test_a_path_through_an_integer_value_has_zero_gradient() -> None:
    """ArgMax's output is an integer: the loss does not change with x there (truly zero)."""
    g = Graph("argmax")
    x = g.add_input("x", TensorType("float64", (3,)))
    em = Emitter(g)
    i = em.op("ArgMax", [x], {"axis": 0, "keepdims": 0})
    loss = em.op("Mul", [em.op("Cast", [i], {"to": tl.DType.float64}), em.const(2.0)])
    g.outputs = [g.result_named(loss, "loss")]
    got = tl.grad(tl.Model(g), of="loss", wrt=["x"]).run({"x": np.array([1.0, 3.0, 2.0])})
    np.testing.assert_array_equal(got["x.grad"], np.zeros(3))


def test_a_sequence_lower_sequences_resolves_is_differentiated() -> None:
    g = Graph("seq")
    x = g.add_input("x", TensorType("float64", (3,)))
    em = Emitter(g)
    seq = em.op("SequenceConstruct", [x, em.op("Mul", [x, x])])
    y = em.op("SequenceAt", [seq, em.ints(1)])
    g.outputs = [g.result_named(em.op("ReduceSum", [y], {"keepdims": 0}), "loss")]
    got = tl.grad(tl.Model(g), of="loss", wrt=["x"]).run({"x": np.array([1.0, -2.0, 0.5])})
    np.testing.assert_array_equal(got["x.grad"], [2.0, -4.0, 1.0])


def test_a_sequence_on_the_path_is_refused() -> None:
    g = Graph("seq")
    x = g.add_input("x", TensorType("float64", (3,)))
    k = g.add_input("k", TensorType("int64", ()))
    em = Emitter(g)
    seq = em.op("SequenceConstruct", [x, x])
    y = em.op("SequenceAt", [seq, k])
    g.outputs = [g.result_named(em.op("ReduceSum", [y], {"keepdims": 0}), "loss")]
    with pytest.raises(tl.GradientError, match=r"SequenceConstruct.*through %.*sequence"):
        tl.grad(tl.Model(g), of="loss", wrt=["x"])


def test_a_carried_value_that_grows_is_refused() -> None:
    """TorchScript's greedy decoder concatenates each step's logits to a carried tensor."""
    model = tl.load(DATA / "torch_greedy_decoder.onnx")
    with pytest.raises(tl.GradientError, match=r"carried value %\w+ changes shape"):
        tl.grad(model, of="logits", wrt=["h"])
