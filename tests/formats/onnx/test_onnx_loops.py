"""ONNX Loop, Scan and If imported as canonical loops, checked against onnxruntime."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto
from onnx import helper as h

import tensorloop as tl
from tensorloop.errors import FormatError, LoopLimitError, UnsupportedOpError
from tensorloop.formats.onnx.writer import to_onnx

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
OPSET = 17


def vi(name: str, elem: int = F, shape: Sequence[int | str | None] | None = None) -> Any:
    return h.make_tensor_value_info(name, elem, shape)


def model(
    nodes: list[Any],
    inputs: list[Any],
    outputs: list[Any],
    initializers: Sequence[Any] = (),
    opset: int = OPSET,
) -> onnx.ModelProto:
    g = h.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def const(name: str, value: Any, dtype: Any = np.float32) -> Any:
    return h.make_node("Constant", [], [name], value=onnx.numpy_helper.from_array(
        np.asarray(value, dtype), name))  # fmt: skip


def onnxruntime_run(m: onnx.ModelProto, feeds: Mapping[str, Any]) -> list[Any]:
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return list(sess.run(None, dict(feeds)))


def _agree(got: Sequence[Any], expected: Sequence[Any], names: Sequence[str]) -> None:
    for name, g, e in zip(names, got, expected, strict=True):
        assert g.dtype == e.dtype, name
        assert g.shape == e.shape, (name, g.shape, e.shape)
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-6, err_msg=name)


def same_as_onnxruntime(m: onnx.ModelProto, feeds: Mapping[str, Any]) -> list[Any]:
    """Run ``m`` in both; the outputs agree in dtype, shape and value. Then import -> export
    -> onnxruntime reproduces them too. Returns tensorloop's outputs."""
    expected = onnxruntime_run(m, feeds)
    model = tl.load(m)
    got = model.run(dict(feeds))
    names = [o.name for o in m.graph.output]
    assert list(got) == names
    _agree([got[n] for n in names], expected, names)
    exported = to_onnx(model)
    onnx.checker.check_model(exported, full_check=True)
    _agree(onnxruntime_run(exported, feeds), expected, names)
    return [got[n] for n in names]


def counter_body(limit: float | None = None, scan: bool = True) -> onnx.GraphProto:
    """Body (i, cond, acc) -> (cond', acc + i, [acc]): cond' is acc + i < limit if given."""
    nodes = [
        h.make_node("Cast", ["i"], ["fi"], to=F),
        h.make_node("Add", ["acc", "fi"], ["acc_out"]),
    ]
    if limit is None:
        nodes.append(h.make_node("Identity", ["cond"], ["cond_out"]))
    else:
        nodes += [const("limit", limit), h.make_node("Less", ["acc_out", "limit"], ["cond_out"])]
    outs = [vi("cond_out", B, []), vi("acc_out", F, [])]
    if scan:
        nodes.append(h.make_node("Identity", ["acc"], ["seen"]))
        outs.append(vi("seen", F, []))
    return h.make_graph(
        nodes, "body", [vi("i", I64, []), vi("cond", B, []), vi("acc", F, [])], outs
    )


def loop_model(
    trip: int | None, cond: bool | None, limit: float | None, feed_trip: bool = False
) -> tuple[onnx.ModelProto, dict[str, Any]]:
    nodes, inputs, feeds = [const("acc0", 0.5)], [], {}
    m_name = c_name = ""
    if trip is not None:
        m_name = "M"
        if feed_trip:
            inputs.append(vi("M", I64, []))
            feeds["M"] = np.array(trip, np.int64)
        else:
            nodes.append(const("M", trip, np.int64))
    if cond is not None:
        c_name = "C"
        nodes.append(const("C", cond, np.bool_))
    nodes.append(
        h.make_node("Loop", [m_name, c_name, "acc0"], ["acc", "seen"], body=counter_body(limit))
    )
    return model(nodes, inputs, [vi("acc", F, []), vi("seen", F, [None])]), feeds


