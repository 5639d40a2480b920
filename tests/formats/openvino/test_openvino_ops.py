"""OpenVINO layer converters: IR that OpenVINO writes, run here and by OpenVINO's CPU plugin.

Where the CPU plugin departs from the spec (integer Divide ignores m_pythondiv, Clamp truncates
min for u8, Range of computed bounds skips the casts and never comes out empty, a Reduce over
empty axes fails, reading an Assign's output crashes), the expected values come from OpenVINO's
reference evaluator (Node.evaluate, or constant folding) or from the spec.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ov = pytest.importorskip("openvino")
ops = pytest.importorskip("openvino.opset13")

from openvino import opset1, opset3, opset7, opset8, opset15  # noqa: E402

import tensorloop as tl  # noqa: E402

RNG = np.random.default_rng(0)
Array = np.ndarray[Any, Any]


def _f32(*shape: int) -> Array:
    return RNG.standard_normal(shape).astype(np.float32)


def _save(
    outputs: Sequence[Any],
    params: Sequence[Any],
    tmp_path: Path,
    sinks: Any = (),
    compress: bool = False,
) -> Path:
    results = [ops.result(o) for o in outputs]
    model = ov.Model(results, list(sinks), list(params), "m")
    path = tmp_path / "m.xml"
    ov.save_model(model, str(path), compress_to_fp16=compress)
    # OpenVINO writes an empty constant as size="1" (one padding byte), which tensorloop's
    # reader rejects as not matching its 0 bytes of data; say 0 bytes until the reader allows it.
    text = path.read_text()
    path.write_text(
        re.sub(r'(<data element_type="\w+" shape="0" offset="\d+") size="1"', r'\1 size="0"', text)
    )
    return path


def _compare(ours: dict[str, Array], compiled: Any, theirs: Any, **tol: float) -> None:
    assert len(ours) == len(compiled.outputs)
    for out in compiled.outputs:
        key = next(k for k in ours if k in out.get_names())
        got, want = ours[key], np.asarray(theirs[out])
        assert got.dtype == want.dtype, key
        assert got.shape == want.shape, key
        np.testing.assert_allclose(
            got, want, rtol=tol.get("rtol", 1e-6), atol=tol.get("atol", 1e-6), err_msg=key
        )


def _compile(path: Path) -> Any:
    # Without the hint, CPUs with bf16 units run MatMul and friends in bf16.
    return ov.Core().compile_model(str(path), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})


def _run_path(path: Path, feeds: dict[str, Array], **tol: float) -> dict[str, Array]:
    ours = dict(tl.load(path).run(feeds))
    compiled = _compile(path)
    _compare(ours, compiled, compiled(feeds), **tol)
    return ours


def _check(
    build: Callable[..., Any],
    *arrays: Array,
    tmp_path: Path,
    dynamic: bool = False,
    **tol: float,
) -> dict[str, Array]:
    """Parameters x0, x1, ... for ``arrays`` (every dim of x0 unknown if ``dynamic``); ``build``
    returns an output or a list of them."""
    params = [
        ops.parameter([-1] * a.ndim if dynamic and i == 0 else a.shape, a.dtype, name=f"x{i}")
        for i, a in enumerate(arrays)
    ]
    built = build(*params)
    outputs = built if isinstance(built, list) else [built]
    path = _save(outputs, params, tmp_path)
    return _run_path(path, {f"x{i}": a for i, a in enumerate(arrays)}, **tol)


def _c(values: Any, dtype: Any = np.int64) -> Any:
    return ops.constant(np.array(values, dtype=dtype))


# -- elementwise ----------------------------------------------------------------------------------

BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "Add": ops.add,
    "Subtract": ops.subtract,
    "Multiply": ops.multiply,
    "Divide": ops.divide,
    "Power": ops.power,
    "Maximum": ops.maximum,
    "Minimum": ops.minimum,
    "Equal": ops.equal,
    "NotEqual": ops.not_equal,
    "Less": ops.less,
    "Greater": ops.greater,
    "LessEqual": ops.less_equal,
    "GreaterEqual": ops.greater_equal,
}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_layers_broadcast_numpy_style(name: str, tmp_path: Path) -> None:
    a = np.abs(_f32(2, 3)) + 0.5  # Power wants a positive base
    b = np.array([1.5, a[0, 1], -0.5], np.float32)  # one tie for the comparisons
    _check(BINARY[name], a, b, tmp_path=tmp_path, rtol=1e-5)


def test_logical_layers(tmp_path: Path) -> None:
    a = np.array([[True, False], [True, True]])
    b = np.array([True, False])
    _check(
        lambda p, q: (
            [f(p, q) for f in (ops.logical_and, ops.logical_or, ops.logical_xor)]
            + [ops.logical_not(p)]
        ),
        a,
        b,
        tmp_path=tmp_path,
    )


@pytest.mark.parametrize("fn", [ops.sigmoid, ops.tanh, ops.relu, ops.exp, ops.log, ops.sqrt])
def test_unary_layers(fn: Callable[[Any], Any], tmp_path: Path) -> None:
    x = _f32(3, 4)
    if fn in (ops.log, ops.sqrt):
        x = np.abs(x) + 0.1
    _check(fn, x, tmp_path=tmp_path, rtol=2e-6)


def test_select_and_integer_arithmetic(tmp_path: Path) -> None:
    cond = np.array([[True, False, True]])
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    b = np.array([-3, 4, -5], np.int32)
    _check(
        lambda c, x, y: [
            ops.select(c, x, y),
            ops.add(x, y),
            ops.maximum(x, y),
            ops.power(x, _c(2, np.int32)),
        ],
        cond,
        a,
        b,
        tmp_path=tmp_path,
    )


def _edit(path: Path, old: str, new: str, count: int = 1) -> None:
    text = path.read_text()
    assert text.count(old) == count, f"{old!r} occurs {text.count(old)} times"
    path.write_text(text.replace(old, new))


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8])
@pytest.mark.parametrize("pythondiv", [True, False])
def test_divide_pythondiv_floors_signed_integers(
    dtype: Any, pythondiv: bool, tmp_path: Path
) -> None:
    signed = np.dtype(dtype).kind == "i"
    a = np.array([7, -7, 7, -7, 6, -6, 0], dtype) if signed else np.array([7, 9, 200], dtype)
    b = np.array([2, 2, -2, -2, 3, -3, 5], dtype) if signed else np.array([2, 4, 7], dtype)
    params = [ops.parameter(a.shape, dtype, name=n) for n in ("a", "b")]
    node = ops.divide(*params)
    path = _save([node], [*params], tmp_path)
    if pythondiv and signed:
        # The CPU plugin truncates whatever m_pythondiv says; the reference evaluator floors.
        out = [ov.Tensor(np.zeros_like(a))]
        assert node.evaluate(out, [ov.Tensor(a), ov.Tensor(b)])
        want = out[0].data.copy()
        np.testing.assert_array_equal(want, a // b)
    else:
        if not pythondiv:
            _edit(path, 'm_pythondiv="true"', 'm_pythondiv="false"')
        want = _compile(path)({"a": a, "b": b})[0]
    (got,) = tl.load(path).run({"a": a, "b": b}).values()
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    ("dtype", "lo", "hi"),
    [
        (np.float32, -0.5, 0.75),
        (np.int32, -1.5, 2.5),
        (np.int64, 1.2, 3.7),
        (np.uint8, 1.2, 1e9),
        (np.int32, -np.inf, 2.0),
    ],
)
def test_clamp(dtype: Any, lo: float, hi: float, tmp_path: Path) -> None:
    # min rounds up and max down for integers; the CPU plugin instead truncates min for u8, so
    # the reference evaluator is the judge.
    x = (_f32(4, 5) * 4).astype(dtype) if dtype != np.uint8 else np.arange(20, dtype=dtype)
    p = ops.parameter(x.shape, dtype, name="x")
    node = ops.clamp(p, lo, hi)
    out = [ov.Tensor(np.zeros_like(x))]
    assert node.evaluate(out, [ov.Tensor(x)])
    (got,) = tl.load(_save([node], [p], tmp_path)).run({"x": x}).values()
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, out[0].data)


@pytest.mark.parametrize(
    "build", [lambda p: opset1.softmax(p, 1), lambda p: opset8.softmax(p, -1)], ids=["v1", "v8"]
)
def test_softmax(build: Callable[[Any], Any], tmp_path: Path) -> None:
    _check(build, _f32(2, 3, 4), tmp_path=tmp_path)


INT_TYPES = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]


@pytest.mark.parametrize("to", [*INT_TYPES, "f16", "f32", "f64", "boolean"])
def test_convert_to_each_type(to: str, tmp_path: Path) -> None:
    # Out-of-range and negative-to-unsigned conversions are undefined, so none are made here.
    x = np.array([0.0, 1.7, 2.5, 3.9, 100.25, 127.0, 0.4], np.float32)
    if to[0] != "u":
        x = np.concatenate([x, np.array([-3.7, -0.5, -128.0], np.float32)])
    ints = np.array([0, 3, -2, 7], np.int32)
    flags = np.array([True, False])
    _check(
        lambda a, b, c: [ops.convert(a, to), ops.convert(b, "f32"), ops.convert(c, to)],
        x,
        ints,
        flags,
        tmp_path=tmp_path,
    )


def test_weights_saved_as_f16_stay_constants(tmp_path: Path) -> None:
    # save_model's default stores f32 constants as f16 plus a decompressing Convert; folded, the
    # ReadValue init is still a constant (the variable's initial value).
    x = ops.parameter([2, 3], np.float32, name="x")
    init = ops.constant(np.full((2, 3), 0.25, np.float32))
    read = ops.read_value(init, "h", ov.Type.f32, [2, 3])
    h = ops.tanh(ops.add(ops.matmul(x, ops.constant(_f32(3, 3)), False, False), read))
    path = _save([h], [x], tmp_path, sinks=[ops.assign(h, "h")], compress=True)
    assert 'element_type="f16"' in path.read_text()
    ours = tl.load(path)
    assert "Cast" not in {n.op for n in ours.graph.nodes}
    np.testing.assert_array_equal(ours.state["h"], np.full((2, 3), 0.25, np.float32))
    request = _compile(path).create_infer_request()
    for _ in range(2):
        feed = _f32(2, 3)
        (got,) = ours.run({"x": feed}).values()
        np.testing.assert_allclose(got, request.infer({"x": feed})[0], rtol=1e-6, atol=1e-6)


def test_convert_of_a_constant_is_folded(tmp_path: Path) -> None:
    x = ops.parameter([3], np.float32, name="x")
    path = _save([ops.add(x, ops.convert(_c([1, 2, 3], np.int32), "f32"))], [x], tmp_path)
    model = tl.load(path)
    assert "Cast" not in {n.op for n in model.graph.nodes}
    _run_path(path, {"x": _f32(3)})


# -- matrices and shapes --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a_shape", "b_shape", "ta", "tb"),
    [
        ((2, 3), (3, 4), False, False),
        ((3, 2), (3, 4), True, False),
        ((2, 3), (4, 3), False, True),
        ((5, 3, 2), (1, 4, 3), True, True),
        ((3,), (3, 4), True, False),  # a 1-D operand ignores its transpose flag
        ((4, 3), (3,), False, True),
        ((3,), (3,), True, True),
    ],
)
def test_matmul(
    a_shape: tuple[int, ...], b_shape: tuple[int, ...], ta: bool, tb: bool, tmp_path: Path
) -> None:
    _check(
        lambda a, b: ops.matmul(a, b, ta, tb),
        _f32(*a_shape),
        _f32(*b_shape),
        tmp_path=tmp_path,
        rtol=1e-5,
    )


@pytest.mark.parametrize(
    ("shape", "special_zero"),
    [([0, -1], True), ([4, 0, 1, -1], True), ([6, -1], False), ([2, 2, 6], False), ([-1], True)],
)
def test_reshape_special_zero(shape: list[int], special_zero: bool, tmp_path: Path) -> None:
    _check(lambda p: ops.reshape(p, _c(shape), special_zero), _f32(4, 6), tmp_path=tmp_path)


def test_reshape_by_a_computed_shape(tmp_path: Path) -> None:
    _check(
        lambda p, q: ops.reshape(p, ops.shape_of(q), False),
        _f32(4, 6),
        _f32(3, 8),
        tmp_path=tmp_path,
    )


def test_squeeze_unsqueeze(tmp_path: Path) -> None:
    x = _f32(1, 3, 1, 2)
    _check(
        lambda p: [
            opset15.squeeze(p),
            ops.squeeze(p, _c([0, -2])),
            ops.squeeze(p, _c(2)),
            ops.squeeze(p, _c([0, 1])),  # axis 1 is not 1: skipped since OpenVINO 2024.3
            ops.squeeze(p, _c([1])),
            ops.unsqueeze(p, _c([0, -1])),
            ops.unsqueeze(p, _c(1)),
            ops.unsqueeze(p, _c([2, 2])),  # a repeated axis counts once
        ],
        x,
        tmp_path=tmp_path,
    )


def test_concat_split_transpose_shape_of(tmp_path: Path) -> None:
    _check(
        lambda a, b: [
            ops.concat([a, b, a], -1),
            *ops.split(b, _c(1), 3).outputs(),
            *ops.split(a, _c(-3, np.int32), 2).outputs(),
            ops.transpose(a, _c([2, 0, 1])),
            ops.transpose(a, _c([], np.int64)),
            ops.shape_of(a),
            opset3.shape_of(b, "i32"),
            opset1.shape_of(b),
        ],
        _f32(2, 3, 4),
        _f32(2, 3, 1),
        tmp_path=tmp_path,
    )


@pytest.mark.parametrize(
    ("axis", "lengths"),
    [(1, [2, 3, 1]), (1, [2, -1, 1]), (-1, [-1, 4]), (0, [0, 2]), (2, [1, 1, 0, 3])],
)
@pytest.mark.parametrize("dynamic", [False, True])
def test_variadic_split(axis: int, lengths: list[int], dynamic: bool, tmp_path: Path) -> None:
    _check(
        lambda p: ops.variadic_split(p, _c(axis), _c(lengths, np.int32)).outputs(),
        _f32(2, 6, 5),
        tmp_path=tmp_path,
        dynamic=dynamic,
    )


def test_variadic_split_with_computed_lengths(tmp_path: Path) -> None:
    lengths = np.array([2, -1, 1], np.int64)
    _check(
        lambda p, n: ops.variadic_split(p, _c(1), n).outputs(),
        _f32(2, 6),
        lengths,
        tmp_path=tmp_path,
    )


# begin, end, stride, then begin_mask, end_mask, new_axis_mask, shrink_axis_mask, ellipsis_mask
# as strings of bits ("" leaves the optional masks out).
STRIDED = {
    "plain": ([1, 0, 2], [3, 5, 6], [1, 2, 1], "000 000"),
    "negative": ([-1, -2, 5], [-5, 0, 0], [-1, -1, -2], "000 010"),
    "masks": ([3, 4, 1], [1, 1, 5], [-1, 1, 2], "101 010"),
    "clamped": ([-10, 2, 0], [10, 100, -100], [1, 1, -1], "001 000"),
    "short": ([1], [3], [1], "0 0"),
    "shrink": ([2, -1], [3, 0], [1, 1], "00 00 00 11"),
    "shrink_begin_mask": ([3, 1], [0, 0], [1, 1], "10 01 00 10"),
    "shrink_negative_stride": ([1, 2], [2, 3], [-1, 1], "00 00 00 10"),
    "shrink_mask_negative_stride": ([1, 2], [2, 3], [-1, 1], "10 00 00 10"),
    "new_axis": ([0, 1, 0], [0, 3, 0], [1, 1, 1], "001 001 100"),
    "new_axis_wins": ([0, 1], [1, 2], [1, 1], "00 00 10 10"),
    "ellipsis_last": ([0, 1], [0, 5], [1, 2], "00 00 00 00 10"),
    "ellipsis_middle": ([1, 0, 0], [2, 0, 0], [1, 1, 1], "000 000 001 000 010"),
    "ellipsis_shrink": ([0, 2], [0, 3], [1, 1], "00 00 00 01 10"),
    "ellipsis_first_new": ([0, 0, 1], [0, 0, 3], [1, 1, 1], "000 000 010 000 100"),
    "ellipsis_wins": ([0, 1], [0, 3], [1, 1], "00 00 10 10 10"),
}


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("case", sorted(STRIDED))
def test_strided_slice(case: str, dynamic: bool, tmp_path: Path) -> None:
    begin, end, stride, bits = STRIDED[case]
    masks = [[int(b) for b in word] for word in bits.split()]
    masks += [[]] * (5 - len(masks))
    _check(
        lambda p: ops.strided_slice(p, _c(begin), _c(end), _c(stride), *masks),
        _f32(4, 5, 6),
        tmp_path=tmp_path,
        dynamic=dynamic,
    )


@pytest.mark.parametrize("shrink", [[0, 0], [1, 0], [0, 1]])
def test_strided_slice_with_computed_bounds(shrink: list[int], tmp_path: Path) -> None:
    begin = np.array([-1, 1], np.int32)
    end = np.array([0, 4], np.int32)
    _check(
        lambda p, b, e: ops.strided_slice(p, b, e, _c([-1, 2]), [0, 0], [1, 0], [], shrink, []),
        _f32(4, 5, 3),
        begin,
        end,
        tmp_path=tmp_path,
    )


@pytest.mark.parametrize(
    ("start", "stop", "step", "axes"),
    [
        ([1, 0], [3, 5], [1, 2], None),
        ([-1], [-100], [-2], [1]),
        ([0, 4], [2, 1], [1, -1], [-1, 0]),
        ([2], [9], [3], [2]),
    ],
)
def test_slice_8(
    start: list[int], stop: list[int], step: list[int], axes: list[int] | None, tmp_path: Path
) -> None:
    def build(p: Any) -> Any:
        extra = [] if axes is None else [_c(axes)]
        return opset8.slice(p, _c(start), _c(stop), _c(step), *extra)

    _check(build, _f32(4, 5, 6), tmp_path=tmp_path)


@pytest.mark.parametrize(
    ("version", "axis", "indices", "batch_dims"),
    [
        (opset1, 1, [[0, 2], [1, 1]], 0),
        (opset7, -1, [3, 0], 0),
        (opset8, 0, [-1, 0, -2], 0),
        (opset8, 2, [[1, -1, 0], [3, 2, -4]], 1),
        (opset8, 3, [[[1], [0], [-1]], [[2], [3], [0]]], 2),
        (opset7, 1, [[2, 0], [1, 1]], -1),
        (opset8, 3, [[0, 1, 1], [2, 2, -1]], 1),
    ],
)
@pytest.mark.parametrize("dynamic", [False, True])
def test_gather(
    version: Any, axis: int, indices: list[Any], batch_dims: int, dynamic: bool, tmp_path: Path
) -> None:
    def build(p: Any) -> Any:
        extra = [] if version is opset1 else [batch_dims]
        return version.gather(p, _c(indices, np.int32), _c(axis), *extra)

    _check(build, _f32(2, 3, 4, 4), tmp_path=tmp_path, dynamic=dynamic)


@pytest.mark.parametrize(
    ("version", "data_shape", "target", "mapping", "mode"),
    [
        (opset3, (3, 1), [2, 3, 4], None, "NUMPY"),
        (opset1, (4,), [2, 3, 4], None, "NUMPY"),
        (opset3, (3, 1), [1, 4], None, "BIDIRECTIONAL"),
        (opset3, (2, 1, 4), [3, 1], None, "BIDIRECTIONAL"),
        (opset3, (3,), [2, 3, 4], [1], "EXPLICIT"),
        (opset1, (2, 4), [2, 3, 4], [0, 2], "EXPLICIT"),
    ],
)
def test_broadcast(
    version: Any,
    data_shape: tuple[int, ...],
    target: list[int],
    mapping: list[int] | None,
    mode: str,
    tmp_path: Path,
) -> None:
    def build(p: Any) -> Any:
        axes = None if mapping is None else _c(mapping)
        return version.broadcast(p, _c(target), axes, mode)

    _check(build, _f32(*data_shape), tmp_path=tmp_path)


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
    x = (1 + 0.2 * _f32(3, 4, 5)).astype(np.float32)
    n = np.arange(-4, 5, dtype=np.int32).reshape(3, 3)
    _check(
        lambda p, q: [
            fn(p, _c([0, -1]), keep),
            fn(p, _c(1, np.int32), keep),
            fn(q, _c([1]), keep),
            fn(p, _c([2, 0, 1]), keep),
        ],
        x,
        n,
        tmp_path=tmp_path,
        rtol=1e-5,
    )


def test_reduce_prod_of_empty_and_unit_axes(tmp_path: Path) -> None:
    _check(
        lambda p: [ops.reduce_prod(p, _c([1]), False), ops.reduce_prod(p, _c([0, 2]), True)],
        _f32(1, 0, 3),
        tmp_path=tmp_path,
    )


@pytest.mark.parametrize("name", sorted(REDUCE))
def test_reduce_over_no_axes_is_identity(name: str, tmp_path: Path) -> None:
    # OpenVINO's CPU plugin rejects empty axes; its spec and reference evaluator reduce nothing.
    x = ops.parameter([2, 3], np.float32, name="x")
    path = _save([REDUCE[name](x, _c([], np.int64), True)], [x], tmp_path)
    data = _f32(2, 3)
    (got,) = tl.load(path).run({"x": data}).values()
    np.testing.assert_array_equal(got, data)


@pytest.mark.parametrize(
    ("bounds", "dtype", "output_type"),
    [
        ((0.5, 5.0, 1.5), np.float32, "i32"),  # each bound is cast (truncated) first
        ((-2.5, 3.7, 1.9), np.float32, "i64"),
        ((1, 20, 3), np.int32, "i64"),
        ((4, -4, -3), np.int64, "f32"),
        ((0.0, 1.0, 0.25), np.float32, "f32"),
        ((10, 2, 1), np.int32, "i32"),  # empty
    ],
)
def test_range_4(bounds: tuple[float, ...], dtype: Any, output_type: str, tmp_path: Path) -> None:
    # With computed bounds the CPU plugin neither casts first nor yields an empty range (10..2
    # gives 8 entries), so constant bounds let OpenVINO's reference evaluator fold the result.
    start, stop, step = (ops.constant(np.array(b, dtype)) for b in bounds)
    path = _save([ops.range(start, stop, step, output_type)], [], tmp_path)
    _run_path(path, {})


def test_range_4_with_computed_bounds(tmp_path: Path) -> None:
    start, stop, step = (np.array(b, np.int32) for b in (1, 20, 3))
    _check(lambda a, b, c: ops.range(a, b, c, "i64"), start, stop, step, tmp_path=tmp_path)
    start, stop, step = (np.array(b, np.float32) for b in (4.0, -4.0, -3.0))
    _check(lambda a, b, c: ops.range(a, b, c, "f32"), start, stop, step, tmp_path=tmp_path)


@pytest.mark.parametrize("dtype", [np.int32, np.float32])
def test_range_0(dtype: Any, tmp_path: Path) -> None:
    start, stop, step = (np.array(b, dtype) for b in (1, 9, 2))
    _check(opset1.range, start, stop, step, tmp_path=tmp_path)


# -- state ----------------------------------------------------------------------------------------


def _stateful(init: str, version: str, tmp_path: Path) -> Path:
    """out = state + x; then state <- out (v3, whose Assign must follow its ReadValue) or
    state <- 2 * x (v6; this Assign is converted before the ReadValue)."""
    x = ops.parameter([2, 3], np.float32, name="x")
    start = ops.constant(np.full((2, 3), 0.5, np.float32))
    value = start if init == "const" else ops.multiply(x, _c(3.0, np.float32))
    if version == "v3":
        read = opset3.read_value(value, "s")
    elif init == "none":
        read = ops.read_value("s", ov.Type.f32, [2, 3])
    else:
        read = ops.read_value(value, "s", ov.Type.f32, [2, 3])
    out = ops.add(read, x)
    if version == "v3":
        assign = opset3.assign(out, "s")
    else:
        assign = ops.assign(ops.multiply(x, _c(2.0, np.float32)), "s")
    return _save([out], [x], tmp_path, sinks=[assign])


@pytest.mark.parametrize(
    ("init", "version"),
    [("const", "v6"), ("computed", "v6"), ("none", "v6"), ("const", "v3"), ("computed", "v3")],
)
def test_read_value_assign_keep_state_across_runs(init: str, version: str, tmp_path: Path) -> None:
    path = _stateful(init, version, tmp_path)
    ours = tl.load(path)
    request = _compile(path).create_infer_request()
    feeds = [_f32(2, 3) for _ in range(3)]
    for step, x in enumerate([*feeds, *feeds]):
        if step == 3:  # both start over from the initial state
            ours.reset_state()
            request.reset_state()
        (got,) = ours.run({"x": x}).values()
        want = request.infer({"x": x})[0]
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=f"run {step}")
    assert "s" in ours.state


def test_assign_output_passes_its_input_through(tmp_path: Path) -> None:
    # OpenVINO's CPU plugin crashes on a model that reads an Assign's output, so the spec decides.
    x = ops.parameter([3], np.float32, name="x")
    read = ops.read_value(ops.constant(np.ones(3, np.float32)), "v", ov.Type.f32, [3])
    assign = ops.assign(ops.add(read, x), "v")
    path = _save([ops.multiply(assign, x)], [x], tmp_path, sinks=[assign])
    ours = tl.load(path)
    x1, x2 = _f32(3), _f32(3)
    (first,) = ours.run({"x": x1}).values()
    np.testing.assert_allclose(first, (1 + x1) * x1, rtol=1e-6)
    np.testing.assert_allclose(ours.state["v"], 1 + x1)
    (second,) = ours.run({"x": x2}).values()
    np.testing.assert_allclose(second, (1 + x1 + x2) * x2, rtol=1e-6)


# -- errors ---------------------------------------------------------------------------------------


def _layer_error(path: Path, layer_type: str, *fragments: str) -> None:
    found = re.search(rf'<layer id="(\d+)" name="([^"]+)" type="{layer_type}"', path.read_text())
    assert found
    lid, name = found.groups()
    with pytest.raises(tl.FormatError) as info:
        tl.load(path)
    message = str(info.value)
    assert f"m.xml: layer {lid} '{name}' ({layer_type})" in message
    for fragment in fragments:
        assert fragment in message, message


# (a layer on x: f32[2, 6], the attribute to spoil, its bad value, words the message must hold)
BAD_ATTRIBUTES = [
    (lambda p: ops.reshape(p, _c([12]), True), "special_zero", "maybe", "true or false"),
    (lambda p: ops.convert(p, "i32"), "destination_type", "q7", "unsupported element type"),
    (lambda p: ops.clamp(p, 0.0, 1.0), "max", "-1", "min <= max"),
    (lambda p: ops.clamp(p, 0.0, 1.0), "min", "low", "expected a number"),
    (lambda p: ops.strided_slice(p, _c([0]), _c([1]), _c([1]), [0], [0]), "begin_mask", "2",
     "0s and 1s"),
    (lambda p: ops.strided_slice(p, _c([0]), _c([1]), _c([1]), [0], [0]), "end_mask", "x",
     "expected integers"),
    (lambda p: ops.add(p, p), "auto_broadcast", "pdpd", "expected one of numpy, none"),
    (lambda p: opset8.gather(p, _c([0]), _c(1), 0), "batch_dims", "3", "expected at most axis"),
    (lambda p: ops.split(p, _c(1), 3), "num_splits", "0", "expected at least 1"),
    (lambda p: opset3.broadcast(p, _c([2, 6]), None, "NUMPY"), "mode", "pdpd", "bidirectional"),
    (lambda p: ops.reduce_sum(p, _c([0]), True), "keep_dims", "yes", "true or false"),
    (lambda p: opset3.shape_of(p, "i32"), "output_type", "f32", "expected i32 or i64"),
    (lambda p: opset1.softmax(p, 1), "axis", "-1", "non-negative"),
    (lambda p: ops.matmul(p, p, False, True), "transpose_a", "2", "true or false"),
    (lambda p: ops.concat([p, p], 0), "axis", "first", "expected an integer"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("build", "key", "bad", "words"), BAD_ATTRIBUTES, ids=[f"{c[1]}={c[2]}" for c in BAD_ATTRIBUTES]
)
def test_bad_attributes_name_layer_and_attribute(
    build: Callable[[Any], Any], key: str, bad: str, words: str, tmp_path: Path
) -> None:
    x = ops.parameter([2, 6], np.float32, name="x")
    path = _save([build(x)], [x], tmp_path)
    layer = re.compile(rf'(type="(\w+)" version="\w+">\s*<data [^>]*\b{key}=")[^"]*"')
    found = layer.search(path.read_text())
    assert found, key
    path.write_text(layer.sub(rf'\g<1>{bad}"', path.read_text(), count=1))
    _layer_error(path, found.group(2), f"'{key}'", bad, words)


def test_auto_broadcast_none_needs_equal_shapes(tmp_path: Path) -> None:
    a = ops.parameter([2, 3], np.float32, name="a")
    b = ops.parameter([3], np.float32, name="b")
    path = _save([ops.add(a, b)], [a, b], tmp_path)
    _edit(path, 'auto_broadcast="numpy"', 'auto_broadcast="none"')
    _layer_error(path, "Add", "auto_broadcast is 'none'", "f32[2,3] vs f32[3]")
    same = ops.parameter([2, 3], np.float32, name="b")
    path = _save([ops.multiply(a, same)], [a, same], tmp_path)
    _edit(path, 'auto_broadcast="numpy"', 'auto_broadcast="none"')
    _run_path(path, {"a": _f32(2, 3), "b": _f32(2, 3)})


def test_non_constant_inputs_that_must_be_constant(tmp_path: Path) -> None:
    x = ops.parameter([2, 3], np.float32, name="x")
    order = ops.parameter([2], np.int64, name="order")
    path = _save([ops.transpose(x, order)], [x, order], tmp_path)
    _layer_error(path, "Transpose", "input #1 (order) must be a constant")


def test_read_value_errors(tmp_path: Path) -> None:
    path = _stateful("const", "v6", tmp_path)
    _edit(path, 'variable_type="f32"', 'variable_type="i32"')
    _layer_error(path, "ReadValue", "the init input is f32[2,3], but the variable is i32[2,3]")
    path = _stateful("none", "v6", tmp_path)
    _edit(path, 'variable_shape="2,3"', 'variable_shape="?,3"')
    text = path.read_text()
    path.write_text(re.sub(r"(type=\"ReadValue\"[\s\S]*?<dim>)2(</dim>)", r"\g<1>-1\2", text))
    _layer_error(path, "ReadValue", "variable 's' needs a static type", "'?,3'")


def test_read_value_inside_a_loop_body_is_refused(tmp_path: Path) -> None:
    X = ops.parameter([3, 2], np.float32, name="X")
    xi = ops.parameter([1, 2], np.float32, name="xi")
    read = ops.read_value(ops.constant(np.zeros((1, 2), np.float32)), "v", ov.Type.f32, [1, 2])
    total = ops.add(read, xi)
    r = ops.result(total)
    ti = ops.tensor_iterator()
    ti.set_body(ov.Model([r], [ops.assign(total, "v")], [xi], "body"))
    ti.set_sliced_input(xi, X.output(0), 0, 1, 1, -1, 0)
    path = _save([ti.get_concatenated_slices(r.output(0), 0, 1, 1, -1, 0)], [X], tmp_path)
    _layer_error(path, "ReadValue", "(TensorIterator) body", "inside a loop body")
