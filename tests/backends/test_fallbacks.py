"""Fallbacks are decided up front and visible (issue #21): a backend catches only what it planned
to hand on (its own deoptimisation, a typed refusal); every other exception is a bug and
propagates, never rerun. Each handoff is a ``Handoff`` on the run's outputs (or its error),
listed by ``Model.placement`` when decided while planning, warned once per plan
(``FallbackWarning``) and counted by ``tensorloop run --json`` and ``tensorloop bench``."""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

import tensorloop as tl
from backend_agreement import assert_same_outputs
from tensorloop import Graph
from tensorloop.backends import compiled
from tensorloop.backends.compiled import codegen, support
from tensorloop.backends.compiled import ops as templates
from tensorloop.cli import main
from tensorloop.errors import ExecutionError, FallbackWarning
from tensorloop.reference import Interpreter

F64, I64 = "float64", "int64"


@pytest.fixture(autouse=True)
def _fresh_builder() -> None:
    tl.reset()


@pytest.fixture
def reruns(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The models the compiled executable reran on the reference interpreter, from now on."""
    seen: list[str] = []

    class Recording(Interpreter):
        def run_graph(self, graph: Graph, args: Sequence[Any]) -> list[Any]:
            if graph.name == "model":  # not its bodies
                seen.append(graph.name)
            return super().run_graph(graph, args)

    monkeypatch.setattr(compiled, "Interpreter", Recording)
    return seen


def _fallback_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, FallbackWarning)]


def _scaled_sum() -> tl.Model:
    x = tl.placeholder(F64, [3], name="x")
    return tl.Model({"y": tl.reduce_sum(x + x * 2.0)})


def _gather_in_loop() -> tl.Model:
    """xs[i + k] picked at every step i of a scan over xs: out of range for some k."""
    xs = tl.placeholder(F64, ("N",), name="xs")
    k = tl.placeholder(I64, (), name="k")

    def step(c: Any, x: Any) -> tuple[Any, Any]:
        picked = tl.gather(xs, c[1] + k)
        return (c[0] + picked * x, c[1] + 1), picked

    (total, _), picked = tl.scan(step, (tl.constant(np.float64(0)), tl.constant(np.int64(0))), xs)
    return tl.Model({"total": total, "picked": picked})


def _deep(extra: int = 1) -> tl.Model:
    """Loops nested ``extra`` deeper than the compiled backend inlines (two trips of the
    innermost, one of every other)."""

    def nest(level: int, v: Any) -> Any:
        if level == 0:
            return v * 0.5 + 1.0
        trips = 2 if level == 1 else 1
        return tl.fori_loop(0, trips, lambda i, c: nest(level - 1, c + tl.cast(i, F64)), v)

    x = tl.placeholder(F64, (), name="x")
    return tl.Model({"y": nest(codegen.MAX_NESTING + extra, x)})


# -- a bug propagates ---------------------------------------------------------------------------
def test_a_template_that_raises_while_planning_propagates(
    monkeypatch: pytest.MonkeyPatch, reruns: list[str]
) -> None:
    def broken(*args: Any) -> list[str] | None:
        raise TypeError("the Add template is broken")

    monkeypatch.setitem(templates._TEMPLATES, "Add", broken)
    model = _scaled_sum()
    with pytest.raises(TypeError, match="the Add template is broken"):
        model.run({"x": np.arange(3.0)}, backend="compiled")
    assert reruns == []  # not rerun on the reference


def test_code_a_template_writes_that_raises_at_run_time_propagates(
    monkeypatch: pytest.MonkeyPatch, reruns: list[str]
) -> None:
    def wrong(node: Any, attrs: Any, ins: Any, bind: Any) -> list[str]:
        return [f"{ins[0].expr}.no_such_attribute"]

    monkeypatch.setitem(templates._TEMPLATES, "Add", wrong)
    x = tl.placeholder(F64, [3], name="x")
    model = tl.Model({"y": tl.reduce_sum(x + x)})
    with pytest.raises(AttributeError, match="no_such_attribute"):
        model.run({"x": np.arange(3.0)}, backend="compiled")
    assert reruns == []


def test_a_bug_in_the_generated_helpers_propagates(
    monkeypatch: pytest.MonkeyPatch, reruns: list[str]
) -> None:
    def broken(*args: Any) -> Any:
        raise AttributeError("stack_alloc has no such thing")

    monkeypatch.setattr(support, "stack_alloc", broken)
    with pytest.raises(AttributeError, match="no such thing"):
        _gather_in_loop().run({"xs": np.arange(4.0), "k": 0}, backend="compiled")
    assert reruns == []


# -- a planned deoptimisation is a recorded handoff ------------------------------------------------
@pytest.mark.handoff("an index out of range deoptimises")
def test_an_index_out_of_range_is_a_handoff_with_the_references_error(reruns: list[str]) -> None:
    model = _gather_in_loop()
    xs = np.arange(5.0)
    assert model.run({"xs": xs, "k": -5}).handoffs == ()  # in range: the plan's own answer
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ExecutionError, match="out of range") as first:
            model.run({"xs": xs, "k": 1}, backend="compiled")
        with pytest.raises(ExecutionError, match="out of range") as again:
            model.run({"xs": xs, "k": 1}, backend="compiled")
    assert reruns == ["model", "model"]  # the reference's error, from the reference's run
    (handoff,) = first.value.handoffs
    assert (handoff.source, handoff.target, handoff.stage) == ("compiled", "reference", "run")
    assert handoff.nodes == ("scan",)  # the run started again there: every node
    assert handoff.reason.startswith("Gather") and "out of bounds" in handoff.reason
    assert again.value.handoffs == (handoff,)
    assert any(str(handoff) in note for note in first.value.__notes__)
    assert _fallback_warnings(caught) == [str(handoff)]  # once per plan and reason


@pytest.mark.handoff("stack_grow made to deoptimise")
def test_a_deoptimised_run_that_answers_records_the_handoff_on_its_outputs(
    monkeypatch: pytest.MonkeyPatch, reruns: list[str]
) -> None:
    def no_room(state: Any, buffer: Any, where: str) -> Any:
        raise support.Deoptimize(where, "no room to grow (this test's)")

    monkeypatch.setattr(support, "STACK_START_BYTES", 8)
    monkeypatch.setattr(support, "stack_grow", no_room)
    model = _gather_in_loop()
    feed = {"xs": np.arange(40.0), "k": -40}
    with pytest.warns(FallbackWarning, match="no room to grow") as caught:
        got = model.run(feed, backend="compiled")
    assert len(caught) == 1 and reruns == ["model"]
    assert_same_outputs(got, model.run(feed, backend="reference"), "deoptimised")
    (handoff,) = got.handoffs
    assert (handoff.source, handoff.target, handoff.stage) == ("compiled", "reference", "run")
    assert handoff.reason.startswith("Loop 'scan'") and handoff.nodes == ("scan",)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # warned once per plan: not again
        assert model.run(feed, backend="compiled").handoffs == (handoff,)


def test_no_handoff_without_a_fallback() -> None:
    model = _gather_in_loop()
    got = model.run({"xs": np.arange(3.0), "k": -3})
    assert got.handoffs == ()
    placed = model.placement({"xs": np.arange(3.0), "k": -3}, backend="compiled")
    assert [(p.node, p.device, p.reason) for p in placed] == [("scan", "compiled", "")]


# -- decided while planning: in the placement, on every run ----------------------------------------
@pytest.mark.handoff("bodies nested deeper than MAX_NESTING")
def test_bodies_nested_too_deep_are_a_planned_handoff() -> None:
    model = _deep()
    with pytest.warns(FallbackWarning, match="MAX_NESTING") as caught:
        got = model.run({"x": 1.0}, backend="compiled")
    assert len(caught) == 1
    (handoff,) = got.handoffs
    assert (handoff.source, handoff.target, handoff.stage) == ("compiled", "reference", "plan")
    placed = model.placement({"x": 1.0}, backend="compiled")
    deep = [p for p in placed if p.device == "reference"]
    assert [(p.node, p.reason) for p in deep] == [(handoff.nodes[0], handoff.reason)]
    again = model.run({"x": 1.0}, backend="compiled")
    assert again.handoffs == (handoff,)  # every run makes it, warned once


def test_ops_without_a_template_call_their_kernel_in_place_which_is_no_handoff() -> None:
    x = tl.placeholder(F64, [4], name="x")
    model = tl.Model({"y": tl.softmax(x)})
    exe = model.prepared("compiled")
    assert "k_Softmax" in exe.plan([np.zeros(4)]).source  # type: ignore[attr-defined]
    assert model.run({"x": np.arange(4.0)}).handoffs == ()


# -- the suite's law -------------------------------------------------------------------------------
def test_the_suite_fails_an_undeclared_handoff() -> None:
    """FallbackWarning is an error in every test that does not declare a handoff."""
    model = _deep()
    with pytest.raises(FallbackWarning, match="MAX_NESTING"):
        model.run({"x": 1.0}, backend="compiled")


def test_the_law_knows_what_each_backend_claims() -> None:
    from conftest import unclaimed

    placed = tl.Handoff(("a",), "jax", "compiled", "no XLA lowering for A")
    deopt = tl.Handoff(("a",), "jax", "compiled", "A: deopt", "run")
    inner = tl.Handoff(("b",), "compiled", "reference", "too deep")
    assert unclaimed("jax", [placed]) == []
    assert unclaimed("jax", [placed, deopt, inner]) == [deopt, inner]
    assert unclaimed("compiled", [inner]) == [inner]


# -- the CLI says so -------------------------------------------------------------------------------
@pytest.mark.handoff("bodies nested deeper than MAX_NESTING")
def test_run_json_and_bench_count_handoffs(tmp_path: Path) -> None:
    path = str(tmp_path / "deep.tl")
    tl.save(_deep(), path)
    result = CliRunner().invoke(main, ["run", path, "-i", "x=1.5", "--json"])
    assert result.exit_code == 0, result.output
    (handoff,) = json.loads(result.output)["handoffs"]
    assert (handoff["source"], handoff["target"], handoff["stage"]) == (
        "compiled",
        "reference",
        "plan",
    )
    assert "MAX_NESTING" in handoff["reason"]
    args = ["bench", path, "-i", "x=1.5", "--backends", "reference,compiled", "--seconds", "0"]
    report = json.loads(CliRunner().invoke(main, [*args, "--warmup", "0", "--json"]).output)
    assert {r["runtime"]: r["handoffs"] for r in report["runtimes"]} == {
        "tensorloop-reference": 0,
        "tensorloop-compiled": 1,
    }
    table = CliRunner().invoke(main, [*args, "--warmup", "0"]).output
    assert "handoffs" in table


# -- jax -------------------------------------------------------------------------------------------
def _islands() -> tl.Model:
    """NonZero's output shape depends on the data: it runs on the compiled backend."""
    from loop_models import T
    from tensorloop.ir.emit import Emitter

    g = Graph("islands")
    x = g.add_input("x", T("float32", 6))
    em = Emitter(g)
    y = em.op("Add", [x, em.const(np.float32(1))], name="before")
    g.set_outputs([em.op("NonZero", [y], name="nonzero"), em.op("Mul", [y, y], name="square")])
    return tl.Model(g)


@pytest.mark.handoff("NonZero runs on the compiled backend")
def test_jax_places_what_xla_cannot_run_on_compiled_and_says_so() -> None:
    pytest.importorskip("tensorloop.backends.jax", exc_type=ImportError)
    model = _islands()
    feed = {"x": np.array([0, -1, 2, 0, 3, -1], np.float32)}
    placed = {p.node: p for p in model.placement(feed)}
    assert placed["nonzero"].device == "compiled" and placed["nonzero"].reason
    with pytest.warns(FallbackWarning, match="nonzero") as caught:
        got = model.run(feed, backend="jax")
    assert len(caught) == 1
    assert_same_outputs(got, model.run(feed, backend="reference"), "jax vs reference")
    (handoff,) = got.handoffs
    assert handoff == tl.Handoff(("nonzero",), "jax", "compiled", placed["nonzero"].reason)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per plan
        assert model.run(feed, backend="jax").handoffs == (handoff,)


def test_a_lowering_that_raises_anything_but_a_lowering_error_propagates(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("tensorloop.backends.jax", exc_type=ImportError)
    from tensorloop.backends.jax import lowering

    def broken(*args: Any) -> list[Any]:
        raise TypeError("a bug in the Tanh lowering")

    entry = lowering.LOWERINGS["Tanh"]
    monkeypatch.setitem(lowering.LOWERINGS, "Tanh", lowering.OpLowering(broken, entry.check))
    x = tl.placeholder("float32", [4], name="x")
    model = tl.Model({"y": tl.tanh(x * 2.0)})
    with pytest.raises(TypeError, match="a bug in the Tanh lowering"):
        model.run({"x": np.zeros(4, np.float32)}, backend="jax")


@pytest.mark.handoff("a zero divisor is the compiled backend's to judge")
def test_a_jax_fault_at_run_time_is_a_handoff_to_compiled() -> None:
    pytest.importorskip("tensorloop.backends.jax", exc_type=ImportError)
    a = tl.placeholder(I64, [3], name="a")
    b = tl.placeholder(I64, [3], name="b")
    model = tl.Model({"q": a / b})
    bad = {"a": np.array([1, 2, 3]), "b": np.array([1, 0, 1])}
    with (
        pytest.warns(FallbackWarning, match="at run time"),
        pytest.raises(ExecutionError, match="division by zero") as error,
    ):
        model.run(bad, backend="jax")
    (handoff,) = error.value.handoffs
    assert (handoff.source, handoff.target, handoff.stage) == ("jax", "compiled", "run")
    assert handoff.reason.startswith("Div")


def test_auto_raises_a_compile_bug_instead_of_staying_on_compiled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("tensorloop.backends.jax", exc_type=ImportError)
    from tensorloop.backends import auto
    from tensorloop.backends.jax import JaxExecutable

    def broken(self: Any, args: Any) -> Any:
        raise KeyError("a bug in planning")

    monkeypatch.setattr(auto, "PROMOTE_AFTER_SECONDS", 0.0)
    monkeypatch.setattr(JaxExecutable, "compile", broken)
    model = _scaled_sum()
    executable = auto.AutoExecutable(model.graph, background=True)
    monkeypatch.setitem(model._prepared, "auto", executable)
    feed = {"x": np.arange(3.0)}
    model.run(feed, backend="auto")  # on compiled; the compile starts, and fails
    executable.wait()
    with pytest.raises(KeyError, match="a bug in planning"):
        model.run(feed, backend="auto")
    assert model.run(feed, backend="auto")["y"] == 9.0  # raised once: the compiled tier answers


def _scan_with_bad_axis_under_if(path: Path) -> Path:
    """An ONNX If whose then-branch holds a Scan over an input of unknown rank, slicing on an
    axis that input does not have (axis 5 of a matrix): the run on the then-branch fails,
    the else-branch runs (found by the onnx fuzzer: the compiled backend handed the Scan on)."""
    import onnx
    from onnx import TensorProto as T
    from onnx import helper as h

    def value(name: str, shape: list[int] | None) -> onnx.ValueInfoProto:
        return h.make_tensor_value_info(name, T.FLOAT, shape)

    body = h.make_graph(
        [h.make_node("Add", ["s", "x"], ["s2"]), h.make_node("Identity", ["s2"], ["y"])],
        "body",
        [value("s", [3]), value("x", [3])],
        [value("s2", [3]), value("y", [3])],
    )
    scan = h.make_node(
        "Scan", ["s0", "xs"], ["sf", "ys"], body=body, num_scan_inputs=1, scan_input_axes=[5]
    )
    then = h.make_graph([scan], "then", [], [value("sf", None)])
    other = h.make_graph([h.make_node("Identity", ["s0"], ["s1"])], "else", [], [value("s1", None)])
    top = h.make_node("If", ["c"], ["out"], then_branch=then, else_branch=other)
    graph = h.make_graph(
        [top],
        "g",
        [h.make_tensor_value_info("c", T.BOOL, []), value("s0", [3]), value("xs", None)],
        [value("out", None)],
    )
    onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 16)]), path)
    return path


def test_a_slicing_axis_out_of_range_fails_where_the_loop_runs(tmp_path: Path) -> None:
    model = tl.load(_scan_with_bad_axis_under_if(tmp_path / "scan.onnx"))
    feeds = {"s0": np.zeros(3, np.float32), "xs": np.ones((4, 3), np.float32)}
    for backend in ("reference", "compiled"):
        with pytest.raises(tl.errors.GraphError, match=r"axis 5 is out of range for rank 2"):
            model.run({**feeds, "c": np.array(True)}, backend=backend)
        out = model.run({**feeds, "c": np.array(False)}, backend=backend)
        np.testing.assert_array_equal(out["out"], feeds["s0"])
    shown = model.placement({**feeds, "c": np.array(True)}, backend="compiled")
    assert [p.device for p in shown] == ["compiled"], shown  # nothing handed on
