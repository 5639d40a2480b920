"""TensorIterator-1 and Loop-5 from IR that OpenVINO itself writes, against OpenVINO's CPU results.

Where OpenVINO departs from its own spec (sub-ranges, part_size > 1, zero-trip concatenation,
int64 counters), the expected values are computed here in NumPy from the spec's text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

ov = pytest.importorskip("openvino")
ops = pytest.importorskip("openvino.opset13")

from openvino_layer_checks import record_layer_types, written_runs_alike  # noqa: E402

import tensorloop as tl  # noqa: E402

RNG = np.random.default_rng(0)
F32 = {"INFERENCE_PRECISION_HINT": "f32"}  # the CPU plugin may otherwise compute in bf16


def _roundtrip(model: Any, tmp_path: Path) -> tuple[tl.Model, Any]:
    path = tmp_path / "m.xml"
    ov.save_model(model, str(path), compress_to_fp16=False)
    return tl.load(path), ov.Core().compile_model(str(path), "CPU", F32)


def _ov_run(compiled: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    result = compiled(feeds)
    return [np.asarray(result[out]) for out in compiled.outputs]


def _check(model: Any, feeds: dict[str, np.ndarray], tmp_path: Path, **tol: float) -> list[Any]:
    ours, theirs = _roundtrip(model, tmp_path)
    got = list(ours.run(feeds).values())
    want = _ov_run(theirs, feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=tol.get("rtol", 1e-6), atol=tol.get("atol", 1e-6))
    record_layer_types(tmp_path / "m.xml", "compared")
    (tmp_path / "written").mkdir()
    written_runs_alike(ours, feeds, tmp_path / "written", **tol)
    record_layer_types(tmp_path / "m.xml", "written")
    return got


def _f32(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _ti_rnn(axis: int, stride: int, in_shape: list[int], hidden: int) -> tuple[Any, list[str]]:
    """A TensorIterator running h = tanh(x_t @ W + h @ U) over ``axis``; two back edges."""
    X = ops.parameter(in_shape, np.float32, name="X")
    H = ops.parameter([in_shape[0] if axis != 0 else in_shape[1], hidden], np.float32, name="H")
    C = ops.parameter([1, hidden], np.float32, name="C")
    part_shape = list(in_shape)
    part_shape[axis] = 1
    feat = in_shape[-1] if axis != len(in_shape) - 1 else in_shape[-2]
    xi = ops.parameter(part_shape, np.float32, name="xi")
    hi = ops.parameter(H.get_partial_shape(), np.float32, name="hi")
    ci = ops.parameter([1, hidden], np.float32, name="ci")
    W = ops.constant(_f32(feat, hidden) * 0.5)
    U = ops.constant(_f32(hidden, hidden) * 0.5)
    x2 = ops.squeeze(xi, ops.constant(np.array([axis], np.int64)))
    if axis == len(in_shape) - 1:
        x2 = ops.transpose(x2, ops.constant(np.array([0, 1], np.int64)))
    h_new = ops.tanh(ops.add(ops.matmul(x2, W, False, False), ops.matmul(hi, U, False, False)))
    c_new = ops.add(ci, ops.reduce_sum(h_new, ops.constant(np.array([0], np.int64)), True))
    r_h, r_c = ops.result(h_new), ops.result(c_new)
    r_y = ops.result(ops.unsqueeze(h_new, ops.constant(np.array([1], np.int64))))
    body = ov.Model([r_h, r_c, r_y], [xi, hi, ci], "body")
    ti = ops.tensor_iterator()
    ti.set_body(body)
    start, end = (0, -1) if stride > 0 else (-1, 0)
    ti.set_sliced_input(xi, X.output(0), start, stride, 1, end, axis)
    ti.set_merged_input(hi, H.output(0), r_h.output(0))
    ti.set_merged_input(ci, C.output(0), r_c.output(0))
    outs = [
        ti.get_iter_value(r_h.output(0), -1),
        ti.get_iter_value(r_c.output(0), -1),
        ti.get_concatenated_slices(r_y.output(0), start, stride, 1, end, 1),
    ]
    return ov.Model(outs, [X, H, C], "ti_rnn"), ["X", "H", "C"]


@pytest.mark.parametrize("stride", [1, -1])
@pytest.mark.parametrize(("axis", "shape"), [(0, [5, 2, 3]), (1, [2, 5, 3]), (2, [2, 3, 5])])
def test_tensor_iterator_slices_every_axis_both_ways(
    axis: int, shape: list[int], stride: int, tmp_path: Path
) -> None:
    model, _ = _ti_rnn(axis, stride, shape, hidden=4)
    batch = shape[1] if axis == 0 else shape[0]
    feeds = {"X": _f32(*shape), "H": _f32(batch, 4), "C": _f32(1, 4)}
    _check(model, feeds, tmp_path, rtol=1e-5, atol=1e-6)


def _ti_identity(length: int, start: int, end: int, stride: int, part: int) -> Any:
    X = ops.parameter([length, 2], np.float32, name="X")
    xi = ops.parameter([part, 2], np.float32, name="xi")
    r = ops.result(ops.multiply(xi, ops.constant(np.float32(1.0))))
    body = ov.Model([r], [xi], "body")
    ti = ops.tensor_iterator()
    ti.set_body(body)
    ti.set_sliced_input(xi, X.output(0), start, stride, part, end, 0)
    y = ti.get_concatenated_slices(r.output(0), 0, 1, part, -1, 0)
    return ov.Model([y], [X], "ti")


def _spec_parts(length: int, start: int, end: int, stride: int, part: int) -> list[int]:
    """The rows a TensorIterator reads, from the spec: negative indices count from the end,
    end is inclusive, each iteration takes ``part`` rows; parts start max(|stride|, part) apart,
    backwards for a negative stride."""
    first = start + length if start < 0 else start
    last = end + length if end < 0 else end
    step = max(abs(stride), part)
    rows: list[int] = []
    if stride > 0:
        lo = first
        while lo + part - 1 <= last:
            rows += range(lo, lo + part)
            lo += step
    else:
        hi = first
        while hi - part + 1 >= last:
            rows += range(hi - part + 1, hi + 1)
            hi -= step
    return rows


@pytest.mark.parametrize(
    ("start", "end", "stride", "part"),
    [(0, -1, 1, 1), (-1, 0, -1, 1), (1, -2, 1, 1), (-2, 1, -1, 1), (0, 3, 1, 1), (4, 0, -1, 1),
     (0, -1, 2, 2), (-1, 0, -2, 2), (0, -1, 2, 1), (1, 4, 1, 2)],
)  # fmt: skip
def test_tensor_iterator_sub_ranges_follow_the_spec(
    start: int, end: int, stride: int, part: int, tmp_path: Path
) -> None:
    model = _ti_identity(6, start, end, stride, part)
    path = tmp_path / "m.xml"
    ov.save_model(model, str(path), compress_to_fp16=False)
    x = np.arange(12, dtype=np.float32).reshape(6, 2)
    got = tl.load(path).run({"X": x})
    rows = _spec_parts(6, start, end, stride, part)
    np.testing.assert_array_equal(next(iter(got.values())), x[rows])


def test_openvino_ignores_tensor_iterator_sub_ranges(tmp_path: Path) -> None:
    """Pins the documented anchor bug: OpenVINO's CPU plugin reads rows 0..3 for start=1, end=-2."""
    model = _ti_identity(6, 1, -2, 1, 1)
    path = tmp_path / "m.xml"
    ov.save_model(model, str(path), compress_to_fp16=False)
    x = np.arange(12, dtype=np.float32).reshape(6, 2)
    theirs = _ov_run(ov.Core().compile_model(str(path), "CPU", F32), {"X": x})[0]
    ours = next(iter(tl.load(path).run({"X": x}).values()))
    np.testing.assert_array_equal(ours, x[1:5])
    assert not np.array_equal(theirs, ours)


