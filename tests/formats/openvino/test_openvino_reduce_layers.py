"""OpenVINO layers along an axis (read_reduce.py: Reduce*, TopK, CumSum, SoftMax) against the CPU
plugin and the spec, and the core reductions, ArgMin, Hardmax and CumProd written back
(write_reduce.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ops = pytest.importorskip("openvino.opset13")

from openvino import opset1, opset3, opset4, opset5, opset8, opset11  # noqa: E402
from openvino_layer_checks import (  # noqa: E402
    _fresh_builder,  # noqa: F401 (a fixture)
    check,
    compile_cpu,
    const,
    ph,
    rand_f32,
    record_layer_types,
    save_ir,
    tl_const,
    uniform_f32,
    written_runs_alike,
)

import tensorloop as tl  # noqa: E402
from tensorloop.builder.tracing import emit  # noqa: E402

RNG = np.random.default_rng(7)


# -- reductions and ranges ------------------------------------------------------------------------

REDUCE = {
    "ReduceSum": ops.reduce_sum,
    "ReduceMean": ops.reduce_mean,
    "ReduceMax": ops.reduce_max,
    "ReduceMin": ops.reduce_min,
    "ReduceProd": ops.reduce_prod,
}


@pytest.mark.parametrize("keep", [True, False])
@pytest.mark.parametrize("name", sorted(REDUCE))
def test_reductions(name: str, keep: bool, tmp_path: Path) -> None:
    fn = REDUCE[name]
    x = (1 + 0.2 * rand_f32(3, 4, 5)).astype(np.float32)
    n = np.arange(-4, 5, dtype=np.int32).reshape(3, 3)
    check(
        lambda p, q: [
            fn(p, const([0, -1]), keep),
            fn(p, const(1, np.int32), keep),
            fn(q, const([1]), keep),
            fn(p, const([2, 0, 1]), keep),
        ],
        x,
        n,
        tmp_path=tmp_path,
        rtol=1e-5,
    )


def test_reduce_prod_of_empty_and_unit_axes(tmp_path: Path) -> None:
    check(
        lambda p: [ops.reduce_prod(p, const([1]), False), ops.reduce_prod(p, const([0, 2]), True)],
        rand_f32(1, 0, 3),
        tmp_path=tmp_path,
    )


@pytest.mark.parametrize("name", sorted(REDUCE))
def test_reduce_over_no_axes_is_identity(name: str, tmp_path: Path) -> None:
    # OpenVINO's CPU plugin rejects empty axes; its spec and reference evaluator reduce nothing.
    x = ops.parameter([2, 3], np.float32, name="x")
    path = save_ir([REDUCE[name](x, const([], np.int64), True)], [x], tmp_path)
    data = rand_f32(2, 3)
    (got,) = tl.load(path).run({"x": data}).values()
    np.testing.assert_array_equal(got, data)


# -- the writer: ArgMin, Hardmax, CumProd ----------------------------------------------------------


TIES = np.array([[1, 0, 0, 3], [2, 2, 1, 1], [0, 0, 0, 0]], np.float32)


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize("last", [0, 1])
def test_writer_argmin(last: int, tmp_path: Path) -> None:
    x = ph("x", TIES)
    outs = {
        f"a{axis}{keep}": emit(
            "ArgMin", [x], {"axis": axis, "keepdims": keep, "select_last_index": last}
        )
        for axis in (0, 1, -1)
        for keep in (0, 1)
    }
    ints = TIES.astype(np.int32)
    outs["ints"] = emit("ArgMin", [ph("i", ints)], {"axis": 1, "select_last_index": last})
    written_runs_alike(tl.Model(outs), {"x": TIES, "i": ints}, tmp_path)


@pytest.mark.usefixtures("_fresh_builder")
def test_writer_hardmax(tmp_path: Path) -> None:
    x = ph("x", TIES)
    r = rand_f32(2, 3, 4, rng=RNG)
    q = ph("r", r)
    outs = {f"h{axis}": emit("Hardmax", [x], {"axis": axis}) for axis in (0, 1, -1)}
    outs |= {f"r{axis}": emit("Hardmax", [q], {"axis": axis}) for axis in (0, 1, 2)}
    written_runs_alike(tl.Model(outs), {"x": TIES, "r": r}, tmp_path)


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize(("exclusive", "reverse"), [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_writer_cumprod(exclusive: int, reverse: int, tmp_path: Path) -> None:
    x = (rand_f32(3, 5, rng=RNG) + 1).astype(np.float32)
    i = np.arange(1, 16, dtype=np.int64).reshape(3, 5) % 4 - 1
    attrs = {"exclusive": exclusive, "reverse": reverse}
    p, q = ph("x", x), ph("i", i)
    outs = {
        "c1": emit("CumProd", [p, tl_const(1)], attrs),
        "c0": emit("CumProd", [p, tl_const(-2)], attrs),
        "ints": emit("CumProd", [q, tl.constant(np.int32(1))], attrs),
    }
    # The IR multiplies floats in f64 as the core op does; the CPU plugin runs f64 as f32.
    written_runs_alike(tl.Model(outs), {"x": x, "i": i}, tmp_path, rtol=1e-6, atol=0)


@pytest.mark.usefixtures("_fresh_builder")
def test_writer_cumprod_unknown_length_refused(tmp_path: Path) -> None:
    x = rand_f32(2, 3, rng=RNG)
    y = emit("CumProd", [ph("x", x, (2, "N")), tl_const(1)])
    with pytest.raises(tl.FormatError, match="no CumProd"):
        tl.save(tl.Model({"y": y}), tmp_path / "w.xml")


# -- ReduceL1, ReduceL2, the logical reductions, and the writer's reductions -----------------------


REDUCTIONS = ["ReduceProd", "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSum"]


@pytest.mark.parametrize(
    ("axes", "keep"),
    # The CPU plugin refuses to compile empty axes without keep_dims.
    [([1], False), ([1], True), ([0, -1], False), ([0, -1], True), ([], True), (2, False)],
)
def test_norm_and_logical_reductions(axes: Any, keep: bool, tmp_path: Path) -> None:
    x = rand_f32(2, 3, 4)
    flags = x > 0.2
    check(
        lambda p, q: [
            opset4.reduce_l1(p, const(axes), keep),
            opset4.reduce_l2(p, const(axes), keep),
            opset1.reduce_logical_and(q, const(axes), keep),
            opset1.reduce_logical_or(q, const(axes), keep),
        ],
        x,
        flags,
        tmp_path=tmp_path,
        rtol=2e-6,
    )


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize("op", [*REDUCTIONS, "ReduceLogSumExp"])
def test_writer_reductions(op: str, tmp_path: Path) -> None:
    x = uniform_f32(0.2, 1.5, 2, 3, 4, rng=RNG) * np.float32(1 if op != "ReduceLogSumExp" else 40)
    p, q = ph("x", x), ph("y", x, ("N", 3, "W"))
    outs: dict[str, Any] = {}
    for keep in (0, 1):
        for axes in ([1], [0, -1]):
            for v, tag in ((p, "s"), (q, "d")):
                key = f"{tag}{keep}_{'_'.join(map(str, axes)).replace('-', 'm')}"
                outs[key] = emit(op, [v, tl.constant(np.array(axes))], {"keepdims": keep})
        outs[f"all{keep}"] = emit(op, [q], {"keepdims": keep})
    outs["noop"] = emit(op, [q], {"noop_with_empty_axes": 1})
    outs["noop_empty"] = emit(
        op, [p, tl.constant(np.zeros(0, np.int64))], {"noop_with_empty_axes": 1, "keepdims": 0}
    )
    written_runs_alike(tl.Model(outs), {"x": x, "y": x}, tmp_path, rtol=2e-5)


@pytest.mark.usefixtures("_fresh_builder")
def test_writer_log_sum_exp_of_infinities(tmp_path: Path) -> None:
    x = np.array([[np.inf, 1.0, 2.0], [-np.inf, -np.inf, -np.inf], [3.0, -np.inf, 80.0]])
    x = x.astype(np.float32)
    p = ph("x", x)
    outs = {"lse": emit("ReduceLogSumExp", [p, tl.constant(np.array([1]))], {"keepdims": 0})}
    written_runs_alike(tl.Model(outs), {"x": x}, tmp_path)


@pytest.mark.usefixtures("_fresh_builder")
def test_writer_integer_reductions(tmp_path: Path) -> None:
    i = np.array([[3, -4, 5], [1, 2, -2]], np.int32)
    p = ph("i", i)
    outs = {op: emit(op, [p, tl.constant(np.array([1]))], {"keepdims": 0}) for op in REDUCTIONS[:4]}
    written_runs_alike(tl.Model(outs), {"i": i}, tmp_path)


# -- SoftMax ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "build", [lambda p: opset1.softmax(p, 1), lambda p: opset8.softmax(p, -1)], ids=["v1", "v8"]
)
def test_softmax(build: Callable[[Any], Any], tmp_path: Path) -> None:
    check(build, rand_f32(2, 3, 4), tmp_path=tmp_path)


# -- TopK and CumSum -------------------------------------------------------------------------------
@pytest.mark.parametrize("version", [opset1, opset3, opset11])
@pytest.mark.parametrize(("mode", "sort"), [("max", "value"), ("min", "value"), ("max", "index")])
@pytest.mark.parametrize("axis", [1, -1])
def test_topk(version: Any, mode: str, sort: str, axis: int, tmp_path: Path) -> None:
    x = rand_f32(3, 7, 4)
    # Distinct values, so that any order of equal values is right.
    x = np.argsort(x.reshape(-1)).reshape(x.shape).astype(np.float32)
    check(
        lambda p: list(version.topk(p, const(3), axis, mode, sort).outputs()), x, tmp_path=tmp_path
    )


def test_topk_11_stable_keeps_the_first_of_equal_values(tmp_path: Path) -> None:
    x = np.array([[1, 3, 3, 2, 3, 1]], np.float32)
    got = check(
        lambda p: list(opset11.topk(p, const(4), 1, "max", "value", stable=True).outputs()),
        x,
        tmp_path=tmp_path,
    )
    indices = next(v for v in got.values() if v.dtype == np.int32)
    np.testing.assert_array_equal(indices, [[1, 2, 4, 3]])


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize(("dtype", "axis"), [(np.float32, 0), (np.float32, -1), (np.int32, 1)])
def test_cum_sum_layer(
    exclusive: bool, reverse: bool, dtype: Any, axis: int, tmp_path: Path
) -> None:
    x = (rand_f32(3, 4, 5) * 5).astype(dtype)
    check(lambda p: opset3.cumsum(p, const(axis), exclusive, reverse), x, tmp_path=tmp_path)


# -- LogSoftmax ------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(7,), (2, 3, 5)], ids=["1d", "3d"])
@pytest.mark.parametrize("axis", [-1, 0])
def test_log_softmax(axis: int, shape: tuple[int, ...], tmp_path: Path) -> None:
    x = uniform_f32(-5, 5, *shape, rng=RNG)
    check(lambda p: opset5.log_softmax(p, axis), x, tmp_path=tmp_path, rtol=2e-5, atol=2e-6)


@pytest.mark.usefixtures("_fresh_builder")
@pytest.mark.parametrize("attrs", [{}, {"axis": 0}], ids=["default", "axis-0"])
def test_writer_log_softmax(attrs: dict[str, Any], tmp_path: Path) -> None:
    x = uniform_f32(-5, 5, 3, 5, rng=RNG)
    p, q = ph("x", x), ph("y", x, ("N", 5))
    outs = {"static": emit("LogSoftmax", [p], attrs), "dynamic": emit("LogSoftmax", [q], attrs)}
    written_runs_alike(tl.Model(outs), {"x": x, "y": x}, tmp_path, rtol=2e-5)


# -- TopK with sort="none" -------------------------------------------------------------------------
def _by_index(values: Any, index: Any, axis: int) -> tuple[Any, Any]:
    """Each slice's values and indices along ``axis``, put in the order of their indices."""
    order = np.argsort(index, axis=axis)
    return np.take_along_axis(values, order, axis), np.take_along_axis(index, order, axis)


