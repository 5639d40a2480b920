"""PhiloxUniform and PhiloxMultinomial (ops/philox.py), OpenVINO's RandomUniform-8 and
Multinomial-13: bit for bit with OpenVINO's reference implementation (RandomUniform, run through
``Node.evaluate``), with OpenVINO's CPU plugin (Multinomial) and with PyTorch (the pytorch
alignment); their type rules and errors; and how they run: every run starts each op's stream at
its seeds, a loop's trips continue it (tensorflow alignment), every backend and thread alike."""

from __future__ import annotations

import math
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorloop as tl
from ops_harness import C, dyn, infer, run1
from tensorloop.builder.tracing import emit
from tensorloop.errors import ExecutionError, ResourceLimitError, ShapeInferenceError
from tensorloop.ir.graph import Graph
from tensorloop.ir.printer import print_graph
from tensorloop.tensor.dtypes import DType, dtype
from tensorloop.tensor.types import TensorType

ov = pytest.importorskip("openvino")
o8 = pytest.importorskip("openvino.opset8")
o13 = pytest.importorskip("openvino.opset13")
torch = pytest.importorskip("torch")

Array = np.ndarray[Any, Any]
BF16 = ml_dtypes.bfloat16
GLOBAL, OP = 1234567890123, 987654321  # both seeds non-zero, the key over 32 bits
TYPES = {
    "f32": np.float32, "f16": np.float16, "bf16": BF16, "f64": np.float64,
    "i32": np.int32, "i64": np.int64,
}  # fmt: skip
RANGES = {
    "f32": [(0.0, 1.0), (-3.7, 11.3), (0.1, 0.2), (-1e30, 1e30)],
    "f16": [(0.0, 1.0), (-3.7, 11.3), (-1000.0, 60000.0), (-5e-5, 3e-5)],
    "bf16": [(0.0, 1.0), (-3.7, 11.3), (-1000.0, 3e5), (0.1, 0.3)],
    "f64": [(0.0, 1.0), (-3.7, 11.3), (2.0, 10.0)],
    "i32": [(0, 10), (-50, 1000), (-(2**31), 2**31 - 1)],
    "i64": [(-50, 1000), (3, 2**33), (-(2**40), 2**41), (-(2**63), 2**63 - 1)],
}
SIZES = (1, 3, 4, 7, 13, 1001)  # counts not a multiple of 4, and of 2 (f64 and i64: two words)
ALIGNMENTS = ("tensorflow", "pytorch")


# -- OpenVINO's reference implementation and CPU plugin as oracles --------------------------------


def _ov_tensor(value: Array) -> Any:
    if value.dtype == BF16:
        t = ov.Tensor(ov.Type.bf16, ov.Shape(list(value.shape)))
        t.data.view(np.uint16)[...] = value.view(np.uint16)
        return t
    return ov.Tensor(np.ascontiguousarray(value))


def ov_reference(
    shape: Sequence[int], lo: Any, hi: Any, dt: str, gs: int, os_: int, alignment: str
) -> Array:
    """One execution of OpenVINO's reference RandomUniform (``Node.evaluate``), as raw bytes'
    view of the element type (bf16 as uint16)."""
    low, high = np.array(lo, TYPES[dt]), np.array(hi, TYPES[dt])
    ov_type = ov.Type.bf16 if dt == "bf16" else ov.Type(low.dtype)
    ins = [o8.parameter([len(shape)], np.int64), o8.parameter([], ov_type)]
    node = o8.random_uniform(
        ins[0], ins[1], o8.parameter([], ov_type), dt, gs, os_, alignment=alignment
    )
    out = ov.Tensor(node.get_output_element_type(0), ov.Shape(list(shape)))
    feeds = [_ov_tensor(np.array(shape, np.int64)), _ov_tensor(low), _ov_tensor(high)]
    assert node.evaluate([out], feeds)
    data = out.data
    return data.view(np.uint16).copy() if dt == "bf16" else data.copy()


def ov_multinomial(probs: Array, n: int, replace: bool, log: bool, gs: int, os_: int) -> Array:
    """The first inference of OpenVINO's CPU plugin on one Multinomial (i64 indices)."""
    node = o13.multinomial(
        o13.constant(probs), o13.constant(np.array([n])), "i64", replace, log, gs, os_
    )
    compiled = ov.Core().compile_model(ov.Model([node], [], "m"), "CPU")
    return np.asarray(compiled({})[0])