@pytest.mark.parametrize(
    ("trip", "cond", "limit", "acc"),
    [
        (5, True, None, 10.5),  # counted
        (None, True, 7.0, 10.5),  # while: runs until acc reaches 7
        (10, True, 4.0, 6.5),  # break via cond before M
        (5, None, None, 10.5),  # cond omitted, body passes it through: counted
        (10, None, 4.0, 6.5),  # cond omitted, the body's condition is honoured (onnxruntime)
        (None, None, 4.0, 6.5),  # both omitted: runs until the body says stop
        (0, True, None, 0.5),  # zero trips
        (-3, True, None, 0.5),  # a negative M runs zero times
        (5, False, None, 0.5),  # a false initial condition runs zero times
    ],
)
def test_loop_forms_match_onnxruntime(
    trip: int | None, cond: bool | None, limit: float | None, acc: float
) -> None:
    m, feeds = loop_model(trip, cond, limit)
    got = same_as_onnxruntime(m, feeds)
    assert got[0] == np.float32(acc)


def test_zero_trip_scan_output_is_empty_with_the_body_shape() -> None:
    m, feeds = loop_model(0, True, None, feed_trip=True)
    _, seen = same_as_onnxruntime(m, feeds)
    assert seen.shape == (0,)


def test_infinite_loop_hits_the_iteration_limit() -> None:
    body = counter_body(None, scan=False)
    m = model(
        [const("acc0", 0.0), const("C", True, np.bool_), h.make_node("Loop", ["", "C", "acc0"],
         ["acc"], body=body)],
        [],
        [vi("acc", F, [])],
    )  # fmt: skip
    with pytest.raises(LoopLimitError, match="max_iterations"):
        tl.load(m, max_iterations=50).run({})


def test_loop_is_a_canonical_loop_and_drops_an_unused_condition() -> None:
    m, _ = loop_model(5, True, None)
    graph = tl.load(m).graph
    loops = [n for n in graph.nodes if n.op == "Loop"]
    assert len(loops) == 1
    assert loops[0].attrs["num_carried"] == 1  # cond only passes through, so it is not carried
    m2, _ = loop_model(10, True, 4.0)
    loops2 = [n for n in tl.load(m2).graph.nodes if n.op == "Loop"]
    assert loops2[0].attrs["num_carried"] == 1  # the body never reads its cond input


def test_carried_value_that_grows_each_iteration() -> None:
    body = h.make_graph(
        [
            h.make_node("Cast", ["i"], ["fi"], to=F),
            h.make_node("Unsqueeze", ["fi", "zero"], ["fi1"]),
            h.make_node("Concat", ["v", "fi1"], ["v_out"], axis=0),
            h.make_node("Identity", ["cond"], ["cond_out"]),
        ],
        "body",
        [vi("i", I64, []), vi("cond", B, []), vi("v", F, None)],
        [vi("cond_out", B, []), vi("v_out", F, None)],
        initializer=[onnx.numpy_helper.from_array(np.array([0], np.int64), "zero")],
    )
    m = model(
        [h.make_node("Loop", ["M", "", "v0"], ["v"], body=body)],
        [vi("M", I64, []), vi("v0", F, [2])],
        [vi("v", F, [None])],
    )
    (v,) = same_as_onnxruntime(m, {"M": np.array(4), "v0": np.array([7, 8], np.float32)})
    assert v.tolist() == [7, 8, 0, 1, 2, 3]