def _values_and_index(outputs: Any) -> tuple[Any, Any]:
    """A TopK's two outputs, told apart by their dtypes (float values sort before int indices)."""
    values, index = sorted((np.asarray(v) for v in outputs), key=lambda a: a.dtype.kind)
    return values, index


@pytest.mark.parametrize("version", [opset1, opset3, opset11])
@pytest.mark.parametrize("mode", ["max", "min"])
@pytest.mark.parametrize(("n", "k", "axis"), [(9, 4, 1), (9, 4, -1), (40, 40, 1), (300, 17, -1)])
def test_topk_sort_none(version: Any, mode: str, n: int, k: int, axis: int, tmp_path: Path) -> None:
    """sort="none" leaves the order of the k elements open (the spec: "undefined"). The CPU plugin
    orders them by value, as "value" does (OpenVINO's reference implementation leaves them in
    the order its selection happens to give), and tensorloop reads the layer so. Compared as the
    spec allows: the values are the k largest (smallest), each the input's at its index, and
    each slice's pairs, put in the order of their indices, equal the plugin's; then written
    back (as sort="value")."""
    shape = (3, n, 4) if axis == 1 else (3, 4, n)
    # distinct values: a single set of k is right
    x = RNG.permutation(np.prod(shape)).reshape(shape).astype(np.float32)
    p = ops.parameter(shape, np.float32, name="x0")
    path = save_ir(list(version.topk(p, const(k), axis, mode, "none").outputs()), [p], tmp_path)
    model = tl.load(path)
    feeds = {"x0": x}
    ours = _values_and_index(model.run(feeds).values())
    theirs = _values_and_index(compile_cpu(path)(feeds).values())
    ranked = np.sort(x, axis=axis)
    best = np.take(ranked, range(n - k, n) if mode == "max" else range(k), axis=axis)
    for values, index in (ours, theirs):
        assert (values.dtype, index.dtype) == (np.float32, np.int32)
        np.testing.assert_array_equal(np.sort(values, axis=axis), best)
        np.testing.assert_array_equal(np.take_along_axis(x, index.astype(np.int64), axis), values)
    for got, want in zip(_by_index(*ours, axis), _by_index(*theirs, axis), strict=True):
        np.testing.assert_array_equal(got, want)
    record_layer_types(path, "compared")
    written = tmp_path / "written"
    written.mkdir()
    written_runs_alike(model, feeds, written)
    record_layer_types(path, "written")
