"""OpenVINO round trips: recurrent cells in loop bodies, and import -> export -> import."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

ov = pytest.importorskip("openvino")
ops = pytest.importorskip("openvino.opset13")

import tensorloop as tl  # noqa: E402

F32 = {"INFERENCE_PRECISION_HINT": "f32"}  # the CPU plugin may otherwise compute in bf16
RNG = np.random.default_rng(1)


@pytest.fixture(autouse=True)
def _fresh_builder() -> None:
    tl.reset()


def _f32(*shape: int, scale: float = 1.0) -> np.ndarray:
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def _ov_outputs(path: Path, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    compiled = ov.Core().compile_model(str(path), "CPU", F32)
    result = compiled(feeds)
    return [np.asarray(result[o]) for o in compiled.outputs]


def _cell_ti(kind: str, steps: int, features: int, hidden: int) -> Any:
    """The spec's example shape: a TensorIterator slicing [1, steps, features] on axis 1, with a
    recurrent cell in its body and its hidden state concatenated along axis 1."""
    gates = {"lstm": 4, "gru": 3, "rnn": 1}[kind]
    X = ops.parameter([1, steps, features], np.float32, name="X")
    H0 = ops.parameter([1, hidden], np.float32, name="H0")
    xi = ops.parameter([1, 1, features], np.float32, name="xi")
    hi = ops.parameter([1, hidden], np.float32, name="hi")
    W = ops.constant(_f32(gates * hidden, features, scale=0.05))
    R = ops.constant(_f32(gates * hidden, hidden, scale=0.05))
    B = ops.constant(_f32(gates * hidden, scale=0.1))
    x2 = ops.reshape(xi, ops.constant(np.array([1, features], np.int64)), False)
    params, inits = [xi, hi], [H0]
    if kind == "lstm":
        C0 = ops.parameter([1, hidden], np.float32, name="C0")
        ci = ops.parameter([1, hidden], np.float32, name="ci")
        cell = ops.lstm_cell(x2, hi, ci, W, R, B, hidden)
        h_new, c_new = cell.output(0), cell.output(1)
        params.append(ci)
        inits.append(C0)
    elif kind == "gru":
        h_new, c_new = ops.gru_cell(x2, hi, W, R, B, hidden).output(0), None
    else:
        h_new, c_new = ops.rnn_cell(x2, hi, W, R, B, hidden, ["tanh"], [], []).output(0), None
    r_h = ops.result(h_new)
    r_y = ops.result(ops.reshape(h_new, ops.constant(np.array([1, 1, hidden], np.int64)), False))
    results = [r_h, r_y] + ([ops.result(c_new)] if c_new is not None else [])
    body = ov.Model(results, params, "body")
    ti = ops.tensor_iterator()
    ti.set_body(body)
    ti.set_sliced_input(xi, X.output(0), 0, 1, 1, -1, 1)
    ti.set_merged_input(hi, H0.output(0), r_h.output(0))
    if kind == "lstm":
        ti.set_merged_input(params[2], inits[1].output(0), results[2].output(0))
    outs = [
        ti.get_iter_value(r_h.output(0), -1),
        ti.get_concatenated_slices(r_y.output(0), 0, 1, 1, -1, 1),
    ]
    return ov.Model(outs, [X, *inits], f"{kind}_ti")


@pytest.mark.parametrize(
    ("kind", "steps", "features", "hidden"),
    [("lstm", 25, 512, 256), ("gru", 7, 16, 8), ("rnn", 7, 16, 8)],
)
def test_cells_in_tensor_iterator_match_openvino(
    kind: str, steps: int, features: int, hidden: int, tmp_path: Path
) -> None:
    path = tmp_path / "m.xml"
    ov.save_model(_cell_ti(kind, steps, features, hidden), str(path), compress_to_fp16=False)
    feeds = {"X": _f32(1, steps, features), "H0": _f32(1, hidden, scale=0.1)}
    if kind == "lstm":
        feeds["C0"] = _f32(1, hidden, scale=0.1)
    model = tl.load(path)
    ours = list(model.run(feeds).values())
    theirs = _ov_outputs(path, feeds)
    assert [o.shape for o in ours] == [(1, hidden), (1, steps, hidden)]
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    # import -> export -> import: the same results from tensorloop's own IR, in both runtimes
    again = tmp_path / "again.xml"
    tl.save(model, again)
    for a, b in zip(ours, tl.load(again).run(feeds).values(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    for a, b in zip(ours, _ov_outputs(again, feeds), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def _builder_models() -> dict[str, tuple[tl.Model, dict[str, np.ndarray]]]:
    models: dict[str, tuple[tl.Model, dict[str, np.ndarray]]] = {}
    xs = tl.placeholder("float32", (5, 3), name="xs")
    W = tl.constant(_f32(3, 3, scale=0.5))
    h, ys = tl.scan(
        lambda c, x: (tl.tanh(c @ W + x), c * 2.0),
        tl.constant(np.zeros(3, np.float32)),
        xs,
        reverse=True,
    )
    models["scan"] = (tl.Model({"h": h, "ys": ys}), {"xs": _f32(5, 3)})
    tl.reset()
    v = tl.placeholder("float32", (4,), name="v")
    n, out = tl.while_loop(
        lambda s: tl.reduce_sum(s[1]) < 50.0,
        lambda s: (s[0] + 1, s[1] * 1.5 + 1.0),
        (tl.constant(np.int64(0)), v),
    )
    models["while"] = (tl.Model({"n": n, "out": out}), {"v": np.ones(4, np.float32)})
    tl.reset()
    grid = tl.placeholder("float32", (3, 4), name="grid")

    def row_step(acc: tl.Tensor, row: tl.Tensor) -> tuple[tl.Tensor, tl.Tensor]:
        total, _ = tl.scan(lambda t, e: (t + e, t), tl.constant(np.float32(0)), row)
        return acc + total * total, total

    acc, totals = tl.scan(row_step, tl.constant(np.float32(0)), grid)
    models["nested"] = (tl.Model({"acc": acc, "totals": totals}), {"grid": _f32(3, 4)})
    return models


@pytest.mark.parametrize("name", ["scan", "while", "nested"])
def test_export_import_is_identity_on_results(name: str, tmp_path: Path) -> None:
    model, feeds = _builder_models()[name]
    path = tmp_path / "m.xml"
    tl.save(model, path)
    expected = model.run(feeds)
    loaded = tl.load(path)
    assert loaded.input_names == model.input_names
    assert loaded.output_names == model.output_names
    for key, value in loaded.run(feeds).items():
        np.testing.assert_allclose(value, expected[key], rtol=1e-6, atol=1e-6)
    for value, key in zip(_ov_outputs(path, feeds), model.output_names, strict=True):
        np.testing.assert_allclose(value, expected[key], rtol=1e-5, atol=1e-5)
