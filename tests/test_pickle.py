"""A Model pickles as its bytes (text IR, its large arrays beside it in binary, its backend and
limits): pickle -> unpickle is the identity on the graph and on every run, for built, loaded
and random loop models; the array references parse back only with their arrays."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings

import tensorloop as tl
from batch_models import bilstm, tagger
from loop_models import LimitReachedError, LoopSpec, build, loop_specs, make_inputs, reference
from tensorloop.errors import ParseError
from tensorloop.ir.parser import parse_graph
from tensorloop.ir.printer import ARRAY_REFERENCE_ELEMENTS, print_graph

REAL = Path(__file__).parent.parent / "benchmarks" / "real" / "corpus"


def round_trip(model: tl.Model) -> tl.Model:
    copy = pickle.loads(pickle.dumps(model, protocol=5))
    assert isinstance(copy, tl.Model)
    assert print_graph(copy.graph) == print_graph(model.graph)
    assert copy.limits == model.limits and copy.backend.name == model.backend.name
    return copy


@settings(max_examples=25, deadline=None)
@given(spec=loop_specs())
def test_random_loop_models_pickle_to_themselves(spec: LoopSpec) -> None:
    limit = {} if spec.max_iterations is None else {"max_iterations": spec.max_iterations}
    model = tl.Model(build(spec), **limit)
    copy = round_trip(model)
    inputs = make_inputs(spec)
    try:
        reference(spec, inputs)
    except LimitReachedError:
        return  # a loop that runs into its limit: the graphs are equal, nothing to run
    want, got = model.run(inputs), copy.run(inputs)
    for name in want:
        assert np.array_equal(want[name], got[name])


def test_built_and_loaded_models_keep_backend_limits_and_answers() -> None:
    limits = tl.Limits(timeout=2.5, max_iterations=77)
    for model in (tagger(), bilstm()):
        model = tl.Model(model.graph, backend="reference", limits=limits)
        copy = round_trip(model)
        x = np.random.default_rng(0).standard_normal((2, 4, 5)).astype(np.float32)
        feeds = {model.input_names[0]: x if model.graph.name == "tagger" else x.swapaxes(0, 1)}
        want, got = model.run(feeds), copy.run(feeds)
        for name in want:
            assert np.array_equal(want[name], got[name])


def test_weights_travel_as_binary_arrays_not_text() -> None:
    model = bilstm()
    arrays: list[np.ndarray] = []
    text = print_graph(model.graph, arrays=arrays)
    assert arrays and all(a.size > ARRAY_REFERENCE_ELEMENTS for a in arrays)
    assert "array(0)" in text and len(text) < len(print_graph(model.graph)) / 3
    assert print_graph(parse_graph(text, arrays)) == print_graph(model.graph)


def test_variables_and_nan_bits_survive() -> None:
    tl.reset()
    x = tl.placeholder("float32", (20,), name="x")
    weights = np.arange(20, dtype=np.float32)
    weights[3] = np.float32("nan")
    bits = weights.view(np.uint32)
    bits[4] = 0x7FC00001  # a NaN with a payload
    w = tl.variable(weights, name="w")
    tl.assign(w, w + x)
    model = tl.Model({"y": w * 2.0, "z": x + tl.constant(weights)}, name="stateful")
    copy = round_trip(model)
    copy_bits = copy.graph.variables["w"].initial.view(np.uint32)
    assert np.array_equal(copy_bits, bits)
    ones = np.ones(20, np.float32)
    model.run({"x": ones})  # the original's session moves on; the copy starts afresh
    first, second = copy.run({"x": ones}), copy.run({"x": ones})
    assert np.array_equal(first["y"].view(np.uint32), (weights * 2).view(np.uint32))
    assert np.array_equal(second["y"].view(np.uint32), ((weights + 1) * 2).view(np.uint32))


def test_array_references_need_their_arrays() -> None:
    arrays: list[np.ndarray] = []
    text = print_graph(bilstm().graph, arrays=arrays)
    with pytest.raises(ParseError, match="a reference to an array given beside the text"):
        parse_graph(text)
    with pytest.raises(ParseError, match="an array index below"):
        parse_graph(text, arrays[:1])
    swapped = [arrays[1], arrays[0], *arrays[2:]]
    with pytest.raises(ParseError, match="an array of shape"):
        parse_graph(text, swapped)
    with pytest.raises(ParseError, match="expected a f32 array, found float64"):
        parse_graph(text, [a.astype(np.float64) for a in arrays])


def test_a_model_file_as_bytes_loads_as_the_file() -> None:
    path = REAL / "torch" / "bigru_ctc_tagger_ts" / "model.onnx"
    if not path.is_file():
        pytest.skip(f"{path} is not in this checkout (benchmarks/real/make_corpus.py makes it)")
    from_bytes, from_path = tl.load(path.read_bytes()), tl.load(path)
    assert print_graph(from_bytes.graph) == print_graph(from_path.graph)
    text = Path(__file__).parent.parent / "examples" / "rnn.tl"
    assert print_graph(tl.load(text.read_bytes()).graph) == print_graph(tl.load(text).graph)
    with pytest.raises(tl.FormatError, match="<model bytes>: not a readable ONNX model"):
        tl.load(b"\x08\x07garbage")
    with pytest.raises(tl.FormatError, match="<model bytes>: empty"):
        tl.load(b"")