def test_nested_loops_and_values_captured_two_levels_up() -> None:
    # outer: for i < 3 { inner: for j < 4 { acc += scale * (i + j) } }, scale from the main graph
    inner = h.make_graph(
        [
            h.make_node("Add", ["i", "j"], ["ij"]),
            h.make_node("Cast", ["ij"], ["fij"], to=F),
            h.make_node("Mul", ["fij", "scale"], ["term"]),
            h.make_node("Add", ["acc_in", "term"], ["acc_out"]),
            h.make_node("Identity", ["c"], ["c_out"]),
        ],
        "inner",
        [vi("j", I64, []), vi("c", B, []), vi("acc_in", F, [])],
        [vi("c_out", B, []), vi("acc_out", F, [])],
    )
    outer = h.make_graph(
        [
            h.make_node("Loop", ["N", "", "acc"], ["acc_next", "rows"], body=h.make_graph(
                inner.node, "inner", inner.input, [*inner.output, vi("term", F, [])])),
            h.make_node("Identity", ["cond"], ["cond_out"]),
        ],
        "outer",
        [vi("i", I64, []), vi("cond", B, []), vi("acc", F, [])],
        [vi("cond_out", B, []), vi("acc_next", F, []), vi("rows", F, [4])],
    )  # fmt: skip
    m = model(
        [
            const("N", 4, np.int64),
            const("acc0", 0.0),
            h.make_node("Loop", ["M", "", "acc0"], ["acc", "table"], body=outer),
        ],
        [vi("M", I64, []), vi("scale", F, [])],
        [vi("acc", F, []), vi("table", F, [None, 4])],
    )
    acc, table = same_as_onnxruntime(m, {"M": np.array(3), "scale": np.array(0.5, np.float32)})
    assert table.shape == (3, 4)
    assert acc == np.float32(0.5 * sum(i + j for i in range(3) for j in range(4)))
    # the capture of `scale` two levels down is an explicit invariant at each level
    graph = tl.load(m).graph
    outer_loop = next(n for n in graph.nodes if n.op == "Loop")
    assert graph.find("scale") in outer_loop.inputs


def _if_node(out: str, then_value: str, else_value: str, cond: str = "flag") -> Any:
    then_g = h.make_graph([h.make_node("Identity", [then_value], ["t"])], "then", [],
                          [vi("t", F, None)])  # fmt: skip
    else_g = h.make_graph([h.make_node("Identity", [else_value], ["e"])], "else", [],
                          [vi("e", F, None)])  # fmt: skip
    return h.make_node("If", [cond], [out], then_branch=then_g, else_branch=else_g)


def test_if_inside_loop() -> None:
    # for i < 6: acc += (i is odd) ? x : -x
    body = h.make_graph(
        [
            const("two", 2, np.int64),
            h.make_node("Mod", ["i", "two"], ["r"]),
            const("one", 1, np.int64),
            h.make_node("Equal", ["r", "one"], ["flag"]),
            h.make_node("Neg", ["x"], ["neg_x"]),
            _if_node("delta", "x", "neg_x"),
            h.make_node("Add", ["acc", "delta"], ["acc_out"]),
            h.make_node("Identity", ["cond"], ["cond_out"]),
        ],
        "body",
        [vi("i", I64, []), vi("cond", B, []), vi("acc", F, [3])],
        [vi("cond_out", B, []), vi("acc_out", F, [3]), vi("delta", F, [3])],
    )
    m = model(
        [const("M", 6, np.int64), h.make_node("Loop", ["M", "", "acc0"], ["acc", "ds"], body=body)],
        [vi("x", F, [3]), vi("acc0", F, [3])],
        [vi("acc", F, [3]), vi("ds", F, [6, 3])],
    )
    x = np.array([1, 2, 3], np.float32)
    same_as_onnxruntime(m, {"x": x, "acc0": np.zeros(3, np.float32)})


def test_loop_inside_if() -> None:
    body = counter_body(None)
    then_g = h.make_graph(
        [h.make_node("Loop", ["M", "", "start"], ["acc", "seen"], body=body),
         h.make_node("Identity", ["acc"], ["t"])],
        "then", [], [vi("t", F, [])],
    )  # fmt: skip
    else_g = h.make_graph([h.make_node("Neg", ["start"], ["e"])], "else", [], [vi("e", F, [])])
    m = model(
        [h.make_node("If", ["flag"], ["y"], then_branch=then_g, else_branch=else_g)],
        [vi("flag", B, []), vi("M", I64, []), vi("start", F, [])],
        [vi("y", F, [])],
    )
    for flag in (True, False):
        feeds = {"flag": np.array(flag), "M": np.array(4), "start": np.array(1.5, np.float32)}
        same_as_onnxruntime(m, feeds)


