"""``outputs.trace[name]`` as ``tools.trace.Trace``: entries keyed by loop path (the same on every
backend: the suite-wide law compares them), stacked per loop, filtered, summarised, written."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import tensorloop as tl
from tensorloop.errors import InputError
from tensorloop.reference.runtime import loop_label
from tensorloop.tools.trace import Iterations, Trace, save, summarize

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture(autouse=True)
def _fresh_builder() -> None:
    tl.reset()


def _nested() -> tuple[tl.Model, dict[str, np.ndarray]]:
    """An outer scan over rows and an inner scan over each row's elements."""
    xs = tl.placeholder("float64", (2, 3), name="xs")

    def outer(c: tl.Tensor, row: tl.Tensor) -> tuple[tl.Tensor, tl.Tensor]:
        def inner(c2: tl.Tensor, v: tl.Tensor) -> tuple[tl.Tensor, tl.Tensor]:
            y = tl.name(v * 10.0 + c, "y")
            return c2 + y, y

        c2, _ = tl.scan(inner, tl.constant(np.float64(0)), row)
        return tl.name(c + c2, "c_next"), c2

    c, _ = tl.scan(outer, tl.constant(np.float64(0)), xs)
    return tl.Model({"c": c}), {"xs": np.arange(6.0).reshape(2, 3)}


def test_entries_carry_the_labels_of_their_loops() -> None:
    model, feeds = _nested()
    loops = [n for _, n in model.graph.walk() if n.op == "Loop"]
    outer, inner = (loop_label(n) for n in loops)
    res = model.run(feeds, trace=["y", "c_next", "c"])
    assert res.trace["y"].loops == [(outer, inner)]
    assert [e.iteration for e in res.trace["y"]] == [(i, j) for i in range(2) for j in range(3)]
    assert res.trace["c_next"].loops == [(outer,)]
    assert res.trace["c"].loops == [()]  # the loop's result, outside every loop
    assert res.trace["y"][0].loop_path == f"{outer} > {inner}"
    stacked = res.trace["y"].stacked(inner)  # the innermost label names the path too
    assert stacked.loop == (outer, inner) and stacked.values.shape == (6,)
    assert stacked.iterations.tolist() == [[i, j] for i in range(2) for j in range(3)]
    want = [0.0, 10.0, 20.0, 30 + 30.0, 40 + 30.0, 50 + 30.0]
    np.testing.assert_allclose(stacked.values, want)
    assert res.trace["y"].stacked(f"{outer} > {inner}").loop == (outer, inner)


def test_the_bidirectional_lstm_keeps_its_directions_apart() -> None:
    model = tl.load(DATA / "torch_lstm_gru_torchscript.onnx")
    x = np.random.default_rng(0).standard_normal((2, 5, 8)).astype(np.float32)
    h = model.run({"x": x}, trace=["h"]).trace["h"]
    assert h.loops == [
        ("/lstm/LSTM.forward",),
        ("/lstm/LSTM.reverse",),
        ("/lstm/LSTM_1.forward",),
        ("/lstm/LSTM_1.reverse",),
        ("/gru/GRU",),
    ]
    with pytest.raises(InputError, match="recorded in 5 loops"):
        h.stacked()
    assert h.stacked("/lstm/LSTM.reverse").values.shape == (5, 2, 16)
    assert len(h.select("/lstm/LSTM.forward", iterations="1:4")) == 3


def test_loops_sharing_name_and_body_name_are_counted() -> None:
    x = tl.placeholder("float32", (2,), name="x")
    a = tl.fori_loop(0, 2, lambda i, c: tl.name(c + 1.0, "v"), x)
    b = tl.fori_loop(0, 3, lambda i, c: tl.name(c * 2.0, "w"), a)
    model = tl.Model({"b": b})
    loops = [n for n in model.graph.nodes if n.op == "Loop"]
    for n in loops:
        n.name = "same"
        n.attrs["body"].name = "body"
    assert [loop_label(n) for n in loops] == ["same#0", "same#1"]
    res = model.run({"x": np.ones(2, np.float32)}, trace=["v", "w"])
    assert [e.loop for e in res.trace["v"]] == [("same#0",)] * 2
    assert [e.loop for e in res.trace["w"]] == [("same#1",)] * 3


def test_select_every_and_iterations_are_a_slice() -> None:
    model, feeds = _nested()
    y = model.run(feeds, trace=["y"]).trace["y"]
    assert [e.iteration for e in y.select(iterations="1:")] == [(0, 1), (0, 2), (1, 1), (1, 2)]
    assert [e.iteration for e in y.select(every=2)] == [(0, 0), (0, 2), (1, 0), (1, 2)]
    assert [e.iteration for e in y.select(iterations=Iterations(2))] == [(0, 2), (1, 2)]
    assert [e.iteration for e in y.select(iterations="1")] == [(0, 1), (1, 1)]
    with pytest.raises(InputError, match="no loop 'nope'"):
        y.select("nope")
    with pytest.raises(InputError, match="START:STOP"):
        Iterations.parse("x")


def test_summary_rows_hold_norm_min_max_mean() -> None:
    entries = [np.array([3.0, -4.0]), np.array([1.0, 1.0]), np.array([], np.float32)]
    trace = Trace("t", [tl.TraceEntry((i,), v, ("L",)) for i, v in enumerate(entries)])
    rows = trace.summary()
    assert [(r.norm, r.min, r.max, r.mean) for r in rows[:2]] == [
        (5.0, -4.0, 3.0, -0.5),
        (pytest.approx(np.sqrt(2.0)), 1.0, 1.0, 1.0),
    ]
    assert np.isnan(rows[2].norm) and rows[2].type == "float32[0]"
    assert [r.step for r in rows] == [0, 1, 2]
    with pytest.raises(InputError, match="do not stack"):
        trace.stacked()
    assert summarize({"t": trace}) == rows


def test_values_that_do_not_stack_are_saved_one_by_one(tmp_path: Path) -> None:
    trace = Trace("t", [tl.TraceEntry((i,), np.zeros(i + 1), ("L",)) for i in range(3)])
    save({"t": trace}, tmp_path / "t.npz")
    with np.load(tmp_path / "t.npz") as npz:
        assert sorted(npz.files) == ["t@L#0", "t@L#1", "t@L#2", "t@L:iteration"]
        assert npz["t@L#2"].shape == (3,)
    with pytest.raises(InputError, match=r"use \.npz, \.csv"):
        save({"t": trace}, tmp_path / "t.txt")
