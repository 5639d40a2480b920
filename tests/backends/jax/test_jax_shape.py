"""The JAX backend's shape, indexing and scatter/gather lowerings compute what the reference
kernels compute, and run on XLA (not on the compiled backend) in typical models.

Each case is checked twice: the node's lowering traced eagerly against the reference kernel
(with the fault code it sets: a run-time index the reference refuses must deopt), and a one-node
model run on the jax backend against the reference, its op placed on 'xla'."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorloop as tl
from backend_agreement import JAX_VS_REFERENCE, assert_same_outputs, assert_same_value
from ops_harness import C
from ops_harness import build as build_node
from tensorloop.backends.jax.lowering import (
    LOWERINGS,
    ConstantPool,
    LowerContext,
    Options,
    lower_node,
)
from tensorloop.errors import ExecutionError
from tensorloop.ir.graph import Node
from tensorloop.reference.interpreter import Interpreter
from tensorloop.tensor.dtypes import DType

RNG = np.random.default_rng(11)
I64_MAX, I64_MIN = 2**63 - 1, -(2**63)


def randn(*shape: int, dtype: Any = np.float32) -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


def build(op: str, inputs: list[Any], attrs: dict[str, Any] | None) -> tuple[Node, list[Any]]:
    """A one-node graph (``ops_harness.build``) and the arguments its parameters take."""
    arrays = [x if x is None or isinstance(x, C) else np.asarray(x) for x in inputs]
    return build_node(op, arrays, attrs), [x for x in arrays if isinstance(x, np.ndarray)]


def lowered_eagerly(node: Node, args: list[Any]) -> tuple[list[np.ndarray], int]:
    """The node's lowering run op by op on concrete arrays: its outputs and fault code."""
    pool = ConstantPool()
    ctx = LowerContext(Options(), jnp.int64(1000), jnp.float64(-0.0), {}, pool)
    fed = iter(args)
    inputs = [
        None if v is None else pool.get(v) if v.constant is not None else jnp.asarray(next(fed))
        for v in node.inputs
    ]
    outs = lower_node(ctx, node, inputs)
    return [np.asarray(o) for o in outs], int(ctx.code)


def agree(
    op: str,
    inputs: list[Any],
    attrs: dict[str, Any] | None = None,
    *,
    on_xla: bool = True,
    eager: bool = False,
) -> None:
    """``op`` run on jax agrees with the reference (outputs, or the error class), placed on
    'xla' unless ``on_xla`` is false (where data the reference refuses is an XLA fault, the node
    stays on XLA: the fault hands the run to the compiled backend). ``eager``: also trace the
    lowering itself op by op, for ops the graph's specialisation folds away (Shape, Range...)."""
    node, args = build(op, inputs, attrs)
    assert node.graph is not None
    try:
        want: list[np.ndarray] | None = Interpreter().run(node.graph, args)
    except ExecutionError:
        want = None
    if eager:
        got, code = lowered_eagerly(node, args)
        assert want is not None and code == 0
        for k, (g_, w) in enumerate(zip(got, want, strict=True)):
            where = f"{op} lowered eagerly: output #{k}"
            assert_same_value(g_, w, where, backends=JAX_VS_REFERENCE)
    model = tl.Model(node.graph)
    if want is None:
        with pytest.raises(ExecutionError):
            model.run(args, backend="jax")
    else:
        ran = model.run(args, backend="jax")  # the suite's law compares it with the reference too
        for k, (name, w) in enumerate(zip(ran, want, strict=True)):
            where = f"{op} on jax: output #{k}"
            assert_same_value(ran[name], w, where, backends=JAX_VS_REFERENCE)
    if on_xla:
        off = [p for p in model.placement(args) if p.device != "xla"]
        assert not off, off


# --- Reshaping ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "target", "allowzero"),
    [
        ((2, 3, 4), [4, -1], 0),
        ((2, 3, 4), [0, -1], 0),
        ((2, 3, 4), [-1], 0),
        ((2, 0, 4), [0, 4, 0], 1),
        ((2, 0, 4), [0, -1], 0),
        ((6,), [1, 2, 1, 3], 0),
        ((1,), [], 0),
    ],
)
def test_reshape(shape: tuple[int, ...], target: list[int], allowzero: int) -> None:
    agree("Reshape", [randn(*shape), C(target)], {"allowzero": allowzero})


