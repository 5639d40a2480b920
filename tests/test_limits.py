"""Limits: huge shapes refused before allocating, runaway loops stopped by the deadline on every
backend, stacked outputs bounded, deep nesting refused, and per-run limits kept per run."""

from __future__ import annotations

import re
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tensorloop as tl
from tensorloop import Graph, Stacked, TensorType, Value
from tensorloop.backends.base import get_backend
from tensorloop.errors import GraphError, ResourceLimitError, RunTimeoutError, TensorloopError
from tensorloop.limits import DEFAULT_MAX_NODES, node_count

_ORIGINAL_RUN = tl.Session.run  # before the suite-wide hook reruns each run on other backends


def _backends() -> list[str]:
    names = ["reference", "compiled", "auto"]
    try:
        get_backend("jax")
    except TensorloopError:
        return names
    return [*names, "jax"]


BACKENDS = _backends()
ON_EVERY_BACKEND = [
    pytest.param(
        name,
        marks=pytest.mark.handoff(
            "jax leaves shapes known at run time and timed loops to compiled"
        ),
    )
    if name == "jax"
    else name
    for name in BACKENDS
]
"""BACKENDS, where the jax backend's placements on the compiled backend are the point."""
TERA = [1 << 20, 1 << 20]  # 2**40 elements


