"""ONNX LSTM, GRU and RNN through tl.load, checked against onnxruntime."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

import tensorloop as tl
from tensorloop.errors import FormatError
from tensorloop.ir.graph import Graph

ort = pytest.importorskip("onnxruntime")

Array = np.ndarray[Any, Any]
_GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
_STATES = {"LSTM": ("Y_h", "Y_c"), "GRU": ("Y_h",), "RNN": ("Y_h",)}
_ELEM = {
    np.dtype(np.float32): TensorProto.FLOAT,
    np.dtype(np.float64): TensorProto.DOUBLE,
    np.dtype(np.float16): TensorProto.FLOAT16,
    np.dtype(ml_dtypes.bfloat16): TensorProto.BFLOAT16,
    np.dtype(np.int32): TensorProto.INT32,
}
_INPUTS = ("X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P")


def _normal(rng: np.random.Generator, *shape: int, scale: float = 1.0) -> Array:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def _layer(
    kind: str,
    *,
    seq: int = 5,
    batch: int = 4,
    width: int = 3,
    hidden: int = 4,
    direction: str = "forward",
    layout: int = 0,
    lengths: list[int] | None = None,
    bias: bool = True,
    initial: bool = True,
    peepholes: bool = False,
    scale: float = 1.0,
    seed: int = 0,
) -> dict[str, Array | None]:
    """The inputs of a ``kind`` node by ONNX name (None: left out), scaled so that gates
    neither saturate nor vanish unless ``scale`` says so."""
    rng = np.random.default_rng(seed)
    dirs = 2 if direction == "bidirectional" else 1
    rows = _GATES[kind] * hidden
    x_shape = (batch, seq, width) if layout else (seq, batch, width)
    h_shape = (batch, dirs, hidden) if layout else (dirs, batch, hidden)
    inputs: dict[str, Array | None] = {
        "X": _normal(rng, *x_shape),
        "W": _normal(rng, dirs, rows, width, scale=scale * width**-0.5),
        "R": _normal(rng, dirs, rows, hidden, scale=scale * hidden**-0.5),
        "B": _normal(rng, dirs, 2 * rows, scale=0.5) if bias else None,
        "sequence_lens": None if lengths is None else np.array(lengths, np.int32),
        "initial_h": _normal(rng, *h_shape) if initial else None,
    }
    if kind == "LSTM":
        inputs["initial_c"] = _normal(rng, *h_shape) if initial else None
        inputs["P"] = _normal(rng, dirs, 3 * hidden, scale=0.5) if peepholes else None
    return inputs


def _model(
    kind: str,
    inputs: dict[str, Array | None],
    attrs: dict[str, Any],
    outputs: list[str] | None = None,
    *,
    opset: int = 22,
    constants: tuple[str, ...] = (),
    dims: dict[str, list[int | str]] | None = None,
) -> onnx.ModelProto:
    """A one-node model: ``inputs`` are graph inputs, or initializers if named in
    ``constants``; ``dims`` overrides an input's declared dims (symbolic ones)."""
    outputs = ["Y", *_STATES[kind]] if outputs is None else outputs
    names = [n if inputs.get(n) is not None else "" for n in _INPUTS[: len(inputs)]]
    while names and not names[-1]:
        names.pop()
    graph_inputs, initializers = [], []
    for n in names:
        a = inputs.get(n)
        if a is None:
            continue
        if n in constants:
            initializers.append(onnx.numpy_helper.from_array(a, n))
        else:
            shape = (dims or {}).get(n, list(a.shape))
            graph_inputs.append(helper.make_tensor_value_info(n, _ELEM[a.dtype], shape))
    node = helper.make_node(kind, names, outputs, name=f"{kind.lower()}_node", **attrs)
    elem = _ELEM[np.dtype(inputs["X"].dtype)]  # type: ignore[union-attr]
    graph = helper.make_graph(
        [node],
        "g",
        graph_inputs,
        [helper.make_tensor_value_info(o, elem, None) for o in outputs if o],
        initializers,
    )
    opsets = [helper.make_opsetid("", opset)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=10 if opset >= 21 else 8)