@pytest.mark.parametrize("perm", [None, [1, 0, 2], [2, 0, 1]])
@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.bool_])
def test_transpose(perm: list[int] | None, dtype: Any) -> None:
    agree("Transpose", [(randn(2, 3, 4) * 3).astype(dtype)], {"perm": perm})


@pytest.mark.parametrize("axes", [None, [0], [-1], [0, 3]])
def test_squeeze(axes: list[int] | None) -> None:
    agree("Squeeze", [randn(1, 3, 2, 1), None if axes is None else C(axes)])


@pytest.mark.parametrize("axes", [[0], [-1], [0, 3], [1, -1]])
def test_unsqueeze(axes: list[int]) -> None:
    agree("Unsqueeze", [randn(3, 2), C(axes)])


@pytest.mark.parametrize("axis", [0, 1, -1, 3])
def test_flatten(axis: int) -> None:
    agree("Flatten", [randn(2, 3, 0, 4) if axis == 1 else randn(2, 3, 1, 4)], {"axis": axis})


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat(axis: int) -> None:
    a, b = randn(2, 3), randn(2, 3)
    empty = np.zeros((0, 3) if axis == 0 else (2, 0), np.float32)
    agree("Concat", [a, empty, b], {"axis": axis})


def test_concat_of_one_input_and_ints() -> None:
    agree("Concat", [np.arange(6, dtype=np.int64).reshape(2, 3)], {"axis": 1})


@pytest.mark.parametrize(
    ("inputs", "attrs"),
    [
        ([randn(7, 2), C([3, 0, 4])], {}),
        ([randn(2, 7), None], {"axis": -1, "num_outputs": 3}),
        ([randn(2, 6), None], {"axis": 1, "num_outputs": 2}),
    ],
)
def test_split(inputs: list[Any], attrs: dict[str, Any]) -> None:
    agree("Split", inputs, attrs)


SLICES = [
    ([0], [2], None, None),
    ([1, -3], [I64_MAX, -1], [0, 1], None),
    ([-1], [I64_MIN], [1], [-1]),
    ([4, 0], [-10, 5], [1, 0], [-2, 2]),
    ([10], [20], [-1], None),
    ([2], [1], [0], [1]),
    ([-100], [100], [2], [3]),
    ([3], [-100], [2], [-3]),
]


@pytest.mark.parametrize(("starts", "ends", "axes", "steps"), SLICES)
def test_slice(starts: list[int], ends: list[int], axes: Any, steps: Any) -> None:
    inputs = [randn(4, 5, 6), C(starts), C(ends), None if axes is None else C(axes)]
    agree("Slice", [*inputs, None if steps is None else C(steps)])


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_slice_law(draw: st.DataObject) -> None:
    """Any clamped slice, lowered eagerly, is the reference's."""
    shape = (3, 4, 2)
    axes = draw.draw(
        st.lists(st.integers(-3, 2), min_size=1, max_size=3, unique_by=lambda a: a % 3)
    )
    bound = st.integers(-7, 7) | st.sampled_from([I64_MIN, I64_MAX])
    starts = [draw.draw(bound) for _ in axes]
    ends = [draw.draw(bound) for _ in axes]
    steps = [draw.draw(st.integers(-3, 3).filter(bool)) for _ in axes]
    x = np.arange(24, dtype=np.int32).reshape(shape)
    node, args = build("Slice", [x, C(starts), C(ends), C(axes), C(steps)], None)
    assert node.graph is not None
    (want,) = Interpreter().run(node.graph, args)
    (got,), code = lowered_eagerly(node, args)
    assert code == 0
    assert_same_value(got, want, "Slice", backends=JAX_VS_REFERENCE)


@pytest.mark.parametrize(
    ("shape", "target"),
    [((3, 1), [2, 3, 4]), ((3,), [1]), ((1, 4), [3, 1]), ((2, 1), [2, 0])],
)
def test_expand(shape: tuple[int, ...], target: list[int]) -> None:
    agree("Expand", [randn(*shape), C(target)])


@pytest.mark.parametrize("repeats", [[2, 3], [1, 1], [0, 2]])
def test_tile(repeats: list[int]) -> None:
    agree("Tile", [np.arange(6, dtype=np.int16).reshape(2, 3), C(repeats)])


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
@pytest.mark.parametrize(
    ("pads", "axes"), [([1, 2, 2, 1], None), ([-1, 3, 1, -2], None), ([5, 4], [-1])]
)
def test_pad(mode: str, pads: list[int], axes: list[int] | None) -> None:
    inputs: list[Any] = [randn(3, 4), C(pads)]
    inputs.append(np.float32(2.5) if mode == "constant" else None)
    inputs.append(None if axes is None else C(axes))
    agree("Pad", inputs, {"mode": mode})


