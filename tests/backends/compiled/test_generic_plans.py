"""The compiled backend's plans with open dims: after ``GENERIC_AFTER`` signatures of one kind
that differ in some dims, a new one gets a plan with those dims left open (a tracing JIT's
automatic dynamic shapes), shared by every later size, and every run of it equals the
reference bit for bit (the suite's backend law checks each run too)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorloop as tl
from batch_models import WIDTH, bilstm, tagger
from tensorloop.backends.compiled import GENERIC_AFTER
from tensorloop.ir.parser import parse_graph
from tensorloop.passes.specialize import GenericShapesError, specialize
from tensorloop.tensor.types import TensorType


def plans_of(model: tl.Model) -> tuple[int, list[Any]]:
    executable: Any = model.prepared("compiled")
    return len(executable._plans), list(executable._generic.values())


@settings(max_examples=10, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 30), min_size=GENERIC_AFTER + 1, max_size=9, unique=True),
    seed=st.integers(0, 2**16),
)
def test_ever_new_lengths_share_one_plan_and_stay_exact(lengths: list[int], seed: int) -> None:
    model = tl.Model(tagger().graph, backend="compiled")
    rng = np.random.default_rng(seed)
    for n in lengths:
        x = rng.standard_normal((2, n, WIDTH)).astype(np.float32)
        got = model.run({"x": x})
        want = model.run({"x": x}, backend="reference")
        for name in want:
            assert np.array_equal(got[name], want[name]), (n, name)
    per_signature, generic = plans_of(model)
    assert per_signature == GENERIC_AFTER - 1  # the first sizes planned as they came
    assert len(generic) == 1 and generic[0] is not None  # one plan for every later length


def test_a_length_varying_per_batch_size_opens_the_length_only() -> None:
    """Lengths vary for each of two batch sizes: each batch size gets a plan with the length
    open (its batch static, so its state and body are typed statically); a signature that
    differs from every other in both dims opens both."""
    model = tl.Model(bilstm().graph, backend="compiled")
    rng = np.random.default_rng(3)
    shapes = [(3, 1), (5, 1), (4, 1), (9, 1), (3, 2), (5, 2), (6, 2), (11, 2), (12, 3)]
    for t, b in shapes:
        x = rng.standard_normal((t, b, WIDTH)).astype(np.float32)
        got = model.run({"X": x})
        want = model.run({"X": x}, backend="reference")
        for name in want:
            assert np.array_equal(got[name], want[name]), (t, b, name)
    executable: Any = model.prepared("compiled")
    opened = [(k[1], k[2]) for k, p in executable._generic.items() if p is not None]
    assert opened == [
        (((0, frozenset({0})),), ((1, WIDTH),)),  # batch 1, any length
        (((0, frozenset({0})),), ((2, WIDTH),)),  # batch 2, any length
        (((0, frozenset({0, 1})),), ((WIDTH,),)),  # (12, 3): its nearest differs in both
    ]


def test_a_static_claim_the_open_dims_cannot_confirm_plans_per_signature() -> None:
    """A text IR model whose middle value is declared ``f32[4]`` though it is as long as the
    input: no plan with the length open (it could not check the claim), so each size plans on
    its own, and the sizes that break the claim fail as on the reference (the suite's backend
    law compares each run's error too)."""
    text = """graph @claim(%x: f32[n]) {
  %y = Add(%x, %x) : f32[4]
  %z = Mul(%y, %x) : f32[?]
  return %z
}"""
    model = tl.Model(parse_graph(text), backend="compiled")
    with pytest.raises(GenericShapesError, match="the open sizes leave it f32\\[len0_0\\]"):
        specialize(model.graph, [np.ones(4, np.float32)], generic={0: [0]})
    for n in (4, 5, 6, 4, 7):
        x = np.arange(n, dtype=np.float32)
        if n == 4:
            assert np.array_equal(model.run({"x": x})["z"], 2 * x * x)
        else:
            with pytest.raises(tl.TensorloopError, match="f32\\[4\\]"):
                model.run({"x": x})
    assert [g is None for g in plans_of(model)[1]] == [True]


def test_the_shape_of_an_open_input_folds_where_its_dims_are_static() -> None:
    """The batch of a [batch, len] input is a constant in a plan with the length open: what
    shapes an RNN's zero state from the batch folds, and the body is typed statically."""
    graph = tagger().graph
    x = np.zeros((2, 7, WIDTH), np.float32)
    typed = specialize(graph, [x], generic={0: [1]})
    assert typed.inputs[0].type == TensorType("float32", (2, "len0_1", WIDTH))
    nodes = [n for _, n in typed.walk()]
    assert not [n for n in nodes if n.op in ("Expand", "ConstantOfShape")]  # the state folded
    assert all(not n.outputs[0].uses for n in nodes if n.op == "Shape")  # dead, left to DCE
    loop = next(n for n in nodes if n.op == "Loop")
    body = loop.subgraphs["body"]
    assert [str(p.type) for p in body.inputs] == ["i64[]", "f32[2,6]", "f32[2,5]"]
    assert {v.name: str(v.type) for v in typed.outputs} == {
        "tags": "f32[2,?,3]",
        "last": "f32[2,6]",
    }
