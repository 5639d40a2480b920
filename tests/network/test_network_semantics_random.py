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


# The outer WHILE limit reads the last value of a nested loop whose body reads the outer
# iterator; on the iteration after the last slice the nested loop runs no trips, so the limit's
# X_n reads the recurrence's initial value and not the slice past the end: valid. (The nested
# loop's COUNT is the outer counter, and its WHILE limit is false at once.)
NESTED_LOOP_WITH_NO_TRIPS_ON_THE_LAST_LIMIT = Recipe(
    steps=[
        ("loop",),
        ("input", "x0", "float32", (3, 1)),
        ("iter", 0, 0, 0, False),
        ("input", "x2", "float32", (3, 1)),
        ("iter", 0, 2, 0, False),
        ("const", "int32", (), (0,)),
        ("rec", 0, 4),
        ("const", "int32", (), (1,)),
        ("ew", "SUM", 5, 6),
        ("next", 5, 7),
        ("input", "v8", "float32", (1,)),
        ("rec", 0, 8),
        ("input", "v10", "float32", (1,)),
        ("rec", 0, 10),
        ("const", "float32", (1,), (0.0,)),
        ("rec", 0, 12),
        ("loop",),
        ("const", "int32", (), (0,)),
        ("rec", 1, 14),
        ("const", "int32", (), (1,)),
        ("ew", "SUM", 15, 16),
        ("next", 15, 17),
        ("rec", 1, 1),
        ("rec", 1, 9),
        ("rec", 1, 1),
        ("ew", "SUM", 18, 1),
        ("act", "TANH", 21),
        ("next", 18, 22),
        ("next", 19, 1),
        ("next", 20, 1),
        ("limit", 1, "COUNT", 5),
        ("const", "float32", (), (0.0,)),
        ("rec", 1, 23),
        ("reduce", 18),
        ("act", "TANH", 25),
        ("const", "float32", (), (0.5,)),
        ("ew", "PROD", 26, 27),
        ("const", "float32", (), (1.0,)),
        ("ew", "SUM", 28, 29),
        ("ew", "SUM", 24, 30),
        ("next", 24, 31),
        ("const", "float32", (), (-0.25,)),
        ("ew", "LESS", 24, 32),
        ("limit", 1, "WHILE", 33),
        ("out", 1, "LAST_VALUE", 18, 0, None),
        ("out", 1, "LAST_VALUE", 19, 0, None),
        ("out", 1, "LAST_VALUE", 15, 0, None),
        ("out", 1, "LAST_VALUE", 24, 0, None),
        ("unary", "NEG", 1),
        ("next", 9, 34),
        ("next", 11, 1),
        ("next", 13, 1),
        ("const", "int32", (), (3,)),
        ("ew", "LESS", 5, 39),
        ("reduce", 35),
        ("const", "float32", (), (-0.5,)),
        ("ew", "GREATER", 41, 42),
        ("ew", "AND", 40, 43),
        ("limit", 0, "WHILE", 44),
        ("out", 0, "LAST_VALUE", 9, 0, None),
        ("out", 0, "LAST_VALUE", 5, 0, None),
        ("mark", 45),
        ("mark", 46),
    ],
    ints={},
    seed=0,
)