def _feeds(inputs: dict[str, Array | None], constants: tuple[str, ...] = ()) -> dict[str, Array]:
    return {n: a for n, a in inputs.items() if a is not None and n not in constants}


def _onnxruntime(model: onnx.ModelProto, feeds: dict[str, Array]) -> list[Array]:
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    return list(session.run(None, feeds))


def _tensorloop(model: onnx.ModelProto, feeds: dict[str, Array]) -> tuple[tl.Model, list[Array]]:
    loaded = tl.load(model)
    return loaded, list(loaded.run(feeds).values())


def _close(got: list[Array], want: list[Array], tol: float = 1e-5) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


def _reference(
    kind: str,
    inputs: dict[str, Array | None],
    attrs: dict[str, Any],
    outputs: list[str] | None,
    **options: Any,
) -> list[Array]:
    """onnxruntime's outputs. It runs layout 0 only, so a layout 1 layer runs there as its
    layout 0 twin: X and the initial states transposed in, Y and the final states back out."""
    options.pop("dims", None)
    feeds = _feeds(inputs, options.get("constants", ()))
    if not attrs.get("layout"):
        return _onnxruntime(_model(kind, inputs, attrs, outputs, **options), feeds)
    swap = {"X": (1, 0, 2), "initial_h": (1, 0, 2), "initial_c": (1, 0, 2)}
    twin = {n: a if a is None or n not in swap else a.transpose(swap[n]) for n, a in inputs.items()}
    model = _model(kind, twin, {**attrs, "layout": 0}, outputs, **options)
    names = [o for o in (outputs or ["Y", *_STATES[kind]]) if o]
    back = {"Y": (2, 0, 1, 3), "Y_h": (1, 0, 2), "Y_c": (1, 0, 2)}
    results = _onnxruntime(model, _feeds(twin, options.get("constants", ())))
    return [r.transpose(back[n]) for n, r in zip(names, results, strict=True)]


def _compare(
    kind: str,
    inputs: dict[str, Array | None],
    attrs: dict[str, Any],
    outputs: list[str] | None = None,
    **options: Any,
) -> tl.Model:
    """Run the node with tensorloop and onnxruntime; every output must agree."""
    model = _model(kind, inputs, attrs, outputs, **options)
    loaded, got = _tensorloop(model, _feeds(inputs, options.get("constants", ())))
    _close(got, _reference(kind, inputs, attrs, outputs, **options))
    return loaded


def _ops_in(graph: Graph) -> list[str]:
    return [n.op for n in graph.nodes]


def _loops(model: tl.Model) -> list[Any]:
    return [n for n in model.graph.nodes if n.op == "Loop"]


# -- the attribute matrix --------------------------------------------------------------------------

_KINDS = ["LSTM", "GRU", "RNN"]
_DIRECTIONS = ["forward", "reverse", "bidirectional"]


@pytest.mark.parametrize("layout", [0, 1])
@pytest.mark.parametrize("direction", _DIRECTIONS)
@pytest.mark.parametrize("kind", _KINDS)
def test_rows_of_different_lengths(kind: str, direction: str, layout: int) -> None:
    lengths = [5, 0, 3, 1]  # a full row, an empty one, and two cut short
    inputs = _layer(kind, direction=direction, layout=layout, lengths=lengths, peepholes=True)
    model = _compare(kind, inputs, {"hidden_size": 4, "direction": direction, "layout": layout})
    dirs = 2 if direction == "bidirectional" else 1
    loops = _loops(model)
    assert len(loops) == dirs
    reverses = {"forward": [False], "reverse": [True], "bidirectional": [False, True]}
    assert [n.attrs["stacked"][0].reverse for n in loops] == reverses[direction]
    # The input projection of all steps is one MatMul per direction, on X, outside the loop;
    # batch-first, on X with a unit axis, so every (row, step) is a one-row product.
    projections = [n for n in model.graph.nodes if n.op == "MatMul"]
    assert len(projections) == dirs
    for n in projections:
        source = n.inputs[0] if layout == 0 else n.inputs[0].producer.inputs[0]
        assert source is model.graph.inputs[0]


