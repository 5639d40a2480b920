"""The verifier's errors for malformed Loops: carried types, body arity, conditions, axes."""

from __future__ import annotations

import numpy as np
import pytest
from loop_ir_builders import F32, I64, T, body_graph, const, loop, op, true_

import tensorloop as tl
from tensorloop import Graph, Sliced
from tensorloop.errors import GraphError, VerificationError
from tensorloop.ir.verify import verify


@pytest.fixture(autouse=True)
def _fresh_builder() -> None:
    tl.reset()


# --------------------------------------------------------------------------------------------
# verifier errors
# --------------------------------------------------------------------------------------------


def _rnn_like(yield_type_len: int, name: str = "rnn") -> Graph:
    g = Graph("main")
    h0 = g.add_input("h0", T(F32, 3))
    b, _params = body_graph("body", ("i", T(I64)), ("h", T(F32, 3)))
    nxt = const(b, np.ones(yield_type_len), F32)
    b.set_outputs([true_(b), nxt])
    g.set_outputs(loop(g, b, trip=const(g, 2, I64), carried=[h0], name=name))
    return g


def test_verify_carried_type_mismatch() -> None:
    verify(_rnn_like(3))  # the well-formed variant passes
    with pytest.raises(
        VerificationError,
        match=r"carried #0 of loop 'rnn': body yields f32\[4\], expected f32\[3\]",
    ):
        verify(_rnn_like(4))
    with pytest.raises(VerificationError, match=r"carried #0 of loop 'rnn'"):
        tl.Model(_rnn_like(4))


def test_verify_carried_initial_value_mismatch() -> None:
    g = Graph("main")
    h0 = g.add_input("h0", T(F32, 5))
    b, (_, h) = body_graph("body", ("i", T(I64)), ("h", T(F32, 3)))
    b.set_outputs([true_(b), h])
    g.set_outputs(loop(g, b, carried=[h0], trip=const(g, 1, I64), name="rnn"))
    with pytest.raises(
        VerificationError, match=r"carried #0 of loop 'rnn': initial value is f32\[5\]"
    ):
        verify(g)


def _arity_body() -> Graph:
    b, (_i,) = body_graph("body", ("i", T(I64)))  # missing the carried parameter
    b.set_outputs([true_(b)])
    return b


def test_verify_wrong_body_arity() -> None:
    g = Graph("main")
    x = g.add_input("x", T(F32, 3))
    body = _arity_body()
    # bypass inference to reach the verifier with the malformed node
    node = g.add_node(
        "Loop",
        [None, None, x],
        {"body": body, "num_carried": 1},
        name="L",
        output_types=[T(F32, 3)],
    )
    g.set_outputs(node.outputs)
    with pytest.raises(
        VerificationError,
        match=r"Loop 'L'.*body has 1 parameters and 1 results, expected 2 "
        r"\(iteration, 1 carried, 0 sliced, 0 invariant\) and 2",
    ):
        verify(g)


def test_add_node_with_wrong_body_arity_raises_graph_error() -> None:
    g = Graph("main")
    x = g.add_input("x", T(F32, 3))
    with pytest.raises(GraphError, match="Loop 'L'"):
        g.add_node("Loop", [None, None, x], {"body": _arity_body(), "num_carried": 1}, name="L")


def test_verify_non_bool_conditions() -> None:
    g = Graph("main")
    b, (_i, c) = body_graph("body", ("i", T(I64)), ("c", T(F32)))
    b.set_outputs([c, c])  # continue_condition is f32
    g.set_outputs(loop(g, b, cond=const(g, 1.0, F32), carried=[const(g, 1.0, F32)], name="L"))
    with pytest.raises(VerificationError) as info:
        verify(g)
    msg = str(info.value)
    assert "body result 'continue_condition': expected bool[], got f32[]" in msg
    assert "initial_condition: expected bool[], got f32[]" in msg


def test_verify_non_integer_trip_count() -> None:
    g = Graph("main")
    b, (_i,) = body_graph("body", ("i", T(I64)))
    b.set_outputs([true_(b)])
    g.set_outputs(loop(g, b, trip=g.add_input("n", T(F32)), name="L"))
    with pytest.raises(VerificationError, match=r"max_trip_count: expected an integer scalar"):
        verify(g)


def test_verify_iteration_parameter_type() -> None:
    g = Graph("main")
    b, (_i,) = body_graph("body", ("i", T("int32")))
    b.set_outputs([true_(b)])
    g.set_outputs(loop(g, b, trip=const(g, 1, I64), name="L"))
    with pytest.raises(
        VerificationError, match=r"parameter 'iteration': expected i64\[\], got i32"
    ):
        verify(g)


@pytest.mark.parametrize("axis", [2, -3])
def test_verify_sliced_axis_out_of_range(axis: int) -> None:
    g = Graph("main")
    x = g.add_input("x", T(F32, 2, 3))
    b, (_i, _s) = body_graph("body", ("i", T(I64)), ("s", T(F32, 3)))
    b.set_outputs([true_(b)])
    node = g.add_node(
        "Loop",
        [None, None, x],
        {"body": b, "sliced": (Sliced(axis),)},
        name="L",
        output_types=[],
    )
    g.set_outputs(node.outputs)
    with pytest.raises(
        VerificationError, match=rf"sliced #0 of loop 'L': axis {axis} is out of range"
    ):
        verify(g)
    # Built the ordinary way, the error surfaces as a GraphError at once or at verification.
    g2 = Graph("main")
    x2 = g2.add_input("x", T(F32, 2, 3))
    with pytest.raises(GraphError, match="out of range"):
        g2.set_outputs(loop(g2, b, sources=[x2], sliced=[Sliced(axis)], name="L"))
        verify(g2)


def test_verify_sliced_parameter_type() -> None:
    g = Graph("main")
    x = g.add_input("x", T(F32, 2, 3))
    b, (_i, _s) = body_graph("body", ("i", T(I64)), ("s", T(F32, 2)))  # slice on axis 0 is f32[3]
    b.set_outputs([true_(b)])
    g.set_outputs(loop(g, b, sources=[x], sliced=[Sliced(0)], name="L"))
    with pytest.raises(VerificationError, match=r"sliced #0 of loop 'L'.*expected f32\[3\]"):
        verify(g)


def test_verify_body_must_be_closed() -> None:
    g = Graph("main")
    outer = g.add_input("outer", T(F32))
    b, (_i, c) = body_graph("body", ("i", T(I64)), ("c", T(F32)))
    b.set_outputs([true_(b), op(b, "Add", c, outer)])  # uses an outer value directly
    g.set_outputs(loop(g, b, trip=const(g, 1, I64), carried=[outer], name="L"))
    with pytest.raises(VerificationError, match="bodies are closed"):
        verify(g)