@pytest.fixture
def direct(monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs time one backend, not the suite's rerun of each run on the others."""
    monkeypatch.setattr(tl.Session, "run", _ORIGINAL_RUN)


def _node(g: Graph, op: str, *inputs: Value | None, **attrs: Any) -> Value:
    return g.add_node(op, list(inputs), attrs).output


def _const(g: Graph, value: Any, dtype: str) -> Value:
    return _node(g, "Constant", value=np.asarray(value, dtype=dtype))


def _sized(op: str) -> tuple[Graph, dict[str, Any], dict[str, Any]]:
    """A graph whose output size comes from data: (graph, huge feed, small feed)."""
    g = Graph(op.lower())
    i64 = "int64"
    if op == "ConstantOfShape":
        s = g.add_input("s", TensorType(i64, [2]))
        out = _node(g, op, s, value=np.zeros(1, np.float32))
        huge, small = {"s": TERA}, {"s": [2, 3]}
    elif op == "Expand":
        x, s = g.add_input("x", TensorType("float32", [1])), g.add_input("s", TensorType(i64, [2]))
        out = _node(g, op, x, s)
        huge, small = {"x": [1.0], "s": TERA}, {"x": [1.0], "s": [2, 3]}
    elif op == "Tile":
        x = g.add_input("x", TensorType("float32", [1, 1]))
        r = g.add_input("r", TensorType(i64, [2]))
        out = _node(g, op, x, r)
        huge, small = {"x": [[1.0]], "r": TERA}, {"x": [[1.0]], "r": [2, 3]}
    elif op == "Range":
        n = g.add_input("n", TensorType(i64, []))
        out = _node(g, op, _const(g, 0, i64), n, _const(g, 1, i64))
        huge, small = {"n": 1 << 42}, {"n": 5}
    else:  # an Expand to a shape computed from the input's own shape: static once specialised
        x = g.add_input("x", TensorType("float32", ["n"]))
        shape = _node(g, "Concat", _node(g, "Shape", x), _node(g, "Shape", x), axis=0)
        out = _node(g, "Expand", x, shape)
        huge, small = {"x": np.ones(1 << 20, np.float32)}, {"x": np.ones(3, np.float32)}
    g.set_outputs([out])
    return g, huge, small


@pytest.mark.parametrize("backend", ON_EVERY_BACKEND)
@pytest.mark.parametrize("op", ["ConstantOfShape", "Expand", "Tile", "Range", "SquareExpand"])
def test_terabyte_targets_are_refused_before_allocating(op: str, backend: str) -> None:
    graph, huge, small = _sized(op)
    model = tl.Model(graph, backend=backend)
    started = time.perf_counter()
    with pytest.raises(ResourceLimitError, match=r"TiB.*more than the limit of 4 GiB"):
        model.run(huge)
    assert time.perf_counter() - started < 30  # jax compiles first; nothing is allocated
    out = model.run(small)[model.output_names[0]]
    assert out.size in (5, 6, 9)


@pytest.mark.parametrize("backend", ON_EVERY_BACKEND)
def test_range_lengths_are_counted_exactly(backend: str) -> None:
    # ceil((limit - start) / delta) in Python ints: float arithmetic rounds 2**64 - 1 to 2**64
    g = Graph("range")
    start, limit, delta = (g.add_input(k, TensorType("int64", [])) for k in ("s", "l", "d"))
    g.set_outputs([_node(g, "Range", start, limit, delta)])
    model = tl.Model(g, backend=backend)
    lo, hi = -(1 << 63), (1 << 63) - 1
    for s, stop, d, count in [
        (lo, hi, 1, (1 << 64) - 1),
        (hi, lo, -1, (1 << 64) - 1),
        (lo, hi, 3, ((1 << 64) - 1) // 3),
        (lo, hi, 2, 1 << 63),
        (lo + 1, hi, 1 << 62, 4),
    ]:
        feed = {"s": np.int64(s), "l": np.int64(stop), "d": np.int64(d)}
        if count * 8 <= 4 << 30:
            assert model.run(feed)[model.output_names[0]].size == count
            continue
        with pytest.raises(ResourceLimitError, match=re.escape(f"a tensor int64[{count}] ")):
            model.run(feed)


def test_limits_are_configurable_per_model() -> None:
    graph, _, small = _sized("ConstantOfShape")
    model = tl.Model(graph, limits=tl.Limits(max_tensor_bytes=16))
    with pytest.raises(ResourceLimitError, match=r"float32\[2, 3\] would take 24 bytes.*16"):
        model.run(small)
    model = tl.Model(graph, limits=tl.Limits(max_tensor_bytes=24))
    assert model.run(small)[model.output_names[0]].shape == (2, 3)


def test_defaults_are_safe_and_documented() -> None:
    limits = tl.Limits()
    assert limits.max_tensor_bytes == 4 << 30
    assert limits.max_stacked_bytes == 8 << 30
    assert (limits.max_rank, limits.max_nesting_depth) == (64, 64)
    assert limits.max_iterations == tl.DEFAULT_MAX_ITERATIONS
    assert limits.max_nodes == DEFAULT_MAX_NODES == 1_000_000
    assert limits.max_total_iterations == 10_000_000
    assert limits.max_run_bytes == 16 << 30
    assert limits.timeout is None
    doc = (Path(__file__).parents[1] / "docs" / "security.md").read_text(encoding="utf-8")
    section = doc.split("## Limits", 1)[1]
    for name, default in [
        ("max_tensor_bytes", "4 GiB"),
        ("max_stacked_bytes", "8 GiB"),
        ("max_rank", "64"),
        ("max_nesting_depth", "64"),
        ("max_nodes", "1 000 000"),
        ("max_iterations", "1 000 000"),
        ("max_total_iterations", "10 000 000"),
        ("max_run_bytes", "16 GiB"),
        ("timeout", "`None` (the CLI: 600 s)"),
    ]:
        assert re.search(rf"\| `{name}` \| {re.escape(default)} \|", section), name


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_rank": 0},
        {"max_tensor_bytes": -1},
        {"timeout": 0},
        {"max_nesting_depth": 1.5},
        {"max_nodes": -1},
        {"max_nodes": True},
    ],
)
def test_bad_limits_are_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(GraphError, match="Limits"):
        tl.Limits(**kwargs)


def test_declared_shapes_are_checked_at_load() -> None:
    g = Graph("declared")
    x = g.add_input("x", TensorType("float32", TERA))
    g.set_outputs([_node(g, "Relu", x)])
    with pytest.raises(ResourceLimitError, match=r"model 'declared'.*parameter %x.*4 TiB"):
        tl.Model(g)
    g = Graph("ranked")
    x = g.add_input("x", TensorType("float32", [1] * 100))
    g.set_outputs([_node(g, "Relu", x)])
    with pytest.raises(ResourceLimitError, match=r"rank 100 is more than the limit of 64"):
        tl.Model(g)
    assert tl.Model(g, limits=tl.Limits(max_rank=100)).graph is g


