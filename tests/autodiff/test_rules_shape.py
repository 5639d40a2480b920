"""Gradients of the shape and indexing ops against central differences (``grad_check``):
attribute variants, repeated and negative indices, clamped and negative-step slices, and
inputs of symbolic shape (the rules' run-time ``Shape`` paths)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorloop as tl
from grad_check import check_model, check_op
from tensorloop.errors import GradientError
from tensorloop.ir.emit import Emitter
from tensorloop.ir.graph import Graph
from tensorloop.tensor.dtypes import DType, dtype
from tensorloop.tensor.types import TensorType

HYPO = settings(max_examples=15, deadline=None)


def rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape)


def ints(*values: int) -> np.ndarray:
    return np.array(values, np.int64)


def check_dynamic(
    op: str,
    inputs: Sequence[np.ndarray],
    attrs: Mapping[str, Any] | None = None,
    *,
    constants: Mapping[int, np.ndarray] | None = None,
    symbolic: Mapping[int, Sequence[int | str]] | None = None,
    wrt: Sequence[int] | None = None,
    **tolerances: float,
) -> None:
    """``check_op`` with inputs typed by ``symbolic`` (index: dims, a name for an unknown dim),
    so that the rules see no static shapes; the loss is the sum of each float output squared
    (a cotangent that differs from cell to cell without static weights)."""
    g = Graph("grad_check_dynamic")
    em = Emitter(g)
    constants, symbolic = dict(constants or {}), dict(symbolic or {})
    values: list[Any] = []
    feeds: dict[str, np.ndarray] = {}
    for k, x in enumerate(inputs):
        if k in constants:
            values.append(em.const(constants[k]))
            continue
        x = np.asarray(x)
        dims = symbolic.get(k, x.shape)
        values.append(g.add_input(f"x{k}", TensorType(dtype(x.dtype), dims)))
        feeds[f"x{k}"] = x
    total = None
    for out in em.ops(op, values, dict(attrs or {})):
        t = out.type
        if isinstance(t, TensorType) and t.dtype.is_float:
            term = em.op("ReduceSum", [em.op("Mul", [out, out])], {"keepdims": 0})
            total = term if total is None else em.op("Add", [total, term])
    assert total is not None
    g.outputs = [g.result_named(total, "loss")]
    names = [n for n, x in feeds.items() if x.dtype.kind == "f"]
    if wrt is not None:
        names = [f"x{k}" for k in wrt]
    check_model(tl.Model(g), feeds, names, **tolerances)


# -- reshapes --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "target", "allowzero"),
    [
        ((2, 3, 4), [0, -1], 0),
        ((2, 3, 4), [-1], 0),
        ((2, 3, 4), [4, 0, 2], 0),
        ((2, 3), [3, 2], 1),
        ((1, 1), [], 0),
        ((0, 3), [3, 0], 1),
    ],
)
def test_reshape(shape: tuple[int, ...], target: list[int], allowzero: int) -> None:
    check_op(
        "Reshape",
        [rand(*shape), ints(*target)],
        {"allowzero": allowzero},
        constants={1: ints(*target)},
    )


def test_reshape_dynamic() -> None:
    check_dynamic("Reshape", [rand(2, 3, 4), ints(4, -1)], symbolic={0: ["N", 3, 4]})
    check_dynamic("Reshape", [rand(2, 3, 4), ints(0, 12)], symbolic={0: ["N", "M", 4]})


@pytest.mark.parametrize("axis", [0, 1, 2, 3, -1, -3])
def test_flatten(axis: int) -> None:
    check_op("Flatten", [rand(2, 3, 4)], {"axis": axis})


def test_flatten_dynamic() -> None:
    check_dynamic("Flatten", [rand(2, 3, 4)], {"axis": 2}, symbolic={0: ["A", "B", 4]})


@pytest.mark.parametrize("perm", [None, (0, 1, 2), (2, 0, 1), (1, 2, 0), (0, 2, 1)])
def test_transpose(perm: tuple[int, ...] | None) -> None:
    check_op("Transpose", [rand(2, 3, 4)], {} if perm is None else {"perm": list(perm)})


@HYPO
@given(st.permutations(range(4)))
def test_transpose_random_permutation(perm: list[int]) -> None:
    check_op("Transpose", [rand(2, 1, 3, 2)], {"perm": list(perm)})


@pytest.mark.parametrize(
    ("shape", "axes"),
    [((1, 3, 1), [0]), ((1, 3, 1), [-1]), ((1, 3, 1), [0, 2]), ((1, 3, 1), None), ((1,), None)],
)
def test_squeeze(shape: tuple[int, ...], axes: list[int] | None) -> None:
    if axes is None:
        check_op("Squeeze", [rand(*shape)])
    else:
        check_op("Squeeze", [rand(*shape), ints(*axes)], constants={1: ints(*axes)})


def test_squeeze_dynamic() -> None:
    check_dynamic(
        "Squeeze", [rand(2, 1, 3), ints(1)], constants={1: ints(1)}, symbolic={0: ["N", 1, 3]}
    )


@pytest.mark.parametrize(
    ("shape", "axes"), [((2, 3), [0]), ((2, 3), [-1]), ((2, 3), [1, 3]), ((), [0, -1])]
)
def test_unsqueeze(shape: tuple[int, ...], axes: list[int]) -> None:
    check_op("Unsqueeze", [rand(*shape), ints(*axes)], constants={1: ints(*axes)})


# -- joins and cuts --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shapes", "axis"),
    [
        ([(2, 3), (4, 3)], 0),
        ([(2, 3), (2, 1), (2, 2)], 1),
        ([(2, 3), (2, 1), (2, 2)], -1),
        ([(2, 3, 1), (2, 3, 2)], -1),
        ([(2, 0), (2, 3)], 1),
        ([(3,)], 0),
    ],
)
def test_concat(shapes: list[tuple[int, ...]], axis: int) -> None:
    check_op("Concat", [rand(*s, seed=k) for k, s in enumerate(shapes)], {"axis": axis})


def test_concat_dynamic() -> None:
    xs = [rand(2, 3), rand(2, 1, seed=1), rand(2, 4, seed=2)]
    dims: dict[int, list[int | str]] = {0: [2, "A"], 1: [2, 1], 2: ["N", "B"]}
    check_dynamic("Concat", xs, {"axis": -1}, symbolic=dims)


def test_concat_of_one_input_twice() -> None:
    x = rand(2, 3)
    check_op("Concat", [x, x], {"axis": 0})  # two feeds: each gets its half


@pytest.mark.parametrize(
    ("shape", "attrs", "sizes"),
    [
        ((5, 2), {"axis": 0}, [2, 3]),
        ((2, 6), {"axis": 1}, [1, 0, 5]),
        ((2, 6), {"axis": -1}, [3, 3]),
        ((2, 7), {"axis": 1, "num_outputs": 3}, None),
        ((4,), {"num_outputs": 1}, None),
    ],
)
def test_split(shape: tuple[int, ...], attrs: dict[str, int], sizes: list[int] | None) -> None:
    if sizes is None:
        check_op("Split", [rand(*shape)], attrs)
    else:
        check_op("Split", [rand(*shape), ints(*sizes)], attrs, constants={1: ints(*sizes)})


@pytest.mark.parametrize("used", [[0], [1], [0, 2], [2]])
def test_split_unused_outputs_contribute_zeros(used: list[int]) -> None:
    g = Graph("split_some")
    em = Emitter(g)
    x = g.add_input("x", TensorType("float64", [2, 6]))
    outs = em.ops("Split", [x, em.ints([1, 2, 3])], {"axis": 1})
    total = None
    for k in used:
        w = em.const(rand(*outs[k].tensor_type.static_shape, seed=k))
        term = em.op("ReduceSum", [em.op("Mul", [outs[k], w])], {"keepdims": 0})
        total = term if total is None else em.op("Add", [total, term])
    assert total is not None
    g.outputs = [g.result_named(total, "loss")]
    grads = check_model(tl.Model(g), {"x": rand(2, 6)}, ["x"])
    unused = [c for k, cols in enumerate([[0], [1, 2], [3, 4, 5]]) if k not in used for c in cols]
    assert not np.any(grads["x"][:, unused])


def test_split_dynamic() -> None:
    check_dynamic("Split", [rand(3, 5)], {"axis": 1, "num_outputs": 2}, symbolic={0: ["N", 5]})


SLICES = [
    # starts, ends, axes, steps
    ([1], [3], None, None),
    ([0, 1], [2, 4], [0, 1], None),
    ([-3], [-1], [1], None),
    ([-100], [100], [-1], None),  # clamped at both ends
    ([2], [2], [0], None),  # empty
    ([3], [0], [1], [-1]),
    ([-1], [-100], [1], [-1]),  # the whole axis reversed, end clamped past 0
    ([100], [0], [1], [-2]),  # start clamped to the last
    ([0, 4], [3, -100], [0, 1], [2, -3]),
    ([1], [100], [-1], [3]),
    ([0, 0], [1, 5], [-3, 1], [1, 2]),
]


@pytest.mark.parametrize(("starts", "ends", "axes", "steps"), SLICES)
def test_slice(
    starts: list[int], ends: list[int], axes: list[int] | None, steps: list[int] | None
) -> None:
    x = rand(3, 5, 2)
    params = [ints(*starts), ints(*ends)]
    if axes is not None or steps is not None:
        params.append(ints(*(axes if axes is not None else range(len(starts)))))
    if steps is not None:
        params.append(ints(*steps))
    constants = {k + 1: p for k, p in enumerate(params)}
    check_op("Slice", [x, *params], constants=constants)


@pytest.mark.parametrize(("starts", "ends", "axes", "steps"), SLICES[::2])
def test_slice_bounds_at_run_time(
    starts: list[int], ends: list[int], axes: list[int] | None, steps: list[int] | None
) -> None:
    # the bounds are fed, so the rule cannot know them (nor the output's shape)
    axes = axes if axes is not None else list(range(len(starts)))
    steps = steps if steps is not None else [1] * len(starts)
    inputs = [rand(3, 5, 2), ints(*starts), ints(*ends), ints(*axes), ints(*steps)]
    check_dynamic("Slice", inputs, symbolic={0: ["A", 5, "B"]})


@HYPO
@given(
    st.data(),
    st.lists(st.integers(1, 4), min_size=1, max_size=3),
)
def test_slice_random(data: st.DataObject, shape: list[int]) -> None:
    rank = len(shape)
    axes = data.draw(
        st.lists(st.integers(-rank, rank - 1), min_size=1, max_size=rank).filter(
            lambda a: len({v % rank for v in a}) == len(a)
        )
    )
    n = len(axes)
    bound = st.integers(-6, 6)
    starts = data.draw(st.lists(bound, min_size=n, max_size=n))
    ends = data.draw(st.lists(bound, min_size=n, max_size=n))
    steps = data.draw(st.lists(st.integers(-3, 3).filter(bool), min_size=n, max_size=n))
    params = [ints(*starts), ints(*ends), ints(*axes), ints(*steps)]
    x = rand(*shape)
    check_op("Slice", [x, *params], constants={k + 1: p for k, p in enumerate(params)})


# -- gathers ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "indices", "axis"),
    [
        ((4, 3), ints(0, 2, 2, -1), 0),
        ((4, 3), np.array([[1, 1], [-4, 3]], np.int64), 0),
        ((4, 3), np.array(2, np.int64), 0),
        ((4, 3), ints(2, 0, 2, -3), 1),
        ((2, 4, 3), np.array([[0, -1], [3, 3], [1, 1]], np.int64), 1),
        ((2, 4, 3), np.array(-1, np.int64), -1),
        ((2, 3), np.array([0, 2, 2], np.int32), -1),
        ((3, 2), np.array([[0, -1], [2, 0]], np.int32), 0),
    ],
)
def test_gather(shape: tuple[int, ...], indices: np.ndarray, axis: int) -> None:
    check_op("Gather", [rand(*shape), indices], {"axis": axis}, constants={1: indices})


@HYPO
@given(st.data(), st.lists(st.integers(1, 3), min_size=1, max_size=3))
def test_gather_random(data: st.DataObject, shape: list[int]) -> None:
    rank = len(shape)
    axis = data.draw(st.integers(-rank, rank - 1))
    n = shape[axis]
    index_shape = data.draw(st.lists(st.integers(0, 3), max_size=2))
    flat = data.draw(
        st.lists(st.integers(-n, n - 1), min_size=int(np.prod(index_shape)), max_size=16)
    )
    idx = np.array(flat[: int(np.prod(index_shape))], np.int64).reshape(index_shape)
    check_op("Gather", [rand(*shape), idx], {"axis": axis}, constants={1: idx})


def test_gather_dynamic() -> None:
    idx = np.array([[1, 1], [0, -1]], np.int64)
    check_dynamic("Gather", [rand(3, 4), idx], {"axis": 1}, symbolic={0: ["N", "M"], 1: [2, "K"]})
    check_dynamic("Gather", [rand(3, 4), idx], {"axis": 0}, symbolic={0: ["N", "M"]})


@pytest.mark.parametrize(
    ("shape", "indices", "axis"),
    [
        ((3, 2), np.array([[0, 0], [2, 0], [0, 1], [2, 2]]), 0),
        ((3, 2), np.array([[1, -1, 1], [0, 0, -2]]), 1),
        ((3, 4), np.array([[1], [3], [-1]]), -1),
        ((3, 4), np.array([[2, 2, 2]]), 0),
    ],
)
def test_gather_elements(shape: tuple[int, ...], indices: np.ndarray, axis: int) -> None:
    idx = indices.astype(np.int64)
    check_op("GatherElements", [rand(*shape), idx], {"axis": axis}, constants={1: idx})


@pytest.mark.parametrize(
    ("shape", "indices", "batch_dims"),
    [
        ((3, 4), [[0, 1], [2, 3], [0, 1], [-1, -1]], 0),
        ((3, 4), [[2], [0], [2]], 0),
        ((2, 3, 4), [[[0, 1]], [[1, -1]], [[0, 1]]], 0),
        ((2, 3, 4), [[[1], [1]], [[0], [2]]], 1),
        ((2, 3, 4), [[0, 3], [-1, 0]], 1),
        ((2, 3, 4), [[[1], [3], [1]], [[0], [0], [-1]]], 2),
    ],
)
def test_gather_nd(shape: tuple[int, ...], indices: list[Any], batch_dims: int) -> None:
    idx = np.array(indices, np.int64)
    check_op("GatherND", [rand(*shape), idx], {"batch_dims": batch_dims}, constants={1: idx})


# -- broadcasts and repeats ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "target"),
    [((3, 1), [2, 3, 4]), ((1,), [3]), ((2, 3), [2, 3]), ((2, 1, 3), [1, 4, 1]), ((), [2, 2])],
)
def test_expand(shape: tuple[int, ...], target: list[int]) -> None:
    check_op("Expand", [rand(*shape), ints(*target)], constants={1: ints(*target)})


def test_expand_shape_at_run_time() -> None:
    check_dynamic("Expand", [rand(3, 1), ints(2, 3, 4)])
    check_dynamic("Expand", [rand(1, 4), ints(3, 1)], symbolic={0: ["A", 4]})


@pytest.mark.parametrize(
    ("shape", "repeats"), [((2, 3), [2, 1]), ((2, 1, 3), [1, 3, 2]), ((3,), [0]), ((), [])]
)
def test_tile(shape: tuple[int, ...], repeats: list[int]) -> None:
    check_op("Tile", [rand(*shape), ints(*repeats)], constants={1: ints(*repeats)})


def test_tile_repeats_at_run_time() -> None:
    check_dynamic("Tile", [rand(2, 3), ints(3, 2)], symbolic={0: ["N", 3]})


@pytest.mark.parametrize(
    ("cond", "x", "y"),
    [
        ((2, 3), (2, 3), (2, 3)),
        ((2, 3), (), (3,)),
        ((3,), (2, 1), (1, 3)),
        ((1, 3), (2, 1), ()),
    ],
)
def test_where(cond: tuple[int, ...], x: tuple[int, ...], y: tuple[int, ...]) -> None:
    c = np.random.default_rng(7).random(cond) < 0.5
    check_op("Where", [c, rand(*x, seed=1), rand(*y, seed=2)], constants={0: c})


def test_where_condition_fed() -> None:
    c = np.array([[True, False, True], [False, False, True]])
    check_op("Where", [c, rand(2, 3), rand(1, 3, seed=1)])


def test_where_dynamic() -> None:
    c = np.array([[True, False, True], [False, False, True]])
    check_dynamic("Where", [c, rand(2, 1), rand(3, seed=1)], symbolic={1: ["N", 1], 2: ["M"]})


# -- casts -----------------------------------------------------------------------------------


def test_cast_same_type() -> None:
    check_op("Cast", [rand(2, 3)], {"to": DType.float64})


@pytest.mark.parametrize("to", [DType.float32, DType.float16])
def test_cast_narrowing(to: DType) -> None:
    # the op is linear: a wide step keeps the narrow loss's rounding out of the differences
    grads = check_op("Cast", [rand(2, 3)], {"to": to}, eps=0.5, rtol=1e-2, atol=1e-2)
    assert grads["x0"].dtype == np.float64


def test_cast_like() -> None:
    grads = check_op("CastLike", [rand(2, 3), np.zeros(1)])
    assert not np.any(grads["x1"])  # the target gives only its type
    # a narrower target: the loss (squares) is quadratic, so wide central differences are exact
    # but for the float32 rounding
    target = np.zeros(1, np.float32)
    check_dynamic("CastLike", [rand(2, 3), target], wrt=[0], eps=0.5, rtol=1e-4, atol=1e-4)


def test_cast_from_integers_has_no_gradient() -> None:
    g = Graph("cast_int")
    em = Emitter(g)
    x = g.add_input("x", TensorType("float64", [3]))
    k = g.add_input("k", TensorType("int32", [3]))
    y = em.op("Mul", [x, em.op("Cast", [k], {"to": DType.float64})])
    g.outputs = [g.result_named(em.op("ReduceSum", [y], {"keepdims": 0}), "loss")]
    check_model(tl.Model(g), {"x": rand(3), "k": np.array([1, -2, 3], np.int32)}, ["x"])


# -- pads ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pads", "axes"),
    [
        ([1, 0, 2, 1], None),
        ([0, -1, 1, 0], None),
        ([-1, 2, -1, -2], None),
        ([-3, 0, 2, 0], None),  # the whole axis cropped, then padded
        ([2, -1], [1]),
        ([1, 1], [-2]),
    ],
)
def test_pad_constant(pads: list[int], axes: list[int] | None) -> None:
    x = rand(3, 4)
    inputs = [x, ints(*pads)]
    constants: dict[int, Any] = {1: ints(*pads)}
    if axes is not None:
        inputs += [np.array(0.0), ints(*axes)]
        constants[2] = np.array(0.0)
        constants[3] = ints(*axes)
    check_op("Pad", inputs, constants=constants)


@pytest.mark.parametrize("value", [np.array(0.5), np.array([1.5])])
def test_pad_constant_value_has_a_gradient(value: np.ndarray) -> None:
    grads = check_op(
        "Pad", [rand(2, 3), ints(1, -1, 0, 2), value], constants={1: ints(1, -1, 0, 2)}
    )
    assert grads["x2"].shape == value.shape


def test_pad_at_run_time() -> None:
    check_dynamic(
        "Pad",
        [rand(3, 4), ints(1, -1, 0, 2), np.array(0.25)],
        symbolic={0: ["N", "M"]},
    )


@pytest.mark.parametrize("mode", ["reflect", "edge", "wrap"])
@pytest.mark.parametrize(("pads", "axes"), [([2, 1, 1, 2], None), ([3, -1], [1]), ([1, 0], [0])])
def test_pad_modes(mode: str, pads: list[int], axes: list[int] | None) -> None:
    x = rand(3, 4)
    inputs: list[Any] = [x, ints(*pads)]
    constants: dict[int, Any] = {1: ints(*pads)}
    if axes is not None:
        inputs += [None, ints(*axes)]
        constants[2] = None
        constants[3] = ints(*axes)
    check_op("Pad", inputs, {"mode": mode}, constants=constants)


# -- block moves, sequences, masks ------------------------------------------------------------


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
@pytest.mark.parametrize("op", ["DepthToSpace", "SpaceToDepth"])
def test_block_rearrangements(op: str, mode: str) -> None:
    shape = (1, 8, 2, 3) if op == "DepthToSpace" else (2, 2, 4, 2)
    check_op(op, [rand(*shape)], {"blocksize": 2, "mode": mode})


@pytest.mark.parametrize(("batch_axis", "time_axis"), [(1, 0), (0, 1)])
def test_reverse_sequence(batch_axis: int, time_axis: int) -> None:
    lens = ints(4, 0, 2)
    shape = [3, 4, 2] if batch_axis == 0 else [4, 3, 2]
    attrs = {"batch_axis": batch_axis, "time_axis": time_axis}
    check_op("ReverseSequence", [rand(*shape), lens], attrs, constants={1: lens})


@pytest.mark.parametrize("upper", [0, 1])
@pytest.mark.parametrize("k", [None, 0, 1, -2])
def test_trilu(upper: int, k: int | None) -> None:
    x = rand(2, 3, 4)
    if k is None:
        check_op("Trilu", [x], {"upper": upper})
    else:
        kk = np.array(k, np.int64)
        check_op("Trilu", [x, kk], {"upper": upper}, constants={1: kk})


@pytest.mark.parametrize(
    ("shape", "target", "axes"),
    [((5, 4), [3, 6], None), ((4, 3), [7], [0]), ((2, 5), [2], [-1])],
)
def test_center_crop_pad(shape: tuple[int, ...], target: list[int], axes: list[int] | None) -> None:
    attrs = {} if axes is None else {"axes": axes}
    check_op("CenterCropPad", [rand(*shape), ints(*target)], attrs, constants={1: ints(*target)})


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_compress(axis: int | None) -> None:
    cond = np.array([True, False, True])
    attrs = {} if axis is None else {"axis": axis}
    check_dynamic("Compress", [rand(3, 3), cond], attrs, constants={1: cond})


# -- scatters --------------------------------------------------------------------------------


@pytest.mark.parametrize("reduction", ["none", "add"])
@pytest.mark.parametrize(
    ("axis", "indices"), [(0, [[1, 0, 2], [-1, 2, 0]]), (1, [[3, 0], [1, -4], [2, 2]])]
)
def test_scatter_elements(reduction: str, axis: int, indices: list[list[int]]) -> None:
    idx = np.array(indices, np.int64)
    if reduction == "none" and axis == 1:
        idx = np.array([[3, 0], [1, -1], [2, 0]], np.int64)  # distinct per row, as ONNX asks
    data, updates = rand(3, 4), rand(*idx.shape, seed=1)
    attrs = {"axis": axis, "reduction": reduction}
    check_op("ScatterElements", [data, idx, updates], attrs, constants={1: idx})


@pytest.mark.parametrize("reduction", ["none", "add"])
@pytest.mark.parametrize(
    ("indices", "update_shape"),
    [([[1], [-1]], (2, 4)), ([[0, 1], [2, 3], [1, 1]], (3,)), ([[[0, 0]], [[2, 1]]], (2, 1))],
)
def test_scatter_nd(reduction: str, indices: list[Any], update_shape: tuple[int, ...]) -> None:
    idx = np.array(indices, np.int64)
    data, updates = rand(3, 4), rand(*update_shape, seed=1)
    check_op("ScatterND", [data, idx, updates], {"reduction": reduction}, constants={1: idx})


def test_scatter_reduction_mul_has_no_rule() -> None:
    idx = ints(0)
    model_inputs = [rand(3), idx, rand(1)]
    with pytest.raises(GradientError, match="reduction 'mul'"):
        check_op("ScatterElements", model_inputs, {"reduction": "mul"}, constants={1: idx})


# -- resampling ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("attrs", "scales", "sizes"),
    [
        ({}, [1.0, 1.0, 2.0, 3.0], None),
        (
            {"nearest_mode": "floor", "coordinate_transformation_mode": "asymmetric"},
            None,
            [1, 2, 2, 3],
        ),
        (
            {"nearest_mode": "ceil", "coordinate_transformation_mode": "align_corners"},
            None,
            [1, 2, 5, 2],
        ),
        ({"axes": [-1]}, [0.5], None),
    ],
)
def test_resize_nearest(
    attrs: dict[str, Any], scales: list[float] | None, sizes: list[int] | None
) -> None:
    x = rand(1, 2, 3, 4)
    if sizes is None:
        s = np.array(scales, np.float32)
        check_op("Resize", [x, None, s], attrs, constants={1: None, 2: s})
    else:
        n = ints(*sizes)
        check_op("Resize", [x, None, None, n], attrs, constants={1: None, 2: None, 3: n})


RESAMPLING = [
    ({"mode": "linear"}, [1.0, 1.0, 2.0, 1.5], None),
    ({"mode": "linear", "coordinate_transformation_mode": "align_corners"}, None, [1, 2, 5, 3]),
    ({"mode": "linear", "antialias": 1}, [1.0, 1.0, 0.5, 0.75], None),
    ({"mode": "cubic"}, [1.0, 1.0, 1.5, 2.0], None),
    ({"mode": "cubic", "exclude_outside": 1, "axes": [-1]}, [0.6], None),
    (
        {"mode": "linear", "coordinate_transformation_mode": "asymmetric", "axes": [2, 3]},
        None,
        [4, 2],
    ),
    (
        {"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize", "axes": [2, 3]},
        None,
        [4, 5],
    ),
    (
        {"coordinate_transformation_mode": "tf_crop_and_resize", "extrapolation_value": 2.0},
        None,
        [1, 2, 3, 4],
    ),
]


@pytest.mark.parametrize(("attrs", "scales", "sizes"), RESAMPLING)
def test_resize_interpolating(
    attrs: dict[str, Any], scales: list[float] | None, sizes: list[int] | None
) -> None:
    x = rand(1, 2, 3, 4)
    constants: dict[int, Any] = {1: None, 2: None}
    inputs: list[Any] = [x, None, None]
    if attrs.get("coordinate_transformation_mode") == "tf_crop_and_resize":
        n = len(attrs.get("axes", range(4)))
        roi = np.array([0.0] * (n - 2) + [-0.2, 0.3] + [1.0] * (n - 2) + [0.9, 1.4], np.float32)
        inputs[1] = constants[1] = roi
    if sizes is None:
        inputs[2] = constants[2] = np.array(scales, np.float32)
    else:
        inputs.append(ints(*sizes))
        constants[3] = ints(*sizes)
    check_op("Resize", inputs, attrs, constants=constants)


def test_resize_linear_dynamic() -> None:
    scales = np.array([1.0, 2.0, 1.5], np.float32)
    check_dynamic(
        "Resize",
        [rand(2, 3, 4), np.zeros(0, np.float32), scales],
        {"mode": "linear"},
        constants={1: np.zeros(0, np.float32)},
        symbolic={0: ["N", "H", "W"]},
        wrt=[0],
    )


def test_resize_keep_aspect_ratio_has_no_interpolating_rule() -> None:
    n = ints(4, 4)
    attrs = {"mode": "linear", "keep_aspect_ratio_policy": "not_larger"}
    with pytest.raises(GradientError, match="keep_aspect_ratio_policy"):
        check_op("Resize", [rand(2, 3), None, None, n], attrs, constants={1: None, 2: None, 3: n})
