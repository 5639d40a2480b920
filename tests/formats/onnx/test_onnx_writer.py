"""tl.save to ONNX: the checker accepts every model, and onnxruntime computes what tensorloop
computes, loops (counted, while, early stop, reversed, stacked off axis 0, nested, zero trips)
and branches included."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

ort = pytest.importorskip("onnxruntime")

import tensorloop as tl  # noqa: E402
from loop_models import (  # noqa: E402
    build,
    hand_built_loop,
    loop_specs,
    make_inputs,
    scan_on_axis,
    while_on_data,
)
from tensorloop.builder.tracing import emit  # noqa: E402
from tensorloop.formats.onnx.writer import OPSET, to_onnx  # noqa: E402
from tensorloop.ir.emit import Emitter  # noqa: E402
from tensorloop.ir.graph import Graph  # noqa: E402

Feeds = dict[str, Any]
EXAMPLES = Path(__file__).resolve().parents[3] / "examples"

_rng = np.random.default_rng(11)
X = _rng.standard_normal((2, 3)).astype(np.float32)
SEQ = _rng.standard_normal((4, 5, 6)).astype(np.float32)


@pytest.fixture(autouse=True)
def _fresh_builder() -> None:
    tl.reset()


def _session(proto: onnx.ModelProto) -> Any:
    onnx.checker.check_model(proto, full_check=True)
    return ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])


def _same(actual: Any, expected: Any, name: str) -> None:
    if isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), name
        for a, e in zip(actual, expected, strict=True):
            _same(a, e, name)
        return
    actual = np.asarray(actual)
    assert actual.shape == expected.shape, f"{name}: {actual.shape} != {expected.shape}"
    assert actual.dtype == expected.dtype, f"{name}: {actual.dtype} != {expected.dtype}"
    if expected.dtype.kind == "f":
        np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6, err_msg=name)
    else:
        np.testing.assert_array_equal(actual, expected, err_msg=name)


def _check(model: tl.Model, *feeds: Feeds) -> onnx.ModelProto:
    """Export, check fully, and run every feed in onnxruntime against the interpreter; then
    import the export (tl.load) and export that again: both still compute the same."""
    proto = to_onnx(model)
    session = _session(proto)
    assert [i.name for i in session.get_inputs()] == model.input_names
    assert [o.name for o in session.get_outputs()] == model.output_names
    imported = tl.load(proto)
    again = _session(to_onnx(imported))
    for f in feeds:
        want = model.run(f)
        arrays = {k: np.asarray(v) for k, v in f.items()}
        mine = imported.run(f)
        results = zip(session.run(None, arrays), again.run(None, arrays), strict=True)
        for name, (got, got_again) in zip(model.output_names, results, strict=True):
            _same(got, want[name], name)
            _same(mine[name], want[name], f"imported {name}")
            _same(got_again, want[name], f"exported again {name}")
    return proto


def _ph(name: str, like: np.ndarray[Any, Any], shape: Sequence[int | str] | None = None) -> Any:
    return tl.placeholder(like.dtype, like.shape if shape is None else shape, name=name)


# -- core ops ------------------------------------------------------------------------------------
def test_core_ops_map_to_the_same_named_onnx_ops() -> None:
    x, y = _ph("x", SEQ, ("N", 5, 6)), _ph("y", SEQ[0])
    n = tl.placeholder("int64", (), name="n")
    a, b = tl.split(x, 2, axis=-1)
    c, d, e = tl.split(x, [1, 3, 1], axis=1)
    outs = {"add": x + y, "div": x / (tl.abs(y) + 1.0), "pow": tl.pow(tl.abs(x), 0.5)}
    outs |= {"mm": tl.matmul(x, tl.transpose(y)), "gemm": tl.gemm(y, y, alpha=0.5, trans_b=True)}
    outs |= {"sum": tl.reduce_sum(x, [0, -1], keepdims=True), "mean": tl.reduce_mean(x)}
    outs |= {"cum": tl.cumsum(x, 1, exclusive=True, reverse=True), "soft": tl.softmax(x, 0)}
    outs |= {"argmax": tl.argmax(x, axis=1, keepdims=True), "cast": tl.cast(x, "int32")}
    outs |= {"reshape": tl.reshape(x, [0, -1]), "t": tl.transpose(x, [1, 0, 2])}
    outs |= {"unsq": tl.unsqueeze(x, [0, -1]), "sq": tl.squeeze(tl.unsqueeze(y, [0]), [0])}
    outs |= {"a": a, "b": b, "c": c, "d": d, "e": e, "cat": tl.concat([x, x], axis=-1)}
    outs |= {"slice": tl.slice(x, [0, 4], [3, 0], axes=[0, 1], steps=[2, -1])}
    outs |= {"gather": tl.gather(x, [[0, 1], [4, -5]], axis=1), "shape": tl.shape_of(x)}
    outs |= {"mid": emit("Shape", [x], {"start": -2, "end": -1}), "size": tl.size(x)}
    outs |= {"full": tl.full(tl.shape_of(y), 1.5), "range": tl.arange(2, n, 3)}
    outs |= {
        "pad": tl.pad(y, [1, 0, 2, 3], 9.0),
        "reflect": tl.pad(y, [2, 1, 0, 2], mode="reflect"),
    }
    outs |= {"where": tl.where(x > 0.0, x, y), "min": tl.minimum(x, y, 0.25)}
    outs |= {"logic": tl.logical_xor(x > 0.0, ~(y < 0.5)), "expand": tl.expand(y, [2, 1, 1])}
    model = tl.Model(outs)
    proto = _check(model, {"x": SEQ, "y": SEQ[0], "n": np.array(11, np.int64)})
    ops = {n.op_type for n in proto.graph.node}
    assert {"Split", "CumSum", "Gemm", "Pad", "Range", "ConstantOfShape"} <= ops
    assert [(o.domain, o.version) for o in proto.opset_import] == [("", OPSET)]


def test_element_types_and_constants() -> None:
    outs: dict[str, Any] = {}
    feeds: Feeds = {}
    for dt in ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"):
        value = np.array([[3, 1, 0], [2, 0, 1]]).astype(dt)
        x = tl.placeholder(dt, (2, 3), name=dt)
        outs[f"{dt}_cat"] = tl.concat([x, tl.constant(value[::-1].copy())])
        feeds[dt] = value
    for dt in ("float16", "float32", "float64"):
        x = tl.placeholder(dt, (2, "N"), name=dt)
        outs[f"{dt}_add"] = x + tl.constant(np.linspace(0, 1, 20).astype(dt).reshape(20, 1, 1))
        feeds[dt] = X.astype(dt)
    # onnxruntime has no bf16 arithmetic on CPU, but casts through it.
    outs["bf16"] = tl.cast(
        tl.cast(tl.placeholder("float32", (2, 3), name="f"), "bfloat16"), "float32"
    )
    feeds["f"] = X
    proto = _check(tl.Model(outs), feeds)
    # Large constants are initializers; small ones stay Constant nodes.
    assert [t.dims for t in proto.graph.initializer] == [[20, 1, 1]] * 3
    assert any(n.op_type == "Constant" for n in proto.graph.node)


def test_graph_types_keep_symbolic_and_unknown_dims() -> None:
    x = tl.placeholder("float32", ("N", "?", 3), name="x")
    proto = _check(tl.Model({"y": x * 2.0}), {"x": SEQ[:, :, :3]})
    dims = proto.graph.input[0].type.tensor_type.shape.dim
    assert [d.WhichOneof("value") for d in dims] == ["dim_param", None, "dim_value"]
    assert dims[0].dim_param == "N" and dims[2].dim_value == 3
    # The checker wants a rank on every model input and output.
    r = tl.placeholder("float32", None, name="r")
    with pytest.raises(tl.FormatError, match=r"input 'r' is f32\[\*\]: .* need a rank"):
        to_onnx(tl.Model({"s": tl.reduce_sum(r)}))
    # An output typed with unknown rank takes the rank onnx infers, when it can.
    g = Graph("unranked")
    y = g.add_input("y", tl.TensorType("float32", (2, 3)))
    dims = g.add_input("dims", tl.TensorType("int64", ("D",)))
    unranked = tl.TensorType("float32", None)
    relu = g.add_node("Relu", [y], output_types=[unranked], output_names=["relu"]).output
    flat = g.add_node("Reshape", [y, dims], output_names=["flat"]).output
    g.set_outputs([relu, flat])
    model = tl.Model(g)
    with pytest.raises(tl.FormatError, match="output 'flat' has unknown rank"):
        to_onnx(model)
    g.set_outputs([relu])
    proto = _check(model, {"y": X, "dims": np.array([6])})
    assert [d.dim_value for d in proto.graph.output[0].type.tensor_type.shape.dim] == [2, 3]


def test_sequence_and_optional_types() -> None:
    g = Graph("typed")
    s = g.add_input("s", tl.SequenceType(tl.TensorType("float32", ("N",))))
    o = g.add_input("o", tl.OptionalType(tl.TensorType("int64", (2,))))
    em = Emitter(g)
    g.set_outputs([em.op("Identity", [s], output_name="s_out"), em.op("Identity", [o])])
    proto = to_onnx(tl.Model(g))
    onnx.checker.check_model(proto, full_check=True)
    seq_type = proto.graph.input[0].type.sequence_type.elem_type.tensor_type
    assert seq_type.elem_type == onnx.TensorProto.FLOAT
    assert seq_type.shape.dim[0].dim_param == "N"
    opt_type = proto.graph.input[1].type.optional_type.elem_type.tensor_type
    assert opt_type.elem_type == onnx.TensorProto.INT64
    items = [X[0], X[1, :2]]
    (got, _) = _session(proto).run(None, {"s": items, "o": np.array([1, 2])})
    _same(got, items, "s_out")


def test_read_only_persistent_tensors_are_initializers() -> None:
    x = tl.placeholder("float32", (3,), name="x")
    w = tl.persistent_tensor(np.arange(3, dtype=np.float32), name="w")
    _, ys = tl.scan(lambda c, r: (c, r * w + c), tl.constant(np.float32(1)), tl.expand(x, [2, 3]))
    proto = _check(tl.Model({"ys": ys, "w_out": w}), {"x": X[0]})
    (init,) = proto.graph.initializer
    np.testing.assert_array_equal(onnx.numpy_helper.to_array(init), [0, 1, 2])


# -- loops ---------------------------------------------------------------------------------------
def test_rnn_example_encodes_and_decodes_until_the_threshold() -> None:
    model = tl.load(EXAMPLES / "rnn.tl")
    data = np.load(EXAMPLES / "rnn_inputs.npz")
    feeds = {k: data[k] for k in data.files}
    # The decoder stops on its own, stops at its cap of 10, or never starts.
    thresholds = [feeds["threshold"], np.float32(0.0), np.float32(1e6)]
    proto = _check(model, *({**feeds, "threshold": np.asarray(t)} for t in thresholds))
    loops = [n for n in proto.graph.node if n.op_type == "Loop"]
    assert len(loops) == 2
    # The scan's body weights are initializers the body reads by name.
    assert {t.name for t in proto.graph.initializer} == {"W_0", "U_2", "V_18"}


@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_scan_slices_and_stacks_on_any_axis(axis: int, reverse: bool) -> None:
    w = _rng.standard_normal(np.delete(SEQ.shape, axis)).astype(np.float32)
    feeds = [{"xs": SEQ}] + ([{"xs": SEQ[:0]}] if axis == 0 else [])  # only A can be 0
    _check(scan_on_axis(axis, reverse, w), *feeds)


def test_scan_with_invariants_and_iteration_index() -> None:
    xs, scale = tl.placeholder("float32", ("N", 3), name="xs"), tl.placeholder("float32", (3,), "s")
    out = tl.fori_loop(0, 4, lambda i, c: c + tl.cast(i, "float32") * scale, tl.constant(X[0]))
    _, ys = tl.scan(lambda c, x: (c + 1, x * scale + out + tl.cast(c, "float32")), 0, xs)
    _check(tl.Model({"out": out, "ys": ys}), {"xs": SEQ[0, :, :3], "s": X[1]})


def test_while_loop_stops_on_data() -> None:
    feeds = [{"x": np.abs(X[0]), "limit": np.array(lim, np.float32)} for lim in (0, 10, 1e3)]
    _check(while_on_data(), *feeds)


@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_fori_loop_with_run_time_bounds(dtype: str) -> None:
    lo = tl.placeholder(dtype, (), name="lo")
    hi = tl.placeholder(dtype, (), name="hi")
    total = tl.fori_loop(lo, hi, lambda i, acc: acc + i * i, tl.constant(np.array(0, dtype)))
    # The last two run zero trips: 7 > 3 is a negative trip count.
    feeds = [
        {"lo": np.array(a, dtype), "hi": np.array(b, dtype)} for a, b in ((2, 9), (5, 5), (7, 3))
    ]
    _check(tl.Model({"total": total}), *feeds)


def test_zero_trips_give_tensorloops_stacked_shapes() -> None:
    """After zero trips a stacked output's dims come from the body's types at the shapes its
    parameters would have had (unknown dims 0); onnxruntime would infer its own."""
    xs = tl.placeholder("float32", ("T", "B", 3), name="xs")
    k = tl.placeholder("float32", ("K",), name="k")
    n = tl.placeholder("int64", (), name="n")
    widened = tl.slice(k, [0], tl.reshape(n, [1]))  # f32[?]: bound from the actual input

    def step(c: Any, x: Any) -> Any:
        cropped = tl.slice(k, [0], tl.reshape(tl.cast(tl.reduce_sum(c), "int64"), [1]))
        outer = tl.unsqueeze(x, [0]) + tl.unsqueeze(k, [1, 2])
        return c, (x * 2.0, outer, cropped, widened * 2.0)

    _, (ys, outer, cropped, wide) = tl.scan(step, tl.constant(np.float32(2)), xs, axis=1)
    _, rev = tl.scan(lambda c, x: (c, x - tl.reduce_sum(k)), 0.0, xs, reverse=True)
    out = {"ys": ys, "outer": outer, "cropped": cropped, "wide": wide, "rev": rev}
    out["counted"] = tl.fori_loop(0, n, lambda i, c: c, xs)  # no stacked output: untouched
    model = tl.Model(out)
    assert ys.shape == ("T", "?", 3) and outer.shape == ("K", "?", "T", 3)
    assert cropped.shape == wide.shape == ("?", "?") and rev.shape == ("?", "B", 3)
    kv = np.arange(4, dtype=np.float32)
    feeds = [
        {"xs": SEQ[:, :3, :3], "k": kv, "n": np.array(2)},
        {"xs": np.zeros((2, 0, 3), np.float32), "k": kv, "n": np.array(3)},
        {"xs": np.zeros((0, 5, 3), np.float32), "k": kv, "n": np.array(0)},
    ]
    _check(model, *feeds)
    empty = model.run(feeds[1])
    assert empty["ys"].shape == (2, 0, 3) and empty["outer"].shape == (4, 0, 2, 3)
    assert empty["cropped"].shape == (0, 0) and empty["wide"].shape == (3, 0)
    assert model.run(feeds[2])["rev"].shape == (0, 5, 3)


def test_nested_loops_and_branches() -> None:
    """If in Loop, Loop in If, loops three deep, values captured two levels up."""
    xs = tl.placeholder("float32", ("N", 3), name="xs")
    flag = tl.placeholder("bool", (), name="flag")
    bias = tl.placeholder("float32", (3,), name="bias")

    def outer(c: Any, x: Any) -> Any:
        def middle(i: Any, a: Any) -> Any:
            deep = tl.fori_loop(0, 2, lambda j, b: b * 0.5 + x + bias, a)
            return deep + tl.cast(i, "float32")

        inner = tl.fori_loop(0, 3, middle, c)
        picked = tl.cond(tl.reduce_sum(x) > 0.0, lambda a: a + 1.0, lambda a: a - x, inner)
        step = tl.reduce_max(tl.abs(x)) + 0.1
        steps = tl.while_loop(lambda s: s < 3.0, lambda s: s + step, tl.constant(np.float32(0)))
        return picked, steps

    final, ys = tl.scan(outer, tl.constant(np.zeros(3, np.float32)), xs)

    def looped(a: Any, b: Any) -> Any:
        scale = tl.reduce_sum(a)
        _, zs = tl.scan(lambda c, y: (c, y * scale), tl.constant(np.float32(0)), b, reverse=True)
        return a * 2.0, zs

    top = tl.cond(flag, looped, lambda a, b: (-a, b + 1.0), final, ys)
    model = tl.Model({"final": final, "ys": ys, "top": top[0], "top_ys": top[1]})
    base = {"xs": SEQ[:, 0, :3], "bias": X[0]}
    feeds = [{**base, "flag": np.array(f)} for f in (True, False)]
    _check(model, *feeds, {**feeds[0], "xs": np.zeros((0, 3), np.float32)})


def test_hand_built_loop_with_every_control_input() -> None:
    xs_value = np.abs(SEQ) * 0.5
    cases = ((2, True), (9, True), (9, False), (-3, True))
    _check(
        tl.Model(hand_built_loop("T")),
        *({"xs": xs_value, "trip": np.array(n, np.int32), "go": np.array(s)} for n, s in cases),
    )


def test_carried_value_may_change_shape() -> None:
    x = tl.placeholder("float32", (2,), name="x")
    v = tl.while_loop(lambda s: tl.size(s) < 10, lambda s: tl.concat([s, s * 0.5]), x)
    _check(tl.Model({"v": v}), {"x": X[0, :2]})


def test_loop_structure_is_plain_onnx() -> None:
    """Invariants are outer-scope names, slices Gathers at the iteration number, and a scan
    on axis 0 needs no node after the Loop."""
    xs = tl.placeholder("float32", (4, 3), name="xs")
    s = tl.placeholder("float32", (3,), name="s")
    _, ys = tl.scan(lambda c, x: (c, x * s), tl.constant(np.float32(0)), xs)
    proto = _check(tl.Model({"ys": ys}), {"xs": SEQ[0, :4, :3], "s": X[0]})
    (loop,) = [n for n in proto.graph.node if n.op_type == "Loop"]
    assert loop.output[-1] == "ys" and proto.graph.node[-1] is loop
    body = loop.attribute[0].g
    names = [i.name for i in body.input]
    assert names[0] == "iteration" and len(names) == 3  # iteration_num, cond_in, the carry
    gather = body.node[0]
    assert (gather.op_type, list(gather.input)) == ("Gather", ["xs", "iteration"])
    assert any("s" in n.input for n in body.node)
    (m,) = [n for n in proto.graph.node if loop.input[0] in n.output]
    assert onnx.numpy_helper.to_array(m.attribute[0].t) == 4  # M: the static length


# -- ONNX in, ONNX out ----------------------------------------------------------------------------
ONNX_LOOPS = """
<ir_version: 10, opset_import: ["" : 21]>
loops (int64 M, bool c0, float[3] x, float[4,3] xs) => (float[3] fin, int64 n, float[N,3] ys) {
    zero = Constant <value = int64 {0}> ()
    fin, n, ys = Loop (M, c0, x, zero) <body = body (int64 i, bool cin, float[3] acc, int64 c)
                                           => (bool cout, float[3] acc2, int64 c2, float[3] y) {
        row = Gather <axis = 0> (xs, i)
        n2 = Constant <value = int64 {2}> ()
        inner = Loop (n2, , row) <body = ib (int64 j, bool ji, float[3] r)
                                         => (bool jo, float[3] r2) {
            jo = Identity (ji)
            r2 = Add (r, x)
        }>
        acc2 = Add (acc, inner)
        one = Constant <value = int64 {1}> ()
        c2 = Add (c, one)
        lim = Constant <value = float {10}> ()
        total = ReduceSum <keepdims = 0> (acc2)
        keep = Less (total, lim)
        cout = And (keep, cin)
        y = Mul (acc2, x)
    }>
}
"""
ONNX_SCAN = """
<ir_version: 10, opset_import: ["" : 21]>
scans (float[2] init, float[5,2] xs) => (float[2] last, float[2,5] ys) {
    last, ys = Scan <num_scan_inputs = 1, scan_input_directions = [1], scan_output_axes = [1],
                     scan_output_directions = [1],
                     body = sbody (float[2] st, float[2] xr) => (float[2] st2, float[2] y) {
        st2 = Add (st, xr)
        y = Mul (st2, xr)
    }> (init, xs)
}
"""
ONNX_BRANCHES = """
<ir_version: 10, opset_import: ["" : 21]>
branches (bool c, float[3] a, float[3] b) => (seq(float[3]) out, float[3] z) {
    out, z = If (c) <then_branch = tb () => (seq(float[3]) s1, float[3] z1) {
        s1 = SequenceConstruct (a, b)
        three = Constant <value = int64 {3}> ()
        z1 = Loop (three, , a) <body = lb (int64 k, bool ki, float[3] v) => (bool ko, float[3] v2) {
            ko = Identity (ki)
            v2 = Mul (v, b)
        }>
    }, else_branch = eb () => (seq(float[3]) s2, float[3] z2) {
        s2 = SequenceConstruct (b)
        z2 = Sub (a, b)
    }>
}
"""


def _onnx_feeds(name: str) -> list[Feeds]:
    rng = np.random.default_rng(5)
    x, xs = rng.random(3, np.float32), rng.random((4, 3), np.float32)
    if name == "loops":  # full length, cut by M, zero trips by M and by cond
        runs = ((4, True), (2, True), (0, True), (4, False))
        return [{"M": np.array(m), "c0": np.array(c), "x": x, "xs": xs} for m, c in runs]
    if name == "scans":
        return [{"init": x[:2], "xs": rng.random((5, 2), np.float32)}]
    return [{"c": np.array(c), "a": x, "b": xs[0]} for c in (True, False)]


@pytest.mark.parametrize(
    "text", [ONNX_LOOPS, ONNX_SCAN, ONNX_BRANCHES], ids=["loops", "scans", "branches"]
)
def test_onnx_import_export_import_computes_the_same(text: str) -> None:
    """Nested Loops reading outer values, a reversed Scan stacking on axis 1, an If holding a
    Loop and yielding sequences: onnxruntime on the original, onnxruntime on the export and the
    interpreter on the export's import all agree."""
    original = onnx.parser.parse_model(text)
    exported = to_onnx(tl.load(original))
    before, after = _session(original), _session(exported)
    again = tl.load(exported)
    for feeds in _onnx_feeds(original.graph.name):
        want = before.run(None, feeds)
        mine = again.run(feeds)
        for name, w, got in zip(again.output_names, want, after.run(None, feeds), strict=True):
            expected = w if isinstance(w, list) else np.asarray(w)
            _same(got, expected, name)
            _same(mine[name], expected, f"imported {name}")