def test_if_branches_of_different_shapes() -> None:
    m = model(
        [_if_node("y", "a", "b")],
        [vi("flag", B, []), vi("a", F, [2]), vi("b", F, [3])],
        [vi("y", F, [None])],
    )
    for flag in (True, False):
        got = same_as_onnxruntime(m, {"flag": np.array(flag), "a": np.ones(2, np.float32),
                                      "b": np.zeros(3, np.float32)})  # fmt: skip
        assert got[0].shape == ((2,) if flag else (3,))


def scan_model(
    in_axis: int, in_dir: int, out_axis: int, out_dir: int, opset: int = 16
) -> onnx.ModelProto:
    """A running sum over rows of x [2, L, 3] taken along ``in_axis``, stacked on ``out_axis``."""
    body = h.make_graph(
        [
            h.make_node("Add", ["s", "row"], ["s_out"]),
            h.make_node("Mul", ["row", "s_out"], ["y"]),
        ],
        "body",
        [vi("s", F, None), vi("row", F, None)],
        [vi("s_out", F, None), vi("y", F, None)],
    )
    node = h.make_node(
        "Scan", ["s0", "x"], ["s", "ys"], body=body, num_scan_inputs=1,
        scan_input_axes=[in_axis], scan_input_directions=[in_dir],
        scan_output_axes=[out_axis], scan_output_directions=[out_dir],
    )  # fmt: skip
    r2, r3 = [None, None], [None, None, None]
    return model([node], [vi("s0", F, r2), vi("x", F, r3)],
                 [vi("s", F, r2), vi("ys", F, r3)], opset=opset)  # fmt: skip


@pytest.mark.parametrize("in_axis", [0, 1, -1])
@pytest.mark.parametrize("in_dir", [0, 1])
@pytest.mark.parametrize("out_axis", [0, 1, -1])
@pytest.mark.parametrize("out_dir", [0, 1])
def test_scan_axes_and_directions(in_axis: int, in_dir: int, out_axis: int, out_dir: int) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 4, 3)).astype(np.float32)
    state_shape = tuple(d for i, d in enumerate(x.shape) if i != in_axis % 3)
    s0 = rng.standard_normal(state_shape).astype(np.float32)
    same_as_onnxruntime(scan_model(in_axis, in_dir, out_axis, out_dir), {"s0": s0, "x": x})


def test_zero_length_scan() -> None:
    """onnxruntime (and OpenVINO and onnx.reference) fail here; the loop runs zero times, so the
    final state is the initial one and the scan output has length 0 on its axis."""
    m = scan_model(1, 0, 1, 0)
    x = np.zeros((2, 0, 3), np.float32)
    s0 = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = tl.load(m).run({"s0": s0, "x": x})
    np.testing.assert_array_equal(out["s"], s0)
    assert out["ys"].shape == (2, 0, 3)