def test_pad_defaults_and_ints() -> None:
    agree("Pad", [np.arange(6, dtype=np.int32).reshape(2, 3), C([0, 1, 2, 0])])
    agree("Pad", [np.zeros((0, 3), np.float32), C([1, 0, 1, 0])])


@pytest.mark.handoff("an index or shape the reference refuses: the compiled backend judges it")
def test_pad_of_an_empty_axis_by_reflection_is_the_references_error() -> None:
    x = np.zeros((0, 3), np.float32)
    agree("Pad", [x, C([1, 0, 0, 0])], {"mode": "reflect"}, on_xla=False)


@pytest.mark.parametrize(("shape", "axes"), [([3, 6], None), ([5, 2], None), ([4], [-1])])
def test_center_crop_pad(shape: list[int], axes: list[int] | None) -> None:
    agree("CenterCropPad", [randn(4, 5), C(shape)], {"axes": axes})


@pytest.mark.parametrize("op", ["DepthToSpace", "SpaceToDepth"])
@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_blocks(op: str, mode: str) -> None:
    x = randn(2, 8, 4, 6) if op == "DepthToSpace" else randn(2, 2, 4, 6)
    agree(op, [x], {"blocksize": 2, "mode": mode})


# --- Shapes and generated tensors ----------------------------------------------------------------


@pytest.mark.parametrize(("start", "end"), [(0, None), (1, None), (-2, -1), (5, None), (0, -9)])
def test_shape(start: int, end: int | None) -> None:
    agree("Shape", [randn(2, 3, 4)], {"start": start, "end": end}, eager=True)


def test_size() -> None:
    agree("Size", [randn(2, 3, 4)], eager=True)
    agree("Size", [np.zeros((2, 0), np.int8)], eager=True)


def test_constant_of_shape() -> None:
    agree("ConstantOfShape", [C([2, 3])], {"value": np.array([7], np.int32)}, eager=True)
    agree("ConstantOfShape", [C([0, 2])], eager=True)


@pytest.mark.parametrize(
    ("bounds", "dtype"),
    [((0, 5, 1), np.int64), ((10, 1, -3), np.int32), ((0.5, 3.0, 0.7), np.float32)],
)
def test_range(bounds: tuple[Any, ...], dtype: Any) -> None:
    agree("Range", [C(b, dtype) for b in bounds], eager=True)
    agree("Range", [C(1.0, np.float16), C(2.5, np.float16), C(0.1, np.float16)], eager=True)


def test_range_and_constant_of_shape_of_run_time_operands_say_why_not() -> None:
    node, _ = build("Range", [np.int64(0), np.int64(3), np.int64(1)], None)
    check = LOWERINGS["Range"].check
    assert check is not None and "constant" in (check(node, {}) or "")


@pytest.mark.parametrize(
    ("k", "dtype"), [(0, None), (1, None), (-2, DType.float64), (9, DType.int32)]
)
def test_eye_like(k: int, dtype: Any) -> None:
    agree("EyeLike", [randn(3, 4)], {"k": k, "dtype": dtype})


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_onehot(axis: int) -> None:
    idx = np.array([[0, -1, 5], [2, -4, 3]], np.int64)
    agree("OneHot", [idx, C(4), np.array([-1.0, 2.0], np.float32)], {"axis": axis})


def test_onehot_of_float_indices() -> None:
    idx = np.array([0.7, -1.2, np.nan, np.inf, -np.inf, 2.9, 1e30], np.float32)
    agree("OneHot", [idx, C(3.0, np.float32), np.array([0, 1], np.int64)])


# --- Gathers and scatters ------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("idx_dtype", [np.int64, np.int32, np.uint8])
def test_gather(axis: int, idx_dtype: Any) -> None:
    x = randn(3, 4, 5)
    n = x.shape[axis]
    low = 0 if idx_dtype == np.uint8 else -n
    agree("Gather", [x, RNG.integers(low, n, size=(2, 3)).astype(idx_dtype)], {"axis": axis})


def test_gather_of_a_scalar_index_and_bools() -> None:
    agree("Gather", [np.array([True, False, True]), np.int64(-1)])