def _counting_loop(trip: Any, cond: Any, limit: float, with_iteration: bool) -> Any:
    """acc += x * (i + 1) while acc.sum() < limit; stacks acc every iteration."""
    X = ops.parameter([3], np.float32, name="X")
    it = ops.parameter([], np.int64, name="it")
    acc = ops.parameter([3], np.float32, name="acc")
    xb = ops.parameter([3], np.float32, name="xb")
    scale = (
        ops.convert(ops.add(it, ops.constant(np.int64(1))), "f32")
        if with_iteration
        else (ops.constant(np.float32(1.0)))
    )
    new = ops.add(acc, ops.multiply(xb, scale))
    keep = ops.less(
        ops.reduce_sum(new, ops.constant(np.array([0], np.int64)), False),
        ops.constant(np.float32(limit)),
    )
    r_cond, r_acc = ops.result(keep), ops.result(new)
    r_y = ops.result(ops.unsqueeze(new, ops.constant(np.array([0], np.int64))))
    body = ov.Model([r_cond, r_acc, r_y], [it, acc, xb], "body")
    loop = ops.loop(trip, cond)
    loop.set_function(body)
    loop.set_special_body_ports([0, 0])
    loop.set_merged_input(acc, ops.constant(np.zeros(3, np.float32)).output(0), r_acc.output(0))
    loop.set_invariant_input(xb, X.output(0))
    outs = [
        loop.get_iter_value(r_acc.output(0), -1),
        loop.get_concatenated_slices(r_y.output(0), 0, 1, 1, -1, 0),
    ]
    params = [X]
    for p in (trip, cond):
        if p.get_type_name() == "Parameter":
            params.append(p)
    return ov.Model(outs, params, "loop")