@pytest.mark.parametrize(
    ("kind", "activations", "alpha", "beta"),
    [
        # alpha and beta go, in order, to the functions that take them (onnxruntime's reading)
        (
            "LSTM",
            ["HardSigmoid", "LeakyRelu", "Softsign", "Sigmoid", "Elu", "Softplus"],
            [0.3, 0.05, 0.8],
            [0.55],
        ),
        (
            "GRU",
            ["HardSigmoid", "ScaledTanh", "Sigmoid", "ThresholdedRelu"],
            [0.25, 0.9, 0.1],
            [0.45, 1.3],
        ),
        ("RNN", ["Affine", "Relu"], [0.5], [0.1]),
        ("RNN", ["Softplus", "LeakyRelu"], [], []),  # LeakyRelu's default alpha, 0.01
        ("GRU", ["Relu", "Tanh", "Tanh", "Elu"], [], []),
    ],
)
@pytest.mark.parametrize("layout", [0, 1])
def test_activations(
    kind: str, activations: list[str], alpha: list[float], beta: list[float], layout: int
) -> None:
    attrs: dict[str, Any] = {
        "hidden_size": 4,
        "direction": "bidirectional",
        "layout": layout,
        "activations": activations,
    }
    if alpha:
        attrs["activation_alpha"] = alpha
    if beta:
        attrs["activation_beta"] = beta
    inputs = _layer(kind, direction="bidirectional", layout=layout, lengths=[2, 5, 0, 4])
    _compare(kind, inputs, attrs)


def test_activation_names_in_any_case() -> None:
    # onnxruntime's RNN wants the spec's spelling; tensorloop reads the names as OpenVINO does.
    inputs = _layer("RNN", direction="bidirectional")
    feeds = _feeds(inputs)
    attrs = {"hidden_size": 4, "direction": "bidirectional"}
    lower = _model("RNN", inputs, {**attrs, "activations": ["relu", "TANH"]})
    spec = _model("RNN", inputs, {**attrs, "activations": ["Relu", "Tanh"]})
    _close(_tensorloop(lower, feeds)[1], _onnxruntime(spec, feeds))


@pytest.mark.parametrize(
    ("activation", "explicit"),
    [
        ("Affine", {"activation_alpha": [1.0], "activation_beta": [0.0]}),
        ("ScaledTanh", {"activation_alpha": [1.0], "activation_beta": [1.0]}),
        ("ThresholdedRelu", {"activation_alpha": [1.0]}),
        ("HardSigmoid", {"activation_alpha": [0.2], "activation_beta": [0.5]}),
        ("Elu", {"activation_alpha": [1.0]}),
        ("LeakyRelu", {"activation_alpha": [0.01]}),
    ],
)
def test_left_out_parameters_are_the_onnx_operators_defaults(
    activation: str, explicit: dict[str, list[float]]
) -> None:
    # The spec: "Default values are the same as of corresponding ONNX operators". onnxruntime
    # uses 0 for Affine's and ScaledTanh's alpha and beta and for ThresholdedRelu's alpha, so
    # the defaults are checked against the same layer with the values spelled out, and that
    # layer against onnxruntime.
    inputs = _layer("RNN", scale=2.0)
    feeds = _feeds(inputs)
    attrs = {"hidden_size": 4, "activations": [activation]}
    _, implicit = _tensorloop(_model("RNN", inputs, attrs), feeds)
    spelled = _model("RNN", inputs, {**attrs, **explicit})
    _close(implicit, _tensorloop(spelled, feeds)[1], 0.0)
    _close(implicit, _onnxruntime(spelled, feeds))