@pytest.mark.handoff("an index or shape the reference refuses: the compiled backend judges it")
@pytest.mark.parametrize("bad", [4, -5, 100])
def test_gather_out_of_range_is_the_references_error(bad: int) -> None:
    agree("Gather", [randn(4, 2), np.array([0, bad], np.int64)])


@pytest.mark.handoff("an index or shape the reference refuses: the compiled backend judges it")
def test_gather_from_an_empty_axis() -> None:
    agree("Gather", [np.zeros((0, 2), np.float32), np.zeros((0,), np.int64)])
    agree("Gather", [np.zeros((0, 2), np.float32), np.array([0], np.int64)])


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_elements(axis: int) -> None:
    x = randn(3, 4, 5)
    n = x.shape[axis]
    agree(
        "GatherElements", [x, RNG.integers(-n, n, size=(2, 3, 4)).astype(np.int32)], {"axis": axis}
    )


@pytest.mark.handoff("an index or shape the reference refuses: the compiled backend judges it")
def test_gather_elements_out_of_range() -> None:
    agree("GatherElements", [randn(2, 3), np.array([[0, 3]], np.int64)], {"axis": 1})


@pytest.mark.handoff("an index or shape the reference refuses: the compiled backend judges it")
@pytest.mark.parametrize(
    ("shape", "idx", "batch_dims"),
    [
        ((3, 4), [[0, 1], [-1, -4]], 0),
        ((3, 4, 2), [[1], [2]], 0),
        ((3, 4, 2), [[[1, 0]], [[2, 1]], [[0, -1]]], 1),
        ((2, 3, 4), [[[1], [0]], [[2], [2]]], 1),
        ((2, 3, 4), [[[1, 3]], [[0, 0]]], 1),
        ((3, 4), [[0, 4]], 0),
    ],
)
def test_gather_nd(shape: tuple[int, ...], idx: Any, batch_dims: int) -> None:
    x = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    agree("GatherND", [x, np.array(idx, np.int64)], {"batch_dims": batch_dims})


REDUCTIONS = ["none", "add", "mul", "max", "min"]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32])
def test_scatter_nd(reduction: str, dtype: Any) -> None:
    x = (randn(4, 3) * 4).astype(dtype)
    idx = np.array([[1], [-1], [1], [0], [1]], np.int64)  # duplicates: in order, last wins
    upd = (randn(5, 3) * 4).astype(dtype)
    agree("ScatterND", [x, idx, upd], {"reduction": reduction})


@pytest.mark.handoff("an index or shape the reference refuses: the compiled backend judges it")
def test_scatter_nd_of_elements_and_out_of_range() -> None:
    x = np.arange(12, dtype=np.int64).reshape(3, 4)
    idx = np.array([[0, 1], [2, -1], [0, 1]], np.int64)
    agree("ScatterND", [x, idx, np.array([7, 8, 9], np.int64)])
    agree("ScatterND", [x, np.array([[3, 0]], np.int64), np.array([1], np.int64)])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("axis", [0, -1])
def test_scatter_elements(reduction: str, axis: int) -> None:
    x = randn(3, 4)
    idx = np.array([[1, 0, -1], [1, 2, 0]], np.int64)  # duplicates along axis 0 and 1
    upd = randn(2, 3)
    agree("ScatterElements", [x, idx, upd], {"axis": axis, "reduction": reduction})


def test_scatter_elements_of_bfloat16_and_nan() -> None:
    x = randn(4, dtype=ml_dtypes.bfloat16)
    upd = np.array([1.5, np.nan, 2.0], ml_dtypes.bfloat16)
    agree("ScatterElements", [x, np.array([0, 1, 0]), upd], {"reduction": "add"})
    agree("ScatterElements", [x, np.array([0, 1, 0]), upd], {"reduction": "none"})


@pytest.mark.handoff("an index or shape the reference refuses: the compiled backend judges it")
def test_scatter_elements_out_of_range() -> None:
    agree("ScatterElements", [randn(3), np.array([3]), randn(1)], {"reduction": "add"})


@pytest.mark.handoff("an index or shape the reference refuses: the compiled backend judges it")
@pytest.mark.parametrize("mode", ["linear", "circular"])
def test_tensor_scatter(mode: str) -> None:
    past, upd = randn(2, 5, 3), randn(2, 2, 3)
    agree("TensorScatter", [past, upd, np.array([1, 4], np.int64)], {"axis": 1, "mode": mode})
    agree("TensorScatter", [past, upd], {"axis": -2, "mode": mode})


