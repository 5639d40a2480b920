"""tl.save to OpenVINO IR: OpenVINO reads the files and computes what tensorloop computes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ov = pytest.importorskip("openvino")

import defusedxml.ElementTree as SafeET  # noqa: E402

import tensorloop as tl  # noqa: E402
from loop_models import hand_built_loop, scan_on_axis, while_on_data  # noqa: E402
from tensorloop.builder.tracing import emit, emit_node  # noqa: E402
from tensorloop.formats.openvino.families import FAMILIES  # noqa: E402
from tensorloop.formats.openvino.writer import _EMITTERS  # noqa: E402
from tensorloop.ir.emit import Emitter  # noqa: E402
from tensorloop.ir.graph import Graph  # noqa: E402
from tensorloop.ir.loop import ITERATION_TYPE, Loop, Sliced, Stacked  # noqa: E402
from tensorloop.ir.opdef import registered_ops  # noqa: E402
from tensorloop.tensor.types import TensorType  # noqa: E402

Feeds = dict[str, np.ndarray[Any, Any]]
Case = Callable[[], tuple[tl.Model, Feeds]]

_rng = np.random.default_rng(7)
X = _rng.standard_normal((2, 3)).astype(np.float32)
Y = _rng.standard_normal((2, 3)).astype(np.float32)
P = (np.abs(X) + 0.5).astype(np.float32)
I = np.array([[7, -7, 5], [-9, 4, 0]], np.int32)  # noqa: E741
J = np.array([[2, 2, -3], [4, -3, 1]], np.int32)
B = np.array([[True, False, True], [False, False, True]])
C = np.array([[False, False, True], [True, False, True]])
SEQ = _rng.standard_normal((4, 5, 6)).astype(np.float32)


@pytest.fixture(autouse=True)
def _fresh_builder() -> None:
    tl.reset()


def _openvino_runs(model: tl.Model, tmp_path: Path, feeds: Feeds, runs: int = 1) -> list[Feeds]:
    """Save, read back with OpenVINO, and infer ``runs`` times in one request (state carries)."""
    path = tmp_path / "m.xml"
    tl.save(model, path)
    assert path.with_suffix(".bin").is_file()
    core = ov.Core()
    read = core.read_model(path)
    if any(p.get_partial_shape().rank.is_dynamic for p in read.inputs):
        # The CPU plugin takes no input of unknown rank; fixing the shapes still runs the IR.
        read.reshape({name: list(value.shape) for name, value in feeds.items()})
    # Exact f32 maths: some CPUs would otherwise run in bf16.
    compiled = core.compile_model(read, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    assert [p.get_any_name() for p in compiled.inputs] == model.input_names
    assert [p.get_any_name() for p in compiled.outputs] == model.output_names
    request = compiled.create_infer_request()
    results = []
    for _ in range(runs):
        out = request.infer(feeds)
        results.append({p.get_any_name(): np.array(out[p]) for p in compiled.outputs})
    return results


def _same(actual: np.ndarray[Any, Any], expected: np.ndarray[Any, Any], name: str) -> None:
    assert actual.shape == expected.shape, name
    assert actual.dtype == expected.dtype, name
    if expected.dtype.kind == "f":
        np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6, err_msg=name)
    else:
        np.testing.assert_array_equal(actual, expected, err_msg=name)


def _check(
    model: tl.Model, tmp_path: Path, feeds: Feeds, *, runs: int = 1, skip: tuple[str, ...] = ()
) -> list[Feeds]:
    got = _openvino_runs(model, tmp_path, feeds, runs)
    for result in got:
        want = model.run(feeds)
        for name in model.output_names:
            if name not in skip:
                _same(result[name], want[name], name)
    return got


def _ph(name: str, like: np.ndarray[Any, Any], shape: tuple[int | str, ...] | None = None) -> Any:
    return tl.placeholder(like.dtype, like.shape if shape is None else shape, name=name)


# -- every core op, through the builder -----------------------------------------------------------
def _binary() -> tuple[tl.Model, Feeds]:
    x, y, p = _ph("x", X), _ph("y", Y, ("N", 3)), _ph("p", P)
    outs = {"add": x + y, "sub": x - y, "mul": x * y, "div": x / p, "pow": tl.pow(p, y)}
    outs |= {"eq": tl.equal(x, tl.where(y > 0, x, y)), "lt": x < y, "gt": x > y}
    outs |= {"le": x <= y, "ge": tl.greater_equal(x, 0.1)}
    return tl.Model(outs), {"x": X, "y": Y, "p": P}


def _integers() -> tuple[tl.Model, Feeds]:
    i, j = _ph("i", I), _ph("j", J)
    outs = {"div": i / j, "neg": -i, "abs": tl.abs(i), "relu": tl.relu(i), "mod": i - (i / j) * j}
    outs |= {"ipow": tl.pow(tl.abs(i), tl.constant(np.int64(2)))}
    outs |= {"fpow": tl.pow(tl.abs(i), tl.constant(np.float32(0.5)))}
    return tl.Model(outs), {"i": I, "j": J}


def _unary() -> tuple[tl.Model, Feeds]:
    x, p = _ph("x", X), _ph("p", P)
    outs = {"neg": -x, "abs": tl.abs(x), "relu": tl.relu(x), "sqrt": tl.sqrt(p)}
    outs |= {"exp": tl.exp(x), "log": tl.log(p), "sigmoid": tl.sigmoid(x), "tanh": tl.tanh(x)}
    return tl.Model(outs), {"x": X, "p": P}


def _logic() -> tuple[tl.Model, Feeds]:
    b, c = _ph("b", B), _ph("c", C)
    outs = {"and": b & c, "or": b | c, "xor": tl.logical_xor(b, c), "not": ~b}
    outs |= {"where": tl.where(b, tl.constant(X), tl.constant(Y))}
    return tl.Model(outs), {"b": B, "c": C}


def _min_max() -> tuple[tl.Model, Feeds]:
    x, y = _ph("x", X), _ph("y", Y)
    outs = {"min3": tl.minimum(x, y, 0.25), "max3": tl.maximum(x, y, -0.25), "min1": tl.minimum(x)}
    return tl.Model(outs), {"x": X, "y": Y}


def _linalg() -> tuple[tl.Model, Feeds]:
    x, y = _ph("x", X), _ph("y", Y)
    v = tl.constant(np.arange(3, dtype=np.float32))
    batch = tl.constant(np.ones((4, 2, 3), np.float32))
    outs = {"mm": tl.matmul(x, tl.transpose(y)), "mv": x @ v, "vm": v @ tl.transpose(x)}
    outs |= {"bmm": tl.matmul(batch, tl.transpose(x)), "gemm0": tl.gemm(x, y, trans_b=True)}
    outs |= {"gemm": tl.gemm(x, y, v, alpha=0.5, beta=-2.0, trans_a=True)}
    ints = tl.constant(I.astype(np.int64))
    outs |= {"igemm": tl.gemm(ints, ints, alpha=0.5, trans_b=True)}
    return tl.Model(outs), {"x": X, "y": Y}


def _reductions() -> tuple[tl.Model, Feeds]:
    x = _ph("x", SEQ, ("N", 5, 6))
    outs = {"sum": tl.reduce_sum(x, 1, keepdims=True), "mean": tl.reduce_mean(x)}
    outs |= {"max": tl.reduce_max(x, [0, -1]), "min": tl.reduce_min(x, keepdims=True)}
    outs |= {"cumsum": tl.cumsum(x, 1), "cum_ex": tl.cumsum(x, -1, exclusive=True, reverse=True)}
    outs |= {"softmax": tl.softmax(x), "softmax0": tl.softmax(x, axis=0)}
    return tl.Model(outs), {"x": SEQ}


def _argmax() -> tuple[tl.Model, Feeds]:
    ties = np.array([[1, 3, 3, 0], [2, 2, 1, 2], [0, 0, 0, 0]], np.float32)
    x = _ph("x", ties)
    outs = {"a0": tl.argmax(x), "a1": tl.argmax(x, axis=1, keepdims=True)}
    outs |= {"last": emit("ArgMax", [x], {"axis": -1, "keepdims": 0, "select_last_index": 1})}
    return tl.Model(outs), {"x": ties}


def _topk() -> tuple[tl.Model, Feeds]:
    ties = np.array([[1, 3, 3, 0], [2, 2, 1, 2], [0, 5, 0, 4]], np.float32)
    x = _ph("x", ties)
    outs: dict[str, Any] = {}
    for largest, axis in ((1, 1), (0, 0)):
        k = tl.constant(np.array([2], np.int64))
        values, index = emit_node("TopK", [x, k], {"axis": axis, "largest": largest})
        outs |= {f"values{largest}": values, f"index{largest}": index}
    return tl.Model(outs), {"x": ties}


def _reshaping() -> tuple[tl.Model, Feeds]:
    x = _ph("x", SEQ, ("N", 5, 6))
    outs = {
        "reshape": tl.reshape(x, [0, -1]),
        "t": tl.transpose(x),
        "t2": tl.transpose(x, [1, 0, 2]),
    }
    u = tl.unsqueeze(x, [0, -1])
    outs |= {"unsq": u, "sq": tl.squeeze(u, [0]), "sq_all": tl.squeeze(tl.constant(SEQ[:1, :, :1]))}
    outs |= {"concat": tl.concat([x, x * 2.0], axis=-1), "expand": tl.expand(x, [2, 1, 1, 1])}
    return tl.Model(outs), {"x": SEQ}


def _splitting() -> tuple[tl.Model, Feeds]:
    x = _ph("x", SEQ, ("N", 5, 6))
    a, b = tl.split(x, 2, axis=-1)
    c, d, e = tl.split(x, 3, axis=1)  # 5 into 2, 2, 1: ONNX's uneven rule
    f, g = tl.split(x, [1, 4], axis=1)
    h, k = tl.split(x, 2, axis=0)  # N only known at run time
    outs = dict(zip("abcdefghk", (a, b, c, d, e, f, g, h, k), strict=True))
    return tl.Model(outs), {"x": SEQ}


def _indexing() -> tuple[tl.Model, Feeds]:
    x = _ph("x", SEQ, ("N", 5, 6))
    outs = {"s1": tl.slice(x, [1, -2], [-1, 100]), "s2": tl.slice(x, [-1], [-100], [2], [-2])}
    outs |= {"s3": tl.slice(x, [0, 4], [3, 0], axes=[0, 1], steps=[2, -1])}
    outs |= {"g0": tl.gather(x, [-1, 0, 1]), "g1": tl.gather(x, [[0, 1], [4, -5]], axis=1)}
    outs |= {"shape": tl.shape_of(x), "tail": emit("Shape", [x], {"start": 1})}
    outs |= {"mid": emit("Shape", [x], {"start": -2, "end": -1}), "size": tl.size(x)}
    outs |= {"full": tl.full(tl.shape_of(x), 1.5), "zeros": tl.full([2, 0], 3, "int32")}
    starts = tl.placeholder("int64", ("K",), name="starts")  # steps default to ones at run time
    outs |= {"s4": emit("Slice", [x, starts, tl.constant(np.array([3, 100, -1]))])}
    return tl.Model(outs), {"x": SEQ, "starts": np.array([1, -3, 0])}


def _ranges_and_casts() -> tuple[tl.Model, Feeds]:
    n = tl.placeholder("int64", (), name="n")
    x = _ph("x", X * 3)
    outs = {"r": tl.arange(2, n, 3), "rf": tl.arange(0.5, 2.0, 0.25), "down": tl.arange(n, 0, -2)}
    outs |= {"toi": tl.cast(x, "int32"), "tob": tl.cast(x, "bool"), "tof": tl.cast(n, "float64")}
    outs |= {"f16": tl.cast(x, "float16"), "i8": tl.cast(tl.cast(x, "int32"), "int8")}
    return tl.Model(outs), {"n": np.array(11, np.int64), "x": X * 3}


def _padding() -> tuple[tl.Model, Feeds]:
    x = _ph("x", SEQ[0], ("N", 6))
    outs = {
        "fill": tl.pad(x, [1, 0, 2, 3], 9.0),
        "reflect": tl.pad(x, [2, 1, 0, 2], mode="reflect"),
    }
    outs |= {
        "edge": tl.pad(x, [0, 3, 1, 0], mode="edge"),
        "wrap": tl.pad(x, [7, 2, 1, 9], mode="wrap"),
    }
    outs |= {"crop": tl.pad(x, [-1, 2, 1, -3]), "wrap_crop": tl.pad(x, [-1, 0, 2, -2], mode="wrap")}
    pads = tl.placeholder("int64", (4,), name="pads")  # known only at run time
    outs |= {"run_time": emit("Pad", [x, pads, tl.constant(np.float32(2))], {"mode": "constant"})}
    outs |= {"run_time_edge": emit("Pad", [x, pads], {"mode": "edge"})}
    feeds = {"x": SEQ[0], "pads": np.array([1, 0, 2, 1])}
    return tl.Model(outs), feeds


def _identity_and_constants() -> tuple[tl.Model, Feeds]:
    x = _ph("x", X)
    y = x + 1.0
    # An output that is an input, one that is another output, and a constant one.
    outs = {"x_out": x, "y": y, "y_again": tl.identity(y), "k": tl.constant(np.int64(3))}
    # a Check that holds passes its value through (OpenVINO has no assertion to write it as)
    outs["checked"] = emit("Check", [tl.constant(np.bool_(True)), y], {"message": "never"})
    return tl.Model(outs), {"x": X}


def _unknown_rank() -> tuple[tl.Model, Feeds]:
    x = tl.placeholder("float32", None, name="x")
    y = tl.placeholder("float32", ("N", 1, 3), name="y")
    outs = {"sum": tl.reduce_sum(x), "max": tl.reduce_max(x, keepdims=True), "t": tl.transpose(x)}
    outs |= {"flat": tl.reshape(x, [-1]), "squeezed": tl.squeeze(y)}
    return tl.Model(outs), {"x": SEQ, "y": SEQ[:, :1, :3]}


CASES: dict[str, Case] = {
    "binary": _binary,
    "integers": _integers,
    "unary": _unary,
    "logic": _logic,
    "min_max": _min_max,
    "linalg": _linalg,
    "reductions": _reductions,
    "argmax": _argmax,
    "topk": _topk,
    "reshaping": _reshaping,
    "splitting": _splitting,
    "indexing": _indexing,
    "ranges_and_casts": _ranges_and_casts,
    "padding": _padding,
    "identity_and_constants": _identity_and_constants,
    "unknown_rank": _unknown_rank,
}


@pytest.mark.parametrize("case", CASES)
def test_ops_match_tensorloop(case: str, tmp_path: Path) -> None:
    model, feeds = CASES[case]()
    _check(model, tmp_path, feeds)


def _ops_in(graph: Graph) -> set[str]:
    return {node.op for _, node in graph.walk()}


FAMILY_TESTS = {
    "elementwise": ["test_openvino_elementwise_layers.py"],
    "reduce": ["test_openvino_reduce_layers.py"],
    "linalg": ["test_openvino_linalg_layers.py"],
    "shape": ["test_openvino_shape_layers.py"],
    "indexing": ["test_openvino_indexing_layers.py"],
    "quant": ["test_openvino_quant_layers.py"],
    "nn": ["test_openvino_nn_layers.py"],
    "image": ["test_openvino_image_layers.py"],
    "signal": ["test_openvino_signal_layers.py"],
    "detection": ["test_openvino_roi_layers.py", "test_openvino_detection_output_layers.py"],
    "nms": ["test_openvino_nms_layers.py", "test_openvino_multiclass_nms_layers.py"],
    "strings": ["test_openvino_strings_layers.py"],
    "sparse": ["test_openvino_sparse_layers.py"],
    "random": ["test_openvino_random_layers.py"],
}
"""Each op family's emitters are tested in the family's own files, against the CPU plugin (or,
for the core ops every model has, by the cases above)."""


def test_every_op_the_writer_lowers_is_tested() -> None:
    covered: set[str] = set()
    for case in CASES.values():
        tl.reset()
        covered |= _ops_in(case()[0].graph)
    control = {"Loop", "If", "ReadVariable", "Assign"}  # tested below
    families: set[str] = set()
    for family in FAMILIES:
        if family.writing is None or family.name in ("state", "control"):
            continue
        files = FAMILY_TESTS[family.name]
        text = "".join((Path(__file__).parent / f).read_text(encoding="utf-8") for f in files)
        written = family.writing.EMITTERS
        untested = sorted(op for op in written if op not in covered and f'"{op}"' not in text)
        assert untested == [], f"{', '.join(files)} do not test {untested}"
        families |= set(written)
    assert set(_EMITTERS) - control - covered - families == set()
    assert set(_EMITTERS) <= set(registered_ops())


def test_an_op_without_a_lowering_is_a_format_error(tmp_path: Path) -> None:
    assert "Det" not in _EMITTERS  # OpenVINO has no determinant
    g = Graph("g")
    x = g.add_input("x", TensorType("f32", [3, 3]))
    g.set_outputs(g.add_node("Det", [x]).outputs)
    with pytest.raises(tl.FormatError, match="no OpenVINO lowering for op 'Det'"):
        tl.save(tl.Model(g), tmp_path / "det.xml")


# -- loops ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_scan_slices_and_stacks_on_any_axis(axis: int, reverse: bool, tmp_path: Path) -> None:
    w = _rng.standard_normal(np.delete(SEQ.shape, axis)).astype(np.float32)
    _check(scan_on_axis(axis, reverse, w), tmp_path, {"xs": SEQ})


def test_scan_with_invariants_and_iteration_index(tmp_path: Path) -> None:
    xs, scale = tl.placeholder("float32", ("N", 3), name="xs"), tl.placeholder("float32", (3,), "s")
    out = tl.fori_loop(0, 4, lambda i, c: c + tl.cast(i, "float32") * scale, tl.constant(X[0]))
    _, ys = tl.scan(lambda c, x: (c, x * scale + out), tl.constant(np.float32(0)), xs)
    _check(tl.Model({"out": out, "ys": ys}), tmp_path, {"xs": SEQ[0, :, :3], "s": X[1]})


def test_while_loop_stops_on_data(tmp_path: Path) -> None:
    model = while_on_data()
    for lim in (0.0, 10.0, 1000.0):  # 0.0: zero trips
        feeds = {"x": np.abs(X[0]), "limit": np.array(lim, np.float32)}
        _check(model, tmp_path, feeds)


@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_fori_loop_with_run_time_bounds(dtype: str, tmp_path: Path) -> None:
    lo = tl.placeholder(dtype, (), name="lo")
    hi = tl.placeholder(dtype, (), name="hi")
    total = tl.fori_loop(lo, hi, lambda i, acc: acc + i * i, tl.constant(np.array(0, dtype)))
    model = tl.Model({"total": total})
    # The last two run zero trips: 7 > 3 is a negative trip count, not an unbounded one.
    for a, b in ((2, 9), (5, 5), (7, 3)):
        _check(model, tmp_path, {"lo": np.array(a, dtype), "hi": np.array(b, dtype)})


def test_zero_trip_scan_keeps_the_carry(tmp_path: Path) -> None:
    xs = tl.placeholder("float32", ("N", 3), name="xs")
    final, ys = tl.scan(lambda c, x: (c + x, c * x), tl.constant(X[0]), xs)
    model = tl.Model({"final": final, "ys": ys})
    # OpenVINO leaves a zero-trip Loop's concatenated output uninitialised: only its shape counts.
    (got,) = _check(model, tmp_path, {"xs": np.zeros((0, 3), np.float32)}, skip=("ys",))
    assert got["ys"].shape[1:] == (3,)


def test_nested_loops_and_branches(tmp_path: Path) -> None:
    xs = tl.placeholder("float32", ("N", 3), name="xs")
    flag = tl.placeholder("bool", (), name="flag")

    def outer(c: Any, x: Any) -> Any:
        inner = tl.fori_loop(0, 3, lambda i, a: a * 0.5 + x, c)
        picked = tl.cond(tl.reduce_sum(x) > 0.0, lambda a: a + 1.0, lambda a: a - x, inner)
        step = tl.reduce_max(tl.abs(x)) + 0.1
        steps = tl.while_loop(lambda s: s < 3.0, lambda s: s + step, tl.constant(np.float32(0)))
        return picked, steps

    final, ys = tl.scan(outer, tl.constant(np.zeros(3, np.float32)), xs)
    top = tl.cond(flag, lambda a, b: (a * 2.0, b), lambda a, b: (-a, b + 1.0), final, ys)
    model = tl.Model({"final": final, "ys": ys, "top": top[0], "top_ys": top[1]})
    for f in (True, False):
        _check(model, tmp_path, {"xs": SEQ[:, 0, :3], "flag": np.array(f)})


def test_stateful_model_keeps_state_across_runs(tmp_path: Path) -> None:
    x = tl.placeholder("float32", ("N", 3), name="x")
    h = tl.persistent_tensor(np.zeros(3, np.float32), name="h")
    calls = tl.persistent_tensor(np.int64(0), name="calls")
    offset = tl.persistent_tensor(np.array([5, -1], np.int32), name="offset")
    s, ys = tl.scan(lambda c, r: (c + r, c * r), h, x)
    tl.assign(h, s)
    counted = calls + 1
    tl.assign(calls, counted)
    tl.assign(offset, offset * 2)
    # Not `calls` itself: OpenVINO's CPU plugin fails on an i64 ReadValue feeding a Result.
    model = tl.Model({"s": s, "ys": ys, "count": counted, "offset": offset})
    feeds = {"x": SEQ[0, :, :3]}
    got = _check(model, tmp_path, feeds, runs=3)  # tensorloop's own session runs alongside
    assert [int(r["count"]) for r in got] == [1, 2, 3]
    assert got[2]["offset"].tolist() == [20, -4]


def test_hand_built_loop_with_every_control_input(tmp_path: Path) -> None:
    model = tl.Model(hand_built_loop(5))
    xs_value = np.abs(SEQ) * 0.5
    for n, start in ((2, True), (9, True), (9, False), (-3, True)):
        feeds = {"xs": xs_value, "trip": np.array(n, np.int32), "go": np.array(start)}
        zero_trips = n < 0 or not start
        _check(model, tmp_path, feeds, skip=("stacked0", "stacked2") if zero_trips else ())


def test_carried_value_may_change_shape(tmp_path: Path) -> None:
    x = tl.placeholder("float32", (2,), name="x")
    v = tl.while_loop(lambda s: tl.size(s) < 10, lambda s: tl.concat([s, s * 0.5]), x)
    _check(tl.Model({"v": v}), tmp_path, {"x": X[0, :2]})


_DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]


@pytest.mark.parametrize("dtype", [*_DTYPES, "float16", "float32", "float64"])
def test_element_types(dtype: str, tmp_path: Path) -> None:
    value = np.array([[3, 1, 0], [2, 0, 1]]).astype(dtype)
    x = tl.placeholder(dtype, (2, 3), name="x")
    k = tl.constant(value[::-1].copy())
    outs = {"k": k, "cat": tl.concat([x, k]), "f": tl.cast(x, "float32")}
    if dtype != "bool":
        outs |= {"add": x + k, "max": tl.reduce_max(x, 1)}
    _check(tl.Model(outs), tmp_path, {"x": value})


def test_bfloat16_inside_the_model(tmp_path: Path) -> None:
    # OpenVINO's Python API has no bf16 arrays, so the model's inputs and outputs stay f32.
    x = tl.placeholder("float32", (2, 3), name="x")
    b = tl.cast(x, "bfloat16")
    y = tl.cast(b * tl.constant(np.full(3, 1.5, tl.DType.bfloat16.numpy)), "float32")
    model = tl.Model({"y": y})
    want = model.run({"x": X})["y"]
    bf16 = tl.DType.bfloat16.numpy
    np.testing.assert_array_equal(want, (X.astype(bf16) * np.array(1.5, bf16)).astype(np.float32))
    got = _openvino_runs(model, tmp_path, {"x": X})[0]["y"]
    # The IR keeps the bf16 arithmetic, but OpenVINO's CPU plugin under an f32 precision hint
    # runs it in f32 and skips the roundings (docs/openvino.md): agree to bf16 precision.
    assert 'destination_type="bf16"' in (tmp_path / "m.xml").read_text()
    np.testing.assert_allclose(got, want, rtol=2**-7, atol=0)


# -- the file itself, and errors ------------------------------------------------------------------
def test_file_is_ir_v11_with_loop_5_port_maps(tmp_path: Path) -> None:
    xs = tl.placeholder("float32", ("N", 3), name="xs")
    _, ys = tl.scan(lambda c, x: (c + x, c), tl.constant(X[0]), xs, reverse=True)
    tl.save(tl.Model({"ys": ys}), tmp_path / "m.xml")
    root = SafeET.parse(tmp_path / "m.xml").getroot()
    assert (root.tag, root.get("version")) == ("net", "11")
    (loop,) = [e for e in root.iter("layer") if e.get("type") == "Loop"]
    assert loop.get("version") == "opset5"
    purposes = {e.get("purpose") for e in loop.iterfind("port_map/*")}
    assert {"current_iteration", "execution_condition"} <= purposes
    assert len(loop.findall("back_edges/edge")) == 1
    tl.save(tl.Model({"ys": ys}), tmp_path / "n.xml", bin_path=tmp_path / "weights.bin")
    assert not (tmp_path / "n.bin").exists()
    assert ov.Core().read_model(tmp_path / "n.xml", tmp_path / "weights.bin").outputs


def test_unsupported_values_raise_format_error(tmp_path: Path) -> None:
    g = Graph("seq")
    s = g.add_input("s", tl.SequenceType(tl.TensorType("float32", (3,))))
    g.set_outputs([s])
    with pytest.raises(tl.FormatError, match=r"m\.xml: input 's' is seq<f32\[3\]>"):
        tl.save(tl.Model(g), tmp_path / "m.xml")
    x = tl.placeholder("float32", (4,), name="x")
    pads = tl.placeholder("int64", (2,), name="pads")
    wrapped = emit("Pad", [x, pads, tl.constant(np.float32(0))], {"mode": "wrap"})
    with pytest.raises(tl.FormatError, match=r"Pad .*wrap.* constant pads"):
        tl.save(tl.Model({"w": wrapped}), tmp_path / "m.xml")
    g = Graph("state")
    g.add_variable("v", np.zeros(2, np.float32))
    em = Emitter(g)
    em.ops("Assign", [em.const(np.ones(2, np.float32))], {"variable": "v"})
    v_type = tl.TensorType("float32", (2,))
    g.set_outputs([em.op("ReadVariable", [], {"variable": "v", "type": v_type})])
    with pytest.raises(tl.FormatError, match="reads variable 'v' after assigning it"):
        tl.save(tl.Model(g), tmp_path / "m.xml")
    with pytest.raises(tl.FormatError, match="unknown option"):
        tl.save(tl.Model({"w": wrapped}), tmp_path / "m.xml", compress=True)


def test_an_element_type_openvino_lacks_is_a_format_error(tmp_path: Path) -> None:
    g = Graph("g")
    x = g.add_input("x", TensorType("f32", [3]))
    g.set_outputs(g.add_node("Cast", [x], {"to": tl.dtype("float8e4m3fnuz")}).outputs)
    with pytest.raises(tl.FormatError, match="OpenVINO IR has no element type for float8e4m3fnuz"):
        tl.save(tl.Model(g), tmp_path / "f8.xml")


def test_topk_reads_back_as_written(tmp_path: Path) -> None:
    model, feeds = _topk()
    tl.save(model, tmp_path / "topk.xml")
    back = tl.load(tmp_path / "topk.xml")
    want, got = model.run(feeds), back.run(feeds)
    for name in model.output_names:
        _same(got[name], want[name], name)


def _run_openvino_ir(path: Path, requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each of ``requests`` run in turn on one infer request of the CPU plugin, in f32."""
    compiled = ov.Core().compile_model(str(path), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    request = compiled.create_infer_request()
    results = []
    for feeds in requests:
        got = request.infer(feeds)
        results.append({o.get_any_name(): np.array(got[o], copy=True) for o in compiled.outputs})
    return results


def test_a_carried_value_computed_from_its_slice_gets_its_own_buffer(tmp_path: Path) -> None:
    # h = x_t + h, stacked and carried: the CPU plugin (2026.4) runs the Add in place in the
    # slice's buffer and fed the next slice back as h unless the carried result is a copy.
    tl.reset()
    x = tl.placeholder("float32", ("T", 2), name="x")
    h0 = tl.placeholder("float32", (2,), name="h0")
    last, ys = tl.scan(lambda h, xt: (xt + h, xt + h), h0, x)
    model = tl.Model({"ys": ys, "last": last})
    tl.save(model, tmp_path / "m.xml")
    xs = np.array([[1, 1], [10, 10], [100, 100]], np.float32)
    feeds = {"x": xs, "h0": np.full(2, 0.5, np.float32)}
    (got,) = _run_openvino_ir(tmp_path / "m.xml", [feeds])
    want = model.run(feeds)
    np.testing.assert_array_equal(got["last"], want["last"])  # 111.5, not 200
    np.testing.assert_array_equal(got["ys"], want["ys"])


def test_a_loop_run_zero_times_by_a_run_time_count_stacks_nothing(tmp_path: Path) -> None:
    # The CPU plugin (2026.4) returns the previous run's stacked rows from a Loop whose trip
    # count, known only at run time, is 0: the writer cuts stacked outputs to the trips.
    graph = Graph("counted")
    xs = graph.add_input("x", TensorType("float32", ("T", 3)))
    count = graph.add_input("n", TensorType("int64", ()))
    body = Graph("body")
    body.add_input("i", ITERATION_TYPE)
    xt = body.add_input("xt", TensorType("float32", (3,)))
    bem = Emitter(body)
    body.set_outputs([bem.const(np.array(True)), bem.op("Mul", [xt, bem.const(np.float32(2))])])
    loop = Loop.build(
        Emitter(graph), body, max_trip_count=count, sliced=[(xs, Sliced(0))], stacked=[Stacked(0)]
    )
    graph.set_outputs([graph.result_named(loop.outputs[0], "ys")])
    model = tl.Model(graph)
    tl.save(model, tmp_path / "n.xml")
    ones = np.ones((3, 3), np.float32)
    runs = [{"x": ones, "n": np.array(k)} for k in (2, 0, 1, 0)]
    for feeds, got in zip(runs, _run_openvino_ir(tmp_path / "n.xml", runs), strict=True):
        np.testing.assert_array_equal(got["ys"], model.run(feeds)["ys"])
