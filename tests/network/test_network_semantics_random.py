"""Random loop networks run by tensorloop agree with the lazy-sequence model of the spec."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import event, example, given, settings
from network_semantics_model import InvalidRunError, LazySequences, Recipe, build, recipes

from tensorloop.errors import ExecutionError, NetworkError

SETTINGS = settings(max_examples=60, deadline=None)


# --------------------------------------------------------------------------------------------
# the properties
# --------------------------------------------------------------------------------------------
def check(recipe: Recipe) -> None:
    net, feeds = build(recipe)
    lazy = LazySequences(feeds)
    try:
        expected = {
            net.get_output(i).name: lazy.value(net.get_output(i), {})
            for i in range(net.num_outputs)
        }
    except InvalidRunError as exc:
        event(f"invalid run: {str(exc).split(':')[0]}")
        with pytest.raises((NetworkError, ExecutionError)):
            net.to_model().run(feeds)
        return
    event(f"the first loop runs {lazy.trip_count(net.loops[0], {})} times")
    got = net.to_model().run(feeds)
    assert sorted(got) == sorted(expected)
    for name, want in expected.items():
        assert got[name].dtype == want.dtype, name
        np.testing.assert_allclose(got[name], want, rtol=1e-5, atol=1e-6, err_msg=name)


@SETTINGS
@given(recipes(nested=False))
def test_random_loops_follow_the_lazy_sequence_semantics(recipe: Recipe) -> None:
    check(recipe)


# The outer WHILE limit reads a nested loop's output that does not depend on the outer iterator
# (the nested loop reads it elsewhere): running to the iterator's end is valid.
NESTED_OUTPUT_NOT_READING_THE_ITERATOR = Recipe(
    steps=[
        ("loop",),
        ("input", "x0", "float32", (4, 1)),
        ("iter", 0, 0, 0, False),
        ("const", "int32", (), (0,)),
        ("rec", 0, 2),
        ("const", "int32", (), (1,)),
        ("ew", "SUM", 3, 4),
        ("next", 3, 5),
        ("input", "v6", "float32", (1,)),
        ("rec", 0, 6),
        ("loop",),
        ("const", "int32", (), (0,)),
        ("rec", 1, 8),
        ("const", "int32", (), (1,)),
        ("ew", "SUM", 9, 10),
        ("next", 9, 11),
        ("const", "float32", (1,), (1.0,)),
        ("rec", 1, 12),
        ("const", "float32", (1,), (0.0,)),
        ("rec", 1, 14),
        ("const", "float32", (1,), (0.0,)),
        ("rec", 1, 16),
        ("ew", "SUM", 13, 1),
        ("act", "TANH", 18),
        ("next", 13, 19),
        ("next", 15, 7),
        ("next", 17, 1),
        ("const", "int32", (), (1,)),
        ("limit", 1, "COUNT", 20),
        ("out", 1, "LAST_VALUE", 13, 0, None),
        ("out", 1, "LAST_VALUE", 15, 0, None),
        ("out", 1, "LAST_VALUE", 9, 0, None),
        ("unary", "NEG", 1),
        ("unary", "NEG", 1),
        ("unary", "NEG", 1),
        ("unary", "NEG", 1),
        ("next", 7, 21),
        ("const", "int32", (), (4,)),
        ("ew", "LESS", 3, 28),
        ("reduce", 22),
        ("const", "float32", (), (-0.5,)),
        ("ew", "GREATER", 30, 31),
        ("ew", "AND", 29, 32),
        ("limit", 0, "WHILE", 33),
        ("out", 0, "LAST_VALUE", 7, 0, None),
        ("out", 0, "LAST_VALUE", 3, 0, None),
        ("mark", 34),
        ("mark", 35),
    ],
    ints={},
    seed=0,
)


@SETTINGS
@given(recipes(nested=True))
@example(NESTED_OUTPUT_NOT_READING_THE_ITERATOR)
def test_random_nested_loops_follow_the_lazy_sequence_semantics(recipe: Recipe) -> None:
    check(recipe)