def test_onnxruntime_crashes_on_a_zero_length_scan(tmp_path: Any) -> None:
    """Pins the anchor's failure: the process dies (SIGFPE), so it runs in a child process."""
    path = tmp_path / "scan.onnx"
    onnx.save(scan_model(1, 0, 1, 0), path)
    code = (
        "import numpy as np, onnxruntime as ort\n"
        f"s = ort.InferenceSession({str(path)!r}, providers=['CPUExecutionProvider'])\n"
        "s.run(None, {'s0': np.zeros((2, 3), np.float32), 'x': np.zeros((2, 0, 3), np.float32)})\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120)
    assert done.returncode != 0


def test_scan8_with_a_batch_axis() -> None:
    body = h.make_graph(
        [h.make_node("Add", ["s", "row"], ["s_out"]), h.make_node("Identity", ["s_out"], ["y"])],
        "body",
        [vi("s", F, [3]), vi("row", F, [3])],
        [vi("s_out", F, [3]), vi("y", F, [3])],
    )
    node = h.make_node("Scan", ["", "s0", "x"], ["s", "ys"], body=body, num_scan_inputs=1)
    m = model([node], [vi("s0", F, [2, 3]), vi("x", F, [2, 5, 3])],
              [vi("s", F, [2, 3]), vi("ys", F, [2, 5, 3])], opset=8)  # fmt: skip
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 5, 3)).astype(np.float32)
    s0 = rng.standard_normal((2, 3)).astype(np.float32)
    out = tl.load(m).run({"s0": s0, "x": x})
    np.testing.assert_allclose(out["ys"], s0[:, None, :] + np.cumsum(x, axis=1), rtol=1e-6)
    np.testing.assert_allclose(out["s"], s0 + x.sum(axis=1), rtol=1e-6)


@settings(max_examples=25, deadline=None)
@given(
    trip=st.one_of(st.none(), st.integers(-2, 6)),
    cond=st.one_of(st.none(), st.booleans()),
    limit=st.one_of(st.none(), st.floats(-1, 20, width=32)),
)
def test_random_loop_headers_match_onnxruntime(
    trip: int | None, cond: bool | None, limit: float | None
) -> None:
    if trip is None and limit is None and cond is not False:
        trip = 3  # an unbounded loop: onnxruntime would never return
    m, feeds = loop_model(trip, cond, limit, feed_trip=trip is not None)
    same_as_onnxruntime(m, feeds)


# -- errors --------------------------------------------------------------------------------------


def test_body_arity_mismatch_is_a_format_error() -> None:
    body = counter_body(None, scan=False)
    m = h.make_model(h.make_graph(
        [const("acc0", 0.0), const("b0", 0.0), h.make_node("Loop", ["", "", "acc0", "b0"],
         ["acc", "b"], body=body)], "g", [], [vi("acc", F, []), vi("b", F, [])]),
        opset_imports=[h.make_opsetid("", OPSET)])  # fmt: skip
    with pytest.raises(FormatError, match=r"node #2 \(Loop\).*body takes 3 inputs, expected 4"):
        tl.load(m)


def test_undefined_input_names_node_and_input() -> None:
    m = h.make_model(
        h.make_graph([h.make_node("Relu", ["nope"], ["y"], name="r")], "g", [], [vi("y")]),
        opset_imports=[h.make_opsetid("", OPSET)],
    )
    with pytest.raises(FormatError, match=r"node 'r' \(Relu\).*input 'nope' is not produced"):
        tl.load(m)


def test_unsupported_ops_are_listed_together() -> None:
    m = h.make_model(
        h.make_graph(
            [h.make_node("Frobnicate", ["x"], ["y"], domain="my.domain", name="f1"),
             h.make_node("Frobnicate", ["y"], ["z"], domain="my.domain", name="f2")],
            "g", [vi("x")], [vi("z")],
        ),
        opset_imports=[h.make_opsetid("", OPSET), h.make_opsetid("my.domain", 1)],
    )  # fmt: skip
    with pytest.raises(UnsupportedOpError, match=r"my\.domain\.Frobnicate-1 \(nodes f1, f2\)"):
        tl.load(m)


def test_an_old_opset_feature_is_a_clear_error() -> None:
    """Opsets before 7 are read where an op has not changed since; an attribute that later
    went away (Add's broadcast) is named, never ignored."""
    g = h.make_graph([h.make_node("Add", ["x", "y"], ["z"], broadcast=1, name="old_add")], "g",
                     [vi("x", F, [2, 3]), vi("y", F, [3])], [vi("z", F, [2, 3])])  # fmt: skip
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 6)])
    with pytest.raises(FormatError, match=r"node 'old_add' \(Add\).*unknown attribute.*broadcast"):
        tl.load(m)
    relu = h.make_model(h.make_graph([h.make_node("Relu", ["x"], ["y"])], "g",
                        [vi("x", F, [2])], [vi("y", F, [2])]),
                        opset_imports=[h.make_opsetid("", 6)])  # fmt: skip
    assert tl.load(relu).run({"x": np.array([-1, 1], np.float32)})["y"].tolist() == [0, 1]