# -- hypothesis: random canonical loops ------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(loop_specs())
def test_random_loops_run_the_same_in_onnxruntime(spec: Any) -> None:
    unbounded = spec.trip is None and not spec.sliced and spec.body_cond == ("true",)
    assume(not unbounded)  # onnxruntime has no iteration limit to stop it
    assume(bool(spec.carried_exprs or spec.stacked))  # onnxruntime runs no model without outputs
    _check(tl.Model(build(spec)), make_inputs(spec))


@st.composite
def scans(draw: st.DrawFn) -> tuple[tuple[int, ...], int, bool, int]:
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(0, 3), min_size=rank, max_size=rank)))
    return shape, draw(st.integers(-rank, rank - 1)), draw(st.booleans()), draw(st.integers(0, 99))


@settings(max_examples=25, deadline=None)
@given(scans())
def test_random_symbolic_scans_run_the_same_in_onnxruntime(case: Any) -> None:
    """Sources of symbolic shape, empty ones included: zero-trip results take their dims from
    the bound symbols."""
    tl.reset()
    shape, axis, reverse, seed = case
    xs = tl.placeholder("float64", [f"D{i}" for i in range(len(shape))], name="xs")

    def step(c: Any, x: Any) -> Any:
        return c + tl.reduce_sum(x), (x * c, tl.reduce_sum(x, keepdims=True))

    c, (ys, sums) = tl.scan(step, np.float64(0.5), xs, axis=axis, reverse=reverse)
    values = np.random.default_rng(seed).standard_normal(shape)
    _check(tl.Model({"c": c, "ys": ys, "sums": sums}), {"xs": values})