def _nested(depth: int) -> Graph:
    """Loops nested ``depth`` deep, each running its body once; built without recursion."""
    i64 = TensorType("int64", [])
    inner = Graph("body0")
    _, c = inner.add_input("i", i64), inner.add_input("c", i64)
    inner.set_outputs(
        [_const(inner, True, "bool"), _node(inner, "Add", c, _const(inner, 1, "int64"))]
    )
    for level in range(1, depth + 1):
        outer = Graph(f"body{level}") if level < depth else Graph("nested")
        if level < depth:
            _, c = outer.add_input("i", i64), outer.add_input("c", i64)
        else:
            c = outer.add_input("c", i64)
        attrs = {"body": inner, "num_carried": 1, "sliced": (), "stacked": ()}
        node = outer.add_node("Loop", [_const(outer, 1, "int64"), None, c], attrs)
        results = [node.outputs[0]]
        outer.set_outputs(results if level == depth else [_const(outer, True, "bool"), *results])
        inner = outer
    return inner


def test_deep_nesting_is_refused_without_recursion() -> None:
    # 5000 levels, far past Python's recursion limit: refused by the depth check, not by a
    # RecursionError (pytest.raises lets any other exception through).
    with pytest.raises(ResourceLimitError, match=r"nest 65 deep, more than the limit of 64"):
        tl.Model(_nested(5000))
    with pytest.raises(ResourceLimitError, match="max_nesting_depth"):
        tl.Model(_nested(4), limits=tl.Limits(max_nesting_depth=3))
    model = tl.Model(_nested(3), limits=tl.Limits(max_nesting_depth=3))
    assert int(model.run({"c": np.int64(0)})[model.output_names[0]]) == 1


def test_max_nodes_counts_every_body() -> None:
    """``check_graph`` bounds the nodes of every format (text IR and graphs built in Python here;
    ONNX and OpenVINO before conversion too, tests/formats/*/test_*_hostile.py)."""
    assert node_count(_nested(4)) == 14  # 2 in the graph, 3 in each of 4 bodies
    with pytest.raises(ResourceLimitError, match=r"holds 14 nodes, bodies included, more than"):
        tl.Model(_nested(4), limits=tl.Limits(max_nodes=13))
    assert tl.Model(_nested(4), limits=tl.Limits(max_nodes=14))
    rnn = Path(__file__).parents[1] / "examples" / "rnn.tl"
    count = node_count(tl.load(rnn).graph)
    with pytest.raises(ResourceLimitError, match=rf"rnn\.tl.*holds {count} nodes.*max_nodes"):
        tl.load(rnn, limits=tl.Limits(max_nodes=count - 1))


def _counting(endless: bool) -> tl.Model:
    """A loop adding 1 per trip: ``n`` trips (fed 2**40), or a while loop that never ends."""
    tl.reset()
    if endless:
        out = tl.while_loop(lambda c: c >= 0, lambda c: c + 1, tl.constant(np.int64(0)))
        return tl.Model(out)
    n = tl.placeholder("int64", [], name="n")
    return tl.Model(tl.fori_loop(0, n, lambda i, c: c + 1, tl.constant(np.int64(0))))


@pytest.mark.usefixtures("direct")
@pytest.mark.parametrize("backend", ON_EVERY_BACKEND)
@pytest.mark.parametrize("endless", [False, True], ids=["2**40 trips", "endless"])
def test_timeout_stops_a_runaway_loop(backend: str, endless: bool) -> None:
    model = _counting(endless)
    feed = {} if endless else {"n": np.int64(1 << 40)}
    if not endless:  # certain to pass the budget of iterations in all: refused before it starts
        with pytest.raises(tl.LoopLimitError, match=r"would make 1099511627776 loop iterations"):
            model.run(feed, backend=backend, max_iterations=1 << 62, timeout=60)
    model.limits = replace(model.limits, max_total_iterations=1 << 62)
    timeout = 0.25
    started = time.perf_counter()
    with pytest.raises(RunTimeoutError, match=r"Loop .*timeout of 0.25 s ran out"):
        model.run(feed, backend=backend, max_iterations=1 << 62, timeout=timeout)
    elapsed = time.perf_counter() - started
    slack = 10.0 if backend == "jax" else 1.0  # jax compiles a plan for runs with a deadline
    assert timeout <= elapsed < timeout + slack
    with pytest.raises(tl.LoopLimitError):  # without a deadline, the iteration limit stops it
        model.run(feed, backend=backend, max_iterations=1000)