def test_loop_file_round_trip_through_load(tmp_path: Any) -> None:
    m, feeds = loop_model(4, True, None)
    path = tmp_path / "loop.onnx"
    onnx.save(m, path)
    out = tl.load(path).run(feeds)
    assert out["acc"] == np.float32(0.5 + 0 + 1 + 2 + 3)


# -- models written with onnxscript --------------------------------------------------------------
# onnxscript turns Python for/while/if into ONNX Loop and If; these run through both runtimes.

from onnxscript import BOOL, FLOAT, INT64, script  # noqa: E402
from onnxscript import opset18 as op  # noqa: E402


@script()
def _row_sums(x: FLOAT[None, 3], n: INT64) -> FLOAT[3]:
    acc = op.ReduceSum(x, [0], keepdims=0) * 0.0
    for i in range(n):
        acc = acc + op.Gather(x, i, axis=0)
    return acc


@script()
def _halve_until_small(x: FLOAT) -> FLOAT:
    y = op.Identity(x)
    cond = y > 1.0
    while cond:
        y = y / 2.0
        cond = y > 1.0
    return y


@script()
def _signed_steps(x: FLOAT[3], n: INT64) -> FLOAT[3]:
    acc = x * 0.0
    for i in range(n):
        odd = op.Mod(i, op.Constant(value_int=2)) == op.Constant(value_int=1)
        if odd:  # noqa: SIM108  (onnxscript turns this statement into If)
            acc = acc + x
        else:
            acc = acc - x
    return acc


@script()
def _nested_table(n: INT64, m: INT64) -> FLOAT:
    total = op.Constant(value_float=0.0)
    for i in range(n):
        for j in range(m):
            total = total + op.Cast(i * j, to=1)
    return total


@script()
def _first_above(x: FLOAT[None], limit: FLOAT) -> INT64:
    found = op.Constant(value_int=-1)
    going = op.Constant(value=np.array(True))
    n = op.Size(x)
    i = op.Constant(value_int=0)
    while going:
        going = op.And(op.Less(i, n), found < 0)
        if going:
            hit = op.Gather(x, i) > limit
            if hit:
                found = op.Identity(i)
        i = i + 1
    return found


_ONNXSCRIPT_CASES = {
    "for": (_row_sums, {"x": np.arange(12, dtype=np.float32).reshape(4, 3), "n": np.array(3)}),
    "for_zero": (_row_sums, {"x": np.ones((4, 3), np.float32), "n": np.array(0)}),
    "while": (_halve_until_small, {"x": np.array(37.0, np.float32)}),
    "while_no_trip": (_halve_until_small, {"x": np.array(0.5, np.float32)}),
    "if_in_for": (_signed_steps, {"x": np.array([1, 2, 3], np.float32), "n": np.array(5)}),
    "nested": (_nested_table, {"n": np.array(3), "m": np.array(4)}),
    "early_stop": (
        _first_above,
        {"x": np.array([1, 5, 2, 9, 9], np.float32), "limit": np.array(4.0, np.float32)},
    ),
}


@pytest.mark.parametrize("name", sorted(_ONNXSCRIPT_CASES))
def test_onnxscript_loops_match_onnxruntime(name: str) -> None:
    fn, feeds = _ONNXSCRIPT_CASES[name]
    m = fn.to_model_proto()
    assert any(n.op_type == "Loop" for n in m.graph.node)
    same_as_onnxruntime(m, feeds)


_ = BOOL