# -- files, options and errors ------------------------------------------------------------------
def test_save_writes_an_onnx_file(tmp_path: Path) -> None:
    x = tl.placeholder("float32", (3,), name="x")
    model = tl.Model({"y": tl.exp(x)})
    tl.save(model, tmp_path / "m.onnx")
    loaded = onnx.load(tmp_path / "m.onnx")
    assert loaded == to_onnx(model)
    tl.save(model, tmp_path / "old.onnx", opset=18)
    assert onnx.load(tmp_path / "old.onnx").opset_import[0].version == 18
    w = tl.constant(np.arange(40, dtype=np.float32).reshape(2, 20))
    big = tl.Model({"y": tl.matmul(tl.slice(tl.reshape(x, [1, 3]), [0], [2], [1]), w)})
    tl.save(big, tmp_path / "big.onnx", external_data=True)
    assert (tmp_path / "big.onnx.data").stat().st_size == 40 * 4
    feeds = {"x": X[0]}
    _same(tl.load(tmp_path / "big.onnx").run(feeds)["y"], big.run(feeds)["y"], "y")
    with pytest.raises(tl.FormatError, match="unknown option"):
        tl.save(model, tmp_path / "m.onnx", compress=True)


def test_persistent_state_is_a_format_error(tmp_path: Path) -> None:
    h = tl.persistent_tensor(np.zeros(3, np.float32), name="h")
    tl.assign(h, h + 1.0)
    with pytest.raises(tl.FormatError, match=r"m\.onnx: Assign.*'h'.*no state"):
        tl.save(tl.Model({"y": h * 1.0}), tmp_path / "m.onnx")


