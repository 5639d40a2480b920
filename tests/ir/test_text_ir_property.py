"""Property: print -> parse -> print is the identity on random graphs, attributes and data."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from text_ir_checks import SPECIAL_FLOATS, roundtrip

from tensorloop.ir.graph import Graph, Node
from tensorloop.ir.loop import Sliced, Stacked
from tensorloop.ir.opdef import registered_ops
from tensorloop.tensor.dtypes import DType
from tensorloop.tensor.types import OptionalType, SequenceType, TensorType

# -- property: print -> parse -> print is the identity -----------------------------------------
NAMES = st.one_of(st.from_regex(r"[A-Za-z0-9_.]{1,5}", fullmatch=True), st.text(max_size=5))
DIMS = st.one_of(st.integers(0, 5), st.sampled_from(["N", "batch_size", "?", "T1", "7"]))
TENSOR_TYPES = st.builds(
    TensorType, st.sampled_from(list(DType)), st.none() | st.lists(DIMS, max_size=3)
)
TYPES = st.recursive(
    TENSOR_TYPES, lambda t: st.builds(SequenceType, t) | st.builds(OptionalType, t), max_leaves=2
)
FLOATS = st.sampled_from(SPECIAL_FLOATS) | st.floats(-1e4, 1e4)


@st.composite
def arrays(draw: st.DrawFn) -> np.ndarray[Any, Any]:
    dt = draw(st.sampled_from(list(DType)))
    shape = tuple(draw(st.lists(st.integers(0, 3), max_size=3)))
    n = math.prod(shape)
    if dt is DType.bool:
        data = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=np.bool_)
    elif dt is DType.string:
        data = np.empty(n, dtype=object)
        data[:] = draw(st.lists(st.text(max_size=4), min_size=n, max_size=n))
    elif dt.is_float and draw(st.booleans()):
        with np.errstate(all="ignore"):
            floats = draw(st.lists(FLOATS, min_size=n, max_size=n))
            data = np.array(floats, dtype=np.float64).astype(dt.numpy)
    else:  # arbitrary bits: subnormals, NaN payloads, extreme ints
        raw = draw(st.binary(min_size=n * dt.itemsize, max_size=n * dt.itemsize))
        data = np.frombuffer(raw, dtype=dt.numpy).copy()
        if dt.bits < 8:  # a 4- or 2-bit element lives in the low bits of its byte
            data = (data.view(np.uint8) & np.uint8(2**dt.bits - 1)).view(dt.numpy)
    return data.reshape(shape)


LITERALS = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats()
    | st.text(max_size=8)
    | st.sampled_from(list(DType))
    | TYPES
    | arrays()
    | st.builds(Sliced, st.integers(-3, 3), st.booleans())
    | st.builds(Stacked, st.integers(-3, 3), st.booleans()),
    lambda inner: st.lists(inner, max_size=3).map(tuple),
    max_leaves=5,
)


@st.composite
def graphs(draw: st.DrawFn, depth: int = 2) -> Graph:
    g = Graph(draw(NAMES))
    for _ in range(draw(st.integers(0, 3))):
        g.add_input(draw(NAMES.filter(bool)), draw(TYPES))
    for name in draw(st.lists(NAMES, max_size=2, unique=True)):
        g.add_variable(name, draw(arrays()), draw(st.booleans()))
    attr_values = LITERALS | graphs(depth - 1) if depth > 0 else LITERALS
    for _ in range(draw(st.integers(0, 5))):
        values = list(g.values())
        input_strategy = st.none() | st.sampled_from(values) if values else st.none()
        n_out = draw(st.integers(0, 3))
        node = Node(
            draw(st.sampled_from(registered_ops())),
            draw(st.lists(input_strategy, max_size=3)),
            draw(st.lists(TYPES, min_size=n_out, max_size=n_out)),
            draw(st.dictionaries(NAMES, attr_values, max_size=3)),
            name=draw(st.just("") | NAMES),
            output_names=draw(st.lists(NAMES, min_size=n_out, max_size=n_out)),
        )
        g.append(node)
    values = list(g.values())
    g.outputs = draw(st.lists(st.sampled_from(values), max_size=3)) if values else []
    return g


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs())
def test_print_parse_print_is_identity(graph: Graph) -> None:
    roundtrip(graph)