@pytest.mark.parametrize(
    ("kind", "extra"),
    [
        ("LSTM", {}),
        ("LSTM", {"activations": ["Sigmoid", "Relu", "Relu"] * 2}),
        ("GRU", {}),
        ("GRU", {"linear_before_reset": 1}),
        ("RNN", {"activations": ["Relu", "Relu"]}),
    ],
)
def test_clip(kind: str, extra: dict[str, Any]) -> None:
    # Large weights push most gate inputs past the clip; LSTM's h(Ct) sees the unclipped Ct.
    inputs = _layer(kind, direction="bidirectional", lengths=[5, 2, 4, 3], scale=4.0)
    attrs = {"hidden_size": 4, "direction": "bidirectional", "clip": 0.6, **extra}
    _compare(kind, inputs, attrs)
    _compare(kind, _layer(kind, peepholes=True, scale=4.0), {"hidden_size": 4, "clip": 0.5})


@pytest.mark.parametrize("peepholes", [False, True])
@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
def test_lstm_input_forget(direction: str, peepholes: bool) -> None:
    # onnxruntime couples the gates as f = 1 - i; the spec leaves 'couple' to the reader.
    inputs = _layer("LSTM", direction=direction, lengths=[1, 5, 3, 0], peepholes=peepholes)
    _compare("LSTM", inputs, {"hidden_size": 4, "direction": direction, "input_forget": 1})


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("direction", _DIRECTIONS)
def test_gru_linear_before_reset(direction: str, bias: bool) -> None:
    inputs = _layer("GRU", direction=direction, lengths=[3, 5, 1, 2], bias=bias, seed=3)
    if not bias:
        inputs["B"] = None
    attrs = {"hidden_size": 4, "direction": direction, "linear_before_reset": 1}
    _compare("GRU", inputs, attrs)


# -- optional inputs and outputs -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "outputs"),
    [
        ("LSTM", ["Y"]),
        ("LSTM", ["", "Y_h"]),
        ("LSTM", ["", "", "Y_c"]),
        ("LSTM", ["Y", "", "Y_c"]),
        ("GRU", ["", "Y_h"]),
        ("RNN", ["Y"]),
    ],
)
def test_any_subset_of_outputs(kind: str, outputs: list[str]) -> None:
    inputs = _layer(kind, direction="bidirectional", layout=1, lengths=[4, 5, 2, 0])
    attrs = {"hidden_size": 4, "direction": "bidirectional", "layout": 1}
    model = _compare(kind, inputs, attrs, outputs)
    assert len(model.output_names) == sum(bool(o) for o in outputs)
    # Without Y the loops stack nothing: only the states leave them.
    assert all(bool(n.attrs["stacked"]) == bool(outputs[0]) for n in _loops(model))


@pytest.mark.parametrize("kind", _KINDS)
@pytest.mark.parametrize("left_out", [("B",), ("initial_h", "initial_c"), ("B", "sequence_lens")])
def test_optional_inputs_left_out(kind: str, left_out: tuple[str, ...]) -> None:
    inputs = _layer(kind, direction="reverse", lengths=[2, 5, 3, 4], peepholes=True)
    for name in left_out:
        inputs[name] = None
    _compare(kind, inputs, {"hidden_size": 4, "direction": "reverse"})


def test_lstm_peepholes_without_initial_states() -> None:
    inputs = _layer("LSTM", direction="bidirectional", initial=False, peepholes=True)
    _compare("LSTM", inputs, {"hidden_size": 4, "direction": "bidirectional"})