def test_loop_fixed_trip_count(tmp_path: Path) -> None:
    model = _counting_loop(ops.constant(np.int64(4)), ops.constant(True), 1e9, True)
    got = _check(model, {"X": np.array([1, 2, 3], np.float32)}, tmp_path)
    np.testing.assert_array_equal(got[0], np.array([1, 2, 3], np.float32) * (1 + 2 + 3 + 4))


def test_loop_unbounded_with_data_dependent_condition(tmp_path: Path) -> None:
    model = _counting_loop(ops.constant(np.int64(-1)), ops.constant(True), 40.0, True)
    got = _check(model, {"X": np.array([1, 1, 1], np.float32)}, tmp_path)
    # sums after each step: 3, 9, 18, 30, 45 -> stops after the 5th
    assert got[1].shape == (5, 3)


def test_loop_condition_false_at_start_runs_zero_times(tmp_path: Path) -> None:
    cond = ops.parameter([], np.bool_, name="go")
    model = _counting_loop(ops.constant(np.int64(10)), cond, 1e9, False)
    path = tmp_path / "m.xml"
    ov.save_model(model, str(path), compress_to_fp16=False)
    ours = tl.load(path)
    feeds = {"X": np.ones(3, np.float32), "go": np.array(False)}
    got = list(ours.run(feeds).values())
    np.testing.assert_array_equal(got[0], np.zeros(3, np.float32))
    # The spec's answer: a concatenation of nothing. OpenVINO returns uninitialised rows here.
    assert got[1].shape == (0, 3)
    got_true = list(ours.run({**feeds, "go": np.array(True)}).values())
    assert got_true[1].shape == (10, 3)


def test_loop_trip_count_from_input_int32_and_bool_tensors(tmp_path: Path) -> None:
    trip = ops.parameter([1], np.int32, name="n")
    model = _counting_loop(trip, ops.constant(True), 1e9, True)
    _check(model, {"X": np.array([1, -1, 2], np.float32), "n": np.array([3], np.int32)}, tmp_path)


def test_loop_int64_counter_beyond_int32(tmp_path: Path) -> None:
    """The spec's counters are int64; OpenVINO truncates them to int32. Pinned in NumPy."""
    start = ops.parameter([], np.int64, name="start")
    it = ops.parameter([], np.int64, name="it")
    s = ops.parameter([], np.int64, name="s")
    body = ov.Model([ops.result(ops.constant(True)), ops.result(ops.add(s, it))], [it, s], "b")
    loop = ops.loop(ops.constant(np.int64(3)), ops.constant(True))
    loop.set_function(body)
    loop.set_special_body_ports([0, 0])
    r_s = body.get_results()[1]
    loop.set_merged_input(s, start.output(0), r_s.output(0))
    model = ov.Model([loop.get_iter_value(r_s.output(0), -1)], [start], "big")
    path = tmp_path / "m.xml"
    ov.save_model(model, str(path), compress_to_fp16=False)
    big = np.int64(2**40)
    got = next(iter(tl.load(path).run({"start": big}).values()))
    assert got == big + 0 + 1 + 2


def _nested(outer_kind: str) -> Any:
    """An outer TensorIterator or Loop over rows; its body runs an inner Loop over columns."""
    X = ops.parameter([3, 4], np.float32, name="X")
    # inner: sum of a row by iterating its elements
    e = ops.parameter([1], np.float32, name="e")
    s = ops.parameter([1], np.float32, name="s")
    it = ops.parameter([], np.int64, name="it")
    r_s = ops.result(ops.add(s, e))
    inner_body = ov.Model([ops.result(ops.constant(True)), r_s], [it, s, e], "inner")
    row = ops.parameter([1, 4], np.float32, name="row")
    acc = ops.parameter([1], np.float32, name="acc")
    inner = ops.loop(ops.constant(np.int64(4)), ops.constant(True))
    inner.set_function(inner_body)
    inner.set_special_body_ports([0, 0])
    flat = ops.reshape(row, ops.constant(np.array([4], np.int64)), False)
    inner.set_sliced_input(e, flat.output(0), 0, 1, 1, -1, 0)
    inner.set_merged_input(s, ops.constant(np.zeros(1, np.float32)).output(0), r_s.output(0))
    row_sum = inner.get_iter_value(r_s.output(0), -1)
    new_acc = ops.add(acc, ops.multiply(row_sum, row_sum))
    r_acc = ops.result(new_acc)
    r_y = ops.result(row_sum)
    if outer_kind == "ti":
        body = ov.Model([r_acc, r_y], [row, acc], "outer")
        outer = ops.tensor_iterator()
        outer.set_body(body)
    else:
        oit = ops.parameter([], np.int64, name="oit")
        body = ov.Model([ops.result(ops.constant(True)), r_acc, r_y], [oit, row, acc], "outer")
        outer = ops.loop(ops.constant(np.int64(-1)), ops.constant(True))
        outer.set_function(body)
        outer.set_special_body_ports([0, 0])
    outer.set_sliced_input(row, X.output(0), 0, 1, 1, -1, 0)
    outer.set_merged_input(acc, ops.constant(np.zeros(1, np.float32)).output(0), r_acc.output(0))
    outs = [
        outer.get_iter_value(r_acc.output(0), -1),
        outer.get_concatenated_slices(r_y.output(0), 0, 1, 1, -1, 0),
    ]
    return ov.Model(outs, [X], "nested")