@pytest.mark.handoff("an index or shape the reference refuses: the compiled backend judges it")
@pytest.mark.parametrize(("batch_axis", "time_axis"), [(1, 0), (0, 1)])
def test_reverse_sequence(batch_axis: int, time_axis: int) -> None:
    x = randn(4, 3, 2) if batch_axis == 1 else randn(3, 4, 2)
    attrs = {"batch_axis": batch_axis, "time_axis": time_axis}
    agree("ReverseSequence", [x, np.array([4, 0, 2], np.int64)], attrs)
    agree("ReverseSequence", [x, np.array([5, 0, 2], np.int64)], attrs)


@pytest.mark.parametrize("largest", [1, 0])
@pytest.mark.parametrize("axis", [-1, 0])
@pytest.mark.parametrize("k", [0, 3, 5])
def test_topk_ties_and_nan(largest: int, axis: int, k: int) -> None:
    x = np.array(
        [[1.0, np.nan, 3.0, 3.0, -0.0], [0.0, 2.0, 2.0, np.nan, np.nan], [5, 5, 5, 5, 5]] * 2,
        np.float32,
    )
    agree("TopK", [x, C([min(k, x.shape[axis])])], {"axis": axis, "largest": largest})


@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.float16])
def test_topk_of_other_types(dtype: Any) -> None:
    x = RNG.integers(0, 4, size=(3, 6)).astype(dtype)
    agree("TopK", [x, C([4])], {"largest": 1})
    agree("TopK", [x, C([2])], {"largest": 0, "axis": 0})


# --- In loops ------------------------------------------------------------------------------------


@pytest.mark.handoff("an index or shape the reference refuses: the compiled backend judges it")
def test_a_loop_that_gathers_slices_concatenates_and_reshapes_runs_whole_on_xla() -> None:
    xs = tl.placeholder("float32", (5, 6), name="xs")
    idx = tl.placeholder("int64", (3,), name="idx")

    def step(carry: Any, x: Any) -> tuple[Any, Any]:
        picked = tl.gather(carry, idx)  # [3, 4]
        head = tl.slice(picked, [0, 1], [2, 4], axes=[0, 1])  # [2, 3]
        tail = tl.slice(tl.reshape(x, [2, 3]), [0, -1], [2, I64_MIN], axes=[0, 1], steps=[1, -1])
        joined = tl.concat([head + tail, tl.reshape(x, [2, 3])], axis=0)  # [4, 3]
        new = tl.reshape(joined, [3, 4]) * 0.5
        return new, tl.reshape(new, [-1])

    init = tl.constant(np.arange(12, dtype=np.float32).reshape(3, 4))
    last, ys = tl.scan(step, init, xs)
    model = tl.Model({"last": last, "ys": ys})
    args = {"xs": randn(5, 6), "idx": np.array([2, -1, 0], np.int64)}
    want = model.run(args, backend="reference")
    assert_same_outputs(model.run(args, backend="jax"), want, "jax vs reference")
    placement = model.placement(args)
    loops = [p for p in placement if p.op == "Loop"]
    assert loops and all(p.device == "xla" for p in loops), placement
    # An index out of range in the body is the reference's error, not a clamp.
    with pytest.raises(ExecutionError):
        model.run({**args, "idx": np.array([0, 3, 1], np.int64)}, backend="jax")


def test_a_fori_loop_indexing_by_the_counter_runs_on_xla() -> None:
    x = tl.placeholder("int64", (4, 3), name="x")

    def body(i: Any, acc: Any) -> Any:
        row = tl.gather(x, i)  # [3]
        return tl.concat([tl.slice(acc, [1], [6]), tl.slice(row, [0], [1])], axis=0)

    out = tl.fori_loop(0, 4, body, tl.constant(np.zeros(6, np.int64)))
    model = tl.Model({"out": out})
    args = {"x": np.arange(12, dtype=np.int64).reshape(4, 3)}
    assert_same_outputs(
        model.run(args, backend="jax"), model.run(args, backend="reference"), "jax vs reference"
    )
    placement = model.placement(args)
    assert all(p.device == "xla" for p in placement), placement


@pytest.mark.parametrize("largest", [1, 0])
def test_topk_signed_zeros_and_infinities_keep_index_order(largest: int) -> None:
    x = np.array([0.0, -0.0, 0.0, -0.0, np.nan, -np.inf, np.inf], np.float32)
    agree("TopK", [x, C([7])], {"largest": largest})