@pytest.mark.parametrize("layout", [0, 1])
def test_dynamic_batch_and_length(layout: int) -> None:
    # Symbolic dims: the mask's steps come from Range, a left-out state from ConstantOfShape.
    seq_dims: list[int | str] = ["N", "T", 3] if layout else ["T", "N", 3]
    dims: dict[str, list[int | str]] = {"X": seq_dims, "sequence_lens": ["N"]}
    attrs = {"hidden_size": 4, "direction": "bidirectional", "layout": layout}
    for seq, lengths in ((5, [5, 0, 3, 1]), (3, [2, 3])):
        inputs = _layer("GRU", direction="bidirectional", layout=layout, lengths=lengths)
        inputs["X"] = _layer("GRU", seq=seq, batch=len(lengths), layout=layout)["X"]
        inputs["initial_h"] = None
        model = _compare("GRU", inputs, attrs, dims=dims)
        assert {"Range", "ConstantOfShape"} <= set(_ops_in(model.graph))


def test_constant_weights_and_full_lengths_need_no_mask() -> None:
    inputs = _layer("LSTM", direction="bidirectional", lengths=[5, 5, 5, 5], peepholes=True)
    constants = ("W", "R", "B", "sequence_lens", "P")
    model = _compare(
        "LSTM", inputs, {"hidden_size": 4, "direction": "bidirectional"}, constants=constants
    )
    assert "Where" not in _ops_in(model.graph)
    assert all("Where" not in _ops_in(n.attrs["body"]) for n in _loops(model))


def test_hidden_size_read_from_r() -> None:
    # The spec makes hidden_size optional; onnxruntime insists on it.
    inputs = _layer("GRU", direction="bidirectional", lengths=[1, 2, 3, 4])
    attrs = {"direction": "bidirectional"}
    _, got = _tensorloop(_model("GRU", inputs, attrs), _feeds(inputs))
    _close(got, _reference("GRU", inputs, {**attrs, "hidden_size": 4}, None))


def test_opset_7_has_no_layout() -> None:
    inputs = _layer("LSTM", direction="bidirectional", lengths=[1, 5, 2, 3])
    _compare("LSTM", inputs, {"hidden_size": 4, "direction": "bidirectional"}, opset=7)


@pytest.mark.parametrize("kind", _KINDS)
def test_empty_sequence_is_all_rows_empty(kind: str) -> None:
    # With no step at all the states are zeros, as for rows of length 0 (onnxruntime's LSTM
    # returns uninitialised memory for seq_length 0, its GRU and RNN crash; the reference is
    # the one-step layer whose rows all have length 0).
    attrs = {"hidden_size": 4, "direction": "bidirectional"}
    inputs = _layer(kind, seq=0, direction="bidirectional")
    _, got = _tensorloop(_model(kind, inputs, attrs), _feeds(inputs))
    assert got[0].shape == (0, 2, 4, 4)
    padded = _layer(kind, seq=1, direction="bidirectional", lengths=[0, 0, 0, 0])
    want = _reference(kind, padded, attrs, None)
    assert not np.any(want[1])
    _close(got[1:], want[1:], 0.0)


@pytest.mark.parametrize(
    ("dt", "tol"), [(np.float64, 1e-5), (np.float16, 1e-2), (ml_dtypes.bfloat16, 3e-2)]
)
@pytest.mark.parametrize("kind", _KINDS)
def test_other_float_types(kind: str, dt: type, tol: float) -> None:
    # onnxruntime runs these layers in f32 only: the reference is the f32 layer.
    inputs = _layer(kind, direction="bidirectional", lengths=[5, 1, 0, 3], peepholes=True)
    attrs = {"hidden_size": 4, "direction": "bidirectional"}
    want = _reference(kind, inputs, attrs, None)
    cast: dict[str, Array | None] = {
        n: a if a is None or n == "sequence_lens" else a.astype(dt) for n, a in inputs.items()
    }
    _, got = _tensorloop(_model(kind, cast, attrs), _feeds(cast))
    assert all(g.dtype == dt for g in got)
    _close([g.astype(np.float32) for g in got], want, tol)