@pytest.mark.parametrize("outer_kind", ["ti", "loop"])
def test_loops_nested_in_tensor_iterator_and_loop(outer_kind: str, tmp_path: Path) -> None:
    x = _f32(3, 4)
    if outer_kind == "ti":
        got = _check(_nested(outer_kind), {"X": x}, tmp_path, rtol=1e-5)
    else:
        # OpenVINO 2026.4's CPU plugin fails on a Loop with trip count -1 bounded only by a
        # sliced input ("iter >= 0 && iter < iter_count"); the NumPy answer stands alone.
        path = tmp_path / "m.xml"
        ov.save_model(_nested(outer_kind), str(path), compress_to_fp16=False)
        got = list(tl.load(path).run({"X": x}).values())
    np.testing.assert_allclose(got[1], x.sum(axis=1), rtol=1e-5)
    np.testing.assert_allclose(got[0], [np.sum(x.sum(axis=1) ** 2)], rtol=1e-5)


def test_bad_back_edge_is_a_format_error(tmp_path: Path) -> None:
    model, _ = _ti_rnn(1, 1, [2, 5, 3], hidden=4)
    path = tmp_path / "m.xml"
    ov.save_model(model, str(path), compress_to_fp16=False)
    text = path.read_text()
    first = text.index('<edge from-layer="', text.index("<back_edges>"))
    end = text.index('"', first + len('<edge from-layer="'))
    path.write_text(text[: first + len('<edge from-layer="')] + "999" + text[end:])
    with pytest.raises(
        tl.FormatError,
        match=r"m\.xml: layer .* \(TensorIterator\): back edge "
        r"from-layer=999 .* must join a Result to a Parameter",
    ):
        tl.load(path)


def test_loop_carries_int64_and_boolean_tensors(tmp_path: Path) -> None:
    """A Loop-5 whose carried values are an int64 vector and a bool mask, stacked every step."""
    K = ops.parameter([4], np.int64, name="K")
    M = ops.parameter([4], np.bool_, name="M")
    it = ops.parameter([], np.int64, name="it")
    k = ops.parameter([4], np.int64, name="k")
    m = ops.parameter([4], np.bool_, name="m")
    k_new = ops.select(m, ops.add(k, it), ops.subtract(k, ops.constant(np.int64(1))))
    m_new = ops.logical_not(m)
    r_k, r_m = ops.result(k_new), ops.result(m_new)
    r_y = ops.result(ops.unsqueeze(m_new, ops.constant(np.array([0], np.int64))))
    body = ov.Model([ops.result(ops.constant(True)), r_k, r_m, r_y], [it, k, m], "body")
    loop = ops.loop(ops.constant(np.int64(5)), ops.constant(True))
    loop.set_function(body)
    loop.set_special_body_ports([0, 0])
    loop.set_merged_input(k, K.output(0), r_k.output(0))
    loop.set_merged_input(m, M.output(0), r_m.output(0))
    outs = [
        loop.get_iter_value(r_k.output(0), -1),
        loop.get_iter_value(r_m.output(0), -1),
        loop.get_concatenated_slices(r_y.output(0), 0, 1, 1, -1, 0),
    ]
    model = ov.Model(outs, [K, M], "typed")
    feeds = {
        "K": np.array([10, 20, 30, 7], np.int64),
        "M": np.array([True, False, True, False]),
    }
    _check(model, feeds, tmp_path)
    # Beyond int32 OpenVINO truncates; the spec's int64 answer, pinned in NumPy:
    feeds["K"][3] = 2**40
    got = list(tl.load(tmp_path / "m.xml").run(feeds).values())
    kk, mm = feeds["K"].copy(), feeds["M"].copy()
    for i in range(5):
        kk = np.where(mm, kk + i, kk - 1)
        mm = ~mm
    np.testing.assert_array_equal(got[0], kk)
    np.testing.assert_array_equal(got[1], mm)
    assert got[2].dtype == np.bool_ and got[2].shape == (5, 4)