@pytest.mark.skipif("jax" not in BACKENDS, reason="JAX is not installed")
@pytest.mark.handoff("a timed run leaves while loops to the compiled backend")
def test_jax_hands_uninterruptible_loops_to_the_compiled_backend() -> None:
    model = _counting(endless=False)
    feed = {"n": np.int64(5)}
    assert [p.device for p in model.placement(feed) if p.op == "Loop"] == ["xla"]
    executable = model.prepared("jax")
    args = [np.int64(5)]
    assert not executable.interruptible(args)
    timed = executable.plan(args, timed=True)
    (loop,) = [p for p in timed.placement if p.op == "Loop"]
    assert loop.device == "compiled" and "timeout" in loop.reason
    assert int(model.run(feed, backend="jax", timeout=60)[model.output_names[0]]) == 5


def _stacking() -> Graph:
    """A loop of ``n`` trips stacking 1024 float32 (4 KiB) per trip."""
    g = Graph("stacking")
    n = g.add_input("n", TensorType("int64", []))
    body = Graph("body")
    i = body.add_input("i", TensorType("int64", []))
    c = body.add_input("c", TensorType("int64", []))
    row = _node(
        body,
        "Add",
        _const(body, np.zeros(1024), "float32"),
        _node(body, "Cast", i, to=tl.dtype("float32")),
    )
    body.set_outputs([_const(body, True, "bool"), c, row])
    attrs = {"body": body, "num_carried": 1, "sliced": (), "stacked": (Stacked(0, False),)}
    node = g.add_node("Loop", [n, None, _const(g, 0, "int64")], attrs)
    g.set_outputs([node.outputs[1]])
    return g


@pytest.mark.parametrize("backend", ON_EVERY_BACKEND)
def test_stacked_outputs_stop_at_max_stacked_bytes(backend: str) -> None:
    limits = tl.Limits(max_stacked_bytes=1 << 20, max_total_iterations=1 << 62)
    model = tl.Model(_stacking(), backend=backend, limits=limits)
    with pytest.raises(ResourceLimitError, match=r"stacked loop outputs would take .*1 MiB"):
        model.run({"n": np.int64(1 << 30)})
    out = model.run({"n": np.int64(256)})[model.output_names[0]]  # exactly 1 MiB fits
    assert out.shape == (256, 1024) and out[255, 0] == 255


@pytest.mark.usefixtures("direct")
@pytest.mark.parametrize("backend", ["reference", "compiled"])
def test_concurrent_runs_keep_their_own_deadlines(backend: str) -> None:
    endless, counting = _counting(endless=True), _counting(endless=False)
    results: dict[str, Any] = {}

    def timed() -> None:
        started = time.perf_counter()
        try:
            endless.run({}, backend=backend, max_iterations=1 << 62, timeout=0.2)
        except RunTimeoutError as exc:
            results["timed"] = (exc, time.perf_counter() - started)

    def untimed() -> None:  # runs past the other run's deadline, with a far one of its own
        started = time.perf_counter()
        trips = 3000 if backend == "reference" else 300_000
        while time.perf_counter() - started < 0.6:
            out = counting.run({"n": np.int64(trips)}, backend=backend, timeout=60)
            results["untimed"] = int(out[counting.output_names[0]])

    threads = [threading.Thread(target=timed), threading.Thread(target=untimed)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results["untimed"] in (3000, 300_000)
    _, elapsed = results["timed"]
    assert 0.2 <= elapsed < 2.0