# -- errors ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "attrs", "change", "message"),
    [
        ("LSTM", {"direction": "sideways"}, {}, r"'direction' is 'sideways', expected one of"),
        ("GRU", {"layout": 2}, {}, r"'layout' is 2, expected 0 or 1"),
        ("RNN", {"activations": ["Swish"]}, {}, r"activation 'Swish' is not one of"),
        ("LSTM", {"activations": ["Sigmoid", "Tanh"]}, {}, r"lists 2 functions, expected 3"),
        (
            "GRU",
            {"direction": "bidirectional", "activations": ["Sigmoid", "Tanh"]},
            {},
            r"lists 2 functions, expected 4 \(2 per direction, 2 directions\)",
        ),
        ("RNN", {"clip": 0.0}, {}, r"'clip' is 0.0, expected a positive number"),
        ("GRU", {"hidden_size": 0}, {}, r"'hidden_size' is 0, expected a positive integer"),
        ("GRU", {"hidden_size": 5}, {}, r"#1 \(W\) is f32\[1,12,3\], expected \[1,15,3\]"),
        ("LSTM", {}, {"P": np.zeros((1, 4), np.float32)}, r"#7 \(P\) is f32\[1,4\], expected"),
        ("RNN", {}, {"sequence_lens": np.ones(4, np.float32)}, r"#4 \(sequence_lens\) is f32"),
        ("RNN", {}, {"initial_h": np.zeros((1, 4, 4))}, r"#5 \(initial_h\) is f64\[1,4,4\]"),
        ("LSTM", {"layout": 1}, {}, r"#5 \(initial_h\) is f32\[1,4,4\], expected \[5,1,4\]"),
    ],
)
def test_bad_nodes_are_named(
    kind: str, attrs: dict[str, Any], change: dict[str, Array], message: str
) -> None:
    inputs = {**_layer(kind), **change}
    attrs = {"hidden_size": 4, **attrs}
    with pytest.raises(FormatError, match=message) as info:
        tl.load(_model(kind, inputs, attrs))
    assert f"{kind.lower()}_node" in str(info.value)


# -- random layers ---------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    kind=st.sampled_from(_KINDS),
    direction=st.sampled_from(_DIRECTIONS),
    layout=st.integers(0, 1),
    seq=st.integers(1, 5),
    batch=st.integers(1, 4),
    width=st.integers(1, 4),
    hidden=st.integers(1, 4),
    options=st.fixed_dictionaries(
        {"bias": st.booleans(), "initial": st.booleans(), "peepholes": st.booleans()}
    ),
    data=st.data(),
)
def test_random_layers_match_onnxruntime(
    kind: str,
    direction: str,
    layout: int,
    seq: int,
    batch: int,
    width: int,
    hidden: int,
    options: dict[str, bool],
    data: st.DataObject,
) -> None:
    lengths = data.draw(st.none() | st.lists(st.integers(0, seq), min_size=batch, max_size=batch))
    lbr = kind == "GRU" and data.draw(st.booleans())
    inputs = _layer(
        kind,
        seq=seq,
        batch=batch,
        width=width,
        hidden=hidden,
        direction=direction,
        layout=layout,
        lengths=lengths,
        seed=data.draw(st.integers(0, 2**16)),
        **options,
    )
    attrs = {"hidden_size": hidden, "direction": direction, "layout": layout}
    if lbr:
        attrs["linear_before_reset"] = 1
    _compare(kind, inputs, attrs)


@pytest.mark.handoff("a mask of unknown rank: the compiled plan leaves its loop to the reference")
def test_inputs_of_unknown_rank() -> None:
    inputs = _layer("LSTM", direction="bidirectional", lengths=[2, 5, 0, 4], initial=False)
    dims: dict[str, Any] = {n: None for n in ("X", "W", "R", "B", "sequence_lens")}
    _compare("LSTM", inputs, {"hidden_size": 4, "direction": "bidirectional"}, dims=dims)
