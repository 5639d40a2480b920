"""OpenVINO's LSTM/GRU/RNN cells and sequences through tl.load, checked against OpenVINO's CPU."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tensorloop as tl
from tensorloop.errors import FormatError
from tensorloop.ir.graph import Graph

ov = pytest.importorskip("openvino")
ops = pytest.importorskip("openvino.opset13")

from openvino_layer_checks import record_layer_types, written_runs_alike  # noqa: E402

# The CPU plugin may compute in bf16 on hardware that has it; the comparison needs f32.
_F32 = {"INFERENCE_PRECISION_HINT": "f32"}
_GATES = {"lstm": 4, "gru": 3, "rnn": 1}

Array = np.ndarray[Any, Any]


def _normal(rng: np.random.Generator, *shape: int, scale: float = 1.0) -> Array:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def _weights(
    rng: np.random.Generator, kind: str, hidden: int, width: int, lbr: bool, dirs: int | None
) -> tuple[Array, Array, Array]:
    """W, R, B scaled so gates neither saturate nor vanish (dirs None: a cell's 2-D weights)."""
    lead = () if dirs is None else (dirs,)
    rows = _GATES[kind] * hidden
    w = _normal(rng, *lead, rows, width, scale=width**-0.5)
    r = _normal(rng, *lead, rows, hidden, scale=hidden**-0.5)
    b = _normal(rng, *lead, rows + (hidden if lbr else 0), scale=0.5)
    return w, r, b


def _save(tmp_path: Path, outputs: Any, params: list[Any]) -> tuple[Any, Path]:
    model = ov.Model(outputs, params)
    path = tmp_path / "rnn.xml"
    ov.save_model(model, str(path), compress_to_fp16=False)
    return model, path


def _run_openvino(model: Any, feeds: dict[str, Array]) -> list[Array]:
    compiled = ov.Core().compile_model(model, "CPU", _F32)
    result = compiled(feeds)
    return [result[o] for o in compiled.outputs]


def _assert_close(model: tl.Model, feeds: dict[str, Array], want: list[Array]) -> None:
    got = list(model.run(feeds).values())
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def _compare(tmp_path: Path, outputs: Any, params: list[Any], feeds: dict[str, Array]) -> tl.Model:
    """Save, load with tensorloop, run both, and compare every output in order."""
    reference, path = _save(tmp_path, outputs, params)
    model = tl.load(path)
    _assert_close(model, feeds, _run_openvino(reference, feeds))
    record_layer_types(path, "compared")
    (tmp_path / "written").mkdir()
    written_runs_alike(model, feeds, tmp_path / "written", rtol=1e-5, atol=1e-5)
    record_layer_types(path, "written")
    return model


def _ops_in(graph: Graph) -> list[str]:
    return [n.op for n in graph.nodes]


def _parameters(**shapes: list[int]) -> list[Any]:
    return [ops.parameter(shape, np.float32, name=name) for name, shape in shapes.items()]


# -- cells -----------------------------------------------------------------------------------------


def test_lstm_cell_of_the_spec_size(tmp_path: Path) -> None:
    # One step of the LSTMCell that a TensorIterator over a [1, 25, 512] input would run.
    rng = np.random.default_rng(1)
    x, h, c = _parameters(x=[1, 512], h=[1, 256], c=[1, 256])
    w, r, b = _weights(rng, "lstm", 256, 512, False, None)
    cell = ops.lstm_cell(x, h, c, w, r, b, 256)
    feeds = {"x": _normal(rng, 1, 512), "h": _normal(rng, 1, 256), "c": _normal(rng, 1, 256)}
    model = _compare(tmp_path, cell.outputs(), [x, h, c], feeds)
    assert "Loop" not in _ops_in(model.graph)
    # The weights are used in place: no rearranged copy joins them in the graph.
    held = sum(n.attrs["value"].size for n in model.graph.nodes if n.op == "Constant")
    assert held == w.size + r.size + b.size


@pytest.mark.parametrize(
    ("activations", "clip"),
    [
        (None, 0.0),
        (["tanh", "relu", "sigmoid"], 0.0),
        (None, 0.5),
        (["relu", "sigmoid", "tanh"], 1.2),
    ],
)
def test_lstm_cell_activations_and_clip(
    tmp_path: Path, activations: list[str] | None, clip: float
) -> None:
    rng = np.random.default_rng(2)
    x, h, c = _parameters(x=[3, 7], h=[3, 5], c=[3, 5])
    w, r, b = _weights(rng, "lstm", 5, 7, False, None)
    cell = ops.lstm_cell(x, h, c, w * 3, r * 3, b, 5, activations=activations, clip=clip)
    feeds = {"x": _normal(rng, 3, 7), "h": _normal(rng, 3, 5), "c": _normal(rng, 3, 5)}
    _compare(tmp_path, cell.outputs(), [x, h, c], feeds)


def test_lstm_cell_with_weights_fed_at_run_time(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    shapes = {"x": [2, 4], "h": [2, 3], "c": [2, 3], "w": [12, 4], "r": [12, 3], "b": [12]}
    params = _parameters(**shapes)
    cell = ops.lstm_cell(*params, 3)
    feeds = {n: _normal(rng, *s) for n, s in shapes.items()}
    _compare(tmp_path, cell.outputs(), params, feeds)


def test_lstm_cell_v1_with_zero_peepholes(tmp_path: Path) -> None:
    opset1 = pytest.importorskip("openvino.opset1")
    rng = np.random.default_rng(4)
    x, h, c = _parameters(x=[2, 4], h=[2, 3], c=[2, 3])
    w, r, b = _weights(rng, "lstm", 3, 4, False, None)
    cell = opset1.lstm_cell(x, h, c, w, r, b, 3)
    feeds = {"x": _normal(rng, 2, 4), "h": _normal(rng, 2, 3), "c": _normal(rng, 2, 3)}
    _compare(tmp_path, cell.outputs(), [x, h, c], feeds)


def test_lstm_cell_without_bias_input(tmp_path: Path) -> None:
    # The spec makes B optional. OpenVINO's reader insists on it, so the reference is the same
    # cell with zero biases and the file under test has B's port and edge cut out.
    rng = np.random.default_rng(15)
    x, h, c = _parameters(x=[2, 4], h=[2, 3], c=[2, 3])
    w, r, _ = _weights(rng, "lstm", 3, 4, False, None)
    cell = ops.lstm_cell(x, h, c, w, r, np.zeros(12, np.float32), 3)
    reference, path = _save(tmp_path, cell.outputs(), [x, h, c])
    text = path.read_text()
    layer = re.search(r'<layer id="(\d+)"[^>]*type="LSTMCell"', text)
    assert layer is not None
    text = re.sub(rf'\s*<edge [^>]*to-layer="{layer[1]}" to-port="5" />', "", text)
    rest = re.sub(r'<port id="5".*?</port>', "", text[layer.end() :], count=1, flags=re.S)
    text = text[: layer.end()] + rest
    path.write_text(text)
    feeds = {"x": _normal(rng, 2, 4), "h": _normal(rng, 2, 3), "c": _normal(rng, 2, 3)}
    _assert_close(tl.load(path), feeds, _run_openvino(reference, feeds))


@pytest.mark.parametrize(
    ("lbr", "activations", "clip"),
    [
        (False, None, 0.0),
        (True, None, 0.0),
        (False, ["tanh", "relu"], 0.8),
        (True, ["relu", "sigmoid"], 0.8),
    ],
)
def test_gru_cell(tmp_path: Path, lbr: bool, activations: list[str] | None, clip: float) -> None:
    rng = np.random.default_rng(5)
    x, h = _parameters(x=[3, 6], h=[3, 4])
    w, r, b = _weights(rng, "gru", 4, 6, lbr, None)
    cell = ops.gru_cell(
        x, h, w * 2, r * 2, b, 4, activations=activations, clip=clip, linear_before_reset=lbr
    )
    _compare(tmp_path, cell.outputs(), [x, h], {"x": _normal(rng, 3, 6), "h": _normal(rng, 3, 4)})


@pytest.mark.parametrize(
    ("activation", "clip"), [("tanh", 0.0), ("relu", 0.0), ("sigmoid", 0.5), ("relu", 0.9)]
)
def test_rnn_cell(tmp_path: Path, activation: str, clip: float) -> None:
    rng = np.random.default_rng(6)
    x, h = _parameters(x=[4, 5], h=[4, 3])
    w, r, b = _weights(rng, "rnn", 3, 5, False, None)
    cell = ops.rnn_cell(x, h, w * 2, r * 2, b, 3, [activation], [], [], clip=clip)
    _compare(tmp_path, cell.outputs(), [x, h], {"x": _normal(rng, 4, 5), "h": _normal(rng, 4, 3)})


# -- sequences -------------------------------------------------------------------------------------

_BATCH, _STEPS, _WIDTH, _HIDDEN = 5, 6, 4, 3


def _sequence(
    kind: str,
    direction: str,
    lengths: Any,
    *,
    lbr: bool = False,
    dynamic: bool = False,
    seed: int = 7,
    **attrs: Any,
) -> tuple[list[Any], list[Any], dict[str, Array]]:
    """A ``kind`` sequence layer over [batch, seq, width]: its outputs, Parameters and feeds.

    ``lengths`` is a constant array, or a list to feed through a Parameter.
    """
    rng = np.random.default_rng(seed)
    dirs = 2 if direction == "bidirectional" else 1
    x_shape, h_shape = [_BATCH, _STEPS, _WIDTH], [_BATCH, dirs, _HIDDEN]
    feeds = {"x": _normal(rng, *x_shape), "h0": _normal(rng, *h_shape)}
    if dynamic:
        x_shape, h_shape = [-1, -1, _WIDTH], [-1, dirs, _HIDDEN]
    params = _parameters(x=x_shape, h0=h_shape)
    if kind == "lstm":
        params += _parameters(c0=h_shape)
        feeds["c0"] = _normal(rng, *feeds["h0"].shape)
    if isinstance(lengths, list):
        seq_lengths = ops.parameter([-1 if dynamic else _BATCH], np.int32, name="lengths")
        feeds["lengths"] = np.array(lengths, np.int32)
    else:
        seq_lengths = ops.constant(lengths)
    w, r, b = _weights(rng, kind, _HIDDEN, _WIDTH, lbr, dirs)
    args = (*params, seq_lengths, w * 2, r * 2, b, _HIDDEN, direction)
    if kind == "lstm":
        node = ops.lstm_sequence(*args, **attrs)
    elif kind == "gru":
        node = ops.gru_sequence(*args, linear_before_reset=lbr, **attrs)
    else:
        node = ops.rnn_sequence(*args, **attrs)
    if isinstance(lengths, list):
        params.append(seq_lengths)
    return node.outputs(), params, feeds


def _random_lengths(seed: int) -> list[int]:
    """Random lengths holding an empty row and a full one."""
    lengths = np.random.default_rng(seed).integers(0, _STEPS + 1, _BATCH)
    lengths[:2] = [0, _STEPS]
    return [int(n) for n in lengths]


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize(
    ("kind", "lbr"), [("lstm", False), ("gru", False), ("gru", True), ("rnn", False)]
)
def test_sequence_with_lengths(tmp_path: Path, kind: str, lbr: bool, direction: str) -> None:
    outputs, params, feeds = _sequence(kind, direction, _random_lengths(8), lbr=lbr)
    model = _compare(tmp_path, outputs, params, feeds)
    dirs = 2 if direction == "bidirectional" else 1
    loops = [n for n in model.graph.nodes if n.op == "Loop"]
    assert len(loops) == dirs
    reverses = {"forward": [False], "reverse": [True], "bidirectional": [False, True]}
    assert [n.attrs["stacked"][0].reverse for n in loops] == reverses[direction]
    assert all(
        s.reverse == reverse
        for n, reverse in zip(loops, reverses[direction], strict=True)
        for s in n.attrs["sliced"]
    )
    # The input projection of all steps is one MatMul per direction, outside the loop.
    projections = [n for n in model.graph.nodes if n.op == "MatMul"]
    assert len(projections) == dirs
    # Batch-first (as OpenVINO's sequences are), on X with a unit axis: one-row products.
    assert all(n.inputs[0].producer.inputs[0] is model.graph.inputs[0] for n in projections)
    y = model.run(feeds)[model.output_names[0]]
    for row, n in enumerate(feeds["lengths"]):
        assert not np.any(y[row, :, n:])  # padding steps yield zeros


def test_sequence_empty_rows_report_a_zero_state(tmp_path: Path) -> None:
    # OpenVINO's own behaviour, which the spec leaves open: no valid step, no state carried out.
    outputs, params, feeds = _sequence("lstm", "bidirectional", [0, 0, 2, 6, 0])
    model = _compare(tmp_path, outputs, params, feeds)
    _, ho, co = model.run(feeds).values()
    assert not np.any(ho[[0, 1, 4]]) and not np.any(co[[0, 1, 4]])


@pytest.mark.parametrize(
    ("kind", "direction", "attrs"),
    [
        ("lstm", "bidirectional", {"clip": 0.9, "activations": ["tanh", "sigmoid", "relu"]}),
        ("gru", "reverse", {"clip": 0.7, "activations": ["relu", "tanh"]}),
        ("rnn", "bidirectional", {"activations": ["relu"]}),
    ],
)
def test_sequence_activations_and_clip(
    tmp_path: Path, kind: str, direction: str, attrs: dict[str, Any]
) -> None:
    outputs, params, feeds = _sequence(kind, direction, _random_lengths(9), seed=10, **attrs)
    _compare(tmp_path, outputs, params, feeds)


def test_sequence_of_constant_full_lengths_needs_no_mask(tmp_path: Path) -> None:
    lengths = np.full(_BATCH, _STEPS, np.int64)
    outputs, params, feeds = _sequence("gru", "bidirectional", lengths, lbr=True)
    model = _compare(tmp_path, outputs, params, feeds)
    assert "Where" not in _ops_in(model.graph)
    body = next(n for n in model.graph.nodes if n.op == "Loop").attrs["body"]
    assert "Where" not in _ops_in(body)


def test_sequence_of_dynamic_batch_and_length(tmp_path: Path) -> None:
    lengths = _random_lengths(11)
    outputs, params, feeds = _sequence("lstm", "reverse", lengths, dynamic=True)
    _, path = _save(tmp_path, outputs, params)
    model = tl.load(path)
    assert "Range" in _ops_in(model.graph)
    # OpenVINO 2026.4's CPU plugin ignores sequence_lengths when shapes are dynamic, against the
    # spec, so the reference is the same layer (same seed: same weights) with static shapes.
    static_outputs, static_params, _ = _sequence("lstm", "reverse", lengths)
    _assert_close(model, feeds, _run_openvino(ov.Model(static_outputs, static_params), feeds))


def test_sequence_with_weights_fed_at_run_time(tmp_path: Path) -> None:
    rng = np.random.default_rng(12)
    shapes = {
        "x": [_BATCH, _STEPS, _WIDTH],
        "h0": [_BATCH, 2, _HIDDEN],
        "lengths": [_BATCH],
        "w": [2, 3 * _HIDDEN, _WIDTH],
        "r": [2, 3 * _HIDDEN, _HIDDEN],
        "b": [2, 4 * _HIDDEN],
    }
    params = [
        ops.parameter(s, np.int32 if n == "lengths" else np.float32, name=n)
        for n, s in shapes.items()
    ]
    node = ops.gru_sequence(*params, _HIDDEN, "bidirectional", linear_before_reset=True)
    feeds = {n: _normal(rng, *s) for n, s in shapes.items()}
    feeds["lengths"] = np.array(_random_lengths(13), np.int32)
    _compare(tmp_path, node.outputs(), params, feeds)


# -- errors ----------------------------------------------------------------------------------------


def _edited(tmp_path: Path, layer: str, attribute: str, value: str) -> Path:
    """A saved ``layer`` sequence whose ``attribute`` is edited to ``value``."""
    outputs, params, _ = _sequence(layer, "forward", _random_lengths(14))
    _, path = _save(tmp_path, outputs, params)
    text = path.read_text()
    text, count = re.subn(rf'(<data [^>]*\b{attribute}=")[^"]*"', rf'\g<1>{value}"', text)
    assert count == 1
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("layer", "attribute", "value", "message"),
    [
        ("lstm", "activations", "sigmoid,softsign,tanh", r"'softsign' is not one of"),
        ("gru", "activations", "sigmoid", r"expected 2 functions"),
        ("rnn", "clip", "-1", r"attribute 'clip' is -1.0, expected a positive number"),
        ("lstm", "direction", "sideways", r"'direction' is 'sideways', expected one of"),
        ("gru", "hidden_size", "4", r"#1 \(initial H\) is f32\[5,1,3\], expected \[5,1,4\]"),
    ],
)
def test_bad_attributes_name_the_layer(
    tmp_path: Path, layer: str, attribute: str, value: str, message: str
) -> None:
    path = _edited(tmp_path, layer, attribute, value)
    with pytest.raises(FormatError, match=message) as info:
        tl.load(path)
    assert str(path) in str(info.value) and "Sequence" in str(info.value)
