"""Random loop networks run by tensorloop agree with the lazy-sequence model of the spec."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import event, given, settings
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


@SETTINGS
@given(recipes(nested=True))
def test_random_nested_loops_follow_the_lazy_sequence_semantics(recipe: Recipe) -> None:
    check(recipe)