def _bits(x: Array) -> Array:
    return x.view(np.uint16) if x.dtype == BF16 else x


def uniform(
    shape: Sequence[int], lo: Any, hi: Any, dt: str, alignment: str = "tensorflow", **seeds: int
) -> Array:
    attrs = {"global_seed": GLOBAL, "op_seed": OP, "alignment": alignment, **seeds}
    return run1("PhiloxUniform", [C(list(shape)), C(lo, TYPES[dt]), C(hi, TYPES[dt])], attrs)


# -- a scalar Philox-4x32-10 from the spec's text: the oracle of the streams OpenVINO cannot give -


def philox_words(key: int, counter: int, n: int) -> list[int]:
    """Block ``n``'s four words: (n, counter) as four 32-bit words, ten rounds, the key raised
    by the Weyl constants between rounds."""
    m = 0xFFFFFFFF
    c = [n & m, n >> 32 & m, counter & m, counter >> 32 & m]
    k = [key & m, key >> 32 & m]
    for r in range(10):
        p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k[0], p1 & m, (p0 >> 32) ^ c[3] ^ k[1], p0 & m]
        if r < 9:
            k = [(k[0] + 0x9E3779B9) & m, (k[1] + 0xBB67AE85) & m]
    return c


def philox_f32(key: int, counter: int, first_block: int, count: int) -> Array:
    """f32 values in [0, 1) of the tensorflow alignment from block ``first_block`` on."""
    words = [w for b in range(-(-count // 4)) for w in philox_words(key, counter, first_block + b)]
    bits = (np.array(words[:count], np.uint32) & 0x7FFFFF) | 0x3F800000
    return bits.view(np.float32) - np.float32(1)


def test_the_scalar_philox_gives_the_specs_example() -> None:
    # RandomUniform-8's example 1: global_seed 150, op_seed 10, f32 [3, 3]
    want = [0.7011236, 0.30539632, 0.93931055, 0.9456035, 0.11694777, 0.50770056, 0.5197197]
    np.testing.assert_array_equal(philox_f32(150, 10, 0, 7), np.array(want, np.float32))


# -- PhiloxUniform: the values -------------------------------------------------------------------


@pytest.mark.parametrize("alignment", ALIGNMENTS)
@pytest.mark.parametrize("dt", list(TYPES))
def test_uniform_is_openvinos_reference_bit_for_bit(dt: str, alignment: str) -> None:
    for lo, hi in RANGES[dt]:
        for n in SIZES:
            got = uniform([n], lo, hi, dt, alignment)
            want = ov_reference([n], lo, hi, dt, GLOBAL, OP, alignment)
            assert got.dtype == TYPES[dt]
            np.testing.assert_array_equal(_bits(got), want, err_msg=f"{dt} [{lo}, {hi}) x {n}")


@pytest.mark.parametrize("alignment", ALIGNMENTS)
@pytest.mark.parametrize(("dt", "shape"), [("f32", [2, 3, 5]), ("i64", [3, 1, 3]), ("f16", [0, 4])])
def test_uniform_draws_in_row_major_order_whatever_the_shape(
    dt: str, shape: list[int], alignment: str
) -> None:
    got = uniform(shape, 1, 9, dt, alignment)
    assert got.shape == tuple(shape)
    want = ov_reference([math.prod(shape)], 1, 9, dt, GLOBAL, OP, alignment)
    np.testing.assert_array_equal(got.reshape(-1), want)


def test_a_scalar_shape_draws_one_value() -> None:
    got = run1("PhiloxUniform", [C([], np.int32), C(0.0, np.float32), C(1.0, np.float32)])
    assert got.shape == ()
    np.testing.assert_array_equal(got, philox_f32(0, 0, 0, 1)[0])


@pytest.mark.parametrize(
    ("dt", "lo", "hi"),
    [
        (np.float32, 0.0, 1.0),
        (np.float32, -4.0, 4.0),
        (np.float64, 0.0, 1.0),
        (np.float64, -4.0, 4.0),
        (np.int32, -50, 1000),
        (np.int64, -50, 1000),
        (np.int64, 0, 2**40),
    ],
)
def test_the_pytorch_alignment_draws_what_torch_draws(dt: Any, lo: Any, hi: Any) -> None:
    got = run1(
        "PhiloxUniform",
        [C([1001]), C(lo, dt), C(hi, dt)],
        {"global_seed": 77 + 2**40, "op_seed": 5, "alignment": "pytorch"},
    )
    torch.manual_seed(77)  # the low 32 bits of the seed; op_seed is unused
    t = torch.empty(1001, dtype=getattr(torch, np.dtype(dt).name))
    want = t.random_(lo, hi) if np.dtype(dt).kind == "i" else t.uniform_(lo, hi)
    np.testing.assert_array_equal(got, want.numpy())


def test_seeds_zero_draw_key_zero_and_torchs_seed_zero() -> None:
    """OpenVINO seeds 0/0 from the clock; here they are the formulas' own seeds, 0."""
    tf = run1("PhiloxUniform", [C([9]), C(0.0, np.float32), C(1.0, np.float32)])
    np.testing.assert_array_equal(tf, philox_f32(0, 0, 0, 9))
    pt = run1(
        "PhiloxUniform",
        [C([9]), C(0.0, np.float32), C(1.0, np.float32)],
        {"alignment": "pytorch"},
    )
    torch.manual_seed(0)
    np.testing.assert_array_equal(pt, torch.rand(9).numpy())


# -- PhiloxMultinomial: the values ---------------------------------------------------------------

MULTINOMIAL_CASES = [
    # probs shape, samples, with_replacement, log_probs, probs type
    ((3, 5), 8, True, False, np.float32),
    ((3, 5), 5, False, False, np.float32),
    ((4, 100), 300, True, True, np.float32),
    ((7, 40), 40, False, True, np.float32),
    ((2, 9), 6, False, False, np.float16),
    ((2, 9), 6, True, True, np.float64),
    ((1, 1000), 999, False, False, np.float32),
    ((50, 3), 2, False, False, np.float32),
]


@pytest.mark.parametrize("convert_type", [DType.int32, DType.int64])
@pytest.mark.parametrize(("shape", "n", "replace", "log", "pt"), MULTINOMIAL_CASES)
def test_multinomial_is_openvinos_cpu_plugin_bit_for_bit(
    shape: tuple[int, int], n: int, replace: bool, log: bool, pt: Any, convert_type: DType
) -> None:
    rng = np.random.default_rng(sum(shape) + n)
    probs = rng.random(shape)
    probs = (np.log(probs) * 4 if log else probs).astype(pt)
    for gs, os_ in ((1, 2), (2**40 + 3, 17), (5, 0)):
        got = run1(
            "PhiloxMultinomial",
            [probs, C([n])],
            {
                "global_seed": gs, "op_seed": os_, "with_replacement": int(replace),
                "log_probs": int(log), "convert_type": convert_type,
            },
        )  # fmt: skip
        assert got.dtype == convert_type.numpy
        np.testing.assert_array_equal(got, ov_multinomial(probs, n, replace, log, gs, os_))


def test_multinomial_seeds_zero_draw_what_the_plugin_draws_for_their_low_words() -> None:
    """The seeds seed the generator by their low 32 bits: OpenVINO's 2**32/0 is our 0/0."""
    probs = np.random.default_rng(1).random((3, 7)).astype(np.float32)
    got = run1("PhiloxMultinomial", [probs, C(5)], {"with_replacement": 1})
    np.testing.assert_array_equal(got, ov_multinomial(probs, 5, True, False, 2**32, 0))


@settings(max_examples=40, deadline=None)
@given(
    rows=st.integers(1, 4),
    classes=st.integers(1, 12),
    data=st.data(),
    seed=st.integers(1, 2**64 - 1),
)
def test_multinomial_without_replacement_never_repeats_a_class(
    rows: int, classes: int, data: st.DataObject, seed: int
) -> None:
    n = data.draw(st.integers(0, classes))
    weights = data.draw(
        st.lists(st.integers(1, 9), min_size=rows * classes, max_size=rows * classes)
    )
    probs = np.array(weights, np.float32).reshape(rows, classes)
    got = run1("PhiloxMultinomial", [probs, C(n)], {"with_replacement": 0, "global_seed": seed})
    assert got.shape == (rows, n)
    for row in got:
        assert len(set(row.tolist())) == n and all(0 <= c < classes for c in row)


def test_multinomial_never_draws_a_class_of_probability_zero() -> None:
    probs = np.array([[0.0, 3.0, 0.0, 1.0], [2.0, 0.0, 0.0, 0.0]], np.float32)
    got = run1("PhiloxMultinomial", [probs, C(500)], {"global_seed": 3, "op_seed": 4})
    assert set(got[0].tolist()) == {1, 3} and set(got[1].tolist()) == {0}
    share = np.mean(got[0] == 1)
    assert 0.68 < share < 0.82  # 3 / 4 of the draws


# -- type rules and errors -----------------------------------------------------------------------


def test_uniform_types_its_output_from_the_shape_and_the_bounds() -> None:
    lo, hi = C(0.0, np.float16), C(1.0, np.float16)
    assert infer("PhiloxUniform", [C([2, 3]), lo, hi]) == ["f16[2,3]"]
    assert infer("PhiloxUniform", [TensorType(DType.int32, [3]), lo, hi]) == ["f16[?,?,?]"]
    assert infer("PhiloxUniform", [TensorType(DType.int64, ["?"]), lo, hi]) == ["f16[*]"]
    bounds = [C([1], np.int64), C([5], np.int64)]
    assert infer("PhiloxUniform", [C([4]), *bounds]) == ["i64[4]"]


@pytest.mark.parametrize(
    ("inputs", "attrs", "message"),
    [
        ([C([2]), C(1.0, np.float32), C(1.0, np.float32)], {}, "minval 1.0 must be less than"),
        ([C([2]), C(5, np.int32), C(-5, np.int32)], {}, "minval 5 must be less than maxval -5"),
        ([C([2, -1]), C(0.0, np.float32), C(1.0, np.float32)], {}, "negative size"),
        ([C([2]), C(0, np.int8), C(1, np.int8)], {}, "must be one of"),
        ([C([2]), C(0.0, np.float32), C(1.0, np.float64)], {}, "must share one element type"),
        ([C([2]), C([0.0, 1.0], np.float32), C(1.0, np.float32)], {}, "minval"),
        ([C([2.0], np.float32), C(0.0, np.float32), C(1.0, np.float32)], {}, "integer"),
        ([C([2]), C(0.0, np.float32), C(1.0, np.float32)], {"alignment": "jax"}, "alignment"),
        ([C([2]), C(0.0, np.float32), C(1.0, np.float32)], {"op_seed": -1}, "op_seed"),
        ([C([2]), C(0.0, np.float32), C(1.0, np.float32)], {"global_seed": 2**64}, "global_seed"),
    ],
)
def test_uniform_refuses_what_openvino_refuses(
    inputs: list[Any], attrs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ShapeInferenceError, match=f"PhiloxUniform.*{message}"):
        infer("PhiloxUniform", inputs, attrs)


def test_i64_bounds_are_compared_exactly() -> None:
    """minval < maxval as integers: OpenVINO's shape inference compares them as f64 and refuses
    2**60 and 2**60 + 3, which the spec allows."""
    low = 2**60
    got = uniform([4000], low, low + 3, "i64", "pytorch")
    assert set(got.tolist()) == {low, low + 1, low + 2}
    with pytest.raises(RuntimeError, match="Min value must be less than max value"):
        ov_reference([1], low, low + 3, "i64", GLOBAL, OP, "pytorch")


def test_uniform_checks_at_run_time_what_its_type_rule_cannot() -> None:
    f32 = np.float32
    with pytest.raises(ExecutionError, match=r"PhiloxUniform.*minval 2\.0 must be less"):
        run1("PhiloxUniform", [C([3]), dyn(np.array([2.0], f32)), dyn(np.array([2.0], f32))])
    with pytest.raises(ExecutionError, match=r"PhiloxUniform.*shape \[3, -2\] holds a negative"):
        run1("PhiloxUniform", [dyn(np.array([3, -2])), C(0.0, f32), C(1.0, f32)])


def test_multinomial_types_its_output() -> None:
    probs = TensorType(DType.float32, [3, 5])
    assert infer("PhiloxMultinomial", [probs, C(4)]) == ["i64[3,4]"]
    assert infer("PhiloxMultinomial", [probs, C([4], np.int32)], {"convert_type": DType.int32}) == [
        "i32[3,4]"
    ]
    assert infer("PhiloxMultinomial", [probs, TensorType(DType.int64, [])]) == ["i64[3,?]"]


@pytest.mark.parametrize(
    ("inputs", "attrs", "message"),
    [
        ([TensorType(DType.float32, [5]), C(2)], {}, "2-D"),
        ([TensorType(DType.int32, [2, 5]), C(2)], {}, "floating-point"),
        ([TensorType(DType.float32, [2, 5]), C(-1)], {}, "must not be negative"),
        ([TensorType(DType.float32, [2, 5]), C([1, 2])], {}, "num_samples"),
        ([TensorType(DType.float32, [2, 5]), C(2.0, np.float32)], {}, "int32 or int64"),
        ([TensorType(DType.float32, [2, 5]), C(6)], {"with_replacement": 0}, "cannot exceed"),
        ([TensorType(DType.float32, [2, 0]), C(1)], {}, "no classes"),
        ([TensorType(DType.float32, [2, 5]), C(2)], {"convert_type": DType.float32}, "int32"),
    ],
)
def test_multinomial_refuses_what_the_spec_forbids(
    inputs: list[Any], attrs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ShapeInferenceError, match=f"PhiloxMultinomial.*{message}"):
        infer("PhiloxMultinomial", inputs, attrs)


def test_multinomial_checks_at_run_time_what_its_type_rule_cannot() -> None:
    probs = np.ones((2, 3), np.float32)
    with pytest.raises(ExecutionError, match=r"PhiloxMultinomial.*\(4\) cannot exceed the class"):
        run1("PhiloxMultinomial", [dyn(probs), dyn(np.array(4))], {"with_replacement": 0})
    with pytest.raises(ExecutionError, match=r"PhiloxMultinomial.*must not be negative, got -3"):
        run1("PhiloxMultinomial", [probs, dyn(np.array(-3))])
    assert run1("PhiloxMultinomial", [dyn(np.ones((0, 3), np.float32)), C(2)]).shape == (0, 2)


# -- how runs draw: every run afresh, a loop's trips continuing the stream, backends alike -------


def _uniform_model(shape: Sequence[int], dt: Any, alignment: str, **seeds: int) -> tl.Model:
    g = Graph("m")
    scalar = TensorType(dtype(dt), ())
    lo, hi = g.add_input("lo", scalar), g.add_input("hi", scalar)
    size = g.add_node("Constant", [], {"value": np.array(shape, np.int64)}).output
    attrs = {"global_seed": GLOBAL, "op_seed": OP, "alignment": alignment, **seeds}
    g.set_outputs([g.add_node("PhiloxUniform", [size, lo, hi], attrs).output])
    return tl.Model(g)


def _feeds(dt: Any, lo: Any = 0, hi: Any = 1) -> dict[str, Array]:
    return {"lo": np.array(lo, dt), "hi": np.array(hi, dt)}


def _trips_model(alignment: str, trips: int = 3, count: int = 6) -> tl.Model:
    """A loop of ``trips`` drawing [count] f32 values a trip, stacked, then the multinomial."""
    tl.reset()
    lo, hi = tl.constant(np.float32(0)), tl.constant(np.float32(1))
    size = tl.constant(np.array([count], np.int64))
    attrs = {"global_seed": 150, "op_seed": 10, "alignment": alignment}
    probs = tl.constant(np.array([[0.1, 0.2, 0.3, 0.4]], np.float32))
    samples = tl.constant(np.array(5))

    def step(carry: Any, _: Any) -> tuple[Any, Any]:
        drawn = emit("PhiloxUniform", [size, lo, hi], attrs)
        picked = emit("PhiloxMultinomial", [probs, samples], {"global_seed": 1, "op_seed": 2})
        return carry, (drawn, picked)

    _, (draws, picks) = tl.scan(step, tl.constant(np.float32(0)), length=trips)
    return tl.Model({"draws": draws, "picks": picks})


def test_a_loops_trips_continue_the_tensorflow_stream() -> None:
    """Each execution moves the stream on 256 blocks an element, as OpenVINO's CPU plugin (and
    TensorFlow) do: trip k starts at block 6 * 256 * k."""
    out = _trips_model("tensorflow").run()
    for k in range(3):
        np.testing.assert_array_equal(out["draws"][k], philox_f32(150, 10, 6 * 256 * k, 6))
    # the multinomial draws from its seeds again at every trip, as in OpenVINO
    assert all(np.array_equal(out["picks"][k], out["picks"][0]) for k in range(3))


def test_a_loops_trips_draw_the_pytorch_stream_from_the_seed_again() -> None:
    out = _trips_model("pytorch").run()
    torch.manual_seed(150)
    first = torch.rand(6).numpy()
    for k in range(3):
        np.testing.assert_array_equal(out["draws"][k], first)


@pytest.mark.handoff(reason="jax places the random ops, and the loops around them, on compiled")
@pytest.mark.parametrize("alignment", ALIGNMENTS)
def test_every_backend_draws_the_same_loop(alignment: str) -> None:
    model = _trips_model(alignment)
    first = model.run(backend="reference")
    for backend in ("reference", "compiled", "jax"):
        again = model.run(backend=backend)
        for name in ("draws", "picks"):
            np.testing.assert_array_equal(again[name], first[name], err_msg=backend)


@pytest.mark.handoff(reason="jax places the random ops on compiled")
@settings(max_examples=25, deadline=None)
@given(
    dt=st.sampled_from(list(TYPES)),
    alignment=st.sampled_from(ALIGNMENTS),
    shape=st.lists(st.integers(0, 5), max_size=3),
    seeds=st.tuples(st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1)),
)
def test_each_run_of_a_seeded_op_gives_the_same_values_whatever_the_backend(
    dt: str, alignment: str, shape: list[int], seeds: tuple[int, int]
) -> None:
    model = _uniform_model(shape, TYPES[dt], alignment, global_seed=seeds[0], op_seed=seeds[1])
    feeds = _feeds(TYPES[dt], -3, 5)
    first = next(iter(model.run(feeds, backend="reference").values()))
    for backend in ("reference", "compiled", "jax", "compiled", "reference"):
        got = next(iter(model.run(feeds, backend=backend).values()))
        np.testing.assert_array_equal(_bits(got), _bits(first), err_msg=backend)


@pytest.mark.parametrize("backend", ["reference", "compiled"])
def test_runs_from_many_threads_draw_what_runs_one_by_one_draw(backend: str) -> None:
    model = _trips_model("tensorflow", trips=5, count=257)
    want = model.run(backend=backend)
    with ThreadPoolExecutor(8) as pool:
        runs = list(pool.map(lambda _: model.run(backend=backend), range(32)))
    for got in runs:
        for name in ("draws", "picks"):
            np.testing.assert_array_equal(got[name], want[name])


def test_the_largest_seeds_survive_the_text_ir() -> None:
    model = _uniform_model([5], np.float32, "tensorflow", global_seed=2**64 - 1, op_seed=2**63)
    got = next(iter(model.run(_feeds(np.float32)).values()))
    np.testing.assert_array_equal(got, philox_f32(2**64 - 1, 2**63, 0, 5))
    assert "global_seed = 18446744073709551615" in print_graph(model.graph)


@pytest.mark.parametrize("backend", ["reference", "compiled"])
def test_a_huge_draw_is_refused_before_allocating(backend: str) -> None:
    g = Graph("m")
    size = g.add_input("size", TensorType(DType.int64, [2]))
    lo, hi = (g.add_node("Constant", [], {"value": np.array(v, np.float32)}).output for v in (0, 1))
    uniform_node = g.add_node("PhiloxUniform", [size, lo, hi], {"global_seed": 1})
    probs = g.add_node("Constant", [], {"value": np.ones((4, 3), np.float32)}).output
    count = g.add_input("count", TensorType(DType.int64, []))
    multinomial_node = g.add_node("PhiloxMultinomial", [probs, count], {"global_seed": 1})
    g.set_outputs([uniform_node.output, multinomial_node.output])
    model = tl.Model(g, backend=backend, limits=tl.Limits(max_tensor_bytes=1 << 20))
    small = {"size": np.array([2, 3]), "count": np.array(3)}
    assert model.run(small)[model.output_names[1]].shape == (4, 3)
    for feeds, node in (
        ({**small, "size": np.array([1 << 20, 1 << 10])}, uniform_node),
        ({**small, "count": np.array(1 << 20)}, multinomial_node),
    ):
        with pytest.raises(ResourceLimitError, match=node.describe().replace("'", ".")):
            model.run(feeds)