# As above with a nested loop that has only a WHILE limit (false at once).
NESTED_WHILE_LOOP_WITH_NO_TRIPS_ON_THE_LAST_LIMIT = Recipe(
    steps=[
        ("loop",),
        ("input", "x0", "float32", (1, 4)),
        ("iter", 0, 0, 0, False),
        ("input", "x2", "float32", (1, 4)),
        ("iter", 0, 2, 0, False),
        ("const", "int32", (), (0,)),
        ("rec", 0, 4),
        ("const", "int32", (), (1,)),
        ("ew", "SUM", 5, 6),
        ("next", 5, 7),
        ("const", "float32", (4,), (0.0, 0.0, 0.0, 0.0)),
        ("rec", 0, 8),
        ("unary", "NEG", 1),
        ("unary", "NEG", 1),
        ("unary", "NEG", 1),
        ("loop",),
        ("input", "x13", "float32", (1, 4)),
        ("iter", 1, 13, 0, False),
        ("const", "int32", (), (0,)),
        ("rec", 1, 15),
        ("const", "int32", (), (1,)),
        ("ew", "SUM", 16, 17),
        ("next", 16, 18),
        ("const", "float32", (4,), (0.0, 0.0, 0.0, 0.0)),
        ("rec", 1, 19),
        ("ew", "SUM", 14, 1),
        ("act", "TANH", 21),
        ("next", 20, 22),
        ("const", "float32", (), (0.0,)),
        ("rec", 1, 23),
        ("reduce", 14),
        ("act", "TANH", 25),
        ("const", "float32", (), (0.5,)),
        ("ew", "PROD", 26, 27),
        ("const", "float32", (), (1.0,)),
        ("ew", "SUM", 28, 29),
        ("ew", "SUM", 24, 30),
        ("next", 24, 31),
        ("const", "float32", (), (-0.25,)),
        ("ew", "LESS", 24, 32),
        ("limit", 1, "WHILE", 33),
        ("out", 1, "LAST_VALUE", 20, 0, None),
        ("out", 1, "LAST_VALUE", 16, 0, None),
        ("out", 1, "LAST_VALUE", 24, 0, None),
        ("unary", "NEG", 1),
        ("unary", "NEG", 1),
        ("next", 9, 34),
        ("const", "int32", (), (1,)),
        ("ew", "LESS", 5, 39),
        ("reduce", 34),
        ("const", "float32", (), (-0.5,)),
        ("ew", "GREATER", 41, 42),
        ("ew", "AND", 40, 43),
        ("limit", 0, "WHILE", 44),
        ("out", 0, "LAST_VALUE", 9, 0, None),
        ("out", 0, "LAST_VALUE", 5, 0, None),
        ("mark", 45),
        ("mark", 46),
    ],
    ints={},
    seed=0,
)

# The outer loop has a COUNT limit of 2 and a WHILE limit: X_2 is not needed, as the count stops
# the loop. The nested loop runs the outer counter's trips over one slice, so X_2 would make it
# overrun: valid all the same.
NESTED_OVERRUN_ONLY_AFTER_THE_COUNT = Recipe(
    steps=[
        ("loop",),
        ("input", "x0", "float32", (2, 4)),
        ("iter", 0, 0, 0, False),
        ("const", "int32", (), (0,)),
        ("rec", 0, 2),
        ("const", "int32", (), (1,)),
        ("ew", "SUM", 3, 4),
        ("next", 3, 5),
        ("const", "float32", (4,), (0.0, 0.0, 0.0, 0.0)),
        ("rec", 0, 6),
        ("loop",),
        ("input", "x8", "float32", (1, 4)),
        ("iter", 1, 8, 0, False),
        ("const", "int32", (), (0,)),
        ("rec", 1, 10),
        ("const", "int32", (), (1,)),
        ("ew", "SUM", 11, 12),
        ("next", 11, 13),
        ("const", "float32", (4,), (0.0, 0.0, 0.0, 0.0)),
        ("rec", 1, 14),
        ("const", "float32", (4,), (0.0, 0.0, 0.0, 0.0)),
        ("rec", 1, 16),
        ("ew", "SUM", 9, 1),
        ("act", "TANH", 18),
        ("next", 15, 19),
        ("next", 17, 1),
        ("limit", 1, "COUNT", 3),
        ("reduce", 9),
        ("const", "float32", (), (-2.0,)),
        ("ew", "GREATER", 20, 21),
        ("limit", 1, "WHILE", 22),
        ("out", 1, "LAST_VALUE", 15, 0, None),
        ("out", 1, "LAST_VALUE", 11, 0, None),
        ("next", 7, 23),
        ("const", "int32", (), (2,)),
        ("limit", 0, "COUNT", 25),
        ("reduce", 23),
        ("const", "float32", (), (-2.0,)),
        ("ew", "GREATER", 26, 27),
        ("limit", 0, "WHILE", 28),
        ("out", 0, "LAST_VALUE", 7, 0, None),
        ("out", 0, "LAST_VALUE", 3, 0, None),
        ("mark", 29),
        ("mark", 30),
    ],
    ints={},
    seed=0,
)


@SETTINGS
@given(recipes(nested=True))
@example(NESTED_OUTPUT_NOT_READING_THE_ITERATOR)
@example(NESTED_LOOP_WITH_NO_TRIPS_ON_THE_LAST_LIMIT)
@example(NESTED_WHILE_LOOP_WITH_NO_TRIPS_ON_THE_LAST_LIMIT)
@example(NESTED_OVERRUN_ONLY_AFTER_THE_COUNT)
def test_random_nested_loops_follow_the_lazy_sequence_semantics(recipe: Recipe) -> None:
    check(recipe)