def test_ops_and_attributes_the_target_opset_lacks(tmp_path: Path) -> None:
    x = tl.placeholder("float32", (4,), name="x")
    a, _ = tl.split(x, 2)
    with pytest.raises(tl.FormatError, match=r"Split.*attribute 'num_outputs'.*Split-13"):
        to_onnx(tl.Model({"a": a}), opset=17)
    r = tl.arange(0, 3, 1)
    with pytest.raises(tl.FormatError, match=r"Range.*from opset 11 .*targets opset 10"):
        to_onnx(tl.Model({"r": r}), opset=10)
    dims = tl.placeholder("int64", ("D",), name="dims")
    rows = tl.placeholder("float32", ("T", 4), name="rows")
    _, ranked = tl.scan(lambda c, x: (c, tl.reshape(x, dims)), 0.0, rows)
    assert ranked.shape is None  # one trip or more: onnxruntime's result stands
    _check(tl.Model({"s": tl.shape_of(ranked)}), {"rows": SEQ[0, :2, :4], "dims": np.array([2, 2])})
    _, ys = tl.scan(
        lambda c, x: (c, tl.reshape(x, dims)), 0.0, tl.placeholder("float32", (2, 4)), axis=1
    )
    with pytest.raises(tl.FormatError, match=r"stacked result #0 has unknown rank, so its axis 1"):
        to_onnx(tl.Model({"ys": tl.shape_of(ys)}))
    g = Graph("dup")
    v = g.add_node("Relu", [g.add_input("x", tl.TensorType("float32", (2,)))]).output
    g.set_outputs([v, v])
    with pytest.raises(tl.FormatError, match="repeats"):
        to_onnx(tl.Model(g))
